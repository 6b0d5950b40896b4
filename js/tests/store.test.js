// @vitest-environment node
// @ts-check
// The view's state store (store.js): one place for a view's state, changed through `set`.
import { describe, expect, it, vi } from 'vitest';
import { createStore } from '../src/store.js';

describe('createStore', () => {
  it('get() returns a frozen copy of the state; set(patch) merges and makes a new one', () => {
    const initial = { mode: 'idle', seq: 0, focus: null };
    const store = createStore(initial);
    const first = store.get();
    expect(first).toEqual(initial);
    expect(first).not.toBe(initial);
    expect(Object.isFrozen(first)).toBe(true);
    store.set({ mode: 'play' });
    expect(store.get()).toEqual({ mode: 'play', seq: 0, focus: null });
    expect(store.get()).not.toBe(first);
    expect(first.mode).toBe('idle'); // the old state is never mutated
  });

  it('tells each subscriber (next, prev) once per change, in subscription order', () => {
    const store = createStore({ a: 1, b: 2 });
    const calls = [];
    store.subscribe((next, prev) => calls.push(['first', prev.a, next.a]));
    store.subscribe((next, prev) => calls.push(['second', prev.a, next.a]));
    store.set({ a: 5, b: 2 });
    expect(calls).toEqual([['first', 1, 5], ['second', 1, 5]]);
  });

  it('a set that changes nothing (Object.is) calls no one and keeps the same state', () => {
    const obj = { x: 1 };
    const store = createStore({ a: 1, nan: NaN, obj });
    const fn = vi.fn();
    store.subscribe(fn);
    const before = store.get();
    store.set({ a: 1, nan: NaN, obj });
    expect(fn).not.toHaveBeenCalled();
    expect(store.get()).toBe(before);
    store.set({ obj: { x: 1 } }); // an equal but new object is a change
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it('subscribe returns the unsubscribe', () => {
    const store = createStore({ a: 1 });
    const fn = vi.fn();
    const stop = store.subscribe(fn);
    store.set({ a: 2 });
    stop();
    store.set({ a: 3 });
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it('a set inside a subscriber notifies at once; later subscribers see the newer state via get()', () => {
    const store = createStore({ a: 0, b: 0 });
    const seen = [];
    store.subscribe((next) => {
      if (next.a === 1 && next.b === 0) store.set({ b: 1 });
    });
    store.subscribe((next) => seen.push([next.a, next.b, store.get().b]));
    store.set({ a: 1 });
    expect(seen).toEqual([[1, 1, 1], [1, 0, 1]]);
    expect(store.get()).toEqual({ a: 1, b: 1 });
  });

  it('unsubscribing during a notification does not skip the others', () => {
    const store = createStore({ a: 0 });
    const calls = [];
    /** @type {() => void} */
    let stopFirst = () => {};
    stopFirst = store.subscribe(() => {
      calls.push('first');
      stopFirst();
    });
    store.subscribe(() => calls.push('second'));
    store.set({ a: 1 });
    store.set({ a: 2 });
    expect(calls).toEqual(['first', 'second', 'second']);
  });
});
