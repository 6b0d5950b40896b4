/**
 * The walkthrough: the standalone page's step-through, played with no kernel (format
 * `WALKTHROUGH_FORMAT`, protocol.js). Not `aw.record`'s Recording: that one is an engine run the
 * live widget replays through the kernel; a walkthrough is what the page embeds
 * (Python: export/html.py `walkthrough()`).
 *
 * Python walked the widget's own protocol once: the `_graph` payload, the `_state` at step 0
 * and, per step, what changed (indices with old and new values) plus the scalars after the step,
 * the inspector's replies, the colour modes' replies (`modes`: memory with and without leaves,
 * the sensitivity probe; null for a replayed engine run) and what First NaN/Inf answers
 * (`first_nonfinite`). A `Player` walks those deltas forward and back; `walkthroughModel`
 * exposes the player as the same model interface the live view reads
 * (get/set/on/off/save_changes), and `walkthroughBackend` answers the view's commands and
 * requests from the walkthrough, and lists the requests it can answer (`answers`): the view
 * offers no control whose request would be refused. Nothing here computes an autograd fact:
 * every answer is one Python gave. `mountWalkthrough` draws a walkthrough into an element.
 */
import { asRecord } from './jsonsafe.js';
import { decodeGraph } from './model.js';
import { MSG, STATE_ARRAYS, STEP_SCALARS, TRAIT, WALKTHROUGH_FORMAT } from './protocol.js';
import { createTimeline } from './timeline.js';
import { createView } from './view.js';

/**
 * @typedef {import('./protocol.js').Walkthrough} Walkthrough
 * @typedef {import('./protocol.js').WalkState} WalkState
 * @typedef {import('./protocol.js').WalkStep} WalkStep
 * @typedef {import('./protocol.js').WalkScalars} WalkScalars
 * @typedef {import('./protocol.js').NumArray} NumArray
 * @typedef {import('./protocol.js').StateArray} StateArray
 * @typedef {import('./protocol.js').InspectReply} InspectReply
 * @typedef {import('./protocol.js').Traits} Traits
 */

/** @type {Record<string, new (buffer: ArrayBuffer) => NumArray>} */
const CTORS = {
  float32: Float32Array,
  float64: Float64Array,
  int32: Int32Array,
  int64: Float64Array,
  uint8: Uint8Array,
  int8: Int8Array,
  bool: Uint8Array,
  uint16: Uint16Array,
  int16: Int16Array,
  uint32: Uint32Array,
};
const ARRAYS = STATE_ARRAYS;

/**
 * Decode base64 `{dtype, bdata}` buffers (recursively) into typed arrays; everything else is
 * copied as it is (what it is, its reader says).
 * @param {unknown} value
 * @returns {unknown}
 */
export function decodeBuffers(value) {
  if (Array.isArray(value)) return value.map(decodeBuffers);
  if (value && typeof value === 'object') {
    const obj = asRecord(value);
    const keys = Object.keys(obj);
    if (keys.length === 2 && typeof obj.bdata === 'string' && typeof obj.dtype === 'string') {
      const bin = atob(obj.bdata);
      const bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      if (obj.dtype === 'int64') {
        const big = new BigInt64Array(bytes.buffer);
        return Float64Array.from(big, (v) => Number(v));
      }
      const Ctor = CTORS[obj.dtype] ?? Uint8Array;
      return new Ctor(bytes.buffer);
    }
    /** @type {Record<string, unknown>} */
    const out = {};
    for (const k of keys) out[k] = decodeBuffers(obj[k]);
    return out;
  }
  return value;
}

/**
 * What the page embeds, read as a walkthrough: its `format` checked (anything else throws);
 * the rest is the same version's export/html.py output, read as the typed `Walkthrough` (the
 * payloads inside it are decoded, checking each field, by their own readers).
 * @param {unknown} embedded
 * @returns {Walkthrough}
 */
function asWalkthrough(embedded) {
  const w = asRecord(embedded);
  if (w.format !== WALKTHROUGH_FORMAT) {
    throw new Error(`not an autograd_widget walkthrough (expected format ${WALKTHROUGH_FORMAT})`);
  }
  return /** @type {Walkthrough} */ (w);
}

