/**
 * The camera of one view: which part of the layout the drawing shows (the store's `range`,
 * `size` and `fitted`), and how it moves: Fit, zoom, follow the stepping, jump to a node or an
 * edge, keep the scale on a resize. No drawing: it calls the view's `paint` / `requestPaint`.
 *
 * Guarantees: Fit shows the whole graph when legible, else the smallest legible scale centred
 * on the next node; a jump zooms in to at least JUMP_PX_PER_UNIT and waits JUMP_FOLLOW_MS for
 * its target to appear (Python may unfold modules first); a resize keeps a fitted view fitted
 * and a zoomed one at its scale and centre.
 */
import { cameraOf, fitView, projector, rangeAt, rangeOf, zoomAt } from './camera.js';
import { newStep } from './viewstate.js';

/** A jump (search, First NaN/Inf, a memory holder) follows the graph this long: Python may
 * unfold modules to reveal the target, which replaces `_graph` after the reply. */
export const JUMP_FOLLOW_MS = 4000;
/** Zooming to a node or edge shows it at least this many pixels per layout unit: where labels
 * reach their largest font (camera.js MAX_FONT_PX / FONT_PER_UNIT = 19.2); further in only
 * grows the boxes past the view, which leaves them unlabelled. */
export const JUMP_PX_PER_UNIT = 20;

/**
 * What the camera reads and writes of the view's store.
 * @typedef {Pick<import('./viewstate.js').ViewState, 'graph' | 'state' | 'range' | 'size' | 'fitted'>} CameraState
 */

/** @typedef {ReturnType<typeof createViewport>} Viewport the camera of one view */

/**
 * @param {{
 *   store: import('./store.js').Store<CameraState>,
 *   plot: HTMLElement,
 *   height: () => number,
 *   now: () => number,
 *   paint: () => void,
 *   requestPaint: () => void,
 *   shown?: () => boolean,
 * }} ctx `plot`: the drawing's element (its size before the first measure); `height`: the
 *   widget's height trait (the plot's size before a layout); `shown`: the drawing is placed (a
 *   step follows the next node only once it could be seen; always, when absent)
 */
