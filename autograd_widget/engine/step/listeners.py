"""Listeners: how a view stays in sync when the stepper is driven from Python.

The stepper calls `notify()` after every change of state (step, back, run, reset, an edit); each
listener is then called with the stepper. Inside a `batch()` the notifications are merged: one call
when the outermost batch exits, if anything changed. Exceptions from a listener propagate (a broken
view should be loud, not silently out of sync).

Guarantees: listeners are called in the order they were added, over a copy of the list (a listener
may remove itself); removal compares with `==`, not `is` (a bound method is a new object at every
attribute access).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["ListenerHandle", "Listeners"]


class ListenerHandle:
    """What `Stepper.add_listener` returns: removes the listener, also as a context manager
    (like `torch.utils.hooks.RemovableHandle`).

    Args:
        listeners: the registry the listener was added to.
        fn: the listener.

    Guarantees: `remove()` is idempotent; leaving the `with` block removes the listener.

    Example:
        >>> with st.add_listener(lambda s: print("at", s.position)):
        ...     _ = st.step()
        at 1
        >>> _ = st.step()  # removed on leaving the block: nothing printed
    """

    __slots__ = ("fn", "listeners")

    def __init__(self, listeners: Listeners, fn: Callable[[Any], None]) -> None:
        self.listeners = listeners
        self.fn = fn

    def remove(self) -> None:
        """Stop calling the listener (a no-op once removed).

        Example:
            >>> handle = st.add_listener(print)
            >>> handle.remove(); handle.remove()  # idempotent
            >>> _ = st.step()  # nothing printed
        """
        self.listeners.remove(self.fn)

    def __enter__(self) -> ListenerHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


class Listeners:
    """The listeners of one stepper and its batch depth (see the module doc).

    It holds no reference to its owner (the stepper passes itself to `notify` and `batch`): a
    cycle would keep a closed stepper's tensors alive until the garbage collector runs.

    Guarantees: `notify()` calls each listener once per change, or once per outermost batch.

    Example:
        >>> ls = Listeners()
        >>> _ = ls.add(print)
        >>> with ls.batch("owner"):
        ...     ls.notify("owner")
        ...     ls.notify("owner")
        owner
    """

    __slots__ = ("_depth", "_dirty", "_fns")

    def __init__(self) -> None:
        self._fns: list[Callable[[Any], None]] = []
        self._depth = 0
        self._dirty = False

    def add(self, fn: Callable[[Any], None]) -> ListenerHandle:
        """Call `fn(owner)` after every change; returns a handle that removes it.

        Args:
            fn: the listener.

        Example:
            >>> Listeners().add(print).remove()
        """
        self._fns.append(fn)
        return ListenerHandle(self, fn)

    def remove(self, fn: Callable[[Any], None]) -> None:
        """Remove every registration of `fn` (compared with `==`); a no-op if none.

        Args:
            fn: the listener.

        Example:
            >>> Listeners().remove(print)
        """
        # == not `is`: a bound method is a new object at every attribute access.
        self._fns = [f for f in self._fns if f != fn]

    @contextlib.contextmanager
    def batch(self, owner: Any) -> Iterator[None]:
        """Merge the notifications inside into one, sent when the outermost batch exits.

        Args:
            owner: what the listeners are called with then.

        Guarantees: the merged notification is sent also when the block raises.

        Example:
            >>> with Listeners().batch(None):
            ...     pass
        """
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0 and self._dirty:
                self.notify(owner)

    def notify(self, owner: Any) -> None:
        """Call every listener with `owner` now, or mark a change inside a batch.

        Args:
            owner: what each listener is called with (the stepper).

        Example:
            >>> Listeners().notify(None)
        """
        if self._depth:
            self._dirty = True
            return
        self._dirty = False
        for fn in list(self._fns):
            fn(owner)
