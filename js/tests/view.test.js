import { describe, expect, it, vi } from 'vitest';

vi.mock('../src/plotly.js', () => import('./fake_plotly.js'));

import widget from '../src/index.js';
import { createView, PLAY_STALL_MS } from '../src/view.js';
import { T, fitRange } from '../src/figure.js';
import { decodeGraph } from '../src/model.js';
import { makeTheme } from '../src/style.js';
import { byName, calls } from './fake_plotly.js';
import { FakeModel, freed, z, zGraph, zState } from './fixtures.js';
import { flush, mountView, useViewTestHooks } from './mount.js';

/** The view of z = x**2 + y after `position` steps (traits in `extra` replace the defaults). */
function mount(position = 0, extra = {}) {
  return mountView({ _graph: zGraph(), _state: zState(position), ...extra });
}

useViewTestHooks();

describe('render', () => {
  it('draws the graph once, with every trace, and the toolbar with the contract names', async () => {
    const { el, cleanup } = mount();
    await flush();
    expect(byName('newPlot')).toHaveLength(1);
    const [data, layout, config] = byName('newPlot')[0].args;
    expect(data).toHaveLength(T.nodeLabels + 1);
    expect(data[T.nodes].type).toBe('scatter'); // small graph: svg
    expect(Array.from(data[T.nodes].x)).toEqual(Array.from(Float32Array.from(z.decoded.nodes.x)));
    expect(data[T.nodeLabels].text[0]).toBe('Add');
    // jsdom has no layout: the view assumes 800 px wide and the trait's height less the chrome
    expect(layout.xaxis.range).toEqual(fitRange(decodeGraph(zGraph()), { width: 800, height: 360 }).x);
    expect(config.displaylogo).toBe(false);
    expect(config.showSendToCloud).toBe(false); // no upload button
    expect(config.plotlyServerURL).toBe('');
    const uids = data.map((t) => t.uid);
    expect(new Set(uids).size).toBe(uids.length);
    expect(data[T.edgeLabels].uid).toBe('agw-edge-labels');
    const names = [...el.querySelectorAll('button')].map((b) => b.textContent);
    expect(names).toEqual(['Step', 'Back', 'Run to node', 'Run to end', 'Reset', 'Play', 'Fit', 'First NaN/Inf', '?', '×']); // '?': keyboard help, '×': its close button (issue 17)
    expect(el.querySelector('input[type=range]').getAttribute('aria-label')).toMatch(/Speed/);
    const status = el.querySelector('.agw-status');
    expect(status.getAttribute('aria-live')).toBe('polite');
    expect(status.textContent).toBe('step 0 / 4 → next AddBackward0');
    cleanup();
    expect(byName('purge')).toHaveLength(1);
    expect(el.children).toHaveLength(0);
  });

  it('uses WebGL traces above the node threshold', async () => {
    const n = 2500;
    const g = {
      version: 1, orientation: 'LR', bounds: [0, 1, -n, 0],
      nodes: { count: n, id: Array.from({ length: n }, (_, i) => `n${i}`), x: new Float32Array(n), y: Float32Array.from({ length: n }, (_, i) => -i) },
      edges: { count: 0 },
    };
    const { cleanup } = mount(0, { _graph: g, _state: { seq: 1, status: 'step 0 / 0' } });
    const data = byName('newPlot')[0].args[0];
    expect(data[T.nodes].type).toBe('scattergl');
    expect(data[T.edgeSel].type).toBe('scattergl');
    expect(data[T.edgeLabels].type).toBe('scatter'); // text needs svg
    expect(data[T.nodeLabels].text).toEqual([]); // 2500 labels do not fit
    cleanup();
  });

  it('switches to WebGL when a new graph is big and back to svg when it is small again', async () => {
    const big = (n) => ({
      version: 1, orientation: 'TB', bounds: [0, 1, -n, 0],
      nodes: { count: n, id: Array.from({ length: n }, (_, i) => `n${i}`), x: new Float32Array(n), y: Float32Array.from({ length: n }, (_, i) => -i) },
      edges: { count: 0 },
    });
    // Unfolding a model's boxes can take the visible graph past the threshold, folding back under.
    const { model, cleanup } = mount(0, { _graph: big(10), _state: { seq: 1, status: 'step 0 / 0' } });
    const drawn = () => [...byName('newPlot'), ...byName('react')].at(-1).args[0];
    await Promise.resolve();
    expect(drawn()[T.nodes].type).toBe('scatter');
    model.push('_graph', big(3000));
    await new Promise((r) => setTimeout(r, 0));
    expect(drawn()[T.nodes].type).toBe('scattergl');
    expect(drawn()[T.edgeSel].type).toBe('scattergl');
    model.push('_graph', big(12));
    await new Promise((r) => setTimeout(r, 0));
    expect(drawn()[T.nodes].type).toBe('scatter');
    expect(drawn()[T.edgeSel].type).toBe('scatter');
    cleanup();
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
  it('repaints the overlay, restyles only the labels that changed, status verbatim', async () => {
    const { model, el, cleanup } = mount(0);
    await flush();
    const canvas = el.querySelector('canvas.agw-overlay');
    expect(canvas).not.toBeNull();
    const painted = Number(canvas.dataset.painted);
    expect(painted).toBeGreaterThan(0);
    calls.length = 0;
    canvas.__ctx.ops.length = 0;
    model.push('_state', zState(3));
    expect(byName('newPlot')).toHaveLength(0);
    expect(byName('react')).toHaveLength(0);
    expect(Number(canvas.dataset.painted)).toBe(painted + 1);
    // the edges flowed: the overlay stroked them in bin colours
    const strokes = canvas.__ctx.ops.filter(([op, k]) => op === 'set' && k === 'strokeStyle').map(([, , v]) => v);
    expect(strokes).toContain(makeTheme().bins[0]);
    expect(byName('restyle')).toHaveLength(1);
    const [update, traces] = byName('restyle')[0].args;
    expect(traces).toEqual([T.edgeLabels]); // nothing else plotly shows changed
    expect(update.text[0]).toEqual(['1', '1', '4']);
    expect(el.querySelector('.agw-status').textContent).toBe('ran PowBackward0 (step 3 / 4) → next AccumulateGrad (x)');
    expect(el.querySelector('.agw-progress-bar').style.width).toBe('75%');
    // the same state again: the overlay repaints, plotly is left alone
    calls.length = 0;
    model.push('_state', { ...zState(3), seq: 99 });
    expect(byName('restyle')).toHaveLength(0);
    cleanup();
    expect(el.querySelector('canvas')).toBeNull();
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
    expect(button('Step').title).toBe('Run the next node (→)');
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
    const { model, el, cleanup } = mount(0, { _graph: freed.graph(), _state: freed.state(0) });
    expect(el.querySelector('.agw-notice').textContent).toContain('freed by backward()');
    model.receive({ type: 'warning', message: 'already at the start: nothing to undo' });
    expect(el.querySelector('.agw-alert').textContent).toContain('nothing to undo');
    cleanup();
  });

  it('a new _graph redraws from scratch and refits', async () => {
    const { model, cleanup } = mount(0);
    await flush();
    calls.length = 0;
    const g = zGraph();
    g.orientation = 'LR';
    model.push('_graph', g);
    expect(byName('react')).toHaveLength(1);
    expect(byName('react')[0].args[0][T.nodeLabels].textposition).toBe('top center');
    cleanup();
  });
});

describe('layout direction', () => {
  it('sets the orientation trait when the model has one', () => {
    const { model, el, cleanup } = mount(0, { orientation: 'TB' });
    const select = el.querySelector('select.agw-direction');
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
  it('a click on a node sets `selected`', async () => {
    const { model, el, button, cleanup } = mount(0);
    await flush();
    const gd = el.querySelector('.agw-plot');
    gd.emit('plotly_click', { points: [{ curveNumber: T.nodes, pointNumber: 2 }] });
    expect(model.get('selected')).toBe('n2');
    expect(model.saved).toBe(1);
    expect(button('Run to node').disabled).toBe(false);
    // a click on an edge marker selects nothing
    gd.emit('plotly_click', { points: [{ curveNumber: T.edgeHit, pointNumber: 0 }] });
    expect(model.get('selected')).toBe('n2');
    cleanup();
  });

  it('an external change highlights the node', async () => {
    const { model, cleanup } = mount(0);
    await flush();
    calls.length = 0;
    model.push('selected', 'n2');
    const [update, traces] = byName('restyle')[0].args;
    const k = traces.indexOf(T.ring);
    const g = decodeGraph(zGraph()); // the ring sits on n2 (item 2), wherever the layout put it
    expect(update.x[k]).toEqual([g.x[2]]);
    expect(update.y[k]).toEqual([g.y[2]]);
    model.push('selected', null);
    const [u2, t2] = byName('restyle')[1].args;
    expect(u2.x[t2.indexOf(T.ring)]).toEqual([]);
    cleanup();
  });
});

describe('Play / Pause', () => {
  it('steps at the chosen speed until Pause', async () => {
    vi.useFakeTimers();
    const { model, el, button, cleanup } = mount(0);
    const speed = el.querySelector('input[type=range]');
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
  it('Fit restores the whole graph', async () => {
    const { el, button, cleanup } = mount(0);
    await flush();
    const gd = el.querySelector('.agw-plot');
    gd.layout.xaxis.range = [0, 0.2];
    gd.layout.yaxis.range = [-0.2, 0];
    gd.emit('plotly_relayout', {});
    calls.length = 0;
    button('Fit').click();
    await flush();
    const [relayout] = byName('relayout');
    const fit = fitRange(decodeGraph(zGraph()), { width: 800, height: 360 });
    expect(relayout.args[0]).toEqual({ 'xaxis.range': fit.x, 'yaxis.range': fit.y });
    expect(byName('restyle')).toHaveLength(1); // labels and sizes for the new zoom
    cleanup();
  });

  it('hovering a node shows its card, then the inspect reply', async () => {
    const { model, el, cleanup } = mount(4);
    await flush();
    const gd = el.querySelector('.agw-plot');
    gd.emit('plotly_hover', { points: [{ curveNumber: T.nodes, pointNumber: 1 }], event: { clientX: 50, clientY: 60 } });
    const card = el.querySelector('.agw-card');
    expect(card.hidden).toBe(false);
    expect(card.textContent).toContain('PowBackward0');
    expect(card.textContent).toContain('[] float32 cpu');
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
    gd.emit('plotly_unhover', {});
    expect(card.hidden).toBe(true);
    cleanup();
  });

  it('hovering an edge shows its card', async () => {
    const { model, el, cleanup } = mount(4);
    await flush();
    const gd = el.querySelector('.agw-plot');
    gd.emit('plotly_hover', { points: [{ curveNumber: T.edgeHit, pointNumber: 2 }], event: { clientX: 5, clientY: 6 } });
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
