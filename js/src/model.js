/**
 * The protocol's two payloads (`_graph`, `_state`) decoded into plain typed-array records.
 *
 * Pure: no DOM, no plotly. Every field is validated to the lengths the graph declares, so the
 * drawing code can index without checks; a missing or short array reads as "nothing yet".
 */
import { decodeEdits } from './sensitivity.js';
import { toTyped, toNumbers } from './buffers.js';

/** Node step states in `_state.node_state`. */
export const NODE_STATE = Object.freeze({ pending: 0, next: 1, done: 2, failed: 3, no_gradient: 4 });
/** Edge flags in `_state.edge_flag`. */
export const EDGE_FLAG = Object.freeze({ none: 0, finite: 1, nonfinite: 2, no_gradient: 3 });

/**
 * @typedef {{ shape: number[], dtype: string, device: string }} SlotMeta
 * @typedef {object} Graph
 * @property {number} version
 * @property {'TB' | 'LR'} orientation
 * @property {[number, number, number, number]} bounds xmin, xmax, ymin, ymax
 * @property {number} n
 * @property {string[]} ids
 * @property {string[]} labels
 * @property {string[]} names
 * @property {string[]} kinds
 * @property {Uint8Array} root
 * @property {(string | null)[]} modules
 * @property {string[]} shapes
 * @property {SlotMeta[][]} inputs
 * @property {Float32Array} x
 * @property {Float32Array} y
 * @property {Map<string, number>} indexOf node id -> node index
 * @property {number} m edge count
 * @property {string[]} edgeIds
 * @property {Map<string, number>} edgeIndexOf edge id -> edge index
 * @property {Int32Array} src
 * @property {Int32Array} dst
 * @property {Int32Array} outputNr
 * @property {Int32Array} inputNr
 * @property {Float32Array} pathX
 * @property {Float32Array} pathY
 * @property {Int32Array} pathPtr
 * @property {Float32Array} midX
 * @property {Float32Array} midY
 * @property {Int32Array} outPtr CSR of outgoing edges by src node: edges outEdges[outPtr[i]:outPtr[i+1]]
 * @property {Int32Array} outEdges
 * @property {Uint8Array} isBox 1 where item i is a collapsed module box (kind "group")
 * @property {number[]} boxes item indices of the boxes, in item order
 * @property {Int32Array} members member count of each box (0 for real nodes)
 * @property {Int32Array} real real node index behind each item (-1 for a box)
 * @property {Uint8Array} savedState 0 ok, 1 stale, 2 freed (a box: the worst of its members)
 * @property {Int32Array} edgeReal real edge index each visible edge shows
 * @property {string[]} collapsed module paths folded into boxes
 * @property {boolean | null} showPlumbing null when the payload does not say
 * @property {number} realCount nodes in the whole graph (visible or not)
 * @property {number} hidden plumbing nodes hidden from view
 * @property {string[]} groups every module path that can be folded
 * @property {Fold[]} folds folded runs of repeated blocks (`_graph.folds`)
 * @property {Map<number, Fold>} foldAt box item index -> the run it stands for (fold boxes only)
 */

/**
 * A folded run of repeated blocks: one box "layers.0–47 ×48" (its module is `key`).
 * @typedef {{ key: string, label: string, count: number, period: number, nodesPerUnit: number,
 *   members: string[], item: number }} Fold
 */

/** `nodes.saved_state` codes. */
export const SAVED_STATE = Object.freeze({ ok: 0, stale: 1, freed: 2 });

/** @param {unknown} v @param {number} n @returns {string[]} */
function strings(v, n, fallback = '') {
  const a = Array.isArray(v) ? v : [];
  const out = new Array(n);
  for (let i = 0; i < n; i++) out[i] = a[i] === null || a[i] === undefined ? fallback : String(a[i]);
  return out;
}

/** @param {unknown} v @returns {SlotMeta} */
function slotMeta(v) {
  if (Array.isArray(v)) {
    const [shape, dtype, device] = v;
    return { shape: Array.isArray(shape) ? shape.map(Number) : [], dtype: String(dtype ?? ''), device: String(device ?? '') };
  }
  if (v && typeof v === 'object') {
    const o = /** @type {any} */ (v);
    return { shape: Array.isArray(o.shape) ? o.shape.map(Number) : [], dtype: String(o.dtype ?? ''), device: String(o.device ?? '') };
  }
  return { shape: [], dtype: '', device: '' };
}

