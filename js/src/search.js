/**
 * The search box: the kernel searches (names, module paths, leaf names, ids), this shows the
 * matches in a dropdown (an ARIA combobox with a listbox) and hands the chosen one back.
 */
import { domHelpers } from './dom.js';
import { latestReply } from './latest.js';
import { asRecord } from './jsonsafe.js';

/** Wait this long after the last keystroke before asking the kernel. */
export const SEARCH_DEBOUNCE_MS = 150;
/** At most this many matches are listed. */
export const MAX_MATCHES = 30;

/**
 * @typedef {{ id: string, name: string, label: string, module: string | null, leaf_name: string | null,
 *   item: number }} Match
 */

/**
 * The `matches` of a search reply, validated.
 * @param {unknown} data
 * @returns {Match[]}
 */
export function decodeMatches(data) {
  const raw = asRecord(data).matches;
  return (Array.isArray(raw) ? raw : [])
    .map(asRecord)
    .filter((m) => typeof m.id === 'string')
    .slice(0, MAX_MATCHES)
    .map((m) => ({
      id: String(m.id),
      name: String(m.name ?? m.id),
      label: String(m.label ?? m.name ?? m.id),
      module: m.module === null || m.module === undefined ? null : String(m.module),
      leaf_name: m.leaf_name ? String(m.leaf_name) : null,
      item: Number.isInteger(m.item) ? Number(m.item) : -1,
    }));
}

/**
 * Where a match is: "in layers.3", "hidden in layers.3 (folded)", "hidden (plumbing)".
 * @param {Match} m @param {import('./model.js').Graph} graph
 */
export function matchWhere(m, graph) {
  const inBox = m.item >= 0 && m.item < graph.n && graph.isBox[m.item];
  if (m.item < 0) return 'hidden (plumbing)';
  const where = m.module === null ? '' : m.module === '' ? 'top module' : m.module;
  if (inBox) return `in folded ${graph.labels[m.item] || graph.modules[m.item]}`;
  return where ? `in ${where}` : '';
}

/** Index after a key press in a list of `n` options (-1: none active). @param {number} at @param {string} key @param {number} n */
export function moveActive(at, key, n) {
  if (n <= 0) return -1;
  if (key === 'ArrowDown') return at < 0 ? 0 : (at + 1) % n;
  if (key === 'ArrowUp') return at <= 0 ? n - 1 : at - 1;
  if (key === 'Home') return 0;
  if (key === 'End') return n - 1;
  return at;
}

/**
 * @param {Document} doc
 * @param {{ request: (query: string) => Promise<unknown>, choose: (m: Match) => void,
 *   graph: () => import('./model.js').Graph, schedule?: (cb: () => void, ms: number) => unknown,
 *   cancel?: (t: unknown) => void }} opts
 */
export function createSearch(doc, opts) {
  const { h } = domHelpers(doc);
  const schedule = opts.schedule ?? ((cb, ms) => setTimeout(cb, ms));
  const cancel = opts.cancel ?? ((t) => clearTimeout(/** @type {ReturnType<typeof setTimeout>} */ (t)));
  const uid = Math.random().toString(36).slice(2, 8);
  const input = /** @type {HTMLInputElement} */ (h('input', {
    type: 'search',
    class: 'agw-search-input',
    placeholder: 'Search nodes…',
    'aria-label': 'Search nodes',
    role: 'combobox',
    'aria-autocomplete': 'list',
    'aria-expanded': 'false',
    'aria-controls': `agw-sr-${uid}`,
    autocomplete: 'off',
    spellcheck: 'false',
    title: 'Find nodes by op name, module path, parameter name or id',
  }));
  const list = h('ul', { class: 'agw-search-list', role: 'listbox', id: `agw-sr-${uid}`, 'aria-label': 'Matching nodes', hidden: '' });
  const el = h('div', { class: 'agw-search' }, input, list);
  /** @type {Match[]} */
  let matches = [];
  let active = -1;
  /** The kernel's searches: a newer query's answer replaces an older one's. */
  const searches = latestReply(opts.request);
  /** @type {unknown} the pending search's timer (`schedule`'s handle), null when none */
  let timer = null;

  function open() {
    list.hidden = false;
    input.setAttribute('aria-expanded', 'true');
  }
  function close() {
    list.hidden = true;
    input.setAttribute('aria-expanded', 'false');
    input.removeAttribute('aria-activedescendant');
    active = -1;
  }

  /** @param {string} text */
  function message(text) {
    matches = [];
    active = -1;
    list.replaceChildren(h('li', { class: 'agw-search-empty', role: 'presentation' }, text));
    open();
  }

  function renderList() {
    const graph = opts.graph();
    list.replaceChildren(
      ...matches.map((m, k) => {
        const where = matchWhere(m, graph);
        const li = h('li', { role: 'option', id: `agw-sr-${uid}-${k}`, class: 'agw-search-option', 'aria-selected': k === active ? 'true' : 'false', 'data-id': m.id },
          h('span', { class: 'agw-search-label' }, m.label),
          m.label !== m.name ? h('span', { class: 'agw-meta' }, ` ${m.name}`) : null,
          where ? h('span', { class: `agw-search-where${m.item < 0 || graph.isBox[m.item] ? ' agw-hidden-note' : ''}` }, where) : null);
        li.addEventListener('mousedown', (ev) => ev.preventDefault()); // keep focus in the input
        li.addEventListener('click', () => choose(k));
        return li;
      }),
    );
    if (active >= 0) input.setAttribute('aria-activedescendant', `agw-sr-${uid}-${active}`);
    else input.removeAttribute('aria-activedescendant');
    open();
  }

  function query() {
    timer = null;
    const q = input.value.trim();
    if (!q) {
      close();
      return;
    }
    searches.ask(q, {
      reply: (data) => {
        matches = decodeMatches(data);
        active = matches.length ? 0 : -1;
        if (!matches.length) message(`No node matches “${q}”`);
        else renderList();
      },
      error: (text) => message(`Search failed: ${text}`),
    });
  }

  /** @param {number} k */
  function choose(k) {
    const m = matches[k];
    if (!m) return;
    close();
    opts.choose(m);
  }

  input.addEventListener('input', () => {
    if (timer !== null) cancel(timer);
    timer = schedule(query, SEARCH_DEBOUNCE_MS);
  });
  input.addEventListener('keydown', (ev) => {
    if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp' || ((ev.key === 'Home' || ev.key === 'End') && !list.hidden && matches.length)) {
      if (list.hidden && matches.length) open();
      active = moveActive(active, ev.key, matches.length);
      renderList();
    } else if (ev.key === 'Enter') {
      if (timer !== null) {
        // typed and pressed Enter at once: search now, choose the best match when it comes
        cancel(timer);
        timer = null;
        const q = input.value.trim();
        if (!q) return;
        searches.ask(q, {
          reply: (data) => {
            matches = decodeMatches(data);
            if (matches.length) choose(0);
            else message(`No node matches “${q}”`);
          },
        });
      } else if (matches.length) {
        choose(active >= 0 ? active : 0);
      }
    } else if (ev.key === 'Escape') {
      if (!list.hidden) close();
      else input.value = '';
    } else {
      return;
    }
    ev.preventDefault();
    ev.stopPropagation();
  });
  input.addEventListener('blur', () => close());
  input.addEventListener('focus', () => {
    if (matches.length && input.value.trim()) renderList();
  });

  return {
    el,
    input,
    list,
    close,
    destroy() {
      if (timer !== null) cancel(timer);
      searches.drop();
    },
  };
}
