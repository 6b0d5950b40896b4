/**
 * One view's state, the shape of its store (store.js), and the two questions every part that
 * subscribes to it asks: "is this a new step of the same graph?" and "is this a new graph?".
 * Pure: no DOM.
 *
 * The parts of a view (view.js assembles them) each subscribe to the store and react to the keys
 * they draw; the assembler only writes the decoded traits into it. A new `_graph` lands with its
 * `_state` in one `set` (the view re-reads both), so `newStep` is false for it: the parts that
 * follow a step (the announcer, the camera's follow, Play) do not mistake a new graph for a step.
 */

/**
 * @typedef {object} ViewState one view's state, in its store
 * @property {import('./model.js').Graph} graph the decoded `_graph`
 * @property {import('./model.js').State} state the decoded `_state`
 * @property {import('./style.js').Theme} theme the host's colours
 * @property {import('./playback.js').Mode} mode what playback is doing
 * @property {import('./colormodes.js').ColorMode} colorBy the colour mode
 * @property {import('./focus.js').Focus | null} focus what the inspector shows
 * @property {number} selected the ringed item (a node or a box), -1 for none
 * @property {number} selectedEdge the ringed visible edge, -1 for none
 * @property {readonly string[]} highlight real node ids marked (the aliases of the saved tensor
 *   open in the inspector)
 * @property {import('./camera.js').Range} range what the drawing shows (layout units)
 * @property {import('./camera.js').Size} size the plot's measured size (0 until measured)
 * @property {boolean} fitted the view is the fitted one: a resize fits again
 */

/**
 * The state a view starts from: its decoded traits and theme, nothing selected, idle, gradient
 * colours, a unit range (fitted once the view is attached) and an unmeasured plot.
 * @param {import('./model.js').Graph} graph @param {import('./model.js').State} state
 * @param {import('./style.js').Theme} theme
 * @returns {ViewState}
 * @example
 * initialViewState(graph, state, theme).mode; // 'idle'
 */
export function initialViewState(graph, state, theme) {
  return {
    graph,
    state,
    theme,
    mode: 'idle',
    colorBy: 'gradient',
    focus: null,
    selected: -1,
    selectedEdge: -1,
    highlight: [],
    range: { x: [0, 1], y: [0, 1] },
    size: { width: 0, height: 0 },
    fitted: true,
  };
}

/**
 * A store change that brought a new `_state` of the graph already drawn (a step, a run's chunk,
 * an edit's answer), not a new graph.
 * @param {{ graph?: unknown, state: unknown }} next @param {{ graph?: unknown, state: unknown }} prev
 *   (a part whose store holds no graph, playback.js's, hears every new state)
 * @returns {boolean}
 * @example
 * newStep({ graph: g, state: s2 }, { graph: g, state: s1 }); // true
 * newStep({ graph: g2, state: s2 }, { graph: g, state: s1 }); // false: a new graph
 */
export function newStep(next, prev) {
  return next.state !== prev.state && next.graph === prev.graph;
}

/**
 * A store change that brought a new `_graph` (a fold, an unfold, a re-layout, another step of a
 * watched run).
 * @param {{ graph: unknown }} next @param {{ graph: unknown }} prev
 * @returns {boolean}
 * @example
 * newGraph({ graph: g2 }, { graph: g }); // true
 */
export function newGraph(next, prev) {
  return next.graph !== prev.graph;
}
