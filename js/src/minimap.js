/**
 * The minimap: a small canvas in a corner of the plot showing the whole layout (module frames,
 * edges as thin lines, items as dots) and the rectangle the plot shows now. It appears only while
 * the drawing exceeds the view; a click or a drag on it centres the view there (same zoom).
 *
 * The geometry (world <-> minimap pixels, the view rectangle, a click -> the new axis ranges) is
 * pure and tested; `createMinimap` owns the DOM: a canvas painted once per graph/theme and a
 * positioned <div> for the view rectangle, so following a zoom or a step costs no repaint.
 */

/** Largest minimap, CSS pixels; the drawing's aspect ratio decides the actual box inside it. */
export const MINIMAP_MAX = Object.freeze({ width: 180, height: 120 });
/** Padding inside the minimap around the drawing, pixels. */
export const MINIMAP_PAD = 6;
/** The drawing "exceeds" the view when it sticks out by more than this fraction of the view. */
export const EXCEED_TOLERANCE = 0.01;

/**
 * @typedef {{ x: [number, number], y: [number, number] }} Range axis ranges, layout units
 * @typedef {[number, number, number, number]} Bounds xmin, xmax, ymin, ymax
 * @typedef {object} MiniTransform
 * @property {number} width minimap width, pixels
 * @property {number} height
 * @property {number} k pixels per layout unit
 * @property {(x: number) => number} px layout x -> minimap x
 * @property {(y: number) => number} py layout y -> minimap y (y grows upwards in the layout)
 * @property {(px: number) => number} wx minimap x -> layout x
 * @property {(py: number) => number} wy minimap y -> layout y
 */

/**
 * The minimap's size and transform for a drawing's bounds: the aspect ratio is kept, the longer
 * side fills `max` (less the padding), the drawing is centred.
 * @param {Bounds} bounds
 * @param {{ width: number, height: number }} [max]
 * @returns {MiniTransform}
 */
export function minimapTransform(bounds, max = MINIMAP_MAX) {
  const [x0, x1, y0, y1] = bounds;
  const bw = Math.max(x1 - x0, 1e-9);
  const bh = Math.max(y1 - y0, 1e-9);
  const iw = Math.max(1, max.width - 2 * MINIMAP_PAD);
  const ih = Math.max(1, max.height - 2 * MINIMAP_PAD);
  // a flat drawing (one row) still gets a few pixels of height
  const k = Math.min(iw / bw, ih / bh);
  const width = Math.round(Math.min(max.width, Math.max(40, bw * k + 2 * MINIMAP_PAD)));
  const height = Math.round(Math.min(max.height, Math.max(24, bh * k + 2 * MINIMAP_PAD)));
  const ox = (width - bw * k) / 2;
  const oy = (height - bh * k) / 2;
  return {
    width,
    height,
    k,
    px: (x) => ox + (x - x0) * k,
    py: (y) => oy + (y1 - y) * k,
    wx: (p) => x0 + (p - ox) / k,
    wy: (p) => y1 - (p - oy) / k,
  };
}

/**
 * The view rectangle in minimap pixels, clipped to the minimap.
 * @param {Range} range @param {MiniTransform} t
 * @returns {{ left: number, top: number, width: number, height: number }}
 */
export function viewRect(range, t) {
  const a = Math.max(0, Math.min(t.width, t.px(range.x[0])));
  const b = Math.max(0, Math.min(t.width, t.px(range.x[1])));
  const c = Math.max(0, Math.min(t.height, t.py(range.y[1])));
  const d = Math.max(0, Math.min(t.height, t.py(range.y[0])));
  return { left: Math.min(a, b), top: Math.min(c, d), width: Math.abs(b - a), height: Math.abs(d - c) };
}

/**
 * True when part of the drawing lies outside the view range (beyond a small tolerance): then the
 * minimap is worth showing. An empty drawing never exceeds.
 * @param {Bounds} bounds @param {Range} range
 */
