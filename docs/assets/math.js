// Typeset the math (pymdownx.arithmatex, generic mode) with the local KaTeX copy, on every page
// load, including material's instant navigation (document$).
function typesetMath(root) {
  renderMathInElement(root, {
    delimiters: [
      { left: "\\(", right: "\\)", display: false },
      { left: "\\[", right: "\\]", display: true },
    ],
    throwOnError: false,
  });
}
if (typeof document$ !== "undefined") {
  document$.subscribe(({ body }) => typesetMath(body));
} else {
  document.addEventListener("DOMContentLoaded", () => typesetMath(document.body));
}
