"""Was a captured graph already freed by `backward()`? Read without unpacking anything.

`backward()` without `retain_graph=True` frees every saved tensor of the graph it ran: the graph
can still be walked and drawn, but no node that saved a tensor can be called again. Capturing such
a graph is almost always a mistake (captured after `loss.backward()` instead of before), so
`capture()` warns with the reason and the two fixes (`FREED_WARNING`).

The check reads the nodes' raw saved values (`_raw_saved_<name>`), never the values themselves:
no `saved_tensors_hooks` unpack hook runs, no checkpointed region is recomputed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..util.compat import peek_value, saved_data
from .checkpoint import is_checkpointed
from .saved import saved_names

if TYPE_CHECKING:
    from .graph import BackwardGraph

__all__ = ["FREED_WARNING", "freed_by_backward"]

#: The warning for a graph that `backward()` already freed: why, and the two fixes.
FREED_WARNING = (
    "this graph was already freed by backward(): its saved tensors are gone, so it can be drawn "
    "but stepping fails at the first node that saved a tensor. Recompute the forward pass and "
    "capture the new output before calling backward(), or call backward(retain_graph=True)."
)

_FREED_ERRORS = ("backward through the graph a second time", "already been freed")


def freed_by_backward(graph: BackwardGraph, limit: int = 64) -> bool:
    """True when `backward()` already freed the graph's saved tensors, read from its first
    `limit` nodes without unpacking: a freed `SavedTensor`'s `.data` reads None; so does an
    undefined optional tensor (a missing bias), whose attribute then gives None where a freed
    one raises. The first saved value that tells decides (a live, packed or stale one: False).

    Example:
        >>> freed_by_backward(g)
        False
        >>> w = x * y
        >>> h = aw.capture(w)
        >>> w.backward()
        >>> freed_by_backward(h)
        True
    """
    for nid in list(graph.nodes)[:limit]:
        node = graph.nodes[nid]
        if node.kind in ("accumulate_grad", "cpp_function"):
            continue
        fn = graph.fn(nid)
        try:
            if node.kind == "custom_function":
                if getattr(fn, "_raw_saved_tensors", ()):  # raises once freed
                    return False
                continue
            for short in saved_names(fn):
                raw = getattr(fn, "_raw_saved_" + short, None)
                raws = raw if isinstance(raw, tuple | list) else (raw,)
                if any(r is not None and is_checkpointed(r) for r in raws):
                    continue
                if any(saved_data(r) is not None for r in raws):  # torch >= 2.10: no unpacking
                    return False
                if raw is not None:
                    peek_value(fn, "_saved_" + short)  # raises when freed; runs no hook
        except RuntimeError as err:
            return any(m in str(err) for m in _FREED_ERRORS)
    return False
