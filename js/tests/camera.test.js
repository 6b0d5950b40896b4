// @ts-check
// The camera (camera.js): one scale for both axes, Fit (whole graph when legible, else the
// smallest legible scale centred on the stepping), zoom about the pointer, pan.
import { describe, expect, it } from 'vitest';

import {
  FIT_PAD, FONT_PER_UNIT, LEGIBLE_PPU, LEGIBLE_PX, MAX_FIT_PPU, MAX_FONT_PX, MAX_PPU, MIN_PPU,
  areaOf, cameraOf, fitView, fontPx, panBy, projector, rangeAt, rangeOf, zoomAt,
} from '../src/camera.js';

/** @typedef {import('../src/camera.js').Range} Range */
/** @typedef {[number, number, number, number]} Bounds  [x0, x1, y0, y1] */

const SIZE = { width: 800, height: 500 };
const centre = (r) => [(r.x[0] + r.x[1]) / 2, (r.y[0] + r.y[1]) / 2];
const ppuOf = (r, size = SIZE) => cameraOf(r, size).ppu;
/** Pixels per unit along each axis of a range shown in `size`'s area. */
const scales = (r, size = SIZE) => {
  const a = areaOf(size);
  return [a.w / (r.x[1] - r.x[0]), a.h / (r.y[1] - r.y[0])];
};

describe('font and scale', () => {
  it('the label font follows the scale, capped at MAX_FONT_PX; LEGIBLE_PPU is where it reaches LEGIBLE_PX', () => {
    expect(fontPx(10)).toBeCloseTo(10 * FONT_PER_UNIT);
    expect(fontPx(100)).toBe(MAX_FONT_PX);
    expect(fontPx(LEGIBLE_PPU)).toBeGreaterThanOrEqual(LEGIBLE_PX);
    expect(fontPx(LEGIBLE_PPU * 0.99)).toBeLessThan(LEGIBLE_PX);
  });

  it('cameraOf is isotropic: one scale for both axes, the smaller one, centred on the range', () => {
    const a = areaOf(SIZE);
    for (const r of /** @type {Range[]} */ ([{ x: [0, 10], y: [-5, 5] }, { x: [0, 100], y: [0, 1] }, { x: [3, 4], y: [-200, 0] }])) {
      const cam = cameraOf(r, SIZE);
      expect(cam.ppu).toBeCloseTo(Math.min(a.w / (r.x[1] - r.x[0]), a.h / (r.y[1] - r.y[0])));
      const shown = rangeOf(cam);
      const [sx, sy] = scales(shown);
      expect(sx).toBeCloseTo(sy, 6); // the same pixels per unit across and down
      expect(sx).toBeCloseTo(cam.ppu, 6);
      // the asked range is inside what is shown, centred
      expect(shown.x[0]).toBeLessThanOrEqual(r.x[0] + 1e-9);
      expect(shown.x[1]).toBeGreaterThanOrEqual(r.x[1] - 1e-9);
      expect(shown.y[0]).toBeLessThanOrEqual(r.y[0] + 1e-9);
      expect(shown.y[1]).toBeGreaterThanOrEqual(r.y[1] - 1e-9);
      centre(shown).forEach((c, k) => expect(c).toBeCloseTo(centre(r)[k], 6));
    }
  });

  it('projector maps layout units to px and back; y grows upwards', () => {
    const cam = cameraOf({ x: [0, 10], y: [-5, 5] }, SIZE);
    const p = projector(cam);
    expect(p.ux(p.px(3.25))).toBeCloseTo(3.25);
    expect(p.uy(p.py(-1.5))).toBeCloseTo(-1.5);
    expect(p.py(1)).toBeLessThan(p.py(0));
    expect(p.px(1) - p.px(0)).toBeCloseTo(cam.ppu);
    expect(p.px(cam.x0)).toBeCloseTo(cam.area.l);
    expect(p.py(cam.y1)).toBeCloseTo(cam.area.t);
  });

  it('rangeAt centres on the point at the scale', () => {
    const r = rangeAt(7, -3, 20, SIZE);
    centre(r).forEach((c, k) => expect(c).toBeCloseTo([7, -3][k]));
    scales(r).forEach((s) => expect(s).toBeCloseTo(20));
  });
});

