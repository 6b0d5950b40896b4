/**
 * The inspector panel: a node, an edge or a module box, with the Gradients / Saved / Hooks /
 * Formula tabs and the what-if edits (the colour modes' panels are in colormodes.js; what the
 * panel shows, and when it asks the kernel, is inspectfeed.js's). DOM only: the content comes
 * from the kernel's replies through the pure helpers of inspect.js; gestures go out through the
 * handlers the view passes in.
 */
import { domHelpers } from './dom.js';
import { formatNumber } from './format.js';
import { moduleAncestors, progressText } from './groups.js';
import {
  SAVED_STATES,
  communicationText,
  hookItems,
  incomingSlots,
  isNonfinite,
  layoutText,
  outgoingEdges,
  savedDetailRows,
  savedItems,
  savedNote,
  sequenceText,
  summaryStats,
  tracebackText,
  valuesPreview,
} from './inspect.js';
import { shapeText } from './labels.js';
import { formulaInfo, renderMath, renderNote } from './math.js';
import { editText, parseFactor } from './sensitivity.js';

/** @typedef {import('./protocol.js').InspectReply} InspectReply */

/**
 * @typedef {object} InspectorHandlers
 * @property {() => void} close clear the selection
 * @property {(group: string) => void} [collapse] fold a module (absent: no fold control, e.g. a walkthrough)
 * @property {(group: string) => void} [expand] unfold a box (absent: no unfold control)
 * @property {(target: { item: number } | { id: string }) => void} runTo
 * @property {(id: string) => void} selectNode select a real node by id
 * @property {(ids: string[]) => void} highlight mark nodes on the graph ([] clears)
 * @property {(edge: number, op: 'zero' | 'scale' | 'clear', factor?: number) => void} [editEdge] a what-if edit
 * @property {() => void} [leafDiff] ask for the leaf gradients against the faithful run
 *
 * @typedef {object} InspectorTarget
 * @property {'node' | 'edge' | 'box'} kind
 * @property {string} key stable across steps (the UI state of the panel is kept per key)
 * @property {string} [id] real node id / real edge id
 * @property {number} item visible item (node, box) or visible edge index; -1 when not visible
 * @property {InspectReply | null} data the inspect reply, null while loading
 * @property {string | null} [error] why there is no reply
 * @property {import('./model.js').Graph} graph
 * @property {import('./model.js').State} state
 * @property {string} [norm] the node's Jacobian norm text (sensitivity mode), or ""
 * @property {string | null} [normError] why the probe has no value for this node
 * @property {boolean} [edit] what-if edits are offered: a kernel answers and the graph's
 *   capabilities say `edit` (inspectfeed.js)
 * @property {string | null} [editWarning] Python rejected the last edit of this edge
 * @property {{ loading: boolean, error: string | null, leaves: import('./sensitivity.js').LeafDiff[] } | null} [leafDiff]
 */

/** A clicked saved tensor shows this many of its values (Python sends up to 64). */
export const SAVED_PREVIEW_VALUES = 64;

/** @type {readonly ['grad', 'saved', 'hooks', 'math']} */
const TABS = ['grad', 'saved', 'hooks', 'math'];
const TAB_LABEL = { grad: 'Gradients', saved: 'Saved', hooks: 'Hooks', math: 'Formula' };

/**
 * @param {Document} doc @param {InspectorHandlers} handlers
 */
