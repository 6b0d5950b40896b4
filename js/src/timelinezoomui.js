/**
 * The timeline's zoom and pan in time, on the page (timeline.js): the wheel zooms about the
 * pointer (ctrl+wheel and a trackpad's pinch too), shift+wheel, a sideways wheel and a drag pan,
 * the keys + and - zoom, Shift+Left / Shift+Right pan, 0 (or the "Whole run" button, or a
 * double-click) goes back to the whole run; the bar says which steps are shown.
 *
 * Thin: the span arithmetic, the reply's decoding and the columns are timelinezoom.js's. A
 * change paints at once from the columns held (`sliceView`), then asks Python for the steps
 * shown at the canvas's width ("timeline_range"), `DEBOUNCE_MS` after the last wheel notch or
 * drag move; a reply to an older request is dropped (the latest request wins: latest.js).
 * A banded trait with fewer than half as many columns as the canvas has pixels is refined after
 * a paint at a new width (`sized`): the whole run is asked at the canvas's width (the trait's bands come from a
 * coarser summary level).
 * Guarantees: nothing is asked for a run whose trait holds every watched step, nor on a page with
 * no kernel (`live` false: the held columns are stretched); a click that ended a drag selects
 * nothing (`dragged`).
 */
import { domHelpers } from './dom.js';
import { latestReply } from './latest.js';
import { MSG } from './protocol.js';
import { DEBOUNCE_MS, ZOOM_KEY, binsFor, clampSpan, decodeRange, isWhole, panSpan, sliceView, spanFraction, spanText, wholeSpan, wholeView, zoomSpan } from './timelinezoom.js';

/**
 * @typedef {import('./timelinezoom.js').View} View
 * @typedef {import('./timelinezoom.js').Span} Span
 * @typedef {{ nSteps: number, watched: Int32Array, values: Float32Array, valuesMin: Float32Array | null, columns: Int32Array | null, rows: { id: string[] } }} ZoomData
 */

/**
 * The zoom of a timeline's `canvas`.
 * @param {Document} doc
 * @param {{
 *   canvas: HTMLCanvasElement,
 *   request: (msg: { type: string, [k: string]: unknown }) => Promise<unknown>,
 *   live: boolean,
 *   data: () => ZoomData | null,
 *   watched: () => Int32Array,
 *   anchor: () => number,
 *   changed: () => void,
 *   error: (message: string) => void,
 * }} ctx `watched`: the run's watched steps; `anchor`: where + and - zoom (0..1 of the width);
 *   `changed`: repaint
 * @returns {{ view: () => View, exact: () => boolean, reset: () => void, setSpan: (span: Span) => void, sized: (width: number) => void, zoom: (factor: number, at?: number) => void, pan: (fraction: number) => void, dragged: () => boolean, bar: HTMLElement, destroy: () => void }}
 */
