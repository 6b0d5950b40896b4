// The view with part 2's pieces: module boxes, the inspector, search, plumbing, First NaN/Inf,
// the memory colour mode, selection mirrored both ways. plotly is recorded, not run (see view.test.js).
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

const calls = vi.hoisted(() => []);
vi.mock('../src/plotly.js', () => {
  const record = (name) => (gd, ...args) => {
    calls.push({ name, gd, args });
    if (name === 'newPlot' || name === 'react') {
      gd.data = args[0];
      gd.layout = args[1];
      if (!gd._handlers) {
        gd._handlers = new Map();
        gd.on = (ev, cb) => gd._handlers.set(ev, cb);
        gd.removeListener = (ev) => gd._handlers.delete(ev);
        gd.emit = (ev, data) => gd._handlers.get(ev)?.(data);
      }
    }
    if (name === 'relayout') {
      for (const [k, v] of Object.entries(args[0])) {
        const [axis, attr] = k.split('.');
        if (attr === 'range') gd.layout[axis].range = v;
      }
    }
    return Promise.resolve(gd);
  };
  return { default: { newPlot: record('newPlot'), react: record('react'), restyle: record('restyle'), relayout: record('relayout'), purge: record('purge') } };
});

import widget from '../src/index.js';
import { T } from '../src/figure.js';
import { BOX_HIT_POINTS } from '../src/groups.js';
import { MEMORY_COLORS } from '../src/memory.js';
import { SEARCH_DEBOUNCE_MS } from '../src/search.js';
import { FakeModel, addmmReply, boxGraph, boxState } from './fixtures.js';

const flush = () => new Promise((r) => setTimeout(r, 0));
const byName = (name) => calls.filter((c) => c.name === name);

function mount(done = 0, extra = {}) {
  const model = new FakeModel({ _graph: boxGraph(), _state: boxState(done), selected_edge: null, show_plumbing: true, ...extra });
  const el = document.createElement('div');
  document.body.append(el);
  const cleanup = widget.render({ model, el });
  const q = (sel) => el.querySelector(sel);
  const button = (name) => [...el.querySelectorAll('button')].find((b) => b.textContent === name || b.getAttribute('aria-label') === name);
  const gd = () => q('.agw-plot');
  const sent = (type) => model.sent.filter((m) => m.type === type);
  /** Answer the last request of that type. */
  const reply = (type, data) => {
    const req = sent(type).at(-1);
    model.receive({ type: 'reply', request: req.request, data });
  };
  const inspector = () => q('section[aria-label="Inspector"]');
  return { model, el, cleanup, q, button, gd, sent, reply, inspector };
}

/** The last restyle's value of `attr` for trace `t`. */
function lastRestyle(t, attr) {
  for (const c of byName('restyle').reverse()) {
    const [update, traces] = c.args;
    const k = traces.indexOf(t);
    if (k >= 0 && update[attr] && update[attr][k] !== undefined) return update[attr][k];
  }
  return undefined;
}

beforeEach(() => {
  calls.length = 0;
  document.body.innerHTML = '';
  window.requestAnimationFrame = undefined;
});
afterEach(() => {
  vi.useRealTimers();
});

