/**
 * The timeline of a watched training run (`aw.explore(watch)`), drawn above the graph: steps
 * across, the model's modules down (each expandable to its sub-modules and its own ops), every
 * cell coloured by the log10 gradient norm Python computed (view/timeline.py); the loss curve
 * above; a step cursor with Play; "First NaN/Inf" (the step and the birth node with its cause);
 * the modules whose norm moved the most and stand out (Python's rule, said in the list's help).
 * The graph below is the selected step's. A colour bar says which colour is which norm, a step
 * axis runs under the grid, and every cell reads out (step, row, norm, change against the
 * previous watched step) on hover and, by keyboard (arrows, Enter), in a live region that
 * screen readers announce. The tree opens as deep as fits (timelinerows.js). The grid zooms and
 * pans in time (timelinezoomui.js: the wheel, + and -, a drag, 0 or "Whole run" back), a long
 * run's columns asked of Python at the canvas's width; hover, keyboard and clicks read the
 * columns shown (a band of steps reads its smallest and largest norm, a click opens its first
 * watched step).
 *
 * Draws only: every number, range and cause comes from Python; a cursor move sends
 * `watch_step` (Python shows that step's graph below and answers with the synced `watch_step`
 * trait), expanding a module asks `timeline_rows` once.
 *
 * Guarantees: a malformed payload draws an empty timeline, never throws; columns are binned to
 * pixels (a 10,000-step run paints one ImageData, each pixel the largest value of its steps, a
 * non-finite one wins); Play stops at the last watched step or on Pause.
 */
import { asRecord } from './jsonsafe.js';
import { domHelpers } from './dom.js';
import { formatNumber } from './format.js';
import { latestReply } from './latest.js';
import { MSG, TRAIT } from './protocol.js';
import { ALARM_COLOR } from './style.js';
import { stepTicks } from './timelineaxis.js';
import { ZERO_COLOR, cellColor, colorbarTicks, rampCss } from './timelinecolorbar.js';
import { decodeTimeline, float32s, isInt, stepAt, strings } from './timelinedata.js';
import { binRow, paintTimeline } from './timelinepaint.js';
import { openDepth, visibleRows } from './timelinerows.js';
import { bandText, cellText, firstText, healedText, stepNo } from './timelinetext.js';
import { binToView, columnSteps, lowerBound, watchedSteps } from './timelinezoom.js';
import { createZoom } from './timelinezoomui.js';

