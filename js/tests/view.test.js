// @ts-check
import { describe, expect, it, vi } from 'vitest';

import widget from '../src/index.js';
import { createView } from '../src/view.js';
import { PLAY_STALL_MS } from '../src/playback.js';
import { LEGIBLE_PPU, LEGIBLE_PX, fitView } from '../src/camera.js';
import { overlappingLabels } from '../src/labelplace.js';
import { decodeGraph, decodeState } from '../src/model.js';
import { makeTheme } from '../src/style.js';
import { FakeModel, freed, z, zGraph, zState } from './fixtures.js';
import {
  canvasOf, clickAt, clickEdge, clickItem, edgeLabelOf, flush, hoverAt, hoverEdge, hoverItem, itemBox, labelOf, lastStrokes,
  leave, mountView, painted, paints, rangeCentre, useViewTestHooks, wheel,
} from './mount.js';

/** The view of z = x**2 + y after `position` steps (traits in `extra` replace the defaults). */
function mount(position = 0, extra = {}) {
  return mountView({ _graph: zGraph(), _state: zState(position), ...extra });
}

/** jsdom has no layout: the view assumes 800 px wide and the trait's height (500) less the chrome. */
const SIZE = { width: 800, height: 360 };

/** The Fit range of a graph payload and state payload, as the view computes it. */
function fitOf(rawGraph, rawState) {
  const g = decodeGraph(rawGraph);
  const s = decodeState(rawState, g);
  const i = s.next >= 0 ? s.next : g.root.indexOf(1);
  const focus = i >= 0 ? { x: g.x[i], y: g.y[i] } : null;
  return fitView(g.bounds, SIZE, { focus, orientation: g.orientation });
}

/** `r` equals the range `want` (to float32 precision: coordinates are float32). */
function expectRange(r, want) {
  for (const a of ['x', 'y']) for (const k of [0, 1]) expect(r[a][k]).toBeCloseTo(want[a][k], 3);
}

/**
 * A synthetic graph of `rows` x `cols` unconnected nodes on a grid (6 units apart across, 3
 * down: the estimated boxes, 3.7 x 1.5 units, never overlap, as the layout guarantees).
 */
function grid(rows, cols, orientation = 'TB') {
  const n = rows * cols;
  const x = Float32Array.from({ length: n }, (_, i) => 6 * (i % cols));
  const y = Float32Array.from({ length: n }, (_, i) => -3 * Math.floor(i / cols));
  return {
    version: 1, orientation, bounds: [-2, 6 * (cols - 1) + 2, -3 * (rows - 1) - 1, 1],
    nodes: { count: n, id: Array.from({ length: n }, (_, i) => `n${i}`), x, y },
    edges: { count: 0 },
  };
}

/** Every item box fully inside the plotting area has its name label, legible, inside its box. */
function expectEveryVisibleItemLabelled(el) {
  const p = painted(el);
  const { l, t, w, h } = p.area;
  const inside = p.items.filter((b) => b.x >= l - 0.5 && b.y >= t - 0.5 && b.x + b.w <= l + w + 0.5 && b.y + b.h <= t + h + 0.5);
  expect(inside.length).toBeGreaterThan(0);
  for (const b of inside) {
    const lab = p.labels.find((x) => x.kind === b.kind && x.index === b.index && x.line === 0);
    expect(lab, `item ${b.index} has no label`).toBeTruthy();
    expect(lab.font).toBeGreaterThanOrEqual(LEGIBLE_PX - 1e-9);
    expect(lab.y).toBeGreaterThanOrEqual(b.y - 0.5);
    expect(lab.y + lab.h).toBeLessThanOrEqual(b.y + b.h + 0.5);
  }
  expect(overlappingLabels(p.labels)).toEqual([]);
  return inside;
}

useViewTestHooks();

