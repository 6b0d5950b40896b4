"""Shared building blocks of the formula tables: leaves, masks, cases, unbroadcast, reductions.

Every builder returns an `Expr` whose LaTeX and torch value come from the same node, so the
tables read like the math (`G * cos(X)`) and stay one tree per node type.

Example:
    >>> (G * ind(cmp(Y, ">", 0))).tex()
    'G \\\\odot \\\\mathbb{1}\\\\left[y > 0\\\\right]'
"""

from __future__ import annotations

import math
import operator
from typing import Any

import torch

from .expr import ATOM, CMP, FUNC, SUM, Const, Env, Expr, Grad, Op, Param, Saved, fn_op, op

__all__ = [
    "ALPHA",
    "BETA",
    "DIM",
    "LN2",
    "OTHER",
    "PI",
    "G",
    "OutShape",
    "X",
    "Y",
    "cases",
    "cmp",
    "cos",
    "cosh",
    "erf",
    "exp",
    "ind",
    "land",
    "log",
    "power",
    "reshape_to",
    "sigmoid",
    "sin",
    "sinh",
    "sqrt",
    "sum_dim",
    "sum_to",
    "tanh",
    "where",
    "zeros_like",
]

G = Grad(0)
X = Saved("self", "x")
Y = Saved("result", "y")
OTHER = Saved("other", "u")
ALPHA = Param("alpha", r"\alpha")
BETA = Param("beta", r"\beta")
DIM = Param("dim", "d")
PI = Const(math.pi, r"\pi")
LN2 = Const(math.log(2.0), r"\ln 2")

exp = fn_op(r"\exp", torch.exp)
log = fn_op(r"\ln", torch.log)
sin = fn_op(r"\sin", torch.sin)
cos = fn_op(r"\cos", torch.cos)
sinh = fn_op(r"\sinh", torch.sinh)
cosh = fn_op(r"\cosh", torch.cosh)
tanh = fn_op(r"\tanh", torch.tanh)
sigmoid = fn_op(r"\sigma", torch.sigmoid)
erf = fn_op("erf", torch.erf)


def sqrt(a: Expr) -> Op:
    """`\\sqrt{a}`.

    Example:
        >>> sqrt(X).tex()
        '\\\\sqrt{x}'
    """
    return op(r"\sqrt{#0}", lambda v: v ** 0.5 if not isinstance(v, torch.Tensor) else v.sqrt(),
              a, prec=ATOM)


_CMP = {">": operator.gt, "<": operator.lt, ">=": operator.ge, "<=": operator.le,
        "==": operator.eq, "!=": operator.ne}
_CMP_TEX = {">": ">", "<": "<", ">=": r"\ge", "<=": r"\le", "==": "=", "!=": r"\ne"}


def cmp(a: Any, rel: str, b: Any) -> Op:
    """A comparison (a boolean tensor): `a > b`, `a \\le b`...

    Example:
        >>> cmp(X, "<=", 0).tex()
        'x \\\\le 0'
    """
    a = a if isinstance(a, Expr) else Const(a)
    b = b if isinstance(b, Expr) else Const(b)
    return op(f"#0 {_CMP_TEX[rel]} #1", _CMP[rel], a, b, prec=CMP, need=(SUM, SUM))


def land(a: Expr, b: Expr) -> Op:
    """Both conditions (`a \\wedge b`).

    Example:
        >>> land(cmp(X, ">", 0), cmp(X, "<", 1)).tex()
        'x > 0 \\\\wedge x < 1'
    """
    return op(r"#0 \wedge #1", lambda p, q: p & q, a, b, prec=CMP, need=(CMP, CMP))


def ind(cond: Expr) -> Op:
    """The indicator `\\mathbb{1}[cond]` (1 where true, 0 elsewhere).

    Example:
        >>> ind(cmp(X, ">", 0)).tex()
        '\\\\mathbb{1}\\\\left[x > 0\\\\right]'
    """
    return op(r"\mathbb{1}\left[#0\right]", lambda c: c, cond, prec=ATOM)


def where(cond: Expr, a: Any, b: Any) -> Op:
    """`a` where `cond`, else `b`, written as cases.

    Example:
        >>> print(where(cmp(X, ">", 0), G, 0).tex())
        \\begin{cases} G & x > 0 \\\\ 0 & \\text{otherwise} \\end{cases}
    """
    a = a if isinstance(a, Expr) else Const(a)
    b = b if isinstance(b, Expr) else Const(b)
    return op(r"\begin{cases} #1 & #0 \\ #2 & \text{otherwise} \end{cases}", _where, cond, a, b,
              prec=ATOM)


