// @ts-check
// The timeline of aw.explore(watch) (timeline.js) and the gain colour mode's helpers (gain.js):
// decoding a payload (binary buffers as DataViews at odd offsets, as ipywidgets delivers them),
// binning 10,000 steps to pixels, colours, and the DOM: module rows expanding to their ops
// (asked once), the cursor, Play, First NaN/Inf and the moved list, all by messages.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { GAIN_COLORS, decodeGain, gainBin, gainColors, gainLegend } from '../src/gain.js';
import { MSG, TRAIT } from '../src/protocol.js';
import { FLAG, PLAY_MS, binRow, cellColor, createTimeline, decodeTimeline, float32s, stepAt } from '../src/timeline.js';
import { ALARM_COLOR } from '../src/style.js';
import { dataView } from './fixtures.js';

/** A watch of 6 steps, every=2 (0, 2, 4 watched); the model, one layer with ops; step 4 non-finite. */
function payload(overrides = {}) {
  return {
    format: 'autograd_widget.timeline/1',
    n_steps: 6,
    watched: dataView(new Int32Array([0, 2, 4]), 1),
    loss: dataView(new Float32Array([1, 0.9, 0.8, 0.7, NaN, NaN]), 3),
    flags: dataView(new Uint8Array([1, 0, 1, 2, 3, 2]), 5),
    scale: dataView(new Float32Array([NaN, NaN, NaN]), 7),
    rows: { id: ['', '0'], label: ['Sequential', '0'], parent: [null, ''], depth: [0, 1], ops: [false, true] },
    values: dataView(new Float32Array([0, 0.5, Infinity, -1, -0.5, Infinity]), 1),
    range: [-1, 0.5],
    first: { step: 4, watched: true, node: 'n1', name: 'PowBackward0', cause: 'saved `self` has 3 NaNs', expected: false },
    moved: [{ module: '0', factor: 31.6, low_step: 0, high_step: 2 }],
    selected: 4,
    every: 2,
    ...overrides,
  };
}

function fakeModel(values) {
  const handlers = new Map();
  return {
    values,
    get: (k) => values[k],
    set: (k, v) => {
      values[k] = v;
      for (const cb of handlers.get(`change:${k}`) ?? []) cb();
    },
    on: (ev, cb) => handlers.set(ev, [...(handlers.get(ev) ?? []), cb]),
    off: (ev, cb) => handlers.set(ev, (handlers.get(ev) ?? []).filter((f) => f !== cb)),
  };
}

function mount(raw = payload(), opts = {}) {
  const model = fakeModel({ [TRAIT.TIMELINE]: raw, [TRAIT.WATCH_STEP]: raw.selected ?? null });
  const sent = [];
  const asked = [];
  const request = opts.request ?? ((msg) => {
    asked.push(msg);
    const f = new Float32Array([0.1, 0.2, Infinity, -2, -2, -2]);
    const b64 = btoa(String.fromCharCode(...new Uint8Array(f.buffer)));
    return Promise.resolve({ id: ['n0', 'n3'], label: ['AddmmBackward0', 'AccumulateGrad'], values: b64 });
  });
  const tl = createTimeline(document, { model, send: (c) => sent.push(c), request, live: true, schedule: (cb) => cb() });
  document.body.append(tl.el);
  return { tl, model, sent, asked };
}

afterEach(() => {
  document.body.replaceChildren();
  vi.useRealTimers();
});

