/**
 * The plotly figure: trace layout, the initial data/layout/config, and the restyle patches a new
 * state or a new view range needs. Pure: returns plain objects, calls no plotly function, so the
 * whole mapping is unit-tested without a browser.
 */
import { MARGIN, nodeSize, plotArea, pxPerUnit } from './geometry.js';
import { LABEL_CHAR_PX, boxHalfWidths, boxHitPoints, boxLabel, boxSegments, boxSize } from './groups.js';
import { edgeLabel, escapeHtml, nodeLabel, visibleIndices } from './labels.js';
import { memoryColors } from './memory.js';
import { colorbar, edgeLayers } from './overlay.js';
import { sensitivityColors } from './sensitivity.js';
import { NODE_STATE } from './model.js';
import {
  ALARM_COLOR,
  EDIT_COLOR,
  HIGHLIGHT_COLOR,
  NEXT_COLOR,
  BADGE_MIN_PX,
  BADGE_OUTLINE_PX,
  SAVED_BADGE,
  SELECT_COLOR,
  bucketEdges,
  gatherPaths,
  hexAlpha,
  nodeStyles,
} from './style.js';

export { MARGIN, hexAlpha, nodeSize, plotArea, pxPerUnit };

/** Above this many nodes the marker and line traces are WebGL (`scattergl`). */
export const GL_THRESHOLD = 2000;
/** At most this many labels of each kind are drawn; more in view means none (zoom in). */
export const MAX_LABELS = 400;
/** Node labels need at least this many pixels per layout unit: the layout sizes each box for its
 * label at one unit per line of text and puts layers ~3 units apart (issue 16), so 5 px per unit
 * leaves ~15 px between layers for a 12 px label. */
export const MIN_PX_PER_UNIT_FOR_NODE_LABELS = 5;

/** Edge value labels keep this many pixels (an invisible marker) between the line and the text. */
const EDGE_LABEL_GAP = 7;

/**
 * Trace indices, in drawing order (later is on top). Edges, node markers and the colour bar are
 * painted on the canvas under the plot (overlay.js); the node trace here is invisible and only
 * answers hover and click.
 */
export const T = Object.freeze({
  edgeSel: 0, // glow under the selected edge
  edgeHit: 1, // invisible markers at edge midpoints (hover, click)
  edgeLabels: 2,
  ring: 3,
  boxHalo: 4, // module boxes are thick line segments: glow, frame, body, progress
  boxRing: 5,
  boxFrame: 6,
  boxFailed: 7,
  boxBody: 8,
  boxFill: 9,
  highlight: 10, // nodes aliasing the saved tensor open in the inspector
  nodes: 11,
  boxHit: 12, // invisible markers over the boxes' width (hover, click)
  badges: 13, // stale / freed saved tensors
  nodeLabels: 14,
});
export const N_TRACES = 15;

/**
 * What the view shows besides the state: zoom, size, selection, highlights, colour mode.
 * @typedef {object} ViewSpec
 * @property {{ x: [number, number], y: [number, number] }} range
 * @property {{ width: number, height: number }} size
 * @property {number} selected item index (a node or a box) or -1
 * @property {number} [selectedEdge] visible edge index or -1
 * @property {number[]} [highlight] item indices to mark
 * @property {'gradient' | 'memory' | 'sensitivity'} [colorMode]
 * @property {import('./memory.js').Memory | null} [memory]
 * @property {import('./sensitivity.js').Sensitivity | null} [sensitivity]
 */

/**
 * Stable trace uids: plotly keeps them across react() and puts `trace<uid>` in each svg trace
 * group's class, which is how the browser tests find e.g. the edge labels
 * (`.traceagw-edge-labels text`).
 */
export const UID = Object.freeze(
  Object.fromEntries(
    Object.entries(T).map(([k, t]) => [t, `agw-${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`]),
  ),
);


/** Fit never spreads nodes further apart than this (pixels per layout unit): small graphs sit
 * centred at a readable size instead of filling a wide cell. */
export const MAX_FIT_PX_PER_UNIT = 18;

