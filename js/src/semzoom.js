/**
 * Semantic zoom: what a zoom gesture does to the folds, as a pure decision the view acts on.
 *
 * - Zooming OUT past legible (the scale would go under `LEGIBLE_PPU` while the graph does not
 *   fit whole at a legible scale) folds the deepest unfolded modules into titled boxes
 *   (`MSG.FOLD_LEVEL`, anchored at the frame under the pointer); the scale stops at legible.
 * - Zooming IN on a folded box until it fills `OPEN_FRACTION` of the view (along either axis)
 *   at a legible scale opens it (`MSG.EXPAND`): its content is then legible where it was.
 * Either change keeps the view: the module opens (or folds) where it was drawn (Python anchors
 * it), every other cluster keeps its inner layout.
 */
import { LEGIBLE_PPU, areaOf, cameraOf, fitView, projector, rangeAt } from './camera.js';
import { itemSizes } from './drawing.js';
import { MSG } from './protocol.js';

/** A folded box opens when zooming makes it this large a part of the view (width or height). */
export const OPEN_FRACTION = 0.45;
/** A semantic change waits for the last one to land (a new graph), at most this long (ms). */
export const LAND_WAIT_MS = 3000;

/**
 * @typedef {{ kind: 'fold', anchor: string | null, range: import('./camera.js').Range }
 *   | { kind: 'unfold', path: string }
 *   | { kind: 'none' }} Decision
 */

/**
 * What zooming from `range` to `next` about pixel (px, py) of the plot does.
 * @param {import('./model.js').Graph} graph @param {import('./camera.js').Range} range
 * @param {import('./camera.js').Range} next @param {import('./camera.js').Size} size
 * @param {number} px @param {number} py
 * @param {{ w: ArrayLike<number>, h: ArrayLike<number> }} sizes box sizes (layout units)
 * @returns {Decision}
 * @example semanticZoom(graph, fitted, zoomedOut, size, 300, 200, sizes).kind // 'fold'
 */
export function semanticZoom(graph, range, next, size, px, py, sizes) {
  const before = cameraOf(range, size);
  const after = cameraOf(next, size);
  const { ux, uy } = projector(before);
  const x = ux(px);
  const y = uy(py);
  if (after.ppu < before.ppu) {
    if (after.ppu >= LEGIBLE_PPU || !graph.frames?.length) return { kind: 'none' };
    const fit = fitView(graph.bounds, size);
    if (fit.whole && fit.legible) return { kind: 'none' }; // it all shows legibly anyway
    let anchor = null;
    let depth = 0;
    for (const f of graph.frames) {
      if (x >= f.x0 && x <= f.x1 && y >= f.y0 && y <= f.y1 && f.depth > depth) {
        anchor = f.path;
        depth = f.depth;
      }
    }
    // the scale stops at legible, the point under the pointer stays put
    const ppu = Math.max(LEGIBLE_PPU, Math.min(before.ppu, LEGIBLE_PPU));
    const area = areaOf(size);
    const cx = x + (area.l + area.w / 2 - px) / ppu;
    const cy = y - (area.t + area.h / 2 - py) / ppu;
    return { kind: 'fold', anchor, range: rangeAt(cx, cy, ppu, size) };
  }
  if (after.ppu <= before.ppu || after.ppu < LEGIBLE_PPU) return { kind: 'none' };
  for (const i of graph.boxes ?? []) {
    const hw = sizes.w[i] / 2;
    const hh = sizes.h[i] / 2;
    if (Math.abs(x - graph.x[i]) > hw || Math.abs(y - graph.y[i]) > hh) continue;
    const area = after.area;
    if (2 * hw * after.ppu >= OPEN_FRACTION * area.w || 2 * hh * after.ppu >= OPEN_FRACTION * area.h) {
      return { kind: 'unfold', path: graph.modules[i] ?? '' };
    }
    return { kind: 'none' };
  }
  return { kind: 'none' };
}

/**
 * The view's wheel zoom with semantic folds: `zoom(next, x, y)` folds, unfolds or just moves
 * the camera; one fold or unfold at a time (`landed()` when its new graph arrived).
 * @param {{
 *   store: import('./store.js').Store<{ graph: import('./model.js').Graph, range: import('./camera.js').Range }>,
 *   live: boolean, now: () => number, size: () => import('./camera.js').Size,
 *   move: (range: import('./camera.js').Range) => void,
 *   refold: (type: string, group: string | null, anchor: string | null) => void,
 *   frame?: (path: string) => void,
 * }} ctx `live`: a kernel can fold (a walkthrough only zooms); `frame`: show a module's frame
 *   (the one a zoom opened, once its graph landed)
 */
export function createSemanticZoom({ store, live, now, size, move, refold, frame }) {
  let asked = -Infinity;
  /** @type {string | null} */
  let opening = null;
  return {
    /** @param {import('./camera.js').Range} next @param {number} x @param {number} y */
    zoom(next, x, y) {
      const { graph, range } = store.get();
      /** @type {Decision} */
      const d = live ? semanticZoom(graph, range, next, size(), x, y, itemSizes(graph)) : { kind: 'none' };
      if (d.kind === 'fold') {
        move(d.range); // the scale stops at legible
        if (now() - asked < LAND_WAIT_MS) return;
        asked = now();
        refold(MSG.FOLD_LEVEL, null, d.anchor);
      } else if (d.kind === 'unfold' && now() - asked >= LAND_WAIT_MS) {
        asked = now();
        opening = d.path;
        move(next);
        refold(MSG.EXPAND, d.path, null);
      } else move(next);
    },
    /** The new graph arrived (or a warning): the module a zoom opened fills the view. */
    landed() {
      asked = -Infinity;
      if (opening !== null && frame) frame(opening);
      opening = null;
    },
  };
}
