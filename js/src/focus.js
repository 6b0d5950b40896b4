/**
 * What the view focuses and rings, as pure functions of the graph and the selection traits: the
 * inspector's focus (a node, an edge or a module box), the items ringed on the drawing, the
 * focus the traits imply when Python changes them, and what to ask the kernel to inspect. No
 * DOM: the view (view.js) and the inspector feed (inspectfeed.js) call these.
 */
import { boxOfModule } from './groups.js';

/**
 * What the inspector shows: a real node, a real edge, or a module box (local to the view: boxes
 * are not nodes, so they are not `selected`).
 * @typedef {{ kind: 'node', id: string } | { kind: 'edge', id: string } | { kind: 'box', path: string }} Focus
 */

/**
 * A selection trait's value as an id (`selected`, `selected_edge`): null when unset.
 * @param {unknown} value
 * @returns {string | null}
 * @example traitId(undefined) // null ; traitId('n3') // 'n3'
 */
export function traitId(value) {
  return value === null || value === undefined ? null : String(value);
}

/**
 * The focus's stable key ("node:n3", "edge:n3:0", "box:layers.1"; "" for none): the inspector
 * keeps its tab and scroll per key.
 * @param {Focus | null} focus
 * @returns {string}
 */
export function focusKey(focus) {
  if (!focus) return '';
  return focus.kind === 'box' ? `box:${focus.path}` : `${focus.kind}:${focus.id}`;
}

/**
 * The items to ring: the focused box, else the selected node (or the box hiding it, when its
 * module is known), and the selected edge; -1 for none.
 * @param {import('./model.js').Graph} graph
 * @param {Focus | null} focus
 * @param {string | null} selectedId the `selected` trait
 * @param {string | null} edgeId the `selected_edge` trait
 * @param {ReadonlyMap<string, string | null>} moduleOf modules of real nodes the view was told about
 * @returns {{ selected: number, selectedEdge: number }}
 */
export function selectedItems(graph, focus, selectedId, edgeId, moduleOf) {
  let selected = -1;
  if (focus?.kind === 'box') {
    selected = graph.indexOf.get(`group:${focus.path}`) ?? -1;
  } else if (selectedId !== null) {
    const i = graph.indexOf.get(selectedId);
    if (i !== undefined) selected = i;
    else if (moduleOf.has(selectedId)) selected = boxOfModule(graph, moduleOf.get(selectedId));
  }
  const selectedEdge = edgeId === null ? -1 : graph.edgeIndexOf.get(edgeId) ?? -1;
  return { selected, selectedEdge };
}

/**
 * The shown items of real node ids: the node itself, else the box that hides it (module known).
 * @param {import('./model.js').Graph} graph
 * @param {readonly string[]} ids
 * @param {ReadonlyMap<string, string | null>} moduleOf
 * @returns {number[]}
 */
export function highlightItems(graph, ids, moduleOf) {
  const out = [];
  for (const id of ids) {
    const i = graph.indexOf.get(id);
    if (i !== undefined) out.push(i);
    else if (moduleOf.has(id)) {
      const b = boxOfModule(graph, moduleOf.get(id));
      if (b >= 0) out.push(b);
    }
  }
  return out;
}

/**
 * The focus the selection traits imply: the edge when one is selected, else the node, else none.
 * @param {string | null} selectedId @param {string | null} edgeId
 * @returns {Focus | null}
 */
export function focusFromTraits(selectedId, edgeId) {
  if (edgeId !== null) return { kind: 'edge', id: edgeId };
  if (selectedId !== null) return { kind: 'node', id: selectedId };
  return null;
}

/**
 * The focus after Python changed `selected`. First NaN/Inf selects an edge and its target node
 * together: then the edge stays in focus. Returns `focus` itself when it does not change.
 * @param {Focus | null} focus @param {import('./model.js').Graph} graph
 * @param {string | null} selectedId @param {string | null} edgeId
 * @returns {Focus | null}
 */
export function focusOnSelected(focus, graph, selectedId, edgeId) {
  if (selectedId !== null) {
    const e = edgeId === null ? undefined : graph.edgeIndexOf.get(edgeId);
    const pair = focus?.kind === 'edge' && e !== undefined && graph.ids[graph.dst[e]] === selectedId;
    if (!pair && !(focus?.kind === 'node' && focus.id === selectedId)) return { kind: 'node', id: selectedId };
    return focus;
  }
  if (focus?.kind === 'node') return edgeId === null ? null : { kind: 'edge', id: edgeId };
  return focus;
}

/**
 * The focus after Python changed `selected_edge` (`focus` itself when it does not change).
 * @param {Focus | null} focus @param {string | null} selectedId @param {string | null} edgeId
 * @returns {Focus | null}
 */
export function focusOnSelectedEdge(focus, selectedId, edgeId) {
  if (edgeId !== null) {
    if (!(focus?.kind === 'edge' && focus.id === edgeId)) return { kind: 'edge', id: edgeId };
    return focus;
  }
  if (focus?.kind === 'edge') return selectedId === null ? null : { kind: 'node', id: selectedId };
  return focus;
}

/**
 * The shown item of the focus: a visible node or box index, or a visible edge index; -1 when
 * hidden (inside a folded module) or none.
 * @param {import('./model.js').Graph} graph @param {Focus | null} focus
 * @returns {number}
 */
export function focusItem(graph, focus) {
  if (!focus) return -1;
  if (focus.kind === 'node') return graph.indexOf.get(focus.id) ?? -1;
  if (focus.kind === 'edge') return graph.edgeIndexOf.get(focus.id) ?? -1;
  return graph.indexOf.get(`group:${focus.path}`) ?? -1;
}

/**
 * What to ask the kernel to inspect for the focus (`{ id }`, `{ edge }` or `{ node }`), or null
 * when the focused edge or box is no longer shown.
 * @param {import('./model.js').Graph} graph @param {Focus} focus
 * @returns {{ id: string } | { edge: number } | { node: number } | null}
 */
export function inspectTarget(graph, focus) {
  if (focus.kind === 'node') return { id: focus.id };
  const i = focusItem(graph, focus);
  if (i < 0) return null;
  return focus.kind === 'edge' ? { edge: i } : { node: i };
}

/**
 * Why a focus has no inspect target (see inspectTarget).
 * @param {Focus} focus
 */
export function hiddenText(focus) {
  return focus.kind === 'edge' ? 'this edge is not shown (inside a folded module)' : 'this module is not folded any more';
}
