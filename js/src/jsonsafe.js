/**
 * The one JSON-safe number encoding of the protocol, read back: the mirror of Python's
 * `autograd_widget/util/jsonsafe.py`, and the only place the front-end reads a protocol number.
 *
 * JSON has no NaN or Infinity, so Python spells them "nan", "inf" and "-inf", and a complex
 * number as the pair [re, im] (both parts encoded the same way). Those are the only spellings
 * accepted: every other string (or a value that is not a number) reads as NaN, so a malformed
 * field shows "NaN" and never passes for a real number. `null` is never a number here: where the
 * protocol sends null it means "absent" (a Summary's `std` below two elements...), and callers
 * test for it before decoding.
 */

/** @typedef {{ re: number, im: number }} Complex a complex value (Python sends [re, im]) */

/** @type {Record<string, number>} */
const SPELLED = { nan: NaN, inf: Infinity, '-inf': -Infinity };

/**
 * A protocol number: a JSON number as is, "nan" / "inf" / "-inf" as NaN / ±Infinity, anything
 * else NaN.
 * @param {unknown} v
 * @returns {number}
 */
export function decodeNumber(v) {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && Object.hasOwn(SPELLED, v)) return SPELLED[v];
  return NaN;
}

/**
 * A protocol value of a tensor (an element of `Summary.values`, an edge's or a saved tensor's
 * values): a number as {@link decodeNumber} reads it, or a complex one from its [re, im] pair.
 * @param {unknown} v
 * @returns {number | Complex}
 */
export function decodeValue(v) {
  if (Array.isArray(v) && v.length === 2) return { re: decodeNumber(v[0]), im: decodeNumber(v[1]) };
  return decodeNumber(v);
}

/**
 * A list of protocol values (see {@link decodeValue}); anything but a list reads as none.
 * @param {unknown} list
 * @returns {(number | Complex)[]}
 */
export function decodeValues(list) {
  return Array.isArray(list) ? list.map(decodeValue) : [];
}

/**
 * False for NaN and ±Infinity, and for a complex value with such a part.
 * @param {number | Complex} v
 */
export function isFiniteValue(v) {
  return typeof v === 'number' ? Number.isFinite(v) : Number.isFinite(v.re) && Number.isFinite(v.im);
}

/**
 * A JSON object's fields, for a reader that checks each field it reads: an object (not null, not
 * a list) as it is, anything else as an empty object (every field then reads as missing).
 * @param {unknown} v
 * @returns {Record<string, unknown>}
 * @example
 * asRecord({ items: [1] }).items; // [1]
 * asRecord(null).items; // undefined
 */
export function asRecord(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? /** @type {Record<string, unknown>} */ (v) : {};
}
