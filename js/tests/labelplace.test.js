// @ts-check
// Label placement (labelplace.js): item names inside their boxes at a legible font, op names never
// cut, titles cut in the middle, frame titles in their band, edge values only where free, and no
// two labels overlapping (a property test over random box grids).
import { describe, expect, it } from 'vitest';

import { LEGIBLE_PPU, LEGIBLE_PX, fontPx } from '../src/camera.js';
import {
  BOX_PAD_UNITS, EDGE_FONT_PX, LINE, MAX_EDGE_LABELS, RectGrid, SPILL_UNITS,
  edgeLabels, estimateWidth, frameLabels, itemLabels, middleCut, overlappingLabels,
} from '../src/labelplace.js';
import { CHAR_W } from '../src/drawing.js';

const measure = estimateWidth;
/** @typedef {import('../src/labelplace.js').LabelItem} LabelItem */
/**
 * An item box centred at (cx, cy) px, `w` x `h` px.
 * @param {number} index @param {string} name @param {number} cx @param {number} cy
 * @param {number} w @param {number} h @param {Partial<LabelItem>} [extra]
 * @returns {LabelItem}
 */
const item = (index, name, cx, cy, w, h, extra = {}) => ({ kind: 'node', index, name, cx, cy, w, h, ...extra });

/** A seeded PRNG (mulberry32): the property tests are reproducible. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('estimateWidth and middleCut', () => {
  it('estimates text width per character, bold wider', () => {
    expect(estimateWidth('Add', 10)).toBeCloseTo(18);
    expect(estimateWidth('Add', 10, true)).toBeGreaterThan(estimateWidth('Add', 10));
    expect(estimateWidth('', 12)).toBe(0);
  });

  it('keeps text that fits; cuts in the middle, never from the left, to fit the width', () => {
    const m = (t) => t.length * 6;
    expect(middleCut('Linear', 100, m)).toBe('Linear');
    const text = 'encoder.layers.11.self_attn';
    const cut = middleCut(text, 60, m);
    expect(cut).toBe('encod…attn');
    for (const w of [30, 45, 60, 90, 120, 150]) {
      const c = middleCut(text, w, m);
      if (!c) continue;
      expect(m(c)).toBeLessThanOrEqual(w);
      const [head, tail] = c.split('…');
      expect(text.startsWith(head)).toBe(true); // the start is kept: never cut from the left
      expect(text.endsWith(tail)).toBe(true);
      expect(head.length).toBeGreaterThanOrEqual(tail.length);
      expect(head.length).toBeGreaterThan(0);
    }
    expect(middleCut(text, 10, m)).toBe(''); // not even "a…b"
  });
});

describe('itemLabels', () => {
  it('the name centred in its box, at the scale\'s font', () => {
    const ppu = 16;
    const [l] = itemLabels([item(0, 'Add', 100, 50, 80, 24)], ppu, measure);
    expect(l).toMatchObject({ kind: 'node', index: 0, line: 0, text: 'Add', bold: false });
    expect(l.font).toBeCloseTo(fontPx(ppu));
    expect(l.x + l.w / 2).toBeCloseTo(100);
    expect(l.y + l.h / 2).toBeCloseTo(50);
    expect(l.h).toBeCloseTo(l.font * LINE);
    expect(l.w).toBeCloseTo(measure('Add', l.font));
  });

  it('the font follows the scale, capped; none below the legible scale', () => {
    const at = (ppu) => itemLabels([item(0, 'Mul', 100, 50, 6 * ppu, 2 * ppu)], ppu, measure);
    expect(at(LEGIBLE_PPU)[0].font).toBeGreaterThanOrEqual(LEGIBLE_PX - 1e-9);
    expect(at(17)[0].font).toBeCloseTo(fontPx(17));
    expect(at(17)[0].font).toBeGreaterThan(at(LEGIBLE_PPU)[0].font);
    expect(at(200)[0].font).toBe(15);
    expect(at(LEGIBLE_PPU * 0.98)).toEqual([]);
    expect(at(2)).toEqual([]);
  });

  it('an op name too long for its box: a smaller font (never under LEGIBLE_PX), never cut', () => {
    const ppu = 19; // font 14.8
    const name = 'NativeLayerNormBackward0';
    const w = measure(name, fontPx(ppu)) * 0.85; // a little short
    const [l] = itemLabels([item(0, name, 300, 50, w, 30)], ppu, measure);
    expect(l.text).toBe(name);
    expect(l.font).toBeLessThan(fontPx(ppu));
    expect(l.font).toBeGreaterThanOrEqual(LEGIBLE_PX);
    expect(l.x + l.w / 2).toBeCloseTo(300);
  });

  it('at the legible scale an op name too long spills evenly into the gaps beside its box, still whole', () => {
    const ppu = LEGIBLE_PPU;
    const name = 'ConvolutionBackward0';
    const nw = measure(name, LEGIBLE_PX);
    const w = nw - 0.5 * ppu; // the name is half a unit wider than the box (spill allowed: 2 x (pad + spill))
    const [l] = itemLabels([item(0, name, 300, 50, w, 24)], ppu, measure);
    expect(l.text).toBe(name);
    expect(l.font).toBeGreaterThanOrEqual(LEGIBLE_PX - 1e-9);
    expect(l.w).toBeGreaterThan(w); // wider than the box ...
    expect(l.x).toBeGreaterThanOrEqual(300 - w / 2 - SPILL_UNITS * ppu - 1e-6); // ... by at most the spill per side
    expect(l.x + l.w).toBeLessThanOrEqual(300 + w / 2 + SPILL_UNITS * ppu + 1e-6);
    expect(l.x + l.w / 2).toBeCloseTo(300);
    // even far too long: whole, at LEGIBLE_PX
    const [far] = itemLabels([item(1, name, 300, 50, 20, 24)], ppu, measure);
    expect(far.text).toBe(name);
    expect(far.font).toBeCloseTo(LEGIBLE_PX);
  });

  it('a module title too long is cut in the middle, inside its box, never from the left', () => {
    const ppu = 16;
    const title = 'encoder.layers.11.self_attn · MultiheadAttention';
    const w = 120;
    const [l] = itemLabels([item(0, title, 200, 60, w, 40, { kind: 'box', cuttable: true })], ppu, measure);
    expect(l.bold).toBe(true);
    expect(l.text).toContain('…');
    expect(l.font).toBeGreaterThanOrEqual(LEGIBLE_PX);
    const [head, tail] = l.text.split('…');
    expect(title.startsWith(head)).toBe(true);
    expect(title.endsWith(tail)).toBe(true);
    expect(l.w).toBeLessThanOrEqual(w - 2 * BOX_PAD_UNITS * ppu + 1e-6);
    expect(l.x).toBeGreaterThanOrEqual(200 - w / 2);
  });

  it('the second line only when the box is tall enough for two lines; cut in the middle to fit', () => {
    const ppu = 16;
    const font = fontPx(ppu);
    const lh = font * LINE;
    const tall = itemLabels([item(0, 'weight', 100, 100, 140, 2 * lh + 1, { sub: '[64, 3, 7, 7]' })], ppu, measure);
    expect(tall.map((l) => [l.line, l.text])).toEqual([[0, 'weight'], [1, '[64, 3, 7, 7]']]);
    expect(tall[1].y).toBeCloseTo(tall[0].y + tall[0].h);
    expect(tall[0].y).toBeGreaterThanOrEqual(100 - (2 * lh + 1) / 2);
    expect(tall[1].w).toBeLessThanOrEqual(140);
    expect(tall[1].y + tall[1].h).toBeLessThanOrEqual(100 + (2 * lh + 1) / 2);
    expect(tall[1].bold).toBe(false);
    const flat = itemLabels([item(0, 'weight', 100, 100, 140, 2 * lh - 1, { sub: '[64, 3, 7, 7]' })], ppu, measure);
    expect(flat.map((l) => l.line)).toEqual([0]);
    expect(flat[0].y + flat[0].h / 2).toBeCloseTo(100); // alone: centred
    const narrow = itemLabels([item(0, 'w', 100, 100, 60, 3 * lh, { sub: '[1024, 1024, 3, 3]' })], ppu, measure);
    expect(narrow[1].text).toContain('…');
    expect(narrow[1].text.startsWith('[1')).toBe(true);
    expect(narrow[1].w).toBeLessThanOrEqual(60);
  });
});

describe('frameLabels', () => {
  const frame = (over = {}) => ({ index: 0, title: 'layers.0 · TransformerEncoderLayer', x0: 50, x1: 450, top: 20, band: 28, ...over });

  it('the title at the top left, inside the frame\'s band, bold, at most 13 px', () => {
    const [l] = frameLabels([frame()], 18, measure);
    expect(l).toMatchObject({ kind: 'frame', index: 0, line: 0, text: 'layers.0 · TransformerEncoderLayer', bold: true });
    expect(l.font).toBeLessThanOrEqual(13);
    expect(l.x).toBeGreaterThan(50);
    expect(l.x + l.w).toBeLessThanOrEqual(450);
    expect(l.y).toBeGreaterThanOrEqual(20);
    expect(l.y + l.h).toBeLessThanOrEqual(20 + 28);
  });

  it('a narrow frame cuts its title in the middle; a band too thin or a scale too small: none', () => {
    const [l] = frameLabels([frame({ x1: 200 })], 18, measure);
    expect(l.text).toContain('…');
    expect(l.text.startsWith('layers')).toBe(true);
    expect(l.x + l.w).toBeLessThanOrEqual(200);
    expect(frameLabels([frame({ band: 8 })], 18, measure)).toEqual([]);
    expect(frameLabels([frame()], LEGIBLE_PPU * 0.9, measure)).toEqual([]);
    expect(frameLabels([frame({ x1: 60 })], 18, measure)).toEqual([]); // not even "a…b"
  });
});

describe('edgeLabels', () => {
  const h = EDGE_FONT_PX * LINE;

  it('beside the midpoint (right first), clear of boxes, else the next free spot, else none', () => {
    const taken = new RectGrid(64);
    const [a] = edgeLabels([{ index: 3, x: 100, y: 100, text: '0.25' }], taken, measure);
    expect(a).toMatchObject({ kind: 'edge', index: 3, text: '0.25', font: EDGE_FONT_PX });
    expect(a.x).toBeGreaterThan(100); // to the right
    expect(a.y + a.h / 2).toBeCloseTo(100);
    // a box right of the next midpoint: the label goes left
    const t2 = new RectGrid(64);
    t2.add(205, 290, 60, 20);
    const [b] = edgeLabels([{ index: 4, x: 200, y: 300, text: '1.5' }], t2, measure);
    expect(b.x + b.w).toBeLessThan(200);
    // boxes on every side: no label
    const t3 = new RectGrid(64);
    t3.add(150, 250, 100, 100);
    expect(edgeLabels([{ index: 5, x: 200, y: 300, text: '7' }], t3, measure)).toEqual([]);
  });

  it('edge labels avoid each other and the colour is kept', () => {
    const taken = new RectGrid(64);
    const edges = Array.from({ length: 6 }, (_, k) => ({ index: k, x: 100, y: 100, text: '1', color: '#ff1f1f' }));
    const out = edgeLabels(edges, taken, measure);
    expect(out).toHaveLength(4); // four spots around one point (right, left, above, below), then none is free
    expect(out.map((l) => l.index)).toEqual([0, 1, 2, 3]);
    expect(overlappingLabels(out, 0)).toEqual([]);
    expect(out.every((l) => l.color === '#ff1f1f')).toBe(true);
    // wider texts: above/below would touch the side spots, so fewer fit, still never overlapping
    const wide = edgeLabels(Array.from({ length: 6 }, (_, k) => ({ index: k, x: 100, y: 100, text: 'nan' })), new RectGrid(64), measure);
    expect(wide.length).toBeGreaterThanOrEqual(2);
    expect(overlappingLabels(wide, 0)).toEqual([]);
  });

  it('respects the clip rectangle', () => {
    const clip = { x0: 0, y0: 0, x1: 110, y1: 200 };
    const out = edgeLabels([{ index: 0, x: 105, y: 100, text: '123.45' }], new RectGrid(64), measure, clip);
    expect(out).toHaveLength(1);
    const l = out[0];
    expect(l.x).toBeGreaterThanOrEqual(0);
    expect(l.x + l.w).toBeLessThanOrEqual(110); // the right spot would stick out: left instead
    expect(edgeLabels([{ index: 0, x: 5, y: 3, text: '123456789' }], new RectGrid(64), measure, { x0: 0, y0: 0, x1: 20, y1: 10 })).toEqual([]);
  });

  it('never more than MAX_EDGE_LABELS', () => {
    const edges = Array.from({ length: MAX_EDGE_LABELS + 50 }, (_, k) => ({ index: k, x: 40 * (k % 100), y: 40 * Math.floor(k / 100), text: '1' }));
    const out = edgeLabels(edges, new RectGrid(64), measure);
    expect(out).toHaveLength(MAX_EDGE_LABELS);
    expect(overlappingLabels(out)).toEqual([]);
    expect(h).toBeGreaterThan(0);
  });
});

describe('RectGrid and overlappingLabels', () => {
  it('RectGrid answers overlaps across cells, not touching edges', () => {
    const g = new RectGrid(10);
    g.add(5, 5, 30, 4);
    expect(g.hits(30, 6, 2, 2)).toBe(true);
    expect(g.hits(35, 5, 5, 5)).toBe(false); // touches the right edge only
    expect(g.hits(0, 20, 100, 5)).toBe(false);
    expect(g.hits(-100, -100, 500, 500)).toBe(true); // covers it
  });

  it('overlappingLabels lists the pairs that overlap beyond the tolerance', () => {
    expect(overlappingLabels([{ x: 0, y: 0, w: 10, h: 10 }, { x: 5, y: 5, w: 10, h: 10 }])).toEqual([[0, 1]]);
    expect(overlappingLabels([{ x: 0, y: 0, w: 10, h: 10 }, { x: 10, y: 0, w: 10, h: 10 }])).toEqual([]); // side by side
    expect(overlappingLabels([{ x: 0, y: 0, w: 10, h: 10 }, { x: 9.8, y: 0, w: 10, h: 10 }])).toEqual([]); // within 0.5 px
    expect(overlappingLabels([{ x: 0, y: 0, w: 10, h: 10 }, { x: 9.8, y: 0, w: 10, h: 10 }], 0)).toEqual([[0, 1]]);
    // order does not matter; pairs come as [low, high]
    const ls = [{ x: 50, y: 0, w: 10, h: 10 }, { x: 0, y: 0, w: 10, h: 10 }, { x: 55, y: 5, w: 10, h: 10 }, { x: 100, y: 100, w: 1, h: 1 }];
    expect(overlappingLabels(ls)).toEqual([[0, 2]]);
  });
});

describe('property: no two labels overlap on random grids of non-overlapping boxes', () => {
  const OPS = ['Add', 'Mul', 'MmBackward0', 'NativeLayerNormBackward0', 'T', 'ViewBackward0', 'ConvolutionBackward0', 'SoftmaxBackward0', 'ScaledDotProductEfficientAttentionBackward0'];
  const TITLES = ['encoder.layers.11.self_attn · MultiheadAttention', '0 · Linear', 'layers.0–5 ×6 · _Block', 'head'];

  /**
   * A grid of boxes sized as the layout sizes them (CHAR_W per character of the name, one unit
   * per line), some narrower than that (to 60%, names up to 15 characters: a long name in a narrow
   * box takes a smaller font or spills), with gaps of at least 2 x SPILL_UNITS across and 0.3 down.
   */
  function randomScene(seed) {
    const r = rng(seed);
    const ppu = r() < 0.35 ? LEGIBLE_PPU : LEGIBLE_PPU + r() * 30; // Fit of a big graph: exactly legible
    const rows = 3 + Math.floor(r() * 8);
    const cols = 2 + Math.floor(r() * 6);
    /** @type {LabelItem[]} */
    const items = [];
    let y = 20;
    for (let row = 0; row < rows; row++) {
      let x = 10;
      let tallest = 0;
      for (let col = 0; col < cols; col++) {
        const box = r() < 0.25;
        let name = box ? TITLES[Math.floor(r() * TITLES.length)] : OPS[Math.floor(r() * OPS.length)];
        const narrow = r() < 0.4;
        if (narrow && !box && name.length > 15) name = name.slice(0, 15);
        const sub = box ? `${1 + Math.floor(r() * 40)} ops · ${Math.floor(r() * 100)}%` : r() < 0.3 ? '[64, 3, 7, 7]' : '';
        const lines = sub ? 2 : 1;
        const wUnits = (Math.max(3, name.length) * CHAR_W + 1.2) * (narrow ? 0.6 + 0.25 * r() : 1 + 0.3 * r());
        const hUnits = (r() < 0.3 ? 1 : lines) + 0.5;
        const w = wUnits * ppu;
        const h = hUnits * ppu;
        items.push({ kind: box ? 'box' : 'node', index: items.length, name, sub, cuttable: box, cx: x + w / 2, cy: y + h / 2, w, h });
        x += w + (2 * SPILL_UNITS + 0.05 + r() * 2) * ppu;
        tallest = Math.max(tallest, h);
      }
      y += tallest + (0.3 + r() * 2) * ppu;
    }
    return { items, ppu };
  }

  it('200 random scenes: every item labelled, legible, no overlap, names whole, titles cut only in the middle', () => {
    let labelled = 0;
    let spilled = 0;
    let shrunk = 0;
    for (let seed = 1; seed <= 200; seed++) {
      const { items, ppu } = randomScene(seed);
      const labels = itemLabels(items, ppu, measure);
      expect(overlappingLabels(labels), `seed ${seed}`).toEqual([]);
      for (const it of items) {
        const name = labels.find((l) => l.index === it.index && l.line === 0);
        expect(name, `seed ${seed} item ${it.index}`).toBeTruthy();
        expect(name.font).toBeGreaterThanOrEqual(LEGIBLE_PX - 1e-9);
        if (it.cuttable) {
          const [head, tail = ''] = name.text.split('…');
          expect(it.name.startsWith(head)).toBe(true);
          expect(it.name.endsWith(tail)).toBe(true);
          expect(name.x).toBeGreaterThanOrEqual(it.cx - it.w / 2 - 1e-6);
        } else {
          expect(name.text).toBe(it.name); // an op name is never cut
          expect(name.x).toBeGreaterThanOrEqual(it.cx - it.w / 2 - SPILL_UNITS * ppu - 1e-6);
          if (name.w > it.w) spilled++;
          if (name.font < Math.min(15, fontPx(ppu)) - 1e-9) shrunk++;
        }
        expect(name.y).toBeGreaterThanOrEqual(it.cy - it.h / 2 - 1e-6);
        expect(name.y + name.h).toBeLessThanOrEqual(it.cy + it.h / 2 + 1e-6);
        labelled++;
      }
    }
    // the scenes exercise what they claim to: long names shrink and spill
    expect(labelled).toBeGreaterThan(1000);
    expect(shrunk).toBeGreaterThan(10);
    expect(spilled).toBeGreaterThan(10);
  });
});
