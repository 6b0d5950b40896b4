/**
 * Colours, symbols and the edge bucketing: how autograd facts (already computed in Python) map to
 * pixels. Pure functions of the decoded graph, the decoded state and the theme.
 */
import { EDGE_FLAG, NODE_STATE, SAVED_STATE } from './model.js';

/** Number of colour bins of the gradient-norm scale (one edge layer per bin). */
export const N_BINS = 8;

/** Plasma, sampled; light themes skip its near-white yellow end, dark ones its near-black start. */
const BINS_LIGHT = ['#0d0887', '#46039f', '#7201a8', '#9c179e', '#bd3786', '#d8576b', '#ed7953', '#fb9f3a'];
const BINS_DARK = ['#7e03a8', '#9c179e', '#bd3786', '#d8576b', '#ed7953', '#fb9f3a', '#fdca26', '#f0f921'];

/** Fill colour and marker symbol per node kind (Tableau 10). */
export const KIND_STYLE = Object.freeze({
  function: { color: '#4e79a7', symbol: 'circle', label: 'function' },
  root: { color: '#76b7b2', symbol: 'diamond', label: 'root' },
  parameter: { color: '#59a14f', symbol: 'square', label: 'parameter' },
  input: { color: '#f28e2b', symbol: 'square', label: 'input' },
  custom_function: { color: '#b07aa1', symbol: 'hexagon', label: 'custom Function' },
  cpp_function: { color: '#9c755f', symbol: 'pentagon', label: 'C++ function' },
  communication: { color: '#ff9da7', symbol: 'hexagon', label: 'communication (DTensor, collectives)' },
});

export const FAILED_COLOR = '#e15759';
export const NEXT_COLOR = '#f5b700';
/** The node that ran last (a ring) and the gradients it just produced (a glow under its out-edges). */
export const RAN_COLOR = '#00a8c6';
/** Edge labels of gradients changed by a what-if edit (✎). */
export const EDIT_COLOR = '#8e44ad';
export const ALARM_COLOR = '#ff1f1f';
export const SELECT_COLOR = '#1a73e8';
/** Collapsed module boxes: the done part of the progress bar; the rest is this mixed into the background. */
export const GROUP_COLOR = '#6c757d';
/** Nodes that alias the saved tensor open in the inspector. */
export const HIGHLIGHT_COLOR = '#d62ad0';
export const FREED_COLOR = '#8c8c8c';

/** Smallest on-screen size (CSS px) of a stale/freed badge: visible at Fit whatever the zoom. */
export const BADGE_MIN_PX = 18;

/** The badge drawn on a node whose saved tensors are stale or freed (`nodes.saved_state`). */
export const SAVED_BADGE = Object.freeze({
  [SAVED_STATE.stale]: { symbol: 'triangle-up', color: ALARM_COLOR, label: 'stale saved tensor (its step fails)' },
  [SAVED_STATE.freed]: { symbol: 'x', color: FREED_COLOR, label: 'saved tensors freed' },
});

/**
 * @typedef {object} Theme
 * @property {boolean} dark
 * @property {string} background plot and paper colour
 * @property {string} font
 * @property {string} fontMuted
 * @property {string} fontFamily
 * @property {string} outline node outline once done
 * @property {string} pending outline of pending nodes
 * @property {string} idleEdge edges nothing has flowed on
 * @property {string} noGradEdge edges that flowed as "no gradient"
 * @property {string} savedEdge a compiled region's edges that carry a saved value (not a gradient)
 * @property {string[]} bins N_BINS colours, small norm first
 * @property {string} boxBody the not-yet-run part of a module box
 * @property {string} boxDone the run part of a module box (its progress)
 * @property {string} noMemory node fill in memory mode for nodes that save nothing
 */

/**
 * Theme colours for light or dark, with JupyterLab's variables where they are set.
 * @param {{ dark?: boolean, background?: string, font?: string, fontMuted?: string, fontFamily?: string }} [o]
 * @returns {Theme}
 */
export function makeTheme(o = {}) {
  const dark = Boolean(o.dark);
  return {
    dark,
    background: o.background || (dark ? '#111111' : '#ffffff'),
    font: o.font || (dark ? '#e6e6e6' : '#1f1f1f'),
    fontMuted: o.fontMuted || (dark ? '#a0a0a0' : '#616161'),
    fontFamily: o.fontFamily || 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif',
    outline: dark ? '#f0f0f0' : '#2b2b2b',
    pending: dark ? '#6b6b6b' : '#9e9e9e',
    idleEdge: dark ? '#555555' : '#c4c4c4',
    noGradEdge: dark ? '#8a8a8a' : '#9a9a9a',
    savedEdge: dark ? '#7d8fa3' : '#7b8ea3',
    bins: dark ? BINS_DARK : BINS_LIGHT,
    boxBody: mixColor(GROUP_COLOR, o.background || (dark ? '#111111' : '#ffffff'), 0.72),
    boxDone: dark ? '#8d99a6' : GROUP_COLOR,
    noMemory: dark ? '#3a3a3a' : '#e4e4e4',
  };
}