describe('module boxes', () => {
  it('a click on a box expands it; shift+click inspects it', async () => {
    const { model, gd, sent, reply, inspector, button, cleanup } = mount(3);
    await flush();
    gd().emit('plotly_click', { points: [{ curveNumber: T.nodes, pointNumber: 2 }], event: {} });
    expect(sent('expand')).toEqual([{ type: 'expand', group: '1' }]);
    gd().emit('plotly_click', { points: [{ curveNumber: T.boxHit, pointNumber: BOX_HIT_POINTS + 1 }], event: {} });
    expect(sent('expand').at(-1)).toEqual({ type: 'expand', group: '0' });
    expect(model.get('selected')).toBeNull(); // boxes are not `selected`
    gd().emit('plotly_click', { points: [{ curveNumber: T.boxHit, pointNumber: 0 }], event: { shiftKey: true } });
    expect(sent('expand')).toHaveLength(2);
    expect(inspector().hidden).toBe(false);
    expect(sent('inspect').at(-1)).toMatchObject({ node: 2 });
    reply('inspect', { group: '1', label: '1', kind: 'group', members: 4, progress: 0.25, ops: [['AddmmBackward0', 1]], leaves: ['1.weight'] });
    await flush();
    expect(inspector().textContent).toContain('AddmmBackward0×1');
    expect(lastRestyle(T.boxRing, 'x').length).toBe(3); // the box is ringed
    // "Run to node" runs through the focused box
    button('Run to node').click();
    expect(sent('run_to')).toEqual([{ type: 'run_to', node: 2 }]);
    button('Expand').click();
    expect(sent('expand').at(-1)).toEqual({ type: 'expand', group: '1' });
    cleanup();
  });

  it('stepping updates box progress by restyle', async () => {
    const { model, cleanup } = mount(3);
    await flush();
    calls.length = 0;
    model.push('_state', boxState(5));
    expect(byName('react')).toHaveLength(0);
    const text = lastRestyle(T.nodeLabels, 'text');
    expect(text).toContain('<b>1 · 75%</b>');
    expect(lastRestyle(T.boxFill, 'x').length).toBe(3);
    cleanup();
  });

  it('hovering a box says what a click does; the legend names boxes and stale/freed marks', async () => {
    const { gd, q, cleanup } = mount(0);
    await flush();
    gd().emit('plotly_hover', { points: [{ curveNumber: T.boxHit, pointNumber: 3 }], event: { clientX: 5, clientY: 5 } });
    expect(q('.agw-card').textContent).toContain('click: expand');
    expect(q('.agw-card').textContent).toContain('stale');
    const legend = q('.agw-legend').textContent;
    expect(legend).toContain('folded module');
    expect(legend).toContain('stale saved tensor');
    expect(legend).toContain('saved tensors freed');
    cleanup();
  });

  it('"Collapse module" in a node inspector folds its module', async () => {
    const { model, gd, button, reply, sent, cleanup } = mount(0);
    await flush();
    gd().emit('plotly_click', { points: [{ curveNumber: T.nodes, pointNumber: 1 }], event: {} });
    expect(model.get('selected')).toBe('n1');
    reply('inspect', { ...addmmReply(), id: 'n1', module: 'enc.1' });
    await flush();
    button('Collapse module').click();
    expect(sent('collapse')).toEqual([{ type: 'collapse', group: 'enc.1' }]);
    cleanup();
  });
});

describe('inspector and selection', () => {
  it('a node click opens the inspector from an inspect by id; a step refreshes it', async () => {
    const { model, gd, sent, reply, inspector, cleanup } = mount(0);
    await flush();
    expect(inspector().hidden).toBe(true);
    gd().emit('plotly_click', { points: [{ curveNumber: T.nodes, pointNumber: 0 }], event: {} });
    expect(sent('inspect').at(-1)).toMatchObject({ type: 'inspect', id: 'n0' });
    expect(inspector().hidden).toBe(false);
    reply('inspect', { ...addmmReply(), id: 'n0', name: 'NllLossBackward0' });
    await flush();
    expect(inspector().querySelector('h3').textContent).toBe('NllLossBackward0');
    const before = sent('inspect').length;
    model.push('_state', boxState(1));
    expect(sent('inspect').length).toBe(before + 1);
    cleanup();
  });

  it('mirrors `selected_edge` both ways, and the edge inspector follows it', async () => {
    const { model, gd, sent, reply, inspector, cleanup } = mount(2);
    await flush();
    gd().emit('plotly_click', { points: [{ curveNumber: T.edgeHit, pointNumber: 1 }], event: {} });
    expect(model.get('selected_edge')).toBe('n1:0');
    expect(sent('inspect').at(-1)).toMatchObject({ edge: 1 });
    expect(Array.from(lastRestyle(T.edgeSel, 'x'))).toEqual([0, 0, NaN]);
    // from Python: another edge
    model.push('selected_edge', 'n0:0');
    expect(sent('inspect').at(-1)).toMatchObject({ edge: 0 });
    reply('inspect', { id: 'n0:0', src: { id: 'n0', name: 'NllLossBackward0', output_nr: 0 }, dst: { id: 'n1', name: 'LogSoftmaxBackward0', input_nr: 0 }, summary: { shape: [5, 3], dtype: 'float32', norm: 1, nan: 2, inf: 0, values: ['nan', 1] } });
    await flush();
    expect(inspector().textContent).toContain('NllLossBackward0 → LogSoftmax');
    expect(inspector().querySelector('.agw-nonfinite')).not.toBeNull();
    // Python selects the edge's target with it (First NaN/Inf does): the edge stays in focus
    const n = sent('inspect').length;
    model.push('selected', 'n1');
    expect(sent('inspect')).toHaveLength(n);
    // Python selects another node: the inspector switches to it
    model.push('selected', 'n0');
    expect(sent('inspect').at(-1)).toMatchObject({ id: 'n0' });
    model.push('selected', null);
    expect(inspector().querySelector('h3').textContent).toContain('→'); // back to the edge
    cleanup();
  });

  it('closing the inspector clears the selection; Escape too', async () => {
    const { model, el, q, inspector, cleanup } = mount(0, { selected: 'n1' });
    await flush();
    expect(inspector().hidden).toBe(false);
    q('[aria-label="Close inspector"]').click();
    expect(model.get('selected')).toBeNull();
    expect(inspector().hidden).toBe(true);
    model.push('selected', 'n0');
    expect(inspector().hidden).toBe(false);
    el.querySelector('.agw-root').dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }));
    expect(model.get('selected')).toBeNull();
    cleanup();
  });

  it('marks the aliases of a clicked saved tensor on the graph', async () => {
    const { gd, reply, inspector, cleanup } = mount(0);
    await flush();
    gd().emit('plotly_click', { points: [{ curveNumber: T.nodes, pointNumber: 0 }], event: {} });
    reply('inspect', addmmReply());
    await flush();
    [...inspector().querySelectorAll('[role=tab]')].find((b) => b.textContent.startsWith('Saved')).click();
    [...inspector().querySelectorAll('button')].find((b) => b.textContent === 'mat1').click();
    expect(lastRestyle(T.highlight, 'x')).toEqual([0]); // n1 (LogSoftmax) is drawn at x = 0
    expect(lastRestyle(T.highlight, 'y')).toEqual([-1]);
    cleanup();
  });
});

