/**
 * One view of an AutogradWidget: toolbars, status line, the canvas drawing, the "waiting" panel,
 * the hover card, the side panels (inspector, memory list) and the legend. Reads the synced
 * traits, sends commands through a backend, and never computes an autograd fact itself.
 */
import { domHelpers } from './dom.js';
import { SAVED_STATE, decodeGraph, decodeState } from './model.js';
import { cameraOf, fitView, projector, rangeAt, rangeOf, zoomAt } from './camera.js';
import { buildDrawing } from './drawing.js';
import { createCanvas } from './canvas.js';
import { boxOfModule, boxRows, countsText, groupReplyRows } from './groups.js';
import { edgeRows, nodeRows, replyRows, waitingRows } from './labels.js';
import { MEMORY_COLORS, decodeMemory, memoryLegend } from './memory.js';
import { createInspector, createMemoryPanel, createSensitivityPanel } from './panel.js';
import { PROBE_SAMPLES, SENSITIVITY_COLORS, decodeLeafDiff, decodeProbe, normText, sensitivityLegend } from './sensitivity.js';
import { GESTURES, RECORDING_GESTURES, createHelp, shortcutFor } from './help.js';
import { createMinimap } from './minimap.js';
import { createSearch } from './search.js';
import { MSG } from './protocol.js';
import { readTheme, watchTheme } from './theme.js';
import { ALARM_COLOR, DIFF_COLOR, EDIT_COLOR, GROUP_COLOR, HIGHLIGHT_COLOR, KIND_STYLE, NEXT_COLOR, RAN_COLOR, SAVED_BADGE, SELECT_COLOR, scaleNote } from './style.js';

/** Chunk length asked of the kernel for "Run to end" (ms of stepping per message). */
export const RUN_CHUNK_MS = 100;
/** Play stops when no new state arrives this long after a step was sent. */
export const PLAY_STALL_MS = 15000;
export const SPEED = Object.freeze({ min: 1, max: 30, initial: 4 });
/** While playing or running, the inspector asks for fresh data at most this often. */
export const INSPECT_THROTTLE_MS = 300;
/** A jump (search, First NaN/Inf, a memory holder) follows the graph this long: Python may
 * unfold modules to reveal the target, which replaces `_graph` after the reply. */
export const JUMP_FOLLOW_MS = 4000;
/** Zooming to a node or edge shows it at least this many pixels per layout unit: where labels
 * reach their largest font (camera.js MAX_FONT_PX / FONT_PER_UNIT = 19.2); further in only
 * grows the boxes past the view, which leaves them unlabelled. */
export const JUMP_PX_PER_UNIT = 20;

/**
 * @typedef {{ get(name: string): any, set(name: string, value: any): void, save_changes(): void,
 *   on(ev: string, cb: Function): void, off(ev: string, cb: Function): void }} Model
 * @typedef {{ schedule?: (cb: () => void) => void, now?: () => number }} ViewOptions
 * @typedef {{ kind: 'node', id: string } | { kind: 'edge', id: string } | { kind: 'box', path: string }} Focus
 *   what the inspector shows: a real node, a real edge, or a module box (local: boxes are not
 *   nodes, so they are not `selected`)
 */

/**
 * Show a toolbar's separators (`.agw-sep`) only between two groups that each show a control: no
 * separator at either end, none next to another, none where the controls it parted are hidden.
 * @param {HTMLElement} bar
 * @example tidySeparators(nav) // [search][NaN] | [plumbing hidden] | [colour] -> one separator
 */
