import { describe, expect, it } from 'vitest';
import { decodeGraph, decodeState, SAVED_STATE } from '../src/model.js';
import { T, buildFigure, combine, fitRange, overlayScene, viewPatches } from '../src/figure.js';
import {
  BOX_HIT_POINTS,
  axisScale,
  boxHalfWidths,
  boxHitPoints,
  boxLabel,
  boxOfModule,
  boxRows,
  boxSegments,
  boxSize,
  countsText,
  groupReplyRows,
  inGroup,
  moduleAncestors,
  progressText,
} from '../src/groups.js';
import { BADGE_MIN_PX, BADGE_OUTLINE_PX, makeTheme, nodeStyles } from '../src/style.js';
import { boxGraph, boxState, broken, dataView, folds, zGraph } from './fixtures.js';

const g = decodeGraph(boxGraph());
const theme = makeTheme();
const size = { width: 900, height: 500 };
const view = (extra = {}) => ({ range: fitRange(g, size), size, selected: -1, ...extra });
/** As float32, the way the decoded graph and the segment buffers hold coordinates. */
const f32 = (a) => Array.from(Float32Array.from(a));

describe('decoding a folded graph', () => {
  it('reads boxes, members, saved state and the fold summary', () => {
    const d = decodeGraph(broken.graph());
    expect(d.boxes).toEqual([2, 3, 4]);
    expect(Array.from(d.isBox)).toEqual([0, 0, 1, 1, 1]);
    expect(Array.from(d.members)).toEqual([0, 0, 4, 1, 4]);
    expect(Array.from(d.real)).toEqual([0, 1, -1, -1, -1]);
    expect(Array.from(d.savedState)).toEqual([0, 0, SAVED_STATE.stale, 0, SAVED_STATE.freed]);
    expect(Array.from(d.edgeReal)).toEqual([0, 1, 3, 5]);
    expect(d.collapsed).toEqual(['0', '1.0', '1.1']);
    expect(d.showPlumbing).toBe(true);
    expect(d.realCount).toBe(11);
    expect(d.groups).toEqual(['', '0', '1', '1.0', '1.1']);
  });
  it('defaults when nothing is folded: items are the real nodes, every edge kept', () => {
    const z = decodeGraph(zGraph());
    expect(z.boxes).toEqual([]);
    expect(Array.from(z.real)).toEqual([0, 1, 2, 3]);
    expect(Array.from(z.edgeReal)).toEqual([0, 1, 2]);
    expect(z.showPlumbing).toBe(true);
    expect(z.realCount).toBe(4);
  });
  it('reads progress, next_id and the error id of a state', () => {
    const s = decodeState(boxState(3), g);
    expect(Array.from(s.progress)).toEqual([1, 1, 0.25, 0, 0]);
    expect(s.next).toBe(2);
    expect(s.nextId).toBe('n3');
  });
});