describe('render', () => {
  it('paints the graph once, every item where the layout put it, and the toolbar with the contract names', async () => {
    const { el, cleanup } = mount();
    await flush();
    const canvas = canvasOf(el);
    expect(canvas.parentNode).toBe(el.querySelector('.agw-plot'));
    expect(el.querySelectorAll('canvas.agw-canvas')).toHaveLength(1);
    expect(paints(el)).toBe(1);
    const p = painted(el);
    // one box per item, each once, centred where Python's layout put the node
    expect(p.items.map((b) => b.index).sort()).toEqual([0, 1, 2, 3]);
    for (const b of p.items) {
      const [cx, cy] = p.toPx(z.decoded.nodes.x[b.index], z.decoded.nodes.y[b.index]);
      expect(b.x + b.w / 2).toBeCloseTo(cx, 3);
      expect(b.y + b.h / 2).toBeCloseTo(cy, 3);
    }
    expect(labelOf(el, 0).text).toBe('Add');
    expect(labelOf(el, 3).text).toBe('x'); // a parameter: its name, the shape under it
    expect(labelOf(el, 3, 1).text).toBe('[]');
    // Fit: the whole (small) graph, at most MAX_FIT_PPU
    expectRange(p.range, fitOf(zGraph(), zState(0)).range);
    expect(fitOf(zGraph(), zState(0)).whole).toBe(true);
    expectEveryVisibleItemLabelled(el);
    // nothing is loaded from anywhere (plotly's modebar had an upload button): no script, link,
    // image or frame in the widget
    expect(el.querySelectorAll('script, link, img, iframe')).toHaveLength(0);
    const names = [...el.querySelectorAll('button:not(.agw-sr-item)')].map((b) => b.textContent);
    // the drawing's items are buttons too, offscreen (a11y.js): one per item in view
    expect([...el.querySelectorAll('.agw-sr-item')].map((b) => b.textContent)).toEqual(['AddBackward0, next', 'PowBackward0, pending', 'AccumulateGrad (input 0 []), pending', 'AccumulateGrad (x) [], pending']);
    expect(names).toEqual(['Step', 'Back', 'Run to node', 'Run to end', 'Reset', 'Play', 'Fit', 'First NaN/Inf', '?', '×']); // '?': keyboard help, '×': its close button (issue 17)
    expect(el.querySelector('input[type=range]').getAttribute('aria-label')).toMatch(/Speed/);
    const status = el.querySelector('.agw-status');
    // the step is said by one polite live region (a11y.js), not by the status line too
    expect(status.getAttribute('aria-live')).toBeNull();
    expect(el.querySelectorAll('[aria-live]')).toHaveLength(1);
    expect(el.querySelector('.agw-announce').getAttribute('aria-live')).toBe('polite');
    expect(status.textContent).toBe('step 0 / 4 → next AddBackward0');
    cleanup();
    expect(el.querySelector('canvas')).toBeNull();
    expect(el.children).toHaveLength(0);
  });

  it('Fit of a 2500-node graph stops at the legible scale, centres on the next node, labels never overlap', async () => {
    const g = grid(50, 50);
    const next = 25 * 50 + 25; // row 25, column 25: x 150, y -75
    const { el, cleanup } = mount(0, { _graph: g, _state: { seq: 1, status: 'step 0 / 0', next } });
    await flush();
    const p = painted(el);
    const fit = fitOf(g, { next });
    expect(fit.whole).toBe(false);
    expect(fit.legible).toBe(true);
    expect(p.ppu).toBeCloseTo(LEGIBLE_PPU, 5); // not shrunk to dots
    expect(p.font).toBeGreaterThanOrEqual(LEGIBLE_PX - 1e-9);
    const [cx, cy] = rangeCentre(el);
    expect(cx).toBeCloseTo(150, 3);
    expect(cy).toBeCloseTo(-75, 3);
    expect(p.marks.next).toBe(next);
    const inside = expectEveryVisibleItemLabelled(el);
    expect(inside.length).toBeLessThan(2500); // only what is in view is labelled
    expect(p.labels.length).toBeLessThan(2500);
    cleanup();
  });

  it('a graph whose start is on screen: Fit of a big graph without a next node shows its roots (top in TB)', async () => {
    const g = grid(60, 4);
    const { el, cleanup } = mount(0, { _graph: g, _state: { seq: 1, status: 'step 0 / 0', done: true } });
    await flush();
    const p = painted(el);
    expect(p.ppu).toBeCloseTo(LEGIBLE_PPU, 5);
    expect(p.range.y[1]).toBeGreaterThanOrEqual(1); // the top row is in view
    expect(itemBox(el, 0)).toBeTruthy();
    expect(itemBox(el, 59 * 4)).toBeUndefined(); // the bottom row is not
    cleanup();
  });

  it('a new big graph refits at the legible scale, a small one again shows everything', async () => {
    // Unfolding a model's boxes can make the visible graph too big to be legible whole, folding back small.
    const { model, el, cleanup } = mount(0, { _graph: grid(2, 5), _state: { seq: 1, status: 'step 0 / 0' } });
    await flush();
    const first = paints(el);
    expect(painted(el).items).toHaveLength(10);
    model.push('_graph', grid(60, 50));
    expect(paints(el)).toBe(first + 1);
    expect(painted(el).ppu).toBeCloseTo(LEGIBLE_PPU, 5);
    expect(painted(el).items.length).toBeLessThan(3000);
    expectEveryVisibleItemLabelled(el);
    model.push('_graph', grid(3, 4));
    expect(paints(el)).toBe(first + 2);
    expect(painted(el).items).toHaveLength(12);
    expect(painted(el).ppu).toBeGreaterThan(LEGIBLE_PPU);
    expect(expectEveryVisibleItemLabelled(el)).toHaveLength(12);
    cleanup();
  });

  it('follows the host theme: a dark JupyterLab repaints on a dark background, and back', async () => {
    const { el, cleanup } = mount(3);
    await flush();
    const background = () => {
      // every paint starts by filling the whole canvas with the background
      const ops = canvasOf(el).__ctx.ops;
      let from = 0;
      ops.forEach((o, k) => {
        if (o[0] === 'setTransform') from = k;
      });
      return ops.slice(from).find((o) => o[0] === 'set' && o[1] === 'fillStyle')[2];
    };
    expect(background()).toBe(makeTheme().background);
    expect(lastStrokes(el).has(makeTheme().bins[0])).toBe(true);
    const before = paints(el);
    document.body.dataset.jpThemeLight = 'false';
    await flush(); // MutationObserver
    expect(paints(el)).toBe(before + 1);
    expect(background()).toBe(makeTheme({ dark: true }).background);
    expect(lastStrokes(el).has(makeTheme({ dark: true }).bins[0])).toBe(true); // the dark bins
    document.body.dataset.jpThemeLight = 'true';
    await flush();
    expect(background()).toBe(makeTheme().background);
    delete document.body.dataset.jpThemeLight;
    cleanup();
  });

  it('follows the plot\'s size: the first paint waits for a size; at Fit a resize refits, else the view keeps its centre', async () => {
    let observed = null;
    window.ResizeObserver = class {
      constructor(cb) {
        observed = cb;
      }
      observe() {}
      unobserve() {}
      disconnect() {}
    };
    try {
      const { el, cleanup } = mount(0);
      const plot = el.querySelector('.agw-plot');
      expect(el.querySelector('.agw-canvas')).toBeNull(); // no size yet: nothing painted
      const resize = (w, h) => {
        Object.defineProperty(plot, 'clientWidth', { configurable: true, value: w });
        Object.defineProperty(plot, 'clientHeight', { configurable: true, value: h });
        observed([]);
      };
      resize(600, 300);
      expect(canvasOf(el).style.width).toBe('600px');
      expect(canvasOf(el).style.height).toBe('300px');
      const fitAt = (size) => {
        const g = decodeGraph(zGraph());
        return fitView(g.bounds, size, { focus: { x: g.x[0], y: g.y[0] }, orientation: g.orientation }).range;
      };
      expectRange(painted(el).range, fitAt({ width: 600, height: 300 }));
      const before = paints(el);
      resize(600, 300); // the same size: nothing to do
      expect(paints(el)).toBe(before);
      resize(900, 420);
      expect(paints(el)).toBe(before + 1);
      expect(canvasOf(el).style.width).toBe('900px');
      expectRange(painted(el).range, fitAt({ width: 900, height: 420 }));
      // zoomed in: a resize keeps the view's centre
      wheel(el, 200, 100, -300);
      const centre = rangeCentre(el);
      resize(700, 380);
      rangeCentre(el).forEach((c, k) => expect(c).toBeCloseTo(centre[k], 6));
      cleanup();
    } finally {
      delete window.ResizeObserver;
    }
  });

  it('sets the height from the trait and follows changes', () => {
    const { model, el, cleanup } = mount(0, { height: 420 });
    const root = el.querySelector('.agw-root');
    expect(root.style.height).toBe('420px');
    model.push('height', 700);
    expect(root.style.height).toBe('700px');
    cleanup();
  });
});

