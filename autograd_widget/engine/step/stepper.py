"""The stepper: backward by hand, node by node, exactly as the autograd engine would run it.

`Stepper` is the public face of the step/ room (its map, engine/step/__init__.py, says who does
what): it validates, moves its one `StepState` (stepstate.py: position, slots, undo log, the hot
loop) under the Ctrl-C guard with the garbage collector paused, tells its listeners, and
delegates the rest, one job per module. It implements `engine.interface.Stepping`; what it
shares with a `Replay` (the position read through `order`, the failed step, breakpoints,
listeners, `history`) is `RunBase` (runbase.py), written once for both.

It holds no autograd node objects (it fetches them from the graph at call time; see
DESIGN.md, "Teardown hazard"), writes no `.grad`, bumps no version counter and leaves no
hook behind: the user's own `backward()` works afterwards with identical results.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from functools import partial
from typing import Literal

import torch

from ...core.graph import BackwardGraph
from ...core.records import Edge, Node
from ...core.summary import Summary
from ...util.gcpause import gc_paused
from ..diagnose.failure import FailureExplanation, explain_failure
from ..diagnose.origins import Origin
from ..interface import LIVE, Capabilities
from .calls import IN_STEP_CODES
from .compare import compare
from .edits import EditKind, Edits
from .guard import Guard
from .nonfinite import StepOrigins, first_nonfinite
from .plan import Plan
from .probes import EXACT_MAX, JacobianNorm
from .probes import jacobian_norms as probe_jacobian_norms
from .resolve import edge_index, grad_slot, make_plan, step_index, through
from .results import Difference, EditInfo, LeafDiff, StepInfo, StepRecord
from .runbase import RunBase
from .stepstate import ADVANCE_CODE, StepState
from .whatif import WhatIf

__all__ = ["Difference", "EditInfo", "StepInfo", "StepRecord", "Stepper"]

Keep = Literal["summaries", "tensors"] | int


class Stepper(RunBase):
    """Run a captured graph's backward by hand, one engine step at a time (see the module doc).

    Args:
        graph: a live `BackwardGraph` from `aw.capture(...)`.
        create_graph: run the nodes with grad mode on, so the gradients carry their own graph
            (capture it and step it again: double backward).
        keep: "summaries" (default) keeps a `Summary` per edge gradient and frees the tensors as
            the engine would; "tensors" keeps every edge gradient (and makes `back()` O(1)); an
            int is a byte budget: tensors while the next step's gradients (and partial sums)
            still fit in it, summaries from the first step that does not fit on (a budget
            smaller than one gradient keeps none). Leaf gradients are always kept.
        regions: "open" (default): each compiled region (torch.compile, `graph.regions`) is
            its node's step then one step per aten op (regionplan.py); "closed": one step.

    Guarantees: the same order, gradients and errors as the engine (`compare_with_engine` is
    the oracle); nothing of the user's (`.grad`, versions, hooks) is touched.

    Example:
        >>> Stepper(g, keep="tensors").run()
        <StepRecord 3: n3 AccumulateGrad accumulated, ... ms>
    """

    def __init__(
        self, graph: BackwardGraph, *, create_graph: bool = False, keep: Keep = "summaries",
        regions: Literal["open", "closed"] = "open",
    ) -> None:  # fmt: skip
        self._plan, seeds = make_plan(graph, keep, regions, bool(create_graph))  # resolve.py
        super().__init__(self._plan.order, self._plan.records, partial(step_index, self._plan),
                         "this Stepper was closed; create a new one from a live graph")
        self._graph = graph
        self.create_graph = bool(create_graph)
        self.keep: Keep = keep
        self.regions = regions
        self._guard = Guard(ADVANCE_CODE, IN_STEP_CODES)
        self._edits = Edits(self._plan)
        self._state = StepState(
            graph, self._plan, seeds, create_graph=self.create_graph, keep=keep,
            edits=self._edits, guard=self._guard,
        )  # fmt: skip
        self._whatif = WhatIf(self._state)
        self._origins = StepOrigins()

    # ----------------------------------------------------------------- listeners
    def _batch_scope(self) -> contextlib.AbstractContextManager[object]:
        """One Ctrl-C guard covers all the steps of a `batch()` (listeners: runbase.py)."""
        return self._guard.scope()

    # ----------------------------------------------------------------- state
    @property
    def graph(self) -> BackwardGraph:
        """The graph stepped; assignable (a released widget swaps in its records-only copy)."""
        return self._graph

    @graph.setter
    def graph(self, graph: BackwardGraph) -> None:
        self._graph = graph
        self._state.graph = graph

    @property
    def plan(self) -> Plan:
        """The plan (order, routing tables, plan.py) this stepper runs: read-only, built once."""
        return self._plan

    @property
    def capabilities(self) -> Capabilities:
        """`LIVE`: a live graph can do everything (`engine.interface.Capabilities`)."""
        return LIVE

    def twin(self) -> Stepper:
        """A new stepper over the same graph at position 0 (same `create_graph`, keep
        "summaries"): what an export steps through without moving this one. Close it after.

        Example:
            >>> _ = st.step(); t = st.twin(); t.position, st.position
            (0, 1)
        """
        return Stepper(self.graph, create_graph=self.create_graph, keep="summaries",
                       regions=self.regions)

    def execution_of(self, node_id: str) -> None:
        """None: a stepper runs the nodes itself; only a recording knows how the ENGINE ran one.

        Example:
            >>> st.execution_of("n0") is None
            True
        """
        self.step_index(node_id)  # a node, or an op of an open compiled region: else KeyError
        return None

    def known_run_norms(self) -> None:
        """None: the whole run's norms are known only by running it (see `view.scale`).

        Example:
            >>> st.known_run_norms() is None
            True
        """
        return None

    @property
    def position(self) -> int:
        """Number of steps done (0..len(order))."""
        return self._state.pos

    @property
    def done(self) -> bool:
        """True when every step ran (position == len(order)); read on every step, so direct."""
        return self._state.pos == len(self._plan.order)

    def step_index(self, node_id: str | Node) -> int:
        """The step at which node `node_id` (an id, or a `Node` record of this graph) runs.

        Guarantees: KeyError for an unknown id, TypeError for anything else.

        Example:
            >>> st.step_index("n1"), st.step_index(g.nodes["n3"])
            (2, 3)
        """
        return step_index(self._plan, node_id)

    # ----------------------------------------------------------------- moving
    def step(self) -> StepRecord | None:
        """Run the next step.

        Guarantees: returns its record (with the tensors it received and produced), a record
        with `error` set if the node raised (position unchanged), or None when done.

        Example:
            >>> st.step()
            <StepRecord 0: n0 AddBackward0 called, ... ms>
        """
        self._check_open()
        if self.done:
            return None
        return self._move(self._state.pos + 1, capture=True)

    def run(self, until: str | None = None) -> StepRecord | None:
        """Run to the end, or up to AND including node `until`.

        Args:
            until: a node id (not run yet; a compiled region's: its ops too), or None for the end.

        Guarantees: stops early BEFORE a breakpoint node (a run that starts on one executes it
        first, so repeated `run()` calls move from breakpoint to breakpoint) and AT a failing
        node (its record, with `error`, is returned and `failure` set). Returns the last
        record, or None when nothing ran. Summaries of the small gradients are computed before
        returning.

        Example:
            >>> st.run(until="n1").node.id, st.position
            ('n1', 3)
        """
        self._check_open()
        stop = len(self._plan.order)
        pos = self._state.pos
        if until is not None:
            k = through(self._plan, self.step_index(until))  # a compiled region: its ops too
            if k < pos:
                raise ValueError(
                    f"node {until!r} already ran (step {k}, position {pos}); call back() "
                    "or reset() to run up to it again"
                )
            stop = k + 1
        stop = self._run_stop(stop)  # before the first breakpoint on the way (runbase.py)
        if pos >= stop:
            return None
        failure = self._move(stop, capture=False)
        if failure is not None:
            return failure
        return self.record(self._state.pos - 1)

    def _move(self, stop: int, capture: bool) -> StepRecord | None:
        """Advance to `stop` under the Ctrl-C guard with the collector paused, then tidy the
        summaries and notify. A KeyboardInterrupt leaves the state at a step boundary (the step
        it hit rolled back, or the steps before it done) and propagates after the notification."""
        state = self._state
        with self._guard.scope():  # Ctrl-C: a step in a node rolls back, else the loop stops
            try:
                with gc_paused():
                    rec = state.advance(stop, capture=capture)
            except BaseException:  # KeyboardInterrupt: stopped at a step boundary
                state.store.release_recent()
                self._failure = None
                self._changed()
                raise
            if capture:
                state.store.release_recent()
            else:  # a run: summaries of the small gradients, batched, before returning
                with gc_paused():
                    state.store.release_recent()
                    state.store.flush()
            self._failure = rec if rec is not None and rec.error else None
            self._changed()
        return rec

    def back(self) -> None:
        """Undo the last step exactly: a logged delta while tensors are kept, else a replay.

        Guarantees: the state is the one before the last step, bit for bit; an edit whose
        gradient that step produced is dropped.

        Example:
            >>> _ = st.step(); st.back(); st.position
            0
        """
        self._check_open()
        failed, self._failure = self._failure, None
        if self._state.pos == 0:
            if failed is not None:  # the failure shown is gone: the views must hear it
                self._changed()
            return
        self._state.undo_last()
        self._changed()

    def reset(self) -> None:
        """Back to position 0 (root gradients seeded, nothing run): the faithful run, without
        any what-if edit.

        Example:
            >>> _ = st.run(); st.reset(); st.position, len(st.history)
            (0, 0)
        """
        self._check_open()
        self._state.clear_records()  # first: held summaries complete under the edits they ran with
        if self._edits.active:
            self._edits.drop(list(self._edits.active))
        self._failure = None
        self._state.reset()
        self._changed()

    # ----------------------------------------------------------------- inspection
    def _edge(self, edge_or_id: Edge | str) -> int:
        return edge_index(self._plan, edge_or_id)

    def edge_grad(self, edge_or_id: Edge | str) -> torch.Tensor | None:
        """The gradient that flowed along edge `edge_or_id` (an `Edge` or an id such as "n2:0"),
        or None (not flowed yet, none, or not kept).

        Example:
            >>> st = Stepper(g, keep="tensors"); _ = st.run(); st.edge_grad("n1:0")
            tensor(4.)
        """
        v = self._state.edge_val[self._edge(edge_or_id)]
        return v if isinstance(v, torch.Tensor) else None

    def edge_summary(self, edge_or_id: Edge | str) -> Summary | None:
        """The `Summary` of edge `edge_or_id`'s gradient (an `Edge` or an id such as "n2:0");
        None before it flowed (or when none flowed).

        Example:
            >>> _ = st.run(); st.edge_summary("n1:0").mean, st.edge_summary("n1:0").finite
            (4.0, True)
        """
        return self._state.summary_of(self._edge(edge_or_id))

    def edge_summaries(self) -> dict[str, Summary]:
        """Summaries of every edge whose gradient has flowed (missing ones in one batch).

        Example:
            >>> _ = st.step(); list(st.edge_summaries())
            ['n0:0', 'n0:1']
        """
        return self._state.edge_summaries()

    def record(self, index: int) -> StepRecord:
        """The record of step `index` (< position): tensors where kept, else summaries.

        Example:
            >>> _ = st.run(); st.record(2).node.name, st.record(2).outputs["n1:0"].mean
            ('PowBackward0', 4.0)
        """
        return self._state.record(index)

    def step_info(self, index: int) -> StepInfo:
        """Node, called/no-gradient and time of step `index` (< position), without tensors.

        Example:
            >>> _ = st.run(); st.step_info(1)
            StepInfo(index=1, node='n2', called=False, no_gradient=False, seconds=...)
        """
        return self._state.step_info(index)

    def waiting(self, node_id: str) -> list[Summary | None]:
        """Per input slot of `node_id`, a summary of the gradient it holds: what has arrived so
        far for a node still to run, what it received for one that ran; None where empty.

        Example:
            >>> _ = st.run(until="n1"); st.waiting("n3")
            [Summary(shape=(), dtype='float32', norm=4.0, ...)]
        """
        return self._state.waiting(self._plan.order[self.step_index(node_id)])

    def grad(self, tensor: torch.Tensor) -> torch.Tensor | None:
        """The gradient computed so far for a captured tensor: a leaf (what its AccumulateGrad
        received), or a non-leaf through its gradient edge (the sum arriving in that slot).
        Replays from the start when that slot's tensor was freed (`keep="summaries"`). None, as
        from the engine, for a view of a leaf taken under `no_grad()` (`resolve.grad_slot`).

        Example:
            >>> _ = st.run(); st.grad(x), st.grad(y), st.grad(z)
            (tensor(4.), tensor(1.), tensor(1.))
        """
        self._check_open()
        slot = grad_slot(self.graph, tensor)
        return None if slot is None else self._state.slot_grad(*slot)

    def first_nonfinite(self) -> tuple[Edge, Summary] | None:
        """The first edge, in execution order, whose gradient holds a NaN or an Inf.

        Guarantees: (Edge, Summary) of that edge among the steps done, else None.

        Example:
            >>> _ = st.run(); st.first_nonfinite()  # no output: None, every gradient is finite
        """
        return first_nonfinite(self._state)

    # ----------------------------------------------------------------- why it went wrong
    def nonfinite_origins(self) -> list[Origin]:
        """Per node that produced or received a NaN/Inf gradient in the steps done: "born",
        "propagated" or "healed", in step order; a born one says why, with counts (nonfinite.py:
        the loop pays nothing; a cause may cost one replay, then is cached).

        Example:
            >>> a = torch.zeros(3, requires_grad=True)
            >>> s = Stepper(aw.capture(a.sqrt().sum())); _ = s.run()
            >>> [(o.node, o.kind, o.cause) for o in s.nonfinite_origins()][0]
            ('n1', 'born', 'saved `result` has 3 zeros: the derivative of sqrt at 0 is infinite')
        """
        self._check_open()
        return self._origins.origins(self._state, self._edits)

    def first_birth(self) -> Origin | None:
        """The first "born" origin of `nonfinite_origins()` (only its cause is computed), or None.

        Example:
            >>> a = torch.zeros(3, requires_grad=True)
            >>> s = Stepper(aw.capture(a.sqrt().sum())); _ = s.run(); s.first_birth().node
            'n1'
        """
        self._check_open()
        found = self._origins.origins(self._state, self._edits, first=True)
        return found[0] if found else None

    def explain_failure(self) -> FailureExplanation | None:
        """Why the step that just failed (`failure`) failed (diagnose/failure.py), or None.

        Example:
            >>> a = torch.ones(2, requires_grad=True); b = a.sigmoid(); _ = b.mul_(2)
            >>> s = Stepper(aw.capture(b.sum())); _ = s.run(); s.explain_failure().culprit
            'n1'
        """
        f = self._failure
        return None if f is None else explain_failure(self.graph, f.node.id, f.error or "")

    # ----------------------------------------------------------------- the engine, for real
    def compare_with_engine(
        self,
        *,
        rtol: float | None = None,
        atol: float | None = None,
        tensors: Sequence[torch.Tensor] = (),
    ) -> list[Difference]:
        """Run the real engine once and list where it disagrees with manual stepping (compare.py).

        Args:
            rtol: relative tolerance; default torch.testing's for the dtype.
            atol: absolute tolerance; default torch.testing's for the dtype.
            tensors: non-leaf tensors whose `.grad` (retain_grad) must be restored.

        Guarantees: this stepper's position, edits and records are untouched (the manual side
        is a separate full pass, always of the faithful run); every temporary hook is removed
        and `.grad` of leaves never written, also on error; the engine's own error propagates.

        Example:
            >>> _ = st.step(); st.compare_with_engine(), st.position
            ([], 1)
        """
        self._check_open()
        return compare(self.graph, self._plan, self._state.seeds, tensors, rtol, atol)

    # ----------------------------------------------------------------- probes
    def jacobian_norms(
        self,
        nodes: str | Node | Iterable[str | Node] | None = None,
        samples: int = 16,
        seed: int | None = None,
        *,
        exact_max: int | None = None,
    ) -> dict[str, JacobianNorm]:
        """Squared Frobenius norm of each node's gradient map, `{node_id: JacobianNorm}`: exact
        for small nodes, else a Hutchinson estimate (the method, and why: probes.py).

        Args:
            nodes: ids or `Node` records (default: every node, in step order).
            samples: Rademacher vectors per estimated node (an int >= 2).
            seed: an int makes the result deterministic, per node; None draws one from the OS.
            exact_max: nodes with at most this many real input elements are exact (default
                `probes.EXACT_MAX`).

        Guarantees: nothing here changes (position, records, slots, edits; no `.grad`, no
        version bump; torch's global RNG untouched). A node whose call fails is left out and
        listed in `probe_errors` (node id -> the error), which each call replaces.

        Example:
            >>> st.jacobian_norms(["n1"], seed=0)  # d(x**2)/dx = 4 at x = 2
            {'n1': JacobianNorm(estimate=16.0, stderr=0.0, exact=True)}
        """
        self._check_open()
        results, errors = probe_jacobian_norms(
            self, nodes, samples, seed, exact_max=EXACT_MAX if exact_max is None else exact_max
        )
        self.probe_errors = errors
        return results

    # ----------------------------------------------------------------- what-if edits
    @property
    def edits(self) -> dict[str, EditInfo]:
        """Edge id -> edit, in step order of the sources (value: `edge_summary`; old: `.before`)."""
        return self._edits.by_edge()

    @property
    def edit_seq(self) -> int:
        """Bumped whenever the set of edits changes (set, clear, dropped by `back()`/`reset()`)."""
        return self._edits.seq

    def set_edge_grad(self, edge_or_id: Edge | str, tensor: torch.Tensor) -> None:
        """What-if: replace the gradient on an edge, at the current position, and continue.

        Args:
            edge_or_id: an `Edge` or edge id whose source ran and whose destination has not
                (else ValueError saying whether the edge is in the future or consumed).
            tensor: exactly the shape, dtype and device the destination slot expects.

        Guarantees: every later step uses the edited value, records and summaries show it; it
        stays until back() past the edge's source, `reset()` or `clear_edits()` (edits.py). One
        edit per edge. Costs one replay to the current position; on failure nothing changed.

        Example:
            >>> _ = st.step(); st.set_edge_grad("n0:0", torch.tensor(0.5)); _ = st.run(); st.grad(x)
            tensor(2.)
        """
        ei = self._editable(edge_or_id, "set the gradient of")
        self._edits.check_tensor(ei, self.graph, tensor)
        self._apply_edit(ei, "set", None, tensor.detach().clone())

    def scale_edge_grad(self, edge_or_id: Edge | str, factor: float) -> None:
        """What-if: multiply the gradient the source computed for edge `edge_or_id` by `factor`
        (a number; not compounding: a second scale replaces the first). Rules: `set_edge_grad`.

        Example:
            >>> _ = st.step(); st.scale_edge_grad("n0:0", 10.0); _ = st.run(); st.grad(x)
            tensor(40.)
        """
        if isinstance(factor, bool) or not isinstance(factor, (int, float, complex)):
            raise TypeError(f"factor must be a number, got {type(factor).__name__}")
        ei = self._editable(edge_or_id, "scale the gradient of")
        self._apply_edit(ei, "scale", factor, None)

    def zero_edge_grad(self, edge_or_id: Edge | str) -> None:
        """What-if: replace the gradient on edge `edge_or_id` by zeros. Rules: `set_edge_grad`.

        Example:
            >>> _ = st.step(); st.zero_edge_grad("n0:0"); _ = st.run(); st.grad(x)
            tensor(0.)
        """
        ei = self._editable(edge_or_id, "zero the gradient of")
        self._apply_edit(ei, "zero", None, None)

    def clear_edits(self, edge_or_id: Edge | str | None = None) -> None:
        """Undo the edit on edge `edge_or_id` (a no-op if it has none), or every edit (None).
        Only while the edited gradient has not been consumed (its destination has not run):
        past that, earlier records already show its consequences; back() or `reset()` first.

        Example:
            >>> _ = st.step(); st.zero_edge_grad("n0:0"); st.clear_edits(); st.edits
            {}
        """
        self._check_open()
        active = self._edits.active
        if edge_or_id is None:
            targets = list(active)
        else:
            ei = self._edge(edge_or_id)
            targets = [ei] if ei in active else []
        for ei in targets:
            self._editable(self._plan.edge_ids[ei], "clear the edit on")
        if targets:
            self._whatif.apply({}, targets)
            self._failure = None
            self._changed()

    def leaf_grad_diff(self) -> dict[str, LeafDiff]:
        """Leaf id -> `LeafDiff`: each leaf's gradient here (edits applied) against the
        unedited run at the same position (partial sums before a leaf's AccumulateGrad ran; the
        full gradients once done). The unedited run is this stepper's reference run (whatif.py),
        made on the first request and moved to this position on each (a replay). Without edits
        both sides are this stepper's gradients, and no reference run is made.

        Example:
            >>> _ = st.step(); st.zero_edge_grad("n0:1"); st.leaf_grad_diff()["n2"].changed
            True
        """
        self._check_open()
        mine = self._state.leaf_grads()
        theirs = self._whatif.reference_leaf_grads() if self._edits.active else mine
        nodes = self.graph.nodes
        return {
            lid: LeafDiff(lid, nodes[lid].leaf_name, a, b)
            for lid, a, b in zip(self.graph.leaves, mine, theirs)
        }

    def _editable(self, edge_or_id: Edge | str, what: str) -> int:
        """The edge's index, if its gradient can be edited now, else a ValueError saying why."""
        self._check_open()
        ei = self._edge(edge_or_id)
        self._edits.check(ei, self._state.pos, self.graph, what)
        return ei

    def _apply_edit(
        self, ei: int, kind: EditKind, factor: float | complex | None, value: torch.Tensor | None
    ) -> None:
        info = self._edits.make(ei, kind, factor, value, self._state.summary_of(ei))
        self._whatif.apply({ei: info}, [])
        self._failure = None
        self._changed()

    # ----------------------------------------------------------------- cleanup
    def close(self) -> None:
        """Drop every tensor this stepper holds (the graph stays open; it is the caller's).

        Guarantees: idempotent; afterwards every method that moves raises RuntimeError.

        Example:
            >>> st.close(); st.closed
            True
        """
        self._closed = True
        self._whatif.close()
        self._state.close()
        self._failure = None

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"step {self._state.pos}/{len(self._plan.order)}"
        return f"<Stepper {state}, keep={self.keep!r}, create_graph={self.create_graph}>"
