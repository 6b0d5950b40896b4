/**
 * The step state, painted on a canvas under plotly's transparent SVG: every edge (grey until its
 * gradient flows, then coloured by norm; the ones the last step produced glow), the next node's
 * halo, the ring of the node that just ran, every node marker in its step state, and the colour bar.
 *
 * Why a canvas and not plotly traces: any restyle that moves points between traces (an edge
 * changing colour bin) makes plotly recalculate and redraw EVERY trace, and styling SVG points
 * costs ~0.1 ms each, so a step cost ~130 ms at 700 nodes and ~1 s at 10k. Repainting this canvas
 * is one pass over plain arrays (a few ms at 10k nodes). Plotly keeps what changes only on user
 * action or rarely: module boxes, labels, selection rings, badges, and the invisible markers
 * that answer hover and click. It sits above this canvas, so labels and boxes stay on top.
 *
 * `overlayScene` is pure (what to paint, in layout units); `createOverlay` owns the canvas and
 * maps layout units to pixels with the plot's current axis ranges.
 */
import { MARGIN, plotArea } from './geometry.js';
import { ALARM_COLOR, NEXT_COLOR, RAN_COLOR, binWidth, decadeTicks, gatherPaths, hexAlpha, scaleRange } from './style.js';
import { formatNumber } from './format.js';

/** Polylines per stroke() call. */
const STROKE_BATCH = 64;

/** Arrowheads: no head on an edge shorter than this on screen (pixels). */
export const ARROW_MIN_EDGE_PX = 14;

/**
 * The arrowhead of an edge drawn from (x0, y0) to (x1, y1), in pixels: the last segment of its
 * polyline, the gradient's direction. The tip stops at the target's border: `r` pixels short of
 * (x1, y1) for a round marker, or where the segment enters a box of half sizes `hw` x `hh`
 * (pass `hw` > 0 for a box). The head scales with the line width (legible when thin, never
 * huge) and is skipped (null) when what is left of the segment is shorter than
 * `ARROW_MIN_EDGE_PX` or twice the head.
 * @param {number} x0 @param {number} y0 @param {number} x1 @param {number} y1
 * @param {{ r?: number, hw?: number, hh?: number, width?: number, short?: boolean }} [o] `short`: the
 *   segment is the end of a longer route, so a head that just fits on it is drawn
 * @returns {{ tip: [number, number], left: [number, number], right: [number, number], len: number } | null}
 */
export function arrowHead(x0, y0, x1, y1, o = {}) {
  const dx = x1 - x0;
  const dy = y1 - y0;
  const d = Math.hypot(dx, dy);
  if (!(d > 0)) return null;
  const ux = dx / d;
  const uy = dy / d;
  let cut = Math.max(0, o.r ?? 0);
  if ((o.hw ?? 0) > 0) {
    const hh = Math.max(0, o.hh ?? 0);
    cut = Math.min(Math.abs(ux) > 1e-9 ? o.hw / Math.abs(ux) : Infinity, Math.abs(uy) > 1e-9 ? hh / Math.abs(uy) : Infinity);
  }
  const left = d - cut; // what is visible of the segment
  const len = Math.min(12, Math.max(7, 3 * (o.width ?? 1.5)));
  if (o.short ? !(left >= len + 1) : !(left >= ARROW_MIN_EDGE_PX) || left < 2 * len) return null;
  const tx = x0 + ux * left;
  const ty = y0 + uy * left;
  const half = len * 0.45;
  const bx = tx - ux * len;
  const by = ty - uy * len;
  return { tip: [tx, ty], left: [bx - uy * half, by + ux * half], right: [bx + uy * half, by - ux * half], len };
}

