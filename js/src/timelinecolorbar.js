/**
 * The timeline's colour scale (timeline.js) and its colour bar: a log10 gradient norm to a
 * colour, and the bar under the title that says which colour is which norm, so a newcomer reads
 * a cell without the numbers in a sentence.
 *
 * Pure: colours and tick values only; the DOM of the bar is built from them in timeline.js.
 * Guarantees: the bar's stops are exactly the cells' colours (the same RAMP and binning), its
 * ticks sit at whole powers of ten inside the range (at most `max`), never outside it.
 */
import { ALARM_COLOR } from './style.js';

/** Viridis, sampled: a larger norm, brighter. */
export const RAMP = Object.freeze(['#440154', '#482878', '#3e4a89', '#31688e', '#26828e', '#1f9e89', '#35b779', '#6ece58', '#b5de2b', '#fde725']);
/** A norm of exactly zero. */
export const ZERO_COLOR = '#202020';

/**
 * The colour of a log10 norm `v` on the range [lo, hi]: NaN none (null), +inf the alarm colour
 * (a NaN or an Inf in the gradient), -inf a zero norm.
 * @param {number} v @param {number} lo @param {number} hi
 * @returns {string | null}
 * @example cellColor(Infinity, 0, 1) // '#ff1f1f'
 */
export function cellColor(v, lo, hi) {
  if (Number.isNaN(v)) return null;
  if (v === Infinity) return ALARM_COLOR;
  if (v === -Infinity) return ZERO_COLOR;
  const t = hi > lo ? (v - lo) / (hi - lo) : 0.5;
  return RAMP[Math.max(0, Math.min(RAMP.length - 1, Math.floor(t * RAMP.length)))];
}

/**
 * The CSS background of the colour bar: RAMP's colours as hard stops, left = `lo`, right = `hi`
 * (each colour over the tenth of the range `cellColor` gives it).
 * @returns {string}
 * @example rampCss().startsWith('linear-gradient(to right, #440154 0%, #440154 10%') // true
 */
export function rampCss() {
  const n = RAMP.length;
  const stops = RAMP.map((c, i) => `${c} ${(i * 100) / n}%, ${c} ${((i + 1) * 100) / n}%`);
  return `linear-gradient(to right, ${stops.join(', ')})`;
}

/**
 * A gradient norm given its log10 (`10 ** v`), short: "1e-3", "0.0316", "2.5"; "0" for -inf,
 * "NaN/Inf" for +inf, "" for NaN (nothing recorded).
 * @param {number} v
 * @returns {string}
 * @example [normText(-3), normText(-1.5), normText(0.4), normText(-Infinity)] // ['1e-3', '0.0316', '2.51', '0']
 */
export function normText(v) {
  if (Number.isNaN(v)) return '';
  if (v === Infinity) return 'NaN/Inf';
  if (v === -Infinity) return '0';
  if (Number.isInteger(v) && (v < -2 || v > 3)) return `1e${v}`;
  const x = 10 ** v;
  const r = parseFloat(x.toPrecision(3));
  if (Math.abs(r) >= 1e-3 && Math.abs(r) < 1e6) return String(r);
  const [m, e] = x.toExponential(2).split('e');
  return `${parseFloat(m)}e${Number(e)}`;
}

/**
 * Ticks of the colour bar: whole log10 values inside [lo, hi] (every k-th when there are more
 * than `max`), each with its place along the bar (0..1) and its label as a norm. A range holding
 * fewer than two powers of ten gets its two ends (and its power of ten, when clear of them).
 * @param {number} lo @param {number} hi @param {number} [max]
 * @returns {{ v: number, t: number, label: string }[]}
 * @example colorbarTicks(-3.71, 0.144).map((k) => k.label) // ['1e-3', '0.01', '0.1', '1']
 */
export function colorbarTicks(lo, hi, max = 6) {
  if (!(Number.isFinite(lo) && Number.isFinite(hi)) || hi <= lo) return [];
  const a = Math.ceil(lo);
  const b = Math.floor(hi);
  const at = (/** @type {number} */ v) => ({ v, t: (v - lo) / (hi - lo), label: normText(v) });
  if (b - a < 1) {
    // one power of ten or none inside: the two ends, and the power of ten when clear of them
    const inner = b === a && Math.min(a - lo, hi - a) / (hi - lo) > 0.2 ? [at(a)] : [];
    return [at(lo), ...inner, at(hi)];
  }
  const every = Math.max(1, Math.ceil((b - a + 1) / max));
  const out = [];
  for (let v = a; v <= b; v += every) out.push(at(v));
  return out;
}
