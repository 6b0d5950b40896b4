// @ts-check
// The widget's view mounted on a fake anywidget model, for the view tests (view_*.test.js,
// sensitivity.test.js), and the helpers that read the canvas drawing back and drive it with
// pointer events. jsdom has no 2D canvas: setup.js gives every canvas a recording context whose
// `measureText` is labelplace.js's estimate, so the canvas places its labels as it would in a
// browser with that font, and `canvas.agwPainted` says what was painted (canvas.js).
import { afterEach, beforeEach, expect, vi } from 'vitest';

import widget from '../src/index.js';
import { decodeGraph } from '../src/model.js';
import { FakeModel, boxGraph, boxState } from './fixtures.js';

/** The model each mounted element shows (for helpers that need the graph). */
const modelOf = new WeakMap();

/**
 * The hooks every view test file needs: a clean document before each test, synchronous drawing
 * (the view coalesces redraws per animation frame in browsers: `requestAnimationFrame` is
 * removed, so it paints at once and hover waits one zero-delay timer), real timers after each
 * test. Call once at the top level of the test file.
 */
export function useViewTestHooks() {
  beforeEach(() => {
    document.body.innerHTML = '';
    window.requestAnimationFrame = undefined;
  });
  afterEach(() => {
    vi.useRealTimers();
  });
}

/** Wait for promises and zero-delay timers. */
export const flush = () => new Promise((r) => setTimeout(r, 0));

/**
 * Render the widget into a fresh element of the document, on a model holding `values` (the
 * traits: `_graph`, `_state`, ...).
 * @param {Record<string, any>} values
 */
export function mountView(values) {
  const model = new FakeModel(values);
  const el = document.createElement('div');
  document.body.append(el);
  const cleanup = widget.render({ model, el });
  modelOf.set(el, model);
  const q = (sel) => el.querySelector(sel);
  const button = (name) => [...el.querySelectorAll('button')].find((b) => b.textContent === name || b.getAttribute('aria-label') === name);
  const gd = () => q('.agw-plot');
  const sent = (type) => model.sent.filter((m) => m.type === type);
  /** Answer the last request of that type, as the kernel does. */
  const reply = (type, data) => {
    const req = sent(type).at(-1);
    model.receive({ type: 'reply', request: req.request, data });
  };
  const inspector = () => q('section[aria-label="Inspector"]');
  return { model, el, cleanup, q, button, gd, sent, reply, inspector };
}

/** The view of the folded classifier (fixtures.js `boxes`) after `done` steps. */
export function mountBoxes(done = 0, extra = {}) {
  return mountView({ _graph: boxGraph(), _state: boxState(done), selected_edge: null, show_plumbing: true, ...extra });
}

// ---- the canvas -----------------------------------------------------------------------------

/** The view's drawing canvas. @param {Element} el */
export function canvasOf(el) {
  const c = el.querySelector('.agw-canvas');
  expect(c, 'the view has no .agw-canvas').not.toBeNull();
  return /** @type {HTMLCanvasElement & { agwPainted: any }} */ (c);
}

/** What the last paint showed (`canvas.agwPainted`). @param {Element} el */
export function painted(el) {
  const p = canvasOf(el).agwPainted;
  expect(p, 'the canvas was never painted').toBeTruthy();
  return p;
}

/** How many times the canvas painted. @param {Element} el */
export const paints = (el) => Number(canvasOf(el).dataset.painted || 0);

/** The painted box of item `index` (a node or a folded box, not a leaf copy), or undefined. */
export function itemBox(el, index) {
  return painted(el).items.find((b) => b.index === index && b.kind !== 'copy');
}

/** The painted label (line 0 unless `line`) of item `index`, or undefined. */
export function labelOf(el, index, line = 0) {
  return painted(el).labels.find((l) => l.kind !== 'edge' && l.kind !== 'frame' && l.kind !== 'copy' && l.index === index && l.line === line);
}

/** The painted value label of edge `e`, or undefined. */
export function edgeLabelOf(el, e) {
  return painted(el).labels.find((l) => l.kind === 'edge' && l.index === e);
}

/** Canvas px to page coordinates. @param {Element} el @param {number} x @param {number} y */
function toClient(el, x, y) {
  const r = canvasOf(el).getBoundingClientRect();
  return { clientX: r.left + x, clientY: r.top + y };
}

/** The centre (canvas px) of item `index`'s painted box. */
export function itemCentre(el, index) {
  const b = itemBox(el, index);
  expect(b, `item ${index} is not in view`).toBeTruthy();
  return [b.x + b.w / 2, b.y + b.h / 2];
}

/**
 * A point (canvas px) on edge `e`'s polyline, clear of every painted box (3 px around it): the
 * label anchor (the middle of the path) when it is clear, else the clear point of the path
 * nearest to it. The graph is the mounted model's `_graph`.
 */