/**
 * The `_graph` trait, version 1 (one list entry per item) or 2 (string tables and index buffers,
 * derived fields left out: see `view.graph_payload` in Python), as one {@link Graph}. Either
 * form of each field is read, so a hand-made payload may mix them.
 * @param {any} raw the `_graph` trait
 * @returns {Graph}
 */
export function decodeGraph(raw) {
  const g = raw && typeof raw === 'object' ? raw : {};
  const nodes = g.nodes ?? {};
  const edges = g.edges ?? {};
  const version = Number(g.version ?? 1);
  const v2 = version >= 2;
  const dtypes = g.dtypes && typeof g.dtypes === 'object' ? g.dtypes : {};
  /** A buffer as `Ctor`, read with the element type `dtypes` gives it (binary buffers). */
  const ints = (/** @type {string} */ key, /** @type {any} */ v, /** @type {number} */ length, fill = 0) =>
    toTyped(toTyped(v, CTORS[dtypes[key]] ?? Int32Array), Int32Array, { length, fill });
  const n = Math.max(0, Number(nodes.count ?? (Array.isArray(nodes.id) ? nodes.id.length : 0)) | 0);
  const m = Math.max(0, Number(edges.count ?? (Array.isArray(edges.id) ? edges.id.length : 0)) | 0);
  const table = Array.isArray(nodes.strings) ? nodes.strings : [];
  /** A string field: a list (version 1) or indices into `nodes.strings` (version 2). */
  const texts = (/** @type {string} */ key, fallback = '', keepNull = false) => {
    const v = nodes[key];
    if (Array.isArray(v) || v === null || v === undefined) {
      const a = Array.isArray(v) ? v : [];
      const out = new Array(n);
      for (let i = 0; i < n; i++) out[i] = a[i] === null || a[i] === undefined ? (keepNull ? null : fallback) : String(a[i]);
      return out;
    }
    return lookup(ints(`nodes.${key}`, v, n), table, fallback, keepNull);
  };
  const kindNames = Array.isArray(nodes.kinds) ? nodes.kinds : [];
  const kinds = Array.isArray(nodes.kind) || nodes.kind == null ? strings(nodes.kind, n, 'function') : lookup(ints('nodes.kind', nodes.kind, n), kindNames, 'function', false);
  const isBox = new Uint8Array(n);
  const boxes = [];
  for (let i = 0; i < n; i++) {
    if (kinds[i] === 'group') {
      isBox[i] = 1;
      boxes.push(i);
    }
  }
  const modules = texts('module', '', true);
  const real = toTyped(nodes.real, Int32Array, { length: n, fill: -2 });
  // Without a `real` buffer the items are the real nodes themselves.
  for (let i = 0; i < n; i++) if (real[i] === -2) real[i] = isBox[i] ? -1 : i;
  let ids;
  if (Array.isArray(nodes.id) || !v2) {
    ids = strings(nodes.id, n);
    for (let i = 0; i < n; i++) if (!ids[i]) ids[i] = `n${i}`;
  } else {
    // Version 2 leaves the ids out when node i is "n{i}": a box is "group:{module}".
    ids = new Array(n);
    for (let i = 0; i < n; i++) ids[i] = real[i] >= 0 ? `n${real[i]}` : `group:${modules[i] ?? ''}`;
  }
  const indexOf = new Map(ids.map((id, i) => [id, i]));
  const x = toTyped(nodes.x, Float32Array, { length: n, fill: 0 });
  const y = toTyped(nodes.y, Float32Array, { length: n, fill: 0 });
  const src = toTyped(edges.src, Int32Array, { length: m });
  const dst = toTyped(edges.dst, Int32Array, { length: m });
  for (let e = 0; e < m; e++) {
    if (src[e] < 0 || src[e] >= n) src[e] = 0;
    if (dst[e] < 0 || dst[e] >= n) dst[e] = 0;
  }
  const outputNr = ints('edges.output_nr', edges.output_nr, m);
  let pathX = toTyped(edges.path_x, Float32Array);
  let pathY = toTyped(edges.path_y, Float32Array);
  let pathPtr = toTyped(edges.path_ptr, Int32Array);
  if (v2 && edges.path_ptr == null) {
    ({ pathX, pathY, pathPtr } = bentPaths(x, y, src, dst, {
      bent: ints('edges.bent', edges.bent, undefined),
      ptr: ints('edges.bend_ptr', edges.bend_ptr, undefined),
      x: toTyped(edges.bend_x, Float32Array),
      y: toTyped(edges.bend_y, Float32Array),
    }));
  } else if (pathPtr.length !== m + 1 || pathX.length !== pathY.length || pathPtr[m] > pathX.length) {
    // No usable polylines: straight segments between the endpoints.
    ({ pathX, pathY, pathPtr } = straightPaths(x, y, src, dst));
  }
  let midX, midY;
  if (v2 && (edges.mid_x == null || edges.mid_y == null)) {
    ({ midX, midY } = pathMiddles(pathX, pathY, pathPtr));
  } else {
    midX = toTyped(edges.mid_x, Float32Array, { length: m });
    midY = toTyped(edges.mid_y, Float32Array, { length: m });
    for (let e = 0; e < m; e++) {
      if (!Number.isFinite(midX[e]) || !Number.isFinite(midY[e])) {
        midX[e] = (x[src[e]] + x[dst[e]]) / 2;
        midY[e] = (y[src[e]] + y[dst[e]]) / 2;
      }
    }
  }
  const { outPtr, outEdges } = csr(n, src);
  let edgeIds;
  if (Array.isArray(edges.id) || !v2) {
    edgeIds = strings(edges.id, m);
    for (let e = 0; e < m; e++) if (!edgeIds[e]) edgeIds[e] = `e${e}`;
  } else {
    // "{src}:{output_nr}", src being the source item's node unless `src_id` names another
    // (the member of a box, the plumbing node a contracted edge leaves from).
    const srcIds = new Array(m);
    for (let e = 0; e < m; e++) srcIds[e] = ids[src[e]];
    const odd = edges.src_id && typeof edges.src_id === 'object' ? edges.src_id : {};
    const at = Array.isArray(odd.index) ? odd.index : [];
    const oddIds = Array.isArray(odd.id) ? odd.id : [];
    for (let k = 0; k < at.length; k++) {
      const e = Number(at[k]);
      if (Number.isInteger(e) && e >= 0 && e < m && oddIds[k] != null) srcIds[e] = String(oddIds[k]);
    }
    edgeIds = new Array(m);
    for (let e = 0; e < m; e++) edgeIds[e] = `${srcIds[e]}:${outputNr[e]}`;
  }
  const inputs = new Array(n);
  if (Array.isArray(nodes.inputs) || nodes.inputs == null) {
    const rawInputs = Array.isArray(nodes.inputs) ? nodes.inputs : [];
    for (let i = 0; i < n; i++) inputs[i] = Array.isArray(rawInputs[i]) ? rawInputs[i].map(slotMeta) : [];
  } else {
    // One decoded list per distinct signature, shared by the nodes that have it (read-only).
    const sigs = (Array.isArray(nodes.input_sigs) ? nodes.input_sigs : []).map((/** @type {unknown} */ s) => (Array.isArray(s) ? s.map(slotMeta) : []));
    const which = ints('nodes.inputs', nodes.inputs, n);
    for (let i = 0; i < n; i++) inputs[i] = sigs[which[i]] ?? [];
  }
  const root = toTyped(nodes.root, Uint8Array, { length: n });
  if (Array.isArray(nodes.roots)) {
    for (const j of nodes.roots) if (Number.isInteger(j) && j >= 0 && j < n) root[j] = 1;
  }
  const edgeReal = toTyped(edges.real, Int32Array, { length: m, fill: -2 });
  for (let e = 0; e < m; e++) if (edgeReal[e] === -2) edgeReal[e] = e;
  const nonNeg = (/** @type {unknown} */ v, /** @type {number} */ d) => (Number.isFinite(Number(v)) && Number(v) >= 0 ? Number(v) : d);
  return {
    version,
    orientation: g.orientation === 'LR' ? 'LR' : 'TB',
    bounds: graphBounds(g.bounds, x, y),
    n,
    ids,
    labels: texts('label'),
    names: texts('name'),
    kinds,
    root,
    modules,
    shapes: texts('shape'),
    inputs,
    x,
    y,
    indexOf,
    m,
    edgeIds,
    edgeIndexOf: new Map(edgeIds.map((id, e) => [id, e])),
    src,
    dst,
    outputNr,
    inputNr: ints('edges.input_nr', edges.input_nr, m),
    pathX,
    pathY,
    pathPtr,
    midX,
    midY,
    outPtr,
    outEdges,
    isBox,
    boxes,
    members: toTyped(nodes.members, Int32Array, { length: n }),
    real,
    savedState: toTyped(nodes.saved_state, Uint8Array, { length: n }),
    edgeReal,
    collapsed: Array.isArray(g.collapsed) ? g.collapsed.map(String) : [],
    showPlumbing: typeof g.show_plumbing === 'boolean' ? g.show_plumbing : null,
    realCount: nonNeg(g.real_count, n),
    hidden: nonNeg(g.hidden, 0),
    groups: Array.isArray(g.groups) ? g.groups.map(String) : [],
    ...decodeFolds(g.folds, n, isBox),
  };
}

