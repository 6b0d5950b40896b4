/**
 * The plotly figure: trace layout, the initial data/layout/config, and the restyle patches a new
 * state or a new view range needs. Pure: returns plain objects, calls no plotly function, so the
 * whole mapping is unit-tested without a browser.
 */
import { formatNumber } from './format.js';
import { edgeLabel, nodeLabel, visibleIndices } from './labels.js';
import {
  ALARM_COLOR,
  N_BINS,
  NEXT_COLOR,
  SELECT_COLOR,
  binWidth,
  bucketEdges,
  decadeTicks,
  discreteColorscale,
  gatherPaths,
  nodeStyles,
  scaleRange,
} from './style.js';

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
  fresh: 0,
  idle: 1,
  noGrad: 2,
  bin0: 3, // bins 0..N_BINS-1 are traces bin0..bin0+N_BINS-1
  nonfinite: 3 + N_BINS,
  edgeHit: 4 + N_BINS,
  edgeLabels: 5 + N_BINS,
  halo: 6 + N_BINS,
  ring: 7 + N_BINS,
  nodes: 8 + N_BINS,
  nodeLabels: 9 + N_BINS,
});
export const N_TRACES = 10 + N_BINS;

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

/** Plot margins in pixels; the right one always holds the colour bar, so the graph does not
 * jump when the bar appears. */
export const MARGIN = Object.freeze({ l: 8, r: 64, t: 8, b: 8 });
/** Fit never spreads nodes further apart than this (pixels per layout unit): small graphs sit
 * centred at a readable size instead of filling a wide cell. */
export const MAX_FIT_PX_PER_UNIT = 200;

/**
 * The plotting area (inside the margins) of a plot of `size`.
 * @param {{ width: number, height: number }} size
 */
export function plotArea(size) {
  return { width: Math.max(40, size.width - MARGIN.l - MARGIN.r), height: Math.max(40, size.height - MARGIN.t - MARGIN.b) };
}

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
 * Pixels per layout unit for a view range and plot size (the smaller axis decides).
 * @param {{ x: [number, number], y: [number, number] }} range
 * @param {{ width: number, height: number }} size plot area in pixels
 */
export function pxPerUnit(range, size) {
  const area = plotArea(size);
  const sx = Math.abs(range.x[1] - range.x[0]) || 1;
  const sy = Math.abs(range.y[1] - range.y[0]) || 1;
  return Math.min(area.width / sx, area.height / sy);
}

