"""Node calls: calling one backward node by hand exactly as the engine calls it.

What is guaranteed (DESIGN.md, "Calling a node by hand"): a custom Function is called the
way `PyNode::apply` calls it (zeros for empty slots unless the Function turned materialisation off,
the same result checks and error messages), a reentrant checkpoint is refused before it can write
`.grad`, and every gradient a node returns is passed through the engine's `validate_outputs`
(`validate`: reduced with `sum_to_size` to the destination's shape, cast to its dtype and device).

Two engine facts found while building this (DESIGN.md, "Calling a node by hand", has the
first), verified on torch 2.13:
- a built-in node whose slots all stayed empty returns nothing ("no gradient"), but the engine
  still invokes it, and the node unpacks its saved tensors first: a freed or stale saved tensor
  raises there (found by the fuzz tests: such a node is not skippable). So it is
  invoked here too (`call_empty`), and its step is recorded as no gradient. A custom Function in
  that state IS called by the engine (with zeros, unless it turned materialisation off) and its
  results flow on, so it is called here too;
- `ctx.set_materialize_grads(False)` is not readable from Python; we read the flag's byte in the
  node's C struct, at an offset found once per process on a probe node of our own (see
  `_calibrate_materialize`). Without it we would pass zeros, then None if the Function raises.
  Empty slots of non-differentiable outputs get zeros shaped like their (default, 0-d) metadata:
  the engine uses the real output shape, which Python cannot see; a backward that ignores those
  gradients (the normal case) sees no difference, one that uses them sees a broadcastable zero.

FSDP2's bookkeeping node (`RegisterPostBackwardFunctionBackward`) returns its gradients unchanged;
its Python backward also runs FSDP's post-backward (reduce-scatter, reshard), which is the engine's
business, not a step's: it is called as the pass-through it is (`CustomInfo.passthrough`), so
stepping leaves FSDP's state alone (engine/step/sharded.py).

`IN_STEP_CODES` names the functions here that run inside a step's rollback-protected block and may
raise on the user's behalf (their code runs under them): the Ctrl-C guard (guard.py) treats a
SIGINT landing in them as landing in the user's node, rolling the step back whole.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ...core.fsdp import is_post_backward
from ...core.records import Node
from ...util.dtypes import dtype_from_name

__all__ = [
    "IN_STEP_CODES",
    "CustomInfo",
    "apply_custom",
    "call_empty",
    "custom_info",
    "expandable",
    "validate",
]

# --------------------------------------------------------------------------- custom Functions
# The engine materialises empty slots of a custom Function as zeros unless the Function called
# `ctx.set_materialize_grads(False)`. That flag has a setter but no getter in Python, so we find
# its byte in the C struct (THPFunction) once per process by flipping it on a probe node of our
# own, and read it on user nodes. If the calibration is inconclusive (a future torch), we fall back
# to: zeros first, and None if the Function raises on zeros.
_materialize_offset: int | None = None
_materialize_calibrated = False


class _Probe(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:
        return g


def _calibrate_materialize() -> int | None:
    global _materialize_offset, _materialize_calibrated
    if _materialize_calibrated:
        return _materialize_offset
    _materialize_calibrated = True
    try:
        with torch.enable_grad():
            node = _Probe.apply(torch.zeros(1, requires_grad=True)).grad_fn
        size = torch._C._FunctionBase.__basicsize__
        head = object.__basicsize__  # refcount + type: may change under us, never the flag
        before = ctypes.string_at(id(node), size)
        node.set_materialize_grads(False)
        after = ctypes.string_at(id(node), size)
        diff = [i for i in range(head, size) if before[i] != after[i]]
        if len(diff) == 1 and before[diff[0]] == 1 and after[diff[0]] == 0:
            node.set_materialize_grads(True)
            if ctypes.string_at(id(node) + diff[0], 1)[0] == 1:
                _materialize_offset = diff[0]
    except Exception:
        _materialize_offset = None
    return _materialize_offset


def _materializes(fn: Any) -> bool | None:
    """Whether the engine would pass zeros (True) or None (False) for this node's empty slots."""
    off = _calibrate_materialize()
    if off is None:
        return None
    flag = ctypes.string_at(id(fn) + off, 1)[0]
    return bool(flag) if flag in (0, 1) else None


