/**
 * Where every label of the drawing goes, in CSS pixels. Pure: the caller passes a `measure`
 * (the canvas's, or a character estimate in tests) and gets label boxes back; the painter draws
 * exactly those boxes and keeps them, so tests read back what was painted.
 *
 * Guarantees, for items whose box is on screen and a scale whose font is at least `LEGIBLE_PX`
 * (the scale Fit never goes below): every item (node, folded box, leaf copy) gets a label inside
 * its own box, every frame a title in its own title band, so no two of these overlap (the layout
 * never overlaps boxes, nor a box and a title band); an op name is never cut (a too-long one
 * takes a smaller font, never under `LEGIBLE_PX`, then spills evenly into the gap beside its
 * box); module titles and shapes are cut in the middle ("layers.…self_attn"), never from the
 * left. Edge value labels are placed only where they overlap no box and no other label.
 */
import { LEGIBLE_PX, fontPx } from './camera.js';

/** Horizontal text margin inside a box, in layout units per side. */
export const BOX_PAD_UNITS = 0.3;
/** Line height as a multiple of the font size. */
export const LINE = 1.2;
/** Edge value labels: font size (px) and the most placed per paint. */
export const EDGE_FONT_PX = 11;
export const MAX_EDGE_LABELS = 400;
/** An op name too long for its box may spill into the gap beside it by this much (units, per side). */
export const SPILL_UNITS = 0.4;

/**
 * @typedef {(text: string, font: number, bold?: boolean) => number} Measure  width in px
 * @typedef {object} LabelItem an item's box on screen and its text
 * @property {'node' | 'box' | 'copy'} kind
 * @property {number} index item index (a copy: the item it copies)
 * @property {number} cx @property {number} cy centre (px)
 * @property {number} w @property {number} h size (px)
 * @property {string} name first line: the op, a leaf's name, a module's title
 * @property {string} [sub] second line: a leaf's shape, a box's "12 ops · 40%"
 * @property {boolean} [cuttable] the first line may be cut in the middle (module titles)
 * @typedef {object} FrameTitle
 * @property {number} index @property {string} title
 * @property {number} x0 @property {number} x1 @property {number} top  frame edges (px)
 * @property {number} band title band height (px)
 * @typedef {object} EdgeText
 * @property {number} index edge @property {number} x @property {number} y midpoint (px)
 * @property {string} text @property {string} [color]
 * @typedef {object} Label a painted label: its text's box, for painting and for tests
 * @property {'node' | 'box' | 'copy' | 'frame' | 'edge'} kind
 * @property {number} index
 * @property {number} line 0: the name, 1: the second line
 * @property {string} text
 * @property {number} x @property {number} y top-left (px)
 * @property {number} w @property {number} h
 * @property {number} font px
 * @property {boolean} bold
 * @property {string} [color]
 */

/**
 * A character-count estimate of text width (tests, and jsdom where there is no canvas).
 * @type {Measure}
 * @example estimateWidth('Add', 10) // 18
 */
export function estimateWidth(text, font, bold = false) {
  return text.length * font * (bold ? 0.64 : 0.6);
}

/**
 * `text` cut in the middle with an ellipsis to fit `width` px, never from the left; "" when not
 * even "a…b" fits.
 * @param {string} text @param {number} width @param {(t: string) => number} measure
 * @example middleCut('encoder.layers.11.self_attn', 60, (t) => t.length * 6) // 'encod…attn'
 */
export function middleCut(text, width, measure) {
  if (measure(text) <= width) return text;
  let lo = 0;
  let hi = text.length - 1;
  const cut = (/** @type {number} */ k) => {
    const head = Math.ceil(k / 2);
    return `${text.slice(0, head)}…${text.slice(text.length - (k - head))}`;
  };
  while (lo < hi) {
    const k = (lo + hi + 1) >> 1;
    if (measure(cut(k)) <= width) lo = k;
    else hi = k - 1;
  }
  return lo >= 2 ? cut(lo) : '';
}

/**
 * Labels of the items in view: name (and second line when the box has room for it) centred in
 * each box. Empty when the scale's font is below `LEGIBLE_PX`.
 * @param {LabelItem[]} items @param {number} ppu @param {Measure} measure
 * @returns {Label[]}
 */
export function itemLabels(items, ppu, measure) {
  const font = fontPx(ppu);
  /** @type {Label[]} */
  const out = [];
  if (font < LEGIBLE_PX - 1e-9) return out;
  const pad = BOX_PAD_UNITS * ppu;
  const spill = SPILL_UNITS * ppu;
  for (const it of items) {
    const bold = it.kind === 'box';
    const inner = Math.max(1, it.w - 2 * pad);
    let f = font;
    let name = it.name;
    let nw = measure(name, f, bold);
    if (nw > inner) {
      // a smaller font first (never below legible), then: titles cut, op names spill
      f = Math.max(LEGIBLE_PX, Math.min(f, (f * inner) / nw));
      nw = measure(name, f, bold);
      if (nw > inner) {
        if (it.cuttable) {
          name = middleCut(name, inner, (t) => measure(t, f, bold));
          nw = measure(name, f, bold);
        } else if (nw > inner + 2 * (pad + spill)) {
          // Longer than the box and its gaps: keep the name whole in a smaller font still
          // rather than cut it (only names far longer than the layout sized for).
          f = Math.max(LEGIBLE_PX, (f * (inner + 2 * (pad + spill))) / nw);
          nw = measure(name, f, bold);
        }
      }
    }
    const lh = f * LINE;
    const sub = it.sub ? middleCut(it.sub, inner, (t) => measure(t, f, false)) : '';
    const two = Boolean(sub) && it.h >= 2 * lh;
    const top = it.cy - (two ? lh : lh / 2);
    if (name) out.push({ kind: it.kind, index: it.index, line: 0, text: name, x: it.cx - nw / 2, y: top, w: nw, h: lh, font: f, bold });
    if (two) {
      const sw = measure(sub, f, false);
      out.push({ kind: it.kind, index: it.index, line: 1, text: sub, x: it.cx - sw / 2, y: top + lh, w: sw, h: lh, font: f, bold: false });
    }
  }
  return out;
}