export function exceedsView(bounds, range) {
  const [x0, x1, y0, y1] = bounds;
  if (![x0, x1, y0, y1].every(Number.isFinite) || (x0 === 0 && x1 === 0 && y0 === 0 && y1 === 0)) return false;
  const tx = EXCEED_TOLERANCE * Math.abs(range.x[1] - range.x[0]);
  const ty = EXCEED_TOLERANCE * Math.abs(range.y[1] - range.y[0]);
  const [rx0, rx1] = [Math.min(...range.x), Math.max(...range.x)];
  const [ry0, ry1] = [Math.min(...range.y), Math.max(...range.y)];
  return x0 < rx0 - tx || x1 > rx1 + tx || y0 < ry0 - ty || y1 > ry1 + ty;
}

/**
 * The range of the same size as `range`, centred on (x, y).
 * @param {Range} range @param {number} x @param {number} y
 * @returns {Range}
 */
export function centredRange(range, x, y) {
  const hw = (range.x[1] - range.x[0]) / 2;
  const hh = (range.y[1] - range.y[0]) / 2;
  return { x: [x - hw, x + hw], y: [y - hh, y + hh] };
}

/**
 * Where a click at minimap pixel (mx, my) takes the view: centred there, zoom unchanged. With
 * `bounds`, the centre stays on the drawing (a click in the minimap's margin, beside a narrow
 * drawing, does not centre the view on nothing).
 * @param {Range} range @param {MiniTransform} t @param {number} mx @param {number} my
 * @param {Bounds} [bounds]
 * @returns {Range}
 */
export function jumpRange(range, t, mx, my, bounds) {
  let x = t.wx(mx);
  let y = t.wy(my);
  if (bounds) {
    x = Math.max(bounds[0], Math.min(bounds[1], x));
    y = Math.max(bounds[2], Math.min(bounds[3], y));
  }
  return centredRange(range, x, y);
}

/**
 * @typedef {object} MiniScene what the minimap paints, in layout units (a decoded Graph is one)
 * @property {Bounds} bounds
 * @property {ArrayLike<number>} x item x
 * @property {ArrayLike<number>} y
 * @property {ArrayLike<number>} pathX edge polylines (the graph's, NaN-free, indexed by pathPtr)
 * @property {ArrayLike<number>} pathY
 * @property {ArrayLike<number>} pathPtr
 * @property {{ x0: number, x1: number, y0: number, y1: number }[]} [frames]
 * @property {ArrayLike<number> | null} isBox
 */

/**
 * The minimap element. `update(scene, range, colors)` shows or hides it and moves the view
 * rectangle (repainting the drawing only when `scene` or the colours changed); `jump(range)` is
 * called on click and while dragging.
 * @param {Document} doc
 * @param {{ jump: (range: Range) => void }} opts
 */
