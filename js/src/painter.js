/**
 * The drawing of one view: what is painted and when. Owns the "no nodes" note, the drawing's
 * cache (panning and zooming reuse the last drawing), the paints (the canvas, the minimap, the
 * keyboard list), the host's theme and the plot's measured size.
 *
 * Guarantees: nothing is painted before the plot is placed (`ensure`, or the first measure of a
 * non-empty plot), nor after `destroy`; a new step (`viewstate.js` newStep) repaints once at the
 * next animation frame however many states arrive before it (`requestPaint`); a theme change
 * draws again at once; a drawing is built again only when what it is built from changed
 * (graph, state, theme, selection, focus ring, colour mode and its report, highlight).
 */
import { buildDrawing } from './drawing.js';
import { highlightItems } from './focus.js';
import { readTheme, watchTheme } from './theme.js';
import { newStep } from './viewstate.js';

/**
 * @typedef {ReturnType<typeof createPainter>} Painter
 */

/**
 * @param {{
 *   store: import('./store.js').Store<import('./viewstate.js').ViewState>,
 *   root: HTMLElement,
 *   plot: HTMLElement,
 *   empty: HTMLElement,
 *   canvas: ReturnType<typeof import('./canvas.js').createCanvas>,
 *   minimap: ReturnType<typeof import('./minimap.js').createMinimap>,
 *   a11y: ReturnType<typeof import('./a11y.js').createA11y>,
 *   viewport: import('./viewport.js').Viewport,
 *   colors: () => ReturnType<ReturnType<typeof import('./colormodes.js').createColorModes>['drawing']>,
 *   moduleOf: Map<string, string | null>,
 *   schedule: (cb: () => void) => void,
 *   measured: (width: number, height: number) => void,
 * }} ctx `plot`: the drawing's element; `empty`: the note shown for a graph without nodes;
 *   `colors`: the colour mode's part of the drawing (colormodes.js `drawing()`); `moduleOf`: where
 *   a highlighted hidden node is drawn; `measured`: the plot has a new size (sizing.js)
 */
export function createPainter(ctx) {
  const { store, root, plot, canvas, viewport } = ctx;
  const win = root.ownerDocument.defaultView ?? globalThis;
  let plotted = false;
  let destroyed = false;
  let paintPending = false;

  /** @returns {import('./drawing.js').ViewSpec} */
  function currentView() {
    const { graph, range, selected, selectedEdge, highlight } = store.get();
    return { range, size: viewport.size(), selected, selectedEdge, focus: ctx.a11y.focused(), highlight: highlightItems(graph, highlight, ctx.moduleOf), ...ctx.colors() };
  }

  /** The last drawing and what it was built from: panning and zooming reuse it. */
  /** @type {{ key: unknown[], drawing: import('./drawing.js').Drawing } | null} */
  let built = null;
  function drawingNow() {
    const { graph, state, theme } = store.get();
    const view = currentView();
    const key = [graph, state, theme, view.selected, view.selectedEdge, view.focus, view.colorMode, view.memory, view.sensitivity, view.gain, ...(view.highlight ?? [])];
    if (!built || built.key.length !== key.length || built.key.some((k, j) => k !== key[j])) built = { key, drawing: buildDrawing(graph, state, theme, view) };
    return built.drawing;
  }

  /** Full draw: creation, a new `_graph`, a theme change. */
  function draw() {
    if (destroyed) return;
    ctx.empty.hidden = store.get().graph.n > 0;
    if (canvas.el.parentNode !== plot) plot.append(canvas.el);
    plotted = true;
    paint();
  }

  /** Repaint the canvas for the view range: edges, boxes, marks, labels; and the minimap. */
  function paint() {
    if (!plotted || destroyed) return;
    const { graph, state, theme, range } = store.get();
    canvas.paint(graph, state, drawingNow(), range, viewport.size());
    ctx.minimap.update(graph, range, { edge: theme.idleEdge, node: theme.fontMuted, frame: theme.pending, bg: '' });
    ctx.a11y.refresh();
  }

  /** Paint at the next animation frame, once however many changes (states of a run, pointer
   * moves) arrive before it; it paints what is current then. */
  function requestPaint() {
    if (paintPending || !plotted || destroyed) return;
    paintPending = true;
    ctx.schedule(() => {
      paintPending = false;
      paint();
    });
  }

  /** Place the plot and draw, once (where the plot cannot be measured: no ResizeObserver). */
  function ensure() {
    if (plotted || destroyed) return;
    draw();
  }

  const stop = store.subscribe((next, prev) => {
    if (newStep(next, prev)) requestPaint();
    if (next.theme !== prev.theme && plotted) draw();
  });

  // ---- theme and size --------------------------------------------------------------------------
  const stopTheme = watchTheme(root, () => {
    const next = readTheme(root);
    if (JSON.stringify(next) !== JSON.stringify(store.get().theme)) store.set({ theme: next });
  });

  /** @type {ResizeObserver | null} */
  let resizer = null;
  const RO = /** @type {{ ResizeObserver?: typeof ResizeObserver }} */ (win).ResizeObserver;

  /** Start measuring the plot (it is in the document now); without a ResizeObserver, draw at once. */
  function observe() {
    if (typeof RO !== 'function') {
      ensure();
      return;
    }
    resizer = new RO(() => {
      const w = Math.floor(plot.clientWidth);
      const hgt = Math.floor(plot.clientHeight);
      if (w <= 0 || hgt <= 0 || !viewport.resized(w, hgt)) return;
      ctx.measured(w, hgt); // Python fits the folds to the drawing's new size
      if (!plotted) {
        store.set({ theme: readTheme(root) }); // now attached: the host's variables are visible
        ensure();
      } else {
        paint();
      }
    });
    resizer.observe(plot);
  }

  return {
    draw,
    paint,
    requestPaint,
    observe,
    /** Whether the plot is placed (and painted since). */
    plotted: () => plotted,
    destroy() {
      destroyed = true;
      stop();
      stopTheme();
      resizer?.disconnect();
    },
  };
}
