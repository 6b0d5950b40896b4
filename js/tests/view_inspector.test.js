// @ts-check
// The view's inspector and selection: node and edge inspectors, `selected`/`selected_edge` both
// ways, read back from the canvas (mount.js); the model is a fake.
import { describe, expect, it } from 'vitest';

import { decodeGraph } from '../src/model.js';
import { SELECT_COLOR, hexAlpha } from '../src/style.js';
import { boxState, boxes, nonfinite } from './fixtures.js';
import { canvasOf, clickEdge, clickItem, flush, mountBoxes, painted, useViewTestHooks } from './mount.js';

useViewTestHooks();

const mount = mountBoxes;
/** The boxes fixture as the view decodes it: coordinates come from the Python layout. */
const g = decodeGraph(boxes.graph());

/** The points (canvas px) of the selected edge's glow in the last paint: the path stroked in the
 * selection colour (recorded context ops). */
function glowPoints(el) {
  const ops = canvasOf(el).__ctx.ops;
  let from = 0;
  ops.forEach((o, k) => {
    if (o[0] === 'setTransform') from = k;
  });
  const glow = hexAlpha(SELECT_COLOR, 0.45);
  const out = [];
  let on = false;
  for (const o of ops.slice(from)) {
    if (o[0] === 'set' && o[1] === 'strokeStyle') on = o[2] === glow;
    else if (on && (o[0] === 'moveTo' || o[0] === 'lineTo')) out.push([o[1], o[2]]);
  }
  return out;
}

describe('inspector and selection', () => {
  it('a node click opens the inspector from an inspect by id; a step refreshes it', async () => {
    const { model, el, sent, reply, inspector, cleanup } = mount(0);
    await flush();
    expect(inspector().hidden).toBe(true);
    clickItem(el, 0);
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
    const { model, el, sent, reply, inspector, cleanup } = mount(2);
    await flush();
    expect(glowPoints(el)).toEqual([]);
    clickEdge(el, 1);
    expect(model.get('selected_edge')).toBe('n1:0');
    expect(sent('inspect').at(-1)).toMatchObject({ edge: 1 });
    expect(painted(el).marks.selectedEdge).toBe(1);
    // the glow follows edge 1's polyline (LogSoftmax -> box "1.1"), bends included
    const { toPx } = painted(el);
    const path = [];
    for (let k = g.pathPtr[1]; k < g.pathPtr[2]; k++) if (!Number.isNaN(g.pathX[k])) path.push(toPx(g.pathX[k], g.pathY[k]));
    expect(path.length).toBeGreaterThanOrEqual(2);
    const glow = glowPoints(el);
    expect(glow).toHaveLength(path.length);
    glow.forEach(([x, y], k) => {
      expect(x).toBeCloseTo(path[k][0], 3);
      expect(y).toBeCloseTo(path[k][1], 3);
    });
    // from Python: another edge
    model.push('selected_edge', 'n0:0');
    expect(painted(el).marks.selectedEdge).toBe(0);
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
    const { el, reply, inspector, cleanup } = mount(0);
    await flush();
    clickItem(el, 0);
    reply('inspect', boxes.node(0)); // NllLoss saved `self`: LogSoftmax's result
    await flush();
    [...inspector().querySelectorAll('[role=tab]')].find((b) => b.textContent.startsWith('Saved')).click();
    [...inspector().querySelectorAll('button')].find((b) => b.textContent === 'self').click();
    expect(painted(el).marks.highlight).toEqual([1]); // n1 (LogSoftmax) is ringed
    expect(painted(el).marks.selected).toBe(0);
    cleanup();
  });
});