/**
 * The arrowhead of a polyline entering a box centred at (cx, cy) with half sizes hw x hh (px):
 * the tip where the route enters the box (the route may end at the box's centre or on its
 * border), pointing along the segment that enters it. `X`, `Y` are the polyline's points in px,
 * `end` the index of its last point; null when no part of it lies outside the box or what lies
 * outside is too short for a head (see {@link arrowHead}).
 * @param {ArrayLike<number>} X @param {ArrayLike<number>} Y @param {number} start @param {number} end
 * @param {number} cx @param {number} cy @param {number} hw @param {number} hh @param {number} [width]
 * @example arrowIntoBox([0, 0], [0, 100], 0, 1, 0, 100, 20, 10, 2).tip // [0, 90]
 */
export function arrowIntoBox(X, Y, start, end, cx, cy, hw, hh, width = 1.5) {
  const inside = (/** @type {number} */ k) => Math.abs(X[k] - cx) <= hw + 1e-6 && Math.abs(Y[k] - cy) <= hh + 1e-6;
  let k = end;
  while (k > start && inside(k)) k--;
  if (k === end || inside(k)) return null; // ends outside the box, or never leaves it
  const x0 = X[k];
  const y0 = Y[k];
  const dx = X[k + 1] - x0;
  const dy = Y[k + 1] - y0;
  // entry parameter: the largest of the per-axis entry times into the slab [c - h, c + h]
  let t = 0;
  if (Math.abs(dx) > 1e-9) t = Math.max(t, Math.min((cx - hw - x0) / dx, (cx + hw - x0) / dx));
  if (Math.abs(dy) > 1e-9) t = Math.max(t, Math.min((cy - hh - y0) / dy, (cy + hh - y0) / dy));
  t = Math.min(1, Math.max(0, t));
  return arrowHead(x0, y0, x0 + t * dx, y0 + t * dy, { width, short: k > start });
}

/**
 * @typedef {object} EdgeLayer one stroke style and the polylines drawn with it
 * @property {Float32Array} x layout x, NaN between polylines
 * @property {Float32Array} y
 * @property {string} color
 * @property {number} width pixels
 * @property {number[]} dash canvas line dash, [] for solid
 * @property {ArrayLike<number>} [dst] target item of each polyline, in order (arrowheads)
 */

/**
 * @typedef {object} NodeLayer marker arrays indexed like the graph's items (boxes are skipped)
 * @property {ArrayLike<number>} x
 * @property {ArrayLike<number>} y
 * @property {ArrayLike<string>} color
 * @property {ArrayLike<string>} symbol plotly symbol names ("circle", "square-open", ...)
 * @property {ArrayLike<number>} size diameter in pixels
 * @property {ArrayLike<number>} opacity
 * @property {ArrayLike<string>} lineColor
 * @property {ArrayLike<number>} lineWidth
 * @property {ArrayLike<number> | null} isBox
 */

/**
 * @typedef {object} Colorbar
 * @property {string[]} colors the bins, small norm first
 * @property {number[]} tickvals log10 values
 * @property {string[]} ticktext
 * @property {[number, number]} range log10
 * @property {string} title
 * @property {string} font
 * @property {string} fontMuted
 * @property {string} fontFamily
 */

/**
 * @typedef {object} Scene
 * @property {EdgeLayer[]} edges in painting order
 * @property {{ x: number[], y: number[], size: number }} halo the next node (pixels)
 * @property {{ x: number[], y: number[], size: number[] }} [ran] the node that ran last: a ring (pixels)
 * @property {NodeLayer} nodes
 * @property {Colorbar | null} colorbar
 * @property {ArrayLike<number>} [boxHalfW] per item: half a box's width in layout units (0: a marker)
 * @property {number} [boxHalfH] half a box's height in layout units
 */

/**
 * The edge layers in painting order, from the bucketed paths of `edgeGeometry`
 * (fresh, idle, no gradient, bins..., non-finite).
 * @param {{ x: Float32Array, y: Float32Array, dst?: Int32Array }[]} paths
 * @param {import('./style.js').Theme} theme
 * @returns {EdgeLayer[]}
 */
