// @ts-check
import { describe, expect, it } from 'vitest';
import { decodeGraph, decodeState, SAVED_STATE } from '../src/model.js';
import { LEGIBLE_PPU, LEGIBLE_PX, fitView } from '../src/camera.js';
import { hitItem } from '../src/canvas.js';
import { buildDrawing, itemText } from '../src/drawing.js';
import { boxOfModule, boxRows, countsText, groupReplyRows, inGroup, moduleAncestors, progressText } from '../src/groups.js';
import { estimateWidth, itemLabels } from '../src/labelplace.js';
import { ALARM_COLOR, SAVED_BADGE, makeTheme } from '../src/style.js';
import { boxGraph, boxState, broken, dataView, folds, zGraph } from './fixtures.js';

const g = decodeGraph(boxGraph());
const theme = makeTheme();
const size = { width: 900, height: 500 };
const view = (extra = {}) => ({ range: fitView(g.bounds, size).range, size, selected: -1, ...extra });

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

describe('box text and module paths', () => {
  it('labels a box with its path and progress', () => {
    expect(progressText(0)).toBe('0%');
    expect(progressText(0.004)).toBe('<1%');
    expect(progressText(0.4)).toBe('40%');
    expect(progressText(0.999)).toBe('99%');
    expect(progressText(1)).toBe('100%');
    const s = decodeState(boxState(4), g);
    // the title (the payload's box title) on the first line, members and progress under it
    expect(itemText(g, s, 2)).toEqual({ name: '1.1 · Linear', sub: '4 ops · 50%', cuttable: true });
    expect(itemText(g, s, 4).sub).toBe('4 ops · 0%');
    // a long path in a narrow box is cut in the middle, never from the left ("…self_attn" was)
    const deep = { ...g, titles: ['', '', 'layers.11.self_attn · MultiheadAttention', '1.0', '0'] };
    const t = itemText(deep, s, 2);
    const ppu = LEGIBLE_PPU;
    const [name] = itemLabels([{ kind: 'box', index: 2, cx: 0, cy: 0, w: 8 * ppu, h: 2.5 * ppu, ...t }], ppu, estimateWidth);
    expect(name.text).toContain('…');
    expect(name.text.startsWith('layers.')).toBe(true);
    expect(t.name.endsWith(name.text.split('…')[1])).toBe(true);
    expect(name.font).toBeGreaterThanOrEqual(LEGIBLE_PX);
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

describe('boxes in the drawing', () => {
  it('boxes in their body colour, the one holding the next node marked next, progress per box', () => {
    const s = decodeState(boxState(3), g);
    const d = buildDrawing(g, s, theme, view());
    for (const i of g.boxes) expect(d.items.fill[i]).toBe(theme.boxBody);
    expect(d.marks.next).toBe(2); // box "1.1" holds the next node
    expect(d.items.stroke[2]).toBe('#c99700');
    expect(Array.from(d.progress).slice(2)).toEqual([0.25, 0, 0]);
    expect(buildDrawing(decodeGraph(zGraph()), decodeState(null, decodeGraph(zGraph())), theme, view()).progress).toBeNull(); // no boxes
  });
  it('progress moves per step; a failed box is outlined red', () => {
    const a = buildDrawing(g, decodeState(boxState(3), g), theme, view());
    const b = buildDrawing(g, decodeState(boxState(5), g), theme, view());
    expect(b.progress[2]).toBeGreaterThan(a.progress[2]);
    const failed = decodeState(boxState(4, { node_state: dataView(new Uint8Array([2, 2, 3, 0, 0]), 1) }), g);
    const f = buildDrawing(g, failed, theme, view());
    expect(f.items.stroke[2]).toBe(ALARM_COLOR);
    expect(f.items.lineWidth[2]).toBeGreaterThan(f.items.lineWidth[3]);
  });
  it('marks stale and freed nodes with badges', () => {
    const bg = decodeGraph(broken.graph()); // box "1.1" stale, box "0" freed
    const d = buildDrawing(bg, decodeState(broken.state(0), bg), theme, view());
    expect(d.badges.map((b) => [b.item, b.symbol])).toEqual([[2, 'triangle-up'], [4, 'x']]);
    expect(d.badges[0].color).toBe('#ff1f1f');
    expect(d.badges[1].color).toBe(SAVED_BADGE[2].color);
  });
  it('rings a selected box, glows the selected edge, marks highlighted items', () => {
    const s = decodeState(boxState(0), g);
    const d = buildDrawing(g, s, theme, view({ selected: 3, selectedEdge: 1, highlight: [1, 2] }));
    expect(d.marks.selected).toBe(3);
    // edge 1's polyline (LogSoftmax -> box "1.1", bent: it may have more than 2 points)
    const n = g.pathPtr[2] - g.pathPtr[1];
    expect(Array.from(d.selectedEdge.x)).toEqual(Array.from(g.pathX.subarray(g.pathPtr[1], g.pathPtr[1] + n)));
    expect(Array.from(d.selectedEdge.y)).toEqual(Array.from(g.pathY.subarray(g.pathPtr[1], g.pathPtr[1] + n)));
    expect(d.selectedEdge.x[0]).toBe(g.x[1]);
    expect(d.marks.highlight).toEqual([1, 2]);
  });
  it('a box answers the pointer over its whole area', () => {
    const d = buildDrawing(g, decodeState(boxState(0), g), theme, view());
    for (const i of g.boxes) {
      const hw = d.items.w[i] / 2;
      const hh = d.items.h[i] / 2;
      for (const [dx, dy] of [[0, 0], [-0.95 * hw, 0], [0.95 * hw, 0.9 * hh], [-0.9 * hw, -0.9 * hh]]) expect(hitItem(g, d.items, g.x[i] + dx, g.y[i] + dy, 0)).toBe(i);
    }
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
    expect(itemText(f, s, 3)).toEqual({ name: `${KEY} · _Block`, sub: '15 ops · 40%', cuttable: true });
    expect(boxRows(f, s, 3)[0]).toEqual(['repeats', '3 identical blocks × 5 nodes']);
    expect(countsText(f)).toBe('8 shown · 25 nodes · 1 module folded · 1 repeat folded');
    expect(boxOfModule(f, 'layers.1.linear')).toBe(3);
    expect(boxOfModule(f, 'layers')).toBe(-1); // the run's parent is not inside the box
    expect(boxOfModule(f, 'head.sub')).toBe(2);
  });
});
