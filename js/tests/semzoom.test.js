// @ts-check
// Semantic zoom (semzoom.js): zooming out past legible folds the deepest frames, zooming into a
// folded box opens it; the sizing rule of height=None (sizing.js).
import { describe, expect, it } from 'vitest';
import { LEGIBLE_PPU, cameraOf, fitView, rangeAt, zoomAt } from '../src/camera.js';
import { itemSizes } from '../src/drawing.js';
import { decodeGraph } from '../src/model.js';
import { OPEN_FRACTION, createSemanticZoom, semanticZoom } from '../src/semzoom.js';
import { AUTO_FRACTION, MIN_AUTO_PX, autoHeight } from '../src/sizing.js';
import { createStore } from '../src/store.js';
import { boxGraph, zGraph } from './fixtures.js';

const size = { width: 400, height: 300 };

/** A graph with a frame much wider than the view: it cannot show whole and legible. */
function framed() {
  const g = decodeGraph(zGraph());
  return { ...g, bounds: /** @type {[number, number, number, number]} */ ([0, 200, -10, 0]), frames: [{ path: 'm', title: 'm · M', depth: 1, x0: 0, x1: 200, y0: -10, y1: 0 }] };
}

describe('semanticZoom', () => {
  it('zooming out past legible folds the frame under the pointer, the scale held at legible', () => {
    const g = framed();
    const at = rangeAt(50, -5, LEGIBLE_PPU * 1.05, size);
    const out = zoomAt(at, size, 200, 150, 0.8);
    expect(cameraOf(out, size).ppu).toBeLessThan(LEGIBLE_PPU);
    const d = semanticZoom(g, at, out, size, 200, 150, itemSizes(g));
    expect(d.kind).toBe('fold');
    if (d.kind !== 'fold') return;
    expect(d.anchor).toBe('m');
    expect(cameraOf(d.range, size).ppu).toBeCloseTo(LEGIBLE_PPU, 6);
    // above legible, or with no frame, or when it all fits legibly: a plain zoom
    expect(semanticZoom(g, at, zoomAt(at, size, 200, 150, 0.99), size, 200, 150, itemSizes(g)).kind).toBe('none');
    const plain = decodeGraph(zGraph());
    expect(fitView(plain.bounds, size).whole).toBe(true);
    expect(semanticZoom(plain, at, out, size, 200, 150, itemSizes(plain)).kind).toBe('none');
  });
  it('zooming into a folded box opens it once it fills enough of the view', () => {
    const g = decodeGraph(boxGraph());
    const i = g.boxes[0];
    const sizes = itemSizes(g);
    const cam = (ppu) => rangeAt(g.x[i], g.y[i], ppu, size);
    const area = cameraOf(cam(20), size).area;
    const opens = Math.min((OPEN_FRACTION * area.w) / sizes.w[i], (OPEN_FRACTION * area.h) / sizes.h[i]);
    const centre = [area.l + area.w / 2, area.t + area.h / 2];
    const small = semanticZoom(g, cam(LEGIBLE_PPU), cam(Math.max(LEGIBLE_PPU + 0.1, opens * 0.8)), size, centre[0], centre[1], sizes);
    expect(small.kind).toBe('none');
    const big = semanticZoom(g, cam(opens * 0.9), cam(opens * 1.1), size, centre[0], centre[1], sizes);
    expect(big).toEqual({ kind: 'unfold', path: g.modules[i] });
  });
  it('asks Python once until the new graph lands', () => {
    const g = framed();
    const at = rangeAt(50, -5, LEGIBLE_PPU * 1.05, size);
    const store = createStore({ graph: g, range: at });
    const asked = [];
    const moved = [];
    let t = 0;
    const z = createSemanticZoom({ store, live: true, now: () => t, size: () => size, move: (r) => moved.push(r), refold: (...a) => asked.push(a) });
    const out = zoomAt(at, size, 200, 150, 0.8);
    z.zoom(out, 200, 150);
    z.zoom(out, 200, 150);
    expect(asked).toEqual([['fold_level', null, 'm']]);
    z.landed();
    z.zoom(out, 200, 150);
    expect(asked).toHaveLength(2);
    expect(moved).toHaveLength(3);
    const walk = createSemanticZoom({ store, live: false, now: () => t, size: () => size, move: (r) => moved.push(r), refold: (...a) => asked.push(a) });
    walk.zoom(out, 200, 150); // no kernel: a plain zoom
    expect(asked).toHaveLength(2);
    t += 1;
  });
});

describe('autoHeight', () => {
  it('gives the graph what it needs within the window, at least MIN_AUTO_PX', () => {
    expect(autoHeight([0, 10, -40, 0], 800, 150, 900)).toBe(Math.round(AUTO_FRACTION * 900));
    expect(autoHeight([0, 40, -2, 0], 800, 150, 900)).toBe(MIN_AUTO_PX - 150);
    const mid = autoHeight([0, 40, -20, 0], 800, 150, 1400);
    expect(mid).toBeGreaterThan(MIN_AUTO_PX - 150);
    expect(mid).toBeLessThan(AUTO_FRACTION * 1400);
  });
});
