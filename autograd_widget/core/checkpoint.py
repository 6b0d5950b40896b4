"""Non-reentrant activation checkpointing, looked at without recomputing anything.

`torch.utils.checkpoint.checkpoint(..., use_reentrant=False)` saves no activation inside its
region: each saved value of a node in the region is a `SavedTensor` packed by the checkpoint's
own `saved_tensors_hooks` into an empty holder, and unpacking it (reading `_saved_x`, calling the
node) re-runs the region's forward. Outside the engine and outside a
`torch.utils.checkpoint.GraphExecGroup` every such read recomputes the region and the values the
read did not ask for stay alive (DESIGN.md, "Checkpointed saved values"). So everything that
merely LOOKS at saved values (the inspector, `saved_memory`, validity marks) must recognise these
values first and never unpack them; this module does that from the `SavedTensor` alone:

- `is_checkpointed(raw)`: the value's unpack hook is torch.utils.checkpoint's;
- `frame_of(raw)`: the region's frame (torch's per-call bookkeeping object, found through the
  hook's closure) or None when this torch lays it out differently;
- `value_meta(raw)`: the shape/dtype/device torch recorded at save time for its determinism check
  (the default `determinism_check="default"`), else None;
- `region_inputs(frame)`: the tensors the region holds to recompute from (its forward inputs):
  what a checkpointed region really keeps alive, which memory accounting must count (torch 2.13
  keeps them in the frame's `saved_args`, 2.10 in a no-op node's saved tensors: both read).

Guarantees: nothing here unpacks a checkpointed value, runs a recomputation or changes torch's
state; on a torch whose checkpoint internals differ, `is_checkpointed` still works (it only needs
the public `unpack_hook`) and the rest answer None / () rather than raise. A torch without
`SavedTensor.unpack_hook` (< 2.10) cannot tell from the value: `is_checkpointed` says False, and
the readers learn it at the read instead (`util.compat.saved_value` refuses, having run nothing).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from ..util.compat import exec_group_class, saved_data, unpack_hook

__all__ = [
    "CHECKPOINT_NOTE",
    "ExecGroup",
    "GraphExecGroup",
    "checkpoint_frames",
    "current_group",
    "frame_of",
    "is_checkpointed",
    "region_inputs",
    "release_group",
    "transient_group",
    "value_meta",
]

#: What the inspector says about a checkpointed saved value (followed by what is known of it).
CHECKPOINT_NOTE = (
    "recomputed during backward: non-reentrant activation checkpointing "
    "(torch.utils.checkpoint, use_reentrant=False) keeps no tensor here; backward re-runs the "
    "region's forward from its inputs when it needs this value, so it is not read here (reading "
    "it would recompute the region and keep the results alive)"
)

_CKPT_MODULE = "torch.utils.checkpoint"


def _one(raw: Any) -> Any:
    """`raw` itself, or for a saved tensor list (an index op's `indices`) its first
    checkpointed element (a list is saved inside one region or outside all)."""
    if isinstance(raw, tuple | list):
        return next((r for r in raw if _hooked(r)), None)
    return raw


def _hooked(raw: Any) -> bool:
    hook = unpack_hook(raw)  # None on a torch that cannot tell (compat.saved_value guards there)
    return hook is not None and getattr(hook, "__module__", None) == _CKPT_MODULE


def is_checkpointed(raw: Any) -> bool:
    """True when `raw` (a node's `_raw_saved_<name>`: a `SavedTensor`, or a tuple of them for a
    saved tensor list) is packed by a non-reentrant checkpoint: unpacking it would recompute its
    region.

    Example:
        >>> from torch.utils.checkpoint import checkpoint
        >>> a = torch.ones(3, requires_grad=True)
        >>> out = checkpoint(torch.sin, a, use_reentrant=False)
        >>> is_checkpointed(out.grad_fn._raw_saved_self), is_checkpointed(None)
        (True, False)
    """
    return _hooked(_one(raw))


def frame_of(raw: Any) -> Any | None:
    """The checkpoint frame (one per `checkpoint(...)` call: its region) behind `raw`, or None.

    Found in the unpack hook's closure; identity tells regions apart.

    Example:
        >>> from torch.utils.checkpoint import checkpoint
        >>> a = torch.ones(3, requires_grad=True)
        >>> out = checkpoint(torch.sin, a, use_reentrant=False)
        >>> frame_of(out.grad_fn._raw_saved_self) is not None
        True
    """
    raw = _one(raw)
    if not _hooked(raw):
        return None
    for cell in getattr(unpack_hook(raw), "__closure__", None) or ():
        try:
            obj = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        # torch 2.13 keeps the region's inputs in `saved_args`; 2.10 in a no-op node's saved
        # tensors (`input_saver`, see `region_inputs`).
        if hasattr(obj, "weak_holders") and (hasattr(obj, "saved_args")
                                             or hasattr(obj, "input_saver")):
            return obj
    return None


def value_meta(raw: Any) -> tuple[tuple[int, ...], torch.dtype, torch.device] | None:
    """(shape, dtype, device) recorded when the checkpointed value was saved, without
    recomputing; None when torch did not record it (`determinism_check="none"`).

    Example:
        >>> from torch.utils.checkpoint import checkpoint
        >>> a = torch.ones(2, 3, requires_grad=True)
        >>> out = checkpoint(torch.sin, a, use_reentrant=False)
        >>> value_meta(out.grad_fn._raw_saved_self)
        ((2, 3), torch.float32, device(type='cpu'))
    """
    raw = _one(raw)
    frame = frame_of(raw)
    if frame is None or isinstance(raw, tuple | list):
        return None
    try:
        holder = saved_data(raw)
    except RuntimeError:  # freed by a backward without retain_graph
        return None
    metas = getattr(frame, "x_metadatas", None) or []
    for i, ref in enumerate(getattr(frame, "weak_holders", ())):
        if i < len(metas) and ref() is holder:
            m = metas[i]
            if isinstance(m, dict) and {"shape", "dtype", "device"} <= m.keys():
                return tuple(m["shape"]), m["dtype"], m["device"]
            return None
    return None


def region_inputs(frame: Any) -> list[torch.Tensor]:
    """The tensors checkpoint frame `frame` keeps to recompute its region from (its forward's
    tensor inputs, or what a user's `saved_tensors_hooks` packed them into), without unpacking.

    Example:
        >>> from torch.utils.checkpoint import checkpoint
        >>> a = torch.ones(3, requires_grad=True)
        >>> out = checkpoint(torch.sin, a, use_reentrant=False)
        >>> [t.shape for t in region_inputs(frame_of(out.grad_fn._raw_saved_self))]
        [torch.Size([3])]
    """
    out: list[torch.Tensor] = []
    if not hasattr(frame, "saved_args"):  # torch 2.10: `_NoopSaveInputs` saved them
        saver = getattr(getattr(frame, "input_saver", None), "grad_fn", None)
        raws = list(getattr(saver, "_raw_saved_tensors", ()) or ())
        for raw in raws[1:]:  # the first is torch's dummy (a region may have no tensor input)
            try:
                data = saved_data(raw)
            except RuntimeError:  # freed by a backward without retain_graph
                continue
            if isinstance(data, torch.Tensor):
                out.append(data)
        return out
    for arg in getattr(frame, "saved_args", ()) or ():
        data = getattr(arg, "data", arg) if not isinstance(arg, torch.Tensor) else arg
        if isinstance(data, torch.Tensor):
            out.append(data)
    return out


def checkpoint_frames(raws: Any) -> list[Any]:
    """The distinct checkpoint frames behind an iterable of `SavedTensor`s (None entries
    allowed), in first-seen order.

    Example:
        >>> from torch.utils.checkpoint import checkpoint
        >>> a = torch.ones(3, requires_grad=True)
        >>> out = checkpoint(lambda t: t.sin() * t.cos(), a, use_reentrant=False)
        >>> len(checkpoint_frames([out.grad_fn._raw_saved_self, out.grad_fn._raw_saved_other]))
        1
    """
    seen: dict[int, Any] = {}
    for raw in raws:
        frame = frame_of(raw)
        if frame is not None and id(frame) not in seen:
            seen[id(frame)] = frame
    return list(seen.values())


# ------------------------------------------------------------------------------ groups
#: torch's `GraphExecGroup` (torch >= 2.10), or None on an older torch, where every read outside
#: the engine recomputes (nothing to do).
GraphExecGroup: Any = exec_group_class()


def current_group() -> Any | None:
    """The `GraphExecGroup` entered now (they do not nest), or None.

    Example:
        >>> current_group() is None
        True
    """
    return None if GraphExecGroup is None else GraphExecGroup._get_current_group()


class ExecGroup(GraphExecGroup if GraphExecGroup is not None else object):  # type: ignore[misc]
    """A `torch.utils.checkpoint.GraphExecGroup` that notes whether a checkpoint used it.

    Inside one group each checkpointed region is recomputed at most once and each saved value
    unpacks once (torch's rule); a checkpoint's unpack hook looks the group up in its per-group
    dicts, which hashes it: `used` turns True then, so a group no checkpoint touched costs
    nothing to release.

    Example:
        >>> from torch.utils.checkpoint import checkpoint
        >>> a = torch.ones(3, requires_grad=True)
        >>> out = checkpoint(torch.sin, a, use_reentrant=False)
        >>> group = ExecGroup()
        >>> with group:
        ...     _ = out.grad_fn(torch.ones(3))
        >>> group.used
        True
    """

    used = False

    def __hash__(self) -> int:
        self.used = True
        return id(self) >> 4

    def __eq__(self, other: object) -> bool:
        return self is other


def release_group(group: Any, frames: Any) -> None:
    """Forget everything checkpoint `frames` recomputed under `group` and nobody unpacked yet
    (the values of nodes the run did not reach), so those tensors are freed now instead of
    living as long as the graph; and the group's bookkeeping entries. A no-op on a torch whose
    checkpoint frames are laid out differently (the values then stay until the graph goes).

    Example:
        >>> from torch.utils.checkpoint import checkpoint
        >>> a = torch.ones(3, requires_grad=True)
        >>> out = checkpoint(lambda t: t.sin() * t.cos(), a, use_reentrant=False)
        >>> group = ExecGroup()
        >>> with group:  # reads one value: the region is recomputed, the other value waits
        ...     _ = out.grad_fn._saved_self
        >>> frame = frame_of(out.grad_fn._raw_saved_self)
        >>> release_group(group, [frame]); group in frame.recomputed
        False
    """
    for frame in frames:
        try:
            per_group = (frame.recomputed, frame.is_recomputed, frame.recomp_counter)
            holders = frame.weak_holders
        except AttributeError:
            continue
        if group not in frame.is_recomputed and group not in frame.recomputed:
            continue
        for d in per_group:
            d.pop(group, None)
        for ref in holders:
            holder = ref()
            handles = getattr(holder, "handles", None)
            if isinstance(handles, dict):
                handles.pop(group, None)


@contextlib.contextmanager
def transient_group(frames: list[Any]) -> Iterator[None]:
    """Run a one-off read of checkpointed values (a probe's node call) in a group of its own,
    released on exit: the region is recomputed once for it and nothing it recomputed stays
    alive. A no-op without `frames`, on a torch without groups, or inside another group.

    Example:
        >>> from torch.utils.checkpoint import checkpoint
        >>> a = torch.ones(3, requires_grad=True)
        >>> out = checkpoint(lambda t: t.sin() * t.cos(), a, use_reentrant=False)
        >>> frame = frame_of(out.grad_fn._raw_saved_self)
        >>> with transient_group([frame]):
        ...     _ = out.grad_fn._saved_self
        >>> len(frame.recomputed)  # nothing left behind
        0
    """
    if not frames or GraphExecGroup is None or current_group() is not None:
        yield
        return
    group = ExecGroup()
    try:
        with group:
            yield
    finally:
        release_group(group, frames)
