// @ts-check
// The timeline's pure parts: the colour bar (timelinecolorbar.js), the step axis
// (timelineaxis.js), the rows opened as deep as fits (timelinerows.js) and what a cell, First
// NaN/Inf and a healed birth say (timelinetext.js); then the DOM: colour bar, keyboard reading.
import { afterEach, describe, expect, it } from 'vitest';
import { MSG, TRAIT } from '../src/protocol.js';
import { createTimeline } from '../src/timeline.js';
import { columnX, nearestWatched, niceStep, stepTicks, stepX } from '../src/timelineaxis.js';
import { RAMP, cellColor, colorbarTicks, normText, rampCss } from '../src/timelinecolorbar.js';
import { openDepth, visibleRows } from '../src/timelinerows.js';
import { cellText, firstText, healedText } from '../src/timelinetext.js';

afterEach(() => document.body.replaceChildren());

describe('the colour bar', () => {
  it('has the cells\' colours as hard stops, and ticks at the powers of ten inside the range', () => {
    const css = rampCss();
    for (const c of RAMP) expect(css).toContain(c);
    expect(cellColor(-3.71 + 0.05, -3.71, 0.144)).toBe(RAMP[0]);
    expect(cellColor(0.14, -3.71, 0.144)).toBe(RAMP[RAMP.length - 1]);
    const ticks = colorbarTicks(-3.71, 0.144);
    expect(ticks.map((t) => t.label)).toEqual(['1e-3', '0.01', '0.1', '1']);
    expect(ticks.every((t) => t.t >= 0 && t.t <= 1)).toBe(true);
    expect(colorbarTicks(-20, 10, 6).length).toBeLessThanOrEqual(6);
    expect(colorbarTicks(0.2, 0.7).map((t) => t.label)).toEqual(['1.58', '5.01']); // inside one decade: the ends
    expect(colorbarTicks(-1.3, -0.4).map((t) => t.label)).toEqual(['0.0501', '0.1', '0.398']);
    expect(colorbarTicks(-1.05, -0.4).map((t) => t.label)).toEqual(['0.0891', '0.398']); // 0.1 too near an end
    expect(colorbarTicks(1, 1)).toEqual([]);
    expect([normText(NaN), normText(Infinity), normText(-Infinity), normText(-5)]).toEqual(['', 'NaN/Inf', '0', '1e-5']);
  });
});

describe('the step axis', () => {
  it('puts nice step numbers at their columns, never closer than the label width', () => {
    expect(columnX(0, 4, 100)).toBe(12.5);
    expect(nearestWatched([0, 10, 20], 14)).toBe(1);
    expect(nearestWatched([], 3)).toBe(-1);
    expect(stepX([0, 10, 20], 15, 300)).toBe(200); // between two watched columns, in proportion
    expect([niceStep(300, 6), niceStep(12, 6), niceStep(3, 10)]).toEqual([50, 2, 1]);
    const watched = Array.from({ length: 300 }, (_, i) => i);
    const ticks = stepTicks(watched, 600);
    expect(ticks[0].step).toBe(0);
    expect(ticks.map((t) => t.step)).toContain(250);
    for (let i = 1; i < ticks.length; i++) expect(ticks[i].x - ticks[i - 1].x).toBeGreaterThanOrEqual(36);
    expect(stepTicks([5], 100)).toEqual([{ step: 5, x: 50 }]);
    expect(stepTicks([], 100)).toEqual([]);
  });
});

describe('rows', () => {
  const tree = {
    id: ['', 'layer1', 'layer1.0', 'layer1.0.conv', 'fc'],
    label: ['ResNet', 'layer1', '0', 'conv', 'fc'],
    parent: [null, '', 'layer1', 'layer1.0', ''],
    depth: [0, 1, 2, 3, 1],
  };
  it('open as deep as fits', () => {
    expect([...openDepth(tree, 10)].sort()).toEqual(['', 'layer1', 'layer1.0']);
    expect([...openDepth(tree, 4)].sort()).toEqual(['', 'layer1']);
    expect([...openDepth(tree, 1)]).toEqual(['']); // the model's children always show
    const rows = visibleRows(tree, openDepth(tree, 10), new Map());
    expect(rows.map((r) => r.id)).toEqual(['', 'layer1', 'layer1.0', 'layer1.0.conv', 'fc']);
  });
});

