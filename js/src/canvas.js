/**
 * The drawing's one canvas: paints a `Drawing` (drawing.js) through a camera (camera.js), places
 * and paints every label (labelplace.js), and owns the gestures (wheel zoom about the pointer,
 * drag to pan, click, hover, double-click to Fit). No plotly: painting 10k items is one pass
 * over plain arrays, and only what is in view is stroked or labelled.
 *
 * What was painted is kept on the element as `el.agwPainted` (`{ ppu, font, labels, items }`,
 * label boxes in CSS px of the canvas): the browser tests read it back to check that every
 * visible item is labelled, legibly, without overlaps.
 */
import { LEGIBLE_PX, cameraOf, fontPx, panBy, projector, rangeOf, zoomAt } from './camera.js';
import { RectGrid, edgeLabels, estimateWidth, frameLabels, itemLabels } from './labelplace.js';
import { arrowIntoBox, paintGlyphs, tracePath } from './paintstyle.js';
import { HIGHLIGHT_COLOR, NEXT_COLOR, RAN_COLOR, SELECT_COLOR, hexAlpha, BADGE_MIN_PX } from './style.js';
import { itemText } from './drawing.js';
import { hitEdge, hitItem } from './hittest.js';

/** Polylines per stroke() call (one path of thousands of overlapping lines is quadratic). */
const STROKE_BATCH = 64;
/** A press that moves less than this (px) is a click, not a drag. */
export const CLICK_SLOP_PX = 4;
/** Wheel zoom: factor per pixel of wheel delta. */
export const WHEEL_ZOOM = 0.0015;
/** Edges answer the pointer within this many pixels. */
export const EDGE_HIT_PX = 6;
/** Frame title band height, layout units (as Python's `clusters.FRAME_TITLE`). */
export const FRAME_TITLE = 1.3;

/**
 * @typedef {{ kind: 'node', index: number } | { kind: 'edge', index: number }} Hit
 *   a box's hit is a 'node' hit on its item (the caller tells boxes apart)
 * @typedef {object} Painted what the last paint showed (CSS px of the canvas; tests read it)
 * @property {number} ppu
 * @property {number} font the item label font (px) at this scale
 * @property {import('./camera.js').Range} range the layout range in view
 * @property {{ l: number, t: number, w: number, h: number }} area the plotting area
 * @property {import('./labelplace.js').Label[]} labels
 * @property {{ kind: 'node' | 'box' | 'copy', index: number, x: number, y: number, w: number, h: number }[]} items boxes in view
 * @property {{ next: number, ran: number, selected: number, selectedEdge: number, highlight: number[], focus: number,
 *   badges: { item: number, x: number, y: number, size: number, color: string, symbol: string }[] }} marks item (edge) indices, -1: none
 * @property {(x: number, y: number) => [number, number]} toPx layout units to canvas px
 * @property {(e: number) => [number, number]} edgeMid an edge's label anchor in canvas px
 */

export { hitEdge, hitItem } from './hittest.js';

/**
 * The canvas and its gestures.
 * @param {Document} doc
 * @param {{ view: () => { range: import('./camera.js').Range, size: import('./camera.js').Size },
 *   move: (range: import('./camera.js').Range) => void, hover: (hit: Hit | null, ev: MouseEvent) => void,
 *   click: (hit: Hit | null, ev: MouseEvent) => void, fit: () => void,
 *   zoom?: (range: import('./camera.js').Range, x: number, y: number) => void }} on `zoom`: a wheel
 *   zoom about canvas px (x, y) (default: `move`)
 */