export function tidySeparators(bar) {
  /** @type {HTMLElement | null} */
  let pending = null;
  let seen = false;
  for (const el of /** @type {HTMLElement[]} */ (Array.from(bar.children))) {
    if (el.classList.contains('agw-sep')) {
      el.hidden = true;
      if (seen) pending = el;
      seen = false;
    } else if (!el.hidden) {
      if (pending) pending.hidden = false;
      pending = null;
      seen = true;
    }
  }
}

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
  const { h, button: mkButton, table } = domHelpers(doc);
  const button = (/** @type {string} */ label, /** @type {string} */ title) => mkButton(label, title);

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
  /** The buttons' own titles: a failed step replaces them with the reason they can't go on. */
  const baseTitle = new Map(Object.values(btn).map((b) => [b, b.title]));
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

  // Second row: finding things, folding plumbing, the colour mode.
  const nav = h('div', { class: 'agw-toolbar agw-nav', role: 'toolbar', 'aria-label': 'Navigation' });
  const search = createSearch(doc, {
    request: (query) => request({ type: MSG.SEARCH, query }),
    choose: (m) => jumpToNode(m.id, m.module),
    graph: () => graph,
  });
  const nanBtn = button('First NaN/Inf', 'Jump to the first edge whose gradient has a NaN or an inf');
  const plumbing = /** @type {HTMLInputElement} */ (h('input', { type: 'checkbox', class: 'agw-plumbing-input' }));
  const plumbingBox = h('label', { class: 'agw-check', title: 'Hide pure plumbing nodes (views, reshapes, transposes, expands); their edges are contracted' }, plumbing, 'Hide plumbing');
  const colorMode = /** @type {HTMLSelectElement} */ (h('select', { class: 'agw-select', 'aria-label': 'Colour mode', title: 'Colour nodes by step state (gradient), by the bytes their saved tensors hold (memory) or by the norm of their Jacobian (sensitivity)' }));
  colorMode.append(h('option', { value: 'gradient' }, 'Colour: gradient'), h('option', { value: 'memory' }, 'Colour: memory'), h('option', { value: 'sensitivity' }, 'Colour: sensitivity'));
  const counts = h('span', { class: 'agw-counts', 'aria-label': 'Visible nodes' });
  const help = createHelp(doc, { gestures: backend.live !== false ? GESTURES : RECORDING_GESTURES, onClose: () => root.focus({ preventScroll: true }) });
  nav.append(search.el, nanBtn, sep(), plumbingBox, sep(), colorMode, counts, help.button);
  // A recording (standalone export) has no kernel to re-lay out, fold or unfold: those controls
  // are absent there; the modes whose replies it recorded (`backend.answers`) stay.
  const live = backend.live !== false;
  /** Can the backend answer this request? (a kernel answers all) @param {string} type */
  const canAsk = (type) => live || !!backend.answers?.has(type);
  nanBtn.hidden = !canAsk(MSG.FIRST_NONFINITE);
  /** @type {HTMLOptionElement | null} */ (colorMode.querySelector('option[value="memory"]')).hidden = !canAsk(MSG.MEMORY);
  /** @type {HTMLOptionElement | null} */ (colorMode.querySelector('option[value="sensitivity"]')).hidden = !canAsk(MSG.PROBE);

  const progress = h('div', { class: 'agw-progress', role: 'progressbar', 'aria-label': 'Steps done', 'aria-valuemin': '0' });
  const progressBar = h('div', { class: 'agw-progress-bar' });
  progress.append(progressBar);
  // One line: the stepper's status (ellipsised, the full text in the title) and, after a failed
  // step, the way out, always visible at its right.
  const statusText = h('span', { class: 'agw-status-text' });
  const statusHint = h('span', { class: 'agw-status-hint', id: `agw-hint-${Math.random().toString(36).slice(2, 8)}`, hidden: '' });
  const status = h('div', { class: 'agw-status', role: 'status', 'aria-live': 'polite' }, statusText, statusHint);
  const alert = h('div', { class: 'agw-alert', role: 'alert', hidden: '' });
  const notice = h('div', { class: 'agw-notice', role: 'note', id: `agw-notice-${Math.random().toString(36).slice(2, 8)}`, hidden: '' });
  const body = h('div', { class: 'agw-body' });
  const main = h('div', { class: 'agw-main' });
  const plot = h('div', { class: 'agw-plot' });
  const waiting = h('div', { class: 'agw-waiting', hidden: '', role: 'note', 'aria-label': 'Gradients waiting in the next node' });
  const card = h('div', { class: 'agw-card', role: 'tooltip', hidden: '' });
  const empty = h('div', { class: 'agw-empty', hidden: '' }, 'The graph has no nodes.');
  const minimap = createMinimap(doc, { jump: (r) => moveView(r) });
  main.append(plot, card, empty, minimap.el, help.el);
  const side = h('aside', { class: 'agw-side', hidden: '', 'aria-label': 'Details' });
  const inspector = createInspector(doc, {
    close: () => clearSelection(),
    // folding needs Python to lay the graph out again: no such control on a recording
    collapse: live ? (group) => refold(MSG.COLLAPSE, group) : undefined,
    expand: live ? (group) => refold(MSG.EXPAND, group) : undefined,
    runTo: (target) => {
      if (mode !== 'idle' || refuseAfterFailure('run to a node')) return;
      const i = 'item' in target ? target.item : graph.indexOf.get(target.id) ?? -1;
      if (i >= 0) send({ type: MSG.RUN_TO, node: i });
    },
    selectNode: (id) => selectNodeId(id),
    highlight: (ids) => {
      highlightIds = ids;
      buildLegend();
      paint();
    },
    editEdge: (edge, op, factor) => editEdge(edge, op, factor),
    leafDiff: () => requestLeafDiff(),
  });
  const memoryPanel = createMemoryPanel(doc, {
    select: (id) => jumpToNode(id, null),
    excludeLeaves: (v) => {
      excludeLeaves = v;
      requestMemory();
    },
  });
  const sensitivityPanel = createSensitivityPanel(doc, { select: (id) => jumpToNode(id, null) });
  side.append(memoryPanel.el, sensitivityPanel.el, inspector.el);
  body.append(main, side);
  const legend = h('div', { class: 'agw-legend', 'aria-label': 'Legend' });
  root.append(toolbar, nav, progress, status, waiting, notice, alert, body, legend);
  el.appendChild(root);

  // ---- state -----------------------------------------------------------------------------------
  let graph = decodeGraph(model.get('_graph'));
  let state = decodeState(model.get('_state'), graph);
  let theme = readTheme(root);
  let size = { width: 0, height: 0 };
  let range = fitNow();
  /** True while the view is the fitted one: a resize then refits instead of keeping the zoom. */
  let fitted = true;
  /** @type {Focus | null} */
  let focus = null;
  /** Real node ids marked on the graph (the aliases of the saved tensor open in the inspector). */
  /** @type {string[]} */
  let highlightIds = [];
  /** Module of real nodes we were told about (inspect replies, search matches): a hidden
   * selected node is ringed through its box. */
  /** @type {Map<string, string | null>} */
  const moduleOf = new Map();
  /** @type {'gradient' | 'memory' | 'sensitivity'} */
  let colorBy = 'gradient';
  /** @type {import('./sensitivity.js').Sensitivity | null} */
  let sensitivity = null;
  /** @type {string | null} */
  let sensitivityError = null;
  let sensitivitySeq = 0;
  /** The last rejected what-if edit, shown on that edge's card. */
  /** @type {{ key: string, message: string } | null} */
  let editWarning = null;
  /** An edit sent and not yet answered (a warning in this window belongs to it). */
  /** @type {{ key: string, at: number } | null} */
  let editPending = null;
  /** @type {{ seq: number, loading: boolean, error: string | null, leaves: import('./sensitivity.js').LeafDiff[] } | null} */
  let leafDiff = null;
  /** @type {import('./memory.js').Memory | null} */
  let memory = null;
  /** @type {string | null} */
  let memoryError = null;
  let memorySeq = 0;
  let excludeLeaves = false;
  /** @type {{ kind: 'node' | 'edge', id: string, until: number } | null} */
  let jump = null;
  let selected = -1;
  let selectedEdge = -1;
  /** @type {'idle' | 'play' | 'run' | 'seek'} */
  let mode = 'idle';
  let plotted = false;
  let destroyed = false;
  let paintPending = false;
  /** Set when we asked Python to fold or unfold: the new graph keeps the view (the module
   * opens where its box was) instead of fitting again. */
  let keepView = false;
  const canvas = createCanvas(doc, {
    view: () => ({ range, size: plotSize() }),
    move: (next) => moveView(next),
    hover: (hit, ev) => (hit ? onHover(hit, ev) : hideCard()),
    click: (hit, ev) => onClick(hit, ev),
    fit: () => fitView_(),
  });
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
  /** The inspector's data: the reply for `key` at state `seq` (or its error). */
  /** @type {{ key: string, seq: number, graph: any, data: any, error: string | null }} */
  let inspected = { key: '', seq: -1, graph: null, data: null, error: null };
  /** The target key of the inspect request in flight ("" when none): one at a time per target. */
  let inspectBusy = '';
  let inspectAgain = false;
  let lastInspectAt = -Infinity;
  /** @type {any} */
  let inspectTimer = null;

  refreshSelection();
  syncFocusFromTraits();

  /** The item to ring: the focused box, the selected node, or the box that hides it. */
  function refreshSelection() {
    selected = -1;
    if (focus?.kind === 'box') {
      selected = graph.indexOf.get(`group:${focus.path}`) ?? -1;
    } else {
      const id = model.get('selected');
      if (id !== null && id !== undefined) {
        const i = graph.indexOf.get(String(id));
        if (i !== undefined) selected = i;
        else if (moduleOf.has(String(id))) selected = boxOfModule(graph, moduleOf.get(String(id)));
      }
    }
    const eid = model.get('selected_edge');
    selectedEdge = eid === null || eid === undefined ? -1 : graph.edgeIndexOf.get(String(eid)) ?? -1;
  }

  /** Items of the highlighted ids that are shown. */
  function highlightItems() {
    const out = [];
    for (const id of highlightIds) {
      const i = graph.indexOf.get(id);
      if (i !== undefined) out.push(i);
      else if (moduleOf.has(id)) {
        const b = boxOfModule(graph, moduleOf.get(id));
        if (b >= 0) out.push(b);
      }
    }
    return out;
  }

  /** @returns {import('./drawing.js').ViewSpec} */
  function currentView() {
    return { range, size: plotSize(), selected, selectedEdge, highlight: highlightItems(), colorMode: colorBy, memory: colorBy === 'memory' ? memory : null, sensitivity: colorBy === 'sensitivity' ? sensitivity : null };
  }

  function plotSize() {
    const w = size.width || plot.clientWidth || 800;
    const hgt = size.height || plot.clientHeight || Math.max(200, (Number(model.get('height')) || 600) - 140);
    return { width: w, height: hgt };
  }

  // ---- drawing ---------------------------------------------------------------------------------
  /** The Fit range for this graph and plot: everything when legible, else the smallest legible
   * scale centred on the next node (the minimap shows where that is). */
  function fitNow() {
    return fitView(graph.bounds, plotSize(), { focus: focusPoint(), orientation: graph.orientation }).range;
  }

  /** Where the stepping is: the next node, else the first root. */
  function focusPoint() {
    const i = state.next >= 0 ? state.next : graph.root.indexOf(1);
    return i >= 0 && i < graph.n ? { x: graph.x[i], y: graph.y[i] } : null;
  }

  /** Full draw: creation, a new `_graph`, a theme change. */
  function draw() {
    if (destroyed) return;
    empty.hidden = graph.n > 0;
    if (canvas.el.parentNode !== plot) plot.append(canvas.el);
    plotted = true;
    paint();
  }

  /** The last drawing and what it was built from: panning and zooming reuse it. */
  /** @type {{ key: unknown[], drawing: import('./drawing.js').Drawing } | null} */
  let built = null;
  function drawingNow() {
    const view = currentView();
    const key = [graph, state, theme, view.selected, view.selectedEdge, view.colorMode, view.memory, view.sensitivity, ...(view.highlight ?? [])];
    if (!built || built.key.length !== key.length || built.key.some((k, j) => k !== key[j])) built = { key, drawing: buildDrawing(graph, state, theme, view) };
    return built.drawing;
  }

  /** Repaint the canvas for `at` (default: the view range): edges, boxes, marks, labels. */
  function paint(at = range) {
    if (!plotted || destroyed) return;
    canvas.paint(graph, state, drawingNow(), at, plotSize());
    minimap.update(graph, at, { edge: theme.idleEdge, node: theme.fontMuted, frame: theme.pending, bg: '' });
  }

  /** Show `next` (a drag, the wheel, the minimap). @param {{ x: [number, number], y: [number, number] }} next */
  function moveView(next) {
    range = next;
    fitted = false;
    requestPaint();
  }

  /** Paint at the next animation frame, once however many changes (states of a run, pointer
   * moves) arrive before it; it paints what is current then. */
  function requestPaint() {
    if (paintPending || !plotted || destroyed) return;
    paintPending = true;
    schedule(() => {
      paintPending = false;
      paint();
    });
  }

  function ensurePlot() {
    if (plotted || destroyed) return;
    draw();
  }

  // ---- toolbar / panels ------------------------------------------------------------------------
  /** The item "Run to node" runs to: the focused box, or the selected node when it is shown. */
  function runTarget() {
    if (focus?.kind === 'box') return selected;
    const id = model.get('selected');
    if (id === null || id === undefined) return -1;
    return graph.indexOf.get(String(id)) ?? -1;
  }

  function updateChrome() {
    const busy = mode !== 'idle';
    const failed = state.error !== null;
    const target = runTarget();
    btn.step.disabled = busy || state.done;
    btn.back.disabled = busy || state.position <= 0;
    btn.runTo.disabled = busy || target < 0;
    btn.runEnd.disabled = busy || state.done;
    btn.reset.disabled = busy || (state.position <= 0 && !failed);
    btn.play.textContent = busy ? 'Pause' : 'Play';
    btn.play.setAttribute('aria-pressed', busy ? 'true' : 'false');
    btn.play.disabled = !busy && state.done;
    baseTitle.set(btn.runTo, target >= 0 ? `Run up to and including ${graph.names[target] || graph.labels[target]}` : 'Select a node first (click it)');
    const stuck = failed && !busy ? wayOut() : '';
    for (const b of [btn.step, btn.runTo, btn.runEnd, btn.play]) markBlocked(b, stuck);
    showStatus(stuck);
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
    updateWaiting();
  }

  /** "Back or Reset to go on" after a failed step ("Reset" alone at step 0), else "". */
  function wayOut() {
    if (!state.error) return '';
    return `${state.position > 0 ? 'Back or Reset' : 'Reset'} to go on`;
  }

  /** The failing node's name ("a node" when it is not shown). */
  function failedName() {
    const i = state.error ? state.error.node : -1;
    return i >= 0 ? graph.names[i] || graph.labels[i] : 'a node';
  }

  /**
   * The status line: the stepper's text on one line (its full text in the title) and, after a
   * failed step, the way out (`why` on a refused click).
   * @param {string} stuck the way out, "" when not stuck @param {string} [why] what was refused
   */
  function showStatus(stuck, why = '') {
    statusText.textContent = state.status;
    statusHint.hidden = !stuck;
    statusHint.textContent = stuck ? ` — ${why ? `can't ${why}: ` : ''}${stuck}` : '';
    status.title = stuck ? `${state.status}\n${why ? `Can't ${why}: ` : ''}${stuck}.` : state.status;
    status.classList.toggle('agw-status-failed', state.error !== null);
  }

  /**
   * A button that can't act after a failed step stays focusable and clickable (a click says
   * why), marked aria-disabled and described by the way out. Before any step, a standing notice
   * (a graph freed by backward, a released widget) says why stepping will not get far: the button
   * is described by it, before anyone clicks. @param {HTMLElement} b @param {string} stuck
   */
  function markBlocked(b, stuck) {
    const enabled = !(/** @type {HTMLButtonElement} */ (b).disabled);
    const on = !!stuck && enabled;
    b.classList.toggle('agw-blocked', on);
    if (on) {
      b.setAttribute('aria-disabled', 'true');
      b.setAttribute('aria-describedby', statusHint.id);
      b.title = `Can't go on: ${failedName()} failed. ${stuck}.`;
    } else if (state.notice && enabled) {
      b.removeAttribute('aria-disabled');
      b.setAttribute('aria-describedby', notice.id);
      b.title = `${baseTitle.get(b) ?? ''}\n⚠ ${state.notice}`.trim();
    } else {
      b.removeAttribute('aria-disabled');
      b.removeAttribute('aria-describedby');
      b.title = baseTitle.get(b) ?? '';
    }
  }

  /**
   * After a failed step, a move forward is refused here (Python refuses it too): the status
   * line says why and flashes. Returns true when refused. @param {string} what "step", ...
   */
  function refuseAfterFailure(what) {
    if (!state.error || mode !== 'idle') return false;
    showStatus(wayOut(), what);
    status.classList.remove('agw-flash');
    void (/** @type {HTMLElement} */ (status).offsetWidth); // restart the animation
    status.classList.add('agw-flash');
    return true;
  }

  /** What depends on `_graph` alone: counts, the plumbing toggle, the legend. */
  function updateGraphChrome() {
    counts.textContent = countsText(graph);
    counts.title = counts.textContent;
    plumbingBox.hidden = !live || (graph.showPlumbing === null && model.get('show_plumbing') === undefined);
    // A replayed engine run has no saved values to weigh nor nodes to probe: gradient colours
    // only; a standalone page has the modes it recorded.
    colorMode.hidden = graph.source === 'recording' || !(canAsk(MSG.MEMORY) || canAsk(MSG.PROBE));
    if (colorMode.hidden && colorBy !== 'gradient') setColorMode('gradient');
    tidySeparators(nav);
    tidySeparators(toolbar);
    const show = graph.showPlumbing ?? model.get('show_plumbing');
    plumbing.checked = show === false;
    buildLegend();
  }

  /** One line under the status: the node about to run and the gradients waiting in its slots. */
  function updateWaiting() {
    const i = state.next;
    if ((i < 0 && !state.nextId) || state.done) {
      waiting.hidden = true;
      waiting.replaceChildren();
      waiting.removeAttribute('title');
      return;
    }
    waiting.hidden = false;
    const rows = state.waiting.length ? waitingRows(state.waiting) : [['', 'no input slots']];
    // a leaf reads "AccumulateGrad (7.bias)", as in the status line
    const leaf = i >= 0 && graph.names[i] && graph.labels[i] && graph.names[i].startsWith('AccumulateGrad') && graph.labels[i] !== graph.names[i];
    const name = i >= 0 && !graph.isBox[i] ? (leaf ? `${graph.names[i]} (${graph.labels[i]})` : graph.names[i] || graph.labels[i]) : nextName();
    waiting.replaceChildren(
      h('span', { class: 'agw-dot', style: `background:${NEXT_COLOR}` }),
      h('span', { class: 'agw-waiting-title' }, `Next: ${name}`),
      ...rows.map(([k, v]) => h('span', { class: 'agw-slot' }, h('span', { class: 'agw-slot-name' }, k), ` ${v}`)),
    );
    waiting.title = [`Next: ${name}`, ...rows.map(([k, v]) => `${k} ${v}`)].join('\n');
  }

  /** The next node's name from the status line ("ran … (step 3 / 9) → next AddmmBackward0"), inside a box. */
  function nextName() {
    const m = /→ next\s*(.+)$/.exec(state.status);
    const inBox = state.next >= 0 && graph.isBox[state.next] ? ` (in ${graph.labels[state.next]})` : '';
    return `${m ? m[1] : state.nextId ?? ''}${inBox}`;
  }

  /**
   * One message above the drawing: an error stays until the next move; a warning goes after a
   * while (longer ones stay longer: a NaN's cause is a sentence to read); an info (progress) stays.
   * @param {string} text @param {'error' | 'warning' | 'info'} kind
   */
  function showAlert(text, kind) {
    clearTimeout(alertTimer);
    alert.hidden = false;
    alert.dataset.kind = kind;
    alert.textContent = (kind === 'error' ? '✖ ' : kind === 'warning' ? '⚠ ' : '') + text;
    if (kind === 'warning') alertTimer = setTimeout(hideAlert, Math.max(8000, 60 * text.length));
  }

  function hideAlert() {
    alert.hidden = true;
    delete alert.dataset.kind;
    alert.textContent = '';
  }

  function updateSide() {
    const open = !inspector.el.hidden || !memoryPanel.el.hidden || !sensitivityPanel.el.hidden;
    side.hidden = !open;
    root.classList.toggle('agw-side-open', open);
  }

  // ---- commands --------------------------------------------------------------------------------
  /** @param {{ type: string, [k: string]: unknown }} cmd */
  const send = (cmd) => backend.command(cmd);
  /** @param {{ type: string, [k: string]: unknown }} msg @returns {Promise<any>} */
  const request = (msg) =>
    typeof backend.request === 'function'
      ? backend.request(msg)
      : msg.type === MSG.INSPECT
        ? backend.inspect(/** @type {any} */ (msg))
        : Promise.reject(new Error('not available without a kernel'));

  function step() {
    if (mode !== 'idle' || state.done || refuseAfterFailure('step')) return;
    send({ type: MSG.STEP });
  }
  function back() {
    if (mode !== 'idle' || state.position <= 0) return;
    send({ type: MSG.BACK });
  }
  function runToSelected() {
    const i = runTarget();
    if (mode !== 'idle' || i < 0 || refuseAfterFailure('run to a node')) return;
    send({ type: MSG.RUN_TO, node: i });
  }
  function runToEnd() {
    if (mode !== 'idle' || state.done || refuseAfterFailure('run to the end')) return;
    mode = 'run';
    updateChrome();
    send({ type: MSG.RUN, chunk_ms: RUN_CHUNK_MS });
  }
  function reset() {
    if (mode !== 'idle') return;
    send({ type: MSG.RESET });
  }
  function play() {
    if (mode !== 'idle' || state.done || refuseAfterFailure('play')) return;
    mode = 'play';
    updateChrome();
    playTick();
  }
  function pause() {
    if (mode === 'idle') return;
    if (mode === 'seek' && alert.dataset.kind === 'info') hideAlert();
    mode = 'idle';
    clearTimeout(playTimer);
    playTimer = null;
    send({ type: MSG.PAUSE });
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
    send({ type: MSG.STEP });
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
      send({ type: MSG.RUN, chunk_ms: RUN_CHUNK_MS });
    }
  }

  btn.step.addEventListener('click', step);
  btn.back.addEventListener('click', back);
  btn.runTo.addEventListener('click', runToSelected);
  btn.runEnd.addEventListener('click', runToEnd);
  btn.reset.addEventListener('click', reset);
  btn.play.addEventListener('click', togglePlay);
  fit.addEventListener('click', fitView_);
  direction.addEventListener('change', () => {
    model.set('orientation', direction.value);
    model.save_changes();
  });
  speed.addEventListener('input', () => {
    speedOut.textContent = `${speed.value}/s`;
  });
  plumbing.addEventListener('change', () => send({ type: MSG.PLUMBING, show: !plumbing.checked }));
  colorMode.addEventListener('change', () => setColorMode(colorMode.value === 'memory' || colorMode.value === 'sensitivity' ? colorMode.value : 'gradient'));
  nanBtn.addEventListener('click', firstNonfinite);

  function fitView_() {
    range = fitNow();
    fitted = true;
    paint();
  }

  /** Is item `i`'s box inside the view? @param {number} i */
  function itemInView(i) {
    if (!(i >= 0 && i < graph.n)) return false;
    const cam = cameraOf(range, plotSize());
    const { px, py } = projector(cam);
    const hw = ((graph.boxW?.[i] || 2) / 2) * cam.ppu;
    const hh = ((graph.boxH?.[i] || 1.5) / 2) * cam.ppu;
    const x = px(graph.x[i]);
    const y = py(graph.y[i]);
    return x - hw >= cam.area.l && x + hw <= cam.area.l + cam.area.w && y - hh >= cam.area.t && y + hh <= cam.area.t + cam.area.h;
  }

  /** Zoom about the centre of the view. @param {number} k */
  function zoomBy(k) {
    const sz = plotSize();
    const cam = cameraOf(range, sz);
    moveView(zoomAt(range, sz, cam.area.l + cam.area.w / 2, cam.area.t + cam.area.h / 2, k));
  }

  /** Centre the view on (x, y), zoomed in to at least JUMP_PX_PER_UNIT. @param {number} x @param {number} y */
  function zoomTo(x, y) {
    const sz = plotSize();
    range = rangeAt(x, y, Math.max(cameraOf(range, sz).ppu, JUMP_PX_PER_UNIT), sz);
    fitted = false;
    paint();
  }

  /** Zoom to the pending jump target when it is shown; true when done. */
  function applyJump() {
    if (!jump) return false;
    if (now() > jump.until) {
      jump = null;
      return false;
    }
    if (jump.kind === 'node') {
      const i = graph.indexOf.get(jump.id);
      if (i === undefined) return false;
      zoomTo(graph.x[i], graph.y[i]);
      return true;
    }
    const e = graph.edgeIndexOf.get(jump.id);
    if (e === undefined) return false;
    zoomTo(graph.midX[e], graph.midY[e]);
    return true;
  }

  /**
   * Select a real node by id (search, a memory holder): Python reveals it (unfolding its boxes,
   * showing plumbing) and sets `selected`; the view follows and zooms to it.
   * @param {string} id @param {string | null} module
   */
  function jumpToNode(id, module) {
    if (module !== null && module !== undefined) moduleOf.set(id, module);
    jump = { kind: 'node', id, until: now() + JUMP_FOLLOW_MS };
    setFocus({ kind: 'node', id });
    send({ type: MSG.SELECT, id });
    applyJump();
  }

  /** @param {string} id */
  function selectNodeId(id) {
    if (graph.indexOf.has(id)) {
      model.set('selected', id);
      model.set('selected_edge', null);
      model.save_changes();
      setFocus({ kind: 'node', id });
      const i = /** @type {number} */ (graph.indexOf.get(id));
      zoomTo(graph.x[i], graph.y[i]);
    } else {
      jumpToNode(id, null);
    }
  }

  /**
   * First NaN/Inf: jump to the first edge whose gradient is not finite, running ahead to find
   * it (one time-boxed chunk per request, with progress; Pause stops), then say where it is born
   * and why, in one sentence (Python reads the cause from the node's saved values and inputs).
   */
  function firstNonfinite() {
    if (mode !== 'idle') return;
    const seek = !state.done && !state.error;
    if (seek) {
      mode = 'seek';
      updateChrome();
    }
    nanBtn.disabled = true;
    const ask = () =>
      request(seek ? { type: MSG.FIRST_NONFINITE, chunk_ms: RUN_CHUNK_MS } : { type: MSG.FIRST_NONFINITE })
        .then((data) => {
          if (seek && mode !== 'seek') return; // paused: keep what was found so far
          if (data && data.searching) {
            showAlert(`Looking for the first NaN/Inf… step ${Number(data.position)} of ${Number(data.total)} (Pause stops)`, 'info');
            return ask();
          }
          if (seek) stopQuietly();
          if (!data || data.edge === null || data.edge === undefined || typeof data.id !== 'string') {
            showAlert(data?.message ? String(data.message) : 'no NaN/Inf gradient so far', 'warning');
            return;
          }
          showAlert(String(data.sentence || `The first NaN/Inf flows along ${data.src} → ${data.dst}.`), data.expected ? 'info' : 'warning');
          jump = { kind: 'edge', id: data.id, until: now() + JUMP_FOLLOW_MS };
          setFocus({ kind: 'edge', id: data.id });
          refreshSelection();
          applyJump();
          paint();
        })
        .catch((err) => {
          if (seek && mode === 'seek') stopQuietly();
          showAlert(`First NaN/Inf: ${err?.message ?? err}`, 'warning');
        });
    ask().finally(() => {
      nanBtn.disabled = false;
    });
  }

  /** @param {'gradient' | 'memory' | 'sensitivity'} m */
  function setColorMode(m) {
    colorBy = m;
    colorMode.value = m;
    root.classList.toggle('agw-memory-mode', m === 'memory');
    root.classList.toggle('agw-sensitivity-mode', m === 'sensitivity');
    if (m !== 'memory') memoryPanel.hide();
    if (m !== 'sensitivity') sensitivityPanel.hide();
    if (m === 'memory') requestMemory();
    else if (m === 'sensitivity') requestSensitivity();
    updateSide();
    buildLegend();
    paint();
    renderInspector();
  }

  /** Ask for the Jacobian norms of the visible graph (once per graph; they do not change with the step). */
  function requestSensitivity() {
    if (colorBy !== 'sensitivity') return;
    const mine = ++sensitivitySeq;
    const n = graph.n;
    const g = graph;
    const have = sensitivity && sensitivity.items.length === n ? sensitivity : null;
    sensitivityError = null;
    sensitivityPanel.render(have, { error: null, names: nameOf });
    updateSide();
    if (have) return;
    request({ type: MSG.PROBE, samples: PROBE_SAMPLES, seed: 0 })
      .then((data) => {
        if (mine !== sensitivitySeq || g !== graph || colorBy !== 'sensitivity') return;
        sensitivity = decodeProbe(data, n);
        sensitivityPanel.render(sensitivity, { error: null, names: nameOf });
        buildLegend();
        paint();
        renderInspector();
      })
      .catch((err) => {
        if (mine !== sensitivitySeq) return;
        sensitivityError = String(err?.message ?? err);
        sensitivityPanel.render(null, { error: sensitivityError, names: nameOf });
        buildLegend();
        renderInspector();
      });
  }

  /** A real node's name when it is shown, else its id. @param {string} id */
  function nameOf(id) {
    const i = graph.indexOf.get(id);
    return i === undefined ? id : graph.names[i] || graph.labels[i] || id;
  }

  /**
   * A what-if edit of visible edge `edge`; Python answers with a new `_state` or a warning.
   * @param {number} edge @param {'zero' | 'scale' | 'clear'} op @param {number} [factor]
   */
  function editEdge(edge, op, factor) {
    if (!live || mode !== 'idle') return;
    editPending = { key: focusKey(), at: now() };
    editWarning = null;
    send(op === 'scale' ? { type: MSG.EDIT_EDGE, edge, op, factor } : { type: MSG.EDIT_EDGE, edge, op });
    renderInspector();
  }

  function requestLeafDiff() {
    const seq = state.seq;
    leafDiff = { seq, loading: true, error: null, leaves: [] };
    renderInspector();
    request({ type: MSG.LEAF_DIFF })
      .then((data) => {
        if (leafDiff?.seq !== seq) return;
        leafDiff = { seq, loading: false, error: null, leaves: decodeLeafDiff(data) };
      })
      .catch((err) => {
        if (leafDiff?.seq !== seq) return;
        leafDiff = { seq, loading: false, error: String(err?.message ?? err), leaves: [] };
      })
      .finally(() => {
        if (!destroyed) renderInspector();
      });
  }

  function requestMemory() {
    if (colorBy !== 'memory') return;
    const mine = ++memorySeq;
    const n = graph.n;
    const g = graph;
    memoryError = null;
    memoryPanel.render(memory && memory.items.length === n ? memory : null, { excludeLeaves, error: null });
    updateSide();
    request({ type: MSG.MEMORY, exclude_leaves: excludeLeaves })
      .then((data) => {
        if (mine !== memorySeq || g !== graph || colorBy !== 'memory') return;
        memory = decodeMemory(data, n);
        for (const t of memory.top) moduleOf.set(t.id, t.module);
        memoryPanel.render(memory, { excludeLeaves, error: null });
        buildLegend();
        paint();
      })
      .catch((err) => {
        if (mine !== memorySeq) return;
        memoryError = String(err?.message ?? err);
        memoryPanel.render(null, { excludeLeaves, error: memoryError });
        buildLegend();
      });
  }

  /** What each shortcut of help.js's SHORTCUTS does; false: not handled (the key goes on). */
  /** @type {Record<string, (tag: string | undefined) => boolean | void>} */
  const keyActions = {
    step: () => step(),
    back: () => back(),
    play: (tag) => {
      if (tag === 'BUTTON') return false; // the button's own click handles space
      togglePlay();
    },
    search: () => search.input.focus(),
    zoomIn: () => zoomBy(1.25),
    zoomOut: () => zoomBy(0.8),
    fit: () => fitView_(),
    follow: () => {
      const p = focusPoint();
      if (!p) return false;
      range = rangeAt(p.x, p.y, cameraOf(range, plotSize()).ppu, plotSize());
      fitted = false;
      paint();
    },
    help: () => help.toggle(),
    escape: () => {
      if (help.isOpen()) help.close();
      else if (!card.hidden) hideCard();
      else if (focus) clearSelection();
      else return false;
    },
  };

  /** @param {KeyboardEvent} ev */
  function onKey(ev) {
    const target = /** @type {HTMLElement | null} */ (ev.target);
    const tag = target?.tagName;
    if (tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT') return;
    const s = shortcutFor(ev);
    if (!s || keyActions[s.action]?.(tag) === false) return;
    ev.preventDefault();
    ev.stopPropagation();
  }
  root.addEventListener('keydown', onKey);
  /** @param {MouseEvent} ev */
  const focusOnPress = (ev) => {
    const t = /** @type {HTMLElement} */ (ev.target);
    if (!t.closest?.('button, input, label, a, select, summary, .agw-side')) root.focus({ preventScroll: true });
  };
  root.addEventListener('mousedown', focusOnPress);

  // ---- selection, focus, inspector -------------------------------------------------------------
  /** @param {Focus | null} f */
  function setFocus(f) {
    const same = JSON.stringify(f) === JSON.stringify(focus);
    focus = f;
    if (!same && highlightIds.length) highlightIds = [];
    refreshSelection();
    updateChrome();
    refreshInspector(true);
    paint();
  }

  function clearSelection() {
    focus = null;
    highlightIds = [];
    if (model.get('selected') !== null && model.get('selected') !== undefined) model.set('selected', null);
    if (model.get('selected_edge') !== null && model.get('selected_edge') !== undefined) model.set('selected_edge', null);
    model.save_changes();
    setFocus(null);
  }

  /** The focus the traits imply (on creation, and when Python changes them). */
  function syncFocusFromTraits() {
    const eid = model.get('selected_edge');
    const nid = model.get('selected');
    if (eid !== null && eid !== undefined) focus = { kind: 'edge', id: String(eid) };
    else if (nid !== null && nid !== undefined) focus = { kind: 'node', id: String(nid) };
    refreshSelection();
  }

  /** Fold or unfold a module: the new graph keeps the view. @param {string} type @param {string} group */
  function refold(type, group) {
    keepView = true;
    send({ type, group });
  }

  /** @param {number} i */
  function onBoxClick(i, /** @type {any} */ mouse) {
    const path = graph.modules[i] ?? '';
    // (a recording cannot unfold: there, a click inspects the box)
    if (!live || (mouse && (mouse.shiftKey || mouse.altKey || mouse.metaKey || mouse.ctrlKey))) {
      setFocus({ kind: 'box', path });
      return;
    }
    hideCard();
    refold(MSG.EXPAND, path);
  }

  /**
   * A click on the drawing: a node selects it, a folded box unfolds (shift+click inspects it),
   * an edge selects the edge.
   * @param {import('./canvas.js').Hit | null} hit @param {MouseEvent} ev
   */
  function onClick(hit, ev) {
    if (!hit) return;
    const i = hit.index;
    if (hit.kind === 'node') {
      if (i < 0 || i >= graph.n) return;
      if (graph.isBox[i]) return onBoxClick(i, ev);
      model.set('selected', graph.ids[i]);
      if (model.get('selected_edge') !== null && model.get('selected_edge') !== undefined) model.set('selected_edge', null);
      model.save_changes();
      setFocus({ kind: 'node', id: graph.ids[i] });
    } else {
      if (i < 0 || i >= graph.m) return;
      model.set('selected_edge', graph.edgeIds[i]);
      model.save_changes();
      setFocus({ kind: 'edge', id: graph.edgeIds[i] });
    }
  }

  function focusKey() {
    if (!focus) return '';
    return focus.kind === 'box' ? `box:${focus.path}` : `${focus.kind}:${focus.id}`;
  }

  /**
   * Show the inspector for the focus, asking the kernel for fresh data when the focus or the step
   * changed (throttled while playing).
   * @param {boolean} [now_] ask at once, even while playing
   */
  function refreshInspector(now_ = false) {
    if (!focus) {
      inspector.render(null);
      updateSide();
      return;
    }
    const key = focusKey();
    const fresh = inspected.key === key && inspected.seq === state.seq && inspected.graph === graph;
    renderInspector();
    if (fresh) return;
    if (!now_ && mode !== 'idle' && now() - lastInspectAt < INSPECT_THROTTLE_MS) {
      if (inspectTimer === null) inspectTimer = setTimeout(() => {
        inspectTimer = null;
        refreshInspector(true);
      }, INSPECT_THROTTLE_MS);
      return;
    }
    fetchInspect();
  }

  function fetchInspect() {
    if (!focus) return;
    const key = focusKey();
    if (inspectBusy === key) {
      inspectAgain = true; // the same target again (a step during play): ask when this one answers
      return;
    }
    const seq = state.seq;
    const g = graph;
    /** @type {any} */
    let target = null;
    if (focus.kind === 'node') target = { id: focus.id };
    else if (focus.kind === 'edge') {
      const e = graph.edgeIndexOf.get(focus.id);
      if (e !== undefined) target = { edge: e };
    } else {
      const i = graph.indexOf.get(`group:${focus.path}`);
      if (i !== undefined) target = { node: i };
    }
    if (!target) {
      inspected = { key, seq, graph: g, data: null, error: focus.kind === 'edge' ? 'this edge is not shown (inside a folded module)' : 'this module is not folded any more' };
      renderInspector();
      return;
    }
    inspectBusy = key;
    lastInspectAt = now();
    request({ type: MSG.INSPECT, ...target })
      .then((data) => {
        if (focusKey() === key && g === graph) {
          inspected = { key, seq, graph: g, data, error: null };
          if (data && typeof data === 'object' && typeof data.id === 'string' && 'module' in data && focus?.kind === 'node') moduleOf.set(data.id, data.module ?? null);
        }
      })
      .catch((err) => {
        if (focusKey() === key) inspected = { key, seq, graph: g, data: null, error: String(err?.message ?? err) };
      })
      .finally(() => {
        if (inspectBusy === key) inspectBusy = '';
        if (destroyed) return;
        const stale = focus && (inspected.key !== focusKey() || inspected.seq !== state.seq || inspected.graph !== graph);
        if (inspectAgain || stale) {
          inspectAgain = false;
          if (stale) fetchInspect();
        }
        refreshSelection();
        renderInspector();
        if (focus?.kind === 'node') paint();
      });
  }

  function renderInspector() {
    if (!focus) {
      inspector.render(null);
      updateSide();
      return;
    }
    const key = focusKey();
    const have = inspected.key === key;
    /** @type {'node' | 'edge' | 'box'} */
    const kind = focus.kind;
    let item = -1;
    if (focus.kind === 'node') item = graph.indexOf.get(focus.id) ?? -1;
    else if (focus.kind === 'edge') item = graph.edgeIndexOf.get(focus.id) ?? -1;
    else item = graph.indexOf.get(`group:${focus.path}`) ?? -1;
    inspector.render({
      kind,
      key,
      id: focus.kind === 'box' ? undefined : focus.id,
      item,
      // the last reply for this target stays up while the next step's is on its way
      data: have && (kind === 'node' || inspected.graph === graph) ? inspected.data : null,
      error: have ? inspected.error : null,
      graph,
      state,
      ...whatIfFields(key),
    });
    updateSide();
  }

  /**
   * The inspector's sensitivity and what-if fields for the target `key`.
   * @param {string} key
   */
  function whatIfFields(key) {
    /** @type {{ norm: string, normError: string | null, live: boolean, editWarning: string | null, leafDiff: any }} */
    const out = { norm: '', normError: null, live: live && graph.source !== 'recording', editWarning: editWarning && editWarning.key === key ? editWarning.message : null, leafDiff: null };
    if (focus?.kind === 'node' && colorBy === 'sensitivity') {
      if (sensitivity) {
        out.norm = normText(sensitivity.nodes.get(focus.id), sensitivity.samples);
        const err = sensitivity.errors.find(([id]) => id === focus?.id);
        if (err) out.normError = err[1];
      } else if (sensitivityError) out.normError = sensitivityError;
    }
    if (leafDiff && leafDiff.seq === state.seq) out.leafDiff = leafDiff;
    return out;
  }

  /** @param {import('./canvas.js').Hit} hit @param {MouseEvent} mouse */
  function onHover(hit, mouse) {
    const n = hit.kind === 'node' ? graph.n : graph.m;
    if (hit.index < 0 || hit.index >= n) return;
    const same = hovered && hovered.kind === hit.kind && hovered.index === hit.index && !card.hidden;
    hovered = { kind: hit.kind, index: hit.index };
    if (same) return placeCard({ x: mouse.clientX, y: mouse.clientY });
    showCard(hovered, mouse ? { x: mouse.clientX, y: mouse.clientY } : null);
  }

  /**
   * @param {{ kind: 'node' | 'edge', index: number }} target
   * @param {{ x: number, y: number } | null} at
   */
  function showCard(target, at) {
    const { kind, index } = target;
    const isBox = kind === 'node' && graph.isBox[index] === 1;
    let title;
    const fold = isBox ? graph.foldAt?.get(index) : undefined;
    if (isBox) title = `${graph.labels[index]} · ${fold ? 'folded repeats' : 'folded module'}`;
    else if (kind === 'node') title = `${graph.names[index] || graph.labels[index]}${graph.labels[index] && graph.kinds[index] !== 'function' ? ` · ${graph.labels[index]}` : ''}`;
    else title = `${graph.labels[graph.src[index]] || graph.names[graph.src[index]]} → ${graph.labels[graph.dst[index]] || graph.names[graph.dst[index]]}`;
    /** @type {[string, string][]} */
    const rows = isBox ? boxRows(graph, state, index) : kind === 'node' ? nodeRows(graph, index) : edgeRows(graph, state, index);
    if (kind === 'node' && graph.savedState[index]) {
      const b = SAVED_BADGE[/** @type {1 | 2} */ (graph.savedState[index])];
      if (b) rows.push(['⚠ saved', graph.savedState[index] === SAVED_STATE.stale ? 'stale: modified in place after it was saved; stepping it fails' : 'freed by backward(): stepping it fails']);
    }
    const dyn = h('div', { class: 'agw-card-dyn' });
    const hint = isBox ? h('div', { class: 'agw-card-hint' }, live ? `click: ${fold ? 'unfold' : 'expand'} · shift+click: inspect` : 'click: inspect') : kind === 'node' ? h('div', { class: 'agw-card-hint' }, 'click: inspect') : h('div', { class: 'agw-card-hint' }, 'click: inspect the edge');
    card.replaceChildren(h('div', { class: 'agw-card-title' }, title), table(rows), dyn, hint);
    card.dataset.kind = kind;
    card.dataset.index = String(index);
    card.hidden = false;
    if (at) placeCard(at);
    const key = `${kind}:${index}:${state.seq}`;
    const fill = (/** @type {any} */ data) => {
      if (!hovered || hovered.kind !== kind || hovered.index !== index || card.hidden) return;
      const seen = new Set(rows.map(([k]) => k));
      const more = (isBox ? groupReplyRows(data) : replyRows(data, graph)).filter(([k]) => !seen.has(k));
      dyn.replaceChildren(more.length ? table(more) : '');
      // The message itself is in the status line and the inspector: the card only says so.
      if (data && typeof data === 'object' && data.error) dyn.append(h('div', { class: 'agw-card-error' }, '✖ this step failed (click: the message in the inspector)'));
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
    const refit = fitView(graph.bounds, plotSize(), { focus: focusPoint(), orientation: graph.orientation });
    if (keepView && !(fitted && refit.whole)) {
      fitted = false; // a fold or unfold we asked for: the module opens where its box was
    } else {
      range = refit.range;
      fitted = true;
    }
    keepView = false;
    replies.clear();
    hideCard();
    if (focus?.kind === 'box' && !graph.indexOf.has(`group:${focus.path}`)) focus = null;
    refreshSelection();
    memory = memory && memory.items.length === graph.n ? memory : null;
    updateGraphChrome();
    updateChrome();
    if (plotted) draw();
    applyJump();
    refreshInspector(true);
    sensitivity = sensitivity && sensitivity.items.length === graph.n ? sensitivity : null;
    if (colorBy === 'memory') requestMemory();
    if (colorBy === 'sensitivity') {
      sensitivity = null; // the items are renumbered: ask again
      requestSensitivity();
    }
  };
  const onState = () => {
    const hadEdits = state.edits.size > 0;
    const hadScale = scaleNote(state);
    const watching = plotted && itemInView(state.next);
    state = decodeState(model.get('_state'), graph);
    // Stepping you can follow: when the node that was next was in view and the new next one is
    // not, the view moves (same scale) to keep it there.
    if (watching && state.next >= 0 && !itemInView(state.next)) {
      range = rangeAt(graph.x[state.next], graph.y[state.next], cameraOf(range, plotSize()).ppu, plotSize());
      fitted = false;
    }
    if (hadEdits !== state.edits.size > 0 || hadScale !== scaleNote(state)) buildLegend();
    if (editPending) {
      editPending = null; // the edit went through
      editWarning = null;
    }
    replies.clear();
    updateChrome();
    if (hovered && !card.hidden) showCard(hovered, null); // the card follows the step
    requestPaint();
    continueRun();
    refreshInspector();
  };
  const onSelected = () => {
    const nid = model.get('selected');
    const eid = model.get('selected_edge');
    if (nid !== null && nid !== undefined) {
      // First NaN/Inf selects the edge and its target together: the edge stays in focus.
      const e = eid === null || eid === undefined ? undefined : graph.edgeIndexOf.get(String(eid));
      const pair = focus?.kind === 'edge' && e !== undefined && graph.ids[graph.dst[e]] === String(nid);
      if (!pair && !(focus?.kind === 'node' && focus.id === String(nid))) focus = { kind: 'node', id: String(nid) };
    } else if (focus?.kind === 'node') {
      focus = eid === null || eid === undefined ? null : { kind: 'edge', id: String(eid) };
    }
    if (jump?.kind === 'node' && jump.id === String(nid)) applyJump();
    refreshSelection();
    updateChrome();
    refreshInspector(true);
    paint();
  };
  const onSelectedEdge = () => {
    const eid = model.get('selected_edge');
    const nid = model.get('selected');
    if (eid !== null && eid !== undefined) {
      if (!(focus?.kind === 'edge' && focus.id === String(eid))) focus = { kind: 'edge', id: String(eid) };
    } else if (focus?.kind === 'edge') {
      focus = nid === null || nid === undefined ? null : { kind: 'node', id: String(nid) };
    }
    refreshSelection();
    updateChrome();
    refreshInspector(true);
    paint();
  };
  const onHeight = () => applyHeight();
  model.on('change:_graph', onGraph);
  model.on('change:_state', onState);
  model.on('change:selected', onSelected);
  model.on('change:selected_edge', onSelectedEdge);
  model.on('change:height', onHeight);
  const stopWarnings = backend.onWarning((message) => {
    if (editPending && now() - editPending.at < JUMP_FOLLOW_MS) {
      // Python rejected the edit (e.g. the edge is in the past): say so on the edge's card
      editWarning = { key: editPending.key, message };
      editPending = null;
      renderInspector();
    }
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
      const was = size;
      size = { width: w, height: hgt };
      if (fitted) range = fitNow();
      else if (was.width > 0 && was.height > 0) {
        // keep the scale (and the centre), not the range: the side panel opening must not
        // shrink a zoomed view below the legible scale, where labels disappear
        const cam = cameraOf(range, was);
        const r = rangeOf(cam);
        range = rangeAt((r.x[0] + r.x[1]) / 2, (r.y[0] + r.y[1]) / 2, cam.ppu, size);
      }
      if (!plotted) {
        theme = readTheme(root); // now attached: the host's variables are visible
        ensurePlot();
      } else {
        paint();
      }
    });
    /** @type {ResizeObserver} */ (resizer).observe(plot);
  } else {
    ensurePlot();
  }

  updateGraphChrome();
  updateChrome();
  refreshInspector(true);

  return () => {
    destroyed = true;
    clearTimeout(playTimer);
    clearTimeout(alertTimer);
    clearTimeout(inspectTimer);
    if (mode !== 'idle') send({ type: MSG.PAUSE });
    model.off('change:_graph', onGraph);
    model.off('change:_state', onState);
    model.off('change:selected', onSelected);
    model.off('change:selected_edge', onSelectedEdge);
    model.off('change:height', onHeight);
    stopWarnings();
    stopTheme();
    search.destroy();
    help.destroy();
    minimap.destroy();
    resizer?.disconnect();
    root.removeEventListener('keydown', onKey);
    root.removeEventListener('mousedown', focusOnPress);
    canvas.destroy();
    root.remove();
  };

  // ---- small DOM helpers -----------------------------------------------------------------------
  function sep() {
    return h('span', { class: 'agw-sep', 'aria-hidden': 'true' });
  }
  /** @param {string} cls @param {string} style @param {string} text */
  function legendItem(cls, style, text) {
    return h('span', { class: 'agw-legend-item' }, h('span', { class: cls, style }), text);
  }
  function buildLegend() {
    const items = [];
    const shaded = colorBy !== 'gradient';
    if (colorBy === 'memory') items.push(...memoryKey());
    else if (colorBy === 'sensitivity') items.push(...sensitivityKey());
    else {
      for (const ks of Object.values(KIND_STYLE)) items.push(legendItem('agw-swatch', `background:${ks.color}`, ks.label));
    }
    if (graph.boxes.length) items.push(legendItem('agw-box-swatch', `background:linear-gradient(90deg, ${GROUP_COLOR} 45%, ${theme.boxBody} 45%)`, 'folded module (progress)'));
    const states = new Set(graph.savedState);
    for (const code of [SAVED_STATE.stale, SAVED_STATE.freed]) {
      if (!states.has(code)) continue;
      const b = SAVED_BADGE[code];
      items.push(legendItem(`agw-badge-swatch agw-badge-swatch-${b.symbol}`, `color:${b.color}`, b.label));
    }
    items.push(
      h('span', { class: 'agw-legend-gap' }),
      legendItem('agw-swatch agw-state-pending', '', 'pending'),
      legendItem('agw-swatch agw-state-done', '', 'done'),
      legendItem('agw-swatch agw-state-ran', `border-color:${RAN_COLOR}`, 'just ran'),
      legendItem('agw-swatch agw-state-next', `border-color:${NEXT_COLOR}`, 'next'),
      legendItem('agw-swatch agw-state-failed', '', 'failed'),
      legendItem('agw-swatch agw-state-nograd', '', 'no gradient'),
      h('span', { class: 'agw-legend-gap' }),
    );
    if (shaded) items.push(legendItem('agw-line agw-line-idle', '', 'edges: not coloured in this mode'));
    else {
      items.push(
        legendItem('agw-line agw-line-idle', '', 'not flowed'),
        legendItem('agw-line agw-line-fresh', `border-color:${RAN_COLOR}`, 'just produced'),
        legendItem('agw-line agw-line-none', '', 'None'),
        legendItem('agw-line agw-line-alarm', `border-color:${ALARM_COLOR}`, 'NaN/inf'),
      );
      if (graph.compared) items.push(legendItem('agw-line agw-line-alarm', `border-color:${DIFF_COLOR}`, `differs from ${graph.compared}`));
      const note = scaleNote(state);
      if (note) items.push(h('span', { class: 'agw-legend-item agw-scale-note' }, note));
    }
    items.push(legendItem('agw-swatch agw-sym-ring', `border-color:${SELECT_COLOR}`, 'selected'));
    if (state.edits?.size) items.push(legendItem('agw-line agw-line-edit', `border-color:${EDIT_COLOR}`, '✎ edited gradient'));
    if (highlightIds.length) items.push(legendItem('agw-swatch agw-sym-ring', `border-color:${HIGHLIGHT_COLOR}`, 'shares storage'));
    legend.replaceChildren(...items);
    legend.dataset.mode = colorBy;
  }

  /** The memory mode's key: the fill bins with the bytes where each starts, "nothing saved". */
  function memoryKey() {
    const title = h('span', { class: 'agw-legend-item agw-legend-title' }, 'fill: bytes saved for backward (log scale)');
    const bins = memory ? memoryLegend(memory.items) : [];
    if (!memory) return [title, h('span', { class: 'agw-legend-item agw-legend-loading' }, memoryError ? `unavailable: ${memoryError}` : 'counting…')];
    if (!bins.length) return [title, legendItem('agw-swatch', `background:${theme.noMemory}`, 'nothing saved anywhere'), outlineNote()];
    return [title, ...scaleItems(bins, MEMORY_COLORS.length), legendItem('agw-swatch', `background:${theme.noMemory}`, 'nothing saved'), outlineNote()];
  }

  /** The sensitivity mode's key: ‖J‖²_F bins (dimensionless, squared Frobenius norm), "no value". */
  function sensitivityKey() {
    const title = h('span', { class: 'agw-legend-item agw-legend-title agw-sens-legend' }, `fill: ‖J‖²_F of the node's gradient map (log scale, no unit${sensitivity?.samples ? `; ≈ from ${sensitivity.samples} probes where not exact` : ''})`);
    if (!sensitivity) return [title, h('span', { class: 'agw-legend-item agw-legend-loading' }, sensitivityError ? `unavailable: ${sensitivityError}` : 'probing…')];
    const bins = sensitivityLegend(sensitivity);
    return [title, ...scaleItems(bins, SENSITIVITY_COLORS.length), legendItem('agw-swatch', `background:${theme.noMemory}`, 'no value'), outlineNote()];
  }

  /** One swatch per colour bin, labelled with where it starts ("≥ 1.5 KiB"). @param {{ color: string, from: string }[]} bins @param {number} k */
  function scaleItems(bins, k) {
    return bins.slice(0, k).map((b) => legendItem('agw-swatch agw-scale-swatch', `background:${b.color}`, `≥ ${b.from}`));
  }

  function outlineNote() {
    return h('span', { class: 'agw-legend-item' }, 'outline: step state');
  }
}