export function edgeLayers(paths, theme) {
  const styles = edgeStyles(theme);
  return paths.map((p, k) => ({ x: p.x, y: p.y, ...(p.dst ? { dst: p.dst } : {}), ...styles[k] }));
}

/**
 * Stroke styles of the edge buckets, in `edgeGeometry` order.
 * @param {import('./style.js').Theme} theme
 * @returns {{ color: string, width: number, dash: number[] }[]}
 */
export function edgeStyles(theme) {
  return [
    { color: hexAlpha(RAN_COLOR, 0.45), width: 9, dash: [] }, // just computed by the node that ran: a glow
    { color: theme.idleEdge, width: 1.2, dash: [] },
    { color: theme.noGradEdge, width: 1.2, dash: [2, 3] },
    ...theme.bins.map((c, b) => ({ color: c, width: binWidth(b), dash: [] })),
    { color: ALARM_COLOR, width: 3, dash: [7, 4] },
  ];
}

/**
 * `scene` for a colour mode that shades the nodes by something else (memory, sensitivity): every
 * edge in the neutral "idle" grey and no gradient colour bar, so no colour on the drawing means
 * something its legend does not say.
 * @param {Scene} scene @param {import('./model.js').Graph} graph @param {import('./style.js').Theme} theme
 * @returns {Scene}
 */
export function neutralScene(scene, graph, theme) {
  const all = new Int32Array(graph.m);
  for (let e = 0; e < graph.m; e++) all[e] = e;
  const p = gatherPaths(graph, all);
  return { ...scene, edges: [{ x: p.x, y: p.y, color: theme.idleEdge, width: 1.2, dash: [] }], colorbar: null };
}

/**
 * The colour bar for a state, or null before any gradient has flowed. Its range is the state's
 * `normRange`: fixed for the whole run, or (fallback) the norms so far, titled so.
 * @param {import('./model.js').State} state @param {import('./style.js').Theme} theme
 * @returns {Colorbar | null}
 */
export function colorbar(state, theme) {
  const range = scaleRange(state.normRange);
  if (!range) return null;
  const ticks = decadeTicks(range, (v) => formatNumber(v, 2));
  return {
    colors: theme.bins,
    tickvals: ticks.tickvals,
    ticktext: ticks.ticktext,
    range,
    title: state.normScale === 'run' ? '‖grad‖' : '‖grad‖ so far',
    font: theme.font,
    fontMuted: theme.fontMuted,
    fontFamily: theme.fontFamily,
  };
}

/**
 * Pixel transform of a plot: layout units to CSS pixels of the plot div.
 * @param {{ x: [number, number], y: [number, number] }} range
 * @param {{ l: number, t: number, w: number, h: number }} area
 */
export function transform(range, area) {
  const sx = area.w / (range.x[1] - range.x[0] || 1);
  const sy = area.h / (range.y[1] - range.y[0] || 1);
  return {
    px: (/** @type {number} */ x) => area.l + (x - range.x[0]) * sx,
    py: (/** @type {number} */ y) => area.t + (range.y[1] - y) * sy,
    sx,
    sy,
  };
}

/**
 * The plotting area in CSS pixels: plotly's own when it has laid out, else the one the figure asks for.
 * @param {any} gd @param {{ width: number, height: number }} size
 */
export function areaOf(gd, size) {
  const s = gd?._fullLayout?._size;
  if (s && Number.isFinite(s.l) && s.w > 0 && s.h > 0) return { l: s.l, t: s.t, w: s.w, h: s.h };
  const a = plotArea(size);
  return { l: MARGIN.l, t: MARGIN.t, w: a.width, h: a.height };
}


/**
 * Trace a plotly marker symbol of diameter `d` centred at (x, y) into the current path.
 * @param {CanvasRenderingContext2D} ctx @param {string} symbol @param {number} x @param {number} y @param {number} d
 */
