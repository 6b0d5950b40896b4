"""Breakpoints: where `run()` stops, for a `Stepper` and a `Replay` alike (runbase.py).

A breakpoint is a STEP: `break_at` adds the steps of the nodes a target names (an id or a `Node`)
or accepts (a predicate on `Node` records), `clear` removes them, whichever way they were set.
So breakpoints are a set of nodes with one meaning: after `clear(target)` no node of `target`
breaks, and a predicate is called once, when the set changes (never while running: `run()` reads
a sorted list, `at_breakpoint` a frozenset). A predicate that raises changes nothing (later calls
must not trip over it) and its error is re-raised as a TypeError saying what a predicate receives.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...core.records import Node

__all__ = ["Breakpoints"]


class Breakpoints:
    """The breakpoints of one run, as step numbers.

    Args:
        order: node ids, one per step (the run's `order`).
        records: the `Node` record of each step (what predicates receive).
        step_index: the step of an id or `Node`, with the run's own KeyError for one not in
            `order` and TypeError for anything else.

    Guarantees: `steps` is sorted, `step_set` the same steps; both are replaced (never mutated) on
    every change, so a caller may hold them.

    Example:
        >>> bp = Breakpoints(st.order, st.plan.records, st.step_index)
        >>> bp.add("n3")
        >>> bp.ids(), bp.steps, bp.step_set
        (['n3'], [3], frozenset({3}))
    """

    __slots__ = ("_order", "_records", "_step_index", "step_set", "steps")

    def __init__(
        self, order: Sequence[str], records: Sequence[Node], step_index: Callable[[str | Node], int]
    ) -> None:
        self._order = order
        self._records = records
        self._step_index = step_index
        #: Steps `run()` stops before, sorted.
        self.steps: list[int] = []
        self.step_set: frozenset[int] = frozenset()

    def add(self, target: str | Node | Callable[[Node], bool]) -> None:
        """Break before node `target` (an id or `Node`) or before every node the predicate accepts.

        Args:
            target: a node id, a `Node` record, or a callable taking a `Node` and returning a bool.

        Guarantees: an unknown id raises KeyError and a raising predicate a TypeError, and
        neither changes anything.

        Example:
            >>> bp = Breakpoints(st.order, st.plan.records, st.step_index)
            >>> bp.add(lambda n: n.name == "AccumulateGrad"); bp.ids()
            ['n2', 'n3']
            >>> bp.add("n9")
            Traceback (most recent call last):
            KeyError: "no node 'n9' in this graph (ids look like 'n0', 'n1', ..., ...)"
        """
        self._set(self.step_set | self._steps_of(target))

    def clear(self, target: str | Node | Callable[[Node], bool] | None = None) -> None:
        """Remove the breakpoints on the nodes `target` names or accepts (however they were set),
        or all of them (None).

        Args:
            target: a node id, a `Node`, a predicate (any: it is asked about each node), or None.

        Example:
            >>> bp = Breakpoints(st.order, st.plan.records, st.step_index)
            >>> bp.add(lambda n: True); bp.clear("n1"); bp.ids()
            ['n0', 'n2', 'n3']
            >>> bp.clear(lambda n: n.name == "AccumulateGrad"); bp.ids()
            ['n0']
            >>> bp.clear(); bp.ids()
            []
        """
        self._set(frozenset() if target is None else self.step_set - self._steps_of(target))

    def ids(self) -> list[str]:
        """Node ids `run()` stops before, in step order.

        Example:
            >>> bp = Breakpoints(st.order, st.plan.records, st.step_index)
            >>> bp.add("n3"); bp.add("n1"); bp.ids()
            ['n1', 'n3']
        """
        order = self._order
        return [order[k] for k in self.steps]

    def _steps_of(self, target: str | Node | Callable[[Node], bool]) -> frozenset[int]:
        if not callable(target) or isinstance(target, Node):
            return frozenset((self._step_index(target),))
        try:
            return frozenset(k for k, node in enumerate(self._records) if target(node))
        except Exception as err:
            raise TypeError(
                f"the breakpoint predicate {getattr(target, '__name__', target)!r} raised "
                f"{type(err).__name__}: {err}. It is called with each Node record "
                "(fields id, name, kind, module, ...) and must return a bool, e.g. "
                "lambda n: n.name == 'MulBackward0'"
            ) from err

    def _set(self, steps: frozenset[int]) -> None:
        self.steps = sorted(steps)
        self.step_set = steps
