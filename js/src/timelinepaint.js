/**
 * The timeline's canvas (timeline.js): the loss curve, the heat map, the step axis, the cursor
 * and the focused cell, painted from a decoded timeline, the view (the steps shown and their
 * columns: timelinezoom.js) and the rows shown.
 *
 * Guarantees: columns are binned to pixels (a 10,000-step run paints one ImageData, each pixel
 * the largest value of its steps, a non-finite one wins); the axis labels never overlap (they
 * come from timelineaxis.js at least 48 px apart); a canvas without pixels (jsdom's) paints the
 * axis and the cursor only, never throws.
 */
import { ALARM_COLOR, SELECT_COLOR } from './style.js';
import { stepTicks, stepX } from './timelineaxis.js';
import { cellColor } from './timelinecolorbar.js';
import { columnOf } from './timelinezoom.js';

/** A step where a NaN/Inf was born and healed (its tick on the loss band). */
export const HEALED_COLOR = '#f28e2b';

/**
 * Per pixel column, the value drawn for the steps it covers: the largest finite value, +inf when
 * any is +inf, NaN when all are NaN. `values` holds `n` columns.
 * @param {ArrayLike<number>} values @param {number} offset first index of the row @param {number} n
 * @param {number} width pixels
 * @returns {Float32Array}
 * @example binRow([1, 5, NaN, Infinity], 0, 4, 2) // Float32Array [5, Infinity]
 */
export function binRow(values, offset, n, width) {
  const out = new Float32Array(width).fill(NaN);
  if (n <= 0 || width <= 0) return out;
  for (let x = 0; x < width; x++) {
    const a = Math.floor((x * n) / width);
    const b = Math.max(a + 1, Math.floor(((x + 1) * n) / width));
    let best = NaN;
    for (let k = a; k < b && k < n; k++) {
      const v = values[offset + k];
      if (v === Infinity) {
        best = Infinity;
        break;
      }
      if (!Number.isNaN(v) && !(v <= best)) best = v;
    }
    out[x] = best;
  }
  return out;
}

/**
 * Per pixel column (`width` of them), the smallest and largest finite loss of the steps
 * `from <= s < to` drawn there (`xOf`: a step's x); NaN where none.
 * @param {ArrayLike<number>} loss @param {number} from @param {number} to @param {number} width
 * @param {(s: number) => number} xOf
 * @returns {{ lo: Float32Array, hi: Float32Array }}
 * @example Array.from(lossEnvelope([3, 1, 2, NaN], 0, 4, 2, (s) => s / 2).hi) // [3, 2]
 */
export function lossEnvelope(loss, from, to, width, xOf) {
  const lo = new Float32Array(width).fill(NaN);
  const hi = new Float32Array(width).fill(NaN);
  for (let s = from; s < to; s++) {
    const v = loss[s];
    if (!Number.isFinite(v)) continue;
    const x = Math.max(0, Math.min(width - 1, Math.floor(xOf(s))));
    if (!(v >= lo[x])) lo[x] = v;
    if (!(v <= hi[x])) hi[x] = v;
  }
  return { lo, hi };
}

/** @param {string} hex @returns {[number, number, number]} */
function rgb(hex) {
  const v = parseInt(hex.slice(1), 16);
  return [(v >> 16) & 255, (v >> 8) & 255, v & 255];
}

/**
 * @typedef {object} PaintInput
 * @property {import('./timelinedata.js').Timeline} d
 * @property {import('./timelinezoom.js').View} view the steps shown and their columns
 * @property {{ kind: 'module' | 'op', module: string, row: number }[]} rows the rows shown
 * @property {(r: { kind: 'module' | 'op', module: string }) => ArrayLike<number> | undefined} source a row's values
 * @property {number} width CSS px @property {number} ratio device pixels per CSS px
 * @property {number} lossPx @property {number} rowPx @property {number} axisPx
 * @property {number | null} selected the cursor's step
 * @property {{ k: number, r: number } | null} focus the keyboard's cell (column, row)
 * @property {string} fg the text colour
 * @property {{ NONFINITE: number, HEALED: number }} flag
 */

/**
 * Paint the timeline of the view's steps on `g` (its transform set to `ratio`): the loss of
 * every step (NaN/Inf steps as red ticks, healed births as orange ones), the heat map (a column
 * per view column, binned to pixels), the axis, the cursor and the focused cell. Returns the
 * cursor's x (CSS px), null when the selected step is not in view.
 * @param {CanvasRenderingContext2D} g @param {PaintInput} p
 * @returns {number | null}
 */