/** Element types a version-2 payload names in `dtypes`. */
const CTORS = /** @type {Record<string, import('./buffers.js').TypedCtor>} */ ({
  uint8: Uint8Array,
  uint16: Uint16Array,
  uint32: Uint32Array,
  int8: Int8Array,
  int16: Int16Array,
  int32: Int32Array,
  float32: Float32Array,
  float64: Float64Array,
});

/**
 * `table[index[i]]` for every i: a string column from a table (null/missing -> `fallback`,
 * or null when `keepNull`).
 * @param {Int32Array} index @param {unknown[]} table @param {string} fallback @param {boolean} keepNull
 * @returns {any[]}
 */
function lookup(index, table, fallback, keepNull) {
  const decoded = table.map((s) => (s === null || s === undefined ? (keepNull ? null : fallback) : String(s)));
  const missing = keepNull ? null : fallback;
  const out = new Array(index.length);
  for (let i = 0; i < index.length; i++) out[i] = index[i] >= 0 && index[i] < decoded.length ? decoded[index[i]] : missing;
  return out;
}

/**
 * Polylines of a version-2 payload: each edge from its source's point through its bends (edges
 * `bends.bent[k]`, points `bends.x/y[bends.ptr[k]:bends.ptr[k + 1]]`) to its target's, then a
 * NaN slot, as {@link straightPaths} lays them out. Malformed bends are dropped (straight).
 * @param {Float32Array} x @param {Float32Array} y @param {Int32Array} src @param {Int32Array} dst
 * @param {{ bent: Int32Array, ptr: Int32Array, x: Float32Array, y: Float32Array }} bends
 */
