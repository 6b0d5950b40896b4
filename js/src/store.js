/**
 * A small state store: one view's shared state in one place, read by the modules that draw it
 * and changed through one door. Pure: no DOM, no timers.
 *
 * Guarantees: `get()` returns the current state, a frozen object that is never mutated (a
 * change makes a new one, so `next !== prev` per key says what moved); `set(patch)` merges
 * `patch` shallowly and, when a value changed (`Object.is`), calls every subscriber once,
 * in the order they subscribed, with `(next, prev)`; a `set` that changes nothing calls no one;
 * `subscribe(fn)` returns the function that unsubscribes it. A `set` made by a subscriber
 * notifies at once (the subscribers after it then see the newer state through `get()`).
 */

/**
 * @template S
 * @typedef {object} Store
 * @property {() => Readonly<S>} get the current state
 * @property {(patch: Partial<S>) => void} set merge `patch`; subscribers hear of a change
 * @property {(fn: (next: Readonly<S>, prev: Readonly<S>) => void) => () => void} subscribe
 *   call `fn` after each change; returns the unsubscribe
 */

/**
 * A store holding `initial` (copied).
 * @template {object} S
 * @param {S} initial
 * @returns {Store<S>}
 * @example
 * const store = createStore({ mode: 'idle', seq: 0 });
 * const stop = store.subscribe((next, prev) => console.log(prev.mode, '->', next.mode));
 * store.set({ mode: 'play' }); // logs "idle -> play"
 * stop();
 */
export function createStore(initial) {
  /** @type {Readonly<S>} */
  let current = Object.freeze({ ...initial });
  /** @type {Set<(next: Readonly<S>, prev: Readonly<S>) => void>} */
  const subscribers = new Set();
  return {
    get: () => current,
    set(patch) {
      const keys = /** @type {(keyof S)[]} */ (Object.keys(patch));
      if (keys.every((k) => Object.is(patch[k], current[k]))) return;
      const prev = current;
      current = Object.freeze({ ...current, ...patch });
      const next = current;
      for (const fn of [...subscribers]) fn(next, prev);
    },
    subscribe(fn) {
      subscribers.add(fn);
      return () => {
        subscribers.delete(fn);
      };
    },
  };
}
