/**
 * Edge styling and marker shapes the canvas (canvas.js) paints with: the edge layers in painting
 * order (the last step's glow, idle grey, "no gradient" dotted, one per colour bin by norm,
 * NaN/inf dashed), the colour bar of the run's fixed scale, arrowheads whose tips stop at the
 * target box's border, and the badge symbols. Pure: numbers and strings in, no DOM.
 */
import { ALARM_COLOR, DIFF_COLOR, GLYPHS, RAN_COLOR, binWidth, decadeTicks, hexAlpha, scaleRange } from './style.js';
import { formatNumber } from './format.js';

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
  const hw = o.hw ?? 0;
  if (hw > 0) {
    const hh = Math.max(0, o.hh ?? 0);
    cut = Math.min(Math.abs(ux) > 1e-9 ? hw / Math.abs(ux) : Infinity, Math.abs(uy) > 1e-9 ? hh / Math.abs(uy) : Infinity);
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
 * The edge layers in painting order, from the bucketed paths of `buildDrawing` (drawing.js)
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
 * Stroke styles of the edge buckets, in the order drawing.js buckets the edges.
 * @param {import('./style.js').Theme} theme
 * @returns {{ color: string, width: number, dash: number[] }[]}
 */
export function edgeStyles(theme) {
  return [
    { color: hexAlpha(RAN_COLOR, 0.45), width: 9, dash: [] }, // just computed by the node that ran: a glow
    { color: theme.idleEdge, width: 1.2, dash: [] },
    { color: theme.noGradEdge, width: 1.2, dash: [2, 3] },
    { color: theme.savedEdge, width: 1.4, dash: [1, 3] }, // a saved value inside a compiled region: dotted
    ...theme.bins.map((c, b) => ({ color: c, width: binWidth(b), dash: [] })),
    { color: ALARM_COLOR, width: 3, dash: [7, 4] },
    { color: DIFF_COLOR, width: 3.2, dash: [3, 2] },
  ];
}

/**
 * The colour bar for a state, or null before a gradient has flowed. Its range is the state's
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
 * Trace a marker symbol (plotly's names: "circle", "square", "triangle-up", "x"...) of diameter `d`
 * centred at (x, y) into the current path (the badges of stale/freed saved tensors).
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
 * Step-state glyphs at each box's top-left corner (drawing.js GLYPHS: ▶ next, ✓ done, ✖
 * failed, ∅ no gradient): the state reads without its colour.
 * @param {CanvasRenderingContext2D} c
 * @param {{ kind: string, index: number, x: number, y: number }[]} items boxes in view (CSS px)
 * @param {Uint8Array} glyph per item: its state code @param {string} background @param {number} ppu
 */
export function paintGlyphs(c, items, glyph, background, ppu) {
  const r = Math.max(6, Math.min(9, 0.4 * ppu));
  c.textAlign = 'center';
  c.textBaseline = 'middle';
  c.font = `bold ${Math.round(1.3 * r)}px sans-serif`;
  for (const b of items) {
    if (b.kind === 'copy') continue;
    const g = GLYPHS[/** @type {1 | 2 | 3 | 4} */ (glyph[b.index])];
    if (!g) continue;
    c.beginPath();
    c.arc(b.x + 1, b.y + 1, r, 0, 2 * Math.PI);
    c.fillStyle = background;
    c.fill();
    c.lineWidth = 1.5;
    c.strokeStyle = g.color;
    c.stroke();
    c.fillStyle = g.color;
    c.fillText(g.symbol, b.x + 1, b.y + 1.5);
  }
  c.textAlign = 'left';
}
