/**
 * The drawing's camera: one scale for both axes (boxes hold text, so a unit is as wide as it is
 * tall), the view range it shows, zoom and pan, and Fit. Pure: numbers in, numbers out.
 *
 * The layout sizes every box for its label at one layout unit per line of text (issue 16), so a
 * label's font follows the scale: `fontPx(ppu)`. Fit shows the whole graph when that keeps the
 * labels at least `LEGIBLE_PX` tall; otherwise it stops at the smallest legible scale, centred
 * where the stepping is (the minimap then shows where the view is), rather than shrinking the
 * graph to unlabelled dots.
 */
import { MARGIN, plotArea } from './geometry.js';

/** The smallest label font (CSS px) the drawing shows at Fit. */
export const LEGIBLE_PX = 11;
/** Label font per layout unit: a line of text is one unit tall, with room above and below. */
export const FONT_PER_UNIT = 0.78;
/** The largest label font: zooming further in grows the boxes, not the text. */
export const MAX_FONT_PX = 15;
/** Pixels per layout unit at which labels reach `LEGIBLE_PX`. */
export const LEGIBLE_PPU = LEGIBLE_PX / FONT_PER_UNIT + 1e-6;
/** Fit never spreads a small graph further than this (pixels per unit): it sits centred at a
 * comfortable size instead of filling a wide cell. */
export const MAX_FIT_PPU = 19;
/** Zoom limits (pixels per unit): far enough out to see a 100k-node graph's shape, in to one box. */
export const MIN_PPU = 0.01;
export const MAX_PPU = 400;
/** Room (pixels) Fit leaves around the graph inside the plotting area. */
export const FIT_PAD = 14;

/**
 * @typedef {{ x: [number, number], y: [number, number] }} Range  layout units; y grows upwards
 * @typedef {{ width: number, height: number }} Size  the plot, CSS pixels (margins included)
 * @typedef {object} Camera
 * @property {number} ppu pixels per layout unit, both axes
 * @property {number} x0 layout x at the area's left edge
 * @property {number} y1 layout y at the area's top edge
 * @property {{ l: number, t: number, w: number, h: number }} area the plotting area (CSS px)
 */

/**
 * Font size (CSS px) of a label at `ppu` pixels per unit (below `LEGIBLE_PX` means: too small
 * to label).
 * @param {number} ppu
 * @example fontPx(20) // 15 (capped)
 */
export function fontPx(ppu) {
  return Math.min(MAX_FONT_PX, FONT_PER_UNIT * ppu);
}

/**
 * The plotting area of a plot of `size`, as `{ l, t, w, h }`.
 * @param {Size} size
 */
export function areaOf(size) {
  const a = plotArea(size);
  return { l: MARGIN.l, t: MARGIN.t, w: a.width, h: a.height };
}

/**
 * The camera showing `range` in a plot of `size`: the smaller of the two scales, centred on the
 * range's centre (a range of another aspect than the area shows a little more along one axis).
 * @param {Range} range @param {Size} size
 * @returns {Camera}
 * @example cameraOf({ x: [0, 10], y: [-5, 5] }, { width: 400, height: 300 }).ppu
 */
export function cameraOf(range, size) {
  const area = areaOf(size);
  const rx = Math.abs(range.x[1] - range.x[0]) || 1;
  const ry = Math.abs(range.y[1] - range.y[0]) || 1;
  const ppu = Math.min(area.w / rx, area.h / ry);
  const cx = (range.x[0] + range.x[1]) / 2;
  const cy = (range.y[0] + range.y[1]) / 2;
  return { ppu, x0: cx - area.w / 2 / ppu, y1: cy + area.h / 2 / ppu, area };
}

/**
 * The range a camera shows (exactly the area, same scale on both axes).
 * @param {Camera} cam
 * @returns {Range}
 */
export function rangeOf(cam) {
  return { x: [cam.x0, cam.x0 + cam.area.w / cam.ppu], y: [cam.y1 - cam.area.h / cam.ppu, cam.y1] };
}

/**
 * The range centred on (cx, cy) at `ppu` in a plot of `size`.
 * @param {number} cx @param {number} cy @param {number} ppu @param {Size} size
 * @returns {Range}
 */
