"""The `Formula` record: one backward node type, one expression tree per gradient it returns.

A `Formula` names the node type (`"AddmmBackward0"`), lists one `Output` per gradient the node
returns (by `output_nr`, labelled with the forward input it is for), optional named
intermediates (`defs`: `\\hat{x}`, `P`) and a note. `latex()` joins the outputs as an aligned
block; `evaluate(fn, grads)` computes every output with torch from the live node.

Guarantees: `evaluate` returns one entry per `fn.next_functions` entry, None exactly where no
gradient is needed (the slot feeds nothing) or where every incoming gradient is None (the engine
does not call such a node); each value is what the engine passes on (already reduced to the
forward input's shape where the forward broadcast, and cast to its dtype). It runs under
`torch.no_grad()`; a tree that recomputes a forward (the RNN layer's backpropagation through
time) enables grad for that recompute itself.

Example:
    >>> from autograd_widget.core.formulas.ops import G, X, cos
    >>> f = Formula("SinBackward0", (Output("self", G * cos(X)),))
    >>> print(f.latex())  # doctest: +NORMALIZE_WHITESPACE
    \\begin{aligned} \\mathrm{grad}_{\\mathrm{self}}
    &= G \\odot \\cos\\left(x\\right) \\end{aligned}
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from .expr import Env, Expr

__all__ = ["Formula", "Output", "label_tex"]


def label_tex(label: str) -> str:
    """`\\mathrm{grad}_{\\mathrm{label}}` with underscores escaped.

    Example:
        >>> label_tex("weight_ih")
        '\\\\mathrm{grad}_{\\\\mathrm{weight\\\\_ih}}'
    """
    return rf"\mathrm{{grad}}_{{\mathrm{{{label.replace('_', chr(92) + '_')}}}}}"


@dataclass(frozen=True)
class Output:
    """One gradient a node returns: `label` names the forward input, `expr` computes it.

    Example:
        >>> from autograd_widget.core.formulas.ops import G
        >>> Output("self", -G).label
        'self'
    """

    label: str
    expr: Expr


@dataclass(frozen=True)
class Formula:
    """What one backward node type computes (see the module docstring).

    `each` is for nodes with one output per forward tensor of a list (cat, stack): it computes
    output `i` with `Index()` reading `i`. `defs` are `(key, symbol, tree)` intermediates shown
    first as `symbol = ...` and referenced with `Ref(key, symbol)`.

    Example:
        >>> from autograd_widget.core.formulas.ops import G
        >>> f = Formula("NegBackward0", (Output("self", -G),))
        >>> f.evaluate((-x).grad_fn, (torch.tensor(2.0),))
        (tensor(-2.),)
    """

    name: str
    outputs: tuple[Output, ...]
    each: Output | None = None
    defs: tuple[tuple[str, str, Expr], ...] = ()
    note: str | None = None

    def output_for(self, i: int) -> Output | None:
        """The `Output` computing gradient `i` (the `each` output past the fixed ones).

        Example:
            >>> from autograd_widget.core.formulas.ops import G
            >>> Formula("NegBackward0", (Output("self", -G),)).output_for(0).label
            'self'
        """
        if i < len(self.outputs):
            return self.outputs[i]
        return self.each

    def lines(self) -> list[tuple[str, str]]:
        """(left side, right side) LaTeX of each line: the intermediates, then the outputs.

        Example:
            >>> from autograd_widget.core.formulas.ops import G
            >>> Formula("NegBackward0", (Output("self", -G),)).lines()
            [('\\\\mathrm{grad}_{\\\\mathrm{self}}', '-G')]
        """
        out = [(sym, tree.tex()) for _, sym, tree in self.defs]
        for o in self.outputs:
            out.append((label_tex(o.label), o.expr.tex()))
        if self.each is not None:
            out.append((label_tex(self.each.label + "_i"), self.each.expr.tex()))
        return out

    def latex(self) -> str:
        """The whole formula as one `aligned` block (one line per intermediate and output).

        Example:
            >>> from autograd_widget.core.formulas.ops import G
            >>> Formula("AliasBackward0", (Output("self", G),)).latex()
            '\\\\begin{aligned} \\\\mathrm{grad}_{\\\\mathrm{self}} &= G \\\\end{aligned}'
        """
        body = r" \\ ".join(f"{lhs} &= {rhs}" for lhs, rhs in self.lines())
        return rf"\begin{{aligned}} {body} \end{{aligned}}"

    def env(self, fn: Any, grads: Sequence[torch.Tensor | None], *, meta: bool = False) -> Env:
        """An `Env` for `fn` with this formula's intermediates registered.

        Example:
            >>> from autograd_widget.core.formulas.ops import G
            >>> Formula("NegBackward0", (Output("self", -G),)).env((-x).grad_fn, ()).meta
            False
        """
        env = Env(fn, grads, meta=meta)
        for key, _, tree in self.defs:
            env.def_exprs[key] = tree
        return env

    def evaluate(self, fn: Any, grads: Sequence[torch.Tensor | None]) -> tuple[Any, ...]:
        """Every gradient `fn` returns, computed from this formula's trees (see the module
        docstring for what is guaranteed).

        Example:
            >>> from autograd_widget.core.formulas.ops import G, X, cos
            >>> f = Formula("SinBackward0", (Output("self", G * cos(X)),))
            >>> f.evaluate(torch.sin(x).grad_fn, (torch.tensor(1.0),))
            (tensor(-0.4161),)
        """
        n = len(fn.next_functions)
        if all(g is None for g in grads):
            return (None,) * n
        env = self.env(fn, grads)
        out: list[Any] = []
        with torch.no_grad():
            for i in range(n):
                o = self.output_for(i)
                if fn.next_functions[i][0] is None or o is None:
                    out.append(None)
                    continue
                env.index = i - len(self.outputs)
                v = o.expr.value(env)
                meta = env.out_meta(i)
                if isinstance(v, torch.Tensor) and meta is not None and v.dtype != meta[1]:
                    v = v.to(meta[1])  # the engine casts to the input's dtype, so do we
                out.append(v)
        return tuple(out)
