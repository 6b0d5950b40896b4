// @ts-check
// The protocol payloads the JS tests read, made by Python (tests/js/js_fixtures.py writes
// fixtures/*.json from real widgets: regenerate them with `python tests/js/js_fixtures.py`), and a
// fake anywidget model. Binary buffers come back as DataViews at odd byte offsets, as ipywidgets
// delivers them.
import Z from './fixtures/z.json';
import BOXES from './fixtures/boxes.json';
import BROKEN from './fixtures/broken.json';
import FOLDS from './fixtures/folds.json';
import PLUMBING from './fixtures/plumbing.json';
import NONFINITE from './fixtures/nonfinite.json';
import FREED from './fixtures/freed.json';
import { estimateWidth } from '../src/labelplace.js';

/** A DataView over a copy of `typed`, placed at byte offset `offset` of a bigger buffer. */
export function dataView(typed, offset = 0) {
  const bytes = new Uint8Array(typed.buffer, typed.byteOffset, typed.byteLength);
  const buf = new ArrayBuffer(bytes.length + offset + 3);
  new Uint8Array(buf).set(bytes, offset);
  return new DataView(buf, offset, bytes.length);
}

/**
 * A fresh copy of fixture JSON with every `{"$base64": ...}` buffer a DataView at an odd offset
 * (1, 3, 5, 7, 1...), like the slices of one message ipywidgets hands over.
 */
export function received(json) {
  let k = 0;
  const walk = (v) => {
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') {
      if (typeof v.$base64 === 'string') {
        const bin = atob(v.$base64);
        const bytes = new Uint8Array(bin.length);
        for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
        return dataView(bytes, 1 + 2 * (k++ % 4));
      }
      return Object.fromEntries(Object.entries(v).map(([key, x]) => [key, walk(x)]));
    }
    return v;
  };
  return walk(json);
}

/**
 * One widget's fixture: `graph()` its `_graph`, `state(k, overrides)` its `_state` after k steps
 * (scalar fields replaced by `overrides`), `node(j)` / `edge(k)` the inspector's replies (at
 * position `inspectAt`), `decoded` Python's `decode_graph` of the payload.
 */
function widgetFixture(fx) {
  return {
    graph: () => received(fx.graph),
    state: (k, overrides = {}) => ({ ...received(fx.states[k]), ...overrides }),
    steps: fx.states ? fx.states.length - 1 : 0,
    inspectAt: fx.inspect_at ?? null,
    node: (j) => structuredClone(fx.inspect.nodes[j]),
    edge: (k) => structuredClone(fx.inspect.edges[k]),
    decoded: fx.decoded,
    json: fx,
  };
}

/**
 * z = x**2 + y at x=2, y=3 (`params={"x": x}`): items Add (root), Pow, y (an input, labelled
 * "input 0 []"), x (a parameter); edges
 * e0 Add->Pow, e1 Add->y, e2 Pow->x; the engine runs Add, y, Pow, x; gradients e0 = e1 = 1, e2 = 4.
 * Inspector replies at position 2. `walkthrough()`: what `save_html` embeds.
 */
export const z = { ...widgetFixture(Z), walkthrough: () => structuredClone(Z.walkthrough) };
/**
 * A classifier with collapse="modules": NllLoss (root) -> LogSoftmax -> box "1.1" (Linear, 4
 * nodes) -> box "1.0" (Tanh, 1 node) -> box "0" (Linear, 4 nodes); 11 real nodes. Inspector
 * replies at position 3.
 */
export const boxes = widgetFixture(BOXES);
/** {@link boxes} with box "0" freed by an earlier backward and box "1.1" stale: step 3 fails. `walkthrough()`: its page's. */
export const broken = { ...widgetFixture(BROKEN), walkthrough: () => structuredClone(BROKEN.walkthrough) };
/**
 * An input layer, 3 identical blocks folded into one box (item 3, "layers.0–2 ×3", 15 nodes) and
 * the head collapsed into a module box (item 2, 4 nodes); 25 real nodes.
 */
export const folds = widgetFixture(FOLDS);
/**
 * A tracked MLP laid out LR: module "0" folded, 3 plumbing nodes hidden, stale nodes (Addmm, item
 * 3: step 5 fails; Tanh, item 9). Inspector replies at position 0.
 */
export const plumbing = widgetFixture(PLUMBING);
/**
 * {@link z} after `z.backward()`: saved tensors freed, the state's `notice` says so, the first
 * step fails (the last state). Inspector replies at position 0.
 */
export const freed = widgetFixture(FREED);
/**
 * log(x).sum() + (sqrt(x) * 0).sum() at x = [0, 1]: gradients with inf (log) and NaN (sqrt at 0
 * times 0) as Python sends them ("inf", "nan"). Inspector replies at the end.
 */
export const nonfinite = { ...widgetFixture(NONFINITE), walkthrough: () => structuredClone(NONFINITE.walkthrough) };

export const zGraph = () => z.graph();
export const zState = (position, overrides = {}) => z.state(position, overrides);
export const boxGraph = () => boxes.graph();
export const boxState = (position, overrides = {}) => boxes.state(position, overrides);

/**
 * A graph holding only the fields a test of a pure function needs (hit tests read the positions
 * or the edge paths, nothing else): each field is still checked against model.js's `Graph`.
 * @param {Partial<import('../src/model.js').Graph>} fields
 * @returns {import('../src/model.js').Graph}
 */
export const partialGraph = (fields) => /** @type {import('../src/model.js').Graph} */ (fields);

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
 * A hand-made inspect reply for AddmmBackward0 (module "2"), in Python's reply format
 * (inspect.test.js checks its fields against a generated reply): saved values in every state
 * (packed ones need saved_tensors_hooks), hooks and a traceback, all at once.
 * @returns {import('../src/protocol.js').InspectReply}
 */
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
    run: null,
    formula: { known: true, latex: "G", shapes: "", note: "" },
    explanation: null,
    hooks: [
      { on: '2.weight', kind: 'tensor hook', fn: 'scale_grad' },
      { on: 'AddmmBackward0', kind: 'note', fn: 'Hooks registered on this node cannot be listed from the graph' },
    ],
    error: null,
  };
}

/**
 * A 2D canvas context that records what is drawn (jsdom has none): `ctx.ops` lists
 * [method, ...args] and ['set', property, value] in order; `measureText` answers
 * labelplace.js's `estimateWidth` at the current `font` (so the canvas places labels as in jsdom).
 * @returns {any}
 */
export function fakeContext() {
  const ops = [];
  const target = { ops, font: '10px sans-serif' };
  return new Proxy(target, {
    get(t, k) {
      if (k in t) return t[k];
      if (k === 'measureText') {
        // the labelplace.js estimate at the current font, as a real canvas would measure
        return (text) => {
          ops.push(['measureText', text]);
          const px = Number(/([\d.]+)px/.exec(t.font)?.[1] ?? 10);
          return { width: estimateWidth(String(text), px, /^\s*(bold|[6-9]00)\b/.test(t.font)) };
        };
      }
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
