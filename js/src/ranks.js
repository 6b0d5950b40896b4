/**
 * The rank selector of `aw.explore(group)`: every rank's files of one distributed run
 * (`aw.load_watch('run_{rank}.awwatch')`, `aw.load_recording('x_{rank}.awrec')`), shown one rank
 * at a time, the selected rank's usual view below (a watch's timeline and graph, or a replay).
 *
 * Draws only: each rank's line ("rank 1: NaN/Inf born at step 3 in SqrtBackward0") and the
 * sentence under it come from Python (`ranks` trait, view/ranklines.py); the rank shown is the
 * `rank` trait. Live, a pick sends `select_rank` and the control shows the rank Python shows
 * until it answers (a refused pick leaves it as it was). In the standalone page
 * (`mountWalkthroughRanks`), every carried rank's walkthrough is in the page: a pick swaps the
 * view below for that rank's.
 *
 * Guarantees: a malformed `ranks` payload shows no line rather than throwing; the control is a
 * labelled native <select> (keyboard: arrows, type-ahead), described by the selected rank's
 * sentence.
 */
import './ranks.css';
import { domHelpers } from './dom.js';
import { asRecord } from './jsonsafe.js';
import { MSG, TRAIT } from './protocol.js';
import { ALARM_COLOR } from './style.js';
import { cellColor } from './timeline.js';
import { mountWalkthrough } from './walkthrough.js';

/**
 * @typedef {{ nSteps: number, values: (number | null)[], alarm: number[], range: [number, number] }} Strip
 *   a watch rank's row of the timeline: the model's log10 gradient norm per column of steps
 * @typedef {{ rank: number, label: string, detail: string, role: string, strip: Strip | null }} RankLine
 * @typedef {Pick<import('./protocol.js').WidgetModel, 'get' | 'on' | 'off'>} RankModel
 */

/** Roles drawn as where it broke: the NaN/Inf's birth, the node that raised. */
export const CULPRIT_ROLES = Object.freeze(['born', 'raised']);

/**
 * A line's `strip`, validated (null when absent or malformed).
 * @param {unknown} data
 * @returns {Strip | null}
 * @example decodeStrip({ n_steps: 2, values: [null, 1], alarm: [0], range: [1, 2] }).alarm // [0]
 */
export function decodeStrip(data) {
  const raw = asRecord(data);
  if (!Array.isArray(raw.values) || !Number.isInteger(raw.n_steps)) return null;
  const range = Array.isArray(raw.range) && raw.range.length === 2 && raw.range.every(Number.isFinite) ? /** @type {[number, number]} */ ([raw.range[0], raw.range[1]]) : /** @type {[number, number]} */ ([0, 1]);
  return {
    nSteps: Number(raw.n_steps),
    values: raw.values.map((/** @type {unknown} */ v) => (typeof v === 'number' && Number.isFinite(v) ? v : null)),
    alarm: Array.isArray(raw.alarm) ? raw.alarm.filter((/** @type {unknown} */ c) => Number.isInteger(c)) : [],
    range,
  };
}

/**
 * The `ranks` trait, validated: one line per rank, in the order given.
 * @param {unknown} raw
 * @returns {RankLine[]}
 * @example decodeRanks([{ rank: 1, label: 'rank 1: ok' }, { rank: -1 }]) // [{ rank: 1, label: 'rank 1: ok', detail: '', role: '', strip: null }]
 */
export function decodeRanks(raw) {
  if (!Array.isArray(raw)) return [];
  return raw
    .filter((l) => l && typeof l === 'object' && Number.isInteger(l.rank) && l.rank >= 0)
    .map((l) => ({
      rank: l.rank,
      label: typeof l.label === 'string' ? l.label : `rank ${l.rank}`,
      detail: typeof l.detail === 'string' ? l.detail : '',
      role: typeof l.role === 'string' ? l.role : '',
      strip: decodeStrip(l.strip),
    }));
}

/**
 * The selector: a labelled <select> of the ranks' lines and, under it, the shown rank's sentence.
 * @param {Document} doc
 * @param {{ model: RankModel, choose: (rank: number) => void, note?: string, held?: (rank: number) => boolean, world?: number }} ctx
 *   `choose`: a rank was picked; `note`: a line under the selector (the page's ranks it lacks);
 *   `held`: whether a rank can be shown (a page lacking it: its option disabled); `world`: the
 *   number of ranks of the run (default: the lines')
 * @returns {{ el: HTMLElement, select: HTMLSelectElement, update: () => void, destroy: () => void }}
 */
