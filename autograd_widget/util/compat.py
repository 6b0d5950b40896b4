"""Which torch we support, and a clear failure when a private API we rely on is gone.

The stepper and capture read a few private attributes of autograd nodes (`_input_metadata`,
`_sequence_nr`, `_raw_saved_*`). They are stable across the supported range, but nothing promises
that, so we check for them once and fail with a message that names the torch version instead of
an AttributeError from deep inside a walk.
"""

from __future__ import annotations

import torch

__all__ = [
    "SUPPORTED_TORCH",
    "UnsupportedTorchError",
    "check_node_api",
    "check_step_api",
    "check_torch",
    "gradient_edge",
]

#: The range declared in pyproject.toml: the oldest torch the suite passes on (2.13.0), no upper
#: bound (2.15.0 passes too; a newer torch that drops a private API fails with a message).
SUPPORTED_TORCH = ">=2.13"

_NODE_API = ("_input_metadata", "_sequence_nr", "next_functions", "name", "metadata")


class UnsupportedTorchError(RuntimeError):
    """Raised when the installed torch lacks a private autograd API this package needs."""


def check_node_api(fn: object) -> None:
    """Fail with an actionable message if `fn` lacks an attribute every autograd node had.

    Example:
        >>> check_node_api(z.grad_fn)  # passes silently on a supported torch
    """
    missing = [a for a in _NODE_API if not hasattr(fn, a)]
    if type(fn).__name__ == "AccumulateGrad" and not hasattr(fn, "variable"):
        missing.append("variable")
    if missing:
        raise UnsupportedTorchError(
            f"autograd_widget needs the autograd Node attribute(s) {', '.join(missing)}, which "
            f"torch {torch.__version__} does not provide (node type {type(fn).__name__}). "
            f"Install a supported torch ({SUPPORTED_TORCH}), e.g. `pip install torch==2.13.0`."
        )


_CUSTOM_API = ("needs_input_grad", "apply")


def check_step_api(fn: object, kind: str) -> None:
    """Like `check_node_api`, plus what stepping needs of a custom Function node.

    Example:
        >>> check_step_api(z.grad_fn, "function")
    """
    check_node_api(fn)
    missing = [a for a in _CUSTOM_API if kind == "custom_function" and not hasattr(fn, a)]
    if missing:
        raise UnsupportedTorchError(
            f"autograd_widget needs the custom Function node attribute(s) {', '.join(missing)}, "
            f"which torch {torch.__version__} does not provide (node type {type(fn).__name__}). "
            f"Install a supported torch ({SUPPORTED_TORCH}), e.g. `pip install torch==2.13.0`."
        )


def gradient_edge(t: torch.Tensor) -> tuple[object, int]:
    """`torch.autograd.graph.get_gradient_edge(t)` as (node, output_nr), also for a sparse leaf.

    A view of a leaf taken under `no_grad()` has no gradient edge: ValueError saying so (torch
    itself only asserts). Torch finds a leaf's AccumulateGrad node through `t.view_as(t)`, which
    sparse layouts do not implement (NotImplementedError on `aten::view`); a multiplication
    reaches the same node (a leaf has exactly one AccumulateGrad, shared by every graph using it).

    Example:
        >>> node, nr = gradient_edge(z)
        >>> node.name(), nr
        ('AddBackward0', 0)
    """
    try:
        e = torch.autograd.graph.get_gradient_edge(t)
    except AssertionError:
        # A view of a leaf taken under no_grad() (`with torch.no_grad(): v = x[:2]`) requires
        # grad and reads as a leaf, but autograd made no AccumulateGrad for it: torch asserts.
        base = getattr(t, "_base", None)
        if t.grad_fn is None and base is not None:
            raise ValueError(
                "this tensor is a view of a leaf taken under torch.no_grad(), so autograd gives "
                "it no gradient of its own; ask for the gradient of its base tensor "
                "(`t._base`) and index that the way the view was taken"
            ) from None
        raise ValueError(f"this tensor has no gradient edge in autograd ({type(t).__name__} "
                         f"of shape {list(t.shape)}, requires_grad={t.requires_grad})") from None
    except (NotImplementedError, RuntimeError):
        if t.grad_fn is not None or not t.requires_grad:
            raise
        with torch.enable_grad():
            return t.mul(1).grad_fn.next_functions[0][0], 0  # type: ignore[union-attr]
    return e.node, int(e.output_nr)


def check_torch() -> None:
    """Check module-level torch APIs at import time (UnsupportedTorchError naming what is missing).

    Example:
        >>> check_torch()  # raises UnsupportedTorchError naming the version when unsupported
    """
    missing = []
    if not hasattr(torch.autograd.graph, "get_gradient_edge"):
        missing.append("torch.autograd.graph.get_gradient_edge")
    if not hasattr(torch.autograd.graph, "Node"):
        missing.append("torch.autograd.graph.Node")
    saved_tensor = getattr(torch._C._autograd, "SavedTensor", None)
    if saved_tensor is None or not hasattr(saved_tensor, "data"):
        # Before 2.13 a saved tensor cannot be looked at without unpacking it (which runs the
        # user's saved_tensors_hooks): aliases, packed and stale states would be silently wrong.
        missing.append("torch._C._autograd.SavedTensor.data")
    if missing:
        raise UnsupportedTorchError(
            f"autograd_widget needs {', '.join(missing)}, missing in torch {torch.__version__}. "
            f"Install a supported torch ({SUPPORTED_TORCH}), e.g. `pip install torch==2.13.0`."
        )


