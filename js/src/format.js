/**
 * Short human-readable numbers for labels and tooltips, where width matters more than digits.
 *
 * Integers up to 1e6 print exactly; other finite values keep 3 significant digits and switch to
 * exponent form outside [1e-3, 1e6) so a gradient of 1.2e-5 never renders as "0.0000".
 *
 * A complex value (`{re, im}`, as `jsonsafe.decodeValue` reads Python's [re, im]) prints as
 * "1+2j", Python's spelling.
 *
 * @param {number | bigint | import('./jsonsafe.js').Complex | null | undefined} x
 * @param {number} [digits=3] significant digits for non-integers
 * @returns {string} e.g. "4", "-1", "0.0312", "1.2e-5", "3.5e+7", "NaN", "inf", "-inf", "" for null
 */
export function formatNumber(x, digits = 3) {
  if (x === null || x === undefined) return '';
  if (typeof x === 'bigint') x = Number(x);
  if (typeof x === 'object' && typeof x.re === 'number' && typeof x.im === 'number') {
    const im = formatNumber(x.im, digits);
    return `${formatNumber(x.re, digits)}${im.startsWith('-') ? '' : '+'}${im}j`;
  }
  if (typeof x !== 'number') return String(x);
  if (Number.isNaN(x)) return 'NaN';
  if (x === Infinity) return 'inf';
  if (x === -Infinity) return '-inf';
  if (x === 0) return '0'; // -0 too: a signed zero is noise in a label
  if (Number.isInteger(x) && Math.abs(x) < 1e6) return String(x);
  // Decide the form after rounding, so 999999.7 becomes "1e+6", not "1000000".
  // parseFloat drops the trailing zeros that toPrecision keeps.
  const rounded = parseFloat(x.toPrecision(digits));
  const ar = Math.abs(rounded);
  if (ar >= 1e-3 && ar < 1e6) return String(rounded);
  const [mant, exp] = x.toExponential(digits - 1).split('e');
  return `${String(parseFloat(mant))}e${exp}`;
}
