/**
 * Folded module boxes as text: their progress ("40%"), hover-card rows, the counts line, and
 * module path helpers (ancestors, membership, the box that hides a module). Pure.
 *
 * Python decides what is folded (`_graph.collapsed`); this module only describes what it is told.
 * The canvas draws the boxes themselves (drawing.js, canvas.js).
 */
import { formatNumber } from './format.js';
import { asRecord } from './jsonsafe.js';

/** "40%", "<1%" for a started box, "100%" only when finished. @param {number} p */
export function progressText(p) {
  if (!(p > 0)) return '0%';
  if (p >= 1) return '100%';
  const pct = Math.floor(100 * p);
  return pct < 1 ? '<1%' : `${pct}%`;
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
 * @param {unknown} raw
 * @returns {[string, string][]}
 */
export function groupReplyRows(raw) {
  if (!raw || typeof raw !== 'object') return [];
  const data = asRecord(raw);
  /** @type {[string, string][]} */
  const rows = [];
  if (Array.isArray(data.ops) && data.ops.length) {
    const op = (/** @type {unknown} */ o) => (Array.isArray(o) ? `${o[0]} ×${o[1]}` : `${o}`);
    rows.push(['ops', data.ops.slice(0, 6).map(op).join(', ') + (data.ops.length > 6 ? ', …' : '')]);
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
