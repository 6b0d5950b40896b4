"""Formulas of elementwise nodes: unary math, binary arithmetic (with unbroadcast), clamps.

Each entry follows torch's `derivatives.yaml` for real inputs (`x` is the saved `self`, `y` the
saved `result`, `u` the saved `other`). Binary ops whose forward broadcasts end in
`\\operatorname{sum}_{\\text{bcast}}`: the engine sums a gradient back to its input's shape.

Example:
    >>> [f.name for f in FORMULAS][:3]
    ['NegBackward0', 'ExpBackward0', 'LogBackward0']
"""

from __future__ import annotations

import math

import torch

from .expr import Const, Param, Saved, fn_op, op
from .formula import Formula, Output
from .ops import (
    ALPHA,
    LN2,
    OTHER,
    G,
    X,
    Y,
    cmp,
    cos,
    cosh,
    exp,
    ind,
    land,
    sin,
    sinh,
    sqrt,
    sum_to,
    where,
    zeros_like,
)

__all__ = ["FORMULAS"]


def _one(name: str, expr, note: str | None = None, label: str = "self") -> Formula:
    return Formula(name, (Output(label, expr),), note=note)


_ZERO_NOTE = "piecewise constant: the derivative is 0 almost everywhere"
digamma = fn_op(r"\psi", torch.digamma)
trigamma = fn_op(r"\psi_{1}", lambda v: torch.polygamma(1, v))
erfinv = fn_op(r"\operatorname{erf}^{-1}", torch.erfinv)
i1 = fn_op("I_1", torch.special.i1)
sgn = fn_op("sgn", torch.sgn)

UNARY = [
    _one("NegBackward0", -G),
    _one("ExpBackward0", G * Y, r"$y = e^{x}$ is the saved result"),
    _one("LogBackward0", G / X),
    _one("SqrtBackward0", G / (2 * Y), r"$y = \sqrt{x}$ is the saved result"),
    _one("RsqrtBackward0", -(Const(0.5, r"\tfrac{1}{2}") * (G * Y**3)),
         r"$y = 1/\sqrt{x}$ is the saved result"),
    _one("SinBackward0", G * cos(X)),
    _one("CosBackward0", -(G * sin(X))),
    _one("TanBackward0", G * (1 + Y**2), r"$y = \tan x$"),
    _one("TanhBackward0", G * (1 - Y**2), r"$y = \tanh x$ is the saved result"),
    _one("SigmoidBackward0", G * (Y * (1 - Y)), r"$y = \sigma(x)$ is the saved result"),
    _one("ReluBackward0", G * ind(cmp(Y, ">", 0)), "y = max(x, 0) is the saved result"),
    _one("AbsBackward0", G * sgn(X)),
    _one("ReciprocalBackward0", -(G * Y**2), "y = 1/x"),
    _one("Log2Backward0", G / (X * LN2)),
    _one("Log10Backward0", G / (X * Const(math.log(10.0), r"\ln 10"))),
    _one("Log1PBackward0", G / (1 + X)),
    _one("Expm1Backward0", G * (Y + 1), r"$y = e^{x} - 1$"),
    _one("Exp2Backward0", G * (Y * LN2), r"$y = 2^{x}$"),
    _one("SinhBackward0", G * cosh(X)),
    _one("CoshBackward0", G * sinh(X)),
    _one("AsinBackward0", G / sqrt(1 - X**2)),
    _one("AcosBackward0", -(G / sqrt(1 - X**2))),
    _one("AtanBackward0", G / (1 + X**2)),
    _one("AsinhBackward0", G / sqrt(X**2 + 1)),
    _one("AcoshBackward0", G / sqrt(X**2 - 1)),
    _one("AtanhBackward0", G / (1 - X**2)),
    _one("ErfBackward0", Const(2 / math.sqrt(math.pi), r"\tfrac{2}{\sqrt{\pi}}")
         * (G * exp(-(X**2)))),
    _one("ErfcBackward0", -(Const(2 / math.sqrt(math.pi), r"\tfrac{2}{\sqrt{\pi}}")
         * (G * exp(-(X**2))))),
    _one("ErfinvBackward0", Const(math.sqrt(math.pi) / 2, r"\tfrac{\sqrt{\pi}}{2}")
         * (G * exp(erfinv(X) ** 2))),
    _one("DigammaBackward0", G * trigamma(X), r"$\psi_1$ is the trigamma function"),
    _one("LgammaBackward0", G * digamma(X), r"$\psi$ is the digamma function"),
    _one("I0Backward0", G * i1(X), r"$I_1$ is the modified Bessel function of order 1"),
    _one("LogitBackward0", where(land(cmp(X, ">=", 0), cmp(X, "<=", 1)), G / (X * (1 - X)),
                                 Const(math.nan, r"\mathrm{NaN}")), "with eps=None"),
    _one("SignBackward0", zeros_like(G), _ZERO_NOTE),
    _one("SgnBackward0", zeros_like(G), _ZERO_NOTE + " (real inputs)"),
    _one("FloorBackward0", zeros_like(G), _ZERO_NOTE),
    _one("CeilBackward0", zeros_like(G), _ZERO_NOTE),
    _one("RoundBackward0", zeros_like(G), _ZERO_NOTE),
    _one("TruncBackward0", zeros_like(G), _ZERO_NOTE),
    _one("FracBackward0", G, "frac(x) = x - trunc(x)"),
    _one("Deg2RadBackward0", Const(math.pi / 180, r"\tfrac{\pi}{180}") * G),
    _one("Rad2DegBackward0", Const(180 / math.pi, r"\tfrac{180}{\pi}") * G),
]