export function createCanvas(doc, on) {
  const el = /** @type {HTMLCanvasElement & { agwPainted?: Painted }} */ (doc.createElement('canvas'));
  el.className = 'agw-canvas';
  // pixels only: the list of items in view beside it (a11y.js) is what assistive tech reads
  el.setAttribute('aria-hidden', 'true');
  const win = doc.defaultView ?? globalThis;
  /** @type {CanvasRenderingContext2D | null} */
  let ctx = null;
  try {
    ctx = el.getContext?.('2d') ?? null;
  } catch {
    ctx = null; // jsdom without a canvas package
  }
  /** @type {{ graph: import('./model.js').Graph, drawing: import('./drawing.js').Drawing, state: import('./model.js').State } | null} */
  let last = null;

  /** @type {import('./labelplace.js').Measure} */
  const measure = ctx
    ? (text, font, bold = false) => {
        const c = /** @type {CanvasRenderingContext2D} */ (ctx);
        c.font = `${bold ? '600 ' : ''}${font}px ${family}`;
        return c.measureText(text).width;
      }
    : estimateWidth;
  let family = 'sans-serif';

  /**
   * Paint `drawing` of `graph` for the view `range` in a plot of `size`.
   * @param {import('./model.js').Graph} graph @param {import('./model.js').State} state
   * @param {import('./drawing.js').Drawing} drawing
   * @param {import('./camera.js').Range} range @param {import('./camera.js').Size} size
   * @returns {Painted}
   */
  function paint(graph, state, drawing, range, size) {
    last = { graph, drawing, state };
    family = drawing.look.fontFamily || 'sans-serif';
    const cam = cameraOf(range, size);
    const { px, py } = projector(cam);
    const { ppu, area } = cam;
    const S = drawing.items;
    const dpr = win.devicePixelRatio || 1;
    const W = Math.max(1, Math.round(size.width * dpr));
    const H = Math.max(1, Math.round(size.height * dpr));
    if (el.width !== W || el.height !== H) {
      el.width = W;
      el.height = H;
    }
    el.style.width = `${size.width}px`;
    el.style.height = `${size.height}px`;
    // Items in view (px boxes), for culling, labels and the record.
    /** @type {import('./labelplace.js').LabelItem[]} */
    const inView = [];
    const margin = 4;
    const vis = (/** @type {number} */ cx, /** @type {number} */ cy, /** @type {number} */ w, /** @type {number} */ h) =>
      cx + w / 2 >= area.l - margin && cx - w / 2 <= area.l + area.w + margin && cy + h / 2 >= area.t - margin && cy - h / 2 <= area.t + area.h + margin;
    const fullyIn = (/** @type {number} */ cx, /** @type {number} */ cy, /** @type {number} */ w, /** @type {number} */ h) =>
      cx - w / 2 >= area.l - 0.5 && cx + w / 2 <= area.l + area.w + 0.5 && cy - h / 2 >= area.t - 0.5 && cy + h / 2 <= area.t + area.h + 0.5;
    /** @type {Painted['items']} */
    const items = [];
    const labelling = fontPx(ppu) >= LEGIBLE_PX - 1e-9; // else no item is labelled: skip the text
    const addItem = (/** @type {'node' | 'box' | 'copy'} */ kind, /** @type {number} */ i, /** @type {number} */ x, /** @type {number} */ y) => {
      const cx = px(x);
      const cy = py(y);
      const w = S.w[i] * ppu;
      const h = S.h[i] * ppu;
      if (!vis(cx, cy, w, h)) return;
      items.push({ kind, index: i, x: cx - w / 2, y: cy - h / 2, w, h });
      if (!labelling) return;
      const t = itemText(graph, state, i);
      // a box cut by the view's edge is labelled in its visible part
      const x0 = Math.max(cx - w / 2, area.l);
      const x1 = Math.min(cx + w / 2, area.l + area.w);
      const y0 = Math.max(cy - h / 2, area.t);
      const y1 = Math.min(cy + h / 2, area.t + area.h);
      inView.push({ kind, index: i, cx: (x0 + x1) / 2, cy: (y0 + y1) / 2, w: x1 - x0, h: y1 - y0, name: t.name, sub: t.sub, cuttable: t.cuttable });
    };
    for (let i = 0; i < graph.n; i++) addItem(graph.isBox?.[i] ? 'box' : 'node', i, graph.x[i], graph.y[i]);
    const cp = graph.copies;
    if (cp) for (let k = 0; k < cp.item.length; k++) if (cp.item[k] >= 0) addItem('copy', cp.item[k], cp.x[k], cp.y[k]);

    // Labels: items and frames first (they never overlap), then edge values where free.
    // an item cut by the view's edge keeps its label when the label itself is in view
    const labels = itemLabels(inView, ppu, measure).filter((l) => fullyIn(l.x + l.w / 2, l.y + l.h / 2, l.w, l.h));
    const frames = graph.frames ?? [];
    const titles = frameLabels(
      frames.map((f, k) => ({ index: k, title: f.title, x0: px(f.x0), x1: px(f.x1), top: py(f.y1), band: FRAME_TITLE * ppu })).filter((f) => f.x1 > area.l && f.x0 < area.l + area.w && f.top >= area.t - 1 && f.top < area.t + area.h),
      ppu,
      measure,
    );
    labels.push(...titles);
    const taken = new RectGrid(64);
    for (const b of items) taken.add(b.x - 2, b.y - 2, b.w + 4, b.h + 4); // (a little air round each box)
    for (const l of titles) taken.add(l.x, l.y, l.w, l.h);
    const edgeTexts = [];
    for (const t of drawing.edgeTexts) {
      const x = px(graph.midX[t.index]);
      const y = py(graph.midY[t.index]);
      if (x >= area.l && x <= area.l + area.w && y >= area.t && y <= area.t + area.h) edgeTexts.push({ index: t.index, x, y, text: t.text, color: t.color });
    }
    labels.push(...edgeLabels(edgeTexts, taken, measure, { x0: area.l, y0: area.t, x1: area.l + area.w, y1: area.t + area.h }));

    const badgeSize = Math.max(BADGE_MIN_PX, 0.9 * ppu);
    const boxOf = new Map(items.filter((b) => b.kind !== 'copy').map((b) => [b.index, b]));
    const badges = [];
    for (const bd of drawing.badges) {
      const b = boxOf.get(bd.item);
      if (b) badges.push({ item: bd.item, x: b.x + b.w, y: b.y, size: badgeSize, color: bd.color, symbol: bd.symbol });
    }
    /** @type {Painted} */
    const painted = {
      ppu,
      font: fontPx(ppu),
      range: rangeOf(cam),
      area,
      labels,
      items,
      marks: { ...drawing.marks, selectedEdge: drawing.selectedEdgeIndex, badges },
      toPx: (x, y) => [px(x), py(y)],
      edgeMid: (e) => [px(graph.midX[e]), py(graph.midY[e])],
    };
    el.agwPainted = painted;
    el.dataset.painted = String(Number(el.dataset.painted || 0) + 1);
    if (!ctx) return painted;
    const c = ctx;
    c.setTransform(dpr, 0, 0, dpr, 0, 0);
    c.fillStyle = drawing.look.background;
    c.fillRect(0, 0, size.width, size.height);
    c.save();
    c.beginPath();
    c.rect(area.l, area.t, area.w, area.h);
    c.clip();
    c.lineCap = 'round';
    c.lineJoin = 'round';
    paintFrames(c, graph, drawing, px, py, ppu);
    paintEdges(c, graph, drawing, S, px, py, ppu, area);
    paintItems(c, drawing, items, badges, ppu);
    paintLabels(c, labels, drawing, family);
    c.restore();
    if (drawing.colorbar) paintColorbar(c, drawing.colorbar, area, size.width);
    return painted;
  }

  /** The hit under a pointer event, or null. @param {MouseEvent} ev */
  function hitAt(ev) {
    if (!last) return null;
    const { range, size } = on.view();
    const cam = cameraOf(range, size);
    const r = el.getBoundingClientRect();
    const { ux, uy } = projector(cam);
    const x = ux(ev.clientX - r.left);
    const y = uy(ev.clientY - r.top);
    const i = hitItem(last.graph, last.drawing.items, x, y, 2 / cam.ppu);
    if (i >= 0) return /** @type {Hit} */ ({ kind: 'node', index: i });
    const e = hitEdge(last.graph, x, y, EDGE_HIT_PX / cam.ppu);
    return e >= 0 ? /** @type {Hit} */ ({ kind: 'edge', index: e }) : null;
  }

  // ---- gestures -------------------------------------------------------------------------------
  /** @type {{ x: number, y: number, range: import('./camera.js').Range, moved: boolean, id: number } | null} */
  let press = null;
  let hoverPending = false;
  /** @type {MouseEvent | null} */
  let hoverEv = null;
  const onDown = (/** @type {PointerEvent} */ ev) => {
    if (ev.button !== 0) return;
    press = { x: ev.clientX, y: ev.clientY, range: on.view().range, moved: false, id: ev.pointerId };
    el.setPointerCapture?.(ev.pointerId);
  };
  const onMove = (/** @type {PointerEvent} */ ev) => {
    if (press) {
      const dx = ev.clientX - press.x;
      const dy = ev.clientY - press.y;
      if (!press.moved && Math.hypot(dx, dy) < CLICK_SLOP_PX) return;
      press.moved = true;
      el.classList.add('agw-dragging');
      on.move(panBy(press.range, on.view().size, dx, dy));
      return;
    }
    hoverEv = ev;
    if (hoverPending) return;
    hoverPending = true;
    (win.requestAnimationFrame ?? ((/** @type {() => void} */ f) => setTimeout(f, 0)))(() => {
      hoverPending = false;
      if (hoverEv) {
        const hit = hitAt(hoverEv);
        el.style.cursor = hit ? 'pointer' : '';
        on.hover(hit, hoverEv);
      }
    });
  };
  const onUp = (/** @type {PointerEvent} */ ev) => {
    const p = press;
    press = null;
    el.classList.remove('agw-dragging');
    el.releasePointerCapture?.(ev.pointerId);
    if (p && !p.moved && ev.type === 'pointerup') on.click(hitAt(ev), ev);
  };
  const onWheel = (/** @type {WheelEvent} */ ev) => {
    ev.preventDefault();
    const r = el.getBoundingClientRect();
    const unit = ev.deltaMode === 1 ? 16 : ev.deltaMode === 2 ? 400 : 1;
    const factor = Math.exp(-ev.deltaY * unit * WHEEL_ZOOM);
    const { range, size } = on.view();
    const x = ev.clientX - r.left;
    const y = ev.clientY - r.top;
    const next = zoomAt(range, size, x, y, factor);
    if (on.zoom) on.zoom(next, x, y);
    else on.move(next);
  };
  const onLeave = (/** @type {MouseEvent} */ ev) => {
    hoverEv = null;
    on.hover(null, ev);
  };
  const onDbl = () => on.fit();
  el.addEventListener('pointerdown', onDown);
  el.addEventListener('pointermove', onMove);
  el.addEventListener('pointerup', onUp);
  el.addEventListener('pointercancel', onUp);
  el.addEventListener('wheel', onWheel, { passive: false });
  el.addEventListener('mouseleave', onLeave);
  el.addEventListener('dblclick', onDbl);

  return {
    el,
    paint,
    hitAt,
    destroy() {
      el.remove();
      last = null;
    },
  };
}

