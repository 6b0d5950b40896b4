/**
 * The timeline of a watched training run (`aw.explore(watch)`), drawn above the graph: steps
 * across, the model's modules down (each expandable to its sub-modules and its own ops), every
 * cell coloured by the log10 gradient norm Python computed (view/timeline.py); the loss curve
 * above; a step cursor with Play; "First NaN/Inf" (the step and the birth node with its cause);
 * the modules whose norm moved more than 10x. The graph below is the selected step's.
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
import { domHelpers } from './dom.js';
import { formatNumber } from './format.js';
import { latestReply } from './latest.js';
import { MSG, TRAIT } from './protocol.js';
import { ALARM_COLOR, SELECT_COLOR } from './style.js';

/** Row height (CSS px) of the heat map. */
export const ROW_PX = 14;
/** Height (CSS px) of the loss curve. */
export const LOSS_PX = 56;
/** Play's interval between two watched steps (ms). */
export const PLAY_MS = 350;
/** Step flags (`flags`, one byte per step; view/timeline.py). */
export const FLAG = Object.freeze({ WATCHED: 1, NONFINITE: 2, EXPECTED: 4, FAILED: 8 });

/** Viridis, sampled: a larger norm, brighter. */
const RAMP = ['#440154', '#482878', '#3e4a89', '#31688e', '#26828e', '#1f9e89', '#35b779', '#6ece58', '#b5de2b', '#fde725'];
/** A norm of exactly zero. */
const ZERO_COLOR = '#202020';

/**
 * @typedef {object} Rows
 * @property {string[]} id module paths ('' the model) or node ids (ops)
 * @property {string[]} label
 * @property {(string | null)[]} parent
 * @property {number[]} depth
 * @property {boolean[]} ops a module with ops of its own (expandable to them)
 *
 * @typedef {object} First
 * @property {number} step
 * @property {boolean} watched
 * @property {string | null} node
 * @property {string | null} name
 * @property {string | null} cause
 * @property {boolean} expected
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
 * @property {Moved[]} moved
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

/**
 * The `_timeline` trait, validated; null when it is empty (not a watch).
 * @param {any} raw
 * @returns {Timeline | null}
 * @example decodeTimeline({}) // null
 */
export function decodeTimeline(raw) {
  if (!raw || typeof raw !== 'object' || !raw.format) return null;
  const nSteps = Number.isInteger(raw.n_steps) && raw.n_steps >= 0 ? raw.n_steps : 0;
  const watched = toTyped(raw.watched, Int32Array);
  const r = raw.rows && typeof raw.rows === 'object' ? raw.rows : {};
  const id = strings(r.id);
  const n = id.length;
  const pick = (/** @type {unknown} */ v, /** @type {(x: any) => any} */ f) => Array.from({ length: n }, (_, i) => f(Array.isArray(v) ? v[i] : undefined));
  const rows = {
    id,
    label: pick(r.label, (x) => String(x ?? '')),
    parent: pick(r.parent, (x) => (typeof x === 'string' ? x : null)),
    depth: pick(r.depth, (x) => (Number.isInteger(x) && x >= 0 ? x : 0)),
    ops: pick(r.ops, (x) => x === true),
  };
  const range = Array.isArray(raw.range) && raw.range.length === 2 && raw.range.every(Number.isFinite) ? /** @type {[number, number]} */ ([raw.range[0], raw.range[1]]) : /** @type {[number, number]} */ ([0, 1]);
  const f = raw.first && typeof raw.first === 'object' && Number.isInteger(raw.first.step) ? raw.first : null;
  const str = (/** @type {unknown} */ v) => (typeof v === 'string' ? v : null);
  return {
    nSteps,
    watched,
    loss: toTyped(raw.loss, Float32Array, { length: nSteps }),
    flags: toTyped(raw.flags, Uint8Array, { length: nSteps }),
    rows,
    values: toTyped(raw.values, Float32Array, { length: n * watched.length }),
    range,
    first: f ? { step: f.step, watched: f.watched === true, node: str(f.node), name: str(f.name), cause: str(f.cause), expected: f.expected === true } : null,
    moved: Array.isArray(raw.moved) ? raw.moved.filter((/** @type {any} */ m) => m && typeof m.module === 'string' && Number.isFinite(m.factor)) : [],
    selected: Number.isInteger(raw.selected) ? raw.selected : null,
    every: Number.isInteger(raw.every) && raw.every > 0 ? raw.every : 1,
  };
}

