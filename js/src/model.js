/**
 * The protocol's two payloads (`_graph`, `_state`) decoded into plain typed-array records.
 *
 * Pure: no DOM, no canvas. Every field is validated to the lengths the graph declares, so the
 * drawing code can index without checks; a missing or short array reads as "nothing yet".
 */
import { decodeCapabilities } from './capabilities.js';
import { decodeEdits } from './sensitivity.js';
import { toTyped } from './buffers.js';
import { asRecord, decodeNumber, decodeValues } from './jsonsafe.js';

/** Node step states in `_state.node_state`. */
export const NODE_STATE = Object.freeze({ pending: 0, next: 1, done: 2, failed: 3, no_gradient: 4 });
/** Edge flags in `_state.edge_flag`. */
/** `edge_flag` codes; `differs`: a finite gradient that differs from the compared recording. */
export const EDGE_FLAG = Object.freeze({ none: 0, finite: 1, nonfinite: 2, no_gradient: 3, differs: 4, saved_value: 5 });

/**
 * @typedef {{ shape: number[], dtype: string, device: string }} SlotMeta
 * @typedef {object} Graph
 * @property {'TB' | 'LR'} orientation
 * @property {[number, number, number, number]} bounds xmin, xmax, ymin, ymax
 * @property {string} compared the compared recording's name (`aw.explore(a, compare_to=b)`), "" when none
 * @property {'live' | 'recording'} source what is stepped, for labels only: a live graph, or the
 *   replay of a recorded engine run (`aw.explore(recording)`); what the run can do is `capabilities`
 * @property {import('./capabilities.js').Capabilities} capabilities what the run behind the graph can
 *   do: the parts offer a control only where these say so (never from `source`)
 * @property {Frame[]} frames titled frames around unfolded modules, outermost first
 * @property {{ item: Int32Array, x: Float32Array, y: Float32Array }} copies leaf copies
 * @property {string[]} titles each box's title ("layers.3 · TransformerEncoderLayer"); a node
 *   drawn as its whole compact module: the module's title ("flat · Flatten", its op under it); "" otherwise
 * @property {Float32Array | null} boxW each item's box width as laid out (layout units)
 * @property {Float32Array | null} boxH each item's box height as laid out
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

/** @param {unknown} v @returns {SlotMeta} */
function slotMeta(v) {
  const [shape, dtype, device] = Array.isArray(v) ? v : [];
  return { shape: Array.isArray(shape) ? shape.map(Number) : [], dtype: String(dtype ?? ''), device: String(device ?? '') };
}

/**
 * The `_graph` trait as one {@link Graph}. Python's `wire.payload.graph_payload` sends string
 * tables and index buffers (each buffer's element type in `dtypes`) and leaves derived fields out
 * (ids, polylines, label anchors, identity maps): they are rebuilt here, as Python's
 * `decode_graph` does. A missing or short field reads as "nothing" (an empty graph before the
 * first payload), never as an out-of-bounds index.
 * @param {unknown} raw the `_graph` trait
 * @returns {Graph}
 */
