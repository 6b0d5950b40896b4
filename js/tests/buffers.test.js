// @ts-check
import { describe, expect, it } from 'vitest';
import { toTyped } from '../src/buffers.js';
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

  it('returns a typed array of the same type as is, converts other typed arrays by value', () => {
    const a = new Float32Array([1, 2]);
    expect(toTyped(a, Float32Array)).toBe(a);
    expect(Array.from(toTyped(new Float64Array([1.25, 3]), Int32Array))).toEqual([1, 3]);
  });

  it('pads or truncates to the declared length', () => {
    expect(Array.from(toTyped(null, Float32Array, { length: 2 }))).toEqual([NaN, NaN]);
    expect(Array.from(toTyped(undefined, Uint8Array, { length: 3 }))).toEqual([0, 0, 0]);
    expect(Array.from(toTyped(dataView(new Float32Array([1]), 1), Float32Array, { length: 3, fill: 0 }))).toEqual([1, 0, 0]);
    expect(Array.from(toTyped(dataView(new Int32Array([1, 2, 3]), 2), Int32Array, { length: 2 }))).toEqual([1, 2]);
  });

  it('rejects a byte length that is not whole elements, and anything but a buffer', () => {
    expect(() => toTyped(new DataView(new ArrayBuffer(6)), Float32Array)).toThrow(RangeError);
    expect(() => toTyped('abc', Float32Array)).toThrow(TypeError);
    expect(() => toTyped([1, 2], Float32Array)).toThrow(TypeError);
    expect(() => toTyped(new Uint8Array([1]).buffer, Uint8Array)).toThrow(TypeError);
  });

  it('returns an empty array for null', () => {
    expect(toTyped(null, Int32Array).length).toBe(0);
  });
});
