/**
 * One view of an AutogradWidget: it assembles the view's parts around one state store and wires
 * them to the synced traits and the backend. It reads the traits, sends commands through the
 * backend, and never computes an autograd fact itself.
 *
 * The parts, each a module with one job: the store (store.js: `graph`, `state`, `mode`, the
 * focus, the camera... see ViewState), the chrome (chrome.js: toolbars, status, alert),
 * playback (playback.js: the play / run / seek machine), the colour modes (colormodes.js: modes,
 * their panels, the legend), the inspector feed (inspectfeed.js: focus -> inspect requests ->
 * panel), the hover card (hovercard.js), the camera (viewport.js: fit, zoom, follow the step,
 * jumps), the canvas (canvas.js) and the minimap. This module keeps what ties them: the
 * selection (clicks, the `selected` traits, focus), the drawing's cache and paints, the
 * keyboard, the model's events, theme and size.
 */
import { createA11y } from './a11y.js';
import { createCanvas } from './canvas.js';
import { createChrome } from './chrome.js';
import { createColorModes } from './colormodes.js';
import { domHelpers } from './dom.js';
import { buildDrawing, itemSizes } from './drawing.js';
import { focusFromTraits, focusOnSelected, focusOnSelectedEdge, highlightItems, selectedItems, traitId } from './focus.js';
import { GESTURES, WALKTHROUGH_GESTURES, createHelp, shortcutFor } from './help.js';
import { createHoverCard } from './hovercard.js';
import { createInspectorFeed } from './inspectfeed.js';
import { createMinimap } from './minimap.js';
import { decodeGraph, decodeState } from './model.js';
import { createPlayback } from './playback.js';
import { MSG, TRAIT } from './protocol.js';
import { createSearch } from './search.js';
import { createStore } from './store.js';
import { createSemanticZoom } from './semzoom.js';
import { createSizing } from './sizing.js';
import { scaleNote } from './style.js';
import { readTheme, watchTheme } from './theme.js';
import { createViewport } from './viewport.js';

