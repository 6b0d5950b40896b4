// @ts-check
// What the canvas paints (drawing.js): box styles per step state with readable text, the marks of
// a step, edge layers (neutral in the memory / sensitivity modes), the fixed colour bar, badges.
import { describe, expect, it } from 'vitest';

import { CHAR_W, buildDrawing, itemSizes, itemStyles, itemText } from '../src/drawing.js';
import { NODE_STATE, decodeGraph, decodeState } from '../src/model.js';
import { ALARM_COLOR, FAILED_COLOR, KIND_STYLE, RAN_COLOR, SAVED_BADGE, hexAlpha, kindKey, makeTheme, parseColor } from '../src/style.js';
import { boxes, broken, dataView, z, zGraph, zState } from './fixtures.js';

const light = makeTheme();
const dark = makeTheme({ dark: true });
const g = decodeGraph(zGraph()); // items: Add (root), Pow, y (input), x (parameter)
/** @type {import('../src/drawing.js').ViewSpec} */
const VIEW = { range: { x: [-10, 10], y: [-10, 10] }, size: { width: 800, height: 400 }, selected: -1 };

/**
 * z's state after `k` steps with `node_state` (a plain array here) and other fields replaced.
 * @param {number} k @param {Record<string, any>} [over]
 */
const stateWith = (k, over = {}) => {
  const o = { ...over };
  if (Array.isArray(o.node_state)) o.node_state = dataView(Uint8Array.from(o.node_state), 1);
  return decodeState({ ...zState(k), ...o }, g);
};