export function decodeGraph(raw) {
  const g = asRecord(raw);
  const nodes = asRecord(g.nodes);
  const edges = asRecord(g.edges);
  const dtypes = asRecord(g.dtypes);
  /** An index buffer, read with the element type `dtypes` gives it, as Int32Array. */
  const ints = (/** @type {string} */ key, /** @type {unknown} */ v, /** @type {number | undefined} */ length, fill = 0) =>
    toTyped(toTyped(v, CTORS[String(dtypes[key])] ?? Int32Array), Int32Array, { length, fill });
  const n = Math.max(0, Number(nodes.count ?? 0) | 0);
  const m = Math.max(0, Number(edges.count ?? 0) | 0);
  const table = Array.isArray(nodes.strings) ? nodes.strings : [];
  /** A string field: indices into `nodes.strings` (a missing one reads `fallback`). */
  const texts = (/** @type {string} */ key, fallback = '') => /** @type {string[]} */ (lookup(ints(`nodes.${key}`, nodes[key], n), table, fallback, false));
  const kindNames = Array.isArray(nodes.kinds) ? nodes.kinds : [];
  const kinds = /** @type {string[]} */ (lookup(ints('nodes.kind', nodes.kind, n), kindNames, 'function', false));
  const isBox = new Uint8Array(n);
  const boxes = [];
  for (let i = 0; i < n; i++) {
    if (kinds[i] === 'group') {
      isBox[i] = 1;
      boxes.push(i);
    }
  }
  const modules = lookup(ints('nodes.module', nodes.module, n), table, '', true);
  const real = toTyped(nodes.real, Int32Array, { length: n, fill: -2 });
  // Without a `real` buffer the items are the real nodes themselves.
  for (let i = 0; i < n; i++) if (real[i] === -2) real[i] = isBox[i] ? -1 : i;
  let ids;
  if (Array.isArray(nodes.id)) {
    ids = new Array(n);
    for (let i = 0; i < n; i++) ids[i] = String(nodes.id[i] ?? `n${i}`);
  } else {
    // Left out when node i is "n{i}": a box is "group:{module}".
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
  const copies = decodeCopies(g.copies, n);
  const { pathX, pathY, pathPtr } = bentPaths(x, y, src, dst, {
    bent: ints('edges.bent', edges.bent, undefined),
    ptr: ints('edges.bend_ptr', edges.bend_ptr, undefined),
    x: toTyped(edges.bend_x, Float32Array),
    y: toTyped(edges.bend_y, Float32Array),
  }, { copy: toTyped(edges.copy, Int32Array, { length: copies.item.length ? m : 0, fill: -1 }), x: copies.x, y: copies.y });
  const { midX, midY } = pathMiddles(pathX, pathY, pathPtr);
  const { outPtr, outEdges } = csr(n, src);
  // Edge ids: "{src}:{output_nr}", src being the source item's node unless `src_id` names
  // another (the member of a box, the plumbing node a contracted edge leaves from).
  const srcIds = new Array(m);
  for (let e = 0; e < m; e++) srcIds[e] = ids[src[e]];
  const odd = asRecord(edges.src_id);
  const at = Array.isArray(odd.index) ? odd.index : [];
  const oddIds = Array.isArray(odd.id) ? odd.id : [];
  for (let k = 0; k < at.length; k++) {
    const e = Number(at[k]);
    if (Number.isInteger(e) && e >= 0 && e < m && oddIds[k] != null) srcIds[e] = String(oddIds[k]);
  }
  const edgeIds = new Array(m);
  for (let e = 0; e < m; e++) edgeIds[e] = `${srcIds[e]}:${outputNr[e]}`;
  // One decoded list per distinct signature, shared by the nodes that have it (read-only).
  const inputs = new Array(n);
  const sigs = (Array.isArray(nodes.input_sigs) ? nodes.input_sigs : []).map((/** @type {unknown} */ s) => (Array.isArray(s) ? s.map(slotMeta) : []));
  const which = ints('nodes.inputs', nodes.inputs, n);
  for (let i = 0; i < n; i++) inputs[i] = sigs[which[i]] ?? [];
  const root = new Uint8Array(n);
  if (Array.isArray(nodes.roots)) {
    for (const j of nodes.roots) if (Number.isInteger(j) && j >= 0 && j < n) root[j] = 1;
  }
  const edgeReal = toTyped(edges.real, Int32Array, { length: m, fill: -2 });
  for (let e = 0; e < m; e++) if (edgeReal[e] === -2) edgeReal[e] = e;
  const nonNeg = (/** @type {unknown} */ v, /** @type {number} */ d) => (Number.isFinite(Number(v)) && Number(v) >= 0 ? Number(v) : d);
  // Box sizes (layout units): a table of distinct (w, h) and a one-byte index per item.
  const boxW = new Float32Array(n);
  const boxH = new Float32Array(n);
  const sizes = Array.isArray(nodes.sizes) ? nodes.sizes : [];
  if (sizes.length) {
    const which = ints('nodes.size', nodes.size, n);
    for (let i = 0; i < n; i++) {
      const wh = sizes[which[i]];
      if (Array.isArray(wh)) {
        boxW[i] = Number(wh[0]) || 0;
        boxH[i] = Number(wh[1]) || 0;
      }
    }
  }
  return {
    orientation: g.orientation === 'LR' ? 'LR' : 'TB',
    source: g.source === 'recording' ? 'recording' : 'live',
    capabilities: decodeCapabilities(g.capabilities, g.source),
    compared: typeof g.compared === 'string' ? g.compared : '',
    bounds: graphBounds(g.bounds),
    frames: decodeFrames(g.frames),
    titles: withItemTitles(boxTitles(g.box_titles, n, boxes), g.item_titles),
    boxW,
    boxH,
    copies,
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

/** Element types a payload names in `dtypes`. */
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
 * @returns {(string | null)[]} strings only, unless `keepNull`
 */
function lookup(index, table, fallback, keepNull) {
  const decoded = table.map((s) => (s === null || s === undefined ? (keepNull ? null : fallback) : String(s)));
  const missing = keepNull ? null : fallback;
  /** @type {(string | null)[]} */
  const out = new Array(index.length);
  for (let i = 0; i < index.length; i++) out[i] = index[i] >= 0 && index[i] < decoded.length ? decoded[index[i]] : missing;
  return out;
}

/**
 * Polylines of a payload: each edge from its source's point through its bends (edges
 * `bends.bent[k]`, points `bends.x/y[bends.ptr[k]:bends.ptr[k + 1]]`) to its target's, then a
 * NaN slot. Malformed bends are dropped (straight).
 * @param {Float32Array} x @param {Float32Array} y @param {Int32Array} src @param {Int32Array} dst
 * @param {{ bent: Int32Array, ptr: Int32Array, x: Float32Array, y: Float32Array }} bends
 * @param {{ copy: Int32Array, x: Float32Array, y: Float32Array } | null} [ends] edges ending at
 *   a leaf copy (`copy[e] >= 0`) end at that copy's point, not at their target item's
 */
export function bentPaths(x, y, src, dst, bends, ends = null) {
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
    const c = ends && e < ends.copy.length ? ends.copy[e] : -1;
    if (ends && c >= 0 && c < ends.x.length && c < ends.y.length) {
      pathX[p + 1] = ends.x[c];
      pathY[p + 1] = ends.y[c];
    } else {
      pathX[p + 1] = x[dst[e]];
      pathY[p + 1] = y[dst[e]];
    }
    pathX[p + 2] = NaN;
    pathY[p + 2] = NaN;
  }
  return { pathX, pathY, pathPtr };
}

/**
 * Label anchors: the middle point of each polyline (its first segment's middle for 2 points),
 * as Python's `decode_graph` computes them.
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
 * `_graph.bounds` (xmin, xmax, ymin, ymax of the layout); [0, 0, 0, 0] before the first payload.
 * @param {unknown} b
 * @returns {[number, number, number, number]}
 */
function graphBounds(b) {
  const v = Array.isArray(b) ? b.map(decodeNumber) : [];
  return v.length === 4 && v.every(Number.isFinite) ? [v[0], v[1], v[2], v[3]] : [0, 0, 0, 0];
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
 *   values: (number | import('./jsonsafe.js').Complex)[] | null } | null} WaitingSlot
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
 * @property {Map<number, (number | import('./jsonsafe.js').Complex)[]>} edgeValues
 * @property {[number, number] | null} normRange log10 of min/max finite nonzero norm the colours span
 * @property {'run' | 'so far' | null} normScale "run": `normRange` is fixed for the whole run
 *   (from a throwaway run in Python); "so far": the norms flowed up to this step (the fallback);
 *   null before the first step (nothing coloured yet)
 * @property {WaitingSlot[]} waiting
 * @property {string} status
 * @property {string} announce the step as a sentence for a screen reader ("ran AddmmBackward0 in fc1, step 3 of 16; next ReluBackward0")
 * @property {string} notice a standing message from Python (graph freed by backward, released), or ""
 * @property {{ node: number, message: string, id: string | null } | null} error
 * @property {Map<number, import('./sensitivity.js').Edit>} edits what-if edits by visible edge index
 */

/**
 * @param {unknown} raw the `_state` trait (may be null before the first state arrives)
 * @param {Graph} graph
 * @returns {State}
 */
export function decodeState(raw, graph) {
  const s = asRecord(raw);
  const { n, m } = graph;
  const edgeValues = new Map();
  if (s.edge_values && typeof s.edge_values === 'object') {
    for (const [k, v] of Object.entries(s.edge_values)) {
      const e = Number(k);
      if (Number.isInteger(e) && e >= 0 && e < m) edgeValues.set(e, decodeValues(v));
    }
  }
  const range = Array.isArray(s.norm_range) ? s.norm_range.map(decodeNumber) : [];
  const idx = (/** @type {unknown} */ v) => {
    const i = Number(v);
    return Number.isInteger(i) && i >= 0 && i < n ? i : -1;
  };
  let error = null;
  if (s.error && typeof s.error === 'object') {
    const err = asRecord(s.error);
    error = { node: idx(err.node), message: String(err.message ?? ''), id: err.id == null ? null : String(err.id) };
  }
  const waiting = Array.isArray(s.waiting)
    ? s.waiting.map((/** @type {unknown} */ raw, /** @type {number} */ k) => {
        if (!raw || typeof raw !== 'object') return null;
        const w = asRecord(raw);
        return {
          slot: Number(w.slot ?? k),
          shape: Array.isArray(w.shape) ? w.shape.map(Number) : [],
          dtype: String(w.dtype ?? ''),
          norm: w.norm === null || w.norm === undefined ? null : decodeNumber(w.norm),
          values: Array.isArray(w.values) ? decodeValues(w.values) : null,
        };
      })
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
    progress: toTyped(s.progress, Float32Array, { length: n, fill: 0 }),
    edgeNorm: toTyped(s.edge_norm, Float32Array, { length: m, fill: NaN }),
    edgeFlag: toTyped(s.edge_flag, Uint8Array, { length: m }),
    edgeValues,
    normRange: range.length === 2 && range.every(Number.isFinite) ? [range[0], range[1]] : null,
    normScale: s.norm_scale === 'run' || s.norm_scale === 'so far' ? s.norm_scale : null,
    waiting,
    status: typeof s.status === 'string' ? s.status : '',
    announce: typeof s.announce === 'string' ? s.announce : '',
    notice: typeof s.notice === 'string' ? s.notice : '',
    error,
    edits: decodeEdits(s.edits, m),
  };
}