describe('buttons send commands', () => {
  it.each([
    ['Step', { type: 'step' }],
    ['Run to end', { type: 'run', chunk_ms: 100 }],
  ])('%s', (name, msg) => {
    const { model, button, cleanup } = mount(0);
    button(name).click();
    expect(model.sent).toEqual([msg]);
    cleanup();
  });

  it('Back and Reset once something was done', () => {
    const { model, button, cleanup } = mount(2);
    button('Back').click();
    button('Reset').click();
    expect(model.sent).toEqual([{ type: 'back' }, { type: 'reset' }]);
    cleanup();
  });

  it('disables what cannot be done', () => {
    const { model, button, cleanup } = mount(0);
    expect(button('Back').disabled).toBe(true);
    expect(button('Reset').disabled).toBe(true);
    expect(button('Run to node').disabled).toBe(true);
    expect(button('Step').disabled).toBe(false);
    button('Back').click(); // disabled: no message
    model.push('_state', zState(4));
    expect(button('Step').disabled).toBe(true);
    expect(button('Run to end').disabled).toBe(true);
    expect(button('Play').disabled).toBe(true);
    expect(button('Back').disabled).toBe(false);
    expect(model.sent).toEqual([]);
    cleanup();
  });

  it('Run to node runs to the selected node', () => {
    const { model, button, cleanup } = mount(0, { selected: 'n1' });
    expect(button('Run to node').disabled).toBe(false);
    button('Run to node').click();
    expect(model.sent.filter((m) => m.type !== 'inspect')).toEqual([{ type: 'run_to', node: 1 }]);
    cleanup();
  });
});

