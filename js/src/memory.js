/**
 * The "memory" colour mode: nodes shaded by the bytes their saved values hold (Python's `memory`
 * reply: storages counted once, charged to the first node in engine order), on a log scale. Pure.
 */
import { asRecord } from './jsonsafe.js';

/** Sequential, light to dark (ColorBrewer YlOrBr): more bytes, darker. */
export const MEMORY_COLORS = Object.freeze(['#fff7bc', '#fee391', '#fec44f', '#fe9929', '#ec7014', '#cc4c02', '#993404', '#662506']);

/**
 * "0 B", "856 B", "1.5 KiB", "12 MiB", "1.02 GiB".
 * @param {number | null | undefined} n
 */
export function formatBytes(n) {
  if (n === null || n === undefined || !Number.isFinite(Number(n))) return '';
  let v = Number(n);
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  if (u === 0) return `${Math.round(v)} B`;
  const digits = Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2;
  return `${parseFloat(v.toFixed(digits))} ${units[u]}`;
}

/**
 * The log10 range of the positive byte counts, widened to one unit when flat; null when none.
 * @param {ArrayLike<number>} bytes
 * @returns {[number, number] | null}
 */
export function memoryRange(bytes) {
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (b > 0 && Number.isFinite(b)) {
      const l = Math.log10(b);
      if (l < lo) lo = l;
      if (l > hi) hi = l;
    }
  }
  if (!(hi >= lo)) return null;
  if (hi - lo < 1e-9) return [lo - 0.5, hi + 0.5];
  return [lo, hi];
}

/**
 * Colour bin of a byte count: -1 for nothing saved, else 0..MEMORY_COLORS.length-1.
 * @param {number} b @param {[number, number] | null} range
 */
export function memoryBin(b, range) {
  if (!(b > 0) || !range) return -1;
  const t = (Math.log10(b) - range[0]) / (range[1] - range[0]);
  const k = MEMORY_COLORS.length;
  return Math.max(0, Math.min(k - 1, Math.floor(t * k)));
}

/**
 * One fill colour per item for the memory mode; `none` for items that save nothing.
 * @param {ArrayLike<number>} bytes per visible item
 * @param {number} n item count (missing entries read as 0)
 * @param {string} none
 * @returns {string[]}
 */
export function memoryColors(bytes, n, none) {
  const range = memoryRange(bytes);
  const out = new Array(n);
  for (let i = 0; i < n; i++) {
    const k = memoryBin(i < bytes.length ? bytes[i] : 0, range);
    out[i] = k < 0 ? none : MEMORY_COLORS[k];
  }
  return out;
}

/**
 * @typedef {object} Memory
 * @property {number} total bytes
 * @property {boolean} excludeLeaves
 * @property {Float64Array} items bytes per visible item
 * @property {{ id: string, name: string, module: string | null, bytes: number, item: number }[]} top
 * @property {[string, number][]} byModule biggest first
 */

/**
 * The `memory` reply, validated for `n` visible items.
 * @param {unknown} data @param {number} n
 * @returns {Memory}
 */
export function decodeMemory(data, n) {
  const d = asRecord(data);
  const items = new Float64Array(n);
  if (Array.isArray(d.items)) for (let i = 0; i < n && i < d.items.length; i++) items[i] = Number(d.items[i]) || 0;
  const top = Array.isArray(d.top)
    ? d.top
        .map(asRecord)
        .filter((t) => typeof t.id === 'string')
        .map((t) => ({
          id: String(t.id),
          name: String(t.name ?? t.id),
          module: t.module === null || t.module === undefined ? null : String(t.module),
          bytes: Number(t.bytes) || 0,
          item: Number.isInteger(t.item) && Number(t.item) >= 0 && Number(t.item) < n ? Number(t.item) : -1,
        }))
    : [];
  /** @type {[string, number][]} */
  const byModule = d.by_module && typeof d.by_module === 'object'
    ? Object.entries(d.by_module).map(([k, v]) => /** @type {[string, number]} */ ([k, Number(v) || 0])).sort((a, b) => b[1] - a[1])
    : [];
  return { total: Number(d.total) || 0, excludeLeaves: Boolean(d.exclude_leaves), items, top, byModule };
}

/**
 * The scale drawn in the memory list: colour stops with the byte count where each bin starts.
 * @param {ArrayLike<number>} bytes
 * @returns {{ color: string, from: string }[]}
 */
export function memoryLegend(bytes) {
  const range = memoryRange(bytes);
  if (!range) return [];
  const k = MEMORY_COLORS.length;
  return MEMORY_COLORS.map((color, b) => ({ color, from: formatBytes(10 ** (range[0] + ((range[1] - range[0]) * b) / k)) }));
}