describe('navigation', () => {
  it('search: matches in a dropdown; choosing one selects it by id and zooms to it', async () => {
    vi.useFakeTimers();
    const { model, el, sent, reply, inspector, cleanup } = mount(0);
    const input = el.querySelector('input[aria-label="Search nodes"]');
    input.value = '1.weight';
    input.dispatchEvent(new Event('input'));
    vi.advanceTimersByTime(SEARCH_DEBOUNCE_MS);
    expect(sent('search')).toEqual([expect.objectContaining({ type: 'search', query: '1.weight' })]);
    reply('search', { matches: [{ id: 'n7', name: 'AccumulateGrad', label: '1.weight', module: '1', leaf_name: '1.weight', item: 2 }] });
    await vi.advanceTimersByTimeAsync(0);
    const option = el.querySelector('[role=option]');
    expect(option.textContent).toContain('in folded 1');
    input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
    expect(sent('select')).toEqual([{ type: 'select', id: 'n7' }]);
    expect(inspector().hidden).toBe(false);
    expect(sent('inspect').at(-1)).toMatchObject({ id: 'n7' });
    // the hidden leaf is ringed through its box until Python reveals it
    // Python unfolds box 1 and selects the leaf: the view zooms to it
    const g = boxGraph({ binary: false });
    g.nodes.id[2] = 'n7';
    g.nodes.kind[2] = 'parameter';
    g.nodes.x[2] = 3;
    g.nodes.y[2] = -2;
    calls.length = 0;
    model.push('_graph', g);
    model.push('selected', 'n7');
    const relayout = byName('relayout').at(-1).args[0];
    const xr = relayout['xaxis.range'];
    expect((xr[0] + xr[1]) / 2).toBeCloseTo(3);
    expect((relayout['yaxis.range'][0] + relayout['yaxis.range'][1]) / 2).toBeCloseTo(-2);
    cleanup();
  });

  it('First NaN/Inf: a message when there is none, else the edge in the inspector, zoomed', async () => {
    const { el, button, sent, reply, inspector, cleanup } = mount(9, { _state: boxState(9, { nonfinite: true }) });
    await flush();
    button('First NaN/Inf').click();
    expect(sent('first_nonfinite')).toHaveLength(1);
    reply('first_nonfinite', { edge: null, message: 'no NaN/Inf gradient so far' });
    await flush();
    expect(el.querySelector('.agw-alert').textContent).toContain('no NaN/Inf gradient so far');
    calls.length = 0;
    button('First NaN/Inf').click();
    reply('first_nonfinite', { edge: 2, id: 'n2:1', src: 'AddmmBackward0', dst: 'TanhBackward0', summary: {} });
    await flush();
    expect(el.querySelector('.agw-alert').hidden).toBe(true);
    expect(inspector().hidden).toBe(false);
    expect(sent('inspect').at(-1)).toMatchObject({ edge: 2 });
    const relayout = byName('relayout').at(-1).args[0];
    expect((relayout['yaxis.range'][0] + relayout['yaxis.range'][1]) / 2).toBeCloseTo(-2.5);
    cleanup();
  });

  it('the plumbing toggle sends the message and follows the graph', async () => {
    const { model, el, sent, cleanup } = mount(0);
    const box = [...el.querySelectorAll('label')].find((l) => l.textContent === 'Hide plumbing').querySelector('input');
    const counts = el.querySelector('.agw-counts');
    expect(counts.textContent).toBe('4 shown · 9 nodes · 2 modules folded');
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
    const select = el.querySelector('select[aria-label="Colour mode"]');
    select.value = 'memory';
    select.dispatchEvent(new Event('change'));
    expect(sent('memory')).toEqual([expect.objectContaining({ type: 'memory', exclude_leaves: false })]);
    const panel = el.querySelector('section[aria-label="Memory"]');
    expect(panel.hidden).toBe(false);
    reply('memory', { total: 856, items: [104, 0, 416, 80], top: [{ id: 'n6', name: 'AddmmBackward0', module: '1', bytes: 416, item: 2 }], by_module: {} });
    await flush();
    expect(panel.textContent).toContain('Total 856 B');
    expect(lastRestyle(T.nodes, 'marker.color')[2]).toBe(MEMORY_COLORS[7]);
    panel.querySelector('.agw-mem-top button').click();
    expect(sent('select')).toEqual([{ type: 'select', id: 'n6' }]);
    panel.querySelector('input[type=checkbox]').click();
    expect(sent('memory').at(-1)).toMatchObject({ exclude_leaves: true });
    model.push('_graph', boxGraph());
    expect(sent('memory')).toHaveLength(3);
    select.value = 'gradient';
    select.dispatchEvent(new Event('change'));
    expect(panel.hidden).toBe(true);
    expect(lastRestyle(T.nodes, 'marker.color')[2]).not.toBe(MEMORY_COLORS[7]);
    cleanup();
  });

  it('cleanup removes the new listeners too', () => {
    const { model, cleanup } = mount(0);
    cleanup();
    expect(model.listeners('change:selected_edge')).toBe(0);
    expect(model.listeners('msg:custom')).toBe(0);
  });
});