# --------------------------------------------------------------------------- torch.compile regions
# A region compiled by torch.compile is ONE autograd node, `CompiledFunctionBackward`, whose
# forward class (`_forward_cls`, AOTAutograd's `CompiledFunction`) keeps the region's backward as
# an FX graph of aten ops. Everything below reads private attributes of torch 2.13
# (torch/_functorch/_aot_autograd/runtime_wrappers.py); each reader says what it needs, and
# answers "not reachable, because ..." instead of raising when a torch lays them out otherwise.
from typing import Any, NamedTuple  # noqa: E402  (kept with the readers that use them)

#: The node name torch gives a compiled region's backward.
COMPILED_NODE_NAME = "CompiledFunctionBackward"


class CompiledBackward(NamedTuple):
    """What `compiled_backward` found: the region's backward module (None when it is not
    reachable), how it was reached ("module": the lazy backward's own `bw_module`; "cache": a
    warm compile cache's `bw_module_fn()`), and why not when it is not."""

    module: Any
    source: str
    note: str


def compiled_backward(fn: Any) -> CompiledBackward:
    """The FX `GraphModule` of aten ops a compiled region's node `fn` runs, or why it is not
    reachable (never raises).

    torch 2.13 keeps it on `fn._forward_cls._lazy_backward_info`: an
    `AutogradLazyBackwardCompileInfo` with `.bw_module` after a fresh compile, or (a warm
    AOTAutograd cache, the everyday second kernel start) a `CachedAutogradLazyBackwardCompileInfo`
    whose `.bw_module_fn()` deserialises it. A cache entry saved without the module, another
    torch, or anything unexpected gives `module=None` and a note saying which.

    Example:
        >>> compiled_backward(z.grad_fn).note  # an ordinary node
        'AddBackward0 is not a compiled region (CompiledFunctionBackward)'
    """
    name = _node_name(fn)
    if name != COMPILED_NODE_NAME:
        return CompiledBackward(None, "", f"{name} is not a compiled region ({COMPILED_NODE_NAME})")
    where = f"torch {torch.__version__}"
    fwd = getattr(fn, "_forward_cls", None)
    if fwd is None or not hasattr(fwd, "_lazy_backward_info"):
        return CompiledBackward(None, "", f"{where} keeps no `_lazy_backward_info` on the "
                                "compiled function: its aten ops are not reachable")
    info = fwd._lazy_backward_info
    if info is None:
        return CompiledBackward(None, "", f"{where} kept no backward module for this region "
                                "(a compile cache entry saved without it, or a backward "
                                "compiled eagerly): its aten ops are not reachable")
    module, source = getattr(info, "bw_module", None), "module"
    if module is None and callable(getattr(info, "bw_module_fn", None)):
        source = "cache"
        try:
            module = info.bw_module_fn()
        except Exception as exc:  # a cache entry torch cannot rebuild
            return CompiledBackward(None, source, f"the compile cache's backward module could "
                                    f"not be rebuilt ({type(exc).__name__}: {exc})")
    if not isinstance(module, torch.fx.GraphModule):
        return CompiledBackward(None, source, f"{where} holds the region's backward as "
                                f"{type(module).__name__}, not an FX GraphModule: its aten ops "
                                "are not reachable")
    return CompiledBackward(module, source, "")


def _node_name(fn: Any) -> str:
    try:
        return str(fn.name())
    except Exception:
        return type(fn).__name__


class BackwardArg(NamedTuple):
    """One argument of a compiled backward: `kind` "saved" (index into the node's saved
    tensors), "symint", "opaque" (indices into those lists), "grad" (the node's input slot it
    comes from) or "other" (a token or RNG state, `index` -1)."""

    kind: str
    index: int


class _Probe:
    __slots__ = ("index", "kind")

    def __init__(self, kind: str, index: int) -> None:
        self.kind, self.index = kind, index


