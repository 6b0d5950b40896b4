// @ts-check
// The drawing's accessible layer (a11y.js): the words for an item, arrow-key moves along edges
// and between siblings, the list of items in view with its keyboard path, the live step.
import { describe, expect, it } from 'vitest';
import { createA11y, describeItem, neighbour } from '../src/a11y.js';
import { itemSizes } from '../src/drawing.js';
import { decodeGraph, decodeState } from '../src/model.js';
import { createStore } from '../src/store.js';
import { zGraph, zState } from './fixtures.js';

function z() {
  const graph = decodeGraph(zGraph());
  return { graph, state: decodeState(zState(0), graph) };
}

describe('describeItem', () => {
  it('names the node, its step state and the gradient it received', () => {
    const { graph, state } = z();
    const d = describeItem(graph, state, 0);
    expect(d.name).toBe('AddBackward0');
    expect(d.step).toBe('next');
    expect(d.text).toBe('AddBackward0, next');
    const x = graph.labels.indexOf('x');
    expect(describeItem(graph, state, x).text).toBe('AccumulateGrad (x) [], pending');
  });
  it('reads a flowed gradient and "just ran"', () => {
    const { graph, state } = z();
    const pow = graph.labels.indexOf('Pow');
    const e = Array.from(graph.dst).indexOf(pow);
    const ran = { ...state, last: pow, nodeState: Uint8Array.from(state.nodeState, (v, i) => (i === pow ? 2 : v)), edgeFlag: Uint8Array.from(state.edgeFlag, (v, k) => (k === e ? 1 : v)), edgeNorm: Float32Array.from(state.edgeNorm, (v, k) => (k === e ? 0.5 : v)) };
    expect(describeItem(graph, ran, pow).text).toBe('PowBackward0, done, just ran, gradient in ‖g‖ 0.5');
  });
});

describe('neighbour', () => {
  it('moves along the edges with the flow, back against it, and across a layer', () => {
    const { graph } = z();
    const sizes = itemSizes(graph);
    const add = 0;
    const down = neighbour(graph, add, 'ArrowDown', sizes);
    expect(Array.from(graph.src).some((s, e) => s === add && graph.dst[e] === down)).toBe(true);
    expect(neighbour(graph, down, 'ArrowUp', sizes)).toBe(add);
    // a sibling in the same layer, then back
    const right = neighbour(graph, down, 'ArrowRight', sizes);
    const left = neighbour(graph, down, 'ArrowLeft', sizes);
    const other = right >= 0 ? right : left;
    expect(other).toBeGreaterThanOrEqual(0);
    expect(Math.abs(graph.y[other] - graph.y[down])).toBeLessThan(1e-3);
    expect(neighbour(graph, other, right >= 0 ? 'ArrowLeft' : 'ArrowRight', sizes)).toBe(down);
    expect(neighbour(graph, add, 'Enter', sizes)).toBe(-1);
  });
});

describe('createA11y', () => {
  it('lists the items in view as buttons, moves the focus with the arrows, says each step', () => {
    const { graph, state } = z();
    const store = createStore({ graph, state });
    const shown = [];
    const inspected = [];
    let left = 0;
    const a = createA11y(document, {
      store,
      sizes: () => itemSizes(graph),
      inView: () => [0, 1, 2, 3],
      show: (i) => shown.push(i),
      inspect: (i) => inspected.push(i),
      leave: () => left++,
      focusChanged: () => {},
    });
    document.body.append(a.list, a.announcer);
    a.refresh();
    const buttons = [...a.list.querySelectorAll('button')];
    expect(buttons).toHaveLength(4);
    expect(a.list.getAttribute('aria-label')).toBe('Backward graph: 4 of 4 items in view');
    expect(buttons.filter((b) => b.tabIndex === 0)).toHaveLength(1); // one Tab stop
    buttons[0].focus();
    expect(a.focused()).toBe(Number(buttons[0].dataset.item));
    buttons[0].dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowDown', bubbles: true }));
    expect(shown).toHaveLength(1);
    expect(document.activeElement?.dataset.item).toBe(String(shown[0]));
    document.activeElement.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }));
    expect(left).toBe(1);
    document.activeElement.click();
    expect(inspected).toEqual([shown[0]]);
    a.stateChanged({ ...state, position: 0 }, { ...state, position: 1, announce: 'ran AddBackward0, step 1 of 4; next AccumulateGrad (y)' });
    expect(a.announcer.textContent).toBe('ran AddBackward0, step 1 of 4; next AccumulateGrad (y)');
    expect(a.announcer.getAttribute('aria-live')).toBe('polite');
    a.destroy();
    a.list.remove();
    a.announcer.remove();
  });
});
