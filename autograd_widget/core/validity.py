"""Which nodes' saved values are still usable, before any step: stale (modified in place after
they were saved) or freed (a backward without retain_graph ran), read cheaply: no statistics, no
aliasing, never a checkpointed value (reading it would recompute its region), and, on a torch
that cannot look at a saved value without unpacking it, never one whose read would run Python
code first (`util.compat.peek_value`: then neither state is claimed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from ..util.compat import peek_value
from .checkpoint import is_checkpointed
from .saved import error_state, saved_names

if TYPE_CHECKING:
    from .graph import BackwardGraph

__all__ = ["first_saved_state", "node_validity"]


def node_validity(graph: BackwardGraph, limit: int = 20_000) -> dict[str, str]:
    """Nodes whose saved tensors are not usable, before any step: id -> "stale" | "freed".

    Reads each saved tensor attribute once (no statistics); graphs above `limit` nodes are
    skipped (the inspector still reports per node on request).

    Example:
        >>> node_validity(g)
        {}
        >>> with torch.no_grad():
        ...     _ = x.add_(1)  # x is saved by PowBackward0: now stale
        >>> node_validity(g)
        {'n1': 'stale'}
    """
    out: dict[str, str] = {}
    if len(graph.nodes) > limit:
        return out
    for nid, node in graph.nodes.items():
        if node.kind in ("accumulate_grad", "cpp_function"):
            continue
        fn = graph.fn(nid)
        try:
            if node.kind == "custom_function":
                if not any(is_checkpointed(r) for r in getattr(fn, "_raw_saved_tensors", ())):
                    peek_value(fn, "saved_tensors")  # reading is the check
            else:
                for short in saved_names(fn):
                    raw = getattr(fn, "_raw_saved_" + short, None)
                    # A checkpointed value is never read: that would recompute its region.
                    if raw is not None and not is_checkpointed(raw):
                        peek_value(fn, "_saved_" + short)
        except RuntimeError as err:
            out[nid] = error_state(err)[0]
    return out


def first_saved_state(graph: BackwardGraph, limit: int = 64) -> str | None:
    """State ("ok", "stale", "freed") of the first of the first `limit` nodes holding a saved
    tensor, None if none does: no statistics, no aliasing, no checkpoint recompute.

    Example:
        >>> first_saved_state(g)
        'ok'
        >>> w = x * y; h = aw.capture(w); w.backward()
        >>> first_saved_state(h)
        'freed'
    """
    for nid in list(graph.nodes)[:limit]:
        node = graph.nodes[nid]
        if node.kind in ("accumulate_grad", "cpp_function"):
            continue
        fn = graph.fn(nid)
        try:
            if node.kind == "custom_function":
                raws = getattr(fn, "_raw_saved_tensors", ())
                if raws and not any(map(is_checkpointed, raws)) and peek_value(fn, "saved_tensors"):
                    return "ok"
                continue
            for short in saved_names(fn):
                raw = getattr(fn, "_raw_saved_" + short, None)
                if raw is None or is_checkpointed(raw):
                    continue  # (reading a checkpointed value would recompute its region)
                if isinstance(peek_value(fn, "_saved_" + short), torch.Tensor):
                    return "ok"
        except RuntimeError as err:
            return error_state(err)[0]
    return None
