// @ts-check
// The view's navigation: search, First NaN/Inf, the plumbing toggle, the memory colour mode, read
// back from the canvas (mount.js); the model is a fake.
import { describe, expect, it, vi } from 'vitest';

import { MEMORY_COLORS } from '../src/memory.js';
import { decodeGraph } from '../src/model.js';
import { SEARCH_DEBOUNCE_MS } from '../src/search.js';
import { JUMP_PX_PER_UNIT } from '../src/viewport.js';
import { boxGraph, dataView } from './fixtures.js';
import { fillOf, flush, mountBoxes, painted, paints, rangeCentre, useViewTestHooks } from './mount.js';

useViewTestHooks();

const mount = mountBoxes;

describe('navigation', () => {
  it('search: matches in a dropdown; choosing one selects it by id and zooms to it', async () => {
    vi.useFakeTimers();
    const { model, el, sent, reply, inspector, cleanup } = mount(0);
    const input = /** @type {HTMLInputElement} */ (el.querySelector('input[aria-label="Search nodes"]'));
    input.value = '1.weight';
    input.dispatchEvent(new Event('input'));
    vi.advanceTimersByTime(SEARCH_DEBOUNCE_MS);
    expect(sent('search')).toEqual([expect.objectContaining({ type: 'search', query: '1.weight' })]);
    reply('search', { matches: [{ id: 'n7', name: 'AccumulateGrad', label: '1.1.weight', module: '1.1', leaf_name: '1.1.weight', item: 2 }] });
    await vi.advanceTimersByTimeAsync(0);
    const option = el.querySelector('[role=option]');
    expect(option.textContent).toContain('in folded 1.1');
    input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
    expect(sent('select')).toEqual([{ type: 'select', id: 'n7' }]);
    expect(inspector().hidden).toBe(false);
    expect(sent('inspect').at(-1)).toMatchObject({ id: 'n7' });
    // the hidden leaf is ringed through its box until Python reveals it
    // Python unfolds box 1.1 and selects the leaf: the view zooms to it (item 2 is now n7, moved
    // 3 units right of the fixture's box so it sits apart from the others; its y is the layout's)
    const g = boxGraph();
    const laid = decodeGraph(boxGraph());
    const xs = Float32Array.from(laid.x);
    xs[2] += 3;
    g.nodes.real = dataView(new Int32Array([0, 1, 7, -1, -1]), 1);
    g.nodes.kind = dataView(new Uint8Array([0, 0, 0, 1, 1]), 3);
    g.nodes.x = dataView(xs, 1);
    model.push('_graph', g);
    model.push('selected', 'n7');
    const [cx, cy] = rangeCentre(el);
    expect(cx).toBeCloseTo(xs[2]);
    expect(cy).toBeCloseTo(laid.y[2]);
    expect(painted(el).ppu).toBeGreaterThanOrEqual(JUMP_PX_PER_UNIT - 1e-9); // zoomed in to it
    expect(painted(el).marks.selected).toBe(2);
    cleanup();
  });

  it('First NaN/Inf: a message when there is none, else the edge in the inspector, zoomed', async () => {
    const { el, button, sent, reply, inspector, cleanup } = mount(9);
    await flush();
    button('First NaN/Inf').click();
    expect(sent('first_nonfinite')).toHaveLength(1);
    reply('first_nonfinite', { edge: null, message: 'no NaN/Inf gradient so far' });
    await flush();
    expect(el.querySelector('.agw-alert').textContent).toContain('no NaN/Inf gradient so far');
    const before = paints(el);
    button('First NaN/Inf').click();
    reply('first_nonfinite', { edge: 2, id: 'n2:1', src: 'AddmmBackward0', dst: 'TanhBackward0', summary: {} });
    await flush();
    expect(el.querySelector('.agw-alert').textContent).toContain('The first NaN/Inf flows along AddmmBackward0 → TanhBackward0.');
    expect(inspector().hidden).toBe(false);
    expect(sent('inspect').at(-1)).toMatchObject({ edge: 2 });
    expect(paints(el)).toBeGreaterThan(before);
    // centred on edge 2 (box "1.1" -> box "1.0"): its label anchor, halfway down the edge
    const g = decodeGraph(boxGraph());
    const [cx, cy] = rangeCentre(el);
    expect(cx).toBeCloseTo(g.midX[2]);
    expect(cy).toBeCloseTo(g.midY[2]);
    expect(g.midY[2]).toBeCloseTo((g.y[2] + g.y[3]) / 2);
    cleanup();
  });

  it('First NaN/Inf runs ahead in chunks with progress, says the cause, and Pause stops it', async () => {
    const { el, button, sent, reply, cleanup } = mount(2);
    await flush();
    button('First NaN/Inf').click();
    expect(sent('first_nonfinite').at(-1)).toMatchObject({ chunk_ms: expect.any(Number) });
    expect(button('Pause')).toBeTruthy(); // busy while looking
    expect(button('Step').disabled).toBe(true);
    reply('first_nonfinite', { edge: null, searching: true, position: 5, total: 11 });
    await flush();
    const alert = el.querySelector('.agw-alert');
    expect(alert.textContent).toBe('Looking for the first NaN/Inf… step 5 of 11 (Pause stops)');
    expect(sent('first_nonfinite')).toHaveLength(2); // asked for the next chunk
    reply('first_nonfinite', {
      edge: 2, id: 'n2:1', src: 'SqrtBackward0', dst: 'TanhBackward0', summary: {},
      sentence: 'The first NaN/Inf is born in Sqrt: 3 Infs in its output. Saved `result` has 3 zeros.',
    });
    await flush();
    expect(alert.textContent).toContain('born in Sqrt');
    expect(alert.dataset.kind).toBe('warning');
    expect(button('Play')).toBeTruthy(); // idle again
    // Pause while looking: no further chunk is asked, the progress message goes
    button('First NaN/Inf').click();
    reply('first_nonfinite', { edge: null, searching: true, position: 6, total: 11 });
    await flush();
    const asked = sent('first_nonfinite').length;
    button('Pause').click();
    reply('first_nonfinite', { edge: null, searching: true, position: 7, total: 11 });
    await flush();
    expect(sent('first_nonfinite')).toHaveLength(asked);
    expect(sent('pause').length).toBeGreaterThan(0);
    expect(alert.hidden).toBe(true);
    cleanup();
  });

  it('the plumbing toggle sends the message and follows the graph', async () => {
    const { model, el, sent, cleanup } = mount(0);
    const box = [...el.querySelectorAll('label')].find((l) => l.textContent === 'Hide plumbing').querySelector('input');
    const counts = el.querySelector('.agw-counts');
    expect(counts.textContent).toBe('5 shown · 11 nodes · 3 modules folded');
    expect(box.checked).toBe(false);
    box.checked = true;
    box.dispatchEvent(new Event('change'));
    expect(sent('plumbing')).toEqual([{ type: 'plumbing', show: false }]);
    model.push('_graph', { ...boxGraph(), show_plumbing: false, hidden: 3 });
    expect(box.checked).toBe(true);
    expect(counts.textContent).toContain('3 plumbing hidden');
    cleanup();
  });

  it('memory colour mode: asks once per graph, shades the nodes, lists the holders', async () => {
    const { model, el, sent, reply, cleanup } = mount(0);
    await flush();
    const select = /** @type {HTMLSelectElement} */ (el.querySelector('select[aria-label="Colour mode"]'));
    select.value = 'memory';
    select.dispatchEvent(new Event('change'));
    expect(sent('memory')).toEqual([expect.objectContaining({ type: 'memory', exclude_leaves: false })]);
    const panel = el.querySelector('section[aria-label="Memory"]');
    expect(panel.hidden).toBe(false);
    reply('memory', { total: 856, items: [104, 0, 416, 0, 80], top: [{ id: 'n6', name: 'AddmmBackward0', module: '1.1', bytes: 416, item: 2 }], by_module: {} });
    await flush();
    expect(panel.textContent).toContain('Total 856 B');
    expect(fillOf(el, 2)).toBe(MEMORY_COLORS[7]); // the biggest holder, box 1.1, in the top bin
    expect(fillOf(el, 1)).not.toBe(MEMORY_COLORS[7]);
    panel.querySelector('.agw-mem-top button').click();
    expect(sent('select')).toEqual([{ type: 'select', id: 'n6' }]);
    panel.querySelector('input[type=checkbox]').click();
    expect(sent('memory').at(-1)).toMatchObject({ exclude_leaves: true });
    model.push('_graph', boxGraph());
    expect(sent('memory')).toHaveLength(3);
    select.value = 'gradient';
    select.dispatchEvent(new Event('change'));
    expect(panel.hidden).toBe(true);
    expect(fillOf(el, 2)).not.toBe(MEMORY_COLORS[7]);
    cleanup();
  });

  it('cleanup removes the new listeners too', () => {
    const { model, cleanup } = mount(0);
    cleanup();
    expect(model.listeners('change:selected_edge')).toBe(0);
    expect(model.listeners('msg:custom')).toBe(0);
  });
});