def cases(cond: Expr, a: Any, b: Any) -> Op:
    """Alias of `where` for piecewise derivatives.

    Example:
        >>> cases(cmp(X, ">", 0), G, 0).tex() == where(cmp(X, ">", 0), G, 0).tex()
        True
    """
    return where(cond, a, b)


def _where(c: Any, a: Any, b: Any) -> Any:
    ref = next(v for v in (a, b, c) if isinstance(v, torch.Tensor))
    if not isinstance(a, torch.Tensor):
        a = torch.full((), a, dtype=ref.dtype if ref.is_floating_point() else None,
                       device=ref.device)
    if not isinstance(b, torch.Tensor):
        b = torch.full((), b, dtype=a.dtype, device=a.device)
    return torch.where(c, a, b)


class OutShape(Expr):
    """The shape of the forward input that output `i` flows to (not written: used by
    `sum_to`). Its value is that shape as a tuple.

    Example:
        >>> OutShape(1).ev(Env(z.grad_fn, ()))
        ()
    """

    def __init__(self, i: int) -> None:
        self.i = i

    def tex(self) -> str:
        """Nothing (the shape is said by the surrounding operator).

        Example:
            >>> OutShape(0).tex()
            ''
        """
        return ""

    def ev(self, env: Env) -> Any:
        """The target shape, or None when that output is not needed.

        Example:
            >>> OutShape(0).ev(Env(z.grad_fn, ()))
            ()
        """
        m = env.out_meta(self.i)
        return None if m is None else m[0]


def _sum_to(v: Any, shape: tuple[int, ...] | None) -> Any:
    if shape is None or not isinstance(v, torch.Tensor) or tuple(v.shape) == tuple(shape):
        return v
    if len(shape) == 0:
        return v.sum()
    return v.sum_to_size(shape)


def sum_to(e: Expr, i: int, label: str = "") -> Op:
    """`e` summed over the dimensions the forward broadcast input `i` along (unbroadcast), as
    the engine reduces it to that input's shape.

    Example:
        >>> sum_to(G, 1, "other").tex()
        '\\\\operatorname{sum}_{\\\\text{bcast}\\\\to\\\\mathrm{other}}\\\\left(G\\\\right)'
    """
    to = rf"\to\mathrm{{{label}}}" if label else ""
    return op(rf"\operatorname{{sum}}_{{\text{{bcast}}{to}}}\left(#0\right)", _sum_to, e,
              OutShape(i), prec=FUNC)


def _sum_dims(v: torch.Tensor, dim: Any) -> torch.Tensor:
    if dim is None or dim == ():
        return v.sum()
    return v.sum(dim, keepdim=True)


def sum_dim(e: Expr, dim: Expr = DIM) -> Op:
    """`\\sum_d e`, keeping the summed dimensions (size 1) so it broadcasts back.

    Example:
        >>> sum_dim(G * Y).tex()
        '\\\\textstyle\\\\sum_{d}\\\\left(G \\\\odot y\\\\right)'
    """
    return op(r"\textstyle\sum_{#1}\left(#0\right)", _sum_dims, e, dim, prec=FUNC)


def reshape_to(e: Expr, sizes: Expr, what: str = "x") -> Op:
    """`e` reshaped to the saved `sizes` (the forward input's shape).

    Example:
        >>> reshape_to(G, Param("self_sym_sizes")).tex()
        '\\\\operatorname{reshape}_{\\\\mathrm{shape}(x)}\\\\left(G\\\\right)'
    """
    return op(rf"\operatorname{{reshape}}_{{\mathrm{{shape}}({what})}}\left(#0\right)",
              lambda g, s: g.reshape(s), e, sizes)


def zeros_like(e: Expr) -> Op:
    """`0` (a zero gradient of `e`'s shape).

    Example:
        >>> zeros_like(G).tex()
        '0'
    """
    return op("0", torch.zeros_like, e)


def power(a: Expr, b: Any) -> Op:
    """`a^{b}`.

    Example:
        >>> power(X, 2).tex()
        'x^{2}'
    """
    return a ** b