/** Marker diameter in pixels for a zoom level: nodes grow as the user zooms in. @param {number} ppu */
export function nodeSize(ppu) {
  return Math.max(5, Math.min(24, 0.3 * ppu));
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
 * Label trace contents for the view range: edge values and node names that fit.
 * @param {import('./model.js').Graph} graph @param {import('./model.js').State} state
 * @param {{ x: [number, number], y: [number, number] }} range
 * @param {number} ppu
 * @param {import('./style.js').Theme} theme
 */
export function labelData(graph, state, range, ppu, theme, sizeScale = null) {
  const view = /** @type {[number, number, number, number]} */ ([range.x[0], range.x[1], range.y[0], range.y[1]]);
  const labelled = [];
  const texts = new Map();
  for (let e = 0; e < graph.m; e++) {
    const t = edgeLabel(state, e);
    if (t) {
      labelled.push(e);
      texts.set(e, t);
    }
  }
  const edges = visibleIndices(graph.midX, graph.midY, labelled, view, MAX_LABELS);
  const nodeCandidates = ppu >= MIN_PX_PER_UNIT_FOR_NODE_LABELS || graph.n <= 12 ? range0(graph.n) : [];
  const nodes = visibleIndices(graph.x, graph.y, nodeCandidates, view, MAX_LABELS);
  return {
    edges: {
      x: edges.map((e) => graph.midX[e]),
      y: edges.map((e) => graph.midY[e]),
      text: edges.map((e) => texts.get(e)),
      color: edges.map((e) => (state.edgeFlag[e] === 2 ? ALARM_COLOR : theme.font)),
      size: EDGE_LABEL_GAP,
      index: edges,
    },
    nodes: {
      x: nodes.map((i) => graph.x[i]),
      y: nodes.map((i) => graph.y[i]),
      text: nodes.map((i) => nodeLabel(graph, i)),
      // invisible markers as big as the nodes, so plotly sets the text beside them, not on them
      size: nodes.map((i) => nodeSize(ppu) * (sizeScale ? sizeScale[i] : 1) + 2),
      index: nodes,
    },
  };
}

/** @param {number} n */
function range0(n) {
  return Array.from({ length: n }, (_, i) => i);
}

/**
 * Everything the node, halo and ring traces show for a state and zoom.
 * @param {import('./model.js').Graph} graph @param {import('./model.js').State} state
 * @param {import('./style.js').Theme} theme @param {number} ppu @param {number} selected node index or -1
 */
export function nodeMarkers(graph, state, theme, ppu, selected) {
  const s = nodeStyles(graph, state, theme);
  const base = nodeSize(ppu);
  const size = Array.from(s.sizeScale, (k) => k * base);
  const halo = state.next >= 0 && !state.done ? [state.next] : [];
  const ring = selected >= 0 ? [selected] : [];
  return {
    sizeScale: s.sizeScale,
    nodes: {
      color: s.color,
      symbol: s.symbol,
      opacity: Array.from(s.opacity),
      size,
      line: { color: s.lineColor, width: Array.from(s.lineWidth) },
    },
    halo: { x: halo.map((i) => graph.x[i]), y: halo.map((i) => graph.y[i]), size: base * 2.6 },
    ring: { x: ring.map((i) => graph.x[i]), y: ring.map((i) => graph.y[i]), size: base * 2.1 },
  };
}

/**
 * The initial figure.
 * @param {import('./model.js').Graph} graph
 * @param {import('./model.js').State} state
 * @param {import('./style.js').Theme} theme
 * @param {{ range: { x: [number, number], y: [number, number] }, size: { width: number, height: number },
 *   selected: number }} view
 */
export function buildFigure(graph, state, theme, view) {
  const gl = graph.n > GL_THRESHOLD;
  const marker = gl ? 'scattergl' : 'scatter';
  const ppu = pxPerUnit(view.range, view.size);
  const { paths } = edgeGeometry(graph, state);
  const nm = nodeMarkers(graph, state, theme, ppu, view.selected);
  const labels = labelData(graph, state, view.range, ppu, theme, nm.sizeScale);
  const textPos = graph.orientation === 'LR' ? 'top center' : 'middle right';
  const base = { hoverinfo: 'none', showlegend: false };
  /** @type {any[]} */
  const data = new Array(N_TRACES);
  const line = (/** @type {number} */ t, /** @type {string} */ name, /** @type {any} */ style) => {
    data[t] = { ...base, type: marker, mode: 'lines', name, x: paths[EDGE_TRACES.indexOf(t)].x, y: paths[EDGE_TRACES.indexOf(t)].y, line: style, hoverinfo: 'skip', connectgaps: false };
  };
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
  data[T.nodes] = { ...base, type: marker, mode: 'markers', name: 'nodes', x: graph.x, y: graph.y, marker: nm.nodes };
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
    textposition: textPos,
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
 * The patches for a new state: edges regrouped, colour bar, node styles, the halo, labels.
 * Nothing about the graph's structure is resent.
 * @param {import('./model.js').Graph} graph @param {import('./model.js').State} state
 * @param {import('./style.js').Theme} theme
 * @param {{ range: { x: [number, number], y: [number, number] }, size: { width: number, height: number },
 *   selected: number }} view
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
 * The patches that depend on the zoom (marker sizes, which labels fit) and on the state.
 * @param {import('./model.js').Graph} graph @param {import('./model.js').State} state
 * @param {import('./style.js').Theme} theme
 * @param {{ range: { x: [number, number], y: [number, number] }, size: { width: number, height: number },
 *   selected: number }} view
 * @param {number} [ppu]
 * @returns {[number, Record<string, unknown>][]}
 */
export function viewPatches(graph, state, theme, view, ppu = pxPerUnit(view.range, view.size)) {
  const nm = nodeMarkers(graph, state, theme, ppu, view.selected);
  const labels = labelData(graph, state, view.range, ppu, theme, nm.sizeScale);
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
    [T.edgeHit, { 'marker.size': Math.max(8, nodeSize(ppu) * 0.8) }],
    [T.edgeLabels, { x: labels.edges.x, y: labels.edges.y, text: labels.edges.text, 'textfont.color': labels.edges.color }],
    [T.nodeLabels, { x: labels.nodes.x, y: labels.nodes.y, text: labels.nodes.text, 'marker.size': labels.nodes.size }],
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
