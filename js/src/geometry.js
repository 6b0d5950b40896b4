/**
 * Plot geometry shared by the figure and the module boxes: margins, the plotting area, pixels per
 * layout unit, node size for a zoom. Pure.
 */

/** Plot margins in pixels; the right one always holds the colour bar, so the graph does not
 * jump when the bar appears. */
export const MARGIN = Object.freeze({ l: 8, r: 64, t: 8, b: 8 });

/**
 * The plotting area (inside the margins) of a plot of `size`.
 * @param {{ width: number, height: number }} size
 */
export function plotArea(size) {
  return { width: Math.max(40, size.width - MARGIN.l - MARGIN.r), height: Math.max(40, size.height - MARGIN.t - MARGIN.b) };
}

/**
 * Pixels per layout unit for a view range and plot size (the smaller axis decides).
 * @param {{ x: [number, number], y: [number, number] }} range
 * @param {{ width: number, height: number }} size plot area in pixels
 */
export function pxPerUnit(range, size) {
  const area = plotArea(size);
  const sx = Math.abs(range.x[1] - range.x[0]) || 1;
  const sy = Math.abs(range.y[1] - range.y[0]) || 1;
  return Math.min(area.width / sx, area.height / sy);
}

/** Marker diameter in pixels for a zoom level: nodes grow as the user zooms in. @param {number} ppu */
export function nodeSize(ppu) {
  return Math.max(5, Math.min(24, 0.3 * ppu));
}