@dataclass(frozen=True)
class CustomInfo:
    """How to call one custom Function node and map its results back onto its edges.

    Built once per node by `custom_info` (when the plan is built); read by `apply_custom` at every
    call. Plain data: holds no node object (the stepper fetches nodes at call time).

    Example:
        >>> class Twice(torch.autograd.Function):
        ...     forward = staticmethod(lambda ctx, t: t * 2)
        ...     backward = staticmethod(lambda ctx, grad: grad * 2)
        >>> c = aw.capture(Twice.apply(x))  # n0 TwiceBackward, n1 AccumulateGrad(x)
        >>> info = custom_info(c.fn("n0"), c.nodes["n0"])
        >>> info.needs, info.valid, info.materialize, info.refuse
        ((True,), (0,), True, None)
    """

    name: str
    #: One entry per forward argument (tensor or not): does the engine want its gradient?
    needs: tuple[bool, ...]
    #: Output slots (next_functions indices) that lead somewhere, in order.
    valid: tuple[int, ...]
    n_outputs: int
    #: Forward-argument positions known to be non-tensors (a non-None result there is an error).
    nontensor: frozenset[int]
    #: True: zeros for empty slots; False: None; None: unknown (zeros, then None on error).
    materialize: bool | None
    zeros: tuple[tuple[tuple[int, ...], torch.dtype, torch.device], ...]
    #: Why this node must never be called by hand (None: it may be).
    refuse: str | None = None
    #: FSDP's `RegisterPostBackwardFunctionBackward`: its gradients pass through unchanged, and
    #: its Python backward (FSDP's post-backward: reduce-scatter, reshard) is not run by hand.
    passthrough: bool = False


def _reentrant_checkpoint(fn: Any, node: Node) -> str | None:
    """The refusal for a reentrant-checkpoint node: calling it would write `.grad`."""
    fwd = getattr(type(fn), "_forward_cls", None)
    if node.name != "CheckpointFunctionBackward" and getattr(fwd, "__name__", "") != (
        "CheckpointFunction"
    ):
        return None
    return (
        f"{node.id} ({node.name}) is reentrant activation checkpointing "
        "(torch.utils.checkpoint.checkpoint(..., use_reentrant=True)): its backward re-runs the "
        "forward and calls backward() inside, which writes .grad of the parameters it hides "
        "from this graph, so autograd_widget will not call it. Use "
        "checkpoint(..., use_reentrant=False), which is transparent (every recomputed node is "
        "visible and steppable), or capture without checkpointing."
    )


def custom_info(fn: Any, node: Node) -> CustomInfo:
    """How to call the custom Function node `fn` (whose record is `node`).

    Args:
        fn: the live autograd node (a `BackwardCFunction`).
        node: its `Node` record from the captured graph.

    Guarantees: a reentrant checkpoint gets `refuse` set (`apply_custom` then raises rather than
    call it); a node whose results cannot be mapped onto its edges raises RuntimeError here, when
    the plan is built, not in the middle of a run.

    Example:
        >>> class Twice(torch.autograd.Function):
        ...     forward = staticmethod(lambda ctx, t: t * 2)
        ...     backward = staticmethod(lambda ctx, grad: grad * 2)
        >>> c = aw.capture(Twice.apply(x))
        >>> custom_info(c.fn("n0"), c.nodes["n0"])
        CustomInfo(name='TwiceBackward', needs=(True,), valid=(0,), n_outputs=1, ...)
    """
    refuse = _reentrant_checkpoint(fn, node)
    needs = tuple(bool(b) for b in fn.needs_input_grad)
    nexts = fn.next_functions
    valid = tuple(i for i, (f, _) in enumerate(nexts) if f is not None)
    n_args, n_tensors = len(needs), len(nexts)
    n_false = sum(1 for b in needs if not b)
    if n_args == n_tensors:
        nontensor: frozenset[int] = frozenset()
    elif n_false == n_args - n_tensors:
        nontensor = frozenset(i for i, b in enumerate(needs) if not b)
    else:
        nontensor = frozenset()  # ambiguous: cannot tell non-tensors from tensors without grad
    if sum(needs) != len(valid):
        raise RuntimeError(
            f"custom Function node {node.id} ({node.name}) has {sum(needs)} inputs needing grad "
            f"but {len(valid)} outgoing edges; cannot map its backward results onto its edges"
        )
    zeros = tuple((m.shape, dtype_from_name(m.dtype), torch.device(m.device)) for m in node.inputs)
    return CustomInfo(
        node.name, needs, valid, n_tensors, nontensor, _materializes(fn), zeros, refuse,
        is_post_backward(fn),
    )


def _pass_through(*grads: Any) -> tuple:
    """What FSDP's `RegisterPostBackwardFunction.backward` returns, without its side effects."""
    return (None, *grads)


