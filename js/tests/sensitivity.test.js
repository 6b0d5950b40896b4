// @ts-check
// Issue 10: the "sensitivity" colour mode and what-if edits. Pure helpers, then the view with a
// fake model (the canvas read back: mount.js) and a fake backend for a walkthrough.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { createView } from '../src/view.js';
import { buildDrawing } from '../src/drawing.js';
import { EDIT_COLOR } from '../src/style.js';
import { decodeGraph, decodeState } from '../src/model.js';
import { readTheme } from '../src/theme.js';
import {
  SENSITIVITY_COLORS,
  decodeEdits,
  decodeLeafDiff,
  decodeProbe,
  editText,
  normText,
  parseFactor,
  sensitivityBin,
  sensitivityColors,
  sensitivityLegend,
  sensitivityRange,
} from '../src/sensitivity.js';
import { FakeModel, zGraph, zState } from './fixtures.js';
import { edgeLabelOf, fillOf, flush, mountView, paints } from './mount.js';

/** @typedef {import('../src/sensitivity.js').Edit} Edit */

// z = x**2 + y: items Add, Pow, y, x. Add's map is [1, 1] (norm² 2), Pow's is 4 (norm² 16).
const PROBE = {
  items: [Math.log10(2), Math.log10(16), null, null],
  stderr: [0, 0, null, null],
  exact: [true, true, null, null],
  nodes: { n0: { estimate: 2, stderr: 0, exact: true, log10: Math.log10(2) }, n1: { estimate: 16, stderr: 0, exact: true, log10: Math.log10(16) } },
  range: [Math.log10(2), Math.log10(16)],
  errors: { n9: 'boom' },
  samples: 16,
};

describe('sensitivity helpers', () => {
  it('decodes the probe reply, range and bins', () => {
    const s = decodeProbe(PROBE, 4);
    expect(Number.isNaN(s.items[2])).toBe(true);
    expect(s.items[1]).toBeCloseTo(Math.log10(16));
    expect(s.nodes.get('n1')).toEqual({ estimate: 16, stderr: 0, exact: true, log10: Math.log10(16) });
    expect(s.errors).toEqual([['n9', 'boom']]);
    expect(s.samples).toBe(16);
    expect(sensitivityBin(s.items[0], s.range)).toBe(0);
    expect(sensitivityBin(s.items[1], s.range)).toBe(SENSITIVITY_COLORS.length - 1);
    expect(sensitivityBin(NaN, s.range)).toBe(-1);
    expect(sensitivityColors(s, 4, 'none')).toEqual([SENSITIVITY_COLORS[0], SENSITIVITY_COLORS[7], 'none', 'none']);
    expect(sensitivityLegend(s)[0]).toEqual({ color: SENSITIVITY_COLORS[0], from: '2' });
    expect(sensitivityRange([1, NaN, 1])).toEqual([0.5, 1.5]);
    expect(sensitivityRange([NaN])).toBeNull();
    const junk = decodeProbe(null, 2);
    expect(junk.range).toBeNull();
    expect(junk.nodes.size).toBe(0);
    expect(sensitivityColors(junk, 2, 'none')).toEqual(['none', 'none']);
  });

  it('formats the norm, edits, factors and leaf diffs', () => {
    expect(normText({ estimate: 16.000000001, stderr: 0, exact: true, log10: 1.2 }, 16)).toBe('‖J‖²_F = 16 (exact)');
    expect(normText({ estimate: 12.34, stderr: 0.5, exact: false, log10: 1 }, 8)).toBe('‖J‖²_F ≈ 12.3 ± 0.5 (8 samples)');
    expect(normText(undefined, 8)).toBe('');
    const edits = decodeEdits({ 2: { id: 'n1:0', kind: 'scale', factor: 0.5, before: null }, 7: { kind: 'zero' }, x: {} }, 3);
    expect([...edits.keys()]).toEqual([2]);
    expect(editText(edits.get(2))).toBe('scaled by 0.5');
    expect(editText(/** @type {Edit} */ ({ kind: 'zero' }))).toBe('zeroed'); // only the kind is read
    expect(editText(/** @type {Edit} */ ({ kind: 'set' }))).toBe('replaced');
    expect(parseFactor(' 2.5 ')).toBe(2.5);
    expect(parseFactor('')).toBeNull();
    expect(parseFactor('abc')).toBeNull();
    const leaves = decodeLeafDiff({ leaves: { a: { name: 'y', changed: false, max_abs_diff: 0 }, b: { name: 'x', changed: true, max_abs_diff: 4, item: 2 } } });
    expect(leaves.map((l) => [l.name, l.changed, l.maxAbsDiff, l.item])).toEqual([['x', true, 4, 2], ['y', false, 0, -1]]);
    expect(decodeLeafDiff(null)).toEqual([]);
  });

  it('marks edited edges on the graph (✎ label)', () => {
    const graph = decodeGraph(zGraph());
    const state = decodeState({ ...zState(3), edits: { 2: { id: 'n1:0', kind: 'zero', factor: null, before: null } } }, graph);
    expect(state.edits.get(2).kind).toBe('zero');
    const theme = readTheme(document.body);
    const [x0, x1, y0, y1] = graph.bounds;
    /** @type {import('../src/drawing.js').ViewSpec} */
    const view = { range: { x: [x0 - 1, x1 + 1], y: [y0 - 1, y1 + 1] }, size: { width: 800, height: 400 }, selected: -1 };
    const texts = buildDrawing(graph, state, theme, view).edgeTexts;
    const t = texts.find((x) => x.index === 2);
    expect(t).toEqual({ index: 2, text: '✎ 4', color: EDIT_COLOR });
    expect(texts.find((x) => x.index === 0).text).toBe('1'); // the others as they are
    const plain = decodeState(zState(3), graph);
    expect(plain.edits.size).toBe(0);
    expect(buildDrawing(graph, plain, theme, view).edgeTexts.find((x) => x.index === 2).text).toBe('4');
  });
});

