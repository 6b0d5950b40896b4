/**
 * The widget protocol, front-end side: the ONE list of what the front-end and the kernel say.
 *
 * The same names as `autograd_widget/wire/protocol.py` (tests/wire/test_protocol.py fails when they
 * differ): `MSG`, the commands and requests sent as custom messages `{ type: MSG.X, ... }`;
 * `REPLY`, the types of what the kernel sends back; `TRAIT`, the synced traits the front-end
 * reads and writes (`model.get/set/on('change:...')`); `STATE_KEYS`, the keys of the synced
 * `_state` trait, of which `STATE_ARRAYS` are per-item/edge buffers and `STEP_SCALARS` what a
 * walkthrough (the standalone page) stores per step; `WALKTHROUGH_FORMAT`, the format of the
 * walkthrough a page embeds. Import the names from here rather than spelling the strings.
 */

/** Message types the kernel accepts (`MESSAGES` in wire/protocol.py). */
export const MSG = Object.freeze({
  STEP: 'step',
  BACK: 'back',
  RESET: 'reset',
  RUN_TO: 'run_to',
  RUN: 'run',
  PAUSE: 'pause',
  SELECT: 'select',
  SELECT_EDGE: 'select_edge',
  INSPECT: 'inspect',
  EXPAND: 'expand',
  COLLAPSE: 'collapse',
  PLUMBING: 'plumbing',
  /** the drawing's size in px (`{ width, height }`): collapse="auto" fits the graph to it */
  VIEWPORT: 'viewport',
  /** zooming out past legible: fold the deepest unfolded modules (`{ anchor }`) */
  FOLD_LEVEL: 'fold_level',
  SEARCH: 'search',
  FIRST_NONFINITE: 'first_nonfinite',
  MEMORY: 'memory',
  SAVED_VALUES: 'saved_values',
  PROBE: 'probe',
  EDIT_EDGE: 'edit_edge',
  LEAF_DIFF: 'leaf_diff',
  /** show a watched step's graph below the timeline (`aw.explore(watch)`) */
  WATCH_STEP: 'watch_step',
  /** a module's op rows for the timeline (a request) */
  TIMELINE_ROWS: 'timeline_rows',
  /** the "gain" colour mode: |grad out| / |grad in| per visible item (a request) */
  GAIN: 'gain',
  /** show another rank of a rank group (`aw.explore(group)`; `{ rank }`) */
  SELECT_RANK: 'select_rank',
});

/**
 * Messages to the widget's host, not its session (`HOST_MESSAGES`): the loader's request for
 * the front-end bundle (js/src/loader.js; answered by widget.py).
 */
export const HOST = Object.freeze({
  BUNDLE: 'bundle',
});

/** Types of the messages the kernel sends back (`REPLY_TYPES`). */
export const REPLY = Object.freeze({
  REPLY: 'reply',
  WARNING: 'warning',
});

/** The synced traits of the widget the front-end reads or writes (`TRAITS`). */
export const TRAIT = Object.freeze({
  /** the graph payload (model.js decodeGraph) */
  GRAPH: '_graph',
  /** the stepping state payload (model.js decodeState; keys: STATE_KEYS) */
  STATE: '_state',
  /** the front-end bundle's hash and size (loader.js fetches the bundle once per page by it) */
  BUNDLE: '_bundle',
  /** the selected real node id, or null */
  SELECTED: 'selected',
  /** the selected real edge id ("src:output_nr"), or null */
  SELECTED_EDGE: 'selected_edge',
  /** the widget's height in pixels, or null: what the graph needs, within the window */
  HEIGHT: 'height',
  /** the layout direction asked for: 'auto', 'TB' or 'LR' (the payload's `orientation` is the one drawn) */
  ORIENTATION: 'orientation',
  /** whether plumbing nodes (views, reshapes...) are shown */
  SHOW_PLUMBING: 'show_plumbing',
  /** the timeline of a watched training run (timeline.js decodeTimeline), {} when none */
  TIMELINE: '_timeline',
  /** the watched step whose graph is shown below the timeline, or null */
  WATCH_STEP: 'watch_step',
  /** the rank shown of a rank group (`aw.explore(group)`), or null */
  RANK: 'rank',
  /** one `{ rank, label, detail, role }` per rank of a rank group (ranks.js decodeRanks), [] when none */
  RANKS: 'ranks',
});

