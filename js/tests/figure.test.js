import { describe, expect, it } from 'vitest';
import { decodeGraph, decodeState } from '../src/model.js';
import {
  EDGE_TRACES,
  MARGIN,
  MAX_FIT_PX_PER_UNIT,
  T,
  buildFigure,
  combine,
  fitRange,
  hexAlpha,
  labelData,
  mergeRestyles,
  nodeSize,
  plotArea,
  pxPerUnit,
  statePatches,
} from '../src/figure.js';
import { makeTheme, N_BINS } from '../src/style.js';
import { zGraph, zState } from './fixtures.js';

const g = decodeGraph(zGraph());
const theme = makeTheme();
const size = { width: 900, height: 500 };

describe('fitRange', () => {
  it('centres a small graph at a capped scale', () => {
    const r = fitRange(g, size);
    const area = plotArea(size);
    expect(pxPerUnit(r, size)).toBeCloseTo(MAX_FIT_PX_PER_UNIT);
    // the whole graph is inside, and the range covers exactly the plotting area
    expect(r.x[0]).toBeLessThan(0);
    expect(r.x[1]).toBeGreaterThan(1);
    expect(r.y[0]).toBeLessThan(-2);
    expect(r.y[1]).toBeGreaterThan(0);
    expect((r.x[1] - r.x[0]) * MAX_FIT_PX_PER_UNIT).toBeCloseTo(area.width);
    expect(area.width).toBe(size.width - MARGIN.l - MARGIN.r);
  });
  it('fits a big graph into the plot with room for labels', () => {
    const big = { ...g, bounds: [0, 100, -10, 0] };
    const r = fitRange(big, size);
    const area = plotArea(size);
    const k = area.width / (r.x[1] - r.x[0]);
    expect(k).toBeLessThan(MAX_FIT_PX_PER_UNIT);
    expect((0 - r.x[0]) * k).toBeGreaterThanOrEqual(29); // left padding in pixels
    expect((r.x[1] - 100) * k).toBeGreaterThanOrEqual(109); // labels to the right
  });
  it('handles a single node', () => {
    const one = { ...g, bounds: [0, 0, 0, 0] };
    const r = fitRange(one, size);
    expect(r.x[0]).toBeLessThan(0);
    expect(r.x[1]).toBeGreaterThan(0);
  });
});

describe('buildFigure', () => {
  const view = { range: fitRange(g, size), size, selected: -1 };

  it('has one trace per role, line traces with NaN-separated paths', () => {
    const { data, layout, gl } = buildFigure(g, decodeState(zState(0), g), theme, view);
    expect(gl).toBe(false);
    expect(data[T.idle].x.length).toBe(9); // 3 edges x (2 points + NaN)
    expect(Number.isNaN(data[T.idle].x[2])).toBe(true);
    for (let b = 0; b < N_BINS; b++) expect(data[T.bin0 + b].x.length).toBe(0);
    expect(data[T.edgeHit].marker.showscale).toBe(false);
    expect(data[T.halo].x).toEqual([0.5]); // Add is next
    expect(layout.xaxis.autorange).toBe(false);
    expect(layout.dragmode).toBe('pan');
  });

  it('colours flowed edges, shows the colour bar and the values', () => {
    const { data } = buildFigure(g, decodeState(zState(4), g), theme, view);
    expect(data[T.idle].x.length).toBe(0);
    expect(data[T.bin0].x.length).toBe(6);
    expect(data[T.bin0 + N_BINS - 1].x.length).toBe(3);
    expect(data[T.edgeHit].marker.showscale).toBe(true);
    expect(data[T.edgeHit].marker.opacity).toBe(0);
    expect(data[T.edgeLabels].text).toEqual(['1', '1', '4']);
    expect(data[T.halo].x).toEqual([]);
    expect(data[T.fresh].x.length).toBe(0); // x's AccumulateGrad ran last: no outgoing edges
  });

  it('marks the selected node', () => {
    const { data } = buildFigure(g, decodeState(zState(0), g), theme, { ...view, selected: 3 });
    expect(data[T.ring].x).toEqual([1]);
  });
});

describe('labels that fit', () => {
  it('shows node labels when zoomed in enough, not when zoomed far out', () => {
    const s = decodeState(zState(4), g);
    const many = { ...g, n: 20 }; // more than the always-labelled few
    const near = labelData(many, s, { x: [-1, 2], y: [-3, 1] }, 100, theme);
    expect(near.nodes.text.length).toBe(4);
    const far = labelData(many, s, { x: [-1, 2], y: [-3, 1] }, 5, theme);
    expect(far.nodes.text.length).toBe(0);
    expect(far.edges.text.length).toBe(3); // values still shown (few, in view)
    const off = labelData(g, s, { x: [10, 20], y: [10, 20] }, 100, theme);
    expect(off.edges.text).toEqual([]);
  });
  it('grows nodes with zoom, within limits', () => {
    expect(nodeSize(1)).toBe(5);
    expect(nodeSize(1000)).toBe(24);
    expect(nodeSize(50)).toBe(15);
  });
});

describe('restyle patches', () => {
  it('merge per-trace attributes into one call, undefined where not applicable', () => {
    const [update, traces] = mergeRestyles([[2, { x: [1] }], [5, { 'marker.color': ['red'] }]]);
    expect(traces).toEqual([2, 5]);
    expect(update).toEqual({ x: [[1], undefined], 'marker.color': [undefined, ['red']] });
  });
  it('cover every edge trace and never the node positions', () => {
    const view = { range: fitRange(g, size), size, selected: -1 };
    const [update, traces] = combine(statePatches(g, decodeState(zState(3), g), theme, view));
    for (const t of EDGE_TRACES) expect(traces).toContain(t);
    expect(new Set(traces).size).toBe(traces.length);
    expect(update.x[traces.indexOf(T.nodes)]).toBeUndefined();
    expect(update['marker.color'][traces.indexOf(T.nodes)]).toHaveLength(4);
    expect(update['marker.cmax'][traces.indexOf(T.edgeHit)]).toBeCloseTo(Math.log10(4));
    // Pow just ran: its edge into x is "fresh"
    expect(Array.from(update.x[traces.indexOf(T.fresh)])).toEqual([0, 0, NaN]);
  });
  it('hexAlpha', () => {
    expect(hexAlpha('#f5b700', 0.5)).toBe('rgba(245,183,0,0.5)');
  });
});
