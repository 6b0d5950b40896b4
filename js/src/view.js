/**
 * One view of an AutogradWidget: the assembler. It makes the view's store, builds its parts,
 * lays out their elements, writes the synced traits into the store and takes everything down
 * again. It reads the traits, sends commands through the backend, and never computes an
 * autograd fact itself.
 *
 * The store (store.js, its shape viewstate.js `ViewState`) is what the parts share: each part
 * owns its DOM and subscribes to the keys it draws, so a new `_state` is one `store.set` here and
 * every part follows by itself: the chrome (chrome.js: toolbars, status, alert), playback
 * (playback.js: Play, Run to end, First NaN/Inf), the colour modes (colormodes.js: modes, their
 * panels, the legend), the inspector feed (inspectfeed.js), the hover card (hovercard.js), the
 * camera (viewport.js: it follows the step), the keyboard list and announcer (a11y.js) and the
 * painter (painter.js: the canvas, the minimap, the theme and the plot's size). The selection
 * (selection.js: focus, clicks, the `selected` traits, folds asked for) writes what the user
 * points at; the keyboard (keys.js) maps keys to the parts' actions. A new `_graph` is the one
 * ordered sequence left here (`onGraph`): the camera fits it before the selection is found in it
 * and before it is drawn.
 */
import { createA11y } from './a11y.js';
import { inspectTargetOf } from './backend.js';
import { createCanvas } from './canvas.js';
import { createChrome } from './chrome.js';
import { createColorModes } from './colormodes.js';
import { domHelpers } from './dom.js';
import { itemSizes } from './drawing.js';
import { GESTURES, WALKTHROUGH_GESTURES, createHelp } from './help.js';
import { createHoverCard } from './hovercard.js';
import { createInspectorFeed } from './inspectfeed.js';
import { bindKeys } from './keys.js';
import { createMinimap } from './minimap.js';
import { decodeGraph, decodeState } from './model.js';
import { createPainter } from './painter.js';
import { createPlayback } from './playback.js';
import { MSG, TRAIT } from './protocol.js';
import { createSearch } from './search.js';
import { createSelection } from './selection.js';
import { createSemanticZoom } from './semzoom.js';
import { createSizing } from './sizing.js';
import { createStore } from './store.js';
import { readTheme } from './theme.js';
import { initialViewState } from './viewstate.js';
import { createViewport } from './viewport.js';

