/**
 * The timeline's zoom and pan in time (timeline.js, timelinezoomui.js): which steps the grid
 * shows, and the columns it paints for them, at the resolution of the pixels.
 *
 * A long run's `_timeline` trait holds the whole run in at most 1,024 columns of min/max bands
 * (view/timeline.py `_banded`); zooming or panning asks Python for the steps shown at the
 * canvas's width ("timeline_range", wire/watchmessages.py), one column per watched step once
 * they fit. Until the reply comes the grid shows the columns it already holds for those steps
 * (`sliceView`), so a wheel notch answers at once; a run whose trait holds every watched step
 * (not banded) is zoomed from the trait alone, with no request.
 *
 * Pure: no DOM, no timers. A `View` is what the grid paints: the steps `start <= s < stop`, per
 * column its first step (`axis`, the step axis) and the watched step a click selects (`pick`:
 * the column's first watched step), the module rows' largest (`values`) and, for bands,
 * smallest (`valuesMin`) log10 norms, rows x columns.
 * Guarantees: a span never leaves the whole run and never holds fewer than `MIN_SPAN` steps (or
 * the whole run when shorter); a malformed range reply decodes to null, never throws; a column's
 * colour is the largest norm of its steps (a spike is never averaged away, a NaN/Inf wins).
 */
import { asRecord } from './jsonsafe.js';

/** The fewest steps a zoom shows across (a few pixels per step on a narrow screen). */
export const MIN_SPAN = 20;
/** The zoom factor of one key press (+/-) or button. */
export const ZOOM_KEY = 2;
/** A range request waits this long for the wheel or the drag to settle (ms). */
export const DEBOUNCE_MS = 80;
/** The most columns a request asks for (wire/watchmessages.py `MAX_BINS`). */
export const MAX_BINS = 8192;
/** `flags` bit of a watched step (view/timeline.py). */
const WATCHED = 1;

/**
 * @typedef {{ start: number, stop: number }} Span steps `start <= s < stop`
 *
 * @typedef {object} View what the grid paints
 * @property {number} start @property {number} stop the steps shown
 * @property {Int32Array} axis the first step of each column (ascending)
 * @property {Int32Array} pick the watched step a click on each column selects (its first)
 * @property {Float32Array} values rows x columns, log10 of each column's largest norm
 * @property {Float32Array | null} valuesMin rows x columns, the smallest (null: one watched step a column)
 * @property {boolean} banded a column may hold more than one watched step
 * @property {boolean} whole the whole run is shown
 */

/**
 * The watched step numbers, from the per-step flags (every step's byte), ascending.
 * @param {Uint8Array} flags
 * @returns {Int32Array}
 * @example Array.from(watchedSteps(new Uint8Array([1, 0, 3, 2]))) // [0, 2]
 */
export function watchedSteps(flags) {
  let n = 0;
  for (let s = 0; s < flags.length; s++) if (flags[s] & WATCHED) n++;
  const out = new Int32Array(n);
  for (let s = 0, k = 0; s < flags.length; s++) if (flags[s] & WATCHED) out[k++] = s;
  return out;
}

/**
 * The first index `i` with `a[i] >= v` (`a` ascending), `a.length` when none.
 * @param {ArrayLike<number>} a @param {number} v
 * @returns {number}
 * @example lowerBound([0, 10, 20], 10) // 1
 */
export function lowerBound(a, v) {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const m = (lo + hi) >> 1;
    if (a[m] < v) lo = m + 1;
    else hi = m;
  }
  return lo;
}

/**
 * The column of `view` holding `step` (the last whose first step is <= it), -1 outside the view.
 * @param {Pick<View, 'axis' | 'stop'>} view @param {number} step
 * @returns {number}
 * @example columnOf({ axis: new Int32Array([0, 10, 20]), stop: 30 }, 15) // 1
 */
export function columnOf(view, step) {
  if (!view.axis.length || step < view.axis[0] || step >= view.stop) return -1;
  return lowerBound(view.axis, step + 1) - 1;
}