describe('what the timeline says', () => {
  it('a cell: step, row, norm and change against the previous watched step', () => {
    expect(cellText({ step: 4, prevStep: 2, name: 'fc', v: -2, prev: -3 })).toBe('step 4 · fc · gradient norm 0.01 · ×10 against step 2');
    expect(cellText({ step: 0, prevStep: null, name: 'fc', v: 0, prev: NaN })).toBe('step 0 · fc · gradient norm 1 · the first watched step');
    expect(cellText({ step: 7, prevStep: 6, name: 'fc', v: Infinity, prev: 0 })).toBe('step 7 · fc · NaN/Inf in its gradient');
    expect(cellText({ step: 7, prevStep: 6, name: 'fc', v: NaN, prev: 0 })).toContain("not in this step's graph");
    expect(cellText({ step: 8, prevStep: 7, name: 'fc', v: 1, prev: -3 })).toContain('×1.0e4 against step 7');
  });

  it('a NaN made in the forward names the forward op and its module; a healed one is marked healed', () => {
    const f = { step: 137, watched: true, node: 'n64', name: 'LogSoftmaxBackward0', cause: 'saved `result` has 8 NaNs', expected: false };
    const o = { kind: 'born', where: 'forward', module: null, forward_node: 'n12', forward_op: 'MulBackward0', forward_module: 'h.1.mlp.c_fc', forward_cause: 'inf times zero (NaN)' };
    expect(firstText(f, o, 1)).toBe('Step 137: made in the forward by MulBackward0 (n12) in module h.1.mlp.c_fc: inf times zero (NaN); the gradient went non-finite at LogSoftmaxBackward0 (n64): saved `result` has 8 NaNs');
    expect(firstText(f, { ...o, forward_module: null }, 1)).toContain('MulBackward0 (n12) (no module recorded): inf times zero');
    expect(firstText(f, { ...o, where: 'backward' }, 1)).toBe('Step 137: born at LogSoftmaxBackward0 (n64): saved `result` has 8 NaNs');
    expect(firstText({ ...f, watched: false }, null, 10)).toContain('every=10');
    expect(firstText(f, { ...o, kind: 'healed', where: 'backward' }, 1)).toContain('(healed within the step)');
    const hd = { steps: [3, 5], count: 2, first: { step: 3, node: 'n2', name: 'MulBackward0', born_node: 'n1', born_name: 'SqrtBackward0', born_cause: 'saved `result` has 1 zero', module: 'enc' } };
    expect(healedText(hd)).toBe('Step 3 (healed): a NaN/Inf born at SqrtBackward0 (n1) in module enc: saved `result` has 1 zero; removed at MulBackward0 (n2) before any parameter gradient. 2 steps had a NaN/Inf that healed: 3, 5');
  });
});

