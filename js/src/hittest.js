/**
 * What the pointer is over, in layout units: the item (box or leaf copy) under a point, the edge
 * whose polyline passes near it. Pure: the canvas (canvas.js) asks on every click and hover.
 */

/**
 * The item (or copy's item) under layout point (ux, uy), `pad` units around each box: the last
 * painted (topmost) first; -1 when none.
 * @param {import('./model.js').Graph} graph @param {{ w: ArrayLike<number>, h: ArrayLike<number> }} size
 * @param {number} ux @param {number} uy @param {number} pad
 * @example hitItem(graph, sizes, 0, 0, 0.1) // 0
 */
export function hitItem(graph, size, ux, uy, pad) {
  const inside = (/** @type {number} */ x, /** @type {number} */ y, /** @type {number} */ i) =>
    Math.abs(ux - x) <= size.w[i] / 2 + pad && Math.abs(uy - y) <= size.h[i] / 2 + pad;
  const cp = graph.copies;
  if (cp) for (let k = cp.item.length - 1; k >= 0; k--) if (cp.item[k] >= 0 && inside(cp.x[k], cp.y[k], cp.item[k])) return cp.item[k];
  for (let i = graph.n - 1; i >= 0; i--) if (inside(graph.x[i], graph.y[i], i)) return i;
  return -1;
}

/**
 * The edge whose polyline passes within `tol` units of (ux, uy) (the nearest), or -1.
 * @param {import('./model.js').Graph} graph @param {number} ux @param {number} uy @param {number} tol
 */
export function hitEdge(graph, ux, uy, tol) {
  let best = -1;
  let bestD = tol * tol;
  const { pathX: X, pathY: Y, pathPtr: P } = graph;
  for (let e = 0; e < graph.m; e++) {
    for (let k = P[e]; k + 1 < P[e + 1]; k++) {
      const x0 = X[k];
      const y0 = Y[k];
      const x1 = X[k + 1];
      const y1 = Y[k + 1];
      if (Number.isNaN(x1) || Number.isNaN(x0)) continue;
      if (Math.min(x0, x1) - tol > ux || Math.max(x0, x1) + tol < ux || Math.min(y0, y1) - tol > uy || Math.max(y0, y1) + tol < uy) continue;
      const dx = x1 - x0;
      const dy = y1 - y0;
      const l2 = dx * dx + dy * dy;
      const t = l2 > 0 ? Math.max(0, Math.min(1, ((ux - x0) * dx + (uy - y0) * dy) / l2)) : 0;
      const ex = x0 + t * dx - ux;
      const ey = y0 + t * dy - uy;
      const d = ex * ex + ey * ey;
      if (d <= bestD) {
        bestD = d;
        best = e;
      }
    }
  }
  return best;
}

