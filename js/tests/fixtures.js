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

/**
 * A folded MLP as Python sends it with collapse="modules" (cut down): NllLoss (root) ->
 * LogSoftmax -> box "1" (4 nodes, one stale) -> box "0" (3 nodes, freed). Edge ids are real ids.
 */
export function boxGraph({ binary = true } = {}) {
  const f32 = (a) => (binary ? dataView(new Float32Array(a), 1) : a);
  const i32 = (a) => (binary ? dataView(new Int32Array(a), 2) : a);
  const u8 = (a) => (binary ? dataView(new Uint8Array(a), 0) : a);
  const N = NaN;
  return {
    version: 1,
    orientation: 'TB',
    bounds: [0, 0, -3, 0],
    collapsed: ['0', '1'],
    show_plumbing: true,
    real_count: 9,
    hidden: 0,
    groups: ['', '0', '1'],
    nodes: {
      count: 4,
      id: ['n0', 'n1', 'group:1', 'group:0'],
      label: ['NllLoss', 'LogSoftmax', '1', '0'],
      name: ['NllLossBackward0', 'LogSoftmaxBackward0', '1 (4 nodes)', '0 (3 nodes)'],
      kind: ['function', 'function', 'group', 'group'],
      root: u8([1, 0, 0, 0]),
      module: [null, null, '1', '0'],
      shape: ['', '', '', ''],
      inputs: [[[[], 'float32', 'cpu']], [[[5, 3], 'float32', 'cpu']], [], []],
      members: i32([0, 0, 4, 3]),
      saved_state: u8([0, 0, 1, 2]),
      real: i32([0, 1, -1, -1]),
      x: f32([0, 0, 0, 0]),
      y: f32([0, -1, -2, -3]),
    },
    edges: {
      count: 3,
      id: ['n0:0', 'n1:0', 'n2:1'],
      src: i32([0, 1, 2]),
      dst: i32([1, 2, 3]),
      output_nr: i32([0, 0, 1]),
      input_nr: i32([0, 0, 0]),
      real: i32([0, 1, 5]),
      path_x: f32([0, 0, N, 0, 0, N, 0, 0, N]),
      path_y: f32([0, -1, N, -1, -2, N, -2, -3, N]),
      path_ptr: i32([0, 3, 6, 9]),
      mid_x: f32([0, 0, 0]),
      mid_y: f32([-0.5, -1.5, -2.5]),
    },
  };
}

/** The `_state` of {@link boxGraph}: `done` real steps; box "1" holds steps 2..5, box "0" 6..8. */
export function boxState(done, { seq = done, nonfinite = false } = {}) {
  const total = 9;
  const frac = (a, b) => Math.max(0, Math.min(1, (done - a) / (b - a)));
  const progress = [done > 0 ? 1 : 0, done > 1 ? 1 : 0, frac(2, 6), frac(6, 9)];
  const nodeState = progress.map((p) => (p >= 1 ? 2 : 0));
  const nextItem = done < 1 ? 0 : done < 2 ? 1 : done < 6 ? 2 : done < 9 ? 3 : -1;
  if (nextItem >= 0) nodeState[nextItem] = 1;
  const edgeNorm = [done > 0 ? 1 : NaN, done > 1 ? 0.5 : NaN, done > 5 ? (nonfinite ? Infinity : 0.25) : NaN];
  const edgeFlag = edgeNorm.map((v, e) => (Number.isNaN(v) ? 0 : e === 2 && nonfinite ? 2 : 1));
  return {
    seq,
    position: done,
    total,
    done: done >= total,
    running: false,
    next: nextItem,
    next_id: nextItem >= 0 ? `n${done}` : null,
    last: -1,
    node_state: dataView(new Uint8Array(nodeState), 1),
    progress: dataView(new Float32Array(progress), 2),
    edge_norm: dataView(new Float32Array(edgeNorm), 0),
    edge_flag: dataView(new Uint8Array(edgeFlag), 3),
    edge_values: {},
    norm_range: done > 0 ? [Math.log10(0.25), 0] : null,
    waiting: [],
    status: done >= total ? `step ${done} / ${total} — done` : `step ${done} / ${total} — Node${done}Backward0`,
    error: null,
  };
}

