/**
 * What the inspector says, as plain data: tensor statistics, value previews, saved values with
 * their state (ok / stale / freed / packed / unknown), hooks, edges. Pure: panel.js turns it into DOM.
 * Every reply field is read defensively: a missing one is left out, never shown as "undefined".
 */
import { formatNumber } from './format.js';
import { decodeNumber, decodeValues, isFiniteValue } from './jsonsafe.js';
import { shapeText } from './labels.js';
import { formatBytes } from './memory.js';

/**
 * @typedef {import('./protocol.js').InspectReply} InspectReply
 * @typedef {import('./protocol.js').Summary} Summary
 * @typedef {import('./protocol.js').SavedRecord} SavedRecord
 */

/**
 * An inspect reply as it comes in (`unknown`: `Backend.inspect`, a walkthrough's recorded
 * reply): a JSON object read as the typed `InspectReply`, whose renderers check each field
 * they read (a missing or malformed one is left out); anything else as null (no reply).
 * @param {unknown} v
 * @returns {InspectReply | null}
 * @example decodeInspectReply({ id: 'n1', name: 'MulBackward0' })?.name // 'MulBackward0'
 * @example decodeInspectReply('oops') // null
 */
export function decodeInspectReply(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? /** @type {InspectReply} */ (v) : null;
}

/** Values shown in a preview before "…". */
export const PREVIEW_VALUES = 24;

/** @param {unknown} v */
const num = (v) => formatNumber(decodeNumber(v));

/**
 * True when a Summary-like object counts NaN or Inf values (or its norm is not finite).
 * @param {Summary | null | undefined} s
 */
export function isNonfinite(s) {
  if (!s || typeof s !== 'object') return false;
  if (Number(s.nan) > 0 || Number(s.inf) > 0) return true;
  if (s.norm === undefined || s.norm === null) return false;
  return !Number.isFinite(decodeNumber(s.norm));
}

/**
 * Statistics rows of a Summary: [label, text, alarm]. A DTensor's summary (its `shard` note) says
 * that the numbers are this rank's local shard's, with the global shape and the placements.
 * @param {Summary | null | undefined} s
 * @returns {[string, string, boolean][]}
 */
export function summaryStats(s) {
  if (!s || typeof s !== 'object') return [];
  /** @type {[string, string, boolean][]} */
  const rows = [];
  const head = [s.shape !== undefined && s.shape !== null ? shapeText(s.shape) : '', s.dtype ?? ''].filter(Boolean).join(' ');
  if (head) rows.push(['tensor', head + (s.numel !== undefined ? ` (${formatNumber(Number(s.numel))} values)` : ''), false]);
  if (s.shard) rows.push(['DTensor', String(s.shard), false]); // numbers of this rank's local shard
  for (const key of /** @type {const} */ (['norm', 'min', 'max', 'mean', 'std'])) {
    if (s[key] === undefined || s[key] === null) continue;
    const v = decodeNumber(s[key]);
    rows.push([key === 'norm' ? '‖·‖' : key, num(s[key]), !Number.isFinite(v) && key !== 'std']);
  }
  const nan = Number(s.nan) || 0;
  const inf = Number(s.inf) || 0;
  if (s.nan !== undefined || s.inf !== undefined) rows.push(['NaN / inf', `${nan} / ${inf}`, nan + inf > 0]);
  return rows;
}

/**
 * "[-0.342, -0.284, …]" with a note on how many are shown; "" when there are none.
 * @param {unknown} values
 * @param {number | null} [numel] total element count, when known
 * @returns {{ text: string, note: string, alarm: boolean }}
 */
export function valuesPreview(values, numel = null, max = PREVIEW_VALUES) {
  const vals = decodeValues(values);
  if (!vals.length) return { text: '', note: '', alarm: false };
  const shown = vals.slice(0, max);
  const total = numel ?? vals.length;
  const more = total > shown.length;
  const text = `[${shown.map((v) => formatNumber(v)).join(', ')}${more ? ', …' : ''}]`;
  const note = more ? `first ${shown.length} of ${formatNumber(total)}` : `${shown.length} value${shown.length === 1 ? '' : 's'}`;
  return { text, note, alarm: shown.some((v) => !isFiniteValue(v)) };
}

/** How each saved-value state is shown. */
export const SAVED_STATES = Object.freeze({
  ok: { text: 'ok', title: 'valid: backward can use it' },
  stale: { text: 'stale', title: 'modified in place after it was saved: stepping this node raises' },
  freed: { text: 'freed', title: 'freed by backward() without retain_graph' },
  packed: { text: 'packed', title: 'packed by saved_tensors_hooks' },
  unknown: { text: 'unknown', title: 'this torch cannot read it without unpacking it: the note names the torch that can' },
});

