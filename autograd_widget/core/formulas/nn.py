"""Formulas of neural-network nodes: layer/batch norm, convolution, embedding, pooling, losses.

Norms are written with the normalised input `\\hat{x}` (from the saved mean and inverse std);
convolution's input gradient is a transposed convolution of G with the same weight and its
weight gradient a correlation of the input with G (evaluated with `torch.nn.grad`); losses
follow their backward kernels (`reduction`: 0 none, 1 mean, 2 sum).

Example:
    >>> sorted(f.name for f in FORMULAS)[:2]
    ['AvgPool2DBackward0', 'BinaryCrossEntropyBackward0']
"""

from __future__ import annotations

import torch
import torch.nn.grad as tgrad

from .expr import Param, Ref, Saved, op
from .formula import Formula, Output
from .ops import G, X
from .recurrent import FORMULAS as RECURRENT

__all__ = ["FORMULAS"]


def _norm_dims(x, ns):
    return tuple(range(x.dim() - len(ns), x.dim()))


def _ln_xhat(x, mu, r):
    return (x - mu) * r


def _ln_input(g, w, xh, r, ns):
    dims = _norm_dims(g, ns)
    gh = g * w if w is not None else g
    return r * (gh - gh.mean(dims, keepdim=True) - xh * (gh * xh).mean(dims, keepdim=True))


def _ln_sum(v, ns):
    lead = tuple(range(v.dim() - len(ns)))
    return v.sum(lead) if lead else v


XHAT = Ref("xhat", r"\hat{x}")
NS = Param("normalized_shape", "S")


def _bn_view(v, x):
    return v.reshape([1, -1] + [1] * (x.dim() - 2))


def _bn_xhat(x, mu, r, rm, rv, eps, training):
    if training:
        return (x - _bn_view(mu, x)) * _bn_view(r, x)
    return (x - _bn_view(rm, x)) * _bn_view((rv + eps).rsqrt(), x)


def _bn_input(g, x, w, xh, r, rv, eps, training):
    dims = [0, *range(2, x.dim())]
    inv = _bn_view(r if training else (rv + eps).rsqrt(), x)
    scale = inv * (_bn_view(w, x) if w is not None else 1.0)
    if not training:
        return g * scale
    return scale * (g - g.mean(dims, keepdim=True) - xh * (g * xh).mean(dims, keepdim=True))


def _bn_sum(v):
    return v.sum([0, *range(2, v.dim())])


def _conv_input(g, x, w, stride, padding, dilation, transposed, out_pad, groups):
    if transposed:
        conv = {3: torch.conv1d, 4: torch.conv2d, 5: torch.conv3d}[g.dim()]
        return conv(g, w, None, stride, padding, dilation, groups)
    fn = {3: tgrad.conv1d_input, 4: tgrad.conv2d_input, 5: tgrad.conv3d_input}[g.dim()]
    return fn(x.shape, w, g, stride, padding, dilation, groups)


def _conv_weight(g, x, w, stride, padding, dilation, transposed, out_pad, groups):
    fn = {3: tgrad.conv1d_weight, 4: tgrad.conv2d_weight, 5: tgrad.conv3d_weight}[g.dim()]
    if transposed:  # the forward was the input-gradient of a convolution of G by w
        return fn(g, w.shape, x, stride, padding, dilation, groups)
    return fn(x, w.shape, g, stride, padding, dilation, groups)


def _conv_bias(g):
    return g.sum([0, *range(2, g.dim())])


CONV_ARGS = (G, Saved("input", "x"), Saved("weight", "W"), Param("stride", "s"),
             Param("padding", "p"), Param("dilation", r"\delta"), Param("transposed", "t"),
             Param("output_padding", "q"), Param("groups", "k"))


def _embedding(g, idx, n, pad, by_freq):
    flat = idx.reshape(-1)
    rows = g.reshape(flat.numel(), g.shape[-1])
    if by_freq:
        counts = torch.bincount(flat, minlength=n).to(g.dtype)
        rows = rows / counts[flat].unsqueeze(1)
    if pad is not None and pad >= 0:
        rows = rows * (flat != pad).unsqueeze(1).to(g.dtype)
    return g.new_zeros(n, g.shape[-1]).index_add_(0, flat, rows)


