// @ts-check
// The view's store (viewstate.js) and the parts that follow it by themselves (issue 37: the
// assembler writes the traits into the store, each part subscribes): the two questions every
// part asks of a change, the keyboard binding (keys.js), and parts reacting to a `store.set`
// with no call from the view.
import { describe, expect, it, vi } from 'vitest';

import { createA11y } from '../src/a11y.js';
import { inspectTargetOf } from '../src/backend.js';
import { itemSizes } from '../src/drawing.js';
import { bindKeys, typedInto } from '../src/keys.js';
import { decodeGraph, decodeState } from '../src/model.js';
import { createPlayback } from '../src/playback.js';
import { createStore } from '../src/store.js';
import { makeTheme } from '../src/style.js';
import { initialViewState, newGraph, newStep } from '../src/viewstate.js';
import { zGraph, zState } from './fixtures.js';

/** The z fixture decoded, at step 1. */
const z = () => {
  const graph = decodeGraph(zGraph());
  return { graph, state: decodeState(zState(1), graph) };
};

describe('newStep / newGraph', () => {
  const g1 = {};
  const g2 = {};
  const s1 = {};
  const s2 = {};
  it('a new state of the same graph is a step; a new graph (with its state) is not', () => {
    expect(newStep({ graph: g1, state: s2 }, { graph: g1, state: s1 })).toBe(true);
    expect(newStep({ graph: g2, state: s2 }, { graph: g1, state: s1 })).toBe(false);
    expect(newStep({ graph: g1, state: s1 }, { graph: g1, state: s1 })).toBe(false);
    expect(newGraph({ graph: g2 }, { graph: g1 })).toBe(true);
    expect(newGraph({ graph: g1 }, { graph: g1 })).toBe(false);
  });

  it('a store without a graph (playback.js) hears every new state', () => {
    expect(newStep({ state: s2 }, { state: s1 })).toBe(true);
  });

  it('initialViewState: idle, gradient colours, nothing selected, fitted', () => {
    const { graph, state } = z();
    const s = initialViewState(graph, state, makeTheme({}));
    expect(s).toMatchObject({ graph, state, mode: 'idle', colorBy: 'gradient', focus: null, selected: -1, selectedEdge: -1, highlight: [], fitted: true });
    expect(s.size).toEqual({ width: 0, height: 0 });
  });
});

describe('parts follow the store by themselves', () => {
  it('the announcer says a new step, not a new graph', () => {
    const { graph, state } = z();
    const store = createStore({ graph, state });
    const a = createA11y(document, { store, sizes: () => itemSizes(graph), inView: () => [], show: () => {}, inspect: () => {}, leave: () => {}, focusChanged: () => {} });
    store.set({ state: { ...state, position: state.position + 1, announce: 'ran AddBackward0' } });
    expect(a.announcer.textContent).toBe('ran AddBackward0');
    store.set({ graph: { ...graph }, state: { ...state, position: state.position + 2, announce: 'a new graph' } });
    expect(a.announcer.textContent).toBe('ran AddBackward0');
    a.destroy();
    store.set({ state: { ...state, position: 0, announce: 'after destroy' } });
    expect(a.announcer.textContent).toBe('ran AddBackward0');
  });

  it('Run to end asks for the next chunk when a running state lands, and stops at the end', () => {
    const { state } = z();
    const store = createStore({ state: { ...state, done: false, running: false, error: null }, mode: /** @type {import('../src/playback.js').Mode} */ ('idle') });
    const sent = [];
    const playback = createPlayback({ store, send: (c) => sent.push(c.type), request: () => new Promise(() => {}), now: () => 0, speed: () => 4, hooks: { refuse: () => false, alert: () => {}, paused: () => {}, seeking: () => {}, found: () => {} } });
    playback.runToEnd();
    expect(sent).toEqual(['run']);
    store.set({ state: { ...store.get().state, seq: 1, running: true } });
    expect(sent).toEqual(['run', 'run']);
    store.set({ state: { ...store.get().state, seq: 2, running: false, done: true } });
    expect(store.get().mode).toBe('idle');
    playback.destroy();
  });
});

describe('keys', () => {
  it('typedInto: text fields and selects keep their keys', () => {
    expect(['INPUT', 'TEXTAREA', 'SELECT'].map(typedInto)).toEqual([true, true, true]);
    expect([undefined, 'BUTTON', 'DIV'].map(typedInto)).toEqual([false, false, false]);
  });

  it('bindKeys runs the action of a shortcut, prevents a handled key, lets a refused one go on, unbinds', () => {
    const root = document.createElement('div');
    const input = document.createElement('input');
    root.append(input);
    document.body.append(root);
    const fit = vi.fn();
    const unbind = bindKeys(root, { fit, escape: () => false });
    const press = (/** @type {HTMLElement} */ at, /** @type {string} */ key) => {
      const ev = new KeyboardEvent('keydown', { key, bubbles: true, cancelable: true });
      at.dispatchEvent(ev);
      return ev.defaultPrevented;
    };
    expect(press(root, 'f')).toBe(true);
    expect(fit).toHaveBeenCalledTimes(1);
    expect(press(input, 'f')).toBe(false); // typing
    expect(press(root, 'Escape')).toBe(false); // refused: goes on
    unbind();
    expect(press(root, 'f')).toBe(false);
    expect(fit).toHaveBeenCalledTimes(1);
    root.remove();
  });
});

describe('inspectTargetOf', () => {
  it('the node, edge or id an inspect message names', () => {
    expect(inspectTargetOf({ type: 'inspect', id: 'n3' })).toEqual({ id: 'n3' });
    expect(inspectTargetOf({ type: 'inspect', edge: 2 })).toEqual({ edge: 2 });
    expect(inspectTargetOf({ type: 'inspect', node: 4 })).toEqual({ node: 4 });
  });
});
