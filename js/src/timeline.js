/**
 * The timeline of a watched training run (`aw.explore(watch)`), drawn above the graph: steps
 * across, the model's modules down (each expandable to its sub-modules and its own ops), every
 * cell coloured by the log10 gradient norm Python computed (view/timeline.py); the loss curve
 * above; a step cursor with Play; "First NaN/Inf" (the step and the birth node with its cause);
 * the modules whose norm moved the most and stand out (Python's rule, said in the list's help).
 * The graph below is the selected step's. A colour bar says which colour is which norm, a step
 * axis runs under the grid, and every cell reads out (step, row, norm, change against the
 * previous watched step) on hover and, by keyboard (arrows, Enter), in a live region that
 * screen readers announce. The tree opens as deep as fits (timelinerows.js).
 *
 * Draws only: every number, range and cause comes from Python; a cursor move sends
 * `watch_step` (Python shows that step's graph below and answers with the synced `watch_step`
 * trait), expanding a module asks `timeline_rows` once.
 *
 * Guarantees: a malformed payload draws an empty timeline, never throws; columns are binned to
 * pixels (a 10,000-step run paints one ImageData, each pixel the largest value of its steps, a
 * non-finite one wins); Play stops at the last watched step or on Pause.
 */
import { toTyped } from './buffers.js';
import { asRecord } from './jsonsafe.js';
import { domHelpers } from './dom.js';
import { formatNumber } from './format.js';
import { latestReply } from './latest.js';
import { MSG, TRAIT } from './protocol.js';
import { ALARM_COLOR } from './style.js';
import { stepTicks } from './timelineaxis.js';
import { ZERO_COLOR, cellColor, colorbarTicks, rampCss } from './timelinecolorbar.js';
import { binRow, paintTimeline } from './timelinepaint.js';
import { openDepth, visibleRows } from './timelinerows.js';
import { cellText, firstText, healedText } from './timelinetext.js';

export { binRow, cellColor };

/** Row height (CSS px) of the heat map. */
export const ROW_PX = 14;
/** Height (CSS px) of the loss curve. */
export const LOSS_PX = 56;
/** Height (CSS px) of the step axis under the grid. */
export const AXIS_PX = 18;
/** The tree opens as deep as fits this many rows. */
export const FIT_ROWS = 24;
/** Play's interval between two watched steps (ms). */
export const PLAY_MS = 350;
/** Step flags (`flags`, one byte per step; view/timeline.py). */
export const FLAG = Object.freeze({ WATCHED: 1, NONFINITE: 2, EXPECTED: 4, FAILED: 8, HEALED: 16 });

/**
 * @typedef {object} Rows
 * @property {string[]} id module paths ('' the model) or node ids (ops)
 * @property {string[]} label
 * @property {(string | null)[]} parent
 * @property {number[]} depth
 * @property {boolean[]} ops a module with ops of its own (expandable to them)
 * @property {number[]} calls times the module runs per step (a cell through time: > 1)
 * @property {boolean[]} fused its own ops hold a fused recurrent node (nn.LSTM's)
 *
 * @typedef {object} First
 * @property {number} step
 * @property {boolean} watched
 * @property {string | null} node
 * @property {string | null} name
 * @property {string | null} cause
 * @property {boolean} expected
 *
 * @typedef {object} Origin what the first NaN/Inf is (view/timeline.py `origin`)
 * @property {string | null} kind 'born', 'propagated', 'healed'
 * @property {string | null} where 'forward' (made by a forward op), 'backward'
 * @property {string | null} module the node's module
 * @property {string | null} forward_node
 * @property {string | null} forward_op
 * @property {string | null} forward_module
 * @property {string | null} forward_cause
 *
 * @typedef {object} HealedFirst
 * @property {number} step
 * @property {string | null} node where it was removed
 * @property {string | null} name
 * @property {string | null} born_node
 * @property {string | null} born_name
 * @property {string | null} born_cause
 * @property {string | null} module the birth node's module
 *
 * @typedef {{ steps: number[], count: number, first: HealedFirst }} Healed
 *
 * @typedef {{ module: string, factor: number, low_step: number, high_step: number }} Moved
 *
 * @typedef {object} Timeline the decoded `_timeline` trait
 * @property {number} nSteps every step (watched or not)
 * @property {Int32Array} watched the watched step numbers
 * @property {Float32Array} loss per step
 * @property {Uint8Array} flags per step
 * @property {Rows} rows
 * @property {Float32Array} values rows x watched, log10 norms (NaN none, +inf non-finite, -inf zero)
 * @property {[number, number]} range
 * @property {First | null} first
 * @property {Origin | null} origin
 * @property {Healed | null} healed
 * @property {Moved[]} moved
 * @property {string} movedRule the moved list's rule, in words (Python's)
 * @property {number | null} selected
 * @property {number} every one step in `every` is watched
 */