export { binRow, cellColor, decodeTimeline, float32s, stepAt };
/**
 * @typedef {import('./timelinedata.js').Timeline} Timeline
 * @typedef {import('./timelinedata.js').Rows} Rows
 * @typedef {import('./timelinedata.js').First} First
 * @typedef {import('./timelinedata.js').Origin} Origin
 * @typedef {import('./timelinedata.js').Healed} Healed
 * @typedef {import('./timelinedata.js').Moved} Moved
 * @typedef {import('./timelinezoom.js').View} View
 */

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
 * The traits the timeline reads (`_timeline`, `watch_step`), read as `unknown` and checked: the
 * widget's model, or the one-step model a standalone page builds (walkthrough.js).
 * @typedef {{ get(name: string): unknown, on(ev: string, cb: Function): void, off(ev: string, cb: Function): void }} TimelineModel
 *
 * What the painted canvas carries for tests and tools (`canvas.agwTimeline`, see `paint`).
 * @typedef {{ width: number, height: number, rows: string[], top: number, rowPx: number, axisTop: number, ticks: ReturnType<typeof stepTicks>, watched: number[], selected: number | null, cursorX: number | null, span: [number, number], banded: boolean, exact: boolean }} TimelineProbe
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
 * @returns {{ el: HTMLElement, destroy: () => void, paint: () => void, select: (step: number, node?: string | null) => void, state: () => { expanded: string[], selected: number | null, playing: boolean, focus: { k: number, r: number } | null, span: [number, number] | null } }}
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
  /** The run's watched steps (a banded trait holds each band's first only: read from the flags). */
  const runWatched = () => (!data ? new Int32Array(0) : data.columns ? (allWatched ??= watchedSteps(data.flags)) : data.watched);
  /** @type {Int32Array | null} */
  let allWatched = null;
  /** @param {number} step */
  const isWatchedStep = (step) => !!data && (data.columns ? (data.flags[step] & FLAG.WATCHED) !== 0 : data.watched.includes(step));

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
  const help = 'Gradient norm per module (rows) and watched step (columns). Arrow keys move a cell, Home and End go to the first and last step, Enter shows that step\'s graph; the cell is read out below. The wheel, + and - zoom in time, a drag or Shift+arrows pan, 0 shows the whole run.';
  const canvas = /** @type {HTMLCanvasElement} */ (h('canvas', { class: 'agw-tl-canvas', tabindex: '0', role: 'application', 'aria-roledescription': 'timeline grid', 'aria-label': help, 'aria-describedby': '' }));
  const probed = /** @type {HTMLCanvasElement & { agwTimeline?: TimelineProbe }} */ (canvas);
  const tip = h('div', { class: 'agw-tl-tip', role: 'tooltip', hidden: '', style: 'position:absolute;z-index:2;pointer-events:none;padding:2px 6px;border-radius:3px;background:rgba(20,20,20,0.92);color:#fff;font-size:11px;white-space:nowrap' });
  const grid = h('div', { class: 'agw-tl-grid', style: 'position:relative;flex:1 1 auto;min-width:50px' }, canvas, tip);
  const body = h('div', { class: 'agw-tl-body' }, labels, grid);
  const el = h('div', { class: 'agw-timeline', 'aria-label': 'Training timeline' },
    h('div', { class: 'agw-tl-bar' }, play, first, healedBtn, stepText, colorbar), body, readout, cause, moved, notes);
  const zoom = createZoom(doc, {
    canvas,
    request: ctx.request,
    live: ctx.live,
    data: () => data,
    watched: runWatched,
    anchor: () => (focus ? (focus.k + 0.5) / Math.max(1, zoom.view().axis.length) : 0.5),
    changed: () => schedule(paint),
    error: (msg) => {
      cause.textContent = msg;
    },
  });
  el.querySelector('.agw-tl-bar')?.insertBefore(zoom.bar, colorbar);
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
    // the axis's title, beside its step numbers (hidden from the tree: the canvas's label says it)
    labels.append(h('div', { class: 'agw-tl-axis-title', 'aria-hidden': 'true', style: `height:${AXIS_PX}px;line-height:${AXIS_PX}px;text-align:right;padding-right:4px;font-size:10px;opacity:0.8` }, 'step →'));
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
            ops.set(id, { id: strings(rep.id), label: strings(rep.label), values: float32s(rep.values, n * runWatched().length), note: typeof rep.note === 'string' ? rep.note : null });
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
    const v = zoom.view();
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
        view: v, source: (r) => source(v, r) });
    }
    const ticks = stepTicks(v.axis, width);
    probed.agwTimeline = { width, height, rows: rows.map((r) => r.id), top: LOSS_PX, rowPx: ROW_PX, axisTop: LOSS_PX + rows.length * ROW_PX, ticks, watched: Array.from(v.pick), selected, cursorX, span: [v.start, v.stop], banded: v.banded, exact: zoom.exact() };
    canvas.dataset.painted = String(Number(canvas.dataset.painted || 0) + 1);
    renderStatus();
    zoom.sized(width);
  }

  /** Op rows binned to a view's columns, per view (a zoom bins again). @type {WeakMap<View, Map<string, Float32Array>>} */
  const binned = new WeakMap();
  /** A row's values in view `v` (rows x its columns). @param {View} v @param {{ kind: 'module' | 'op', module: string }} r */
  function source(v, r) {
    if (r.kind === 'module') return v.values;
    const o = ops.get(r.module);
    if (!o || (v.whole && !v.banded)) return o?.values;
    const per = binned.get(v) ?? new Map();
    binned.set(v, per);
    if (!per.has(r.module)) per.set(r.module, binToView(o.values, o.id.length, runWatched(), v));
    return per.get(r.module);
  }

  /** The reading of the cell at column `k`, row `r` of the rows shown (null outside). @param {number} k @param {number} r */
  function readCell(k, r) {
    if (!data) return null;
    const v = zoom.view();
    const row = rowsNow()[r];
    const n = v.axis.length;
    if (!row || k < 0 || k >= n) return null;
    const src = source(v, row);
    const at = (/** @type {number} */ j, /** @type {Float32Array | null | undefined} */ a = src) => (a && j >= 0 ? a[row.row * n + j] : NaN);
    const name = row.kind === 'module' ? row.id || row.label : `${row.module || 'model'} › ${row.label}`;
    const c = columnSteps(v, k, runWatched());
    if (v.banded && c.count > 1) return bandText({ ...c, name, hi: at(k), lo: row.kind === 'module' ? at(k, v.valuesMin) : NaN });
    // the column before the first of a zoomed view is not held: no change is said
    return cellText({ step: v.pick[k], prevStep: k > 0 ? v.pick[k - 1] : v.whole ? null : -1, name, v: at(k), prev: at(k - 1) });
  }

  /** Where the pointer is: the cell (k, r), r -1 on the loss band. @param {number} x @param {number} y CSS px in the canvas */
  function cellAt(x, y) {
    const n = zoom.view()?.axis.length ?? 0;
    if (!data || !n) return null;
    const w = canvas.clientWidth || Number(probed.agwTimeline?.width) || 1;
    const k = Math.max(0, Math.min(n - 1, Math.floor((x / w) * n)));
    const r = y < LOSS_PX ? -1 : Math.floor((y - LOSS_PX) / ROW_PX);
    return { k, r };
  }

  /** @param {number} k */
  function lossText(k) {
    if (!data) return '';
    const v = zoom.view();
    const c = columnSteps(v, k, runWatched());
    const s = v.pick[k];
    const span = c.last > c.first ? `steps ${stepNo(c.first)}–${stepNo(c.last)} · ` : '';
    return `${span}step ${stepNo(s)} · loss ${formatNumber(s < data.nSteps ? data.loss[s] : NaN)}`;
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
    const v = zoom.view();
    const n = v?.axis.length ?? 0;
    if (!data || !n) return;
    if (!v.whole && (k < 0 || k >= n) && Number.isFinite(k)) zoom.pan(k < 0 ? -0.1 : 0.1); // past the edge of a zoom: pan
    const nr = rowsNow().length;
    focus = { k: Math.max(0, Math.min(n - 1, k)), r: Math.max(0, Math.min(nr - 1, r)) };
    readout.textContent = readCell(focus.k, focus.r) ?? '';
    paint();
  }
  canvas.addEventListener('keydown', (ev) => {
    const v = zoom.view();
    if (!data || !v?.axis.length) return;
    const f = focus ?? { k: Math.max(0, cursorColumn(v)), r: 0 };
    const page = Math.max(1, Math.round(v.axis.length / 10));
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
      Enter: () => { stop(); select(v.pick[f.k]); },
      ' ': () => { stop(); select(v.pick[f.k]); },
    };
    const act = keys[ev.key];
    if (!act) return;
    ev.preventDefault();
    if (!focus && ev.key !== 'Enter' && ev.key !== ' ') focus = f;
    act();
  });
  canvas.addEventListener('focus', () => {
    if (!focus && data?.watched.length) focusCell(Math.max(0, cursorColumn(zoom.view())), 0);
  });
  /** The column of `v` holding the selected step (-1: none, or outside the view). @param {View} v */
  const cursorColumn = (v) => (selected === null ? -1 : lowerBound(v.axis, selected + 1) - 1);

  function renderStatus() {
    if (!data) return;
    const d = data;
    const all = runWatched();
    const n = all.length;
    const k = selected === null ? -1 : lowerBound(all, selected);
    const loss = selected !== null && selected < d.nSteps ? d.loss[selected] : NaN;
    const f = stepNo;
    stepText.textContent = selected === null ? `${f(d.nSteps)} steps, none watched` : `step ${f(selected)} (${f(k + 1)} of ${f(n)} watched, ${f(d.nSteps)} steps) · loss ${formatNumber(loss)}`;
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
        const b = button(`${m.module || 'model'} ×${formatNumber(m.factor)} (step ${stepNo(m.low_step)} ↔ ${stepNo(m.high_step)})`, 'Show this module\'s row', 'agw-link agw-tl-moved-item');
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
    if (!isWatchedStep(step)) return;
    if (!ctx.live && step !== ctx.model.get(TRAIT.WATCH_STEP)) {
      // a standalone page holds one step's graph
      cause.textContent = `This page holds the graph of step ${ctx.model.get(TRAIT.WATCH_STEP)} only; open the watch in a notebook (aw.explore(aw.load_watch(path))) to see step ${step}.`;
      stop();
      return;
    }
    selected = step;
    const v = zoom.view();
    const half = (v.stop - v.start) / 2;
    if (!v.whole && (step < v.start || step >= v.stop)) zoom.setSpan({ start: step - half, stop: step + half }); // a zoom follows the cursor
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
    const all = runWatched();
    play.textContent = '⏸ Pause';
    timer = setInterval(() => {
      const k = selected === null ? 0 : lowerBound(all, selected + 1);
      if (k >= all.length) return stop();
      select(all[k]);
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
    if (!data || zoom.dragged()) return;
    const rect = canvas.getBoundingClientRect();
    const s = stepAt(zoom.view().pick, (ev.clientX - rect.left) / Math.max(1, rect.width));
    if (s !== null) {
      stop();
      select(s);
    }
  });

  const onData = () => {
    data = decodeTimeline(ctx.model.get(TRAIT.TIMELINE));
    allWatched = null;
    zoom.reset();
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
    state: () => ({ expanded: [...expanded], selected, playing: timer !== null, focus, span: data ? [zoom.view().start, zoom.view().stop] : null }),
    destroy() {
      destroyed = true;
      stop();
      rowsReq.drop();
      zoom.destroy();
      for (const [ev, cb] of listeners) ctx.model.off(ev, cb);
    },
  };
}
