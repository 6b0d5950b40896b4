"""Non-finite origins of a stepper's run: what `Stepper.nonfinite_origins()` and `first_birth()` do.

Why it costs the stepping loop nothing: the loop is not touched. The labels (born / propagated /
healed, diagnose/origins.py) come from the edges' summaries, which the stepper computes anyway
(their NaN/Inf counts; `StepState.edge_summaries` completes any still queued, in one batch), and
only the nodes an edge with a NaN/Inf touches are looked at. The cause of a "born" node needs its
incoming gradient tensors: they are in the slots while tensors are kept (`keep="tensors"`, or a
step inside an int budget); otherwise ONE replay from the start (`StepState.rebuild`, exact:
CPU kernels are deterministic) retains the born nodes' input slots, and the tensors are dropped
again right after, back to the engine-like memory profile. Causes are cached per (node, step)
until the set of what-if edits changes (an edit changes the gradients, so the causes).

When a born node's saved values were already non-finite in the forward, the forward op that made
them is named too (diagnose/forward.py, read on the live graph: the `Origin`'s forward fields).

A node whose NaN comes from a what-if edit on one of its outgoing edges is "born" with the edit as
its cause. A node whose input slot is a fan-in sum that overflowed while every addend was finite
is "born" there, with that as its cause (the engine's input buffer did the sum, not a node).

Guarantees: the stepper's position, slots, records and summaries are what they were before
(a replay puts everything back); a failing replay (the graph changed since) falls back to the
summaries, and `birth_cause` never raises; saved values of checkpointed nodes are not read.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import torch

from ...core.summary import Summary
from ..diagnose.causes import counts_of, describe_counts, dtype_max
from ..diagnose.origins import Locator, Origin, birth_cause, classify, loss_scale
from .plan import ACCUMULATE

if TYPE_CHECKING:
    from ...core.records import Edge
    from .edits import Edits
    from .stepstate import StepState

__all__ = ["StepOrigins", "first_nonfinite"]

Row = tuple[int, str, list[Summary | None], list[Summary | None]]


def _slot_summary(state: StepState, s: int) -> Summary | None:
    """What slot `s` of a step that ran received: its one edge's summary (stored, so computed
    once) when a single edge feeds it, else the slot's own (a fan-in sum, a root seed)."""
    ei = state.plan.slot_edge[s]
    if ei >= 0:
        return state.summary_of(ei)
    v = state.slot_view(s)
    return Summary.of(v) if isinstance(v, torch.Tensor) else v


def _bad(s: Summary | None) -> bool:
    return s is not None and (s.nan > 0 or s.inf > 0)


def first_nonfinite(state: StepState) -> tuple[Edge, Summary] | None:
    """The first edge, in execution order, whose gradient holds a NaN or an Inf (among the steps
    `state` has done; an edge inside an open compiled region included).

    Example:
        >>> state = st._state  # StepState is internal: the Stepper's own is the only route
        >>> state.advance(4); first_nonfinite(state) is None
        True
    """
    state.edge_summaries()
    plan = state.plan
    for k in range(state.pos):
        for ei in plan.out_edges[k]:
            if state.edge_val[ei] is None:
                continue
            s = state.summary_of(ei)
            if s is not None and not s.finite:
                return state.graph.edge(plan.edge_ids[ei]), s
    return None