export function bentPaths(x, y, src, dst, bends) {
  const m = src.length;
  const count = new Int32Array(m);
  const start = new Int32Array(m);
  const { bent, ptr } = bends;
  const points = Math.min(bends.x.length, bends.y.length);
  if (ptr.length === bent.length + 1) {
    for (let k = 0; k < bent.length; k++) {
      const e = bent[k];
      const c = ptr[k + 1] - ptr[k];
      if (e >= 0 && e < m && c > 0 && ptr[k] >= 0 && ptr[k + 1] <= points) {
        count[e] = c;
        start[e] = ptr[k];
      }
    }
  }
  const pathPtr = new Int32Array(m + 1);
  for (let e = 0; e < m; e++) pathPtr[e + 1] = pathPtr[e] + count[e] + 3;
  const pathX = new Float32Array(pathPtr[m]);
  const pathY = new Float32Array(pathPtr[m]);
  for (let e = 0; e < m; e++) {
    let p = pathPtr[e];
    pathX[p] = x[src[e]];
    pathY[p] = y[src[e]];
    for (let j = 0; j < count[e]; j++) {
      p++;
      pathX[p] = bends.x[start[e] + j];
      pathY[p] = bends.y[start[e] + j];
    }
    pathX[p + 1] = x[dst[e]];
    pathY[p + 1] = y[dst[e]];
    pathX[p + 2] = NaN;
    pathY[p + 2] = NaN;
  }
  return { pathX, pathY, pathPtr };
}