/** @param {unknown} v @returns {string[]} */
const strings = (v) => (Array.isArray(v) ? v.map((s) => String(s ?? '')) : []);

/**
 * Float32 values sent as base64 (a reply carries JSON only) or as a buffer, `length` of them.
 * @param {unknown} v @param {number} length
 * @returns {Float32Array}
 * @example Array.from(float32s(btoa(String.fromCharCode(0, 0, 128, 63)), 1)) // [1]
 */
export function float32s(v, length) {
  if (typeof v !== 'string') return toTyped(v, Float32Array, { length });
  let bin = '';
  try {
    bin = atob(v);
  } catch {
    bin = '';
  }
  const bytes = new Uint8Array(bin.length - (bin.length % 4));
  for (let i = 0; i < bytes.length; i++) bytes[i] = bin.charCodeAt(i);
  return toTyped(new Float32Array(bytes.buffer), Float32Array, { length });
}

/** @param {unknown} v @returns {v is number} */
const isInt = (v) => Number.isInteger(v);

/**
 * The `_timeline` trait (protocol.js `TimelinePayload`, or `{}` when not a watch), validated:
 * every field is read from `unknown` and checked; null when it is empty (not a watch).
 * @param {unknown} input
 * @returns {Timeline | null}
 * @example decodeTimeline({}) // null
 */
export function decodeTimeline(input) {
  const raw = asRecord(input);
  if (!raw.format) return null;
  const nSteps = isInt(raw.n_steps) && raw.n_steps >= 0 ? raw.n_steps : 0;
  const watched = toTyped(raw.watched, Int32Array);
  const r = asRecord(raw.rows);
  const id = strings(r.id);
  const n = id.length;
  /** @template T @param {unknown} v @param {(x: unknown) => T} f @returns {T[]} */
  const pick = (v, f) => Array.from({ length: n }, (_, i) => f(Array.isArray(v) ? v[i] : undefined));
  const rows = {
    id,
    label: pick(r.label, (x) => String(x ?? '')),
    parent: pick(r.parent, (x) => (typeof x === 'string' ? x : null)),
    depth: pick(r.depth, (x) => (isInt(x) && x >= 0 ? x : 0)),
    ops: pick(r.ops, (x) => x === true),
    calls: pick(r.calls, (x) => (isInt(x) && x > 0 ? x : 1)),
    fused: pick(r.fused, (x) => x === true),
  };
  const range = Array.isArray(raw.range) && raw.range.length === 2 && raw.range.every(Number.isFinite) ? /** @type {[number, number]} */ ([raw.range[0], raw.range[1]]) : /** @type {[number, number]} */ ([0, 1]);
  const f = asRecord(raw.first);
  const str = (/** @type {unknown} */ v) => (typeof v === 'string' ? v : null);
  /** @param {Record<string, unknown>} o @param {string[]} keys */
  const strs = (o, keys) => Object.fromEntries(keys.map((k) => [k, str(o[k])]));
  const o = raw.origin && typeof raw.origin === 'object' ? asRecord(raw.origin) : null;
  const hd = asRecord(raw.healed);
  const hdSteps = Array.isArray(hd.steps) ? hd.steps : null;
  const hdFirst = asRecord(hd.first);
  return {
    nSteps,
    watched,
    loss: toTyped(raw.loss, Float32Array, { length: nSteps }),
    flags: toTyped(raw.flags, Uint8Array, { length: nSteps }),
    rows,
    values: toTyped(raw.values, Float32Array, { length: n * watched.length }),
    range,
    first: isInt(f.step) ? { step: f.step, watched: f.watched === true, node: str(f.node), name: str(f.name), cause: str(f.cause), expected: f.expected === true } : null,
    origin: o ? /** @type {Origin} */ (strs(o, ['kind', 'where', 'module', 'forward_node', 'forward_op', 'forward_module', 'forward_cause'])) : null,
    healed: hdSteps && isInt(hdFirst.step)
      ? {
          steps: hdSteps.filter(isInt),
          count: isInt(hd.count) ? hd.count : hdSteps.length,
          first: { step: hdFirst.step, .../** @type {Omit<HealedFirst, 'step'>} */ (strs(hdFirst, ['node', 'name', 'born_node', 'born_name', 'born_cause', 'module'])) },
        }
      : null,
    movedRule: typeof raw.moved_rule === 'string' ? raw.moved_rule : '',
    // the records as Python sent them, kept when their two read fields hold (view/timeline.py `moved`)
    moved: Array.isArray(raw.moved) ? /** @type {Moved[]} */ (raw.moved.filter((m) => typeof asRecord(m).module === 'string' && Number.isFinite(asRecord(m).factor))) : [],
    selected: isInt(raw.selected) ? raw.selected : null,
    every: isInt(raw.every) && raw.every > 0 ? raw.every : 1,
  };
}