export function edgePoint(el, e) {
  const p = painted(el);
  const g = decodeGraph(modelOf.get(el).get('_graph'));
  const clear = ([x, y]) => !p.items.some((b) => x >= b.x - 3 && x <= b.x + b.w + 3 && y >= b.y - 3 && y <= b.y + b.h + 3);
  const mid = p.edgeMid(e);
  if (clear(mid)) return mid;
  /** @type {[number, number][]} */
  const pts = [];
  for (let k = g.pathPtr[e]; k + 1 < g.pathPtr[e + 1]; k++) {
    if (Number.isNaN(g.pathX[k]) || Number.isNaN(g.pathX[k + 1])) continue;
    const [x0, y0] = p.toPx(g.pathX[k], g.pathY[k]);
    const [x1, y1] = p.toPx(g.pathX[k + 1], g.pathY[k + 1]);
    for (let t = 0; t <= 1; t += 1 / 64) pts.push([x0 + t * (x1 - x0), y0 + t * (y1 - y0)]);
  }
  const free = pts.filter(clear).sort((a, b) => Math.hypot(a[0] - mid[0], a[1] - mid[1]) - Math.hypot(b[0] - mid[0], b[1] - mid[1]));
  expect(free.length, `edge ${e} runs inside boxes only`).toBeGreaterThan(0);
  return free[0];
}

/** Pointer event of `type` at canvas px (x, y). jsdom has no PointerEvent: a MouseEvent named so. */
export function pointer(el, type, x, y, extra = {}) {
  const c = canvasOf(el);
  c.dispatchEvent(new MouseEvent(type, { bubbles: true, cancelable: true, button: 0, ...toClient(el, x, y), ...extra }));
}

/** A click (press and release without moving) at canvas px (x, y); `extra`: e.g. `{ shiftKey: true }`. */
export function clickAt(el, x, y, extra = {}) {
  pointer(el, 'pointerdown', x, y, extra);
  pointer(el, 'pointerup', x, y, extra);
}

/** Click item `index` (a node or a folded box) at its painted centre. */
export function clickItem(el, index, extra = {}) {
  const [x, y] = itemCentre(el, index);
  clickAt(el, x, y, extra);
}

/** Click edge `e` on its polyline. */
export function clickEdge(el, e, extra = {}) {
  const [x, y] = edgePoint(el, e);
  clickAt(el, x, y, extra);
}

/** Move the pointer to canvas px (x, y) and wait for the hover (rAF-throttled; a timer in jsdom). */
export async function hoverAt(el, x, y) {
  pointer(el, 'pointermove', x, y);
  await flush();
}

/** Hover item `index` at its painted centre. */
export const hoverItem = (el, index) => hoverAt(el, ...itemCentre(el, index));

/** Hover edge `e` on its polyline. */
export const hoverEdge = (el, e) => hoverAt(el, ...edgePoint(el, e));

/** The pointer leaves the canvas: the hover card goes. */
export function leave(el) {
  canvasOf(el).dispatchEvent(new MouseEvent('mouseleave', { bubbles: false }));
}

/** Drag from canvas px (x0, y0) by (dx, dy). */
export function drag(el, x0, y0, dx, dy) {
  pointer(el, 'pointerdown', x0, y0);
  pointer(el, 'pointermove', x0 + dx / 2, y0 + dy / 2);
  pointer(el, 'pointermove', x0 + dx, y0 + dy);
  pointer(el, 'pointerup', x0 + dx, y0 + dy);
}

/** A wheel turn at canvas px (x, y): `deltaY` < 0 zooms in. */
export function wheel(el, x, y, deltaY) {
  canvasOf(el).dispatchEvent(new WheelEvent('wheel', { bubbles: true, cancelable: true, deltaY, deltaMode: 0, ...toClient(el, x, y) }));
}

/** The centre of the painted view range, layout units. */
export function rangeCentre(el) {
  const { range } = painted(el);
  return [(range.x[0] + range.x[1]) / 2, (range.y[0] + range.y[1]) / 2];
}

/**
 * The stroke colours of the canvas's last paint (recorded context ops after its last
 * `setTransform`, which every paint starts with).
 */
export function lastStrokes(el) {
  const ops = canvasOf(el).__ctx.ops;
  let from = 0;
  ops.forEach((o, k) => {
    if (o[0] === 'setTransform') from = k;
  });
  const out = new Set();
  let style = '';
  for (const o of ops.slice(from)) {
    if (o[0] === 'set' && o[1] === 'strokeStyle') style = o[2];
    if (o[0] === 'stroke') out.add(style);
  }
  return out;
}

/** The fill colours of the canvas's last paint, in order. */
export function lastFills(el) {
  const ops = canvasOf(el).__ctx.ops;
  let from = 0;
  ops.forEach((o, k) => {
    if (o[0] === 'setTransform') from = k;
  });
  const out = [];
  let style = '';
  for (const o of ops.slice(from)) {
    if (o[0] === 'set' && o[1] === 'fillStyle') style = o[2];
    if (o[0] === 'fill' || o[0] === 'fillRect') out.push(style);
  }
  return out;
}

/**
 * The fill colour item `index`'s box was painted with in the last paint: the `fillStyle` set
 * after the box's own path (a `roundRect`/`rect` at exactly its painted box), from the recorded
 * context ops.
 */
export function fillOf(el, index) {
  const b = itemBox(el, index);
  expect(b, `item ${index} is not in view`).toBeTruthy();
  const ops = canvasOf(el).__ctx.ops;
  let from = 0;
  ops.forEach((o, k) => {
    if (o[0] === 'setTransform') from = k;
  });
  const at = ops.findIndex((o, k) => k >= from && (o[0] === 'roundRect' || o[0] === 'rect') && o[1] === b.x && o[2] === b.y && o[3] === b.w && o[4] === b.h);
  expect(at, `item ${index}'s box was not painted`).toBeGreaterThanOrEqual(0);
  const set = ops.slice(at).find((o) => o[0] === 'set' && o[1] === 'fillStyle');
  return set?.[2];
}