/** An inspect reply for AddmmBackward0 (module "2"): saved values in every state, hooks, traceback. */
export function addmmReply() {
  const summary = (shape, values, extra = {}) => ({
    shape, dtype: 'float32', numel: values.length, norm: 2.02, min: -0.64, max: 0.54, mean: -0.15, std: 0.29, nan: 0, inf: 0, values, ...extra,
  });
  return {
    id: 'n6',
    name: 'AddmmBackward0',
    label: 'Addmm',
    kind: 'function',
    module: '2',
    sequence_nr: 4,
    leaf_name: null,
    traceback: ['  File "<stdin>", line 3, in <module>\n', '    out = model(x)\n'],
    inputs: [[[5, 8], 'float32', 'cpu']],
    incoming: [summary([5, 8], [0.1, 'nan', -0.2], { nan: 1, norm: 'nan' })],
    outgoing: { 'n6:0': null, 'n6:1': summary([5, 8], [1, 2]) },
    in_edges: [{ id: 'n4:0', src: 'n4', name: 'TanhBackward0', input_nr: 0 }],
    saved: [
      { name: 'alpha', kind: 'scalar', shape: null, dtype: null, state: 'ok', aliases: [], alias_ids: [], summary: null, value: 1, note: null, versions: null, nbytes: null },
      { name: 'mat1', kind: 'tensor', shape: [5, 8], dtype: 'float32', device: 'cpu', stride: [8, 1], nbytes: 160, storage_nbytes: 160, state: 'ok',
        aliases: ['n1.result (LogSoftmaxBackward0)'], alias_ids: ['n1'], summary: summary([5, 8], [-0.34, -0.28]), value: [-0.34, -0.28], note: null, versions: null },
      { name: 'mat2', kind: 'tensor', shape: [8, 8], dtype: 'float32', device: 'cpu', stride: [1, 8], nbytes: 256, storage_nbytes: 256, state: 'stale',
        aliases: ['parameter 2.weight'], alias_ids: ['n12'], summary: null, value: null,
        note: 'stale: modified in place after it was saved (saved at version 0, now 1); stepping this node raises', versions: [0, 1] },
      { name: 'self', kind: 'tensor', shape: [3], dtype: 'float32', device: 'cpu', stride: [1], nbytes: 12, state: 'freed', aliases: [], alias_ids: [], summary: null, value: null, note: 'freed: backward() already ran', versions: null },
      { name: 'other', kind: 'tensor', shape: [3], dtype: 'float32', device: 'cpu', stride: [1], nbytes: 12, state: 'packed', aliases: [], alias_ids: [], summary: null, value: "'offloaded'", note: 'packed by torch.autograd.graph.saved_tensors_hooks', versions: null },
      { name: 'ignore_index', kind: 'scalar', state: 'ok', aliases: [], alias_ids: [], value: -100 },
      { name: 'mat1_sym_sizes', kind: 'tuple', state: 'ok', aliases: [], alias_ids: [], value: [5, 8] },
    ],
    saved_error: null,
    hooks: [
      { on: '2.weight', kind: 'tensor hook', fn: 'scale_grad' },
      { on: 'AddmmBackward0', kind: 'note', fn: 'Hooks registered on this node cannot be listed from the graph' },
    ],
    error: null,
  };
}

/**
 * A 2D canvas context that records what is drawn (jsdom has none): `ctx.ops` lists
 * [method, ...args] and ['set', property, value] in order.
 * @returns {any}
 */
export function fakeContext() {
  const ops = [];
  const target = { ops };
  return new Proxy(target, {
    get(t, k) {
      if (k in t) return t[k];
      return (...args) => {
        ops.push([k, ...args]);
      };
    },
    set(t, k, v) {
      t[k] = v;
      ops.push(['set', k, v]);
      return true;
    },
  });
}

/** Give every canvas a {@link fakeContext} (one per canvas, kept as `canvas.__ctx`). */
export function installFakeCanvas() {
  HTMLCanvasElement.prototype.getContext = function getContext() {
    if (!this.__ctx) this.__ctx = fakeContext();
    return this.__ctx;
  };
}