export function paintTimeline(g, p) {
  const { d, view, rows, width, ratio, lossPx, rowPx, axisPx } = p;
  const from = Math.max(0, view.start);
  const to = Math.min(d.nSteps, view.stop);
  const gridH = rows.length * rowPx;
  const height = lossPx + gridH + axisPx;
  g.clearRect(0, 0, width, height);
  let lo = Infinity;
  let hi = -Infinity;
  for (let s = from; s < to; s++) {
    const v = d.loss[s];
    if (Number.isFinite(v)) { if (v < lo) lo = v; if (v > hi) hi = v; }
  }
  if (hi <= lo) hi = lo + 1;
  const xOf = (/** @type {number} */ s) => (view.axis.length ? stepX(view.axis, s, width) : ((s - view.start + 0.5) / Math.max(1, view.stop - view.start)) * width);
  const yOf = (/** @type {number} */ v) => 4 + (1 - (v - lo) / (hi - lo)) * (lossPx - 10);
  const pxW = Math.max(1, Math.ceil(width));
  g.strokeStyle = '#4e79a7';
  g.fillStyle = '#4e79a7';
  g.lineWidth = 1.2;
  g.beginPath();
  if (to - from > 2 * pxW) {
    // more steps than pixels: each pixel column's smallest to largest loss (a 100,000-step
    // polyline costs seconds to stroke; a spike stays one pixel column tall)
    const env = lossEnvelope(d.loss, from, to, pxW, xOf);
    for (let x = 0; x < pxW; x++) {
      if (!(env.hi[x] >= env.lo[x])) continue;
      const top = yOf(env.hi[x]);
      g.rect(x, top, 1, Math.max(1.2, yOf(env.lo[x]) - top));
    }
    g.fill();
  } else {
    let pen = false;
    for (let s = from; s < to; s++) {
      const v = d.loss[s];
      if (!Number.isFinite(v)) { pen = false; continue; }
      const x = xOf(s);
      if (pen) g.lineTo(x, yOf(v)); else g.moveTo(x, yOf(v));
      pen = true;
    }
    g.stroke();
  }
  // NaN/Inf and healed steps: one tick per pixel column (NaN/Inf wins)
  const marks = new Uint8Array(pxW);
  for (let s = from; s < to; s++) {
    const f = d.flags[s];
    if (!(f & (p.flag.NONFINITE | p.flag.HEALED))) continue;
    const x = Math.max(0, Math.min(pxW - 1, Math.floor(xOf(s))));
    marks[x] = Math.max(marks[x], f & p.flag.NONFINITE ? 2 : 1);
  }
  for (let x = 0; x < pxW; x++) {
    if (!marks[x]) continue;
    g.fillStyle = marks[x] === 2 ? ALARM_COLOR : HEALED_COLOR;
    g.fillRect(x - 1, lossPx - 5, 2, 4);
  }
  const nCols = view.axis.length;
  if (rows.length && nCols) {
    const img = g.createImageData(Math.floor(width * ratio), Math.floor(gridH * ratio));
    if (img?.data) {
      const px = new Uint32Array(img.data.buffer);
      const W = img.width;
      const rowH = Math.max(1, Math.floor(rowPx * ratio));
      const [rlo, rhi] = d.range;
      const cache = new Map();
      rows.forEach((r, k) => {
        const src = p.source(r);
        if (!src) return;
        const bins = binRow(src, r.row * nCols, nCols, W);
        for (let x = 0; x < W; x++) {
          const c = cellColor(bins[x], rlo, rhi);
          if (c === null) continue;
          let word = cache.get(c);
          if (word === undefined) {
            const [cr, cg, cb] = rgb(c);
            word = (255 << 24) | (cb << 16) | (cg << 8) | cr; // little-endian RGBA
            cache.set(c, word);
          }
          for (let y = k * rowH + 1; y < (k + 1) * rowH; y++) px[y * W + x] = word;
        }
      });
      g.putImageData(img, 0, Math.floor(lossPx * ratio));
    }
  }
  // the step axis: ticks and step numbers under the grid
  const axisY = lossPx + gridH;
  g.strokeStyle = p.fg;
  g.fillStyle = p.fg;
  g.lineWidth = 1;
  g.font = '10px system-ui, sans-serif';
  g.textAlign = 'center';
  g.textBaseline = 'top';
  g.beginPath();
  g.moveTo(0, axisY + 0.5);
  g.lineTo(width, axisY + 0.5);
  const ticks = stepTicks(view.axis, width);
  for (const t of ticks) {
    g.moveTo(Math.round(t.x) + 0.5, axisY);
    g.lineTo(Math.round(t.x) + 0.5, axisY + 4);
  }
  g.stroke();
  for (const t of ticks) {
    const text = t.step.toLocaleString('en-US'); // 61,200: a long run's steps read at a glance
    const half = (g.measureText?.(text)?.width ?? 6 * text.length) / 2 + 1;
    g.fillText(text, Math.min(width - half, Math.max(half, t.x)), axisY + 5); // whole, inside the grid
  }
  // the keyboard's cell
  if (p.focus && nCols && p.focus.r < rows.length) {
    const cw = width / nCols;
    g.strokeStyle = p.fg;
    g.lineWidth = 1.5;
    g.strokeRect(p.focus.k * cw + 0.75, lossPx + p.focus.r * rowPx + 0.75, Math.max(2, cw - 1.5), rowPx - 1.5);
  }
  if (p.selected === null || !nCols) return null;
  const k = columnOf(view, p.selected);
  if (k < 0) return null;
  const x = ((k + 0.5) / nCols) * width;
  g.strokeStyle = SELECT_COLOR;
  g.lineWidth = 2;
  g.beginPath();
  g.moveTo(x, 0);
  g.lineTo(x, axisY);
  g.stroke();
  return x;
}
