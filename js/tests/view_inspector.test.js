// The view's inspector and selection: node and edge inspectors, `selected`/`selected_edge` both ways. plotly is recorded, not run (fake_plotly.js); the model is a fake (mount.js).
import { describe, expect, it, vi } from 'vitest';

vi.mock('../src/plotly.js', () => import('./fake_plotly.js'));

import { T } from '../src/figure.js';
import { decodeGraph } from '../src/model.js';
import { lastRestyle } from './fake_plotly.js';
import { boxState, boxes, nonfinite } from './fixtures.js';
import { flush, mountBoxes, useViewTestHooks } from './mount.js';

useViewTestHooks();

const mount = mountBoxes;
/** The boxes fixture as the view decodes it: coordinates come from the Python layout. */
const g = decodeGraph(boxes.graph());

describe('inspector and selection', () => {
  it('a node click opens the inspector from an inspect by id; a step refreshes it', async () => {
    const { model, gd, sent, reply, inspector, cleanup } = mount(0);
    await flush();
    expect(inspector().hidden).toBe(true);
    gd().emit('plotly_click', { points: [{ curveNumber: T.nodes, pointNumber: 0 }], event: {} });
    expect(sent('inspect').at(-1)).toMatchObject({ type: 'inspect', id: 'n0' });
    expect(inspector().hidden).toBe(false);
    reply('inspect', boxes.node(0));
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
    // the glow follows edge 1's polyline (LogSoftmax -> box "1.1"), bends included
    expect(Array.from(lastRestyle(T.edgeSel, 'x'))).toEqual(Array.from(g.pathX.subarray(g.pathPtr[1], g.pathPtr[2])));
    expect(Array.from(lastRestyle(T.edgeSel, 'y'))).toEqual(Array.from(g.pathY.subarray(g.pathPtr[1], g.pathPtr[2])));
    // from Python: another edge
    model.push('selected_edge', 'n0:0');
    expect(sent('inspect').at(-1)).toMatchObject({ edge: 0 });
    reply('inspect', { ...boxes.edge(0), summary: nonfinite.edge(6).summary }); // a gradient holding a NaN
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
    reply('inspect', boxes.node(0)); // NllLoss saved `self`: LogSoftmax's result
    await flush();
    [...inspector().querySelectorAll('[role=tab]')].find((b) => b.textContent.startsWith('Saved')).click();
    [...inspector().querySelectorAll('button')].find((b) => b.textContent === 'self').click();
    expect(lastRestyle(T.highlight, 'x')).toEqual([g.x[1]]); // n1 (LogSoftmax), where it is drawn
    expect(lastRestyle(T.highlight, 'y')).toEqual([g.y[1]]);
    cleanup();
  });
});

