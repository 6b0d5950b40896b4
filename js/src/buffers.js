/**
 * Turning whatever a numeric field of the protocol arrives as into the typed array it stands for.
 *
 * ipywidgets hands binary buffers to the front-end as `DataView`s (sliced out of one message, so
 * their byte offset is arbitrary); a saved notebook restores them the same way; tests and a
 * standalone export may pass plain arrays (JSON: `null`, `"nan"`, `"inf"`, `"-inf"` for the
 * non-finite floats) or typed arrays. Everything goes through {@link toTyped}.
 */

/**
 * @typedef {Float32ArrayConstructor | Float64ArrayConstructor | Int32ArrayConstructor
 *   | Uint8ArrayConstructor | Uint32ArrayConstructor | Int8ArrayConstructor
 *   | Int16ArrayConstructor | Uint16ArrayConstructor} TypedCtor
 * @typedef {Float32Array | Float64Array | Int32Array | Uint8Array | Uint32Array | Int8Array
 *   | Int16Array | Uint16Array} Typed
 */

/** @param {unknown} v @returns {number} */
function toNumber(v) {
  if (typeof v === 'number') return v;
  if (v === null || v === undefined) return NaN;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'string') {
    const s = v.trim().toLowerCase();
    if (s === 'nan') return NaN;
    if (s === 'inf' || s === '+inf' || s === 'infinity') return Infinity;
    if (s === '-inf' || s === '-infinity') return -Infinity;
    const n = Number(s);
    return s === '' ? NaN : n;
  }
  return NaN;
}

/**
 * A typed array of type `Ctor` holding the values of `value`.
 *
 * - `DataView` / `ArrayBuffer`: the bytes are reinterpreted (little-endian, the only order
 *   numpy/ipywidgets produce here); a view whose offset is not a multiple of the element size is
 *   copied first. A byte length that is not a multiple of the element size is an error.
 * - a typed array of the same type: returned as is (no copy); another typed array: converted.
 * - a plain array: converted element-wise (`null`/`"nan"` -> NaN for float types, 0 for ints).
 * - `{buffer|view|data: ...}` wrappers (jupyter-scatter style `{view, dtype, shape}`): unwrapped.
 * - `null`/`undefined`: an empty array, or `fill` repeated `length` times when `length` is given.
 *
 * When `length` is given the result always has that length: shorter input is padded with `fill`,
 * longer input is truncated, so a malformed payload can never index out of bounds.
 *
 * @template {TypedCtor} C
 * @param {unknown} value
 * @param {C} Ctor
 * @param {{ length?: number, fill?: number }} [opts]
 * @returns {InstanceType<C>}
 */
export function toTyped(value, Ctor, opts = {}) {
  /** @type {any} */
  let out = decode(value, Ctor);
  const { length } = opts;
  if (length !== undefined && out.length !== length) {
    const fill = opts.fill ?? (Ctor === Float32Array || Ctor === Float64Array ? NaN : 0);
    const fixed = new Ctor(length);
    if (fill !== 0) fixed.fill(fill);
    fixed.set(out.length > length ? out.subarray(0, length) : out);
    out = fixed;
  }
  return out;
}

/** @param {unknown} value @param {TypedCtor} Ctor @returns {Typed} */
function decode(value, Ctor) {
  if (value === null || value === undefined) return new Ctor(0);
  if (value instanceof Ctor) return value;
  const size = Ctor.BYTES_PER_ELEMENT;
  if (value instanceof DataView) {
    return fromBytes(value.buffer, value.byteOffset, value.byteLength, Ctor, size);
  }
  if (ArrayBuffer.isView(value)) {
    // Another typed array: convert the values, not the bytes.
    return Ctor.from(/** @type {ArrayLike<number>} */ (/** @type {unknown} */ (value)));
  }
  if (value instanceof ArrayBuffer) return fromBytes(value, 0, value.byteLength, Ctor, size);
  if (Array.isArray(value)) {
    const out = new Ctor(value.length);
    for (let i = 0; i < value.length; i++) out[i] = toNumber(value[i]);
    return out;
  }
  if (typeof value === 'object') {
    const o = /** @type {Record<string, unknown>} */ (value);
    for (const key of ['view', 'buffer', 'data', 'value']) {
      if (key in o) return decode(o[key], Ctor);
    }
  }
  throw new TypeError(`cannot read a ${Ctor.name} from ${Object.prototype.toString.call(value)}`);
}

/**
 * @param {ArrayBufferLike} buffer @param {number} offset @param {number} bytes
 * @param {TypedCtor} Ctor @param {number} size
 * @returns {Typed}
 */
function fromBytes(buffer, offset, bytes, Ctor, size) {
  if (bytes % size !== 0) {
    throw new RangeError(`${bytes} bytes is not a whole number of ${Ctor.name} elements`);
  }
  if (offset % size === 0) return new Ctor(buffer, offset, bytes / size);
  return new Ctor(buffer.slice(offset, offset + bytes));
}

/**
 * A list of numbers from a protocol list that may hold `"nan"`, `"inf"`, `"-inf"` or `null`.
 * @param {unknown} value
 * @returns {number[]}
 */
export function toNumbers(value) {
  if (value === null || value === undefined) return [];
  if (Array.isArray(value)) return value.map(toNumber);
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) {
    return Array.from(toTyped(value, Float64Array));
  }
  return [toNumber(value)];
}

export { toNumber };
