/**
 * The widget's height and what it tells Python of its size.
 *
 * - `height` trait in px: the widget is that tall. `height` null (the default): the drawing
 *   (the body under the toolbars) is as tall as the graph needs at Fit, within `AUTO_FRACTION`
 *   of the window's height, the widget at least `MIN_AUTO_PX` (`autoHeight`, pure); the widget
 *   grows around it, whatever its toolbars take.
 * - A drag handle under the drawing resizes it (mouse, or the arrow keys when focused); the
 *   height it leaves is the widget's `height` from then on.
 * - The drawing's size goes to Python (`MSG.VIEWPORT`, debounced), which chooses the folds and
 *   the direction that show the whole graph legibly in it (`view/autofold.py`); with `height`
 *   null the height sent is the most the drawing may grow to, so the answer can grow it. Each
 *   answer bumps the root's `data-fitted` (the new drawing, when there is one, came before it); the root
 *   has `data-fitting` while one is due.
 */
import { FIT_PAD, MAX_FIT_PPU } from './camera.js';
import { MARGIN, plotArea } from './geometry.js';
import { MSG, TRAIT } from './protocol.js';

/** `height=None`: the drawing takes at most this fraction of the window's height... */
export const AUTO_FRACTION = 0.7;
/** ...and at least this many px (the whole widget). */
export const MIN_AUTO_PX = 420;
/** The viewport is sent this long after the last resize (ms). */
export const REPORT_DEBOUNCE_MS = 200;
/** Sizes closer than this (px) to the last one sent are not sent again. */
export const REPORT_SLACK_PX = 4;
/** The drag handle's keyboard step (px). */
export const HANDLE_STEP_PX = 24;

/**
 * The drawing's height (px) for `height` null: what it needs to show the graph at Fit across
 * the plot's width, at most AUTO_FRACTION of the window, at least what makes the widget (its
 * `chrome` around the drawing) MIN_AUTO_PX tall.
 * @param {[number, number, number, number]} bounds the layout's bounds @param {number} plotWidth
 * @param {number} chrome the widget's px outside the drawing @param {number} windowHeight
 * @returns {number}
 * @example autoHeight([0, 10, -40, 0], 800, 150, 900) // 630: a tall graph takes 70% of the window
 */
export function autoHeight(bounds, plotWidth, chrome, windowHeight) {
  const most = AUTO_FRACTION * windowHeight;
  const least = Math.max(120, MIN_AUTO_PX - chrome);
  const gw = Math.max(bounds[1] - bounds[0], 1e-6);
  const gh = Math.max(bounds[3] - bounds[2], 1e-6);
  const w = Math.max(20, plotArea({ width: plotWidth, height: 400 }).width - 2 * FIT_PAD);
  const ppu = Math.min(w / gw, MAX_FIT_PPU);
  const need = gh * ppu + 2 * FIT_PAD + MARGIN.t + MARGIN.b;
  return Math.round(Math.max(least, Math.min(most, need)));
}

/**
 * @param {Document} doc
 * @param {{
 *   model: Pick<import('./protocol.js').WidgetModel, 'get' | 'set' | 'save_changes'>,
 *   root: HTMLElement, body: HTMLElement, plot: HTMLElement, live: boolean,
 *   request: import('./backend.js').Request,
 *   bounds: () => [number, number, number, number],
 * }} ctx `body`: what holds the drawing (and the side panel), under the toolbars
 */