/**
 * The range that shows the whole graph in a plot of `size` pixels, centred, with room in pixels
 * for the labels (right of the nodes in "TB", above them in "LR").
 * @param {import('./model.js').Graph} graph
 * @param {{ width: number, height: number }} [size] the plot (the margins are taken off here)
 * @returns {{ x: [number, number], y: [number, number] }}
 */
export function fitRange(graph, size = { width: 800, height: 500 }) {
  const [x0, x1, y0, y1] = graph.bounds;
  const area = plotArea(size);
  const pad = graph.orientation === 'LR' ? { l: 40, r: 70, t: 44, b: 36 } : { l: 40, r: 110, t: 40, b: 40 };
  const w = Math.max(20, area.width - pad.l - pad.r);
  const h = Math.max(20, area.height - pad.t - pad.b);
  const kx = Math.min(x1 > x0 ? w / (x1 - x0) : MAX_FIT_PX_PER_UNIT, MAX_FIT_PX_PER_UNIT);
  const ky = Math.min(y1 > y0 ? h / (y1 - y0) : MAX_FIT_PX_PER_UNIT, MAX_FIT_PX_PER_UNIT);
  // the graph's centre goes to the centre of the padded box
  const xmin = (x0 + x1) / 2 - (pad.l + w / 2) / kx;
  const ymin = (y0 + y1) / 2 - (pad.b + h / 2) / ky;
  return { x: [xmin, xmin + area.width / kx], y: [ymin, ymin + area.height / ky] };
}

/**
 * x/y of every edge bucket (fresh, idle, no gradient, bins..., non-finite: the overlay's painting
 * order) plus the bucketing they came from.
 * @param {import('./model.js').Graph} graph @param {import('./model.js').State} state
 */
export function edgeGeometry(graph, state) {
  const b = bucketEdges(graph, state);
  const groups = [b.fresh, b.idle, b.noGrad, ...b.bins, b.nonfinite];
  const dst = (/** @type {number[]} */ g) => Int32Array.from(g, (e) => graph.dst[e]);
  return { buckets: b, paths: groups.map((g) => ({ ...gatherPaths(graph, g), dst: dst(g) })) };
}

/**
 * Label trace contents for the view range: edge values and node names that fit. A module box
 * ("layers.3 · 40%") is labelled inside when its label fits in it, else beside it like a node
 * (only when node labels fit, i.e. zoomed in enough).
 * @param {import('./model.js').Graph} graph @param {import('./model.js').State} state
 * @param {{ x: [number, number], y: [number, number] }} range
 * @param {number} ppu
 * @param {import('./style.js').Theme} theme
 * @param {Float32Array | null} [sizeScale] per-node marker scale (labels sit beside the marker)
 * @param {{ halfW: ArrayLike<number>, kx: number, w: number, h: number } | null} [boxes] box sizes
 */
