"""Probes: ask a backward node for more than the one product plain backward asks it for.

The engine calls each node once, with the gradient that happened to arrive, so all it ever
computes is one vector-Jacobian product per node: how large the node's Jacobian is (how much it
can amplify or squash ANY incoming gradient) is out of reach of `torch.autograd.grad`. The
stepper calls nodes by hand, so it can call a node again, with gradients of our choosing, without
disturbing anything (node calls free nothing, write no `.grad`, bump no version: see
DESIGN.md, "What direct calls do and don't do").

The map a node computes, from its incoming gradients (every input slot, concatenated) to what it
sends along its edges (after the engine's `sum_to_size`/cast, so only towards inputs that need
grad), is linear: the transpose `J^T` of the forward op's Jacobian restricted to those inputs.
Its squared Frobenius norm equals the forward Jacobian's. We measure it two ways:

- exactly, for small nodes (at most `exact_max` real input elements): call the node with each
  basis vector; the sum of the squared outputs is `||J||_F^2`;
- by Hutchinson's identity `E_v ||J^T v||^2 = ||J||_F^2` for Rademacher `v` (entries +-1, so
  `E[v v^T] = I`): the mean over `samples` calls, with the standard error of that mean. A
  Rademacher `v` has zero variance on diagonal Jacobians (elementwise ops): every sample gives
  the exact value, so their stderr is 0 even though `exact` is False.

Complex gradients are treated as real vectors of twice the length (real and imaginary parts),
the only reading under which backward's conjugate-linear maps have a Frobenius norm.

Samples are batched with `torch.func.vmap` over the node call for built-in nodes (one batched
kernel instead of `samples` calls); a node type whose call does not vmap (or vmaps to a different
value on its first check) falls back to a Python loop, remembered per node type for the process.
Custom Functions (user Python) and C++ custom Functions are always looped: their backward may do
anything vmap cannot see.
"""

from __future__ import annotations

import hashlib
import math
import os
import warnings
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

import torch
import torch.func

from ...core.checkpoint import transient_group
from ...core.records import Node
from ...util.dtypes import dtype_from_name
from ...util.jsonsafe import encode_float
from .calls import apply_custom, validate
from .plan import ACCUMULATE, CUSTOM, FUNCTION, REGION, node_id
from .recompute import node_frames

if TYPE_CHECKING:
    from .stepper import Stepper

__all__ = ["EXACT_MAX", "VMAP_BYTES", "JacobianNorm", "jacobian_norms"]

#: Nodes with at most this many real input-slot elements get the exact norm (one call per basis
#: vector: at most this many calls, about the cost of a few Hutchinson batches).
EXACT_MAX = 64

#: Bytes a batched (vmapped) call may hold at once per node: samples are split into chunks above.
VMAP_BYTES = 64 << 20

#: Node type name -> does a vmapped call work and agree with a plain call (checked once).
_vmap_ok: dict[str, bool] = {}


class JacobianNorm(NamedTuple):
    """Squared Frobenius norm of one node's gradient map: `(estimate, stderr, exact)`.

    `exact` True: computed from every basis vector (stderr 0.0). Otherwise a Hutchinson
    estimate with the standard error of its mean over the samples.

    Example:
        >>> JacobianNorm(4.0, 0.0, True).norm
        2.0
    """

    estimate: float
    stderr: float
    exact: bool

    @property
    def norm(self) -> float:
        """The Frobenius norm itself (square root of the estimate)."""
        return math.sqrt(max(self.estimate, 0.0))

    def as_dict(self) -> dict[str, Any]:
        """JSON-safe, with the log10 a view shades by (None for a zero map).

        Example:
            >>> JacobianNorm(100.0, 0.0, True).as_dict()["log10"]
            2.0
        """
        est = self.estimate
        return {
            "estimate": encode_float(est),
            "stderr": encode_float(self.stderr),
            "exact": self.exact,
            "log10": math.log10(est) if est > 0 and math.isfinite(est) else None,
        }


# --------------------------------------------------------------------------- one node's map
def _sqnorm(g: torch.Tensor) -> torch.Tensor:
    """Sum of squares of a gradient, in float64 (complex: real and imaginary parts)."""
    if g.layout is not torch.strided:
        g = g.to_dense()
    if g.is_complex():
        return _sqnorm(g.real) + _sqnorm(g.imag)
    acc = torch.float32 if g.device.type == "mps" else torch.float64  # no float64 on MPS
    # Squares summed in float64 (not vector_norm(...)**2, whose sqrt rounds: 11.999999999999998
    # for an exact 12): exact for the +-1 and 0/1 vectors the probes feed to linear maps.
    return g.to(acc, copy=True).square_().sum()


