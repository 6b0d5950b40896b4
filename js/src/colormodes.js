/**
 * The colour modes of the drawing: gradient (the step state, the default), memory (the bytes
 * each node's saved tensors hold) and sensitivity (the norm of each node's Jacobian). Owns the
 * mode's select, the two modes' side panels (the memory list, the sensitivity scale with the
 * probe errors), their reports (asked of the kernel through one "latest reply wins" channel
 * each), and the legend under the drawing, whose key is the mode's. DOM; the reports are decoded
 * by the pure helpers of memory.js and sensitivity.js.
 *
 * Guarantees: the mode is the store's `colorBy`; a mode the backend cannot answer is not offered
 * (a walkthrough offers the modes it recorded) nor one the graph's capabilities rule out (memory
 * needs `saved_values`, sensitivity `probe`: a replayed engine run has only gradient); a report is
 * shown only while its mode is on and its graph is the one drawn; the sensitivity probe is asked
 * once per graph (it does not change with the step), the memory report on each mode switch and
 * graph.
 */
import { domHelpers } from './dom.js';
import { formatNumber } from './format.js';
import { GAIN_COLORS, decodeGain, gainLegend } from './gain.js';
import { latestReply } from './latest.js';
import { MEMORY_COLORS, decodeMemory, formatBytes, memoryLegend } from './memory.js';
import { SAVED_STATE } from './model.js';
import { MSG } from './protocol.js';
import { PROBE_SAMPLES, SENSITIVITY_COLORS, decodeProbe, normText, powText, sensitivityLegend } from './sensitivity.js';
import { newStep } from './viewstate.js';
import { ALARM_COLOR, DIFF_COLOR, EDIT_COLOR, GROUP_COLOR, HIGHLIGHT_COLOR, KIND_STYLE, NEXT_COLOR, RAN_COLOR, SAVED_BADGE, SELECT_COLOR, scaleNote } from './style.js';

/** @typedef {'gradient' | 'memory' | 'sensitivity' | 'gain'} ColorMode */

/**
 * What the modes read of the view's store.
 * @typedef {Pick<import('./viewstate.js').ViewState, 'graph' | 'state' | 'theme' | 'colorBy' | 'highlight'>} ModeState
 */

/**
 * @param {Document} doc
 * @param {{
 *   store: import('./store.js').Store<ModeState>,
 *   root: HTMLElement,
 *   request: import('./backend.js').Request,
 *   canAsk: (type: string) => boolean,
 *   moduleOf: Map<string, string | null>,
 *   select: (id: string) => void,
 *   after: { updateSide: () => void, paint: () => void, renderInspector: () => void },
 *   gain?: () => boolean,
 * }} ctx `gain`: offer the gain mode (a watched step's graph: `aw.explore(watch)`); `root`: the view's root (marked with the mode); `canAsk`: can the backend answer this
 *   request type; `moduleOf`: where the memory report's top holders are learnt; `select`: jump
 *   to a real node (a holder, a probe error); `after`: the view's redraws once a report came
 */