/**
 * Label anchors: the middle point of each polyline (its first segment's middle for 2 points),
 * as Python's version-1 `mid_x`/`mid_y` were.
 * @param {Float32Array} pathX @param {Float32Array} pathY @param {Int32Array} pathPtr
 */
export function pathMiddles(pathX, pathY, pathPtr) {
  const m = Math.max(0, pathPtr.length - 1);
  const midX = new Float32Array(m);
  const midY = new Float32Array(m);
  for (let e = 0; e < m; e++) {
    const npts = pathPtr[e + 1] - pathPtr[e] - 1;
    const a = pathPtr[e] + Math.max((npts - 1) >> 1, 0);
    const b = Math.min(a + 1, pathPtr[e] + npts - 1);
    midX[e] = (pathX[a] + pathX[b]) / 2;
    midY[e] = (pathY[a] + pathY[b]) / 2;
  }
  return { midX, midY };
}

/**
 * `_graph.folds`, validated: a fold's `item` must be a box, else it is not drawn (-1).
 * @param {unknown} raw @param {number} n @param {Uint8Array} isBox
 * @returns {{ folds: Fold[], foldAt: Map<number, Fold> }}
 */
function decodeFolds(raw, n, isBox) {
  /** @type {Fold[]} */
  const folds = [];
  const foldAt = new Map();
  for (const f of Array.isArray(raw) ? raw : []) {
    if (!f || typeof f !== 'object' || typeof f.key !== 'string') continue;
    const item = Number.isInteger(f.item) && f.item >= 0 && f.item < n && isBox[f.item] ? f.item : -1;
    const fold = {
      key: f.key,
      label: String(f.label ?? f.key),
      count: Math.max(0, Number(f.count) || 0),
      period: Math.max(1, Number(f.period) || 1),
      nodesPerUnit: Math.max(0, Number(f.nodes_per_unit) || 0),
      members: Array.isArray(f.members) ? f.members.map(String) : [],
      item,
    };
    folds.push(fold);
    if (item >= 0) foldAt.set(item, fold);
  }
  return { folds, foldAt };
}

/**
 * @param {unknown} b @param {Float32Array} x @param {Float32Array} y
 * @returns {[number, number, number, number]}
 */
function graphBounds(b, x, y) {
  const v = toNumbers(b);
  if (v.length === 4 && v.every(Number.isFinite) && v[1] >= v[0] && v[3] >= v[2]) {
    return [v[0], v[1], v[2], v[3]];
  }
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  for (let i = 0; i < x.length; i++) {
    if (x[i] < x0) x0 = x[i];
    if (x[i] > x1) x1 = x[i];
    if (y[i] < y0) y0 = y[i];
    if (y[i] > y1) y1 = y[i];
  }
  return x.length ? [x0, x1, y0, y1] : [0, 0, 0, 0];
}

/**
 * Straight two-point polylines, the fallback when a payload has no paths.
 * @param {Float32Array} x @param {Float32Array} y @param {Int32Array} src @param {Int32Array} dst
 */
export function straightPaths(x, y, src, dst) {
  const m = src.length;
  const pathX = new Float32Array(3 * m);
  const pathY = new Float32Array(3 * m);
  const pathPtr = new Int32Array(m + 1);
  for (let e = 0; e < m; e++) {
    pathX[3 * e] = x[src[e]];
    pathY[3 * e] = y[src[e]];
    pathX[3 * e + 1] = x[dst[e]];
    pathY[3 * e + 1] = y[dst[e]];
    pathX[3 * e + 2] = NaN;
    pathY[3 * e + 2] = NaN;
    pathPtr[e + 1] = 3 * (e + 1);
  }
  return { pathX, pathY, pathPtr };
}

/** @param {number} n @param {Int32Array} src */
function csr(n, src) {
  const outPtr = new Int32Array(n + 1);
  for (let e = 0; e < src.length; e++) outPtr[src[e] + 1]++;
  for (let i = 0; i < n; i++) outPtr[i + 1] += outPtr[i];
  const fill = outPtr.slice(0, n);
  const outEdges = new Int32Array(src.length);
  for (let e = 0; e < src.length; e++) outEdges[fill[src[e]]++] = e;
  return { outPtr, outEdges };
}