describe('the timeline DOM reads itself', () => {
  function mount(extra = {}) {
    const raw = {
      format: 'autograd_widget.timeline/1', n_steps: 3, watched: new Int32Array([0, 1, 2]), loss: new Float32Array([1, 0.5, 0.2]),
      flags: new Uint8Array([1, 17, 1]), rows: { id: ['', 'a'], label: ['Net', 'a'], parent: [null, ''], depth: [0, 1], ops: [false, true], calls: [1, 5], fused: [false, false] },
      values: new Float32Array([-1, 0, 1, -2, -1, Infinity]), range: [-2, 1], first: null, moved: [], moved_rule: 'RULE', selected: 2, every: 1,
      healed: { steps: [1], count: 1, first: { step: 1, node: 'n2', name: 'MulBackward0', born_node: 'n1', born_name: 'SqrtBackward0', born_cause: 'zero', module: 'a' } },
      ...extra,
    };
    const values = { [TRAIT.TIMELINE]: raw, [TRAIT.WATCH_STEP]: 2 };
    const sent = [];
    const model = { get: (/** @type {string} */ k) => values[k], on() {}, off() {} };
    const tl = createTimeline(document, { model, send: (c) => sent.push(c), request: () => Promise.reject(new Error('x')), live: true, schedule: (cb) => cb() });
    document.body.append(tl.el);
    return { tl, sent };
  }

  it('shows a colour bar with its ticks, the calls of a recurrent module, and the healed birth', () => {
    const { tl, sent } = mount();
    const bar = tl.el.querySelector('.agw-tl-cbar');
    expect(bar?.getAttribute('aria-label')).toContain('gradient norm from 0.01');
    expect([...tl.el.querySelectorAll('.agw-tl-cbar-tick')].map((t) => t.textContent)).toEqual(['0.01', '0.1', '1', '10']);
    expect(tl.el.querySelector('.agw-tl-calls')?.textContent).toBe('×5');
    const healed = /** @type {HTMLButtonElement} */ (tl.el.querySelector('.agw-tl-healed'));
    expect(healed.hidden).toBe(false);
    expect(healed.textContent).toBe('Healed NaN/Inf (1)');
    healed.click();
    expect(tl.el.querySelector('.agw-tl-cause')?.textContent).toContain('Step 1 (healed)');
    expect(sent).toEqual([{ type: MSG.WATCH_STEP, step: 1, node: 'n1' }]);
    expect(tl.el.querySelector('.agw-tl-moved')?.textContent).toBe('RULE');
  });

  it('First NaN/Inf rings the forward op that made a NaN, and says it', () => {
    const first = { step: 2, watched: true, node: 'n1', name: 'PowBackward0', cause: 'saved `self` has NaNs', expected: false };
    const origin = { kind: 'born', where: 'forward', module: null, forward_node: 'n7', forward_op: 'LogBackward0', forward_module: 'act', forward_cause: 'log of 3 negative inputs (NaN)' };
    const { tl, sent } = mount({ first, origin });
    const btn = /** @type {HTMLButtonElement} */ (tl.el.querySelector('.agw-tl-first'));
    expect(btn.title).toContain('made in the forward by LogBackward0 (n7) in module act');
    btn.click();
    expect(sent).toEqual([{ type: MSG.WATCH_STEP, step: 2, node: 'n7' }]);
    expect(tl.el.querySelector('.agw-tl-cause')?.textContent).toContain('log of 3 negative inputs (NaN); the gradient went non-finite at PowBackward0 (n1)');
    expect(/** @type {HTMLButtonElement} */ (tl.el.querySelector('.agw-tl-healed')).hidden).toBe(false); // a healed birth besides
  });

  it('the keyboard moves a cell and reads it out; Enter shows that step', () => {
    const { tl, sent } = mount();
    const canvas = /** @type {HTMLCanvasElement} */ (tl.el.querySelector('.agw-tl-canvas'));
    expect(canvas.tabIndex).toBe(0);
    const key = (/** @type {string} */ k) => canvas.dispatchEvent(new KeyboardEvent('keydown', { key: k, bubbles: true }));
    key('ArrowDown');
    const read = () => tl.el.querySelector('.agw-tl-readout')?.textContent;
    expect(read()).toBe('step 2 · a · NaN/Inf in its gradient');
    key('ArrowLeft');
    expect(read()).toBe('step 1 · a · gradient norm 0.1 · ×10 against step 0');
    expect(tl.el.querySelector('.agw-tl-readout')?.getAttribute('aria-live')).toBe('polite');
    expect(canvas.getAttribute('aria-describedby')).toBe(tl.el.querySelector('.agw-tl-readout')?.id);
    key('Enter');
    expect(sent).toEqual([{ type: MSG.WATCH_STEP, step: 1 }]);
    expect(tl.state().focus).toEqual({ k: 1, r: 1 });
  });
});
