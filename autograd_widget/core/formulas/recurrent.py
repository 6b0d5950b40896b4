"""Formulas of the fused sequence nodes: scaled dot-product attention and one RNN layer.

Attention (`ScaledDotProductFlashAttentionForCpuBackward0`) is written out: the probabilities
`P` are rebuilt from the saved `logsumexp`, then `dV = P^T G`, `dS = P \\odot (G V^T - D)`,
`dQ = s\\,dS\\,K`, `dK = s\\,dS^T Q` (dropout_p > 0 is not reproducible: its mask is not saved).
An RNN layer (`MkldnnRnnLayerBackward0`: LSTM, GRU, tanh/relu RNN) is backpropagation through
time: its tree recomputes the layer's forward from the saved input, weights and initial state
with torch and takes that forward's vector-Jacobian product with the incoming gradients.

Example:
    >>> [f.name for f in FORMULAS]
    ['ScaledDotProductFlashAttentionForCpuBackward0', 'MkldnnRnnLayerBackward0']
"""

from __future__ import annotations

import math
from typing import Any

import torch

from .expr import Param, Ref, Saved, op
from .formula import Formula, Output
from .ops import G
from .sequence import AllGrads

__all__ = ["FORMULAS", "rnn_layer"]

Q, K, V = Saved("query", "Q"), Saved("key", "K"), Saved("value", "V")
OUT = Saved("output", "O")
LSE = Saved("logsumexp", r"\ell")
P = Ref("p", "P")
DS = Ref("ds", "dS")
SCALE = op("s", lambda s, q: _scale(s, q), Param("scale", "s"), Q, prec=100, scalar=True)


def _scale(s: Any, q: torch.Tensor) -> float:
    return s if s is not None else 1.0 / math.sqrt(q.shape[-1])


def _f(t: torch.Tensor) -> torch.Tensor:
    """Reduced-precision values in float32 (the CPU kernel accumulates in float)."""
    return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t


