/**
 * Small DOM builders shared by the view, the inspector and the search box. No innerHTML: every
 * text from Python goes in as a text node.
 */

/**
 * @param {Document} doc
 */
export function domHelpers(doc) {
  /**
   * @param {string} tag @param {Record<string, string>} [attrs] @param {...(Node | string | null | undefined | false)} kids
   * @returns {HTMLElement}
   */
  function h(tag, attrs = {}, ...kids) {
    const e = doc.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    for (const kid of kids) if (kid !== null && kid !== undefined && kid !== false) e.append(kid);
    return e;
  }
  /** @param {string} label @param {string} title @param {string} [cls] @returns {HTMLButtonElement} */
  function button(label, title, cls = 'agw-button') {
    return /** @type {HTMLButtonElement} */ (h('button', { type: 'button', class: cls, title }, label));
  }
  /** @param {[string, string | Node, boolean?][]} rows [label, value, alarm] @param {string} [cls] */
  function table(rows, cls = 'agw-rows') {
    const t = h('table', { class: cls });
    for (const [k, v, alarm] of rows) {
      const td = h('td', alarm ? { class: 'agw-alarm' } : {}, v);
      t.append(h('tr', {}, h('th', { scope: 'row' }, k), td));
    }
    return t;
  }
  return { h, button, table };
}
