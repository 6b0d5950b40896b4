"""Formulas of activation nodes: relu family, gelu (both approximations), silu, softmax...

Each follows torch's `derivatives.yaml` / its backward kernel for real inputs; `x` is the saved
`self`, `y` the saved `result`, `d` the saved `dim`.

Example:
    >>> next(f for f in FORMULAS if f.name == "SiluBackward0").outputs[0].label
    'self'
"""

from __future__ import annotations

import math

import torch

from .expr import Cond, Const, Param, Saved, op
from .formula import Formula, Output
from .ops import G, X, Y, cmp, exp, ind, land, sigmoid, sum_dim, sum_to, where

__all__ = ["FORMULAS"]

PHI_NOTE = (r"$\Phi$ is the standard normal CDF $\tfrac12(1 + \operatorname{erf}(x/\sqrt2))$, "
            r"$\varphi$ its density")
_K = math.sqrt(2.0 / math.pi)
_C = 0.044715


def _gelu_exact(g, x):
    cdf = 0.5 * (1.0 + torch.erf(x * (1.0 / math.sqrt(2.0))))
    pdf = torch.exp(-0.5 * x * x) * (1.0 / math.sqrt(2.0 * math.pi))
    return g * (cdf + x * pdf)


def _gelu_tanh(g, x):
    inner = _K * (x + _C * x**3)
    t = torch.tanh(inner)
    return g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * _K * (1 + 3 * _C * x * x))


GELU_EXACT = op(r"#0 \odot \left(\Phi(#1) + #1\,\varphi(#1)\right)", _gelu_exact, G, X,
                need=(0, 100))
GELU_TANH = op(r"#0 \odot \left(\tfrac12\left(1 + t\right) + \tfrac12\, #1 \left(1 - t^{2}\right)"
               r"\sqrt{\tfrac{2}{\pi}}\left(1 + 3c\,#1^{2}\right)\right)", _gelu_tanh, G, X,
               need=(0, 100))
GELU_NOTE = (PHI_NOTE + r"; with approximate='tanh': $t = \tanh\left(\sqrt{2/\pi}\,(x + c "
                        r"x^3)\right)$, $c = 0.044715$")


def _is_tanh(a):
    return a == "tanh"


def _hardswish(g, x):
    return torch.where(x < -3, torch.zeros_like(g), torch.where(x <= 3, g * (x / 3 + 0.5), g))


def _mish(g, x):
    sig = torch.sigmoid(x)
    tsp = torch.tanh(torch.nn.functional.softplus(x))
    return g * (tsp + x * sig * (1 - tsp * tsp))


def _elu(g, x, alpha, scale, iscale):
    neg = g * iscale * scale * alpha * torch.exp(x * iscale)
    return torch.where(x <= 0, neg, g * scale)


def _softplus(g, x, beta, threshold):
    return torch.where(x * beta > threshold, g, g * torch.sigmoid(x * beta))


ALPHA_A = Param("alpha", r"\alpha")