def _nll(g, x, t, w, red, ignore, total):
    cdim = 1 if x.dim() >= 2 else 0
    t_ = t.unsqueeze(cdim) if x.dim() >= 2 else t.reshape(1)
    wt = w[t] if w is not None else torch.ones_like(t, dtype=x.dtype)
    wt = torch.where(t == ignore, torch.zeros_like(wt), wt)
    scale = g / total if red == 1 else g
    vals = -(wt * scale)
    vals = vals.unsqueeze(cdim) if x.dim() >= 2 else vals.reshape(1)
    safe = torch.where(t_ == ignore, torch.zeros_like(t_), t_)
    return torch.zeros_like(x).scatter(cdim, safe, vals)


def _scale(red, n):
    return 1.0 / n if red == 1 else 1.0


def _mse(g, x, t, red):
    return 2 * (x - t) * g * _scale(red, x.numel())


def _smooth_l1(g, x, t, red, beta):
    d = x - t
    inner = d / beta if beta > 0 else torch.zeros_like(d)
    val = torch.where(d.abs() < beta, inner, d.sgn())
    return val * g * _scale(red, x.numel())


def _huber(g, x, t, red, delta):
    d = x - t
    return torch.where(d.abs() <= delta, d, delta * d.sgn()) * g * _scale(red, x.numel())


def _bce(g, x, t, w, red):
    eps = 1e-12
    v = (x - t) / torch.clamp((1 - x) * x, min=eps) * g
    if w is not None:
        v = v * w
    return v * _scale(red, x.numel())


def _bce_logits(g, x, t, w, pw, red):
    s = torch.sigmoid(x)
    v = (pw * t + 1 - t) * s - pw * t if pw is not None else s - t
    v = v * g
    if w is not None:
        v = v * w
    return v * _scale(red, x.numel())


def _maxpool(g, x, idx):
    z = x.new_zeros(x.shape).flatten(-2)
    return z.scatter_add(-1, idx.flatten(-2), g.flatten(-2)).reshape(x.shape)


def _avgpool(g, x, k, s, p, ceil, incl, div):
    if ceil or not incl or div is not None:
        raise NotImplementedError("avg_pool2d formula covers ceil_mode=False, "
                                  "count_include_pad=True, divisor_override=None")
    s = s or k
    c = x.shape[-3]
    ones = g.new_ones(c, 1, *k) / (k[0] * k[1])
    h, w = x.shape[-2:]
    oh = (g.shape[-2] - 1) * s[0] - 2 * p[0] + k[0]
    ow = (g.shape[-1] - 1) * s[1] - 2 * p[1] + k[1]
    g4 = g if g.dim() == 4 else g.unsqueeze(0)
    out = torch.conv_transpose2d(g4, ones, None, s, p, (h - oh, w - ow), c)
    return out if g.dim() == 4 else out.squeeze(0)


RED = Param("reduction", "r")
TARGET = Saved("target", "t")
LOSS_NOTE = "with reduction='mean' (r = 1) divided by the number of elements N"

