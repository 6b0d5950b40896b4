/**
 * The plotly figure: trace layout, the initial data/layout/config, and the restyle patches a new
 * state or a new view range needs. Pure: returns plain objects, calls no plotly function, so the
 * whole mapping is unit-tested without a browser.
 */
import { formatNumber } from './format.js';
import { MARGIN, nodeSize, plotArea, pxPerUnit } from './geometry.js';
import { LABEL_CHAR_PX, boxHalfWidths, boxHitPoints, boxLabel, boxSegments, boxSize } from './groups.js';
import { edgeLabel, escapeHtml, nodeLabel, visibleIndices } from './labels.js';
import { memoryColors } from './memory.js';
import { sensitivityColors } from './sensitivity.js';
import { NODE_STATE } from './model.js';
import {
  ALARM_COLOR,
  EDIT_COLOR,
  HIGHLIGHT_COLOR,
  N_BINS,
  NEXT_COLOR,
  SAVED_BADGE,
  SELECT_COLOR,
  binWidth,
  bucketEdges,
  decadeTicks,
  discreteColorscale,
  gatherPaths,
  nodeStyles,
  scaleRange,
} from './style.js';

export { MARGIN, nodeSize, plotArea, pxPerUnit };

/** Above this many nodes the marker and line traces are WebGL (`scattergl`). */
export const GL_THRESHOLD = 2000;
/** At most this many labels of each kind are drawn; more in view means none (zoom in). */
export const MAX_LABELS = 400;
/** Node labels need at least this many pixels per layout unit to fit between neighbours. */
export const MIN_PX_PER_UNIT_FOR_NODE_LABELS = 28;

/** Edge value labels keep this many pixels (an invisible marker) between the line and the text. */
const EDGE_LABEL_GAP = 7;

/** Trace indices, in drawing order (later is on top). */
export const T = Object.freeze({
  edgeSel: 0, // glow under the selected edge
  fresh: 1,
  idle: 2,
  noGrad: 3,
  bin0: 4, // bins 0..N_BINS-1 are traces bin0..bin0+N_BINS-1
  nonfinite: 4 + N_BINS,
  edgeHit: 5 + N_BINS,
  edgeLabels: 6 + N_BINS,
  halo: 7 + N_BINS,
  ring: 8 + N_BINS,
  boxHalo: 9 + N_BINS, // module boxes are thick line segments: glow, frame, body, progress
  boxRing: 10 + N_BINS,
  boxFrame: 11 + N_BINS,
  boxFailed: 12 + N_BINS,
  boxBody: 13 + N_BINS,
  boxFill: 14 + N_BINS,
  highlight: 15 + N_BINS, // nodes aliasing the saved tensor open in the inspector
  nodes: 16 + N_BINS,
  boxHit: 17 + N_BINS, // invisible markers over the boxes' width (hover, click)
  badges: 18 + N_BINS, // stale / freed saved tensors
  nodeLabels: 19 + N_BINS,
});
export const N_TRACES = 20 + N_BINS;

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

/** Edge traces whose x/y change with the state, in the order {@link edgeGeometry} returns. */
export const EDGE_TRACES = [T.fresh, T.idle, T.noGrad, ...Array.from({ length: N_BINS }, (_, b) => T.bin0 + b), T.nonfinite];

/** Fit never spreads nodes further apart than this (pixels per layout unit): small graphs sit
 * centred at a readable size instead of filling a wide cell. */
export const MAX_FIT_PX_PER_UNIT = 200;

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
 * x/y for every edge trace ({@link EDGE_TRACES} order) plus the bucketing they came from.
 * @param {import('./model.js').Graph} graph @param {import('./model.js').State} state
 */
export function edgeGeometry(graph, state) {
  const b = bucketEdges(graph, state);
  const groups = [b.fresh, b.idle, b.noGrad, ...b.bins, b.nonfinite];
  return { buckets: b, paths: groups.map((g) => gatherPaths(graph, g)) };
}

/**
 * The edge-midpoint trace carries the colour bar: marker colour = log10 norm of flowed edges.
 * @param {import('./model.js').Graph} graph @param {import('./model.js').State} state
 * @param {import('./style.js').Theme} theme
 */
