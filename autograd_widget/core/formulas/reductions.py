"""Formulas of reductions (sum, mean, prod, max, norms, var/std, logsumexp, cumsum) and of the
matrix-product family (mm, addmm, bmm, baddbmm, mv, addmv, addr, dot).

A reduction's gradient spreads G back over the reduced dimensions (`\\operatorname{expand}`):
evenly (sum, mean), to the selected elements (max/min), or weighted by the derivative. Matrix
products follow `derivatives.yaml` including `\\alpha`/`\\beta` and the unbroadcast of `self`.

Example:
    >>> r"\\mathrm{mat2}^{\\top}" in next(f for f in FORMULAS if f.name == "MmBackward0").latex()
    True
"""

from __future__ import annotations

import math
from typing import Any

import torch

from .expr import Param, Saved, op
from .formula import Formula, Output
from .ops import ALPHA, BETA, G, X, Y, sum_to

__all__ = ["FORMULAS", "mtv", "outer", "restore"]

DIMS = Param("dim", "d")
KEEP = Param("keepdim", "k")
SIZES = Param("self_sym_sizes", r"\mathrm{shape}(x)")


def _dims(dim: Any, n: int) -> list[int]:
    if dim is None or (isinstance(dim, tuple | list) and len(dim) == 0):
        return list(range(n))
    if isinstance(dim, int):
        dim = [dim]
    return sorted(d % n if n else 0 for d in dim)


def restore(g: torch.Tensor, dim: Any, keepdim: bool, n: int) -> torch.Tensor:
    """`g` with the reduced dimensions put back as size 1 (when the forward dropped them).

    Example:
        >>> restore(torch.ones(2, 3), [1], False, 3).shape
        torch.Size([2, 1, 3])
    """
    if keepdim or g.dim() == n:
        return g
    for d in _dims(dim, n):
        g = g.unsqueeze(d)
    return g


def _count(sizes: Any, dim: Any) -> int:
    return math.prod(sizes[d] for d in _dims(dim, len(sizes)))


def _expand(g, sizes, dim=None, keepdim=False):
    return restore(g, dim, keepdim, len(sizes)).expand(tuple(sizes))


def _prod_others(x: torch.Tensor, dim: int | None) -> torch.Tensor:
    """prod_{j != i} x_j along `dim` (exact with zeros): exclusive cumulative products."""
    if dim is None:
        return _prod_others(x.reshape(-1), 0).reshape(x.shape)
    n = x.shape[dim]
    ones = x.narrow(dim, 0, 1).clone().fill_(1) if n else x
    left = torch.cat([ones, x.narrow(dim, 0, n - 1)], dim).cumprod(dim)
    flipped = x.flip(dim)
    right = torch.cat([ones, flipped.narrow(dim, 0, n - 1)], dim).cumprod(dim).flip(dim)
    return left * right


def _evenly(g, x, y):
    mask = (x == y) | (x.isnan() & y.isnan())
    return mask * (g / mask.sum())


def _by_count(g, x, y, dim, keepdim):
    n = x.dim()
    mask = x == restore(y, dim, keepdim, n)
    dims = _dims(dim, n)
    return restore(g, dim, keepdim, n) * mask / mask.sum(dims, keepdim=True)


def _select_at(g, dim, idx, keepdim, sizes):
    if not keepdim and len(sizes):
        g, idx = g.unsqueeze(dim), idx.unsqueeze(dim)
    return g.new_zeros(sizes).scatter(dim, idx, g)


def _norm(g, x, y, p, dim, keepdim):
    n = x.dim()
    g, y = restore(g, dim, keepdim, n), restore(y, dim, keepdim, n)
    if p == 0:
        return torch.zeros_like(x)
    if p == 1:
        return x.sgn() * g
    if math.isinf(p):
        mask = x.abs() == y
        return x.sgn() * mask * g / mask.sum(_dims(dim, n), keepdim=True)
    scale = (g / y.pow(p - 1)).masked_fill(y == 0, 0)
    return x * x.abs().pow(p - 2) * scale


def _var(g, x, dim, corr, keepdim):
    n = x.dim()
    dof = max(0, _count(x.shape, dim) - corr)
    mu = x.mean(_dims(dim, n), keepdim=True)
    return (2.0 / dof) * restore(g, dim, keepdim, n) * (x - mu)


def _std(g, x, y, dim, corr, keepdim):
    n = x.dim()
    gy = (restore(g, dim, keepdim, n) / (2 * restore(y, dim, keepdim, n)))
    gy = gy.masked_fill(restore(y, dim, keepdim, n) == 0, 0)
    return _var(gy, x, dim, corr, True)


def _revcumsum(g, d):
    return g.flip(d).cumsum(d).flip(d)