describe('a new _state', () => {
  it('repaints once, the edges that flowed in the gradient colours and their values, status verbatim', async () => {
    const { model, el, cleanup } = mount(0);
    await flush();
    const canvas = canvasOf(el);
    const before = paints(el);
    expect(before).toBeGreaterThan(0);
    expect(edgeLabelOf(el, 0)).toBeUndefined(); // nothing flowed yet
    model.push('_state', zState(3));
    expect(canvasOf(el)).toBe(canvas); // the same canvas, painted again
    expect(paints(el)).toBe(before + 1);
    // the edges flowed: stroked in bin colours, their values placed beside them
    expect(lastStrokes(el).has(makeTheme().bins[0])).toBe(true);
    expect([0, 1, 2].map((e) => edgeLabelOf(el, e)?.text)).toEqual(['1', '1', '4']);
    // the step's marks: Pow just ran, x is next
    expect(painted(el).marks).toMatchObject({ ran: 1, next: 3 });
    expect(el.querySelector('.agw-status').textContent).toBe('ran PowBackward0 (step 3 / 4) → next AccumulateGrad (x)');
    expect(el.querySelector('.agw-progress-bar').style.width).toBe('75%');
    cleanup();
    expect(el.querySelector('canvas')).toBeNull();
  });

  it('a run repaints once per animation frame, however many states arrive', async () => {
    const frames = [];
    window.requestAnimationFrame = (cb) => frames.push(cb);
    const { model, el, cleanup } = mount(0);
    await flush();
    const before = paints(el);
    model.push('_state', zState(1));
    model.push('_state', zState(2));
    model.push('_state', zState(3));
    expect(paints(el)).toBe(before); // nothing painted before the frame
    expect(frames).toHaveLength(1); // one frame asked for
    frames.shift()();
    expect(paints(el)).toBe(before + 1);
    expect(painted(el).marks.next).toBe(3); // the last state is the one painted
    // the status follows every state at once (text, not paint)
    expect(el.querySelector('.agw-status').textContent).toContain('step 3 / 4');
    // wheel zooms and drags coalesce the same way
    wheel(el, 300, 150, -100);
    wheel(el, 300, 150, -100);
    expect(frames).toHaveLength(1);
    frames.shift()();
    expect(paints(el)).toBe(before + 2);
    cleanup();
  });

  it('shows the gradients waiting at the next node', () => {
    const { el, cleanup } = mount(2);
    const panel = el.querySelector('.agw-waiting');
    expect(panel.hidden).toBe(false);
    expect(panel.textContent).toContain('Next: PowBackward0');
    expect(panel.textContent).toContain('slot 0');
    expect(panel.textContent).toContain('‖g‖ 1');
    cleanup();
  });

  it('shows a failure once, on one status line, with the way out', () => {
    // z after z.backward(): Pow's saved tensors are gone, its step fails.
    const { model, el, button, cleanup } = mount(1, { _graph: freed.graph(), _state: freed.state(1) });
    model.push('_state', freed.state(freed.steps, { seq: 9 }));
    const message = 'RuntimeError in n1 (PowBackward0): Trying to backward through the graph a second time';
    // no banner pushing the graph down: the alert row stays for warnings only
    expect(el.querySelector('.agw-alert').hidden).toBe(true);
    const status = el.querySelector('.agw-status');
    expect(status.classList.contains('agw-status-failed')).toBe(true);
    expect(status.querySelector('.agw-status-text').textContent).toContain(`PowBackward0 failed: ${message}`);
    expect(status.querySelector('.agw-status-hint').textContent).toBe(' — Back or Reset to go on');
    expect(status.title).toContain('retain_graph=True'); // the full text on hover
    expect(el.textContent.split(message)).toHaveLength(2); // said once in the whole widget
    expect(button('Back').disabled).toBe(false);
    expect(button('Reset').disabled).toBe(false);
    model.push('_state', freed.state(0, { seq: 10 }));
    expect(status.classList.contains('agw-status-failed')).toBe(false);
    expect(status.querySelector('.agw-status-hint').hidden).toBe(true);
    expect(status.textContent).toBe('step 0 / 4 → next AddBackward0');
    cleanup();
  });

  it('after a failure, Step / Run to end / Play say why they cannot go on and send nothing', () => {
    const { model, el, button, sent, cleanup } = mount(1, { _graph: freed.graph(), _state: freed.state(1) });
    model.push('_state', freed.state(freed.steps, { seq: 9 }));
    const hint = el.querySelector('.agw-status-hint');
    for (const name of ['Step', 'Run to end', 'Play']) {
      const b = button(name);
      expect(b.disabled).toBe(false); // focusable, a click explains
      expect(b.getAttribute('aria-disabled')).toBe('true');
      expect(b.getAttribute('aria-describedby')).toBe(hint.id);
      expect(b.title).toBe("Can't go on: PowBackward0 failed. Back or Reset to go on.");
    }
    const before = model.sent.length;
    button('Step').click();
    expect(hint.textContent).toBe(" — can't step: Back or Reset to go on");
    expect(el.querySelector('.agw-status').classList.contains('agw-flash')).toBe(true);
    button('Run to end').click();
    expect(hint.textContent).toBe(" — can't run to the end: Back or Reset to go on");
    button('Play').click();
    expect(hint.textContent).toBe(" — can't play: Back or Reset to go on");
    expect(button('Play').textContent).toBe('Play'); // not started
    el.querySelector('.agw-root').dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowRight', bubbles: true }));
    expect(model.sent.length).toBe(before); // nothing went to the kernel
    expect(sent('step')).toHaveLength(0);
    // Back is the way out: it is not blocked, and once the failure is gone the buttons are back
    expect(button('Back').getAttribute('aria-disabled')).toBeNull();
    button('Back').click();
    expect(sent('back')).toHaveLength(1);
    model.push('_state', freed.state(1, { seq: 10 }));
    expect(button('Step').getAttribute('aria-disabled')).toBeNull();
    // the failure's way out is gone; the graph's standing notice (freed) still describes Step
    expect(button('Step').title).toBe(`Run the next node (→)\n⚠ ${freed.state(1).notice}`);
    button('Step').click();
    expect(sent('step')).toHaveLength(1);
    cleanup();
  });

  it('a failure at step 0 points to Reset only', () => {
    const { model, el, button, cleanup } = mount(0, { _graph: freed.graph(), _state: freed.state(0) });
    const last = freed.state(freed.steps);
    model.push('_state', { ...last, seq: 9, position: 0 });
    expect(el.querySelector('.agw-status-hint').textContent).toBe(' — Reset to go on');
    expect(button('Step').title).toBe("Can't go on: PowBackward0 failed. Reset to go on.");
    cleanup();
  });

  it('shows the notice (a graph freed by backward) and warnings', () => {
    const { model, el, button, cleanup } = mount(0, { _graph: freed.graph(), _state: freed.state(0) });
    const notice = /** @type {HTMLElement} */ (el.querySelector('.agw-notice'));
    expect(notice.textContent).toContain('freed by backward()');
    // Step says why it will not get far before anyone clicks it
    for (const name of ['Step', 'Run to end', 'Play']) {
      expect(button(name).title).toContain('freed by backward()');
      expect(button(name).getAttribute('aria-describedby')).toBe(notice.id);
      expect(button(name).getAttribute('aria-disabled')).toBeNull();
    }
    model.receive({ type: 'warning', message: 'already at the start: nothing to undo' });
    expect(el.querySelector('.agw-alert').textContent).toContain('nothing to undo');
    cleanup();
  });

  it('a new _graph repaints and refits; in LR every label stays inside its box', async () => {
    const { model, el, cleanup } = mount(0);
    await flush();
    const before = paints(el);
    // zoom away first: the new graph refits anyway
    wheel(el, 100, 100, -400);
    const g = zGraph();
    g.orientation = 'LR';
    model.push('_graph', g);
    expect(paints(el)).toBe(before + 2);
    expectRange(painted(el).range, fitOf(g, zState(0)).range);
    for (let i = 0; i < 4; i++) {
      const box = itemBox(el, i);
      const lab = labelOf(el, i);
      expect(lab.x).toBeGreaterThanOrEqual(box.x);
      expect(lab.x + lab.w).toBeLessThanOrEqual(box.x + box.w);
    }
    expectEveryVisibleItemLabelled(el);
    cleanup();
  });
});