describe('fitView', () => {
  it('a small graph: the whole of it, centred, inside the padding, at most MAX_FIT_PPU', () => {
    /** @type {Bounds} */
    const bounds = [0, 10, -20, 0];
    const f = fitView(bounds, SIZE);
    expect(f.whole).toBe(true);
    expect(f.legible).toBe(true);
    const ppu = ppuOf(f.range);
    expect(ppu).toBeLessThanOrEqual(MAX_FIT_PPU + 1e-9);
    expect(ppu).toBeGreaterThanOrEqual(LEGIBLE_PPU);
    centre(f.range).forEach((c, k) => expect(c).toBeCloseTo([5, -10][k]));
    const pad = FIT_PAD / ppu;
    expect(f.range.x[0]).toBeLessThanOrEqual(0 - pad + 1e-9);
    expect(f.range.x[1]).toBeGreaterThanOrEqual(10 + pad - 1e-9);
    expect(f.range.y[0]).toBeLessThanOrEqual(-20 - pad + 1e-9);
    expect(f.range.y[1]).toBeGreaterThanOrEqual(0 + pad - 1e-9);
    // a tiny graph is not blown up: it sits at MAX_FIT_PPU
    expect(ppuOf(fitView([0, 1, -1, 0], SIZE).range)).toBeCloseTo(MAX_FIT_PPU);
  });

  it('the whole graph at a scale between legible and MAX_FIT_PPU fills the area along its tighter axis', () => {
    const a = areaOf(SIZE);
    const want = (LEGIBLE_PPU + MAX_FIT_PPU) / 2;
    const gw = (a.w - 2 * FIT_PAD) / want;
    const f = fitView([0, gw, -1, 0], SIZE);
    expect(f.whole).toBe(true);
    expect(ppuOf(f.range)).toBeCloseTo(want, 6);
  });

  it('a graph too big to be legible whole: the smallest legible scale, centred on the focus', () => {
    /** @type {Bounds} */
    const bounds = [0, 1000, -600, 0];
    const focus = { x: 400, y: -250 };
    const f = fitView(bounds, SIZE, { focus });
    expect(f.whole).toBe(false);
    expect(f.legible).toBe(true);
    expect(ppuOf(f.range)).toBeCloseTo(LEGIBLE_PPU, 6);
    expect(fontPx(ppuOf(f.range))).toBeGreaterThanOrEqual(LEGIBLE_PX - 1e-9);
    centre(f.range).forEach((c, k) => expect(c).toBeCloseTo([400, -250][k]));
  });

  it('the focus is kept inside the graph: near an edge the view stops at the graph (and its padding)', () => {
    /** @type {Bounds} */
    const bounds = [0, 1000, -600, 0];
    const f = fitView(bounds, SIZE, { focus: { x: 2, y: -599 } }); // the bottom-left corner
    const pad = FIT_PAD / ppuOf(f.range);
    expect(f.range.x[0]).toBeCloseTo(0 - pad, 6);
    expect(f.range.y[0]).toBeCloseTo(-600 - pad, 6);
    const g = fitView(bounds, SIZE, { focus: { x: 5000, y: 5000 } }); // outside: clamped to the top-right
    expect(g.range.x[1]).toBeCloseTo(1000 + pad, 6);
    expect(g.range.y[1]).toBeCloseTo(0 + pad, 6);
  });

  it('an axis that fits stays centred while the other overflows', () => {
    // tall and thin: x fits at the legible scale, y does not
    const f = fitView([0, 4, -3000, 0], SIZE, { focus: { x: 0, y: -1500 } });
    expect(f.whole).toBe(false);
    expect(centre(f.range)[0]).toBeCloseTo(2);
    expect(centre(f.range)[1]).toBeCloseTo(-1500);
  });

  it('without a focus: the start of the graph, its top in TB, its left in LR', () => {
    /** @type {Bounds} */
    const bounds = [0, 3000, -3000, 0];
    const tb = fitView(bounds, SIZE, { orientation: 'TB' });
    const pad = FIT_PAD / ppuOf(tb.range);
    expect(tb.range.y[1]).toBeCloseTo(0 + pad, 6); // the roots (top) in view
    expect(centre(tb.range)[0]).toBeCloseTo(1500); // across: the middle
    const lr = fitView(bounds, SIZE, { orientation: 'LR' });
    expect(lr.range.x[0]).toBeCloseTo(0 - pad, 6); // the roots (left) in view
    expect(centre(lr.range)[1]).toBeCloseTo(-1500); // down: the middle
    // an explicit null focus is "no focus"
    expect(fitView(bounds, SIZE, { focus: null, orientation: 'LR' }).range).toEqual(lr.range);
  });

  it('a degenerate graph (one point) is centred at MAX_FIT_PPU', () => {
    const f = fitView([5, 5, 2, 2], SIZE);
    expect(f.whole).toBe(true);
    centre(f.range).forEach((c, k) => expect(c).toBeCloseTo([5, 2][k]));
    expect(ppuOf(f.range)).toBeCloseTo(MAX_FIT_PPU);
  });
});

describe('zoom and pan', () => {
  it('zoomAt keeps the layout point under the cursor where it was', () => {
    /** @type {Range} */
    const r = { x: [0, 40], y: [-20, 0] };
    const before = projector(cameraOf(r, SIZE));
    for (const [x, y, f] of [[100, 80, 2], [700, 400, 0.5], [8, 8, 3.7]]) {
      const z = zoomAt(r, SIZE, x, y, f);
      const after = projector(cameraOf(z, SIZE));
      expect(after.ux(x)).toBeCloseTo(before.ux(x), 6);
      expect(after.uy(y)).toBeCloseTo(before.uy(y), 6);
      expect(ppuOf(z)).toBeCloseTo(ppuOf(r) * f, 6);
      const [sx, sy] = scales(z);
      expect(sx).toBeCloseTo(sy, 6);
    }
  });

  it('zoomAt stays within [MIN_PPU, MAX_PPU]', () => {
    /** @type {Range} */
    const r = { x: [0, 40], y: [-20, 0] };
    expect(ppuOf(zoomAt(r, SIZE, 100, 100, 1e9))).toBeCloseTo(MAX_PPU, 6);
    expect(ppuOf(zoomAt(r, SIZE, 100, 100, 1e-9))).toBeCloseTo(MIN_PPU, 9);
  });

  it('panBy moves the drawing with the pointer, the scale kept', () => {
    /** @type {Range} */
    const r = { x: [0, 40], y: [-20, 0] };
    const ppu = ppuOf(r);
    const p = panBy(r, SIZE, 30, -12); // drag right and up
    expect(ppuOf(p)).toBeCloseTo(ppu, 9);
    const before = projector(cameraOf(r, SIZE));
    const after = projector(cameraOf(p, SIZE));
    // the layout point that was under (200, 200) is now under (230, 188)
    expect(after.ux(230)).toBeCloseTo(before.ux(200), 6);
    expect(after.uy(188)).toBeCloseTo(before.uy(200), 6);
    expect(panBy(r, SIZE, 0, 0).x[0]).toBeCloseTo(rangeOf(cameraOf(r, SIZE)).x[0]);
  });
});