export function labelData(graph, state, range, ppu, theme, sizeScale = null, boxes = null) {
  const view = /** @type {[number, number, number, number]} */ ([range.x[0], range.x[1], range.y[0], range.y[1]]);
  const labelled = [];
  const texts = new Map();
  for (let e = 0; e < graph.m; e++) {
    const t0 = edgeLabel(state, e);
    // an edited gradient (what-if) is marked with a pencil
    const t = state.edits?.has(e) ? (t0 ? `✎ ${t0}` : '✎') : t0;
    if (t) {
      labelled.push(e);
      texts.set(e, t);
    }
  }
  const edges = visibleIndices(graph.midX, graph.midY, labelled, view, MAX_LABELS);
  const boxItems = graph.boxes ?? [];
  const allNodes = ppu >= MIN_PX_PER_UNIT_FOR_NODE_LABELS || graph.n <= 12;
  const lr = graph.orientation === 'LR';
  const side = lr ? 'top center' : 'middle right';
  /** @type {Map<number, string>} */
  const boxText = new Map();
  /** Boxes whose label fits inside them. */
  const inside = new Set();
  for (const i of boxItems) {
    const width = boxes ? 2 * boxes.halfW[i] * boxes.kx : Infinity;
    const fits = (/** @type {string} */ t) => t.length * LABEL_CHAR_PX + 8 <= width;
    let text = boxLabel(graph, state, i);
    // "layers.11.self_attn · 0%" too long for its box: "…self_attn · 0%" may fit
    const short = boxLabel(graph, state, i, true);
    if (!fits(text) && fits(short)) text = short;
    boxText.set(i, text);
    if (fits(text)) inside.add(i);
  }
  const nodeCandidates = allNodes ? range0(graph.n) : [...inside];
  const nodes = visibleIndices(graph.x, graph.y, nodeCandidates, view, MAX_LABELS);
  const besideBox = (/** @type {number} */ i) => (boxes ? (lr ? boxes.h : 2 * boxes.halfW[i] * boxes.kx) + 6 : nodeSize(ppu) * 2);
  return {
    edges: {
      x: edges.map((e) => graph.midX[e]),
      y: edges.map((e) => graph.midY[e]),
      text: edges.map((e) => texts.get(e)),
      color: edges.map((e) => (state.edgeFlag[e] === 2 ? ALARM_COLOR : state.edits?.has(e) ? EDIT_COLOR : theme.font)),
      size: EDGE_LABEL_GAP,
      index: edges,
    },
    nodes: {
      x: nodes.map((i) => graph.x[i]),
      y: nodes.map((i) => graph.y[i]),
      text: nodes.map((i) => (graph.isBox?.[i] ? `<b>${escapeHtml(boxText.get(i) ?? '')}</b>` : nodeLabel(graph, i))),
      // invisible markers as big as the nodes (or boxes), so plotly sets the text beside them
      size: nodes.map((i) => (graph.isBox?.[i] ? (inside.has(i) ? 1 : besideBox(i)) : nodeSize(ppu) * (sizeScale ? sizeScale[i] : 1) + 2)),
      position: boxItems.length ? nodes.map((i) => (inside.has(i) ? 'middle center' : side)) : side,
      index: nodes,
    },
  };
}

/** @param {number} n */
function range0(n) {
  return Array.from({ length: n }, (_, i) => i);
}

/** @param {number | ViewSpec} view @returns {ViewSpec} */
function asView(view) {
  return typeof view === 'number' ? { range: { x: [0, 1], y: [0, 1] }, size: { width: 1, height: 1 }, selected: view } : view;
}

/**
 * Everything the node, halo, ring and highlight traces show for a state and zoom.
 * @param {import('./model.js').Graph} graph @param {import('./model.js').State} state
 * @param {import('./style.js').Theme} theme @param {number} ppu
 * @param {number | ViewSpec} view the view, or (older callers) the selected item index
 * @param {{ h: number } | null} [box] box size in pixels
 */
export function nodeMarkers(graph, state, theme, ppu, view, box = null) {
  const v = asView(view);
  const selected = v.selected;
  const s = nodeStyles(graph, state, theme);
  const base = nodeSize(ppu);
  const size = Array.from(s.sizeScale, (k) => k * base);
  const isBox = graph.isBox ?? new Uint8Array(graph.n);
  let color = s.color;
  let symbol = s.symbol;
  const opacity = Array.from(s.opacity);
  const boxH = box ? box.h : base * 1.5;
  for (const i of graph.boxes ?? []) size[i] = boxH;
  const shaded = (v.colorMode === 'memory' && v.memory) || (v.colorMode === 'sensitivity' && v.sensitivity);
  if (shaded) {
    // Shaded by saved bytes or by Jacobian norm; the outline still tells the step state.
    color = v.colorMode === 'memory' && v.memory
      ? memoryColors(v.memory.items, graph.n, theme.noMemory)
      : sensitivityColors(/** @type {import('./sensitivity.js').Sensitivity} */ (v.sensitivity), graph.n, theme.noMemory);
    symbol = s.symbol.map((/** @type {string} */ sym) => sym.replace(/-open$/, ''));
    for (let i = 0; i < graph.n; i++) {
      opacity[i] = 1;
      if (isBox[i]) size[i] = boxH * 0.72;
    }
  }
  const halo = state.next >= 0 && !state.done && !isBox[state.next] ? [state.next] : [];
  const ran = state.last >= 0 && state.last < graph.n && !isBox[state.last] && state.last !== state.next ? [state.last] : [];
  const ring = selected >= 0 && selected < graph.n && !isBox[selected] ? [selected] : [];
  const marks = (v.highlight ?? []).filter((i) => i >= 0 && i < graph.n);
  return {
    sizeScale: s.sizeScale,
    nodes: {
      color,
      symbol,
      opacity,
      size,
      line: { color: s.lineColor, width: Array.from(s.lineWidth) },
    },
    halo: { x: halo.map((i) => graph.x[i]), y: halo.map((i) => graph.y[i]), size: base * 2.6 },
    ran: { x: ran.map((i) => graph.x[i]), y: ran.map((i) => graph.y[i]), size: ran.map((i) => base * s.sizeScale[i] * 2.1) },
    ring: { x: ring.map((i) => graph.x[i]), y: ring.map((i) => graph.y[i]), size: base * 2.1 },
    highlight: {
      x: marks.map((i) => graph.x[i]),
      y: marks.map((i) => graph.y[i]),
      size: marks.map((i) => (isBox[i] ? boxH * 1.9 : base * s.sizeScale[i] * 2.3)),
    },
  };
}

