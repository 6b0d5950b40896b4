/**
 * One view of an AutogradWidget: toolbar, status line, the plotly drawing, the "waiting" panel,
 * the hover card and the legend. Reads the synced traits, sends commands through a backend,
 * and never computes an autograd fact itself.
 */
import Plotly from './plotly.js';
import { decodeGraph, decodeState } from './model.js';
import {
  T,
  buildFigure,
  combine,
  fitRange,
  statePatches,
  viewPatches,
} from './figure.js';
import { edgeRows, nodeRows, replyRows, waitingRows } from './labels.js';
import { readTheme, watchTheme } from './theme.js';
import { ALARM_COLOR, KIND_STYLE, NEXT_COLOR, SELECT_COLOR } from './style.js';

/** Chunk length asked of the kernel for "Run to end" (ms of stepping per message). */
export const RUN_CHUNK_MS = 100;
/** Play stops when no new state arrives this long after a step was sent. */
export const PLAY_STALL_MS = 15000;
export const SPEED = Object.freeze({ min: 1, max: 30, initial: 4 });

/**
 * @typedef {{ get(name: string): any, set(name: string, value: any): void, save_changes(): void,
 *   on(ev: string, cb: Function): void, off(ev: string, cb: Function): void }} Model
 * @typedef {{ schedule?: (cb: () => void) => void, now?: () => number }} ViewOptions
 */

/**
 * @param {{ model: Model, el: HTMLElement, backend: import('./backend.js').Backend, options?: ViewOptions }} ctx
 * @returns {() => void} cleanup
 */