export function createViewport({ store, plot, height, now, paint, requestPaint, shown = () => true }) {
  /** @type {{ kind: 'node' | 'edge', id: string, until: number } | null} */
  let jump = null;
  // stepping you can follow: a step moves the view when the next node was in view before it
  const stop = store.subscribe((next, prev) => {
    if (newStep(next, prev)) keepNextInView(shown() && itemInView(prev.state.next));
  });

  /** The plot's size: measured, else laid out, else guessed from the widget's height. */
  function size() {
    const { size: s } = store.get();
    const w = s.width || plot.clientWidth || 800;
    const hgt = s.height || plot.clientHeight || Math.max(200, (height() || 600) - 140);
    return { width: w, height: hgt };
  }

  /** Where the stepping is: the next node, else the first root. */
  function focusPoint() {
    const { graph, state } = store.get();
    const i = state.next >= 0 ? state.next : graph.root.indexOf(1);
    return i >= 0 && i < graph.n ? { x: graph.x[i], y: graph.y[i] } : null;
  }

  /** Fit for this graph and plot (see fitView): the range, and whether it shows everything. */
  function fitting() {
    const { graph } = store.get();
    return fitView(graph.bounds, size(), { focus: focusPoint(), orientation: graph.orientation });
  }

  /** Show the Fit range. */
  function fit() {
    store.set({ range: fitting().range, fitted: true });
    paint();
  }

  /** Show `next` (a drag, the wheel, the minimap). @param {import('./camera.js').Range} next */
  function move(next) {
    store.set({ range: next, fitted: false });
    requestPaint();
  }

  /** Is item `i`'s box inside the view? @param {number} i */
  function itemInView(i) {
    const { graph, range } = store.get();
    if (!(i >= 0 && i < graph.n)) return false;
    const cam = cameraOf(range, size());
    const { px, py } = projector(cam);
    const hw = ((graph.boxW?.[i] || 2) / 2) * cam.ppu;
    const hh = ((graph.boxH?.[i] || 1.5) / 2) * cam.ppu;
    const x = px(graph.x[i]);
    const y = py(graph.y[i]);
    return x - hw >= cam.area.l && x + hw <= cam.area.l + cam.area.w && y - hh >= cam.area.t && y + hh <= cam.area.t + cam.area.h;
  }

  /** Zoom about the centre of the view. @param {number} k */
  function zoomBy(k) {
    const sz = size();
    const { range } = store.get();
    const cam = cameraOf(range, sz);
    move(zoomAt(range, sz, cam.area.l + cam.area.w / 2, cam.area.t + cam.area.h / 2, k));
  }

  /** Centre the view on (x, y), zoomed in to at least JUMP_PX_PER_UNIT. @param {number} x @param {number} y */
  function zoomTo(x, y) {
    const sz = size();
    store.set({ range: rangeAt(x, y, Math.max(cameraOf(store.get().range, sz).ppu, JUMP_PX_PER_UNIT), sz), fitted: false });
    paint();
  }

  /** Centre the view on (x, y) at the same scale (no paint). @param {number} x @param {number} y */
  function centre(x, y) {
    store.set({ range: rangeAt(x, y, cameraOf(store.get().range, size()).ppu, size()), fitted: false });
  }

  /** Centre on the next node (the "follow" key); false when there is none. */
  function followStep() {
    const p = focusPoint();
    if (!p) return false;
    centre(p.x, p.y);
    paint();
    return true;
  }

  /**
   * Stepping you can follow: call with `watching` (was the next node in view before the step?)
   * once the new state is in the store; when the new next node is out of view, the view moves
   * (same scale) to keep it there.
   * @param {boolean} watching
   */
  function keepNextInView(watching) {
    const { graph, state } = store.get();
    if (watching && state.next >= 0 && !itemInView(state.next)) centre(graph.x[state.next], graph.y[state.next]);
  }

  /**
   * Aim at a node or an edge by id: `applyJump()` zooms there when it is shown, now or when a
   * new graph shows it within JUMP_FOLLOW_MS. @param {'node' | 'edge'} kind @param {string} id
   */
  function aim(kind, id) {
    jump = { kind, id, until: now() + JUMP_FOLLOW_MS };
  }

  /** Zoom to the pending jump target when it is shown; true when done. */
  function applyJump() {
    if (!jump) return false;
    if (now() > jump.until) {
      jump = null;
      return false;
    }
    const { graph } = store.get();
    if (jump.kind === 'node') {
      const i = graph.indexOf.get(jump.id);
      if (i === undefined) return false;
      zoomTo(graph.x[i], graph.y[i]);
      return true;
    }
    const e = graph.edgeIndexOf.get(jump.id);
    if (e === undefined) return false;
    zoomTo(graph.midX[e], graph.midY[e]);
    return true;
  }

  /** Python selected node `id`: zoom there when it is the pending jump's target. @param {string | null} id */
  function selected(id) {
    if (jump?.kind === 'node' && jump.id === id) applyJump();
  }

  /**
   * A new graph is in the store: fit it, unless `keep` (a fold or unfold we asked for: the
   * module opens where its box was) and the view was not showing everything.
   * @param {boolean} keep
   */
  function graphChanged(keep) {
    const refit = fitting();
    if (keep && !(store.get().fitted && refit.whole)) store.set({ fitted: false });
    else store.set({ range: refit.range, fitted: true });
  }

  /**
   * The plot was measured at `w` x `hgt` pixels: a fitted view fits again; a zoomed one keeps
   * its scale and centre (the side panel opening must not shrink it below the legible scale,
   * where labels disappear). False when the size did not change.
   * @param {number} w @param {number} hgt
   */
  function resized(w, hgt) {
    const { size: was, range, fitted } = store.get();
    if (w === was.width && hgt === was.height) return false;
    const now_ = { width: w, height: hgt };
    store.set({ size: now_ });
    if (fitted) store.set({ range: fitting().range });
    else if (was.width > 0 && was.height > 0) {
      const cam = cameraOf(range, was);
      const r = rangeOf(cam);
      store.set({ range: rangeAt((r.x[0] + r.x[1]) / 2, (r.y[0] + r.y[1]) / 2, cam.ppu, now_) });
    }
    return true;
  }

  /** Fit module `path`'s frame in the view (legibly: its start when it is too big). @param {string} path */
  function showFrame(path) {
    const { graph } = store.get();
    const f = graph.frames.find((fr) => fr.path === path);
    if (!f) return;
    store.set({ range: fitView([f.x0, f.x1, f.y0, f.y1], size(), { orientation: graph.orientation }).range, fitted: false });
    paint();
  }

  return { size, fitRange: () => fitting().range, fit, move, itemInView, zoomBy, zoomTo, centreOn: centre, showFrame, followStep, keepNextInView, aim, applyJump, selected, graphChanged, resized, destroy: stop };
}