/** The view of z after `position` steps; `button` finds the inspector's buttons. */
function mount(position = 3, extra = {}) {
  const m = mountView({ _graph: zGraph(), _state: zState(position), selected_edge: null, ...extra });
  const button = (name) => [...m.inspector().querySelectorAll('button')].find((b) => b.textContent === name);
  return { ...m, button };
}

beforeEach(() => {
  document.body.innerHTML = '';
  window.requestAnimationFrame = undefined;
});
afterEach(() => vi.useRealTimers());

describe('sensitivity colour mode', () => {
  it('asks for a probe, shades the boxes in one repaint, shows the norm in the node inspector and the errors', async () => {
    const { model, el, sent, reply, inspector, cleanup } = mount(0);
    await flush();
    const select = /** @type {HTMLSelectElement} */ (el.querySelector('select[aria-label="Colour mode"]'));
    expect([...select.options].map((o) => o.value)).toContain('sensitivity');
    select.value = 'sensitivity';
    select.dispatchEvent(new Event('change'));
    expect(sent('probe')).toEqual([expect.objectContaining({ type: 'probe', samples: 16, seed: 0 })]);
    const panel = el.querySelector('section[aria-label="Sensitivity"]');
    expect(panel.hidden).toBe(false);
    const canvas = el.querySelector('.agw-canvas');
    const before = paints(el);
    reply('probe', PROBE);
    await flush();
    expect(fillOf(el, 1)).toBe(SENSITIVITY_COLORS[7]);
    expect(fillOf(el, 0)).toBe(SENSITIVITY_COLORS[0]);
    expect(paints(el)).toBe(before + 1); // one repaint of the same canvas
    expect(el.querySelector('.agw-canvas')).toBe(canvas);
    expect(panel.textContent).toContain('2 … 16');
    expect(panel.textContent).toContain('boom');
    expect(el.querySelector('.agw-legend').textContent).toContain('‖J‖²_F');
    model.set('selected', 'n1');
    reply('inspect', { id: 'n1', name: 'PowBackward0', kind: 'function', module: null, incoming: [], outgoing: [] });
    await flush();
    expect(inspector().textContent).toContain('‖J‖²_F = 16 (exact)');
    // a new graph renumbers the items: asked again
    model.push('_graph', zGraph());
    expect(sent('probe')).toHaveLength(2);
    select.value = 'gradient';
    select.dispatchEvent(new Event('change'));
    expect(panel.hidden).toBe(true);
    expect(fillOf(el, 1)).not.toBe(SENSITIVITY_COLORS[7]);
    expect(inspector().textContent).not.toContain('‖J‖²_F');
    cleanup();
  });
});

