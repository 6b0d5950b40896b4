// The widget's view mounted on a fake anywidget model, for the view tests (view_*.test.js,
// sensitivity.test.js). The test file mocks plotly itself (see fake_plotly.js).
import { afterEach, beforeEach, vi } from 'vitest';

import widget from '../src/index.js';
import { calls } from './fake_plotly.js';
import { FakeModel, boxGraph, boxState } from './fixtures.js';

/**
 * The hooks every view test file needs: a clean document and plotly call log before each test,
 * synchronous drawing (the view coalesces redraws per animation frame in browsers), real timers
 * after each test. Call once at the top level of the test file.
 */
export function useViewTestHooks() {
  beforeEach(() => {
    calls.length = 0;
    document.body.innerHTML = '';
    window.requestAnimationFrame = undefined;
  });
  afterEach(() => {
    vi.useRealTimers();
  });
}

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

/** The view of the folded classifier (fixtures.js `boxes`) after `done` steps. */
export function mountBoxes(done = 0, extra = {}) {
  return mountView({ _graph: boxGraph(), _state: boxState(done), selected_edge: null, show_plumbing: true, ...extra });
}
