// The view's module boxes and folded runs of repeated blocks: clicks, hover cards, progress. plotly is recorded, not run (fake_plotly.js); the model is a fake (mount.js).
import { describe, expect, it, vi } from 'vitest';

vi.mock('../src/plotly.js', () => import('./fake_plotly.js'));

import { T } from '../src/figure.js';
import { BOX_HIT_POINTS, boxLabel } from '../src/groups.js';
import { decodeGraph, decodeState } from '../src/model.js';
import { byName, calls, lastRestyle } from './fake_plotly.js';
import { boxState, boxes, broken, folds } from './fixtures.js';
import { flush, mountBoxes, useViewTestHooks } from './mount.js';

useViewTestHooks();

const mount = mountBoxes;

describe('module boxes', () => {
  it('a click on a box expands it; shift+click inspects it', async () => {
    const { model, gd, sent, reply, inspector, button, cleanup } = mount(3);
    await flush();
    gd().emit('plotly_click', { points: [{ curveNumber: T.nodes, pointNumber: 2 }], event: {} });
    expect(sent('expand')).toEqual([{ type: 'expand', group: '1.1' }]);
    gd().emit('plotly_click', { points: [{ curveNumber: T.boxHit, pointNumber: BOX_HIT_POINTS + 1 }], event: {} });
    expect(sent('expand').at(-1)).toEqual({ type: 'expand', group: '1.0' });
    expect(model.get('selected')).toBeNull(); // boxes are not `selected`
    gd().emit('plotly_click', { points: [{ curveNumber: T.boxHit, pointNumber: 0 }], event: { shiftKey: true } });
    expect(sent('expand')).toHaveLength(2);
    expect(inspector().hidden).toBe(false);
    expect(sent('inspect').at(-1)).toMatchObject({ node: 2 });
    reply('inspect', boxes.node(2)); // Python's reply for box "1.1" at step 3
    await flush();
    expect(inspector().textContent).toContain('AddmmBackward0×1');
    expect(lastRestyle(T.boxRing, 'x').length).toBe(3); // the box is ringed
    // "Run to node" runs through the focused box
    button('Run to node').click();
    expect(sent('run_to')).toEqual([{ type: 'run_to', node: 2 }]);
    button('Expand').click();
    expect(sent('expand').at(-1)).toEqual({ type: 'expand', group: '1.1' });
    cleanup();
  });

  it('inside a box, the waiting line names the next node from the status line', async () => {
    const { model, el, cleanup } = mount(3);
    await flush();
    model.push('_state', boxState(4)); // "ran AccumulateGrad (1.1.bias) (step 4 / 11) → next TBackward0"
    const waiting = el.querySelector('.agw-waiting');
    expect(waiting.textContent).toContain('Next: TBackward0 (in ');
    expect(waiting.textContent).not.toContain('AccumulateGrad (1.1.bias)');
    cleanup();
  });

  it('stepping updates box progress by restyle', async () => {
    const { model, cleanup } = mount(3);
    await flush();
    calls.length = 0;
    model.push('_state', boxState(5));
    expect(byName('react')).toHaveLength(0);
    const text = lastRestyle(T.nodeLabels, 'text');
    // Box "1.1" now reads 75%. At the fitted zoom of the cluster layout the box may be too narrow
    // for the whole path, so the label is the full or the shortened form ("…1 · 75%"), never 25%.
    const g = decodeGraph(boxes.graph());
    const s5 = decodeState(boxState(5), g);
    const forms = [boxLabel(g, s5, 2), boxLabel(g, s5, 2, true)].map((t) => `<b>${t}</b>`);
    expect(forms.every((t) => t.endsWith(' · 75%</b>'))).toBe(true);
    expect(text.filter((t) => forms.includes(t))).toHaveLength(1);
    expect(text.some((t) => t.includes('25%'))).toBe(false);
    expect(lastRestyle(T.boxFill, 'x').length).toBe(3);
    cleanup();
  });

  it('hovering a box says what a click does; the legend names boxes and stale/freed marks', async () => {
    const { gd, q, cleanup } = mount(0, { _graph: broken.graph(), _state: broken.state(0) }); // box "1.1" stale, "0" freed
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
    reply('inspect', { ...boxes.node(1), module: 'enc.1' }); // LogSoftmax, as if inside a module
    await flush();
    button('Collapse module').click();
    expect(sent('collapse')).toEqual([{ type: 'collapse', group: 'enc.1' }]);
    cleanup();
  });
});

describe('a folded run of repeated blocks in the widget', () => {
  // folds: box 2 is the module "head", box 3 the run of three blocks.
  const KEY = 'layers.0–2 ×3';
  it('reads as a fold: "×N" label, "click: unfold" hint, a click asks Python to unfold it', async () => {
    const { gd, q, sent, cleanup } = mount(0, { _graph: folds.graph(), _state: folds.state(0) });
    await flush();
    gd().emit('plotly_hover', { points: [{ curveNumber: T.boxHit, pointNumber: BOX_HIT_POINTS + 1 }], event: { clientX: 5, clientY: 5 } });
    const card = q('.agw-card').textContent;
    expect(card).toContain(`${KEY} · folded repeats`);
    expect(card).toContain('click: unfold');
    expect(card).toContain('3 identical blocks × 5 nodes');
    expect(q('.agw-counts').textContent).toContain('1 repeat folded');
    gd().emit('plotly_click', { points: [{ curveNumber: T.boxHit, pointNumber: BOX_HIT_POINTS + 1 }], event: {} });
    expect(sent('expand').at(-1)).toEqual({ type: 'expand', group: KEY });
    // An ordinary module box still says "expand".
    gd().emit('plotly_hover', { points: [{ curveNumber: T.boxHit, pointNumber: 3 }], event: { clientX: 5, clientY: 5 } });
    expect(q('.agw-card').textContent).toContain('click: expand');
    cleanup();
  });
});
