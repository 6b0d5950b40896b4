// What the tests' DOM has that lib.dom does not say (type-checked with tsconfig.tests.json only;
// js/src is checked without this file, under tsconfig.json).

interface HTMLCanvasElement {
  /** The recording context installFakeCanvas (fixtures.js) keeps on every canvas (jsdom has none). */
  __ctx?: any;
}

// The tests find the widget's parts with CSS selectors (`querySelector('.agw-...')`, typed
// `Element` by lib.dom) and drive them as the HTML elements the widget creates: these members of
// HTMLElement are readable on what a selector returns. Form controls' own members (`value`,
// `checked`, `options`, `open`) are not here: the tests cast to the control they expect.
interface Element {
  hidden: boolean;
  title: string;
  click(): void;
  readonly style: CSSStyleDeclaration;
  readonly dataset: DOMStringMap;
}
