// @ts-check
// The timeline's zoom and pan in time (timelinezoom.js, timelinezoomui.js): the span arithmetic,
// the "timeline_range" reply's decoding, the columns held until it comes, and on the DOM: the
// wheel, the keys, a drag and "Whole run" asking Python (debounced, the latest request winning),
// painting the reply, reading its cells and selecting a zoomed column's step.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MSG, TRAIT } from '../src/protocol.js';
import { createTimeline } from '../src/timeline.js';
import { bandText, cellText } from '../src/timelinetext.js';
import {
  DEBOUNCE_MS, MIN_SPAN, base64Floats, binToView, binsFor, clampSpan, columnOf, columnSteps, decodeRange,
  isWhole, panSpan, sliceView, spanFraction, spanText, watchedSteps, wholeSpan, wholeView, zoomSpan,
} from '../src/timelinezoom.js';
import { dataView } from './fixtures.js';

const b64 = (/** @type {number[]} */ xs) => btoa(String.fromCharCode(...new Uint8Array(new Float32Array(xs).buffer)));
const WHOLE = { start: 0, stop: 1000 };

describe('the span arithmetic', () => {
  it('zooms about the pointer, never below MIN_SPAN steps nor outside the run', () => {
    expect(zoomSpan(WHOLE, WHOLE, 10, 0.5)).toEqual({ start: 450, stop: 550 });
    // the step under the pointer stays under it
    const z = zoomSpan(WHOLE, WHOLE, 4, 0.25);
    expect(z).toEqual({ start: 188, stop: 438 });
    expect(Math.abs(z.start + 0.25 * (z.stop - z.start) - 250)).toBeLessThanOrEqual(1);
    expect(zoomSpan(WHOLE, WHOLE, 1e9, 0.5).stop - zoomSpan(WHOLE, WHOLE, 1e9, 0.5).start).toBe(MIN_SPAN);
    expect(zoomSpan({ start: 0, stop: 100 }, WHOLE, 0.001, 0.9)).toEqual(WHOLE);
    expect(zoomSpan({ start: 0, stop: 10 }, { start: 0, stop: 10 }, 100, 0.5)).toEqual({ start: 0, stop: 10 });
    // bad factors and anchors change nothing / zoom about the centre
    expect(zoomSpan({ start: 100, stop: 300 }, WHOLE, NaN, NaN)).toEqual({ start: 100, stop: 300 });
  });

  it("the pointer's step is read off the painted columns (a partial last band is painted as wide)", () => {
    const v = { axis: new Int32Array([0, 128, 256]), start: 0, stop: 300 };
    expect(spanFraction(v, 0.5)).toBeCloseTo(192 / 300, 6); // the middle of the 2nd band
    expect(spanFraction(v, 5 / 6)).toBeCloseTo(278 / 300, 6); // the middle of the last (44 steps)
    expect([spanFraction(v, -1), spanFraction(v, 2), spanFraction(v, NaN)]).toEqual([0, 1, 0.5]);
  });

  it('pans inside the run, keeping the width; a clamp moves a span back in', () => {
    expect(panSpan({ start: 100, stop: 300 }, WHOLE, 50)).toEqual({ start: 150, stop: 350 });
    expect(panSpan({ start: 100, stop: 300 }, WHOLE, -500)).toEqual({ start: 0, stop: 200 });
    expect(panSpan({ start: 900, stop: 1000 }, WHOLE, 10)).toEqual({ start: 900, stop: 1000 });
    expect(clampSpan({ start: 990, stop: 995 }, WHOLE)).toEqual({ start: 980, stop: 1000 });
    expect(clampSpan({ start: NaN, stop: NaN }, WHOLE)).toEqual(WHOLE);
    expect(isWhole(WHOLE, WHOLE) && !isWhole({ start: 1, stop: 1000 }, WHOLE)).toBe(true);
    expect(wholeSpan({ nSteps: 500, watched: new Int32Array([0, 10, 490]) })).toEqual({ start: 0, stop: 500 });
    expect([binsFor(0.2), binsFor(1200.4), binsFor(1e6), binsFor(NaN)]).toEqual([1, 1200, 8192, 1]);
  });

  it('reads the watched steps from the flags and finds a step\'s column', () => {
    expect(Array.from(watchedSteps(new Uint8Array([1, 0, 3, 2, 17])))).toEqual([0, 2, 4]);
    const v = { axis: new Int32Array([100, 110, 120]), stop: 130 };
    expect([columnOf(v, 99), columnOf(v, 100), columnOf(v, 119), columnOf(v, 129), columnOf(v, 130)]).toEqual([-1, 0, 1, 2, -1]);
  });
});