def _rep(t: torch.Tensor, heads: int) -> torch.Tensor:
    """Key/value heads repeated for grouped-query attention (each serves heads/h query heads)."""
    h = t.shape[-3] if t.dim() >= 3 else heads
    return t if h == heads else t.repeat_interleave(heads // h, dim=-3)


def _unrep(t: torch.Tensor, heads: int) -> torch.Tensor:
    """A per-query-head gradient summed back onto the shared key/value heads."""
    h = t.shape[-3] if t.dim() >= 3 else heads
    if h == heads:
        return t
    return t.reshape(*t.shape[:-3], heads, h // heads, *t.shape[-2:]).sum(-3)


def _probs(q, k, lse, s, mask, causal, dropout):
    if dropout:
        raise NotImplementedError("attention with dropout_p > 0: the dropout mask is not saved")
    q = _f(q)
    scores = (q @ _rep(_f(k), q.shape[-3]).transpose(-2, -1)) * _scale(s, q)
    if causal:
        L, S = scores.shape[-2:]
        keep = torch.ones(L, S, dtype=torch.bool, device=q.device).tril()
        scores = scores.masked_fill(~keep, -math.inf)
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf) if mask.dtype == torch.bool else (
            scores + mask)
    return torch.exp(scores - _f(lse).unsqueeze(-1))


def _ds(g, v, o, p):
    g, o = _f(g), _f(o)
    d = (g * o).sum(-1, keepdim=True)
    return p * (g @ _rep(_f(v), g.shape[-3]).transpose(-2, -1) - d)


def _dq(ds, k):
    return ds @ _rep(_f(k), ds.shape[-3])


def _dk(ds, q, k):
    return _unrep(ds.transpose(-2, -1) @ _f(q), k.shape[-3])


def _dv(p, g, v):
    return _unrep(p.transpose(-2, -1) @ _f(g), v.shape[-3])


def rnn_layer(mode: int, x: torch.Tensor, ws: list[torch.Tensor], h0: torch.Tensor,
              c0: torch.Tensor | None, reverse: bool) -> tuple[torch.Tensor, ...]:
    """One RNN layer's forward in plain torch (x: [T, B, F]; gates as torch orders them).

    mode: 0 relu RNN, 1 tanh RNN, 2 LSTM, 3 GRU (torch's mkldnn numbering). Returns
    (outputs [T, B, H], h_T, c_T) (c_T is h_T for non-LSTM modes).

    Example:
        >>> ws = [torch.zeros(8, 3), torch.zeros(8, 2), torch.zeros(8), torch.zeros(8)]
        >>> [t.shape for t in rnn_layer(2, torch.ones(4, 1, 3), ws, torch.zeros(1, 2),
        ...                              torch.zeros(1, 2), False)]
        [torch.Size([4, 1, 2]), torch.Size([1, 2]), torch.Size([1, 2])]
    """
    w_ih, w_hh = ws[0], ws[1]
    b_ih = ws[2] if len(ws) > 2 else None
    b_hh = ws[3] if len(ws) > 3 else None
    h, c = h0, c0
    steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    outs: list[torch.Tensor] = [x.new_zeros(0)] * x.shape[0]
    for t in steps:
        gi = torch.nn.functional.linear(x[t], w_ih, b_ih)
        gh = torch.nn.functional.linear(h, w_hh, b_hh)
        if mode == 2:
            i, f, gg, o = (gi + gh).chunk(4, -1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(gg)
            h = torch.sigmoid(o) * torch.tanh(c)
        elif mode == 3:
            ri, zi, ni = gi.chunk(3, -1)
            rh, zh, nh = gh.chunk(3, -1)
            r, zg = torch.sigmoid(ri + rh), torch.sigmoid(zi + zh)
            n = torch.tanh(ni + r * nh)
            h = (1 - zg) * n + zg * h
        else:
            h = torch.relu(gi + gh) if mode == 0 else torch.tanh(gi + gh)
        outs[t] = h
    return torch.stack(outs), h, (c if mode == 2 else h)


def _bptt(gs, x, w0, w1, w2, w3, hx, cx, mode, biases, reverse, which):
    ws = [w0, w1] + ([w2, w3] if biases else [])
    ins = [t.detach().requires_grad_(True) for t in [x, *ws, hx] + ([cx] if mode == 2 else [])]
    with torch.enable_grad():
        out, hT, cT = rnn_layer(mode, ins[0], ins[1:1 + len(ws)], ins[1 + len(ws)],
                                ins[2 + len(ws)] if mode == 2 else None, reverse)
        outs = (out, hT, cT) if mode == 2 else (out, hT)
        grads = torch.autograd.grad(outs, ins, gs[:len(outs)], allow_unused=True)
    nw = len(ws)
    index = {0: 0, 1: 1, 2: 2, 3: 3 if biases else None, 4: 4 if biases else None,
             5: 1 + nw, 6: 2 + nw if mode == 2 else None}[which]
    if index is None:
        return None
    return grads[index] if grads[index] is not None else torch.zeros_like(ins[index])


def _rnn_out(which: int, label: str) -> Output:
    names = ["input", "weight0", "weight1", "weight2", "weight3", "hx_", "cx_"]
    args = (AllGrads(), *(Saved(n) for n in names), Param("mode", "m"),
            Param("has_biases", "b"), Param("reverse", "r"))
    template = (r"\left(\frac{\partial\left(h_{1..T},\, h_T,\, c_T\right)}{\partial\,"
                + label.replace("_", r"\_") + r"}\right)^{\!\top}\left[#0\right]")
    return Output(label, op(template, lambda *a: _bptt(*a, which), *args, need=(0,) * 11,
                            meta_ok=False))


FORMULAS: tuple[Formula, ...] = (
    Formula("ScaledDotProductFlashAttentionForCpuBackward0", (
        Output("query", SCALE * op(r"#0\,#1", _dq, DS, K, prec=30, join=r"\cdot")),
        Output("key", SCALE * op(r"#0^{\top} #1", _dk, DS, Q, K, prec=30, need=(100, 31, 0),
                                 join=r"\cdot")),
        Output("value", op(r"#0^{\top} #1", _dv, P, G, V, prec=30, need=(100, 31, 0),
                           join=r"\cdot"))),
        defs=(
            ("p", "P", op(r"\exp\left(s\,#0 #1^{\top} + M - #2\right)", _probs, Q, K, LSE, SCALE,
                          Saved("attn_mask"), Param("is_causal", "c"), Param("dropout_p", "p"),
                          prec=90)),
            ("ds", "dS", op(r"#3 \odot \left(#0\,#1^{\top} - \operatorname{rowsum}(#0 \odot #2)"
                            r"\right)", _ds, G, V, OUT, P, prec=30, need=(31, 100, 31, 100))),
        ),
        note=r"$P$: the attention probabilities, rebuilt from the saved log-sum-exp $\ell$; $s = "
             r"1/\sqrt{E}$ unless given; $M$: the mask ($-\infty$ where masked or causal); "
             r"dropout_p > 0 cannot be reproduced (its mask is not saved); grouped-query "
             r"attention: $K$, $V$ are shared by groups of query heads and their gradients summed "
             r"per group"),
    Formula("MkldnnRnnLayerBackward0", (
        _rnn_out(0, "input"), _rnn_out(1, "weight_ih"), _rnn_out(2, "weight_hh"),
        _rnn_out(3, "bias_ih"), _rnn_out(4, "bias_hh"), _rnn_out(5, "hx"), _rnn_out(6, "cx")),
        note=r"backpropagation through time: the vector-Jacobian product of the whole layer (all "
             r"outputs $h_{1..T}$ and the final state $h_T$, $c_T$) with the incoming $[G_0, G_1, "
             r"G_2]$; computed by recomputing the forward from the saved input, weights and "
             r"initial state"),
)
