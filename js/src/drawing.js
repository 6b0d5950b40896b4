/**
 * What the canvas paints for a graph, a state and a view, in layout units: every item as a box
 * of the size the layout gave it (its label inside), coloured by step state (or by memory /
 * sensitivity), edges by gradient norm with arrowheads, the marks of a step (next: gold halo;
 * just ran: teal ring and its out-edges glowing; selected: blue ring; aliases: magenta ring),
 * stale/freed badges, folded modules with their progress, frames, leaf copies, the colour bar.
 * Pure: arrays and strings, no DOM; `canvas.js` paints it, `labelplace.js` places the text.
 */
import { GLYPHS, bucketEdges, gatherPaths, hexAlpha, mixColor, kindKey, KIND_STYLE, FAILED_COLOR, GROUP_COLOR, SAVED_BADGE, ALARM_COLOR, EDIT_COLOR } from './style.js';
import { NODE_STATE } from './model.js';
import { luminance } from './theme.js';
import { colorbar, edgeLayers } from './paintstyle.js';
import { memoryColors } from './memory.js';
import { gainColors } from './gain.js';
import { sensitivityColors } from './sensitivity.js';
import { edgeLabel } from './labels.js';
import { progressText } from './groups.js';

/** Width (units) of one character of a box label and a box's text margin: as Python sizes them
 * (`view/placement.py` CHAR_W and _PAD_W), used only when a payload carries no sizes. */
export const CHAR_W = 0.62;
const PAD_W = 1.2;

/**
 * @typedef {object} ItemStyle per item, indexed like the graph's items
 * @property {string[]} fill
 * @property {string[]} stroke
 * @property {Float32Array} lineWidth px
 * @property {Uint8Array} dashed 1: dashed outline (no gradient flowed; a leaf copy)
 * @property {string[]} text label colour, chosen for contrast with the fill
 * @property {Float32Array} w box width (units)
 * @property {Float32Array} h box height (units)
 *
 * @typedef {object} Drawing
 * @property {ItemStyle} items
 * @property {import('./paintstyle.js').EdgeLayer[]} edges in painting order
 * @property {{ x: Float32Array, y: Float32Array }} selectedEdge glow path ([] when none)
 * @property {number} selectedEdgeIndex the selected edge, -1: none
 * @property {{ next: number, ran: number, selected: number, highlight: number[], focus: number }} marks item indices, -1: none
 *   (`focus`: the keyboard focus, a11y.js)
 * @property {Uint8Array} glyph per item: its step state's glyph (GLYPHS; colour is never the only carrier of a state)
 * @property {{ item: number, symbol: string, color: string }[]} badges
 * @property {{ index: number, text: string, color: string }[]} edgeTexts edges with a value label
 * @property {Float32Array | null} progress per item: a folded box's done fraction
 * @property {import('./paintstyle.js').Colorbar | null} colorbar
 * @property {{ background: string, frame: string, frameFill: string, font: string, fontMuted: string, fontFamily: string, boxBody: string, boxDone: string }} look
 */

/**
 * Each item's box size in layout units: the payload's (the layout's own), else estimated from the
 * label as Python would size it.
 * @param {import('./model.js').Graph} graph
 * @returns {{ w: Float32Array, h: Float32Array }}
 */
export function itemSizes(graph) {
  const w = new Float32Array(graph.n);
  const h = new Float32Array(graph.n);
  for (let i = 0; i < graph.n; i++) {
    const bw = graph.boxW?.[i] ?? 0;
    const bh = graph.boxH?.[i] ?? 0;
    if (bw > 0 && bh > 0) {
      w[i] = bw;
      h[i] = bh;
      continue;
    }
    const lines = itemText(graph, null, i);
    const chars = Math.max(3, lines.name.length, lines.sub.length);
    w[i] = chars * CHAR_W + PAD_W;
    h[i] = (lines.sub ? 2 : 1) + 0.5;
  }
  return { w, h };
}

/**
 * The text of item `i`: a node's short op name (a leaf: its name, the shape under it), a folded
 * box's title and "12 ops · 40%" (with `state`; "12 ops" without).
 * @param {import('./model.js').Graph} graph @param {import('./model.js').State | null} state @param {number} i
 * @returns {{ name: string, sub: string, cuttable: boolean }}
 * @example itemText(graph, state, 0) // { name: 'Add', sub: '', cuttable: false }
 */