export function createColorModes(doc, ctx) {
  const { store, after } = ctx;
  const { h } = domHelpers(doc);
  const select = /** @type {HTMLSelectElement} */ (h('select', { class: 'agw-select', 'aria-label': 'Colour mode', title: 'Colour nodes by step state (gradient), by the bytes their saved tensors hold (memory) or by the norm of their Jacobian (sensitivity)' }));
  select.append(h('option', { value: 'gradient' }, 'Colour: gradient'), h('option', { value: 'memory' }, 'Colour: memory'), h('option', { value: 'sensitivity' }, 'Colour: sensitivity'), h('option', { value: 'gain' }, 'Colour: gain'));
  const gainOption = /** @type {HTMLOptionElement} */ (select.querySelector('option[value="gain"]'));
  gainOption.title = 'Colour nodes by |grad out| / |grad in|: where gradients shrink (blue) or grow (red)';
  gainOption.hidden = true;
  const memoryOption = /** @type {HTMLOptionElement} */ (select.querySelector('option[value="memory"]'));
  const sensitivityOption = /** @type {HTMLOptionElement} */ (select.querySelector('option[value="sensitivity"]'));
  memoryOption.hidden = !ctx.canAsk(MSG.MEMORY);
  sensitivityOption.hidden = !ctx.canAsk(MSG.PROBE);
  const memoryPanel = createMemoryPanel(doc, {
    select: ctx.select,
    excludeLeaves: (v) => {
      excludeLeaves = v;
      requestMemory();
    },
  });
  const sensitivityPanel = createSensitivityPanel(doc, { select: ctx.select });
  const legend = h('div', { class: 'agw-legend', 'aria-label': 'Legend' });

  /** @type {import('./memory.js').Memory | null} */
  let memory = null;
  /** @type {string | null} */
  let memoryError = null;
  let excludeLeaves = false;
  /** @type {import('./sensitivity.js').Sensitivity | null} */
  let sensitivity = null;
  /** @type {string | null} */
  let sensitivityError = null;
  const memoryReq = latestReply(ctx.request);
  const probeReq = latestReply(ctx.request);
  const gainReq = latestReply(ctx.request);
  /** @type {import('./gain.js').Gain | null} */
  let gain = null;
  /** @type {string | null} */
  let gainError = null;
  const stop = store.subscribe((next, prev) => {
    // the gain is a step's: another step shown (a new state) asks again
    if (next.state !== prev.state && next.colorBy === 'gain') requestGain();
    // the legend notes the edits and the norm scale of the state shown
    if (newStep(next, prev) && (prev.state.edits.size > 0 !== next.state.edits.size > 0 || scaleNote(prev.state) !== scaleNote(next.state))) renderLegend();
  });
  const colorBy = () => store.get().colorBy;
  const graphNow = () => store.get().graph;

  select.addEventListener('change', () => set(select.value === 'memory' || select.value === 'sensitivity' || select.value === 'gain' ? select.value : 'gradient'));

  /** Switch to mode `m`: its panel, its report (asked for), its legend, the drawing's colours. @param {ColorMode} m */
  function set(m) {
    store.set({ colorBy: m });
    select.value = m;
    ctx.root.classList.toggle('agw-memory-mode', m === 'memory');
    ctx.root.classList.toggle('agw-sensitivity-mode', m === 'sensitivity');
    if (m !== 'memory') memoryPanel.hide();
    if (m !== 'sensitivity') sensitivityPanel.hide();
    if (m === 'memory') requestMemory();
    else if (m === 'sensitivity') requestSensitivity();
    else if (m === 'gain') requestGain();
    after.updateSide();
    renderLegend();
    after.paint();
    after.renderInspector();
  }

  /**
   * Offer the select only where a mode besides gradient can be answered (back to gradient when
   * not): memory where the backend answers it and the graph's capabilities say `saved_values`
   * (the bytes saved tensors hold), sensitivity where it answers and they say `probe`.
   */
  function offer() {
    const { capabilities } = graphNow();
    const gainOk = !!ctx.gain?.() && ctx.canAsk(MSG.GAIN);
    const memoryOk = capabilities.savedValues && ctx.canAsk(MSG.MEMORY);
    const probeOk = capabilities.probe && ctx.canAsk(MSG.PROBE);
    gainOption.hidden = !gainOk;
    memoryOption.hidden = !memoryOk;
    sensitivityOption.hidden = !probeOk;
    select.hidden = !(memoryOk || probeOk || gainOk);
    const current = /** @type {HTMLOptionElement | null} */ (select.querySelector(`option[value="${colorBy()}"]`));
    if ((select.hidden || current?.hidden) && colorBy() !== 'gradient') set('gradient');
  }

  /** Ask for the gain of the step shown (again whenever another step or graph is shown). */
  function requestGain() {
    if (colorBy() !== 'gain') return;
    const g = graphNow();
    const st = store.get().state;
    gainError = null;
    gainReq.ask({ type: MSG.GAIN }, {
      still: () => g === graphNow() && st === store.get().state && colorBy() === 'gain',
      reply: (data) => {
        gain = decodeGain(data, g.n);
        renderLegend();
        after.paint();
      },
      error: (message) => {
        gainError = message;
        gain = null;
        renderLegend();
      },
    });
  }

  /** Ask for the Jacobian norms of the visible graph (once per graph; they do not change with the step). */
  function requestSensitivity() {
    if (colorBy() !== 'sensitivity') return;
    const g = graphNow();
    const n = g.n;
    const have = sensitivity && sensitivity.items.length === n ? sensitivity : null;
    sensitivityError = null;
    sensitivityPanel.render(have, { error: null, names: nameOf });
    after.updateSide();
    if (have) {
      probeReq.drop(); // an older probe's answer is no longer wanted
      return;
    }
    probeReq.ask({ type: MSG.PROBE, samples: PROBE_SAMPLES, seed: 0 }, {
      still: () => g === graphNow() && colorBy() === 'sensitivity',
      reply: (data) => {
        sensitivity = decodeProbe(data, n);
        sensitivityPanel.render(sensitivity, { error: null, names: nameOf });
        renderLegend();
        after.paint();
        after.renderInspector();
      },
      error: (message) => {
        sensitivityError = message;
        sensitivityPanel.render(null, { error: sensitivityError, names: nameOf });
        renderLegend();
        after.renderInspector();
      },
    });
  }

  /** Ask for the memory report of the visible graph (all storages, or activations only). */
  function requestMemory() {
    if (colorBy() !== 'memory') return;
    const g = graphNow();
    const n = g.n;
    memoryError = null;
    memoryPanel.render(memory && memory.items.length === n ? memory : null, { excludeLeaves, error: null });
    after.updateSide();
    memoryReq.ask({ type: MSG.MEMORY, exclude_leaves: excludeLeaves }, {
      still: () => g === graphNow() && colorBy() === 'memory',
      reply: (data) => {
        memory = decodeMemory(data, n);
        for (const t of memory.top) ctx.moduleOf.set(t.id, t.module);
        memoryPanel.render(memory, { excludeLeaves, error: null });
        renderLegend();
        after.paint();
      },
      error: (message) => {
        memoryError = message;
        memoryPanel.render(null, { excludeLeaves, error: memoryError });
        renderLegend();
      },
    });
  }

  /** A real node's name when it is shown, else its id. @param {string} id */
  function nameOf(id) {
    const graph = graphNow();
    const i = graph.indexOf.get(id);
    return i === undefined ? id : graph.names[i] || graph.labels[i] || id;
  }

  /** A new graph arrived: a memory report of another item count no longer fits it. */
  function graphChanged() {
    memory = memory && memory.items.length === graphNow().n ? memory : null;
  }

  /** After a new graph is drawn: the active mode's report is asked again (items are renumbered). */
  function refetch() {
    sensitivity = sensitivity && sensitivity.items.length === graphNow().n ? sensitivity : null;
    if (colorBy() === 'memory') requestMemory();
    if (colorBy() === 'sensitivity') {
      sensitivity = null; // the items are renumbered: ask again
      requestSensitivity();
    }
    if (colorBy() === 'gain') {
      gain = null;
      requestGain();
    }
  }

  /**
   * The inspector's sensitivity fields for a focused node: its norm, or why there is none.
   * @param {import('./focus.js').Focus | null} focus
   * @returns {{ norm: string, normError: string | null }}
   */
  function normFields(focus) {
    const out = { norm: '', normError: /** @type {string | null} */ (null) };
    if (focus?.kind === 'node' && colorBy() === 'sensitivity') {
      if (sensitivity) {
        out.norm = normText(sensitivity.nodes.get(focus.id), sensitivity.samples);
        const err = sensitivity.errors.find(([id]) => id === focus.id);
        if (err) out.normError = err[1];
      } else if (sensitivityError) out.normError = sensitivityError;
    }
    return out;
  }

  // ---- the legend ------------------------------------------------------------------------------
  /** @param {string} cls @param {string} style @param {string} text */
  function legendItem(cls, style, text) {
    return h('span', { class: 'agw-legend-item' }, h('span', { class: cls, style }), text);
  }

  /** The legend under the drawing: the mode's key, module boxes, saved-tensor badges, the step states, the edges, the marks. */
  function renderLegend() {
    const { graph, state, theme, highlight } = store.get();
    const mode = colorBy();
    const items = [];
    const shaded = mode !== 'gradient';
    if (mode === 'memory') items.push(...memoryKey(theme));
    else if (mode === 'sensitivity') items.push(...sensitivityKey(theme));
    else if (mode === 'gain') items.push(...gainKey(theme));
    else {
      for (const ks of Object.values(KIND_STYLE)) items.push(legendItem('agw-swatch', `background:${ks.color}`, ks.label));
    }
    if (graph.boxes.length) items.push(legendItem('agw-box-swatch', `background:linear-gradient(90deg, ${GROUP_COLOR} 45%, ${theme.boxBody} 45%)`, 'folded module (progress)'));
    const states = new Set(graph.savedState);
    for (const code of [SAVED_STATE.stale, SAVED_STATE.freed]) {
      if (!states.has(code)) continue;
      const b = SAVED_BADGE[code];
      items.push(legendItem(`agw-badge-swatch agw-badge-swatch-${b.symbol}`, `color:${b.color}`, b.label));
    }
    items.push(
      h('span', { class: 'agw-legend-gap' }),
      legendItem('agw-swatch agw-state-pending', '', 'pending'),
      legendItem('agw-swatch agw-state-done', '', 'done'),
      legendItem('agw-swatch agw-state-ran', `border-color:${RAN_COLOR}`, 'just ran'),
      legendItem('agw-swatch agw-state-next', `border-color:${NEXT_COLOR}`, 'next'),
      legendItem('agw-swatch agw-state-failed', '', 'failed'),
      legendItem('agw-swatch agw-state-nograd', '', 'no gradient'),
      h('span', { class: 'agw-legend-gap' }),
    );
    if (shaded) items.push(legendItem('agw-line agw-line-idle', '', 'edges: not coloured in this mode'));
    else {
      items.push(
        legendItem('agw-line agw-line-idle', '', 'not flowed'),
        legendItem('agw-line agw-line-fresh', `border-color:${RAN_COLOR}`, 'just produced'),
        legendItem('agw-line agw-line-none', '', 'None'),
        legendItem('agw-line agw-line-alarm', `border-color:${ALARM_COLOR}`, 'NaN/inf'),
      );
      if (graph.compared) items.push(legendItem('agw-line agw-line-alarm', `border-color:${DIFF_COLOR}`, `differs from ${graph.compared}`));
      const note = scaleNote(state);
      if (note) items.push(h('span', { class: 'agw-legend-item agw-scale-note' }, note));
    }
    items.push(legendItem('agw-swatch agw-sym-ring', `border-color:${SELECT_COLOR}`, 'selected'));
    if (state.edits?.size) items.push(legendItem('agw-line agw-line-edit', `border-color:${EDIT_COLOR}`, '✎ edited gradient'));
    if (highlight.length) items.push(legendItem('agw-swatch agw-sym-ring', `border-color:${HIGHLIGHT_COLOR}`, 'shares storage'));
    legend.replaceChildren(...items);
    legend.dataset.mode = mode;
  }

  /** The memory mode's key: the fill bins with the bytes where each starts, "nothing saved". @param {import('./style.js').Theme} theme */
  function memoryKey(theme) {
    const title = h('span', { class: 'agw-legend-item agw-legend-title' }, 'fill: bytes saved for backward (log scale)');
    const bins = memory ? memoryLegend(memory.items) : [];
    if (!memory) return [title, h('span', { class: 'agw-legend-item agw-legend-loading' }, memoryError ? `unavailable: ${memoryError}` : 'counting…')];
    if (!bins.length) return [title, legendItem('agw-swatch', `background:${theme.noMemory}`, 'nothing saved anywhere'), outlineNote()];
    return [title, ...scaleItems(bins, MEMORY_COLORS.length), legendItem('agw-swatch', `background:${theme.noMemory}`, 'nothing saved'), outlineNote()];
  }

  /** The sensitivity mode's key: ‖J‖²_F bins (dimensionless, squared Frobenius norm), "no value". @param {import('./style.js').Theme} theme */
  function sensitivityKey(theme) {
    const title = h('span', { class: 'agw-legend-item agw-legend-title agw-sens-legend' }, `fill: ‖J‖²_F of the node's gradient map (log scale, no unit${sensitivity?.samples ? `; ≈ from ${sensitivity.samples} probes where not exact` : ''})`);
    if (!sensitivity) return [title, h('span', { class: 'agw-legend-item agw-legend-loading' }, sensitivityError ? `unavailable: ${sensitivityError}` : 'probing…')];
    const bins = sensitivityLegend(sensitivity);
    return [title, ...scaleItems(bins, SENSITIVITY_COLORS.length), legendItem('agw-swatch', `background:${theme.noMemory}`, 'no value'), outlineNote()];
  }

  /** The gain mode's key: |grad out| / |grad in| bins around 1, "no value". @param {import('./style.js').Theme} theme */
  function gainKey(theme) {
    const title = h('span', { class: 'agw-legend-item agw-legend-title agw-gain-legend' }, 'fill: gain |grad out| / |grad in| (blue: shrinks, red: grows; log scale)');
    if (!gain) return [title, h('span', { class: 'agw-legend-item agw-legend-loading' }, gainError ? `unavailable: ${gainError}` : 'reading…')];
    return [title, ...scaleItems(gainLegend(gain), GAIN_COLORS.length), legendItem('agw-swatch', `background:${theme.noMemory}`, 'no value'), outlineNote()];
  }

  /** One swatch per colour bin, labelled with where it starts ("≥ 1.5 KiB"). @param {{ color: string, from: string }[]} bins @param {number} k */
  function scaleItems(bins, k) {
    return bins.slice(0, k).map((b) => legendItem('agw-swatch agw-scale-swatch', `background:${b.color}`, `≥ ${b.from}`));
  }

  function outlineNote() {
    return h('span', { class: 'agw-legend-item' }, 'outline: step state');
  }

  return {
    select,
    legend,
    /** The side panels of the modes (the view puts them in its side column). */
    panels: [memoryPanel.el, sensitivityPanel.el],
    /** Is a mode's panel open? */
    panelOpen: () => !memoryPanel.el.hidden || !sensitivityPanel.el.hidden,
    set,
    offer,
    graphChanged,
    refetch,
    normFields,
    renderLegend,
    /** What the drawing colours by: the mode and its report (null while it is on its way). */
    drawing() {
      const mode = colorBy();
      return { colorMode: mode, memory: mode === 'memory' ? memory : null, sensitivity: mode === 'sensitivity' ? sensitivity : null, gain: mode === 'gain' ? gain : null };
    },
    /** The view closes: no report's answer is handled from now on. */
    destroy() {
      stop();
      memoryReq.drop();
      probeReq.drop();
      gainReq.drop();
    },
  };
}

