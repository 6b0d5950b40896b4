import { describe, expect, it } from 'vitest';
import { decodeGraph, decodeState } from '../src/model.js';
import {
  MARGIN,
  MAX_FIT_PX_PER_UNIT,
  MIN_PX_PER_UNIT_FOR_NODE_LABELS,
  T,
  buildFigure,
  changedPatches,
  combine,
  fitRange,
  hexAlpha,
  labelData,
  mergeRestyles,
  nodeSize,
  overlayScene,
  plotArea,
  pxPerUnit,
  viewPatches,
} from '../src/figure.js';
import { makeTheme, N_BINS, NEXT_COLOR, RAN_COLOR } from '../src/style.js';
import { zGraph, zState } from './fixtures.js';

const g = decodeGraph(zGraph());
const theme = makeTheme();
const size = { width: 900, height: 500 };

describe('fitRange', () => {
  it('centres a small graph at a capped scale', () => {
    // With sized boxes z's layout is ~11 x 9 units: "small" (it would fit at more than the cap)
    // now needs a plot big enough, so the premise is restated on a large plot, not on 900 x 500.
    const [x0, x1, y0, y1] = g.bounds;
    const big = { width: Math.ceil((x1 - x0) * MAX_FIT_PX_PER_UNIT) + 400, height: Math.ceil((y1 - y0) * MAX_FIT_PX_PER_UNIT) + 400 };
    const r = fitRange(g, big);
    const area = plotArea(big);
    expect(pxPerUnit(r, big)).toBeCloseTo(MAX_FIT_PX_PER_UNIT);
    // the whole graph is inside, and the range covers exactly the plotting area
    expect(r.x[0]).toBeLessThan(x0);
    expect(r.x[1]).toBeGreaterThan(x1);
    expect(r.y[0]).toBeLessThan(y0);
    expect(r.y[1]).toBeGreaterThan(y1);
    expect((r.x[1] - r.x[0]) * MAX_FIT_PX_PER_UNIT).toBeCloseTo(area.width);
    expect(area.width).toBe(big.width - MARGIN.l - MARGIN.r);
    // at the 900 x 500 default the scale never exceeds the cap either
    expect(pxPerUnit(fitRange(g, size), size)).toBeLessThanOrEqual(MAX_FIT_PX_PER_UNIT + 1e-9);
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

  // scene.edges: fresh, idle, no gradient, bins..., non-finite
  const IDLE = 1;
  const BIN0 = 3;

  it('leaves edges and node markers to the overlay: plotly has hit targets, labels, boxes', () => {
    const { data, layout, gl, config } = buildFigure(g, decodeState(zState(0), g), theme, view);
    expect(gl).toBe(false);
    expect(data.every((t) => t.uid.startsWith('agw-'))).toBe(true);
    expect(data[T.nodes].marker.opacity.every((o) => o === 0)).toBe(true); // hover and click only
    expect(data[T.edgeHit].marker.opacity).toBe(0);
    expect(data[T.edgeSel].x).toHaveLength(0);
    expect(layout.xaxis.autorange).toBe(false);
    expect(layout.dragmode).toBe('pan');
    expect(config.modeBarButtonsToRemove).toContain('toImage'); // its PNG would lack the canvas
    const div = { style: { background: '' } };
    config.setBackground(div, '#123456');
    expect(div.style.background).toBe('#123456');
  });

  it('overlay: every edge idle at step 0 as NaN-separated paths, the next node haloed, no colour bar', () => {
    const scene = overlayScene(g, decodeState(zState(0), g), theme, view);
    expect(scene.edges).toHaveLength(4 + N_BINS);
    expect(scene.edges[IDLE].x.length).toBe(g.pathPtr[g.m]); // every edge's polyline + NaN
    expect(Number.isNaN(scene.edges[IDLE].x[g.pathPtr[1] - 1])).toBe(true);
    expect(scene.edges[IDLE].color).toBe(theme.idleEdge);
    for (let b = 0; b < N_BINS; b++) expect(scene.edges[BIN0 + b].x.length).toBe(0);
    expect(scene.halo.x).toEqual([g.x[0]]); // Add is next
    expect(Array.from(scene.edges[IDLE].dst)).toEqual(Array.from(g.dst)); // arrowheads' targets
    expect(scene.colorbar).toBeNull();
    expect(Array.from(scene.nodes.x)).toEqual(Array.from(g.x));
  });

  it('overlay: flowed edges coloured by norm bin, the colour bar; values stay plotly labels', () => {
    const s4 = decodeState(zState(4), g);
    const scene = overlayScene(g, s4, theme, view);
    expect(scene.edges[IDLE].x.length).toBe(0);
    // edges 0 and 1 (norm 1) in the lowest bin, edge 2 (norm 4) in the top one: their polylines
    expect(scene.edges[BIN0].x.length).toBe(g.pathPtr[2] - g.pathPtr[0]);
    expect(scene.edges[BIN0 + N_BINS - 1].x.length).toBe(g.pathPtr[3] - g.pathPtr[2]);
    expect(scene.edges[BIN0].color).toBe(theme.bins[0]);
    expect(scene.colorbar?.range[1]).toBeCloseTo(Math.log10(4));
    expect(scene.halo.x).toEqual([]);
    expect(scene.edges[0].x.length).toBe(0); // x's AccumulateGrad ran last: no outgoing edges
    const { data } = buildFigure(g, s4, theme, view);
    expect(data[T.edgeLabels].text).toEqual(['1', '1', '4']);
  });

  it('overlay: the node that just ran is ringed and its fresh edges glow, apart from done and next', () => {
    const s0 = overlayScene(g, decodeState(zState(0), g), theme, view);
    expect(s0.ran.x).toEqual([]); // nothing ran yet
    expect(s0.edges[0].x.length).toBe(0);
    const st1 = decodeState(zState(1), g); // Add ran; AccumulateGrad (y) is next
    const s1 = overlayScene(g, st1, theme, view);
    expect(st1.last).toBe(0);
    expect(s1.ran.x).toEqual([g.x[0]]);
    expect(s1.ran.y).toEqual([g.y[0]]);
    expect(s1.ran.size[0]).toBeGreaterThan(s1.nodes.size[0]); // a ring around the marker
    expect(s1.halo.x).toEqual([g.x[st1.next]]); // next keeps its own halo
    expect(st1.next).not.toBe(0);
    // Add's two out-edges (to Pow and to y) are the fresh layer, in the ran colour, not next's gold
    let fresh = 0;
    for (let k = g.outPtr[0]; k < g.outPtr[1]; k++) fresh += g.pathPtr[g.outEdges[k] + 1] - g.pathPtr[g.outEdges[k]];
    expect(fresh).toBeGreaterThan(0);
    expect(s1.edges[0].x.length).toBe(fresh);
    expect(s1.edges[0].color).toBe(hexAlpha(RAN_COLOR, 0.45));
    expect(RAN_COLOR).not.toBe(NEXT_COLOR);
    // a step later the ring moves on: done is no longer marked as "just ran"
    const s2 = overlayScene(g, decodeState(zState(2), g), theme, view);
    expect(s2.ran.x).toEqual([g.x[decodeState(zState(2), g).last]]);
    expect(s2.ran.x).not.toEqual([g.x[0]]);
  });

  it('overlay: node markers follow the step state, plotly keeps the resting style', () => {
    const s0 = overlayScene(g, decodeState(zState(0), g), theme, view);
    const s4 = overlayScene(g, decodeState(zState(4), g), theme, view);
    expect(s0.nodes.color).not.toEqual(s4.nodes.color); // pending is washed out, done is not
    const f0 = buildFigure(g, decodeState(zState(0), g), theme, view).data[T.nodes].marker;
    const f4 = buildFigure(g, decodeState(zState(4), g), theme, view).data[T.nodes].marker;
    expect(f4.color).toEqual(f0.color);
    expect(f4.size).toEqual(f0.size);
  });

  it('marks the selected node', () => {
    const { data } = buildFigure(g, decodeState(zState(0), g), theme, { ...view, selected: 2 });
    expect(data[T.ring].x).toEqual([g.x[2]]);
    expect(data[T.ring].y).toEqual([g.y[2]]);
  });
});

describe('labels that fit', () => {
  it('shows node labels when zoomed in enough, not when zoomed far out', () => {
    const s = decodeState(zState(4), g);
    const many = { ...g, n: 20 }; // more than the always-labelled few
    // a range holding the whole graph (its bounds, one unit of margin)
    const all = { x: [g.bounds[0] - 1, g.bounds[1] + 1], y: [g.bounds[2] - 1, g.bounds[3] + 1] };
    const near = labelData(many, s, all, 100, theme);
    expect(near.nodes.text.length).toBe(4);
    const far = labelData(many, s, all, MIN_PX_PER_UNIT_FOR_NODE_LABELS - 1, theme);
    expect(far.nodes.text.length).toBe(0);
    expect(far.edges.text.length).toBe(3); // values still shown (few, in view)
    // a range beside the graph (above it: y > every node's and edge's y)
    const off = labelData(g, s, { x: [g.bounds[0], g.bounds[1]], y: [g.bounds[3] + 10, g.bounds[3] + 20] }, 100, theme);
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
  it('never carry edges or node positions; a step that changes no label costs plotly nothing', () => {
    const view = { range: fitRange(g, size), size, selected: -1 };
    const [, traces] = combine(viewPatches(g, decodeState(zState(3), g), theme, view));
    expect(new Set(traces).size).toBe(traces.length);
    const shown = new Map();
    const at = (k) => viewPatches(g, decodeState(zState(k), g), theme, view);
    expect(changedPatches(at(0), shown).length).toBeGreaterThan(0); // seeding: everything
    expect(changedPatches(at(0), shown)).toEqual([]); // the same state again: nothing
    // Step 1 puts values on the edges it sent along: only the edge labels change.
    const step1 = changedPatches(at(1), shown);
    expect(step1.map(([t]) => t)).toEqual([T.edgeLabels]);
    expect(step1[0][1].text).toEqual(['1', '1']);
    // Zooming is a view change: marker sizes change, and only the attributes that did.
    const zoomed = changedPatches(viewPatches(g, decodeState(zState(1), g), theme, { ...view, range: { x: [-60, 60], y: [-60, 60] } }), shown);
    const nodes = zoomed.find(([t]) => t === T.nodes);
    expect(nodes && Object.keys(nodes[1])).toEqual(['marker.size']);
  });
  it('hexAlpha', () => {
    expect(hexAlpha('#f5b700', 0.5)).toBe('rgba(245,183,0,0.5)');
  });
});