/**
 * The style key of node `i`: its kind, or "root" for a root Function.
 * @param {import('./model.js').Graph} graph @param {number} i
 */
export function kindKey(graph, i) {
  const kind = graph.kinds[i];
  if (graph.root[i] && (kind === 'function' || !(kind in KIND_STYLE))) return 'root';
  return kind in KIND_STYLE ? kind : 'function';
}

/**
 * Parse "#rgb", "#rrggbb" or "rgb(a)(r, g, b[, a])" into [r, g, b]; null for anything else.
 * @param {string} c
 * @returns {[number, number, number] | null}
 */
export function parseColor(c) {
  const s = String(c).trim();
  let m = /^#([0-9a-f]{3})$/i.exec(s);
  if (m) return /** @type {[number, number, number]} */ ([...m[1]].map((h) => parseInt(h + h, 16)));
  m = /^#([0-9a-f]{6})(?:[0-9a-f]{2})?$/i.exec(s);
  if (m) {
    const hex = m[1];
    return /** @type {[number, number, number]} */ ([0, 2, 4].map((k) => parseInt(hex.slice(k, k + 2), 16)));
  }
  m = /^rgba?\(([^)]+)\)$/i.exec(s);
  if (m) {
    const p = m[1].split(/[\s,/]+/).filter(Boolean).slice(0, 3).map(Number);
    if (p.length === 3 && p.every(Number.isFinite)) return /** @type {[number, number, number]} */ (p);
  }
  return null;
}

/**
 * `a` moved a fraction `t` of the way towards `b` (both CSS colours), as "#rrggbb"; `a` unchanged
 * when either cannot be parsed.
 * @param {string} a @param {string} b @param {number} t
 */
export function mixColor(a, b, t) {
  const key = `${a}|${b}|${t}`;
  let out = mixed.get(key);
  if (out === undefined) {
    out = mixUncached(a, b, t);
    if (mixed.size > 4096) mixed.clear();
    mixed.set(key, out);
  }
  return out;
}

/** Mixed colours by (a, b, t): a 10k-node state mixes the same few kind colours 10k times. */
const mixed = new Map();

/** @param {string} a @param {string} b @param {number} t */
function mixUncached(a, b, t) {
  const x = parseColor(a);
  const y = parseColor(b);
  if (!x || !y) return a;
  return `#${x.map((v, k) => Math.round(v + (y[k] - v) * t).toString(16).padStart(2, '0')).join('')}`;
}

/**
 * What the legend says about the edge colour scale: fixed for the run, or (fallback, when
 * Python's throwaway run failed or found no finite norm) the norms so far; '' before one flowed.
 * @param {{ normRange: [number, number] | null, normScale?: string | null }} state
 */
export function scaleNote(state) {
  if (!state.normRange) return '';
  return state.normScale === 'run'
    ? '‖grad‖ colour scale: fixed for the whole run'
    : '‖grad‖ colour scale: so far (rescales as gradients flow: the whole run could not be measured)';
}

/**
 * The log10 range the colour scale spans: `norm_range` widened to at least one unit so a single
 * norm (or all equal) still sits mid-scale.
 * @param {[number, number] | null} normRange
 * @returns {[number, number] | null}
 */
export function scaleRange(normRange) {
  if (!normRange) return null;
  const [lo, hi] = normRange;
  if (!(hi - lo > 1e-9)) return [lo - 0.5, hi + 0.5];
  return [lo, hi];
}

/**
 * Colour bin of a finite gradient norm on the log scale `range` (from {@link scaleRange}).
 * Zero (or anything below the range) falls in bin 0, anything above in the last bin.
 * @param {number} norm @param {[number, number] | null} range
 */
export function binOf(norm, range) {
  if (!range || !(norm > 0)) return 0;
  const [lo, hi] = range;
  const t = (Math.log10(norm) - lo) / (hi - lo);
  if (!(t > 0)) return 0;
  return Math.min(N_BINS - 1, Math.floor(t * N_BINS));
}

