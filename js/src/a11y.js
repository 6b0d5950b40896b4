/**
 * The drawing for keyboard and screen-reader users: the canvas is pixels only, so this module
 * keeps beside it (1) an offscreen structured list of the items in view, one button per item
 * ("AddmmBackward0, in fc1, done, gradient in ‖g‖ 0.42"), which Tab reaches and the arrow keys
 * move through along the graph's edges and between siblings (Enter inspects, Escape leaves; the
 * canvas paints the focus ring), and (2) a polite live region that says each step ("ran
 * AddmmBackward0 in fc1, step 3 of 16; next ReluBackward0", Python's words: `_state.announce`).
 * Browser find and screen readers read the list; the browser tests read the drawing through it.
 *
 * `describeItem` and `neighbour` are pure (graph and state in, text or an item index out).
 */
import { formatNumber } from './format.js';
import { EDGE_FLAG, NODE_STATE } from './model.js';
import { newStep } from './viewstate.js';

/** Step states as words (colour is never the only carrier of a state). */
export const STATE_WORDS = Object.freeze({
  [NODE_STATE.pending]: 'pending',
  [NODE_STATE.next]: 'next',
  [NODE_STATE.done]: 'done',
  [NODE_STATE.failed]: 'failed',
  [NODE_STATE.no_gradient]: 'no gradient',
});

/**
 * The words for item `i`: what it is, its module, its step state, the gradient it received.
 * @param {import('./model.js').Graph} graph @param {import('./model.js').State} state @param {number} i
 * @returns {{ name: string, module: string, step: string, grad: string, text: string }}
 * @example describeItem(graph, state, 0).text // "AddBackward0, done, gradient in ‖g‖ 1"
 */
export function describeItem(graph, state, i) {
  const box = !!graph.isBox?.[i];
  let name;
  if (box) {
    const members = graph.members?.[i] ?? 0;
    name = `${graph.titles?.[i] || graph.labels[i] || graph.modules[i] || 'module'}, folded, ${members} op${members === 1 ? '' : 's'}`;
  } else {
    const leaf = graph.kinds[i] === 'parameter' || graph.kinds[i] === 'input';
    const shape = graph.shapes[i] && !graph.labels[i].endsWith(graph.shapes[i]) ? ` ${graph.shapes[i]}` : '';
    name = leaf ? `${graph.names[i] || 'AccumulateGrad'} (${graph.labels[i]})${shape}` : graph.names[i] || graph.labels[i] || graph.ids[i];
  }
  const mod = graph.modules[i];
  const module = !box && mod ? `in ${mod}` : '';
  const st = state.nodeState?.[i] ?? NODE_STATE.pending;
  /** @type {string} */
  let step = STATE_WORDS[/** @type {0 | 1 | 2 | 3 | 4} */ (st)] ?? 'pending';
  if (box && state.progress) step = `${step}, ${Math.round(100 * Math.max(0, Math.min(1, state.progress[i] || 0)))}% done`;
  if (state.last === i && i >= 0) step += ', just ran';
  const norms = [];
  for (let e = 0; e < graph.m; e++) {
    if (graph.dst[e] !== i) continue;
    const f = state.edgeFlag?.[e];
    if (f === EDGE_FLAG.finite || f === EDGE_FLAG.differs) norms.push(formatNumber(state.edgeNorm[e]));
    else if (f === EDGE_FLAG.nonfinite) norms.push('NaN/Inf');
    else if (f === EDGE_FLAG.saved_value) norms.push(`saved value ${formatNumber(state.edgeNorm[e])}`);
  }
  const grad = norms.length ? `gradient in ‖g‖ ${norms.slice(0, 4).join(', ')}${norms.length > 4 ? ` and ${norms.length - 4} more` : ''}` : '';
  return { name, module, step, grad, text: [name, module, step, grad].filter(Boolean).join(', ') };
}

