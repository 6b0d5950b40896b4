"""One checkpoint group per pass: stepping by hand recomputes like the engine, and frees alike.

Outside the engine torch's graph-task id is -1, so a non-reentrant checkpoint
(`torch.utils.checkpoint.checkpoint(..., use_reentrant=False)`) recomputes its region for EVERY
saved-value read and keeps what it recomputed (DESIGN.md, "Checkpointed saved values"). Inside
one `torch.utils.checkpoint.GraphExecGroup` a region is recomputed at most once and each
recomputed value is dropped by torch when its node unpacks it: the engine's behaviour.
`RecomputeGroups` gives the stepper's state (stepstate.py) one group per PASS over the plan:

- every `advance` runs inside the pass's group (`scope()`: one `with` per call, nothing per
  node); the group is made when a pass's first step runs;
- a new pass (an advance from position 0: after `reset()`, or a replay) retires the previous
  group, and so does moving back over a step whose node unpacked checkpointed values (`back()`
  with kept tensors, a failed step): that node will be called again, and torch allows one
  unpack per group; `close()` retires it too;
- retiring frees what the group recomputed that no step consumed (nodes after the position),
  as `core.checkpoint.release_group` explains; a group no checkpoint touched costs nothing.
  After a completed pass nothing is pending (every node consumed its values): the group stays
  until the next pass, holding only torch's per-group bookkeeping.

Guarantees: groups never nest (inside a group the user entered, stepping uses theirs); on a
torch without `GraphExecGroup` (older than 2.10) `scope()` is a no-op and every read recomputes,
as before. On a torch with groups but no `SavedTensor.unpack_hook` (checkpointed values cannot be
found without unpacking) any move back retires a used group, and what a retired group recomputed
for nodes not reached yet stays alive until the graph goes (it cannot be found to free).
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any

from ...core.checkpoint import (
    ExecGroup,
    GraphExecGroup,
    checkpoint_frames,
    current_group,
    release_group,
)
from ...core.graph import BackwardGraph
from ...core.saved import saved_names
from ...util import compat
from .plan import Plan

__all__ = ["RecomputeGroups", "graph_frames", "node_frames"]


def node_frames(fn: Any, kind: str) -> list[Any]:
    """The checkpoint frames behind node `fn`'s saved values (`kind`: its `Node.kind`).

    Example:
        >>> node_frames(g.fn("n1"), "function")
        []
    """
    if kind in ("accumulate_grad", "cpp_function"):
        return []
    if kind == "custom_function":
        return checkpoint_frames(getattr(fn, "_raw_saved_tensors", ()))
    return checkpoint_frames(getattr(fn, "_raw_saved_" + s, None) for s in saved_names(fn))


def graph_frames(graph: BackwardGraph) -> tuple[list[Any], set[int]]:
    """Every checkpoint frame behind a saved value of a live graph, and the node numbers (`i` of
    "n<i>") whose saved values are checkpointed. Reads raw saved values only (no unpack).

    Example:
        >>> graph_frames(g)  # no checkpoint in z = x**2 + y
        ([], set())
    """
    fns = graph.require_live("find checkpoint regions").fns
    frames: dict[int, Any] = {}
    nodes: set[int] = set()
    for i, fn in enumerate(fns):
        found = node_frames(fn, graph.nodes[f"n{i}"].kind)
        if found:
            nodes.add(i)
            for f in found:
                frames.setdefault(id(f), f)
    return list(frames.values()), nodes


class RecomputeGroups:
    """The checkpoint group of the current pass of one stepper (see the module doc).

    Args:
        graph: the live graph being stepped.
        plan: its plan (`node_of`: step -> node number).

    Example:
        >>> groups = RecomputeGroups(g, st.plan)
        >>> with groups.scope(0, 4):
        ...     _ = g.fn("n1")(torch.tensor(1.0))
        >>> groups.retire(); groups.group is None
        True
    """

    def __init__(self, graph: BackwardGraph, plan: Plan) -> None:
        self.graph: BackwardGraph | None = graph
        self.plan = plan
        #: The current pass's group (None until a step runs in it).
        self.group: ExecGroup | None = None
        #: Steps below this may have run (unpacked their values) in the current group.
        self.reached = 0
        # Weak: a frame holds its region's inputs, which must die with the graph, not with us.
        self._frames: list[weakref.ref] | None = None
        self._nodes: set[int] = set()

    def _scan(self) -> None:
        if self._frames is None and self.graph is not None:
            frames, self._nodes = graph_frames(self.graph)
            self._frames = [weakref.ref(f) for f in frames]

    def scope(self, start: int, stop: int) -> contextlib.AbstractContextManager[Any]:
        """The context an `advance` from step `start` to `stop` runs in: the pass's group.

        A new pass (`start` 0) retires the previous group first; so does a move back over a
        step whose node unpacked checkpointed values in it (after `back()`, or a failed step:
        calling it again must recompute, torch allows one unpack per group).

        Example:
            >>> groups = RecomputeGroups(g, st.plan)
            >>> with groups.scope(0, 2):
            ...     pass
            >>> groups.group is not None, groups.reached
            (True, 2)
        """
        if GraphExecGroup is None or current_group() is not None:
            return contextlib.nullcontext()  # an old torch, or inside a group of the user's
        group = self.group
        if group is not None and start < self.reached and (start == 0 or self._recalls(start)):
            self.retire()
            group = None
        if group is None:
            group = self.group = ExecGroup()
            self.reached = 0
        self.reached = max(self.reached, stop)
        return group

    def _recalls(self, start: int) -> bool:
        """Would running steps `start`.. call again a node that unpacked checkpointed values
        in the current group?"""
        if self.group is None or not self.group.used:
            return False
        if not compat.SAVED_DATA:  # checkpointed values cannot be told apart: assume it does
            return True
        self._scan()
        node_of = self.plan.node_of
        return any(node_of[k] in self._nodes for k in range(start, self.reached))

    def retire(self) -> None:
        """End the current pass's group, freeing what it recomputed that no step consumed (a
        no-op when no checkpoint used it); the next step starts a new one.

        Example:
            >>> groups = RecomputeGroups(g, st.plan); _ = groups.scope(0, 1); groups.retire()
            >>> groups.group is None
            True
        """
        group, self.group = self.group, None
        self.reached = 0
        if group is None or not group.used:
            return
        self._scan()
        release_group(group, [f for f in (r() for r in self._frames or ()) if f is not None])

    def close(self) -> None:
        """Retire the group and drop the graph (the stepper is closing; it pins nothing).

        Example:
            >>> groups = RecomputeGroups(g, st.plan); groups.close(); groups.graph
        """
        self.retire()
        self.graph = None
