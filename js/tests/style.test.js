// @ts-check
import { describe, expect, it } from 'vitest';
import { decodeGraph, decodeState } from '../src/model.js';
import { itemStyles } from '../src/drawing.js';
import {
  FAILED_COLOR,
  KIND_STYLE,
  NEXT_COLOR,
  N_BINS,
  binOf,
  binWidth,
  bucketEdges,
  decadeTicks,
  gatherPaths,
  hexAlpha,
  kindKey,
  makeTheme,
  mixColor,
  parseColor,
  scaleNote,
  scaleRange,
} from '../src/style.js';
import { broken, dataView, folds, z, zGraph, zState } from './fixtures.js';

const g = decodeGraph(zGraph());
const theme = makeTheme();

describe('colour bins', () => {
  it('spreads a log range over N_BINS bins', () => {
    /** @type {[number, number]} */
    const r = [-3, 1];
    expect(binOf(1e-3, r)).toBe(0);
    expect(binOf(1e-4, r)).toBe(0);
    expect(binOf(0, r)).toBe(0);
    expect(binOf(10, r)).toBe(N_BINS - 1);
    expect(binOf(1e3, r)).toBe(N_BINS - 1);
    expect(binOf(10 ** -1, r)).toBe(4); // half way
    expect(binOf(10 ** -2.4, r)).toBe(1);
  });
  it('widens a zero-width range around its value', () => {
    expect(scaleRange([0, 0])).toEqual([-0.5, 0.5]);
    expect(scaleRange(null)).toBeNull();
    expect(binOf(1, scaleRange([0, 0]))).toBe(N_BINS / 2);
  });
  it('draws larger norms thicker', () => {
    expect(binWidth(N_BINS - 1)).toBeGreaterThan(binWidth(0));
  });
  it('has one colour per bin, light and dark', () => {
    expect(theme.bins).toHaveLength(N_BINS);
    expect(makeTheme({ dark: true }).bins).not.toEqual(theme.bins);
  });
  it('ticks whole decades, or the ends of a narrow range', () => {
    expect(decadeTicks([-3.2, 0.5], (v) => String(v)).tickvals).toEqual([-3, -2, -1, 0]);
    const narrow = decadeTicks([0, Math.log10(4)], (v) => v.toFixed(1));
    expect(narrow.tickvals).toHaveLength(3);
    expect(narrow.ticktext[0]).toBe('1.0');
    expect(narrow.ticktext[2]).toBe('4.0');
    expect(decadeTicks([-20, 20], String).tickvals.length).toBeLessThanOrEqual(8);
  });
});

describe('colours', () => {
  it('parses and mixes CSS colours', () => {
    expect(parseColor('#fff')).toEqual([255, 255, 255]);
    expect(parseColor('#102030')).toEqual([16, 32, 48]);
    expect(parseColor('rgb(1, 2, 3)')).toEqual([1, 2, 3]);
    expect(parseColor('rgba(1 2 3 / 0.5)')).toEqual([1, 2, 3]);
    expect(parseColor('white')).toBeNull();
    expect(mixColor('#000000', '#ffffff', 0.5)).toBe('#808080');
    expect(mixColor('#000000', 'white', 0.5)).toBe('#000000');
  });
});

describe('bucketEdges', () => {
  it('leaves every edge grey before the first step', () => {
    const b = bucketEdges(g, decodeState(zState(0), g));
    expect(b.idle).toEqual([0, 1, 2]);
    expect(b.bins.flat()).toEqual([]);
    expect(b.fresh).toEqual([]);
  });
  it('bins flowed edges by norm, the smallest first, and marks the fresh ones', () => {
    const b = bucketEdges(g, decodeState(zState(3), g));
    expect(b.idle).toEqual([]);
    expect(b.bins[0]).toEqual([0, 1]);
    expect(b.bins[N_BINS - 1]).toEqual([2]);
    expect(b.fresh).toEqual([2]); // Pow ran last: its edge into x lights up
  });
  it('routes NaN/inf and None edges to their own traces', () => {
    const raw = zState(3, { edge_flag: dataView(new Uint8Array([2, 3, 1]), 1) });
    const b = bucketEdges(g, decodeState(raw, g));
    expect(b.nonfinite).toEqual([0]);
    expect(b.noGrad).toEqual([1]);
    expect(b.bins.flat()).toEqual([2]);
  });
  it('puts a compiled region\'s saved values in their own trace, off the gradient bins', () => {
    const raw = zState(3, { edge_flag: dataView(new Uint8Array([5, 1, 5]), 1) });
    const b = bucketEdges(g, decodeState(raw, g));
    expect(b.saved).toEqual([0, 2]);
    expect(b.bins.flat()).toEqual([1]);
    expect(b.idle).toEqual([]);
  });
});