/**
 * The module boxes for a state and view: segments of every box trace, the hit points, and the
 * pixel size the labels need.
 * @param {import('./model.js').Graph} graph @param {import('./model.js').State} state
 * @param {ViewSpec} view @param {number} ppu
 */
export function boxTraces(graph, state, view, ppu) {
  const bs = boxSize(view.range, view.size, ppu);
  const hw = boxHalfWidths(graph, bs);
  const boxes = graph.boxes ?? [];
  const px = (/** @type {number} */ p) => p / bs.kx; // pixels to layout units along x
  const next = state.next >= 0 && !state.done && graph.isBox?.[state.next] ? [state.next] : [];
  const ring = view.selected >= 0 && graph.isBox?.[view.selected] ? [view.selected] : [];
  const failed = boxes.filter((i) => state.nodeState[i] === NODE_STATE.failed);
  return {
    size: bs,
    halfW: hw,
    halo: boxSegments(graph, next, hw, px(7)),
    ring: boxSegments(graph, ring, hw, px(5)),
    frame: boxSegments(graph, boxes, hw, px(1.5)),
    failed: boxSegments(graph, failed, hw, px(2.5)),
    body: boxSegments(graph, boxes, hw),
    fill: boxSegments(graph, boxes, hw, 0, (i) => state.progress[i]),
    hit: boxHitPoints(graph, hw),
    widths: { halo: bs.h + 14, ring: bs.h + 9, frame: bs.h + 3, failed: bs.h + 5, body: bs.h, fill: bs.h },
  };
}

/**
 * Badges on nodes whose saved tensors are stale (stepping them raises) or freed, beside the
 * marker's upper-left corner (a box's top-right one), at least BADGE_MIN_PX on screen.
 * @param {import('./model.js').Graph} graph @param {ViewSpec} view @param {number} ppu
 * @param {Float32Array} sizeScale @param {{ halfH: number, kx: number, ky: number }} bs
 * @param {ArrayLike<number>} halfW per item (boxes)
 */
export function badgeData(graph, view, ppu, sizeScale, bs, halfW) {
  const base = nodeSize(ppu);
  const x = [];
  const y = [];
  const symbol = [];
  const color = [];
  const index = [];
  const states = graph.savedState ?? new Uint8Array(0);
  // Never smaller than BADGE_MIN_PX: at Fit the nodes shrink to a few pixels, the mark must not.
  const size = Math.max(BADGE_MIN_PX, 0.8 * base);
  for (let i = 0; i < graph.n; i++) {
    const st = /** @type {1 | 2} */ (states[i]);
    const badge = SAVED_BADGE[st];
    if (!badge) continue;
    if (graph.isBox?.[i]) {
      x.push(graph.x[i] + halfW[i]);
      y.push(graph.y[i] + bs.halfH);
    } else {
      // Beside the node's upper-left corner, not over it (the node's own state colour stays
      // visible) nor over its label on the right.
      const r = 0.45 * base * (sizeScale[i] || 1) + 0.35 * size;
      x.push(graph.x[i] - r / bs.kx);
      y.push(graph.y[i] + r / bs.ky);
    }
    symbol.push(badge.symbol);
    color.push(badge.color);
    index.push(i);
  }
  return { x, y, symbol, color, index, size };
}

