"""`track(model)`: stamp every autograd node created inside a module's forward with its path.

How: a forward pre-hook on every submodule notes the autograd sequence counter
(`torch._C._autograd._get_sequence_nr()`, the number the next node will get) and a forward hook
notes it again when the module returns. Sequence numbers grow monotonically per thread and a node's
inputs are always older than the node, so the nodes a call created are exactly those reachable from
its outputs whose number lies in [start, end). The innermost call stamps first; an outer call only
stamps what is still unstamped, looking up nodes that fall in a finished child's interval (created
there but not returned by it) so they still get the child's path.

Why not a TorchFunctionMode: composite ops (cross_entropy -> log_softmax + nll_loss) create
several nodes in one call and the mode only sees the last; the counter sees them all, for any
nesting, functional call (`torch.func.functional_call`) or module called more than once.

The stamp is the path as a `ModulePath`: a `str` (equal to the plain path, so anything reading
the key sees the dotted path) that also carries the tracked model's path -> class-name mapping,
so `capture()` can record each module's class (`graph.module_classes`) without `model=`.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.utils._pytree import tree_leaves

__all__ = ["MODULE_KEY", "ModulePath", "module_classes_of", "track"]

#: The one key this package writes into `node.metadata`.
MODULE_KEY = "autograd_widget.module"

_get_sequence_nr = torch._C._autograd._get_sequence_nr

#: Set once track() has been entered in this process; until then no node can carry our key, so
#: capture() skips reading `node.metadata` (which allocates).
ever_used = False


class ModulePath(str):
    """A module path stamped by `track()`: the dotted path itself, plus `classes`, the tracked
    model's path -> class `__name__` mapping (shared by every stamp of one `track()` block).

    Example:
        >>> p = ModulePath("0", {"": "Sequential", "0": "Linear"})
        >>> p == "0", p.classes[p], type(str(p)) is str
        (True, 'Linear', True)
    """

    classes: dict[str, str]

    def __new__(cls, path: str, classes: dict[str, str]) -> ModulePath:
        self = super().__new__(cls, path)
        self.classes = classes
        return self


def module_classes_of(model: torch.nn.Module) -> dict[str, str]:
    """Every module path of `model` ("" for the model itself) -> its class `__name__`.

    A module reachable under several paths is listed under each.

    Example:
        >>> module_classes_of(model)
        {'': 'Sequential', '0': 'Linear', '1': 'ReLU', '2': 'Linear'}
    """
    return {
        path: type(mod).__name__ for path, mod in model.named_modules(remove_duplicate=False)
    }


class _Frame:
    __slots__ = ("children", "children_starts", "path", "start")

    def __init__(self, path: str, start: int) -> None:
        self.path = path
        self.start = start
        # Finished direct child calls, in call order (so sorted by start): (start, end, frame).
        self.children_starts: list[int] = []
        self.children: list[tuple[int, int, _Frame]] = []

    def innermost_path(self, seq: int) -> str:
        frame = self
        while True:
            k = bisect.bisect_right(frame.children_starts, seq) - 1
            if k < 0:
                return frame.path
            start, end, child = frame.children[k]
            if not (start <= seq < end):
                return frame.path
            frame = child


class _Tracker:
    def __init__(self, model: torch.nn.Module) -> None:
        self.local = threading.local()
        self.handles: list[Any] = []
        paths: dict[int, str] = {}
        classes = module_classes_of(model)
        for path, mod in model.named_modules(remove_duplicate=False):
            paths.setdefault(id(mod), path)
        stamps = {path: ModulePath(path, classes) for path in set(paths.values())}
        for mod in model.modules():
            path = stamps[paths[id(mod)]]
            self.handles.append(mod.register_forward_pre_hook(self._pre_hook(path)))
            self.handles.append(mod.register_forward_hook(self._post_hook(), always_call=True))

    def _stack(self) -> list[_Frame]:
        stack = getattr(self.local, "stack", None)
        if stack is None:
            stack = self.local.stack = []
        return stack

    def _pre_hook(self, path: str):
        def hook(module: torch.nn.Module, args: Any) -> None:
            self._stack().append(_Frame(path, _get_sequence_nr()))

        return hook

    def _post_hook(self):
        def hook(module: torch.nn.Module, args: Any, output: Any) -> None:
            stack = self._stack()
            if not stack:
                return
            frame = stack.pop()
            end = _get_sequence_nr()
            if output is not None:
                _stamp(output, frame, end)
            if stack:
                parent = stack[-1]
                parent.children_starts.append(frame.start)
                parent.children.append((frame.start, end, frame))

        return hook

    def remove(self) -> None:
        for h in self.handles:
            h.remove()
        self.handles.clear()


def _stamp(output: Any, frame: _Frame, end: int) -> None:
    start = frame.start
    todo = []
    for t in tree_leaves(output):
        if isinstance(t, torch.Tensor) and t.grad_fn is not None:
            todo.append(t.grad_fn)
    seen: set = set()
    while todo:
        fn = todo.pop()
        if fn in seen:
            continue
        seen.add(fn)
        seq = fn._sequence_nr()
        if not (start <= seq < end):
            continue  # created before this call (or an AccumulateGrad): not ours, nor its inputs
        md = fn.metadata
        if MODULE_KEY not in md:
            md[MODULE_KEY] = frame.innermost_path(seq)
        for nxt, _ in fn.next_functions:
            if nxt is not None:
                todo.append(nxt)


@contextmanager
def track(model: torch.nn.Module) -> Iterator[torch.nn.Module]:
    """Within the block, stamp each node created in `model`'s forward with its module path.

    The path is the dotted name of the innermost module running ("" for the top module's own
    ops); ops outside the model (e.g. the loss) get none. Hooks are removed on exit, even on error.
    The stamp is the only write this package makes to torch objects (`node.metadata`).

    Example:
        >>> with aw.track(model):
        ...     out = model(torch.randn(2, 4))
        >>> g = aw.capture(out.sum(), model=model)
        >>> sorted({n.module for n in g.nodes.values() if n.module is not None})
        ['0', '1', '2']
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(
            f"track() needs a torch.nn.Module, got {type(model).__name__}; wrap the forward of "
            "that module: `with aw.track(model): loss = model(x).sum()`"
        )
    global ever_used
    ever_used = True
    tracker = _Tracker(model)
    try:
        yield model
    finally:
        tracker.remove()
