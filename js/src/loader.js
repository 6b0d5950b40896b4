/**
 * The widget's `_esm`: a small loader that fetches the front-end bundle ONCE per page.
 *
 * anywidget imports every widget's `_esm` on its own, and the host keeps (and a saved notebook
 * stores) every widget's copy. With the whole bundle as `_esm` (~400 KB with its stylesheet),
 * ten widgets cost ten copies on the wire, in the notebook file and in the page's memory. So
 * `_esm` is this loader (a few KB); the first view on a page asks the kernel for the bundle
 * (`{type: HOST.BUNDLE}` → a reply with `{code, css, hash}`), imports it once, and every later
 * view of every widget with the same bundle hash (`model.get(TRAIT.BUNDLE).hash`) reuses that module.
 * The stylesheet goes once into each document or shadow root a view lives in.
 *
 * Guarantees: one request per page and bundle hash while it is in flight or loaded (a failed
 * load is forgotten, so the next view asks again); a view whose kernel does not answer shows one
 * clear message and no traceback.
 */
import { kernelBackend } from './backend.js';
import { asRecord } from './jsonsafe.js';
import { HOST, TRAIT } from './protocol.js';

/** How long a view waits for the kernel to send the bundle (it answers only between cells). */
export const BUNDLE_TIMEOUT_MS = 120000;

const CACHE_KEY = Symbol.for('autograd_widget.bundles');

/**
 * A loaded front-end: the imported bundle module (index.js: its default export has `render`),
 * its CSS and its hash.
 * @typedef {{ module: unknown, css: string, hash: string }} LoadedBundle
 */

/**
 * The page-wide cache: bundle hash → promise of the imported module.
 * @param {object} [scope] the global object (tests pass their own)
 * @returns {Map<string, Promise<LoadedBundle>>}
 */
export function bundleCache(scope = globalThis) {
  const slots = /** @type {Record<symbol, Map<string, Promise<LoadedBundle>> | undefined>} */ (scope);
  const cache = slots[CACHE_KEY] ?? new Map();
  slots[CACHE_KEY] = cache;
  return cache;
}

/**
 * Ask the kernel for the bundle over the widget's custom messages (the kernel backend's
 * request/reply, with its own timeout).
 * @param {Pick<import('./protocol.js').WidgetModel, 'send' | 'on' | 'off'>} model
 * @param {number} timeoutMs
 * @returns {Promise<{ code: string, css: string, hash: string }>}
 */
export async function requestBundle(model, timeoutMs = BUNDLE_TIMEOUT_MS) {
  const backend = kernelBackend(model, { timeoutMs });
  try {
    const data = asRecord(await backend.request({ type: HOST.BUNDLE }));
    if (typeof data.code !== 'string') throw new Error('the kernel sent no front-end bundle');
    return /** @type {{ code: string, css: string, hash: string }} */ (data); // widget.py's bundle reply
  } finally {
    backend.dispose();
  }
}

/**
 * Import module source text (an ES module) from a blob: URL; no network.
 * @param {string} code
 * @returns {Promise<unknown>} the module
 */
export async function importCode(code) {
  const url = URL.createObjectURL(new Blob([code], { type: 'text/javascript' }));
  try {
    return await import(/* @vite-ignore */ url);
  } finally {
    URL.revokeObjectURL(url);
  }
}

/**
 * Put the stylesheet once into the document or shadow root that holds `el`.
 * @param {HTMLElement} el
 * @param {string} css
 * @param {string} hash
 * @returns {boolean} whether a style element was added
 */
export function injectCss(el, css, hash) {
  const root = /** @type {Document | ShadowRoot} */ (el.getRootNode?.() ?? document);
  const holder = 'head' in root && root.head ? root.head : root;
  const doc = el.ownerDocument ?? document;
  if (!css || holder.querySelector?.(`style[data-autograd-widget="${hash}"]`)) return false;
  const style = doc.createElement('style');
  style.dataset.autogradWidget = hash;
  style.textContent = css;
  holder.appendChild(style);
  return true;
}

/**
 * The bundle for `model`: from the page's cache, else asked for once and imported.
 * @param {Pick<import('./protocol.js').WidgetModel, 'get' | 'send' | 'on' | 'off'>} model
 * @param {{ scope?: object, timeoutMs?: number, importer?: (code: string) => Promise<unknown> }} [opts]
 * @returns {Promise<LoadedBundle>}
 */
export function loadBundle(model, opts = {}) {
  const cache = bundleCache(opts.scope);
  const hash = String(model.get(TRAIT.BUNDLE)?.hash ?? '');
  let entry = cache.get(hash);
  if (!entry) {
    const importer = opts.importer ?? importCode;
    entry = requestBundle(model, opts.timeoutMs).then(async (data) => ({
      module: await importer(data.code),
      css: String(data.css ?? ''),
      hash: String(data.hash ?? hash),
    }));
    cache.set(hash, entry);
    entry.catch(() => {
      if (cache.get(hash) === entry) cache.delete(hash);
    });
  }
  return entry;
}

/**
 * anywidget's render: load the bundle (once per page), then hand the view to it.
 * @param {{ model: import('./protocol.js').WidgetModel, el: HTMLElement }} ctx
 * @returns {Promise<() => void>}
 */
async function render({ model, el }) {
  const wait = el.ownerDocument.createElement('div');
  wait.className = 'agw-loading';
  wait.textContent = 'autograd_widget: loading the front-end from the kernel…';
  el.appendChild(wait);
  let bundle;
  try {
    bundle = await loadBundle(model);
  } catch (err) {
    wait.textContent = `autograd_widget: the front-end could not be loaded (${
      err instanceof Error ? err.message : String(err)
    }). This view needs a running kernel: run the cell again, or save a standalone page with `
      + 'widget.save_html(path).';
    return () => wait.remove();
  }
  wait.remove();
  injectCss(el, bundle.css, bundle.hash);
  // the bundle is index.js: its default export renders a view
  const view = /** @type {{ default: { render: (ctx: { model: import('./protocol.js').WidgetModel, el: HTMLElement }) => (() => void) | undefined } }} */ (bundle.module);
  const cleanup = await view.default.render({ model, el });
  return typeof cleanup === 'function' ? cleanup : () => {};
}

export default { render };
