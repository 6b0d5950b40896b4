import { describe, expect, it } from 'vitest';
import { ARROW_MIN_EDGE_PX, areaOf, arrowHead, createOverlay, edgeStyles, rangeFromEvent, tracePath, transform } from '../src/overlay.js';
import { fakeContext } from './fixtures.js';
import { makeTheme, N_BINS, RAN_COLOR } from '../src/style.js';

const theme = makeTheme();
const size = { width: 400, height: 300 };
const range = { x: /** @type {[number, number]} */ ([0, 10]), y: /** @type {[number, number]} */ ([-10, 0]) };

/** n polylines of 2 points each, NaN-separated, all inside the range. */
function lines(n) {
  const x = new Float32Array(3 * n);
  const y = new Float32Array(3 * n);
  for (let k = 0; k < n; k++) {
    x.set([1, 2, NaN], 3 * k);
    y.set([-1, -2, NaN], 3 * k);
  }
  return { x, y };
}

function scene(over = {}) {
  return {
    edges: [{ ...lines(3), color: '#ff0000', width: 2, dash: [] }],
    halo: { x: [], y: [], size: 20 },
    nodes: { x: [1, 2, 50], y: [-1, -2, -5], color: ['#00ff00', '#0000ff', '#111111'], symbol: ['circle', 'square-open', 'circle'], size: [10, 10, 10], opacity: [1, 1, 1], lineColor: ['#000', '#000', '#000'], lineWidth: [1, 1, 1], isBox: null },
    colorbar: null,
    ...over,
  };
}

function painted(sc) {
  const o = createOverlay(document);
  const host = document.createElement('div');
  o.attach(host);
  o.paint(sc, range, size);
  return { ops: o.el.__ctx.ops, el: o.el, host };
}

describe('overlay canvas', () => {
  it('is the first child of the plot, sized in CSS pixels, and never takes the mouse', () => {
    const { el, host } = painted(scene());
    expect(host.firstChild).toBe(el);
    expect(el.style.width).toBe('400px');
    expect(el.getAttribute('aria-hidden')).toBe('true');
    expect(el.dataset.painted).toBe('1');
  });

  it('strokes each edge layer in its colour, in batches of polylines', () => {
    const noNodes = { ...scene().nodes, x: [], y: [] };
    const few = painted(scene({ nodes: noNodes })).ops;
    expect(few.filter(([op]) => op === 'stroke')).toHaveLength(1);
    const many = painted(scene({ nodes: noNodes, edges: [{ ...lines(200), color: '#ff0000', width: 2, dash: [] }] })).ops;
    const strokes = many.filter(([op]) => op === 'stroke').length;
    expect(strokes).toBeGreaterThan(2); // 200 lines, 64 a batch
    expect(strokes).toBeLessThan(6);
    expect(many.filter(([op]) => op === 'moveTo').length).toBeGreaterThanOrEqual(200);
  });

  it('rings the node that just ran in its own colour', () => {
    const none = painted(scene()).ops;
    const { ops } = painted(scene({ ran: { x: [1], y: [-1], size: [24] } }));
    const arcs = (o) => o.filter(([op]) => op === 'arc');
    expect(arcs(ops).length).toBe(arcs(none).length + 1);
    expect(arcs(ops).some((o) => o[3] === 12)).toBe(true); // radius = size / 2
    expect(JSON.stringify(ops)).toContain(RAN_COLOR);
    expect(JSON.stringify(none)).not.toContain(RAN_COLOR);
  });

  it('paints nodes in view only, fills solid symbols and strokes open ones in their colour', () => {
    const { ops } = painted(scene());
    const fills = ops.filter(([op, k, v]) => op === 'set' && k === 'fillStyle').map(([, , v]) => v);
    expect(fills).toContain('#00ff00');
    expect(fills).not.toContain('#111111'); // x = 50 is far outside the range
    const strokes = ops.filter(([op, k]) => op === 'set' && k === 'strokeStyle').map(([, , v]) => v);
    expect(strokes).toContain('#0000ff'); // the open square is outlined in its own colour
    expect(ops.some(([op]) => op === 'rect')).toBe(true);
  });

  it('skips module boxes (plotly draws them above) and draws the colour bar when given', () => {
    const withBar = scene({
      nodes: { ...scene().nodes, isBox: [1, 0, 0] },
      colorbar: { colors: theme.bins, tickvals: [-2, -1], ticktext: ['0.01', '0.1'], range: [-2, -1], title: '‖grad‖', font: '#000', fontMuted: '#666', fontFamily: 'sans-serif' },
    });
    const { ops } = painted(withBar);
    const fills = ops.filter(([op, k]) => op === 'set' && k === 'fillStyle').map(([, , v]) => v);
    expect(fills).not.toContain('#00ff00');
    expect(ops.filter(([op]) => op === 'fillRect')).toHaveLength(N_BINS);
    expect(ops.filter(([op]) => op === 'fillText').map(([, t]) => t)).toEqual(['0.01', '0.1', '‖grad‖']);
  });
});