class _NodeMap:
    """One node's gradient map `incoming grads -> sum of squares of its routed outputs`, built
    from the stepper's plan so it is exactly what a step does (same call, same reduction)."""

    def __init__(self, stepper: Stepper, k: int, fn: Any) -> None:
        plan = stepper.plan
        self.kind = plan.kind[k]
        self.routes = plan.routes[k]
        self.name = plan.names[k]
        # Checkpointed saved values unpack once per group: each call gets a group of its own
        # (one recompute, nothing kept), looped (a recompute under vmap is not batched).
        frames = node_frames(fn, stepper.graph.nodes[plan.order[k]].kind)
        self.vmappable = self.kind == FUNCTION and not frames
        custom = plan.custom.get(k) if self.kind == CUSTOM else None
        validate_ = validate
        routes, name = self.routes, self.name

        def call(*vs: torch.Tensor) -> torch.Tensor:
            with transient_group(frames):
                out = apply_custom(custom, fn, list(vs)) if custom is not None else fn(*vs)
            if type(out) is not tuple:
                out = (out,)
            parts = []
            for onr, _ei, _s, shape, dtype, dev in routes:
                g = out[onr]
                if g is not None:
                    parts.append(_sqnorm(validate_(g, shape, dtype, dev, name, onr)))
            if not parts:
                return torch.zeros((), dtype=torch.float64)
            dev0 = parts[0].device
            return torch.stack([p.to(dev0) for p in parts]).sum()

        self.call = call

    def out_bytes(self) -> int:
        return sum(math.prod(shape) * dtype.itemsize for *_, shape, dtype, _dev in self.routes)

    def batch(self, vs: list[torch.Tensor], n: int, chunk: int | None) -> torch.Tensor:
        """`call` on each of the `n` rows of the stacked slot tensors `vs`: a float64 [n]."""
        if self.vmappable and _vmap_ok.get(self.name, True):
            try:
                with warnings.catch_warnings():
                    # vmap's "no batching rule, falling back to a loop" performance warning
                    warnings.simplefilter("ignore")
                    got = torch.func.vmap(self.call, chunk_size=chunk)(*vs)
            except Exception:
                got = None
            if got is not None:
                if self.name in _vmap_ok:
                    return got
                # First use of this node type: check the batched call against a plain one.
                one = self.call(*(v[0] for v in vs))
                ok = bool(torch.allclose(got[0], one.to(got.device), 1e-4, 1e-12, equal_nan=True))
                _vmap_ok[self.name] = ok
                if ok:
                    return got
            looped = self._loop(vs, n)  # raises if the node itself cannot be called
            _vmap_ok[self.name] = False
            return looped
        return self._loop(vs, n)

    def _loop(self, vs: list[torch.Tensor], n: int) -> torch.Tensor:
        vals = [self.call(*(v[i] for v in vs)) for i in range(n)]
        dev = vals[0].device
        return torch.stack([v.to(dev) for v in vals])


# --------------------------------------------------------------------------- random vectors
def _real_dims(meta: Any) -> int:
    n = math.prod(meta.shape)
    return 2 * n if _dtype_of(meta).is_complex else n


def _dtype_of(meta: Any) -> torch.dtype:
    return dtype_from_name(meta.dtype)


def _rademacher(
    n: int, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device, gen: torch.Generator
) -> torch.Tensor:
    """`n` Rademacher vectors of `shape` (entries +-1), drawn on the CPU generator `gen`."""

    def signs() -> torch.Tensor:
        bits = torch.randint(0, 2, (n, *shape), generator=gen, dtype=torch.int8)
        return bits.to(dtype.to_real()).mul_(2).sub_(1)

    v = torch.complex(signs(), signs()) if dtype.is_complex else signs()
    return v.to(device=device, dtype=dtype)


def _basis(metas: list, dims: int) -> list[torch.Tensor]:
    """The `dims` real basis vectors of the concatenated slot space, split into slots."""
    out = []
    row = 0
    for m in metas:
        dtype, shape = _dtype_of(m), tuple(m.shape)
        n = math.prod(shape)
        real = dtype.to_real()
        re = torch.zeros(dims, n, dtype=real)
        re[row : row + n] = torch.eye(n, dtype=real)
        row += n
        if dtype.is_complex:
            im = torch.zeros(dims, n, dtype=real)
            im[row : row + n] = torch.eye(n, dtype=real)
            row += n
            re = torch.complex(re, im)
        out.append(re.reshape(dims, *shape).to(device=torch.device(m.device), dtype=dtype))
    return out


def _node_seed(seed: int, nid: str) -> int:
    """A per-node seed: a node's samples do not depend on which other nodes are probed."""
    h = hashlib.blake2b(f"{seed}:{nid}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") & (2**63 - 1)


# --------------------------------------------------------------------------- the probe
def _node_ids(stepper: Stepper, nodes: Any) -> list[str]:
    plan = stepper.plan
    if nodes is None:
        return list(plan.order)
    if isinstance(nodes, (str, Node)):
        nodes = [nodes]
    if not isinstance(nodes, Iterable):
        raise TypeError(
            f"nodes must be None, a node id, a Node record or an iterable of them, got "
            f"{type(nodes).__name__}"
        )
    ids = [node_id(n) for n in nodes]
    for nid in ids:
        stepper.step_index(nid)  # a clear KeyError for an unknown id
    return list(dict.fromkeys(ids))


