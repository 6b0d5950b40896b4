// A fake anywidget model and the protocol payloads for z = x**2 + y at x=2, y=3, built by hand
// the way Python sends them (binary fields as DataViews at odd offsets, like ipywidgets does).

/** A DataView over a copy of `typed`, placed at byte offset `offset` of a bigger buffer. */
export function dataView(typed, offset = 0) {
  const bytes = new Uint8Array(typed.buffer, typed.byteOffset, typed.byteLength);
  const buf = new ArrayBuffer(bytes.length + offset + 3);
  new Uint8Array(buf).set(bytes, offset);
  return new DataView(buf, offset, bytes.length);
}

export function zGraph({ binary = true } = {}) {
  const f32 = (a) => (binary ? dataView(new Float32Array(a), 1) : a);
  const i32 = (a) => (binary ? dataView(new Int32Array(a), 2) : a);
  const u8 = (a) => (binary ? dataView(new Uint8Array(a), 0) : a);
  const N = NaN;
  // edges: e0 Add->Pow, e1 Add->y, e2 Pow->x
  return {
    version: 1,
    orientation: 'TB',
    bounds: [0, 1, -2, 0],
    nodes: {
      count: 4,
      id: ['n0', 'n1', 'n2', 'n3'],
      label: ['Add', 'Pow', 'x', 'y'],
      name: ['AddBackward0', 'PowBackward0', 'AccumulateGrad', 'AccumulateGrad'],
      kind: ['function', 'function', 'input', 'input'],
      root: u8([1, 0, 0, 0]),
      module: [null, null, null, null],
      shape: ['', '', '[]', '[]'],
      inputs: [[[[], 'float32', 'cpu']], [[[], 'float32', 'cpu']], [[[], 'float32', 'cpu']], [[[], 'float32', 'cpu']]],
      x: f32([0.5, 0, 0, 1]),
      y: f32([0, -1, -2, -1]),
    },
    edges: {
      count: 3,
      id: ['n0:0', 'n0:1', 'n1:0'],
      src: i32([0, 0, 1]),
      dst: i32([1, 3, 2]),
      output_nr: i32([0, 1, 0]),
      input_nr: i32([0, 0, 0]),
      path_x: f32([0.5, 0, N, 0.5, 1, N, 0, 0, N]),
      path_y: f32([0, -1, N, 0, -1, N, -1, -2, N]),
      path_ptr: i32([0, 3, 6, 9]),
      mid_x: f32([0.25, 0.75, 0]),
      mid_y: f32([-0.5, -0.5, -1.5]),
    },
  };
}

const ORDER = [0, 3, 1, 2]; // Add, AccumulateGrad(y), Pow, AccumulateGrad(x)
const NAMES = ['AddBackward0', 'PowBackward0', 'AccumulateGrad', 'AccumulateGrad'];

/** The `_state` after `position` steps of the real run (grads: e0 = 1, e1 = 1, e2 = 4). */
export function zState(position, { seq = position, binary = true, running = false, error = null } = {}) {
  const nodeState = [0, 0, 0, 0];
  const edgeNorm = [NaN, NaN, NaN];
  const edgeFlag = [0, 0, 0];
  const values = {};
  for (let k = 0; k < position; k++) nodeState[ORDER[k]] = 2;
  if (position >= 1) {
    edgeNorm[0] = 1; edgeFlag[0] = 1; values['0'] = [1];
    edgeNorm[1] = 1; edgeFlag[1] = 1; values['1'] = [1];
  }
  if (position >= 3) {
    edgeNorm[2] = 4; edgeFlag[2] = 1; values['2'] = [4];
  }
  const next = position < 4 ? ORDER[position] : -1;
  if (next >= 0) nodeState[next] = error ? 3 : 1;
  const wrap = (T, a) => (binary ? dataView(new T(a), 1) : a);
  const flowed = edgeNorm.filter((v) => v > 0);
  return {
    seq,
    position,
    total: 4,
    done: position === 4,
    running,
    next,
    last: position > 0 ? ORDER[position - 1] : -1,
    node_state: wrap(Uint8Array, nodeState),
    edge_norm: wrap(Float32Array, edgeNorm),
    edge_flag: wrap(Uint8Array, edgeFlag),
    edge_values: values,
    norm_range: flowed.length ? [Math.log10(Math.min(...flowed)), Math.log10(Math.max(...flowed))] : null,
    waiting: next >= 0 ? [{ slot: 0, shape: [], dtype: 'float32', norm: 1, values: [1] }] : [],
    status: position === 4 ? 'done: 4 / 4' : `step ${position} / 4 — next ${NAMES[next]}`,
    error,
  };
}

/** A fake anywidget model: get/set/on/off/save_changes/send, with a log of what was sent. */
export class FakeModel {
  constructor(values = {}) {
    this.values = { height: 500, selected: null, ...values };
    this.handlers = new Map();
    this.sent = [];
    this.saved = 0;
  }
  get(name) {
    return this.values[name];
  }
  set(name, value) {
    this.values[name] = value;
    this.emit(`change:${name}`);
  }
  /** Set from "Python": like set, the change event fires. */
  push(name, value) {
    this.set(name, value);
  }
  save_changes() {
    this.saved++;
  }
  send(msg) {
    this.sent.push(msg);
  }
  on(ev, cb) {
    if (!this.handlers.has(ev)) this.handlers.set(ev, new Set());
    this.handlers.get(ev).add(cb);
  }
  off(ev, cb) {
    this.handlers.get(ev)?.delete(cb);
  }
  emit(ev, ...args) {
    for (const cb of [...(this.handlers.get(ev) ?? [])]) cb(...args);
  }
  /** A custom message from Python. */
  receive(msg) {
    this.emit('msg:custom', msg, []);
  }
  listeners(ev) {
    return this.handlers.get(ev)?.size ?? 0;
  }
}
