/**
 * The hover card: a node's, a box's or an edge's facts under the pointer (what the payloads
 * say at once, then the kernel's inspect reply for the rest), following the step while it stays
 * open. DOM; its rows come from the pure helpers of labels.js and groups.js.
 *
 * Guarantees: at most one inspect request answers the card (the newest; the hovered target may
 * have changed since); replies are cached per target and step (up to 200), cleared by a new step
 * or graph; a new graph closes the card.
 */
import { domHelpers } from './dom.js';
import { boxRows, groupReplyRows } from './groups.js';
import { edgeRows, nodeRows, replyRows } from './labels.js';
import { decodeInspectReply } from './inspect.js';
import { latestReply } from './latest.js';
import { SAVED_STATE } from './model.js';
import { SAVED_BADGE } from './style.js';

/** @typedef {import('./protocol.js').InspectReply} InspectReply */

/** Inspect replies kept for the card (per target and step). */
export const CARD_CACHE = 200;

/** @typedef {{ kind: 'node' | 'edge', index: number }} Hovered */

/**
 * @param {Document} doc
 * @param {{
 *   store: import('./store.js').Store<{ graph: import('./model.js').Graph, state: import('./model.js').State }>,
 *   main: HTMLElement,
 *   live: boolean,
 *   inspect?: (target: { node: number } | { edge: number }) => Promise<unknown>,
 * }} ctx `main`: the element the card is placed in; `live`: a kernel answers (a box click
 *   unfolds); `inspect`: the backend's inspect request (absent: the payloads' rows only)
 */
export function createHoverCard(doc, ctx) {
  const { store } = ctx;
  const { h, table } = domHelpers(doc);
  const card = h('div', { class: 'agw-card', role: 'tooltip', hidden: '' });
  /** @type {Hovered | null} */
  let hovered = null;
  /** @type {Map<string, InspectReply | null>} */
  const replies = new Map();
  const inspect = ctx.inspect;
  /** The card's inspect requests; each reply is cached, wanted or not. */
  const asks = latestReply((/** @type {{ key: string, target: { node: number } | { edge: number } }} */ q) => {
    if (!inspect) return Promise.reject(new Error('no inspect request'));
    return inspect(q.target).then((raw) => {
      const data = decodeInspectReply(raw);
      replies.set(q.key, data);
      if (replies.size > CARD_CACHE) replies.delete(/** @type {string} */ (replies.keys().next().value));
      return data;
    });
  });

  const stop = store.subscribe((next, prev) => {
    if (next.graph !== prev.graph) {
      replies.clear();
      hide();
    } else if (next.state !== prev.state) {
      replies.clear();
      if (hovered && !card.hidden) show(hovered, null); // the card follows the step
    }
  });

  /**
   * The pointer is over `hit`: show its card (or move it, when it is the one shown).
   * @param {import('./canvas.js').Hit} hit @param {MouseEvent} mouse
   */
  function hover(hit, mouse) {
    const { graph } = store.get();
    const n = hit.kind === 'node' ? graph.n : graph.m;
    if (hit.index < 0 || hit.index >= n) return;
    const same = hovered && hovered.kind === hit.kind && hovered.index === hit.index && !card.hidden;
    hovered = { kind: hit.kind, index: hit.index };
    if (same) return place({ x: mouse.clientX, y: mouse.clientY });
    show(hovered, mouse ? { x: mouse.clientX, y: mouse.clientY } : null);
  }

  /**
   * @param {Hovered} target
   * @param {{ x: number, y: number } | null} at
   */
  function show(target, at) {
    const { graph, state } = store.get();
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
    const hint = isBox ? h('div', { class: 'agw-card-hint' }, ctx.live ? `click: ${fold ? 'unfold' : 'expand'} · shift+click: inspect` : 'click: inspect') : kind === 'node' ? h('div', { class: 'agw-card-hint' }, 'click: inspect') : h('div', { class: 'agw-card-hint' }, 'click: inspect the edge');
    card.replaceChildren(h('div', { class: 'agw-card-title' }, title), table(rows), dyn, hint);
    card.dataset.kind = kind;
    card.dataset.index = String(index);
    card.hidden = false;
    if (at) place(at);
    const key = `${kind}:${index}:${state.seq}`;
    const shown = () => !!hovered && hovered.kind === kind && hovered.index === index && !card.hidden;
    const fill = (/** @type {InspectReply | null | undefined} */ data) => {
      if (!shown()) return;
      const seen = new Set(rows.map(([k]) => k));
      const more = (isBox ? groupReplyRows(data) : replyRows(data, graph)).filter(([k]) => !seen.has(k));
      dyn.replaceChildren(more.length ? table(more) : '');
      // The message itself is in the status line and the inspector: the card only says so.
      if (data && typeof data === 'object' && data.error) dyn.append(h('div', { class: 'agw-card-error' }, '✖ this step failed (click: the message in the inspector)'));
      if (at) place(at);
    };
    if (replies.has(key)) return fill(replies.get(key));
    if (!inspect) return;
    dyn.replaceChildren(h('div', { class: 'agw-card-loading' }, '…'));
    asks.ask({ key, target: kind === 'node' ? { node: index } : { edge: index } }, {
      reply: fill,
      error: () => dyn.replaceChildren(''),
    });
  }

  /** @param {{ x: number, y: number }} at */
  function place(at) {
    const box = ctx.main.getBoundingClientRect();
    const cw = card.offsetWidth || 260;
    const ch = card.offsetHeight || 120;
    let left = at.x - box.left + 16;
    let top = at.y - box.top + 12;
    if (box.width && left + cw > box.width) left = Math.max(4, at.x - box.left - cw - 16);
    if (box.height && top + ch > box.height) top = Math.max(4, box.height - ch - 4);
    card.style.left = `${left}px`;
    card.style.top = `${top}px`;
  }

  function hide() {
    hovered = null;
    card.hidden = true;
  }

  return {
    el: card,
    hover,
    hide,
    /** Is the card showing? */
    isOpen: () => !card.hidden,
    /** The view closes: no reply is handled, the store is not listened to. */
    destroy() {
      stop();
      asks.drop();
    },
  };
}
