/**
 * The timeline's data (timeline.js): the `_timeline` trait (protocol.js `TimelinePayload`,
 * wire/trainpayload.py `timeline_payload`) decoded and checked, and its types.
 *
 * Pure: no DOM. Guarantees: a malformed payload decodes to safe defaults, never throws, never
 * reads out of bounds; an empty trait (not a watch) decodes to null.
 */
import { toTyped } from './buffers.js';
import { asRecord } from './jsonsafe.js';
/**
 * @typedef {object} Rows
 * @property {string[]} id module paths ('' the model) or node ids (ops)
 * @property {string[]} label
 * @property {(string | null)[]} parent
 * @property {number[]} depth
 * @property {boolean[]} ops a module with ops of its own (expandable to them)
 * @property {number[]} calls times the module runs per step (a cell through time: > 1)
 * @property {boolean[]} fused its own ops hold a fused recurrent node (nn.LSTM's)
 *
 * @typedef {object} First
 * @property {number} step
 * @property {boolean} watched
 * @property {string | null} node
 * @property {string | null} name
 * @property {string | null} cause
 * @property {boolean} expected
 *
 * @typedef {object} Origin what the first NaN/Inf is (view/timeline.py `origin`)
 * @property {string | null} kind 'born', 'propagated', 'healed'
 * @property {string | null} where 'forward' (made by a forward op), 'backward'
 * @property {string | null} module the node's module
 * @property {string | null} forward_node
 * @property {string | null} forward_op
 * @property {string | null} forward_module
 * @property {string | null} forward_cause
 *
 * @typedef {object} HealedFirst
 * @property {number} step
 * @property {string | null} node where it was removed
 * @property {string | null} name
 * @property {string | null} born_node
 * @property {string | null} born_name
 * @property {string | null} born_cause
 * @property {string | null} module the birth node's module
 *
 * @typedef {{ steps: number[], count: number, first: HealedFirst }} Healed
 *
 * @typedef {{ module: string, factor: number, low_step: number, high_step: number }} Moved
 *
 * @typedef {object} Timeline the decoded `_timeline` trait
 * @property {number} nSteps every step (watched or not)
 * @property {Int32Array} watched the watched step numbers
 * @property {Float32Array} loss per step
 * @property {Uint8Array} flags per step
 * @property {Rows} rows
 * @property {Float32Array} values rows x watched, log10 norms (NaN none, +inf non-finite, -inf zero)
 * @property {Float32Array | null} valuesMin a banded run (more watched steps than its columns):
 *   rows x columns, log10 of each band's smallest norm (`values` its largest); null otherwise
 * @property {Int32Array | null} columns a banded run: the first step of each band (`watched`
 *   then holds each band's first watched step); null otherwise
 * @property {[number, number]} range
 * @property {First | null} first
 * @property {Origin | null} origin
 * @property {Healed | null} healed
 * @property {Moved[]} moved
 * @property {string} movedRule the moved list's rule, in words (Python's)
 * @property {number | null} selected
 * @property {number} every one step in `every` is watched
 */

/** @param {unknown} v @returns {string[]} */
export const strings = (v) => (Array.isArray(v) ? v.map((s) => String(s ?? '')) : []);

/**
 * Float32 values sent as base64 (a reply carries JSON only) or as a buffer, `length` of them.
 * @param {unknown} v @param {number} length
 * @returns {Float32Array}
 * @example Array.from(float32s(btoa(String.fromCharCode(0, 0, 128, 63)), 1)) // [1]
 */
export function float32s(v, length) {
  if (typeof v !== 'string') return toTyped(v, Float32Array, { length });
  /** @type {string} */
  let bin;
  try {
    bin = atob(v);
  } catch {
    bin = '';
  }
  const bytes = new Uint8Array(bin.length - (bin.length % 4));
  for (let i = 0; i < bytes.length; i++) bytes[i] = bin.charCodeAt(i);
  return toTyped(new Float32Array(bytes.buffer), Float32Array, { length });
}

/** @param {unknown} v @returns {v is number} */
export const isInt = (v) => Number.isInteger(v);

/**
 * The `_timeline` trait (protocol.js `TimelinePayload`, or `{}` when not a watch), validated:
 * every field is read from `unknown` and checked; null when it is empty (not a watch).
 * @param {unknown} input
 * @returns {Timeline | null}
 * @example decodeTimeline({}) // null
 */