/**
 * The watched step nearest to fraction `t` (0..1) of the timeline's width.
 * @param {Int32Array} watched @param {number} t
 * @returns {number | null}
 */
export function stepAt(watched, t) {
  if (!watched.length) return null;
  const k = Math.max(0, Math.min(watched.length - 1, Math.floor(t * watched.length)));
  return watched[k];
}

/**
 * The traits the timeline reads (`_timeline`, `watch_step`), read as `unknown` and checked: the
 * widget's model, or the one-step model a standalone page builds (walkthrough.js).
 * @typedef {{ get(name: string): unknown, on(ev: string, cb: Function): void, off(ev: string, cb: Function): void }} TimelineModel
 *
 * What the painted canvas carries for tests and tools (`canvas.agwTimeline`, see `paint`).
 * @typedef {{ width: number, height: number, rows: string[], top: number, rowPx: number, axisTop: number, ticks: ReturnType<typeof stepTicks>, watched: number[], selected: number | null, cursorX: number | null }} TimelineProbe
 */

/**
 * The timeline's DOM: mount `el` above the graph view.
 * @param {Document} doc
 * @param {{
 *   model: TimelineModel,
 *   send: (cmd: { type: string, [k: string]: unknown }) => void,
 *   request: (msg: { type: string, [k: string]: unknown }) => Promise<unknown>,
 *   live: boolean,
 *   schedule?: (cb: () => void) => void,
 * }} ctx `live`: a kernel answers (a standalone page only shows the steps it holds)
 * @returns {{ el: HTMLElement, destroy: () => void, paint: () => void, select: (step: number, node?: string | null) => void, state: () => { expanded: string[], selected: number | null, playing: boolean, focus: { k: number, r: number } | null } }}
 */
