// @ts-check
// The canvas (canvas.js): hit testing of items, leaf copies and edges; createCanvas in jsdom
// (what was painted is recorded even without a real 2D context) and its gestures: click vs drag,
// wheel zoom about the pointer, double-click Fit, rAF-throttled hover.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { CLICK_SLOP_PX, EDGE_HIT_PX, WHEEL_ZOOM, createCanvas, hitEdge, hitItem } from '../src/canvas.js';
import { LEGIBLE_PX, cameraOf, fitView, panBy, projector, rangeAt, zoomAt } from '../src/camera.js';
import { buildDrawing } from '../src/drawing.js';
import { estimateWidth, overlappingLabels } from '../src/labelplace.js';
import { decodeGraph, decodeState } from '../src/model.js';
import { BADGE_MIN_PX, makeTheme } from '../src/style.js';
import { boxes, broken, dataView, nonfinite, partialGraph, zGraph, zState } from './fixtures.js';

const SIZE = { width: 800, height: 400 };
const theme = makeTheme();

describe('hitItem', () => {
  // items 0 at (0, 0) 4 x 2 units, 1 at (10, 0), 2 at (11, 0.5) overlapping 1; a copy of 1 at (20, 0)
  const graph = partialGraph({
    n: 3,
    x: Float32Array.from([0, 10, 11]),
    y: Float32Array.from([0, 0, 0.5]),
    copies: { item: Int32Array.from([1, -1]), x: Float32Array.from([20, 30]), y: Float32Array.from([0, 0]) },
  });
  const size = { w: Float32Array.from([4, 4, 4]), h: Float32Array.from([2, 2, 2]) };

  it('inside a box, up to its border plus the pad; outside: -1', () => {
    expect(hitItem(graph, size, 0, 0, 0)).toBe(0);
    expect(hitItem(graph, size, 1.99, 0.99, 0)).toBe(0);
    expect(hitItem(graph, size, 2.05, 0, 0)).toBe(-1);
    expect(hitItem(graph, size, 2.05, 0, 0.1)).toBe(0); // the pad
    expect(hitItem(graph, size, 0, -1.2, 0.1)).toBe(-1);
    expect(hitItem(graph, size, 5, 0, 0.1)).toBe(-1); // between boxes
  });

  it('overlapping boxes: the last painted (topmost) wins', () => {
    expect(hitItem(graph, size, 10.5, 0.2, 0)).toBe(2);
    expect(hitItem(graph, size, 8.5, 0, 0)).toBe(1);
  });

  it('a leaf copy answers as the item it copies; an unplaced copy (-1) never answers', () => {
    expect(hitItem(graph, size, 20, 0, 0)).toBe(1);
    expect(hitItem(graph, size, 21.5, 0.5, 0)).toBe(1);
    expect(hitItem(graph, size, 30, 0, 0)).toBe(-1);
  });
});

describe('hitEdge', () => {
  // e0: (0,0) -> (10,0); e1: (0,1) -> (10,1) -> (10,5) (a bend); paths end in a NaN gap
  const graph = partialGraph({
    m: 2,
    pathX: Float32Array.from([0, 10, NaN, 0, 10, 10, NaN]),
    pathY: Float32Array.from([0, 0, NaN, 1, 1, 5, NaN]),
    pathPtr: Int32Array.from([0, 3, 7]),
  });

  it('within the tolerance of a segment, the nearest edge; beyond: -1', () => {
    expect(hitEdge(graph, 5, 0.3, 0.5)).toBe(0);
    expect(hitEdge(graph, 5, 0.7, 0.5)).toBe(1);
    expect(hitEdge(graph, 5, 0.5, 0.6)).toBeGreaterThanOrEqual(0); // equidistant: one of them
    expect(hitEdge(graph, 5, 3, 0.5)).toBe(-1);
    expect(hitEdge(graph, 10.4, 3, 0.5)).toBe(1); // on the bend's second segment
    expect(hitEdge(graph, 10.6, 3, 0.5)).toBe(-1);
    expect(hitEdge(graph, -0.4, 0, 0.5)).toBe(0); // past a segment's end: distance to the end point
    expect(hitEdge(graph, -0.6, 0, 0.5)).toBe(-1);
  });

  it('an empty graph hits nothing', () => {
    expect(hitEdge(partialGraph({ m: 0, pathX: new Float32Array(0), pathY: new Float32Array(0), pathPtr: Int32Array.from([0]) }), 0, 0, 1)).toBe(-1);
  });
});