describe('box geometry and labels', () => {
  it('sizes boxes by zoom and widens them for their label, never into neighbours', () => {
    // zoomed in to ~60 px per layout unit around the boxes (Fit is capped lower since issue 16)
    const cx = g.x[2];
    const cy = g.y[2];
    const half = (size.width - 80) / 60 / 2;
    const r = { x: /** @type {[number, number]} */ ([cx - half, cx + half]), y: /** @type {[number, number]} */ ([cy - half * 0.55, cy + half * 0.55]) };
    const bs = boxSize(r, size, 40);
    expect(bs.h).toBeGreaterThanOrEqual(16);
    expect(bs.w).toBeGreaterThan(2 * bs.h);
    const { kx } = axisScale(r, size);
    const hw = boxHalfWidths(g, bs);
    expect(hw[0]).toBe(0); // real nodes
    expect(hw[2] * 2 * kx).toBeGreaterThanOrEqual(bs.w - 1e-3);
    // Without layout box sizes (boxW: none), a long label never widens a box into its neighbours
    const tight = boxHalfWidths({ ...g, boxW: null, labels: ['', '', 'a.very.long.module.path.indeed', '1.0', '0'] }, { ...bs, kx: 50 });
    expect(tight[2] * 2 * 50).toBeLessThanOrEqual(Math.max(bs.w, 0.85 * 50) + 1e-3);
    // with them, a box may use the width the layout reserved for it, and no more
    const sized = boxHalfWidths({ ...g, labels: ['', '', 'a.very.long.module.path.indeed', '1.0', '0'] }, { ...bs, kx: 50 });
    expect(sized[2] * 2 * 50).toBeLessThanOrEqual(Math.max(bs.w, 0.85 * 50, g.boxW[2] * 50) + 1e-3);
  });
  it('draws each box as a segment and its progress as a shorter one', () => {
    const hw = new Float32Array([0, 0, 0.5, 0.5, 0.5]);
    const body = boxSegments(g, g.boxes, hw);
    // each box: from its centre - 0.5 to its centre + 0.5, at its own y
    const [a, b, c] = g.boxes;
    expect(Array.from(body.x)).toEqual(f32([g.x[a] - 0.5, g.x[a] + 0.5, NaN, g.x[b] - 0.5, g.x[b] + 0.5, NaN, g.x[c] - 0.5, g.x[c] + 0.5, NaN]));
    expect(Array.from(body.y)).toEqual(f32([g.y[a], g.y[a], NaN, g.y[b], g.y[b], NaN, g.y[c], g.y[c], NaN]));
    const s = decodeState(boxState(3), g);
    const fill = boxSegments(g, g.boxes, hw, 0, (i) => s.progress[i]);
    // box "1.1" at 25%: a quarter of its width; "1.0" and "0" have not started: no segment
    expect(Array.from(fill.x)).toEqual(f32([g.x[a] - 0.5, g.x[a] - 0.25, NaN]));
    const padded = boxSegments(g, [2], hw, 0.1);
    expect(padded.x[0]).toBeCloseTo(g.x[2] - 0.6);
  });
  it('spreads hit points over the width, each owned by its box', () => {
    const hit = boxHitPoints(g, new Float32Array([0, 0, 1, 1, 1]));
    expect(hit.x.length).toBe(3 * BOX_HIT_POINTS);
    expect(Array.from(hit.owner.slice(0, BOX_HIT_POINTS))).toEqual(new Array(BOX_HIT_POINTS).fill(2));
    // the boxes share one x (a chain): points reach most of the half-width (1) either side
    expect(new Set(g.boxes.map((i) => g.x[i])).size).toBe(1);
    expect(Math.min(...hit.x)).toBeLessThan(g.x[2] - 0.8);
    expect(Math.max(...hit.x)).toBeGreaterThan(g.x[2] + 0.8);
  });
  it('labels a box with its path and progress', () => {
    expect(progressText(0)).toBe('0%');
    expect(progressText(0.004)).toBe('<1%');
    expect(progressText(0.4)).toBe('40%');
    expect(progressText(0.999)).toBe('99%');
    expect(progressText(1)).toBe('100%');
    const s = decodeState(boxState(4), g);
    expect(boxLabel(g, s, 2)).toBe('1.1 · 50%');
    const deep = { ...g, labels: ['', '', 'layers.11.self_attn', '1.0', '0'] };
    expect(boxLabel(deep, s, 2, true)).toBe('…self_attn · 50%');
    expect(boxLabel(g, s, 4, true)).toBe('0 · 0%');
    expect(boxRows(g, s, 2)).toEqual([['module', '1.1'], ['nodes', '4'], ['progress', '50% (2 / 4 ran)']]);
    expect(groupReplyRows({ ops: [['AddmmBackward0', 1], ['AccumulateGrad', 2]], leaves: ['1.weight', '1.bias'] })).toEqual([
      ['ops', 'AddmmBackward0 ×1, AccumulateGrad ×2'],
      ['leaves', '1.weight, 1.bias'],
    ]);
  });
  it('module paths: ancestors, membership, the box that hides a module', () => {
    expect(moduleAncestors('layers.3.linear1')).toEqual(['layers', 'layers.3', 'layers.3.linear1']);
    expect(moduleAncestors('')).toEqual(['']);
    expect(moduleAncestors(null)).toEqual([]);
    expect(inGroup('layers.3.linear1', 'layers.3')).toBe(true);
    expect(inGroup('layers.30', 'layers.3')).toBe(false);
    expect(inGroup('x', '')).toBe(true);
    expect(inGroup(null, '')).toBe(false);
    expect(boxOfModule(g, '1.1')).toBe(2);
    expect(boxOfModule(g, '0.sub')).toBe(4);
    expect(boxOfModule(g, '1')).toBe(-1); // the parent of two boxes is not inside one
    expect(boxOfModule(g, '2')).toBe(-1);
  });
  it('counts what is shown, folded and hidden', () => {
    expect(countsText(g)).toBe('5 shown · 11 nodes · 3 modules folded');
    expect(countsText({ ...g, boxes: [], realCount: 9, n: 6, hidden: 3 })).toBe('6 shown · 9 nodes · 3 plumbing hidden');
    expect(countsText(decodeGraph(zGraph()))).toBe('4 shown');
  });
});

