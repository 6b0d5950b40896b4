"""The Ctrl-C guard: make SIGINT (also a notebook's interrupt button) safe while stepping.

A SIGINT that lands inside a node's own code (a custom Function's backward, a Python subclass's
dispatch) raises KeyboardInterrupt there: the stepper rolls that step back whole. One that lands
anywhere else (between nodes, in the stepper's bookkeeping or summaries, where an exception could
leave a half-recorded step) lowers the loop's limit so it stops at the next step boundary, and is
raised once the state is complete. Either way the stepper is left at a step boundary, consistent,
and `back()`/`reset()`/`run()` work. Only in the main thread and only over Python's default SIGINT
handler (anything else is left alone).

"Inside a node's own code" is decided from the interrupted frame: walk up to the stepper loop's
frame (`loop_code`); the frame just below it is the node's if it is one of the loop's in-step
helpers (`calls.IN_STEP_CODES`) or any code outside this package (a C node calls straight into the
user's Python). A replay (`limit is None` while guarded) is never deferred: the stepper restores
its old state whole instead.

The handler is installed and removed on every `step()`, so it uses the C functions behind
`signal.signal`/`signal.getsignal`, without their enum conversions (10 us a pair, more than a small
step).
"""

from __future__ import annotations

import _signal
import os
import signal
import threading
from types import CodeType
from typing import Any

__all__ = ["Guard", "GuardScope"]

_SIGINT = int(signal.SIGINT)
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _ours(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_PACKAGE_DIR)


class Guard:
    """The SIGINT state of one stepper: whether a handler is installed, a deferred interrupt, and
    the running loop's limit (a one-element list the loop reads at every step).

    Args:
        loop_code: the code object of the stepper's loop (`state.ADVANCE_CODE`).
        in_step: code objects of the functions the loop calls inside a step on the user's behalf.

    Guarantees: `scope()` installs the handler for one move (nested scopes share the outer one);
    a deferred Ctrl-C is raised when the outermost scope exits normally.

    Example:
        >>> from autograd_widget.engine.step.calls import IN_STEP_CODES
        >>> from autograd_widget.engine.step.stepstate import ADVANCE_CODE
        >>> guard = Guard(ADVANCE_CODE, IN_STEP_CODES)
        >>> with guard.scope():  # in the main thread, over Python's default SIGINT handler
        ...     guard.guarded
        True
        >>> guard.guarded
        False
    """

    __slots__ = ("guarded", "in_step", "limit", "loop_code", "sigint")

    def __init__(self, loop_code: CodeType, in_step: frozenset[CodeType]) -> None:
        self.loop_code = loop_code
        self.in_step = in_step
        #: A handler of ours is installed (by the outermost scope).
        self.guarded = False
        #: A Ctrl-C arrived outside a node and waits for the scope's exit.
        self.sigint = False
        #: The running loop's `[stop]` (lowered to 0 by a deferred Ctrl-C); None in a replay.
        self.limit: list[int] | None = None

    def scope(self) -> GuardScope:
        """A context manager guarding one move (or one batch of moves).

        Guarantees: see the module doc; outside the main thread, or when SIGINT has a handler
        other than Python's default, it does nothing.

        Example:
            >>> guard = Guard(Guard.scope.__code__, frozenset())  # codes: only on_sigint reads them
            >>> with guard.scope():
            ...     with guard.scope():  # nested: the outer scope owns the handler
            ...         signal.getsignal(signal.SIGINT) == guard.on_sigint
            True
        """
        return GuardScope(self)

    def on_sigint(self, signum: int, frame: Any) -> None:
        """The SIGINT handler while guarded: raise in the node's code, else defer (module doc).

        Args:
            signum: the signal number (SIGINT).
            frame: the interrupted frame.

        Guarantees: raises KeyboardInterrupt only where the step can be rolled back whole.

        Example:
            >>> guard = Guard(Guard.scope.__code__, frozenset())
            >>> guard.limit = [5]  # the running loop's stop
            >>> guard.on_sigint(signal.SIGINT, None)  # not inside the loop's frame: deferred
            >>> guard.sigint, guard.limit
            (True, [0])
        """
        child = None
        f = frame
        loop = self.loop_code
        while f is not None and f.f_code is not loop:
            child, f = f, f.f_back
        if f is not None and (
            self.limit is None  # a replay: the stepper restores the old state
            or (
                child is not None
                and (child.f_code in self.in_step or not _ours(child.f_code.co_filename))
            )
        ):
            raise KeyboardInterrupt
        self.sigint = True
        if self.limit is not None:
            self.limit[0] = 0


class GuardScope:
    """`Guard.scope()`: the SIGINT handler installed for one move (or one batch).

    Args:
        guard: the stepper's `Guard`.

    Guarantees: the previous handler is restored on exit, also on error.

    Example:
        >>> guard = Guard(Guard.scope.__code__, frozenset())
        >>> with GuardScope(guard):
        ...     signal.getsignal(signal.SIGINT) == guard.on_sigint
        True
        >>> signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
        True
    """

    __slots__ = ("guard", "outer", "previous")

    def __init__(self, guard: Guard) -> None:
        self.guard = guard
        self.previous: Any = None
        self.outer = False

    def __enter__(self) -> None:
        g = self.guard
        if g.guarded:  # inside an outer guard (a batch): it owns the handler
            self.outer = True
            return
        if (
            threading.current_thread() is not threading.main_thread()
            or _signal.getsignal(_SIGINT) is not signal.default_int_handler
        ):
            return
        g.sigint = False
        g.guarded = True
        self.previous = _signal.signal(_SIGINT, g.on_sigint)

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        g = self.guard
        if self.previous is not None:
            _signal.signal(_SIGINT, self.previous)
            self.previous = None
            g.guarded = False
            g.limit = None
        elif not self.outer:
            return
        # A deferred Ctrl-C: raise it now that the state is complete (here, at a step boundary).
        if g.sigint and exc_type is None:
            g.sigint = False
            raise KeyboardInterrupt