describe('decoding a range reply', () => {
  const watched = new Int32Array(Array.from({ length: 100 }, (_, i) => i * 2)); // every=2, steps 0..199
  it('maps the reply rows onto the timeline rows, its columns to their first watched step', () => {
    const reply = { start: 9, stop: 29, rows: ['b', 'a'], columns: [9, 19], values: b64([1, 2, 3, 4]), values_min: b64([0.5, 1.5, 2.5, 3.5]) };
    const v = decodeRange(reply, ['a', 'b', 'c'], watched, { start: 0, stop: 200 });
    expect(v).not.toBeNull();
    if (!v) return;
    expect(Array.from(v.axis)).toEqual([9, 19]);
    expect(Array.from(v.pick)).toEqual([10, 20]); // the first watched step of each column
    expect(Array.from(v.values)).toEqual([3, 4, 1, 2, NaN, NaN]);
    expect(Array.from(v.valuesMin ?? [])).toEqual([2.5, 3.5, 0.5, 1.5, NaN, NaN]);
    expect(v.banded && !v.whole).toBe(true);
    expect(columnSteps(v, 1, watched)).toEqual({ first: 19, last: 28, count: 5 });
  });

  it('a column per watched step is not banded; a malformed reply is null, never a throw', () => {
    const fine = decodeRange({ start: 10, stop: 16, rows: ['a'], columns: [10, 12, 14], values: b64([1, Infinity, -Infinity]), values_min: '' }, ['a'], watched, WHOLE);
    expect(fine?.banded).toBe(false);
    expect(fine?.valuesMin).toBeNull();
    expect(Array.from(fine?.values ?? [])).toEqual([1, Infinity, -Infinity]);
    const bad = [null, 'x', {}, { start: 5, stop: 5, rows: [], columns: [] }, { start: 0, stop: 10, rows: [], columns: [3, 3] },
      { start: 0, stop: 10, rows: [], columns: [11] }, { start: 0, stop: 10, rows: [], columns: ['1'] }, { start: 0, stop: 10, rows: 'a', columns: [] }];
    for (const r of bad) expect(decodeRange(r, ['a'], watched, WHOLE)).toBeNull();
    // short or broken base64 reads as NaN (nothing recorded), never out of bounds
    expect(Array.from(base64Floats(b64([1]), 3))).toEqual([1, NaN, NaN]);
    expect(Array.from(base64Floats('%%%', 2))).toEqual([NaN, NaN]);
  });

  it('the held columns of a span are sliced (stretched) at once; op rows are binned to any view', () => {
    const whole = wholeView({ nSteps: 40, watched: new Int32Array([0, 10, 20, 30]), values: new Float32Array([1, 2, 3, 4, 5, 6, 7, 8]), valuesMin: new Float32Array(8), columns: new Int32Array([0, 10, 20, 30]) });
    expect(whole.banded && whole.whole).toBe(true);
    const s = sliceView(whole, 2, { start: 15, stop: 27 }, { start: 0, stop: 40 });
    expect(Array.from(s.axis)).toEqual([15, 20]);
    expect(Array.from(s.pick)).toEqual([10, 20]);
    expect(Array.from(s.values)).toEqual([2, 3, 6, 7]);
    expect(s.whole).toBe(false);
    // a spike inside a column wins it; a NaN/Inf wins over any finite value
    const view = { axis: new Int32Array([0, 3]), stop: 6 };
    expect(Array.from(binToView([1, 9, 2, 3, Infinity, 0], 1, new Int32Array([0, 1, 2, 3, 4, 5]), /** @type {any} */ (view)))).toEqual([9, Infinity]);
    expect(spanText(/** @type {any} */ ({ start: 61000, stop: 61200, whole: false }), 100000)).toBe('steps 61,000–61,199 of 100,000');
  });

  it('a band reads its steps and its smallest and largest norm; a zoom\'s first column says no change', () => {
    expect(bandText({ first: 0, last: 97, count: 98, name: 'fc', hi: 2, lo: -1 })).toBe('steps 0–97 (98 watched) · fc · gradient norm 0.1 … 100 (smallest … largest)');
    expect(bandText({ first: 0, last: 97, count: 98, name: 'fc', hi: Infinity, lo: 0 })).toBe('steps 0–97 (98 watched) · fc · NaN/Inf in a gradient (smallest norm 1)');
    expect(cellText({ step: 50, prevStep: -1, name: 'fc', v: 0, prev: NaN })).toBe('step 50 · fc · gradient norm 1');
  });
});

