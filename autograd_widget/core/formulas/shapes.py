"""Formulas of view, reshape and indexing nodes: the gradient is G moved back into place.

Views route G back to the input's layout (reshape, transpose, inverse permutation); selecting
and indexing ops place G into a zero tensor of the input's shape ("place"), accumulating where
an index repeats; expand and repeat sum the copies back.

Example:
    >>> next(f for f in FORMULAS if f.name == "TBackward0").latex()
    '\\\\begin{aligned} \\\\mathrm{grad}_{\\\\mathrm{self}} &= G^{\\\\top} \\\\end{aligned}'
"""

from __future__ import annotations

from typing import Any

import torch

from .expr import Env, Expr, Param, Saved, op
from .formula import Formula, Output
from .ops import DIM, G, X, reshape_to, sum_to

__all__ = ["FORMULAS", "InputMeta"]

SIZES = Param("self_sym_sizes", r"\mathrm{shape}(x)")
PLACE_NOTE = ("place: a zero tensor of x's shape with G written where the forward read "
              "(added up where it read the same element twice)")


class InputMeta(Expr):
    """(dtype, device) of the forward input that output `i` flows to (not written).

    Example:
        >>> InputMeta(0).ev(Env(z.grad_fn, ()))
        (torch.float32, device(type='cpu'))
    """

    def __init__(self, i: int) -> None:
        self.i = i

    def tex(self) -> str:
        """Nothing.

        Example:
            >>> InputMeta(0).tex()
            ''
        """
        return ""

    def ev(self, env: Env) -> Any:
        """(dtype, device), or None when that output is not needed.

        Example:
            >>> InputMeta(1).ev(Env(z.grad_fn, ()))[0]
            torch.float32
        """
        m = env.out_meta(self.i)
        return None if m is None else (m[1], m[2])


def _cast(g: torch.Tensor, meta: Any) -> torch.Tensor:
    if meta is None:
        return g
    dtype, device = meta
    return g.to(dtype) if g.is_meta else g.to(dtype=dtype, device=device)


def _permute_back(g: torch.Tensor, dims: Any) -> torch.Tensor:
    n = g.dim()
    inv = [0] * n
    for i, d in enumerate(dims):
        inv[d % n] = i
    return g.permute(inv)


def _select_back(g, sizes, dim, index):
    z = g.new_zeros(sizes)
    z.select(dim, index).copy_(g)
    return z


def _slice_back(g, sizes, dim, start, end, step):
    z = g.new_zeros(sizes)
    key = (slice(None),) * (dim % len(sizes)) + (slice(start, end, step),)
    z[key] = g
    return z


def _index_back(g, sizes, indices):
    z = g.new_zeros(sizes)
    return torch.ops.aten.index_put_(z, list(indices), g, True)


def _diag_back(g, sizes, offset, d1, d2):
    z = g.new_zeros(sizes)
    z.diagonal(offset, d1, d2).copy_(g)
    return z


def _repeat_back(g, repeats, sizes):
    sizes = list(sizes)
    lead = len(repeats) - len(sizes)
    full = [1] * lead + sizes
    split: list[int] = []
    for r, s in zip(repeats, full, strict=True):
        split += [r, s]
    return g.reshape(split).sum(dim=tuple(range(0, len(split), 2))).reshape(sizes)


def _masked_select_back(g, x, m):
    shape = torch.broadcast_shapes(x.shape, m.shape)
    z = g.new_zeros(shape)
    return z.masked_scatter(m.expand(shape), g)


def _trace_back(g, sizes):
    return g * torch.eye(sizes[0], sizes[1], dtype=g.dtype, device=g.device)


