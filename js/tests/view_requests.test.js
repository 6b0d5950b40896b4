// @ts-check
// Every request of the mounted view goes through one "latest reply wins" channel (latest.js):
// an answer that was superseded, or is no longer wanted, changes nothing on the page.
import { describe, expect, it } from 'vitest';

import { boxes } from './fixtures.js';
import { clickEdge, clickItem, flush, mountBoxes, useViewTestHooks } from './mount.js';

useViewTestHooks();

/** Answer the `k`-th request of `type` (0: the first), as the kernel does, with data or an error. */
function answer(mounted, type, k, reply) {
  const req = mounted.sent(type)[k];
  mounted.model.receive({ type: 'reply', request: req.request, ...reply });
}

const colourMode = (el, value) => {
  const select = el.querySelector('select[aria-label="Colour mode"]');
  select.value = value;
  select.dispatchEvent(new Event('change'));
};

describe('latest reply wins, in the view', () => {
  it('inspector: the reply for a node clicked before the current one is not shown', async () => {
    const m = mountBoxes(0);
    await flush();
    clickItem(m.el, 0);
    clickItem(m.el, 1);
    expect(m.sent('inspect').map((r) => r.id)).toEqual(['n0', 'n1']);
    answer(m, 'inspect', 1, { data: boxes.node(1) });
    await flush();
    answer(m, 'inspect', 0, { data: boxes.node(0) }); // late: the user moved on
    await flush();
    expect(m.inspector().querySelector('h3').textContent).toBe(boxes.node(1).name);
    m.cleanup();
  });

  it('inspector: a reply for the target in focus is shown even if it was asked again since', async () => {
    // First NaN/Inf: Python selects the edge, then the node where the NaN is born; the reply
    // then focuses the edge again. The first answer for the edge is the edge's answer.
    const m = mountBoxes(0);
    await flush();
    m.model.push('selected_edge', 'n0:0');
    m.model.push('selected', 'n0'); // the source: not the edge's target, so the node is inspected
    clickEdge(m.el, 0);
    expect(m.sent('inspect').map((r) => r.edge ?? r.id)).toEqual([0, 'n0', 0]);
    answer(m, 'inspect', 0, { data: boxes.edge(0) });
    await flush();
    expect(m.inspector().dataset.kind).toBe('edge');
    expect(m.inspector().textContent).toContain('Gradient');
    expect(m.inspector().querySelector('.agw-insp-loading')).toBeNull();
    m.cleanup();
  });

  it('memory mode: a report (or its failure) arriving after the mode was left changes nothing', async () => {
    const m = mountBoxes(0);
    await flush();
    const panel = m.el.querySelector('section[aria-label="Memory"]');
    const legend = m.el.querySelector('.agw-legend');
    colourMode(m.el, 'memory');
    expect(panel.hidden).toBe(false);
    colourMode(m.el, 'gradient');
    expect(panel.hidden).toBe(true);
    answer(m, 'memory', 0, { error: 'no reply from the kernel' });
    await flush();
    expect(panel.hidden).toBe(true); // the failure of a report no one wants any more is not shown
    expect(legend.dataset.mode).toBe('gradient');
    colourMode(m.el, 'memory');
    colourMode(m.el, 'gradient');
    answer(m, 'memory', 1, { data: { total: 856, items: [104, 0, 416, 0, 80], top: [], by_module: {} } });
    await flush();
    expect(panel.hidden).toBe(true);
    expect(legend.textContent).not.toContain('bytes saved');
    m.cleanup();
  });

  it('memory mode: of two reports asked, the older one arriving last is dropped', async () => {
    const m = mountBoxes(0);
    await flush();
    colourMode(m.el, 'memory');
    const panel = m.el.querySelector('section[aria-label="Memory"]');
    panel.querySelector('input[type=checkbox]').click(); // activations only: asks again
    expect(m.sent('memory').map((r) => r.exclude_leaves)).toEqual([false, true]);
    answer(m, 'memory', 1, { data: { total: 416, items: [0, 0, 416, 0, 0], top: [], by_module: {} } });
    await flush();
    answer(m, 'memory', 0, { data: { total: 856, items: [104, 0, 416, 0, 80], top: [], by_module: {} } });
    await flush();
    expect(panel.textContent).toContain('Total 416 B');
    m.cleanup();
  });
});