export function createSizing(doc, { model, root, body, plot, live, request, bounds }) {
  const win = doc.defaultView ?? globalThis;
  const handle = doc.createElement('div');
  handle.className = 'agw-resize';
  handle.tabIndex = 0;
  handle.setAttribute('role', 'separator');
  handle.setAttribute('aria-orientation', 'horizontal');
  handle.setAttribute('aria-label', 'Resize the drawing (drag, or arrow keys)');
  handle.title = 'Drag to resize the drawing';
  handle.setAttribute('aria-valuemin', '240');
  handle.setAttribute('aria-valuemax', '10000');
  handle.hidden = !live; // the standalone page fills its window
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  /** @type {{ width: number, height: number } | null} */
  let sent = null;
  let asked = 0;

  const windowHeight = () => Number(win.innerHeight) || 900;
  const explicit = () => {
    const v = model.get(TRAIT.HEIGHT);
    return v === null || v === undefined ? null : Number(v);
  };
  /** The widget's px outside the drawing (toolbars, status, legend, handle). */
  const chrome = () => {
    const r = root.getBoundingClientRect().height;
    const p = plot.getBoundingClientRect().height;
    return r > 0 && p > 0 ? Math.max(60, r - p) : 150;
  };

  /** Size the widget: its `height`, or (null) the drawing what the graph needs. */
  function apply() {
    const px = explicit();
    if (px !== null) {
      root.style.height = `${Math.max(240, px)}px`;
      body.style.height = '';
    } else {
      root.style.height = 'auto';
      body.style.height = `${autoHeight(bounds(), plot.clientWidth || 800, chrome(), windowHeight())}px`;
    }
    const now = Math.round(root.getBoundingClientRect().height) || px || MIN_AUTO_PX;
    handle.setAttribute('aria-valuenow', String(now));
  }

  /** The drawing was measured at w x h: tell Python (debounced), for the folds that fit it. @param {number} w @param {number} h */
  function measured(w, h) {
    if (!live) return;
    const px = explicit();
    // height null: the most the drawing may have, so the answer may grow it
    const height = px === null ? AUTO_FRACTION * windowHeight() : h;
    const next = { width: Math.round(w), height: Math.round(Math.max(120, height)) };
    if (sent && Math.abs(sent.width - next.width) <= REPORT_SLACK_PX && Math.abs(sent.height - next.height) <= REPORT_SLACK_PX) return;
    clearTimeout(timer);
    root.dataset.fitting = '1'; // until Python answered: the drawing may still change
    const ask = ++asked;
    timer = setTimeout(() => {
      sent = next;
      // answered after the new drawing (when there is one) is sent: `data-fitted` counts the answers
      const done = () => {
        if (ask === asked) delete root.dataset.fitting;
      };
      request({ type: MSG.VIEWPORT, ...next }).then(
        () => {
          root.dataset.fitted = String(Number(root.dataset.fitted || 0) + 1);
          done();
        },
        done,
      );
    }, REPORT_DEBOUNCE_MS);
  }

  /** @param {number} h the widget's new height (px), kept as its `height` */
  function setHeight(h) {
    const px = Math.round(Math.max(240, h));
    root.style.height = `${px}px`;
    body.style.height = '';
    handle.setAttribute('aria-valuenow', String(px));
    model.set(TRAIT.HEIGHT, px);
    model.save_changes();
  }

  /** @type {{ y: number, h: number } | null} */
  let drag = null;
  const onDown = (/** @type {PointerEvent} */ ev) => {
    if (ev.button !== 0) return;
    drag = { y: ev.clientY, h: root.getBoundingClientRect().height };
    handle.setPointerCapture?.(ev.pointerId);
    ev.preventDefault();
  };
  const onMove = (/** @type {PointerEvent} */ ev) => {
    if (drag) root.style.height = `${Math.max(240, drag.h + ev.clientY - drag.y)}px`;
  };
  const onUp = (/** @type {PointerEvent} */ ev) => {
    if (!drag) return;
    const h = drag.h + ev.clientY - drag.y;
    drag = null;
    handle.releasePointerCapture?.(ev.pointerId);
    setHeight(h);
  };
  const onKey = (/** @type {KeyboardEvent} */ ev) => {
    if (ev.key !== 'ArrowUp' && ev.key !== 'ArrowDown') return;
    ev.preventDefault();
    ev.stopPropagation();
    setHeight(root.getBoundingClientRect().height + (ev.key === 'ArrowDown' ? HANDLE_STEP_PX : -HANDLE_STEP_PX));
  };
  handle.addEventListener('pointerdown', onDown);
  handle.addEventListener('pointermove', onMove);
  handle.addEventListener('pointerup', onUp);
  handle.addEventListener('keydown', onKey);
  const onWindow = () => {
    if (explicit() === null) apply();
  };
  win.addEventListener?.('resize', onWindow);

  return {
    handle,
    apply,
    measured,
    destroy() {
      clearTimeout(timer);
      win.removeEventListener?.('resize', onWindow);
    },
  };
}
