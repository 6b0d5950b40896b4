/**
 * Text: edge value labels, shapes, tensor summaries and the hover card's rows. Pure.
 */
import { formatNumber } from './format.js';
import { EDGE_FLAG } from './model.js';
import { decodeNumber, decodeValues } from './jsonsafe.js';

/**
 * @typedef {import('./protocol.js').InspectReply} InspectReply
 * @typedef {import('./protocol.js').Summary} Summary
 */

/** Edge values are printed when the gradient has at most this many elements. */
export const MAX_LABEL_VALUES = 4;

/**
 * "4" for one value, "[1, -0.5]" for a few, "" for none.
 * @param {ArrayLike<number | import('./jsonsafe.js').Complex> | null | undefined} values decoded
 */
export function valuesText(values) {
  if (!values || values.length === 0) return '';
  const parts = Array.from(values, (v) => formatNumber(v));
  return parts.length === 1 ? parts[0] : `[${parts.join(', ')}]`;
}

/**
 * The label of edge `e` in the current state: its values when Python sent them (small gradients).
 * @param {import('./model.js').State} state @param {number} e
 */
export function edgeLabel(state, e) {
  const flag = state.edgeFlag[e];
  if (flag !== EDGE_FLAG.finite && flag !== EDGE_FLAG.nonfinite && flag !== EDGE_FLAG.differs
      && flag !== EDGE_FLAG.saved_value) return '';
  const values = state.edgeValues.get(e);
  if (!values || values.length > MAX_LABEL_VALUES) return '';
  return valuesText(values);
}

/** "[3, 4]" for a shape list, "[]" for a scalar. @param {ArrayLike<number> | null | undefined} shape */
export function shapeText(shape) {
  if (!shape) return '';
  return `[${Array.from(shape).join(', ')}]`;
}

/** @param {unknown} v @returns {v is Summary} */
function isSummary(v) {
  return Boolean(v && typeof v === 'object' && !Array.isArray(v) && ('norm' in v || ('shape' in v && 'dtype' in v)));
}

/**
 * One line for a tensor summary: "[3] float32 · ‖g‖ 4 · min 4 max 4 · values [4, 4, 4]".
 * @param {unknown} s a Summary-like object (shape, dtype, norm, min, max, mean, std, nan, inf, values)
 */
export function summaryText(s) {
  if (s === null || s === undefined) return 'no gradient';
  if (!isSummary(s)) return String(s);
  const parts = [];
  const head = [s.shape !== undefined ? shapeText(s.shape) : '', s.dtype ?? ''].filter(Boolean).join(' ');
  if (head) parts.push(head);
  const num = (/** @type {unknown} */ v) => formatNumber(decodeNumber(v));
  if (s.norm !== undefined && s.norm !== null) parts.push(`‖g‖ ${num(s.norm)}`);
  if (s.min !== undefined && s.max !== undefined && s.min !== null) parts.push(`min ${num(s.min)} max ${num(s.max)}`);
  if (s.mean !== undefined && s.mean !== null) parts.push(`mean ${num(s.mean)}`);
  const bad = [];
  if (Number(s.nan) > 0) bad.push(`${s.nan} NaN`);
  if (Number(s.inf) > 0) bad.push(`${s.inf} inf`);
  if (bad.length) parts.push(`⚠ ${bad.join(', ')}`);
  if (Array.isArray(s.values) && s.values.length) {
    const vals = decodeValues(s.values);
    const shown = vals.slice(0, 8);
    parts.push(`values ${valuesText(shown)}${vals.length > shown.length ? '…' : ''}`);
  }
  return parts.join(' · ');
}

/**
 * Rows of the hover card for an inspect reply: [label, text] pairs. Knows the fields Python sends
 * (node: incoming slot summaries, outgoing summaries by edge id, sequence_nr; edge: summary);
 * anything else is shown as "key: value" so a new field in Python is never hidden. Fields the
 * card already shows from `_graph` (name, kind, module, inputs, src/dst) are skipped.
 * @param {InspectReply | null | undefined} data
 * @param {import('./model.js').Graph} [graph] names the targets of outgoing edges
 * @returns {[string, string][]}
 */
export function replyRows(data, graph) {
  /** @type {[string, string][]} */
  const rows = [];
  if (!data || typeof data !== 'object') return rows;
  // The inspector shows the long fields (saved values, hooks, traceback); the card stays short.
  const skip = new Set(['id', 'name', 'label', 'kind', 'module', 'leaf_name', 'inputs', 'src', 'dst', 'error', 'index', 'node', 'edge',
    'traceback', 'saved', 'saved_error', 'hooks', 'in_edges', 'group', 'members', 'progress', 'ops', 'leaves',
    'formula', 'explanation', 'run']);
  for (const [key, value] of /** @type {[string, unknown][]} */ (Object.entries(data))) {
    if (skip.has(key) || value === undefined) continue;
    if (key === 'sequence_nr' && value === null) continue; // a leaf has none: nothing to say
    if (key === 'summary') {
      rows.push(['grad', summaryText(value)]);
    } else if (key === 'incoming' && Array.isArray(value)) {
      value.forEach((v, k) => rows.push([`in ${k}`, v === null ? 'empty' : summaryText(v)]));
    } else if (key === 'outgoing' && value && typeof value === 'object' && !Array.isArray(value)) {
      for (const [edgeId, v] of Object.entries(value)) {
        const e = graph?.edgeIndexOf?.get(edgeId);
        const to = e !== undefined && graph ? graph.labels[graph.dst[e]] || graph.names[graph.dst[e]] : edgeId;
        rows.push([`out → ${to}`, v === null ? 'not flowed' : summaryText(v)]);
      }
    } else if (isSummary(value)) {
      rows.push([key.replace(/_/g, ' '), summaryText(value)]);
    } else if (Array.isArray(value) && value.some((v) => v && typeof v === 'object')) {
      const label = key.replace(/_/g, ' ');
      value.forEach((v, k) => {
        const plain = v && typeof v === 'object' && !isSummary(v);
        rows.push([`${label} ${plain ? itemTag(v, k) : k}`, plain ? itemBody(v) : summaryText(v)]);
      });
    } else if (value === null) {
      rows.push([key.replace(/_/g, ' '), '—']);
    } else if (typeof value === 'object') {
      rows.push([key.replace(/_/g, ' '), compact(value)]);
    } else {
      rows.push([key.replace(/_/g, ' '), String(value)]);
    }
  }
  return rows;
}

