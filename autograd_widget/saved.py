"""What each node saved for backward, read lazily and without disturbing anything.

Built-in nodes expose `_saved_<name>` (and `_raw_saved_<name>` for tensors); custom Functions
expose `saved_tensors` plus whatever the user put on `ctx`; C++ custom Functions expose nothing.
Reading must never raise into the user's face: a freed graph, an in-place-modified (stale) tensor
or a packing hook each become a `state` with a note that says what happened and what to do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import torch

if TYPE_CHECKING:
    from .graph import BackwardGraph

SavedKind = Literal["tensor", "scalar", "tuple", "none"]
SavedState = Literal["ok", "freed", "stale", "packed"]

FREED_NOTE = (
    "freed: backward() already ran on this graph without retain_graph=True, which frees saved "
    "tensors. Capture before calling backward(), or call backward(retain_graph=True)."
)
_U64 = 2**64

# Attributes of custom-Function node objects that are torch's, not the user's ctx attributes.
_CTX_INTERNAL = frozenset(
    {"to_save", "non_differentiable", "dirty_tensors", "saved_for_forward", "materialize_grads"}
)


@dataclass(slots=True)
class SavedValue:
    """One value a node holds for its backward. Tensor fields are None for non-tensors."""

    name: str
    kind: SavedKind
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    device: str | None = None
    stride: tuple[int, ...] | None = None
    nbytes: int | None = None
    state: SavedState = "ok"
    aliases: list[str] = field(default_factory=list)
    summary: Any = None
    #: The value for non-tensors (quirks fixed for display: -100, "unset"), else None.
    value: Any = None
    note: str | None = None


def _dtype_str(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _display(name: str, v: Any) -> Any:
    """Fix the known display quirks of non-tensor saved fields."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, int):
        # Optional/negative int64 fields come back through uint64: -100 reads 18446744073709551516.
        return v - _U64 if v >= 2**63 else v
    if isinstance(v, tuple) and not v:
        return "unset"
    if isinstance(v, tuple):
        return tuple(_display(name, x) for x in v)
    return v


def _tensor_record(name: str, t: torch.Tensor) -> SavedValue:
    return SavedValue(
        name=name,
        kind="tensor",
        shape=tuple(t.shape),
        dtype=_dtype_str(t.dtype),
        device=str(t.device),
        stride=tuple(t.stride()) if t.layout == torch.strided else None,
        nbytes=t.numel() * t.element_size(),
    )


def _value_record(name: str, v: Any) -> SavedValue:
    if isinstance(v, torch.Tensor):
        return _tensor_record(name, v)
    if v is None:
        return SavedValue(name=name, kind="none", value=None)
    if isinstance(v, (tuple, list)):
        if any(isinstance(x, torch.Tensor) for x in v):
            rec = SavedValue(name=name, kind="tuple", value=None)
            rec.note = f"{len(v)} tensors: " + ", ".join(
                f"{list(x.shape)} {_dtype_str(x.dtype)}" if isinstance(x, torch.Tensor) else repr(x)
                for x in v
            )
            return rec
        return SavedValue(name=name, kind="tuple", value=_display(name, tuple(v)))
    return SavedValue(name=name, kind="scalar", value=_display(name, v))


def _error_state(err: RuntimeError) -> tuple[SavedState, str]:
    msg = str(err)
    if "backward through the graph a second time" in msg or "already been freed" in msg:
        return "freed", FREED_NOTE
    if "modified by an inplace operation" in msg:
        return "stale", (
            "stale: modified in place after it was saved; stepping this node raises the "
            f"engine's error: {msg.splitlines()[0]}"
        )
    return "freed", msg.splitlines()[0] if msg else type(err).__name__


def _names_for(fn: Any) -> list[str]:
    return [a[len("_saved_") :] for a in dir(fn) if a.startswith("_saved_")]


def _read_builtin(fn: Any) -> list[SavedValue]:
    out = []
    for short in _names_for(fn):
        try:
            v = getattr(fn, "_saved_" + short)
        except RuntimeError as err:
            state, note = _error_state(err)
            rec = SavedValue(name=short, kind="tensor", state=state, note=note)
            raw = getattr(fn, "_raw_saved_" + short, None)
            data = getattr(raw, "data", None) if raw is not None else None
            if isinstance(data, torch.Tensor):
                filled = _tensor_record(short, data)
                filled.state, filled.note = state, note
                rec = filled
            out.append(rec)
            continue
        out.append(_value_record(short, v))
    return out


def _read_custom(fn: Any) -> list[SavedValue]:
    out: list[SavedValue] = []
    try:
        tensors = fn.saved_tensors
    except RuntimeError as err:
        state, note = _error_state(err)
        out.append(SavedValue(name="saved_tensors", kind="tuple", state=state, note=note))
    else:
        for i, t in enumerate(tensors):
            out.append(_value_record(f"saved_tensors[{i}]", t))
    attrs = getattr(fn, "__dict__", {})
    for k, v in attrs.items():
        if k.startswith("_") or k in _CTX_INTERNAL:
            continue
        out.append(_value_record(f"ctx.{k}", v))
    return out


def read_saved(graph: BackwardGraph, node_id: str) -> list[SavedValue]:
    """Records for every value `node_id` saved (see `BackwardGraph.saved`)."""
    node = graph.nodes[node_id]
    if node.kind == "accumulate_grad":
        return []
    fn = graph.fn(node_id)
    if node.kind == "custom_function":
        return _read_custom(fn)
    if node.kind == "cpp_function":
        return []
    return _read_builtin(fn)