export function tracePath(ctx, symbol, x, y, d) {
  const r = d / 2;
  const base = symbol.replace(/-open$/, '');
  if (base === 'square') {
    ctx.rect(x - r, y - r, d, d);
  } else if (base === 'diamond') {
    const q = r * 1.3;
    ctx.moveTo(x, y - q);
    ctx.lineTo(x + q, y);
    ctx.lineTo(x, y + q);
    ctx.lineTo(x - q, y);
    ctx.closePath();
  } else if (base === 'triangle-up') {
    ctx.moveTo(x, y - r * 1.1);
    ctx.lineTo(x + r, y + r * 0.75);
    ctx.lineTo(x - r, y + r * 0.75);
    ctx.closePath();
  } else if (base === 'x') {
    // a thick cross, as one closed outline (filled like the other symbols)
    const t = r * 0.32;
    const pts = [[-r, -r + t], [-r + t, -r], [0, -t], [r - t, -r], [r, -r + t], [t, 0], [r, r - t], [r - t, r], [0, t], [-r + t, r], [-r, r - t], [-t, 0]];
    pts.forEach(([dx, dy], k) => (k ? ctx.lineTo(x + dx, y + dy) : ctx.moveTo(x + dx, y + dy)));
    ctx.closePath();
  } else if (base === 'hexagon' || base === 'pentagon') {
    const k = base === 'hexagon' ? 6 : 5;
    const q = r * 1.1;
    for (let j = 0; j < k; j++) {
      const a = -Math.PI / 2 + (2 * Math.PI * j) / k;
      if (j === 0) ctx.moveTo(x + q * Math.cos(a), y + q * Math.sin(a));
      else ctx.lineTo(x + q * Math.cos(a), y + q * Math.sin(a));
    }
    ctx.closePath();
  } else {
    ctx.moveTo(x + r, y);
    ctx.arc(x, y, r, 0, 2 * Math.PI);
  }
}

/**
 * The canvas under the plot. `attach(plot)` puts it first in plotly's `.svg-container` (again
 * after a new plot); `paint(scene, range, size)` redraws it.
 * @param {Document} doc
 */