/**
 * @typedef {Omit<import('./protocol.js').WidgetModel, 'send'>} Model the traits (the view sends through its backend)
 * @typedef {{ schedule?: (cb: () => void) => void, now?: () => number }} ViewOptions
 *
 * @typedef {object} ViewState one view's state, in its store
 * @property {import('./model.js').Graph} graph the decoded `_graph`
 * @property {import('./model.js').State} state the decoded `_state`
 * @property {import('./style.js').Theme} theme the host's colours
 * @property {import('./playback.js').Mode} mode what playback is doing
 * @property {import('./colormodes.js').ColorMode} colorBy the colour mode
 * @property {import('./focus.js').Focus | null} focus what the inspector shows
 * @property {number} selected the ringed item (a node or a box), -1 for none
 * @property {number} selectedEdge the ringed visible edge, -1 for none
 * @property {readonly string[]} highlight real node ids marked (the aliases of the saved tensor
 *   open in the inspector)
 * @property {import('./camera.js').Range} range what the drawing shows (layout units)
 * @property {import('./camera.js').Size} size the plot's measured size (0 until measured)
 * @property {boolean} fitted the view is the fitted one: a resize fits again
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
  const { h } = domHelpers(doc);
  // A walkthrough (the standalone page) has no kernel to re-lay out, fold or unfold: those
  // controls are absent there; the modes whose replies it recorded (`backend.answers`) stay.
  const live = backend.live !== false;
  /** Can the backend answer this request? (a kernel answers all) @param {string} type */
  const canAsk = (type) => live || !!backend.answers?.has(type);
  /** @param {{ type: string, [k: string]: unknown }} cmd */
  const send = (cmd) => backend.command(cmd);
  /** @param {{ type: string, [k: string]: unknown }} msg @returns {Promise<any>} */
  const request = (msg) =>
    typeof backend.request === 'function'
      ? backend.request(msg)
      : msg.type === MSG.INSPECT
        ? backend.inspect(/** @type {any} */ (msg))
        : Promise.reject(new Error('not available without a kernel'));
  /** Modules of real nodes we were told about (inspect replies, search matches, memory
   * holders): a hidden selected node is ringed through its box. */
  /** @type {Map<string, string | null>} */
  const moduleOf = new Map();

  // ---- the store -------------------------------------------------------------------------------
  const root = h('div', { class: 'agw-root', tabindex: '0', 'aria-label': 'Backward graph stepper' });
  const graph0 = decodeGraph(model.get(TRAIT.GRAPH));
  /** @type {import('./store.js').Store<ViewState>} */
  const store = createStore(/** @type {ViewState} */ ({
    graph: graph0,
    state: decodeState(model.get(TRAIT.STATE), graph0),
    theme: readTheme(root), // read again once attached (below)
    mode: 'idle',
    colorBy: 'gradient',
    focus: null,
    selected: -1,
    selectedEdge: -1,
    highlight: [],
    range: { x: [0, 1], y: [0, 1] }, // fitted once attached (below)
    size: { width: 0, height: 0 },
    fitted: true,
  }));
  let plotted = false;
  let destroyed = false;
  let paintPending = false;
  /** Set when we asked Python to fold or unfold: the new graph keeps the view (the module
   * opens where its box was) instead of fitting again. */
  let keepView = false;

  // ---- the parts -------------------------------------------------------------------------------
  const search = createSearch(doc, {
    request: (query) => request({ type: MSG.SEARCH, query }),
    choose: (m) => jumpToNode(m.id, m.module),
    graph: () => store.get().graph,
  });
  const help = createHelp(doc, { gestures: live ? GESTURES : WALKTHROUGH_GESTURES, onClose: () => root.focus({ preventScroll: true }) });
  const colors = createColorModes(doc, {
    store,
    root,
    request,
    canAsk,
    moduleOf,
    select: (id) => jumpToNode(id, null),
    after: { updateSide, paint, renderInspector: () => feed.render() },
    // a watched step's graph (aw.explore(watch)) offers the gain mode
    gain: () => !!model.get(TRAIT.TIMELINE)?.format,
  });
  const playback = createPlayback({
    store,
    send,
    request,
    now,
    speed: () => chrome.speed(),
    hooks: {
      refuse: (what) => chrome.refuse(what),
      alert: (text, kind) => chrome.showAlert(text, kind),
      paused: () => {
        if (chrome.alertKind() === 'info') chrome.hideAlert(); // the search's progress
      },
      seeking: (busy) => {
        chrome.nanBtn.disabled = busy;
      },
      found: (edgeId) => {
        viewport.aim('edge', edgeId);
        setFocus({ kind: 'edge', id: edgeId });
        refreshSelection();
        viewport.applyJump();
        paint();
      },
    },
  });
  const chrome = createChrome(doc, {
    store,
    root,
    orientable: model.get(TRAIT.ORIENTATION) !== undefined,
    orientation: () => model.get(TRAIT.ORIENTATION),
    runTarget,
    search: search.el,
    colorSelect: colors.select,
    help: help.button,
    on: {
      step: () => playback.step(),
      back: () => playback.back(),
      runTo: () => playback.runTo(runTarget()),
      runEnd: () => playback.runToEnd(),
      reset: () => playback.reset(),
      play: () => playback.toggle(),
      fit: () => viewport.fit(),
      direction: (orientation) => {
        model.set(TRAIT.ORIENTATION, orientation);
        model.save_changes();
      },
      plumbing: (show) => send({ type: MSG.PLUMBING, show }),
      nonfinite: () => playback.firstNonfinite(),
    },
  });
  const stopChrome = store.subscribe((next, prev) => {
    if (next.mode !== prev.mode) chrome.update(); // Play, Pause, a run or a search starts or ends
  });
  const feed = createInspectorFeed(doc, {
    store,
    request,
    send,
    now,
    live,
    moduleOf,
    norms: (focus) => colors.normFields(focus),
    handlers: {
      close: () => clearSelection(),
      // folding needs Python to lay the graph out again: no such control on a walkthrough
      collapse: live ? (group) => refold(MSG.COLLAPSE, group) : undefined,
      expand: live ? (group) => refold(MSG.EXPAND, group) : undefined,
      runTo: (target) => {
        const { graph } = store.get();
        playback.runTo('item' in target ? target.item : graph.indexOf.get(target.id) ?? -1);
      },
      selectNode: (id) => selectNodeId(id),
      highlight: (ids) => {
        store.set({ highlight: ids });
        colors.renderLegend();
        paint();
      },
    },
    after: { updateSide, refreshSelection, paint },
  });
  const main = h('div', { class: 'agw-main' });
  const card = createHoverCard(doc, { store, main, live, inspect: typeof backend.inspect === 'function' ? (target) => backend.inspect(target) : undefined });
  const plot = h('div', { class: 'agw-plot' });
  const viewport = createViewport({ store, plot, height: () => Number(model.get(TRAIT.HEIGHT)), now, paint, requestPaint });
  const minimap = createMinimap(doc, { jump: (r) => viewport.move(r) });
  const canvas = createCanvas(doc, {
    view: () => ({ range: store.get().range, size: viewport.size() }),
    move: (next) => viewport.move(next),
    hover: (hit, ev) => (hit ? card.hover(hit, ev) : card.hide()),
    click: (hit, ev) => onClick(hit, ev),
    fit: () => viewport.fit(),
    zoom: (next, x, y) => semzoom.zoom(next, x, y),
  });
  const semzoom = createSemanticZoom({ store, live, now, size: () => viewport.size(), move: (r) => viewport.move(r), refold: (type, group, anchor) => refold(type, group, anchor), frame: (path) => viewport.showFrame(path) });
  const body = h('div', { class: 'agw-body' }, main);
  const sizing = createSizing(doc, { model, root, body, plot, live, request, bounds: () => store.get().graph.bounds });
  const a11y = createA11y(doc, {
    store,
    sizes: () => itemSizes(store.get().graph),
    inView: () => (canvas.el.agwPainted?.items ?? []).filter((b) => b.kind !== 'copy').map((b) => b.index),
    show: (i) => {
      const { graph } = store.get();
      if (!viewport.itemInView(i)) viewport.centreOn(graph.x[i], graph.y[i]);
      paint();
    },
    inspect: (i) => {
      const { graph } = store.get();
      if (graph.isBox[i]) setFocus({ kind: 'box', path: graph.modules[i] ?? '' });
      else onClick({ kind: 'node', index: i }, null);
    },
    leave: () => root.focus({ preventScroll: true }),
    focusChanged: () => paint(),
  });

  // ---- DOM -------------------------------------------------------------------------------------
  const empty = h('div', { class: 'agw-empty', hidden: '' }, 'The graph has no nodes.');
  main.append(plot, a11y.list, card.el, empty, minimap.el, help.el);
  const side = h('aside', { class: 'agw-side', hidden: '', 'aria-label': 'Details' });
  side.append(...colors.panels, feed.el);
  body.append(side);
  root.append(chrome.toolbar, chrome.nav, chrome.progress, chrome.status, chrome.waiting, chrome.notice, chrome.alert, body, colors.legend, sizing.handle, a11y.announcer);
  el.appendChild(root);
  store.set({ theme: readTheme(root) }); // attached: the host's variables are visible
  store.set({ range: viewport.fitRange() });
  const focus0 = focusFromTraits(traitId(model.get(TRAIT.SELECTED)), traitId(model.get(TRAIT.SELECTED_EDGE)));
  if (focus0) store.set({ focus: focus0 });
  refreshSelection();

  /** The items to ring: the focused box, the selected node or the box that hides it, the selected edge. */
  function refreshSelection() {
    const { graph, focus } = store.get();
    store.set(selectedItems(graph, focus, traitId(model.get(TRAIT.SELECTED)), traitId(model.get(TRAIT.SELECTED_EDGE)), moduleOf));
  }

  /** @returns {import('./drawing.js').ViewSpec} */
  function currentView() {
    const { graph, range, selected, selectedEdge, highlight } = store.get();
    return { range, size: viewport.size(), selected, selectedEdge, focus: a11y.focused(), highlight: highlightItems(graph, highlight, moduleOf), ...colors.drawing() };
  }

  // ---- drawing ---------------------------------------------------------------------------------
  /** Full draw: creation, a new `_graph`, a theme change. */
  function draw() {
    if (destroyed) return;
    empty.hidden = store.get().graph.n > 0;
    if (canvas.el.parentNode !== plot) plot.append(canvas.el);
    plotted = true;
    paint();
  }

  /** The last drawing and what it was built from: panning and zooming reuse it. */
  /** @type {{ key: unknown[], drawing: import('./drawing.js').Drawing } | null} */
  let built = null;
  function drawingNow() {
    const { graph, state, theme } = store.get();
    const view = currentView();
    const key = [graph, state, theme, view.selected, view.selectedEdge, view.focus, view.colorMode, view.memory, view.sensitivity, view.gain, ...(view.highlight ?? [])];
    if (!built || built.key.length !== key.length || built.key.some((k, j) => k !== key[j])) built = { key, drawing: buildDrawing(graph, state, theme, view) };
    return built.drawing;
  }

  /** Repaint the canvas for the view range: edges, boxes, marks, labels; and the minimap. */
  function paint() {
    if (!plotted || destroyed) return;
    const { graph, state, theme, range } = store.get();
    canvas.paint(graph, state, drawingNow(), range, viewport.size());
    minimap.update(graph, range, { edge: theme.idleEdge, node: theme.fontMuted, frame: theme.pending, bg: '' });
    a11y.refresh();
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

  /**
   * Select a real node by id (search, a memory holder): Python reveals it (unfolding its boxes,
   * showing plumbing) and sets `selected`; the view follows and zooms to it.
   * @param {string} id @param {string | null} module
   */
  function jumpToNode(id, module) {
    if (module !== null && module !== undefined) moduleOf.set(id, module);
    viewport.aim('node', id);
    setFocus({ kind: 'node', id });
    send({ type: MSG.SELECT, id });
    viewport.applyJump();
  }

  /** @param {string} id */
  function selectNodeId(id) {
    const { graph } = store.get();
    const i = graph.indexOf.get(id);
    if (i === undefined) return jumpToNode(id, null);
    model.set(TRAIT.SELECTED, id);
    model.set(TRAIT.SELECTED_EDGE, null);
    model.save_changes();
    setFocus({ kind: 'node', id });
    viewport.zoomTo(graph.x[i], graph.y[i]);
  }

  function updateSide() {
    const open = !feed.el.hidden || colors.panelOpen();
    side.hidden = !open;
    root.classList.toggle('agw-side-open', open);
  }

  /** What depends on `_graph` alone: counts, the plumbing toggle, the colour modes offered, the legend. */
  function updateGraphChrome() {
    chrome.updateGraph(live, model.get(TRAIT.SHOW_PLUMBING));
    // A replayed engine run has no saved values to weigh nor nodes to probe: gradient colours
    // only; a walkthrough has the modes it walked.
    colors.offer();
    chrome.tidy();
    colors.renderLegend();
  }

  // ---- keyboard --------------------------------------------------------------------------------
  /** What each shortcut of help.js's SHORTCUTS does; false: not handled (the key goes on). */
  /** @type {Record<string, (tag: string | undefined) => boolean | void>} */
  const keyActions = {
    step: () => playback.step(),
    back: () => playback.back(),
    play: (tag) => {
      if (tag === 'BUTTON') return false; // the button's own click handles space
      playback.toggle();
    },
    search: () => search.input.focus(),
    zoomIn: () => viewport.zoomBy(1.25),
    zoomOut: () => viewport.zoomBy(0.8),
    fit: () => viewport.fit(),
    follow: () => viewport.followStep(),
    help: () => help.toggle(),
    escape: () => {
      if (help.isOpen()) help.close();
      else if (card.isOpen()) card.hide();
      else if (store.get().focus) clearSelection();
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

  // ---- selection, focus ------------------------------------------------------------------------
  /** @param {import('./focus.js').Focus | null} f */
  function setFocus(f) {
    const { focus, highlight } = store.get();
    const same = JSON.stringify(f) === JSON.stringify(focus);
    store.set(!same && highlight.length ? { focus: f, highlight: [] } : { focus: f });
    refreshSelection();
    chrome.update();
    feed.refresh(true);
    paint();
  }

  function clearSelection() {
    store.set({ focus: null, highlight: [] });
    if (traitId(model.get(TRAIT.SELECTED)) !== null) model.set(TRAIT.SELECTED, null);
    if (traitId(model.get(TRAIT.SELECTED_EDGE)) !== null) model.set(TRAIT.SELECTED_EDGE, null);
    model.save_changes();
    setFocus(null);
  }

  /** The item "Run to node" runs to: the focused box, or the selected node when it is shown. */
  function runTarget() {
    const { focus, selected, graph } = store.get();
    if (focus?.kind === 'box') return selected;
    const id = traitId(model.get(TRAIT.SELECTED));
    if (id === null) return -1;
    return graph.indexOf.get(id) ?? -1;
  }

  /** Fold or unfold a module: the new graph keeps the view. @param {string} type @param {string | null} group @param {string | null} [anchor] */
  function refold(type, group, anchor = null) {
    keepView = true;
    send(type === MSG.FOLD_LEVEL ? { type, anchor } : { type, group });
  }

  /** @param {number} i @param {MouseEvent | null} mouse */
  function onBoxClick(i, mouse) {
    const path = store.get().graph.modules[i] ?? '';
    // (a walkthrough cannot unfold: there, a click inspects the box)
    if (!live || (mouse && (mouse.shiftKey || mouse.altKey || mouse.metaKey || mouse.ctrlKey))) {
      setFocus({ kind: 'box', path });
      return;
    }
    card.hide();
    refold(MSG.EXPAND, path);
  }

  /**
   * A click on the drawing: a node selects it, a folded box unfolds (shift+click inspects it),
   * an edge selects the edge.
   * @param {import('./canvas.js').Hit | null} hit @param {MouseEvent | null} ev (null: Enter on the item)
   */
  function onClick(hit, ev) {
    if (!hit) return;
    const { graph } = store.get();
    const i = hit.index;
    if (hit.kind === 'node') {
      if (i < 0 || i >= graph.n) return;
      if (graph.isBox[i]) return onBoxClick(i, ev);
      model.set(TRAIT.SELECTED, graph.ids[i]);
      if (traitId(model.get(TRAIT.SELECTED_EDGE)) !== null) model.set(TRAIT.SELECTED_EDGE, null);
      model.save_changes();
      setFocus({ kind: 'node', id: graph.ids[i] });
    } else {
      if (i < 0 || i >= graph.m) return;
      model.set(TRAIT.SELECTED_EDGE, graph.edgeIds[i]);
      model.save_changes();
      setFocus({ kind: 'edge', id: graph.edgeIds[i] });
    }
  }

  // ---- model events ----------------------------------------------------------------------------
  const onGraph = () => {
    const graph = decodeGraph(model.get(TRAIT.GRAPH));
    store.set({ graph, state: decodeState(model.get(TRAIT.STATE), graph) }); // the card closes
    sizing.apply(); // height null: what this graph needs
    viewport.graphChanged(keepView);
    keepView = false;
    semzoom.landed();
    const { focus } = store.get();
    if (focus?.kind === 'box' && !graph.indexOf.has(`group:${focus.path}`)) store.set({ focus: null });
    refreshSelection();
    colors.graphChanged();
    updateGraphChrome();
    chrome.update();
    if (plotted) draw();
    viewport.applyJump();
    feed.refresh(true);
    colors.refetch();
  };
  const onState = () => {
    const { graph, state: was } = store.get();
    const hadEdits = was.edits.size > 0;
    const hadScale = scaleNote(was);
    const watching = plotted && viewport.itemInView(was.next);
    const state = decodeState(model.get(TRAIT.STATE), graph);
    store.set({ state }); // the card follows the step
    a11y.stateChanged(was, state);
    viewport.keepNextInView(watching);
    if (hadEdits !== state.edits.size > 0 || hadScale !== scaleNote(state)) colors.renderLegend();
    feed.stateChanged(); // an edit in flight went through
    chrome.update();
    requestPaint();
    playback.stateChanged();
    feed.refresh();
  };
  /** The selection traits changed (Python, or this view) and the focus followed: show it. */
  const showFocus = () => {
    refreshSelection();
    chrome.update();
    feed.refresh(true);
    paint();
  };
  const onSelected = () => {
    const nid = traitId(model.get(TRAIT.SELECTED));
    const { focus, graph } = store.get();
    store.set({ focus: focusOnSelected(focus, graph, nid, traitId(model.get(TRAIT.SELECTED_EDGE))) });
    viewport.selected(nid);
    showFocus();
  };
  const onSelectedEdge = () => {
    store.set({ focus: focusOnSelectedEdge(store.get().focus, traitId(model.get(TRAIT.SELECTED)), traitId(model.get(TRAIT.SELECTED_EDGE))) });
    showFocus();
  };
  const onHeight = () => sizing.apply();
  /** @type {[string, () => void][]} */
  const listeners = [
    [`change:${TRAIT.GRAPH}`, onGraph],
    [`change:${TRAIT.STATE}`, onState],
    [`change:${TRAIT.SELECTED}`, onSelected],
    [`change:${TRAIT.SELECTED_EDGE}`, onSelectedEdge],
    [`change:${TRAIT.HEIGHT}`, onHeight],
  ];
  for (const [ev, cb] of listeners) model.on(ev, cb);
  const stopWarnings = backend.onWarning((message) => {
    semzoom.landed();
    keepView = false;
    feed.warned(message); // Python rejected an edit just sent: said on the edge's panel
    if (store.get().mode !== 'idle') playback.stop();
    chrome.showAlert(message, 'warning');
  });

  sizing.apply();

  // ---- theme and size --------------------------------------------------------------------------
  const stopTheme = watchTheme(root, () => {
    const next = readTheme(root);
    if (JSON.stringify(next) === JSON.stringify(store.get().theme)) return;
    store.set({ theme: next });
    if (plotted) draw();
  });

  /** @type {ResizeObserver | null} */
  let resizer = null;
  const RO = /** @type {typeof ResizeObserver | undefined} */ (/** @type {any} */ (win).ResizeObserver);
  if (typeof RO === 'function') {
    resizer = new RO(() => {
      const w = Math.floor(plot.clientWidth);
      const hgt = Math.floor(plot.clientHeight);
      if (w <= 0 || hgt <= 0 || !viewport.resized(w, hgt)) return;
      sizing.measured(w, hgt); // Python fits the folds to the drawing's new size
      if (!plotted) {
        store.set({ theme: readTheme(root) }); // now attached: the host's variables are visible
        ensurePlot();
      } else {
        paint();
      }
    });
    resizer.observe(plot);
  } else {
    ensurePlot();
  }

  updateGraphChrome();
  chrome.update();
  feed.refresh(true);

  return () => {
    destroyed = true;
    playback.destroy();
    chrome.destroy();
    feed.destroy();
    colors.destroy();
    card.destroy();
    stopChrome();
    for (const [ev, cb] of listeners) model.off(ev, cb);
    stopWarnings();
    stopTheme();
    search.destroy();
    help.destroy();
    minimap.destroy();
    resizer?.disconnect();
    sizing.destroy();
    a11y.destroy();
    root.removeEventListener('keydown', onKey);
    root.removeEventListener('mousedown', focusOnPress);
    canvas.destroy();
    root.remove();
  };
}
