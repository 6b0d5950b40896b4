/**
 * Following the host's light/dark theme: JupyterLab and Notebook 7 set
 * `document.body.dataset.jpThemeLight` ("true"/"false") and `--jp-*` CSS variables; VS Code sets
 * `vscode-dark`/`vscode-light` classes on body. Plotly needs concrete colours, so they are read
 * from computed styles and the plot is restyled when the theme changes.
 */
import { makeTheme } from './style.js';

/**
 * Is the host dark? Pure: takes what it reads as arguments.
 * @param {{ jpThemeLight?: string, bodyClass?: string, background?: string, prefersDark?: boolean }} env
 */
export function isDark(env) {
  if (env.jpThemeLight === 'true') return false;
  if (env.jpThemeLight === 'false') return true;
  const cls = env.bodyClass ?? '';
  if (/\bvscode-(dark|high-contrast)\b/.test(cls) && !/\bvscode-high-contrast-light\b/.test(cls)) return true;
  if (/\bvscode-light\b/.test(cls)) return false;
  const lum = luminance(env.background ?? '');
  if (lum !== null) return lum < 0.4;
  return Boolean(env.prefersDark);
}

/**
 * Relative luminance (0..1) of a CSS colour in #rgb, #rrggbb or rgb()/rgba() form; null otherwise
 * or when fully transparent.
 * @param {string} color
 */
export function luminance(color) {
  const c = color.trim();
  let r, g, b;
  let m = /^#([0-9a-f]{3})$/i.exec(c);
  if (m) [r, g, b] = [...m[1]].map((h) => parseInt(h + h, 16));
  else if ((m = /^#([0-9a-f]{6})([0-9a-f]{2})?$/i.exec(c))) {
    const hex = m[1];
    [r, g, b] = [0, 2, 4].map((k) => parseInt(hex.slice(k, k + 2), 16));
    if (m[2] === '00') return null;
  } else if ((m = /^rgba?\(([^)]+)\)$/i.exec(c))) {
    const parts = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
    if (parts.length < 3 || parts.slice(0, 3).some(Number.isNaN)) return null;
    if (parts.length > 3 && parts[3] === 0) return null;
    [r, g, b] = parts;
  } else return null;
  return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
}

/**
 * The current theme as seen from element `el`.
 * @param {HTMLElement} el
 * @returns {import('./style.js').Theme}
 */
export function readTheme(el) {
  const body = el.ownerDocument?.body;
  const win = el.ownerDocument?.defaultView;
  const css = win ? win.getComputedStyle(el) : null;
  const v = (/** @type {string} */ name) => (css ? css.getPropertyValue(name).trim() : '');
  const background = v('--jp-layout-color0') || (body && win ? win.getComputedStyle(body).backgroundColor : '');
  const dark = isDark({
    jpThemeLight: body?.dataset?.jpThemeLight,
    bodyClass: body?.className ?? '',
    background,
    prefersDark: Boolean(win?.matchMedia?.('(prefers-color-scheme: dark)')?.matches),
  });
  const jpBackground = v('--jp-layout-color0') ? cssColor(el, v('--jp-layout-color0')) : '';
  return makeTheme({
    dark,
    background: luminance(jpBackground) !== null ? jpBackground : undefined,
    font: v('--jp-ui-font-color1') ? cssColor(el, v('--jp-ui-font-color1')) : undefined,
    fontMuted: v('--jp-ui-font-color2') ? cssColor(el, v('--jp-ui-font-color2')) : undefined,
    fontFamily: v('--jp-ui-font-family') || undefined,
  });
}

/**
 * Any CSS colour ("white", "var(--x)", "#fff") as the browser resolves it, usually "rgb(r, g, b)";
 * the input unchanged where the browser does not resolve it (jsdom).
 * @param {HTMLElement} el @param {string} value
 */
function cssColor(el, value) {
  const doc = el.ownerDocument;
  const probe = doc.createElement('span');
  probe.style.color = value;
  probe.style.display = 'none';
  (el.isConnected ? el : doc.body).appendChild(probe);
  const out = doc.defaultView?.getComputedStyle(probe).color || value;
  probe.remove();
  return out;
}

/**
 * Calls `onChange` when the host switches theme (body attributes/classes change). Returns a
 * function that stops watching.
 * @param {HTMLElement} el @param {() => void} onChange
 */
export function watchTheme(el, onChange) {
  const doc = el.ownerDocument;
  const win = doc?.defaultView;
  /** @type {(() => void)[]} */
  const stops = [];
  if (doc?.body && win && 'MutationObserver' in win) {
    const obs = new win.MutationObserver(() => onChange());
    obs.observe(doc.body, { attributes: true, attributeFilter: ['data-jp-theme-light', 'data-jp-theme-name', 'class'] });
    stops.push(() => obs.disconnect());
  }
  const mq = win?.matchMedia?.('(prefers-color-scheme: dark)');
  if (mq?.addEventListener) {
    mq.addEventListener('change', onChange);
    stops.push(() => mq.removeEventListener('change', onChange));
  }
  return () => stops.forEach((s) => s());
}
