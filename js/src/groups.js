/**
 * Module boxes on screen: their size for a zoom, their polylines (a box is drawn as a thick line
 * segment, so its progress is a second, partial segment over it and both are restyled per step),
 * their labels ("layers.3 · 40%"), and module path helpers. Pure.
 *
 * Python decides what is folded (`_graph.collapsed`); this module only draws what it is told.
 */
import { formatNumber } from './format.js';
import { plotArea, nodeSize } from './geometry.js';

/** Points per box of the invisible hover/click trace: the whole width of a box answers. */
export const BOX_HIT_POINTS = 7;

/**
 * Pixels per layout unit along x and along y (the fitted range need not be isotropic).
 * @param {{ x: [number, number], y: [number, number] }} range
 * @param {{ width: number, height: number }} size
 */
export function axisScale(range, size) {
  const area = plotArea(size);
  return {
    kx: area.width / (Math.abs(range.x[1] - range.x[0]) || 1),
    ky: area.height / (Math.abs(range.y[1] - range.y[0]) || 1),
  };
}

/**
 * A box's size for a zoom: `h` and `w` in pixels, `halfW` in layout units (x).
 * Height follows the node size; width most of the distance between neighbours, within limits.
 * @param {{ x: [number, number], y: [number, number] }} range
 * @param {{ width: number, height: number }} size
 * @param {number} ppu
 */
export function boxSize(range, size, ppu) {
  const { kx, ky } = axisScale(range, size);
  const h = Math.max(16, Math.min(30, 1.5 * nodeSize(ppu)));
  // Wide enough to read as a box, never into the neighbours of its layer.
  const w = Math.max(8, Math.min(Math.max(2.6 * h, Math.min(0.72 * kx, 220)), 0.8 * kx));
  return { h, w, halfW: w / 2 / kx, halfH: h / 2 / ky, kx, ky };
}

/** Approximate width of one character of a box label (12 px bold), to size boxes to their text. */
export const LABEL_CHAR_PX = 7.2;

/**
 * Half the width of each box in layout units (indexed by item; 0 for real nodes): the base
 * width, widened to hold the box's label ("layers.11 · 100%") but never into its neighbours.
 * @param {import('./model.js').Graph} graph @param {{ w: number, kx: number }} bs from {@link boxSize}
 */
export function boxHalfWidths(graph, bs) {
  const out = new Float32Array(graph.n);
  const cap = Math.max(bs.w, 0.85 * bs.kx);
  for (const i of graph.boxes ?? []) {
    const text = `${graph.labels[i] || graph.modules[i] || 'module'} · 100%`;
    const want = text.length * LABEL_CHAR_PX + 18;
    // The layout reserved the box's own width (`boxW`, layout units): it may use all of it.
    const room = graph.boxW && graph.boxW[i] > 0 ? Math.max(cap, graph.boxW[i] * bs.kx) : cap;
    out[i] = Math.max(bs.w, Math.min(want, room)) / 2 / bs.kx;
    // (cap >= bs.w: a label that does not fit is drawn beside the box, see figure.labelData)
  }
  return out;
}

/**
 * Horizontal segments (x0, x1, NaN) for boxes `items`, `pad` layout units longer at each end;
 * `frac(i)` (0..1) shortens each from the right (the progress bar), and boxes with nothing to
 * draw are skipped.
 * @param {import('./model.js').Graph} graph
 * @param {ArrayLike<number>} items
 * @param {ArrayLike<number>} halfW per item, from {@link boxHalfWidths}
 * @param {number} [pad]
 * @param {(i: number) => number} [frac]
 */
export function boxSegments(graph, items, halfW, pad = 0, frac) {
  const xs = [];
  const ys = [];
  for (let k = 0; k < items.length; k++) {
    const i = items[k];
    const f = frac ? Math.max(0, Math.min(1, frac(i))) : 1;
    if (!(f > 0)) continue;
    const hw = halfW[i] + pad;
    const x0 = graph.x[i] - hw;
    xs.push(x0, x0 + 2 * hw * f, NaN);
    ys.push(graph.y[i], graph.y[i], NaN);
  }
  return { x: Float32Array.from(xs), y: Float32Array.from(ys) };
}

/**
 * Invisible markers spread over each box, so hovering or clicking anywhere on it finds it.
 * @param {import('./model.js').Graph} graph @param {ArrayLike<number>} halfW per item
 * @returns {{ x: Float32Array, y: Float32Array, owner: Int32Array }}
 */
export function boxHitPoints(graph, halfW) {
  const k = BOX_HIT_POINTS;
  const n = graph.boxes.length * k;
  const x = new Float32Array(n);
  const y = new Float32Array(n);
  const owner = new Int32Array(n);
  graph.boxes.forEach((i, b) => {
    for (let j = 0; j < k; j++) {
      const at = b * k + j;
      x[at] = graph.x[i] + halfW[i] * (-1 + (2 * j) / (k - 1)) * 0.92;
      y[at] = graph.y[i];
      owner[at] = i;
    }
  });
  return { x, y, owner };
}

