"""Which torch we support, and the one place that knows which torch has which private API.

The stepper and capture read private attributes of autograd nodes. Those present on every
supported torch (`_input_metadata`, `_sequence_nr`, `_raw_saved_<name>`) are checked once, failing
with a message that names the torch version (`check_node_api`, `check_torch`). Those that only a
newer torch has are read HERE and nowhere else, each with what the package does without it:

- `SavedTensor.data` / `.unpack_hook` (torch 2.10; seen on 2.10.0, absent on 2.8.0 and older):
  look at a saved value without unpacking
  it. Without them `saved_value` reads through `guarded_getattr`: a read that would run Python
  code first (a `saved_tensors_hooks` unpack hook, a checkpoint's recompute) is refused
  (`UnpackRefused`), so that value's state is "unknown" (a checkpointed one is still
  recognised); what a value holds without unpacking (a packed form, a stale tensor's data) is
  unknown (`saved_data` gives None).
- `torch.utils.checkpoint.GraphExecGroup` (torch 2.10): one recompute per pass. Without it
  `exec_group_class()` is None: every read of a checkpointed value outside the engine
  recomputes its region.
- `torch.autograd.graph.node_creation_hook` (torch 2.14; seen on 2.14.1, absent on 2.13.0):
  `node_creation_hook()` is None.
- torch.compile's backward: where its module is kept and how its arguments are laid out
  (`_bw_prologue`: one way each on 2.6, 2.10, 2.12 and 2.13, all read). A torch laying it out
  otherwise gets an opaque region with a note (`compiled_backward_layout` returns the note).

`SAVED_DATA_TORCH` etc. name the versions for the notes users read; `torch_version()` is the
installed one. Tests switch a feature off (`monkeypatch.setattr(compat, "SAVED_DATA", False)`) to
run the older torch's path on the pinned one; the compat runs (`make compat`) run it for real.
"""

from __future__ import annotations

import gc
import inspect
import sys
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any, NamedTuple

import torch
import torch.utils.checkpoint  # `import torch` does not load it on every supported torch

__all__ = [
    "COMPILED_NODE_NAME",
    "DONATED_BUFFER_ERROR",
    "NODE_CREATION_HOOK_TORCH",
    "SAVED_DATA",
    "SAVED_DATA_TORCH",
    "SUPPORTED_TORCH",
    "BackwardArg",
    "CompiledBackward",
    "NoGradientEdge",
    "UnpackRefused",
    "UnsupportedTorchError",
    "asked_value",
    "check_node_api",
    "check_step_api",
    "check_torch",
    "compiled_backward",
    "compiled_backward_args",
    "compiled_backward_layout",
    "compiled_backward_metas",
    "donated_buffer_config",
    "exec_group_class",
    "fake_backward_args",
    "gradient_edge",
    "guarded_getattr",
    "held_values",
    "node_creation_hook",
    "peek_value",
    "saved_data",
    "saved_value",
    "storage_use_count",
    "torch_version",
    "unknown_note",
    "unpack_hook",
]

#: The range declared in pyproject.toml: the oldest torch the suite passes on, no upper bound
#: (a newer torch that drops a private API fails with a message).
SUPPORTED_TORCH = ">=2.6"

#: The torch that has `SavedTensor.data` / `.unpack_hook` (a saved value seen without unpacking):
#: 2.10.0 has them, 2.8.0 has not (2.9 was not run).
SAVED_DATA_TORCH = "2.10"
#: Whether this torch has them (a test sets it False to run the older torch's path).
SAVED_DATA: bool = all(
    hasattr(getattr(torch._C._autograd, "SavedTensor", None), a) for a in ("data", "unpack_hook")
)
#: The torch that added `torch.autograd.graph.node_creation_hook`.
NODE_CREATION_HOOK_TORCH = "2.14"

_NODE_API = ("_input_metadata", "_sequence_nr", "next_functions", "name", "metadata")