describe('decodeTimeline', () => {
  it('is null for an empty trait (not a watch) and decodes buffers at odd offsets', () => {
    expect(decodeTimeline({})).toBeNull();
    expect(decodeTimeline(null)).toBeNull();
    const t = decodeTimeline(payload());
    expect(Array.from(t.watched)).toEqual([0, 2, 4]);
    expect(t.nSteps).toBe(6);
    expect(Array.from(t.flags)).toEqual([1, 0, 1, 2, 3, 2]);
    expect(t.flags[4] & FLAG.NONFINITE).toBeTruthy();
    expect(Array.from(t.values).slice(0, 3)).toEqual([0, 0.5, Infinity]);
    expect(t.first).toMatchObject({ step: 4, node: 'n1', name: 'PowBackward0' });
    expect(t.rows.parent).toEqual([null, '']);
    expect(t.every).toBe(2);
  });

  it('a malformed payload decodes to safe defaults (never throws, never out of bounds)', () => {
    const t = decodeTimeline({ format: 'x', n_steps: -3, rows: { id: ['a', 'b'], depth: ['x'] }, values: null, range: ['a'], first: { step: 'no' }, moved: [null, { module: 1 }] });
    expect(t.nSteps).toBe(0);
    expect(t.rows.depth).toEqual([0, 0]);
    expect(t.values.length).toBe(0);
    expect(t.range).toEqual([0, 1]);
    expect(t.first).toBeNull();
    expect(t.moved).toEqual([]);
  });

  it('reads each nested part only when it is an object of the right shape', () => {
    const base = { format: 'x', n_steps: 2, rows: ['not', 'an', 'object'] };
    const odd = decodeTimeline({ ...base, first: [3], origin: 'born', healed: { steps: [1], first: [1] }, moved: ['m', 7, { module: 'fc', factor: 'big' }] });
    expect(odd.rows.id).toEqual([]);
    expect(odd.first).toBeNull();
    expect(odd.origin).toBeNull();
    expect(odd.healed).toBeNull();
    expect(odd.moved).toEqual([]);
    const moved = { module: 'fc', factor: 12, low_step: 0, high_step: 1 };
    const ok = decodeTimeline({ ...base, origin: {}, healed: { steps: [1, 'x', 2], first: { step: 1, node: 'n2', module: 5 } }, moved: [moved, null] });
    expect(ok.origin).toEqual({ kind: null, where: null, module: null, forward_node: null, forward_op: null, forward_module: null, forward_cause: null });
    expect(ok.healed).toEqual({ steps: [1, 2], count: 3, first: { step: 1, node: 'n2', name: null, born_node: null, born_name: null, born_cause: null, module: null } });
    expect(ok.moved).toEqual([moved]);
    expect(ok.moved[0]).toBe(moved); // the record as Python sent it
  });
});

describe('binning and colours', () => {
  it('a pixel column shows the largest value of its steps; a non-finite one wins; none is NaN', () => {
    expect(Array.from(binRow([1, 5, NaN, Infinity], 0, 4, 2))).toEqual([5, Infinity]);
    expect(Array.from(binRow([NaN, NaN, 2, 3], 0, 4, 2))).toEqual([NaN, 3]);
    expect(Array.from(binRow([7, 8], 0, 2, 4))).toEqual([7, 7, 8, 8]); // fewer steps than pixels
    const many = new Float32Array(10000).fill(0.5);
    many[6789] = Infinity;
    const bins = binRow(many, 0, 10000, 800);
    expect(bins.length).toBe(800);
    expect(bins.filter((v) => v === Infinity).length).toBe(1);
  });

  it('colours: nothing for NaN, the alarm for a NaN/Inf gradient, a ramp in between', () => {
    expect(cellColor(NaN, 0, 1)).toBeNull();
    expect(cellColor(Infinity, 0, 1)).toBe(ALARM_COLOR);
    expect(cellColor(-Infinity, 0, 1)).not.toBeNull();
    expect(cellColor(0, 0, 1)).not.toBe(cellColor(1, 0, 1));
  });

  it('op rows come as base64 float32 (a reply is JSON only), a malformed string reads as empty', () => {
    const f = new Float32Array([1.5, NaN, Infinity, -Infinity]);
    const b64 = btoa(String.fromCharCode(...new Uint8Array(f.buffer)));
    expect(Array.from(float32s(b64, 4))).toEqual([1.5, NaN, Infinity, -Infinity]);
    expect(Array.from(float32s('%%%', 2))).toEqual([NaN, NaN]);
    expect(Array.from(float32s(undefined, 1))).toEqual([NaN]);
  });

  it('the step under the pointer is the nearest watched one', () => {
    const w = new Int32Array([0, 10, 20]);
    expect([stepAt(w, 0), stepAt(w, 0.5), stepAt(w, 0.99), stepAt(new Int32Array(0), 0.5)]).toEqual([0, 10, 20, null]);
  });
});