describe('boxes in the figure', () => {
  it('draws box traces, hides the box markers, labels boxes inside', () => {
    const s = decodeState(boxState(3), g);
    const { data } = buildFigure(g, s, theme, view());
    expect(data[T.boxBody].x.length).toBe(9);
    expect(data[T.boxFill].x.length).toBe(3); // only box "1.1" has progress
    expect(data[T.boxHalo].x.length).toBe(3); // box "1.1" holds the next node
    expect(overlayScene(g, s, theme, view()).halo.x).toEqual([]); // no circle halo for a box
    expect(data[T.boxBody].line.width).toBeGreaterThanOrEqual(16);
    expect(data[T.boxFrame].line.width).toBeGreaterThan(data[T.boxBody].line.width);
    expect(data[T.nodes].marker.opacity.slice(2)).toEqual([0, 0, 0]);
    expect(data[T.boxHit].x.length).toBe(3 * BOX_HIT_POINTS);
    const text = Array.from(data[T.nodeLabels].text);
    expect(text).toContain('<b>1.1 · 25%</b>');
    expect(text).toContain('<b>0 · 0%</b>');
    const pos = data[T.nodeLabels].textposition;
    expect(pos[text.indexOf('<b>1.1 · 25%</b>')]).toBe('middle center');
    expect(pos[text.indexOf('NllLoss')]).toBe('middle right');
  });
  it('labels boxes inside when the label fits, even when zoomed out too far for node labels', () => {
    // a long chain: little room per layer (ppu small) but wide layers
    const s = decodeState(boxState(0), g);
    // (centred on the boxes' x, tall enough to hold all of them: box y's are far below 0 now)
    const cx = g.x[2];
    const chain = { range: { x: [cx - 1, cx + 1], y: [-400, 1] }, size, selected: -1 };
    expect(g.boxes.every((i) => g.y[i] > -400 && g.y[i] < 1)).toBe(true);
    const { data } = buildFigure({ ...g, n: 40 }, s, theme, chain);
    const text = Array.from(data[T.nodeLabels].text);
    expect(text.filter((t) => t.startsWith('<b>'))).toHaveLength(3);
    expect(text).not.toContain('NllLoss'); // real nodes: no room
  });
  it('puts a label that does not fit beside its box when zoomed in, else leaves it out', () => {
    const s = decodeState(boxState(0), g);
    // (boxW: none: the layout sized box 2 for its own short label, not for this long one)
    const long = { ...g, boxW: null, labels: ['NllLoss', 'LogSoftmax', 'encoder.layers.11.self_attn', '1.0', '0'] };
    // narrow layers (LR-like): 40 px between neighbours along x
    // the range is placed around box 2 (it used to sit at (0, -2): now read from the layout)
    const [cx, cy] = [g.x[2], g.y[2]];
    const near = { range: { x: [cx - 10, cx + 10], y: [cy - 1.5, cy + 2.5] }, size: { width: 872, height: 516 }, selected: -1 };
    const { data } = buildFigure(long, s, theme, near);
    const text = Array.from(data[T.nodeLabels].text);
    const k = text.indexOf('<b>encoder.layers.11.self_attn · 0%</b>');
    expect(k).toBeGreaterThanOrEqual(0);
    expect(data[T.nodeLabels].textposition[k]).toBe('middle right');
    expect(data[T.nodeLabels].marker.size[k]).toBeGreaterThan(8);
    const far = { range: { x: [cx - 100, cx + 100], y: [-400, 1] }, size, selected: -1 };
    const out = Array.from(buildFigure({ ...long, n: 40 }, s, theme, far).data[T.nodeLabels].text);
    expect(out.some((t) => t.includes('self_attn'))).toBe(false);
  });
  it('progress moves by restyle only, per step', () => {
    const a = combine(viewPatches(g, decodeState(boxState(3), g), theme, view()));
    const b = combine(viewPatches(g, decodeState(boxState(5), g), theme, view()));
    const fill = (u) => Array.from(u[0].x[u[1].indexOf(T.boxFill)]);
    expect(fill(b)[1]).toBeGreaterThan(fill(a)[1]);
    const failed = decodeState(boxState(4, { node_state: dataView(new Uint8Array([2, 2, 3, 0, 0]), 1) }), g);
    const [u, t] = combine(viewPatches(g, failed, theme, view()));
    expect(u.x[t.indexOf(T.boxFailed)].length).toBe(3);
  });
  it('marks stale and freed nodes with badges', () => {
    const bg = decodeGraph(broken.graph()); // box "1.1" stale, box "0" freed
    const { data } = buildFigure(bg, decodeState(broken.state(0), bg), theme, view());
    expect(data[T.badges].x).toHaveLength(2);
    expect(data[T.badges].marker.symbol).toEqual(['triangle-up', 'x']);
    expect(data[T.badges].marker.color[0]).toBe('#ff1f1f');
    // a distinct outline (the theme's outline colour, not the background) ...
    expect(data[T.badges].marker.line).toEqual({ color: theme.outline, width: BADGE_OUTLINE_PX });
    // ... and never smaller than BADGE_MIN_PX, however far out the view is (Fit on a big graph)
    const far = view();
    far.range = { x: [far.range.x[0] - 5000, far.range.x[1] + 5000], y: [far.range.y[0] - 5000, far.range.y[1] + 5000] };
    expect(buildFigure(bg, decodeState(broken.state(0), bg), theme, far).data[T.badges].marker.size).toBe(BADGE_MIN_PX);
    expect(BADGE_MIN_PX).toBeGreaterThanOrEqual(14);
  });
  it('rings a selected box, glows the selected edge, marks highlighted items', () => {
    const s = decodeState(boxState(0), g);
    const { data } = buildFigure(g, s, theme, view({ selected: 3, selectedEdge: 1, highlight: [1, 2] }));
    expect(data[T.boxRing].x.length).toBe(3);
    expect(data[T.ring].x).toEqual([]);
    // edge 1's polyline (LogSoftmax -> box "1.1", bent: it may have more than 2 points)
    expect(Array.from(data[T.edgeSel].x)).toEqual(Array.from(g.pathX.subarray(g.pathPtr[1], g.pathPtr[2])));
    expect(Array.from(data[T.edgeSel].y)).toEqual(Array.from(g.pathY.subarray(g.pathPtr[1], g.pathPtr[2])));
    expect(data[T.edgeSel].x[0]).toBe(g.x[1]);
    expect(data[T.highlight].x).toEqual([g.x[1], g.x[2]]);
    expect(data[T.highlight].y).toEqual([g.y[1], g.y[2]]);
    expect(data[T.highlight].marker.size[1]).toBeGreaterThan(data[T.highlight].marker.size[0]);
  });
  it('styles box markers as invisible hit targets', () => {
    const st = nodeStyles(g, decodeState(boxState(0), g), theme);
    expect(Array.from(st.opacity)).toEqual([1, 1, 0, 0, 0]);
  });
});

