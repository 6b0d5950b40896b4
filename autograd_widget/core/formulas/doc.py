"""The list of covered node types as Markdown (docs/formulas.md is generated from it).

Each type gets its own section: the gradients it returns, its formula as display math (`$$`,
typeset on the documentation site by the bundled KaTeX through pymdownx.arithmatex, offline),
and its note. An index of every type links to the sections.

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

Generated from `autograd_widget/core/formulas` by `formulas_markdown()` (a test checks that this
file is in sync: regenerate with `python -c "from autograd_widget.core.formulas.doc import
formulas_markdown as f; print(f(), end='')" > docs/formulas.md`).

`aw.formula(name)` returns the LaTeX of a type below (None for any other type);
`graph.formula(node_id)` the same with a node's actual shapes. Each formula is one expression tree
per gradient the node returns: it renders this LaTeX and computes the same values with torch
(`evaluate(fn, grads)`); tests/core/test_formulas.py checks every type against the node's own output
on random float64 inputs. $G$ is the incoming gradient ($G_i$ for nodes with several), $x$ the saved
`self`, $y$ the saved `result`, $u$ the saved `other`; $\\operatorname{sum}_{\\text{bcast}}$ sums a
gradient over the dimensions the forward broadcast.

`AccumulateGrad` accumulates into `.grad`: ${acc}$.
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
            "for <type> yet: its gradients are computed by torch's C++ code.\"", ""]
    return "\n".join(out)
