import { describe, expect, it } from 'vitest';
import { toNumbers, toTyped } from '../src/buffers.js';
import { dataView } from './fixtures.js';

describe('toTyped', () => {
  it('reads a DataView at an aligned offset without copying', () => {
    const dv = dataView(new Float32Array([1.5, -2, NaN]), 4);
    const out = toTyped(dv, Float32Array);
    expect(out).toBeInstanceOf(Float32Array);
    expect(Array.from(out)).toEqual([1.5, -2, NaN]);
    expect(out.buffer).toBe(dv.buffer);
  });

  it('copies a DataView at an unaligned offset', () => {
    const dv = dataView(new Int32Array([7, -3]), 1);
    const out = toTyped(dv, Int32Array);
    expect(Array.from(out)).toEqual([7, -3]);
    expect(out.buffer).not.toBe(dv.buffer);
  });

  it('reads an ArrayBuffer', () => {
    expect(Array.from(toTyped(new Uint8Array([1, 2, 3]).buffer, Uint8Array))).toEqual([1, 2, 3]);
  });

  it('returns a typed array of the same type as is, converts other typed arrays by value', () => {
    const a = new Float32Array([1, 2]);
    expect(toTyped(a, Float32Array)).toBe(a);
    expect(Array.from(toTyped(new Float64Array([1.25, 3]), Int32Array))).toEqual([1, 3]);
  });

  it('reads plain JSON arrays, with null and nan/inf strings', () => {
    expect(Array.from(toTyped([1, null, 'nan', 'inf', '-inf', '2.5'], Float32Array))).toEqual([
      1, NaN, NaN, Infinity, -Infinity, 2.5,
    ]);
    expect(Array.from(toTyped([1, 0, 3], Uint8Array))).toEqual([1, 0, 3]);
  });

  it('unwraps {view|buffer|data} objects', () => {
    expect(Array.from(toTyped({ view: dataView(new Float32Array([3])), dtype: 'float32' }, Float32Array))).toEqual([3]);
    expect(Array.from(toTyped({ buffer: [4] }, Int32Array))).toEqual([4]);
  });

  it('pads or truncates to the declared length', () => {
    expect(Array.from(toTyped(null, Float32Array, { length: 2 }))).toEqual([NaN, NaN]);
    expect(Array.from(toTyped(undefined, Uint8Array, { length: 3 }))).toEqual([0, 0, 0]);
    expect(Array.from(toTyped([1], Float32Array, { length: 3, fill: 0 }))).toEqual([1, 0, 0]);
    expect(Array.from(toTyped([1, 2, 3], Int32Array, { length: 2 }))).toEqual([1, 2]);
  });

  it('rejects a byte length that is not whole elements, and junk', () => {
    expect(() => toTyped(new DataView(new ArrayBuffer(6)), Float32Array)).toThrow(RangeError);
    expect(() => toTyped('abc', Float32Array)).toThrow(TypeError);
  });

  it('returns an empty array for null', () => {
    expect(toTyped(null, Int32Array).length).toBe(0);
  });
});

describe('toNumbers', () => {
  it('reads protocol value lists', () => {
    expect(toNumbers([4, 'nan', 'inf', '-inf', null])).toEqual([4, NaN, Infinity, -Infinity, NaN]);
    expect(toNumbers(null)).toEqual([]);
    expect(toNumbers(3)).toEqual([3]);
    expect(toNumbers(new Float32Array([0.5]))).toEqual([0.5]);
  });
});