/**
 * The initial figure.
 * @param {import('./model.js').Graph} graph
 * @param {import('./model.js').State} state
 * @param {import('./style.js').Theme} theme
 * @param {ViewSpec} view
 */
export function buildFigure(graph, state, theme, view) {
  const gl = graph.n > GL_THRESHOLD;
  const marker = gl ? 'scattergl' : 'scatter';
  const ppu = pxPerUnit(view.range, view.size);
  const bx = boxTraces(graph, state, view, ppu);
  const nm = nodeMarkers(graph, restingState(state), theme, ppu, view, bx.size);
  const labels = labelData(graph, state, view.range, ppu, theme, nm.sizeScale, { halfW: bx.halfW, kx: bx.size.kx, w: bx.size.w, h: bx.size.h });
  const badges = badgeData(graph, view, ppu, nm.sizeScale, bx.size, bx.halfW);
  const sel = selectedEdgePath(graph, view);
  const textPos = graph.orientation === 'LR' ? 'top center' : 'middle right';
  const base = { hoverinfo: 'none', showlegend: false };
  /** @type {any[]} */
  const data = new Array(N_TRACES);
  data[T.edgeSel] = { ...base, type: marker, mode: 'lines', name: 'selected edge', x: sel.x, y: sel.y, line: { color: hexAlpha(SELECT_COLOR, 0.5), width: 11 }, hoverinfo: 'skip', connectgaps: false };
  data[T.edgeHit] = {
    ...base,
    type: marker,
    mode: 'markers',
    name: 'edges',
    x: graph.midX,
    y: graph.midY,
    marker: { size: Math.max(8, nodeSize(ppu) * 0.8), opacity: 0 },
  };
  data[T.edgeLabels] = {
    ...base,
    hoverinfo: 'skip',
    type: 'scatter',
    mode: 'markers+text',
    name: 'edge values',
    marker: { size: labels.edges.size, opacity: 0 },
    x: labels.edges.x,
    y: labels.edges.y,
    text: labels.edges.text,
    textposition: textPos,
    textfont: { color: labels.edges.color, size: 12, family: theme.fontFamily, shadow: 'auto' },
    cliponaxis: false,
  };
  data[T.ring] = {
    ...base,
    hoverinfo: 'skip',
    type: marker,
    mode: 'markers',
    name: 'selected',
    x: nm.ring.x,
    y: nm.ring.y,
    marker: { size: nm.ring.size, symbol: 'circle-open', color: SELECT_COLOR, line: { width: 3 } },
  };
  const boxLine = (/** @type {number} */ t, /** @type {string} */ name, /** @type {{ x: Float32Array, y: Float32Array }} */ seg, /** @type {string} */ color, /** @type {number} */ width) => {
    data[t] = { ...base, hoverinfo: 'skip', type: marker, mode: 'lines', name, x: seg.x, y: seg.y, line: { color, width }, connectgaps: false };
  };
  boxLine(T.boxHalo, 'next module', bx.halo, hexAlpha(NEXT_COLOR, 0.55), bx.widths.halo);
  boxLine(T.boxRing, 'selected module', bx.ring, hexAlpha(SELECT_COLOR, 0.8), bx.widths.ring);
  boxLine(T.boxFrame, 'module boxes', bx.frame, theme.pending, bx.widths.frame);
  boxLine(T.boxFailed, 'failed module', bx.failed, ALARM_COLOR, bx.widths.failed);
  boxLine(T.boxBody, 'module body', bx.body, theme.boxBody, bx.widths.body);
  boxLine(T.boxFill, 'module progress', bx.fill, theme.boxDone, bx.widths.fill);
  data[T.highlight] = {
    ...base,
    hoverinfo: 'skip',
    type: marker,
    mode: 'markers',
    name: 'aliases',
    x: nm.highlight.x,
    y: nm.highlight.y,
    marker: { size: nm.highlight.size, symbol: 'circle-open', color: HIGHLIGHT_COLOR, line: { width: 3 } },
  };
  data[T.nodes] = { ...base, type: marker, mode: 'markers', name: 'nodes', x: graph.x, y: graph.y, marker: hitMarker(graph, nm) };
  data[T.boxHit] = {
    ...base,
    type: marker,
    mode: 'markers',
    name: 'module hit',
    x: bx.hit.x,
    y: bx.hit.y,
    marker: { size: bx.size.h, opacity: 0, color: theme.boxDone },
  };
  data[T.badges] = {
    ...base,
    hoverinfo: 'skip',
    type: marker,
    mode: 'markers',
    name: 'saved tensors stale or freed',
    x: badges.x,
    y: badges.y,
    marker: { size: badges.size, symbol: badges.symbol, color: badges.color, line: { color: theme.outline, width: BADGE_OUTLINE_PX } },
  };
  data[T.nodeLabels] = {
    ...base,
    hoverinfo: 'skip',
    type: 'scatter',
    mode: 'markers+text',
    name: 'node labels',
    marker: { size: labels.nodes.size, opacity: 0 },
    x: labels.nodes.x,
    y: labels.nodes.y,
    text: labels.nodes.text,
    textposition: labels.nodes.position,
    textfont: { color: theme.font, size: 12, family: theme.fontFamily, shadow: 'auto' },
    cliponaxis: false,
  };
  const axis = { visible: false, showgrid: false, zeroline: false, fixedrange: false, autorange: false };
  const layout = {
    width: view.size.width,
    height: view.size.height,
    margin: { ...MARGIN, pad: 0 },
    paper_bgcolor: theme.background,
    plot_bgcolor: theme.background,
    font: { color: theme.font, family: theme.fontFamily },
    xaxis: { ...axis, range: [...view.range.x] },
    yaxis: { ...axis, range: [...view.range.y] },
    showlegend: false,
    hovermode: 'closest',
    hoverdistance: 16,
    dragmode: 'pan',
    uirevision: 'graph',
  };
  const config = {
    // The paper colour goes on the plot div, behind the canvas the overlay paints under plotly's
    // (then transparent) SVG.
    setBackground: paintBehind,
    // plotly 4 shows a "Share chart" button that uploads the figure to cloud.plotly.com: never.
    showSendToCloud: false,
    showEditInChartStudio: false,
    showLink: false,
    plotlyServerURL: '',
    displaylogo: false,
    scrollZoom: true,
    doubleClick: 'reset',
    responsive: false,
    showTips: false,
    modeBarButtonsToRemove: ['toImage', 'select2d', 'lasso2d', 'autoScale2d', 'resetScale2d', 'toggleSpikelines', 'hoverClosestCartesian', 'hoverCompareCartesian'],
  };
  data.forEach((trace, t) => {
    trace.uid = UID[t];
  });
  return { data, layout, config, gl };
}

