"""The torch references of a captured graph, released in the only order that cannot crash.

Torch frees a deep chain of autograd nodes by recursion once Python wrappers have been made for
its nodes: dropping the last reference to a >= ~45k-deep chain leaf-first overflows the C stack
(DESIGN.md, "Teardown hazard"). `LiveRefs` keeps every torch reference a graph holds
apart from its records so `release()` can drop them roots first, then nodes root-first; deep
graphs whose roots the user still holds are parked until those roots die.

Example:
    >>> refs = LiveRefs(list(g.require_live("demo").fns), [z], None)
    >>> refs.release()  # roots first, then fns[0], fns[1], ...
    >>> refs.fns, refs.root_tensors
    ([], [])
"""

from __future__ import annotations

import atexit
import ctypes
import gc
import weakref

__all__ = ["DEEP_GRAPH_NODES", "LiveRefs", "drain_parked", "release"]

#: Above this many nodes a graph may be deep enough for torch's teardown hazard (see LiveRefs).
DEEP_GRAPH_NODES = 20_000

# Deep graphs whose node references wait for the user's root tensors to die (see LiveRefs.release).
_parked: list[LiveRefs] = []


class LiveRefs:
    """Every torch reference a graph holds, kept apart so it can be released in a safe order.

    Torch 2.13 frees a deep chain of autograd nodes by recursion once Python wrappers have been
    made for its nodes (any walk makes them): dropping the last reference to a >= ~45k-deep chain
    leaf-first overflows the C stack (DESIGN.md, "Teardown hazard"). The safe order is: roots
    first, then the node references root-first, one node freed at a time. Two cases need care:
    - we are the last holder: drop our root tensors, then `fns[i] = None` ascending;
    - the user still holds a root (graph closed while the loss lives on): if we let go now, the
      user's later `del loss` frees the chain recursively and kills the process. For deep graphs
      we keep the node references ("parked") until every root tensor has died, then release them
      root-first; parked graphs are drained on the next garbage collection or capture, and left
      alone at interpreter exit (the process is ending; freeing them then is what would crash).

    Example:
        >>> refs = LiveRefs([z.grad_fn], [z], None)
        >>> refs.release(); refs.fns
        []
    """

    __slots__ = ("__weakref__", "by_fn", "fns", "grad_outputs", "root_tensors", "waiting_on")

    def __init__(
        self, fns: list, root_tensors: list, grad_outputs: tuple | None, by_fn: dict | None = None
    ) -> None:
        self.fns: list = fns
        self.by_fn: dict = by_fn if by_fn is not None else {fn: i for i, fn in enumerate(fns)}
        self.root_tensors: list = root_tensors
        self.grad_outputs = grad_outputs
        self.waiting_on: list = []

    def release(self) -> None:
        """Drop the roots, then the node references root-first (deep graphs whose roots the user
        still holds are parked until those roots die).

        Example:
            >>> refs = LiveRefs([z.grad_fn], [z], None); refs.release(); refs.root_tensors
            []
        """
        roots, self.root_tensors = self.root_tensors, []
        self.grad_outputs = None
        self.by_fn = {}  # a second reference to every node: drop it before the ordered loop
        deep = len(self.fns) >= DEEP_GRAPH_NODES
        refs = [weakref.ref(t) for t in roots] if deep else []
        for i in range(len(roots)):
            roots[i] = None
        del roots
        alive = [r for r in refs if r() is not None]
        if alive:
            self.waiting_on = alive
            if self not in _parked:
                _parked.append(self)
            _ensure_gc_hook()
            return
        self._release_nodes()

    def _release_nodes(self) -> None:
        fns = self.fns
        for i in range(len(fns)):
            fns[i] = None
        self.fns = []
        self.waiting_on = []


def drain_parked() -> None:
    """Release parked deep graphs whose root tensors have all died (safe order, root-first).

    Example:
        >>> drain_parked()  # a no-op when nothing is parked
    """
    if not _parked:
        return
    for live in list(_parked):
        if all(r() is None for r in live.waiting_on):
            _parked.remove(live)
            live._release_nodes()


_gc_hooked = False


def _gc_callback(phase: str, info: dict) -> None:
    if phase == "stop" and _parked:
        drain_parked()


def _ensure_gc_hook() -> None:
    global _gc_hooked
    if not _gc_hooked:
        gc.callbacks.append(_gc_callback)
        atexit.register(_leave_parked_at_exit)
        _gc_hooked = True


def _leave_parked_at_exit() -> None:
    drain_parked()
    if _parked:
        # Still-held roots will be torn down by interpreter finalization in no particular order;
        # keep our node references alive past it rather than free a deep chain leaf-first.
        if _gc_callback in gc.callbacks:
            gc.callbacks.remove(_gc_callback)
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(_parked))


def release(live: LiveRefs) -> None:
    """Release `live` (a function, so a `weakref.finalize` holds no bound method).

    Example:
        >>> release(LiveRefs([z.grad_fn], [z], None))
    """
    live.release()