/**
 * Which edges go in which edge layer.
 * @param {import('./model.js').Graph} graph
 * @param {import('./model.js').State} state
 * @returns {{ bins: number[][], idle: number[], nonfinite: number[], noGrad: number[], differs: number[], saved: number[], fresh: number[] }}
 *   `differs`: finite gradients that differ from the compared recording; `saved`: a compiled
 *   region's edges that carry a saved value, not a gradient (off the gradient scale); `fresh`: the outgoing edges of the node that ran last (they "light up").
 */
export function bucketEdges(graph, state) {
  const range = scaleRange(state.normRange);
  /** @type {number[][]} */
  const bins = Array.from({ length: N_BINS }, () => []);
  const idle = [];
  const nonfinite = [];
  const noGrad = [];
  const differs = [];
  const saved = [];
  for (let e = 0; e < graph.m; e++) {
    const flag = state.edgeFlag[e];
    if (flag === EDGE_FLAG.finite) bins[binOf(state.edgeNorm[e], range)].push(e);
    else if (flag === EDGE_FLAG.nonfinite) nonfinite.push(e);
    else if (flag === EDGE_FLAG.no_gradient) noGrad.push(e);
    else if (flag === EDGE_FLAG.differs) differs.push(e);
    else if (flag === EDGE_FLAG.saved_value) saved.push(e);
    else idle.push(e);
  }
  const fresh = [];
  if (state.last >= 0) {
    for (let k = graph.outPtr[state.last]; k < graph.outPtr[state.last + 1]; k++) {
      const e = graph.outEdges[k];
      if (state.edgeFlag[e] !== EDGE_FLAG.none) fresh.push(e);
    }
  }
  return { bins, idle, nonfinite, noGrad, differs, saved, fresh };
}

/**
 * The polylines of `edges` concatenated (each ends in its NaN gap), ready for one edge layer.
 * @param {import('./model.js').Graph} graph @param {ArrayLike<number>} edges
 * @returns {{ x: Float32Array, y: Float32Array }}
 */
export function gatherPaths(graph, edges) {
  const { pathX, pathY, pathPtr } = graph;
  let total = 0;
  for (let k = 0; k < edges.length; k++) total += pathPtr[edges[k] + 1] - pathPtr[edges[k]];
  const x = new Float32Array(total);
  const y = new Float32Array(total);
  let at = 0;
  for (let k = 0; k < edges.length; k++) {
    const a = pathPtr[edges[k]];
    const b = pathPtr[edges[k] + 1];
    x.set(pathX.subarray(a, b), at);
    y.set(pathY.subarray(a, b), at);
    at += b - a;
  }
  return { x, y };
}

/** Edges whose gradient differs from the compared recording (`aw.explore(a, compare_to=b)`). */
export const DIFF_COLOR = '#b04ad8';

/** Line width of colour bin `b`: bigger gradients draw thicker. @param {number} b */
export function binWidth(b) {
  return 1.6 + (2.2 * b) / (N_BINS - 1);
}

/**
 * Colorbar ticks for a log10 range: whole decades when the range spans one or more, else its ends.
 * @param {[number, number]} range
 * @param {(v: number) => string} format
 * @returns {{ tickvals: number[], ticktext: string[] }}
 */
export function decadeTicks(range, format) {
  const [lo, hi] = range;
  const tickvals = [];
  for (let k = Math.ceil(lo - 1e-9); k <= hi + 1e-9; k++) tickvals.push(k);
  if (tickvals.length < 2) {
    tickvals.length = 0;
    tickvals.push(lo, (lo + hi) / 2, hi);
  }
  if (tickvals.length > 8) {
    const step = Math.ceil(tickvals.length / 8);
    const kept = tickvals.filter((_, i) => i % step === 0);
    tickvals.length = 0;
    tickvals.push(...kept);
  }
  return { tickvals, ticktext: tickvals.map((v) => format(10 ** v)) };
}

/** "#f5b700" + 0.35 -> "rgba(245,183,0,0.35)". @param {string} hex @param {number} a */
export function hexAlpha(hex, a) {
  const h = hex.replace('#', '');
  const [r, g, b] = [0, 2, 4].map((k) => parseInt(h.slice(k, k + 2), 16));
  return `rgba(${r},${g},${b},${a})`;
}

/**
 * The glyph painted at a box's corner for each step state (`NODE_STATE` code -> symbol and its
 * colour): the state reads without colour too. Pending has none.
 */
export const GLYPHS = Object.freeze({
  [NODE_STATE.next]: { symbol: '▶', color: '#c99700' },
  [NODE_STATE.done]: { symbol: '✓', color: '#2e7d32' },
  [NODE_STATE.failed]: { symbol: '✖', color: '#c62828' },
  [NODE_STATE.no_gradient]: { symbol: '∅', color: '#6c757d' },
});
