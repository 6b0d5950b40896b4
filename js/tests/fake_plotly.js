// plotly cannot run in jsdom (no layout, no WebGL): a stand-in that records what the view asks of
// it. A test file swaps it in with
//   vi.mock('../src/plotly.js', () => import('./fake_plotly.js'));
// and reads `calls` ({ name, gd, args } per call, in order). A plotted div gets on/emit so a test
// can fire plotly events (plotly_click, plotly_hover, plotly_relayout...).

/** Every call made to plotly, in order. */
export const calls = [];

/** The calls of one plotly function. @param {string} name */
export const byName = (name) => calls.filter((c) => c.name === name);

const record = (name) => (gd, ...args) => {
  calls.push({ name, gd, args });
  if (name === 'newPlot' || name === 'react') {
    gd.data = args[0];
    gd.layout = args[1];
    if (!gd._handlers) {
      gd._handlers = new Map();
      gd.on = (ev, cb) => gd._handlers.set(ev, cb);
      gd.removeListener = (ev) => gd._handlers.delete(ev);
      gd.emit = (ev, data) => gd._handlers.get(ev)?.(data);
    }
  }
  if (name === 'relayout') {
    for (const [k, v] of Object.entries(args[0])) {
      const [axis, attr] = k.split('.');
      if (attr === 'range') gd.layout[axis].range = v;
    }
  }
  return Promise.resolve(gd);
};

export default {
  newPlot: record('newPlot'),
  react: record('react'),
  restyle: record('restyle'),
  relayout: record('relayout'),
  purge: record('purge'),
};

/** The last restyle's value of `attr` for trace `t` (undefined when none set it). */
export function lastRestyle(t, attr) {
  for (const c of byName('restyle').reverse()) {
    const [update, traces] = c.args;
    const k = traces.indexOf(t);
    if (k >= 0 && update[attr] && update[attr][k] !== undefined) return update[attr][k];
  }
  return undefined;
}