/**
 * A saved value's note, said once: when the node's step failed (its message is shown at the top of
 * the inspector), the engine's error quoted at the end of a stale note gives way to a pointer.
 * @param {string} note @param {boolean} failed the node's step failed
 * @example savedNote('stale: modified in place after it was saved; stepping this node raises the engine\'s error: one of ...', true)
 *   // 'stale: modified in place after it was saved; stepping this node raised the error above'
 */
export function savedNote(note, failed) {
  if (!failed) return note;
  const k = note.indexOf('; stepping this node raises');
  return k < 0 ? note : `${note.slice(0, k)}; stepping this node raised the error above`;
}

/**
 * @typedef {object} SavedItem
 * @property {string} key unique within the node (the name, or name#k)
 * @property {string} name
 * @property {string} kind tensor / scalar / tuple / none
 * @property {'ok' | 'stale' | 'freed' | 'packed' | 'unknown'} state
 * @property {string} shape "[5, 8]" or ""
 * @property {string} dtype
 * @property {string} value for non-tensors: the value; for packed tensors: what the hook returned
 * @property {string} size "160 B" (tensor bytes), "" when unknown
 * @property {string[]} aliases
 * @property {string[]} aliasIds node ids to highlight
 * @property {string} note
 * @property {boolean} tensor
 * @property {SavedRecord} raw the record as Python sent it
 */

/**
 * The `saved` list of a node reply, normalised.
 * @param {unknown} saved
 * @returns {SavedItem[]}
 */
export function savedItems(saved) {
  if (!Array.isArray(saved)) return [];
  const seen = new Map();
  return saved
    .filter((v) => v && typeof v === 'object')
    .map((/** @type {SavedRecord} */ v) => {
      const name = String(v.name ?? '?');
      const n = seen.get(name) ?? 0;
      seen.set(name, n + 1);
      const state = /** @type {SavedItem['state']} */ (Object.hasOwn(SAVED_STATES, String(v.state)) ? v.state : 'unknown');
      const tensor = v.kind === 'tensor';
      return {
        key: n ? `${name}#${n}` : name,
        name,
        kind: String(v.kind ?? ''),
        state,
        shape: Array.isArray(v.shape) ? shapeText(v.shape) : '',
        dtype: v.dtype ? String(v.dtype) : '',
        value: tensor ? (state === 'packed' && v.value !== null && v.value !== undefined ? valueText(v.value) : '') : valueText(v.value),
        size: Number.isFinite(Number(v.nbytes)) && v.nbytes !== null ? formatBytes(Number(v.nbytes)) : '',
        aliases: Array.isArray(v.aliases) ? v.aliases.map(String) : [],
        aliasIds: Array.isArray(v.alias_ids) ? v.alias_ids.map(String) : [],
        note: v.note ? String(v.note) : '',
        tensor,
        raw: v,
      };
    });
}

/**
 * A non-tensor saved value as text: numbers formatted, lists bracketed, null as "None".
 * @param {unknown} v
 * @returns {string}
 */
export function valueText(v) {
  if (v === null || v === undefined) return 'None';
  if (typeof v === 'number') return formatNumber(v);
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (Array.isArray(v)) return `[${v.map(valueText).join(', ')}]`;
  if (typeof v === 'string') return v;
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}

/**
 * The detail rows of one saved tensor (shown when it is clicked): [label, text, alarm].
 * @param {SavedItem} item
 * @returns {[string, string, boolean][]}
 */
export function savedDetailRows(item) {
  const v = item.raw ?? {};
  /** @type {[string, string, boolean][]} */
  const rows = [];
  rows.push(['state', item.state, item.state !== 'ok']);
  if (Array.isArray(v.versions) && v.versions.length === 2) rows.push(['version', `saved at ${v.versions[0]}, now ${v.versions[1]}`, true]);
  if (item.shape) rows.push(['shape', item.shape, false]);
  if (item.dtype) rows.push(['dtype', item.dtype, false]);
  if (v.device) rows.push(['device', String(v.device), false]);
  if (Array.isArray(v.stride)) rows.push(['stride', shapeText(v.stride), false]);
  if (item.size) rows.push(['bytes', item.size, false]);
  if (v.storage_nbytes !== null && v.storage_nbytes !== undefined && Number(v.storage_nbytes) !== Number(v.nbytes)) {
    rows.push(['storage', `${formatBytes(Number(v.storage_nbytes))} (the whole storage it keeps alive)`, false]);
  }
  for (const [k, text, alarm] of summaryStats(v.summary)) if (k !== 'tensor') rows.push([k, text, alarm]);
  if (item.state === 'packed' && item.value) rows.push(['packed as', item.value, false]);
  return rows;
}