describe('a folded run of repeated blocks', () => {
  // folds: box 3 stands for a run of three identical blocks, box 2 for the module "head".
  const KEY = 'layers.0–2 ×3';
  const raw = () => {
    const r = folds.graph();
    r.folds.push(
      { key: 'hidden ×3', label: 'hidden ×3', count: 3, period: 1, nodes_per_unit: 1, members: ['9.0', '9.1', '9.2'], item: -1 },
      { key: 'bad', item: 0 }, // item 0 is not a box: not drawn
      'junk',
    );
    return r;
  };
  const f = decodeGraph(raw());
  it('decodes the runs and which box shows each', () => {
    expect(f.folds.map((x) => [x.key, x.item])).toEqual([[KEY, 3], ['hidden ×3', -1], ['bad', -1]]);
    expect([...f.foldAt.keys()]).toEqual([3]);
    expect(f.foldAt.get(3)).toMatchObject({ count: 3, nodesPerUnit: 5, members: ['layers.0', 'layers.1', 'layers.2'] });
    expect(decodeGraph(boxGraph()).folds).toEqual([]);
  });
  it('labels, rows, counts and the box hiding a member module', () => {
    const s = decodeState(folds.state(12), f);
    expect(boxLabel(f, s, 3)).toBe(`${KEY} · 40%`);
    expect(boxRows(f, s, 3)[0]).toEqual(['repeats', '3 identical blocks × 5 nodes']);
    expect(countsText(f)).toBe('8 shown · 25 nodes · 1 module folded · 1 repeat folded');
    expect(boxOfModule(f, 'layers.1.linear')).toBe(3);
    expect(boxOfModule(f, 'layers')).toBe(-1); // the run's parent is not inside the box
    expect(boxOfModule(f, 'head.sub')).toBe(2);
  });
});