# ---------------------------------------------------------------------- binary
SELF2 = Saved("self", "x")
EXPO = Saved("exponent", "e")
EXPO_P = Param("exponent", "e")
SCALAR_OTHER = Param("other", "u")
WEIGHT = Saved("weight", "w")
END = Saved("end", r"\mathrm{end}")
T1, T2 = Saved("tensor1", "t_1"), Saved("tensor2", "t_2")
VALUE = Param("value", "v")
COND = Saved("condition", "c")


def _pow_self(g, e, x):
    return torch.where(e == 0, torch.zeros_like(g), g * e * x.pow(e - 1))


def _pow_exp(g, y, base, e):
    cond = (base == 0) & (e >= 0) if isinstance(base, torch.Tensor) else (
        torch.zeros_like(e, dtype=torch.bool) if base != 0 else e >= 0)
    ln = base.log() if isinstance(base, torch.Tensor) else math.log(base) if base > 0 else (
        math.nan if base < 0 else -math.inf)
    return torch.where(cond, torch.zeros_like(g), g * (y * ln))


def _pow_scalar(g, x, e):
    return torch.zeros_like(g) if e == 0 else g * e * x.pow(e - 1)


_MAX_NOTE = "ties split the gradient in half"


def _clamp(g, x, lo, hi):
    keep = torch.ones_like(x, dtype=torch.bool)
    if lo is not None:
        keep &= x >= lo
    if hi is not None:
        keep &= x <= hi
    return torch.where(keep, g, torch.zeros_like(g))


def _tie(a, b):
    return (a > b).to(a.dtype) + 0.5 * (a == b).to(a.dtype)


tie_gt = fn_op(r"\mathbb{1}^{\frac12}_{>}", lambda a, b: _tie(a, b).to(a.dtype))
tie_lt = fn_op(r"\mathbb{1}^{\frac12}_{<}", lambda a, b: _tie(b, a).to(a.dtype))

