"""The list of covered node types as Markdown (docs/formulas.md is generated from it).

The page opens with what it is for a reader (what a node's formula is, where the widget shows it,
`aw.formula`); each type then gets its own section: the gradients it returns, its formula as
display math (`$$`, typeset on the documentation site by the bundled KaTeX through
pymdownx.arithmatex, offline), and its note. An index of every type links to the sections; how
the page is generated and checked comes last.

Example:
    >>> "### `AddmmBackward0` {#AddmmBackward0}" in formulas_markdown()
    True
"""

from __future__ import annotations

from .api import ACCUMULATE_LATEX, NOT_COVERABLE, covered_types, formula_record

__all__ = ["formulas_markdown"]

_HEAD = """---
hide:
  - toc
---

# What each backward node computes

Every node of a backward graph (`MulBackward0`, `AddmmBackward0`, ...) turns the gradient it
receives into the gradients of its forward inputs. This page gives that computation as a formula
for each of the node types below: what the widget's inspector shows in its Formula tab for a
node of that type, with the node's own shapes.

From Python, `aw.formula("MulBackward0")` (or `aw.formula(loss.grad_fn)`, a live node) returns
the LaTeX of a type below, None for any other type; `graph.formula(node_id)` the same with a
captured node's actual shapes. $G$ is the incoming gradient ($G_i$ for nodes with several), $x$
the saved `self`, $y$ the saved `result`, $u$ the saved `other`;
$\\operatorname{sum}_{\\text{bcast}}$ sums a gradient over the dimensions the forward broadcast.
Each formula is also evaluated with torch and checked against the node's own output (below).

`AccumulateGrad` accumulates into `.grad`: ${acc}$.
"""

#: The page's last section: how it is made and checked (for contributors).
_TAIL = """## How this page is made

Generated from `autograd_widget/core/formulas` by `formulas_markdown()`: each formula is one
expression tree per gradient the node returns, which renders this LaTeX and computes the same
values with torch (`evaluate(fn, grads)`); tests/core/test_formulas.py checks every type against
the node's own output on random float64 inputs. A test checks that this file is in sync;
regenerate it with `python -c "from autograd_widget.core.formulas.doc import formulas_markdown as
f; print(f(), end='')" > docs/formulas.md`.
"""


def _escape(note: str) -> str:
    """A note as Markdown: its text shown as written (no emphasis, no escapes), its `$...$`
    math left to arithmatex (typeset)."""
    parts = note.split("$")
    for i in range(0, len(parts), 2):  # the text between the math
        for ch in "\\`*_[]":
            parts[i] = parts[i].replace(ch, "\\" + ch)
    return "$".join(parts)


def formulas_markdown() -> str:
    """The Markdown of docs/formulas.md: an index, then every covered type with its gradients,
    its formula (display math) and its note, then the types that cannot be covered.

    Example:
        >>> formulas_markdown().startswith("---")
        True
    """
    names = covered_types()
    index = " · ".join(f"[`{name}`](#{name})" for name in names)
    out = [_HEAD.replace("{acc}", ACCUMULATE_LATEX), f"## Covered types ({len(names)})", "",
           index, ""]
    for name in names:
        f = formula_record(name)
        assert f is not None
        labels = [o.label for o in f.outputs] + ([f.each.label + "[i]"] if f.each else [])
        out += [f"### `{name}` {{#{name}}}", "", f"Gradients for {', '.join(labels)}:", "",
                "$$", f.latex(), "$$", ""]
        if f.note:
            out += [_escape(f.note), ""]
    out += ["## Not coverable", ""]
    out += [f"- `{k}`: {v}." for k, v in sorted(NOT_COVERABLE.items())]
    out += ["", "Any other type: `formula()` returns None and the inspector says \"No formula "
            "for <type> yet: its gradients are computed by torch's C++ code.\"", "", _TAIL]
    return "\n".join(out)
