/**
 * Plot geometry: the margins around the drawing and the plotting area inside them (camera.js
 * builds its camera on it). Pure.
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