describe('createCanvas', () => {
  /** @type {{ range: any, size: any }} */
  let view;
  let on;
  let c;
  /** Paint `graph` and `state` at Fit (or `range`). */
  const paint = (graph, state, range = null, opts = {}) => {
    view.range = range ?? fitView(graph.bounds, SIZE, { orientation: graph.orientation }).range;
    return c.paint(graph, state, buildDrawing(graph, state, theme, { ...view, selected: -1, ...opts }), view.range, SIZE);
  };
  const ev = (type, x, y, extra = {}) => c.el.dispatchEvent(new MouseEvent(type, { bubbles: true, cancelable: true, button: 0, clientX: x, clientY: y, ...extra }));
  const centreOf = (p, index, kind = null) => {
    const b = p.items.find((it) => it.index === index && (kind ? it.kind === kind : it.kind !== 'copy'));
    return [b.x + b.w / 2, b.y + b.h / 2];
  };

  beforeEach(() => {
    document.body.innerHTML = '';
    window.requestAnimationFrame = undefined;
    view = { range: null, size: SIZE };
    on = {
      view: () => view,
      move: vi.fn((r) => {
        view.range = r;
      }),
      hover: vi.fn(),
      click: vi.fn(),
      fit: vi.fn(),
    };
    c = createCanvas(document, on);
    document.body.append(c.el);
  });
  afterEach(() => {
    c.destroy();
    vi.useRealTimers();
  });

  it('records what it painted: items in view, labels, marks, a paint counter, toPx and edgeMid', () => {
    const g = decodeGraph(zGraph());
    const st = decodeState(zState(3), g);
    const p = paint(g, st);
    expect(c.el.className).toBe('agw-canvas');
    expect(c.el.agwPainted).toBe(p);
    expect(c.el.dataset.painted).toBe('1');
    expect(p.items.map((b) => b.index)).toEqual([0, 1, 2, 3]);
    expect(p.font).toBeGreaterThanOrEqual(LEGIBLE_PX);
    expect(p.labels.filter((l) => l.kind === 'node' && l.line === 0).map((l) => l.text)).toEqual(['Add', 'Pow', 'input 0 []', 'x']);
    expect(p.marks).toMatchObject({ next: 3, ran: 1, selected: -1, selectedEdge: -1, highlight: [], badges: [] });
    const [x, y] = p.toPx(g.x[1], g.y[1]);
    const [cx, cy] = centreOf(p, 1);
    expect(x).toBeCloseTo(cx);
    expect(y).toBeCloseTo(cy);
    expect(p.edgeMid(2)).toEqual(p.toPx(g.midX[2], g.midY[2]));
    expect(overlappingLabels(p.labels)).toEqual([]);
    // the canvas's backing store follows the size and the device pixel ratio
    expect(c.el.style.width).toBe('800px');
    expect(c.el.width).toBe(Math.round(800 * (window.devicePixelRatio || 1)));
    paint(g, st);
    expect(c.el.dataset.painted).toBe('2');
  });

  it('without a 2D context (plain jsdom) nothing is drawn but agwPainted is computed with estimated widths', () => {
    const real = HTMLCanvasElement.prototype.getContext;
    HTMLCanvasElement.prototype.getContext = () => null;
    try {
      const bare = createCanvas(document, on);
      const g = decodeGraph(zGraph());
      view.range = fitView(g.bounds, SIZE).range;
      const p = bare.paint(g, decodeState(zState(0), g), buildDrawing(g, decodeState(zState(0), g), theme, { ...view, selected: -1 }), view.range, SIZE);
      const add = p.labels.find((l) => l.index === 0 && l.line === 0);
      expect(add.w).toBeCloseTo(estimateWidth('Add', add.font));
      expect(bare.el.dataset.painted).toBe('1');
      expect(bare.el.__ctx).toBeUndefined();
      bare.destroy();
    } finally {
      HTMLCanvasElement.prototype.getContext = real;
    }
  });

  it('only what is in view: items off screen are not recorded; an item cut by the view\'s edge is labelled in its visible part', () => {
    const g = decodeGraph(boxes.graph());
    const st = decodeState(boxes.state(0), g);
    // the view's bottom edge cuts LogSoftmax (item 1) through its middle: NllLoss above in full,
    // the boxes below off screen
    const ppu = 30;
    const half = (SIZE.height - 16) / 2 / ppu; // the plotting area is the size less 8 px margins
    const p = paint(g, st, rangeAt(g.x[1], g.y[1] + half, ppu, SIZE));
    expect(p.items.some((b) => b.index === 0)).toBe(true);
    expect(p.items.some((b) => b.index === 4)).toBe(false);
    const partly = p.items.filter((b) => b.y < p.area.t || b.y + b.h > p.area.t + p.area.h || b.x < p.area.l || b.x + b.w > p.area.l + p.area.w);
    expect(partly.map((b) => b.index)).toEqual([1]);
    // cut through the middle: the name moves into the part in view
    const moved = p.labels.find((l) => l.index === 1 && l.line === 0);
    expect(moved?.text).toBe('LogSoftmax');
    expect(moved.y + moved.h).toBeLessThanOrEqual(p.area.t + p.area.h + 0.5);
    // now the edge cuts LogSoftmax's box below its label: the label stays
    const b1 = p.items.find((b) => b.index === 1);
    const lab = decodeGraph(boxes.graph()); // (same layout)
    const q = paint(g, st, rangeAt(lab.x[1], g.y[1] + half - (0.3 * b1.h) / ppu, ppu, SIZE));
    const cut = q.items.find((b) => b.index === 1);
    expect(cut.y + cut.h).toBeGreaterThan(q.area.t + q.area.h); // still cut by the view's edge
    const kept = q.labels.find((l) => l.index === 1 && l.line === 0);
    expect(kept?.text).toBe('LogSoftmax');
    expect(kept.y + kept.h).toBeLessThanOrEqual(q.area.t + q.area.h + 0.5);
    for (const l of p.labels) {
      expect(l.x).toBeGreaterThanOrEqual(p.area.l - 1);
      expect(l.y).toBeGreaterThanOrEqual(p.area.t - 1);
    }
  });

  it('leaf copies are recorded as copies of their item, and a click on one answers the item', () => {
    const g = decodeGraph(nonfinite.graph());
    const st = decodeState(nonfinite.state(nonfinite.steps), g);
    expect(g.copies.item.length).toBeGreaterThan(0);
    const p = paint(g, st);
    const copy = p.items.find((b) => b.kind === 'copy');
    expect(copy).toBeTruthy();
    const k = [...g.copies.item].indexOf(copy.index);
    const [x, y] = p.toPx(g.copies.x[k], g.copies.y[k]);
    expect(copy.x + copy.w / 2).toBeCloseTo(x);
    expect(copy.y + copy.h / 2).toBeCloseTo(y);
    ev('pointerdown', x, y);
    ev('pointerup', x, y);
    expect(on.click).toHaveBeenCalledWith({ kind: 'node', index: copy.index }, expect.anything());
  });

  it('badges of stale/freed nodes at their boxes\' corners, never smaller than BADGE_MIN_PX', () => {
    const g = decodeGraph(broken.graph());
    const p = paint(g, decodeState(broken.state(0), g));
    expect(p.marks.badges.map((b) => b.item).sort()).toEqual([2, 4]);
    for (const bd of p.marks.badges) {
      const b = p.items.find((it) => it.index === bd.item);
      expect(bd.size).toBeGreaterThanOrEqual(BADGE_MIN_PX);
      expect([bd.x, bd.y]).toEqual([b.x + b.w, b.y]);
    }
  });

  it('strokes edges in batches of polylines (one path of thousands of lines is quadratic)', () => {
    // 200 parallel edges between two nodes far apart; the view shows their middle only
    const m = 200;
    const g = decodeGraph({
      version: 1, orientation: 'TB', bounds: [-1, 1, -101, 1],
      nodes: { count: 2, id: ['n0', 'n1'], x: dataView(Float32Array.from([0, 0]), 1), y: dataView(Float32Array.from([0, -100]), 3) },
      edges: { count: m, src: dataView(new Int32Array(m), 1), dst: dataView(Int32Array.from({ length: m }, () => 1), 3) },
    });
    paint(g, decodeState({ seq: 1 }, g), { x: [-5, 5], y: [-55, -45] });
    const ops = c.el.__ctx.ops;
    expect(c.el.agwPainted.items).toEqual([]); // both nodes are off screen
    expect(ops.filter(([op]) => op === 'moveTo').length).toBe(m);
    expect(ops.filter(([op]) => op === 'stroke').length).toBe(1 + Math.floor(m / 64));
    expect(ops.filter(([op]) => op === 'closePath')).toHaveLength(0); // the ends are off screen: no heads
  });

  it('an arrowhead at the end of every edge, its tip on the target box\'s border, in the layer colour', () => {
    const g = decodeGraph(zGraph());
    const p = paint(g, decodeState(zState(4), g));
    const ops = c.el.__ctx.ops;
    /** the triangles: moveTo(tip), lineTo, lineTo, closePath */
    const heads = [];
    let fill = '';
    ops.forEach((o, k) => {
      if (o[0] === 'set' && o[1] === 'fillStyle') fill = o[2];
      if (o[0] === 'closePath' && ops[k - 3]?.[0] === 'moveTo' && ops[k - 2]?.[0] === 'lineTo' && ops[k - 1]?.[0] === 'lineTo') heads.push({ tip: [ops[k - 3][1], ops[k - 3][2]], fill });
    });
    expect(heads).toHaveLength(g.m);
    for (let e = 0; e < g.m; e++) {
      const b = p.items.find((it) => it.index === g.dst[e]);
      // the edge enters its target from above (a top-to-bottom drawing): the tip is 1 px above the box
      const head = heads.find((hd) => Math.abs(hd.tip[1] - (b.y - 1)) < 0.5 && hd.tip[0] >= b.x && hd.tip[0] <= b.x + b.w);
      expect(head, `edge ${e}`).toBeTruthy();
      expect(theme.bins).toContain(head.fill); // every edge flowed: heads in bin colours
    }
  });

  it('a click (press and release within the slop) answers the hit: item, edge or nothing', () => {
    const g = decodeGraph(zGraph());
    const p = paint(g, decodeState(zState(4), g));
    const [x, y] = centreOf(p, 1);
    ev('pointerdown', x, y);
    ev('pointermove', x + CLICK_SLOP_PX - 1, y);
    ev('pointerup', x + CLICK_SLOP_PX - 1, y, { shiftKey: true });
    expect(on.click).toHaveBeenCalledTimes(1);
    expect(on.click.mock.calls[0][0]).toEqual({ kind: 'node', index: 1 });
    expect(on.click.mock.calls[0][1].shiftKey).toBe(true); // the event goes along (shift+click inspects a box)
    expect(on.move).not.toHaveBeenCalled();
    const [ex, ey] = p.edgeMid(2);
    ev('pointerdown', ex + EDGE_HIT_PX - 2, ey);
    ev('pointerup', ex + EDGE_HIT_PX - 2, ey);
    expect(on.click.mock.calls[1][0]).toEqual({ kind: 'edge', index: 2 });
    ev('pointerdown', 12, 12);
    ev('pointerup', 12, 12);
    expect(on.click.mock.calls[2][0]).toBeNull();
    // another button, or a cancelled press, is no click
    ev('pointerdown', x, y, { button: 2 });
    ev('pointerup', x, y, { button: 2 });
    ev('pointerdown', x, y);
    ev('pointercancel', x, y);
    expect(on.click).toHaveBeenCalledTimes(3);
  });

  it('a drag beyond the slop pans (the drawing follows the pointer) and is no click', () => {
    const g = decodeGraph(zGraph());
    paint(g, decodeState(zState(0), g));
    const start = view.range;
    ev('pointerdown', 300, 200);
    ev('pointermove', 300 + CLICK_SLOP_PX + 6, 190);
    expect(c.el.classList.contains('agw-dragging')).toBe(true);
    ev('pointermove', 360, 230);
    ev('pointerup', 360, 230);
    expect(c.el.classList.contains('agw-dragging')).toBe(false);
    expect(on.click).not.toHaveBeenCalled();
    expect(on.move).toHaveBeenCalledTimes(2);
    const last = on.move.mock.calls.at(-1)[0];
    const want = panBy(start, SIZE, 60, 30); // relative to the press, not to the previous move
    expect(last.x[0]).toBeCloseTo(want.x[0], 9);
    expect(last.y[1]).toBeCloseTo(want.y[1], 9);
  });

  it('the wheel zooms about the pointer (lines and pages scaled too)', () => {
    const g = decodeGraph(zGraph());
    paint(g, decodeState(zState(0), g));
    const start = view.range;
    c.el.dispatchEvent(new WheelEvent('wheel', { bubbles: true, cancelable: true, deltaY: -200, deltaMode: 0, clientX: 250, clientY: 120 }));
    const r = on.move.mock.calls[0][0];
    const want = zoomAt(start, SIZE, 250, 120, Math.exp(200 * WHEEL_ZOOM));
    expect(r.x[0]).toBeCloseTo(want.x[0], 9);
    expect(r.y[1]).toBeCloseTo(want.y[1], 9);
    const a = projector(cameraOf(start, SIZE));
    const b = projector(cameraOf(r, SIZE));
    expect(b.ux(250)).toBeCloseTo(a.ux(250), 6); // the point under the pointer stays there
    expect(b.uy(120)).toBeCloseTo(a.uy(120), 6);
    expect(cameraOf(r, SIZE).ppu).toBeGreaterThan(cameraOf(start, SIZE).ppu);
    // deltaMode 1 (lines): 16 px a line; a positive delta zooms out
    const before = view.range;
    c.el.dispatchEvent(new WheelEvent('wheel', { bubbles: true, cancelable: true, deltaY: 3, deltaMode: 1, clientX: 250, clientY: 120 }));
    expect(cameraOf(view.range, SIZE).ppu).toBeCloseTo(cameraOf(before, SIZE).ppu * Math.exp(-48 * WHEEL_ZOOM), 6);
  });

  it('a double-click fits', () => {
    const g = decodeGraph(zGraph());
    paint(g, decodeState(zState(0), g));
    c.el.dispatchEvent(new MouseEvent('dblclick', { bubbles: true }));
    expect(on.fit).toHaveBeenCalledTimes(1);
  });

  it('hover is throttled to one hit test per animation frame, with the last position; leaving clears it', () => {
    const frames = [];
    window.requestAnimationFrame = (cb) => frames.push(cb);
    const g = decodeGraph(zGraph());
    const p = paint(g, decodeState(zState(4), g));
    const [x0, y0] = centreOf(p, 0);
    const [x1, y1] = centreOf(p, 3);
    ev('pointermove', x0, y0);
    ev('pointermove', x0 + 1, y0);
    ev('pointermove', x1, y1);
    expect(frames).toHaveLength(1);
    expect(on.hover).not.toHaveBeenCalled();
    frames.shift()();
    expect(on.hover).toHaveBeenCalledTimes(1);
    expect(on.hover.mock.calls[0][0]).toEqual({ kind: 'node', index: 3 });
    expect(c.el.style.cursor).toBe('pointer');
    ev('pointermove', 12, 12);
    frames.shift()();
    expect(on.hover.mock.calls[1][0]).toBeNull();
    expect(c.el.style.cursor).toBe('');
    c.el.dispatchEvent(new MouseEvent('mouseleave'));
    expect(on.hover.mock.calls.at(-1)[0]).toBeNull();
  });

  it('without requestAnimationFrame the hover waits one timer; before the first paint nothing is hit', async () => {
    ev('pointermove', 100, 100);
    await new Promise((r) => setTimeout(r, 0));
    expect(on.hover).toHaveBeenCalledWith(null, expect.anything());
    expect(c.hitAt(new MouseEvent('click', { clientX: 100, clientY: 100 }))).toBeNull();
  });

  it('destroy removes the element', () => {
    expect(document.querySelector('.agw-canvas')).toBe(c.el);
    c.destroy();
    expect(document.querySelector('.agw-canvas')).toBeNull();
  });
});