/**
 * @typedef {object} Frame a titled frame around an unfolded module (layout units)
 * @property {string} path
 * @property {string} title
 * @property {number} depth nesting depth, 1 for a top-level module
 * @property {number} x0 @property {number} x1 @property {number} y0 @property {number} y1
 */

/**
 * The payload's module frames, outermost first; malformed entries are dropped.
 * @param {unknown} raw
 * @returns {Frame[]}
 */
export function decodeFrames(raw) {
  if (!Array.isArray(raw)) return [];
  /** @type {Frame[]} */
  const out = [];
  for (const f of raw) {
    if (!f || typeof f !== 'object') continue;
    const v = asRecord(f);
    const nums = [v.x0, v.x1, v.y0, v.y1].map(Number);
    if (!nums.every(Number.isFinite)) continue;
    out.push({ path: String(v.path ?? ''), title: String(v.title ?? v.path ?? ''), depth: Number(v.depth) || 1, x0: nums[0], x1: nums[1], y0: nums[2], y1: nums[3] });
  }
  return out;
}

/**
 * Each item's box title (`box_titles`: one per box, in item order); a box without one reads ""
 * (the caller falls back to its label).
 * @param {unknown} raw @param {number} n @param {number[]} boxes
 * @returns {string[]}
 */
export function boxTitles(raw, n, boxes) {
  const out = new Array(n).fill('');
  if (!Array.isArray(raw)) return out;
  boxes.forEach((i, k) => {
    if (k < raw.length && raw[k] != null) out[i] = String(raw[k]);
  });
  return out;
}

