"""Breakpoints: where `Stepper.run()` stops.

A breakpoint is a node id or a predicate on `Node` records; both resolve to step numbers once, when
they change, so `run()` reads a sorted list and `at_breakpoint` a frozenset (no predicate is called
while running). A predicate that raises is not registered (later calls must not trip over it) and
its error is re-raised as a TypeError saying what a predicate receives.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ...core.records import Node
from .plan import Plan, node_id

__all__ = ["Breakpoints"]


class Breakpoints:
    """The breakpoints of one stepper, as step numbers.

    Args:
        plan: the stepper's plan (order, step of each node).
        nodes: the graph's node records by id (what predicates receive).

    Guarantees: `steps` is sorted, `step_set` the same steps; both are replaced (never mutated) on
    every change, so a caller may hold them.

    Example:
        >>> bp = Breakpoints(st.plan, g.nodes)
        >>> bp.add("n3")
        >>> bp.ids(), bp.steps, bp.step_set
        (['n3'], [3], frozenset({3}))
    """

    __slots__ = ("_ids", "_nodes", "_plan", "_preds", "step_set", "steps")

    def __init__(self, plan: Plan, nodes: Mapping[str, Node]) -> None:
        self._plan = plan
        self._nodes = nodes
        self._ids: set[str] = set()
        self._preds: list[Callable[[Node], bool]] = []
        #: Steps `run()` stops before, sorted.
        self.steps: list[int] = []
        self.step_set: frozenset[int] = frozenset()

    def add(self, target: str | Node | Callable[[Node], bool]) -> None:
        """Break before node `target` (an id or `Node`) or before every node the predicate accepts.

        Args:
            target: a node id, a `Node` record, or a callable taking a `Node` and returning a bool.

        Guarantees: an unknown id raises KeyError and a raising predicate a TypeError, and
        neither is registered.

        Example:
            >>> bp = Breakpoints(st.plan, g.nodes)
            >>> bp.add(lambda n: n.name == "AccumulateGrad"); bp.ids()
            ['n2', 'n3']
            >>> bp.add("n9")
            Traceback (most recent call last):
            KeyError: "no node 'n9' in this graph (ids look like 'n0', 'n1', ...)"
        """
        if callable(target) and not isinstance(target, Node):
            self._preds.append(target)
            try:
                self._update()
            except Exception as err:
                self._preds.pop()  # not registered: later calls must not trip over it
                self._update()
                raise TypeError(
                    f"the breakpoint predicate {getattr(target, '__name__', target)!r} raised "
                    f"{type(err).__name__}: {err}. It is called with each Node record "
                    "(fields id, name, kind, module, ...) and must return a bool, e.g. "
                    "lambda n: n.name == 'MulBackward0'"
                ) from err
            except BaseException:
                self._preds.pop()
                self._update()
                raise
            return
        nid = node_id(target)
        if nid not in self._plan.step_of:
            raise KeyError(f"no node {nid!r} in this graph (ids look like 'n0', 'n1', ...)")
        self._ids.add(nid)
        self._update()

    def clear(self, target: str | Node | Callable[[Node], bool] | None = None) -> None:
        """Remove one breakpoint (the id or the callable given to `add`), or all of them.

        Args:
            target: what was added, or None for everything.

        Example:
            >>> bp = Breakpoints(st.plan, g.nodes)
            >>> bp.add("n1"); bp.add("n3"); bp.clear("n1"); bp.ids()
            ['n3']
            >>> bp.clear(); bp.ids()
            []
        """
        if target is None:
            self._ids.clear()
            self._preds.clear()
        elif callable(target) and not isinstance(target, Node):
            self._preds = [p for p in self._preds if p is not target]
        else:
            self._ids.discard(node_id(target))
        self._update()

    def ids(self) -> list[str]:
        """Node ids `run()` stops before, in step order.

        Example:
            >>> bp = Breakpoints(st.plan, g.nodes)
            >>> bp.add("n3"); bp.add("n1"); bp.ids()
            ['n1', 'n3']
        """
        order = self._plan.order
        return [order[k] for k in self.steps]

    def _update(self) -> None:
        nodes, plan = self._nodes, self._plan
        steps = {plan.step_of[b] for b in self._ids}
        for pred in self._preds:
            steps.update(k for k, nid in enumerate(plan.order) if pred(nodes[nid]))
        self.steps = sorted(steps)
        self.step_set = frozenset(steps)
