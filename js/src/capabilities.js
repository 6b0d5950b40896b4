/**
 * What the run behind a graph can do, as the graph payload says (`_graph.capabilities`, issue 37):
 * decoded once with the graph (model.js `decodeGraph`), read by the parts that offer an action
 * (colormodes.js: the memory and sensitivity modes; inspectfeed.js: the what-if edits). Pure.
 */

/**
 * What the run behind a graph can do beyond moving and reading gradient summaries: the payload's
 * `capabilities` (protocol.js `CAPABILITIES`: engine/interface.py's `Capabilities`, sent by
 * wire/session.py), with the front-end's camelCase names.
 * @typedef {object} Capabilities
 * @property {boolean} live a torch graph stands behind it (nodes can be called)
 * @property {boolean} edit what-if edits of an edge's gradient (the inspector's edge panel)
 * @property {boolean} probe Jacobian probes (the sensitivity colour mode)
 * @property {boolean} compare compared with the engine's own run
 * @property {boolean} gradOfTensor the gradient of a tensor can be looked up
 * @property {boolean} savedValues the nodes' saved tensors can be read (the memory colour mode)
 */

/**
 * The payload's `capabilities` as {@link Capabilities}; called by model.js `decodeGraph` only
 * (the graph's normalisation), so every part reads `graph.capabilities`. A payload without them
 * (a page saved before the wire carried them) has them derived here, once, from its `source`: a
 * live graph can do everything, a replayed recording nothing; this is the only place the
 * front-end reads what a run can do from its kind. A key missing from a partial object reads as
 * that derivation; a value that is not a boolean reads as false.
 * @param {unknown} raw the payload's `capabilities` @param {unknown} source the payload's `source`
 * @returns {Capabilities}
 * @example
 * decodeCapabilities({ live: false, edit: false, probe: false, compare: false, grad_of_tensor: false, saved_values: true }, 'recording').savedValues; // true
 * decodeCapabilities(undefined, 'recording').edit; // false (an older page: derived from `source`)
 */
export function decodeCapabilities(raw, source) {
  const derived = source !== 'recording';
  const got = /** @type {Record<string, unknown>} */ (raw && typeof raw === 'object' ? raw : {});
  /** @param {import('./protocol.js').Capability} key */
  const read = (key) => (key in got ? got[key] === true : derived);
  return {
    live: read('live'),
    edit: read('edit'),
    probe: read('probe'),
    compare: read('compare'),
    gradOfTensor: read('grad_of_tensor'),
    savedValues: read('saved_values'),
  };
}
