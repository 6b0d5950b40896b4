/**
 * Playback: the play / run / seek machine of one view. Step, Back, Run to node, Run to end,
 * Reset, Play and Pause send their commands; Play steps on a timer, Run to end asks for one
 * time-boxed chunk after another, First NaN/Inf seeks chunk by chunk until it finds one. No
 * DOM: the view passes `hooks` for what shows (the status line's refusal, the alert, the First
 * NaN/Inf button, the found edge).
 *
 * The machine's mode lives in the view's store (`mode`: 'idle' | 'play' | 'run' | 'seek'); the
 * stepping state (`state`) is read from it.
 *
 * Guarantees: nothing moves forward while a mode runs, nor after a failed step (refused with
 * the way out); Play stops at the end, at a failure, or when no new state comes back within
 * PLAY_STALL_MS of a step; a run stops when the kernel says it stopped (`running` false); Pause
 * always sends `pause`.
 */
import { asRecord } from './jsonsafe.js';
import { latestReply } from './latest.js';
import { MSG } from './protocol.js';
import { newStep } from './viewstate.js';

/** Chunk length asked of the kernel for "Run to end" (ms of stepping per message). */
export const RUN_CHUNK_MS = 100;
/** Play stops when no new state arrives this long after a step was sent. */
export const PLAY_STALL_MS = 15000;
/** Play's speed slider, steps per second. */
export const SPEED = Object.freeze({ min: 1, max: 30, initial: 4 });

/** @typedef {'idle' | 'play' | 'run' | 'seek'} Mode */

/**
 * @typedef {object} PlaybackHooks
 * @property {(what: string) => boolean} refuse after a failed step, say why `what` ("step",
 *   "play"...) can't go on; called only while idle after a failure; true: refused
 * @property {(text: string, kind: 'error' | 'warning' | 'info') => void} alert one message
 *   above the drawing
 * @property {() => void} paused Pause stopped a First NaN/Inf search (its progress goes)
 * @property {(busy: boolean) => void} seeking First NaN/Inf is asking (its button is disabled)
 * @property {(edgeId: string) => void} found the first NaN/Inf flows along this edge
 */

/**
 * @param {{
 *   store: import('./store.js').Store<Pick<import('./viewstate.js').ViewState, 'state' | 'mode'>>,
 *   send: (cmd: { type: string, [k: string]: unknown }) => void,
 *   request: import('./backend.js').Request,
 *   now: () => number,
 *   speed: () => number,
 *   hooks: PlaybackHooks,
 * }} ctx `speed`: Play's steps per second now
 */