export function createOverlay(doc) {
  const canvas = /** @type {HTMLCanvasElement} */ (doc.createElement('canvas'));
  canvas.className = 'agw-overlay';
  canvas.setAttribute('aria-hidden', 'true');
  /** @type {any} */
  let host = null;
  const win = doc.defaultView ?? globalThis;

  /** @param {HTMLElement} plot */
  function attach(plot) {
    host = plot;
    const container = plot.querySelector('.svg-container') ?? plot;
    if (canvas.parentNode !== container || container.firstChild !== canvas) {
      container.insertBefore(canvas, container.firstChild);
    }
  }

  /**
   * @param {Scene} scene
   * @param {{ x: [number, number], y: [number, number] }} range
   * @param {{ width: number, height: number }} size
   */
  function paint(scene, range, size) {
    const ctx = canvas.getContext?.('2d');
    if (!ctx) return;
    const dpr = win.devicePixelRatio || 1;
    const W = Math.max(1, Math.round(size.width * dpr));
    const H = Math.max(1, Math.round(size.height * dpr));
    if (canvas.width !== W || canvas.height !== H) {
      canvas.width = W;
      canvas.height = H;
      canvas.style.width = `${size.width}px`;
      canvas.style.height = `${size.height}px`;
    }
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, size.width, size.height);
    const area = areaOf(host, size);
    const { px, py } = transform(range, area);
    ctx.save();
    ctx.beginPath();
    ctx.rect(area.l, area.t, area.w, area.h);
    ctx.clip();
    ctx.lineCap = 'round';
    ctx.lineJoin = 'round';
    paintFrames(ctx, scene, px, py);
    for (const layer of scene.edges) {
      if (!layer.x.length) continue;
      ctx.strokeStyle = layer.color;
      ctx.lineWidth = layer.width;
      ctx.setLineDash(layer.dash);
      ctx.beginPath();
      let open = false;
      let lines = 0;
      for (let k = 0; k < layer.x.length; k++) {
        const x = layer.x[k];
        const y = layer.y[k];
        if (Number.isNaN(x) || Number.isNaN(y)) {
          open = false;
          continue;
        }
        if (open) {
          ctx.lineTo(px(x), py(y));
        } else {
          // Stroke in batches: one path of thousands of overlapping lines (a fan) makes the
          // rasteriser's coverage pass quadratic.
          if (++lines % STROKE_BATCH === 0) {
            ctx.stroke();
            ctx.beginPath();
          }
          ctx.moveTo(px(x), py(y));
        }
        open = true;
      }
      ctx.stroke();
    }
    ctx.setLineDash([]);
    paintArrows(ctx, scene, px, py, area);
    const { halo, nodes } = scene;
    for (let k = 0; k < halo.x.length; k++) {
      ctx.beginPath();
      ctx.arc(px(halo.x[k]), py(halo.y[k]), halo.size / 2, 0, 2 * Math.PI);
      ctx.fillStyle = hexAlpha(NEXT_COLOR, 0.35);
      ctx.fill();
      ctx.lineWidth = 2;
      ctx.strokeStyle = NEXT_COLOR;
      ctx.stroke();
    }
    const ran = scene.ran ?? { x: [], y: [], size: [] };
    for (let k = 0; k < ran.x.length; k++) {
      ctx.beginPath();
      ctx.arc(px(ran.x[k]), py(ran.y[k]), ran.size[k] / 2, 0, 2 * Math.PI);
      ctx.fillStyle = hexAlpha(RAN_COLOR, 0.18);
      ctx.fill();
      ctx.lineWidth = 2.5;
      ctx.strokeStyle = RAN_COLOR;
      ctx.stroke();
    }
    const pad = 40;
    for (let i = 0; i < nodes.x.length; i++) {
      if (nodes.isBox?.[i]) continue; // plotly draws boxes (above this canvas)
      const x = px(nodes.x[i]);
      const y = py(nodes.y[i]);
      if (x < area.l - pad || x > area.l + area.w + pad || y < area.t - pad || y > area.t + area.h + pad) continue;
      paintMarker(ctx, nodes, i, x, y, false);
    }
    // Leaf copies: the parameter again beside another consumer, styled as the item itself.
    const cp = scene.copies;
    if (cp) {
      for (let k = 0; k < cp.item.length; k++) {
        const i = cp.item[k];
        if (i < 0 || nodes.isBox?.[i]) continue;
        const x = px(cp.x[k]);
        const y = py(cp.y[k]);
        if (x < area.l - pad || x > area.l + area.w + pad || y < area.t - pad || y > area.t + area.h + pad) continue;
        paintMarker(ctx, nodes, i, x, y, true);
      }
    }
    ctx.globalAlpha = 1;
    ctx.restore();
    if (scene.colorbar) paintColorbar(ctx, scene.colorbar, area);
    canvas.dataset.painted = String(Number(canvas.dataset.painted || 0) + 1);
  }

  return {
    el: canvas,
    attach,
    paint,
    destroy() {
      canvas.remove();
      host = null;
    },
  };
}

/**
 * An arrowhead at the end of every polyline of every edge layer that names its targets (`dst`),
 * in the layer's colour, its tip on the target's border.
 * @param {CanvasRenderingContext2D} ctx @param {Scene} scene
 * @param {(x: number) => number} px @param {(y: number) => number} py
 * @param {{ l: number, t: number, w: number, h: number }} area
 */
