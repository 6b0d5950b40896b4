// The widget's view mounted on a fake anywidget model, for the view tests (view_*.test.js,
// sensitivity.test.js). The test file mocks plotly itself (see fake_plotly.js).
import widget from '../src/index.js';
import { FakeModel } from './fixtures.js';

/** Wait for promises and zero-delay timers. */
export const flush = () => new Promise((r) => setTimeout(r, 0));

/**
 * Render the widget into a fresh element of the document, on a model holding `values` (the
 * traits: `_graph`, `_state`, ...).
 * @param {Record<string, any>} values
 */
export function mountView(values) {
  const model = new FakeModel(values);
  const el = document.createElement('div');
  document.body.append(el);
  const cleanup = widget.render({ model, el });
  const q = (sel) => el.querySelector(sel);
  const button = (name) => [...el.querySelectorAll('button')].find((b) => b.textContent === name || b.getAttribute('aria-label') === name);
  const gd = () => q('.agw-plot');
  const sent = (type) => model.sent.filter((m) => m.type === type);
  /** Answer the last request of that type, as the kernel does. */
  const reply = (type, data) => {
    const req = sent(type).at(-1);
    model.receive({ type: 'reply', request: req.request, data });
  };
  const inspector = () => q('section[aria-label="Inspector"]');
  return { model, el, cleanup, q, button, gd, sent, reply, inspector };
}