EXPAND = r"\operatorname{expand}_{\mathrm{shape}(x)}\left(#0\right)"
MEAN_NOTE = "N is the number of elements averaged"
PLACE_NOTE = "place: G written at the saved index of the max/min, zeros elsewhere"
EVEN_NOTE = "G is shared evenly among the elements equal to the max/min"
SELF_M = Saved("self", r"\mathrm{self}")
MAT1, MAT2 = Saved("mat1", r"\mathrm{mat1}"), Saved("mat2", r"\mathrm{mat2}")
B1, B2 = Saved("batch1", r"\mathrm{batch1}"), Saved("batch2", r"\mathrm{batch2}")
VEC = Saved("vec", r"\mathrm{vec}")
MAT = Saved("mat", r"\mathrm{mat}")
V1, V2 = Saved("vec1", r"\mathrm{vec1}"), Saved("vec2", r"\mathrm{vec2}")
TENSOR = Saved("tensor", r"\mathrm{tensor}")


def outer(a, b):
    """The outer product `a\\,b^{\\top}` of two vectors.

    Example:
        >>> outer(G, VEC).tex()
        'G\\\\,\\\\mathrm{vec}^{\\\\top}'
    """
    return op(r"#0\,#1^{\top}", torch.outer, a, b, prec=30, need=(31, 100), join=r"\otimes")


def _mt(a, b):
    return torch.mv(a.transpose(-2, -1), b)


def mtv(a, b):
    """`a^{\\top} b` for a matrix `a` and a vector `b`.

    Example:
        >>> mtv(MAT, G).tex()
        '\\\\mathrm{mat}^{\\\\top} G'
    """
    return op(r"#0^{\top} #1", _mt, a, b, prec=30, need=(100, 31), join=r"\cdot")