/**
 * Frame titles, each in its frame's title band at the top left, cut in the middle to the frame's
 * width. None below `LEGIBLE_PX`.
 * @param {FrameTitle[]} frames @param {number} ppu @param {Measure} measure
 * @returns {Label[]}
 */
export function frameLabels(frames, ppu, measure) {
  const font = Math.min(fontPx(ppu), 13);
  /** @type {Label[]} */
  const out = [];
  if (font < LEGIBLE_PX - 1e-9) return out;
  const pad = BOX_PAD_UNITS * ppu;
  for (const f of frames) {
    const lh = font * LINE;
    if (f.band < lh * 0.9) continue;
    const text = middleCut(f.title, f.x1 - f.x0 - 2 * pad, (t) => measure(t, font, true));
    if (!text) continue;
    const w = measure(text, font, true);
    out.push({ kind: 'frame', index: f.index, line: 0, text, x: f.x0 + pad, y: f.top + (f.band - lh) / 2, w, h: lh, font, bold: true });
  }
  return out;
}

/**
 * A uniform grid of rectangles, to ask "does this box overlap a placed one?" in ~O(1).
 */
export class RectGrid {
  /** @param {number} cell px */
  constructor(cell = 64) {
    this.cell = cell;
    /** @type {Map<string, number[][]>} */
    this.cells = new Map();
  }

  /** @param {number} x @param {number} y @param {number} w @param {number} h @param {(key: string) => void} fn */
  each(x, y, w, h, fn) {
    const c = this.cell;
    for (let i = Math.floor(x / c); i <= Math.floor((x + w) / c); i++) {
      for (let j = Math.floor(y / c); j <= Math.floor((y + h) / c); j++) fn(`${i},${j}`);
    }
  }

  /** @param {number} x @param {number} y @param {number} w @param {number} h */
  add(x, y, w, h) {
    const r = [x, y, w, h];
    this.each(x, y, w, h, (k) => {
      const list = this.cells.get(k);
      if (list) list.push(r);
      else this.cells.set(k, [r]);
    });
  }

  /** @param {number} x @param {number} y @param {number} w @param {number} h */
  hits(x, y, w, h) {
    let hit = false;
    this.each(x, y, w, h, (k) => {
      if (hit) return;
      for (const [a, b, c, d] of this.cells.get(k) ?? []) {
        if (x < a + c && a < x + w && y < b + d && b < y + h) {
          hit = true;
          return;
        }
      }
    });
    return hit;
  }
}

/**
 * Edge value labels beside their edges' midpoints (right, left, above, below: the first spot
 * that overlaps nothing in `taken` nor another edge label), at most `MAX_EDGE_LABELS`; an edge
 * whose every spot is taken shows no label (its value is in the hover card and the inspector).
 * @param {EdgeText[]} edges @param {RectGrid} taken boxes and labels already placed (updated)
 * @param {Measure} measure
 * @param {{ x0: number, y0: number, x1: number, y1: number }} [clip] only labels inside
 * @returns {Label[]}
 */
export function edgeLabels(edges, taken, measure, clip) {
  /** @type {Label[]} */
  const out = [];
  const f = EDGE_FONT_PX;
  const h = f * LINE;
  const gap = 5;
  for (const e of edges) {
    if (out.length >= MAX_EDGE_LABELS) break;
    const w = measure(e.text, f, false);
    const spots = [
      [e.x + gap, e.y - h / 2],
      [e.x - gap - w, e.y - h / 2],
      [e.x - w / 2, e.y - gap - h],
      [e.x - w / 2, e.y + gap],
    ];
    for (const [x, y] of spots) {
      if (clip && (x < clip.x0 || y < clip.y0 || x + w > clip.x1 || y + h > clip.y1)) continue;
      if (taken.hits(x - 1, y - 1, w + 2, h + 2)) continue;
      taken.add(x, y, w, h);
      out.push({ kind: 'edge', index: e.index, line: 0, text: e.text, x, y, w, h, font: f, bold: false, ...(e.color ? { color: e.color } : {}) });
      break;
    }
  }
  return out;
}

/**
 * The pairs of labels (indices into `labels`) whose boxes overlap by more than `tol` px both
 * ways: the check the browser tests run on what was painted.
 * @param {{ x: number, y: number, w: number, h: number }[]} labels @param {number} [tol]
 * @returns {[number, number][]}
 * @example overlappingLabels([{ x: 0, y: 0, w: 10, h: 10 }, { x: 5, y: 5, w: 10, h: 10 }]) // [[0, 1]]
 */
export function overlappingLabels(labels, tol = 0.5) {
  const order = labels.map((_, k) => k).sort((a, b) => labels[a].x - labels[b].x);
  /** @type {[number, number][]} */
  const out = [];
  for (let p = 0; p < order.length; p++) {
    const a = labels[order[p]];
    for (let q = p + 1; q < order.length; q++) {
      const b = labels[order[q]];
      if (b.x >= a.x + a.w - tol) break;
      if (b.y < a.y + a.h - tol && a.y < b.y + b.h - tol) out.push([Math.min(order[p], order[q]), Math.max(order[p], order[q])]);
    }
  }
  return out;
}
