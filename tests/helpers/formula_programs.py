"""One small float64 forward program per covered backward node type (tests/core/test_formulas*).

`PROGRAMS[name](shape)` returns a tensor whose graph contains a node of type `name`; `find`
locates it. Shapes default to small ones; hypothesis varies `shape` for elementwise programs.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

D = torch.float64


def r(*shape: int) -> torch.Tensor:
    return torch.randn(tuple(shape), dtype=D, requires_grad=True)


def pos(*shape: int, lo: float = 0.5) -> torch.Tensor:
    return (torch.rand(tuple(shape), dtype=D) + lo).requires_grad_(True)


def unit(*shape: int) -> torch.Tensor:
    """Values in (-0.9, 0.9): inside asin/atanh/erfinv's domain."""
    return ((torch.rand(tuple(shape), dtype=D) - 0.5) * 1.8).requires_grad_(True)


def find(out: torch.Tensor, name: str):
    """The first node named `name` in `out`'s graph (breadth-first)."""
    seen, todo = set(), [out.grad_fn]
    while todo:
        fn = todo.pop(0)
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        if fn.name() == name:
            return fn
        todo.extend(f for f, _ in fn.next_functions)
    raise AssertionError(f"no {name} in the graph")


S = (3, 4)
UNARY: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "NegBackward0": torch.neg, "ExpBackward0": torch.exp, "SinBackward0": torch.sin,
    "CosBackward0": torch.cos, "TanBackward0": torch.tan, "TanhBackward0": torch.tanh,
    "SigmoidBackward0": torch.sigmoid, "ReluBackward0": torch.relu, "AbsBackward0": torch.abs,
    "Expm1Backward0": torch.expm1, "Exp2Backward0": torch.exp2, "SinhBackward0": torch.sinh,
    "CoshBackward0": torch.cosh, "AtanBackward0": torch.atan, "AsinhBackward0": torch.asinh,
    "ErfBackward0": torch.erf, "ErfcBackward0": torch.erfc, "SignBackward0": torch.sign,
    "SgnBackward0": torch.sgn, "FloorBackward0": torch.floor, "CeilBackward0": torch.ceil,
    "RoundBackward0": torch.round, "TruncBackward0": torch.trunc, "FracBackward0": torch.frac,
    "Deg2RadBackward0": torch.deg2rad, "Rad2DegBackward0": torch.rad2deg,
    "DigammaBackward0": lambda t: torch.digamma(t.abs() + 0.5),
    "SiluBackward0": F.silu, "LeakyReluBackward0": lambda t: F.leaky_relu(t, 0.1),
    "EluBackward0": F.elu, "CeluBackward0": lambda t: F.celu(t, 0.7),
    "SoftplusBackward0": lambda t: F.softplus(t * 10, beta=2, threshold=5),
    "HardtanhBackward0": lambda t: F.hardtanh(t * 2), "HardsigmoidBackward0":
    lambda t: F.hardsigmoid(t * 4), "HardswishBackward0": lambda t: F.hardswish(t * 4),
    "LogSigmoidBackward0": F.logsigmoid, "MishBackward0": F.mish,
    "ThresholdBackward0": lambda t: F.threshold(t, 0.1, 2.0),
    "SoftmaxBackward0": lambda t: torch.softmax(t, -1),
    "SafeSoftmaxBackward0": lambda t: torch._safe_softmax(t, 0),
    "LogSoftmaxBackward0": lambda t: torch.log_softmax(t, 1 if t.dim() > 1 else 0),
    "ClampBackward1": lambda t: t.clamp(-0.5, 0.5),
    "ClampMinBackward0": lambda t: t.clamp_min(0.1),
    "ClampMaxBackward0": lambda t: t.clamp_max(0.1),
    "AddBackward1": lambda t: torch.ops.aten.add.Scalar(t, 2.0),
    "SubBackward1": lambda t: torch.ops.aten.sub.Scalar(t, 2.0),
    "MulBackward1": lambda t: torch.ops.aten.mul.Scalar(t, 2.5),
    "DivBackward1": lambda t: torch.ops.aten.div.Scalar(t, 2.5),
    "RsubBackward1": lambda t: torch.ops.aten.rsub.Scalar(t, 2.0, alpha=3),
    "PowBackward0": lambda t: t.pow(3), "PowBackward2": lambda t: torch.pow(2.0, t),
    "FmodBackward0": lambda t: t.fmod(0.7), "RemainderBackward0": lambda t: t.remainder(0.7),
    "MaskedFillBackward0": lambda t: t.masked_fill(t.detach() > 0, 1.5),
    "GeluBackward0": F.gelu, "NativeDropoutBackward0": lambda t: torch.native_dropout(
        t, 0.3, True)[0],
    "LerpBackward0": lambda t: torch.lerp(t, t.detach() * 2, 0.3),
}
POSITIVE: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "LogBackward0": torch.log, "SqrtBackward0": torch.sqrt, "RsqrtBackward0": torch.rsqrt,
    "ReciprocalBackward0": torch.reciprocal, "Log2Backward0": torch.log2,
    "Log10Backward0": torch.log10, "Log1PBackward0": torch.log1p,
    "AcoshBackward0": lambda t: torch.acosh(t + 1.0), "LgammaBackward0": torch.lgamma,
    "I0Backward0": torch.i0,
}
UNIT: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "AsinBackward0": torch.asin, "AcosBackward0": torch.acos, "AtanhBackward0": torch.atanh,
    "ErfinvBackward0": torch.erfinv, "LogitBackward0": lambda t: torch.logit(t.abs()),
}
BINARY: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "AddBackward0": lambda a, b: torch.add(a, b, alpha=2),
    "SubBackward0": lambda a, b: torch.sub(a, b, alpha=3),
    "RsubBackward0": lambda a, b: torch.rsub(a, b, alpha=2),
    "MulBackward0": torch.mul,
    "DivBackward0": lambda a, b: a / (b.abs() + 0.5),
    "PowBackward1": lambda a, b: (a.abs() + 0.5) ** b,
    "MaximumBackward0": torch.maximum, "MinimumBackward0": torch.minimum,
    "Atan2Backward0": torch.atan2, "HypotBackward0": torch.hypot,
    "WhereBackward0": lambda a, b: torch.where(a.detach() > 0, a, b),
    "LerpBackward1": lambda a, b: torch.lerp(a, b, torch.rand_like(b).requires_grad_()),
    "AddcmulBackward0": lambda a, b: torch.addcmul(a, b, b * 1.5, value=0.7),
    "AddcdivBackward0": lambda a, b: torch.addcdiv(a, b, b.abs() + 1, value=0.7),
    "PreluKernelBackward0": lambda a, b: torch.ops.aten._prelu_kernel(a, b),
}