export function createRankBar(doc, ctx) {
  const { h } = domHelpers(doc);
  const id = `agw-rank-${Math.random().toString(36).slice(2, 8)}`;
  const select = /** @type {HTMLSelectElement} */ (h('select', { class: 'agw-select agw-rank-select', id, title: 'Show another rank of the run' }));
  const detail = h('div', { class: 'agw-rank-detail', id: `${id}-detail` });
  select.setAttribute('aria-describedby', detail.id);
  const count = h('span', { class: 'agw-rank-count' });
  const row = h('div', { class: 'agw-rank-row' }, h('label', { class: 'agw-rank-label', for: id }, 'Rank'), select, count);
  const el = h('div', { class: 'agw-ranks', role: 'group', 'aria-label': 'Ranks of the distributed run' }, row, detail);
  // a watch group: each rank's row of the timeline (the model's gradient norm across the steps)
  const strips = h('div', { class: 'agw-rank-strips', role: 'group', 'aria-label': "Each rank's gradient norm across the steps" });
  el.append(strips);
  if (ctx.note) el.append(h('div', { class: 'agw-rank-note', role: 'note' }, ctx.note));
  /** @type {RankLine[]} */
  let lines = [];

  function render() {
    lines = decodeRanks(ctx.model.get(TRAIT.RANKS));
    select.replaceChildren(...lines.map((l) => {
      const held = ctx.held ? ctx.held(l.rank) : true;
      const o = /** @type {HTMLOptionElement} */ (h('option', { value: String(l.rank), title: l.detail }, held ? l.label : `${l.label} (not in this page)`));
      o.disabled = !held;
      return o;
    }));
    renderStrips();
    const world = ctx.world ?? lines.length;
    count.textContent = `of ${world} rank${world === 1 ? '' : 's'}`;
    update();
  }

  /** One row per rank (a button: a click shows that rank) with its strip painted; a caption. */
  function renderStrips() {
    const rows = lines.filter((l) => l.strip);
    strips.hidden = !rows.length;
    strips.replaceChildren();
    if (!rows.length) return;
    for (const l of rows) {
      const strip = /** @type {Strip} */ (l.strip);
      const canvas = /** @type {HTMLCanvasElement} */ (h('canvas', { class: 'agw-rank-strip-canvas', 'aria-hidden': 'true', width: String(Math.max(1, strip.values.length)), height: '1' }));
      const held = ctx.held ? ctx.held(l.rank) : true;
      const b = /** @type {HTMLButtonElement} */ (h('button', { type: 'button', class: 'agw-rank-strip', 'data-rank': String(l.rank), 'aria-label': l.label, title: l.detail || l.label }, h('span', { class: 'agw-rank-strip-name' }, `rank ${l.rank}`), canvas));
      b.disabled = !held;
      b.addEventListener('click', () => pick(l.rank));
      strips.append(b);
      paintStrip(canvas, strip);
    }
    const s0 = /** @type {Strip} */ (rows[0].strip);
    strips.append(h('div', { class: 'agw-rank-strip-caption' }, `steps 0 … ${Math.max(0, s0.nSteps - 1)} · colour: log10 gradient norm of the model; red: NaN/Inf`));
  }

  /** Show the rank Python shows: the control's value, its sentence, its role. */
  function update() {
    const r = ctx.model.get(TRAIT.RANK);
    const line = lines.find((l) => l.rank === r);
    if (line) select.value = String(line.rank);
    detail.textContent = line ? line.detail : '';
    detail.title = detail.textContent;
    el.dataset.role = line ? line.role : '';
    el.classList.toggle('agw-rank-culprit', !!line && CULPRIT_ROLES.includes(line.role));
    for (const b of strips.querySelectorAll('.agw-rank-strip')) b.setAttribute('aria-pressed', String(Number(/** @type {HTMLElement} */ (b).dataset.rank) === r));
    el.removeAttribute('aria-busy');
  }

  /** A rank was picked: ask for it; show the rank Python shows until it answers. @param {number} r */
  function pick(r) {
    if (!Number.isInteger(r) || r === ctx.model.get(TRAIT.RANK)) return;
    el.setAttribute('aria-busy', 'true');
    ctx.choose(r);
    update(); // (a refused pick leaves it as it was)
  }
  select.addEventListener('change', () => pick(Number(select.value)));
  // The host page's own shortcuts (JupyterLab's command mode: arrows move between cells, letters
  // insert or delete them) must not take the keys the control uses: arrows, Home/End, typing.
  select.addEventListener('keydown', (ev) => {
    if (ev.key !== 'Tab' && ev.key !== 'Escape' && !ev.ctrlKey && !ev.metaKey && !ev.altKey) ev.stopPropagation();
  });
  /** @type {[string, () => void][]} */
  const listeners = [
    [`change:${TRAIT.RANKS}`, render],
    [`change:${TRAIT.RANK}`, update],
  ];
  for (const [ev, cb] of listeners) ctx.model.on(ev, cb);
  render();
  return {
    el,
    select,
    update,
    destroy() {
      for (const [ev, cb] of listeners) ctx.model.off(ev, cb);
    },
  };
}