BINARY = [
    Formula("AddBackward0", (Output("self", sum_to(G, 0, "self")),
                             Output("other", sum_to(ALPHA * G, 1, "other")))),
    _one("AddBackward1", G, "adding a Python scalar"),
    Formula("SubBackward0", (Output("self", sum_to(G, 0, "self")),
                             Output("other", sum_to(-(ALPHA * G), 1, "other")))),
    _one("SubBackward1", G, "subtracting a Python scalar"),
    Formula("RsubBackward0", (Output("self", sum_to(-(ALPHA * G), 0, "self")),
                              Output("other", sum_to(G, 1, "other"))),
            note=r"$\operatorname{rsub}(x, u, \alpha) = u - \alpha x$"),
    _one("RsubBackward1", -(ALPHA * G), r"$\operatorname{rsub}(x, s, \alpha) = s - \alpha x$ for "
                                        r"a scalar $s$"),
    Formula("MulBackward0", (Output("self", sum_to(G * OTHER, 0, "self")),
                             Output("other", sum_to(G * SELF2, 1, "other")))),
    _one("MulBackward1", SCALAR_OTHER * G, "multiplying by a Python scalar u"),
    Formula("DivBackward0", (Output("self", sum_to(G / OTHER, 0, "self")),
                             Output("other", sum_to(-(G * SELF2 / OTHER**2), 1, "other")))),
    _one("DivBackward1", G / SCALAR_OTHER, "dividing by a Python scalar u"),
    _one("PowBackward0", op(r"#0 \odot #2\, #1^{#2 - 1}", _pow_scalar, G, X, EXPO_P),
         "a scalar exponent e (e = 0 gives 0)"),
    Formula("PowBackward1", (
        Output("self", sum_to(op(r"#0 \odot #1 \odot #2^{#1 - 1}", _pow_self, G, EXPO, X),
                              0, "self")),
        Output("exponent", sum_to(op(r"#0 \odot #1 \odot \ln #2", _pow_exp, G, Y,
                                     Saved("self", "x"), EXPO), 1, "exponent"))),
        note=r"$y = x^{e}$ is the saved result; where $x = 0$ and $e \ge 0$ the exponent's "
             r"gradient is 0"),
    Formula("PowBackward2", (Output("exponent", op(r"#0 \odot #1\,\ln #2", _pow_exp, G, Y,
                                                   Param("self", "b"), EXPO)),),
            note=r"a scalar base $b$: $y = b^{e}$ is the saved result"),
    Formula("MaximumBackward0", (
        Output("self", sum_to(G * tie_gt(X, OTHER), 0, "self")),
        Output("other", sum_to(G * tie_lt(X, OTHER), 1, "other"))),
        note=r"$\mathbb{1}^{1/2}_{>}(x, u)$ is 1 where $x > u$, 1/2 where $x = u$: " + _MAX_NOTE),
    Formula("MinimumBackward0", (
        Output("self", sum_to(G * tie_lt(X, OTHER), 0, "self")),
        Output("other", sum_to(G * tie_gt(X, OTHER), 1, "other"))),
        note=r"$\mathbb{1}^{1/2}_{<}(x, u)$ is 1 where $x < u$, 1/2 where $x = u$: " + _MAX_NOTE),
    Formula("Atan2Backward0", (
        Output("self", sum_to(G * OTHER / (X**2 + OTHER**2), 0, "self")),
        Output("other", sum_to(-(G * X / (X**2 + OTHER**2)), 1, "other"))),
        note="atan2(x, u): x is the y-coordinate, u the x-coordinate"),
    Formula("HypotBackward0", (Output("self", sum_to(G * X / Y, 0, "self")),
                               Output("other", sum_to(G * OTHER / Y, 1, "other"))),
            note=r"$y = \sqrt{x^2 + u^2}$ is the saved result"),
    _one("FmodBackward0", G, "fmod by a Python scalar"),
    _one("RemainderBackward0", G, "remainder by a Python scalar"),
    Formula("LerpBackward0", (Output("self", sum_to((1 - Param("weight", "w")) * G, 0, "self")),
                              Output("end", sum_to(Param("weight", "w") * G, 1, "end"))),
            note="a scalar weight w"),
    Formula("LerpBackward1", (Output("self", sum_to(G * (1 - WEIGHT), 0, "self")),
                              Output("end", sum_to(G * WEIGHT, 1, "end")),
                              Output("weight", sum_to(G * (END - X), 2, "weight")))),
    Formula("WhereBackward0", (Output("self", sum_to(where(COND, G, 0), 0, "self")),
                               Output("other", sum_to(where(COND, 0, G), 1, "other"))),
            note="c is the saved condition (a boolean tensor: it gets no gradient)"),
    _one("ClampBackward1", op(r"#0 \odot \mathbb{1}\left[#2 \le #1 \le #3\right]", _clamp,
                              G, X, Param("min", "a"), Param("max", "b")),
         "clamp(x, a, b) with scalar bounds (a missing bound is no condition)"),
    _one("ClampMinBackward0", G * ind(cmp(X, ">=", Param("min", "a")))),
    _one("ClampMaxBackward0", G * ind(cmp(X, "<=", Param("max", "b")))),
    Formula("AddcmulBackward0", (Output("self", sum_to(G, 0, "self")),
                                 Output("tensor1", sum_to(VALUE * (G * T2), 1, "tensor1")),
                                 Output("tensor2", sum_to(VALUE * (G * T1), 2, "tensor2"))),
            note=r"addcmul(x, t1, t2, value=v) $= x + v\,t_1 t_2$"),
    Formula("AddcdivBackward0", (
        Output("self", sum_to(G, 0, "self")),
        Output("tensor1", sum_to(VALUE * (G / T2), 1, "tensor1")),
        Output("tensor2", sum_to(-(VALUE * (G * T1 / T2**2)), 2, "tensor2"))),
        note=r"addcdiv(x, t1, t2, value=v) $= x + v\,t_1 / t_2$"),
    _one("MaskedFillBackward0", G * ind(op(r"\neg #0", torch.logical_not, Saved("mask", "m"))),
         "m is the saved mask; the filled places get no gradient"),
]

FORMULAS: tuple[Formula, ...] = tuple(UNARY + BINARY)