def torch_version() -> str:
    """The installed torch's version without a local tag ("2.6.0", not "2.6.0+cu124").

    Example:
        >>> torch_version().count(".") >= 1
        True
    """
    return torch.__version__.split("+")[0]


def unknown_note(what: str, since: str) -> str:
    """The one sentence that says a value is unknown because this torch cannot read it.

    Example:
        >>> unknown_note("its packed form", "2.13")
        'unknown on torch ...: its packed form; torch >= 2.13 reads it without unpacking'
    """
    return (
        f"unknown on torch {torch_version()}: {what}; torch >= {since} reads it without "
        f"unpacking"
    )


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


class NoGradientEdge(ValueError):
    """The tensor has no gradient edge in autograd: a view of a leaf taken under `no_grad()`
    (`is_leaf`, `_is_view()`, `requires_grad`, no `grad_fn`). Autograd made no AccumulateGrad for
    it, so nothing flows to it: the engine's `torch.autograd.grad(..., allow_unused=True)` gives
    None for it, and so does `Stepper.grad`."""


def gradient_edge(t: torch.Tensor) -> tuple[object, int]:
    """`torch.autograd.graph.get_gradient_edge(t)` as (node, output_nr), also for a sparse leaf.

    A view of a leaf taken under `no_grad()` has no gradient edge: `NoGradientEdge` (a
    ValueError) saying so (torch itself only asserts). Torch finds a leaf's AccumulateGrad node
    through `t.view_as(t)`, which sparse layouts do not implement (NotImplementedError on
    `aten::view`); a multiplication reaches the same node (a leaf has exactly one
    AccumulateGrad, shared by every graph using it).

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
            raise NoGradientEdge(
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
    if missing:
        raise UnsupportedTorchError(
            f"autograd_widget needs {', '.join(missing)}, missing in torch {torch.__version__}. "
            f"Install a supported torch ({SUPPORTED_TORCH}), e.g. `pip install torch==2.13.0`."
        )


# ------------------------------------------------------------------------------ saved values
class UnpackRefused(Exception):
    """Reading a saved value would run Python code before torch returns it (a
    `saved_tensors_hooks` unpack hook, a non-reentrant checkpoint's recompute, a tensor
    subclass's dispatch), and this torch cannot look at the value without unpacking it
    (`SavedTensor.data` is torch >= 2.10). Nothing ran: the guard stopped the call at its first
    Python frame. `code` names that function, `module` its module, `checkpoint` whether it is
    torch.utils.checkpoint's (the value is recomputed during backward)."""

    def __init__(self, code: str, module: str | None) -> None:
        self.code, self.module = code, module
        self.checkpoint = module == "torch.utils.checkpoint"
        super().__init__(
            f"reading it would first run {code} ({module}), most likely a saved_tensors_hooks "
            f"unpack hook, and torch {torch_version()} cannot look at a saved value without "
            f"unpacking it (torch >= {SAVED_DATA_TORCH} can)"
        )


class _Trip(Exception):
    """Raised by the guard's trace function at the first Python frame of a read."""


def guarded_getattr(obj: Any, attr: str) -> Any:
    """`getattr(obj, attr)` during which the first Python function called on this thread
    raises before its body runs (`UnpackRefused` naming it). Torch's own read of a saved value
    is C++: only an unpack hook (or a tensor subclass's dispatch) calls Python, so a read that
    returns ran none, and one that the guard stops ran none either.

    The previous trace function (a debugger's, coverage's) is restored after, and the cycle
    collector is paused meanwhile (a finalizer is Python code too).

    Example:
        >>> guarded_getattr((x * y).grad_fn, "_saved_other")  # C++ only: no Python frame
        tensor(3., requires_grad=True)
    """
    tripped: list[tuple[str, str | None]] = []

    def tracer(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            tripped.append((getattr(code, "co_qualname", code.co_name),
                            frame.f_globals.get("__name__")))  # fmt: skip
            raise _Trip
        return None

    old = sys.gettrace()
    was = gc.isenabled()
    gc.disable()
    sys.settrace(tracer)
    try:
        return getattr(obj, attr)
    except _Trip:
        code, module = tripped[0] if tripped else ("Python code", None)
        raise UnpackRefused(code, module) from None
    finally:
        sys.settrace(old)
        if was:
            gc.enable()


def saved_value(fn: Any, attr: str) -> Any:
    """`getattr(fn, attr)` for a saved-value attribute (`_saved_<name>`, `saved_tensors`).

    On a torch with `SavedTensor.data` (>= 2.10) exactly that: the callers look at the value
    first (`unpack_hook`, `saved_data`) and decide. On an older torch, which cannot look, the
    read goes through `guarded_getattr`: where it would run Python code first it raises
    `UnpackRefused` having run nothing; torch's own errors (freed, modified in place) come
    through unchanged.

    Example:
        >>> saved_value((x * y).grad_fn, "_saved_other")
        tensor(3., requires_grad=True)
    """
    if SAVED_DATA:
        return getattr(fn, attr)
    return guarded_getattr(fn, attr)


def saved_data(raw: Any) -> Any | None:
    """What a `SavedTensor` holds, WITHOUT unpacking it: the tensor, or the object a pack hook
    returned. None when `raw` is None, a tuple (a saved tensor list) or this torch cannot look
    (older than 2.10). Raises
    torch's RuntimeError for a freed value.

    Example:
        >>> v = saved_data((x * y).grad_fn._raw_saved_other)
        >>> v is None or torch.equal(v, y)  # None where torch cannot look (older than 2.10)
        True
    """
    if raw is None or not SAVED_DATA:
        return None
    return getattr(raw, "data", None)  # (None for a tuple: a saved tensor list)


def unpack_hook(raw: Any) -> Any | None:
    """The unpack hook of a `SavedTensor` (None without one, or when this torch cannot say:
    there `saved_value` refuses any read that would run one).

    Example:
        >>> unpack_hook((x * y).grad_fn._raw_saved_other) is None
        True
    """
    if raw is None or not SAVED_DATA:
        return None
    return getattr(raw, "unpack_hook", None)


def exec_group_class() -> Any | None:
    """`torch.utils.checkpoint.GraphExecGroup` (torch >= 2.10), else None.

    Example:
        >>> exec_group_class() is None or exec_group_class().__name__ == "GraphExecGroup"
        True
    """
    return getattr(torch.utils.checkpoint, "GraphExecGroup", None)


def node_creation_hook() -> Any | None:
    """`torch.autograd.graph.node_creation_hook` (torch >= 2.14), else None.

    Example:
        >>> node_creation_hook() is None or callable(node_creation_hook())
        True
    """
    return getattr(torch.autograd.graph, "node_creation_hook", None)


def peek_value(fn: Any, attr: str) -> Any:
    """`saved_value`, or None where this torch cannot look without running Python code: a
    check (stale? freed?) then claims neither. Torch's errors raise as usual.

    Example:
        >>> peek_value((x * y).grad_fn, "_saved_self")
        tensor(2., requires_grad=True)
    """
    try:
        return saved_value(fn, attr)
    except UnpackRefused:
        return None


def held_values(fn: Any, attr: str, raws: Any) -> list[Any]:
    """What each `SavedTensor` of `raws` (all of node `fn`'s `attr`: one `_saved_<name>`, or
    `saved_tensors`) holds, without unpacking; on a torch that cannot look, the values read
    through the guard (None each where that would run Python code or raises).

    Example:
        >>> fn = (x * y).grad_fn
        >>> held_values(fn, "_saved_other", [fn._raw_saved_other])
        [tensor(3., requires_grad=True)]
    """
    if SAVED_DATA:
        return [saved_data(r) for r in raws]
    try:
        v = saved_value(fn, attr)
    except (UnpackRefused, RuntimeError):
        return [None] * len(raws)
    return list(v) if attr == "saved_tensors" else [v]


def asked_value(fn: Any, attr: str, checkpoint_note: str) -> Any:
    """A saved value the user asked for: unpacked (its hook runs, as on any torch), but never
    a checkpointed one, which would recompute its region (RuntimeError(checkpoint_note)).

    Example:
        >>> asked_value((x * y).grad_fn, "_saved_other", "checkpointed")
        tensor(3., requires_grad=True)
    """
    try:
        return saved_value(fn, attr)
    except UnpackRefused as refused:
        if refused.checkpoint:
            raise RuntimeError(checkpoint_note) from None
        return getattr(fn, attr)


def storage_use_count(t: torch.Tensor) -> int:
    """How many tensors (and other C++ holders) share `t`'s storage, `t` included.

    torch's private `_storage_Use_Count` counts the Python storage wrapper too while it lives,
    and whether a temporary wrapper lives through the call differs by version (torch 2.6 frees
    it first: a unique tensor read 1 there, 2 on 2.13): the wrapper is held here, then left out.

    Example:
        >>> t = torch.ones(3); storage_use_count(t)
        1
        >>> v = t[1:]; storage_use_count(t)
        2
    """
    st = t.untyped_storage()
    return int(torch._C._storage_Use_Count(st._cdata)) - 1


# --------------------------------------------------------------------------- torch.compile regions
# A region compiled by torch.compile is ONE autograd node, `CompiledFunctionBackward`, whose
# forward class (`_forward_cls`, AOTAutograd's `CompiledFunction`) keeps the region's backward as
# an FX graph of aten ops. Everything below reads private attributes of torch 2.13
# (torch/_functorch/_aot_autograd/runtime_wrappers.py); each reader says what it needs, and
# answers "not reachable, because ..." instead of raising when a torch lays them out otherwise.

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


def _bw_prologue(fn: Any) -> Callable[[Any, Any, Any, Any], list]:
    """The function that builds the argument list of node `fn`'s compiled backward from (saved
    tensors, symints, opaque objects, incoming grads), as this torch has it:

    - 2.13: the generated `CompiledFunction._bw_prologue_fn(saved, symints, opaque, grads)`;
    - 2.10 (seen on 2.10.0): the module-level `_backward_prologue_functional(saved, symints,
      metadata, subclass_metadata, *grads)` of aot_autograd's runtime wrappers; 2.12 (seen on
      2.12.1) adds the opaque objects after the symints and a keyword `codegen_unwrap_fn`
      (the class's `_bw_prologue_unwrap_fn`), told apart by the function's signature;
    - 2.6 (seen on 2.6.0): the static `CompiledFunction._backward_prologue(ctx, *grads)`, which
      reads only `ctx.saved_tensors` and `ctx.symints`.

    Raises AttributeError when none is there (the caller turns it into a note). 2.6 and 2.10
    have no opaque objects: a region with some raises ValueError.
    """
    cls = fn._forward_cls
    new = getattr(cls, "_bw_prologue_fn", None)
    if new is not None:
        return new

    def no_opaque(opaque: Any) -> None:
        if opaque:
            raise ValueError("opaque objects in a backward this torch lays out without them")

    old = getattr(cls, "_backward_prologue", None)
    if callable(old):
        def from_ctx(saved: Any, symints: Any, opaque: Any, grads: Any) -> list:
            no_opaque(opaque)
            ctx = SimpleNamespace(saved_tensors=tuple(saved), symints=list(symints))
            return list(old(ctx, *grads))
        return from_ctx
    try:
        from torch._functorch._aot_autograd import runtime_wrappers
    except ImportError:
        runtime_wrappers = None
    functional = getattr(runtime_wrappers, "_backward_prologue_functional", None)
    if callable(functional) and hasattr(cls, "metadata"):
        meta, sub = cls.metadata, getattr(cls, "maybe_subclass_metadata", None)
        params = inspect.signature(functional).parameters
        takes_opaque = "ctx_opaque_objects" in params  # 2.12; 2.10 has none
        extra = {"codegen_unwrap_fn": getattr(cls, "_bw_prologue_unwrap_fn", None)} \
            if "codegen_unwrap_fn" in params else {}

        def from_metadata(saved: Any, symints: Any, opaque: Any, grads: Any) -> list:
            head: list[Any] = [tuple(saved), list(symints)]
            if takes_opaque:
                head.append(list(opaque or ()))
            else:
                no_opaque(opaque)
            return list(functional(*head, meta, sub, *grads, **extra))
        return from_metadata
    raise AttributeError(f"type object '{cls.__name__}' has no attribute '_bw_prologue_fn'")


def compiled_backward_layout(fn: Any) -> list[BackwardArg] | str:
    """What each argument of the compiled backward of node `fn` is, in order, or a note saying
    why it cannot be told (never raises).

    torch 2.13 builds the argument list with a generated prologue (2.10 and 2.6 with the
    functions `_bw_prologue` names),
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
        prologue = _bw_prologue(fn)
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
    return list(_bw_prologue(fn)(
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




def fake_backward_args(fn: Any, layout: Sequence[Any], mode: Any, *,
                       concrete: bool = False) -> list[Any]:
    """The arguments of compiled backward node `fn`'s FX module as fake tensors of `mode`, in
    `layout`'s order (`compiled_backward_layout`): its saved values (on torch >= 2.10 read
    without unpacking; before, through `saved_value`'s guard), a gradient per `_input_metadata`
    entry, its `symints`, None for the rest. `concrete=True`: sizes and symints as this call's
    ints (a dynamic-shape region run with the sizes at hand). Shared by
    `compiled_backward_metas` and core/regionvalues.py.

    Example:
        >>> fake_backward_args(None, [], None)
        []
    """
    if not layout:
        return []
    extra = list(getattr(fn, "_tensors_no_vc_check", ()) or ())
    if SAVED_DATA:
        saved = [raw.data for raw in fn._raw_saved_tensors] + extra
    else:
        saved = list(saved_value(fn, "saved_tensors")) + extra
    symints = list(fn.symints)
    metas = list(fn._input_metadata)
    args: list[Any] = []
    for a in layout:
        if a.kind == "saved":
            data = saved[a.index]
            args.append(mode.from_tensor(data) if isinstance(data, torch.Tensor) else data)
        elif a.kind == "grad":
            m = metas[a.index]
            shape = tuple(int(d) for d in m.shape) if concrete else tuple(m.shape)
            with mode:
                args.append(torch.empty(shape, dtype=m.dtype, device=m.device))
        elif a.kind == "symint":
            args.append(int(symints[a.index]) if concrete else symints[a.index])
        else:
            args.append(None)
    return args


def compiled_backward_metas(fn: Any, module: Any, layout: list[BackwardArg]) -> str:
    """Make sure every node of a compiled backward's FX `module` has its `meta["val"]` (shape,
    dtype, device), propagating fake tensors when they are missing; "" when done, else a note
    saying why not (never raises).

    A module rebuilt from a warm compile cache (`bw_module_fn()`) comes without any node
    metadata. The fake inputs mirror the real ones (`fake_backward_args`: on an older torch the
    saved values are read through `saved_value`'s guard, which refuses, having run nothing, a
    read that would run a `saved_tensors_hooks` unpack hook); only their shapes, dtypes and
    devices are kept.
    Runs `torch.fx.passes.fake_tensor_prop.FakeTensorProp` on `module` (which belongs to the
    caller: `bw_module_fn()` builds a new one per call).

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

        mode = FakeTensorMode(allow_non_fake_inputs=True)
        args = fake_backward_args(fn, layout, mode)
        FakeTensorProp(module, mode).propagate_dont_convert_inputs(*args)
    except Exception as exc:
        return (f"the shapes inside the region could not be worked out ({type(exc).__name__}: "
                f"{exc})")
    return ""


