"""The state of one pass through the plan, and the hot loop that moves it.

`StepState` owns what a step changes: the position, one gradient buffer per input slot (`slots`),
what flowed on each edge (`edge_val`), the undo log of the kept steps, the byte budget's
accounting, and the records of the steps done (time per step, no-gradient steps, the summary
store). `advance` is the loop the whole package's speed rests on (benchmarks/bench_stepper.py):
it reads the plan's flat lists into locals once per call and does no per-step attribute lookups or
method calls beyond the node call itself (plus `Edits.outputs` for an edited step).

`back()` restores the previous state exactly: while tensors are kept, each step logs the slot
values it overwrote (a per-step delta, `undo_last`); once they are not (`keep="summaries"` or past
an int budget), `rebuild` replays the plan from the start, which is exact because CPU kernels are
deterministic for identical inputs (a replay re-runs custom Functions' Python backward too). A
replay that fails or is interrupted puts the previous state back whole.

The public face of all this is `Stepper` (stepper.py), which owns one `StepState` and adds
validation, notifications, breakpoints and the Ctrl-C guard around each move.
"""

from __future__ import annotations

import sys
import time
import weakref

import torch

from ...core.graph import BackwardGraph
from ...core.store import SummaryStore
from ...core.summary import Summary, summarize
from ...util.gcpause import gc_paused
from .calls import apply_custom, call_empty, validate
from .edits import Edits
from .fanin import ADDED, FanIn, stealable
from .guard import Guard
from .plan import ACCUMULATE, CUSTOM, FUNCTION, REGION, Plan, nbytes, step_bytes
from .recompute import RecomputeGroups
from .results import GradView, StepInfo, StepRecord
from .sharded import sharded_steps

__all__ = ["ADVANCE_CODE", "FLOWED", "StepState"]

#: Marks an edge whose gradient flowed but was not kept (its summary is in the summary store).
FLOWED = object()