/**
 * Steps through a walkthrough: the current position's node/edge arrays, small gradients' values
 * and scalars (status line, next node, waiting slots...).
 */
export class Player {
  /** @param {unknown} embedded what the page embeds (format WALKTHROUGH_FORMAT) */
  constructor(embedded) {
    const walkthrough = asWalkthrough(embedded);
    /** The `_graph` payload, its buffers decoded. */
    this.graph = asRecord(decodeBuffers(walkthrough.graph));
    /** The graph as the view reads it (ids, names...). */
    this.decoded = decodeGraph(this.graph);
    /** The `_state` at step 0, its buffers decoded. */
    this.initial = /** @type {WalkState} */ (decodeBuffers(walkthrough.state));
    this.steps = /** @type {WalkStep[]} */ (decodeBuffers(walkthrough.steps) ?? []);
    this.inspectData = walkthrough.inspect ?? { nodes: {}, edges: {} };
    /** The colour modes' replies (`{ memory: { false, true }, probe }`), or null: not walked. */
    this.modes = walkthrough.modes ? /** @type {NonNullable<Walkthrough['modes']>} */ (decodeBuffers(walkthrough.modes)) : null;
    /** First NaN/Inf: `{ step, reply, seek, select }` (see walkthroughNonfinite), or null. */
    this.nonfinite = walkthrough.first_nonfinite ?? null;
    this.title = String(walkthrough.title ?? 'autograd_widget');
    this.description = walkthrough.description ? String(walkthrough.description) : '';
    this.height = Number(walkthrough.height ?? 600);
    /** The step the page opens at (`save_html(start=...)`); Reset still goes back to 0. */
    this.start = Math.max(0, Math.min(Math.trunc(Number(walkthrough.start ?? 0)) || 0, this.steps.length));
    /** Number of walked deltas applied. */
    this.k = 0;
    /** The state arrays at the current position. */
    this.arrays = /** @type {Record<StateArray, NumArray>} */ ({});
    /** The small gradients' values shown at the current position (`_state.edge_values`). */
    /** @type {Record<string, unknown>} */
    this.values = {};
    this.seq = 0;
    this.reset();
    while (this.k < this.start && this.forward());
  }

  reset() {
    this.k = 0;
    this.arrays = /** @type {Record<StateArray, NumArray>} */ ({});
    for (const name of ARRAYS) this.arrays[name] = this.initial[name].slice();
    this.values = { ...(this.initial.edge_values ?? {}) };
    this.seq = 0;
  }

  get atEnd() {
    return this.k >= this.steps.length;
  }

  /** Apply the next walked delta. @returns {boolean} whether anything moved */
  forward() {
    if (this.atEnd) return false;
    const d = this.steps[this.k];
    for (const name of ARRAYS) {
      const a = d[name];
      if (!a) continue;
      const arr = this.arrays[name];
      for (let i = 0; i < a.index.length; i++) arr[a.index[i]] = a.new[i];
    }
    const ev = d.edge_values;
    if (ev) {
      for (const key of Object.keys(ev.unset ?? {})) delete this.values[key];
      Object.assign(this.values, ev.set ?? {});
    }
    this.k += 1;
    return true;
  }

  /** Undo the last applied delta. @returns {boolean} whether anything moved */
  backward() {
    if (this.k === 0) return false;
    const d = this.steps[this.k - 1];
    for (const name of ARRAYS) {
      const a = d[name];
      if (!a) continue;
      const arr = this.arrays[name];
      for (let i = 0; i < a.index.length; i++) arr[a.index[i]] = a.old[i];
    }
    const ev = d.edge_values;
    if (ev) {
      for (const key of Object.keys(ev.set ?? {})) delete this.values[key];
      Object.assign(this.values, ev.was ?? {}, ev.unset ?? {});
    }
    this.k -= 1;
    return true;
  }