function paintArrows(ctx, scene, px, py, area) {
  const { nodes } = scene;
  const sx = Math.abs(px(1) - px(0));
  const sy = Math.abs(py(1) - py(0));
  const bw = scene.boxHalfW;
  const bh = (scene.boxHalfH ?? 0) * sy;
  const pad = 20;
  for (const layer of scene.edges) {
    const dst = layer.dst;
    if (!dst || !dst.length || !layer.x.length) continue;
    ctx.fillStyle = layer.color;
    ctx.beginPath();
    let line = 0;
    let prev = -1; // index of the previous point of the current polyline
    for (let k = 0; k <= layer.x.length; k++) {
      const gap = k === layer.x.length || Number.isNaN(layer.x[k]) || Number.isNaN(layer.y[k]);
      if (!gap) {
        prev = k;
        continue;
      }
      if (prev >= 1 && !Number.isNaN(layer.x[prev - 1])) {
        const i = dst[line];
        const x1 = px(layer.x[prev]);
        const y1 = py(layer.y[prev]);
        if (x1 > area.l - pad && x1 < area.l + area.w + pad && y1 > area.t - pad && y1 < area.t + area.h + pad) {
          const isBox = nodes.isBox?.[i];
          const head = arrowHead(px(layer.x[prev - 1]), py(layer.y[prev - 1]), x1, y1, isBox
            ? { hw: (bw?.[i] ?? 0) * sx, hh: bh, width: layer.width }
            : { r: (nodes.size[i] ?? 0) / 2 + 1, width: layer.width });
          if (head) {
            ctx.moveTo(head.tip[0], head.tip[1]);
            ctx.lineTo(head.left[0], head.left[1]);
            ctx.lineTo(head.right[0], head.right[1]);
            ctx.closePath();
          }
        }
      }
      if (k < layer.x.length) line++; // every polyline ends in one NaN gap
      prev = -1;
    }
    ctx.fill();
  }
}

/**
 * Node `i`'s marker at pixel (x, y), in its step-state style; `copy`: a leaf copy beside another
 * consumer, outlined dashed (and always outlined) so it reads as the same parameter again.
 * @param {CanvasRenderingContext2D} ctx @param {any} nodes the scene's node arrays
 * @param {number} i @param {number} x @param {number} y @param {boolean} copy
 */
function paintMarker(ctx, nodes, i, x, y, copy) {
  const sym = String(nodes.symbol[i]);
  const open = sym.endsWith('-open');
  ctx.beginPath();
  tracePath(ctx, sym, x, y, nodes.size[i]);
  ctx.globalAlpha = nodes.opacity[i];
  if (!open) {
    ctx.fillStyle = nodes.color[i];
    ctx.fill();
  }
  ctx.strokeStyle = open ? nodes.color[i] : nodes.lineColor[i];
  const lw = copy ? Math.max(1, nodes.lineWidth[i]) : nodes.lineWidth[i];
  if (lw > 0) {
    ctx.lineWidth = lw;
    if (copy) ctx.setLineDash([3, 2]);
    ctx.stroke();
    if (copy) ctx.setLineDash([]);
  }
}

/**
 * Module frames, outermost first: a rounded outline and the title at the top left, cut in the
 * middle ("layers.3 · Tran…Layer") when the frame is too narrow for it.
 * @param {CanvasRenderingContext2D} ctx @param {any} scene
 * @param {(x: number) => number} px @param {(y: number) => number} py
 */
function paintFrames(ctx, scene, px, py) {
  const frames = scene.frames ?? [];
  if (!frames.length) return;
  ctx.save();
  ctx.font = `11px ${scene.frameFont ?? 'sans-serif'}`;
  ctx.textBaseline = 'top';
  for (const f of frames) {
    const x0 = px(f.x0);
    const x1 = px(f.x1);
    const ya = py(f.y1);
    const yb = py(f.y0);
    const w = x1 - x0;
    const h = yb - ya;
    if (w < 2 || h < 2) continue;
    ctx.beginPath();
    ctx.rect(x0, ya, w, h);
    ctx.strokeStyle = scene.frameColor ?? '#888';
    ctx.globalAlpha = 0.7;
    ctx.lineWidth = 1;
    ctx.stroke();
    ctx.globalAlpha = 1;
    if (w > 30 && h > 14) {
      ctx.fillStyle = scene.fontColor ?? '#333';
      ctx.fillText(middleCut(ctx, f.title, w - 8), x0 + 4, ya + 3);
    }
  }
  ctx.restore();
}