class StepState:
    """Position, slot buffers, edge values, undo log and step records of one stepper.

    Args:
        graph: the live graph (node records; live nodes fetched at each `advance`).
        plan: its plan.
        seeds: the root gradients (`plan.root_seeds`), always kept.
        create_graph: run nodes with grad mode on (no in-place fan-in then).
        keep: "summaries", "tensors" or a byte budget (see `Stepper`).
        edits: the stepper's what-if edits (applied by `advance` on their steps).
        guard: the stepper's Ctrl-C guard (its `limit` is the running loop's stop).

    Guarantees: every method leaves the state at a step boundary, consistent, also when a node
    raises or a KeyboardInterrupt escapes.

    Example:
        >>> from autograd_widget.engine.step.calls import IN_STEP_CODES
        >>> from autograd_widget.engine.step.plan import root_seeds
        >>> plan = st.plan
        >>> state = StepState(g, plan, root_seeds(g, plan), create_graph=False, keep="tensors",
        ...                   edits=Edits(plan), guard=Guard(ADVANCE_CODE, IN_STEP_CODES))
        >>> state.advance(len(plan.order)); state.pos, state.leaf_grads()
        (4, [tensor(1.), tensor(4.)])
    """

    def __init__(
        self,
        graph: BackwardGraph,
        plan: Plan,
        seeds: list[tuple[int, torch.Tensor]],
        *,
        create_graph: bool,
        keep: str | int,
        edits: Edits,
        guard: Guard,
    ) -> None:
        self.graph = graph
        self.plan = plan
        self.seeds = seeds
        self.create_graph = create_graph
        self.keep_all = keep == "tensors"
        self.budget: int | None = keep if isinstance(keep, int) else None
        #: Per step, an upper bound of the bytes it adds when kept (budget mode only).
        self.step_bytes: list[int] = step_bytes(plan) if self.budget is not None else []
        self.edits = edits
        self.guard = guard
        self.store = SummaryStore()
        self.store.resolver = weakref.WeakMethod(self.complete_summaries)
        self.seconds: list[float] = []
        self.nograd: set[int] = set()
        self.groups = RecomputeGroups(graph, plan)  # checkpoint regions: one group per pass
        self.fanin = FanIn(plan, seeds)  # undoes in-place fan-in adds of kept steps
        self.shards = sharded_steps(graph, plan)  # FSDP2: unshard in the engine's order
        self.reset()

    def reset(self) -> None:
        """Position 0: slots hold the root seeds; no edge has flowed; no undo log.

        Guarantees: the records (times, summaries) are left alone: `clear_records` drops them.

        Example:
            >>> state = st._state  # StepState is internal: the Stepper's own is the only route
            >>> state.advance(2); state.reset(); state.pos, len(state.seconds)
            (0, 2)
        """
        plan = self.plan
        slots: list = [None] * plan.n_slots
        for s, seed in self.seeds:
            slots[s] = seed if slots[s] is None else slots[s] + seed
        self.slots = slots
        self.edge_val: list = [None] * len(plan.edge_ids)
        # Undo log of the kept steps (a prefix of the steps done): for step k, entries
        # u_slot/u_old[u_mark[k]:] of what each slot held before the step wrote it.
        self.u_slot: list[int] = []
        self.u_old: list = []
        self.u_mark: list[int] = []
        self.u_used: list[int] = []
        self.used = 0
        self.pos = 0
        self.cache: dict[int, torch.Tensor] = {}
        self.renv: dict = {}  # compiled region -> what its steps keep (regioncalls.RegionEnv)
        # slot -> the partial sum the stepper made for it (identity-checked before an in-place
        # add: after a rollback or back() the slot may hold someone else's tensor again)
        self.owned: dict[int, torch.Tensor] = {}

    def consumed(self, k: int) -> bool:
        """Step k ran and, not being kept, freed its input slots (AccumulateGrad never does).

        Args:
            k: a step.

        Example:
            >>> state = st._state  # StepState is internal: the Stepper's own is the only route
            >>> state.advance(3); state.consumed(0), state.consumed(1)  # n2 is AccumulateGrad
            (True, False)
        """
        return k < self.pos and k >= len(self.u_mark) and self.plan.kind[k] != ACCUMULATE

    def advance(
        self,
        stop: int,
        *,
        replay: bool = False,
        capture: bool = False,
        retain: frozenset[int] = frozenset(),
        fill: set[int] | None = None,
    ) -> StepRecord | None:
        """Execute steps position..stop-1 and return the failure record, if a node raised.

        `capture`: return the record of the (single) step done, with its tensors.
        `replay`: rebuild state only (records and summaries of these steps already exist).
        `retain`: slots not to free even when tensors are not kept (for `grad()`).
        `fill`: (with `replay`) summary keys to complete from the replayed gradients.

        Guarantees: on a node's error step k is rolled back whole and its failure record
        returned (position k); a KeyboardInterrupt propagates with the steps before k done.

        Example:
            >>> state = st._state  # StepState is internal: the Stepper's own is the only route
            >>> state.advance(state.pos + 1, capture=True)
            <StepRecord 0: n0 AddBackward0 called, ... ms>
            >>> state.advance(4) is None, state.pos  # None: no node raised
            (True, 4)
        """
        shards = self.shards
        if shards is not None and not shards.inside:  # sharded.py: in segments, unsharding
            return shards.advance(self, stop, replay=replay, capture=capture, retain=retain,
                                  fill=fill)  # fmt: skip
        plan = self.plan
        fns = self.graph.require_live("step this graph").fns
        slots, ev = self.slots, self.edge_val
        u_slot, u_old, u_mark, u_used = self.u_slot, self.u_old, self.u_mark, self.u_used
        secs, nograd = self.seconds, self.nograd
        node_of, kinds, starts, arities = plan.node_of, plan.kind, plan.start, plan.arity
        routes, out_edges, multi, custom = plan.routes, plan.out_edges, plan.multi, plan.custom
        calls, renv = plan.calls, self.renv
        keep_all, budget, used = self.keep_all, self.budget, self.used
        step_bytes = self.step_bytes
        store_add, store_complete = self.store.add, self.store.complete
        n_edges = len(plan.edge_ids)
        flowed = FLOWED
        inplace = not self.create_graph
        refcount = sys.getrefcount
        owned = self.owned
        strided, added = torch.strided, ADDED
        perf = time.perf_counter
        k = self.pos
        result: StepRecord | None = None
        edits = self.edits
        edit_steps = edits.steps
        grad_ctx = torch.enable_grad() if self.create_graph else torch.no_grad()
        # A deferred Ctrl-C (guard.py) lowers the limit: the loop stops at a step boundary.
        # Replays are not deferred (`rebuild` restores the old state instead).
        limit = [stop]
        self.guard.limit = None if replay else limit
        t0 = perf()
        try:
            with grad_ctx, self.groups.scope(k, stop):
                while k < limit[0]:
                    kind = kinds[k]
                    # Kept steps are a prefix of the steps done (len(u_mark) == k), and a step is
                    # kept only if its gradients surely fit in what is left of the budget.
                    kept = keep_all or (
                        budget is not None and len(u_mark) == k and used + step_bytes[k] <= budget
                    )
                    m0 = len(u_slot)
                    try:
                        if kind != ACCUMULATE:
                            a = starts[k]
                            n = arities[k]
                            if n == 1:
                                g0 = slots[a]
                                if kind == FUNCTION:
                                    out = (
                                        call_empty(fns[node_of[k]], 1)
                                        if g0 is None
                                        else fns[node_of[k]](g0)
                                    )
                                elif kind == CUSTOM:
                                    out = apply_custom(custom[k], fns[node_of[k]], [g0])
                                elif kind == REGION:
                                    out = calls[k](fns, [g0], renv)
                                else:
                                    out = fns[node_of[k]](g0)
                            else:
                                args = slots[a : a + n]
                                if kind == FUNCTION:
                                    # Identity tests only: `list.count(None)` calls Tensor.__eq__.
                                    out = (
                                        call_empty(fns[node_of[k]], n)
                                        if all(x is None for x in args)
                                        else fns[node_of[k]](*args)
                                    )
                                elif kind == CUSTOM:
                                    out = apply_custom(custom[k], fns[node_of[k]], args)
                                elif kind == REGION:
                                    out = calls[k](fns, args, renv)
                                else:
                                    out = fns[node_of[k]](*args)
                            if edit_steps and k in edit_steps:
                                out = edits.outputs(k, out, None if replay else nograd)
                            if out is None:
                                if not replay:
                                    nograd.add(k)
                            else:
                                if type(out) is not tuple:
                                    out = (out,)
                                rts = routes[k]
                                last = rts[-1] if rts else None
                                for r in rts:
                                    onr, ei, s, shape, dtype, dev = r
                                    g = out[onr]
                                    if g is None:
                                        continue
                                    if g.dtype is not dtype or dev is not None or g.shape != shape:
                                        g = validate(g, shape, dtype, dev, plan.names[k], onr)
                                    old = slots[s]
                                    if old is None:
                                        u_slot.append(s)
                                        u_old.append(None)
                                        slots[s] = g
                                    elif (
                                        r is last
                                        and inplace
                                        and owned.get(s) is old
                                        and refcount(old) == 4
                                        and (not kept or old.layout is strided)
                                    ):
                                        # Our unshared partial sum (refs: slots, owned, old, arg),
                                        # the step's last write (nothing after it can fail): in
                                        # place as the engine does. Kept: undo rebuilds it.
                                        old.add_(g)
                                        if kept:
                                            u_slot.append(s)
                                            u_old.append(added)
                                    elif (
                                        r is last
                                        and inplace
                                        and not kept
                                        and refcount(old) == 3
                                        and stealable(old)
                                    ):
                                        # its unshared first gradient: in place, as the engine
                                        old.add_(g)
                                        owned[s] = old
                                    else:
                                        u_slot.append(s)
                                        u_old.append(old)
                                        slots[s] = owned[s] = old + g
                                    ev[ei] = g
                    except BaseException as exc:
                        self.fanin.undo(slots, u_slot, u_old, m0, owned, k, ev)
                        for ei in out_edges[k]:
                            ev[ei] = None
                        if not replay:
                            nograd.discard(k)
                        if not isinstance(exc, Exception):
                            # KeyboardInterrupt (Ctrl-C inside a node, or raised by a backward):
                            # step k is rolled back; the finally below records the position.
                            raise
                        result = self.failure_record(k, exc, perf() - t0)
                        break
                    if capture:
                        result = self.captured_record(k, perf() - t0)
                    if kept:
                        u_mark.append(m0)
                        u_used.append(used)
                        if budget is not None:
                            for ei in out_edges[k]:
                                g = ev[ei]
                                if g is not None:
                                    used += nbytes(g)
                            for j in range(m0, len(u_slot)):
                                if u_old[j] is not None and u_old[j] is not added:
                                    # a new partial sum, kept for back()
                                    used += nbytes(slots[u_slot[j]])
                    else:
                        del u_slot[m0:], u_old[m0:]
                        for ei in out_edges[k]:
                            g = ev[ei]
                            if g is not None:
                                ev[ei] = flowed
                                if not replay:
                                    store_add(ei, g)
                                elif fill and ei in fill:
                                    store_complete(ei, g)
                        if kind != ACCUMULATE:
                            if not replay or fill:
                                for s in multi[k]:
                                    v = slots[s]
                                    if v is None:
                                        continue
                                    if not replay:
                                        store_add(n_edges + s, v)
                                    elif n_edges + s in fill:  # type: ignore[operator]
                                        store_complete(n_edges + s, v)
                            for s in range(a, a + n):
                                owned.pop(s, None)
                                if s not in retain:
                                    slots[s] = None
                    if not replay:
                        t1 = perf()
                        secs.append(t1 - t0)
                        t0 = t1
                    k += 1
        finally:
            # Also when a KeyboardInterrupt escapes: the steps before k stay done.
            self.pos = k
            self.used = used
        return result

    _STATE = ("slots", "edge_val", "u_slot", "u_old", "u_mark", "u_used", "used", "pos", "cache",
              "owned", "renv")  # fmt: skip

    def rebuild(self, stop: int, retain: frozenset[int] = frozenset()) -> None:
        """Replay from the start to `stop` (state only: records and summaries stay).

        If the replay fails (the graph changed since the steps ran: a saved tensor modified in
        place, a backward that now raises) or is interrupted, the previous state is put back
        whole before the error propagates: the stepper stays where it was, consistent.

        Args:
            stop: the position to reach.
            retain: slots not to free (for `Stepper.grad`).

        Example:
            >>> state = st._state  # StepState is internal: the Stepper's own is the only route
            >>> state.advance(3); state.slots[1] is None  # n1's input, freed after it ran
            True
            >>> state.rebuild(3, retain=frozenset({1})); state.pos, state.slots[1]
            (3, tensor(1.))
        """
        before = [getattr(self, name) for name in self._STATE]
        self.reset()
        try:
            with gc_paused():
                failure = self.advance(stop, replay=True, retain=retain)
        except BaseException:
            for name, value in zip(self._STATE, before):
                setattr(self, name, value)
            raise
        if failure is not None:  # only if the graph changed under us (e.g. an in-place op)
            for name, value in zip(self._STATE, before):
                setattr(self, name, value)
            raise RuntimeError(
                f"replaying the steps already done failed, the graph changed since they ran "
                f"(position {self.pos} kept; reset() and capture() again to step the new "
                f"values): {failure.error}"
            )

    def complete_summaries(self, keys: set[int]) -> None:
        """The summary store's resolver: replay from the start to the position, completing the
        summaries under `keys` from the replayed gradients, then put the state back whole.

        Args:
            keys: summary keys (edge index, or edge count + slot for a fan-in sum) to complete.

        Example:
            >>> state = st._state  # StepState is internal: the Stepper's own is the only route
            >>> state.advance(2); state.complete_summaries({0}); state.pos, state.slots[0]
            (2, None)
        """
        before = [getattr(self, name) for name in self._STATE]
        stop = self.pos
        try:
            self.reset()
            with gc_paused():
                failure = self.advance(stop, replay=True, fill=keys)
        finally:
            for name, value in zip(self._STATE, before):
                setattr(self, name, value)
        if failure is not None:
            raise RuntimeError(f"replaying to complete summaries failed: {failure.error}")

    def undo_last(self) -> None:
        """Undo the last step (position > 0): its logged delta when kept, else a replay.

        Guarantees: slots, edge values and records are those before the step; edits whose
        gradient the step produced are dropped (the caller notifies).

        Example:
            >>> state = st._state  # StepState is internal: the Stepper's own is the only route
            >>> state.advance(3); state.undo_last(); state.pos, len(state.seconds)
            (2, 2)
        """
        self.store.settle()  # summaries still held are completed while their steps replay
        k = self.pos - 1
        if k < len(self.u_mark):
            m0 = self.u_mark.pop()
            self.used = self.u_used.pop()
            self.fanin.undo(self.slots, self.u_slot, self.u_old, m0, self.owned, k, self.edge_val)
            self.pos = k
        else:
            self.rebuild(k)
        plan = self.plan
        n_edges = len(plan.edge_ids)
        for ei in plan.out_edges[k]:
            self.edge_val[ei] = None
        edits = self.edits
        if k in edits.steps:  # the gradient an edit replaced is un-computed: drop the edit
            edits.drop([ei for ei in plan.out_edges[k] if ei in edits.active])
        self.store.discard([*plan.out_edges[k], *(n_edges + s for s in plan.multi[k])])
        del self.seconds[k:]
        self.nograd.discard(k)
        self.cache.clear()

    def clear_records(self) -> None:
        """Forget every step's records (times, no-gradient marks, summaries): for a reset.

        Example:
            >>> state = st._state  # StepState is internal: the Stepper's own is the only route
            >>> state.advance(2); state.clear_records(); state.reset()
            >>> state.pos, state.seconds
            (0, [])
        """
        self.store.settle()
        self.store.clear()
        self.seconds.clear()
        self.nograd.clear()

    # ----------------------------------------------------------------- reading
    def summary_of(self, ei: int) -> Summary | None:
        """The summary of edge `ei`'s gradient (computed and stored on first request).

        Args:
            ei: an edge index.

        Example:
            >>> state = st._state  # StepState is internal: the Stepper's own is the only route
            >>> state.advance(1); state.summary_of(0).mean
            1.0
        """
        v = self.edge_val[ei]
        if v is None:
            return None
        s = self.store.get(ei)
        if s is None and isinstance(v, torch.Tensor):
            s = Summary.of(v)
            self.store.put(ei, s)
        return s

    def edge_summaries(self) -> dict[str, Summary]:
        """Summaries of every edge whose gradient has flowed (missing ones in one batch).

        Example:
            >>> state = st._state  # StepState is internal: the Stepper's own is the only route
            >>> state.advance(1); list(state.edge_summaries())
            ['n0:0', 'n0:1']
        """
        store, ev = self.store, self.edge_val
        store.flush()
        missing = [ei for ei, v in enumerate(ev) if isinstance(v, torch.Tensor) and ei not in store]
        for ei, s in zip(missing, summarize(ev[ei] for ei in missing)):
            store.put(ei, s)
        ids = self.plan.edge_ids
        return {ids[ei]: store.get(ei) for ei, v in enumerate(ev) if v is not None}  # type: ignore[misc]

    def slot_view(self, s: int) -> GradView:
        """What slot `s` holds or held: the tensor when still there, else its summary.

        Args:
            s: a slot number.

        Example:
            >>> state = st._state  # StepState is internal: the Stepper's own is the only route
            >>> state.advance(3); state.slot_view(3)  # n3 (x's AccumulateGrad) still holds it
            tensor(4.)
            >>> state.slot_view(1).mean  # n1's input was freed: its summary
            1.0
        """
        v = self.slots[s]
        if v is not None:
            return v
        plan = self.plan
        if not self.consumed(plan.step_of[plan.node_ids[plan.slot_node[s]]]):
            return None  # not freed: the slot really is empty
        ei = plan.slot_edge[s]
        if ei >= 0:
            return self.summary_of(ei)
        if plan.slot_contrib[s] == 1:  # fed only by a root seed, which is always kept
            return next(t for rs, t in self.seeds if rs == s)
        return self.store.get(len(plan.edge_ids) + s)

    def waiting(self, nid: str) -> list[Summary | None]:
        """Per input slot of node `nid`, a summary of what it holds or held (None: empty).

        Args:
            nid: a checked node id.

        Example:
            >>> state = st._state  # StepState is internal: the Stepper's own is the only route
            >>> state.advance(3); [s.mean for s in state.waiting("n3")]
            [4.0]
        """
        k = self.plan.step_of[nid]
        a = self.plan.start[k]
        out: list[Summary | None] = []
        for s in range(a, a + self.plan.arity[k]):
            v = self.slot_view(s)
            out.append(Summary.of(v) if isinstance(v, torch.Tensor) else v)
        return out

    def record(self, index: int) -> StepRecord:
        """The record of step `index` (< position): tensors where kept, else summaries.

        Args:
            index: a step already done.

        Example:
            >>> state = st._state  # StepState is internal: the Stepper's own is the only route
            >>> state.advance(1); state.record(0).outputs["n0:0"].mean  # freed: a summary
            1.0
        """
        if not 0 <= index < self.pos:
            raise IndexError(f"step {index} has not run (position {self.pos})")
        plan = self.plan
        a, n = plan.start[index], plan.arity[index]
        inputs = tuple(self.slot_view(s) for s in range(a, a + n))
        outputs: dict[str, GradView] = {}
        for ei in plan.out_edges[index]:
            v = self.edge_val[ei]
            outputs[plan.edge_ids[ei]] = (
                v if v is None or isinstance(v, torch.Tensor) else self.summary_of(ei)
            )
        called = plan.kind[index] != ACCUMULATE and index not in self.nograd
        return StepRecord(
            index,
            plan.records[index],
            inputs,
            outputs,
            self.seconds[index],
            None,
            called,
        )

    def captured_record(self, k: int, seconds: float) -> StepRecord:
        """The record of step `k`, just done, with its tensors (what `advance(capture=True)`
        returns: taken before any is freed, so only right after the step).

        Example:
            >>> state = st._state  # StepState is internal: the Stepper's own is the only route
            >>> state.advance(1, capture=True).outputs
            {'n0:0': tensor(1.), 'n0:1': tensor(1.)}
        """
        plan = self.plan
        a, n = plan.start[k], plan.arity[k]
        outs = {plan.edge_ids[ei]: self.edge_val[ei] for ei in plan.out_edges[k]}
        called = plan.kind[k] != ACCUMULATE and k not in self.nograd
        node = plan.records[k]
        return StepRecord(k, node, tuple(self.slots[a : a + n]), outs, seconds, None, called)

    def failure_record(self, k: int, exc: BaseException, seconds: float) -> StepRecord:
        """The record of step `k` failing with `exc` (step k rolled back: its inputs as now).

        Example:
            >>> st._state.failure_record(0, ValueError("boom"), 0.0).error
            'ValueError in n0 (AddBackward0): boom'
        """
        plan = self.plan
        nid = plan.order[k]
        node = plan.records[k]
        a, n = plan.start[k], plan.arity[k]
        error = f"{type(exc).__name__} in {nid} ({node.name}): {exc}"
        called = plan.kind[k] != ACCUMULATE
        return StepRecord(k, node, tuple(self.slots[a : a + n]), {}, seconds, error, called)

    def step_info(self, index: int) -> StepInfo:
        """Node, called / no-gradient and time of step `index` (< position), no tensors.

        Example:
            >>> state = st._state  # StepState is internal: the Stepper's own is the only route
            >>> state.advance(1); state.step_info(0).node, state.step_info(0).called
            ('n0', True)
        """
        if not 0 <= index < self.pos:
            raise IndexError(f"step {index} has not run (position {self.pos})")
        acc = self.plan.kind[index] == ACCUMULATE
        nograd = index in self.nograd
        return StepInfo(index, self.plan.order[index], not acc and not nograd, nograd,
                        self.seconds[index])  # fmt: skip

    def slot_grad(self, nid: str, slot: int) -> torch.Tensor | None:
        """The gradient in input `slot` of node `nid` so far, replaying when it was freed.

        Args:
            nid: a node id.
            slot: its input number.

        Guarantees: a replay keeps no extra tensor in the slots (the value is cached until the
        next move).

        Example:
            >>> state = st._state  # StepState is internal: the Stepper's own is the only route
            >>> state.advance(3); state.slot_grad("n1", 0)  # freed: found by a replay
            tensor(1.)
        """
        s = self.plan.start[self.plan.step_of[nid]] + slot
        v = self.slots[s]
        if v is not None or not self.consumed(self.plan.step_of[nid]):
            return v
        cached = self.cache.get(s)
        if cached is None:
            self.rebuild(self.pos, retain=frozenset({s}))
            cached = self.slots[s]
            self.slots[s] = None  # back to the engine-like memory profile
            if cached is not None:
                self.cache[s] = cached
        return cached

    def leaf_grads(self) -> list:
        """Each leaf's gradient so far (what its AccumulateGrad slot holds), in `graph.leaves`
        order.

        Example:
            >>> state = st._state  # StepState is internal: the Stepper's own is the only route
            >>> state.advance(2); state.leaf_grads()  # g.leaves: n2 (y), n3 (x, not yet)
            [tensor(1.), None]
        """
        start = self.plan.node_start
        return [self.slots[start[int(lid[1:])]] for lid in self.graph.leaves]

    def close(self) -> None:
        """Drop every tensor held (the stepper is closing).

        Example:
            >>> state = st._state  # StepState is internal: the Stepper's own is the only route
            >>> state.close(); state.slots, state.seeds
            ([], [])
        """
        try:
            self.store.settle()
        except RuntimeError:  # the graph was closed first: held summaries say so when read
            pass
        self.store.clear()
        self.slots = []
        self.edge_val = []
        self.u_slot, self.u_old, self.u_mark, self.u_used = [], [], [], []
        self.seeds = self.fanin.seeds = []
        self.cache = {}
        self.owned = {}
        self.renv = {}
        self.groups.close()
        if self.shards is not None:
            self.shards.close()


#: The loop's code object: the Ctrl-C guard looks for its frame (guard.py).
ADVANCE_CODE = StepState.advance.__code__