  /**
   * Scalars (status, next, waiting, error...) at the current position.
   * @returns {WalkScalars}
   */
  scalars() {
    if (this.k === 0) {
      const s = this.initial;
      return Object.fromEntries(STEP_SCALARS.map((k) => [k, s[k]]));
    }
    return this.steps[this.k - 1].scalars;
  }

  /**
   * The `_state` payload at the current position (what the live widget would have synced).
   * @returns {WalkScalars & Record<StateArray, NumArray> & { seq: number, running: boolean, notice: unknown, edge_values: Record<string, unknown> }}
   */
  state() {
    this.seq += 1;
    return {
      ...this.scalars(),
      seq: this.seq,
      running: false,
      notice: this.initial.notice ?? null,
      node_state: this.arrays.node_state.slice(),
      progress: this.arrays.progress.slice(),
      edge_norm: this.arrays.edge_norm.slice(),
      edge_flag: this.arrays.edge_flag.slice(),
      edge_values: { ...this.values },
    };
  }

  /** @param {number} item a visible node index @returns {boolean} */
  hasRun(item) {
    const st = this.arrays.node_state[item];
    return st === 2 || st === 4;
  }

  /** @param {number} edge @returns {boolean} */
  hasFlowed(edge) {
    return this.arrays.edge_flag[edge] !== 0;
  }

  /**
   * Inspector data as walked at the end of the run, limited to what has happened by now:
   * gradients of edges that have not flowed yet are hidden.
   * @param {{ node?: number, edge?: number, id?: string }} target
   * @returns {InspectReply | null}
   */
  inspect(target) {
    if (target.edge !== undefined) {
      const data = this.inspectData.edges?.[String(target.edge)];
      if (!data) return null;
      return this.hasFlowed(target.edge) ? data : { ...data, summary: null };
    }
    let item = target.node;
    if (item === undefined && target.id !== undefined) {
      item = this.decoded.indexOf.get(target.id) ?? -1;
    }
    if (item === undefined || item < 0) return null;
    const data = this.inspectData.nodes?.[String(item)];
    if (!data || data.kind === 'group') return data ?? null;
    /** @type {NonNullable<InspectReply['outgoing']>} */
    const outgoing = {};
    for (const [eid, summary] of Object.entries(data.outgoing ?? {})) {
      const e = this.decoded.edgeIndexOf.get(eid) ?? -1;
      outgoing[eid] = e >= 0 && this.hasFlowed(e) ? summary : null;
    }
    const ran = this.hasRun(item);
    const err = this.scalars().error;
    return {
      ...data,
      outgoing,
      incoming: ran ? data.incoming : (data.incoming ?? []).map(() => null),
      error: err && err.node === item ? err.message : data.error,
    };
  }
}

/**
 * The walked memory report (`exclude` leaves or not), or null when not walked.
 * @param {Player} player @param {boolean} exclude
 */
function walkedMemory(player, exclude) {
  return player.modes?.memory?.[exclude ? 'true' : 'false'] ?? null;
}

/**
 * A walked reply that is a refusal (`{ error }`) becomes the rejection the kernel would give.
 * @param {unknown} data @param {string} what
 * @returns {Promise<unknown>}
 */
function answer(data, what) {
  if (data === null || data === undefined) return Promise.reject(new Error(`${what} was not recorded in this page`));
  const refusal = asRecord(data);
  if (typeof refusal.error === 'string' && Object.keys(refusal).length === 1) return Promise.reject(new Error(refusal.error));
  return Promise.resolve(data);
}

/**
 * First NaN/Inf over a walkthrough, as the live widget answers it. Python walked `step` (the
 * position after which the first NaN/Inf has flowed; null: none does), `reply` (the reply from
 * there on; with none, the reply at the end) and `seek` (with none: what a search from an earlier
 * step answers, e.g. "stopped looking: X failed"; null: no search, the walkthrough was cut short).
 * A search (`chunk_ms`) moves the player to where the live search stops: `step`, else the end.
 * Before `step`, a plain ask searches too: the walkthrough holds no other answer.
 * @param {Player} player
 * @param {{ type?: string, chunk_ms?: unknown }} msg
 * @returns {{ data: unknown, moved: boolean, select: string | null }}
 */