/**
 * The glow path under the selected edge (empty when none).
 * @param {import('./model.js').Graph} graph @param {ViewSpec} view
 */
export function selectedEdgePath(graph, view) {
  const e = view.selectedEdge ?? -1;
  return gatherPaths(graph, e >= 0 && e < graph.m ? [e] : []);
}

/**
 * One restyle for several traces: plotly applies `update[attr][k]` to `traces[k]` and skips
 * `undefined`, so per-trace attributes can share a call (one recalc, one redraw).
 * @param {[number, Record<string, unknown>][]} patches [trace index, {attr: value}]
 * @returns {[Record<string, unknown[]>, number[]]}
 */
export function mergeRestyles(patches) {
  const traces = patches.map(([t]) => t);
  /** @type {Record<string, unknown[]>} */
  const update = {};
  patches.forEach(([, attrs], k) => {
    for (const [attr, value] of Object.entries(attrs)) {
      if (!update[attr]) update[attr] = new Array(traces.length).fill(undefined);
      update[attr][k] = value;
    }
  });
  return [update, traces];
}

/**
 * The node state every node is drawn in by plotly: pending, nothing next. The step state itself
 * is painted by the overlay, so plotly's traces (hit markers, labels placed beside them) do not
 * change when a step only moves the state on.
 * @param {import('./model.js').State} state
 * @returns {import('./model.js').State}
 */