/**
 * Frames, outermost first: a tinted body, an outline and a title band (the title is a label).
 * @param {CanvasRenderingContext2D} c @param {import('./model.js').Graph} graph
 * @param {import('./drawing.js').Drawing} d
 * @param {(x: number) => number} px @param {(y: number) => number} py @param {number} ppu
 */
function paintFrames(c, graph, d, px, py, ppu) {
  for (const f of graph.frames ?? []) {
    const x0 = px(f.x0);
    const y0 = py(f.y1);
    const w = px(f.x1) - x0;
    const h = py(f.y0) - y0;
    if (w < 1 || h < 1) continue;
    const r = Math.min(8, 0.4 * ppu, w / 4, h / 4);
    c.beginPath();
    c.roundRect?.(x0, y0, w, h, r) ?? c.rect(x0, y0, w, h);
    c.fillStyle = d.look.frameFill;
    c.fill();
    c.lineWidth = 1;
    c.strokeStyle = d.look.frame;
    c.stroke();
    // the title band: a line under it
    const band = Math.min(FRAME_TITLE * ppu, h);
    if (band > 4) {
      c.beginPath();
      c.moveTo(x0, y0 + band);
      c.lineTo(x0 + w, y0 + band);
      c.globalAlpha = 0.35;
      c.stroke();
      c.globalAlpha = 1;
    }
  }
}