export function decodeTimeline(input) {
  const raw = asRecord(input);
  if (!raw.format) return null;
  const nSteps = isInt(raw.n_steps) && raw.n_steps >= 0 ? raw.n_steps : 0;
  const watched = toTyped(raw.watched, Int32Array);
  const r = asRecord(raw.rows);
  const id = strings(r.id);
  const n = id.length;
  /** @template T @param {unknown} v @param {(x: unknown) => T} f @returns {T[]} */
  const pick = (v, f) => Array.from({ length: n }, (_, i) => f(Array.isArray(v) ? v[i] : undefined));
  const rows = {
    id,
    label: pick(r.label, (x) => String(x ?? '')),
    parent: pick(r.parent, (x) => (typeof x === 'string' ? x : null)),
    depth: pick(r.depth, (x) => (isInt(x) && x >= 0 ? x : 0)),
    ops: pick(r.ops, (x) => x === true),
    calls: pick(r.calls, (x) => (isInt(x) && x > 0 ? x : 1)),
    fused: pick(r.fused, (x) => x === true),
  };
  const range = Array.isArray(raw.range) && raw.range.length === 2 && raw.range.every(Number.isFinite) ? /** @type {[number, number]} */ ([raw.range[0], raw.range[1]]) : /** @type {[number, number]} */ ([0, 1]);
  const f = asRecord(raw.first);
  const str = (/** @type {unknown} */ v) => (typeof v === 'string' ? v : null);
  /** @param {Record<string, unknown>} o @param {string[]} keys */
  const strs = (o, keys) => Object.fromEntries(keys.map((k) => [k, str(o[k])]));
  const o = raw.origin && typeof raw.origin === 'object' ? asRecord(raw.origin) : null;
  const hd = asRecord(raw.healed);
  const hdSteps = Array.isArray(hd.steps) ? hd.steps : null;
  const hdFirst = asRecord(hd.first);
  return {
    nSteps,
    watched,
    loss: toTyped(raw.loss, Float32Array, { length: nSteps }),
    flags: toTyped(raw.flags, Uint8Array, { length: nSteps }),
    rows,
    values: toTyped(raw.values, Float32Array, { length: n * watched.length }),
    valuesMin: raw.values_min && raw.columns ? toTyped(raw.values_min, Float32Array, { length: n * watched.length }) : null,
    columns: raw.values_min && raw.columns ? toTyped(raw.columns, Int32Array, { length: watched.length }) : null,
    range,
    first: isInt(f.step) ? { step: f.step, watched: f.watched === true, node: str(f.node), name: str(f.name), cause: str(f.cause), expected: f.expected === true } : null,
    origin: o ? /** @type {Origin} */ (strs(o, ['kind', 'where', 'module', 'forward_node', 'forward_op', 'forward_module', 'forward_cause'])) : null,
    healed: hdSteps && isInt(hdFirst.step)
      ? {
          steps: hdSteps.filter(isInt),
          count: isInt(hd.count) ? hd.count : hdSteps.length,
          first: { step: hdFirst.step, .../** @type {Omit<HealedFirst, 'step'>} */ (strs(hdFirst, ['node', 'name', 'born_node', 'born_name', 'born_cause', 'module'])) },
        }
      : null,
    movedRule: typeof raw.moved_rule === 'string' ? raw.moved_rule : '',
    // the records as Python sent them, kept when their two read fields hold (view/timeline.py `moved`)
    moved: Array.isArray(raw.moved) ? /** @type {Moved[]} */ (raw.moved.filter((m) => typeof asRecord(m).module === 'string' && Number.isFinite(asRecord(m).factor))) : [],
    selected: isInt(raw.selected) ? raw.selected : null,
    every: isInt(raw.every) && raw.every > 0 ? raw.every : 1,
  };
}

/**
 * The watched step nearest to fraction `t` (0..1) of the timeline's width.
 * @param {Int32Array} watched @param {number} t
 * @returns {number | null}
 */
export function stepAt(watched, t) {
  if (!watched.length) return null;
  const k = Math.max(0, Math.min(watched.length - 1, Math.floor(t * watched.length)));
  return watched[k];
}
