"""Formulas of nodes joining or splitting tensors: cat, stack, split, unbind.

cat/stack have one output per forward tensor (`Formula.each`, computed for index `i`);
split/unbind take one incoming gradient per piece (`G_0, G_1, ...`; a piece that got no
gradient counts as zeros, as in torch).

Example:
    >>> [f.name for f in FORMULAS][:3]
    ['CatBackward0', 'StackBackward0', 'SplitBackward0']
"""

from __future__ import annotations

from typing import Any

import torch

from .expr import Env, Expr, Index, Param, op
from .formula import Formula, Output
from .ops import G

__all__ = ["FORMULAS", "AllGrads", "InputSizes"]

DIM = Param("dim", "d")


class AllGrads(Expr):
    """Every incoming gradient, in slot order (zeros for a missing one): `G_0, G_1, \\ldots`.

    Example:
        >>> AllGrads().tex()
        'G_0, G_1, \\\\ldots'
    """

    def tex(self) -> str:
        """`G_0, G_1, \\ldots`.

        Example:
            >>> AllGrads().tex().startswith("G_0")
            True
        """
        return r"G_0, G_1, \ldots"

    def ev(self, env: Env) -> Any:
        """The list of gradients.

        Example:
            >>> len(AllGrads().ev(Env(z.grad_fn, (torch.tensor(1.0),))))
            1
        """
        return [env.grad(i) for i in range(len(env.metas))]


class InputSizes(Expr):
    """The shapes of the forward inputs (None for one that needs no gradient). Not written.

    Example:
        >>> InputSizes().ev(Env(z.grad_fn, ()))
        [(), ()]
    """

    def tex(self) -> str:
        """Nothing.

        Example:
            >>> InputSizes().tex()
            ''
        """
        return ""

    def ev(self, env: Env) -> Any:
        """One shape per output slot.

        Example:
            >>> len(InputSizes().ev(Env(z.grad_fn, ())))
            2
        """
        out = []
        for i in range(len(env.fn.next_functions)):
            m = env.out_meta(i)
            out.append(None if m is None else m[0])
        return out


def _cat_piece(g: torch.Tensor, dim: int, i: int, sizes: list[Any]) -> torch.Tensor:
    d = dim % g.dim()
    lengths = [None if s is None else (s[d] if len(s) > d else 0) for s in sizes]
    unknown = [k for k, n in enumerate(lengths) if n is None]
    if len(unknown) == 1:
        lengths[unknown[0]] = g.shape[d] - sum(n for n in lengths if n is not None)
    before = lengths[:i]
    if any(n is None for n in before):
        raise ValueError("cat: the sizes of two or more inputs that need no gradient are "
                         "unknown, so the offset of this piece is too")
    return g.narrow(d, sum(before), lengths[i])


FORMULAS: tuple[Formula, ...] = (
    Formula("CatBackward0", (), each=Output("tensors", op(
        r"\operatorname{narrow}_{#1}\left(#0,\ o_{#2},\ n_{#2}\right)", _cat_piece, G, DIM,
        Index(), InputSizes())),
        note=r"$o_i$ is the offset of tensor $i$ along $d$ (the sizes of the tensors before it "
             r"added up), $n_i$ its size"),
    Formula("StackBackward0", (), each=Output("tensors", op(
        r"\operatorname{select}_{#1}\left(#0,\ #2\right)", lambda g, d, i: g.select(d, i), G,
        DIM, Index()))),
    Formula("SplitBackward0", (Output("self", op(
        r"\operatorname{cat}_{#1}\left(#0\right)", lambda gs, d: torch.cat(gs, d), AllGrads(),
        DIM)),), note="a piece that received no gradient counts as zeros"),
    Formula("SplitWithSizesBackward0", (Output("self", op(
        r"\operatorname{cat}_{#1}\left(#0\right)", lambda gs, d: torch.cat(gs, d), AllGrads(),
        DIM)),), note="a piece that received no gradient counts as zeros"),
    Formula("UnbindBackward0", (Output("self", op(
        r"\operatorname{stack}_{#1}\left(#0\right)", lambda gs, d: torch.stack(gs, d),
        AllGrads(), DIM)),), note="a slice that received no gradient counts as zeros"),
)