def _lstm(mode: str) -> torch.Tensor:
    cls = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU, "rnn": torch.nn.RNN}[mode]
    net = cls(5, 4)  # float32: a float64 RNN is decomposed into small ops, not one mkldnn node
    h0 = torch.randn(1, 2, 4, requires_grad=True)
    state = (h0, torch.randn(1, 2, 4, requires_grad=True)) if mode == "lstm" else h0
    out, hn = net(torch.randn(3, 2, 5, requires_grad=True), state)
    hn = hn if mode != "lstm" else hn[0] * 2 + hn[1]
    return out.sum() + hn.sum()


def _sdpa(causal: bool = True, mask: bool = False) -> torch.Tensor:
    q, k, v = r(2, 2, 5, 8), r(2, 2, 6, 8), r(2, 2, 6, 8)
    m = torch.rand(5, 6) > 0.3 if mask else None
    if mask:
        m[:, 0] = True
    return F.scaled_dot_product_attention(q, k, v, attn_mask=m, is_causal=causal)


def _bn(train: bool) -> torch.Tensor:
    bn = torch.nn.BatchNorm2d(3).double()
    bn.train(train)
    if not train:
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
    return bn(r(4, 3, 5, 5))


OTHER: dict[str, Callable[[], torch.Tensor]] = {
    "TBackward0": lambda: r(3, 4).t(),
    "TransposeBackward0": lambda: r(2, 3, 4).transpose(0, 2),
    "PermuteBackward0": lambda: r(2, 3, 4).permute(2, 0, 1),
    "ViewBackward0": lambda: r(2, 3, 4).view(6, 4),
    "UnsafeViewBackward0": lambda: torch.ops.aten._unsafe_view(r(2, 3, 4) * 1, [4, 6]),
    "ReshapeAliasBackward0": lambda: torch.ops.aten._reshape_alias(r(2, 3, 4) * 1, [6, 4],
                                                                    [4, 1]),
    "SqueezeBackward0": lambda: r(2, 1, 3).squeeze(),
    "SqueezeBackward1": lambda: r(2, 1, 3).squeeze(1),
    "SqueezeBackward2": lambda: r(1, 2, 1, 3).squeeze((0, 2)),
    "UnsqueezeBackward0": lambda: r(2, 3).unsqueeze(1),
    "AliasBackward0": lambda: torch.ops.aten.alias(r(2, 3)),
    "CloneBackward0": lambda: r(2, 3).clone(),
    "ToCopyBackward0": lambda: r(2, 3).float().double(),
    "ExpandBackward0": lambda: r(3, 1).expand(2, 3, 4),
    "RepeatBackward0": lambda: r(2, 3).repeat(2, 1, 3),
    "SelectBackward0": lambda: r(2, 3, 4)[:, 1],
    "SliceBackward0": lambda: r(2, 7, 4)[:, 1:6:2],
    "IndexBackward0": lambda: r(4, 3, 5)[torch.tensor([0, 2, 2])][:, :, torch.tensor([1, 1, 4])],
    "IndexSelectBackward0": lambda: r(4, 5).index_select(1, torch.tensor([0, 3, 3])),
    "GatherBackward0": lambda: r(3, 5).gather(1, torch.randint(0, 5, (3, 4))),
    "ScatterAddBackward0": lambda: r(3, 5).scatter_add(1, torch.randint(0, 5, (3, 4)), r(3, 4)),
    "ScatterBackward0": lambda: r(3, 5).scatter(1, torch.tensor([[0, 2], [1, 3], [4, 0]]),
                                                r(3, 2)),
    "IndexAddBackward0": lambda: r(3, 5).index_add(1, torch.tensor([0, 2, 2]), r(3, 3),
                                                   alpha=2),
    "MaskedSelectBackward0": lambda: r(3, 4).masked_select(torch.rand(4) > 0.4),
    "FlipBackward0": lambda: r(3, 4).flip(1),
    "RollBackward0": lambda: r(3, 4).roll((1, -2), (0, 1)),
    "TrilBackward0": lambda: r(4, 4).tril(1),
    "TriuBackward0": lambda: r(4, 4).triu(-1),
    "DiagonalBackward0": lambda: r(2, 4, 5).diagonal(1, 1, 2),
    "ConstantPadNdBackward0": lambda: F.pad(r(2, 3, 4), (1, 2, 0, 1)),
    "TraceBackward0": lambda: torch.trace(r(3, 4)),
    "SumBackward0": lambda: r(3, 4).sum(),
    "SumBackward1": lambda: r(2, 3, 4).sum((0, 2)),
    "MeanBackward0": lambda: r(3, 4).mean(),
    "MeanBackward1": lambda: r(2, 3, 4).mean(-1, keepdim=True),
    "ProdBackward0": lambda: r(3, 4).prod(),
    "ProdBackward1": lambda: r(3, 4).prod(1),
    "MaxBackward0": lambda: r(3, 4).max(1)[0],
    "MinBackward0": lambda: r(3, 4).min(0, keepdim=True)[0],
    "MaxBackward1": lambda: r(3, 4).max(),
    "MinBackward1": lambda: r(3, 4).min(),
    "AmaxBackward0": lambda: r(3, 4).round().amax(1),
    "AminBackward0": lambda: r(3, 4).round().amin(0, keepdim=True),
    "LogsumexpBackward0": lambda: r(3, 4).logsumexp(1),
    "LinalgVectorNormBackward0": lambda: torch.linalg.vector_norm(r(3, 4), 3, 1),
    "VarBackward0": lambda: r(3, 4).var(1),
    "StdBackward0": lambda: r(3, 4).std(0, correction=0),
    "CumsumBackward0": lambda: r(3, 4).cumsum(1),
    "MmBackward0": lambda: r(5, 3) @ r(3, 4),
    "AddmmBackward0": lambda: torch.addmm(r(4), r(5, 3), r(3, 4), beta=2, alpha=3),
    "BmmBackward0": lambda: torch.bmm(r(2, 5, 3), r(2, 3, 4)),
    "BaddbmmBackward0": lambda: torch.baddbmm(r(5, 4), r(2, 5, 3), r(2, 3, 4), beta=0.5,
                                              alpha=2),
    "MvBackward0": lambda: torch.mv(r(3, 4), r(4)),
    "DotBackward0": lambda: torch.dot(r(4), r(4)),
    "AddmvBackward0": lambda: torch.addmv(r(1), r(3, 4), r(4), beta=2, alpha=0.5),
    "AddrBackward0": lambda: torch.addr(r(3, 4), r(3), r(4), beta=2, alpha=0.5),
    "CatBackward0": lambda: torch.cat([r(2, 3), r(2, 1), r(2, 4)], 1),
    "StackBackward0": lambda: torch.stack([r(2, 3), r(2, 3), r(2, 3)], 1),
    "SplitBackward0": lambda: r(5, 3).split(2, 0)[1],
    "SplitWithSizesBackward0": lambda: r(5, 3).split([1, 4], 0)[1],
    "UnbindBackward0": lambda: r(3, 4).unbind(1)[2],
    "NativeLayerNormBackward0": lambda: F.layer_norm(r(2, 3, 6), (3, 6), r(3, 6), r(3, 6)),
    "NativeBatchNormBackward0": lambda: _bn(True),
    "ConvolutionBackward0": lambda: F.conv2d(r(2, 4, 7, 6), r(6, 2, 3, 2), r(6), stride=(2, 1),
                                             padding=1, dilation=(1, 2), groups=2),
    "EmbeddingBackward0": lambda: F.embedding(torch.tensor([[1, 2, 1], [0, 4, 1]]), r(5, 3),
                                              padding_idx=0),
    "NllLossBackward0": lambda: F.nll_loss(r(4, 5), torch.tensor([1, 0, 4, 1]),
                                           weight=torch.rand(5, dtype=D), ignore_index=4),
    "NllLoss2DBackward0": lambda: F.nll_loss(r(2, 3, 2, 2), torch.randint(0, 3, (2, 2, 2))),
    "MseLossBackward0": lambda: F.mse_loss(r(3, 4), r(3, 4)),
    "SmoothL1LossBackward0": lambda: F.smooth_l1_loss(r(3, 4), r(3, 4), beta=0.5),
    "HuberLossBackward0": lambda: F.huber_loss(r(3, 4), r(3, 4), reduction="sum", delta=0.7),
    "BinaryCrossEntropyBackward0": lambda: F.binary_cross_entropy(
        torch.rand(3, 4, dtype=D).clamp(0.05, 0.95).requires_grad_(), torch.rand(3, 4, dtype=D)),
    "BinaryCrossEntropyWithLogitsBackward0": lambda: F.binary_cross_entropy_with_logits(
        r(3, 4), torch.rand(3, 4, dtype=D), pos_weight=torch.rand(4, dtype=D) + 0.5),
    "MaxPool2DWithIndicesBackward0": lambda: F.max_pool2d(r(2, 3, 6, 6), 3, 2, 1),
    "AvgPool2DBackward0": lambda: F.avg_pool2d(r(2, 3, 6, 5), 2, 2, 1),
    "ScaledDotProductFlashAttentionForCpuBackward0": _sdpa,
    "MkldnnRnnLayerBackward0": lambda: _lstm("lstm"),
}