export function itemText(graph, state, i) {
  if (graph.isBox?.[i]) {
    const members = graph.members?.[i] ?? 0;
    const p = state ? ` · ${progressText(state.progress[i])}` : '';
    return { name: graph.titles?.[i] || graph.labels[i] || graph.modules[i] || 'module', sub: `${members} op${members === 1 ? '' : 's'}${p}`, cuttable: true };
  }
  const name = graph.labels[i] || graph.names[i] || graph.ids[i] || '';
  // a node drawn as its whole (compact) module: the module's title, the op under it
  const title = graph.titles?.[i];
  if (title) return { name: title, sub: name, cuttable: true };
  const shape = graph.kinds[i] === 'accumulate_grad' || graph.kinds[i] === 'parameter' || graph.kinds[i] === 'input' ? graph.shapes[i] || '' : '';
  // unnamed leaves are already called e.g. "input 0 [3, 4]": no second shape
  return { name, sub: shape && !name.endsWith(shape) ? shape : '', cuttable: false };
}

/** Black or white, whichever reads better on `fill` (the host theme's luminance measure). @param {string} fill @param {string} fallback */
function textOn(fill, fallback) {
  const lum = luminance(fill);
  if (lum === null) return fallback;
  return lum > 0.6 ? '#111111' : '#ffffff';
}

/**
 * Box styles for the step state: pending washed out, done in its kind's colour, next outlined
 * gold, failed red, "no gradient" hollow and dashed. In memory / sensitivity mode the fill is that
 * mode's colour and the outline still tells the step state.
 * @param {import('./model.js').Graph} graph @param {import('./model.js').State} state
 * @param {import('./style.js').Theme} theme
 * @param {string[] | null} [shade] per item fill of a colour mode
 * @returns {ItemStyle}
 */
export function itemStyles(graph, state, theme, shade = null) {
  const { n } = graph;
  const { w, h } = itemSizes(graph);
  const fill = new Array(n);
  const stroke = new Array(n);
  const text = new Array(n);
  const lineWidth = new Float32Array(n);
  const dashed = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const st = state.nodeState[i];
    if (graph.isBox?.[i]) {
      fill[i] = shade ? shade[i] : theme.boxBody;
      stroke[i] = st === NODE_STATE.failed ? ALARM_COLOR : st === NODE_STATE.next ? '#c99700' : mixColor(GROUP_COLOR, theme.background, 0.2);
      lineWidth[i] = st === NODE_STATE.failed || st === NODE_STATE.next ? 2.5 : 1.5;
      text[i] = shade ? textOn(fill[i], theme.font) : theme.font;
      continue;
    }
    const kind = KIND_STYLE[/** @type {keyof typeof KIND_STYLE} */ (kindKey(graph, i))];
    let f = kind.color;
    let s = mixColor(kind.color, '#000000', 0.35);
    let lw = 1.5;
    switch (st) {
      case NODE_STATE.next:
        f = mixColor(kind.color, theme.background, 0.7);
        s = '#c99700';
        lw = 3;
        break;
      case NODE_STATE.done:
        break;
      case NODE_STATE.failed:
        f = FAILED_COLOR;
        s = '#7a0000';
        lw = 3;
        break;
      case NODE_STATE.no_gradient:
        f = theme.background;
        s = kind.color;
        lw = 1.5;
        dashed[i] = 1;
        break;
      default: // pending: washed out, opaque so edges do not show through
        f = mixColor(kind.color, theme.background, 0.78);
        s = mixColor(kind.color, theme.background, 0.35);
        lw = 1;
    }
    if (shade) f = shade[i];
    fill[i] = f;
    stroke[i] = s;
    lineWidth[i] = lw;
    text[i] = textOn(f, theme.font);
  }
  return { fill, stroke, lineWidth, dashed, text, w, h };
}

/**
 * What the view shows besides the state.
 * @typedef {object} ViewSpec
 * @property {{ x: [number, number], y: [number, number] }} range
 * @property {{ width: number, height: number }} size
 * @property {number} selected item index (a node or a box) or -1
 * @property {number} [selectedEdge] visible edge index or -1
 * @property {number[]} [highlight] item indices to mark
 * @property {'gradient' | 'memory' | 'sensitivity' | 'gain'} [colorMode]
 * @property {number} [focus] the item with the keyboard focus ring, -1 for none
 * @property {import('./memory.js').Memory | null} [memory]
 * @property {import('./sensitivity.js').Sensitivity | null} [sensitivity]
 * @property {import('./gain.js').Gain | null} [gain]
 */

