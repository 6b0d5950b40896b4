/**
 * The view's chrome around the drawing: the stepping toolbar (Step, Back, Run to node, Run to
 * end, Reset, Play with its speed, Fit, the layout direction), the navigation row (search, First
 * NaN/Inf, Hide plumbing, the colour mode, the counts, help), the progress bar, the status line
 * (with the way out after a failed step), the "next node" line with its waiting gradients, the
 * notice and the alert. DOM only: it shows the view's store (`graph`, `state`, `mode`) and hands
 * gestures to the handlers the view passes in.
 */
import { domHelpers } from './dom.js';
import { countsText } from './groups.js';
import { waitingRows } from './labels.js';
import { SPEED } from './playback.js';
import { NEXT_COLOR } from './style.js';
import { newStep } from './viewstate.js';

/**
 * Show a toolbar's separators (`.agw-sep`) only between two groups that each show a control: no
 * separator at either end, none next to another, none where the controls it parted are hidden.
 * @param {HTMLElement} bar
 * @example tidySeparators(nav) // [search][NaN] | [plumbing hidden] | [colour] -> one separator
 */
export function tidySeparators(bar) {
  /** @type {HTMLElement | null} */
  let pending = null;
  let seen = false;
  for (const el of /** @type {HTMLElement[]} */ (Array.from(bar.children))) {
    if (el.classList.contains('agw-sep')) {
      el.hidden = true;
      if (seen) pending = el;
      seen = false;
    } else if (!el.hidden) {
      if (pending) pending.hidden = false;
      pending = null;
      seen = true;
    }
  }
}

/**
 * @typedef {object} ChromeHandlers what the controls do (the view's playback and camera)
 * @property {() => void} step
 * @property {() => void} back
 * @property {() => void} runTo run to the selected node
 * @property {() => void} runEnd
 * @property {() => void} reset
 * @property {() => void} play toggles Play / Pause
 * @property {() => void} fit
 * @property {(orientation: string) => void} direction 'TB' or 'LR'
 * @property {(show: boolean) => void} plumbing show plumbing nodes or not
 * @property {() => void} nonfinite First NaN/Inf
 */

/**
 * @param {Document} doc
 * @param {{
 *   store: import('./store.js').Store<Pick<import('./viewstate.js').ViewState, 'graph' | 'state' | 'mode' | 'focus' | 'selected'>>,
 *   root: HTMLElement,
 *   orientable: boolean,
 *   orientation?: () => unknown,
 *   runTarget: () => number,
 *   search: HTMLElement, colorSelect: HTMLElement, help: HTMLElement,
 *   on: ChromeHandlers,
 * }} opts `root`: the view's root (marked busy, done, failed); `orientable`: the model has the orientation trait (a direction control);
 *   `runTarget`: the item Run to node runs to (-1: none); `search`, `colorSelect`, `help`: the
 *   navigation row's other controls
 */