export function createZoom(doc, ctx) {
  const { h, button } = domHelpers(doc);
  const { canvas } = ctx;
  const ranges = latestReply(ctx.request);
  const refine = latestReply(ctx.request);
  /** @type {View | null} */
  let whole = null;
  /** @type {View | null} */
  let view = null;
  /** the view shown is what Python answered for its span (or the trait's own) */
  let exact = true;
  /** @type {ReturnType<typeof setTimeout> | null} */
  let timer = null;
  let drag = /** @type {{ x: number, span: Span, moved: boolean } | null} */ (null);
  let wasDrag = false;

  const wholeBtn = button('Whole run', 'Show the whole run again (key 0, or double-click the grid)', 'agw-button agw-tl-whole');
  const label = h('span', { class: 'agw-tl-span', style: 'font-size:12px;opacity:0.85;font-variant-numeric:tabular-nums' });
  const bar = h('span', { class: 'agw-tl-zoom', title: 'Zoom in time: the wheel or + and -; pan: drag, shift+wheel or Shift+arrows; 0: the whole run', style: 'display:inline-flex;align-items:center;gap:6px;margin-left:8px' }, label, wholeBtn);

  const wholeOf = () => {
    const d = ctx.data();
    if (!d) return null;
    whole ??= wholeView(d);
    return whole;
  };
  const current = () => view ?? wholeOf();
  const nRows = () => ctx.data()?.rows.id.length ?? 0;

  /** Say which steps are shown and repaint (`repaint` false: while the timeline is being built). */
  function show(repaint = true) {
    const v = current();
    const d = ctx.data();
    wholeBtn.disabled = !v || v.whole;
    label.textContent = v && d ? spanText(v, d.nSteps) : '';
    canvas.dataset.span = v ? `${v.start}-${v.stop}` : '';
    canvas.dataset.exact = exact ? '1' : '0';
    if (repaint) ctx.changed();
  }

  function cancel() {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    ranges.drop();
  }

  /** Ask Python for the columns of `want` at the canvas's width; `got` takes the decoded reply.
   * @param {import('./latest.js').Latest<any, unknown>} channel @param {Span} want @param {() => boolean} still @param {(v: View) => void} got */
  function ask(channel, want, still, got) {
    const d = ctx.data();
    if (!d) return;
    const full = wholeSpan(d);
    canvas.dataset.rangeAsked = String(Number(canvas.dataset.rangeAsked || 0) + 1);
    channel.ask({ type: MSG.TIMELINE_RANGE, start: want.start, stop: want.stop, bins: binsFor(canvas.clientWidth || 640) }, {
      still,
      reply: (reply) => {
        const dd = ctx.data();
        const v = dd ? decodeRange(reply, dd.rows.id, ctx.watched(), full) : null;
        if (!v || v.start !== want.start || v.stop !== want.stop) return ctx.error('the kernel sent a malformed range of steps');
        got(v);
        show();
      },
      error: (msg) => ctx.error(`could not read steps ${want.start}–${want.stop - 1}: ${msg}`),
    });
  }

  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let refineTimer;
  /** the width (columns) the whole run was last asked at */
  let refinedAt = 0;
  /** The canvas painted `width` CSS px wide: ask for the whole run at that width when the
   * trait's bands are fewer than half its pixels. @param {number} width */
  function sized(width) {
    const d = ctx.data();
    const bins = binsFor(width);
    if (!d || !ctx.live || !d.columns || refinedAt === bins || d.watched.length >= bins / 2) return;
    refinedAt = bins;
    clearTimeout(refineTimer);
    refineTimer = setTimeout(() => {
      const full = wholeSpan(d);
      ask(refine, full, () => ctx.data() === d, (v) => {
        whole = v;
      });
    }, DEBOUNCE_MS);
  }

  /** Show the steps of `span`: the columns held at once, Python's columns when they come. @param {Span} span */
  function setSpan(span) {
    const w = wholeOf();
    const d = ctx.data();
    if (!w || !d) return;
    const full = wholeSpan(d);
    const s = clampSpan(span, full);
    const v = current();
    if (v && s.start === v.start && s.stop === v.stop) return;
    cancel();
    if (isWhole(s, full)) {
      view = null;
      exact = true;
      return show();
    }
    // the held columns: the shown ones when they are Python's and cover the span (finer), else the whole run's
    const base = v && exact && !v.whole && v.start <= s.start && v.stop >= s.stop ? v : w;
    view = sliceView(base, nRows(), s, full);
    exact = !w.banded; // a trait of every watched step holds every column there is
    show();
    if (exact || !ctx.live) return;
    timer = setTimeout(() => {
      timer = null;
      ask(ranges, s, () => view !== null && view.start === s.start && view.stop === s.stop, (got) => {
        view = got;
        exact = true;
      });
    }, DEBOUNCE_MS);
  }

  const span = () => /** @type {View} */ (current());
  const fullSpan = () => wholeSpan(/** @type {ZoomData} */ (ctx.data()));
  /** @param {number} factor > 1 in @param {number} [at] 0..1 of the width */
  const zoom = (factor, at = ctx.anchor()) => {
    if (ctx.data()) setSpan(zoomSpan(span(), fullSpan(), factor, at));
  };
  /** @param {number} fraction of the span's width (negative: earlier) */
  const pan = (fraction) => {
    if (!ctx.data()) return;
    const v = span();
    setSpan(panSpan(v, fullSpan(), fraction * (v.stop - v.start)));
  };
  const widthPx = () => canvas.clientWidth || canvas.getBoundingClientRect().width || 1;

  /** @param {WheelEvent} ev */
  const onWheel = (ev) => {
    const v = current();
    if (!v) return;
    const unit = ev.deltaMode === 1 ? 16 : ev.deltaMode === 2 ? 400 : 1;
    const dx = ev.deltaX * unit;
    const dy = ev.deltaY * unit;
    const sideways = ev.shiftKey || Math.abs(dx) > Math.abs(dy);
    if (v.whole && (sideways || dy > 0)) return; // nothing to pan or to zoom out: the page scrolls
    ev.preventDefault();
    if (sideways) return pan((dx || dy) / widthPx());
    const rect = canvas.getBoundingClientRect();
    zoom(Math.exp(-dy * (ev.ctrlKey ? 0.01 : 0.002)), spanFraction(v, (ev.clientX - rect.left) / Math.max(1, rect.width)));
  };
  /** @param {PointerEvent} ev */
  const onDown = (ev) => {
    const v = current();
    wasDrag = false;
    if (ev.button !== 0 || !v || v.whole) return;
    drag = { x: ev.clientX, span: { start: v.start, stop: v.stop }, moved: false };
  };
  /** @param {PointerEvent} ev */
  const onMove = (ev) => {
    if (!drag || !(ev.buttons & 1)) return;
    const dx = ev.clientX - drag.x;
    if (!drag.moved && Math.abs(dx) < 4) return;
    if (!drag.moved) canvas.setPointerCapture?.(ev.pointerId);
    drag.moved = true;
    const width = drag.span.stop - drag.span.start;
    setSpan(panSpan(drag.span, fullSpan(), (-dx / widthPx()) * width));
  };
  const onUp = () => {
    wasDrag = !!drag?.moved;
    drag = null;
  };
  const onDbl = () => setSpan(fullSpan());
  /** @param {KeyboardEvent} ev */
  const onKey = (ev) => {
    if (!ctx.data() || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    /** @type {Record<string, () => void>} */
    const keys = { '+': () => zoom(ZOOM_KEY), '=': () => zoom(ZOOM_KEY), '-': () => zoom(1 / ZOOM_KEY), _: () => zoom(1 / ZOOM_KEY), 0: () => setSpan(fullSpan()) };
    const act = ev.shiftKey && ev.key === 'ArrowLeft' ? () => pan(-0.1) : ev.shiftKey && ev.key === 'ArrowRight' ? () => pan(0.1) : keys[ev.key];
    if (!act) return;
    ev.preventDefault();
    ev.stopImmediatePropagation(); // the timeline's own keys (registered after) do not move the cell
    act();
  };
  wholeBtn.addEventListener('click', onDbl);
  /** @type {[string, (ev: any) => void, AddEventListenerOptions?][]} */
  const listeners = [['wheel', onWheel, { passive: false }], ['pointerdown', onDown], ['pointermove', onMove], ['pointerup', onUp], ['dblclick', onDbl], ['keydown', onKey]];
  for (const [ev, cb, opt] of listeners) canvas.addEventListener(ev, cb, opt);
  show(false);
  return {
    view: () => /** @type {View} */ (current()),
    exact: () => exact,
    reset() {
      cancel();
      refine.drop();
      clearTimeout(refineTimer);
      refinedAt = 0;
      whole = null;
      view = null;
      exact = true;
      show();
    },
    setSpan,
    sized,
    zoom,
    pan,
    dragged: () => wasDrag,
    bar,
    destroy() {
      cancel();
      refine.drop();
      clearTimeout(refineTimer);
      for (const [ev, cb] of listeners) canvas.removeEventListener(ev, cb);
    },
  };
}