export function restingState(state) {
  return { ...state, nodeState: new Uint8Array(state.nodeState.length), next: -1 };
}

/**
 * The node trace's marker: invisible over real nodes (the overlay paints them), answering hover
 * and click; over a module box it shows only in memory/sensitivity mode, on top of the box.
 * @param {import('./model.js').Graph} graph @param {ReturnType<typeof nodeMarkers>} nm
 */
function hitMarker(graph, nm) {
  const isBox = graph.isBox ?? new Uint8Array(graph.n);
  const opacity = Array.from(nm.nodes.opacity, (o, i) => (isBox[i] ? o : 0));
  return { color: nm.nodes.color, symbol: nm.nodes.symbol, size: nm.nodes.size, opacity };
}

/**
 * What the overlay canvas paints for a state and view: every edge by bucket, the next node's
 * halo, the ring of the node that ran last, every node marker in its state, the colour bar.
 * @param {import('./model.js').Graph} graph @param {import('./model.js').State} state
 * @param {import('./style.js').Theme} theme
 * @param {ViewSpec} view
 * @returns {import('./overlay.js').Scene}
 */
export function overlayScene(graph, state, theme, view) {
  const ppu = pxPerUnit(view.range, view.size);
  const { paths } = edgeGeometry(graph, state);
  const bs = boxSize(view.range, view.size, ppu);
  const nm = nodeMarkers(graph, state, theme, ppu, view, bs);
  const shaded = (view.colorMode === 'memory' && view.memory) || (view.colorMode === 'sensitivity' && view.sensitivity);
  return {
    edges: edgeLayers(paths, theme),
    halo: nm.halo,
    ran: nm.ran,
    nodes: {
      x: graph.x,
      y: graph.y,
      color: nm.nodes.color,
      symbol: nm.nodes.symbol,
      size: nm.nodes.size,
      opacity: nm.nodes.opacity,
      lineColor: nm.nodes.line.color,
      lineWidth: nm.nodes.line.width,
      isBox: graph.isBox ?? null,
    },
    frames: graph.frames ?? [],
    copies: graph.copies ?? null,
    boxHalfW: graph.boxes?.length ? boxHalfWidths(graph, bs) : null,
    boxHalfH: bs.halfH,
    frameColor: theme.pending,
    frameFont: theme.fontFamily,
    fontColor: theme.font,
    colorbar: shaded ? null : colorbar(state, theme),
  };
}

/**
 * plotly's `setBackground`: the paper colour on the graph div itself, so the overlay canvas
 * (first in plotly's container) shows through the SVG. The PNG button is removed for the same
 * reason: plotly's image would lack the canvas (`AutogradWidget.to_figure` exports the state).
 * @param {any} gd @param {string} color
 */
export function paintBehind(gd, color) {
  if (gd?.style) gd.style.background = color;
}

/**
 * The plotly patches for a state and view: what depends on the zoom (marker sizes, box widths,
 * which labels fit), on the selection and colour mode, and on the state (labels, boxes). Edges
 * and node markers are the overlay's; the caller drops patches equal to what plotly already
 * shows (`changedPatches`), so a step that changes no label or box costs plotly nothing.
 * @param {import('./model.js').Graph} graph @param {import('./model.js').State} state
 * @param {import('./style.js').Theme} theme
 * @param {ViewSpec} view
 * @param {number} [ppu]
 * @returns {[number, Record<string, unknown>][]}
 */