describe('overlay geometry', () => {
  it('maps layout units to pixels like plotly (y up), inside the plotting area', () => {
    const area = { l: 10, t: 5, w: 100, h: 50 };
    const { px, py } = transform({ x: [0, 10], y: [-5, 0] }, area);
    expect(px(0)).toBe(10);
    expect(px(10)).toBe(110);
    expect(py(0)).toBe(5);
    expect(py(-5)).toBe(55);
    expect(areaOf({ _fullLayout: { _size: area } }, size)).toEqual(area);
    expect(areaOf(null, size).w).toBeGreaterThan(0);
  });

  it('reads ranges from plotly relayout events, completing a missing axis', () => {
    const cur = { x: /** @type {[number, number]} */ ([0, 1]), y: /** @type {[number, number]} */ ([0, 1]) };
    expect(rangeFromEvent({ 'xaxis.range[0]': 2, 'xaxis.range[1]': 3 }, cur)).toEqual({ x: [2, 3], y: [0, 1] });
    expect(rangeFromEvent({ 'yaxis.range': [4, 5] }, cur)).toEqual({ x: [0, 1], y: [4, 5] });
    expect(rangeFromEvent({ 'xaxis.autorange': true }, cur)).toBeNull();
    expect(rangeFromEvent({ 'xaxis.range[0]': 'nope' }, cur)).toBeNull();
  });

  it('traces the marker symbols the graph uses', () => {
    for (const sym of ['circle', 'square', 'diamond', 'hexagon', 'pentagon', 'circle-open', 'square-open']) {
      const ctx = fakeContext();
      tracePath(ctx, sym, 0, 0, 10);
      expect(ctx.ops.length).toBeGreaterThan(0);
    }
    const ctx = fakeContext();
    tracePath(ctx, 'diamond', 0, 0, 10);
    expect(ctx.ops[0]).toEqual(['moveTo', 0, -6.5]);
  });

  it('styles every edge bucket: glow, idle, no gradient dotted, one per bin, NaN dashed', () => {
    const s = edgeStyles(theme);
    expect(s).toHaveLength(4 + N_BINS);
    expect(s[1].color).toBe(theme.idleEdge);
    expect(s[2].dash.length).toBeGreaterThan(0);
    expect(s.at(-1).dash.length).toBeGreaterThan(0);
    expect(s[3].width).toBeLessThan(s[3 + N_BINS - 1].width); // bigger norms, thicker lines
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

  it('are painted at the end of each polyline that names its target, in the layer colour', () => {
    const layer = { x: new Float32Array([1, 1, 9, NaN, 2, 8, NaN]), y: new Float32Array([-1, -5, -5, NaN, -8, -8, NaN]), color: '#ff0000', width: 2, dash: [], dst: [0, 1] };
    const nodes = { x: [9, 8], y: [-5, -8], color: ['#000', '#000'], symbol: ['circle', 'circle'], size: [10, 10], opacity: [1, 1], lineColor: ['#000', '#000'], lineWidth: [1, 1], isBox: null };
    const withHeads = painted(scene({ edges: [layer], nodes })).ops;
    const without = painted(scene({ edges: [{ ...layer, dst: undefined }], nodes })).ops;
    const fills = (o) => o.filter(([op]) => op === 'closePath').length;
    expect(fills(withHeads) - fills(without)).toBe(2);
    // the first head points right (+x) and its tip is 5 px + 1 short of node 0's centre
    const { px, py } = transform(range, areaOf(null, size));
    const tips = withHeads.filter(([op, x, y]) => op === 'moveTo' && Math.abs(y - py(-5)) < 1e-6 && x < px(9) && x > px(9) - 7);
    expect(tips.length).toBe(1);
    expect(tips[0][1]).toBeCloseTo(px(9) - 6);
  });
});