export function createTimeline(doc, ctx) {
  const { h, button } = domHelpers(doc);
  const win = doc.defaultView ?? globalThis;
  const schedule = ctx.schedule ?? ((/** @type {() => void} */ cb) => (typeof win.requestAnimationFrame === 'function' ? win.requestAnimationFrame(cb) : cb()));
  let data = decodeTimeline(ctx.model.get(TRAIT.TIMELINE));
  /** @type {number | null} */
  /** The watched step whose graph is shown (`watch_step`), null when none. */
  const heldStep = () => {
    const v = ctx.model.get(TRAIT.WATCH_STEP);
    return typeof v === 'number' ? v : null;
  };
  let selected = heldStep() ?? data?.selected ?? null;
  /** Modules open (their children shown): as deep as fits. */
  let expanded = data ? openDepth(data.rows, FIT_ROWS) : new Set(['']);
  /** Op rows per module, once asked. @type {Map<string, import('./timelinerows.js').OpRows>} */
  const ops = new Map();
  /** The keyboard's cell (column, row). @type {{ k: number, r: number } | null} */
  let focus = null;
  /** @type {ReturnType<typeof setInterval> | null} */
  let timer = null;
  let destroyed = false;
  const rowsReq = latestReply(ctx.request);

  const play = button('▶ Play', 'Play: move the cursor through the watched steps', 'agw-button agw-tl-play');
  const first = button('First NaN/Inf', 'Jump to the first step whose gradients hold a NaN or an Inf, and to the node where it was born', 'agw-button agw-tl-first');
  const healedBtn = button('Healed NaN/Inf', 'A NaN/Inf born and healed within a step (every parameter gradient finite): show where', 'agw-button agw-tl-healed');
  const stepText = h('span', { class: 'agw-tl-step', 'aria-live': 'polite' });
  const cause = h('div', { class: 'agw-tl-cause', role: 'status' });
  const readout = h('div', { class: 'agw-tl-readout', role: 'status', 'aria-live': 'polite', style: 'min-height:1.2em;font-size:12px;font-variant-numeric:tabular-nums' });
  const moved = h('div', { class: 'agw-tl-moved' });
  const notes = h('div', { class: 'agw-tl-notes', style: 'font-size:12px;opacity:0.85' });
  const colorbar = h('div', { class: 'agw-tl-legend agw-tl-colorbar', style: 'display:flex;align-items:flex-start;gap:6px' });
  const labels = h('div', { class: 'agw-tl-labels', role: 'tree', 'aria-label': 'Modules' });
  const help = 'Gradient norm per module (rows) and watched step (columns). Arrow keys move a cell, Home and End go to the first and last step, Enter shows that step\'s graph; the cell is read out below.';
  const canvas = /** @type {HTMLCanvasElement} */ (h('canvas', { class: 'agw-tl-canvas', tabindex: '0', role: 'application', 'aria-roledescription': 'timeline grid', 'aria-label': help, 'aria-describedby': '' }));
  const probed = /** @type {HTMLCanvasElement & { agwTimeline?: TimelineProbe }} */ (canvas);
  const tip = h('div', { class: 'agw-tl-tip', role: 'tooltip', hidden: '', style: 'position:absolute;z-index:2;pointer-events:none;padding:2px 6px;border-radius:3px;background:rgba(20,20,20,0.92);color:#fff;font-size:11px;white-space:nowrap' });
  const grid = h('div', { class: 'agw-tl-grid', style: 'position:relative;flex:1 1 auto;min-width:50px' }, canvas, tip);
  const body = h('div', { class: 'agw-tl-body' }, labels, grid);
  const el = h('div', { class: 'agw-timeline', 'aria-label': 'Training timeline' },
    h('div', { class: 'agw-tl-bar' }, play, first, healedBtn, stepText, colorbar), body, readout, cause, moved, notes);
  const readId = `agw-tl-read-${Math.random().toString(36).slice(2, 9)}`;
  readout.id = readId;
  canvas.setAttribute('aria-describedby', readId);

  const rowsNow = () => (data ? visibleRows(data.rows, expanded, ops) : []);

  /** The colour bar: the ramp with its powers of ten, then zero and NaN/Inf swatches. */
  function renderColorbar() {
    colorbar.replaceChildren();
    if (!data) return;
    const [lo, hi] = data.range;
    const ticks = h('div', { style: 'position:relative;height:12px;font-size:10px' });
    for (const t of colorbarTicks(lo, hi)) {
      ticks.append(h('span', { class: 'agw-tl-cbar-tick', style: `position:absolute;left:${(t.t * 100).toFixed(1)}%;transform:translateX(-50%);white-space:nowrap` }, t.label));
    }
    const ramp = h('div', { class: 'agw-tl-cbar', role: 'img', 'aria-label': `colour scale: gradient norm from ${normLabel(lo)} (dark purple) to ${normLabel(hi)} (yellow), log scale`, style: `width:180px;height:10px;border-radius:2px;background:${rampCss()}` });
    const sw = (/** @type {string} */ c, /** @type {string} */ t) => h('span', { style: 'display:inline-flex;align-items:center;gap:3px;margin-left:6px' }, h('span', { style: `display:inline-block;width:10px;height:10px;background:${c}` }), t);
    colorbar.title = `log10 gradient norm ${formatNumber(lo)} … ${formatNumber(hi)}`;
    colorbar.append(h('span', {}, 'gradient norm (log)'), h('div', { style: 'display:flex;flex-direction:column;gap:1px;margin:0 10px' }, ramp, ticks),
      sw(ZERO_COLOR, '0'), sw(ALARM_COLOR, 'NaN/Inf'));
  }
  /** @param {number} v log10 */
  const normLabel = (v) => formatNumber(10 ** v);

  function renderLabels() {
    labels.replaceChildren();
    if (!data) return;
    const d = data;
    for (const r of rowsNow()) {
      const canOpen = r.kind === 'module' && (d.rows.ops[r.row] || d.rows.parent.includes(r.id));
      const open = expanded.has(r.id);
      const tw = canOpen ? h('button', { type: 'button', class: 'agw-tl-twisty', 'aria-label': `${open ? 'Collapse' : 'Expand'} ${r.label}`, 'aria-expanded': String(open) }, open ? '▾' : '▸') : h('span', { class: 'agw-tl-twisty' }, '');
      const calls = r.kind === 'module' ? d.rows.calls[r.row] : 1;
      const title = r.kind === 'op' ? `${r.label} (${r.id})` : `${r.id || r.label}${calls > 1 ? `: called ${calls} times per step (through time); expand for one row per call` : ''}${r.kind === 'module' && d.rows.fused[r.row] ? ': a fused recurrent node (one node for the whole sequence)' : ''}`;
      const item = h('div', { class: `agw-tl-row agw-tl-${r.kind}`, role: 'treeitem', 'data-id': r.id, title, style: `padding-left:${r.depth * 10}px;height:${ROW_PX}px` }, tw, r.label, calls > 1 ? h('span', { class: 'agw-tl-calls', style: 'opacity:0.7;margin-left:4px' }, `×${calls}`) : null);
      if (canOpen) tw.addEventListener('click', () => toggle(r.id));
      labels.append(item);
    }
    labels.style.paddingBottom = `${AXIS_PX}px`;
  }

  /** Open or close a module's rows (its ops asked of the kernel once). @param {string} id */
  function toggle(id) {
    if (expanded.has(id)) expanded.delete(id);
    else {
      expanded.add(id);
      const i = data ? data.rows.id.indexOf(id) : -1;
      if (ctx.live && data && i >= 0 && data.rows.ops[i] && !ops.has(id)) {
        rowsReq.ask({ type: MSG.TIMELINE_ROWS, module: id }, {
          reply: (reply) => {
            const rep = asRecord(reply); // wire/trainpayload.py `rows_payload`
            const n = Array.isArray(rep.id) ? rep.id.length : 0;
            ops.set(id, { id: strings(rep.id), label: strings(rep.label), values: float32s(rep.values, n * (data?.watched.length ?? 0)), note: typeof rep.note === 'string' ? rep.note : null });
            renderLabels();
            renderNotes();
            paint();
          },
          error: (msg) => {
            cause.textContent = `could not read the ops of ${id || 'the model'}: ${msg}`;
          },
        });
      }
    }
    renderLabels();
    renderNotes();
    paint();
  }

  function renderNotes() {
    notes.replaceChildren();
    for (const [id, o] of ops) if (o.note && expanded.has(id)) notes.append(h('div', {}, `${id || 'model'}: ${o.note}`));
  }

  /** Paint the loss curve, the heat map, the axis and the cursor; what was painted is kept on
   * the canvas as `canvas.agwTimeline` (rows, watched steps, the cursor's step and x, the axis
   * ticks, CSS px) and paints are counted in `canvas.dataset.painted` (tests, the benchmark). */
  function paint() {
    if (destroyed || !data) return;
    const d = data;
    const rows = rowsNow();
    const width = Math.max(50, Math.floor(canvas.clientWidth || body.clientWidth - 160 || 640));
    const height = LOSS_PX + rows.length * ROW_PX + AXIS_PX;
    const ratio = win.devicePixelRatio || 1;
    canvas.width = Math.floor(width * ratio);
    canvas.height = Math.floor(height * ratio);
    canvas.style.height = `${height}px`;
    const g = canvas.getContext('2d');
    let cursorX = null;
    if (g) {
      g.setTransform(ratio, 0, 0, ratio, 0, 0);
      const fg = win.getComputedStyle ? win.getComputedStyle(el).color || '#444' : '#444';
      cursorX = paintTimeline(g, { d, rows, width, ratio, lossPx: LOSS_PX, rowPx: ROW_PX, axisPx: AXIS_PX, selected, focus, fg, flag: FLAG,
        source: (r) => (r.kind === 'module' ? d.values : ops.get(r.module)?.values) });
    }
    const ticks = stepTicks(d.watched, width);
    probed.agwTimeline = { width, height, rows: rows.map((r) => r.id), top: LOSS_PX, rowPx: ROW_PX, axisTop: LOSS_PX + rows.length * ROW_PX, ticks, watched: Array.from(d.watched), selected, cursorX };
    canvas.dataset.painted = String(Number(canvas.dataset.painted || 0) + 1);
    renderStatus();
  }

  /** The reading of the cell at column `k`, row `r` of the rows shown (null outside). @param {number} k @param {number} r */
  function readCell(k, r) {
    if (!data) return null;
    const d = data;
    const rows = rowsNow();
    const row = rows[r];
    const n = d.watched.length;
    if (!row || k < 0 || k >= n) return null;
    const src = row.kind === 'module' ? d.values : ops.get(row.module)?.values;
    const at = (/** @type {number} */ j) => (src && j >= 0 ? src[row.row * n + j] : NaN);
    const name = row.kind === 'module' ? row.id || row.label : `${row.module || 'model'} › ${row.label}`;
    return cellText({ step: d.watched[k], prevStep: k > 0 ? d.watched[k - 1] : null, name, v: at(k), prev: at(k - 1) });
  }

  /** Where the pointer is: the cell (k, r), r -1 on the loss band. @param {number} x @param {number} y CSS px in the canvas */
  function cellAt(x, y) {
    if (!data || !data.watched.length) return null;
    const w = canvas.clientWidth || Number(probed.agwTimeline?.width) || 1;
    const k = Math.max(0, Math.min(data.watched.length - 1, Math.floor((x / w) * data.watched.length)));
    const r = y < LOSS_PX ? -1 : Math.floor((y - LOSS_PX) / ROW_PX);
    return { k, r };
  }

  /** @param {number} k */
  function lossText(k) {
    if (!data) return '';
    const s = data.watched[k];
    return `step ${s} · loss ${formatNumber(s < data.nSteps ? data.loss[s] : NaN)}`;
  }

  canvas.addEventListener('mousemove', (ev) => {
    const rect = canvas.getBoundingClientRect();
    const x = ev.clientX - rect.left;
    const y = ev.clientY - rect.top;
    const c = cellAt(x, y);
    const text = c ? (c.r < 0 ? lossText(c.k) : readCell(c.k, c.r)) : null;
    if (!text) return hideTip();
    tip.textContent = text;
    tip.hidden = false;
    const gw = grid.clientWidth || rect.width;
    const tw = tip.offsetWidth || 8 * text.length;
    tip.style.left = `${Math.max(0, Math.min(gw - tw, x + 12))}px`;
    tip.style.top = `${y + 16}px`;
  });
  const hideTip = () => {
    tip.hidden = true;
  };
  canvas.addEventListener('mouseleave', hideTip);

  /** Move the keyboard's cell and read it out. @param {number} k @param {number} r */
  function focusCell(k, r) {
    if (!data || !data.watched.length) return;
    const nr = rowsNow().length;
    focus = { k: Math.max(0, Math.min(data.watched.length - 1, k)), r: Math.max(0, Math.min(nr - 1, r)) };
    readout.textContent = readCell(focus.k, focus.r) ?? '';
    paint();
  }
  canvas.addEventListener('keydown', (ev) => {
    if (!data || !data.watched.length) return;
    const f = focus ?? { k: Math.max(0, data.watched.indexOf(selected ?? -1)), r: 0 };
    const page = Math.max(1, Math.round(data.watched.length / 10));
    /** @type {Record<string, () => void>} */
    const keys = {
      ArrowLeft: () => focusCell(f.k - 1, f.r),
      ArrowRight: () => focusCell(f.k + 1, f.r),
      ArrowUp: () => focusCell(f.k, f.r - 1),
      ArrowDown: () => focusCell(f.k, f.r + 1),
      PageUp: () => focusCell(f.k - page, f.r),
      PageDown: () => focusCell(f.k + page, f.r),
      Home: () => focusCell(0, f.r),
      End: () => focusCell(Infinity, f.r),
      Enter: () => { stop(); select(/** @type {Timeline} */ (data).watched[f.k]); },
      ' ': () => { stop(); select(/** @type {Timeline} */ (data).watched[f.k]); },
    };
    const act = keys[ev.key];
    if (!act) return;
    ev.preventDefault();
    if (!focus && ev.key !== 'Enter' && ev.key !== ' ') focus = f;
    act();
  });
  canvas.addEventListener('focus', () => {
    if (!focus && data?.watched.length) focusCell(Math.max(0, data.watched.indexOf(selected ?? -1)), 0);
  });

  function renderStatus() {
    if (!data) return;
    const d = data;
    const n = d.watched.length;
    const k = selected === null ? -1 : d.watched.indexOf(selected);
    const loss = selected !== null && selected < d.nSteps ? d.loss[selected] : NaN;
    stepText.textContent = selected === null ? `${d.nSteps} steps, none watched` : `step ${selected} (${k + 1} of ${n} watched, ${d.nSteps} steps) · loss ${formatNumber(loss)}`;
    first.disabled = !d.first;
    const healedFirst = d.origin?.kind === 'healed';
    first.textContent = healedFirst ? 'First NaN/Inf (healed)' : 'First NaN/Inf';
    first.title = d.first ? firstText(d.first, d.origin, d.every) : 'No step had a NaN or an Inf gradient, healed or not';
    healedBtn.hidden = !d.healed || (healedFirst && d.healed.first.step === d.first?.step);
    if (d.healed) {
      healedBtn.textContent = `Healed NaN/Inf (${d.healed.count})`;
      healedBtn.title = healedText(d.healed);
    }
    moved.replaceChildren();
    if (d.moved.length) {
      moved.append(h('span', { class: 'agw-tl-moved-title', title: d.movedRule }, 'Moved > 10x, standing out: '));
      for (const m of d.moved) {
        const b = button(`${m.module || 'model'} ×${formatNumber(m.factor)} (step ${m.low_step} ↔ ${m.high_step})`, 'Show this module\'s row', 'agw-link agw-tl-moved-item');
        b.addEventListener('click', () => reveal(m.module));
        moved.append(b);
      }
    }
    if (d.movedRule) moved.append(h('span', { class: 'agw-tl-moved-rule', style: 'display:block;opacity:0.75;font-size:11px' }, d.moved.length ? `Rule: ${d.movedRule}` : d.movedRule));
  }

  /** Open every parent of module `id`. @param {string} id */
  function reveal(id) {
    if (!data) return;
    let p = data.rows.parent[data.rows.id.indexOf(id)];
    while (p !== null && p !== undefined) {
      expanded.add(p);
      p = data.rows.parent[data.rows.id.indexOf(p)];
    }
    renderLabels();
    paint();
    for (const row of labels.children) if (/** @type {HTMLElement} */ (row).dataset.id === id) row.classList.add('agw-tl-flash');
  }

  /** Move the cursor to `step` and show its graph below (with `node` selected). @param {number} step @param {string | null} [node] */
  function select(step, node = null) {
    if (!data || !data.watched.includes(step)) return;
    if (!ctx.live && step !== ctx.model.get(TRAIT.WATCH_STEP)) {
      // a standalone page holds one step's graph
      cause.textContent = `This page holds the graph of step ${ctx.model.get(TRAIT.WATCH_STEP)} only; open the watch in a notebook (aw.explore(aw.load_watch(path))) to see step ${step}.`;
      stop();
      return;
    }
    selected = step;
    ctx.send(node ? { type: MSG.WATCH_STEP, step, node } : { type: MSG.WATCH_STEP, step });
    schedule(paint);
  }

  function stop() {
    if (timer !== null) clearInterval(timer);
    timer = null;
    play.textContent = '▶ Play';
  }

  play.addEventListener('click', () => {
    if (timer !== null || !data) return stop();
    const d = data;
    play.textContent = '⏸ Pause';
    timer = setInterval(() => {
      const k = selected === null ? -1 : d.watched.indexOf(selected);
      if (k + 1 >= d.watched.length) return stop();
      select(d.watched[k + 1]);
    }, PLAY_MS);
  });
  /** Say `text` and go to `step` with `node` selected (when this page can). @param {string} text @param {number} step @param {string | null} node @param {boolean} watched */
  function jump(text, step, node, watched) {
    stop();
    const held = ctx.model.get(TRAIT.WATCH_STEP);
    if (watched && !ctx.live && step !== held) text += `. This page holds the graph of step ${held} only: open the watch in a notebook to see step ${step}.`;
    cause.textContent = text;
    if (watched && (ctx.live || step === held)) select(step, node);
  }
  first.addEventListener('click', () => {
    const f = data?.first;
    if (!f || !data) return;
    const o = data.origin;
    const node = o?.where === 'forward' && o.forward_node ? o.forward_node : f.node;
    jump(firstText(f, o, data.every), f.step, node, f.watched);
  });
  healedBtn.addEventListener('click', () => {
    const hd = data?.healed;
    if (hd) jump(healedText(hd), hd.first.step, hd.first.born_node ?? hd.first.node, true);
  });
  canvas.addEventListener('click', (ev) => {
    if (!data) return;
    const rect = canvas.getBoundingClientRect();
    const s = stepAt(data.watched, (ev.clientX - rect.left) / Math.max(1, rect.width));
    if (s !== null) {
      stop();
      select(s);
    }
  });

  const onData = () => {
    data = decodeTimeline(ctx.model.get(TRAIT.TIMELINE));
    ops.clear();
    expanded = data ? openDepth(data.rows, FIT_ROWS) : new Set(['']);
    focus = null;
    renderColorbar();
    renderLabels();
    renderNotes();
    paint();
  };
  const onStep = () => {
    const s = ctx.model.get(TRAIT.WATCH_STEP);
    if (isInt(s)) selected = s;
    schedule(paint);
  };
  /** @type {[string, () => void][]} */
  const listeners = [
    [`change:${TRAIT.TIMELINE}`, onData],
    [`change:${TRAIT.WATCH_STEP}`, onStep],
  ];
  for (const [ev, cb] of listeners) ctx.model.on(ev, cb);
  renderColorbar();
  renderLabels();
  schedule(paint);

  return {
    el,
    paint,
    select,
    state: () => ({ expanded: [...expanded], selected, playing: timer !== null, focus }),
    destroy() {
      destroyed = true;
      stop();
      rowsReq.drop();
      for (const [ev, cb] of listeners) ctx.model.off(ev, cb);
    },
  };
}