/**
 * Edge layers (batched strokes), the selected edge's glow, and an arrowhead at each polyline's
 * end, its tip on the target box's border.
 * @param {CanvasRenderingContext2D} c @param {import('./model.js').Graph} graph
 * @param {import('./drawing.js').Drawing} d @param {import('./drawing.js').ItemStyle} S
 * @param {(x: number) => number} px @param {(y: number) => number} py @param {number} ppu
 * @param {{ l: number, t: number, w: number, h: number }} area
 */
function paintEdges(c, graph, d, S, px, py, ppu, area) {
  const stroke = (/** @type {ArrayLike<number>} */ X, /** @type {ArrayLike<number>} */ Y) => {
    c.beginPath();
    let open = false;
    let lines = 0;
    for (let k = 0; k < X.length; k++) {
      const x = X[k];
      const y = Y[k];
      if (Number.isNaN(x) || Number.isNaN(y)) {
        open = false;
        continue;
      }
      if (open) c.lineTo(px(x), py(y));
      else {
        if (++lines % STROKE_BATCH === 0) {
          c.stroke();
          c.beginPath();
        }
        c.moveTo(px(x), py(y));
      }
      open = true;
    }
    c.stroke();
  };
  if (d.selectedEdge.x.length) {
    c.strokeStyle = hexAlpha(SELECT_COLOR, 0.45);
    c.lineWidth = 11;
    c.setLineDash([]);
    stroke(d.selectedEdge.x, d.selectedEdge.y);
  }
  const thin = ppu < 2; // far out: hairlines, no heads
  for (const layer of d.edges) {
    if (!layer.x.length) continue;
    c.strokeStyle = layer.color;
    c.lineWidth = thin ? Math.min(layer.width, 1) : layer.width;
    c.setLineDash(layer.dash);
    stroke(layer.x, layer.y);
  }
  c.setLineDash([]);
  if (thin) return;
  const pad = 20;
  /** @type {number[]} */
  const X = [];
  /** @type {number[]} */
  const Y = [];
  for (const layer of d.edges) {
    const dst = layer.dst;
    if (!dst || !dst.length || !layer.x.length || layer.width > 6) continue; // the glow has no head
    c.fillStyle = layer.color;
    c.beginPath();
    let line = 0;
    X.length = 0;
    Y.length = 0;
    for (let k = 0; k <= layer.x.length; k++) {
      const gap = k === layer.x.length || Number.isNaN(layer.x[k]) || Number.isNaN(layer.y[k]);
      if (!gap) {
        X.push(px(layer.x[k]));
        Y.push(py(layer.y[k]));
        continue;
      }
      const n = X.length;
      if (n >= 2) {
        const i = dst[line];
        const x1 = X[n - 1];
        const y1 = Y[n - 1];
        // the route ends at its target's centre (an item, or a leaf copy's point)
        if (x1 > area.l - pad && x1 < area.l + area.w + pad && y1 > area.t - pad && y1 < area.t + area.h + pad) {
          const head = arrowIntoBox(X, Y, 0, n - 1, x1, y1, (S.w[i] * ppu) / 2 + 1, (S.h[i] * ppu) / 2 + 1, layer.width);
          if (head) {
            c.moveTo(head.tip[0], head.tip[1]);
            c.lineTo(head.left[0], head.left[1]);
            c.lineTo(head.right[0], head.right[1]);
            c.closePath();
          }
        }
      }
      if (k < layer.x.length) line++;
      X.length = 0;
      Y.length = 0;
    }
    c.fill();
  }
}