/**
 * @typedef {{ slot: number, shape: number[], dtype: string, norm: number | null,
 *   values: number[] | null } | null} WaitingSlot
 * @typedef {object} State
 * @property {number} seq
 * @property {number} position
 * @property {number} total
 * @property {boolean} done
 * @property {boolean} running
 * @property {number} next node index or -1
 * @property {number} last node index or -1
 * @property {string | null} nextId real id of the next node (visible or not), null at the end
 * @property {Uint8Array} nodeState
 * @property {Float32Array} progress per item: fraction of a box's inner steps done (0/1 for real nodes)
 * @property {Float32Array} edgeNorm
 * @property {Uint8Array} edgeFlag
 * @property {Map<number, number[]>} edgeValues
 * @property {[number, number] | null} normRange log10 of min/max finite nonzero norm
 * @property {WaitingSlot[]} waiting
 * @property {string} status
 * @property {string} notice a standing message from Python (graph freed by backward, released), or ""
 * @property {{ node: number, message: string, id: string | null } | null} error
 * @property {Map<number, import('./sensitivity.js').Edit>} edits what-if edits by visible edge index
 */

/**
 * @param {any} raw the `_state` trait (may be null before the first state arrives)
 * @param {Graph} graph
 * @returns {State}
 */
export function decodeState(raw, graph) {
  const s = raw && typeof raw === 'object' ? raw : {};
  const { n, m } = graph;
  const edgeValues = new Map();
  if (s.edge_values && typeof s.edge_values === 'object') {
    for (const [k, v] of Object.entries(s.edge_values)) {
      const e = Number(k);
      if (Number.isInteger(e) && e >= 0 && e < m) edgeValues.set(e, toNumbers(v));
    }
  }
  const range = toNumbers(s.norm_range);
  const idx = (/** @type {unknown} */ v) => {
    const i = Number(v);
    return Number.isInteger(i) && i >= 0 && i < n ? i : -1;
  };
  let error = null;
  if (s.error && typeof s.error === 'object') {
    error = { node: idx(s.error.node), message: String(s.error.message ?? ''), id: s.error.id == null ? null : String(s.error.id) };
  }
  const waiting = Array.isArray(s.waiting)
    ? s.waiting.map((/** @type {any} */ w, /** @type {number} */ k) =>
        w && typeof w === 'object'
          ? {
              slot: Number(w.slot ?? k),
              shape: Array.isArray(w.shape) ? w.shape.map(Number) : [],
              dtype: String(w.dtype ?? ''),
              norm: w.norm === null || w.norm === undefined ? null : toNumbers([w.norm])[0],
              values: Array.isArray(w.values) ? toNumbers(w.values) : null,
            }
          : null,
      )
    : [];
  return {
    seq: Number(s.seq ?? 0),
    position: Number(s.position ?? 0),
    total: Number(s.total ?? 0),
    done: Boolean(s.done),
    running: Boolean(s.running),
    next: idx(s.next),
    last: idx(s.last),
    nextId: s.next_id == null ? null : String(s.next_id),
    nodeState: toTyped(s.node_state, Uint8Array, { length: n }),
    progress: progressOf(s, n),
    edgeNorm: toTyped(s.edge_norm, Float32Array, { length: m, fill: NaN }),
    edgeFlag: toTyped(s.edge_flag, Uint8Array, { length: m }),
    edgeValues,
    normRange: range.length === 2 && range.every(Number.isFinite) ? [range[0], range[1]] : null,
    waiting,
    status: typeof s.status === 'string' ? s.status : '',
    notice: typeof s.notice === 'string' ? s.notice : '',
    error,
    edits: decodeEdits(s.edits, m),
  };
}

/**
 * `_state.progress`, or 0/1 from the node states when an older payload has none.
 * @param {any} s @param {number} n
 */
function progressOf(s, n) {
  if (s.progress !== undefined && s.progress !== null) return toTyped(s.progress, Float32Array, { length: n, fill: 0 });
  const st = toTyped(s.node_state, Uint8Array, { length: n });
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = st[i] === NODE_STATE.done || st[i] === NODE_STATE.no_gradient ? 1 : 0;
  return out;
}