describe('the timeline view', () => {
  it('shows the model, expands a module to its ops (asked once), and repaints', async () => {
    const { tl, asked } = mount();
    const rows = () => [...tl.el.querySelectorAll('.agw-tl-row')].map((r) => r.textContent);
    expect(rows()).toEqual(['▾Sequential', '▸0']);
    tl.el.querySelectorAll('.agw-tl-twisty')[1].click();
    await Promise.resolve();
    await Promise.resolve();
    expect(asked).toEqual([expect.objectContaining({ type: MSG.TIMELINE_ROWS, module: '0' })]);
    expect(rows()).toEqual(['▾Sequential', '▾0', 'AddmmBackward0', 'AccumulateGrad']);
    tl.el.querySelectorAll('.agw-tl-twisty')[1].click(); // close: no second request
    tl.el.querySelectorAll('.agw-tl-twisty')[1].click();
    expect(asked.length).toBe(1);
    expect(tl.el.querySelector('.agw-tl-step').textContent).toContain('step 4 (3 of 3 watched, 6 steps)');
    tl.destroy();
  });

  it('First NaN/Inf jumps to the step and its birth node, and says the cause', () => {
    const { tl, sent } = mount(payload({ selected: 0 }));
    tl.el.querySelector('.agw-tl-first').click();
    expect(sent).toEqual([{ type: MSG.WATCH_STEP, step: 4, node: 'n1' }]);
    expect(tl.el.querySelector('.agw-tl-cause').textContent).toBe('Step 4: born at PowBackward0 (n1): saved `self` has 3 NaNs');
    expect(tl.state().selected).toBe(4);
  });

  it('an unwatched first NaN/Inf names the step and says to watch more often', () => {
    const { tl, sent } = mount(payload({ first: { step: 3, watched: false, node: null, name: null, cause: null, expected: false } }));
    tl.el.querySelector('.agw-tl-first').click();
    expect(sent).toEqual([]);
    expect(tl.el.querySelector('.agw-tl-cause').textContent).toContain('Step 3: a parameter gradient came out non-finite; that step was not watched (every=2)');
  });

  it('Play moves the cursor through the watched steps and stops at the last', () => {
    vi.useFakeTimers();
    const { tl, sent } = mount(payload({ selected: 0 }));
    tl.el.querySelector('.agw-tl-play').click();
    expect(tl.state().playing).toBe(true);
    vi.advanceTimersByTime(PLAY_MS * 4);
    expect(sent).toEqual([{ type: MSG.WATCH_STEP, step: 2 }, { type: MSG.WATCH_STEP, step: 4 }]);
    expect(tl.state().playing).toBe(false);
  });

  it('the synced step moves the cursor; a click on the heat map picks a step; moved modules are listed', () => {
    const { tl, model, sent } = mount();
    model.set(TRAIT.WATCH_STEP, 2);
    expect(tl.state().selected).toBe(2);
    expect(tl.el.querySelector('.agw-tl-step').textContent).toContain('step 2 (2 of 3 watched');
    const canvas = tl.el.querySelector('canvas');
    canvas.getBoundingClientRect = () => ({ left: 0, top: 0, width: 300, height: 100, right: 300, bottom: 100, x: 0, y: 0, toJSON() {} });
    canvas.dispatchEvent(new MouseEvent('click', { clientX: 10, clientY: 60, bubbles: true }));
    expect(sent.at(-1)).toEqual({ type: MSG.WATCH_STEP, step: 0 });
    const moved = tl.el.querySelector('.agw-tl-moved-item');
    expect(moved.textContent).toBe('0 ×31.6 (step 0 ↔ 2)');
    moved.click();
    expect(tl.el.querySelector('[data-id="0"]').classList.contains('agw-tl-flash')).toBe(true);
  });
});

describe('the gain colour mode', () => {
  it('decodes log10 gains, bins them symmetrically around 1 and keys them', () => {
    const g = decodeGain({ items: [0, 1, -0.5, null, 'nan'], nodes: { n0: 1, n1: 'inf' } }, 5);
    expect(Array.from(g.items).slice(0, 3)).toEqual([0, 1, -0.5]);
    expect(Number.isNaN(g.items[3]) && Number.isNaN(g.items[4])).toBe(true);
    expect(g.span).toBe(1);
    expect(g.nodes.get('n1')).toBeNull();
    const mid = Math.floor(GAIN_COLORS.length / 2);
    expect(gainBin(0, 1)).toBe(mid);
    expect(gainBin(1, 1)).toBe(GAIN_COLORS.length - 1);
    expect(gainBin(-1, 1)).toBe(0);
    expect(gainBin(NaN, 1)).toBe(-1);
    expect(gainColors(g, 5, 'none')).toEqual([GAIN_COLORS[mid], GAIN_COLORS.at(-1), GAIN_COLORS[2], 'none', 'none']);
    expect(gainLegend(g)[0].from).toBe('0.1');
    expect(gainLegend(null)).toEqual([]);
  });
});