/**
 * Item boxes in view with their step marks: the next one's gold halo under it, the one that just
 * ran ringed teal, the selected one ringed blue, aliases magenta; folded boxes show progress;
 * badges on stale/freed nodes; leaf copies dashed.
 * @param {CanvasRenderingContext2D} c @param {import('./drawing.js').Drawing} d
 * @param {Painted['items']} items @param {Painted['marks']['badges']} badges @param {number} ppu
 */
function paintItems(c, d, items, badges, ppu) {
  const S = d.items;
  const { marks } = d;
  const radius = (/** @type {number} */ w, /** @type {number} */ h) => Math.min(6, 0.3 * ppu, w / 3, h / 3);
  const rr = (/** @type {number} */ x, /** @type {number} */ y, /** @type {number} */ w, /** @type {number} */ h, /** @type {number} */ r) => {
    c.beginPath();
    if (c.roundRect && r > 0.5) c.roundRect(x, y, w, h, r);
    else c.rect(x, y, w, h);
  };
  const tiny = ppu < 3;
  const ringAround = (/** @type {typeof items[number]} */ b, /** @type {number} */ gap, /** @type {string} */ color, /** @type {number} */ width, /** @type {string | null} */ fillColor) => {
    rr(b.x - gap, b.y - gap, b.w + 2 * gap, b.h + 2 * gap, radius(b.w, b.h) + gap);
    if (fillColor) {
      c.fillStyle = fillColor;
      c.fill();
    }
    c.lineWidth = width;
    c.strokeStyle = color;
    c.stroke();
  };
  // halos under the boxes
  for (const b of items) {
    if (b.kind === 'copy') continue;
    if (b.index === marks.next) ringAround(b, Math.max(4, 0.25 * ppu), hexAlpha(NEXT_COLOR, 0.9), 2, hexAlpha(NEXT_COLOR, 0.35));
  }
  for (const b of items) {
    const i = b.index;
    if (tiny) {
      c.fillStyle = S.fill[i];
      c.fillRect(b.x, b.y, Math.max(1, b.w), Math.max(1, b.h));
      continue;
    }
    rr(b.x, b.y, b.w, b.h, radius(b.w, b.h));
    c.fillStyle = S.fill[i];
    c.fill();
    if (b.kind === 'box' && d.progress) {
      const p = Math.max(0, Math.min(1, d.progress[i]));
      if (p > 0) {
        c.save();
        c.clip();
        c.fillStyle = d.look.boxDone;
        c.globalAlpha = 0.55;
        c.fillRect(b.x, b.y + b.h - Math.max(3, 0.18 * b.h), b.w * p, Math.max(3, 0.18 * b.h));
        c.restore();
        rr(b.x, b.y, b.w, b.h, radius(b.w, b.h));
      }
    }
    c.lineWidth = S.lineWidth[i];
    c.strokeStyle = S.stroke[i];
    if (S.dashed[i] || b.kind === 'copy') c.setLineDash([4, 3]);
    c.stroke();
    c.setLineDash([]);
  }
  for (const b of items) {
    if (b.kind === 'copy') continue;
    const i = b.index;
    if (i === marks.ran) ringAround(b, 3, RAN_COLOR, 2.5, null);
    if (i === marks.selected) ringAround(b, 6, SELECT_COLOR, 3, null);
    if (marks.highlight.includes(i)) ringAround(b, 9, HIGHLIGHT_COLOR, 2.5, null);
    if (i === marks.focus) {
      // the keyboard focus: a dashed ring outside every other mark
      c.setLineDash([5, 3]);
      ringAround(b, 12, d.look.font, 2.5, null);
      c.setLineDash([]);
    }
  }
  if (ppu >= 6) paintGlyphs(c, items, d.glyph, d.look.background, ppu);
  // badges: at the box's top-right corner, never smaller than BADGE_MIN_PX
  for (const bd of badges) {
    c.beginPath();
    tracePath(c, bd.symbol, bd.x, bd.y, bd.size);
    c.fillStyle = bd.color;
    c.fill();
    c.lineWidth = 2;
    c.strokeStyle = d.look.background;
    c.stroke();
  }
}

