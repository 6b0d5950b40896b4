// @ts-check
// Overview and help in the mounted view (issue 17): the "?" help, the minimap, the per-mode
// legends and the neutral edges of the memory / sensitivity modes, read back from the canvas.
import { describe, expect, it } from 'vitest';

import { MEMORY_COLORS, formatBytes } from '../src/memory.js';
import { minimapTransform } from '../src/minimap.js';
import { decodeGraph } from '../src/model.js';
import { SENSITIVITY_COLORS } from '../src/sensitivity.js';
import { SHORTCUTS } from '../src/help.js';
import { makeTheme } from '../src/style.js';
import { boxGraph } from './fixtures.js';
import { drag, flush, lastStrokes, mountBoxes, painted, paints, rangeCentre, useViewTestHooks, wheel } from './mount.js';

useViewTestHooks();

const key = (target, k, extra = {}) => target.dispatchEvent(new KeyboardEvent('keydown', { key: k, bubbles: true, cancelable: true, ...extra }));

const BINS = new Set([...makeTheme().bins, ...makeTheme({ dark: true }).bins]);

describe('keyboard help', () => {
  it("'?' opens the help listing the view's shortcuts; Escape closes it; the button toggles it", async () => {
    const { q, button, cleanup } = mountBoxes(0);
    await flush();
    const root = q('.agw-root');
    const help = q('.agw-help');
    const btn = button('Keyboard help');
    expect(btn.textContent).toBe('?');
    expect(help.hidden).toBe(true);
    key(root, '?', { shiftKey: true });
    expect(help.hidden).toBe(false);
    const rows = [...help.querySelectorAll('.agw-help-keys kbd')].map((k) => k.textContent);
    expect(rows).toEqual(SHORTCUTS.filter((s) => s.label).map((s) => s.label)); // unlabelled: listed with its pair
    expect(help.textContent).toContain('Step: run the next node');
    key(root, 'Escape');
    expect(help.hidden).toBe(true);
    btn.click();
    expect(help.hidden).toBe(false);
    btn.click();
    expect(help.hidden).toBe(true);
    cleanup();
  });

  it('every listed shortcut does something: → steps, ← backs, / focuses search', async () => {
    const { el, q, sent, cleanup } = mountBoxes(3);
    await flush();
    const root = q('.agw-root');
    key(root, 'ArrowRight');
    key(root, 'ArrowRight', { shiftKey: true });
    expect(sent('step')).toHaveLength(1);
    key(root, 'ArrowLeft');
    expect(sent('back')).toHaveLength(1);
    key(root, '/');
    expect(document.activeElement).toBe(el.querySelector('input[aria-label="Search nodes"]'));
    // + and − zoom about the centre, F fits, N centres on the next node
    const width = () => painted(el).range.x[1] - painted(el).range.x[0];
    const fit = width();
    const centre = rangeCentre(el);
    key(root, '+', { shiftKey: true });
    expect(width()).toBeLessThan(fit);
    rangeCentre(el).forEach((c, k) => expect(c).toBeCloseTo(centre[k], 6));
    const zoomed = width();
    key(root, '-');
    expect(width()).toBeGreaterThan(zoomed);
    key(root, '+');
    key(root, '+');
    drag(el, 300, 150, 200, 0); // away from the next node
    key(root, 'n');
    const g = decodeGraph(boxGraph());
    const next = painted(el).marks.next;
    expect(next).toBeGreaterThanOrEqual(0);
    const [nx, ny] = rangeCentre(el);
    expect(nx).toBeCloseTo(g.x[next], 3);
    expect(ny).toBeCloseTo(g.y[next], 3);
    key(root, 'f');
    expect(width()).toBeCloseTo(fit, 6);
    cleanup();
  });
});