export function rangeAt(cx, cy, ppu, size) {
  const area = areaOf(size);
  const hw = area.w / ppu / 2;
  const hh = area.h / ppu / 2;
  return { x: [cx - hw, cx + hw], y: [cy - hh, cy + hh] };
}

/**
 * Layout units to CSS pixels of the plot and back, for a camera.
 * @param {Camera} cam
 */
export function projector(cam) {
  const { ppu, x0, y1, area } = cam;
  return {
    px: (/** @type {number} */ x) => area.l + (x - x0) * ppu,
    py: (/** @type {number} */ y) => area.t + (y1 - y) * ppu,
    ux: (/** @type {number} */ p) => x0 + (p - area.l) / ppu,
    uy: (/** @type {number} */ p) => y1 - (p - area.t) / ppu,
  };
}

/**
 * Fit: the whole graph (bounds `[x0, x1, y0, y1]`) when its labels stay legible, centred, at
 * most `MAX_FIT_PPU`; else the smallest legible scale. Along an axis the graph then overflows,
 * the view centres on `focus` (where the stepping is) kept inside the graph, or, without one,
 * shows the graph's start (its top in "TB", its left in "LR": the roots).
 * @param {[number, number, number, number]} bounds @param {Size} size
 * @param {{ focus?: { x: number, y: number } | null, orientation?: string }} [o]
 * @returns {{ range: Range, legible: boolean, whole: boolean }} `whole`: everything is in view
 * @example fitView([0, 10, -20, 0], { width: 800, height: 500 }).whole // true
 */
export function fitView(bounds, size, o = {}) {
  const [bx0, bx1, by0, by1] = bounds;
  const area = areaOf(size);
  const w = Math.max(20, area.w - 2 * FIT_PAD);
  const h = Math.max(20, area.h - 2 * FIT_PAD);
  const gw = Math.max(bx1 - bx0, 1e-6);
  const gh = Math.max(by1 - by0, 1e-6);
  const whole = Math.min(w / gw, h / gh, MAX_FIT_PPU);
  const ppu = Math.max(whole, Math.min(LEGIBLE_PPU, MAX_FIT_PPU));
  const span = { x: area.w / ppu, y: area.h / ppu };
  /** The centre along one axis: the graph's when it fits, else the focus kept inside. */
  const centre = (/** @type {number} */ lo, /** @type {number} */ hi, /** @type {number} */ s, /** @type {number | undefined} */ f, /** @type {number} */ start) => {
    if (hi - lo <= s - (2 * FIT_PAD) / ppu) return (lo + hi) / 2;
    const pad = FIT_PAD / ppu;
    const want = f ?? start;
    return Math.min(hi + pad - s / 2, Math.max(lo - pad + s / 2, want));
  };
  const lr = o.orientation === 'LR';
  const f = o.focus ?? null;
  const cx = centre(bx0, bx1, span.x, f?.x, lr ? -Infinity : (bx0 + bx1) / 2);
  const cy = centre(by0, by1, span.y, f?.y, lr ? (by0 + by1) / 2 : Infinity);
  return { range: rangeAt(cx, cy, ppu, size), legible: fontPx(ppu) >= LEGIBLE_PX - 1e-9, whole: whole >= ppu - 1e-9 };
}

/**
 * The range after zooming by `factor` (> 1: in) about the pixel (x, y) of the plot, the scale
 * kept within [MIN_PPU, MAX_PPU].
 * @param {Range} range @param {Size} size @param {number} x @param {number} y @param {number} factor
 * @returns {Range}
 */
export function zoomAt(range, size, x, y, factor) {
  const cam = cameraOf(range, size);
  const p = projector(cam);
  const ux = p.ux(x);
  const uy = p.uy(y);
  const ppu = Math.min(MAX_PPU, Math.max(MIN_PPU, cam.ppu * factor));
  const x0 = ux - (x - cam.area.l) / ppu;
  const y1 = uy + (y - cam.area.t) / ppu;
  return rangeOf({ ppu, x0, y1, area: cam.area });
}

/**
 * The range after dragging the drawing by (dx, dy) pixels.
 * @param {Range} range @param {Size} size @param {number} dx @param {number} dy
 * @returns {Range}
 */
export function panBy(range, size, dx, dy) {
  const cam = cameraOf(range, size);
  return rangeOf({ ...cam, x0: cam.x0 - dx / cam.ppu, y1: cam.y1 + dy / cam.ppu });
}