export function createView({ model, el, backend, options = {} }) {
  const doc = el.ownerDocument;
  const win = doc.defaultView ?? globalThis;
  const schedule =
    options.schedule ??
    (typeof win.requestAnimationFrame === 'function' ? (/** @type {() => void} */ cb) => win.requestAnimationFrame(cb) : (/** @type {() => void} */ cb) => cb());
  const now = options.now ?? (() => Date.now());

  // ---- DOM -------------------------------------------------------------------------------------
  const root = h('div', { class: 'agw-root', tabindex: '0', 'aria-label': 'Backward graph stepper' });
  const toolbar = h('div', { class: 'agw-toolbar', role: 'toolbar', 'aria-label': 'Backward stepping' });
  const btn = {
    step: button('Step', 'Run the next node (→)'),
    back: button('Back', 'Undo the last step (←)'),
    runTo: button('Run to node', 'Run up to and including the selected node'),
    runEnd: button('Run to end', 'Run every remaining step'),
    reset: button('Reset', 'Back to step 0'),
    play: button('Play', 'Step automatically (space)'),
  };
  btn.play.classList.add('agw-play');
  const speed = /** @type {HTMLInputElement} */ (h('input', {
    type: 'range', min: String(SPEED.min), max: String(SPEED.max), step: '1', value: String(SPEED.initial),
    'aria-label': 'Speed (steps per second)', class: 'agw-speed-input',
  }));
  const speedOut = h('span', { class: 'agw-speed-value' }, `${SPEED.initial}/s`);
  const speedBox = h('label', { class: 'agw-speed', title: 'Play speed, steps per second' }, 'Speed', speed, speedOut);
  const fit = button('Fit', 'Show the whole graph');
  fit.classList.add('agw-fit');
  toolbar.append(btn.step, btn.back, btn.runTo, btn.runEnd, btn.reset, sep(), btn.play, speedBox, sep(), fit);
  // Layout direction, when the model has the trait: Python lays the graph out again.
  const direction = /** @type {HTMLSelectElement} */ (h('select', { class: 'agw-direction', 'aria-label': 'Layout direction', title: 'Roots on top or on the left' }));
  direction.append(h('option', { value: 'TB' }, 'Top → bottom'), h('option', { value: 'LR' }, 'Left → right'));
  if (model.get('orientation') !== undefined) toolbar.append(direction);
  const progress = h('div', { class: 'agw-progress', role: 'progressbar', 'aria-label': 'Steps done', 'aria-valuemin': '0' });
  const progressBar = h('div', { class: 'agw-progress-bar' });
  progress.append(progressBar);
  const status = h('div', { class: 'agw-status', role: 'status', 'aria-live': 'polite' });
  const alert = h('div', { class: 'agw-alert', role: 'alert', hidden: '' });
  const notice = h('div', { class: 'agw-notice', role: 'note', hidden: '' });
  const main = h('div', { class: 'agw-main' });
  const plot = h('div', { class: 'agw-plot' });
  const waiting = h('div', { class: 'agw-waiting', hidden: '', role: 'note', 'aria-label': 'Gradients waiting in the next node' });
  const card = h('div', { class: 'agw-card', role: 'tooltip', hidden: '' });
  const empty = h('div', { class: 'agw-empty', hidden: '' }, 'The graph has no nodes.');
  main.append(plot, card, empty);
  const legend = buildLegend();
  root.append(toolbar, progress, status, waiting, notice, alert, main, legend);
  el.appendChild(root);

  // ---- state -----------------------------------------------------------------------------------
  let graph = decodeGraph(model.get('_graph'));
  let state = decodeState(model.get('_state'), graph);
  let theme = readTheme(root);
  let size = { width: 0, height: 0 };
  let range = fitRange(graph, plotSize());
  /** True while the view is the fitted one: a resize then refits instead of keeping the zoom. */
  let fitted = true;
  let selected = indexOfSelected();
  /** @type {'idle' | 'play' | 'run'} */
  let mode = 'idle';
  let plotted = false;
  let destroyed = false;
  let drawPending = false;
  let patchPending = false;
  /** @type {any} */
  let playTimer = null;
  let playSentAt = 0;
  let playSentSeq = -1;
  /** @type {any} */
  let alertTimer = null;
  /** @type {{ kind: 'node' | 'edge', index: number } | null} */
  let hovered = null;
  /** @type {Map<string, any>} */
  const replies = new Map();

  function indexOfSelected() {
    const id = model.get('selected');
    if (id === null || id === undefined) return -1;
    return graph.indexOf.get(String(id)) ?? -1;
  }

  function currentView() {
    return { range, size: plotSize(), selected };
  }

  function plotSize() {
    const w = size.width || plot.clientWidth || 800;
    const hgt = size.height || plot.clientHeight || Math.max(200, (Number(model.get('height')) || 600) - 110);
    return { width: w, height: hgt };
  }

  // ---- drawing ---------------------------------------------------------------------------------
  /** Full draw: creation, a new `_graph`, a theme change. */
  function draw() {
    if (destroyed) return;
    empty.hidden = graph.n > 0;
    const fig = buildFigure(graph, state, theme, currentView());
    const p = plotted ? Plotly.react(plot, fig.data, fig.layout, fig.config) : Plotly.newPlot(plot, fig.data, fig.layout, fig.config);
    if (!plotted) {
      plotted = true;
      Promise.resolve(p).then(() => bindPlotEvents());
    }
  }

  /** Patch the traces for the current state (called once per animation frame at most). */
  function patchState() {
    patchPending = false;
    if (!plotted || destroyed) return;
    const [update, traces] = combine(statePatches(graph, state, theme, currentView()));
    Plotly.restyle(plot, update, traces);
  }

  function patchView() {
    if (!plotted || destroyed) return;
    const [update, traces] = combine(viewPatches(graph, state, theme, currentView()));
    Plotly.restyle(plot, update, traces);
  }

  function requestPatch() {
    if (patchPending) return;
    patchPending = true;
    schedule(patchState);
  }

  function ensurePlot() {
    if (plotted || destroyed || drawPending) return;
    draw();
  }

  /** @type {Record<string, (ev: any) => void>} */
  let plotHandlers = {};
  function bindPlotEvents() {
    const gd = /** @type {any} */ (plot);
    if (typeof gd.on !== 'function') return;
    plotHandlers = {
      plotly_relayout: () => {
        const xr = gd.layout?.xaxis?.range;
        const yr = gd.layout?.yaxis?.range;
        if (Array.isArray(xr) && Array.isArray(yr)) {
          const next = { x: /** @type {[number, number]} */ ([+xr[0], +xr[1]]), y: /** @type {[number, number]} */ ([+yr[0], +yr[1]]) };
          if (next.x.every(Number.isFinite) && next.y.every(Number.isFinite)) {
            const changed = next.x[0] !== range.x[0] || next.x[1] !== range.x[1] || next.y[0] !== range.y[0] || next.y[1] !== range.y[1];
            range = next;
            if (changed) {
              fitted = false;
              patchView();
            }
          }
        }
      },
      plotly_hover: (ev) => onHover(ev),
      plotly_unhover: () => hideCard(),
      plotly_click: (ev) => onClick(ev),
    };
    for (const [name, cb] of Object.entries(plotHandlers)) gd.on(name, cb);
  }

  // ---- toolbar / panels ------------------------------------------------------------------------
  function updateChrome() {
    const busy = mode !== 'idle';
    const failed = state.error !== null;
    btn.step.disabled = busy || state.done;
    btn.back.disabled = busy || state.position <= 0;
    btn.runTo.disabled = busy || selected < 0;
    btn.runEnd.disabled = busy || state.done;
    btn.reset.disabled = busy || (state.position <= 0 && !failed);
    btn.play.textContent = busy ? 'Pause' : 'Play';
    btn.play.setAttribute('aria-pressed', busy ? 'true' : 'false');
    btn.play.disabled = !busy && state.done;
    btn.runTo.title = selected >= 0 ? `Run up to and including ${graph.names[selected] || graph.labels[selected]}` : 'Select a node first (click it)';
    status.textContent = state.status;
    direction.value = graph.orientation;
    notice.hidden = !state.notice;
    notice.textContent = state.notice ? `⚠ ${state.notice}` : '';
    root.classList.toggle('agw-busy', busy || state.running);
    root.classList.toggle('agw-done', state.done);
    root.classList.toggle('agw-failed', failed);
    const total = Math.max(state.total, 0);
    progressBar.style.width = total > 0 ? `${(100 * Math.min(state.position, total)) / total}%` : '0%';
    progress.setAttribute('aria-valuemax', String(total));
    progress.setAttribute('aria-valuenow', String(state.position));
    if (failed && state.error) {
      const who = state.error.node >= 0 ? graph.names[state.error.node] || graph.labels[state.error.node] : 'a node';
      showAlert(`${who} failed: ${state.error.message}`, 'error');
    } else if (alert.dataset.kind === 'error') {
      hideAlert();
    }
    updateWaiting();
  }

  /** One line under the status: the node about to run and the gradients waiting in its slots. */
  function updateWaiting() {
    const i = state.next;
    if (i < 0 || state.done) {
      waiting.hidden = true;
      waiting.replaceChildren();
      waiting.removeAttribute('title');
      return;
    }
    waiting.hidden = false;
    const rows = state.waiting.length ? waitingRows(state.waiting) : [['', 'no input slots']];
    const name = graph.names[i] || graph.labels[i];
    waiting.replaceChildren(
      h('span', { class: 'agw-dot', style: `background:${NEXT_COLOR}` }),
      h('span', { class: 'agw-waiting-title' }, `Next: ${name}`),
      ...rows.map(([k, v]) => h('span', { class: 'agw-slot' }, h('span', { class: 'agw-slot-name' }, k), ` ${v}`)),
    );
    waiting.title = [`Next: ${name}`, ...rows.map(([k, v]) => `${k} ${v}`)].join('\n');
  }

  /** @param {string} text @param {'error' | 'warning'} kind */
  function showAlert(text, kind) {
    clearTimeout(alertTimer);
    alert.hidden = false;
    alert.dataset.kind = kind;
    alert.textContent = (kind === 'error' ? '✖ ' : '⚠ ') + text;
    if (kind === 'warning') alertTimer = setTimeout(() => (state.error ? updateChrome() : hideAlert()), 8000);
  }

  function hideAlert() {
    alert.hidden = true;
    delete alert.dataset.kind;
    alert.textContent = '';
  }

  // ---- commands --------------------------------------------------------------------------------
  /** @param {{ type: string, [k: string]: unknown }} cmd */
  const send = (cmd) => backend.command(cmd);

  function step() {
    if (mode !== 'idle' || state.done) return;
    send({ type: 'step' });
  }
  function back() {
    if (mode !== 'idle' || state.position <= 0) return;
    send({ type: 'back' });
  }
  function runToSelected() {
    if (mode !== 'idle' || selected < 0) return;
    send({ type: 'run_to', node: selected });
  }
  function runToEnd() {
    if (mode !== 'idle' || state.done) return;
    mode = 'run';
    updateChrome();
    send({ type: 'run', chunk_ms: RUN_CHUNK_MS });
  }
  function reset() {
    if (mode !== 'idle') return;
    send({ type: 'reset' });
  }
  function play() {
    if (mode !== 'idle' || state.done) return;
    mode = 'play';
    updateChrome();
    playTick();
  }
  function pause() {
    if (mode === 'idle') return;
    mode = 'idle';
    clearTimeout(playTimer);
    playTimer = null;
    send({ type: 'pause' });
    updateChrome();
  }
  function togglePlay() {
    if (mode === 'idle') play();
    else pause();
  }
  function stopQuietly() {
    mode = 'idle';
    clearTimeout(playTimer);
    playTimer = null;
    updateChrome();
  }

  function playTick() {
    playTimer = null;
    if (mode !== 'play') return;
    if (state.done || state.error) return stopQuietly();
    playSentAt = now();
    playSentSeq = state.seq;
    send({ type: 'step' });
    // A step that produces no new state (rejected, kernel busy or gone) must not hang Play forever.
    playTimer = setTimeout(() => {
      if (mode === 'play' && state.seq === playSentSeq) stopQuietly();
    }, PLAY_STALL_MS);
  }

  /** Keep Play / Run to end going when a new state arrives. */
  function continueRun() {
    if (mode === 'play') {
      if (state.done || state.error) return stopQuietly();
      if (state.seq === playSentSeq) return; // not our step's answer yet
      clearTimeout(playTimer);
      const interval = 1000 / Number(speed.value || SPEED.initial);
      playTimer = setTimeout(playTick, Math.max(0, interval - (now() - playSentAt)));
    } else if (mode === 'run') {
      if (state.done || state.error || !state.running) return stopQuietly();
      send({ type: 'run', chunk_ms: RUN_CHUNK_MS });
    }
  }

  btn.step.addEventListener('click', step);
  btn.back.addEventListener('click', back);
  btn.runTo.addEventListener('click', runToSelected);
  btn.runEnd.addEventListener('click', runToEnd);
  btn.reset.addEventListener('click', reset);
  btn.play.addEventListener('click', togglePlay);
  fit.addEventListener('click', fitView);
  direction.addEventListener('change', () => {
    model.set('orientation', direction.value);
    model.save_changes();
  });
  speed.addEventListener('input', () => {
    speedOut.textContent = `${speed.value}/s`;
  });

  function fitView() {
    range = fitRange(graph, plotSize());
    fitted = true;
    if (!plotted) return;
    Promise.resolve(Plotly.relayout(plot, { 'xaxis.range': [...range.x], 'yaxis.range': [...range.y] })).then(() => patchView());
  }

  /** @param {KeyboardEvent} ev */
  function onKey(ev) {
    if (ev.altKey || ev.ctrlKey || ev.metaKey || ev.shiftKey) return;
    const target = /** @type {HTMLElement | null} */ (ev.target);
    const tag = target?.tagName;
    if (tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT') return;
    if (ev.key === 'ArrowRight') step();
    else if (ev.key === 'ArrowLeft') back();
    else if (ev.key === ' ' || ev.key === 'Spacebar') {
      if (tag === 'BUTTON') return; // the button's own click handles space
      togglePlay();
    } else if (ev.key === 'Escape') {
      hideCard();
      return;
    } else return;
    ev.preventDefault();
    ev.stopPropagation();
  }
  root.addEventListener('keydown', onKey);
  /** @param {MouseEvent} ev */
  const focusOnPress = (ev) => {
    const t = /** @type {HTMLElement} */ (ev.target);
    if (!t.closest?.('button, input, label, a')) root.focus({ preventScroll: true });
  };
  root.addEventListener('mousedown', focusOnPress);

  // ---- selection, hover ------------------------------------------------------------------------
  /** @param {any} ev */
  function onClick(ev) {
    const pt = ev?.points?.[0];
    if (!pt) return;
    if (pt.curveNumber === T.nodes) {
      const i = pt.pointNumber ?? pt.pointIndex;
      if (i === undefined || i < 0 || i >= graph.n) return;
      model.set('selected', graph.ids[i]);
      model.save_changes();
      selected = i;
      updateChrome();
      patchView();
    }
  }

  /** @param {any} ev */
  function onHover(ev) {
    const pt = ev?.points?.[0];
    if (!pt) return;
    const i = pt.pointNumber ?? pt.pointIndex;
    /** @type {{ kind: 'node' | 'edge', index: number } | null} */
    let target = null;
    if (pt.curveNumber === T.nodes && i >= 0 && i < graph.n) target = { kind: 'node', index: i };
    else if (pt.curveNumber === T.edgeHit && i >= 0 && i < graph.m) target = { kind: 'edge', index: i };
    if (!target) return;
    hovered = target;
    const mouse = ev.event;
    showCard(target, mouse ? { x: mouse.clientX, y: mouse.clientY } : null);
  }

  /**
   * @param {{ kind: 'node' | 'edge', index: number }} target
   * @param {{ x: number, y: number } | null} at
   */
  function showCard(target, at) {
    const { kind, index } = target;
    const title =
      kind === 'node'
        ? `${graph.names[index] || graph.labels[index]}${graph.labels[index] && graph.kinds[index] !== 'function' ? ` · ${graph.labels[index]}` : ''}`
        : `${graph.labels[graph.src[index]] || graph.names[graph.src[index]]} → ${graph.labels[graph.dst[index]] || graph.names[graph.dst[index]]}`;
    const rows = kind === 'node' ? nodeRows(graph, index) : edgeRows(graph, state, index);
    const dyn = h('div', { class: 'agw-card-dyn' });
    card.replaceChildren(h('div', { class: 'agw-card-title' }, title), table(rows), dyn);
    card.dataset.kind = kind;
    card.dataset.index = String(index);
    card.hidden = false;
    if (at) placeCard(at);
    const key = `${kind}:${index}:${state.seq}`;
    const fill = (/** @type {any} */ data) => {
      if (!hovered || hovered.kind !== kind || hovered.index !== index || card.hidden) return;
      const seen = new Set(rows.map(([k]) => k));
      const more = replyRows(data, graph).filter(([k]) => !seen.has(k));
      dyn.replaceChildren(more.length ? table(more) : '');
      if (data && typeof data === 'object' && data.error) dyn.append(h('div', { class: 'agw-card-error' }, `✖ ${data.error}`));
      if (at) placeCard(at);
    };
    if (replies.has(key)) return fill(replies.get(key));
    if (typeof backend.inspect !== 'function') return;
    dyn.replaceChildren(h('div', { class: 'agw-card-loading' }, '…'));
    backend
      .inspect(kind === 'node' ? { node: index } : { edge: index })
      .then((data) => {
        replies.set(key, data);
        if (replies.size > 200) replies.delete(replies.keys().next().value);
        fill(data);
      })
      .catch(() => dyn.replaceChildren(''));
  }

  /** @param {{ x: number, y: number }} at */
  function placeCard(at) {
    const box = main.getBoundingClientRect();
    const cw = card.offsetWidth || 260;
    const ch = card.offsetHeight || 120;
    let left = at.x - box.left + 16;
    let top = at.y - box.top + 12;
    if (box.width && left + cw > box.width) left = Math.max(4, at.x - box.left - cw - 16);
    if (box.height && top + ch > box.height) top = Math.max(4, box.height - ch - 4);
    card.style.left = `${left}px`;
    card.style.top = `${top}px`;
  }

  function hideCard() {
    hovered = null;
    card.hidden = true;
  }

  // ---- model events ----------------------------------------------------------------------------
  const onGraph = () => {
    graph = decodeGraph(model.get('_graph'));
    state = decodeState(model.get('_state'), graph);
    selected = indexOfSelected();
    range = fitRange(graph, plotSize());
    fitted = true;
    replies.clear();
    hideCard();
    updateChrome();
    if (plotted) draw();
  };
  const onState = () => {
    state = decodeState(model.get('_state'), graph);
    replies.clear();
    updateChrome();
    if (hovered && !card.hidden) showCard(hovered, null); // the card follows the step
    requestPatch();
    continueRun();
  };
  const onSelected = () => {
    const i = indexOfSelected();
    if (i === selected) return;
    selected = i;
    updateChrome();
    patchView();
  };
  const onHeight = () => applyHeight();
  model.on('change:_graph', onGraph);
  model.on('change:_state', onState);
  model.on('change:selected', onSelected);
  model.on('change:height', onHeight);
  const stopWarnings = backend.onWarning((message) => {
    if (mode !== 'idle') stopQuietly();
    showAlert(message, 'warning');
  });

  function applyHeight() {
    const px = Number(model.get('height')) || 600;
    root.style.height = `${Math.max(240, px)}px`;
  }
  applyHeight();

  // ---- theme and size --------------------------------------------------------------------------
  const stopTheme = watchTheme(root, () => {
    const next = readTheme(root);
    if (JSON.stringify(next) === JSON.stringify(theme)) return;
    theme = next;
    if (plotted) draw();
  });

  /** @type {ResizeObserver | null} */
  let resizer = null;
  const RO = /** @type {any} */ (win).ResizeObserver;
  if (typeof RO === 'function') {
    resizer = new RO(() => {
      const w = Math.floor(plot.clientWidth);
      const hgt = Math.floor(plot.clientHeight);
      if (w <= 0 || hgt <= 0) return;
      if (w === size.width && hgt === size.height) return;
      size = { width: w, height: hgt };
      if (fitted) range = fitRange(graph, size);
      if (!plotted) {
        theme = readTheme(root); // now attached: the host's variables are visible
        ensurePlot();
      } else {
        const update = { width: w, height: hgt, ...(fitted ? { 'xaxis.range': [...range.x], 'yaxis.range': [...range.y] } : {}) };
        Promise.resolve(Plotly.relayout(plot, update)).then(() => patchView());
      }
    });
    /** @type {ResizeObserver} */ (resizer).observe(plot);
  } else {
    ensurePlot();
  }

  updateChrome();

  return () => {
    destroyed = true;
    clearTimeout(playTimer);
    clearTimeout(alertTimer);
    if (mode !== 'idle') send({ type: 'pause' });
    model.off('change:_graph', onGraph);
    model.off('change:_state', onState);
    model.off('change:selected', onSelected);
    model.off('change:height', onHeight);
    stopWarnings();
    stopTheme();
    resizer?.disconnect();
    root.removeEventListener('keydown', onKey);
    root.removeEventListener('mousedown', focusOnPress);
    const gd = /** @type {any} */ (plot);
    if (typeof gd.removeListener === 'function') {
      for (const [name, cb] of Object.entries(plotHandlers)) gd.removeListener(name, cb);
    }
    if (plotted) Plotly.purge(plot);
    root.remove();
  };

  // ---- small DOM helpers -----------------------------------------------------------------------
  /**
   * @param {string} tag @param {Record<string, string>} [attrs] @param {...(Node | string)} kids
   * @returns {HTMLElement}
   */
  function h(tag, attrs = {}, ...kids) {
    const e = doc.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    for (const kid of kids) e.append(kid);
    return e;
  }
  /** @param {string} label @param {string} title @returns {HTMLButtonElement} */
  function button(label, title) {
    const b = /** @type {HTMLButtonElement} */ (h('button', { type: 'button', class: 'agw-button', title }, label));
    return b;
  }
  function sep() {
    return h('span', { class: 'agw-sep', 'aria-hidden': 'true' });
  }
  /** @param {[string, string][]} rows */
  function table(rows) {
    const t = h('table', { class: 'agw-rows' });
    for (const [k, v] of rows) t.append(h('tr', {}, h('th', {}, k), h('td', {}, v)));
    return t;
  }
  function buildLegend() {
    const box = h('div', { class: 'agw-legend', 'aria-label': 'Legend' });
    for (const [key, ks] of Object.entries(KIND_STYLE)) {
      box.append(h('span', { class: 'agw-legend-item' }, h('span', { class: `agw-swatch agw-sym-${ks.symbol}`, style: `background:${ks.color}` }), ks.label));
      void key;
    }
    box.append(
      h('span', { class: 'agw-legend-gap' }),
      h('span', { class: 'agw-legend-item' }, h('span', { class: 'agw-swatch agw-state-pending' }), 'pending'),
      h('span', { class: 'agw-legend-item' }, h('span', { class: 'agw-swatch agw-state-next', style: `border-color:${NEXT_COLOR}` }), 'next'),
      h('span', { class: 'agw-legend-item' }, h('span', { class: 'agw-swatch agw-state-failed' }), 'failed'),
      h('span', { class: 'agw-legend-item' }, h('span', { class: 'agw-swatch agw-state-nograd' }), 'no gradient'),
      h('span', { class: 'agw-legend-gap' }),
      h('span', { class: 'agw-legend-item' }, h('span', { class: 'agw-line agw-line-idle' }), 'not flowed'),
      h('span', { class: 'agw-legend-item' }, h('span', { class: 'agw-line agw-line-none' }), 'None'),
      h('span', { class: 'agw-legend-item' }, h('span', { class: 'agw-line agw-line-alarm', style: `border-color:${ALARM_COLOR}` }), 'NaN/inf'),
      h('span', { class: 'agw-legend-item' }, h('span', { class: 'agw-swatch agw-sym-circle-open', style: `border-color:${SELECT_COLOR}` }), 'selected'),
    );
    return box;
  }
}

