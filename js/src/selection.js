/**
 * What the user points at, in one view: the focus (what the inspector shows), the ringed items,
 * the `selected` / `selected_edge` traits, clicks on the drawing, jumps to a node by id, and the
 * folds asked of Python. DOM-free itself: it writes the store and the traits; the parts that
 * draw them (chrome.js, inspectfeed.js, the painter) read the store.
 *
 * Guarantees: the store's `focus`, `selected`, `selectedEdge` always agree with the traits once a
 * call returns (`refresh`); a click on a node sets `selected` (and clears `selected_edge`), on an
 * edge sets `selected_edge`, on a folded box unfolds it (shift/alt/ctrl/meta+click, or a page
 * without a kernel: inspects it); a fold asked for keeps the view when the new graph lands
 * (`takeKeepView`), a warning from Python forgets it.
 */
import { focusFromTraits, focusOnSelected, focusOnSelectedEdge, selectedItems, traitId } from './focus.js';
import { MSG, TRAIT } from './protocol.js';

/**
 * @typedef {ReturnType<typeof createSelection>} Selection
 */

/**
 * @param {{
 *   model: Omit<import('./protocol.js').WidgetModel, 'send'>,
 *   store: import('./store.js').Store<import('./viewstate.js').ViewState>,
 *   send: (cmd: import('./protocol.js').Message) => void,
 *   live: boolean,
 *   moduleOf: Map<string, string | null>,
 *   viewport: Pick<import('./viewport.js').Viewport, 'aim' | 'applyJump' | 'zoomTo' | 'selected'>,
 *   hideCard: () => void,
 *   shown: () => void,
 * }} ctx `live`: a kernel can unfold a box (a walkthrough inspects it instead); `moduleOf`: the
 *   modules of real nodes we were told about (a hidden selected node is ringed through its box);
 *   `shown`: the focus changed, show it (the inspector, the drawing)
 */
export function createSelection(ctx) {
  const { model, store, viewport, moduleOf } = ctx;
  /** Set when we asked Python to fold or unfold: the new graph keeps the view (the module
   * opens where its box was) instead of fitting again. */
  let keepView = false;
  const selectedId = () => traitId(model.get(TRAIT.SELECTED));
  const selectedEdgeId = () => traitId(model.get(TRAIT.SELECTED_EDGE));

  /** The items to ring: the focused box, the selected node or the box that hides it, the selected edge. */
  function refresh() {
    const { graph, focus } = store.get();
    store.set(selectedItems(graph, focus, selectedId(), selectedEdgeId(), moduleOf));
  }

  /** @param {import('./focus.js').Focus | null} f */
  function setFocus(f) {
    const { focus, highlight } = store.get();
    const same = JSON.stringify(f) === JSON.stringify(focus);
    store.set(!same && highlight.length ? { focus: f, highlight: [] } : { focus: f });
    refresh();
    ctx.shown();
  }

  function clear() {
    store.set({ focus: null, highlight: [] });
    if (selectedId() !== null) model.set(TRAIT.SELECTED, null);
    if (selectedEdgeId() !== null) model.set(TRAIT.SELECTED_EDGE, null);
    model.save_changes();
    setFocus(null);
  }

  /** The item "Run to node" runs to: the focused box, or the selected node when it is shown. */
  function runTarget() {
    const { focus, selected, graph } = store.get();
    if (focus?.kind === 'box') return selected;
    const id = selectedId();
    if (id === null) return -1;
    return graph.indexOf.get(id) ?? -1;
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
    ctx.send({ type: MSG.SELECT, id });
    viewport.applyJump();
  }

  /** Select a real node by id, zooming to it when it is shown (else as `jumpToNode`). @param {string} id */
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

  /**
   * Fold or unfold a module: the new graph keeps the view.
   * @param {string} type MSG.EXPAND, MSG.COLLAPSE or MSG.FOLD_LEVEL @param {string | null} group
   * @param {string | null} [anchor] FOLD_LEVEL's anchor
   */
  function refold(type, group, anchor = null) {
    keepView = true;
    ctx.send(type === MSG.FOLD_LEVEL ? { type, anchor } : { type, group });
  }

  /** Whether the graph landing now should keep the view (a fold we asked for); forgets it. */
  function takeKeepView() {
    const keep = keepView;
    keepView = false;
    return keep;
  }

  /** @param {number} i @param {MouseEvent | null} mouse */
  function boxClick(i, mouse) {
    const path = store.get().graph.modules[i] ?? '';
    // (a walkthrough cannot unfold: there, a click inspects the box)
    if (!ctx.live || (mouse && (mouse.shiftKey || mouse.altKey || mouse.metaKey || mouse.ctrlKey))) {
      setFocus({ kind: 'box', path });
      return;
    }
    ctx.hideCard();
    refold(MSG.EXPAND, path);
  }

  /**
   * A click on the drawing: a node selects it, a folded box unfolds (shift+click inspects it),
   * an edge selects the edge.
   * @param {import('./canvas.js').Hit | null} hit @param {MouseEvent | null} ev (null: Enter on the item)
   */
  function click(hit, ev) {
    if (!hit) return;
    const { graph } = store.get();
    const i = hit.index;
    if (hit.kind === 'node') {
      if (i < 0 || i >= graph.n) return;
      if (graph.isBox[i]) return boxClick(i, ev);
      model.set(TRAIT.SELECTED, graph.ids[i]);
      if (selectedEdgeId() !== null) model.set(TRAIT.SELECTED_EDGE, null);
      model.save_changes();
      setFocus({ kind: 'node', id: graph.ids[i] });
    } else {
      if (i < 0 || i >= graph.m) return;
      model.set(TRAIT.SELECTED_EDGE, graph.edgeIds[i]);
      model.save_changes();
      setFocus({ kind: 'edge', id: graph.edgeIds[i] });
    }
  }

  /** The `selected` trait changed (Python, or this view): the focus follows and is shown. */
  function onSelected() {
    const nid = selectedId();
    const { focus, graph } = store.get();
    store.set({ focus: focusOnSelected(focus, graph, nid, selectedEdgeId()) });
    viewport.selected(nid);
    refresh();
    ctx.shown();
  }

  /** The `selected_edge` trait changed: the focus follows and is shown. */
  function onSelectedEdge() {
    store.set({ focus: focusOnSelectedEdge(store.get().focus, selectedId(), selectedEdgeId()) });
    refresh();
    ctx.shown();
  }

  /** A new graph landed: a focused box it no longer has is dropped; the rings are found again. */
  function graphChanged() {
    const { focus, graph } = store.get();
    if (focus?.kind === 'box' && !graph.indexOf.has(`group:${focus.path}`)) store.set({ focus: null });
    refresh();
  }

  /** @type {[string, () => void][]} */
  const listeners = [
    [`change:${TRAIT.SELECTED}`, onSelected],
    [`change:${TRAIT.SELECTED_EDGE}`, onSelectedEdge],
  ];
  for (const [ev, cb] of listeners) model.on(ev, cb);

  /** The view is assembled: focus what the traits select (a node, else an edge) and ring it. */
  function start() {
    const focus0 = focusFromTraits(selectedId(), selectedEdgeId());
    if (focus0) store.set({ focus: focus0 });
    refresh();
  }

  return {
    start,
    refresh,
    setFocus,
    clear,
    runTarget,
    jumpToNode,
    selectNodeId,
    refold,
    takeKeepView,
    click,
    graphChanged,
    destroy() {
      for (const [ev, cb] of listeners) model.off(ev, cb);
    },
  };
}