/**
 * Every placed label: item names in their box's text colour, second lines muted, frame titles,
 * edge values on a plate of the background so lines under them do not cross the text.
 * @param {CanvasRenderingContext2D} c @param {import('./labelplace.js').Label[]} labels
 * @param {import('./drawing.js').Drawing} d @param {string} family
 */
function paintLabels(c, labels, d, family) {
  c.textBaseline = 'middle';
  c.textAlign = 'left';
  for (const l of labels) {
    c.font = `${l.bold ? '600 ' : ''}${l.font}px ${family}`;
    if (l.kind === 'edge') {
      c.fillStyle = hexAlpha(d.look.background.startsWith('#') ? d.look.background : '#ffffff', 0.85);
      c.fillRect(l.x - 2, l.y, l.w + 4, l.h);
      c.fillStyle = l.color ?? d.look.font;
    } else if (l.kind === 'frame') {
      // a plate: an edge entering the frame never runs through its title
      c.fillStyle = d.look.background;
      c.fillRect(l.x - 2, l.y, l.w + 4, l.h);
      c.fillStyle = d.look.font;
    } else {
      c.fillStyle = d.items.text[l.index];
      if (l.line === 1) c.globalAlpha = 0.8;
    }
    c.fillText(l.text, l.x, l.y + l.h / 2);
    c.globalAlpha = 1;
  }
}

