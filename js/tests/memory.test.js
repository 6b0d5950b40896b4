import { describe, expect, it } from 'vitest';
import { decodeGraph, decodeState } from '../src/model.js';
import { T, buildFigure, fitRange, overlayScene } from '../src/figure.js';
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
  it('recolours the node markers in memory mode, boxes included', () => {
    const g = decodeGraph(boxGraph());
    const s = decodeState(boxState(0), g);
    const theme = makeTheme();
    const size = { width: 900, height: 500 };
    const base = { range: fitRange(g, size), size, selected: -1 };
    const grad = buildFigure(g, s, theme, base).data[T.nodes].marker;
    const mem = buildFigure(g, s, theme, { ...base, colorMode: 'memory', memory: decodeMemory(REPLY, 5) }).data[T.nodes].marker;
    expect(mem.color).not.toEqual(grad.color);
    expect(mem.color[1]).toBe(theme.noMemory);
    expect(mem.color[2]).toBe(MEMORY_COLORS[7]);
    // Boxes: plotly's marker shows their bytes on top of the box; real nodes: the overlay's.
    expect(mem.opacity).toEqual([0, 0, 1, 1, 1]);
    expect(grad.opacity).toEqual([0, 0, 0, 0, 0]);
    const scene = overlayScene(g, s, theme, { ...base, colorMode: 'memory', memory: decodeMemory(REPLY, 5) });
    expect(scene.nodes.color[1]).toBe(theme.noMemory);
    expect(Array.from(scene.nodes.opacity).slice(0, 2)).toEqual([1, 1]);
    expect(scene.colorbar).toBeNull(); // the gradient colour bar is not what the colours mean
  });
});