describe('what-if edits on an edge card', () => {
  const EDGE_REPLY = { id: 'n1:0', src: { id: 'n1', name: 'PowBackward0', output_nr: 0 }, dst: { id: 'n2', name: 'AccumulateGrad', label: 'x', input_nr: 0 }, summary: { numel: 1, norm: 4, values: [4] } };

  it('zero, scale, undo, the warning and the leaf diff', async () => {
    const { model, el, sent, reply, inspector, button, cleanup } = mount(3);
    await flush();
    model.set('selected_edge', 'n1:0');
    reply('inspect', EDGE_REPLY);
    await flush();
    expect(button('Undo edit')).toBeUndefined();
    expect(button('Compare with faithful run')).toBeUndefined();
    button('Zero this gradient').click();
    expect(sent('edit_edge')).toEqual([{ type: 'edit_edge', edge: 2, op: 'zero' }]);
    // Python applies it: the state carries the edit
    model.push('_state', { ...zState(3, { seq: 10 }), edits: { 2: { id: 'n1:0', kind: 'zero', factor: null, before: { numel: 1, norm: 4, values: [4] } } } });
    reply('inspect', EDGE_REPLY);
    await flush();
    expect(inspector().textContent).toContain('✎ edited: zeroed');
    expect(edgeLabelOf(el, 2).text).toBe('✎ 4'); // on the drawing, in the edit colour
    expect(edgeLabelOf(el, 2).color).toBe(EDIT_COLOR);
    const input = inspector().querySelector('input[aria-label="Scale factor"]');
    input.value = '2';
    button('Scale by…').click();
    expect(sent('edit_edge').at(-1)).toEqual({ type: 'edit_edge', edge: 2, op: 'scale', factor: 2 });
    model.receive({ type: 'warning', message: 'edge n1:0 is in the past' });
    await flush();
    expect(inspector().querySelector('[role=alert]').textContent).toContain('in the past');
    input.value = 'nope';
    inspector().querySelector('input[aria-label="Scale factor"]').value = 'nope';
    const before = sent('edit_edge').length;
    button('Scale by…').click();
    expect(sent('edit_edge')).toHaveLength(before);
    button('Undo edit').click();
    expect(sent('edit_edge').at(-1)).toEqual({ type: 'edit_edge', edge: 2, op: 'clear' });
    button('Compare with faithful run').click();
    reply('leaf_diff', { leaves: { n2: { name: 'x', changed: true, max_abs_diff: 4, edited: { numel: 1, values: [0] }, faithful: { numel: 1, values: [4] }, item: 2 }, n3: { name: 'y', changed: false, max_abs_diff: 0 } } });
    await flush();
    const list = inspector().querySelector('ul[aria-label="Changed leaves"]');
    expect(list.textContent).toContain('x max |Δ| = 4');
    expect(list.textContent).not.toContain('y');
    cleanup();
  });

  it('a walkthrough (backend.live === false) offers no edits and no sensitivity', async () => {
    const model = new FakeModel({ _graph: zGraph(), _state: zState(3), selected_edge: null });
    const el = document.createElement('div');
    document.body.append(el);
    const backend = { live: false, command: vi.fn(), inspect: () => Promise.resolve(EDGE_REPLY), onWarning: () => () => {}, dispose() {} };
    const cleanup = createView({ model, el, backend });
    await flush();
    model.set('selected_edge', 'n1:0');
    await flush();
    await flush();
    const insp = el.querySelector('section[aria-label="Inspector"]');
    expect(insp.textContent).toContain('Gradient');
    expect([...insp.querySelectorAll('button')].map((b) => b.textContent)).not.toContain('Zero this gradient');
    expect(el.querySelector('select[aria-label="Colour mode"]').hidden).toBe(true);
    cleanup();
  });
});
