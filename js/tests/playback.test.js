// @vitest-environment node
// @ts-check
// The play / run / seek machine (playback.js) without a DOM: a store, a fake kernel (the
// commands sent, the requests answered by the test) and fake timers.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PLAY_STALL_MS, RUN_CHUNK_MS, createPlayback } from '../src/playback.js';
import { createStore } from '../src/store.js';

/** A stepping state as decodeState gives it (only what playback reads). */
/**
 * A stepping state at `position`: only the fields playback reads (model.js's `State` has more).
 * @param {number} position @param {Partial<import('../src/model.js').State>} [extra]
 * @returns {import('../src/model.js').State}
 */
const at = (position, extra = {}) => /** @type {import('../src/model.js').State} */ ({ seq: position, position, done: false, error: null, running: false, ...extra });

function machine({ speed = 4, state = at(0) } = {}) {
  const store = createStore({ state, mode: /** @type {import('../src/playback.js').Mode} */ ('idle') });
  const sent = [];
  /** @type {{ msg: any, resolve: (v: any) => void, reject: (e: any) => void }[]} */
  const asked = [];
  const hooks = { refuse: /** @type {import('vitest').Mock<(what: string) => boolean>} */ (vi.fn(() => true)), alert: vi.fn(), paused: vi.fn(), seeking: vi.fn(), found: vi.fn() };
  const playback = createPlayback({
    store,
    send: (cmd) => sent.push(cmd),
    request: (msg) => new Promise((resolve, reject) => asked.push({ msg, resolve, reject })),
    now: () => Date.now(),
    speed: () => speed,
    hooks,
  });
  /** A new state from the kernel, as the view hands it on (playback follows the store). */
  const arrive = (s) => {
    store.set({ state: s });
  };
  return { store, sent, asked, hooks, playback, arrive, mode: () => store.get().mode, types: () => sent.map((c) => c.type) };
}

const flush = () => vi.advanceTimersByTimeAsync(0);

