/**
 * The timeline's rows (timeline.js): which rows are shown, and how deep the module tree opens
 * at first, so that a newcomer sees the model's blocks without clicking every twisty.
 *
 * Pure: a decoded timeline's tree in, rows out.
 * Guarantees: the tree opens as deep as fits `maxRows` rows (at least the model's own row and
 * its children); each row is shown once, even for a malformed tree.
 */
/**
 * @typedef {{ id: string, label: string, depth: number, kind: 'module' | 'op', module: string, row: number }} Row
 * @typedef {{ id: string[], label: string[], values: Float32Array, note?: string | null }} OpRows
 * @typedef {{ id: string[], label: string[], parent: (string | null)[], depth: number[] }} Tree
 */

/**
 * The rows shown, in order: each module, then (when open) its child modules and its own op rows.
 * @param {Tree} tree @param {Set<string>} expanded @param {Map<string, OpRows>} ops
 * @returns {Row[]}
 */
export function visibleRows(tree, expanded, ops) {
  /** @type {Row[]} */
  const out = [];
  /** @type {Map<string | null, number[]>} */
  const kids = new Map();
  tree.id.forEach((_, i) => {
    const p = tree.parent[i];
    kids.set(p, [...(kids.get(p) ?? []), i]);
  });
  const seen = new Set();
  /** @param {number} i */
  const walk = (i) => {
    if (seen.has(i)) return; // a malformed tree (a cycle) draws each row once
    seen.add(i);
    const id = tree.id[i];
    out.push({ id, label: tree.label[i], depth: tree.depth[i], kind: 'module', module: id, row: i });
    if (!expanded.has(id)) return;
    for (const c of kids.get(id) ?? []) walk(c);
    const o = ops.get(id);
    if (o) for (let k = 0; k < o.id.length; k++) out.push({ id: o.id[k], label: o.label[k], depth: tree.depth[i] + 1, kind: 'op', module: id, row: k });
  };
  for (const r of kids.get(null) ?? []) walk(r);
  return out;
}

/**
 * The modules to open at first: every module with sub-modules above depth D, D the deepest level whose rows
 * (all modules of depth <= D) fit in `maxRows`; the model's own row always opens (its children
 * shown even when they are more than `maxRows`).
 * @param {Tree} tree @param {number} maxRows
 * @returns {Set<string>}
 * @example [...openDepth({ id: ['', 'a', 'a.b'], label: [], parent: [null, '', 'a'], depth: [0, 1, 2] }, 10)] // ['', 'a']
 */
export function openDepth(tree, maxRows) {
  const perDepth = /** @type {number[]} */ ([]);
  for (const d of tree.depth) perDepth[d] = (perDepth[d] ?? 0) + 1;
  let shown = 0;
  let depth = 0;
  for (let d = 0; d < perDepth.length; d++) {
    shown += perDepth[d] ?? 0;
    if (shown > maxRows && d > 1) break;
    depth = d;
  }
  const parents = new Set(tree.parent);
  const open = new Set(['']);
  tree.id.forEach((id, i) => {
    if (tree.depth[i] < depth && parents.has(id)) open.add(id);
  });
  return open;
}
