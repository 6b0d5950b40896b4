/**
 * The "sensitivity" colour mode and the what-if edits (issue 10): nodes shaded by the log10 of
 * the squared Frobenius norm of their gradient map (Python's `probe` reply), the edits Python
 * reports in `_state.edits`, and the `leaf_diff` reply. Pure.
 */
import { formatNumber } from './format.js';
import { asRecord, decodeNumber } from './jsonsafe.js';

/** @typedef {import('./protocol.js').Summary} Summary */

/** Sequential, light to dark (ColorBrewer PuBu): a larger Jacobian norm, darker. */
export const SENSITIVITY_COLORS = Object.freeze(['#fff7fb', '#ece7f2', '#d0d1e6', '#a6bddb', '#74a9cf', '#3690c0', '#0570b0', '#034e7b']);

/** Probe samples asked of the kernel (Hutchinson estimate; small nodes are exact anyway). */
export const PROBE_SAMPLES = 16;

/**
 * @typedef {{ estimate: number, stderr: number | null, exact: boolean, log10: number | null }} NodeNorm
 * @typedef {object} Sensitivity
 * @property {Float64Array} items log10 per visible item, NaN where none
 * @property {(number | null)[]} stderr
 * @property {(boolean | null)[]} exact
 * @property {Map<string, NodeNorm>} nodes by real node id
 * @property {[number, number] | null} range log10, widened when flat
 * @property {[string, string][]} errors [real id, message]
 * @property {number} samples
 */

/** A finite protocol number, else null (absent, or NaN/inf: nothing to shade). @param {unknown} v @returns {number | null} */
function num(v) {
  const x = decodeNumber(v);
  return Number.isFinite(x) ? x : null;
}

/**
 * The log10 range of the finite values, widened to one unit when flat; null when none.
 * @param {ArrayLike<number>} logs
 * @returns {[number, number] | null}
 */
export function sensitivityRange(logs) {
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < logs.length; i++) {
    const l = logs[i];
    if (Number.isFinite(l)) {
      if (l < lo) lo = l;
      if (l > hi) hi = l;
    }
  }
  if (!(hi >= lo)) return null;
  if (hi - lo < 1e-9) return [lo - 0.5, hi + 0.5];
  return [lo, hi];
}

/**
 * The `probe` reply, validated for `n` visible items.
 * @param {unknown} data @param {number} n
 * @returns {Sensitivity}
 */
export function decodeProbe(data, n) {
  const d = asRecord(data);
  const items = new Float64Array(n).fill(NaN);
  const stderr = new Array(n).fill(null);
  const exact = new Array(n).fill(null);
  for (let i = 0; i < n; i++) {
    const v = Array.isArray(d.items) ? num(d.items[i]) : null;
    if (v !== null) items[i] = v;
    if (Array.isArray(d.stderr)) stderr[i] = num(d.stderr[i]);
    if (Array.isArray(d.exact) && typeof d.exact[i] === 'boolean') exact[i] = d.exact[i];
  }
  /** @type {Map<string, NodeNorm>} */
  const nodes = new Map();
  if (d.nodes && typeof d.nodes === 'object') {
    for (const [id, raw] of Object.entries(d.nodes)) {
      if (!raw || typeof raw !== 'object') continue;
      const v = asRecord(raw);
      const est = num(v.estimate);
      if (est === null) continue;
      nodes.set(id, { estimate: est, stderr: num(v.stderr), exact: Boolean(v.exact), log10: num(v.log10) });
    }
  }
  /** @type {[string, string][]} */
  const errors = d.errors && typeof d.errors === 'object' ? Object.entries(d.errors).map(([k, v]) => /** @type {[string, string]} */ ([k, String(v)])) : [];
  const given = Array.isArray(d.range) && d.range.length === 2 ? [num(d.range[0]), num(d.range[1])] : null;
  let range = sensitivityRange(items);
  if (given && given[0] !== null && given[1] !== null && given[1] >= given[0]) range = given[1] - given[0] < 1e-9 ? [given[0] - 0.5, given[1] + 0.5] : [given[0], given[1]];
  const samples = Number.isInteger(d.samples) && Number(d.samples) > 0 ? Number(d.samples) : PROBE_SAMPLES;
  return { items, stderr, exact, nodes, range, errors, samples };
}

/**
 * Colour bin of a log10 value: -1 for none, else 0..SENSITIVITY_COLORS.length-1.
 * @param {number} l @param {[number, number] | null} range
 */
export function sensitivityBin(l, range) {
  if (!Number.isFinite(l) || !range) return -1;
  const t = (l - range[0]) / (range[1] - range[0]);
  const k = SENSITIVITY_COLORS.length;
  return Math.max(0, Math.min(k - 1, Math.floor(t * k)));
}