def jacobian_norms(
    stepper: Stepper,
    nodes: Any = None,
    samples: int = 16,
    seed: int | None = None,
    *,
    exact_max: int = EXACT_MAX,
) -> tuple[dict[str, JacobianNorm], dict[str, str]]:
    """(results, errors) for `Stepper.jacobian_norms`: node id -> `JacobianNorm`, node id -> error.

    The map is what the node computes in a step: its incoming gradients (all input slots,
    concatenated) -> the gradients it sends along its edges, after the engine's
    `sum_to_size`/cast, i.e. its Jacobian restricted to the inputs that need grad. Plain
    backward only ever evaluates this map once, at the gradient that flowed; here the node is
    called again with gradients of our choosing: every basis vector for nodes with at most
    `exact_max` (default `probes.EXACT_MAX` = 64) real input elements (`exact=True`, stderr
    0.0), else `samples` Rademacher vectors (Hutchinson: `E ||J^T v||^2 = ||J||_F^2`), batched
    with `torch.func.vmap` where the node allows it. AccumulateGrad nodes are the identity
    (norm = numel, exact).

    Args:
        stepper: the stepper whose plan and graph to probe (it is only read).
        nodes: ids or `Node` records (default: every node, in step order).
        samples: Rademacher vectors per estimated node (>= 2).
        seed: makes the result deterministic (per node: probing a subset gives the same
            numbers); `None` draws one from the OS (torch's global RNG is never touched).
        exact_max: the largest input size measured exactly.

    Guarantees: nothing is disturbed: the calls run under `no_grad`, apart from stepping
    (position, records, slot buffers and edits stay as they are), and node calls free
    nothing, write no `.grad` and bump no version counter. A node whose call fails (saved
    tensors freed by a `backward()` without `retain_graph`, or modified in place; a
    reentrant checkpoint) is left out of the result and listed in `stepper.probe_errors`
    (node id -> the error), which each call replaces: one bad node does not cost the others.

    Example:
        >>> jacobian_norms(st, ["n1", "n3"], seed=0)  # AccumulateGrad: identity, numel 1
        ({'n1': JacobianNorm(estimate=16.0, stderr=0.0, exact=True),
          'n3': JacobianNorm(estimate=1.0, stderr=0.0, exact=True)}, {})
    """
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 2:
        raise ValueError(
            f"samples must be an int >= 2 (a standard error needs two samples), got {samples!r}"
        )
    if isinstance(exact_max, bool) or not isinstance(exact_max, int) or exact_max < 0:
        raise ValueError(f"exact_max must be an int >= 0, got {exact_max!r}")
    if seed is None:
        seed = int.from_bytes(os.urandom(8), "little") >> 1  # leaves torch's global RNG alone
    elif isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int or None, got {type(seed).__name__}")
    ids = _node_ids(stepper, nodes)
    graph = stepper.graph
    fns = graph.require_live("call its nodes for Jacobian probes").fns
    plan = stepper.plan
    results: dict[str, JacobianNorm] = {}
    errors: dict[str, str] = {}
    gen = torch.Generator()
    with torch.no_grad():
        for nid in ids:
            k = plan.step_of[nid]
            node = graph.node(nid)
            if plan.kind[k] == REGION:
                errors[nid] = (f"{nid} ({node.name}) is a step of an open compiled region: not "
                               "probed (a Stepper with regions='closed' probes the region's node)")
                continue
            metas = node.inputs
            dims = sum(_real_dims(m) for m in metas)
            if plan.kind[k] == ACCUMULATE:  # the identity on the leaf's gradient
                results[nid] = JacobianNorm(float(dims), 0.0, True)
                continue
            if not plan.routes[k] or dims == 0:  # sends nothing anywhere: the zero map
                results[nid] = JacobianNorm(0.0, 0.0, True)
                continue
            try:
                results[nid] = _probe(
                    _NodeMap(stepper, k, fns[plan.node_of[k]]),
                    metas,
                    dims,
                    samples,
                    exact_max,
                    lambda nid=nid: gen.manual_seed(_node_seed(seed, nid)),
                )
            except Exception as exc:
                errors[nid] = f"{type(exc).__name__} in {nid} ({node.name}): {exc}"
    return results, errors


def _probe(
    nm: _NodeMap,
    metas: list,
    dims: int,
    samples: int,
    exact_max: int,
    seeded: Callable[[], torch.Generator],
) -> JacobianNorm:
    in_bytes = sum(math.prod(m.shape) * _dtype_of(m).itemsize for m in metas)
    per_row = max(1, in_bytes + nm.out_bytes())
    if dims <= exact_max:
        chunk = max(1, VMAP_BYTES // per_row)
        vals = nm.batch(_basis(metas, dims), dims, chunk if chunk < dims else None)
        return JacobianNorm(float(vals.sum()), 0.0, True)
    gen = seeded()
    vs = [
        _rademacher(samples, tuple(m.shape), _dtype_of(m), torch.device(m.device), gen)
        for m in metas
    ]
    chunk = max(1, VMAP_BYTES // per_row)
    vals = nm.batch(vs, samples, chunk if chunk < samples else None).double().cpu()
    mean = float(vals.mean())
    stderr = float(vals.std(correction=1)) / math.sqrt(samples)
    return JacobianNorm(mean, stderr, False)