/**
 * The whole run's span: step 0 (or the first watched, when earlier) to the last step.
 * @param {{ nSteps: number, watched: ArrayLike<number> }} d
 * @returns {Span}
 * @example wholeSpan({ nSteps: 100, watched: [0, 50, 99] }) // { start: 0, stop: 100 }
 */
export function wholeSpan(d) {
  const n = d.watched.length;
  const start = Math.min(0, n ? d.watched[0] : 0);
  return { start, stop: Math.max(d.nSteps, n ? d.watched[n - 1] + 1 : 1, start + 1) };
}

/**
 * `span` kept inside `whole` and at least `MIN_SPAN` steps wide (the whole run when shorter),
 * its width kept when it is moved back inside.
 * @param {Span} span @param {Span} whole
 * @returns {Span}
 * @example clampSpan({ start: 90, stop: 130 }, { start: 0, stop: 100 }) // { start: 60, stop: 100 }
 */
export function clampSpan(span, whole) {
  const full = whole.stop - whole.start;
  let width = Math.round(span.stop - span.start);
  width = Math.max(Math.min(MIN_SPAN, full), Math.min(full, Number.isFinite(width) ? width : full));
  let start = Math.round(span.start);
  if (!Number.isFinite(start)) start = whole.start;
  start = Math.max(whole.start, Math.min(whole.stop - width, start));
  return { start, stop: start + width };
}

/**
 * Zoom `span` by `factor` (> 1 in, < 1 out) about the step at fraction `at` (0..1) of its width,
 * which stays under the pointer.
 * @param {Span} span @param {Span} whole @param {number} factor @param {number} [at]
 * @returns {Span}
 * @example zoomSpan({ start: 0, stop: 1000 }, { start: 0, stop: 1000 }, 10, 0.5) // { start: 450, stop: 550 }
 */
export function zoomSpan(span, whole, factor, at = 0.5) {
  const t = Math.max(0, Math.min(1, Number.isFinite(at) ? at : 0.5));
  const width = span.stop - span.start;
  const f = factor > 0 && Number.isFinite(factor) ? factor : 1;
  const nw = Math.max(Math.min(MIN_SPAN, whole.stop - whole.start), Math.round(width / f));
  const pivot = span.start + t * width;
  return clampSpan({ start: pivot - t * nw, stop: pivot - t * nw + nw }, whole);
}

/**
 * Where the step painted at fraction `t` (0..1) of the width lies in the view's span (0..1): the
 * columns are painted equally wide, a column's steps spread over it, so a zoom keeps the step
 * under the pointer even where the columns are unequal (a run's last, partial band).
 * @param {Pick<View, 'axis' | 'start' | 'stop'>} view @param {number} t
 * @returns {number}
 * @example spanFraction({ axis: new Int32Array([0, 80]), start: 0, stop: 100 }, 0.75) // 0.9
 */
export function spanFraction(view, t) {
  const n = view.axis.length;
  const width = view.stop - view.start;
  if (!n || !(width > 0) || !Number.isFinite(t)) return 0.5;
  const x = Math.max(0, Math.min(1, t)) * n;
  const k = Math.min(n - 1, Math.floor(x));
  const end = k + 1 < n ? view.axis[k + 1] : view.stop;
  return Math.max(0, Math.min(1, (view.axis[k] + (x - k) * (end - view.axis[k]) - view.start) / width));
}

/**
 * Move `span` by `delta` steps (negative: earlier), kept inside `whole`.
 * @param {Span} span @param {Span} whole @param {number} delta
 * @returns {Span}
 * @example panSpan({ start: 10, stop: 30 }, { start: 0, stop: 100 }, -50) // { start: 0, stop: 20 }
 */
export function panSpan(span, whole, delta) {
  const d = Number.isFinite(delta) ? Math.round(delta) : 0;
  return clampSpan({ start: span.start + d, stop: span.stop + d }, whole);
}

/**
 * Does `span` show the whole run?
 * @param {Span} span @param {Span} whole
 * @returns {boolean}
 * @example isWhole({ start: 0, stop: 100 }, { start: 0, stop: 100 }) // true
 */
export const isWhole = (span, whole) => span.start <= whole.start && span.stop >= whole.stop;

