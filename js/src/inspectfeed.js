/**
 * The inspector feed: from the view's focus (a node, an edge or a module box) to the kernel's
 * inspect replies and the inspector panel (panel.js). It asks when the focus, the step or the
 * graph changed (at most every INSPECT_THROTTLE_MS while playing), keeps the last reply for a
 * target up while the next step's is on its way, and carries the what-if edits: an edit sent,
 * Python's refusal of it shown on that edge, the leaf gradients against the faithful run.
 *
 * Guarantees: one inspect request in flight per target (a step during Play asks again when it
 * answers, if the reply is stale by then); a reply is shown only while its target is the one in
 * focus (an earlier ask for the same target counts: `key`); a warning within EDIT_REPLY_MS of an
 * edit is that edit's refusal. The feed follows the store itself: a new step (viewstate.js
 * newStep) settles an edit in flight and refreshes the panel; Play, a run or a search ending
 * refreshes it at once (its last state was throttled). What-if edits are offered only where a
 * kernel answers and the graph's capabilities say `edit`.
 */
import { focusItem, focusKey, hiddenText, inspectTarget } from './focus.js';
import { latestReply } from './latest.js';
import { decodeInspectReply } from './inspect.js';
import { createInspector } from './panel.js';
import { MSG } from './protocol.js';
import { decodeLeafDiff } from './sensitivity.js';
import { newStep } from './viewstate.js';

/** @typedef {import('./protocol.js').InspectReply} InspectReply */

/** While playing or running, the inspector asks for fresh data at most this often. */
export const INSPECT_THROTTLE_MS = 300;
/** A warning this soon after a what-if edit was sent is Python's refusal of that edit. */
export const EDIT_REPLY_MS = 4000;

/**
 * What the feed reads of the view's store.
 * @typedef {Pick<import('./viewstate.js').ViewState, 'graph' | 'state' | 'mode' | 'focus'>} FeedState
 */

/**
 * @param {Document} doc
 * @param {{
 *   store: import('./store.js').Store<FeedState>,
 *   request: import('./backend.js').Request,
 *   send: (cmd: { type: string, [k: string]: unknown }) => void,
 *   now: () => number,
 *   live: boolean,
 *   moduleOf: Map<string, string | null>,
 *   norms: (focus: import('./focus.js').Focus | null) => { norm: string, normError: string | null },
 *   handlers: Omit<import('./panel.js').InspectorHandlers, 'editEdge' | 'leafDiff'>,
 *   after: { updateSide: () => void, refreshSelection: () => void, paint: () => void },
 * }} ctx `live`: a kernel answers (what-if edits are offered where the graph's capabilities
 *   say `edit`); `moduleOf`: where inspect replies
 *   teach the modules of real nodes; `norms`: the sensitivity mode's fields for a focused node;
 *   `handlers`: the panel's gestures the view handles; `after`: the view's redraws once a reply came
 */