describe('gatherPaths', () => {
  it('concatenates polylines keeping their NaN gaps', () => {
    const { x, y } = gatherPaths(g, [2, 0]);
    // edge 2 (Pow -> x) then edge 0 (Add -> Pow), each its own polyline with its NaN
    const path = (/** @type {number} */ e, /** @type {Float32Array} */ p) => Array.from(p.subarray(g.pathPtr[e], g.pathPtr[e + 1]));
    expect(Array.from(x)).toEqual([...path(2, g.pathX), ...path(0, g.pathX)]);
    expect(Array.from(y)).toEqual([...path(2, g.pathY), ...path(0, g.pathY)]);
    expect(Number.isNaN(x[path(2, g.pathX).length - 1])).toBe(true);
    expect(gatherPaths(g, []).x.length).toBe(0);
  });
});

describe('kinds and node colours', () => {
  it('colours by kind and marks the root (the drawing: drawing.test.js itemStyles)', () => {
    expect(kindKey(g, 0)).toBe('root');
    expect(kindKey(g, 1)).toBe('function');
    expect(kindKey(g, 2)).toBe('input');
    expect(kindKey(g, 3)).toBe('parameter');
    const s = itemStyles(g, decodeState(zState(4), g), theme); // all done: plain kind colours
    expect(s.fill).toEqual([KIND_STYLE.root.color, KIND_STYLE.function.color, KIND_STYLE.input.color, KIND_STYLE.parameter.color]);
  });
  it('gives communication nodes (display kind "communication", view/labels.py) their own colour', () => {
    const kinds = [...g.kinds];
    kinds[1] = 'communication';
    const gc = { ...g, kinds };
    expect(kindKey(gc, 1)).toBe('communication');
    const colours = Object.values(KIND_STYLE).map((k) => k.color);
    expect(new Set(colours).size).toBe(colours.length);
    const s = itemStyles(gc, decodeState(zState(4), gc), theme);
    expect(s.fill[1]).toBe(KIND_STYLE.communication.color);
  });
  it('shows pending washed out, next outlined gold and lighter, done solid', () => {
    const s = itemStyles(g, decodeState(zState(1), g), theme);
    // done: Add; next: y (2); pending: Pow, x
    expect(s.fill[0]).toBe(KIND_STYLE.root.color);
    expect(s.stroke[2]).toBe('#c99700');
    expect(s.lineWidth[2]).toBeGreaterThan(s.lineWidth[1]);
    expect(s.fill[1]).toBe(mixColor(KIND_STYLE.function.color, theme.background, 0.78));
    expect(s.fill[3]).not.toBe(KIND_STYLE.parameter.color);
    expect(NEXT_COLOR).toBe('#f5b700'); // the next node's halo (canvas.js)
  });
  it('shows failed red and no-gradient hollow and dashed', () => {
    const raw = zState(1, { node_state: dataView(new Uint8Array([2, 4, 0, 3]), 1) });
    const s = itemStyles(g, decodeState(raw, g), theme);
    expect(s.fill[3]).toBe(FAILED_COLOR);
    expect(s.fill[1]).toBe(theme.background);
    expect(s.dashed[1]).toBe(1);
  });
  it('hexAlpha', () => {
    expect(hexAlpha('#f5b700', 0.5)).toBe('rgba(245,183,0,0.5)');
  });
});

describe('fixed colour scale', () => {
  /** Colour bin of every flowed edge at each step of a fixture. */
  function binsPerStep(fx) {
    const gr = decodeGraph(fx.graph());
    const n = fx.steps + 1;
    return Array.from({ length: n }, (_, k) => {
      const st = decodeState(fx.state(k), gr);
      const { bins } = bucketEdges(gr, st);
      const of = new Map();
      bins.forEach((es, b) => es.forEach((e) => of.set(e, b)));
      return { st, of };
    });
  }

  it('an edge keeps its colour bin from the step it flows to the end (scale from the whole run)', () => {
    for (const fx of [z, folds]) {
      const steps = binsPerStep(fx);
      expect(steps[0].st.normScale).toBeNull(); // nothing coloured before the first step
      const last = steps.at(-1);
      expect(last.of.size).toBeGreaterThan(1);
      for (const { st, of } of steps.slice(1)) {
        expect(st.normScale).toBe('run');
        expect(st.normRange).toEqual(last.st.normRange); // one range for the whole run
        for (const [e, b] of of) expect(last.of.get(e)).toBe(b);
      }
      expect(scaleNote(last.st)).toContain('fixed for the whole run');
    }
  });

  it('z at step 1: the two gradients of norm 1 sit at the bottom of the whole run\'s scale, not mid-scale', () => {
    const s1 = decodeState(zState(1), g);
    // so far, a single norm of 1 would sit mid-scale (bin N_BINS / 2); the run's scale spans 1 .. 4
    expect(binOf(1, scaleRange([0, 0]))).toBe(N_BINS / 2);
    expect(s1.normRange?.[1]).toBeCloseTo(Math.log10(4));
    const { bins } = bucketEdges(g, s1);
    expect(bins[0].length).toBe(2);
  });

  it('falls back to the norms so far, and says so, when the throwaway run fails', () => {
    const gr = decodeGraph(broken.graph());
    const st = decodeState(broken.state(1), gr);
    expect(st.normScale).toBe('so far');
    expect(st.normRange).not.toBeNull();
    expect(scaleNote(st)).toContain('so far');
    expect(scaleNote({ normRange: null, normScale: null })).toBe('');
  });
});