export function walkthroughNonfinite(player, msg) {
  const f = player.nonfinite;
  let moved = false;
  if (!f) return { data: null, moved, select: null }; // not walked: answered "not recorded"
  if (f.step !== null && f.step !== undefined) {
    while (player.k < Number(f.step) && player.forward()) moved = true;
    return { data: f.reply, moved, select: f.select ?? null };
  }
  if (msg.chunk_ms !== undefined && f.seek) {
    while (player.forward()) moved = true;
    return { data: f.seek, moved, select: null };
  }
  return { data: f.reply, moved, select: null };
}

/**
 * A model the view can read, backed by a player.
 * @param {Player} player
 */
export function walkthroughModel(player) {
  /** @type {Map<string, Set<Function>>} */
  const listeners = new Map();
  /** @type {Partial<Traits>} */
  const traits = {
    [TRAIT.GRAPH]: player.graph,
    [TRAIT.STATE]: player.state(),
    [TRAIT.SELECTED]: null,
    [TRAIT.SELECTED_EDGE]: null,
    [TRAIT.HEIGHT]: player.height,
    [TRAIT.SHOW_PLUMBING]: player.graph.show_plumbing === true,
  };
  /** @param {string} name */
  const emit = (name) => {
    for (const cb of listeners.get(`change:${name}`) ?? []) cb();
  };
  return {
    /**
     * A trait's value; undefined for a trait the page does not hold (protocol.js `Traits`).
     * @template {keyof Traits} K @param {K} name @returns {Traits[K]}
     */
    get(name) {
      return /** @type {Traits[K]} */ (traits[name]);
    },
    /** @template {keyof Traits} K @param {K} name @param {Traits[K]} value */
    set(name, value) {
      if (name === TRAIT.GRAPH || name === TRAIT.STATE) return; // walked, read-only
      traits[name] = value;
      emit(name);
    },
    save_changes() {},
    /** @param {string} ev @param {Function} cb */
    on(ev, cb) {
      if (!listeners.has(ev)) listeners.set(ev, new Set());
      listeners.get(ev)?.add(cb);
    },
    /** @param {string} ev @param {Function} cb */
    off(ev, cb) {
      listeners.get(ev)?.delete(cb);
    },
    send() {},
    /** Publish the player's position as a new `_state`. */
    refresh() {
      traits[TRAIT.STATE] = player.state();
      emit(TRAIT.STATE);
    },
  };
}

/**
 * The view's backend over a walkthrough: commands move the player, requests read the walkthrough.
 * @param {Player} player
 * @param {ReturnType<typeof walkthroughModel>} model
 * @returns {import('./backend.js').Backend}
 */