/**
 * @typedef {Omit<import('./protocol.js').WidgetModel, 'send'>} Model the traits (the view sends through its backend)
 * @typedef {{ schedule?: (cb: () => void) => void, now?: () => number }} ViewOptions
 * @typedef {import('./viewstate.js').ViewState} ViewState one view's state, in its store
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
  /** @param {import('./protocol.js').Message} cmd */
  const send = (cmd) => backend.command(cmd);
  /** @type {import('./backend.js').Request} */
  const request = (msg) =>
    typeof backend.request === 'function'
      ? backend.request(msg)
      : msg.type === MSG.INSPECT
        ? backend.inspect(inspectTargetOf(msg))
        : Promise.reject(new Error('not available without a kernel'));
  /** Modules of real nodes we were told about (inspect replies, search matches, memory
   * holders): a hidden selected node is ringed through its box. */
  /** @type {Map<string, string | null>} */
  const moduleOf = new Map();

  // ---- the store -------------------------------------------------------------------------------
  const root = h('div', { class: 'agw-root', tabindex: '0', 'aria-label': 'Backward graph stepper' });
  const graph0 = decodeGraph(model.get(TRAIT.GRAPH));
  // the theme is read again once attached, and the range fitted (below)
  const store = createStore(initialViewState(graph0, decodeState(model.get(TRAIT.STATE), graph0), readTheme(root)));

  // ---- the parts -------------------------------------------------------------------------------
  const search = createSearch(doc, {
    request: (query) => request({ type: MSG.SEARCH, query }),
    choose: (m) => selection.jumpToNode(m.id, m.module),
    graph: () => store.get().graph,
  });
  const help = createHelp(doc, { gestures: live ? GESTURES : WALKTHROUGH_GESTURES, onClose: () => root.focus({ preventScroll: true }) });
  const colors = createColorModes(doc, {
    store,
    root,
    request,
    canAsk,
    moduleOf,
    select: (id) => selection.jumpToNode(id, null),
    after: { updateSide, paint: () => painter.paint(), renderInspector: () => feed.render() },
    // a watched step's graph (aw.explore(watch)) offers the gain mode
    gain: () => !!model.get(TRAIT.TIMELINE)?.format,
  });
  const chrome = createChrome(doc, {
    store,
    root,
    orientable: model.get(TRAIT.ORIENTATION) !== undefined,
    orientation: () => model.get(TRAIT.ORIENTATION),
    runTarget: () => selection.runTarget(),
    search: search.el,
    colorSelect: colors.select,
    help: help.button,
    on: {
      step: () => playback.step(),
      back: () => playback.back(),
      runTo: () => playback.runTo(selection.runTarget()),
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
  const feed = createInspectorFeed(doc, {
    store,
    request,
    send,
    now,
    live,
    moduleOf,
    norms: (focus) => colors.normFields(focus),
    handlers: {
      close: () => selection.clear(),
      // folding needs Python to lay the graph out again: no such control on a walkthrough
      collapse: live ? (group) => selection.refold(MSG.COLLAPSE, group) : undefined,
      expand: live ? (group) => selection.refold(MSG.EXPAND, group) : undefined,
      runTo: (target) => {
        const { graph } = store.get();
        playback.runTo('item' in target ? target.item : graph.indexOf.get(target.id) ?? -1);
      },
      selectNode: (id) => selection.selectNodeId(id),
      highlight: (ids) => {
        store.set({ highlight: ids });
        colors.renderLegend();
        painter.paint();
      },
    },
    after: { updateSide, refreshSelection: () => selection.refresh(), paint: () => painter.paint() },
  });
  const main = h('div', { class: 'agw-main' });
  const card = createHoverCard(doc, { store, main, live, inspect: typeof backend.inspect === 'function' ? (target) => backend.inspect(target) : undefined });
  const plot = h('div', { class: 'agw-plot' });
  const viewport = createViewport({
    store,
    plot,
    height: () => Number(model.get(TRAIT.HEIGHT)),
    now,
    paint: () => painter.paint(),
    requestPaint: () => painter.requestPaint(),
    shown: () => painter.plotted(),
  });
  const selection = createSelection({
    model,
    store,
    send,
    live,
    moduleOf,
    viewport,
    hideCard: () => card.hide(),
    shown: () => {
      feed.refresh(true);
      painter.paint();
    },
  });
  const minimap = createMinimap(doc, { jump: (r) => viewport.move(r) });
  const canvas = createCanvas(doc, {
    view: () => ({ range: store.get().range, size: viewport.size() }),
    move: (next) => viewport.move(next),
    hover: (hit, ev) => (hit ? card.hover(hit, ev) : card.hide()),
    click: (hit, ev) => selection.click(hit, ev),
    fit: () => viewport.fit(),
    zoom: (next, x, y) => semzoom.zoom(next, x, y),
  });
  const semzoom = createSemanticZoom({ store, live, now, size: () => viewport.size(), move: (r) => viewport.move(r), refold: (type, group, anchor) => selection.refold(type, group, anchor), frame: (path) => viewport.showFrame(path) });
  const body = h('div', { class: 'agw-body' }, main);
  const sizing = createSizing(doc, { model, root, body, plot, live, request, bounds: () => store.get().graph.bounds });
  const a11y = createA11y(doc, {
    store,
    sizes: () => itemSizes(store.get().graph),
    inView: () => (canvas.el.agwPainted?.items ?? []).filter((b) => b.kind !== 'copy').map((b) => b.index),
    show: (i) => {
      const { graph } = store.get();
      if (!viewport.itemInView(i)) viewport.centreOn(graph.x[i], graph.y[i]);
      painter.paint();
    },
    inspect: (i) => {
      const { graph } = store.get();
      if (graph.isBox[i]) selection.setFocus({ kind: 'box', path: graph.modules[i] ?? '' });
      else selection.click({ kind: 'node', index: i }, null);
    },
    leave: () => root.focus({ preventScroll: true }),
    focusChanged: () => painter.paint(),
  });
  const empty = h('div', { class: 'agw-empty', hidden: '' }, 'The graph has no nodes.');
  const painter = createPainter({ store, root, plot, empty, canvas, minimap, a11y, viewport, colors: () => colors.drawing(), moduleOf, schedule, measured: (w, hgt) => sizing.measured(w, hgt) });
  // last: a new state reaches Play after every part has shown it (Play may ask for the next)
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
        selection.setFocus({ kind: 'edge', id: edgeId });
        viewport.applyJump();
        painter.paint();
      },
    },
  });
  const unbindKeys = bindKeys(root, {
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
      else if (store.get().focus) selection.clear();
      else return false;
    },
  });

  // ---- DOM -------------------------------------------------------------------------------------
  main.append(plot, a11y.list, card.el, empty, minimap.el, help.el);
  const side = h('aside', { class: 'agw-side', hidden: '', 'aria-label': 'Details' });
  side.append(...colors.panels, feed.el);
  body.append(side);
  root.append(chrome.toolbar, chrome.nav, chrome.progress, chrome.status, chrome.waiting, chrome.notice, chrome.alert, body, colors.legend, sizing.handle, a11y.announcer);
  el.appendChild(root);
  store.set({ theme: readTheme(root) }); // attached: the host's variables are visible
  store.set({ range: viewport.fitRange() });
  selection.start();

  /** The side column shows when the inspector or a mode's panel is open. */
  function updateSide() {
    const open = !feed.el.hidden || colors.panelOpen();
    side.hidden = !open;
    root.classList.toggle('agw-side-open', open);
  }

  /** What depends on `_graph` alone: counts, the plumbing toggle, the colour modes offered, the legend. */
  function updateGraphChrome() {
    chrome.updateGraph(live, model.get(TRAIT.SHOW_PLUMBING));
    // the modes the graph's capabilities and the backend allow (a walkthrough: those it walked)
    colors.offer();
    chrome.tidy();
    colors.renderLegend();
  }

  // ---- the traits ------------------------------------------------------------------------------
  /** A new `_graph` (and its `_state`): fit or keep the view, find the selection, draw, ask again. */
  const onGraph = () => {
    const graph = decodeGraph(model.get(TRAIT.GRAPH));
    store.set({ graph, state: decodeState(model.get(TRAIT.STATE), graph) }); // the card closes
    sizing.apply(); // height null: what this graph needs
    viewport.graphChanged(selection.takeKeepView());
    semzoom.landed();
    selection.graphChanged();
    colors.graphChanged();
    updateGraphChrome();
    chrome.update();
    if (painter.plotted()) painter.draw();
    viewport.applyJump();
    feed.refresh(true);
    colors.refetch();
  };
  /** A new `_state`: the parts follow it from the store (see the module docstring). */
  const onState = () => store.set({ state: decodeState(model.get(TRAIT.STATE), store.get().graph) });
  const onHeight = () => sizing.apply();
  /** @type {[string, () => void][]} */
  const listeners = [
    [`change:${TRAIT.GRAPH}`, onGraph],
    [`change:${TRAIT.STATE}`, onState],
    [`change:${TRAIT.HEIGHT}`, onHeight],
  ];
  for (const [ev, cb] of listeners) model.on(ev, cb);
  const stopWarnings = backend.onWarning((message) => {
    semzoom.landed();
    selection.takeKeepView(); // the fold asked for was refused
    feed.warned(message); // Python rejected an edit just sent: said on the edge's panel
    if (store.get().mode !== 'idle') playback.stop();
    chrome.showAlert(message, 'warning');
  });

  sizing.apply();
  painter.observe();
  updateGraphChrome();
  chrome.update();
  feed.refresh(true);

  return () => {
    painter.destroy();
    playback.destroy();
    chrome.destroy();
    feed.destroy();
    colors.destroy();
    card.destroy();
    viewport.destroy();
    selection.destroy();
    for (const [ev, cb] of listeners) model.off(ev, cb);
    stopWarnings();
    search.destroy();
    help.destroy();
    minimap.destroy();
    sizing.destroy();
    a11y.destroy();
    unbindKeys();
    canvas.destroy();
    root.remove();
  };
}