describe('playback', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('Step, Back, Reset and Run to node send their command when idle, nothing while a mode runs', () => {
    const m = machine({ state: at(2) });
    m.playback.step();
    m.playback.back();
    m.playback.runTo(3);
    m.playback.runTo(-1); // no target
    m.playback.reset();
    expect(m.sent).toEqual([{ type: 'step' }, { type: 'back' }, { type: 'run_to', node: 3 }, { type: 'reset' }]);
    m.store.set({ mode: 'play' });
    m.sent.length = 0;
    m.playback.step();
    m.playback.back();
    m.playback.reset();
    expect(m.sent).toEqual([]);
  });

  it('after a failed step, moving forward is refused with why; Back and Reset still go', () => {
    const m = machine({ state: at(3, { error: { node: 1, id: 'n1', message: 'boom' } }) });
    m.playback.step();
    m.playback.play();
    m.playback.runToEnd();
    m.playback.runTo(1);
    expect(m.hooks.refuse.mock.calls.map((c) => c[0])).toEqual(['step', 'play', 'run to the end', 'run to a node']);
    expect(m.mode()).toBe('idle');
    m.playback.back();
    m.playback.reset();
    expect(m.types()).toEqual(['back', 'reset']);
  });

  it('Play steps at the chosen speed, waits for each answer, and stops at the end', async () => {
    const m = machine({ speed: 4 });
    m.playback.play();
    expect(m.mode()).toBe('play');
    expect(m.types()).toEqual(['step']);
    m.arrive(at(1));
    await vi.advanceTimersByTimeAsync(249);
    expect(m.types()).toEqual(['step']); // 1000 / 4 ms between steps
    await vi.advanceTimersByTimeAsync(1);
    expect(m.types()).toEqual(['step', 'step']);
    m.arrive(at(2, { done: true }));
    expect(m.mode()).toBe('idle');
    await vi.advanceTimersByTimeAsync(1000);
    expect(m.types()).toEqual(['step', 'step']);
  });

  it('Play stops when no new state comes back within PLAY_STALL_MS', async () => {
    const m = machine();
    m.playback.play();
    await vi.advanceTimersByTimeAsync(PLAY_STALL_MS - 1);
    expect(m.mode()).toBe('play');
    await vi.advanceTimersByTimeAsync(1);
    expect(m.mode()).toBe('idle');
    expect(m.types()).toEqual(['step']); // stopped quietly: nothing more sent
  });

  it('Run to end asks chunk after chunk while the kernel runs, and stops when it stops', () => {
    const m = machine();
    m.playback.runToEnd();
    expect(m.mode()).toBe('run');
    expect(m.sent).toEqual([{ type: 'run', chunk_ms: RUN_CHUNK_MS }]);
    m.arrive(at(5, { running: true }));
    expect(m.types()).toEqual(['run', 'run']);
    m.arrive(at(7, { running: false }));
    expect(m.mode()).toBe('idle');
    expect(m.types()).toEqual(['run', 'run']);
  });

  it('Pause stops any mode and tells the kernel; toggle plays and pauses', () => {
    const m = machine();
    m.playback.toggle();
    expect(m.mode()).toBe('play');
    m.playback.toggle();
    expect(m.mode()).toBe('idle');
    expect(m.types()).toEqual(['step', 'pause']);
    expect(m.hooks.paused).not.toHaveBeenCalled(); // not a First NaN/Inf search
  });

  it('First NaN/Inf seeks chunk by chunk with progress, then says where it is born', async () => {
    const m = machine({ state: at(0, { total: 9 }) });
    m.playback.firstNonfinite();
    expect(m.mode()).toBe('seek');
    expect(m.hooks.seeking).toHaveBeenLastCalledWith(true);
    expect(m.asked[0].msg).toEqual({ type: 'first_nonfinite', chunk_ms: RUN_CHUNK_MS });
    m.asked[0].resolve({ edge: null, searching: true, position: 4, total: 9 });
    await flush();
    expect(m.hooks.alert).toHaveBeenLastCalledWith('Looking for the first NaN/Inf… step 4 of 9 (Pause stops)', 'info');
    expect(m.asked).toHaveLength(2);
    m.asked[1].resolve({ edge: 3, id: 'n2:0', sentence: 'The first NaN/Inf is born in SqrtBackward0.', expected: false });
    await flush();
    expect(m.mode()).toBe('idle');
    expect(m.hooks.alert).toHaveBeenLastCalledWith('The first NaN/Inf is born in SqrtBackward0.', 'warning');
    expect(m.hooks.found).toHaveBeenCalledWith('n2:0');
    expect(m.hooks.seeking).toHaveBeenLastCalledWith(false);
  });

  it('First NaN/Inf: Pause during the search keeps what was found so far and asks no more', async () => {
    const m = machine();
    m.playback.firstNonfinite();
    m.playback.pause();
    expect(m.hooks.paused).toHaveBeenCalledTimes(1);
    expect(m.types()).toEqual(['pause']);
    m.asked[0].resolve({ edge: null, searching: true, position: 2, total: 9 });
    await flush();
    expect(m.asked).toHaveLength(1);
    expect(m.hooks.alert).not.toHaveBeenCalled();
    expect(m.hooks.seeking).toHaveBeenLastCalledWith(false);
  });

  it('First NaN/Inf at the end asks once without searching; a refusal is said', async () => {
    const m = machine({ state: at(4, { done: true }) });
    m.playback.firstNonfinite();
    expect(m.mode()).toBe('idle');
    expect(m.asked[0].msg).toEqual({ type: 'first_nonfinite' });
    m.asked[0].resolve({ edge: null, message: 'no NaN/Inf gradient so far' });
    await flush();
    expect(m.hooks.alert).toHaveBeenLastCalledWith('no NaN/Inf gradient so far', 'warning');
    m.playback.firstNonfinite();
    m.asked[1].reject(new Error('no reply from the kernel'));
    await flush();
    expect(m.hooks.alert).toHaveBeenLastCalledWith('First NaN/Inf: no reply from the kernel', 'warning');
    expect(m.hooks.found).not.toHaveBeenCalled();
  });

  it('destroy: a running mode is paused, no timer fires, no answer is handled', async () => {
    const m = machine();
    m.playback.play();
    m.playback.destroy();
    expect(m.types()).toEqual(['step', 'pause']);
    await vi.advanceTimersByTimeAsync(PLAY_STALL_MS * 2);
    expect(m.types()).toEqual(['step', 'pause']);
    const s = machine();
    s.playback.firstNonfinite();
    s.playback.destroy();
    s.asked[0].resolve({ edge: 1, id: 'n0:0', sentence: 'x' });
    await flush();
    expect(s.hooks.found).not.toHaveBeenCalled();
  });
});