describe('layout direction', () => {
  it('sets the orientation trait when the model has one', () => {
    const { model, el, cleanup } = mount(0, { orientation: 'TB' });
    const select = /** @type {HTMLSelectElement} */ (el.querySelector('select.agw-direction'));
    expect(select.value).toBe('TB');
    select.value = 'LR';
    select.dispatchEvent(new Event('change'));
    expect(model.get('orientation')).toBe('LR');
    expect(model.saved).toBe(1);
    cleanup();
  });
  it('is absent without the trait', () => {
    const { el, cleanup } = mount(0);
    expect(el.querySelector('select.agw-direction')).toBeNull();
    cleanup();
  });
});

describe('selection', () => {
  it('a click on a node sets `selected`; a click on an edge selects the edge, not a node', async () => {
    const { model, el, button, cleanup } = mount(0);
    await flush();
    clickItem(el, 2);
    expect(model.get('selected')).toBe('n2');
    expect(model.saved).toBe(1);
    expect(button('Run to node').disabled).toBe(false);
    expect(painted(el).marks.selected).toBe(2);
    clickEdge(el, 0);
    expect(model.get('selected')).toBe('n2');
    expect(model.get('selected_edge')).toBe('n0:0');
    expect(painted(el).marks.selectedEdge).toBe(0);
    // a click on empty canvas selects nothing
    const saved = model.saved;
    clickAt(el, 10, 10);
    expect(model.saved).toBe(saved);
    cleanup();
  });

  it('an external change rings the node where the layout put it', async () => {
    const { model, el, cleanup } = mount(0);
    await flush();
    const before = paints(el);
    model.push('selected', 'n2');
    expect(paints(el)).toBe(before + 1);
    const p = painted(el);
    expect(p.marks.selected).toBe(2);
    const g = decodeGraph(zGraph()); // the ring sits on n2 (item 2), wherever the layout put it
    const box = itemBox(el, 2);
    const [cx, cy] = p.toPx(g.x[2], g.y[2]);
    expect(box.x + box.w / 2).toBeCloseTo(cx, 3);
    expect(box.y + box.h / 2).toBeCloseTo(cy, 3);
    model.push('selected', null);
    expect(painted(el).marks.selected).toBe(-1);
    cleanup();
  });
});