class StepOrigins:
    """The origins finder of one stepper (it holds only the cache of causes).

    Example:
        >>> a = torch.zeros(3, requires_grad=True)
        >>> s = aw.Stepper(aw.capture(a.sqrt().sum())); _ = s.run()
        >>> [(o.node, o.kind) for o in s.nonfinite_origins()]  # a StepOrigins at work
        [('n1', 'born'), ('n2', 'propagated')]
    """

    def __init__(self) -> None:
        self._causes: dict[tuple[str, int], tuple[str, bool]] = {}
        self._seq = -1
        self._scale: tuple[float | None] | None = None

    def origins(self, state: StepState, edits: Edits, *, first: bool = False) -> list[Origin]:
        """The origins over the steps `state` has done, in step order.

        Args:
            state: the stepper's state.
            edits: its what-if edits (an edited edge is a cause; their `seq` keys the cache).
            first: only the first "born" origin (its cause alone is computed).

        Example:
            >>> a = torch.zeros(3, requires_grad=True)
            >>> s = aw.Stepper(aw.capture(a.sqrt().sum())); _ = s.run()
            >>> s.first_birth().cause  # StepOrigins.origins(..., first=True)
            'saved `result` has 3 zeros: the derivative of sqrt at 0 is infinite'
        """
        if edits.seq != self._seq:
            self._causes.clear()
            self._seq = edits.seq
        rows: list[Row] = []
        fanin: dict[int, str] = {}
        for row in self._rows(state, fanin):
            if first:
                label = classify([row])
                if label and label[0].kind == "born":
                    rows = [row]
                    break
            else:
                rows.append(row)
        else:
            if first:
                return []
        labelled = classify(rows)
        born = [o for o in labelled if o.kind == "born"]
        if not born:
            return labelled
        causes = self._born_causes(state, edits, born, fanin)
        return classify(
            rows,
            {nid: c[0] for nid, c in causes.items()},
            expected={nid: c[1] for nid, c in causes.items()},
        )

    # ------------------------------------------------------------------ labels
    def _rows(self, state: StepState, fanin: dict[int, str]) -> Iterator[Row]:
        """Summaries in/out of every step an edge with a NaN/Inf touches (plus roots seeded with
        one), in step order; the fan-in overflow sentences go to `fanin` (step -> sentence)."""
        plan, graph, pos = state.plan, state.graph, state.pos
        sums = state.edge_summaries()
        steps: set[int] = set()
        for eid, s in sums.items():
            if s.nan or s.inf:
                ei = plan.edge_index[eid]
                steps.add(plan.edge_step[ei])
                d = plan.step_of[graph.edge(eid).dst]
                if d < pos:
                    steps.add(d)
        for slot, seed in state.seeds:
            k = plan.step_of[f"n{plan.slot_node[slot]}"]
            if k < pos and counts_of(seed) != (0, 0):
                steps.add(k)
        for k in sorted(steps):
            a, n = plan.start[k], plan.arity[k]
            gin = [_slot_summary(state, s) for s in range(a, a + n)]
            gout = [sums.get(plan.edge_ids[ei]) for ei in plan.out_edges[k]]
            for i in range(n):
                note = self._fanin_overflow(state, sums, k, i, gin[i])
                if note is not None and any(_bad(s) for s in gout):
                    fanin[k] = note
                    gin[i] = None  # the sum is where it is born: this node received it
            yield (k, plan.order[k], gin, gout)

    @staticmethod
    def _fanin_overflow(
        state: StepState, sums: dict[str, Summary], k: int, slot: int, got: Summary | None
    ) -> str | None:
        """The sentence when slot `slot` of step k holds a non-finite sum of finite gradients."""
        plan = state.plan
        s = plan.start[k] + slot
        if not _bad(got) or plan.slot_contrib[s] < 2:
            return None
        nid = plan.order[k]
        parts = [sums.get(e.id) for e in state.graph.in_edges(nid) if e.input_nr == slot]
        seeds = [seed for rs, seed in state.seeds if rs == s]
        if any(_bad(p) for p in parts) or any(counts_of(t) != (0, 0) for t in seeds):
            return None
        dt = got.dtype  # type: ignore[union-attr]
        return (
            f"the sum of {len(parts) + len(seeds)} finite gradients arriving in slot {slot} "
            f"overflowed {dt} (largest value {dtype_max(dt):.6g}): "
            f"{describe_counts(got.nan, got.inf)}"  # type: ignore[union-attr]
        )

    # ------------------------------------------------------------------ causes
    def _born_causes(
        self, state: StepState, edits: Edits, born: list[Origin], fanin: dict[int, str]
    ) -> dict[str, tuple[str, bool]]:
        plan = state.plan
        by_edge = edits.by_edge()
        out: dict[str, tuple[str, bool]] = {}
        todo: list[Origin] = []
        for o in born:
            cached = self._causes.get((o.node, o.step))
            edited = [
                plan.edge_ids[ei]
                for ei in plan.out_edges[o.step]
                if plan.edge_ids[ei] in by_edge and _bad(state.summary_of(ei))
            ]
            if cached is not None:
                out[o.node] = cached
            elif edited:
                info = by_edge[edited[0]]
                out[o.node] = (f"the what-if edit ({info.kind}) on edge {edited[0]} made it", False)
            elif o.step in fanin:
                out[o.node] = (fanin[o.step], False)
            else:
                todo.append(o)
        if todo:
            scale = self._loss_scale(state)
            locator = _locator(state)
            inputs = _input_tensors(state, [o.step for o in todo])
            for o in todo:
                k = o.step
                gout = [_output(state, ei) for ei in plan.out_edges[k]]
                try:  # an op of a compiled region has no node of its own: its name says it
                    fn = _OpName(o.node, plan) if "/" in o.node else state.graph.fn(o.node)
                except Exception:
                    fn = None
                out[o.node] = birth_cause(fn, inputs[k], gout, loss_scale=scale,
                                          locator=locator)
        for o in born:
            self._causes[(o.node, o.step)] = out[o.node]
        return out

    def _loss_scale(self, state: StepState) -> float | None:
        if self._scale is None:
            self._scale = (loss_scale(state.graph),)
        return self._scale[0]


class _OpName:
    """What `birth_cause` reads of an op of a compiled region: its name (no saved values)."""

    def __init__(self, nid: str, plan: Any) -> None:
        self._name = plan.records[plan.step_of[nid]].name

    def name(self) -> str:
        return self._name


def _locator(state: StepState) -> Locator | None:
    """The live graph's nodes, ids and modules for a birth's forward walk (None: not live)."""
    graph = state.graph
    if not graph.is_live:
        return None
    ids, fns, mods = [], [], []
    for nid, node in graph.nodes.items():
        if "/" in nid:
            continue  # an op of a compiled region: no node of its own
        try:
            fn = graph.fn(nid)
        except Exception:
            continue
        ids.append(nid)
        fns.append(fn)
        mods.append(node.module)
    return Locator(fns, ids, mods)


def _output(state: StepState, ei: int) -> torch.Tensor | Summary | None:
    v = state.edge_val[ei]
    return v if isinstance(v, torch.Tensor) else state.summary_of(ei)


def _input_tensors(state: StepState, steps: Sequence[int]) -> dict[int, list[Any]]:
    """The gradients steps `steps` received, per slot: the slot tensors where still held, else
    one replay retaining them (then dropped again); summaries if that replay fails."""
    plan = state.plan
    need: list[int] = []
    for k in steps:
        if plan.kind[k] != ACCUMULATE and state.consumed(k):
            need.extend(s for s in range(plan.start[k], plan.start[k] + plan.arity[k])
                        if state.slots[s] is None)  # fmt: skip
    got: dict[int, Any] = {}
    if need:
        try:
            state.rebuild(state.pos, retain=frozenset(need))
            got = {s: state.slots[s] for s in need}
            for s in need:
                state.slots[s] = None  # back to the engine-like memory profile
        except Exception:
            got = {s: state.slot_view(s) for s in need}
    return {
        k: [got[s] if s in got else state.slots[s]
            for s in range(plan.start[k], plan.start[k] + plan.arity[k])]
        for k in steps
    }  # fmt: skip
