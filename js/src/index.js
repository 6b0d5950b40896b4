// The anywidget front-end of AutogradWidget: `render` draws one view of the widget's synced state.
// Python owns every autograd fact; this module owns pixels and gestures (see view.js).
import './widget.css';
import { kernelBackend } from './backend.js';
import { TRAIT } from './protocol.js';
import { createLiveRankBar } from './ranks.js';
import { createTimeline, decodeTimeline } from './timeline.js';
import { createView } from './view.js';

/**
 * @param {{ model: import('./protocol.js').WidgetModel, el: HTMLElement }} ctx
 * @returns {() => void} cleanup, called by anywidget when the view is removed
 */
function render({ model, el }) {
  const backend = kernelBackend(model);
  // `aw.explore(group)`: every rank of a distributed run, one shown, a rank selector on top
  const ranks = createLiveRankBar(el.ownerDocument, model, (cmd) => backend.command(cmd));
  if (ranks) el.appendChild(ranks.el);
  // `aw.explore(watch)`: the training run's timeline above the selected step's graph
  const timeline = decodeTimeline(model.get(TRAIT.TIMELINE))
    ? createTimeline(el.ownerDocument, { model, send: (cmd) => backend.command(cmd), request: backend.request, live: true })
    : null;
  if (timeline) el.appendChild(timeline.el);
  const destroy = createView({ model, el, backend });
  return () => {
    timeline?.destroy();
    ranks?.destroy();
    destroy();
    backend.dispose();
  };
}

export { mountWalkthroughRanks } from './ranks.js';
export { mountWalkthrough, mountWalkthroughPair } from './walkthrough.js';
export default { render };
