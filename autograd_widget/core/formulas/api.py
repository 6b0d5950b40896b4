"""Look up what a backward node type computes: LaTeX, torch evaluation, shapes of a live node.

- `formula(name)`: the LaTeX of a node type (None when unknown); `AccumulateGrad` is described
  as what it does (`x.grad \\mathrel{+}= G`).
- `evaluate(fn, grads)`: the formula's torch value for a live node and its incoming gradients
  (one entry per `fn.next_functions`, as the engine passes them on).
- `node_formula(graph, node_id)`: a `NodeFormula` for the inspector, with the node's actual
  shapes per term, computed on `meta` tensors (no data is read, and a value of a non-reentrant
  checkpoint region is never unpacked: its recorded shape is used).
- `covered_types()`: every node type with a formula.

Example:
    >>> "AddmmBackward0" in covered_types()
    True
    >>> formula("FooBackward0") is None
    True
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from ..checkpoint import CHECKPOINT_NOTE
from . import activations, elementwise, nn, reductions, sequence, shapes
from .expr import Expr, Grad, Op, Saved, ShapeUnknown
from .formula import Formula

if TYPE_CHECKING:
    from ..graph import BackwardGraph

__all__ = [
    "ACCUMULATE_LATEX",
    "NOT_COVERABLE",
    "FormulaLine",
    "NodeFormula",
    "covered_types",
    "evaluate",
    "formula",
    "formula_record",
    "node_formula",
    "unknown_sentence",
]

#: What an AccumulateGrad node does (it has no formula to evaluate: it writes `.grad`).
ACCUMULATE_LATEX = r"x.\mathrm{grad} \mathrel{+}= G"

#: Node types that cannot have a formula here, and why.
NOT_COVERABLE = {
    "CopySlices": "torch hides the in-place op's own backward node inside it and exposes none "
                  "of its saved values to Python, so its gradient cannot be computed from here",
}

_TABLE: dict[str, Formula] = {}
for _family in (elementwise, activations, shapes, reductions, sequence, nn):
    for _f in _family.FORMULAS:
        if _f.name in _TABLE:
            raise RuntimeError(f"two formulas for {_f.name}")
        _TABLE[_f.name] = _f


def _short(name: Any) -> str:
    """The node type's short name of `name`: a type name (torch's `torch::autograd::` prefix
    allowed) or a live backward node (`loss.grad_fn`); anything else: a TypeError saying what
    to pass."""
    if not isinstance(name, str):
        fn_name = getattr(type(name), "name", None)
        if isinstance(name, torch.Tensor):
            raise TypeError("pass a backward node (loss.grad_fn) or its type name "
                            "('MulBackward0'), not a tensor")  # fmt: skip
        if not callable(fn_name) or isinstance(name, type):
            raise TypeError(f"expected a node type name ('MulBackward0') or a backward node "
                            f"(loss.grad_fn), got {type(name).__name__}")  # fmt: skip
        name = name.name()
        if not isinstance(name, str):
            raise TypeError(f"expected a backward node, got {type(name).__name__}")
    return name.rsplit("::", 1)[-1]


def covered_types() -> list[str]:
    """Every backward node type with a formula, sorted (AccumulateGrad is not among them: it
    accumulates into `.grad`, see `formula("AccumulateGrad")`).

    Example:
        >>> len(covered_types()) >= 100
        True
    """
    return sorted(_TABLE)


def formula_record(name: Any) -> Formula | None:
    """The `Formula` of node type `name` (torch's `torch::autograd::` prefix allowed; or a live
    backward node such as `loss.grad_fn`), or None.

    Example:
        >>> formula_record("MmBackward0").outputs[1].label
        'mat2'
    """
    return _TABLE.get(_short(name))


def formula(node_name: Any) -> str | None:
    """The LaTeX of what backward node type `node_name` computes, None for an unknown type.

    `node_name` is a type name ("MulBackward0") or a live backward node (`loss.grad_fn`, one of
    its `next_functions`): its type's formula. Anything else raises a TypeError saying what to
    pass. For a node of a captured graph with its shapes, see `graph.formula(node_id)`.

    One aligned block: the named intermediates, then one line per gradient the node returns
    (`\\mathrm{grad}_{\\mathrm{mat1}} = \\ldots`), in output order. `G` is the incoming gradient.

    Example:
        >>> r"\\mathrm{mat2}^{\\top}" in formula("AddmmBackward0")
        True
        >>> formula((x * y).grad_fn) == formula("MulBackward0")
        True
        >>> formula("AccumulateGrad")
        'x.\\\\mathrm{grad} \\\\mathrel{+}= G'
        >>> formula("NoSuchBackward0") is None
        True
    """
    if _short(node_name) == "AccumulateGrad":
        return ACCUMULATE_LATEX
    f = formula_record(node_name)
    return None if f is None else f.latex()


def evaluate(fn: Any, grads: Sequence[torch.Tensor | None]) -> tuple[torch.Tensor | None, ...]:
    """The gradients live node `fn` returns for incoming `grads`, computed from its formula.

    One entry per `fn.next_functions` entry: None where no gradient is needed, else the value
    the engine passes on (reduced to the forward input's shape where the forward broadcast).
    Raises KeyError (with a plain sentence) for a node type without a formula.

    Example:
        >>> w = x * y
        >>> evaluate(w.grad_fn, (torch.tensor(1.0),))
        (tensor(3.), tensor(2.))
    """
    name = _short(fn.name())
    f = _TABLE.get(name)
    if f is None:
        raise KeyError(unknown_sentence(name))
    return f.evaluate(fn, grads)


def unknown_sentence(name: str) -> str:
    """The plain sentence for a node type without a formula.

    Example:
        >>> unknown_sentence("FooBackward0")
        "No formula for FooBackward0 yet: its gradients are computed by torch's C++ code."
    """
    if name in NOT_COVERABLE:
        return f"No formula for {name}: {NOT_COVERABLE[name]}."
    return f"No formula for {name} yet: its gradients are computed by torch's C++ code."



@dataclass(frozen=True)
class FormulaLine:
    """One line of a node's formula with the node's shapes.

    `shapes` is LaTeX such as `[16\\times 8]\\cdot[8\\times 4] \\to [16\\times 4]`, None when
    they cannot be known without unpacking data (see `NodeFormula.shape_note`).

    Example:
        >>> nf = node_formula(g, "n1")
        >>> nf.lines[0].label, nf.lines[0].shapes
        ('self', 'G\\\\,[\\\\,],\\\\ x\\\\,[\\\\,] \\\\to [\\\\,]')
    """

    label: str
    latex: str
    shapes: str | None
    needed: bool


@dataclass(frozen=True)
class NodeFormula:
    """What one node of a captured graph computes, with its shapes.

    `known` is False for a type without a formula (then `text` says so in a sentence and
    `latex` is None). `latex` is the type's formula; `latex_shapes` the same lines, each
    followed by its shapes. `note` explains symbols (plain text, its math between `$` signs);
    `shape_note` says why shapes are missing.

    Example:
        >>> nf = node_formula(g, "n0")
        >>> nf.known, nf.name, [l.label for l in nf.lines]
        (True, 'AddBackward0', ['self', 'other'])
    """

    node_id: str
    name: str
    known: bool
    text: str
    latex: str | None = None
    latex_shapes: str | None = None
    lines: tuple[FormulaLine, ...] = ()
    note: str | None = None
    shape_note: str | None = None

    def _repr_latex_(self) -> str | None:
        """Typeset in Jupyter (and on the docs' pages): the formula with its shapes, or None
        (the plain text) for a type without a formula."""
        tex = self.latex_shapes or self.latex
        return None if tex is None else f"$$ {tex} $$"


def _shape_tex(shape: tuple[int, ...] | None) -> str:
    if shape is None:
        return "[?]"
    if not shape:
        return r"[\,]"
    return "[" + r"\times ".join(str(d) for d in shape) + "]"


def _main(e: Expr) -> Expr:
    """The operation a line is about: through scalar factors, negations and unbroadcasts."""
    while isinstance(e, Op):
        tensor_args = [a for a in e.args if not a.scalar and a.tex()]
        if (e.join is None and len(tensor_args) == 1 and e.template in (
            "-#0", r"#0\,#1")) or e.template.startswith(r"\operatorname{sum}_{\text{bcast}"):
            e = tensor_args[0]
            continue
        break
    return e


def _leaves(e: Expr) -> list[Expr]:
    out: list[Expr] = []
    seen: set[str] = set()

    def walk(n: Expr) -> None:
        if isinstance(n, Grad | Saved) and not n.scalar:
            if n.tex() not in seen:
                seen.add(n.tex())
                out.append(n)
        for c in n.children():
            walk(c)

    walk(e)
    return out


def _line_shapes(e: Expr, shapes: dict[int, tuple[int, ...]]) -> str:
    main = _main(e)
    result = _shape_tex(shapes.get(id(e)))
    if isinstance(main, Op) and main.join is not None and len(main.args) == 2:
        a, b = main.args
        parts = [
            _shape_tex(shapes.get(id(x))) if not x.scalar else x.tex() for x in (a, b)
        ]
        return f"{parts[0]}{main.join}{parts[1]} \\to {result}"
    leaves = [f"{x.tex()}\\,{_shape_tex(shapes.get(id(x)))}" for x in _leaves(e)
              if id(x) in shapes]
    return (r",\ ".join(leaves) + f" \\to {result}") if leaves else result


def node_formula(graph: BackwardGraph, node_id: str) -> NodeFormula:
    """The formula of node `node_id` with its actual shapes (see `NodeFormula`).

    Shapes come from the node's input metadata and its saved tensors' shapes, computed on
    `meta` tensors: no data is read, and a checkpointed value is never unpacked (its recorded
    shape is used; when torch recorded none the line says "recomputed during backward").

    Example:
        >>> a = torch.randn(16, 8, requires_grad=True); w = torch.randn(4, 8, requires_grad=True)
        >>> h = torch.nn.functional.linear(a, w)
        >>> nf = node_formula(aw.capture(h.sum()), "n1")
        >>> nf.name, nf.lines[0].shapes
        ('MmBackward0', '[16\\\\times 4]\\\\cdot[4\\\\times 8] \\\\to [16\\\\times 8]')
    """
    node = graph.nodes[graph.check_id(node_id)]
    name = node.name
    if name == "AccumulateGrad":
        who = node.leaf_name or "x"
        return NodeFormula(node_id, name, True, f"accumulates into {who}.grad",
                           latex=ACCUMULATE_LATEX, latex_shapes=ACCUMULATE_LATEX + r"\quad "
                           + _shape_tex(node.inputs[0].shape if node.inputs else None))
    f = formula_record(name)
    if f is None:
        return NodeFormula(node_id, name, False, unknown_sentence(name))
    lines, note = _shaped_lines(graph, node_id, f)
    body = []
    for (lhs, rhs), ln in zip(f.lines()[len(f.defs):], lines, strict=False):
        extra = rf"\quad {ln.shapes}" if ln.shapes else ""
        body.append(f"{lhs} &= {rhs}{extra}")
    defs = [f"{lhs} &= {rhs}" for lhs, rhs in f.lines()[: len(f.defs)]]
    joined = " \\\\ ".join(defs + body)
    latex_shapes = rf"\begin{{aligned}} {joined} \end{{aligned}}"
    text = f"{name}: " + "; ".join(
        f"grad of {ln.label}" + ("" if ln.needed else " (not needed)") for ln in lines)
    return NodeFormula(node_id, name, True, text, f.latex(), latex_shapes, tuple(lines),
                       f.note, note)


def _shaped_lines(graph: BackwardGraph, node_id: str, f: Formula
                  ) -> tuple[list[FormulaLine], str | None]:
    fn = graph.fn(node_id) if graph.is_live else None
    if fn is not None:
        slots: Iterable[int] = range(len(fn.next_functions))
    else:  # records only: the formula's own outputs and the slots an edge leaves, never a
        # count read from a file (a num_outputs of 10**12 must not mean 10**12 lines)
        slots = sorted({*range(len(f.outputs)), *(e.output_nr for e in graph.out_edges(node_id))})
    note: str | None = None
    env = None
    if fn is None:
        note = "shapes unknown: this graph holds no torch nodes"
    else:
        env = f.env(fn, [None] * len(fn._input_metadata), meta=True)
    lines = []
    for i in slots:
        o = f.output_for(i)
        if o is None:
            continue
        needed = fn is not None and fn.next_functions[i][0] is not None
        label = o.label if i < len(f.outputs) else f"{o.label}_{i - len(f.outputs)}"
        shapes_tex = None
        if env is not None and needed:
            env.index = i - len(f.outputs)
            env.shapes.clear()
            try:
                o.expr.value(env)
                shapes_tex = _line_shapes(o.expr, env.shapes)
            except ShapeUnknown as err:
                msg = str(err)
                note = (f"shapes unknown: {CHECKPOINT_NOTE}" if "recomputed" in msg
                        else f"shapes unknown: {msg}")
            except Exception as err:  # an op without a meta kernel: say so, never raise
                note = f"shapes not computed without data ({type(err).__name__})"
        lines.append(FormulaLine(label, o.expr.tex(), shapes_tex, needed))
    return lines, note