describe('a folded run of repeated blocks in the widget', () => {
  const KEY = 'layers.0–1 ×2';
  function foldGraph() {
    const r = boxGraph();
    r.nodes.id[2] = `group:${KEY}`;
    r.nodes.label[2] = KEY;
    r.nodes.module[2] = KEY;
    r.folds = [{ key: KEY, label: KEY, count: 2, period: 1, nodes_per_unit: 2, members: ['layers.0', 'layers.1'], item: 2 }];
    return r;
  }
  it('reads as a fold: "×N" label, "click: unfold" hint, a click asks Python to unfold it', async () => {
    const { gd, q, sent, cleanup } = mount(0, { _graph: foldGraph() });
    await flush();
    gd().emit('plotly_hover', { points: [{ curveNumber: T.boxHit, pointNumber: 3 }], event: { clientX: 5, clientY: 5 } });
    const card = q('.agw-card').textContent;
    expect(card).toContain(`${KEY} · folded repeats`);
    expect(card).toContain('click: unfold');
    expect(card).toContain('2 identical blocks × 2 nodes');
    expect(q('.agw-counts').textContent).toContain('1 repeat folded');
    gd().emit('plotly_click', { points: [{ curveNumber: T.boxHit, pointNumber: 3 }], event: {} });
    expect(sent('expand').at(-1)).toEqual({ type: 'expand', group: KEY });
    // An ordinary module box still says "expand".
    gd().emit('plotly_hover', { points: [{ curveNumber: T.boxHit, pointNumber: BOX_HIT_POINTS + 1 }], event: { clientX: 5, clientY: 5 } });
    expect(q('.agw-card').textContent).toContain('click: expand');
    cleanup();
  });
});
