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
  /** a step range of the timeline at a width, min/max bands (a request: zoom and pan) */
  TIMELINE_RANGE: 'timeline_range',
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
 * @property {Partial<TimelinePayload>} _timeline `{}` when none
 * @property {number | null} watch_step
 * @property {number | null} rank
 * @property {unknown[]} ranks
 *
 * A message to the kernel: `type` is one of MSG's values, the rest its arguments.
 * @typedef {{ type: string, [k: string]: unknown }} Message
 *
 * The shapes of what comes in from outside. JSON from outside (a reply's `data`: `Request` in
 * backend.js; a payload trait; a standalone page's embedded walkthrough) arrives as `unknown`
 * and its reader decodes it field by field (jsonsafe.js `asRecord`, `decodeNumber`...) into
 * these typed shapes or model.js's (`Graph`, `State`); past a decoder, the parts share types.
 *
 * A protocol number as Python sends it (util/jsonsafe.py): a JSON number, or "nan" / "inf" /
 * "-inf" (jsonsafe.js `decodeNumber` reads it); null where Python says "absent".
 * @typedef {number | string | null} WireNumber
 *
 * A tensor's summary (core/summary.py `Summary.as_dict`): inspect replies, walked replies.
 * `shard` only for a DTensor's summary (this rank's local numbers). Readers check each field.
 * @typedef {object} Summary
 * @property {number[]} [shape]
 * @property {string} [dtype]
 * @property {number} [numel]
 * @property {WireNumber} [norm]
 * @property {WireNumber} [min]
 * @property {WireNumber} [max]
 * @property {WireNumber} [mean]
 * @property {WireNumber} [std]
 * @property {number} [nan] how many NaN values
 * @property {number} [inf] how many ±inf values
 * @property {unknown[]} [values] the first values (jsonsafe.js `decodeValues`)
 * @property {string} [shard]
 *
 * A DTensor layout (core/dtensor.py `Layout.as_dict`); a leaf's `sharding` adds `param` and `note`.
 * @typedef {{ text?: string, global_shape?: number[] | null, local_shape?: number[] | null, param?: string, note?: string, [k: string]: unknown }} Layout
 *
 * What a DTensor communication node moves (core/dtensor.py `Communication.as_dict`).
 * @typedef {{ op?: string, forward_from?: Layout | null, forward_to?: Layout | null, grad_to?: Layout | null, note?: string, [k: string]: unknown }} Communication
 *
 * One saved value of a node (core/saved.py's `as_dict`; inspect.js `savedItems` reads it).
 * @typedef {{ name?: string, kind?: string, state?: string, shape?: number[] | null, dtype?: string | null, value?: unknown, nbytes?: number | null, storage_nbytes?: number | null, aliases?: string[], alias_ids?: string[], note?: string | null, versions?: [number, number] | null, device?: string | null, stride?: number[] | null, recomputed?: boolean, summary?: Summary | null, [k: string]: unknown }} SavedRecord
 *
 * The reply to `MSG.INSPECT` (view/inspect.py: `inspect_node`, `inspect_edge`, `inspect_group`;
 * the same replies a walkthrough embeds). One shape for the three kinds, every field optional:
 * the renderers (inspect.js, panel.js, labels.js, hovercard.js) read what the kind carries and
 * check each field, and labels.js `replyRows` lists any field it does not know, so the index
 * signature keeps a new Python field visible.
 * @typedef {InspectFields & { [field: string]: unknown }} InspectReply
 *
 * The fields of an inspect reply the front-end knows (`InspectReply`).
 * @typedef {object} InspectFields
 * @property {string} [id] node id ("n3") or edge id ("n1:0")
 * @property {string} [name]
 * @property {string} [label]
 * @property {string} [kind] a node's display kind, or 'group' for a box
 * @property {string | null} [module]
 * @property {number | null} [sequence_nr]
 * @property {string | null} [leaf_name]
 * @property {[number[], string, string][]} [inputs] per input slot: shape, dtype, device
 * @property {(Summary | null)[]} [incoming] per input slot: what arrived (null: nothing)
 * @property {Record<string, Summary | null>} [outgoing] per out edge id: what it carries
 * @property {string | null} [error] the step's error, when this node failed
 * @property {string[] | string | null} [traceback] the forward call that created the node
 * @property {SavedRecord[]} [saved]
 * @property {string | null} [saved_error]
 * @property {{ on?: string, kind?: string, fn?: string }[]} [hooks] `kind` 'note': what cannot be listed
 * @property {{ step?: number, seq?: number, thread?: number, pass?: number, ms?: number } | null} [run] the engine's execution of the node
 * @property {{ known?: boolean, latex?: string, shapes?: string, note?: string }} [formula]
 * @property {{ sentence?: string, hint?: string | null, kind?: string, culprit?: unknown, traceback?: unknown } | null} [explanation] why the step failed
 * @property {{ id: string, src: string, name: string, input_nr: number }[]} [in_edges]
 * @property {Communication} [communication] a DTensor communication node
 * @property {Layout} [sharding] a sharded parameter's leaf
 * @property {{ id?: string, name?: string, output_nr?: number }} [src] an edge's source
 * @property {{ id?: string, name?: string, input_nr?: number, label?: string }} [dst] an edge's target
 * @property {Summary | null} [summary] an edge's gradient (null: not flowed)
 * @property {string} [group] a box's module path
 * @property {{ count: number, period: number, nodes_per_unit: number, members: string[] } | null} [fold] a folded run
 * @property {number} [members] a box's member count
 * @property {number} [progress] a box's fraction done
 * @property {[string, number][]} [ops] a box's ops by name, with counts
 * @property {string[]} [leaves] a box's leaves
 *
 * The `_timeline` trait (wire/trainpayload.py `timeline_payload`, view/timeline.py `timeline`;
 * `{}` when the widget shows no watch); arrays arrive as binary buffers (a standalone page's as
 * base64 `{ dtype, bdata }`, walkthrough.js `decodeBuffers`). timeline.js `decodeTimeline` reads
 * it from `unknown`, checking each field, into its `Timeline`.
 * @typedef {object} TimelinePayload
 * @property {string} format 'autograd_widget.timeline/1'
 * @property {number} n_steps every step, watched or not
 * @property {ArrayBufferView} watched int32 step numbers
 * @property {ArrayBufferView} loss float32 per step
 * @property {ArrayBufferView} flags uint8 per step
 * @property {ArrayBufferView} scale float32 per watched step
 * @property {{ id: string[], label: string[], parent: (string | null)[], depth: number[], ops: boolean[], calls: number[], fused: boolean[] }} rows
 * @property {ArrayBufferView} values float32 rows x watched
 * @property {[number, number]} range
 * @property {object | null} first the first NaN/Inf (timeline.js `First`)
 * @property {object | null} origin what it is (timeline.js `Origin`)
 * @property {object | null} healed (timeline.js `Healed`)
 * @property {{ module: string, factor: number, low_step: number, high_step: number }[]} moved
 * @property {string} moved_rule
 * @property {number | null} selected
 * @property {number} every
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
 *
 * The walkthrough itself (export/html.py `walkthrough`, the same version's Python wrote it into
 * the page): walkthrough.js `decodeWalkthrough` checks its `format` and reads it as this type
 * with its buffers decoded (`{ dtype, bdata }` base64 -> typed arrays). The payloads inside it
 * (`graph`, `state`, `timeline`, the replies) are still read by their own checking decoders
 * (model.js, timeline.js, inspect.js...).
 * @typedef {object} Walkthrough
 * @property {string} format WALKTHROUGH_FORMAT
 * @property {string | null} [title]
 * @property {string | null} [description]
 * @property {number} [height] the widget's pixel height when walked
 * @property {Record<string, unknown>} graph the `_graph` payload (model.js `decodeGraph` reads it)
 * @property {WalkState} state the `_state` payload at step 0
 * @property {WalkStep[]} steps what each step changed
 * @property {{ node: string, message: string } | null} [failed] the step that raised, when the walk stopped there
 * @property {{ nodes?: Record<string, InspectReply>, edges?: Record<string, InspectReply> }} [inspect]
 *   the inspect replies at the end of the walk, by visible item / edge index
 * @property {{ memory?: { false?: unknown, true?: unknown }, probe?: unknown } | null} [modes]
 *   the colour modes' replies (`{ error }` a walked refusal), null: not walked
 * @property {WalkNonfinite | null} [first_nonfinite] what First NaN/Inf answers
 * @property {number} [start] the step the page opens at
 * @property {unknown} [timeline] a watch's page: its `TimelinePayload` (timeline.js decodes it)
 * @property {number | null} [watch_step] a watch's page: the step whose graph it holds
 * @property {WalkRanks} [ranks] a rank group's page (export/rankpage.py `rank_pages`)
 *
 * A state array: a decoded buffer, or a plain list (a JSON array).
 * @typedef {Int32Array | Uint8Array | Int8Array | Uint16Array | Int16Array | Uint32Array | Float32Array | Float64Array | number[]} NumArray
 *
 * The `_state` payload as a walkthrough stores it: the STATE_ARRAYS per item/edge, the
 * STEP_SCALARS, `edge_values` (edge id -> values) and the rest as sent.
 * @typedef {{ [K in StateArray]: NumArray } & { edge_values?: Record<string, unknown>, notice?: unknown, error?: WalkError | null, [k: string]: unknown }} WalkState
 *
 * The STEP_SCALARS after a step (`position`, `total`, `error`...), as `_state` sends them.
 * @typedef {{ position?: number, total?: number, error?: WalkError | null, [k: string]: unknown }} WalkScalars
 *
 * A step's error in the state: the visible item that raised and the message.
 * @typedef {{ node?: number, message?: string, id?: string | null }} WalkError
 *
 * One walked step: the scalars after it, and per state array what it changed (indices, values
 * before and after), the small gradients' values it set, unset, and what those were.
 * @typedef {{ [K in StateArray]?: { index: NumArray, old: NumArray, new: NumArray } } & { scalars: WalkScalars, edge_values?: { set?: Record<string, unknown>, unset?: Record<string, unknown>, was?: Record<string, unknown> } }} WalkStep
 *
 * First NaN/Inf over a walkthrough (walkthrough.js `walkthroughNonfinite`): the position after
 * which it has flowed (null: none does), the reply from there, a search's answer, the node to select.
 * @typedef {{ step?: number | null, reply?: unknown, seek?: unknown, select?: string | null }} WalkNonfinite
 *
 * A rank group's page: the widget's `ranks` lines, the rank the page opens on, the file
 * pattern, how many ranks, those the page carries and their walkthroughs (rank as text).
 * @typedef {{ lines?: unknown[], selected?: number, pattern?: string, world?: number, carried?: number[], walks?: Record<string, Walkthrough>, kind?: string }} WalkRanks
 */
export const WALKTHROUGH_FORMAT = 'autograd_widget.walkthrough/3';

/** Keys of the `_state` trait (`STATE_KEYS`). */
export const STATE_KEYS = Object.freeze([
  'seq', 'position', 'total', 'done', 'running', 'next', 'next_id', 'last',
  'node_state', 'progress', 'edge_norm', 'edge_flag', 'edge_values', 'edits', 'norm_range',
  'norm_scale', 'waiting', 'status', 'announce', 'error', 'notice',
]);

/** @typedef {'node_state' | 'progress' | 'edge_norm' | 'edge_flag'} StateArray one of STATE_ARRAYS */

/**
 * The per-item/edge arrays of the state (`STATE_ARRAYS`).
 * @type {readonly StateArray[]}
 */
export const STATE_ARRAYS = Object.freeze(['node_state', 'progress', 'edge_norm', 'edge_flag']);

/** The scalars a walkthrough stores per step (`STEP_SCALARS`). */
export const STEP_SCALARS = Object.freeze([
  'position', 'total', 'done', 'next', 'next_id', 'last', 'status', 'announce', 'waiting',
  'error', 'norm_range', 'norm_scale',
]);
