"""Pausing Python's cycle collector around bursts of allocation.

Capture, stepping, the view model and repeat detection each allocate an object or more per node
(tensor wrappers, tuples, records). A collection triggered meanwhile rescans everything alive (the
captured graph, torch, the notebook) and measured 2-20x the work itself; none of these bursts
creates reference cycles, so there is nothing for it to find. The collector runs again after.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cycle collector inside the block (re-enabled after it, unless it was off).

    Building many small objects (records, plan tables) triggers collection passes that walk
    every tracked object; pausing turns that quadratic cost linear. Nesting is safe.

    Example:
        >>> with gc_paused():
        ...     nodes = [object() for _ in range(1000)]  # no collection pass triggered here
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