/**
 * The item the arrow key `key` moves the keyboard focus to from item `i`, or -1. Along the
 * gradient's flow: down in "TB" (right in "LR") to the item `i` sends a gradient to, up (left)
 * to one that sends `i` its gradient, the nearest first; across: left/right in "TB" (up/down in
 * "LR") to the nearest item of the same layer (row or column) that way. Where no edge leads
 * that way, the nearest item in that direction.
 * @param {import('./model.js').Graph} graph @param {number} i @param {string} key an `ArrowX` key
 * @param {{ w: ArrayLike<number>, h: ArrayLike<number> }} size box sizes (layout units)
 * @returns {number}
 * @example neighbour(graph, 0, 'ArrowDown', sizes) // the first node the root feeds
 */
export function neighbour(graph, i, key, size) {
  if (!(i >= 0 && i < graph.n)) return graph.n ? 0 : -1;
  const lr = graph.orientation === 'LR';
  // direction in layout units (y grows upwards)
  const dir = { ArrowDown: [0, -1], ArrowUp: [0, 1], ArrowRight: [1, 0], ArrowLeft: [-1, 0] }[key];
  if (!dir) return -1;
  const [dx, dy] = dir;
  const flow = lr ? dx !== 0 : dy !== 0; // along the edges, else across (siblings)
  const x0 = graph.x[i];
  const y0 = graph.y[i];
  /** distance of item j along the direction (> 0: that way) and across it */
  const along = (/** @type {number} */ j) => (graph.x[j] - x0) * dx + (graph.y[j] - y0) * dy;
  const across = (/** @type {number} */ j) => Math.abs((graph.x[j] - x0) * dy - (graph.y[j] - y0) * dx);
  /** @param {number[]} cands */
  const nearest = (cands) => {
    let best = -1;
    let bestD = Infinity;
    for (const j of cands) {
      if (j === i || along(j) <= 1e-6) continue;
      const d = along(j) + 2 * across(j);
      if (d < bestD) {
        bestD = d;
        best = j;
      }
    }
    return best;
  };
  if (flow) {
    const forward = lr ? dx > 0 : dy < 0; // with the gradient's flow
    const linked = [];
    for (let e = 0; e < graph.m; e++) {
      if (forward && graph.src[e] === i) linked.push(graph.dst[e]);
      if (!forward && graph.dst[e] === i) linked.push(graph.src[e]);
    }
    const hit = nearest(linked);
    if (hit >= 0) return hit;
  } else {
    // siblings: items whose box overlaps this one's row (TB) or column (LR)
    const half = lr ? size.w[i] / 2 : size.h[i] / 2;
    const same = [];
    for (let j = 0; j < graph.n; j++) {
      const off = lr ? Math.abs(graph.x[j] - x0) : Math.abs(graph.y[j] - y0);
      if (off <= half + (lr ? size.w[j] : size.h[j]) / 2) same.push(j);
    }
    const hit = nearest(same);
    if (hit >= 0) return hit;
  }
  return nearest(Array.from({ length: graph.n }, (_, j) => j));
}

/**
 * The accessible layer of one view.
 * @param {Document} doc
 * @param {{
 *   store: import('./store.js').Store<Pick<import('./viewstate.js').ViewState, 'graph' | 'state'>>,
 *   sizes: () => { w: ArrayLike<number>, h: ArrayLike<number> },
 *   inView: () => number[],
 *   show: (i: number) => void,
 *   inspect: (i: number) => void,
 *   leave: () => void,
 *   focusChanged: (i: number) => void,
 * }} on `inView`: the items painted in view; `show`: bring item i into view; `inspect`: Enter;
 *   `leave`: Escape (focus back to the widget); `focusChanged`: repaint the focus ring (-1: none)
 */