export function createInspectorFeed(doc, ctx) {
  const { store, after } = ctx;
  const inspector = createInspector(doc, {
    ...ctx.handlers,
    editEdge: (edge, op, factor) => editEdge(edge, op, factor),
    leafDiff: () => requestLeafDiff(),
  });
  /** The inspector's data: the reply for `key` at state `seq` of `graph` (or its error). */
  /** @type {{ key: string, seq: number, graph: import('./model.js').Graph | null, data: InspectReply | null, error: string | null }} */
  let inspected = { key: '', seq: -1, graph: null, data: null, error: null };
  /** The target key of the inspect request in flight (see `inspects.waiting`). */
  let asking = '';
  let lastInspectAt = -Infinity;
  /** @type {ReturnType<typeof setTimeout> | null} */
  let inspectTimer = null;
  /** The last rejected what-if edit, shown on that edge's panel. */
  /** @type {{ key: string, message: string } | null} */
  let editWarning = null;
  /** An edit sent and not yet answered (a warning in this window belongs to it). */
  /** @type {{ key: string, at: number } | null} */
  let editPending = null;
  /** @type {{ seq: number, loading: boolean, error: string | null, leaves: import('./sensitivity.js').LeafDiff[] } | null} */
  let leafDiff = null;
  const inspects = latestReply(ctx.request);
  const leafDiffs = latestReply(ctx.request);
  const focusNow = () => store.get().focus;

  /**
   * Show the inspector for the focus, asking the kernel for fresh data when the focus, the step
   * or the graph changed (throttled while playing).
   * @param {boolean} [now_] ask at once, even while playing
   */
  function refresh(now_ = false) {
    const { focus, state, graph, mode } = store.get();
    if (!focus) {
      inspector.render(null);
      after.updateSide();
      return;
    }
    const key = focusKey(focus);
    const fresh = inspected.key === key && inspected.seq === state.seq && inspected.graph === graph;
    render();
    if (fresh) return;
    if (!now_ && mode !== 'idle' && ctx.now() - lastInspectAt < INSPECT_THROTTLE_MS) {
      if (inspectTimer === null) inspectTimer = setTimeout(() => {
        inspectTimer = null;
        refresh(true);
      }, INSPECT_THROTTLE_MS);
      return;
    }
    fetch();
  }

  function fetch() {
    const { focus, state, graph } = store.get();
    if (!focus) return;
    const key = focusKey(focus);
    if (inspects.waiting && asking === key) return; // the same target again (a step during play): asked when this one answers
    const seq = state.seq;
    const g = graph;
    const target = inspectTarget(graph, focus);
    if (!target) {
      inspected = { key, seq, graph: g, data: null, error: hiddenText(focus) };
      render();
      return;
    }
    asking = key;
    lastInspectAt = ctx.now();
    inspects.ask({ type: MSG.INSPECT, ...target }, {
      key,
      still: () => focusKey(focusNow()) === key,
      reply: (raw) => {
        if (g !== store.get().graph) return;
        const data = decodeInspectReply(raw);
        inspected = { key, seq, graph: g, data, error: null };
        if (data && typeof data === 'object' && typeof data.id === 'string' && 'module' in data && focusNow()?.kind === 'node') ctx.moduleOf.set(data.id, data.module ?? null);
      },
      error: (message) => {
        inspected = { key, seq, graph: g, data: null, error: message };
      },
      done: () => {
        const now = store.get();
        const stale = now.focus && (inspected.key !== focusKey(now.focus) || inspected.seq !== now.state.seq || inspected.graph !== now.graph);
        if (stale) fetch();
        after.refreshSelection();
        render();
        if (store.get().focus?.kind === 'node') after.paint();
      },
    });
  }

  /** Draw the panel for the focus from what is known now (no request). */
  function render() {
    const { focus, graph, state } = store.get();
    if (!focus) {
      inspector.render(null);
      after.updateSide();
      return;
    }
    const key = focusKey(focus);
    const have = inspected.key === key;
    const kind = focus.kind;
    inspector.render({
      kind,
      key,
      id: focus.kind === 'box' ? undefined : focus.id,
      item: focusItem(graph, focus),
      // the last reply for this target stays up while the next step's is on its way
      data: have && (kind === 'node' || inspected.graph === graph) ? inspected.data : null,
      error: have ? inspected.error : null,
      graph,
      state,
      ...ctx.norms(focus),
      edit: ctx.live && graph.capabilities.edit,
      editWarning: editWarning && editWarning.key === key ? editWarning.message : null,
      leafDiff: leafDiff && leafDiff.seq === state.seq ? leafDiff : null,
    });
    after.updateSide();
  }

  /**
   * A what-if edit of visible edge `edge`; Python answers with a new `_state` or a warning.
   * @param {number} edge @param {'zero' | 'scale' | 'clear'} op @param {number} [factor]
   */
  function editEdge(edge, op, factor) {
    if (!ctx.live || !store.get().graph.capabilities.edit || store.get().mode !== 'idle') return;
    editPending = { key: focusKey(focusNow()), at: ctx.now() };
    editWarning = null;
    ctx.send(op === 'scale' ? { type: MSG.EDIT_EDGE, edge, op, factor } : { type: MSG.EDIT_EDGE, edge, op });
    render();
  }

  /** The leaf gradients now against the faithful run (after what-if edits). */
  function requestLeafDiff() {
    const seq = store.get().state.seq;
    leafDiff = { seq, loading: true, error: null, leaves: [] };
    render();
    leafDiffs.ask({ type: MSG.LEAF_DIFF }, {
      key: String(seq), // asked again at the same step: either answer is the answer
      reply: (data) => {
        leafDiff = { seq, loading: false, error: null, leaves: decodeLeafDiff(data) };
      },
      error: (message) => {
        leafDiff = { seq, loading: false, error: message, leaves: [] };
      },
      done: () => render(),
    });
  }

  /** A new state arrived: an edit in flight went through. */
  function stateChanged() {
    if (editPending) {
      editPending = null;
      editWarning = null;
    }
  }

  const stop = store.subscribe((next, prev) => {
    if (newStep(next, prev)) {
      stateChanged();
      refresh();
    } else if (next.mode === 'idle' && prev.mode !== 'idle') {
      refresh(); // the last state of a run was throttled: show it now
    }
  });

  return {
    el: inspector.el,
    refresh,
    render,
    stateChanged,
    /**
     * A warning from Python: when an edit was just sent, it is that edit's refusal (e.g. the edge
     * is in the past), shown on the edge's panel. @param {string} message
     */
    warned(message) {
      if (editPending && ctx.now() - editPending.at < EDIT_REPLY_MS) {
        editWarning = { key: editPending.key, message };
        editPending = null;
        render();
      }
    },
    /** The view closes: no timer fires, no reply is handled. */
    destroy() {
      stop();
      if (inspectTimer !== null) clearTimeout(inspectTimer);
      inspects.drop();
      leafDiffs.drop();
    },
  };
}