describe('minimap', () => {
  it('is hidden at Fit, shown once zoomed in; a click on it moves the view there', async () => {
    const { q, el, cleanup } = mountBoxes(0);
    await flush();
    const mini = q('.agw-minimap');
    expect(mini.hidden).toBe(true); // the whole drawing is in view
    const g = decodeGraph(boxGraph());
    // zoom in 4x about the canvas's centre with the wheel
    const { area } = painted(el);
    const w0 = painted(el).range.x[1] - painted(el).range.x[0];
    wheel(el, area.l + area.w / 2, area.t + area.h / 2, -Math.log(4) / 0.0015);
    const w = painted(el).range.x[1] - painted(el).range.x[0];
    expect(w).toBeCloseTo(w0 / 4, 3);
    expect(mini.hidden).toBe(false);
    const t = minimapTransform(g.bounds);
    const [x0, x1, y0, y1] = g.bounds;
    const cx = (x0 + x1) / 2 + (x1 - x0) / 8;
    const cy = (y0 + y1) / 2 - (y1 - y0) / 8;
    const n = paints(el);
    mini.dispatchEvent(new MouseEvent('pointerdown', { clientX: t.px(cx), clientY: t.py(cy), bubbles: true, cancelable: true, button: 0 }));
    mini.dispatchEvent(new MouseEvent('pointerup', { bubbles: true }));
    expect(paints(el)).toBe(n + 1);
    const [rx, ry] = rangeCentre(el);
    expect(rx).toBeCloseTo(cx, 1);
    expect(ry).toBeCloseTo(cy, 1);
    expect(painted(el).range.x[1] - painted(el).range.x[0]).toBeCloseTo(w, 3); // the zoom is kept
    // Fit shows everything again: the minimap goes
    await flush();
    q('.agw-fit').click();
    await flush();
    expect(mini.hidden).toBe(true);
    // a drag on the canvas pans (and shows the minimap again); the zoom is kept
    const before = painted(el).range;
    drag(el, 300, 150, 120, 40);
    const after = painted(el).range;
    const ppu = painted(el).ppu;
    expect(after.x[0]).toBeCloseTo(before.x[0] - 120 / ppu, 3);
    expect(after.y[1]).toBeCloseTo(before.y[1] + 40 / ppu, 3);
    expect(after.x[1] - after.x[0]).toBeCloseTo(before.x[1] - before.x[0], 3);
    expect(mini.hidden).toBe(false);
    // a double-click fits
    el.querySelector('.agw-canvas').dispatchEvent(new MouseEvent('dblclick', { bubbles: true }));
    expect(mini.hidden).toBe(true);
    cleanup();
  });
});

describe('colour modes', () => {
  it('memory: its own legend (bins in bytes, nothing saved, neutral edges) and grey edges', async () => {
    const { el, q, reply, cleanup } = mountBoxes(9);
    await flush();
    const legend = q('.agw-legend');
    expect(legend.textContent).toContain('not flowed');
    // gradient mode: edges that flowed are drawn in the gradient bins (the test can fail)
    expect([...lastStrokes(el)].some((c) => BINS.has(c))).toBe(true);
    const select = /** @type {HTMLSelectElement} */ (el.querySelector('select[aria-label="Colour mode"]'));
    select.value = 'memory';
    select.dispatchEvent(new Event('change'));
    expect(legend.dataset.mode).toBe('memory');
    expect(legend.textContent).toContain('counting…');
    expect([...lastStrokes(el)].some((c) => BINS.has(c))).toBe(false);
    reply('memory', { total: 600, items: [104, 0, 416, 0, 80], top: [], by_module: {} });
    await flush();
    const text = legend.textContent;
    expect(text).toContain('bytes saved for backward');
    expect(text).toContain(`≥ ${formatBytes(80)}`);
    expect(text).toContain('nothing saved');
    expect(text).toContain('edges: not coloured in this mode');
    expect(text).not.toContain('not flowed');
    const swatches = [...legend.querySelectorAll('.agw-scale-swatch')].map((s) => s.style.background);
    expect(swatches).toHaveLength(MEMORY_COLORS.length);
    // every stroke of the drawing is the idle grey: no gradient colour bar, no coloured edge
    const strokes = lastStrokes(el);
    expect([...strokes].some((c) => BINS.has(c))).toBe(false);
    expect(strokes.has(makeTheme().idleEdge) || strokes.has(makeTheme({ dark: true }).idleEdge)).toBe(true);
    select.value = 'gradient';
    select.dispatchEvent(new Event('change'));
    expect(legend.textContent).toContain('not flowed');
    expect([...lastStrokes(el)].some((c) => BINS.has(c))).toBe(true);
    cleanup();
  });

  it('sensitivity: its own legend with the ‖J‖²_F bins and no unit', async () => {
    const { el, q, reply, cleanup } = mountBoxes(9);
    await flush();
    const select = /** @type {HTMLSelectElement} */ (el.querySelector('select[aria-label="Colour mode"]'));
    select.value = 'sensitivity';
    select.dispatchEvent(new Event('change'));
    const legend = q('.agw-legend');
    expect(legend.dataset.mode).toBe('sensitivity');
    expect(legend.textContent).toContain('probing…');
    reply('probe', { items: [Math.log10(2), Math.log10(16), null, null, null], range: [Math.log10(2), Math.log10(16)], nodes: {}, errors: {}, samples: 16 });
    await flush();
    expect(legend.textContent).toContain('‖J‖²_F');
    expect(legend.textContent).toContain('no unit');
    expect(legend.textContent).toContain('≥ 2');
    expect(legend.textContent).toContain('no value');
    expect(legend.querySelectorAll('.agw-scale-swatch')).toHaveLength(SENSITIVITY_COLORS.length);
    expect([...lastStrokes(el)].some((c) => BINS.has(c))).toBe(false);
    cleanup();
  });
});