FORMULAS: tuple[Formula, ...] = (
    Formula("SiluBackward0", (Output("self", G * (sigmoid(X) * (1 + X * (1 - sigmoid(X))))),),
            note=r"$\operatorname{silu}(x) = x\,\sigma(x)$"),
    Formula("GeluBackward0", (Output("self", Cond(
        op("#0", _is_tanh, Param("approximate", "a")), GELU_TANH, GELU_EXACT,
        r"\text{approximate}=\text{tanh}")),), note=GELU_NOTE),
    Formula("LeakyReluBackward0", (Output("self", where(
        cmp(X, ">", 0), G, Param("negative_slope", "s") * G)),), note="s is negative_slope"),
    Formula("EluBackward0", (Output("self", op(
        r"\begin{cases} #0\,#3\,#2\,#4\,e^{#4 #1} & #1 \le 0 \\ #3\,#0 & \text{otherwise}"
        r"\end{cases}", _elu, G, X, ALPHA_A, Param("scale", "s"), Param("input_scale", r"\iota"),
        need=(100, 100, 100, 100, 100))),),
        note=r"elu with scale $s$ and input_scale $\iota$ (selu: $s \approx 1.0507$, $\alpha "
             r"\approx 1.6733$)"),
    Formula("CeluBackward0", (Output("self", where(cmp(X, "<=", 0), G * exp(X / ALPHA_A), G)),),
            note=r"$\operatorname{celu}(x) = \max(0, x) + \min(0, \alpha (e^{x/\alpha} - 1))$"),
    Formula("SoftplusBackward0", (Output("self", op(
        r"\begin{cases} #0 & #2\,#1 > #3 \\ #0 \odot \sigma(#2\,#1) & \text{otherwise}"
        r"\end{cases}", _softplus, G, X, Param("beta", r"\beta"), Param("threshold", r"\tau"),
        need=(100, 100, 100, 100))),),
        note=r"above the threshold $\tau$ softplus is the identity"),
    Formula("HardtanhBackward0", (Output("self", G * ind(land(
        cmp(X, ">", Param("min_val", "a")), cmp(X, "<", Param("max_val", "b"))))),),
        note="relu6 is hardtanh(x, 0, 6)"),
    Formula("HardsigmoidBackward0", (Output("self", Const(1 / 6, r"\tfrac{1}{6}") * (G * ind(
        land(cmp(X, ">", -3), cmp(X, "<", 3))))),)),
    Formula("HardswishBackward0", (Output("self", op(
        r"\begin{cases} 0 & #1 < -3 \\ #0 \odot \left(\tfrac{#1}{3} + \tfrac12\right) & "
        r"#1 \le 3 \\ #0 & \text{otherwise} \end{cases}", _hardswish, G, X)),)),
    Formula("LogSigmoidBackward0", (Output("self", G * sigmoid(-X)),)),
    Formula("MishBackward0", (Output("self", op(
        r"#0 \odot \left(\tanh(\zeta(#1)) + #1\,\sigma(#1)\left(1 - \tanh^{2}(\zeta(#1))"
        r"\right)\right)", _mish, G, X, need=(0, 100))),),
        note=r"$\zeta(x) = \ln(1 + e^{x})$ is softplus"),
    Formula("ThresholdBackward0", (Output("self", G * ind(
        cmp(X, ">", Param("threshold", r"\theta")))),)),
    Formula("SoftmaxBackward0", (Output("self", Y * (G - sum_dim(G * Y))),),
            note=r"$y = \operatorname{softmax}_d(x)$ is the saved result"),
    Formula("SafeSoftmaxBackward0", (Output("self", Y * (G - sum_dim(G * Y))),),
            note=r"$y = \operatorname{softmax}_d(x)$ (rows that are all $-\infty$ give 0)"),
    Formula("LogSoftmaxBackward0", (Output("self", G - exp(Y) * sum_dim(G)),),
            note=r"$y = \log\operatorname{softmax}_d(x)$ is the saved result, so $e^{y}$ is the "
                 r"softmax"),
    Formula("NativeDropoutBackward0", (Output("input", op(
        r"\tfrac{1}{1 - #2}\, #0 \odot #1", lambda g, m, p: g * m * (1.0 / (1 - p) if p < 1
                                                                       else 0.0),
        G, Saved("result1", "m"), Param("p", "p"), need=(30, 31, 100))),),
        note="m is the saved keep-mask (1 kept, 0 dropped), p the drop probability"),
    Formula("PreluKernelBackward0", (
        Output("self", where(cmp(X, ">", 0), G, G * Saved("weight", "w"))),
        Output("weight", sum_to(G * X * ind(cmp(X, "<=", 0)), 1, "weight"))),
        note="prelu(x) = max(0, x) + w min(0, x), w broadcast over channels"),
)