def apply_custom(info: CustomInfo, fn: Any, args: list) -> tuple:
    """Call a custom Function node like PyNode::apply does, with its result checks and messages.

    Args:
        info: the node's `CustomInfo` (from `custom_info`).
        fn: the live node.
        args: one gradient (or None) per input slot.

    Guarantees: returns one entry per `next_functions` slot (None where no gradient goes);
    raises the engine's own RuntimeError texts for a wrong number of results, a gradient for a
    non-tensor input or a non-tensor result, and `info.refuse` for a reentrant checkpoint.

    Example:
        >>> class Twice(torch.autograd.Function):
        ...     forward = staticmethod(lambda ctx, t: t * 2)
        ...     backward = staticmethod(lambda ctx, grad: grad * 2)
        >>> c = aw.capture(Twice.apply(x)); info = custom_info(c.fn("n0"), c.nodes["n0"])
        >>> apply_custom(info, c.fn("n0"), [torch.tensor(1.0)])
        (tensor(2.),)
        >>> apply_custom(info, c.fn("n0"), [None])  # an empty slot: zeros, like the engine
        (tensor(0.),)
    """
    if info.refuse is not None:
        raise RuntimeError(info.refuse)
    call = _pass_through if info.passthrough else fn.apply
    if info.materialize is False or all(a is not None for a in args):
        res = call(*args)
    else:
        filled = [
            torch.zeros(z[0], dtype=z[1], device=z[2]) if a is None else a
            for a, z in zip(args, info.zeros)
        ]
        if info.materialize:
            res = call(*filled)
        else:
            try:
                res = call(*filled)
            except Exception:
                res = call(*args)
    if not isinstance(res, tuple):
        res = (res,)
    nf = len(info.needs)
    if len(res) > nf and all(r is None for r in res[nf:]):
        res = res[:nf]
    if len(res) != nf:
        raise RuntimeError(
            f"function {info.name} returned an incorrect number of gradients (expected {nf}, "
            f"got {len(res)})"
        )
    out: list = [None] * info.n_outputs
    j = 0
    for pos, val in enumerate(res):
        if val is not None:
            if pos in info.nontensor:
                raise RuntimeError(
                    f"function {info.name} returned a gradient different than None at position "
                    f"{pos + 1}, but the corresponding forward input was not a Variable"
                )
            if not isinstance(val, torch.Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(val).__name__})")
        if info.needs[pos]:
            out[info.valid[j]] = val
            j += 1
    return tuple(out)


# --------------------------------------------------------------------------- engine checks
def expandable(shape: Sequence[int], to: Sequence[int]) -> bool:
    """at::is_expandable_to: can a tensor of `shape` broadcast to `to`?

    Args:
        shape: the smaller shape.
        to: the shape it should broadcast to.

    Guarantees: the same answer as ATen's check (trailing dimensions equal or 1).

    Example:
        >>> expandable((3, 1), (2, 3, 4))
        True
        >>> expandable((2,), (3,))
        False
    """
    ns, nt = len(shape), len(to)
    if ns > nt:
        return False
    for i in range(1, ns + 1):
        a, b = shape[ns - i], to[nt - i]
        if a != b and a != 1:
            return False
    return True


_COMPLEX_CHECK = (
    "Expected isFloatingType(grad.scalar_type()) || (input_is_complex == grad_is_complex) to be "
    "true, but got false.  (Could this error message be improved?  If so, please report an "
    "enhancement request to PyTorch.)"
)


def validate(
    g: torch.Tensor,
    shape: torch.Size,
    dtype: torch.dtype,
    device: torch.device | None,
    name: str,
    index: int,
) -> torch.Tensor:
    """The engine's validate_outputs for one gradient: reduce to shape, cast dtype and device.

    Args:
        g: the gradient a node returned for output `index`.
        shape, dtype: what the destination slot expects.
        device: the destination's device, or None when the graph has only one device.
        name, index: the node's name and output number, for the error message.

    Guarantees: the result has exactly `shape` (`sum_to_size`; `.sum()` for a 0-d target),
    `dtype` and (when given) `device`; a non-broadcastable shape or a complex gradient for a
    real input raises the engine's RuntimeError text.

    Example:
        >>> validate(torch.ones(4, 3), torch.Size([3]), torch.float32, None, "AddBackward0", 0)
        tensor([4., 4., 4.])
    """
    if g.shape != shape:
        if not expandable(shape, g.shape):
            raise RuntimeError(
                f"Function {name} returned an invalid gradient at index {index} - got "
                f"{list(g.shape)} but expected shape compatible with {list(shape)}"
            )
        g = g.sum_to_size(shape) if len(shape) else g.sum()
    if g.dtype is not dtype:
        if g.is_complex() and not dtype.is_complex:
            raise RuntimeError(_COMPLEX_CHECK)
        g = g.to(dtype)
    if device is not None and g.device != device:
        g = g.to(device)
    return g


#: Functions the stepper's loop calls inside a step's rollback-protected block, which may raise on
#: the user's behalf: a SIGINT landing in them interrupts the node (see guard.py).
def call_empty(fn: Any, n: int) -> Any:
    """Invoke built-in node `fn` with all `n` slots empty, as the engine does; None (no gradient).

    The node computes nothing for undefined gradients, but it unpacks its saved tensors first, so
    a freed one ("Trying to backward through the graph a second time") or a stale one ("modified
    by an inplace operation") raises the engine's own error here, exactly where the engine does.

    Example:
        >>> call_empty(z.grad_fn, 1) is None
        True
        >>> with torch.no_grad():
        ...     _ = x.mul_(2)  # PowBackward0 saved x: now stale
        >>> call_empty(g.fn("n1"), 1)
        Traceback (most recent call last):
        RuntimeError: one of the variables needed for gradient computation has been modified ...
    """
    out = fn(*([None] * n))
    if out is None or (type(out) is tuple and all(o is None for o in out)):
        return None
    return out


IN_STEP_CODES = frozenset({apply_custom.__code__, validate.__code__, call_empty.__code__})