def compiled_backward_layout(fn: Any) -> list[BackwardArg] | str:
    """What each argument of the compiled backward of node `fn` is, in order, or a note saying
    why it cannot be told (never raises).

    torch 2.13 builds the argument list with a generated prologue,
    `[*symints, *saved_tensors, *opaque_objects, *surviving grads, *tokens, *rng states]`; which
    grads survive depends on the region's aliasing metadata. Rather than re-deriving that, the
    prologue is called once with marker objects (it passes non-tensors through untouched), so
    the layout is exactly the one the real call builds. Reads `_raw_saved_tensors` (counts only:
    no saved tensor is unpacked), `symints`, `opaque_objects`, `_tensors_no_vc_check`.

    Example:
        >>> compiled_backward_layout(z.grad_fn)
        'AddBackward0 is not a compiled region (CompiledFunctionBackward)'
    """
    if _node_name(fn) != COMPILED_NODE_NAME:
        return f"{_node_name(fn)} is not a compiled region ({COMPILED_NODE_NAME})"
    try:
        prologue = fn._forward_cls._bw_prologue_fn
        n_saved = len(fn._raw_saved_tensors) + len(getattr(fn, "_tensors_no_vc_check", ()) or ())
        symints, opaque = list(fn.symints), list(getattr(fn, "opaque_objects", []) or [])
        n_grads = len(fn._input_metadata)
        probe = prologue(
            [_Probe("saved", i) for i in range(n_saved)],
            [_Probe("symint", i) for i in range(len(symints))],
            [_Probe("opaque", i) for i in range(len(opaque))],
            [_Probe("grad", i) for i in range(n_grads)],
        )
    except Exception as exc:
        return (f"torch {torch.__version__} lays out the compiled backward's arguments "
                f"otherwise ({type(exc).__name__}: {exc}): its aten ops cannot be fed")
    return [BackwardArg(a.kind, a.index) if isinstance(a, _Probe) else BackwardArg("other", -1)
            for a in probe]


def compiled_backward_args(fn: Any, grads: list) -> list:
    """The argument list the compiled backward of node `fn` receives for incoming `grads`
    (one per input slot, zeros already in the empty ones): its saved tensors (unpacked, so a
    freed or stale one raises torch's own error), symints, opaque objects and the grads as its
    prologue coerces them (`compiled_backward_layout` says what each one is).

    Example:
        >>> compiled_backward_args(z.grad_fn, [torch.ones(())])
        Traceback (most recent call last):
        ValueError: AddBackward0 is not a compiled region (CompiledFunctionBackward)
    """
    if _node_name(fn) != COMPILED_NODE_NAME:
        raise ValueError(f"{_node_name(fn)} is not a compiled region ({COMPILED_NODE_NAME})")
    saved = (*fn.saved_tensors, *(getattr(fn, "_tensors_no_vc_check", ()) or ()))
    return list(fn._forward_cls._bw_prologue_fn(
        saved, fn.symints, getattr(fn, "opaque_objects", []) or [], list(grads)))


#: The sentence torch raises when a backward compiled with donated buffers is called again.
DONATED_BUFFER_ERROR = "compiled with non-empty donated buffers"


def donated_buffer_config() -> bool | None:
    """`torch._functorch.config.donated_buffer` (None when this torch has no such setting): when
    True as a region compiles its backward during an ordinary `backward()`, that backward may
    reuse its saved activations' memory and refuses any second call (a manual step included).

    Example:
        >>> donated_buffer_config() in (True, False, None)
        True
    """
    try:
        from torch._functorch import config
    except ImportError:
        return None
    value = getattr(config, "donated_buffer", None)
    return None if value is None else bool(value)


__all__ += [
    "COMPILED_NODE_NAME",
    "DONATED_BUFFER_ERROR",
    "BackwardArg",
    "CompiledBackward",
    "compiled_backward",
    "compiled_backward_args",
    "compiled_backward_layout",
    "donated_buffer_config",
]


def compiled_backward_metas(fn: Any, module: Any, layout: list[BackwardArg]) -> str:
    """Make sure every node of a compiled backward's FX `module` has its `meta["val"]` (shape,
    dtype, device), propagating fake tensors when they are missing; "" when done, else a note
    saying why not (never raises).

    A module rebuilt from a warm compile cache (`bw_module_fn()`) comes without any node
    metadata. The fake inputs mirror the real ones without unpacking a saved tensor: the node's
    `_raw_saved_tensors[i].data` (metadata only), its `_input_metadata` for the gradients,
    its `symints`. Runs `torch.fx.passes.fake_tensor_prop.FakeTensorProp` on `module` (which
    belongs to the caller: `bw_module_fn()` builds a new one per call).

    Example:
        >>> compiled_backward_metas(z.grad_fn, None, [])  # nothing to do without a module
        ''
    """
    if module is None or all("val" in n.meta for n in module.graph.nodes
                             if n.op in ("placeholder", "call_function")):  # fmt: skip
        return ""
    try:
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.passes.fake_tensor_prop import FakeTensorProp

        raws = list(fn._raw_saved_tensors) + list(getattr(fn, "_tensors_no_vc_check", ()) or ())
        symints = list(fn.symints)
        metas = list(fn._input_metadata)
        mode = FakeTensorMode(allow_non_fake_inputs=True)
        args: list[Any] = []
        for a in layout:
            if a.kind == "saved":
                data = raws[a.index].data
                args.append(mode.from_tensor(data) if isinstance(data, torch.Tensor) else data)
            elif a.kind == "grad":
                m = metas[a.index]
                with mode:
                    args.append(torch.empty(tuple(m.shape), dtype=m.dtype, device=m.device))
            elif a.kind == "symint":
                args.append(symints[a.index])
            else:
                args.append(None)
        FakeTensorProp(module, mode).propagate_dont_convert_inputs(*args)
    except Exception as exc:
        return (f"the shapes inside the region could not be worked out ({type(exc).__name__}: "
                f"{exc})")
    return ""


__all__ += ["compiled_backward_metas"]
