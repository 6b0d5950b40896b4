// @ts-check
import { describe, expect, it } from 'vitest';
import { formatNumber } from '../src/format.js';

describe('formatNumber', () => {
  it.each([
    [4, '4'],
    [1, '1'],
    [-1, '-1'],
    [0, '0'],
    [-0, '0'],
    [123456, '123456'],
    [0.0312, '0.0312'],
    [0.031249, '0.0312'],
    [3.14159, '3.14'],
    [-2.5, '-2.5'],
    [1.2e-5, '1.2e-5'],
    [1.23456e-7, '1.23e-7'],
    [1e-3, '0.001'],
    [9.99e-4, '9.99e-4'],
    [1e6, '1e+6'],
    [35_000_000, '3.5e+7'],
    [1e6 + 0.5, '1e+6'],
    [999999.7, '1e+6'],
    [NaN, 'NaN'],
    [Infinity, 'inf'],
    [-Infinity, '-inf'],
  ])('formatNumber(%s) === %j', (x, expected) => {
    expect(formatNumber(x)).toBe(expected);
  });

  it('handles missing values and bigints', () => {
    expect(formatNumber(null)).toBe('');
    expect(formatNumber(undefined)).toBe('');
    expect(formatNumber(12n)).toBe('12');
  });

  it('respects the digits argument', () => {
    expect(formatNumber(Math.PI, 5)).toBe('3.1416');
    expect(formatNumber(1.23456e-7, 2)).toBe('1.2e-7');
  });

  it('stays short for float32 noise', () => {
    const f = Math.fround(0.1);
    expect(formatNumber(f)).toBe('0.1');
  });
});