/**
 * @typedef {object} MemoryHandlers
 * @property {(id: string) => void} select select a holder by real node id
 * @property {(exclude: boolean) => void} excludeLeaves ask again without leaf storages
 */

/**
 * The memory list shown in the "memory" colour mode: total, scale, top holders, by module.
 * @param {Document} doc @param {MemoryHandlers} handlers
 */
export function createMemoryPanel(doc, handlers) {
  const { h, table } = domHelpers(doc);
  const el = h('section', { class: 'agw-memory', 'aria-label': 'Memory', hidden: '' });
  let byModuleOpen = false;

  /**
   * @param {import('./memory.js').Memory | null} mem null hides the panel
   * @param {{ loading?: boolean, error?: string | null, excludeLeaves: boolean }} opts
   */
  function render(mem, opts) {
    const scroll = el.scrollTop;
    el.hidden = false;
    const leaves = /** @type {HTMLInputElement} */ (h('input', { type: 'checkbox' }));
    leaves.checked = opts.excludeLeaves;
    leaves.addEventListener('change', () => handlers.excludeLeaves(leaves.checked));
    const out = [
      h('h3', { class: 'agw-insp-title' }, 'Saved-tensor memory'),
      h('label', { class: 'agw-check', title: 'Leave out storages owned by leaves (parameters, inputs): activation memory alone' }, leaves, 'Activations only'),
    ];
    if (opts.error) out.push(h('p', { class: 'agw-insp-error' }, `✖ ${opts.error}`));
    else if (!mem) out.push(h('p', { class: 'agw-insp-loading' }, '…'));
    if (mem) {
      out.push(h('div', { class: 'agw-mem-total', role: 'status' }, h('span', {}, 'Total '), h('b', {}, formatBytes(mem.total)), h('span', { class: 'agw-meta' }, ` (${formatNumber(mem.total)} bytes, each storage counted once)`)));
      const legend = memoryLegend(mem.items);
      if (legend.length) {
        out.push(h('div', { class: 'agw-mem-scale', 'aria-label': 'Colour scale, log bytes' }, ...legend.map((s) => h('span', { class: 'agw-mem-stop', style: `background:${s.color}`, title: `from ${s.from}` })), h('span', { class: 'agw-meta' }, ` ${legend[0].from} … ${formatBytes(Math.max(...mem.items))}`)));
      } else {
        out.push(h('p', { class: 'agw-insp-note' }, 'Nothing here saves a tensor.'));
      }
      if (mem.top.length) {
        out.push(h('h4', {}, 'Top holders'));
        const list = h('ol', { class: 'agw-mem-top' });
        for (const t of mem.top) {
          const b = h('button', { type: 'button', class: 'agw-link', title: `Select ${t.name}` }, t.name);
          b.addEventListener('click', () => handlers.select(t.id));
          list.append(h('li', {}, b, t.module ? h('span', { class: 'agw-meta' }, ` · ${t.module}`) : null, h('span', { class: 'agw-mem-bytes' }, formatBytes(t.bytes))));
        }
        out.push(list);
      }
      if (mem.byModule.length) {
        const det = /** @type {HTMLDetailsElement} */ (h('details', {}, h('summary', {}, 'By module'), table(mem.byModule.slice(0, 30).map(([k, v]) => /** @type {[string, string]} */ ([k === '' ? '(top module)' : k, formatBytes(v)])))));
        det.open = byModuleOpen;
        det.addEventListener('toggle', () => (byModuleOpen = det.open));
        out.push(det);
      }
    }
    el.replaceChildren(...out);
    el.scrollTop = scroll;
  }

  function hide() {
    el.hidden = true;
    el.replaceChildren();
  }

  return { el, render, hide, colors: MEMORY_COLORS };
}