/** "40%", "<1%" for a started box, "100%" only when finished. @param {number} p */
export function progressText(p) {
  if (!(p > 0)) return '0%';
  if (p >= 1) return '100%';
  const pct = Math.floor(100 * p);
  return pct < 1 ? '<1%' : `${pct}%`;
}

/**
 * The label of box `i`: its module path and progress, "layers.3 · 40%"; `short` keeps the last
 * part of a dotted path only ("…self_attn · 0%"), for boxes too narrow for the whole path.
 * @param {import('./model.js').Graph} graph @param {import('./model.js').State} state @param {number} i
 * @param {boolean} [short]
 */
export function boxLabel(graph, state, i, short = false) {
  let name = graph.labels[i] || graph.modules[i] || 'module';
  if (short && name.includes('.')) name = `…${name.slice(name.lastIndexOf('.') + 1)}`;
  return `${name} · ${progressText(state.progress[i])}`;
}

/**
 * Rows of the hover card for box `i` (from `_graph` and `_state` alone).
 * @param {import('./model.js').Graph} graph @param {import('./model.js').State} state @param {number} i
 * @returns {[string, string][]}
 */
export function boxRows(graph, state, i) {
  const members = graph.members[i];
  const p = state.progress[i];
  const done = Math.round(p * members);
  const fold = graph.foldAt?.get(i);
  /** @type {[string, string]} */
  const what = fold
    ? ['repeats', `${fold.count} identical blocks × ${formatNumber(fold.nodesPerUnit)} nodes`]
    : ['module', graph.modules[i] === '' ? '(whole model)' : graph.modules[i] ?? graph.labels[i]];
  return [
    what,
    ['nodes', String(members)],
    ['progress', `${progressText(p)} (${done} / ${members} ran)`],
  ];
}

/**
 * Rows for a group inspect reply (`kind: "group"`): top ops and leaves.
 * @param {any} data
 * @returns {[string, string][]}
 */
export function groupReplyRows(data) {
  if (!data || typeof data !== 'object') return [];
  /** @type {[string, string][]} */
  const rows = [];
  if (Array.isArray(data.ops) && data.ops.length) {
    rows.push(['ops', data.ops.slice(0, 6).map((/** @type {any} */ o) => `${o[0]} ×${o[1]}`).join(', ') + (data.ops.length > 6 ? ', …' : '')]);
  }
  if (Array.isArray(data.leaves) && data.leaves.length) {
    rows.push(['leaves', data.leaves.slice(0, 6).join(', ') + (data.leaves.length > 6 ? `, … (${data.leaves.length})` : '')]);
  }
  return rows;
}

/**
 * "layers.3.linear1" -> ["layers", "layers.3", "layers.3.linear1"]; "" (the top module) -> [""].
 * @param {string | null | undefined} path
 * @returns {string[]}
 */
export function moduleAncestors(path) {
  if (path === null || path === undefined) return [];
  if (path === '') return [''];
  const parts = path.split('.');
  return parts.map((_, k) => parts.slice(0, k + 1).join('.'));
}

/**
 * True when `module` is `group` or lies under it ("" holds everything): Python's `in_group`.
 * @param {string | null | undefined} module @param {string} group
 */
export function inGroup(module, group) {
  if (module === null || module === undefined) return false;
  return group === '' || module === group || module.startsWith(`${group}.`);
}

/**
 * The visible box holding nodes of `module`, or -1 (boxes are the outermost folded groups, so at
 * most one matches).
 * @param {import('./model.js').Graph} graph @param {string | null | undefined} module
 */
export function boxOfModule(graph, module) {
  for (const i of graph.boxes) {
    const fold = graph.foldAt?.get(i);
    if (fold ? fold.members.some((m) => inGroup(module, m)) : inGroup(module, graph.modules[i] ?? '')) return i;
  }
  return -1;
}

/**
 * "7 shown · 16 nodes · 5 modules folded · 1 repeat folded · 3 plumbing hidden": what the visible
 * graph is made of (a folded run of repeated blocks counts as a repeat, not a module).
 * @param {import('./model.js').Graph} graph
 */
export function countsText(graph) {
  const parts = [`${formatNumber(graph.n)} shown`];
  if (graph.realCount !== graph.n || graph.boxes.length || graph.hidden) parts.push(`${formatNumber(graph.realCount)} nodes`);
  const runs = graph.foldAt?.size ?? 0;
  const mods = graph.boxes.length - runs;
  if (mods) parts.push(`${mods} module${mods === 1 ? '' : 's'} folded`);
  if (runs) parts.push(`${runs} repeat${runs === 1 ? '' : 's'} folded`);
  if (graph.hidden) parts.push(`${graph.hidden} plumbing hidden`);
  return parts.join(' · ');
}