#: Further programs for types already covered (other branches of the same formula).
EXTRA: list[tuple[str, Callable[[], torch.Tensor]]] = [
    ("GeluBackward0", lambda: F.gelu(r(3, 4), approximate="tanh")),
    ("EluBackward0", lambda: F.selu(r(3, 4))),
    ("NativeBatchNormBackward0", lambda: _bn(False)),
    ("ConvolutionBackward0", lambda: F.conv_transpose2d(r(2, 4, 5, 5), r(4, 3, 3, 3), r(3),
                                                        stride=2, padding=1)),
    ("ConvolutionBackward0", lambda: F.conv1d(r(2, 3, 9), r(4, 3, 3))),
    ("ScaledDotProductFlashAttentionForCpuBackward0", lambda: _sdpa(False, True)),
    ("ScaledDotProductFlashAttentionForCpuBackward0", lambda: F.scaled_dot_product_attention(
        r(2, 4, 5, 8), r(2, 2, 6, 8), r(2, 2, 6, 8), scale=0.3, enable_gqa=True)),
    ("LinalgVectorNormBackward0", lambda: torch.linalg.vector_norm(r(3, 4))),
    ("LinalgVectorNormBackward0", lambda: torch.linalg.vector_norm(r(3, 4), 1, 0)),
    ("NllLossBackward0", lambda: F.nll_loss(r(4, 5), torch.tensor([1, 0, 4, 1]),
                                            reduction="sum")),
    ("EmbeddingBackward0", lambda: F.embedding(torch.tensor([1, 2, 1]), r(5, 3),
                                               scale_grad_by_freq=True)),
    ("AddBackward0", lambda: r(3, 1) + r(4)),
    ("MulBackward0", lambda: r(2, 3, 4) * r(4)),
    ("PowBackward1", lambda: torch.tensor([0.0, 1.0, 2.0], dtype=D, requires_grad=True)
     ** r(3).abs()),
    ("MaximumBackward0", lambda: torch.maximum(r(3).round(), r(3).round())),
    ("ClampBackward1", lambda: r(3, 4).clamp(min=0.2)),
]

def engine_reduce(v, fn, i):
    """What the engine's validate_outputs makes of raw output i: summed to the input's shape,
    cast to its dtype."""
    nxt, nr = fn.next_functions[i]
    if v is None or nxt is None:
        return v
    if v._is_zerotensor():
        v = torch.zeros(v.shape, dtype=v.dtype)
    shape = tuple(nxt._input_metadata[nr].shape)
    if tuple(v.shape) != shape:
        v = v.sum() if len(shape) == 0 else v.sum_to_size(shape)
    return v.to(nxt._input_metadata[nr].dtype)