/**
 * `text` cut in the middle with an ellipsis to fit `width` pixels (never from the left).
 * @param {{ measureText: (t: string) => { width: number } }} ctx @param {string} text @param {number} width
 */
export function middleCut(ctx, text, width) {
  const measure = (/** @type {string} */ t) => ctx.measureText?.(t)?.width ?? t.length * 6.5;
  if (measure(text) <= width) return text;
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const k = (lo + hi + 1) >> 1;
    const head = Math.ceil(k / 2);
    const t = `${text.slice(0, head)}…${text.slice(text.length - (k - head))}`;
    if (measure(t) <= width) lo = k;
    else hi = k - 1;
  }
  const head = Math.ceil(lo / 2);
  return lo ? `${text.slice(0, head)}…${text.slice(text.length - (lo - head))}` : '…';
}

/**
 * The colour bar in the right margin: the bins stacked bottom (small norm) to top, decade ticks.
 * @param {CanvasRenderingContext2D} ctx @param {Colorbar} cb @param {{ l: number, t: number, w: number, h: number }} area
 */
function paintColorbar(ctx, cb, area) {
  const x = area.l + area.w + 6;
  const len = Math.max(40, area.h * 0.55);
  const top = area.t + (area.h - len) / 2;
  const thick = 10;
  const n = cb.colors.length;
  for (let b = 0; b < n; b++) {
    ctx.fillStyle = cb.colors[b];
    ctx.fillRect(x, top + len - ((b + 1) * len) / n, thick, len / n + 0.5);
  }
  ctx.font = `10px ${cb.fontFamily}`;
  ctx.fillStyle = cb.fontMuted;
  ctx.textBaseline = 'middle';
  const [lo, hi] = cb.range;
  cb.tickvals.forEach((v, k) => {
    const y = top + len - ((v - lo) / (hi - lo || 1)) * len;
    ctx.fillText(cb.ticktext[k] ?? '', x + thick + 3, y);
  });
  ctx.font = `11px ${cb.fontFamily}`;
  ctx.fillStyle = cb.font;
  ctx.textBaseline = 'bottom';
  ctx.fillText(cb.title, x - 2, top - 4);
}


/**
 * The axis ranges in a plotly (re)layout event ("xaxis.range[0]" ... or "xaxis.range": [a, b]),
 * completed from `current` for an axis the event leaves out; null when it names none.
 * @param {any} ev
 * @param {{ x: [number, number], y: [number, number] }} current
 * @returns {{ x: [number, number], y: [number, number] } | null}
 */
export function rangeFromEvent(ev, current) {
  if (!ev || typeof ev !== 'object') return null;
  /** @param {'xaxis' | 'yaxis'} ax @param {[number, number]} cur @returns {[number, number] | null} */
  const one = (ax, cur) => {
    const pair = ev[`${ax}.range`];
    const a = Array.isArray(pair) ? pair[0] : ev[`${ax}.range[0]`];
    const b = Array.isArray(pair) ? pair[1] : ev[`${ax}.range[1]`];
    if (a === undefined && b === undefined) return null;
    const out = /** @type {[number, number]} */ ([a === undefined ? cur[0] : +a, b === undefined ? cur[1] : +b]);
    return out.every(Number.isFinite) ? out : null;
  };
  const x = one('xaxis', current.x);
  const y = one('yaxis', current.y);
  if (!x && !y) return null;
  return { x: x ?? current.x, y: y ?? current.y };
}