export function createInspector(doc, handlers) {
  const { h, button, table } = domHelpers(doc);
  const el = h('section', { class: 'agw-inspector', 'aria-label': 'Inspector', hidden: '' });
  /** The panel's own state, per target key: open tab, open saved value, traceback open. */
  let ui = { key: '', tab: /** @type {'grad' | 'saved' | 'hooks' | 'math'} */ ('grad'), saved: /** @type {string | null} */ (null), tb: false };
  /** @type {InspectorTarget | null} */
  let current = null;

  /** @param {InspectorTarget | null} target */
  function render(target) {
    current = target;
    if (!target) {
      if (ui.saved) handlers.highlight([]);
      ui = { key: '', tab: ui.tab, saved: null, tb: false };
      el.hidden = true;
      el.replaceChildren();
      return;
    }
    if (target.key !== ui.key) {
      if (ui.saved) handlers.highlight([]);
      ui = { key: target.key, tab: ui.tab, saved: null, tb: false };
    }
    const scroll = el.scrollTop;
    el.hidden = false;
    el.dataset.kind = target.kind;
    if (target.kind === 'edge') el.replaceChildren(...edgeView(target));
    else if (target.kind === 'box') el.replaceChildren(...boxView(target));
    else el.replaceChildren(...nodeView(target));
    el.scrollTop = scroll;
  }

  /** @param {string} title @param {string} sub */
  function header(title, sub) {
    const close = button('×', 'Close the inspector (Esc)', 'agw-icon-button');
    close.setAttribute('aria-label', 'Close inspector');
    close.addEventListener('click', () => handlers.close());
    return h('header', { class: 'agw-insp-head' }, h('div', { class: 'agw-insp-titles' }, h('h3', { class: 'agw-insp-title' }, title), sub ? h('div', { class: 'agw-insp-sub' }, sub) : null), close);
  }

  /** @param {string} text */
  function note(text, cls = 'agw-insp-note') {
    return h('p', { class: cls }, text);
  }

  /** @param {InspectorTarget} t */
  function loadingOrError(t) {
    if (t.error) return note(`✖ ${t.error}`, 'agw-insp-error');
    if (!t.data) return note('…', 'agw-insp-loading');
    return null;
  }

  /**
   * A gradient or tensor summary: one line, the statistics, the values preview; NaN/inf in the
   * alarm colour.
   * @param {import('./protocol.js').Summary | null | undefined} s @param {string} [empty]
   */
  function summaryBlock(s, empty = 'no gradient') {
    if (s === null || s === undefined) return h('div', { class: 'agw-summary agw-summary-empty' }, empty);
    const bad = isNonfinite(s);
    const box = h('div', { class: `agw-summary${bad ? ' agw-nonfinite' : ''}` });
    if (bad) box.append(h('div', { class: 'agw-alarm agw-alarm-line', role: 'note' }, `⚠ contains ${[Number(s.nan) > 0 ? `${s.nan} NaN` : '', Number(s.inf) > 0 ? `${s.inf} inf` : ''].filter(Boolean).join(' and ') || 'non-finite values'}`));
    box.append(table(summaryStats(s)));
    const pv = valuesPreview(s.values, s.numel ?? null);
    if (pv.text) box.append(h('div', { class: 'agw-values' }, h('span', { class: 'agw-values-label' }, `values (${pv.note})`), h('code', { class: pv.alarm ? 'agw-alarm' : '' }, pv.text)));
    return box;
  }

  // ---- node --------------------------------------------------------------------------------
  /** @param {InspectorTarget} t */
  function nodeView(t) {
    const { graph, data } = t;
    const i = t.item;
    const name = data?.name ?? (i >= 0 ? graph.names[i] : t.id ?? '');
    const label = data?.label ?? (i >= 0 ? graph.labels[i] : '');
    const kind = data?.kind ?? (i >= 0 ? graph.kinds[i] : '');
    const module = data ? data.module ?? null : i >= 0 ? graph.modules[i] : null;
    const out = [header(name || 'node', [label && label !== name ? label : '', kind].filter(Boolean).join(' · '))];
    const actions = h('div', { class: 'agw-insp-actions' });
    if (module !== null && module !== undefined && handlers.collapse) {
      const b = button('Collapse module', `Fold ${module || 'the whole model'} into one box`);
      b.addEventListener('click', () => handlers.collapse?.(module));
      actions.append(b);
    }
    if (t.id) {
      const run = button('Run to here', 'Run backward up to and including this node');
      run.addEventListener('click', () => handlers.runTo({ id: /** @type {string} */ (t.id) }));
      run.disabled = t.state.done || i < 0;
      if (i < 0) run.title = 'Not shown: expand its module first';
      actions.append(run);
    }
    if (actions.children.length) out.push(actions);
    /** @type {[string, string | Node, boolean?][]} */
    const rows = [];
    if (module !== null && module !== undefined) rows.push(['module', moduleCrumbs(module)]);
    if (data?.sequence_nr !== undefined && data?.sequence_nr !== null) rows.push(['sequence nr', sequenceText(data.sequence_nr)]);
    if (data?.leaf_name) rows.push(['leaf', String(data.leaf_name)]);
    const moves = communicationText(data?.communication); // a DTensor communication node
    if (moves) rows.push(['communicates', moves]);
    const sharded = layoutText(data?.sharding); // a sharded (DTensor) parameter's leaf
    if (sharded) rows.push(['sharding', sharded]);
    if (t.id) rows.push(['id', t.id]);
    const run = data?.run;
    if (run && typeof run === 'object') {
      // a replayed engine run (aw.record): how the engine itself ran this node
      rows.push(['engine ran it', `step ${Number(run.step) + 1}, ${formatNumber(Number(run.ms))} ms${Number(run.pass) > 0 ? `, pass ${Number(run.pass) + 1}` : ''} (thread ${String(run.thread).slice(-6)}, call #${Number(run.seq) + 1})`]);
    }
    if (i < 0) rows.push(['shown', 'hidden (inside a folded module or plumbing)']);
    out.push(table(rows));
    const stepError = data?.error ?? (t.state.error && t.state.error.id === t.id ? t.state.error.message : null);
    if (stepError) out.push(h('div', { class: 'agw-insp-error', role: 'alert' }, `✖ this step failed: ${stepError}`));
    const why = data?.explanation;
    if (why && typeof why === 'object' && why.sentence) {
      // why it failed, in words (Python's failure.py): the saved value, its versions, the culprit
      const box = h('div', { class: 'agw-insp-why', role: 'note' }, h('b', {}, 'Why: '), String(why.sentence));
      if (why.hint) box.append(h('div', { class: 'agw-insp-hint' }, String(why.hint)));
      const culprit = why.culprit;
      if (typeof culprit === 'string' && culprit) {
        const go = h('button', { type: 'button', class: 'agw-link', title: 'Select the node whose in-place op changed the saved value' }, 'show the in-place op');
        go.addEventListener('click', () => handlers.selectNode(culprit));
        box.append(' ', go);
      }
      const tbw = tracebackText(why.traceback);
      if (tbw) box.append(h('details', { class: 'agw-traceback' }, h('summary', {}, 'Where the in-place op ran (forward traceback)'), h('pre', {}, tbw)));
      out.push(box);
    }
    const wait = loadingOrError(t);
    if (wait || !data) {
      if (wait) out.push(wait); // no data without a loading or error note
      return out;
    }
    const tb = tracebackText(data.traceback);
    if (tb) {
      const det = /** @type {HTMLDetailsElement} */ (h('details', { class: 'agw-traceback' }, h('summary', {}, 'Forward traceback'), h('pre', {}, tb)));
      det.open = ui.tb;
      det.addEventListener('toggle', () => (ui.tb = det.open));
      out.push(det);
    }
    const saved = savedItems(data.saved);
    const hooks = hookItems(data.hooks);
    out.push(...tabs({
      grad: () => gradientsTab(t),
      saved: () => savedTab(saved, data.saved_error, !!stepError),
      hooks: () => hooksTab(hooks),
      math: () => formulaTab(formulaInfo(data.formula), data.name),
    }, { saved: saved.length ? String(saved.length) : '', hooks: hooks.hooks.length ? String(hooks.hooks.length) : '' }, saved.some((s) => s.state === 'stale' || s.state === 'freed')));
    return out;
  }

  /** "layers" / "layers.3" / "layers.3.linear1": each folds that module. @param {string} module */
  function moduleCrumbs(module) {
    const span = h('span', { class: 'agw-crumbs' });
    if (module === '') {
      span.append('(top module)');
      return span;
    }
    moduleAncestors(module).forEach((path, k) => {
      if (k) span.append('.');
      const part = path.split('.').pop() ?? path;
      if (!handlers.collapse) return void span.append(part); // a walkthrough cannot fold
      const b = h('button', { type: 'button', class: 'agw-link', title: `Fold ${path} into one box` }, part);
      b.addEventListener('click', () => handlers.collapse?.(path));
      span.append(b);
    });
    return span;
  }

  /**
   * The tab strip and the open panel.
   * @param {Record<'grad' | 'saved' | 'hooks' | 'math', () => Node[]>} panels
   * @param {Partial<Record<'grad' | 'saved' | 'hooks' | 'math', string>>} counts
   * @param {boolean} savedAlarm
   */
  function tabs(panels, counts, savedAlarm) {
    const uid = Math.random().toString(36).slice(2, 8);
    const list = h('div', { class: 'agw-tabs', role: 'tablist', 'aria-label': 'Inspector sections' });
    const panel = h('div', { class: 'agw-tabpanel', role: 'tabpanel', id: `agw-tp-${uid}` });
    /** @type {HTMLButtonElement[]} */
    const buttons = [];
    const show = (/** @type {'grad' | 'saved' | 'hooks' | 'math'} */ tab, focus = false) => {
      ui.tab = tab;
      buttons.forEach((b, k) => {
        const on = TABS[k] === tab;
        b.setAttribute('aria-selected', on ? 'true' : 'false');
        b.tabIndex = on ? 0 : -1;
        if (on && focus) b.focus();
      });
      panel.setAttribute('aria-labelledby', `agw-tab-${uid}-${tab}`);
      panel.replaceChildren(...panels[tab]());
    };
    for (const tab of TABS) {
      const count = counts[tab];
      const b = /** @type {HTMLButtonElement} */ (h('button', { type: 'button', role: 'tab', class: 'agw-tab', id: `agw-tab-${uid}-${tab}`, 'aria-controls': panel.id }, TAB_LABEL[tab], count ? h('span', { class: `agw-tab-count${tab === 'saved' && savedAlarm ? ' agw-alarm' : ''}` }, count) : null));
      b.addEventListener('click', () => show(tab));
      b.addEventListener('keydown', (ev) => {
        const k = TABS.indexOf(tab);
        if (ev.key === 'ArrowRight' || ev.key === 'ArrowLeft') {
          ev.preventDefault();
          ev.stopPropagation();
          show(TABS[(k + (ev.key === 'ArrowRight' ? 1 : TABS.length - 1)) % TABS.length], true);
        }
      });
      buttons.push(b);
      list.append(b);
    }
    show(ui.tab);
    return [list, panel];
  }

  /**
   * What the node computes: the gradients as formulas (typeset by KaTeX as MathML), then with the
   * node's actual shapes; a plain sentence for a type without a formula.
   * @param {import('./math.js').FormulaInfo | null} f @param {string | undefined} name
   */
  function formulaTab(f, name) {
    if (!f) return [note('no formula sent for this node')];
    if (!f.known) return [note(f.note || `No formula for ${name || 'this node type'} yet.`)];
    const out = [h('h4', {}, `What ${name || 'this node'} computes`)];
    const block = (/** @type {string} */ latex, /** @type {string} */ cls) => {
      const el = h('div', { class: `agw-math ${cls}` });
      el.innerHTML = renderMath(latex).html; // KaTeX's own escaped MathML
      return el;
    };
    out.push(block(f.latex, 'agw-math-formula'));
    if (f.shapes) {
      out.push(h('h4', {}, 'With this node\'s shapes'));
      out.push(block(f.shapes, 'agw-math-shapes'));
    }
    if (f.note) {
      const p = note('');
      p.innerHTML = renderNote(f.note); // escaped text, KaTeX's own MathML
      out.push(p);
    }
    out.push(note('G is the gradient arriving at this node; ⊙ multiplies element by element.'));
    return out;
  }

  /** @param {InspectorTarget} t */
  function gradientsTab(t) {
    const { graph } = t;
    const data = t.data ?? {}; // asked for by the node view's tabs, once the reply is in
    const out = [];
    if (t.norm) out.push(h('div', { class: 'agw-sens-norm', role: 'note', title: 'Squared Frobenius norm of this node\'s gradient map (incoming -> outgoing gradients)' }, t.norm));
    if (t.normError) out.push(note(`✖ probe: ${t.normError}`, 'agw-insp-error'));
    const slots = incomingSlots(data);
    out.push(h('h4', {}, 'Incoming gradients (per input slot)'));
    if (!slots.length) out.push(note('no input slots'));
    for (const s of slots) {
      out.push(h('div', { class: 'agw-slot-block' }, h('div', { class: 'agw-slot-head' }, h('b', {}, `slot ${s.slot}`), s.meta ? h('span', { class: 'agw-meta' }, ` ${s.meta}`) : null), summaryBlock(s.summary, t.state.done || data.incoming ? 'empty (nothing arrived: no gradient)' : 'empty')));
    }
    const outs = outgoingEdges(data, graph);
    out.push(h('h4', {}, 'Outgoing gradients (per edge)'));
    if (!outs.length) out.push(note(data.kind === 'parameter' || data.kind === 'input' ? 'a leaf: its gradient accumulates into .grad' : 'no outgoing edges'));
    for (const o of outs) {
      out.push(h('div', { class: 'agw-slot-block' }, h('div', { class: 'agw-slot-head' }, h('b', {}, `→ ${o.to}`), h('span', { class: 'agw-meta' }, ` ${o.id}`)), summaryBlock(o.summary, 'not flowed yet')));
    }
    return out;
  }

  /**
   * @param {import('./inspect.js').SavedItem[]} items @param {unknown} error
   * @param {boolean} failed this node's step failed (its message is at the top: not repeated)
   */
  function savedTab(items, error, failed) {
    const out = [];
    if (error) out.push(note(`✖ could not read the saved values: ${error}`, 'agw-insp-error'));
    if (!items.length) {
      if (!error) out.push(note('This node saved nothing for backward.'));
      return out;
    }
    const list = h('ul', { class: 'agw-saved-list', 'aria-label': 'Saved values' });
    for (const it of items) {
      const st = SAVED_STATES[it.state];
      const badge = h('span', { class: `agw-badge agw-badge-${it.state}`, title: st.title }, st.text);
      const open = ui.saved === it.key;
      const nameEl = it.tensor
        ? h('button', { type: 'button', class: 'agw-saved-name agw-link', 'aria-expanded': open ? 'true' : 'false', title: 'Show its statistics and values, and mark what it aliases on the graph' }, it.name)
        : h('span', { class: 'agw-saved-name' }, it.name);
      const head = h('div', { class: 'agw-saved-head' }, nameEl, h('span', { class: 'agw-meta' }, it.kind), it.shape ? h('code', { class: 'agw-shape' }, it.shape) : null, it.dtype ? h('span', { class: 'agw-meta' }, it.dtype) : null, it.size ? h('span', { class: 'agw-meta' }, it.size) : null, badge);
      const li = h('li', { class: `agw-saved-item agw-saved-${it.state}${open ? ' agw-open' : ''}`, 'data-name': it.name }, head);
      if (!it.tensor && it.kind !== 'none') li.append(h('div', { class: 'agw-saved-value' }, h('code', {}, `= ${it.value}`)));
      if (it.aliases.length) li.append(h('div', { class: 'agw-saved-aliases' }, `aliases: ${it.aliases.join('; ')}`));
      if (it.note) li.append(h('div', { class: `agw-saved-note${it.state === 'stale' || it.state === 'freed' ? ' agw-alarm' : ''}` }, savedNote(it.note, failed)));
      if (open) li.append(savedDetail(it));
      if (it.tensor) {
        nameEl.addEventListener('click', () => {
          ui.saved = ui.saved === it.key ? null : it.key;
          handlers.highlight(ui.saved ? it.aliasIds : []);
          if (current) render(current);
        });
      }
      list.append(li);
    }
    out.push(list);
    return out;
  }

  /** @param {import('./inspect.js').SavedItem} it */
  function savedDetail(it) {
    const box = h('div', { class: 'agw-saved-detail' }, table(savedDetailRows(it)));
    const s = it.raw?.summary;
    // Python sends every value of a small saved tensor (up to 64): show them all.
    const pv = valuesPreview(it.raw?.value ?? s?.values, s?.numel ?? null, SAVED_PREVIEW_VALUES);
    if (pv.text && it.state !== 'packed') box.append(h('div', { class: 'agw-values' }, h('span', { class: 'agw-values-label' }, `values (${pv.note})`), h('code', { class: pv.alarm ? 'agw-alarm' : '' }, pv.text)));
    if (it.aliasIds.length) box.append(h('div', { class: 'agw-meta' }, `marked on the graph: ${it.aliasIds.length} node${it.aliasIds.length === 1 ? '' : 's'} sharing its storage`));
    return box;
  }

  /** @param {{ hooks: { on: string, kind: string, fn: string }[], notes: string[] }} hk */
  function hooksTab(hk) {
    const out = [];
    if (hk.hooks.length) {
      out.push(table(hk.hooks.map((x) => /** @type {[string, string]} */ ([x.kind, `${x.fn} (on ${x.on})`]))));
    } else {
      out.push(note('No hooks that can be listed.'));
    }
    for (const n of hk.notes) out.push(note(n));
    return out;
  }

  // ---- edge --------------------------------------------------------------------------------
  /** @param {InspectorTarget} t */
  function edgeView(t) {
    const { graph, data } = t;
    const e = t.item;
    const srcName = data?.src?.name ?? (e >= 0 ? graph.names[graph.src[e]] : '');
    const dstName = data?.dst?.name ?? (e >= 0 ? graph.names[graph.dst[e]] : '');
    const dstLabel = data?.dst?.label ?? (e >= 0 ? graph.labels[graph.dst[e]] : '');
    const outNr = data?.src?.output_nr ?? (e >= 0 ? graph.outputNr[e] : '');
    const inNr = data?.dst?.input_nr ?? (e >= 0 ? graph.inputNr[e] : '');
    const out = [header(`${srcName} → ${dstLabel || dstName}`, `edge ${t.id ?? ''}`)];
    const actions = h('div', { class: 'agw-insp-actions' });
    for (const [label, who] of /** @type {[string, InspectReply['src'] & InspectReply['dst']][]} */ ([['Source', data?.src], ['Target', data?.dst]])) {
      if (!who?.id) continue;
      const b = button(`Select ${label.toLowerCase()}`, `Select ${who.name}`);
      b.addEventListener('click', () => handlers.selectNode(String(who.id)));
      actions.append(b);
    }
    if (actions.children.length) out.push(actions);
    /** @type {[string, string][]} */
    const rows = [
      ['from', `${srcName} (output ${outNr})`],
      ['to', `${dstName}${dstLabel && dstLabel !== dstName ? ` · ${dstLabel}` : ''} (slot ${inNr})`],
    ];
    if (e >= 0) {
      const meta = graph.inputs[graph.dst[e]]?.[graph.inputNr[e]];
      if (meta && !graph.isBox[graph.dst[e]]) rows.push(['tensor', [shapeText(meta.shape), meta.dtype, meta.device].filter(Boolean).join(' ')]);
    } else {
      rows.push(['shown', 'hidden (inside a folded module)']);
    }
    out.push(table(rows));
    const wait = loadingOrError(t);
    if (wait || !data) {
      if (wait) out.push(wait); // no data without a loading or error note
      return out;
    }
    out.push(h('h4', {}, 'Gradient'));
    out.push(summaryBlock(data.summary, 'not flowed yet (or None)'));
    if (t.edit && e >= 0) out.push(...whatIf(t, e));
    return out;
  }

  /**
   * What-if edits of the edge's gradient: zero it, scale it, undo; the leaf gradients against
   * the faithful run.
   * @param {InspectorTarget} t @param {number} e
   */
  function whatIf(t, e) {
    const out = [h('h4', {}, 'What-if')];
    const edit = t.state.edits?.get(e) ?? null;
    if (edit) {
      out.push(h('div', { class: 'agw-edit-mark', role: 'note' }, `✎ edited: ${editText(edit)}`));
      if (edit.before) out.push(h('div', { class: 'agw-meta' }, 'before the edit:'), summaryBlock(edit.before));
    }
    const zero = button('Zero this gradient', 'Replace this gradient by zeros; later steps use it');
    zero.addEventListener('click', () => handlers.editEdge?.(e, 'zero'));
    const factor = /** @type {HTMLInputElement} */ (h('input', { type: 'number', step: 'any', value: '0.5', class: 'agw-factor', 'aria-label': 'Scale factor' }));
    const scale = button('Scale by…', 'Multiply this gradient by the factor; later steps use it');
    const apply = () => {
      const f = parseFactor(factor.value);
      if (f === null) {
        factor.setAttribute('aria-invalid', 'true');
        return;
      }
      factor.removeAttribute('aria-invalid');
      handlers.editEdge?.(e, 'scale', f);
    };
    scale.addEventListener('click', apply);
    factor.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') {
        ev.preventDefault();
        ev.stopPropagation();
        apply();
      }
    });
    const actions = h('div', { class: 'agw-insp-actions agw-edit-actions' }, zero, factor, scale);
    if (edit) {
      const undo = button('Undo edit', 'Back to the faithful gradient on this edge');
      undo.addEventListener('click', () => handlers.editEdge?.(e, 'clear'));
      actions.append(undo);
    }
    out.push(actions);
    if (t.editWarning) out.push(h('div', { class: 'agw-insp-error', role: 'alert' }, `⚠ ${t.editWarning}`));
    if (t.state.edits?.size) {
      const cmp = button('Compare with faithful run', 'Each leaf gradient now against the run without edits');
      cmp.addEventListener('click', () => handlers.leafDiff?.());
      out.push(h('div', { class: 'agw-insp-actions' }, cmp));
      const ld = t.leafDiff;
      if (ld?.loading) out.push(note('…', 'agw-insp-loading'));
      else if (ld?.error) out.push(note(`✖ ${ld.error}`, 'agw-insp-error'));
      else if (ld) {
        const changed = ld.leaves.filter((l) => l.changed);
        if (!changed.length) out.push(note('No leaf gradient differs from the faithful run.'));
        else {
          out.push(h('ul', { class: 'agw-leaf-diff', 'aria-label': 'Changed leaves' }, ...changed.map((l) => h('li', {}, h('b', {}, l.name), ` max |Δ| = ${l.maxAbsDiff === null ? '?' : formatNumber(l.maxAbsDiff)}`, l.edited?.values ? h('span', { class: 'agw-meta' }, ` (now ${valuesPreview(l.edited.values, l.edited.numel ?? null).text}, faithful ${valuesPreview(l.faithful?.values, l.faithful?.numel ?? null).text})`) : null))));
        }
      }
    }
    return out;
  }

  // ---- box ---------------------------------------------------------------------------------
  /** @param {InspectorTarget} t */
  function boxView(t) {
    const { graph, data, state } = t;
    const i = t.item;
    const path = data?.group ?? (i >= 0 ? graph.modules[i] : '') ?? '';
    const label = data?.label ?? (i >= 0 ? graph.labels[i] : path);
    const members = data?.members ?? (i >= 0 ? graph.members[i] : 0);
    const p = i >= 0 ? state.progress[i] : Number(data?.progress ?? 0);
    const fold = i >= 0 ? graph.foldAt?.get(i) : undefined;
    const out = [header(label || 'module', fold ? `folded repeats · ${fold.count} blocks · ${members} nodes` : `folded module · ${members} nodes`)];
    const actions = h('div', { class: 'agw-insp-actions' });
    if (handlers.expand) {
      const expand = button('Expand', `Unfold ${label}: its submodules become boxes`);
      expand.addEventListener('click', () => handlers.expand?.(path));
      actions.append(expand);
    }
    if (i >= 0) {
      const run = button('Run through module', 'Run until every node inside it has run');
      run.disabled = p >= 1 || state.done;
      run.addEventListener('click', () => handlers.runTo({ item: i }));
      actions.append(run);
    }
    out.push(actions);
    const bar = h('div', { class: 'agw-meter', role: 'progressbar', 'aria-label': 'Module progress', 'aria-valuemin': '0', 'aria-valuemax': '100', 'aria-valuenow': String(Math.round(100 * p)) }, h('div', { class: 'agw-meter-bar', style: `width:${(100 * Math.min(1, Math.max(0, p))).toFixed(1)}%` }));
    out.push(table([
      ['module', path === '' ? '(whole model)' : path],
      ['nodes', String(members)],
      ['progress', h('span', { class: 'agw-progress-cell' }, bar, ` ${progressText(p)}`)],
    ]));
    const wait = loadingOrError(t);
    if (wait || !data) {
      if (wait) out.push(wait); // no data without a loading or error note
      return out;
    }
    if (Array.isArray(data.ops) && data.ops.length) {
      out.push(h('h4', {}, 'Top ops'));
      out.push(table(data.ops.map((o) => /** @type {[string, string]} */ ([String(o[0]), `×${formatNumber(Number(o[1]))}`])), 'agw-rows agw-ops'));
    }
    if (Array.isArray(data.leaves) && data.leaves.length) {
      out.push(h('h4', {}, `Leaves (${data.leaves.length})`));
      out.push(h('ul', { class: 'agw-leaves' }, ...data.leaves.map((/** @type {unknown} */ l) => h('li', {}, h('code', {}, String(l ?? '?'))))));
    }
    return out;
  }

  return {
    el,
    render,
    /** The key of the target shown, or "". */
    get key() {
      return current ? current.key : '';
    },
  };
}
