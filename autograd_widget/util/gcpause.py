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


@contextmanager
def gc_paused() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