export function createChrome(doc, opts) {
  const { store, on } = opts;
  // the buttons follow what they depend on: Play, Pause, a run or a search starting or ending,
  // a new step, the focus and the ringed item (Run to node's target)
  const stop = store.subscribe((next, prev) => {
    if (next.mode !== prev.mode || newStep(next, prev) || next.focus !== prev.focus || next.selected !== prev.selected) update();
  });
  const { h, button } = domHelpers(doc);
  const sep = () => h('span', { class: 'agw-sep', 'aria-hidden': 'true' });

  // ---- the stepping toolbar --------------------------------------------------------------------
  const toolbar = h('div', { class: 'agw-toolbar', role: 'toolbar', 'aria-label': 'Backward stepping' });
  const btn = {
    step: button('Step', 'Run the next node (→)'),
    back: button('Back', 'Undo the last step (←)'),
    runTo: button('Run to node', 'Run up to and including the selected node'),
    runEnd: button('Run to end', 'Run every remaining step'),
    reset: button('Reset', 'Back to step 0'),
    play: button('Play', 'Step automatically (space)'),
  };
  btn.play.classList.add('agw-play');
  /** The buttons' own titles: a failed step replaces them with the reason they can't go on. */
  const baseTitle = new Map(Object.values(btn).map((b) => [b, b.title]));
  const speed = /** @type {HTMLInputElement} */ (h('input', {
    type: 'range', min: String(SPEED.min), max: String(SPEED.max), step: '1', value: String(SPEED.initial),
    'aria-label': 'Speed (steps per second)', class: 'agw-speed-input',
  }));
  const speedOut = h('span', { class: 'agw-speed-value' }, `${SPEED.initial}/s`);
  const speedBox = h('label', { class: 'agw-speed', title: 'Play speed, steps per second' }, 'Speed', speed, speedOut);
  const fit = button('Fit', 'Show the whole graph');
  fit.classList.add('agw-fit');
  toolbar.append(btn.step, btn.back, btn.runTo, btn.runEnd, btn.reset, sep(), btn.play, speedBox, sep(), fit);
  // Layout direction, when the model has the trait: Python lays the graph out again.
  const direction = /** @type {HTMLSelectElement} */ (h('select', { class: 'agw-direction', 'aria-label': 'Layout direction', title: 'Roots on top or on the left' }));
  const autoOption = h('option', { value: 'auto' }, 'Auto');
  direction.append(autoOption, h('option', { value: 'TB' }, 'Top → bottom'), h('option', { value: 'LR' }, 'Left → right'));
  if (opts.orientable) toolbar.append(direction);

  // ---- the navigation row: finding things, folding plumbing, the colour mode -------------------
  const nav = h('div', { class: 'agw-toolbar agw-nav', role: 'toolbar', 'aria-label': 'Navigation' });
  const nanBtn = button('First NaN/Inf', 'Jump to the first edge whose gradient has a NaN or an inf');
  const plumbing = /** @type {HTMLInputElement} */ (h('input', { type: 'checkbox', class: 'agw-plumbing-input' }));
  const plumbingBox = h('label', { class: 'agw-check', title: 'Hide pure plumbing nodes (views, reshapes, transposes, expands); their edges are contracted' }, plumbing, 'Hide plumbing');
  const counts = h('span', { class: 'agw-counts', 'aria-label': 'Visible nodes' });
  nav.append(opts.search, nanBtn, sep(), plumbingBox, sep(), opts.colorSelect, counts, opts.help);

  // ---- progress, status, the next node, notice, alert ------------------------------------------
  const progress = h('div', { class: 'agw-progress', role: 'progressbar', 'aria-label': 'Steps done', 'aria-valuemin': '0' });
  const progressBar = h('div', { class: 'agw-progress-bar' });
  progress.append(progressBar);
  // One line: the stepper's status (ellipsised, the full text in the title) and, after a failed
  // step, the way out, always visible at its right.
  const statusText = h('span', { class: 'agw-status-text' });
  const statusHint = h('span', { class: 'agw-status-hint', id: `agw-hint-${Math.random().toString(36).slice(2, 8)}`, hidden: '' });
  // not a live region itself: the step is said once, by the view's announcer (a11y.js)
  const status = h('div', { class: 'agw-status' }, statusText, statusHint);
  const alert = h('div', { class: 'agw-alert', role: 'alert', hidden: '' });
  const notice = h('div', { class: 'agw-notice', role: 'note', id: `agw-notice-${Math.random().toString(36).slice(2, 8)}`, hidden: '' });
  const waiting = h('div', { class: 'agw-waiting', hidden: '', role: 'note', 'aria-label': 'Gradients waiting in the next node' });
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let alertTimer;

  btn.step.addEventListener('click', on.step);
  btn.back.addEventListener('click', on.back);
  btn.runTo.addEventListener('click', on.runTo);
  btn.runEnd.addEventListener('click', on.runEnd);
  btn.reset.addEventListener('click', on.reset);
  btn.play.addEventListener('click', on.play);
  fit.addEventListener('click', on.fit);
  direction.addEventListener('change', () => on.direction(direction.value));
  speed.addEventListener('input', () => {
    speedOut.textContent = `${speed.value}/s`;
  });
  plumbing.addEventListener('change', () => on.plumbing(!plumbing.checked));
  nanBtn.addEventListener('click', on.nonfinite);

  /** The buttons, the status line, the progress and the next node, for the store's state and mode. */
  function update() {
    const { graph, state, mode } = store.get();
    const busy = mode !== 'idle';
    const failed = state.error !== null;
    const target = opts.runTarget();
    btn.step.disabled = busy || state.done;
    btn.back.disabled = busy || state.position <= 0;
    btn.runTo.disabled = busy || target < 0;
    btn.runEnd.disabled = busy || state.done;
    btn.reset.disabled = busy || (state.position <= 0 && !failed);
    btn.play.textContent = busy ? 'Pause' : 'Play';
    btn.play.setAttribute('aria-pressed', busy ? 'true' : 'false');
    btn.play.disabled = !busy && state.done;
    baseTitle.set(btn.runTo, target >= 0 ? `Run up to and including ${graph.names[target] || graph.labels[target]}` : 'Select a node first (click it)');
    const stuck = failed && !busy ? wayOut() : '';
    for (const b of [btn.step, btn.runTo, btn.runEnd, btn.play]) markBlocked(b, stuck);
    showStatus(stuck);
    // the direction asked for ('auto' names the one it chose), else the one drawn
    const asked = opts.orientation?.();
    direction.value = asked === 'auto' || asked === 'TB' || asked === 'LR' ? asked : graph.orientation;
    autoOption.textContent = `Auto ${graph.orientation === 'LR' ? '→' : '↓'}`;
    autoOption.title = `Auto: ${graph.orientation === 'LR' ? 'left → right' : 'top → bottom'} shows the whole graph larger`;
    notice.hidden = !state.notice;
    notice.textContent = state.notice ? `⚠ ${state.notice}` : '';
    opts.root.classList.toggle('agw-busy', busy || state.running);
    opts.root.classList.toggle('agw-done', state.done);
    opts.root.classList.toggle('agw-failed', failed);
    const total = Math.max(state.total, 0);
    progressBar.style.width = total > 0 ? `${(100 * Math.min(state.position, total)) / total}%` : '0%';
    progress.setAttribute('aria-valuemax', String(total));
    progress.setAttribute('aria-valuenow', String(state.position));
    updateWaiting();
  }

  /** "Back or Reset to go on" after a failed step ("Reset" alone at step 0), else "". */
  function wayOut() {
    const { state } = store.get();
    if (!state.error) return '';
    return `${state.position > 0 ? 'Back or Reset' : 'Reset'} to go on`;
  }

  /** The failing node's name ("a node" when it is not shown). */
  function failedName() {
    const { graph, state } = store.get();
    const i = state.error ? state.error.node : -1;
    return i >= 0 ? graph.names[i] || graph.labels[i] : 'a node';
  }

  /**
   * The status line: the stepper's text on one line (its full text in the title) and, after a
   * failed step, the way out (`why` on a refused click).
   * @param {string} stuck the way out, "" when not stuck @param {string} [why] what was refused
   */
  function showStatus(stuck, why = '') {
    const { state } = store.get();
    statusText.textContent = state.status;
    statusHint.hidden = !stuck;
    statusHint.textContent = stuck ? ` — ${why ? `can't ${why}: ` : ''}${stuck}` : '';
    status.title = stuck ? `${state.status}\n${why ? `Can't ${why}: ` : ''}${stuck}.` : state.status;
    status.classList.toggle('agw-status-failed', state.error !== null);
  }

  /**
   * A button that can't act after a failed step stays focusable and clickable (a click says
   * why), marked aria-disabled and described by the way out. Before the first step, a standing notice
   * (a graph freed by backward, a released widget) says why stepping will not get far: the button
   * is described by it, before anyone clicks. @param {HTMLButtonElement} b @param {string} stuck
   */
  function markBlocked(b, stuck) {
    const on_ = !!stuck && !b.disabled;
    const { state } = store.get();
    b.classList.toggle('agw-blocked', on_);
    if (on_) {
      b.setAttribute('aria-disabled', 'true');
      b.setAttribute('aria-describedby', statusHint.id);
      b.title = `Can't go on: ${failedName()} failed. ${stuck}.`;
    } else if (state.notice && !b.disabled) {
      b.removeAttribute('aria-disabled');
      b.setAttribute('aria-describedby', notice.id);
      b.title = `${baseTitle.get(b) ?? ''}\n⚠ ${state.notice}`.trim();
    } else {
      b.removeAttribute('aria-disabled');
      b.removeAttribute('aria-describedby');
      b.title = baseTitle.get(b) ?? '';
    }
  }

  /**
   * After a failed step, a move forward is refused (Python refuses it too): the status line says
   * why and flashes. @param {string} what "step", "play"... @returns {true}
   */
  function refuse(what) {
    showStatus(wayOut(), what);
    status.classList.remove('agw-flash');
    void status.offsetWidth; // restart the animation
    status.classList.add('agw-flash');
    return true;
  }

  /** One line under the status: the node about to run and the gradients waiting in its slots. */
  function updateWaiting() {
    const { graph, state } = store.get();
    const i = state.next;
    if ((i < 0 && !state.nextId) || state.done) {
      waiting.hidden = true;
      waiting.replaceChildren();
      waiting.removeAttribute('title');
      return;
    }
    waiting.hidden = false;
    const rows = state.waiting.length ? waitingRows(state.waiting) : [['', 'no input slots']];
    // a leaf reads "AccumulateGrad (7.bias)", as in the status line
    const leaf = i >= 0 && graph.names[i] && graph.labels[i] && graph.names[i].startsWith('AccumulateGrad') && graph.labels[i] !== graph.names[i];
    const name = i >= 0 && !graph.isBox[i] ? (leaf ? `${graph.names[i]} (${graph.labels[i]})` : graph.names[i] || graph.labels[i]) : nextName();
    waiting.replaceChildren(
      h('span', { class: 'agw-dot', style: `background:${NEXT_COLOR}` }),
      h('span', { class: 'agw-waiting-title' }, `Next: ${name}`),
      ...rows.map(([k, v]) => h('span', { class: 'agw-slot' }, h('span', { class: 'agw-slot-name' }, k), ` ${v}`)),
    );
    waiting.title = [`Next: ${name}`, ...rows.map(([k, v]) => `${k} ${v}`)].join('\n');
  }

  /** The next node's name from the status line ("ran … (step 3 / 9) → next AddmmBackward0"), inside a box. */
  function nextName() {
    const { graph, state } = store.get();
    const m = /→ next\s*(.+)$/.exec(state.status);
    const inBox = state.next >= 0 && graph.isBox[state.next] ? ` (in ${graph.labels[state.next]})` : '';
    return `${m ? m[1] : state.nextId ?? ''}${inBox}`;
  }

  /**
   * What depends on the graph alone: the counts and the plumbing toggle (hidden without a kernel
   * or without the trait). @param {boolean} live @param {unknown} showTrait the `show_plumbing` trait
   */
  function updateGraph(live, showTrait) {
    const { graph } = store.get();
    counts.textContent = countsText(graph);
    counts.title = counts.textContent;
    plumbingBox.hidden = !live || (graph.showPlumbing === null && showTrait === undefined);
    const show = graph.showPlumbing ?? showTrait;
    plumbing.checked = show === false;
  }

  /** Separators only between shown groups, on both rows. */
  function tidy() {
    tidySeparators(nav);
    tidySeparators(toolbar);
  }

  /**
   * One message above the drawing: an error stays until the next move; a warning goes after a
   * while (longer ones stay longer: a NaN's cause is a sentence to read); an info (progress) stays.
   * @param {string} text @param {'error' | 'warning' | 'info'} kind
   */
  function showAlert(text, kind) {
    clearTimeout(alertTimer);
    alert.hidden = false;
    alert.dataset.kind = kind;
    alert.textContent = (kind === 'error' ? '✖ ' : kind === 'warning' ? '⚠ ' : '') + text;
    if (kind === 'warning') alertTimer = setTimeout(hideAlert, Math.max(8000, 60 * text.length));
  }

  function hideAlert() {
    alert.hidden = true;
    delete alert.dataset.kind;
    alert.textContent = '';
  }

  return {
    toolbar,
    nav,
    progress,
    status,
    waiting,
    notice,
    alert,
    nanBtn,
    /** Play's speed now, steps per second. */
    speed: () => Number(speed.value || SPEED.initial),
    update,
    updateGraph,
    tidy,
    refuse,
    showAlert,
    hideAlert,
    /** The alert's kind now ('error', 'warning', 'info'), or undefined when none shows. */
    alertKind: () => alert.dataset.kind,
    destroy() {
      stop();
      clearTimeout(alertTimer);
    },
  };
}