/**
 * The columns to ask for at a canvas `width` CSS px wide: one a pixel, at most `MAX_BINS`.
 * @param {number} width
 * @returns {number}
 * @example binsFor(1200.4) // 1200
 */
export const binsFor = (width) => Math.max(1, Math.min(MAX_BINS, Math.round(Number.isFinite(width) ? width : 1)));

/**
 * The whole run's view from the decoded trait: its columns are its watched steps, or, for a
 * banded run, its bands (`columns` their first steps, `watched` the first watched step of each).
 * @param {{ nSteps: number, watched: Int32Array, values: Float32Array, valuesMin?: Float32Array | null, columns?: Int32Array | null }} d
 * @returns {View}
 */
export function wholeView(d) {
  const { start, stop } = wholeSpan(d);
  const banded = !!d.columns && d.columns.length === d.watched.length && !!d.valuesMin;
  return { start, stop, axis: banded && d.columns ? d.columns : d.watched, pick: d.watched, values: d.values, valuesMin: banded ? d.valuesMin ?? null : null, banded, whole: true };
}

/**
 * The columns of `view` that hold steps of `span` (a zoom's first paint, before its reply):
 * the coarse columns stretched over the new width; the span is the one asked.
 * @param {View} view @param {number} nRows @param {Span} span @param {Span} whole
 * @returns {View}
 */
export function sliceView(view, nRows, span, whole) {
  const n = view.axis.length;
  const a = Math.max(0, columnOf({ axis: view.axis, stop: Infinity }, span.start));
  const b = Math.max(a, lowerBound(view.axis, span.stop));
  const m = b - a;
  const take = (/** @type {Float32Array} */ src) => {
    const out = new Float32Array(nRows * m).fill(NaN);
    for (let r = 0; r < nRows; r++) out.set(src.subarray(r * n + a, r * n + b), r * m);
    return out;
  };
  return {
    start: span.start,
    stop: span.stop,
    axis: m ? Int32Array.from(view.axis.subarray(a, b), (s, i) => (i === 0 ? Math.max(s, span.start) : s)) : new Int32Array(0),
    pick: view.pick.slice(a, b),
    values: take(view.values),
    valuesMin: view.valuesMin ? take(view.valuesMin) : null,
    banded: view.banded,
    whole: isWhole(span, whole),
  };
}

/** @param {unknown} v @returns {v is number} */
const isInt = (v) => Number.isInteger(v);

/**
 * Little-endian float32s from base64 (`count` of them; NaN where the string is short or bad).
 * @param {unknown} v @param {number} count
 * @returns {Float32Array}
 * @example Array.from(base64Floats(btoa(String.fromCharCode(0, 0, 128, 63)), 2)) // [1, NaN]
 */
export function base64Floats(v, count) {
  const out = new Float32Array(count).fill(NaN);
  if (typeof v !== 'string') return out;
  /** @type {string} */
  let bin;
  try {
    bin = atob(v);
  } catch {
    return out;
  }
  const k = Math.min(count, Math.floor(bin.length / 4));
  const bytes = new Uint8Array(k * 4);
  for (let i = 0; i < bytes.length; i++) bytes[i] = bin.charCodeAt(i);
  const dv = new DataView(bytes.buffer);
  for (let i = 0; i < k; i++) out[i] = dv.getFloat32(i * 4, true);
  return out;
}

/**
 * The reply to "timeline_range" (wire/trainpayload.py `range_payload`: {start, stop, rows,
 * columns, values, values_min}) as a `View` over the timeline's module rows `rowIds` (a reply
 * row the timeline lacks is dropped, a timeline row the reply lacks is NaN: nothing recorded);
 * `watched` the run's watched steps (each column's `pick`: its first watched step). Null when
 * the reply is malformed (columns not ascending steps inside [start, stop)).
 * @param {unknown} reply @param {string[]} rowIds @param {Int32Array} watched @param {Span} whole
 * @returns {View | null}
 * @example decodeRange({ start: 0, stop: 2, rows: [''], columns: [0, 1], values: '', values_min: '' }, [''], new Int32Array([0, 1]), { start: 0, stop: 2 })?.axis.length // 2
 */
