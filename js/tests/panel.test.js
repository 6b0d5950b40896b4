// @ts-check
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { decodeGraph, decodeState } from '../src/model.js';
import { createMemoryPanel } from '../src/colormodes.js';
import { createInspector } from '../src/panel.js';
import { decodeMemory } from '../src/memory.js';
import { addmmReply, boxGraph, boxState, boxes } from './fixtures.js';

const g = decodeGraph(boxGraph());
const s = decodeState(boxState(3), g);

function handlers() {
  return { close: vi.fn(), collapse: vi.fn(), expand: vi.fn(), runTo: vi.fn(), selectNode: vi.fn(), highlight: vi.fn() };
}
const tab = (el, name) => [...el.querySelectorAll('[role=tab]')].find((b) => b.textContent.startsWith(name));
const btn = (el, name) => [...el.querySelectorAll('button')].find((b) => b.textContent === name);

beforeEach(() => {
  document.body.innerHTML = '';
});

describe('inspector: a node', () => {
  function show(data = addmmReply(), extra = {}) {
    const hd = handlers();
    const insp = createInspector(document, hd);
    document.body.append(insp.el);
    const target = { kind: /** @type {const} */ ('node'), key: 'node:n6', id: 'n6', item: -1, data, graph: g, state: s, ...extra };
    insp.render(target);
    return { insp, hd, el: insp.el, target };
  }

  it('is a named region with the node, its module and sequence number', () => {
    const { el } = show();
    expect(el.tagName).toBe('SECTION');
    expect(el.getAttribute('aria-label')).toBe('Inspector');
    expect(el.hidden).toBe(false);
    expect(el.querySelector('h3').textContent).toBe('AddmmBackward0');
    expect(el.textContent).toContain('sequence nr4');
    expect(el.querySelector('.agw-crumbs').textContent).toBe('2');
    const tb = /** @type {HTMLDetailsElement} */ (el.querySelector('details.agw-traceback'));
    expect(tb.open).toBe(false);
    expect(tb.querySelector('pre').textContent).toContain('out = model(x)');
  });

  it('Gradients tab: per-slot incoming summary with NaN flagged, outgoing per edge', () => {
    const { el } = show();
    expect(tab(el, 'Gradients').getAttribute('aria-selected')).toBe('true');
    const panel = el.querySelector('[role=tabpanel]');
    expect(panel.textContent).toContain('slot 0');
    expect(panel.textContent).toContain('[5, 8] float32 cpu');
    const bad = panel.querySelector('.agw-nonfinite');
    expect(bad.textContent).toContain('contains 1 NaN');
    expect(bad.querySelector('.agw-alarm')).not.toBeNull();
    expect(panel.textContent).toContain('not flowed yet'); // n6:0 is null
    expect(panel.textContent).toContain('values (2 values)[1, 2]');
  });

  it('Saved tab: every value with kind, shape, dtype, state; stale/freed/packed marked', () => {
    const { el } = show();
    expect(tab(el, 'Saved').textContent).toBe('Saved7');
    expect(tab(el, 'Saved').querySelector('.agw-alarm')).not.toBeNull(); // something stale or freed
    tab(el, 'Saved').click();
    const list = el.querySelector('[aria-label="Saved values"]');
    const item = (name) => list.querySelector(`li[data-name="${name}"]`);
    expect(item('mat1').textContent).toContain('[5, 8]');
    expect(item('mat1').textContent).toContain('float32');
    expect(item('mat1').textContent).toContain('aliases: n1.result (LogSoftmaxBackward0)');
    expect(item('mat2').querySelector('.agw-badge-stale').textContent).toBe('stale');
    expect(item('mat2').classList.contains('agw-saved-stale')).toBe(true);
    expect(item('mat2').textContent).toContain('stepping this node raises');
    expect(item('self').querySelector('.agw-badge-freed')).not.toBeNull();
    expect(item('other').querySelector('.agw-badge-packed')).not.toBeNull();
    expect(item('alpha').textContent).toContain('= 1');
    expect(item('ignore_index').textContent).toContain('= -100');
    expect(item('alpha').querySelector('button')).toBeNull(); // only tensors open
  });

  it('clicking a saved tensor shows its stats and values and highlights its aliases', () => {
    const { el, hd, insp, target } = show();
    tab(el, 'Saved').click();
    btn(el, 'mat1').click();
    expect(hd.highlight).toHaveBeenLastCalledWith(['n1']);
    const detail = el.querySelector('li[data-name="mat1"] .agw-saved-detail');
    expect(detail.textContent).toContain('stride[8, 1]');
    expect(detail.textContent).toContain('values (2 values)[-0.34, -0.28]');
    expect(btn(el, 'mat1').getAttribute('aria-expanded')).toBe('true');
    // a new step re-renders: the tab and the open value stay
    insp.render({ ...target, data: addmmReply() });
    expect(tab(el, 'Saved').getAttribute('aria-selected')).toBe('true');
    expect(el.querySelector('li[data-name="mat1"] .agw-saved-detail')).not.toBeNull();
    btn(el, 'mat1').click();
    expect(hd.highlight).toHaveBeenLastCalledWith([]);
    // another target: highlights cleared, the open tab kept
    btn(el, 'mat2').click();
    insp.render({ ...target, key: 'node:n9', id: 'n9' });
    expect(hd.highlight).toHaveBeenLastCalledWith([]);
  });

  it('Hooks tab lists hooks and says what cannot be listed', () => {
    const { el } = show();
    tab(el, 'Hooks').click();
    const panel = el.querySelector('[role=tabpanel]');
    expect(panel.textContent).toContain('scale_grad (on 2.weight)');
    expect(panel.textContent).toContain('cannot be listed');
  });

  it('tabs switch with the arrow keys', () => {
    const { el } = show();
    tab(el, 'Gradients').dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowRight', bubbles: true }));
    expect(tab(el, 'Saved').getAttribute('aria-selected')).toBe('true');
  });

  it('buttons: collapse the module (or an ancestor), run to it, close', () => {
    const { el, hd } = show(addmmReply(), { item: 1 });
    btn(el, 'Collapse module').click();
    expect(hd.collapse).toHaveBeenCalledWith('2');
    btn(el, 'Run to here').click();
    expect(hd.runTo).toHaveBeenCalledWith({ id: 'n6' });
    el.querySelector('[aria-label="Close inspector"]').click();
    expect(hd.close).toHaveBeenCalled();
    const deep = show({ ...addmmReply(), module: 'layers.3.linear1' }).el;
    const crumbs = [...deep.querySelectorAll('.agw-crumbs button')];
    expect(crumbs.map((b) => b.textContent)).toEqual(['layers', '3', 'linear1']);
    crumbs[1].click();
  });

  it('shows a failed step, a loading state and an error', () => {
    const failed = show({ ...addmmReply(), error: 'one of the variables needed for gradient computation has been modified' }).el;
    expect(failed.querySelector('[role=alert]').textContent).toContain('this step failed');
    const loading = show(null).el;
    expect(loading.querySelector('.agw-insp-loading')).not.toBeNull();
    expect(loading.querySelector('[role=tablist]')).toBeNull();
    const err = show(null, { error: 'no reply from the kernel' }).el;
    expect(err.textContent).toContain('no reply from the kernel');
  });

  it('a failed step: its full message once, at the top; the Saved tab points to it', () => {
    const engine = 'one of the variables needed for gradient computation has been modified by an inplace operation: [torch.FloatTensor [8, 8]] is at version 1; expected version 0 instead';
    const data = addmmReply();
    data.error = `RuntimeError in n6 (AddmmBackward0): ${engine}. Hint: enable anomaly detection`;
    data.saved[2].note = `stale: modified in place after it was saved (saved at version 0, now 1); stepping this node raises the engine's error: ${engine}`;
    const { el } = show(data);
    const top = el.querySelector('.agw-insp-error');
    expect(top.textContent).toBe(`✖ this step failed: ${data.error}`); // the full text, not cut
    tab(el, 'Saved').click();
    expect(el.querySelector('[data-name="mat2"] .agw-saved-note').textContent).toBe('stale: modified in place after it was saved (saved at version 0, now 1); stepping this node raised the error above');
    expect(el.textContent.split(engine)).toHaveLength(2); // said once
    // a node that did not fail keeps the whole note (it says what stepping it will raise)
    const ok = show({ ...addmmReply(), saved: data.saved }).el;
    tab(ok, 'Saved').click();
    expect(ok.querySelector('[data-name="mat2"] .agw-saved-note').textContent).toContain(engine);
  });

  it('hides on null', () => {
    const { insp, el } = show();
    insp.render(null);
    expect(el.hidden).toBe(true);
  });
});