/**
 * The drawing for a state and view.
 * @param {import('./model.js').Graph} graph @param {import('./model.js').State} state
 * @param {import('./style.js').Theme} theme @param {ViewSpec} view
 * @returns {Drawing}
 */
export function buildDrawing(graph, state, theme, view) {
  const mode = view.colorMode ?? 'gradient';
  let shade = null;
  if (mode === 'memory' && view.memory) shade = memoryColors(view.memory.items, graph.n, theme.noMemory);
  else if (mode === 'sensitivity' && view.sensitivity) shade = sensitivityColors(view.sensitivity, graph.n, theme.noMemory);
  else if (mode === 'gain' && view.gain) shade = gainColors(view.gain, graph.n, theme.noMemory);
  const items = itemStyles(graph, state, theme, shade);
  // memory / sensitivity mode: edges neutral from the moment the mode is chosen (while its data
  // is on its way too: the legend already is that mode's)
  const neutral = mode !== 'gradient';
  /** @type {import('./paintstyle.js').EdgeLayer[]} */
  let edges;
  if (neutral) {
    // memory / sensitivity shade the nodes: every edge neutral grey, no gradient colour bar
    const all = new Int32Array(graph.m);
    for (let e = 0; e < graph.m; e++) all[e] = e;
    const p = gatherPaths(graph, all);
    edges = [{ x: p.x, y: p.y, color: theme.idleEdge, width: 1.2, dash: [], dst: Int32Array.from(all, (e) => graph.dst[e]) }];
  } else {
    const b = bucketEdges(graph, state);
    const groups = [b.fresh, b.idle, b.noGrad, b.saved, ...b.bins, b.nonfinite, b.differs];
    edges = edgeLayers(groups.map((g) => ({ ...gatherPaths(graph, g), dst: Int32Array.from(g, (e) => graph.dst[e]) })), theme);
  }
  const se = view.selectedEdge ?? -1;
  const selectedEdge = gatherPaths(graph, se >= 0 && se < graph.m ? [se] : []);
  const inRange = (/** @type {number} */ i) => (i >= 0 && i < graph.n ? i : -1);
  const next = !state.done ? inRange(state.next) : -1;
  // a folded box can hold both the node that just ran and the next one: it gets both marks
  const ran = inRange(state.last);
  const badges = [];
  const saved = graph.savedState ?? new Uint8Array(0);
  for (let i = 0; i < graph.n; i++) {
    const b = SAVED_BADGE[/** @type {1 | 2} */ (saved[i])];
    if (b) badges.push({ item: i, symbol: b.symbol, color: b.color });
  }
  const edgeTexts = [];
  if (!neutral) {
    for (let e = 0; e < graph.m; e++) {
      const t0 = edgeLabel(state, e);
      const edited = state.edits?.has(e);
      const t = edited ? (t0 ? `✎ ${t0}` : '✎') : t0;
      if (t) edgeTexts.push({ index: e, text: t, color: state.edgeFlag[e] === 2 ? ALARM_COLOR : edited ? EDIT_COLOR : theme.font });
    }
  }
  return {
    items,
    edges,
    selectedEdge,
    selectedEdgeIndex: se >= 0 && se < graph.m ? se : -1,
    marks: { next, ran, selected: inRange(view.selected), highlight: (view.highlight ?? []).filter((i) => i >= 0 && i < graph.n), focus: inRange(view.focus ?? -1) },
    glyph: Uint8Array.from(state.nodeState.subarray(0, graph.n), (st) => (st in GLYPHS ? st : 0)),
    badges,
    edgeTexts,
    progress: graph.boxes?.length ? state.progress : null,
    colorbar: neutral ? null : colorbar(state, theme),
    look: {
      background: theme.background,
      frame: theme.pending,
      frameFill: hexAlpha(theme.dark ? '#ffffff' : '#1f3a5f', theme.dark ? 0.035 : 0.03),
      font: theme.font,
      fontMuted: theme.fontMuted,
      fontFamily: theme.fontFamily,
      boxBody: theme.boxBody,
      boxDone: theme.boxDone,
    },
  };
}