export function createA11y(doc, on) {
  const list = doc.createElement('ul');
  list.className = 'agw-sr agw-sr-list';
  const announcer = doc.createElement('div');
  announcer.className = 'agw-sr agw-announce';
  announcer.setAttribute('aria-live', 'polite');
  announcer.setAttribute('aria-atomic', 'true');
  /** @type {Map<number, HTMLButtonElement>} */
  const buttons = new Map();
  /** the item that has (or last had) the keyboard focus */
  let current = -1;
  let lastKey = '';
  let lastSaid = '';
  // a new step of the graph shown is said (a new graph is not a step)
  const stop = on.store.subscribe((next, prev) => {
    if (newStep(next, prev)) stateChanged(prev.state, next.state);
  });

  /** @param {number} i */
  function button(i) {
    let b = buttons.get(i);
    if (!b) {
      b = doc.createElement('button');
      b.type = 'button';
      b.className = 'agw-sr-item';
      b.dataset.item = String(i);
      b.tabIndex = -1;
      b.addEventListener('focus', () => {
        current = i;
        on.focusChanged(i);
      });
      b.addEventListener('click', () => on.inspect(i));
      buttons.set(i, b);
    }
    return b;
  }

  /** Rebuild the list: the items in view (in reading order), the focused one always. */
  function refresh() {
    const { graph, state } = on.store.get();
    const want = on.inView().filter((i) => i >= 0 && i < graph.n);
    if (current >= graph.n) current = -1;
    if (current >= 0 && !want.includes(current)) want.push(current);
    const lr = graph.orientation === 'LR';
    want.sort((a, b) => (lr ? graph.x[a] - graph.x[b] || graph.y[b] - graph.y[a] : graph.y[b] - graph.y[a] || graph.x[a] - graph.x[b]));
    const texts = want.map((i) => describeItem(graph, state, i).text);
    const key = `${graph.n}|${want.join(',')}|${texts.join('|')}`;
    if (key === lastKey) return;
    lastKey = key;
    list.setAttribute('aria-label', `Backward graph: ${want.length} of ${graph.n} items in view`);
    const active = doc.activeElement;
    const rows = want.map((i, k) => {
      const b = button(i);
      b.textContent = texts[k];
      b.tabIndex = i === (current >= 0 ? current : want[0]) ? 0 : -1;
      const li = /** @type {HTMLLIElement} */ (b.parentElement?.tagName === 'LI' ? b.parentElement : doc.createElement('li'));
      if (b.parentElement !== li) li.append(b);
      return li;
    });
    for (const i of buttons.keys()) if (!want.includes(i)) buttons.delete(i);
    list.replaceChildren(...rows);
    if (active instanceof HTMLElement && active.classList.contains('agw-sr-item') && !active.isConnected && current >= 0) buttons.get(current)?.focus({ preventScroll: true });
  }

  /** Move the focus to item `i` (brought into view). @param {number} i */
  function focusItem(i) {
    if (i < 0) return;
    current = i;
    on.show(i);
    lastKey = '';
    refresh();
    buttons.get(i)?.focus({ preventScroll: true });
  }

  /** @param {KeyboardEvent} ev */
  function onKey(ev) {
    if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const { graph } = on.store.get();
    if (ev.key.startsWith('Arrow')) {
      focusItem(neighbour(graph, current, ev.key, on.sizes()));
    } else if (ev.key === 'Home' || ev.key === 'End') {
      const roots = [];
      for (let j = 0; j < graph.n; j++) if (graph.root[j]) roots.push(j);
      focusItem(ev.key === 'Home' ? roots[0] ?? 0 : graph.n - 1);
    } else if (ev.key === 'Escape') {
      on.leave();
    } else return;
    ev.preventDefault();
    ev.stopPropagation();
  }
  list.addEventListener('keydown', onKey);
  const onBlur = () => {
    // the ring stays while focus moves between items; it goes when focus leaves the list
    setTimeout(() => {
      if (!list.contains(doc.activeElement)) on.focusChanged(-1);
    }, 0);
  };
  list.addEventListener('focusout', onBlur);

  /**
   * A new state: say the step when the position moved (or a step failed), once.
   * @param {import('./model.js').State} was @param {import('./model.js').State} now
   */
  function stateChanged(was, now) {
    if (now.announce && now.announce !== lastSaid && (was.position !== now.position || (now.error && !was.error))) {
      lastSaid = now.announce;
      announcer.textContent = now.announce;
    }
  }

  return {
    list,
    announcer,
    refresh,
    stateChanged,
    /** The item with the keyboard focus ring, -1 when the list does not have the focus. */
    focused: () => (list.contains(doc.activeElement) ? current : -1),
    destroy() {
      stop();
      list.removeEventListener('keydown', onKey);
      list.removeEventListener('focusout', onBlur);
    },
  };
}
