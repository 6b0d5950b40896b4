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
 * @param {any} raw the `_graph` trait
 * @returns {Graph}
 */
export function decodeGraph(raw) {
  const g = raw && typeof raw === 'object' ? raw : {};
  const nodes = g.nodes ?? {};
  const edges = g.edges ?? {};
  const n = Math.max(0, Number(nodes.count ?? (Array.isArray(nodes.id) ? nodes.id.length : 0)) | 0);
  const m = Math.max(0, Number(edges.count ?? (Array.isArray(edges.id) ? edges.id.length : 0)) | 0);
  const ids = strings(nodes.id, n);
  for (let i = 0; i < n; i++) if (!ids[i]) ids[i] = `n${i}`;
  const indexOf = new Map(ids.map((id, i) => [id, i]));
  const x = toTyped(nodes.x, Float32Array, { length: n, fill: 0 });
  const y = toTyped(nodes.y, Float32Array, { length: n, fill: 0 });
  const src = toTyped(edges.src, Int32Array, { length: m });
  const dst = toTyped(edges.dst, Int32Array, { length: m });
  for (let e = 0; e < m; e++) {
    if (src[e] < 0 || src[e] >= n) src[e] = 0;
    if (dst[e] < 0 || dst[e] >= n) dst[e] = 0;
  }
  let pathX = toTyped(edges.path_x, Float32Array);
  let pathY = toTyped(edges.path_y, Float32Array);
  let pathPtr = toTyped(edges.path_ptr, Int32Array);
  if (pathPtr.length !== m + 1 || pathX.length !== pathY.length || pathPtr[m] > pathX.length) {
    // No usable polylines: straight segments between the endpoints.
    ({ pathX, pathY, pathPtr } = straightPaths(x, y, src, dst));
  }
  let midX = toTyped(edges.mid_x, Float32Array, { length: m });
  let midY = toTyped(edges.mid_y, Float32Array, { length: m });
  for (let e = 0; e < m; e++) {
    if (!Number.isFinite(midX[e]) || !Number.isFinite(midY[e])) {
      midX[e] = (x[src[e]] + x[dst[e]]) / 2;
      midY[e] = (y[src[e]] + y[dst[e]]) / 2;
    }
  }
  const { outPtr, outEdges } = csr(n, src);
  const edgeIds = strings(edges.id, m);
  for (let e = 0; e < m; e++) if (!edgeIds[e]) edgeIds[e] = `e${e}`;
  const inputs = new Array(n);
  const rawInputs = Array.isArray(nodes.inputs) ? nodes.inputs : [];
  for (let i = 0; i < n; i++) inputs[i] = Array.isArray(rawInputs[i]) ? rawInputs[i].map(slotMeta) : [];
  const modules = new Array(n);
  const rawModules = Array.isArray(nodes.module) ? nodes.module : [];
  for (let i = 0; i < n; i++) modules[i] = rawModules[i] === undefined || rawModules[i] === null ? null : String(rawModules[i]);
  const kinds = strings(nodes.kind, n, 'function');
  const isBox = new Uint8Array(n);
  const boxes = [];
  for (let i = 0; i < n; i++) {
    if (kinds[i] === 'group') {
      isBox[i] = 1;
      boxes.push(i);
    }
  }
  const real = toTyped(nodes.real, Int32Array, { length: n, fill: -2 });
  // Without a `real` buffer the items are the real nodes themselves.
  for (let i = 0; i < n; i++) if (real[i] === -2) real[i] = isBox[i] ? -1 : i;
  const edgeReal = toTyped(edges.real, Int32Array, { length: m, fill: -2 });
  for (let e = 0; e < m; e++) if (edgeReal[e] === -2) edgeReal[e] = e;
  const nonNeg = (/** @type {unknown} */ v, /** @type {number} */ d) => (Number.isFinite(Number(v)) && Number(v) >= 0 ? Number(v) : d);
  return {
    version: Number(g.version ?? 1),
    orientation: g.orientation === 'LR' ? 'LR' : 'TB',
    bounds: graphBounds(g.bounds, x, y),
    n,
    ids,
    labels: strings(nodes.label, n),
    names: strings(nodes.name, n),
    kinds,
    root: toTyped(nodes.root, Uint8Array, { length: n }),
    modules,
    shapes: strings(nodes.shape, n),
    inputs,
    x,
    y,
    indexOf,
    m,
    edgeIds,
    edgeIndexOf: new Map(edgeIds.map((id, e) => [id, e])),
    src,
    dst,
    outputNr: toTyped(edges.output_nr, Int32Array, { length: m }),
    inputNr: toTyped(edges.input_nr, Int32Array, { length: m }),
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
  };
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
