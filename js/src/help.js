/**
 * Keyboard help: THE table of the view's keyboard shortcuts (view.js dispatches its key handler
 * from it, so the help can never list a key that does nothing) and the help overlay rendered from
 * it. The overlay opens on `?` or the "?" button and closes on Escape, the button, its close
 * button, or a press outside its panel.
 */

/**
 * @typedef {object} Shortcut
 * @property {string[]} keys the `KeyboardEvent.key` values that trigger it
 * @property {string} label how the help writes the keys
 * @property {string} action the view's action name (view.js maps it to a function)
 * @property {string} text what it does
 * @property {boolean} [shift] also fires with Shift held (keys typed with Shift, like `?`)
 */

/** @type {readonly Readonly<Shortcut>[]} */
export const SHORTCUTS = Object.freeze([
  { keys: ['ArrowRight'], label: '→', action: 'step', text: 'Step: run the next node' },
  { keys: ['ArrowLeft'], label: '←', action: 'back', text: 'Back: undo the last step' },
  { keys: [' ', 'Spacebar'], label: 'Space', action: 'play', text: 'Play / pause stepping' },
  { keys: ['/'], label: '/', action: 'search', text: 'Search nodes' },
  { keys: ['+', '='], label: '+ / −', action: 'zoomIn', text: 'Zoom in / out (about the centre)', shift: true },
  { keys: ['-', '_'], label: '', action: 'zoomOut', text: '', shift: true },
  { keys: ['f'], label: 'F', action: 'fit', text: 'Fit: the whole graph, or the smallest legible scale at the next node' },
  { keys: ['n'], label: 'N', action: 'follow', text: 'Centre the view on the next node' },
  { keys: ['?'], label: '?', action: 'help', text: 'Show / hide this help', shift: true },
  { keys: ['Escape'], label: 'Esc', action: 'escape', text: 'Close this help, the hover card, or the selection' },
].map((s) => Object.freeze(s)));

/** Mouse gestures the view implements (listed in the help under the keys). */
export const GESTURES = Object.freeze([
  ['click a node / an edge', 'inspect it'],
  ['click a folded module', 'unfold it (shift+click: inspect)'],
  ['wheel / drag', 'zoom / pan'],
  ['click / drag the overview', 'move the view there'],
  ['double-click / Fit', 'the whole graph when it is legible, else the next node at the smallest legible size'],
]);

/** The gestures of a walkthrough (the standalone page): a folded module cannot unfold
 * without a kernel, so a click inspects it. */
export const WALKTHROUGH_GESTURES = Object.freeze(GESTURES.map(([g, what]) => (g === 'click a folded module' ? ['click a folded module', 'inspect it (unfolding needs the live widget)'] : [g, what])));

/**
 * The shortcut a key event triggers, or null: no Alt/Ctrl/Meta, and Shift only for shortcuts
 * typed with it.
 * @param {{ key: string, altKey?: boolean, ctrlKey?: boolean, metaKey?: boolean, shiftKey?: boolean }} ev
 * @param {readonly Readonly<Shortcut>[]} [table]
 * @returns {Readonly<Shortcut> | null}
 */
export function shortcutFor(ev, table = SHORTCUTS) {
  if (ev.altKey || ev.ctrlKey || ev.metaKey) return null;
  const s = table.find((x) => x.keys.includes(ev.key));
  if (!s || (ev.shiftKey && !s.shift)) return null;
  return s;
}

/**
 * The "?" button and the help overlay (a dialog inside the widget).
 * @param {Document} doc
 * @param {{ shortcuts?: readonly Readonly<Shortcut>[], gestures?: readonly (readonly string[])[], onClose?: () => void }} [opts]
 *   `gestures`: the mouse table (default GESTURES; a walkthrough: WALKTHROUGH_GESTURES)
 */
export function createHelp(doc, { shortcuts = SHORTCUTS, gestures = GESTURES, onClose } = {}) {
  const button = doc.createElement('button');
  button.type = 'button';
  button.className = 'agw-help-button';
  button.textContent = '?';
  button.title = 'Keyboard help (?)';
  button.setAttribute('aria-label', 'Keyboard help');
  button.setAttribute('aria-expanded', 'false');
  button.setAttribute('aria-haspopup', 'dialog');

  const el = doc.createElement('div');
  el.className = 'agw-help';
  el.hidden = true;
  const panel = doc.createElement('div');
  panel.className = 'agw-help-panel';
  panel.setAttribute('role', 'dialog');
  panel.setAttribute('aria-label', 'Keyboard help');
  const head = doc.createElement('div');
  head.className = 'agw-help-head';
  const title = doc.createElement('span');
  title.className = 'agw-help-title';
  title.textContent = 'Keyboard shortcuts';
  const close = doc.createElement('button');
  close.type = 'button';
  close.className = 'agw-help-close';
  close.textContent = '×';
  close.setAttribute('aria-label', 'Close help');
  head.append(title, close);
  const keys = doc.createElement('table');
  keys.className = 'agw-help-keys';
  for (const s of shortcuts) {
    if (!s.label) continue; // listed with its pair ("+ / −")
    const tr = doc.createElement('tr');
    const k = doc.createElement('td');
    const kbd = doc.createElement('kbd');
    kbd.textContent = s.label;
    k.append(kbd);
    const t = doc.createElement('td');
    t.textContent = s.text;
    tr.append(k, t);
    keys.append(tr);
  }
  const mouseTitle = doc.createElement('div');
  mouseTitle.className = 'agw-help-title';
  mouseTitle.textContent = 'Mouse';
  const mouse = doc.createElement('table');
  mouse.className = 'agw-help-mouse';
  for (const [g, what] of gestures) {
    const tr = doc.createElement('tr');
    const a = doc.createElement('td');
    a.textContent = g;
    const b = doc.createElement('td');
    b.textContent = what;
    tr.append(a, b);
    mouse.append(tr);
  }
  panel.append(head, keys, mouseTitle, mouse);
  el.append(panel);

  const isOpen = () => !el.hidden;
  /** A press outside the panel (and outside the "?" button, which toggles itself) closes. @param {Event} ev */
  const outside = (ev) => {
    const t = /** @type {Node | null} */ (ev.target);
    if (t && (panel.contains(t) || button.contains(t))) return;
    hide();
  };
  function show() {
    if (isOpen()) return;
    el.hidden = false;
    button.setAttribute('aria-expanded', 'true');
    doc.addEventListener('mousedown', outside, true);
  }
  function hide() {
    if (!isOpen()) return;
    el.hidden = true;
    button.setAttribute('aria-expanded', 'false');
    doc.removeEventListener('mousedown', outside, true);
    onClose?.();
  }
  function toggle() {
    if (isOpen()) hide();
    else show();
  }
  button.addEventListener('click', toggle);
  close.addEventListener('click', hide);

  return {
    button,
    el,
    isOpen,
    open: show,
    close: hide,
    toggle,
    destroy() {
      doc.removeEventListener('mousedown', outside, true);
      el.remove();
      button.remove();
    },
  };
}