/**
 * One fill colour per item; `none` where there is no value (leaves, zero maps, probe errors).
 * @param {Sensitivity} s @param {number} n @param {string} none
 * @returns {string[]}
 */
export function sensitivityColors(s, n, none) {
  const out = new Array(n);
  for (let i = 0; i < n; i++) {
    const k = sensitivityBin(i < s.items.length ? s.items[i] : NaN, s.range);
    out[i] = k < 0 ? none : SENSITIVITY_COLORS[k];
  }
  return out;
}

/** "1e+2" style text of a power of ten: "10^2.5" -> "316". @param {number} l */
export function powText(l) {
  return formatNumber(10 ** l);
}

/**
 * The scale: colour stops with the value where each bin starts.
 * @param {Sensitivity | null} s
 * @returns {{ color: string, from: string }[]}
 */
export function sensitivityLegend(s) {
  if (!s || !s.range) return [];
  const [lo, hi] = s.range;
  const k = SENSITIVITY_COLORS.length;
  return SENSITIVITY_COLORS.map((color, b) => ({ color, from: powText(lo + ((hi - lo) * b) / k) }));
}

/**
 * "‖J‖²_F ≈ 12.3 ± 0.4 (16 samples)" or "‖J‖²_F = 16 (exact)"; "" without a value.
 * @param {NodeNorm | null | undefined} v @param {number} samples
 */
export function normText(v, samples) {
  if (!v) return '';
  if (v.exact) return `‖J‖²_F = ${formatNumber(v.estimate)} (exact)`;
  const se = v.stderr === null ? '' : ` ± ${formatNumber(v.stderr)}`;
  return `‖J‖²_F ≈ ${formatNumber(v.estimate)}${se} (${samples} samples)`;
}

/**
 * @typedef {{ id: string, kind: string, factor: number | null, before: unknown }} Edit
 *   `before`: the edge's gradient summary before the edit, as Python sent it (labels.js reads it)
 */

/**
 * `_state.edits` for `m` visible edges: edge index -> the edit.
 * @param {unknown} raw @param {number} m
 * @returns {Map<number, Edit>}
 */
export function decodeEdits(raw, m) {
  /** @type {Map<number, Edit>} */
  const out = new Map();
  if (!raw || typeof raw !== 'object') return out;
  for (const [k, v] of Object.entries(raw)) {
    const e = Number(k);
    if (!Number.isInteger(e) || e < 0 || e >= m || !v || typeof v !== 'object') continue;
    const o = asRecord(v);
    out.set(e, { id: String(o.id ?? ''), kind: String(o.kind ?? 'set'), factor: num(o.factor), before: o.before ?? null });
  }
  return out;
}

/** "zeroed", "scaled by 0.5", "replaced". @param {Edit} ed */
export function editText(ed) {
  if (ed.kind === 'zero') return 'zeroed';
  if (ed.kind === 'scale') return ed.factor === null ? 'scaled' : `scaled by ${formatNumber(ed.factor)}`;
  return 'replaced';
}

/**
 * A factor typed into "Scale by…": a finite number, else null.
 * @param {string} text
 */
export function parseFactor(text) {
  const t = String(text ?? '').trim();
  if (!t) return null;
  const v = Number(t);
  return Number.isFinite(v) ? v : null;
}

/**
 * @typedef {{ id: string, name: string, changed: boolean, maxAbsDiff: number | null, edited: Summary | null, faithful: Summary | null, item: number }} LeafDiff
 *   `edited`, `faithful`: the leaf's gradient summaries as Python sent them (an object, else null;
 *   panel.js reads them, checking each field)
 */

/** @param {unknown} v @returns {Summary | null} a JSON object as a Summary (its reader checks each field), else null */
const summaryOrNull = (v) => (v !== null && typeof v === 'object' && !Array.isArray(v) ? /** @type {Summary} */ (v) : null);

/**
 * The `leaf_diff` reply: changed leaves first, then by name.
 * @param {unknown} data
 * @returns {LeafDiff[]}
 */
export function decodeLeafDiff(data) {
  const leaves = asRecord(asRecord(data).leaves);
  /** @type {LeafDiff[]} */
  const out = [];
  for (const [id, v] of Object.entries(leaves)) {
    if (!v || typeof v !== 'object') continue;
    const o = asRecord(v);
    out.push({ id, name: String(o.name ?? id), changed: Boolean(o.changed), maxAbsDiff: num(o.max_abs_diff), edited: summaryOrNull(o.edited), faithful: summaryOrNull(o.faithful), item: Number.isInteger(o.item) ? Number(o.item) : -1 });
  }
  return out.sort((a, b) => Number(b.changed) - Number(a.changed) || a.name.localeCompare(b.name));
}