/**
 * `titles` with the titles of the nodes drawn as their whole compact module (`item_titles`:
 * `[item, title]` pairs; out-of-range items are dropped).
 * @param {string[]} titles @param {unknown} raw
 * @returns {string[]}
 */
export function withItemTitles(titles, raw) {
  if (!Array.isArray(raw)) return titles;
  for (const pair of raw) {
    if (!Array.isArray(pair)) continue;
    const i = Number(pair[0]);
    if (Number.isInteger(i) && i >= 0 && i < titles.length && pair[1] != null) titles[i] = String(pair[1]);
  }
  return titles;
}

/**
 * Leaf copies: a parameter drawn again beside another consumer. `item[c]` is the item copy c
 * shows (out-of-range items are dropped), at `x[c]`, `y[c]`.
 * @param {unknown} raw @param {number} n items
 * @returns {{ item: Int32Array, x: Float32Array, y: Float32Array }}
 */
export function decodeCopies(raw, n) {
  const c = asRecord(raw);
  const count = Math.max(0, Number(c.count ?? 0) | 0);
  const item = toTyped(c.item, Int32Array, { length: count, fill: -1 });
  const x = toTyped(c.x, Float32Array, { length: count, fill: NaN });
  const y = toTyped(c.y, Float32Array, { length: count, fill: NaN });
  for (let k = 0; k < count; k++) if (item[k] < 0 || item[k] >= n) item[k] = -1;
  return { item, x, y };
}
