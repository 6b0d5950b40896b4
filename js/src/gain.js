/**
 * The "gain" colour mode of a watched step's graph (`aw.explore(watch)`): each node shaded by
 * log10 of |gradient out| / |gradient in|, the norms of all it sent and all it received, which
 * Python computed (`gain` reply, wire/trainpayload.py): where gradients shrink (blue, < 1) or grow
 * (red, > 1). Pure.
 */
import { formatNumber } from './format.js';
import { asRecord, decodeNumber } from './jsonsafe.js';

/** Diverging, shrink to grow (ColorBrewer RdBu reversed); the middle bin holds a gain of 1. */
export const GAIN_COLORS = Object.freeze(['#2166ac', '#4393c3', '#92c5de', '#d1e5f0', '#f7f7f7', '#fddbc7', '#f4a582', '#d6604d', '#b2182b']);

/**
 * @typedef {object} Gain
 * @property {Float64Array} items log10 gain per visible item, NaN where none
 * @property {number} span the largest |log10 gain| (the scale is symmetric around a gain of 1)
 * @property {Map<string, number | null>} nodes gain by real node id (null: not finite)
 */

/**
 * The `gain` reply, validated for `n` visible items.
 * @param {unknown} data @param {number} n
 * @returns {Gain}
 * @example decodeGain({ items: [0, 1, null] }, 3).span // 1
 */
export function decodeGain(data, n) {
  const d = asRecord(data);
  const items = new Float64Array(n).fill(NaN);
  let span = 0;
  for (let i = 0; i < n; i++) {
    const v = Array.isArray(d.items) ? decodeNumber(d.items[i]) : NaN;
    if (typeof v === 'number' && Number.isFinite(v)) {
      items[i] = v;
      span = Math.max(span, Math.abs(v));
    }
  }
  /** @type {Map<string, number | null>} */
  const nodes = new Map();
  if (d.nodes && typeof d.nodes === 'object') {
    for (const [id, v] of Object.entries(d.nodes)) {
      const x = decodeNumber(v);
      nodes.set(id, typeof x === 'number' && Number.isFinite(x) ? x : null);
    }
  }
  return { items, span: span > 0 ? span : 1, nodes };
}

/**
 * Colour bin of a log10 gain: -1 for none, else 0..GAIN_COLORS.length-1 (the middle: ~1).
 * @param {number} l @param {number} span
 */
export function gainBin(l, span) {
  if (!Number.isFinite(l)) return -1;
  const k = GAIN_COLORS.length;
  const t = (l / span + 1) / 2;
  return Math.max(0, Math.min(k - 1, Math.floor(t * k)));
}

/**
 * One fill colour per item; `none` where there is no value.
 * @param {Gain} g @param {number} n @param {string} none
 * @returns {string[]}
 */
export function gainColors(g, n, none) {
  const out = new Array(n);
  for (let i = 0; i < n; i++) {
    const k = gainBin(i < g.items.length ? g.items[i] : NaN, g.span);
    out[i] = k < 0 ? none : GAIN_COLORS[k];
  }
  return out;
}

/**
 * The key: colour stops with the gain where each starts.
 * @param {Gain | null} g
 * @returns {{ color: string, from: string }[]}
 */
export function gainLegend(g) {
  if (!g) return [];
  const k = GAIN_COLORS.length;
  return GAIN_COLORS.map((color, b) => ({ color, from: formatNumber(10 ** (-g.span + (2 * g.span * b) / k)) }));
}
