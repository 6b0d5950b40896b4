// @ts-check
// The view's module boxes and folded runs of repeated blocks: clicks, hover cards, progress, read
// back from the canvas (mount.js); the model is a fake.
import { describe, expect, it } from 'vitest';

import { BADGE_MIN_PX } from '../src/style.js';
import { boxState, boxes, broken, folds } from './fixtures.js';
import { canvasOf, clickAt, clickItem, flush, hoverItem, itemBox, labelOf, mountBoxes, painted, paints, useViewTestHooks } from './mount.js';

useViewTestHooks();

const mount = mountBoxes;

describe('module boxes', () => {
  it('a click on a box expands it; shift+click inspects it', async () => {
    const { model, el, sent, reply, inspector, button, cleanup } = mount(3);
    await flush();
    expect(itemBox(el, 2).kind).toBe('box');
    clickItem(el, 2);
    expect(sent('expand')).toEqual([{ type: 'expand', group: '1.1' }]);
    // anywhere inside the box, not only its centre: its bottom-left corner
    const b3 = itemBox(el, 3);
    clickAt(el, b3.x + 2, b3.y + b3.h - 2);
    expect(sent('expand').at(-1)).toEqual({ type: 'expand', group: '1.0' });
    expect(model.get('selected')).toBeNull(); // boxes are not `selected`
    clickItem(el, 2, { shiftKey: true });
    expect(sent('expand')).toHaveLength(2);
    expect(inspector().hidden).toBe(false);
    expect(sent('inspect').at(-1)).toMatchObject({ node: 2 });
    reply('inspect', boxes.node(2)); // Python's reply for box "1.1" at step 3
    await flush();
    expect(inspector().textContent).toContain('AddmmBackward0×1');
    expect(painted(el).marks.selected).toBe(2); // the box is ringed
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

  it('stepping repaints the box progress: its second line and its progress bar', async () => {
    const { model, el, cleanup } = mount(3);
    await flush();
    expect(labelOf(el, 2, 1).text).toBe('4 ops · 25%');
    const before = paints(el);
    model.push('_state', boxState(5));
    expect(paints(el)).toBe(before + 1);
    // Box "1.1" now reads 75%: its title on the first line (cut in the middle if need be, never
    // from the left), "4 ops · 75%" under it; no label still says 25%.
    const title = labelOf(el, 2).text;
    expect(title.startsWith('1.')).toBe(true);
    expect(title.endsWith('Linear')).toBe(true);
    expect(labelOf(el, 2, 1).text).toBe('4 ops · 75%');
    expect(painted(el).labels.some((l) => l.text.includes('25%'))).toBe(false);
    // the progress bar along the box's bottom: 75% of its width
    const b = itemBox(el, 2);
    const bars = canvasOf(el).__ctx.ops.filter((o) => o[0] === 'fillRect' && o[1] === b.x && Math.abs(o[3] - 0.75 * b.w) < 1e-6);
    expect(bars.length).toBeGreaterThan(0);
    cleanup();
  });

  it('hovering a box says what a click does; the legend names boxes and stale/freed marks', async () => {
    const { el, q, cleanup } = mount(0, { _graph: broken.graph(), _state: broken.state(0) }); // box "1.1" stale, "0" freed
    await flush();
    // the stale / freed marks are visible at Fit: badges at their boxes' corners, never tiny
    const badges = painted(el).marks.badges;
    expect(badges.map((b) => b.item).sort()).toEqual([2, 4]);
    for (const bd of badges) {
      const box = itemBox(el, bd.item);
      expect(bd.size).toBeGreaterThanOrEqual(BADGE_MIN_PX);
      expect(bd.x).toBeCloseTo(box.x + box.w);
      expect(bd.y).toBeCloseTo(box.y);
    }
    expect(badges[0].color).not.toBe(badges[1].color); // stale and freed look different
    await hoverItem(el, 2);
    expect(q('.agw-card').textContent).toContain('click: expand');
    expect(q('.agw-card').textContent).toContain('stale');
    const legend = q('.agw-legend').textContent;
    expect(legend).toContain('folded module');
    expect(legend).toContain('stale saved tensor');
    expect(legend).toContain('saved tensors freed');
    cleanup();
  });

  it('"Collapse module" in a node inspector folds its module', async () => {
    const { model, el, button, reply, sent, cleanup } = mount(0);
    await flush();
    clickItem(el, 1);
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
    const { el, q, sent, cleanup } = mount(0, { _graph: folds.graph(), _state: folds.state(0) });
    await flush();
    expect(labelOf(el, 3).text).toBe(`${KEY} · _Block`); // the fold's title (the payload's), whole
    await hoverItem(el, 3);
    const card = q('.agw-card').textContent;
    expect(card).toContain(`${KEY} · folded repeats`);
    expect(card).toContain('click: unfold');
    expect(card).toContain('3 identical blocks × 5 nodes');
    expect(q('.agw-counts').textContent).toContain('1 repeat folded');
    clickItem(el, 3);
    expect(sent('expand').at(-1)).toEqual({ type: 'expand', group: KEY });
    // An ordinary module box still says "expand".
    await hoverItem(el, 2);
    expect(q('.agw-card').textContent).toContain('click: expand');
    cleanup();
  });
});