export function viewPatches(graph, state, theme, view, ppu = pxPerUnit(view.range, view.size)) {
  const bx = boxTraces(graph, state, view, ppu);
  const nm = nodeMarkers(graph, restingState(state), theme, ppu, view, bx.size);
  const labels = labelData(graph, state, view.range, ppu, theme, nm.sizeScale, { halfW: bx.halfW, kx: bx.size.kx, w: bx.size.w, h: bx.size.h });
  const badges = badgeData(graph, view, ppu, nm.sizeScale, bx.size, bx.halfW);
  const sel = selectedEdgePath(graph, view);
  const seg = (/** @type {{ x: Float32Array, y: Float32Array }} */ s, /** @type {number} */ w) => ({ x: s.x, y: s.y, 'line.width': w });
  return [
    [T.nodes, (({ color, symbol, size, opacity }) => ({ 'marker.color': color, 'marker.symbol': symbol, 'marker.size': size, 'marker.opacity': opacity }))(hitMarker(graph, nm))],
    [T.ring, { x: nm.ring.x, y: nm.ring.y, 'marker.size': nm.ring.size }],
    [T.highlight, { x: nm.highlight.x, y: nm.highlight.y, 'marker.size': nm.highlight.size }],
    [T.edgeSel, { x: sel.x, y: sel.y }],
    [T.boxHalo, seg(bx.halo, bx.widths.halo)],
    [T.boxRing, seg(bx.ring, bx.widths.ring)],
    [T.boxFrame, seg(bx.frame, bx.widths.frame)],
    [T.boxFailed, seg(bx.failed, bx.widths.failed)],
    [T.boxBody, seg(bx.body, bx.widths.body)],
    [T.boxFill, seg(bx.fill, bx.widths.fill)],
    [T.boxHit, { x: bx.hit.x, y: bx.hit.y, 'marker.size': bx.size.h }],
    [T.badges, { x: badges.x, y: badges.y, 'marker.symbol': badges.symbol, 'marker.color': badges.color, 'marker.size': badges.size }],
    [T.edgeHit, { 'marker.size': Math.max(8, nodeSize(ppu) * 0.8) }],
    [T.edgeLabels, { x: labels.edges.x, y: labels.edges.y, text: labels.edges.text, 'textfont.color': labels.edges.color }],
    [T.nodeLabels, { x: labels.nodes.x, y: labels.nodes.y, text: labels.nodes.text, textposition: labels.nodes.position, 'marker.size': labels.nodes.size }],
  ];
}

/**
 * The patches in `patches` that change something: attribute values are compared with `shown`
 * (what plotly last got, per trace and attribute; updated in place), arrays element by element.
 * @param {[number, Record<string, unknown>][]} patches
 * @param {Map<number, Record<string, unknown>>} shown
 * @returns {[number, Record<string, unknown>][]}
 */
export function changedPatches(patches, shown) {
  /** @type {[number, Record<string, unknown>][]} */
  const out = [];
  for (const [t, attrs] of patches) {
    const had = shown.get(t) ?? {};
    /** @type {Record<string, unknown>} */
    const diff = {};
    let any = false;
    for (const [k, v] of Object.entries(attrs)) {
      if (!sameValue(had[k], v)) {
        diff[k] = v;
        any = true;
      }
    }
    if (any) {
      out.push([t, diff]);
      shown.set(t, { ...had, ...diff });
    }
  }
  return out;
}

/** @param {unknown} a @param {unknown} b */
function sameValue(a, b) {
  if (a === b) return true;
  const arr = (/** @type {unknown} */ v) => Array.isArray(v) || ArrayBuffer.isView(v);
  if (!arr(a) || !arr(b)) return false;
  const x = /** @type {ArrayLike<unknown>} */ (a);
  const y = /** @type {ArrayLike<unknown>} */ (b);
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) {
    const u = x[i];
    const w = y[i];
    if (u !== w && !(Number.isNaN(u) && Number.isNaN(w))) return false;
  }
  return true;
}

/**
 * Merge patches aimed at the same trace (later wins), then {@link mergeRestyles}.
 * @param {[number, Record<string, unknown>][]} patches
 */
export function combine(patches) {
  /** @type {Map<number, Record<string, unknown>>} */
  const byTrace = new Map();
  for (const [t, attrs] of patches) byTrace.set(t, { ...(byTrace.get(t) ?? {}), ...attrs });
  return mergeRestyles([...byTrace.entries()]);
}

