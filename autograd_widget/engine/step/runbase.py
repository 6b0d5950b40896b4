"""What every stepped backward run shares, written once: `RunBase`, the base of `Stepper` (a live
graph, stepper.py) and `Replay` (a recording, engine/record/replay.py).

The two classes differ in how they move (calling nodes, or reading what the engine recorded) and
where they read gradients from; everything else a view relies on is here, so the two cannot
drift apart: the order and what is read through the position (`order`, `done`,
`next_node`), the step that just failed (`failure`, `last_error`), breakpoints (breakpoints.py,
one meaning for both), listeners (listeners.py), `history`, `step_info` and `first_birth` built
on the subclass's `record` and `nonfinite_origins`, and closing.

Every public member's meaning is documented once, in engine/interface.py (`Stepping`); the
docstrings here say how the shared part keeps it. tests/engine/step/test_interface_contract.py
runs a `Stepper` and a `Replay` of the same program through the same calls and compares them.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, TypeVar

from ...core.records import Node
from .breakpoints import Breakpoints
from .listeners import ListenerHandle, Listeners
from .results import History, ReadOnlyList, StepInfo, StepRecord

if TYPE_CHECKING:
    from ..diagnose.origins import Origin

__all__ = ["RunBase"]

R = TypeVar("R", bound="RunBase")


class RunBase(ABC):
    """The shared half of a stepped backward run (see the module docstring).

    Args:
        order: node ids, one per step, in the order they run.
        records: the `Node` record of each step (what a breakpoint predicate receives).
        step_index: the step of a node id or `Node`: KeyError for a node not in `order`,
            TypeError for anything else (the subclass's own lookup, with its own message).
        closed_message: what a move after `close()` raises, naming how to get a new run.

    A subclass provides `position`, `record`, `nonfinite_origins` and the moves; it sets
    `_failure` on every move (the failed record, or None) and calls `_changed()` after it.

    Example:
        >>> isinstance(st, RunBase), st.order[:2], st.breakpoints
        (True, ['n0', 'n2'], [])
    """

    def __init__(
        self, order: Sequence[str], records: Sequence[Node],
        step_index: Callable[[str | Node], int], closed_message: str,
    ) -> None:  # fmt: skip
        self._order = ReadOnlyList(order)
        self._breaks = Breakpoints(self._order, records, step_index)
        self._listeners = Listeners()
        self._failure: StepRecord | None = None
        self._closed = False
        self._closed_message = closed_message
        #: Node id -> why its Jacobian probe failed, from the last `jacobian_norms()` call
        #: (always empty for a run that cannot probe).
        self.probe_errors: dict[str, str] = {}

    # ----------------------------------------------------------------- what a subclass provides
    @property
    @abstractmethod
    def position(self) -> int:
        """Number of steps done (0..len(order))."""

    @abstractmethod
    def record(self, index: int) -> StepRecord:
        """The record of step `index` (< position, else IndexError): what `history`,
        `step_info` and a view's inspector read.

        Example:
            >>> _ = st.step(); st.record(0).node.id
            'n0'
        """

    @abstractmethod
    def nonfinite_origins(self) -> list[Origin]:
        """Per node that produced or received a NaN/Inf so far (engine/interface.py): what
        `first_birth` reads.

        Example:
            >>> _ = st.run(); st.nonfinite_origins()
            []
        """

    # ----------------------------------------------------------------- the order and the position
    @property
    def order(self) -> list[str]:
        """Node ids in the order they run, one per step (read-only, built once, never copied)."""
        return self._order

    @property
    def done(self) -> bool:
        """True when every step ran (position == len(order)); a failing node is never done."""
        return self.position == len(self._order)

    @property
    def next_node(self) -> str | None:
        """Id of the node the next `step()` runs, None when done."""
        return None if self.done else self._order[self.position]

    @property
    def closed(self) -> bool:
        """True once `close()` was called (every move then raises RuntimeError)."""
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(self._closed_message)

    # ----------------------------------------------------------------- the step that failed
    @property
    def failure(self) -> StepRecord | None:
        """The record of the step that just failed (cleared by any successful move)."""
        return self._failure

    @property
    def last_error(self) -> tuple[str, str] | None:
        """(node id, error message) of the step that just failed, else None."""
        f = self._failure
        return None if f is None else (f.node.id, f.error or "")

    # ----------------------------------------------------------------- breakpoints
    @property
    def at_breakpoint(self) -> bool:
        """True when the next node to run is a breakpoint (where `run()` stops)."""
        return not self.done and self.position in self._breaks.step_set

    def break_at(self, target: str | Node | Callable[[Node], bool]) -> list[str]:
        """Stop `run()` before a node, or before every node a predicate accepts.

        Args:
            target: a node id (or `Node`), or a callable taking a `Node` record, returning bool.

        Guarantees: returns every node id that now breaks, in step order (`breakpoints`); an
        id not in `order` raises KeyError, a predicate that raises a TypeError, and neither
        changes anything.

        Example:
            >>> st.break_at(lambda n: n.name == "PowBackward0"), st.run().node.id  # stops before n1
            (['n1'], 'n2')
        """
        self._breaks.add(target)
        return self.breakpoints

    def clear_breakpoints(self, target: str | Node | Callable[[Node], bool] | None = None) -> None:
        """Remove the breakpoints on the nodes `target` names (an id or `Node`) or accepts (a
        predicate, any callable: not only the one given to `break_at`), or all of them (None).

        Guarantees: afterwards no node of `target` is in `breakpoints`, however its breakpoint
        was set; the others stay.

        Example:
            >>> _ = st.break_at(lambda n: True); st.clear_breakpoints("n1"); st.breakpoints
            ['n0', 'n2', 'n3']
            >>> st.clear_breakpoints(lambda n: n.kind == "accumulate_grad"); st.breakpoints
            ['n0']
        """
        self._breaks.clear(target)

    @property
    def breakpoints(self) -> list[str]:
        """Node ids `run()` stops before, in step order."""
        return self._breaks.ids()

    def _run_stop(self, stop: int) -> int:
        """Where a `run()` from here towards `stop` ends: before the first breakpoint after the
        current position (a run that starts on one executes it first), else at `stop`."""
        pos = self.position
        for b in self._breaks.steps:
            if pos < b < stop:
                return b
        return stop

    # ----------------------------------------------------------------- reading, on `record`
    @property
    def history(self) -> Sequence[StepRecord]:
        """Records of the steps done so far, in order (built on access)."""
        return History(lambda: self.position, self.record)

    def step_info(self, index: int) -> StepInfo:
        """Node, called/no-gradient and time of step `index` (< position), from its record.

        Example:
            >>> _ = st.run(); RunBase.step_info(st, 1).node
            'n2'
        """
        rec = self.record(index)
        return StepInfo(index, rec.node.id, rec.called, rec.no_gradient, rec.seconds)

    def first_birth(self) -> Origin | None:
        """The first "born" origin of `nonfinite_origins()`, or None.

        Example:
            >>> _ = st.run(); RunBase.first_birth(st) is None
            True
        """
        return next((o for o in self.nonfinite_origins() if o.kind == "born"), None)

    # ----------------------------------------------------------------- listeners
    def add_listener(self: R, fn: Callable[[R], None]) -> ListenerHandle:
        """Call `fn(run)` after every change of state (step, back, run, reset, edits): how a
        view stays in sync when the run is driven from Python. Exceptions propagate.

        Guarantees: returns a handle whose `remove()` (or leaving its `with` block) removes `fn`;
        `remove_listener(fn)` works too.

        Example:
            >>> with st.add_listener(lambda s: print(s.position)):
            ...     _ = st.step()
            1
        """
        return self._listeners.add(fn)

    def remove_listener(self: R, fn: Callable[[R], None]) -> None:
        """Stop calling `fn`, a listener given to `add_listener` (compared with `==`, so a bound
        method works); a no-op if absent.

        Example:
            >>> _ = st.add_listener(print); st.remove_listener(print); _ = st.step()  # no output
        """
        self._listeners.remove(fn)

    @contextlib.contextmanager
    def batch(self: R) -> Iterator[R]:
        """Group many moves into one notification, sent when the outermost batch exits.

        Example:
            >>> with st.add_listener(print), st.batch(): _ = st.step(); _ = st.step()
            <Stepper step 2/4, keep='summaries', create_graph=False>
        """
        with self._listeners.batch(self), self._batch_scope():
            yield self

    def _batch_scope(self) -> contextlib.AbstractContextManager[object]:
        """What else a batch holds for its whole length (the stepper: one Ctrl-C guard)."""
        return contextlib.nullcontext()

    def _changed(self) -> None:
        """Tell the listeners the state changed."""
        self._listeners.notify(self)