/**
 * The colour bar in the right margin: the bins stacked bottom (small norm) to top, decade ticks.
 * @param {CanvasRenderingContext2D} c @param {import('./paintstyle.js').Colorbar} cb
 * @param {{ l: number, t: number, w: number, h: number }} area @param {number} right the canvas's width
 */
function paintColorbar(c, cb, area, right) {
  const x = area.l + area.w + 6;
  const len = Math.max(40, area.h * 0.55);
  const top = area.t + (area.h - len) / 2;
  const thick = 10;
  const n = cb.colors.length;
  for (let b = 0; b < n; b++) {
    c.fillStyle = cb.colors[b];
    c.fillRect(x, top + len - ((b + 1) * len) / n, thick, len / n + 0.5);
  }
  c.font = `11px ${cb.fontFamily}`;
  c.fillStyle = cb.fontMuted;
  c.textBaseline = 'middle';
  const [lo, hi] = cb.range;
  cb.tickvals.forEach((v, k) => {
    const y = top + len - ((v - lo) / (hi - lo || 1)) * len;
    c.fillText(cb.ticktext[k] ?? '', x + thick + 3, y);
  });
  c.font = `11px ${cb.fontFamily}`;
  c.fillStyle = cb.font;
  c.textBaseline = 'bottom';
  // the title on as many lines as the margin needs ("‖grad‖ so far" is wider than it)
  const room = right - (x - 2) - 2;
  // (the quantity alone on the first line, its qualifier under it)
  const [head, ...rest] = cb.title.split(' ');
  const lines = c.measureText(cb.title).width <= room || !rest.length ? [cb.title] : [head, rest.join(' ')];
  lines.forEach((line, k) => c.fillText(line, x - 2, top - 9 - (lines.length - 1 - k) * 13));
}

