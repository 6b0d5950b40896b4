"""Random differentiable programs for the stepper's property tests.

A program is data (`Spec`): leaf shapes/dtypes, a list of `(op, a, b, p)` steps (operand `a` among
the four newest tensors, `b` anywhere, `p` a small parameter) and root choices.
`build(spec)` runs it deterministically (leaf values come from `spec.seed`), so the same spec can be
built twice: once for the stepper, once for recording the engine's real execution order with
pre-hooks during a plain `backward()` (which writes `.grad`, so it must not touch the first copy).

Every op accepts operands of any shape: `fit(t, shape)` reshapes/slices/repeats a tensor into the
shape an op needs (which adds view, slice and repeat nodes of its own). Operand indices are taken
modulo the pool size, so any drawn spec builds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from hypothesis import strategies as st


# --------------------------------------------------------------------------- custom Functions
def raising(exc: type[Exception], message: str) -> type[torch.autograd.Function]:
    """A custom Function "Boom" (node "BoomBackward") that doubles its input in forward and
    whose backward raises `exc(message)`: a backward that fails inside the user's own code."""

    class Boom(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise exc(message)

    return Boom


class Scale(torch.autograd.Function):
    """Non-tensor forward arguments (a float and a string) and a ctx attribute."""

    @staticmethod
    def forward(ctx, x, k: float, tag: str):
        ctx.k = k
        return x * k

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None, None


class TwoOut(torch.autograd.Function):
    """Two outputs; programs often use only one, so the other slot stays empty (zeros)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin(), x * 2

    @staticmethod
    def backward(ctx, g1, g2):
        (x,) = ctx.saved_tensors
        return g1 * x.cos() + g2 * 2


class NoMaterialize(torch.autograd.Function):
    """set_materialize_grads(False): receives None for empty slots and must cope."""

    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x * 3, x + 1

    @staticmethod
    def backward(ctx, g1, g2):
        if g1 is None and g2 is None:
            return None
        out = torch.zeros_like(g1 if g1 is not None else g2)
        if g1 is not None:
            out = out + g1 * 3
        if g2 is not None:
            out = out + g2
        return out


class HalfNone(torch.autograd.Function):
    """Returns None for its second tensor input although it requires grad."""

    @staticmethod
    def forward(ctx, a, b):
        return a * 2 + b.detach()

    @staticmethod
    def backward(ctx, g):
        return g * 2, None


# --------------------------------------------------------------------------- helpers
def fit(t: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """A differentiable tensor of exactly `shape` made from `t`'s elements."""
    n = math.prod(shape)
    f = t.reshape(-1)
    if f.numel() < n:
        f = f.repeat(-(-n // f.numel()))
    if f.numel() > n:
        f = f[:n]
    return f.reshape(shape)


def bcast(b: torch.Tensor, shape: tuple[int, ...], p: int) -> torch.Tensor:
    """`b` fitted to a shape that broadcasts against `shape` (pattern chosen by `p`)."""
    patterns = [shape, shape[-1:], (), (1, *shape[1:]) if len(shape) > 1 else shape]
    return fit(b, patterns[p % len(patterns)])


def _dim(t: torch.Tensor, p: int) -> int:
    return p % max(t.dim(), 1) if t.dim() else 0


def _promote(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return b.to(a.dtype) if b.dtype != a.dtype else b


Op = Callable[[torch.Tensor, torch.Tensor, int], torch.Tensor | list[torch.Tensor]]


def _inplace(a: torch.Tensor, b: torch.Tensor, p: int) -> torch.Tensor:
    y = (a * 1.0).contiguous()  # a fresh non-leaf nobody saved: in-place ops on it are legal
    kind = p % 4
    if kind == 0:
        y.mul_(1.5)
    elif kind == 1:
        y.add_(_promote(y, bcast(b, tuple(y.shape), p // 4)))
    elif kind == 2:
        y.relu_()
    else:
        flat = y.view(-1)
        flat[0:1] = _promote(y, fit(b, (1,)))  # CopySlices
    return y


def _index(a: torch.Tensor, b: torch.Tensor, p: int) -> torch.Tensor:
    f = a.reshape(-1)
    idx = torch.tensor([(p * 7 + i * 3) % f.numel() for i in range(5)])
    return f[idx]  # repeated indices: gradients accumulate in the scatter


def _gather(a: torch.Tensor, b: torch.Tensor, p: int) -> torch.Tensor:
    m = fit(a, (3, 4))
    idx = torch.tensor([[(p + i + j) % 4 for j in range(2)] for i in range(3)])
    return m.gather(1, idx)


def _split(a: torch.Tensor, b: torch.Tensor, p: int) -> list[torch.Tensor]:
    parts = a.reshape(-1).split(max(1, a.numel() // 3))
    return [parts[p % len(parts)]] if p % 2 else [parts[0], parts[-1]]


def _unbind(a: torch.Tensor, b: torch.Tensor, p: int) -> torch.Tensor:
    rows = fit(a, (3, max(1, a.numel() // 3))).unbind(0)
    return rows[p % 3] * rows[(p + 1) % 3]


def _cross_entropy(a: torch.Tensor, b: torch.Tensor, p: int) -> torch.Tensor:
    logits = fit(a, (4, 5))
    target = torch.tensor([(p + i) % 5 for i in range(4)])
    return F.cross_entropy(logits, target)


def _layer_norm(a: torch.Tensor, b: torch.Tensor, p: int) -> torch.Tensor:
    x = fit(a, (3, 4))
    w = _promote(x, fit(b, (4,)))
    return F.layer_norm(x, (4,), weight=w if p % 2 else None, bias=w * 0.5 if p % 3 else None)


def _conv1d(a: torch.Tensor, b: torch.Tensor, p: int) -> torch.Tensor:
    x = fit(a, (1, 2, 8))
    return F.conv1d(x, _promote(x, fit(b, (3, 2, 3))), padding=p % 2)


def _conv2d(a: torch.Tensor, b: torch.Tensor, p: int) -> torch.Tensor:
    x = fit(a, (1, 1, 5, 5))
    return F.conv2d(x, _promote(x, fit(b, (2, 1, 3, 3))), stride=1 + p % 2)


def _custom(a: torch.Tensor, b: torch.Tensor, p: int) -> torch.Tensor | list[torch.Tensor]:
    kind = p % 4
    if kind == 0:
        return Scale.apply(a, 0.5 + p % 3, "tag")
    if kind == 1:
        s, d = TwoOut.apply(a)
        return [s] if p % 8 < 4 else [s, d]
    if kind == 2:
        u, v = NoMaterialize.apply(a)
        return [u] if p % 8 < 4 else [v]
    return HalfNone.apply(a, _promote(a, bcast(b, tuple(a.shape), p)))


OPS: dict[str, Op] = {
    # elementwise, binary with broadcasting
    "add": lambda a, b, p: a + _promote(a, bcast(b, tuple(a.shape), p)),
    "sub": lambda a, b, p: a - _promote(a, bcast(b, tuple(a.shape), p)),
    "mul": lambda a, b, p: a * _promote(a, bcast(b, tuple(a.shape), p)),
    "div": lambda a, b, p: a / (1 + _promote(a, bcast(b, tuple(a.shape), p)) ** 2),
    "maximum": lambda a, b, p: torch.maximum(a, _promote(a, bcast(b, tuple(a.shape), p))),
    "where": lambda a, b, p: torch.where(a > 0, a, _promote(a, bcast(b, tuple(a.shape), p))),
    "mix_dtype": lambda a, b, p: a.double() * bcast(b, tuple(a.shape), p).float(),
    # elementwise, unary
    "tanh": lambda a, b, p: a.tanh(),
    "sigmoid": lambda a, b, p: a.sigmoid(),
    "relu": lambda a, b, p: a.relu(),
    "sin": lambda a, b, p: a.sin(),
    "exp_tanh": lambda a, b, p: a.tanh().exp(),
    "square_twice": lambda a, b, p: a * a,
    "pow": lambda a, b, p: a.pow(2 + p % 2),
    "abs": lambda a, b, p: (a + 0.1).abs(),
    "clamp": lambda a, b, p: a.clamp(-0.5, 0.5),
    "leaky_relu": lambda a, b, p: F.leaky_relu(a, 0.1),
    "to_float": lambda a, b, p: a.float() * 1.5,
    # reductions
    "sum_dim": lambda a, b, p: a.sum(_dim(a, p), keepdim=bool(p % 2)),
    "mean_dim": lambda a, b, p: a.mean(_dim(a, p)),
    "amax": lambda a, b, p: a.amax(_dim(a, p)),
    "logsumexp": lambda a, b, p: a.logsumexp(_dim(a, p)),
    "var": lambda a, b, p: a.var(_dim(a, p), correction=0),
    "sum_all": lambda a, b, p: a.sum(),
    # linear algebra
    "matmul": lambda a, b, p: (lambda m: m @ _promote(m, fit(b, (m.shape[-1], 2 + p % 3))))(
        a.reshape(-1, a.shape[-1]) if a.dim() else a.reshape(1, 1)
    ),
    "bmm": lambda a, b, p: (lambda x: torch.bmm(x, _promote(x, fit(b, (2, 4, 2)))))(
        fit(a, (2, 3, 4))
    ),
    "einsum": lambda a, b, p: (lambda x: torch.einsum("ij,kj->ik", x, _promote(x, fit(b, (2, 4)))))(
        fit(a, (3, 4))
    ),
    # views and indexing
    "transpose": lambda a, b, p: a.transpose(0, -1) if a.dim() > 1 else a * 1.0,
    "permute": lambda a, b, p: fit(a, (2, 3, 2)).permute(2, 0, 1),
    "slice": lambda a, b, p: a.reshape(-1)[p % 2 :: 2] if a.numel() > 1 else a * 2,
    "index": _index,
    "gather": _gather,
    "expand": lambda a, b, p: fit(a, (1, 3)).expand(4, 3) * 1.0,
    "flip": lambda a, b, p: a.flip(0) if a.dim() else a * 1.0,
    # joining and splitting
    "cat": lambda a, b, p: torch.cat([a.reshape(-1), _promote(a, b).reshape(-1)]),
    "stack": lambda a, b, p: torch.stack([fit(a, (2, 3)), _promote(a, fit(b, (2, 3)))]),
    "split": _split,
    "unbind": _unbind,
    # nn
    "softmax": lambda a, b, p: a.softmax(_dim(a, p)),
    "log_softmax": lambda a, b, p: a.log_softmax(_dim(a, p)),
    "cross_entropy": _cross_entropy,
    "layer_norm": _layer_norm,
    "conv1d": _conv1d,
    "conv2d": _conv2d,
    # in-place on non-leaves, custom Functions
    "inplace": _inplace,
    "custom": _custom,
}

LEAF_SHAPES = [(3, 4), (4,), (2, 3, 4), (4, 4), (5,), ()]


@dataclass(frozen=True)
class Spec:
    seed: int
    leaves: tuple[tuple[tuple[int, ...], str], ...]
    steps: tuple[tuple[str, int, int, int], ...]
    #: Extra roots: (pool index, explicit grad_output?) besides the final scalar loss.
    extra_roots: tuple[tuple[int, bool], ...]


@dataclass
class Program:
    leaves: list[torch.Tensor]
    roots: list[torch.Tensor]
    grad_outputs: list[torch.Tensor | None]
    #: Every non-leaf tensor the program made (candidates for `grad(t)` checks).
    nonleaves: list[torch.Tensor] = field(default_factory=list)


def build(spec: Spec) -> Program:
    gen = torch.Generator().manual_seed(spec.seed)
    leaves = [
        (torch.rand(shape, generator=gen, dtype=getattr(torch, dt)) * 2 - 1).requires_grad_()
        for shape, dt in spec.leaves
    ]
    pool: list[torch.Tensor] = list(leaves)
    nonleaves: list[torch.Tensor] = []
    for name, i, j, p in spec.steps:
        # `a` is one of the 4 newest tensors, so most ops end up feeding the final root.
        a, b = pool[-1 - i % min(4, len(pool))], pool[j % len(pool)]
        out = OPS[name](a, b, p)
        for t in out if isinstance(out, list) else [out]:
            pool.append(t)
            nonleaves.append(t)
    last = pool[-1]
    roots = [last.sum() if last.dim() else last * 1.0]
    grad_outputs: list[torch.Tensor | None] = [None]
    for idx, explicit in spec.extra_roots:
        t = pool[idx % len(pool)]
        if t.grad_fn is None:  # a leaf as an extra root: fine for the engine, keep it simple
            t = t * 1.0
        if explicit or t.numel() != 1:
            roots.append(t)
            grad_outputs.append(torch.rand(t.shape, generator=gen, dtype=t.dtype) - 0.5)
        else:
            roots.append(t.reshape(()) * 2.0)
            grad_outputs.append(None)
    return Program(leaves, roots, grad_outputs, nonleaves)


@st.composite
def specs(draw: st.DrawFn, max_steps: int = 20) -> Spec:
    n_leaves = draw(st.integers(1, 3))
    leaves = tuple(
        (draw(st.sampled_from(LEAF_SHAPES)), draw(st.sampled_from(["float32", "float64"])))
        for _ in range(n_leaves)
    )
    names = sorted(OPS)
    steps = tuple(
        (
            draw(st.sampled_from(names)),
            draw(st.integers(0, 30)),
            draw(st.integers(0, 30)),
            draw(st.integers(0, 15)),
        )
        for _ in range(draw(st.integers(min(3, max_steps), max_steps)))
    )
    extra = tuple(
        (draw(st.integers(0, 40)), draw(st.booleans())) for _ in range(draw(st.integers(0, 2)))
    )
    return Spec(draw(st.integers(0, 2**31 - 1)), leaves, steps, extra)