export function decodeRange(reply, rowIds, watched, whole) {
  const r = asRecord(reply);
  const { start, stop } = r;
  if (!isInt(start) || !isInt(stop) || !(start < stop) || !Array.isArray(r.columns) || !Array.isArray(r.rows)) return null;
  const cols = r.columns;
  const m = cols.length;
  for (let k = 0; k < m; k++) {
    const c = cols[k];
    if (!isInt(c) || c < start || c >= stop || (k > 0 && c <= cols[k - 1])) return null;
  }
  const axis = Int32Array.from(cols);
  const rows = r.rows.map((x) => String(x));
  const hi = base64Floats(r.values, rows.length * m);
  const lo = base64Floats(r.values_min, rows.length * m);
  const at = new Map(rows.map((id, i) => [id, i]));
  const values = new Float32Array(rowIds.length * m).fill(NaN);
  const valuesMin = new Float32Array(rowIds.length * m).fill(NaN);
  rowIds.forEach((id, i) => {
    const j = at.get(id);
    if (j === undefined) return;
    values.set(hi.subarray(j * m, (j + 1) * m), i * m);
    valuesMin.set(lo.subarray(j * m, (j + 1) * m), i * m);
  });
  const pick = new Int32Array(m);
  let banded = false;
  for (let k = 0; k < m; k++) {
    const end = k + 1 < m ? axis[k + 1] : stop;
    const a = lowerBound(watched, axis[k]);
    pick[k] = a < watched.length && watched[a] < end ? watched[a] : axis[k];
    if (lowerBound(watched, end) - a > 1) banded = true;
  }
  return { start, stop, axis, pick, values, valuesMin: banded ? valuesMin : null, banded, whole: isWhole({ start, stop }, whole) };
}

/**
 * The steps column `k` of `view` holds: its first and last step, and how many were watched.
 * @param {View} view @param {number} k @param {Int32Array} watched the run's watched steps
 * @returns {{ first: number, last: number, count: number }}
 * @example columnSteps({ axis: new Int32Array([0, 10]), stop: 20 }, 1, new Int32Array([0, 5, 10, 15])) // { first: 10, last: 19, count: 2 }
 */
export function columnSteps(view, k, watched) {
  const first = view.axis[k];
  const end = k + 1 < view.axis.length ? view.axis[k + 1] : view.stop;
  const count = watched.length ? lowerBound(watched, end) - lowerBound(watched, first) : 1;
  return { first, last: end - 1, count };
}

/**
 * Rows given one value per watched step (a module's op rows: `values` rows x `watched.length`)
 * binned to the columns of `view`: each column's largest, +inf when any is +inf, NaN when none.
 * @param {ArrayLike<number>} values @param {number} nRows @param {Int32Array} watched @param {View} view
 * @returns {Float32Array}
 * @example Array.from(binToView([1, 5, 2], 1, new Int32Array([0, 1, 2]), { axis: new Int32Array([0, 2]), stop: 3 })) // [5, 2]
 */
export function binToView(values, nRows, watched, view) {
  const m = view.axis.length;
  const n = watched.length;
  const out = new Float32Array(nRows * m).fill(NaN);
  for (let k = 0; k < m; k++) {
    const a = lowerBound(watched, view.axis[k]);
    const b = lowerBound(watched, k + 1 < m ? view.axis[k + 1] : view.stop);
    for (let r = 0; r < nRows; r++) {
      let best = NaN;
      for (let j = a; j < b; j++) {
        const v = values[r * n + j];
        if (v === Infinity) {
          best = v;
          break;
        }
        if (!Number.isNaN(v) && !(v <= best)) best = v;
      }
      out[r * m + k] = best;
    }
  }
  return out;
}

/**
 * Where the view is, in words, for the bar: "steps 61,000–61,199 of 100,000".
 * @param {View} view @param {number} nSteps
 * @returns {string}
 * @example spanText({ start: 0, stop: 200, whole: false }, 1000) // 'steps 0–199 of 1,000'
 */
export function spanText(view, nSteps) {
  const f = (/** @type {number} */ v) => v.toLocaleString('en-US');
  return view.whole ? `all ${f(nSteps)} steps` : `steps ${f(view.start)}–${f(view.stop - 1)} of ${f(nSteps)}`;
}