/** A banded run: 100 steps all watched, 10 bands of 10; the model and one layer; a spike at step 57. */
function banded() {
  const n = 100;
  const hi = new Float32Array(20).fill(-1);
  const lo = new Float32Array(20).fill(-2);
  hi[5] = 3; // the model's band 50..59 holds the spike
  return {
    format: 'autograd_widget.timeline/1',
    n_steps: n,
    watched: dataView(new Int32Array(Array.from({ length: 10 }, (_, i) => i * 10)), 1),
    columns: dataView(new Int32Array(Array.from({ length: 10 }, (_, i) => i * 10)), 3),
    loss: dataView(new Float32Array(n).fill(1), 3),
    flags: dataView(new Uint8Array(n).fill(1), 5),
    scale: dataView(new Float32Array(n).fill(NaN), 7),
    rows: { id: ['', '0'], label: ['Net', '0'], parent: [null, ''], depth: [0, 1], ops: [false, false] },
    values: dataView(hi, 1),
    values_min: dataView(lo, 1),
    range: [-2, 3],
    first: null,
    moved: [],
    selected: 90,
    every: 1,
  };
}

function fakeModel(values) {
  const handlers = new Map();
  return {
    get: (k) => values[k],
    set: (k, v) => {
      values[k] = v;
      for (const cb of handlers.get(`change:${k}`) ?? []) cb();
    },
    on: (ev, cb) => handlers.set(ev, [...(handlers.get(ev) ?? []), cb]),
    off: (ev, cb) => handlers.set(ev, (handlers.get(ev) ?? []).filter((f) => f !== cb)),
  };
}

/** Mount a timeline whose `request` answers from `answer` (or waits: the test resolves). */
function mount(raw = banded(), live = true) {
  const model = fakeModel({ [TRAIT.TIMELINE]: raw, [TRAIT.WATCH_STEP]: raw.selected });
  const sent = [];
  /** @type {{ msg: any, resolve: (v: unknown) => void }[]} */
  const asked = [];
  /** the whole run's refinement at the canvas's width (its own test) */
  /** @type {{ msg: any, resolve: (v: unknown) => void }[]} */
  const refined = [];
  const request = (msg) => new Promise((resolve) => (msg.start === 0 && msg.stop === 100 ? refined : asked).push({ msg, resolve }));
  const tl = createTimeline(document, { model, send: (c) => sent.push(c), request, live, schedule: (cb) => cb() });
  document.body.append(tl.el);
  const canvas = /** @type {HTMLCanvasElement & { agwTimeline?: any }} */ (tl.el.querySelector('canvas'));
  Object.defineProperty(canvas, 'clientWidth', { value: 400 });
  canvas.getBoundingClientRect = () => /** @type {DOMRect} */ ({ left: 0, top: 0, width: 400, height: 200, right: 400, bottom: 200, x: 0, y: 0, toJSON() {} });
  return { tl, model, sent, asked, refined, canvas };
}

/** The reply Python gives for a fine range (one column per step) over rows '' and '0'. */
function fineReply(start, stop, spikeAt = 57) {
  const cols = Array.from({ length: stop - start }, (_, i) => start + i);
  const v = [...cols.map((s) => (s === spikeAt ? 3 : -1)), ...cols.map(() => -1.5)];
  return { start, stop, rows: ['', '0'], columns: cols, values: b64(v), values_min: b64(v) };
}
const flush = async () => {
  for (let i = 0; i < 4; i++) await Promise.resolve();
};