ID_NOTE = "the identity: the forward copied or aliased its input"
FORMULAS: tuple[Formula, ...] = (
    Formula("TBackward0", (Output("self", G.T),)),
    Formula("TransposeBackward0", (Output("self", op(
        r"\operatorname{transpose}_{#1,#2}\left(#0\right)", lambda g, a, b: g.transpose(a, b),
        G, Param("dim0", "a"), Param("dim1", "b"))),)),
    Formula("PermuteBackward0", (Output("self", op(
        r"\operatorname{permute}_{\pi^{-1}}\left(#0\right)", _permute_back, G,
        Param("dims", r"\pi"))),), note=r"$\pi^{-1}$ is the inverse of the forward permutation"),
    Formula("ViewBackward0", (Output("self", reshape_to(G, SIZES)),)),
    Formula("UnsafeViewBackward0", (Output("self", reshape_to(G, SIZES)),)),
    Formula("ReshapeAliasBackward0", (Output("self", reshape_to(G, SIZES)),)),
    Formula("SqueezeBackward0", (Output("self", reshape_to(G, SIZES)),)),
    Formula("SqueezeBackward1", (Output("self", reshape_to(G, SIZES)),)),
    Formula("SqueezeBackward2", (Output("self", reshape_to(G, SIZES)),)),
    Formula("UnsqueezeBackward0", (Output("self", op(
        r"\operatorname{squeeze}_{#1}\left(#0\right)", lambda g, d: g.squeeze(d), G, DIM)),)),
    Formula("AliasBackward0", (Output("self", G),), note=ID_NOTE),
    Formula("CloneBackward0", (Output("self", G),), note=ID_NOTE),
    Formula("ToCopyBackward0", (Output("self", op(
        r"\operatorname{cast}_{\mathrm{dtype}(x)}\left(#0\right)", _cast, G, InputMeta(0))),),
        note="G converted back to the input's dtype and device"),
    Formula("ExpandBackward0", (Output("self", op(
        r"\operatorname{sum}_{\text{expanded}}\left(#0\right)",
        lambda g, s: g.sum_to_size(s) if len(s) else g.sum(), G, SIZES)),),
        note="summed over the dimensions the forward expanded"),
    Formula("RepeatBackward0", (Output("self", op(
        r"\operatorname{sum}_{\text{tiles}}\left(#0\right)", _repeat_back, G,
        Param("repeats", "r"), SIZES)),), note="the copies of each element are added up"),
    Formula("SelectBackward0", (Output("self", op(
        r"\operatorname{place}_{#2 = #3}\left(#0\right)", _select_back, G, SIZES, DIM,
        Param("index", "k"))),), note=PLACE_NOTE),
    Formula("SliceBackward0", (Output("self", op(
        r"\operatorname{place}_{#2 = #3:#4:#5}\left(#0\right)", _slice_back, G, SIZES, DIM,
        Param("start", "a"), Param("end", "b"), Param("step", "s"))),), note=PLACE_NOTE),
    Formula("IndexBackward0", (Output("self", op(
        r"\operatorname{place}_{\mathrm{indices}}\left(#0\right)", _index_back, G, SIZES,
        Saved("indices", r"\mathrm{indices}"))),), note=PLACE_NOTE),
    Formula("IndexSelectBackward0", (Output("self", op(
        r"\operatorname{place}_{#2 = \mathrm{index}}\left(#0\right)",
        lambda g, s, d, i: g.new_zeros(s).index_add_(d, i, g), G, SIZES, DIM,
        Saved("index"))),), note=PLACE_NOTE),
    Formula("GatherBackward0", (Output("self", op(
        r"\operatorname{place}_{#2 = \mathrm{index}}\left(#0\right)",
        lambda g, x, d, i: g.new_zeros(x.shape).scatter_add_(d, i, g), G, X, DIM,
        Saved("index"))),), note=PLACE_NOTE),
    Formula("ScatterAddBackward0", (
        Output("self", G),
        Output("src", op(r"\operatorname{gather}_{#1 = \mathrm{index}}\left(#0\right)",
                         lambda g, d, i: g.gather(d, i), G, DIM, Saved("index"))))),
    Formula("ScatterBackward0", (
        Output("self", op(r"\operatorname{zero}_{#1 = \mathrm{index}}\left(#0\right)",
                          lambda g, d, i: g.scatter(d, i, 0), G, DIM, Saved("index"))),
        Output("src", op(r"\operatorname{gather}_{#1 = \mathrm{index}}\left(#0\right)",
                         lambda g, d, i: g.gather(d, i), G, DIM, Saved("index")))),
        note="the overwritten places of x get no gradient"),
    Formula("IndexAddBackward0", (
        Output("self", G),
        Output("source", op(
            r"#3\,\operatorname{index\_select}_{#1 = \mathrm{index}}\left(#0\right)",
            lambda g, d, i, a: a * g.index_select(d, i), G, DIM, Saved("index"),
            Param("alpha", r"\alpha")))),),
    Formula("MaskedSelectBackward0", (Output("self", sum_to(op(
        r"\operatorname{place}_{m}\left(#0\right)", _masked_select_back, G, X,
        Saved("mask", "m")), 0, "self")),), note=PLACE_NOTE + "; m is the saved mask"),
    Formula("FlipBackward0", (Output("self", op(
        r"\operatorname{flip}_{#1}\left(#0\right)", lambda g, d: g.flip(d), G,
        Param("dims", "d"))),)),
    Formula("RollBackward0", (Output("self", op(
        r"\operatorname{roll}_{#2}\left(#0, -#1\right)",
        lambda g, s, d: g.roll([-k for k in s], d), G, Param("shifts", "s"),
        Param("dims", "d"))),), note="rolled back by the forward's shifts"),
    Formula("TrilBackward0", (Output("self", op(
        r"\operatorname{tril}_{#1}\left(#0\right)", lambda g, k: g.tril(k), G,
        Param("diagonal", "k"))),)),
    Formula("TriuBackward0", (Output("self", op(
        r"\operatorname{triu}_{#1}\left(#0\right)", lambda g, k: g.triu(k), G,
        Param("diagonal", "k"))),)),
    Formula("DiagonalBackward0", (Output("self", op(
        r"\operatorname{place}_{\mathrm{diag}}\left(#0\right)", _diag_back, G, SIZES,
        Param("offset", "k"), Param("dim1", "a"), Param("dim2", "b"))),), note=PLACE_NOTE),
    Formula("ConstantPadNdBackward0", (Output("self", op(
        r"\operatorname{crop}_{#1}\left(#0\right)",
        lambda g, p: torch.nn.functional.pad(g, [-k for k in p]), G, Param("pad", "p"))),),
        note="the padding is cut off again"),
    Formula("TraceBackward0", (Output("self", op(r"#0\,I", _trace_back, G, SIZES)),),
            note="I is the identity matrix of x's shape"),
)
