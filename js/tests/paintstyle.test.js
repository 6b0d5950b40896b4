// @ts-check
// Edge styles, arrowheads and marker symbols (paintstyle.js) that the canvas paints with.
import { describe, expect, it } from 'vitest';
import { ARROW_MIN_EDGE_PX, arrowHead, arrowIntoBox, colorbar, edgeLayers, edgeStyles, tracePath } from '../src/paintstyle.js';
import { decodeGraph, decodeState } from '../src/model.js';
import { fakeContext, zGraph, zState } from './fixtures.js';
import { ALARM_COLOR, DIFF_COLOR, makeTheme, N_BINS } from '../src/style.js';

const theme = makeTheme();

describe('edge styles and symbols', () => {
  it('traces the marker symbols the graph uses', () => {
    for (const sym of ['circle', 'square', 'diamond', 'hexagon', 'pentagon', 'circle-open', 'square-open', 'triangle-up', 'x']) {
      const ctx = fakeContext();
      tracePath(ctx, sym, 0, 0, 10);
      expect(ctx.ops.length).toBeGreaterThan(0);
    }
    const ctx = fakeContext();
    tracePath(ctx, 'diamond', 0, 0, 10);
    expect(ctx.ops[0]).toEqual(['moveTo', 0, -6.5]);
  });

  it('styles every edge bucket: glow, idle, no gradient dotted, saved values dotted, one per bin, NaN dashed, differs', () => {
    const s = edgeStyles(theme);
    expect(s).toHaveLength(6 + N_BINS);
    expect(s[3].color).toBe(theme.savedEdge);
    expect(s[3].dash.length).toBeGreaterThan(0);
    expect(s.at(-2).color).toBe(ALARM_COLOR);
    expect(s.at(-1).color).toBe(DIFF_COLOR);
    expect(s[1].color).toBe(theme.idleEdge);
    expect(s[2].dash.length).toBeGreaterThan(0);
    expect(s.at(-1).dash.length).toBeGreaterThan(0);
    expect(s[4].width).toBeLessThan(s[4 + N_BINS - 1].width); // bigger norms, thicker lines
    // edgeLayers pairs the bucketed paths with these styles, keeping each polyline's target
    const p = { x: new Float32Array([0, 1, NaN]), y: new Float32Array([0, 1, NaN]), dst: Int32Array.from([3]) };
    const layers = edgeLayers(s.map(() => p), theme);
    expect(layers.map((l) => l.color)).toEqual(s.map((x) => x.color));
    expect(Array.from(layers[0].dst)).toEqual([3]);
  });

  it('the colour bar spans the state\'s fixed range, titled by how it was chosen', () => {
    const g = decodeGraph(zGraph());
    expect(colorbar(decodeState(zState(0), g), theme)).toBeNull(); // nothing flowed: no scale yet
    const cb = colorbar(decodeState(zState(2), g), theme);
    expect(cb.colors).toEqual(theme.bins);
    expect(cb.range[0]).toBeCloseTo(0);
    expect(cb.range[1]).toBeCloseTo(Math.log10(4));
    expect(cb.title).toBe('‖grad‖');
    expect(cb.tickvals.length).toBe(cb.ticktext.length);
    const sofar = colorbar(decodeState({ ...zState(2), norm_scale: 'so far' }, g), theme);
    expect(sofar.title).toBe('‖grad‖ so far');
  });
});

describe('arrowheads', () => {
  it('point along the last segment, the tip on a round marker\'s border', () => {
    const a = arrowHead(0, 0, 100, 0, { r: 10, width: 2 });
    expect(a).not.toBeNull();
    expect(a.tip[0]).toBeCloseTo(90);
    expect(a.tip[1]).toBeCloseTo(0);
    // the base is behind the tip, symmetric about the segment
    expect(a.left[0]).toBeCloseTo(90 - a.len);
    expect(a.right[0]).toBeCloseTo(90 - a.len);
    expect(a.left[1]).toBeCloseTo(-a.right[1]);
    expect(Math.abs(a.left[1])).toBeGreaterThan(2);
    // downwards (a top-to-bottom drawing in pixels): the tip is above the target
    const b = arrowHead(50, 0, 50, 80, { r: 6 });
    expect(b.tip[0]).toBeCloseTo(50);
    expect(b.tip[1]).toBeCloseTo(74);
    expect(b.left[1]).toBeLessThan(b.tip[1]);
  });

  it('stop where the segment enters a box', () => {
    const a = arrowHead(0, 0, 100, 0, { hw: 30, hh: 8 });
    expect(a.tip[0]).toBeCloseTo(70);
    const b = arrowHead(100, 0, 100, 100, { hw: 30, hh: 8 });
    expect(b.tip[1]).toBeCloseTo(92);
    const c = arrowHead(0, 0, 100, 100, { hw: 30, hh: 8 }); // through the top edge: 8 / sin 45°
    expect(c.tip[1]).toBeCloseTo(92);
    expect(c.tip[0]).toBeCloseTo(92);
  });

  it('scale with the line width within legible bounds, and skip edges tiny on screen', () => {
    const thin = arrowHead(0, 0, 200, 0, { width: 1 });
    const thick = arrowHead(0, 0, 200, 0, { width: 9 });
    expect(thin.len).toBeGreaterThanOrEqual(7);
    expect(thick.len).toBeLessThanOrEqual(12);
    expect(thick.len).toBeGreaterThan(thin.len);
    expect(arrowHead(0, 0, ARROW_MIN_EDGE_PX - 1, 0)).toBeNull();
    expect(arrowHead(0, 0, 30, 0, { r: 20 })).toBeNull(); // 10 px left outside the marker
    expect(arrowHead(5, 5, 5, 5)).toBeNull();
  });

  it('into a box: the tip where the route enters it, whether it ends at the centre or on the border', () => {
    // a straight route into the centre of a box 40 x 20 (half sizes 20 x 10)
    expect(arrowIntoBox([0, 0], [0, 100], 0, 1, 0, 100, 20, 10, 2).tip).toEqual([0, 90]);
    // a route that ends on the border (the layout's port): the same tip
    const onBorder = arrowIntoBox([0, 0], [0, 90], 0, 1, 0, 100, 20, 10, 2);
    expect(onBorder.tip[0]).toBeCloseTo(0);
    expect(onBorder.tip[1]).toBeCloseTo(90);
    // a bend 10 px above the border, then a short stub to the centre (the layout's port): a head
    // that just fits on the stub is drawn (the route is longer), its tip on the border
    const bent = arrowIntoBox([-60, 0, 0], [0, 80, 100], 0, 2, 0, 100, 20, 10, 2);
    expect(bent.tip[0]).toBeCloseTo(0);
    expect(bent.tip[1]).toBeCloseTo(90);
    expect(bent.left[1]).toBeLessThan(90); // pointing down, along the stub
    // a stub too short for even a small head: none
    expect(arrowIntoBox([-60, 0, 0], [0, 88, 100], 0, 2, 0, 100, 20, 10, 2)).toBeNull();
    // entering through a side: the tip on that side
    const side = arrowIntoBox([-100, 0], [100, 100], 0, 1, 0, 100, 20, 10, 2);
    expect(side.tip[0]).toBeCloseTo(-20);
    expect(side.tip[1]).toBeCloseTo(100);
    // a route that never leaves the box, or ends outside it: no head
    expect(arrowIntoBox([0, 5], [100, 102], 0, 1, 0, 100, 20, 10)).toBeNull();
    expect(arrowIntoBox([0, 0], [0, 50], 0, 1, 0, 100, 20, 10)).toBeNull();
  });
});