describe('zooming the timeline on the page', () => {
  afterEach(() => {
    vi.useRealTimers();
    document.body.replaceChildren();
  });

  it('the wheel zooms about the pointer at once, then asks once for the steps shown (debounced)', async () => {
    vi.useFakeTimers();
    const { tl, asked, canvas } = mount();
    expect(canvas.agwTimeline.span).toEqual([0, 100]);
    expect(/** @type {HTMLButtonElement} */ (tl.el.querySelector('.agw-tl-whole')).disabled).toBe(true);
    for (let i = 0; i < 3; i++) canvas.dispatchEvent(new WheelEvent('wheel', { deltaY: -300, clientX: 230, bubbles: true, cancelable: true }));
    const t = canvas.agwTimeline;
    expect(t.span[1] - t.span[0]).toBeLessThan(40);
    expect(t.span[0]).toBeLessThanOrEqual(57);
    expect(t.exact).toBe(false); // the held bands, stretched, until the reply
    expect(asked.length).toBe(0);
    vi.advanceTimersByTime(DEBOUNCE_MS + 1);
    expect(asked.map((a) => a.msg)).toEqual([{ type: MSG.TIMELINE_RANGE, start: t.span[0], stop: t.span[1], bins: 400 }]);
    asked[0].resolve(fineReply(t.span[0], t.span[1]));
    await flush();
    const z = canvas.agwTimeline;
    expect(z.exact).toBe(true);
    expect(z.watched).toEqual(Array.from({ length: t.span[1] - t.span[0] }, (_, i) => t.span[0] + i));
    expect(tl.el.querySelector('.agw-tl-span').textContent).toBe(`steps ${t.span[0]}–${t.span[1] - 1} of 100`);
    expect(/** @type {HTMLButtonElement} */ (tl.el.querySelector('.agw-tl-whole')).disabled).toBe(false);
    // a click on a zoomed column selects that step
    const k = 57 - t.span[0];
    canvas.dispatchEvent(new MouseEvent('click', { clientX: ((k + 0.5) / z.watched.length) * 400, clientY: 60, bubbles: true }));
    expect(tl.state().selected).toBe(57);
    // the hover reads the zoomed cell: its step, its norm, the change against the step before
    canvas.dispatchEvent(new MouseEvent('mousemove', { clientX: ((k + 0.5) / z.watched.length) * 400, clientY: 60, bubbles: true }));
    expect(tl.el.querySelector('.agw-tl-tip').textContent).toBe('step 57 · Net · gradient norm 1000 · ×1.0e4 against step 56');
    tl.destroy();
  });

  it('a later request wins: the reply to an older one is dropped', async () => {
    vi.useFakeTimers();
    const { asked, canvas, tl } = mount();
    canvas.dispatchEvent(new KeyboardEvent('keydown', { key: '+', bubbles: true, cancelable: true }));
    vi.advanceTimersByTime(DEBOUNCE_MS + 1);
    canvas.dispatchEvent(new KeyboardEvent('keydown', { key: '+', bubbles: true, cancelable: true }));
    vi.advanceTimersByTime(DEBOUNCE_MS + 1);
    expect(asked.length).toBe(2);
    const [a, b] = asked.map((x) => x.msg);
    expect([a.stop - a.start, b.stop - b.start]).toEqual([50, 25]);
    asked[1].resolve(fineReply(b.start, b.stop));
    await flush();
    asked[0].resolve(fineReply(a.start, a.stop)); // late: dropped
    await flush();
    expect(canvas.agwTimeline.span).toEqual([b.start, b.stop]);
    expect(canvas.agwTimeline.watched.length).toBe(25);
    // the keyboard's cell reads the zoomed columns (the first: no change said, nothing before it is held)
    canvas.dispatchEvent(new KeyboardEvent('keydown', { key: 'Home', bubbles: true, cancelable: true }));
    expect(tl.el.querySelector('.agw-tl-readout').textContent).toBe(`step ${b.start} · Net · gradient norm 0.1`);
    // 0 goes back to the whole run, asking nothing
    canvas.dispatchEvent(new KeyboardEvent('keydown', { key: '0', bubbles: true, cancelable: true }));
    vi.advanceTimersByTime(DEBOUNCE_MS + 1);
    expect(asked.length).toBe(2);
    expect(canvas.agwTimeline.span).toEqual([0, 100]);
    expect(canvas.agwTimeline.banded).toBe(true);
  });

  it('a drag pans (and selects nothing); Shift+arrows pan; Whole run and a double-click go back', () => {
    vi.useFakeTimers();
    const { canvas, tl, sent } = mount();
    tl.state();
    canvas.dispatchEvent(new KeyboardEvent('keydown', { key: '+', bubbles: true }));
    canvas.dispatchEvent(new KeyboardEvent('keydown', { key: '+', bubbles: true }));
    const [s0] = canvas.agwTimeline.span;
    expect(canvas.agwTimeline.span[1] - s0).toBe(25);
    canvas.dispatchEvent(new MouseEvent('pointerdown', { button: 0, buttons: 1, clientX: 200, bubbles: true }));
    canvas.dispatchEvent(new MouseEvent('pointermove', { buttons: 1, clientX: 120, bubbles: true }));
    canvas.dispatchEvent(new MouseEvent('pointerup', { clientX: 120, bubbles: true }));
    canvas.dispatchEvent(new MouseEvent('click', { clientX: 120, clientY: 60, bubbles: true }));
    expect(canvas.agwTimeline.span[0]).toBe(s0 + 5); // 80 px of 400 = a fifth of 25 steps, later
    expect(sent).toEqual([]);
    canvas.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowLeft', shiftKey: true, bubbles: true }));
    expect(canvas.agwTimeline.span[0]).toBe(s0 + 5 + Math.round(-0.1 * 25));
    expect(tl.state().focus).toBeNull(); // Shift+arrow panned, the cell did not move
    tl.el.querySelector('.agw-tl-whole').click();
    expect(canvas.agwTimeline.span).toEqual([0, 100]);
    canvas.dispatchEvent(new KeyboardEvent('keydown', { key: '-', bubbles: true }));
    expect(canvas.agwTimeline.span).toEqual([0, 100]);
    canvas.dispatchEvent(new WheelEvent('wheel', { deltaY: -500, clientX: 200, bubbles: true, cancelable: true }));
    expect(canvas.agwTimeline.span[1] - canvas.agwTimeline.span[0]).toBeLessThan(100);
    canvas.dispatchEvent(new MouseEvent('dblclick', { bubbles: true }));
    expect(canvas.agwTimeline.span).toEqual([0, 100]);
  });

  it('the whole run lets the wheel scroll the page; a page without a kernel zooms the held columns', () => {
    vi.useFakeTimers();
    const { canvas, asked } = mount(banded(), false);
    const out = new WheelEvent('wheel', { deltaY: 100, bubbles: true, cancelable: true });
    canvas.dispatchEvent(out);
    expect(out.defaultPrevented).toBe(false);
    const zin = new WheelEvent('wheel', { deltaY: -400, clientX: 200, bubbles: true, cancelable: true });
    canvas.dispatchEvent(zin);
    expect(zin.defaultPrevented).toBe(true);
    vi.advanceTimersByTime(DEBOUNCE_MS + 1);
    expect(asked.length).toBe(0);
    expect(canvas.agwTimeline.span[1] - canvas.agwTimeline.span[0]).toBeLessThan(100);
  });

  it('bands fewer than the pixels: the whole run is asked once at the width, then zooms from it', async () => {
    vi.useFakeTimers();
    const { canvas, asked, refined } = mount();
    expect(refined.length).toBe(0);
    vi.advanceTimersByTime(DEBOUNCE_MS + 1);
    expect(refined.map((a) => a.msg)).toEqual([{ type: MSG.TIMELINE_RANGE, start: 0, stop: 100, bins: 400 }]);
    expect(canvas.agwTimeline.watched.length).toBe(10);
    refined[0].resolve(fineReply(0, 100));
    await flush();
    expect(canvas.agwTimeline.watched.length).toBe(100); // one column per step now
    expect(canvas.agwTimeline.span).toEqual([0, 100]);
    canvas.dispatchEvent(new KeyboardEvent('keydown', { key: '+', bubbles: true }));
    vi.advanceTimersByTime(DEBOUNCE_MS + 1);
    expect(asked.length).toBe(0); // every step is held
    expect(canvas.agwTimeline.watched.length).toBe(50);
    expect(canvas.agwTimeline.exact).toBe(true);
  });

  it('a run whose trait holds every watched step zooms from it, asking nothing, exact at once', () => {
    vi.useFakeTimers();
    const raw = { ...banded(), columns: undefined, values_min: undefined, watched: dataView(new Int32Array(Array.from({ length: 100 }, (_, i) => i)), 1), values: dataView(new Float32Array(200).fill(-1), 1) };
    const { canvas, asked } = mount(raw);
    canvas.dispatchEvent(new KeyboardEvent('keydown', { key: '+', bubbles: true }));
    vi.advanceTimersByTime(DEBOUNCE_MS + 1);
    expect(asked.length).toBe(0);
    expect(canvas.agwTimeline.exact).toBe(true);
    expect(canvas.agwTimeline.watched.length).toBe(50);
  });
});

describe('the loss of a long run', () => {
  it('is drawn per pixel column, smallest to largest (a spike kept), not as a 100,000-point line', async () => {
    const { lossEnvelope } = await import('../src/timelinepaint.js');
    const loss = new Float32Array(100_000).fill(1);
    loss[61_234] = 50;
    loss[7] = NaN;
    const env = lossEnvelope(loss, 0, loss.length, 500, (s) => (s / loss.length) * 500);
    expect(env.hi[306]).toBe(50);
    expect(Array.from(env.hi).filter((v) => v !== 1)).toEqual([50]);
    expect(Array.from(env.lo).every((v) => v === 1)).toBe(true);
  });
});