describe('inspector: an edge and a box', () => {
  it('edge: source and target slots, the gradient summary', () => {
    const hd = handlers();
    const insp = createInspector(document, hd);
    insp.render({
      kind: 'edge', key: 'edge:n1:0', id: 'n1:0', item: 1, graph: g, state: s,
      data: boxes.edge(1), // Python's reply at step 3
    });
    const el = insp.el;
    expect(el.querySelector('h3').textContent).toBe('LogSoftmaxBackward0 → Addmm');
    expect(el.textContent).toContain('LogSoftmaxBackward0 (output 0)');
    expect(el.textContent).toContain('AddmmBackward0 · Addmm (slot 0)');
    expect(el.textContent).toContain('[5, 3] float32 (15 values)');
    expect(el.querySelector('.agw-nonfinite')).toBeNull();
    btn(el, 'Select target').click();
    expect(hd.selectNode).toHaveBeenCalledWith('n2');
  });

  it('box: path, members, progress, top ops, leaves, Expand', () => {
    const hd = handlers();
    const insp = createInspector(document, hd);
    insp.render({
      kind: 'box', key: 'box:1.1', item: 2, graph: g, state: s,
      data: boxes.node(2), // Python's reply for box "1.1" at step 3
    });
    const el = insp.el;
    expect(el.textContent).toContain('folded module · 4 nodes');
    expect(el.querySelector('[role=progressbar]').getAttribute('aria-valuenow')).toBe('25');
    expect(el.textContent).toContain('AccumulateGrad×2');
    expect([...el.querySelectorAll('.agw-leaves li')].map((l) => l.textContent)).toEqual(['1.1.bias', '1.1.weight']);
    btn(el, 'Expand').click();
    expect(hd.expand).toHaveBeenCalledWith('1.1');
    btn(el, 'Run through module').click();
    expect(hd.runTo).toHaveBeenCalledWith({ item: 2 });
  });
});