/**
 * Paint a strip: one pixel per column, its colour the timeline's (timeline.js cellColor) on the
 * strip's range, red where a step was non-finite, nothing where no step was watched.
 * @param {HTMLCanvasElement} canvas @param {Strip} strip
 */
function paintStrip(canvas, strip) {
  const g = canvas.getContext('2d');
  if (!g) return;
  const [lo, hi] = strip.range;
  strip.values.forEach((v, x) => {
    const c = v === null ? null : cellColor(v, lo, hi);
    if (c === null) return;
    g.fillStyle = c;
    g.fillRect(x, 0, 1, 1);
  });
  g.fillStyle = ALARM_COLOR;
  for (const x of strip.alarm) g.fillRect(x, 0, 1, 1);
  canvas.dataset.painted = String(strip.values.length);
}

/**
 * The live selector (index.js): picks go to the kernel as `select_rank`; null when the widget
 * shows no rank group.
 * @param {Document} doc @param {RankModel} model @param {(cmd: { type: string, [k: string]: unknown }) => void} send
 */
export function createLiveRankBar(doc, model, send) {
  if (!decodeRanks(model.get(TRAIT.RANKS)).length) return null;
  return createRankBar(doc, { model, choose: (rank) => send({ type: MSG.SELECT_RANK, rank }) });
}

/**
 * The standalone page of a rank group (export/rankpage.py): the selector above the shown rank's
 * walkthrough (its timeline too, for a watch group), each carried rank's walkthrough swapped in
 * on a pick. Ranks the page does not carry are listed, disabled, with how to see them.
 * @param {HTMLElement} el
 * @param {unknown} walkthrough the page's walkthrough (protocol.js `Walkthrough`), with `ranks`
 *   ({ lines, selected, pattern, world, carried, walks, kind }: protocol.js `WalkRanks`)
 * @param {{ fill?: boolean }} [opts]
 * @returns {() => void} cleanup
 */
export function mountWalkthroughRanks(el, walkthrough, opts = {}) {
  const doc = el.ownerDocument;
  const { h } = domHelpers(doc);
  const info = /** @type {import('./protocol.js').WalkRanks} */ (asRecord(asRecord(walkthrough).ranks));
  const walks = asRecord(info.walks);
  const carried = new Set(Array.isArray(info.carried) ? info.carried : [info.selected]);
  /** @type {Partial<import('./protocol.js').Traits>} */
  const traits = { [TRAIT.RANKS]: info.lines, [TRAIT.RANK]: info.selected };
  /** @type {Set<Function>} */
  const onRank = new Set();
  const model = {
    /** @template {keyof import('./protocol.js').Traits} K @param {K} k @returns {import('./protocol.js').Traits[K]} undefined for a trait the page does not hold */
    get: (k) => /** @type {import('./protocol.js').Traits[K]} */ (traits[k]),
    on: (/** @type {string} */ ev, /** @type {Function} */ cb) => ev === `change:${TRAIT.RANK}` && onRank.add(cb),
    off: (/** @type {string} */ ev, /** @type {Function} */ cb) => onRank.delete(cb),
  };
  const world = typeof info.world === 'number' && Number.isInteger(info.world) ? info.world : carried.size;
  const load = info.kind === 'recording' ? 'aw.load_recording' : 'aw.load_watch';
  const note = carried.size < world
    ? `This page holds ${carried.size} of the ${world} ranks; to see the others, run aw.explore(${load}('${String(info.pattern ?? '')}')) in a notebook.`
    : '';
  const host = h('div', { class: 'agw-rank-host' });
  /** @type {(() => void) | null} */
  let cleanup = null;
  /** @param {number | undefined} rank undefined: the page's own walkthrough when it names no rank */
  function show(rank) {
    const walk = rank === info.selected ? walkthrough : walks[String(rank)];
    if (!walk) return;
    cleanup?.();
    const view = h('div', { class: 'agw-rank-view' });
    host.replaceChildren(view);
    cleanup = mountWalkthrough(view, walk, opts);
    traits[TRAIT.RANK] = rank;
    for (const cb of onRank) cb();
  }
  const bar = createRankBar(doc, { model, choose: show, note, held: (r) => carried.has(r), world });
  el.classList.add('agw-ranks-page');
  el.append(bar.el, host);
  show(info.selected);
  return () => {
    cleanup?.();
    bar.destroy();
  };
}