/**
 * What each synced trait holds, as the front-end reads it (`model.get(TRAIT.X)`): the widget's
 * traitlets (widget.py). The payloads (`_graph`, `_state`, `_timeline`, `ranks`) are checked
 * where they are decoded (model.js, timeline.js, ranks.js), so they are typed only as JSON here.
 * A standalone page's model (walkthrough.js `walkthroughModel`) holds the traits it walks; the
 * others read as undefined there.
 * @typedef {object} Traits
 * @property {Record<string, unknown>} _graph
 * @property {Record<string, unknown> | null} _state null before the first state arrives
 * @property {{ hash?: string, size?: number }} _bundle
 * @property {string | null} selected
 * @property {string | null} selected_edge
 * @property {number | null} height
 * @property {string | undefined} orientation 'auto', 'TB' or 'LR'; undefined on a standalone page
 * @property {boolean} show_plumbing
 * @property {Record<string, unknown>} _timeline
 * @property {number | null} watch_step
 * @property {number | null} rank
 * @property {unknown[]} ranks
 *
 * A message to the kernel: `type` is one of MSG's values, the rest its arguments.
 * @typedef {{ type: string, [k: string]: unknown }} Message
 *
 * JSON as it comes into the front-end from outside: a reply's `data` (read by the decoder of the
 * request it answers: memory.js decodeMemory, sensitivity.js decodeProbe, search.js, gain.js,
 * inspect.js...), a payload trait before model.js decodes it, a standalone page's embedded
 * walkthrough (walkthrough.js). Every reader checks each field it reads (a missing or malformed
 * field reads as "nothing"), so what the parts share past a decoder is typed (model.js `Graph`,
 * `State`...); this is the front-end's one untyped door, named so it can be found.
 * @typedef {any} Json
 *
 * anywidget's model as every part of the front-end uses it (view.js, index.js, backend.js,
 * loader.js, ranks.js, sizing.js; walkthrough.js builds one for a standalone page): the traits by
 * name, change events (`change:<trait>`, `msg:custom`), custom messages out.
 * @typedef {object} WidgetModel
 * @property {<K extends keyof Traits>(name: K) => Traits[K]} get
 * @property {<K extends keyof Traits>(name: K, value: Traits[K]) => void} set
 * @property {() => void} save_changes
 * @property {(ev: string, cb: Function) => void} on
 * @property {(ev: string, cb: Function) => void} off
 * @property {(msg: Message, callbacks?: unknown, buffers?: ArrayBuffer[]) => void} send
 */

/**
 * The keys of the graph payload's `capabilities` (`_graph.capabilities`: engine/interface.py's
 * `Capabilities`, sent by wire/session.py): one boolean each, what the run behind the graph can
 * do. model.js `decodeCapabilities` reads them (and derives them for a payload without them).
 */
export const CAPABILITIES = Object.freeze(['live', 'edit', 'probe', 'compare', 'grad_of_tensor', 'saved_values']);

/** @typedef {'live' | 'edit' | 'probe' | 'compare' | 'grad_of_tensor' | 'saved_values'} Capability one key of `_graph.capabilities` (CAPABILITIES) */

/**
 * The format of the walkthrough a standalone page embeds (`WALKTHROUGH_FORMAT`): the page's
 * own recorded step-through (walkthrough.js), not `aw.record`'s Recording.
 */
export const WALKTHROUGH_FORMAT = 'autograd_widget.walkthrough/3';

/** Keys of the `_state` trait (`STATE_KEYS`). */
export const STATE_KEYS = Object.freeze([
  'seq', 'position', 'total', 'done', 'running', 'next', 'next_id', 'last',
  'node_state', 'progress', 'edge_norm', 'edge_flag', 'edge_values', 'edits', 'norm_range',
  'norm_scale', 'waiting', 'status', 'announce', 'error', 'notice',
]);

/** The per-item/edge arrays of the state (`STATE_ARRAYS`). */
export const STATE_ARRAYS = Object.freeze(['node_state', 'progress', 'edge_norm', 'edge_flag']);

/** The scalars a walkthrough stores per step (`STEP_SCALARS`). */
export const STEP_SCALARS = Object.freeze([
  'position', 'total', 'done', 'next', 'next_id', 'last', 'status', 'announce', 'waiting',
  'error', 'norm_range', 'norm_scale',
]);