describe('Play / Pause', () => {
  it('steps at the chosen speed until Pause', async () => {
    vi.useFakeTimers();
    const { model, el, button, cleanup } = mount(0);
    const speed = /** @type {HTMLInputElement} */ (el.querySelector('input[type=range]'));
    speed.value = '10';
    speed.dispatchEvent(new Event('input'));
    button('Play').click();
    expect(button('Pause')).toBeTruthy();
    expect(button('Pause').getAttribute('aria-pressed')).toBe('true');
    expect(model.sent).toEqual([{ type: 'step' }]);
    expect(button('Step').disabled).toBe(true);
    model.push('_state', zState(1)); // the step's answer
    vi.advanceTimersByTime(99);
    expect(model.sent).toHaveLength(1);
    vi.advanceTimersByTime(2);
    expect(model.sent).toEqual([{ type: 'step' }, { type: 'step' }]);
    model.push('_state', zState(2));
    button('Pause').click();
    vi.advanceTimersByTime(1000);
    expect(model.sent).toEqual([{ type: 'step' }, { type: 'step' }, { type: 'pause' }]);
    expect(button('Play')).toBeTruthy();
    cleanup();
  });

  it('stops by itself at the end, on an error, a warning or a stall', () => {
    vi.useFakeTimers();
    const { model, button, cleanup } = mount(0);
    button('Play').click();
    model.push('_state', zState(4));
    expect(button('Play')).toBeTruthy();
    model.push('_state', zState(0, { seq: 5 }));
    button('Play').click();
    model.receive({ type: 'warning', message: 'nope' });
    expect(button('Play')).toBeTruthy();
    button('Play').click();
    vi.advanceTimersByTime(PLAY_STALL_MS + 1);
    expect(button('Play')).toBeTruthy();
    cleanup();
  });

  it('Run to end asks for chunks while the kernel says running', () => {
    const { model, button, cleanup } = mount(0);
    button('Run to end').click();
    expect(button('Pause')).toBeTruthy();
    model.push('_state', zState(2, { running: true }));
    expect(model.sent).toEqual([{ type: 'run', chunk_ms: 100 }, { type: 'run', chunk_ms: 100 }]);
    model.push('_state', zState(4, { running: false }));
    expect(model.sent).toHaveLength(2);
    expect(button('Play')).toBeTruthy();
    cleanup();
  });

  it('Pause during Run to end stops asking', () => {
    const { model, button, cleanup } = mount(0);
    button('Run to end').click();
    button('Pause').click();
    model.push('_state', zState(2, { running: false }));
    expect(model.sent).toEqual([{ type: 'run', chunk_ms: 100 }, { type: 'pause' }]);
    cleanup();
  });
});