/** @param {Record<string, unknown>} v @param {number} k */
function itemTag(v, k) {
  if (v.slot !== undefined) return `${v.slot}`;
  if (v.input_nr !== undefined) return `${v.input_nr}`;
  if (v.output_nr !== undefined) return `${v.output_nr}`;
  return `${k}`;
}

/** @param {Record<string, unknown>} v */
function itemBody(v) {
  const parts = [];
  const target = v.dst_name ?? v.name ?? v.dst ?? v.to;
  if (target !== undefined && target !== null) parts.push(`→ ${target}`);
  const summary = v.summary !== undefined ? v.summary : isSummary(v) ? v : undefined;
  if (summary !== undefined) parts.push(summaryText(summary));
  else {
    const rest = Object.entries(v).filter(([k]) => !['dst_name', 'name', 'dst', 'to', 'slot', 'edge', 'id'].includes(k));
    if (rest.length) parts.push(compact(Object.fromEntries(rest)));
  }
  return parts.join(' ');
}

/** @param {unknown} v */
function compact(v) {
  try {
    const s = JSON.stringify(v);
    return s.length > 160 ? `${s.slice(0, 157)}…` : s;
  } catch {
    return String(v);
  }
}

/**
 * Static rows for a node from `_graph` alone (shown at once; the inspect reply adds the rest).
 * @param {import('./model.js').Graph} graph @param {number} i
 * @returns {[string, string][]}
 */
export function nodeRows(graph, i) {
  /** @type {[string, string][]} */
  const rows = [['kind', graph.kinds[i] + (graph.root[i] ? ' (root)' : '')]];
  if (graph.modules[i] !== null) rows.push(['module', graph.modules[i] || '(top module)']);
  if (graph.shapes[i]) rows.push(['shape', graph.shapes[i]]);
  graph.inputs[i].forEach((s, k) => {
    rows.push([`slot ${k}`, [shapeText(s.shape), s.dtype, s.device].filter(Boolean).join(' ')]);
  });
  return rows;
}

/**
 * Static rows for an edge.
 * @param {import('./model.js').Graph} graph @param {import('./model.js').State} state @param {number} e
 * @returns {[string, string][]}
 */
export function edgeRows(graph, state, e) {
  const s = graph.src[e];
  const d = graph.dst[e];
  /** @type {[string, string][]} */
  const rows = [
    ['from', `${graph.names[s]} (output ${graph.outputNr[e]})`],
    ['to', `${graph.names[d] || graph.labels[d]} (slot ${graph.inputNr[e]})`],
  ];
  const meta = graph.inputs[d]?.[graph.inputNr[e]];
  if (meta) rows.push(['tensor', [shapeText(meta.shape), meta.dtype, meta.device].filter(Boolean).join(' ')]);
  const flag = state.edgeFlag[e];
  if (flag === EDGE_FLAG.none) rows.push(['state', 'not flowed yet']);
  else if (flag === EDGE_FLAG.no_gradient) rows.push(['state', 'flowed as None (no gradient)']);
  else if (flag === EDGE_FLAG.saved_value) {
    rows.push(['state', 'a saved value inside the compiled region (not a gradient)']);
    rows.push(['‖v‖', formatNumber(state.edgeNorm[e])]);
    const v = state.edgeValues.get(e);
    if (v) rows.push(['values', valuesText(v)]);
  } else {
    rows.push(['‖g‖', formatNumber(state.edgeNorm[e])]);
    const v = state.edgeValues.get(e);
    if (v) rows.push(['values', valuesText(v)]);
    if (flag === EDGE_FLAG.nonfinite) rows.push(['⚠', 'contains NaN or inf']);
    if (flag === EDGE_FLAG.differs) rows.push(['≠', 'differs from the compared recording']);
  }
  return rows;
}

/**
 * Rows of the "waiting" panel: what sits in each input slot of the node about to run.
 * @param {import('./model.js').WaitingSlot[]} waiting
 * @returns {[string, string][]}
 */
export function waitingRows(waiting) {
  return waiting.map((w, k) => {
    if (!w) return [`slot ${k}`, 'empty (no gradient)'];
    const parts = [[shapeText(w.shape), w.dtype].filter(Boolean).join(' ')];
    if (w.norm !== null && w.norm !== undefined) parts.push(`‖g‖ ${formatNumber(w.norm)}`);
    if (w.values && w.values.length) parts.push(`= ${valuesText(w.values.slice(0, 8))}${w.values.length > 8 ? '…' : ''}`);
    return [`slot ${w.slot}`, parts.filter(Boolean).join(' · ')];
  });
}