/** WCAG contrast ratio of two colours. */
function contrast(a, b) {
  const lum = (c) => {
    const [r, gg, bb] = parseColor(c).map((v) => {
      const s = v / 255;
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * gg + 0.0722 * bb;
  };
  const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05);
}

describe('itemText and itemSizes', () => {
  it('a node: its short op name; a leaf: its name with the shape under it', () => {
    expect(itemText(g, null, 0)).toEqual({ name: 'Add', sub: '', cuttable: false });
    expect(itemText(g, null, 3)).toEqual({ name: 'x', sub: '[]', cuttable: false });
    expect(itemText(g, null, 2).name).toBe('input 0 []'); // unnamed input: the shape is in the name already
    expect(itemText(g, null, 2).sub).toBe('');
  });

  it('a folded box: its title (cuttable) and "N ops" (with a state: "· p%")', () => {
    const bg = decodeGraph(boxes.graph());
    expect(itemText(bg, null, 2)).toEqual({ name: '1.1 · Linear', sub: '4 ops', cuttable: true });
    expect(itemText(bg, decodeState(boxes.state(3), bg), 2).sub).toBe('4 ops · 25%');
  });

  it('sizes: the payload\'s layout sizes, else estimated from the label as Python sizes it', () => {
    const bg = decodeGraph(boxes.graph());
    const s = itemSizes(bg);
    for (let i = 0; i < bg.n; i++) {
      expect(s.w[i]).toBeCloseTo(bg.boxW[i]);
      expect(s.h[i]).toBeCloseTo(bg.boxH[i]);
      expect(s.w[i]).toBeGreaterThan(0);
    }
    const bare = { ...g, boxW: new Float32Array(g.n), boxH: new Float32Array(g.n) };
    const e = itemSizes(bare);
    expect(e.w[0]).toBeCloseTo(3 * CHAR_W + 1.2); // "Add": at least three characters wide
    expect(e.h[0]).toBeCloseTo(1.5); // one line
    expect(e.h[3]).toBeCloseTo(2.5); // x and its shape: two lines
    expect(e.w[2]).toBeCloseTo('input 0 []'.length * CHAR_W + 1.2);
  });
});

describe('itemStyles', () => {
  const st = stateWith(3, { node_state: [NODE_STATE.done, NODE_STATE.failed, NODE_STATE.no_gradient, NODE_STATE.next] });

  it('done in its kind\'s colour, next outlined gold, failed red, no-gradient hollow and dashed', () => {
    const s = itemStyles(g, st, light);
    expect(s.fill[0]).toBe(KIND_STYLE[kindKey(g, 0)].color); // done: the kind's colour (Add is the root)
    expect(kindKey(g, 0)).toBe('root');
    expect(s.fill[1]).toBe(FAILED_COLOR);
    expect(s.lineWidth[1]).toBeGreaterThan(s.lineWidth[0]);
    expect(s.fill[2]).toBe(light.background); // hollow
    expect(s.dashed[2]).toBe(1);
    expect(s.stroke[2]).toBe(KIND_STYLE.input.color);
    expect(s.stroke[3]).toBe('#c99700'); // next: gold outline
    expect(s.lineWidth[3]).toBe(3);
    expect(s.fill[3]).not.toBe(KIND_STYLE.parameter.color); // next: lighter than done
    expect([...s.dashed]).toEqual([0, 0, 1, 0]);
  });

  it('pending is washed out (lighter than done) and opaque', () => {
    const pending = itemStyles(g, stateWith(0, { node_state: [0, 0, 0, 0] }), light);
    const done = itemStyles(g, stateWith(4), light);
    for (let i = 0; i < g.n; i++) {
      expect(pending.fill[i]).not.toBe(done.fill[i]);
      expect(pending.fill[i]).toMatch(/^#[0-9a-f]{6}$/i); // opaque: edges do not show through
      const lum = (c) => parseColor(c).reduce((a, b) => a + b, 0);
      expect(lum(pending.fill[i])).toBeGreaterThan(lum(done.fill[i]));
    }
  });

  it('the label colour reads on its fill in every state, light and dark', () => {
    for (const theme of [light, dark]) {
      for (const ns of [[0, 0, 0, 0], [2, 2, 2, 2], [1, 3, 4, 2]]) {
        const s = itemStyles(g, stateWith(0, { node_state: ns }), theme);
        for (let i = 0; i < g.n; i++) {
          expect(['#111111', '#ffffff', theme.font]).toContain(s.text[i]);
          expect(contrast(s.text[i], s.fill[i]), `state ${ns[i]} fill ${s.fill[i]} text ${s.text[i]}`).toBeGreaterThanOrEqual(3);
        }
      }
    }
  });

  it('a colour mode shades the fill; the outline still tells the step state', () => {
    const shade = ['#0d0887', '#fb9f3a', '#e4e4e4', '#e4e4e4'];
    const s = itemStyles(g, st, light, shade);
    expect(s.fill).toEqual(shade);
    expect(s.stroke[3]).toBe('#c99700');
    expect(s.text[0]).toBe('#ffffff'); // dark fill: white text
    expect(s.text[1]).toBe('#111111');
  });

  it('folded boxes: their body colour, outlined gold when next and red when failed', () => {
    const bg = decodeGraph(boxes.graph());
    const ns = new Array(bg.n).fill(0);
    ns[2] = NODE_STATE.next;
    ns[3] = NODE_STATE.failed;
    const s = itemStyles(bg, decodeState({ ...boxes.state(0), node_state: dataView(Uint8Array.from(ns), 1) }, bg), light);
    expect(s.fill[2]).toBe(light.boxBody);
    expect(s.stroke[2]).toBe('#c99700');
    expect(s.stroke[3]).toBe(ALARM_COLOR);
    expect(s.lineWidth[4]).toBeLessThan(s.lineWidth[2]);
  });
});

describe('buildDrawing: marks', () => {
  it('next and just-ran from the state; none of either at the end or before the first step', () => {
    expect(buildDrawing(g, stateWith(0), light, VIEW).marks).toMatchObject({ next: 0, ran: -1 });
    expect(buildDrawing(g, stateWith(2), light, VIEW).marks).toMatchObject({ next: 1, ran: 2 });
    expect(buildDrawing(g, stateWith(3), light, VIEW).marks).toMatchObject({ next: 3, ran: 1 });
    expect(buildDrawing(g, stateWith(4), light, VIEW).marks).toMatchObject({ next: -1, ran: 3 });
  });

  it('selected and highlighted items (out-of-range ones dropped), the selected edge and its glow path', () => {
    const d = buildDrawing(g, stateWith(1), light, { ...VIEW, selected: 2, selectedEdge: 2, highlight: [1, 9, -1, 3] });
    expect(d.marks.selected).toBe(2);
    expect(d.marks.highlight).toEqual([1, 3]);
    expect(d.selectedEdgeIndex).toBe(2);
    const n = g.pathPtr[3] - g.pathPtr[2];
    expect(Array.from(d.selectedEdge.x)).toEqual(Array.from(g.pathX.subarray(g.pathPtr[2], g.pathPtr[2] + n)));
    const none = buildDrawing(g, stateWith(1), light, { ...VIEW, selected: 7, selectedEdge: 99 });
    expect(none.marks.selected).toBe(-1);
    expect(none.selectedEdgeIndex).toBe(-1);
    expect(none.selectedEdge.x.length).toBe(0);
  });

  it('the edges the node that just ran produced glow in the "ran" colour', () => {
    const d = buildDrawing(g, stateWith(3), light, VIEW); // Pow ran: its edge to x (e2) glows
    const glow = d.edges.find((l) => l.color === hexAlpha(RAN_COLOR, 0.45));
    expect(glow).toBeTruthy();
    expect(Array.from(glow.dst)).toEqual([3]);
    expect(Array.from(glow.x)).toEqual(Array.from(g.pathX.subarray(g.pathPtr[2], g.pathPtr[3])));
    const before = buildDrawing(g, stateWith(0), light, VIEW);
    expect(before.edges.find((l) => l.color === hexAlpha(RAN_COLOR, 0.45)).x.length).toBe(0);
  });
});

describe('buildDrawing: edges and the colour bar', () => {
  const layerOf = (d, e) => {
    // the layer whose dst list holds edge e's target at e's position among that layer's edges
    const p0 = g.pathX[g.pathPtr[e]];
    return d.edges.filter((l) => l.width < 6).find((l) => Array.from(l.x).includes(p0) && Array.from(l.dst).includes(g.dst[e]));
  };

  it('gradient mode: flowed edges in the bin colours with arrowhead targets; values as edge texts', () => {
    const d = buildDrawing(g, stateWith(3), light, VIEW);
    const colours = new Set(d.edges.filter((l) => l.x.length).map((l) => l.color));
    expect([...colours].some((c) => light.bins.includes(c))).toBe(true);
    for (const l of d.edges) expect(l.dst.length).toBe(Array.from(l.x).filter(Number.isNaN).length); // one target per polyline
    expect(d.edgeTexts.map((t) => [t.index, t.text])).toEqual([[0, '1'], [1, '1'], [2, '4']]);
    expect(d.colorbar).not.toBeNull();
    expect(layerOf(d, 2).color).not.toBe(light.idleEdge);
  });

  it('memory and sensitivity modes: every edge neutral grey, no colour bar, no edge values', () => {
    const st = stateWith(3);
    for (const mode of /** @type {const} */ (['memory', 'sensitivity'])) {
      // with the mode's data and (while it is on its way) without
      const data = mode === 'memory' ? { memory: { items: [0, 10, 0, 0] } } : { sensitivity: { items: Float64Array.from([0, 1, NaN, NaN]), range: [0, 1] } };
      for (const extra of [data, {}]) {
        const d = buildDrawing(g, st, light, { ...VIEW, colorMode: mode, ...extra });
        const drawn = d.edges.filter((l) => l.x.length);
        expect(drawn.length).toBeGreaterThan(0);
        expect(drawn.every((l) => l.color === light.idleEdge)).toBe(true);
        expect(d.colorbar).toBeNull();
        expect(d.edgeTexts).toEqual([]);
        // every edge is still drawn
        expect(drawn.reduce((k, l) => k + l.dst.length, 0)).toBe(g.m);
      }
    }
  });

  it('the colour bar is the run\'s fixed scale: the same range and colours at every step of one run', () => {
    const a = buildDrawing(g, stateWith(1), light, VIEW).colorbar;
    const b = buildDrawing(g, stateWith(4), light, VIEW).colorbar;
    expect(stateWith(1).normScale).toBe('run');
    expect(a.range).toEqual(b.range);
    expect(a.range).toEqual([0, Math.log10(4)].map((v, k) => (k ? expect.closeTo(v, 6) : v)));
    expect(a.colors).toEqual(b.colors);
    expect(a.tickvals).toEqual(b.tickvals);
    // so an edge that already ran keeps its colour: e0 (norm 1) at step 1 and at step 4
    const colourOfE0 = (k) => {
      const d = buildDrawing(g, stateWith(k), light, VIEW);
      return layerOf(d, 0).color;
    };
    expect(colourOfE0(1)).toBe(colourOfE0(4));
    // before anything flowed there is no scale to show
    expect(buildDrawing(g, stateWith(0), light, VIEW).colorbar).toBeNull();
  });
});

describe('buildDrawing: badges', () => {
  it('stale and freed saved tensors get their badge; nothing else does', () => {
    const bg = decodeGraph(broken.graph());
    const d = buildDrawing(bg, decodeState(broken.state(0), bg), light, VIEW);
    const byItem = new Map(d.badges.map((b) => [b.item, b]));
    expect([...byItem.keys()].sort()).toEqual([2, 4]);
    expect(byItem.get(2)).toMatchObject({ symbol: SAVED_BADGE[1].symbol, color: SAVED_BADGE[1].color }); // stale
    expect(byItem.get(4)).toMatchObject({ symbol: SAVED_BADGE[2].symbol, color: SAVED_BADGE[2].color }); // freed
    expect(buildDrawing(g, stateWith(0), light, VIEW).badges).toEqual([]);
    expect(z.decoded).toBeTruthy();
  });
});