export function walkthroughBackend(player, model) {
  /** @type {Set<(m: string) => void>} */
  const warned = new Set();
  const warn = (/** @type {string} */ m) => {
    for (const cb of warned) cb(m);
  };
  /** @param {import('./protocol.js').Message} cmd */
  function command(cmd) {
    switch (cmd.type) {
      case MSG.STEP:
        if (!player.forward()) warn('already at the end of the recorded run');
        break;
      case MSG.BACK:
        if (!player.backward()) warn('already at the start: nothing to undo');
        break;
      case MSG.RESET:
        player.reset();
        break;
      case MSG.RUN:
        while (player.forward());
        break;
      case MSG.RUN_TO: {
        const target = Number(cmd.node);
        while (!player.atEnd && !(player.hasRun(target) && !player.scalars().error)) {
          player.forward();
        }
        break;
      }
      case MSG.PAUSE:
        break;
      case MSG.SELECT:
        if (typeof cmd.id === 'string') model.set(TRAIT.SELECTED, cmd.id);
        return;
      default:
        warn(`${cmd.type} needs the live widget (this is a recording)`);
        return;
    }
    model.refresh();
  }
  /** The requests this walkthrough can answer (the view hides the controls of the others). */
  /** @type {Set<string>} */
  const answers = new Set([MSG.INSPECT, MSG.SEARCH]);
  if (player.modes?.memory) answers.add(MSG.MEMORY);
  if (player.modes?.probe) answers.add(MSG.PROBE);
  if (player.nonfinite) answers.add(MSG.FIRST_NONFINITE);
  return {
    live: false,
    answers,
    command,
    inspect(target) {
      return Promise.resolve(player.inspect(target));
    },
    request(msg) {
      if (msg.type === MSG.INSPECT) return Promise.resolve(player.inspect(/** @type {{ node?: number, edge?: number, id?: string }} */ (msg)));
      if (msg.type === MSG.SEARCH) {
        const q = String(msg.query ?? '').trim().toLowerCase();
        const g = player.decoded;
        const matches = [];
        for (let i = 0; q && i < g.n; i++) {
          const fields = [g.ids[i], g.names[i], g.labels[i], g.modules[i] ?? ''];
          if (fields.some((f) => String(f).toLowerCase().includes(q))) {
            matches.push({ id: g.ids[i], name: g.names[i], label: g.labels[i], module: g.modules[i], leaf_name: null, item: i });
          }
        }
        return Promise.resolve({ matches: matches.slice(0, 50) });
      }
      if (msg.type === MSG.MEMORY && answers.has(MSG.MEMORY)) return answer(walkedMemory(player, msg.exclude_leaves === true), 'memory');
      if (msg.type === MSG.PROBE && answers.has(MSG.PROBE)) return answer(player.modes?.probe, 'sensitivity');
      if (msg.type === MSG.FIRST_NONFINITE && answers.has(MSG.FIRST_NONFINITE)) {
        const { data, moved, select } = walkthroughNonfinite(player, msg);
        if (moved) model.refresh();
        const edge = asRecord(data).id;
        if (select !== null && typeof edge === 'string') {
          // what the live handler does: select the node where it is born and the edge
          model.set(TRAIT.SELECTED, select);
          model.set(TRAIT.SELECTED_EDGE, edge);
        }
        return answer(data, 'First NaN/Inf');
      }
      return Promise.reject(new Error(`${msg.type} needs the live widget (this is a recording)`));
    },
    onWarning(cb) {
      warned.add(cb);
      return () => warned.delete(cb);
    },
    dispose() {
      warned.clear();
    },
  };
}

/**
 * Draw a walkthrough into `el`: the same view as the live widget, played from the walkthrough.
 * With `fill` (the standalone page), the widget takes `el`'s height (the page sizes `el` to the
 * window) instead of the walked pixel height, takes the keyboard focus, and keys pressed on
 * the page outside the controls (e.g. `?` after a click on the header) reach it.
 * @param {HTMLElement} el
 * @param {unknown} walkthrough what the page embeds (format WALKTHROUGH_FORMAT)
 * @param {{ fill?: boolean }} [opts]
 * @returns {() => void} cleanup
 */
export function mountWalkthrough(el, walkthrough, opts = {}) {
  const player = new Player(walkthrough); // throws unless it is a walkthrough
  return mount(el, player, opts, true, asWalkthrough(walkthrough)).cleanup;
}

/**
 * Two walkthroughs side by side, stepped together (`RecordingPair.save_html`, the standalone page
 * of `aw.side_by_side`): a move in either (Step, Back, Run, Reset, Run to node, First NaN/Inf)
 * brings the other to the same number of steps, as the live pair does in Python
 * (autograd_widget/pair.py): the other side stops early at a step of its own that fails.
 * @param {[HTMLElement, HTMLElement]} els
 * @param {[unknown, unknown]} walkthroughs
 * @param {{ fill?: boolean }} [opts]
 * @returns {() => void} cleanup
 */
export function mountWalkthroughPair(els, walkthroughs, opts = {}) {
  const sides = [0, 1].map((i) => mount(els[i], new Player(walkthroughs[i]), opts, i === 0));
  let moving = false;
  for (const [src, dst] of [[sides[0], sides[1]], [sides[1], sides[0]]]) {
    src.onMove(() => {
      if (moving) return;
      moving = true;
      try {
        follow(src.player, dst.player);
        dst.model.refresh();
      } finally {
        moving = false;
      }
    });
  }
  follow(sides[0].player, sides[1].player);
  sides[1].model.refresh();
  return () => sides.forEach((s) => s.cleanup());
}