describe('keyboard', () => {
  const key = (target, k) => target.dispatchEvent(new KeyboardEvent('keydown', { key: k, bubbles: true, cancelable: true }));

  it('arrows step and go back, space plays and pauses', () => {
    vi.useFakeTimers();
    const { model, el, cleanup } = mount(1);
    const root = el.querySelector('.agw-root');
    key(root, 'ArrowRight');
    key(root, 'ArrowLeft');
    expect(model.sent).toEqual([{ type: 'step' }, { type: 'back' }]);
    key(root, ' ');
    expect(model.sent.at(-1)).toEqual({ type: 'step' });
    key(root, ' ');
    expect(model.sent.at(-1)).toEqual({ type: 'pause' });
    cleanup();
  });

  it('leaves keys alone in the slider and space on buttons', () => {
    const { model, el, cleanup } = mount(1);
    key(el.querySelector('input[type=range]'), 'ArrowRight');
    key(el.querySelector('button'), ' ');
    expect(model.sent).toEqual([]);
    key(el.querySelector('button'), 'ArrowRight');
    expect(model.sent).toEqual([{ type: 'step' }]);
    cleanup();
  });
});

describe('zoom, fit, hover', () => {
  it('Fit restores the whole graph after a zoom, in one paint', async () => {
    const { el, button, cleanup } = mount(0);
    await flush();
    const fit = painted(el).range;
    wheel(el, 200, 100, -300);
    expect(painted(el).range.x[1] - painted(el).range.x[0]).toBeLessThan(fit.x[1] - fit.x[0]);
    const before = paints(el);
    button('Fit').click();
    expect(paints(el)).toBe(before + 1);
    expectRange(painted(el).range, fitOf(zGraph(), zState(0)).range);
    expectEveryVisibleItemLabelled(el);
    cleanup();
  });

  it('hovering a node shows its card, then the inspect reply; leaving hides it', async () => {
    const { model, el, cleanup } = mount(4);
    await flush();
    await hoverItem(el, 1);
    const card = el.querySelector('.agw-card');
    expect(card.hidden).toBe(false);
    expect(card.textContent).toContain('PowBackward0');
    expect(card.textContent).toContain('[] float32 cpu');
    expect(canvasOf(el).style.cursor).toBe('pointer');
    const req = model.sent.find((m) => m.type === 'inspect');
    expect(req).toMatchObject({ node: 1 });
    model.receive({
      type: 'reply', request: req.request,
      data: { id: 'n1', name: 'PowBackward0', kind: 'function', sequence_nr: 1, inputs: [[[], 'float32', 'cpu']],
        incoming: [{ shape: [], dtype: 'float32', norm: 1, values: [1] }],
        outgoing: { 'n1:0': { shape: [], dtype: 'float32', norm: 4, values: [4] } }, error: null },
    });
    await flush();
    expect(card.textContent).toContain('‖g‖ 4');
    expect(card.textContent).toContain('→ x');
    await hoverAt(el, 10, 10); // off every item and edge
    expect(card.hidden).toBe(true);
    expect(canvasOf(el).style.cursor).toBe('');
    await hoverItem(el, 1);
    expect(card.hidden).toBe(false);
    leave(el);
    expect(card.hidden).toBe(true);
    cleanup();
  });

  it('hovering an edge shows its card', async () => {
    const { model, el, cleanup } = mount(4);
    await flush();
    await hoverEdge(el, 2);
    const card = el.querySelector('.agw-card');
    expect(card.textContent).toContain('Pow → x');
    const req = model.sent.find((m) => m.type === 'inspect');
    expect(req).toMatchObject({ edge: 2 });
    model.receive({ type: 'reply', request: req.request, data: { id: 'n1:0', src: {}, dst: {}, summary: { shape: [], dtype: 'float32', norm: 4, min: 4, max: 4, mean: 4, std: 0, nan: 0, inf: 0, values: [4] } } });
    await flush();
    expect(card.textContent).toContain('min 4 max 4');
    cleanup();
  });
});

describe('cleanup', () => {
  it('removes every listener', () => {
    const { model, cleanup } = mount(0);
    cleanup();
    for (const ev of ['change:_graph', 'change:_state', 'change:selected', 'change:height', 'msg:custom']) {
      expect(model.listeners(ev)).toBe(0);
    }
  });

  it('a second view of the same model works on its own', () => {
    const model = new FakeModel({ _graph: zGraph(), _state: zState(0) });
    const a = document.createElement('div');
    const b = document.createElement('div');
    document.body.append(a, b);
    const ca = createView({ model, el: a, backend: { live: true, command: (c) => model.send(c), inspect: () => Promise.resolve(null), onWarning: () => () => {}, dispose() {} } });
    const cb = widget.render({ model, el: b });
    model.push('_state', zState(2));
    expect(a.querySelector('.agw-status').textContent).toBe(b.querySelector('.agw-status').textContent);
    ca();
    cb();
  });
});