export function createPlayback({ store, send, request, now, speed, hooks }) {
  /** @type {ReturnType<typeof setTimeout> | null} */
  let playTimer = null;
  let playSentAt = 0;
  let playSentSeq = -1;
  /** First NaN/Inf's requests (one search at a time: its button waits for the answer). */
  const nonfinite = latestReply(request);
  const mode = () => store.get().mode;
  const state = () => store.get().state;
  /** @param {Mode} m */
  const setMode = (m) => store.set({ mode: m });
  const clearPlayTimer = () => {
    if (playTimer !== null) clearTimeout(playTimer);
    playTimer = null;
  };
  // a new state keeps Play / Run to end going (or stops them)
  const stopFollowing = store.subscribe((next, prev) => {
    if (newStep(next, prev)) stateChanged();
  });

  function step() {
    if (mode() !== 'idle' || state().done || refuse('step')) return;
    send({ type: MSG.STEP });
  }
  function back() {
    if (mode() !== 'idle' || state().position <= 0) return;
    send({ type: MSG.BACK });
  }
  /** Run up to and including visible item `i` (a node, or every node of a box). @param {number} i */
  function runTo(i) {
    if (mode() !== 'idle' || i < 0 || refuse('run to a node')) return;
    send({ type: MSG.RUN_TO, node: i });
  }
  function runToEnd() {
    if (mode() !== 'idle' || state().done || refuse('run to the end')) return;
    setMode('run');
    send({ type: MSG.RUN, chunk_ms: RUN_CHUNK_MS });
  }
  function reset() {
    if (mode() !== 'idle') return;
    send({ type: MSG.RESET });
  }
  function play() {
    if (mode() !== 'idle' || state().done || refuse('play')) return;
    setMode('play');
    playTick();
  }
  function pause() {
    if (mode() === 'idle') return;
    if (mode() === 'seek') hooks.paused();
    setMode('idle');
    clearPlayTimer();
    send({ type: MSG.PAUSE });
  }
  function toggle() {
    if (mode() === 'idle') play();
    else pause();
  }
  /** Back to idle without a word to the kernel (it stopped already, or never answered). */
  function stop() {
    setMode('idle');
    clearPlayTimer();
  }
  /** @param {string} what */
  function refuse(what) {
    return !!state().error && mode() === 'idle' && hooks.refuse(what);
  }

  function playTick() {
    playTimer = null;
    if (mode() !== 'play') return;
    if (state().done || state().error) return stop();
    playSentAt = now();
    playSentSeq = state().seq;
    send({ type: MSG.STEP });
    // A step that produces no new state (rejected, kernel busy or gone) must not hang Play forever.
    playTimer = setTimeout(() => {
      if (mode() === 'play' && state().seq === playSentSeq) stop();
    }, PLAY_STALL_MS);
  }

  /** A new state arrived: keep Play / Run to end going (or stop them). */
  function stateChanged() {
    const s = state();
    if (mode() === 'play') {
      if (s.done || s.error) return stop();
      if (s.seq === playSentSeq) return; // not our step's answer yet
      clearPlayTimer();
      const interval = 1000 / speed();
      playTimer = setTimeout(playTick, Math.max(0, interval - (now() - playSentAt)));
    } else if (mode() === 'run') {
      if (s.done || s.error || !s.running) return stop();
      send({ type: MSG.RUN, chunk_ms: RUN_CHUNK_MS });
    }
  }

  /**
   * First NaN/Inf: the first edge whose gradient is not finite, running ahead to find it (one
   * time-boxed chunk per request, with progress; Pause stops), then where it is born and why, in
   * one sentence (Python reads the cause from the node's saved values and inputs).
   */
  function firstNonfinite() {
    if (mode() !== 'idle') return;
    const seek = !state().done && !state().error;
    if (seek) setMode('seek');
    hooks.seeking(true);
    /** One request; a search's progress asks again. @returns {Promise<unknown>} */
    const ask = () =>
      nonfinite.ask(seek ? { type: MSG.FIRST_NONFINITE, chunk_ms: RUN_CHUNK_MS } : { type: MSG.FIRST_NONFINITE }, {
        reply: answered,
        error: (message) => {
          if (seek && mode() === 'seek') stop();
          hooks.alert(`First NaN/Inf: ${message}`, 'warning');
        },
      });
    /** @param {unknown} reply the reply @returns {Promise<unknown> | undefined} the next ask, while searching */
    const answered = (reply) => {
      const data = reply && typeof reply === 'object' ? asRecord(reply) : null;
      if (seek && mode() !== 'seek') return; // paused: keep what was found so far
      if (data && data.searching) {
        hooks.alert(`Looking for the first NaN/Inf… step ${Number(data.position)} of ${Number(data.total)} (Pause stops)`, 'info');
        return ask();
      }
      if (seek) stop();
      if (!data || data.edge === null || data.edge === undefined || typeof data.id !== 'string') {
        hooks.alert(data?.message ? String(data.message) : 'no NaN/Inf gradient so far', 'warning');
        return;
      }
      hooks.alert(String(data.sentence || `The first NaN/Inf flows along ${data.src} → ${data.dst}.`), data.expected ? 'info' : 'warning');
      hooks.found(data.id);
    };
    ask().finally(() => hooks.seeking(false));
  }

  return {
    step,
    back,
    runTo,
    runToEnd,
    reset,
    play,
    pause,
    toggle,
    stop,
    stateChanged,
    firstNonfinite,
    /** The view closes: no timer fires, no answer is handled; a running mode is paused. */
    destroy() {
      stopFollowing();
      clearPlayTimer();
      nonfinite.drop();
      if (mode() !== 'idle') send({ type: MSG.PAUSE });
    },
  };
}