/**
 * Bring `dst` to `src`'s position (steps done, a failed step not counted), within `dst`'s own
 * steps: undo a failed step first, then step back or forward, stopping at a step that fails.
 * @param {Player} src @param {Player} dst
 */
export function follow(src, dst) {
  const pos = Math.min(Number(src.scalars().position), Number(dst.scalars().total));
  if (dst.scalars().error) dst.backward();
  while (Number(dst.scalars().position) > pos && dst.backward());
  while (Number(dst.scalars().position) < pos && dst.forward()) {
    if (dst.scalars().error) break;
  }
}

/**
 * One walkthrough view in `el`; `onMove(cb)` calls `cb` after each move of its player.
 * @param {HTMLElement} el @param {Player} player @param {{ fill?: boolean }} opts
 * @param {boolean} titled whether the page takes this walkthrough's title
 * @param {Walkthrough} [walkthrough] what the page embeds (a watch's page carries its timeline)
 */
function mount(el, player, opts, titled, walkthrough) {
  const model = walkthroughModel(player);
  /** @type {Set<() => void>} */
  const moved = new Set();
  const refresh = model.refresh;
  model.refresh = () => {
    refresh();
    for (const cb of moved) cb();
  };
  const backend = walkthroughBackend(player, model);
  const doc = el.ownerDocument;
  if (titled && doc && player.title) doc.title = player.title;
  // a watch's page (aw.explore(watch)): its timeline above the one step whose graph it holds
  const timeline = walkthrough?.timeline && doc ? mountPageTimeline(doc, el, walkthrough) : null;
  const destroy = createView({ model, el, backend });
  const root = /** @type {HTMLElement | null} */ (el.querySelector('.agw-root'));
  /** @param {KeyboardEvent} ev */
  const forward = (ev) => {
    const t = /** @type {HTMLElement | null} */ (ev.target);
    if (!root || (t && t !== doc.body && t !== doc.documentElement)) return;
    const KE = doc.defaultView?.KeyboardEvent ?? KeyboardEvent;
    const copy = new KE('keydown', { key: ev.key, code: ev.code, shiftKey: ev.shiftKey, altKey: ev.altKey, ctrlKey: ev.ctrlKey, metaKey: ev.metaKey, bubbles: true, cancelable: true });
    root.focus({ preventScroll: true });
    if (!root.dispatchEvent(copy)) ev.preventDefault();
  };
  if (opts.fill && root) {
    root.style.height = '100%';
    if (titled) {
      root.focus({ preventScroll: true });
      doc.addEventListener('keydown', forward);
    }
  }
  return {
    player,
    model,
    /** @param {() => void} cb */
    onMove(cb) {
      moved.add(cb);
    },
    cleanup() {
      doc.removeEventListener('keydown', forward);
      moved.clear();
      timeline?.destroy();
      destroy();
      backend.dispose();
    },
  };
}

/**
 * The timeline of a watch's page, before `el` (the page holds one step's graph: the timeline
 * shows every step, its cursor stays on that one).
 * @param {Document} doc @param {HTMLElement} el @param {Walkthrough} walkthrough
 */
function mountPageTimeline(doc, el, walkthrough) {
  const data = decodeBuffers(walkthrough.timeline);
  const step = typeof walkthrough.watch_step === 'number' && Number.isInteger(walkthrough.watch_step) ? walkthrough.watch_step : null;
  const model = {
    get: (/** @type {string} */ k) => (k === TRAIT.TIMELINE ? data : k === TRAIT.WATCH_STEP ? step : undefined),
    on() {},
    off() {},
  };
  const tl = createTimeline(doc, { model, send: () => {}, request: () => Promise.reject(new Error('no kernel: this page holds one step')), live: false });
  (el.parentNode ?? el).insertBefore(tl.el, el.parentNode ? el : null);
  return tl;
}