/**
 * @typedef {object} SensitivityHandlers
 * @property {(id: string) => void} select select a node by real id (a probe error)
 */

/**
 * The list shown in the "sensitivity" colour mode: the scale, the range, the probe errors.
 * @param {Document} doc @param {SensitivityHandlers} handlers
 */
export function createSensitivityPanel(doc, handlers) {
  const { h } = domHelpers(doc);
  const el = h('section', { class: 'agw-sensitivity', 'aria-label': 'Sensitivity', hidden: '' });

  /**
   * @param {import('./sensitivity.js').Sensitivity | null} sens null: loading (or the error)
   * @param {{ error: string | null, names?: (id: string) => string }} opts
   */
  function render(sens, opts) {
    el.hidden = false;
    const out = [
      h('h3', { class: 'agw-insp-title' }, 'Sensitivity: ‖J‖²_F per node'),
      h('p', { class: 'agw-meta' }, 'Squared Frobenius norm of each node\'s gradient map (log colour scale); exact for small nodes, else a Hutchinson estimate.'),
    ];
    if (opts.error) out.push(h('p', { class: 'agw-insp-error' }, `✖ ${opts.error}`));
    else if (!sens) out.push(h('p', { class: 'agw-insp-loading' }, '…'));
    if (sens) {
      const legend = sensitivityLegend(sens);
      if (legend.length && sens.range) {
        out.push(h('div', { class: 'agw-mem-scale', 'aria-label': 'Colour scale, log ‖J‖²_F' }, ...legend.map((st) => h('span', { class: 'agw-mem-stop', style: `background:${st.color}`, title: `from ${st.from}` })), h('span', { class: 'agw-meta agw-sens-range' }, ` ${powText(sens.range[0])} … ${powText(sens.range[1])}`)));
      } else {
        out.push(h('p', { class: 'agw-insp-note' }, 'No node has a nonzero gradient map.'));
      }
      out.push(h('p', { class: 'agw-meta' }, `${sens.samples} samples per estimate`));
      if (sens.errors.length) {
        out.push(h('h4', {}, `Probe errors (${sens.errors.length})`));
        const list = h('ul', { class: 'agw-probe-errors' });
        for (const [id, msg] of sens.errors) {
          const b = h('button', { type: 'button', class: 'agw-link', title: `Select ${id}` }, opts.names ? opts.names(id) : id);
          b.addEventListener('click', () => handlers.select(id));
          list.append(h('li', {}, b, h('span', { class: 'agw-insp-error' }, ` ✖ ${msg}`)));
        }
        out.push(list);
      }
    }
    el.replaceChildren(...out);
  }

  function hide() {
    el.hidden = true;
    el.replaceChildren();
  }

  return { el, render, hide, colors: SENSITIVITY_COLORS };
}