_NN: tuple[Formula, ...] = (
    Formula("NativeLayerNormBackward0", (
        Output("input", op(
            r"#3 \odot \left(\hat{g} - \overline{\hat{g}} - #2 \odot \overline{\hat{g} \odot "
            r"#2}\right)", _ln_input, G, Saved("weight", "w"), XHAT, Saved("result2", "r"), NS,
            need=(100,) * 5)),
        Output("weight", op(r"\textstyle\sum_{\text{batch}} #0 \odot #1", lambda g, xh, ns:
                            _ln_sum(g * xh, ns), G, XHAT, NS, need=(100, 100, 0))),
        Output("bias", op(r"\textstyle\sum_{\text{batch}} #0", _ln_sum, G, NS, need=(100, 0)))),
        defs=(("xhat", r"\hat{x}", op(r"\left(#0 - #1\right) \odot #2", _ln_xhat,
                                      Saved("input", "x"), Saved("result1", r"\mu"),
                                      Saved("result2", "r"), prec=30, need=(100,) * 3)),),
        note=r"$\mu$, $r$: the saved mean and 1/std over the normalized dims $S$; $\hat{g} = G "
             r"\odot w$; $\overline{v}$: the mean of $v$ over $S$; batch: the leading dims"),
    Formula("NativeBatchNormBackward0", (
        Output("input", op(
            r"#2\,#4 \odot \left(#0 - \overline{#0} - #3 \odot \overline{#0 \odot #3}\right)",
            _bn_input, G, Saved("input", "x"), Saved("weight", "w"), Ref("bnxhat", r"\hat{x}"),
            Saved("result2", "r"), Saved("running_var", r"\sigma^2_{\mathrm{run}}"),
            Param("eps", r"\epsilon"), Param("training", r"\mathrm{training}"),
            need=(100,) * 8)),
        Output("weight", op(r"\textstyle\sum_{N,HW} #0 \odot #1", lambda g, xh: _bn_sum(g * xh),
                            G, Ref("bnxhat", r"\hat{x}"), need=(100, 100))),
        Output("bias", op(r"\textstyle\sum_{N,HW} #0", _bn_sum, G, need=(100,)))),
        defs=(("bnxhat", r"\hat{x}", op(
            r"\left(#0 - #1\right) \odot #2", _bn_xhat, Saved("input", "x"),
            Saved("result1", r"\mu"), Saved("result2", "r"), Saved("running_mean"),
            Saved("running_var"), Param("eps", r"\epsilon"), Param("training", "t"),
            prec=30, need=(100,) * 7)),),
        note=r"training: $\mu$, $r$ are the batch mean and 1/std per channel, $\overline{v}$ the "
             r"mean over $N, H, W$; eval: $\mu$, $r$ come from the running stats and "
             r"$\mathrm{grad}_{\mathrm{input}} = G\,r\,w$"),
    Formula("ConvolutionBackward0", (
        Output("input", op(r"\operatorname{conv}^{\top}_{s,p}\left(#0,\ #2\right)",
                           _conv_input, *CONV_ARGS, need=(0,) * 9)),
        Output("weight", op(r"\operatorname{conv}_{s,p}\left(#1,\ #0\right)", _conv_weight,
                            *CONV_ARGS, need=(0,) * 9)),
        Output("bias", op(r"\textstyle\sum_{N,HW} #0", _conv_bias, G, need=(100,)))),
        note=r"$\operatorname{conv}^{\top}$ is the transposed convolution (the adjoint of the "
             r"forward) with the same stride $s$, padding $p$, dilation and groups; the weight's "
             r"gradient correlates the input $x$ with $G$ (for a transposed forward the roles "
             r"swap)"),
    Formula("EmbeddingBackward0", (Output("weight", op(
        r"\operatorname{place}_{\mathrm{rows}=\mathrm{indices}}\left(#0\right)", _embedding, G,
        Saved("indices"), Param("weight_sym_argsize_0", "n"), Param("padding_idx", "p"),
        Param("scale_grad_by_freq", "f"))),),
        note="row i of the table gets the sum of the G rows of every position that looked up "
             "i (none for padding_idx; divided by its count with scale_grad_by_freq)"),
    Formula("NllLossBackward0", (Output("self", op(
        r"-\frac{w_{t}}{W}\,#0 \odot \operatorname{onehot}\left(#2\right)", _nll, G, X, TARGET,
        Saved("weight", "w"), RED, Param("ignore_index", "i"), Saved("total_weight", "W"))),),
        note="only the target class of each row gets a gradient; W is the saved total weight "
             "(mean) or 1 (sum); ignore_index rows get none"),
    Formula("NllLoss2DBackward0", (Output("self", op(
        r"-\frac{w_{t}}{W}\,#0 \odot \operatorname{onehot}\left(#2\right)", _nll, G, X, TARGET,
        Saved("weight", "w"), RED, Param("ignore_index", "i"), Saved("total_weight", "W"))),),
        note="per pixel, as NllLossBackward0"),
    Formula("MseLossBackward0", (
        Output("self", op(r"\tfrac{2}{N}\left(#1 - #2\right) \odot #0", _mse, G, X, TARGET, RED)),
        Output("target", op(r"-\tfrac{2}{N}\left(#1 - #2\right) \odot #0", lambda *a: -_mse(*a),
                            G, X, TARGET, RED))), note=LOSS_NOTE),
    Formula("SmoothL1LossBackward0", (
        Output("self", op(r"\tfrac{1}{N}\,\operatorname{clip}\left(\tfrac{#1 - #2}{#4}\right) "
                          r"\odot #0", _smooth_l1, G, X, TARGET, RED, Param("beta", r"\beta"))),
        Output("target", op(r"-\tfrac{1}{N}\,\operatorname{clip}\left(\tfrac{#1 - #2}{#4}\right)"
                            r" \odot #0", lambda *a: -_smooth_l1(*a), G, X, TARGET, RED,
                            Param("beta", r"\beta")))),
        note=r"$\operatorname{clip}(v) = v$ inside $|x - t| < \beta$, else $\operatorname{sgn}(x "
             r"- t)$; " + LOSS_NOTE),
    Formula("HuberLossBackward0", (
        Output("self", op(r"\tfrac{1}{N}\,\operatorname{clip}_{#4}\left(#1 - #2\right) \odot #0",
                          _huber, G, X, TARGET, RED, Param("delta", r"\delta"))),
        Output("target", op(r"-\tfrac{1}{N}\,\operatorname{clip}_{#4}\left(#1 - #2\right) "
                            r"\odot #0", lambda *a: -_huber(*a), G, X, TARGET, RED,
                            Param("delta", r"\delta")))),
        note=r"$\operatorname{clip}_\delta(d) = d$ for $|d| \le \delta$, else "
             r"$\delta\,\operatorname{sgn}(d)$; "
             + LOSS_NOTE),
    Formula("BinaryCrossEntropyBackward0", (Output("self", op(
        r"\tfrac{1}{N}\,\frac{#1 - #2}{#1\left(1 - #1\right)} \odot #0", _bce, G, X, TARGET,
        Saved("weight", "w"), RED)),), note="times the weight w when given; " + LOSS_NOTE),
    Formula("BinaryCrossEntropyWithLogitsBackward0", (Output("self", op(
        r"\tfrac{1}{N}\left(\sigma(#1) - #2\right) \odot #0", _bce_logits, G, X, TARGET,
        Saved("weight", "w"), Saved("pos_weight", "p"), RED)),),
        note=r"with pos_weight $p$: $((p t + 1 - t) \sigma(x) - p t)$; " + LOSS_NOTE),
    Formula("MaxPool2DWithIndicesBackward0", (Output("self", op(
        r"\operatorname{place}_{\operatorname{argmax}}\left(#0\right)", _maxpool, G, X,
        Saved("result1", r"\mathrm{indices}"))),),
        note="each window's G goes to the element that was its max (saved indices), added up "
             "where windows overlap"),
    Formula("AvgPool2DBackward0", (Output("self", op(
        r"\tfrac{1}{k_h k_w}\operatorname{conv}^{\top}_{s,p}\left(#0,\ \mathbf{1}\right)",
        _avgpool, G, X, Param("kernel_size", "k"), Param("stride", "s"), Param("padding", "p"),
        Param("ceil_mode", "c"), Param("count_include_pad", "i"),
        Param("divisor_override", "v"))),),
        note=r"each window's $G$ is shared evenly by its $k_h k_w$ inputs (ceil_mode=False, "
             r"count_include_pad=True only)"),
)
FORMULAS: tuple[Formula, ...] = (*_NN, *RECURRENT)
