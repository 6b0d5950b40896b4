// @ts-check
// js/src/jsonsafe.js: the protocol's numbers, read only in the spellings Python's
// util/jsonsafe.py writes ("nan", "inf", "-inf", complex as [re, im]).
import { describe, expect, it } from 'vitest';
import { formatNumber } from '../src/format.js';
import { decodeNumber, decodeValue, decodeValues, isFiniteValue } from '../src/jsonsafe.js';

describe('jsonsafe: the one number encoding', () => {
  it('reads numbers, and NaN/Inf only as Python spells them', () => {
    expect([4, -0.5, 'nan', 'inf', '-inf'].map(decodeNumber)).toEqual([4, -0.5, NaN, Infinity, -Infinity]);
    for (const other of ['NaN', 'Infinity', '-Infinity', '+inf', 'infinity', ' inf', '2.5', null, undefined, true, [1]]) {
      expect(decodeNumber(other)).toBeNaN();
    }
  });

  it('reads complex values from [re, im] pairs, and lists of values', () => {
    expect(decodeValue([1, -2])).toEqual({ re: 1, im: -2 });
    expect(decodeValue(['nan', 'inf'])).toEqual({ re: NaN, im: Infinity });
    expect(decodeValues([1, 'inf', [0, 1]])).toEqual([1, Infinity, { re: 0, im: 1 }]);
    expect(decodeValues(null)).toEqual([]);
    expect([1, { re: 1, im: 2 }, NaN, { re: 0, im: -Infinity }].map(isFiniteValue)).toEqual([true, true, false, false]);
  });

  it('formats a complex value as Python does', () => {
    expect(formatNumber(decodeValue([1, -2]))).toBe('1-2j');
    expect(formatNumber(decodeValue([0.5, 'inf']))).toBe('0.5+infj');
  });
});
