// @ts-check
// The minimap's geometry (pure) and its element (DOM, fake canvas from setup.js).
import { describe, expect, it, vi } from 'vitest';
import {
  MINIMAP_MAX,
  MINIMAP_PAD,
  centredRange,
  createMinimap,
  exceedsView,
  jumpRange,
  minimapTransform,
  viewRect,
} from '../src/minimap.js';

/** @type {[number, number, number, number]} */
const WIDE = [0, 100, -20, 0]; // 100 x 20 layout units

describe('minimap geometry', () => {
  it('keeps the aspect ratio: the longer side fills the box, the drawing is centred', () => {
    const t = minimapTransform(WIDE);
    expect(t.width).toBe(MINIMAP_MAX.width);
    expect(t.k).toBeCloseTo((MINIMAP_MAX.width - 2 * MINIMAP_PAD) / 100);
    expect(t.height).toBe(Math.round(20 * t.k + 2 * MINIMAP_PAD));
    expect(t.px(0)).toBeCloseTo(MINIMAP_PAD);
    expect(t.px(100)).toBeCloseTo(MINIMAP_MAX.width - MINIMAP_PAD);
    // y grows upwards in the layout, downwards on the canvas: the top (y = 0) is at the top
    expect(t.py(0)).toBeLessThan(t.py(-20));
    const tall = minimapTransform([0, 10, -200, 0]);
    expect(tall.height).toBe(MINIMAP_MAX.height);
    expect(tall.width).toBeLessThan(MINIMAP_MAX.width);
  });

  it('world -> minimap -> world is the identity', () => {
    const t = minimapTransform(WIDE);
    for (const [x, y] of [[0, 0], [37.5, -12.25], [100, -20]]) {
      expect(t.wx(t.px(x))).toBeCloseTo(x);
      expect(t.wy(t.py(y))).toBeCloseTo(y);
    }
  });

  it('the view rectangle is the range in minimap pixels, clipped to the minimap', () => {
    const t = minimapTransform(WIDE);
    const r = viewRect({ x: [10, 30], y: [-15, -5] }, t);
    expect(r.left).toBeCloseTo(t.px(10));
    expect(r.width).toBeCloseTo(20 * t.k);
    expect(r.top).toBeCloseTo(t.py(-5));
    expect(r.height).toBeCloseTo(10 * t.k);
    const out = viewRect({ x: [-1000, 1000], y: [-1000, 1000] }, t);
    expect(out).toEqual({ left: 0, top: 0, width: t.width, height: t.height });
  });

  it('the drawing exceeds the view only when part of it is outside the range', () => {
    expect(exceedsView(WIDE, { x: [-5, 105], y: [-25, 5] })).toBe(false);
    expect(exceedsView(WIDE, { x: [0, 100], y: [-20, 0] })).toBe(false); // exactly fitted
    expect(exceedsView(WIDE, { x: [10, 105], y: [-25, 5] })).toBe(true);
    expect(exceedsView(WIDE, { x: [-5, 105], y: [-10, 5] })).toBe(true);
    expect(exceedsView([0, 0, 0, 0], { x: [1, 2], y: [1, 2] })).toBe(false); // no drawing yet
  });

  it('a click centres the view there, the zoom unchanged', () => {
    const t = minimapTransform(WIDE);
    const range = { x: /** @type {[number, number]} */ ([0, 20]), y: /** @type {[number, number]} */ ([-10, 0]) };
    const next = jumpRange(range, t, t.px(80), t.py(-15));
    expect(next.x[0]).toBeCloseTo(70);
    expect(next.x[1]).toBeCloseTo(90);
    expect(next.y[0]).toBeCloseTo(-20);
    expect(next.y[1]).toBeCloseTo(-10);
    expect(centredRange(range, 0, 0)).toEqual({ x: [-10, 10], y: [-5, 5] });
    // with the bounds, a click beside the drawing centres on its nearest point
    const clamped = jumpRange(range, t, 0, t.height + 50, WIDE);
    expect(clamped.x[0]).toBeCloseTo(-10);
    expect(clamped.y[0]).toBeCloseTo(-25);
  });
});

/** A drawing of three items and two straight edges, one frame around two of them. */
function scene() {
  return {
    bounds: WIDE,
    x: [0, 50, 100],
    y: [0, -10, -20],
    pathX: new Float32Array([0, 50, NaN, 50, 100, NaN]),
    pathY: new Float32Array([0, -10, NaN, -10, -20, NaN]),
    pathPtr: new Int32Array([0, 3, 6]),
    frames: [{ x0: 40, x1: 110, y0: -25, y1: -5, title: 'f' }],
    isBox: null,
  };
}
const COLORS = { edge: '#aaaaaa', node: '#555555', frame: '#999999', bg: '' };

describe('minimap element', () => {
  it('is hidden while the whole drawing is in view, shown (painted) when it is not', () => {
    const m = createMinimap(document, { jump: () => {} });
    document.body.append(m.el);
    const sc = scene();
    m.update(sc, { x: [-10, 110], y: [-30, 10] }, COLORS);
    expect(m.el.hidden).toBe(true);
    m.update(sc, { x: [0, 20], y: [-10, 0] }, COLORS);
    expect(m.el.hidden).toBe(false);
    const ops = m.el.querySelector('canvas').__ctx.ops;
    expect(ops.filter((o) => o[0] === 'fillRect')).toHaveLength(3); // one dot per item
    expect(ops.filter((o) => o[0] === 'strokeRect')).toHaveLength(1); // the frame
    expect(ops.filter((o) => o[0] === 'lineTo')).toHaveLength(2); // two edges
    const rect = m.el.querySelector('.agw-minimap-view');
    const t = m.transform();
    expect(parseFloat(rect.style.width)).toBeCloseTo(20 * t.k, 1);
    // the same scene again: the rectangle moves, the drawing is not repainted
    const n = ops.length;
    m.update(sc, { x: [50, 70], y: [-10, 0] }, COLORS);
    expect(ops.length).toBe(n);
    expect(parseFloat(rect.style.left)).toBeCloseTo(t.px(50), 1);
    m.destroy();
  });

  it('a press jumps the view there and a drag follows the pointer', () => {
    const jump = vi.fn();
    const m = createMinimap(document, { jump });
    document.body.append(m.el);
    m.update(scene(), { x: [0, 20], y: [-10, 0] }, COLORS);
    const t = m.transform();
    const at = (type, x, y) => m.el.dispatchEvent(new MouseEvent(type, { clientX: x, clientY: y, bubbles: true, cancelable: true, button: 0 }));
    at('pointerdown', t.px(60), t.py(-10)); // jsdom: the minimap sits at (0, 0)
    expect(jump).toHaveBeenCalledTimes(1);
    const r = jump.mock.calls[0][0];
    expect((r.x[0] + r.x[1]) / 2).toBeCloseTo(60, 0);
    expect((r.y[0] + r.y[1]) / 2).toBeCloseTo(-10, 0);
    expect(r.x[1] - r.x[0]).toBeCloseTo(20);
    at('pointermove', t.px(80), t.py(-10));
    expect(jump).toHaveBeenCalledTimes(2);
    expect((jump.mock.calls[1][0].x[0] + jump.mock.calls[1][0].x[1]) / 2).toBeCloseTo(80, 0);
    at('pointerup', t.px(80), t.py(-10));
    at('pointermove', t.px(90), t.py(-10)); // not dragging any more
    expect(jump).toHaveBeenCalledTimes(2);
    m.destroy();
  });
});