FORMULAS: tuple[Formula, ...] = (
    Formula("SumBackward0", (Output("self", op(EXPAND, _expand, G, SIZES)),)),
    Formula("SumBackward1", (Output("self", op(EXPAND, _expand, G, SIZES, DIMS, KEEP)),),
            note="G is copied along the summed dimensions d"),
    Formula("MeanBackward0", (Output("self", op(
        r"\tfrac{1}{N}\,\operatorname{expand}_{\mathrm{shape}(x)}\left(#0\right)",
        lambda g, s, n: _expand(g, s) / n, G, SIZES, Param("self_sym_numel", "N"))),),
        note=MEAN_NOTE),
    Formula("MeanBackward1", (Output("self", op(
        r"\tfrac{1}{N}\,\operatorname{expand}_{\mathrm{shape}(x)}\left(#0\right)",
        lambda g, s, d, k: _expand(g, s, d, k) / _count(s, d), G, SIZES, DIMS, KEEP)),),
        note=MEAN_NOTE + " (the product of the sizes of the dimensions d)"),
    Formula("ProdBackward0", (Output("self", op(
        r"\operatorname{expand}\left(#0\right) \odot \textstyle\prod_{j \ne i} x_j",
        lambda g, x: g * _prod_others(x, None), G, X)),),
        note=r"each element gets G times the product of all the others (exact with zeros)"),
    Formula("ProdBackward1", (Output("self", op(
        r"\operatorname{expand}_{d}\left(#0\right) \odot \textstyle\prod_{j \ne i} x_j",
        lambda g, x, d, k: restore(g, d, k, x.dim()) * _prod_others(x, d), G, X, DIMS, KEEP)),),
        note="the product of the other elements along d"),
    Formula("MaxBackward0", (Output("self", op(
        r"\operatorname{place}_{\operatorname{argmax}_{d}}\left(#0\right)", _select_at, G, DIMS,
        Saved("indices"), KEEP, SIZES)),), note=PLACE_NOTE),
    Formula("MinBackward0", (Output("self", op(
        r"\operatorname{place}_{\operatorname{argmin}_{d}}\left(#0\right)", _select_at, G, DIMS,
        Saved("indices"), KEEP, SIZES)),), note=PLACE_NOTE),
    Formula("MaxBackward1", (Output("self", op(
        r"\frac{#0}{\lvert\{x = y\}\rvert} \odot \mathbb{1}\left[#1 = #2\right]", _evenly,
        G, X, Y)),), note=EVEN_NOTE + "; y is the saved max"),
    Formula("MinBackward1", (Output("self", op(
        r"\frac{#0}{\lvert\{x = y\}\rvert} \odot \mathbb{1}\left[#1 = #2\right]", _evenly,
        G, X, Y)),), note=EVEN_NOTE + "; y is the saved min"),
    Formula("AmaxBackward0", (Output("self", op(
        r"\frac{\operatorname{expand}_{d}(#0)}{\lvert\{x = y\}\rvert_{d}} \odot "
        r"\mathbb{1}\left[#1 = #2\right]", _by_count, G, X, Y, DIMS, KEEP)),), note=EVEN_NOTE),
    Formula("AminBackward0", (Output("self", op(
        r"\frac{\operatorname{expand}_{d}(#0)}{\lvert\{x = y\}\rvert_{d}} \odot "
        r"\mathbb{1}\left[#1 = #2\right]", _by_count, G, X, Y, DIMS, KEEP)),), note=EVEN_NOTE),
    Formula("LogsumexpBackward0", (Output("self", op(
        r"\operatorname{expand}_{d}\left(#0\right) \odot e^{#1 - #2}",
        lambda g, x, y, d, k: restore(g, d, k, x.dim()) * torch.exp(
            x - restore(y, d, k, x.dim())), G, X, Y, DIMS, KEEP)),),
        note=r"$y = \log\sum_d e^{x}$ is the saved result, so $e^{x - y}$ is the softmax"),
    Formula("LinalgVectorNormBackward0", (Output("self", op(
        r"\operatorname{expand}_{d}\left(#0\right) \odot \frac{#1 \odot \lvert #1\rvert^{p-2}}"
        r"{#2^{p-1}}", _norm, G, X, Y, Param("ord", "p"), DIMS, KEEP)),),
        note=r"$y = \lVert x\rVert_p$ is the saved result ($p = 2$: $G x / y$, 0 where $y = 0$; "
             r"$p = 1$: $G\,\operatorname{sgn}(x)$; $p = \infty$: shared among the largest $|x|$)"),
    Formula("VarBackward0", (Output("self", op(
        r"\frac{2}{N - c}\,\operatorname{expand}_{d}\left(#0\right) \odot \left(#1 - \bar{x}"
        r"\right)", _var, G, X, DIMS, Param("correction", "c"), KEEP)),),
        note=r"$\bar{x}$ is the mean over $d$, $N$ the number of elements reduced, $c$ the "
             r"correction"),
    Formula("StdBackward0", (Output("self", op(
        r"\frac{1}{N - c}\,\frac{\operatorname{expand}_{d}\left(#0\right)}{#2} \odot \left("
        r"#1 - \bar{x}\right)", _std, G, X, Y, DIMS, Param("correction", "c"), KEEP)),),
        note=r"$y$ is the saved std; $\bar{x}$ the mean over $d$; 0 where $y = 0$"),
    Formula("CumsumBackward0", (Output("self", op(
        r"\operatorname{revcumsum}_{#1}\left(#0\right)", _revcumsum, G, Param("dim", "d"))),),
        note=r"revcumsum: cumulative sum from the end (each $x_i$ feeds every $y_j$ with $j \ge "
             r"i$)"),
    # ------------------------------------------------------------------ matrix products
    Formula("MmBackward0", (Output("self", G @ MAT2.T), Output("mat2", SELF_M.T @ G))),
    Formula("AddmmBackward0", (
        Output("self", sum_to(BETA * G, 0, "self")),
        Output("mat1", ALPHA * (G @ MAT2.T)),
        Output("mat2", ALPHA * (MAT1.T @ G))),
        note=r"$\operatorname{addmm}(\mathrm{self}, \mathrm{mat1}, \mathrm{mat2}, \beta, \alpha) "
             r"= \beta\,\mathrm{self} + \alpha\,\mathrm{mat1}\,\mathrm{mat2}$; "
             r"$\mathrm{mat2}^{\top}$ is mat2 transposed"),
    Formula("BmmBackward0", (Output("self", G @ MAT2.T), Output("mat2", SELF_M.T @ G)),
            note=r"one matrix product per batch element; $^{\top}$ swaps the last two dimensions"),
    Formula("BaddbmmBackward0", (
        Output("self", sum_to(BETA * G, 0, "self")),
        Output("batch1", ALPHA * (G @ B2.T)),
        Output("batch2", ALPHA * (B1.T @ G))),
        note=r"$\operatorname{baddbmm} = \beta\,\mathrm{self} + "
             r"\alpha\,\mathrm{batch1}\,\mathrm{batch2}$ per batch"),
    Formula("MvBackward0", (Output("self", outer(G, VEC)), Output("vec", mtv(SELF_M, G)))),
    Formula("DotBackward0", (Output("self", G * TENSOR), Output("tensor", G * Saved(
        "self", r"\mathrm{self}"))), note="G is a scalar"),
    Formula("AddmvBackward0", (
        Output("self", sum_to(BETA * G, 0, "self")),
        Output("mat", ALPHA * outer(G, VEC)),
        Output("vec", ALPHA * mtv(MAT, G)))),
    Formula("AddrBackward0", (
        Output("self", sum_to(BETA * G, 0, "self")),
        Output("vec1", ALPHA * op(r"#0\,#1", torch.mv, G, V2, prec=30, need=(31, 31),
                                  join=r"\cdot")),
        Output("vec2", ALPHA * mtv(G, V1))),
        note=r"$\operatorname{addr} = \beta\,\mathrm{self} + "
             r"\alpha\,\mathrm{vec1}\,\mathrm{vec2}^{\top}$"),
)