export function createMinimap(doc, { jump }) {
  const el = doc.createElement('div');
  el.className = 'agw-minimap';
  el.hidden = true;
  el.setAttribute('role', 'img');
  el.setAttribute('aria-label', 'Overview of the whole graph: click or drag to move the view');
  el.title = 'Overview: click or drag to move the view';
  const canvas = /** @type {HTMLCanvasElement} */ (doc.createElement('canvas'));
  canvas.className = 'agw-minimap-canvas';
  const rect = doc.createElement('div');
  rect.className = 'agw-minimap-view';
  el.append(canvas, rect);
  const win = doc.defaultView ?? globalThis;

  /** @type {MiniScene | null} */
  let painted = null;
  let paintedColors = '';
  /** @type {MiniTransform | null} */
  let t = null;
  /** @type {Range | null} */
  let range = null;
  let dragging = false;

  /**
   * @param {MiniScene} scene @param {Range} at the view range
   * @param {{ edge: string, node: string, frame: string, bg: string }} colors
   */
  function update(scene, at, colors) {
    range = at;
    const show = exceedsView(scene.bounds, at);
    el.hidden = !show;
    if (!show) return;
    const key = JSON.stringify(colors);
    if (scene !== painted || key !== paintedColors || !t) {
      t = minimapTransform(scene.bounds);
      paint(scene, t, colors);
      painted = scene;
      paintedColors = key;
    }
    const r = viewRect(at, t);
    rect.style.left = `${r.left}px`;
    rect.style.top = `${r.top}px`;
    rect.style.width = `${Math.max(2, r.width)}px`;
    rect.style.height = `${Math.max(2, r.height)}px`;
  }

  /** @param {MiniScene} scene @param {MiniTransform} tr @param {{ edge: string, node: string, frame: string, bg: string }} colors */
  function paint(scene, tr, colors) {
    el.style.width = `${tr.width}px`;
    el.style.height = `${tr.height}px`;
    const dpr = win.devicePixelRatio || 1;
    canvas.width = Math.round(tr.width * dpr);
    canvas.height = Math.round(tr.height * dpr);
    canvas.style.width = `${tr.width}px`;
    canvas.style.height = `${tr.height}px`;
    const ctx = canvas.getContext?.('2d');
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, tr.width, tr.height);
    ctx.lineWidth = 1;
    ctx.strokeStyle = colors.frame;
    for (const f of scene.frames ?? []) {
      const x = tr.px(f.x0);
      const y = tr.py(f.y1);
      ctx.strokeRect(x, y, Math.max(1, tr.px(f.x1) - x), Math.max(1, tr.py(f.y0) - y));
    }
    const { pathX, pathY, pathPtr } = scene;
    ctx.strokeStyle = colors.edge;
    ctx.lineWidth = 0.6;
    ctx.beginPath();
    for (let e = 0; e + 1 < pathPtr.length; e++) {
      let open = false;
      for (let k = pathPtr[e]; k < pathPtr[e + 1]; k++) {
        const x = pathX[k];
        const y = pathY[k];
        if (Number.isNaN(x) || Number.isNaN(y)) {
          open = false;
          continue;
        }
        if (open) ctx.lineTo(tr.px(x), tr.py(y));
        else ctx.moveTo(tr.px(x), tr.py(y));
        open = true;
      }
    }
    ctx.stroke();
    ctx.fillStyle = colors.node;
    const d = scene.x.length > 2000 ? 1 : 2;
    for (let i = 0; i < scene.x.length; i++) {
      const s = scene.isBox?.[i] ? 2 * d : d;
      ctx.fillRect(tr.px(scene.x[i]) - s / 2, tr.py(scene.y[i]) - s / 2, s, s);
    }
  }

  /** @param {PointerEvent | MouseEvent} ev */
  function go(ev) {
    if (!t || !range) return;
    const box = el.getBoundingClientRect();
    const next = jumpRange(range, t, ev.clientX - box.left, ev.clientY - box.top, painted?.bounds);
    range = next;
    jump(next);
  }
  /** @param {PointerEvent} ev */
  const down = (ev) => {
    if (ev.button !== undefined && ev.button !== 0) return;
    ev.preventDefault();
    ev.stopPropagation();
    dragging = true;
    try {
      el.setPointerCapture?.(ev.pointerId); // the drag goes on outside the minimap
    } catch {
      // a synthetic event has no active pointer: the drag then ends at the minimap's edge
    }
    go(ev);
  };
  /** @param {PointerEvent} ev */
  const move = (ev) => {
    if (!dragging) return;
    ev.preventDefault();
    go(ev);
  };
  const up = () => {
    dragging = false;
  };
  el.addEventListener('pointerdown', down);
  el.addEventListener('pointermove', move);
  el.addEventListener('pointerup', up);
  el.addEventListener('pointercancel', up);
  // the drawing must not see the press (it would start a pan under the minimap)
  el.addEventListener('mousedown', (ev) => ev.stopPropagation());

  return {
    el,
    update,
    /** The transform in use (null before the first shown update). */
    transform: () => t,
    destroy() {
      el.remove();
    },
  };
}
