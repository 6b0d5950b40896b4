/**
 * Turning a binary field of the protocol into the typed array it stands for.
 *
 * ipywidgets hands Python's binary buffers to the front-end as `DataView`s (sliced out of one
 * message, so their byte offset is arbitrary); a saved notebook restores them the same way. A
 * standalone page's walkthrough holds typed arrays instead (`walkthrough.decodeBuffers`). Those are the
 * only forms a buffer arrives in; everything goes through {@link toTyped}. (Numbers sent as JSON
 * are read by `jsonsafe.js`.)
 */

/**
 * @typedef {Float32ArrayConstructor | Float64ArrayConstructor | Int32ArrayConstructor
 *   | Uint8ArrayConstructor | Uint32ArrayConstructor | Int8ArrayConstructor
 *   | Int16ArrayConstructor | Uint16ArrayConstructor} TypedCtor
 * @typedef {Float32Array | Float64Array | Int32Array | Uint8Array | Uint32Array | Int8Array
 *   | Int16Array | Uint16Array} Typed
 */

/**
 * A typed array of type `Ctor` holding the values of `value`.
 *
 * - `DataView`: the bytes are reinterpreted (little-endian, the only order numpy/ipywidgets
 *   produce here); a view whose offset is not a multiple of the element size is copied first. A
 *   byte length that is not a multiple of the element size is an error.
 * - a typed array of the same type: returned as is (no copy); another typed array: converted.
 * - `null`/`undefined` (a field Python leaves out): an empty array, or `fill` repeated `length`
 *   times when `length` is given.
 * Anything else is an error.
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
  /** @type {Typed} */
  let out = decode(value, Ctor);
  const { length } = opts;
  if (length !== undefined && out.length !== length) {
    const fill = opts.fill ?? (Ctor === Float32Array || Ctor === Float64Array ? NaN : 0);
    const fixed = new Ctor(length);
    if (fill !== 0) fixed.fill(fill);
    fixed.set(out.length > length ? out.subarray(0, length) : out);
    out = fixed;
  }
  return /** @type {InstanceType<C>} */ (out); // decode and `new Ctor` both make a `Ctor`
}

/** @param {unknown} value @param {TypedCtor} Ctor @returns {Typed} */
function decode(value, Ctor) {
  if (value === null || value === undefined) return new Ctor(0);
  if (value instanceof Ctor) return value;
  if (value instanceof DataView) {
    // (a widget's buffers are never shared memory: a plain ArrayBuffer)
    return fromBytes(/** @type {ArrayBuffer} */ (value.buffer), value.byteOffset, value.byteLength, Ctor, Ctor.BYTES_PER_ELEMENT);
  }
  if (ArrayBuffer.isView(value)) {
    // Another typed array: convert the values, not the bytes.
    return Ctor.from(/** @type {ArrayLike<number>} */ (/** @type {unknown} */ (value)));
  }
  throw new TypeError(`cannot read a ${Ctor.name} from ${Object.prototype.toString.call(value)}`);
}

/**
 * @param {ArrayBuffer} buffer @param {number} offset @param {number} bytes
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
