// @ts-check
import { describe, expect, it } from 'vitest';
import { decodeGraph, decodeState } from '../src/model.js';
import { fitView } from '../src/camera.js';
import { buildDrawing } from '../src/drawing.js';
import { MEMORY_COLORS, decodeMemory, formatBytes, memoryBin, memoryColors, memoryLegend, memoryRange } from '../src/memory.js';
import { makeTheme } from '../src/style.js';
import { boxGraph, boxState } from './fixtures.js';

const REPLY = {
  total: 856,
  exclude_leaves: false,
  items: [104, 0, 416, 80],
  top: [
    { id: 'n6', name: 'AddmmBackward0', module: '1', bytes: 416, item: 2 },
    { id: 'n0', name: 'NllLossBackward0', module: null, bytes: 104, item: 0 },
    { id: 'bad' }, // no bytes: read as 0, never shown as NaN
    'junk',
  ],
  by_module: { '<outside any module>': 104, 1: 416, 0: 80 },
};

describe('bytes', () => {
  it('formats bytes in binary units', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(856)).toBe('856 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(12.5 * 2 ** 20)).toBe('12.5 MiB');
    expect(formatBytes(3 * 2 ** 30)).toBe('3 GiB');
    expect(formatBytes(null)).toBe('');
  });
});

describe('memory colouring', () => {
  it('shades on a log scale; nothing saved gets the neutral colour', () => {
    expect(memoryRange([0, 10, 1000])).toEqual([1, 3]);
    expect(memoryRange([0, 0])).toBeNull();
    expect(memoryRange([64, 64])).toEqual([Math.log10(64) - 0.5, Math.log10(64) + 0.5]);
    const r = /** @type {[number, number]} */ ([1, 3]);
    expect(memoryBin(0, r)).toBe(-1);
    expect(memoryBin(10, r)).toBe(0);
    expect(memoryBin(1000, r)).toBe(MEMORY_COLORS.length - 1);
    expect(memoryBin(100, r)).toBe(MEMORY_COLORS.length / 2); // the middle decade, on a log scale
    const c = memoryColors([104, 0, 416, 80], 5, '#eee');
    expect(c).toEqual([c[0], '#eee', MEMORY_COLORS[7], MEMORY_COLORS[0], '#eee']);
    expect(memoryLegend([0, 10, 1000])[0]).toEqual({ color: MEMORY_COLORS[0], from: '10 B' });
  });
  it('decodes the memory reply defensively', () => {
    const m = decodeMemory(REPLY, 4);
    expect(m.total).toBe(856);
    expect(Array.from(m.items)).toEqual([104, 0, 416, 80]);
    expect(m.top.map((t) => t.id)).toEqual(['n6', 'n0', 'bad']);
    expect(m.top[2].bytes).toBe(0);
    expect(m.byModule[0]).toEqual(['1', 416]);
    const short = decodeMemory({ items: [1] }, 3);
    expect(Array.from(short.items)).toEqual([1, 0, 0]);
    expect(decodeMemory(null, 2).total).toBe(0);
  });
  it('recolours the boxes in memory mode, folded modules included; edges neutral, no colour bar', () => {
    const g = decodeGraph(boxGraph());
    const s = decodeState(boxState(3), g);
    const theme = makeTheme();
    const size = { width: 900, height: 500 };
    const base = { range: fitView(g.bounds, size).range, size, selected: -1 };
    const grad = buildDrawing(g, s, theme, base);
    const mem = buildDrawing(g, s, theme, { ...base, colorMode: 'memory', memory: decodeMemory(REPLY, 5) });
    expect(mem.items.fill).not.toEqual(grad.items.fill);
    expect(mem.items.fill[1]).toBe(theme.noMemory);
    expect(mem.items.fill[2]).toBe(MEMORY_COLORS[7]); // box "1.1" holds the most
    expect(g.isBox[2]).toBe(1);
    // the outline still tells the step state: box 1.1 holds the next node
    expect(mem.items.stroke[2]).toBe(grad.items.stroke[2]);
    expect(grad.colorbar).not.toBeNull();
    expect(mem.colorbar).toBeNull(); // the gradient colour bar is not what the colours mean
    expect(mem.edges.every((l) => l.color === theme.idleEdge)).toBe(true);
  });
});
