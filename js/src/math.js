/**
 * Mathematics in the inspector: KaTeX, bundled (works offline), rendering MathML only (no fonts,
 * no stylesheet: the browser lays the formula out). Pure: a LaTeX string in, markup out.
 * Python owns what the formula IS (autograd_widget/core formula tables); this only typesets it.
 */
import katex from 'katex';
import { asRecord } from './jsonsafe.js';

/**
 * A LaTeX formula as MathML markup (display style). A formula KaTeX cannot parse comes back as its
 * source, escaped, in a `<code>`, with `ok: false`, never an exception.
 * @param {string} latex
 * @returns {{ html: string, ok: boolean }}
 * @example renderMath('G W^{\\top}').html.startsWith('<span class="katex"><math') // true
 */
export function renderMath(latex) {
  const src = String(latex ?? '');
  try {
    return { html: katex.renderToString(src, { output: 'mathml', displayMode: true, throwOnError: true, strict: 'ignore' }), ok: true };
  } catch {
    const esc = src.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] ?? c);
    return { html: `<code class="agw-math-src">${esc}</code>`, ok: false };
  }
}

/**
 * A formula's note: plain text with its math between `$` signs ("$y = \\sigma(x)$ is the saved
 * result"), as markup: the text escaped, each math part typeset inline (MathML); a part KaTeX
 * cannot parse is shown as its source, escaped.
 * @param {string} note
 * @returns {string}
 * @example renderNote('$x$ < 1').endsWith(' &lt; 1') // true
 */
export function renderNote(note) {
  const esc = (/** @type {string} */ t) => t.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] ?? c);
  return String(note ?? '').split('$').map((part, i) => {
    if (i % 2 === 0) return esc(part);
    try {
      return katex.renderToString(part, { output: 'mathml', displayMode: false, throwOnError: true, strict: 'ignore' });
    } catch {
      return `<code class="agw-math-src">${esc(part)}</code>`;
    }
  }).join('');
}

/**
 * @typedef {object} FormulaInfo
 * @property {boolean} known a formula exists for this node type
 * @property {string} latex the gradients (one aligned block), "" when unknown
 * @property {string} shapes the same with the node's actual shapes, "" when not known
 * @property {string} note a sentence (what an unknown type means, or a remark)
 */

/**
 * The inspector reply's `formula` field, normalised (missing fields become "").
 * @param {unknown} raw
 * @returns {FormulaInfo | null}
 * @example formulaInfo({ known: true, latex: 'x' }).note // ''
 */
export function formulaInfo(raw) {
  if (!raw || typeof raw !== 'object') return null;
  const f = asRecord(raw);
  return {
    known: !!f.known,
    latex: typeof f.latex === 'string' ? f.latex : '',
    shapes: typeof f.shapes === 'string' ? f.shapes : '',
    note: typeof f.note === 'string' ? f.note : '',
  };
}
