/**
 * The keyboard of one view: a key pressed in the view runs the action help.js's SHORTCUTS names
 * for it, and a press on the view's background gives the view the keyboard focus.
 *
 * Guarantees: keys typed into a text field or a select are left to it; a key whose action is
 * missing or answers false goes on (not prevented, not stopped); a handled key is prevented and
 * stopped (the notebook does not see it); `bindKeys` returns the function that removes both
 * listeners.
 */
import { shortcutFor } from './help.js';

/**
 * What each shortcut's action does: `tag` is the tag name of the element the key was pressed
 * in; false: not handled (the key goes on).
 * @typedef {Record<string, (tag: string | undefined) => boolean | void>} KeyActions
 */

/**
 * Whether a key pressed in an element with tag name `tag` belongs to that element (typing).
 * @param {string | undefined} tag
 * @returns {boolean}
 * @example
 * typedInto('INPUT'); // true
 * typedInto('BUTTON'); // false
 */
export function typedInto(tag) {
  return tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT';
}

/**
 * Run `actions` on the keys pressed in `root`; a press on `root` outside its controls and side
 * panel focuses it.
 * @param {HTMLElement} root @param {KeyActions} actions
 * @returns {() => void} unbind
 * @example
 * const unbind = bindKeys(root, { step: () => playback.step() });
 */
export function bindKeys(root, actions) {
  /** @param {KeyboardEvent} ev */
  function onKey(ev) {
    const tag = /** @type {HTMLElement | null} */ (ev.target)?.tagName;
    if (typedInto(tag)) return;
    const s = shortcutFor(ev);
    if (!s || actions[s.action]?.(tag) === false) return;
    ev.preventDefault();
    ev.stopPropagation();
  }
  /** @param {MouseEvent} ev */
  function focusOnPress(ev) {
    const t = /** @type {HTMLElement} */ (ev.target);
    if (!t.closest?.('button, input, label, a, select, summary, .agw-side')) root.focus({ preventScroll: true });
  }
  root.addEventListener('keydown', onKey);
  root.addEventListener('mousedown', focusOnPress);
  return () => {
    root.removeEventListener('keydown', onKey);
    root.removeEventListener('mousedown', focusOnPress);
  };
}