/**
 * Hooks of a node reply, and the notes (what cannot be listed).
 * @param {unknown} hooks
 * @returns {{ hooks: { on: string, kind: string, fn: string }[], notes: string[] }}
 */
export function hookItems(hooks) {
  const out = { hooks: /** @type {{ on: string, kind: string, fn: string }[]} */ ([]), notes: /** @type {string[]} */ ([]) };
  if (!Array.isArray(hooks)) return out;
  for (const h of hooks) {
    if (!h || typeof h !== 'object') continue;
    if (h.kind === 'note') out.notes.push(String(h.fn ?? ''));
    else out.hooks.push({ on: String(h.on ?? ''), kind: String(h.kind ?? ''), fn: String(h.fn ?? '') });
  }
  return out;
}

/**
 * Incoming gradient slots: per slot its summary (null = empty) and the input metadata.
 * @param {InspectReply | null | undefined} data node reply
 * @returns {{ slot: number, meta: string, summary: Summary | null }[]}
 */
export function incomingSlots(data) {
  const inputs = Array.isArray(data?.inputs) ? data.inputs : [];
  const incoming = Array.isArray(data?.incoming) ? data.incoming : [];
  const n = Math.max(inputs.length, incoming.length);
  const out = [];
  for (let k = 0; k < n; k++) {
    const m = inputs[k];
    const meta = Array.isArray(m) ? [shapeText(m[0]), m[1], m[2]].filter(Boolean).join(' ') : '';
    out.push({ slot: k, meta, summary: incoming[k] ?? null });
  }
  return out;
}

/**
 * Outgoing edges of a node reply with the target's name from the graph when visible.
 * @param {InspectReply | null | undefined} data node reply
 * @param {import('./model.js').Graph} [graph]
 * @returns {{ id: string, to: string, summary: Summary | null }[]}
 */
export function outgoingEdges(data, graph) {
  /** @type {{ id: string, to: string, summary: Summary | null }[]} */
  const out = [];
  const og = data?.outgoing;
  if (!og || typeof og !== 'object') return out;
  for (const [id, summary] of Object.entries(og)) {
    const e = graph?.edgeIndexOf?.get(id);
    let to = id;
    if (e !== undefined && graph) {
      const d = graph.dst[e];
      to = `${graph.labels[d] || graph.names[d]}${graph.inputNr[e] ? ` (slot ${graph.inputNr[e]})` : ''}`;
    }
    out.push({ id, to, summary });
  }
  return out;
}

/**
 * Traceback lines as one text block (the forward call that created the node), or "".
 * @param {unknown} tb
 */
export function tracebackText(tb) {
  if (Array.isArray(tb)) return tb.map(String).join('').trimEnd();
  if (typeof tb === 'string') return tb.trimEnd();
  return '';
}

/**
 * A node's sequence number; AccumulateGrad's is UINT64_MAX (it arrives as 1.8e19 in JSON).
 * @param {unknown} v
 */
export function sequenceText(v) {
  const n = Number(v);
  if (!Number.isFinite(n)) return String(v);
  if (n >= 2 ** 63) return 'UINT64_MAX (AccumulateGrad: highest priority)';
  return String(n);
}

/**
 * A DTensor layout (Python's core/dtensor.py `Layout.as_dict`) in a few words: its placements
 * and mesh, then the local shape of the global one where known ("S(0) on mesh (2,) cpu · local
 * [16, 16] of [32, 16]"); "" for anything else.
 * @param {import('./protocol.js').Layout | null | undefined} lay
 * @returns {string}
 */
export function layoutText(lay) {
  if (!lay || typeof lay !== 'object' || !lay.text) return '';
  const whole = Array.isArray(lay.global_shape) ? shapeText(lay.global_shape) : '';
  const local = Array.isArray(lay.local_shape) ? shapeText(lay.local_shape) : '';
  const shapes = local ? ` · local ${local}${whole ? ` of ${whole}` : ''}` : '';
  return `${String(lay.text)}${shapes}`;
}

/**
 * What a communication node moves (the node reply's `communication`): "redistribute · forward
 * from P(sum) on mesh (2,) cpu · gradient back as R on mesh (2,) cpu"; "" when there is nothing.
 * @param {import('./protocol.js').Communication | null | undefined} comm
 * @returns {string}
 */
export function communicationText(comm) {
  if (!comm || typeof comm !== 'object' || !comm.op) return '';
  const parts = [String(comm.op)];
  if (comm.forward_from) parts.push(`forward from ${layoutText(comm.forward_from)}`);
  if (comm.forward_to) parts.push(`forward to ${layoutText(comm.forward_to)}`);
  if (comm.grad_to) parts.push(`gradient back as ${layoutText(comm.grad_to)}`);
  return parts.join(' · ');
}