export function colorbarMarker(graph, state, theme) {
  const range = scaleRange(state.normRange);
  const color = new Array(graph.m);
  for (let e = 0; e < graph.m; e++) {
    const v = state.edgeNorm[e];
    color[e] = v > 0 && Number.isFinite(v) ? Math.log10(v) : null;
  }
  const r = range ?? [0, 1];
  const ticks = decadeTicks(r, (v) => formatNumber(v, 2));
  return {
    color,
    colorscale: discreteColorscale(theme.bins),
    cmin: r[0],
    cmax: r[1],
    showscale: range !== null,
    opacity: 0,
    colorbar: {
      title: { text: '‖grad‖', side: 'top', font: { color: theme.font, size: 11 } },
      tickvals: ticks.tickvals,
      ticktext: ticks.ticktext,
      tickfont: { color: theme.fontMuted, size: 10 },
      thickness: 10,
      len: 0.55,
      lenmode: 'fraction',
      x: 1.005,
      xanchor: 'left',
      xpad: 4,
      y: 0.5,
      outlinewidth: 0,
    },
  };
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
 * Badges on nodes whose saved tensors are stale (stepping them raises) or freed, at the marker's
 * top-right corner.
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
  for (let i = 0; i < graph.n; i++) {
    const st = /** @type {1 | 2} */ (states[i]);
    const badge = SAVED_BADGE[st];
    if (!badge) continue;
    if (graph.isBox?.[i]) {
      x.push(graph.x[i] + halfW[i]);
      y.push(graph.y[i] + bs.halfH);
    } else {
      const r = (0.45 * base * (sizeScale[i] || 1));
      x.push(graph.x[i] + r / bs.kx);
      y.push(graph.y[i] + r / bs.ky);
    }
    symbol.push(badge.symbol);
    color.push(badge.color);
    index.push(i);
  }
  return { x, y, symbol, color, index, size: Math.max(9, 0.6 * base) };
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
  const { paths } = edgeGeometry(graph, state);
  const bx = boxTraces(graph, state, view, ppu);
  const nm = nodeMarkers(graph, state, theme, ppu, view, bx.size);
  const labels = labelData(graph, state, view.range, ppu, theme, nm.sizeScale, { halfW: bx.halfW, kx: bx.size.kx, w: bx.size.w, h: bx.size.h });
  const badges = badgeData(graph, view, ppu, nm.sizeScale, bx.size, bx.halfW);
  const sel = selectedEdgePath(graph, view);
  const textPos = graph.orientation === 'LR' ? 'top center' : 'middle right';
  const base = { hoverinfo: 'none', showlegend: false };
  /** @type {any[]} */
  const data = new Array(N_TRACES);
  const line = (/** @type {number} */ t, /** @type {string} */ name, /** @type {any} */ style) => {
    data[t] = { ...base, type: marker, mode: 'lines', name, x: paths[EDGE_TRACES.indexOf(t)].x, y: paths[EDGE_TRACES.indexOf(t)].y, line: style, hoverinfo: 'skip', connectgaps: false };
  };
  data[T.edgeSel] = { ...base, type: marker, mode: 'lines', name: 'selected edge', x: sel.x, y: sel.y, line: { color: hexAlpha(SELECT_COLOR, 0.5), width: 11 }, hoverinfo: 'skip', connectgaps: false };
  line(T.fresh, 'just computed', { color: hexAlpha(NEXT_COLOR, 0.45), width: 9 });
  line(T.idle, 'not flowed', { color: theme.idleEdge, width: 1.2 });
  line(T.noGrad, 'no gradient', { color: theme.noGradEdge, width: 1.2, dash: 'dot' });
  for (let b = 0; b < N_BINS; b++) line(T.bin0 + b, `norm bin ${b}`, { color: theme.bins[b], width: binWidth(b) });
  line(T.nonfinite, 'NaN/inf', { color: ALARM_COLOR, width: 3, dash: 'dash' });
  data[T.edgeHit] = {
    ...base,
    type: marker,
    mode: 'markers',
    name: 'edges',
    x: graph.midX,
    y: graph.midY,
    marker: { ...colorbarMarker(graph, state, theme), size: Math.max(8, nodeSize(ppu) * 0.8) },
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
  data[T.halo] = {
    ...base,
    hoverinfo: 'skip',
    type: marker,
    mode: 'markers',
    name: 'next',
    x: nm.halo.x,
    y: nm.halo.y,
    marker: { size: nm.halo.size, color: hexAlpha(NEXT_COLOR, 0.35), line: { color: NEXT_COLOR, width: 2 } },
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
  data[T.nodes] = { ...base, type: marker, mode: 'markers', name: 'nodes', x: graph.x, y: graph.y, marker: nm.nodes };
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
    marker: { size: badges.size, symbol: badges.symbol, color: badges.color, line: { color: theme.background, width: 1 } },
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
    modeBarButtonsToRemove: ['select2d', 'lasso2d', 'autoScale2d', 'resetScale2d', 'toggleSpikelines', 'hoverClosestCartesian', 'hoverCompareCartesian'],
    toImageButtonOptions: { filename: 'autograd_widget', scale: 2 },
  };
  data.forEach((trace, t) => {
    trace.uid = t >= T.bin0 && t < T.bin0 + N_BINS ? `agw-bin${t - T.bin0}` : UID[t];
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
 * The patches for a new state: edges regrouped, colour bar, node styles, the halo, labels, box
 * progress. Nothing about the graph's structure is resent.
 * @param {import('./model.js').Graph} graph @param {import('./model.js').State} state
 * @param {import('./style.js').Theme} theme
 * @param {ViewSpec} view
 * @returns {[number, Record<string, unknown>][]}
 */
export function statePatches(graph, state, theme, view) {
  const ppu = pxPerUnit(view.range, view.size);
  const { paths } = edgeGeometry(graph, state);
  /** @type {[number, Record<string, unknown>][]} */
  const patches = EDGE_TRACES.map((t, k) => [t, { x: paths[k].x, y: paths[k].y }]);
  const cb = colorbarMarker(graph, state, theme);
  patches.push([T.edgeHit, {
    'marker.color': cb.color,
    'marker.cmin': cb.cmin,
    'marker.cmax': cb.cmax,
    'marker.showscale': cb.showscale,
    'marker.colorbar.tickvals': cb.colorbar.tickvals,
    'marker.colorbar.ticktext': cb.colorbar.ticktext,
  }]);
  patches.push(...viewPatches(graph, state, theme, view, ppu));
  return patches;
}

/**
 * The patches that depend on the zoom (marker sizes, box widths, which labels fit), on the
 * selection and colour mode, and on the state.
 * @param {import('./model.js').Graph} graph @param {import('./model.js').State} state
 * @param {import('./style.js').Theme} theme
 * @param {ViewSpec} view
 * @param {number} [ppu]
 * @returns {[number, Record<string, unknown>][]}
 */
export function viewPatches(graph, state, theme, view, ppu = pxPerUnit(view.range, view.size)) {
  const bx = boxTraces(graph, state, view, ppu);
  const nm = nodeMarkers(graph, state, theme, ppu, view, bx.size);
  const labels = labelData(graph, state, view.range, ppu, theme, nm.sizeScale, { halfW: bx.halfW, kx: bx.size.kx, w: bx.size.w, h: bx.size.h });
  const badges = badgeData(graph, view, ppu, nm.sizeScale, bx.size, bx.halfW);
  const sel = selectedEdgePath(graph, view);
  const seg = (/** @type {{ x: Float32Array, y: Float32Array }} */ s, /** @type {number} */ w) => ({ x: s.x, y: s.y, 'line.width': w });
  return [
    [T.nodes, {
      'marker.color': nm.nodes.color,
      'marker.symbol': nm.nodes.symbol,
      'marker.opacity': nm.nodes.opacity,
      'marker.size': nm.nodes.size,
      'marker.line.color': nm.nodes.line.color,
      'marker.line.width': nm.nodes.line.width,
    }],
    [T.halo, { x: nm.halo.x, y: nm.halo.y, 'marker.size': nm.halo.size }],
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
 * Merge patches aimed at the same trace (later wins), then {@link mergeRestyles}.
 * @param {[number, Record<string, unknown>][]} patches
 */
export function combine(patches) {
  /** @type {Map<number, Record<string, unknown>>} */
  const byTrace = new Map();
  for (const [t, attrs] of patches) byTrace.set(t, { ...(byTrace.get(t) ?? {}), ...attrs });
  return mergeRestyles([...byTrace.entries()]);
}

/** "#f5b700" + 0.35 -> "rgba(245,183,0,0.35)". @param {string} hex @param {number} a */
export function hexAlpha(hex, a) {
  const h = hex.replace('#', '');
  const [r, g, b] = [0, 2, 4].map((k) => parseInt(h.slice(k, k + 2), 16));
  return `rgba(${r},${g},${b},${a})`;
}
