"""The list of covered node types as Markdown (docs/formulas.md is generated from it).

Example:
    >>> "| `AddmmBackward0` |" in formulas_markdown()
    True
"""

from __future__ import annotations

from .api import ACCUMULATE_LATEX, NOT_COVERABLE, covered_types, formula_record

__all__ = ["formulas_markdown"]

_HEAD = """# What each backward node computes

Generated from `autograd_widget/core/formulas` by `formulas_markdown()` (a test checks that this
file is in sync: regenerate with `python -c "from autograd_widget.core.formulas.doc import
formulas_markdown as f; print(f(), end='')" > docs/formulas.md`).

`aw.formula(name)` returns the LaTeX of a type below (None for any other type). Each formula is
one expression tree per gradient the node returns: it renders this LaTeX and computes the same
values with torch (`evaluate(fn, grads)`); tests/core/test_formulas.py checks every type against the
node's own output on random float64 inputs. `G` is the incoming gradient (`G_i` for nodes with
several), `x` the saved `self`, `y` the saved `result`, `u` the saved `other`;
`\\operatorname{sum}_{\\text{bcast}}` sums a gradient over the dimensions the forward broadcast.

`AccumulateGrad` accumulates into `.grad`: `{acc}`.
"""


def formulas_markdown() -> str:
    """The Markdown of docs/formulas.md: every covered type with its gradients and note, and
    the types that cannot be covered.

    Example:
        >>> formulas_markdown().startswith("# What each backward node computes")
        True
    """
    rows = []
    for name in covered_types():
        f = formula_record(name)
        assert f is not None
        labels = [o.label for o in f.outputs] + ([f.each.label + "[i]"] if f.each else [])
        note = (f.note or "").replace("|", "\\|")
        rows.append(f"| `{name}` | {', '.join(labels)} | {note} |")
    out = [_HEAD.replace("{acc}", ACCUMULATE_LATEX), f"## Covered types ({len(rows)})", "",
           "| node type | gradients for | note |", "|---|---|---|", *rows, "",
           "## Not coverable", ""]
    out += [f"- `{k}`: {v}." for k, v in sorted(NOT_COVERABLE.items())]
    out += ["", "Any other type: `formula()` returns None and the inspector says \"No formula "
            "for <type> yet: its gradients are computed by torch's C++ code.\"", ""]
    return "\n".join(out)