describe('memory panel', () => {
  it('shows the total and the top holders; a click selects', () => {
    const select = vi.fn();
    const excludeLeaves = vi.fn();
    const p = createMemoryPanel(document, { select, excludeLeaves });
    const mem = decodeMemory({ total: 856, items: [104, 0, 416, 80], top: [{ id: 'n6', name: 'AddmmBackward0', module: '1', bytes: 416 }], by_module: { 1: 416 } }, 4);
    p.render(mem, { excludeLeaves: false });
    expect(p.el.getAttribute('aria-label')).toBe('Memory');
    expect(p.el.querySelector('.agw-mem-total').textContent).toContain('Total 856 B');
    expect(p.el.querySelectorAll('.agw-mem-stop').length).toBe(8);
    const holder = p.el.querySelector('.agw-mem-top li');
    expect(holder.textContent).toContain('AddmmBackward0 · 1416 B');
    holder.querySelector('button').click();
    expect(select).toHaveBeenCalledWith('n6');
    const box = /** @type {HTMLInputElement} */ (p.el.querySelector('input[type=checkbox]'));
    box.checked = true;
    box.dispatchEvent(new Event('change'));
    expect(excludeLeaves).toHaveBeenCalledWith(true);
    p.render(null, { excludeLeaves: true, error: 'no reply from the kernel' });
    expect(p.el.textContent).toContain('no reply from the kernel');
    p.hide();
    expect(p.el.hidden).toBe(true);
  });
});