/**
 * The colour of a log10 norm `v` on the range [lo, hi]: NaN none (null), +inf the alarm colour
 * (a NaN or an Inf in the gradient), -inf a zero norm.
 * @param {number} v @param {number} lo @param {number} hi
 * @returns {string | null}
 * @example cellColor(Infinity, 0, 1) // '#ff1f1f'
 */
export function cellColor(v, lo, hi) {
  if (Number.isNaN(v)) return null;
  if (v === Infinity) return ALARM_COLOR;
  if (v === -Infinity) return ZERO_COLOR;
  const t = hi > lo ? (v - lo) / (hi - lo) : 0.5;
  return RAMP[Math.max(0, Math.min(RAMP.length - 1, Math.floor(t * RAMP.length)))];
}

/**
 * Per pixel column, the value drawn for the steps it covers: the largest finite value, +inf when
 * any is +inf, NaN when all are NaN. `values` holds `n` columns.
 * @param {ArrayLike<number>} values @param {number} offset first index of the row @param {number} n
 * @param {number} width pixels
 * @returns {Float32Array}
 * @example binRow([1, 5, NaN, Infinity], 0, 4, 2) // Float32Array [5, Infinity]
 */
export function binRow(values, offset, n, width) {
  const out = new Float32Array(width).fill(NaN);
  if (n <= 0 || width <= 0) return out;
  for (let x = 0; x < width; x++) {
    const a = Math.floor((x * n) / width);
    const b = Math.max(a + 1, Math.floor(((x + 1) * n) / width));
    let best = NaN;
    for (let k = a; k < b && k < n; k++) {
      const v = values[offset + k];
      if (v === Infinity) {
        best = Infinity;
        break;
      }
      if (!Number.isNaN(v) && !(v <= best)) best = v;
    }
    out[x] = best;
  }
  return out;
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

/** @param {string} hex @returns {[number, number, number]} */
function rgb(hex) {
  const v = parseInt(hex.slice(1), 16);
  return [(v >> 16) & 255, (v >> 8) & 255, v & 255];
}

/**
 * @typedef {{ get(name: string): any, on(ev: string, cb: Function): void, off(ev: string, cb: Function): void }} TimelineModel
 */

/**
 * The timeline's DOM: mount `el` above the graph view.
 * @param {Document} doc
 * @param {{
 *   model: TimelineModel,
 *   send: (cmd: { type: string, [k: string]: unknown }) => void,
 *   request: (msg: { type: string, [k: string]: unknown }) => Promise<any>,
 *   live: boolean,
 *   schedule?: (cb: () => void) => void,
 * }} ctx `live`: a kernel answers (a standalone page only shows the steps it holds)
 * @returns {{ el: HTMLElement, destroy: () => void, paint: () => void, select: (step: number, node?: string | null) => void, state: () => { expanded: string[], selected: number | null, playing: boolean } }}
 */
export function createTimeline(doc, ctx) {
  const { h, button } = domHelpers(doc);
  const win = doc.defaultView ?? globalThis;
  const schedule = ctx.schedule ?? ((/** @type {() => void} */ cb) => (typeof win.requestAnimationFrame === 'function' ? win.requestAnimationFrame(cb) : cb()));
  let data = decodeTimeline(ctx.model.get(TRAIT.TIMELINE));
  /** @type {number | null} */
  let selected = ctx.model.get(TRAIT.WATCH_STEP) ?? data?.selected ?? null;
  /** Modules open (their children shown). */
  const expanded = new Set(['']);
  /** Op rows per module, once asked. @type {Map<string, { id: string[], label: string[], values: Float32Array }>} */
  const ops = new Map();
  /** @type {ReturnType<typeof setInterval> | null} */
  let timer = null;
  let destroyed = false;
  const rowsReq = latestReply(ctx.request);

  const play = button('▶ Play', 'Play: move the cursor through the watched steps', 'agw-button agw-tl-play');
  const first = button('First NaN/Inf', 'Jump to the first step whose gradients hold a NaN or an Inf, and to the node where it was born', 'agw-button agw-tl-first');
  const stepText = h('span', { class: 'agw-tl-step', 'aria-live': 'polite' });
  const cause = h('div', { class: 'agw-tl-cause', role: 'status' });
  const moved = h('div', { class: 'agw-tl-moved' });
  const legend = h('div', { class: 'agw-tl-legend' });
  const labels = h('div', { class: 'agw-tl-labels', role: 'tree', 'aria-label': 'Modules' });
  const canvas = /** @type {HTMLCanvasElement} */ (h('canvas', { class: 'agw-tl-canvas', 'aria-label': 'Gradient norm per module and step' }));
  const body = h('div', { class: 'agw-tl-body' }, labels, canvas);
  const el = h('div', { class: 'agw-timeline', 'aria-label': 'Training timeline' },
    h('div', { class: 'agw-tl-bar' }, play, first, stepText, legend), body, cause, moved);

  /** The rows shown now, in order: [id, label, depth, kind, values getter]. */
  function visibleRows() {
    /** @type {{ id: string, label: string, depth: number, kind: 'module' | 'op', module: string, row: number }[]} */
    const out = [];
    if (!data) return out;
    const d = data;
    /** @param {string | null} parent */
    const children = (parent) => d.rows.id.map((_, i) => i).filter((i) => d.rows.parent[i] === parent);
    /** @param {number} i */
    const walk = (i) => {
      const id = d.rows.id[i];
      out.push({ id, label: d.rows.label[i], depth: d.rows.depth[i], kind: 'module', module: id, row: i });
      if (!expanded.has(id)) return;
      for (const c of children(id)) walk(c);
      const o = ops.get(id);
      if (o) for (let k = 0; k < o.id.length; k++) out.push({ id: o.id[k], label: o.label[k], depth: d.rows.depth[i] + 1, kind: 'op', module: id, row: k });
    };
    for (const r of children(null)) walk(r);
    return out;
  }

  function renderLabels() {
    labels.replaceChildren();
    if (!data) return;
    for (const r of visibleRows()) {
      const canOpen = r.kind === 'module' && (data.rows.ops[r.row] || data.rows.parent.includes(r.id));
      const open = expanded.has(r.id);
      const tw = canOpen ? h('button', { type: 'button', class: 'agw-tl-twisty', 'aria-label': `${open ? 'Collapse' : 'Expand'} ${r.label}`, 'aria-expanded': String(open) }, open ? '▾' : '▸') : h('span', { class: 'agw-tl-twisty' }, '');
      const item = h('div', { class: `agw-tl-row agw-tl-${r.kind}`, role: 'treeitem', 'data-id': r.id, title: r.kind === 'op' ? `${r.label} (${r.id})` : r.id || r.label, style: `padding-left:${r.depth * 10}px;height:${ROW_PX}px` }, tw, r.label);
      if (canOpen) tw.addEventListener('click', () => toggle(r.id));
      labels.append(item);
    }
  }

  /** Open or close a module's rows (its ops asked of the kernel once). @param {string} id */
  function toggle(id) {
    if (expanded.has(id)) expanded.delete(id);
    else {
      expanded.add(id);
      const i = data ? data.rows.id.indexOf(id) : -1;
      if (ctx.live && data && i >= 0 && data.rows.ops[i] && !ops.has(id)) {
        rowsReq.ask({ type: MSG.TIMELINE_ROWS, module: id }, {
          reply: (rep) => {
            const n = Array.isArray(rep?.id) ? rep.id.length : 0;
            ops.set(id, { id: strings(rep?.id), label: strings(rep?.label), values: float32s(rep?.values, n * (data?.watched.length ?? 0)) });
            renderLabels();
            paint();
          },
          error: (msg) => {
            cause.textContent = `could not read the ops of ${id || 'the model'}: ${msg}`;
          },
        });
      }
    }
    renderLabels();
    paint();
  }

  /** Paint the loss curve, the heat map and the cursor; what was painted is kept on the canvas
   * as `canvas.agwTimeline` (rows, watched steps, the cursor's step and x, CSS px) and paints are
   * counted in `canvas.dataset.painted` (for tests and the browser benchmark). */
  function paint() {
    if (destroyed || !data) return;
    const d = data;
    const rows = visibleRows();
    const width = Math.max(50, Math.floor(canvas.clientWidth || body.clientWidth - 160 || 640));
    const height = LOSS_PX + rows.length * ROW_PX;
    const ratio = win.devicePixelRatio || 1;
    canvas.width = Math.floor(width * ratio);
    canvas.height = Math.floor(height * ratio);
    canvas.style.height = `${height}px`;
    const g = canvas.getContext('2d');
    if (!g) return;
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, width, height);
    // the loss of every step (watched or not): NaN/Inf steps as red ticks
    let lo = Infinity;
    let hi = -Infinity;
    for (const v of d.loss) if (Number.isFinite(v)) { if (v < lo) lo = v; if (v > hi) hi = v; }
    if (hi <= lo) { hi = lo + 1; }
    g.strokeStyle = '#4e79a7';
    g.lineWidth = 1.2;
    g.beginPath();
    let pen = false;
    for (let s = 0; s < d.nSteps; s++) {
      const v = d.loss[s];
      const x = ((s + 0.5) / Math.max(1, d.nSteps)) * width;
      if (!Number.isFinite(v)) { pen = false; continue; }
      const y = 4 + (1 - (v - lo) / (hi - lo)) * (LOSS_PX - 10);
      if (pen) g.lineTo(x, y); else g.moveTo(x, y);
      pen = true;
    }
    g.stroke();
    g.fillStyle = ALARM_COLOR;
    for (let s = 0; s < d.nSteps; s++) {
      if (d.flags[s] & FLAG.NONFINITE) g.fillRect(Math.floor((s / Math.max(1, d.nSteps)) * width), LOSS_PX - 5, 2, 4);
    }
    // the heat map: one ImageData, each pixel column the largest value of its steps
    const nCols = d.watched.length;
    if (rows.length && nCols) {
      const img = g.createImageData(Math.floor(width * ratio), Math.floor(rows.length * ROW_PX * ratio));
      if (!img?.data) return renderStatus(); // (a canvas without pixels: jsdom's)
      const px = new Uint32Array(img.data.buffer);
      const W = img.width;
      const rowH = Math.max(1, Math.floor(ROW_PX * ratio));
      const [rlo, rhi] = d.range;
      const cache = new Map();
      rows.forEach((r, k) => {
        const src = r.kind === 'module' ? d.values : ops.get(r.module)?.values;
        if (!src) return;
        const bins = binRow(src, r.row * nCols, nCols, W);
        for (let x = 0; x < W; x++) {
          const c = cellColor(bins[x], rlo, rhi);
          if (c === null) continue;
          let word = cache.get(c);
          if (word === undefined) {
            const [cr, cg, cb] = rgb(c);
            word = (255 << 24) | (cb << 16) | (cg << 8) | cr; // little-endian RGBA
            cache.set(c, word);
          }
          for (let y = k * rowH + 1; y < (k + 1) * rowH; y++) px[y * W + x] = word;
        }
      });
      g.putImageData(img, 0, Math.floor(LOSS_PX * ratio));
    }
    // the cursor
    let cursorX = null;
    if (selected !== null && nCols) {
      const k = d.watched.indexOf(selected);
      const x = ((Math.max(0, k) + 0.5) / nCols) * width;
      cursorX = x;
      g.strokeStyle = SELECT_COLOR;
      g.lineWidth = 2;
      g.beginPath();
      g.moveTo(x, 0);
      g.lineTo(x, height);
      g.stroke();
    }
    /** @type {any} */ (canvas).agwTimeline = { width, height, rows: rows.map((r) => r.id), top: LOSS_PX, rowPx: ROW_PX, watched: Array.from(d.watched), selected, cursorX };
    canvas.dataset.painted = String(Number(canvas.dataset.painted || 0) + 1);
    renderStatus();
  }

  function renderStatus() {
    if (!data) return;
    const d = data;
    const n = d.watched.length;
    const k = selected === null ? -1 : d.watched.indexOf(selected);
    const loss = selected !== null && selected < d.nSteps ? d.loss[selected] : NaN;
    stepText.textContent = selected === null ? `${d.nSteps} steps, none watched` : `step ${selected} (${k + 1} of ${n} watched, ${d.nSteps} steps) · loss ${formatNumber(loss)}`;
    first.disabled = !d.first;
    first.title = d.first ? `Step ${d.first.step}${d.first.name ? `: born at ${d.first.name}` : ''}` : 'No step had a NaN or an Inf gradient';
    legend.textContent = `colour: log10 gradient norm ${formatNumber(d.range[0])} … ${formatNumber(d.range[1])}; red: NaN/Inf`;
    moved.replaceChildren();
    if (d.moved.length) {
      moved.append(h('span', { class: 'agw-tl-moved-title' }, 'Moved > 10x: '));
      for (const m of d.moved) {
        const b = button(`${m.module || 'model'} ×${formatNumber(m.factor)} (step ${m.low_step} ↔ ${m.high_step})`, 'Show this module\'s row', 'agw-link agw-tl-moved-item');
        b.addEventListener('click', () => reveal(m.module));
        moved.append(b);
      }
    }
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
  first.addEventListener('click', () => {
    const f = data?.first;
    if (!f) return;
    stop();
    const held = ctx.model.get(TRAIT.WATCH_STEP);
    let text = f.watched
      ? `Step ${f.step}: ${f.name ? `born at ${f.name} (${f.node})` : 'no birth node found'}${f.cause ? `: ${f.cause}` : ''}${f.expected ? ' (the loss scaler\'s expected overflow)' : ''}`
      : `Step ${f.step}: a parameter gradient came out non-finite; that step was not watched (every=${data?.every ?? 1}), watch every step to see where it was born`;
    if (f.watched && !ctx.live && f.step !== held) text += `. This page holds the graph of step ${held} only: open the watch in a notebook to see step ${f.step}.`;
    cause.textContent = text;
    if (f.watched && (ctx.live || f.step === held)) select(f.step, f.node);
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
    renderLabels();
    paint();
  };
  const onStep = () => {
    const s = ctx.model.get(TRAIT.WATCH_STEP);
    if (Number.isInteger(s)) selected = s;
    schedule(paint);
  };
  /** @type {[string, () => void][]} */
  const listeners = [
    [`change:${TRAIT.TIMELINE}`, onData],
    [`change:${TRAIT.WATCH_STEP}`, onStep],
  ];
  for (const [ev, cb] of listeners) ctx.model.on(ev, cb);
  renderLabels();
  schedule(paint);

  return {
    el,
    paint,
    select,
    state: () => ({ expanded: [...expanded], selected, playing: timer !== null }),
    destroy() {
      destroyed = true;
      stop();
      rowsReq.drop();
      for (const [ev, cb] of listeners) ctx.model.off(ev, cb);
    },
  };
}

