"""A recorded backward, stepped: `Replay` moves through a `Recording` the way a `Stepper` moves
through a live graph, so the widget, the inspector and the standalone page show the engine's
OWN run with the same controls.

What it guarantees:
- the steps are `recording.order` (the order the engine really ran the nodes), then, when the
  backward raised, the failing node: stepping onto it gives a failed record (error set, position
  unchanged), exactly as a failing `Stepper.step()` does;
- what a view reads (`edge_summary`, `edge_summaries`, `waiting`, `step_info`, `first_nonfinite`,
  `nonfinite_origins`) is what the recording holds for the steps done so far, nothing later;
- it never touches torch objects: a recording loaded from a file in a process without the model
  replays the same way. What needs the live graph (edits, Jacobian probes, the engine
  comparison, gradients of tensors) raises a `RuntimeError` saying so;
- what it shares with a `Stepper` (the failed step, breakpoints, listeners, `history`) is the
  same code, `RunBase` (engine/step/runbase.py), so the two answer the same calls alike
  (tests/engine/step/test_interface_contract.py runs both through the same calls).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ...core.graph import BackwardGraph
from ...core.records import Edge, Node
from ...core.summary import Summary
from ..interface import RECORDED, Capabilities
from ..step.plan import node_id as as_node_id
from ..step.results import Difference, StepRecord
from ..step.runbase import RunBase

if TYPE_CHECKING:
    from ..diagnose.failure import FailureExplanation
    from ..diagnose.origins import Origin
    from ..step.probes import JacobianNorm
    from .recording import NodeExecution, Recording

__all__ = ["Replay", "recording_name"]

_LIVE_ONLY = (
    "{what} needs the live graph: a recording replays what the engine did. Explore the "
    "tensors themselves (aw.explore(loss)) to {why}."
)


class Replay(RunBase):
    """Steps through `recording` (see the module docstring). It implements
    `engine.interface.Stepping`, where every member is documented; the docstrings here say what
    is particular to a replay.

    Example:
        >>> w = torch.tensor([1.0, 4.0], requires_grad=True)
        >>> loss = w.sqrt().sum()
        >>> with aw.record(loss) as rec:
        ...     loss.backward()
        >>> r = Replay(rec)
        >>> [r.graph.nodes[n].name for n in r.order]
        ['SumBackward0', 'SqrtBackward0', 'AccumulateGrad']
        >>> _ = r.run(); r.edge_summary("n1:0").values
        [0.5, 0.25]
    """

    #: A replay never builds a differentiable graph (what `Stepper.create_graph` says).
    create_graph = False

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self._graph: BackwardGraph = recording.graph
        order = list(recording.order)
        failure = recording.failure
        for nid in (*order, *(() if failure is None else (failure.node,))):
            if nid not in self._graph.nodes:  # a Recording built by hand: load_recording refuses
                raise ValueError(f"this recording names node {str(nid)[:40]!r}, which is not in "
                                 "its graph: it cannot be replayed")
        self._fail_at = -1
        if failure is not None:
            if failure.node in order:  # ran once, failed on a later pass: keep the real order
                order = order[: order.index(failure.node)]
            self._fail_at = len(order)
            order.append(failure.node)
        self._step_of = {nid: k for k, nid in enumerate(order)}
        super().__init__(order, [self._graph.nodes[nid] for nid in order], self.step_index,
                         "this replay was closed; aw.explore(recording) again")
        self._runs = {run.node: run for run in recording.executions}
        self._pos = 0

    # ------------------------------------------------------------------ state
    @property
    def capabilities(self) -> Capabilities:
        """`RECORDED`: moving and reading only, nothing that calls a node."""
        return RECORDED

    def twin(self) -> Replay:
        """A new replay of the same recording at position 0.

        Example:
            >>> loss = (torch.ones(2, requires_grad=True) * 3).sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> r = Replay(rec); _ = r.step(); r.twin().position, r.position
            (0, 1)
        """
        return Replay(self.recording)

    def known_run_norms(self) -> list[float]:
        """Every recorded edge's gradient norm: the recording holds the whole run already.

        Example:
            >>> loss = (torch.ones(2, requires_grad=True) * 3).sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> Replay(rec).known_run_norms()
            [1.414..., 4.242...]
        """
        return [float(s.norm) for s in self.recording.edge_summaries().values() if s is not None]

    @property
    def graph(self) -> BackwardGraph:
        """The recorded graph (records only: drawable, not callable)."""
        return self._graph

    @graph.setter
    def graph(self, graph: BackwardGraph) -> None:
        self._graph = graph

    @property
    def position(self) -> int:
        """Number of steps done (0..len(order))."""
        return self._pos

    @property
    def edits(self) -> dict[str, Any]:
        """Always empty: a recording cannot be edited."""
        return {}

    @property
    def edit_seq(self) -> int:
        """Always 0 (no edits)."""
        return 0

    def step_index(self, node_id: str | Node) -> int:
        """The step at which `node_id` ran. KeyError for a node the engine did not run.

        Example:
            >>> loss = (torch.ones(2, requires_grad=True) * 3).sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> Replay(rec).step_index("n0")
            0
        """
        nid = as_node_id(node_id)  # TypeError for what is neither an id nor a `Node`, as a Stepper
        try:
            return self._step_of[nid]
        except KeyError:
            raise KeyError(f"node {nid!r} did not run in this recording") from None

    # ----------------------------------------------------------------- moving
    def _inputs(self, nid: str) -> tuple[Summary | None, ...]:
        run = self._runs.get(nid)
        if run is not None:
            return tuple(run.inputs)
        failure = self.recording.failure
        if failure is not None and failure.node == nid:
            return tuple(failure.inputs)
        return ()

    def _outputs(self, nid: str) -> dict[str, Summary | None]:
        run = self._runs.get(nid)
        outs = () if run is None else run.outputs
        return {
            e.id: (outs[e.output_nr] if e.output_nr < len(outs) else None)
            for e in self._graph.out_edges(nid)
        }

    def execution_of(self, node_id: str) -> NodeExecution | None:
        """How the engine ran `node_id` (its `NodeExecution` in the recording), None if it did not.

        Example:
            >>> loss = (torch.ones(2, requires_grad=True) * 3).sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> Replay(rec).execution_of("n1").step
            1
        """
        return self._runs.get(node_id)

    def record(self, index: int) -> StepRecord:
        """The record of step `index` (< position): the recorded summaries and time.

        Example:
            >>> loss = (torch.ones(2, requires_grad=True) * 3).sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> r = Replay(rec); _ = r.run(); r.record(1).node.name
            'MulBackward0'
        """
        if not 0 <= index < self._pos:
            raise IndexError(f"step {index} has not been shown (position {self._pos})")
        nid = self._order[index]
        run = self._runs[nid]
        node = self._graph.nodes[nid]
        return StepRecord(index, node, self._inputs(nid), self._outputs(nid), run.seconds,
                          called=node.kind != "accumulate_grad")  # fmt: skip

    def _advance(self) -> StepRecord:
        k = self._pos
        nid = self._order[k]
        if k == self._fail_at:
            failure = self.recording.failure
            rec = StepRecord(k, self._graph.nodes[nid], self._inputs(nid), {}, 0.0,
                             error=failure.error)  # fmt: skip
            self._failure = rec
            return rec
        self._failure = None
        self._pos = k + 1
        return self.record(k)

    def step(self) -> StepRecord | None:
        """Show the next recorded step: its record, a failed record on the node that raised
        (position unchanged), or None when done.

        Example:
            >>> loss = (torch.ones(2, requires_grad=True) * 3).sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> r = Replay(rec); r.step().node.name, r.position
            ('SumBackward0', 1)
        """
        self._check_open()
        if self.done:
            return None
        rec = self._advance()
        self._changed()
        return rec

    def run(self, until: str | None = None) -> StepRecord | None:
        """Step to the end, or up to and including node `until` (KeyError: it did not run;
        ValueError: it was shown already); stops at the failing node or before a breakpoint
        (not on the first step). Returns the last record, None if nothing ran.

        Example:
            >>> loss = (torch.ones(2, requires_grad=True) * 3).sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> r = Replay(rec); _ = r.run(until="n1"); r.position
            2
        """
        self._check_open()
        stop = len(self._order)
        pos = self._pos
        if until is not None:
            k = self.step_index(until)
            if k < pos:
                raise ValueError(
                    f"node {until!r} already ran (step {k}, position {pos}); call back() "
                    "or reset() to run up to it again"
                )
            stop = k + 1
        stop = self._run_stop(stop)  # before the first breakpoint on the way (runbase.py)
        if pos >= stop:
            return None
        last = None
        while self._pos < stop:
            last = self._advance()
            if last.error is not None:
                break
        self._changed()
        return last

    def back(self) -> None:
        """Undo the last step shown, clearing a failure shown (as a `Stepper` does: the failed
        step never moved the position, so the step undone is the one before it).

        Example:
            >>> loss = (torch.ones(2, requires_grad=True) * 3).sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> r = Replay(rec); _ = r.step(); r.back(); r.position
            0
        """
        self._check_open()
        failed, self._failure = self._failure, None
        if self._pos == 0:
            if failed is not None:  # the failure shown is gone: the views must hear it
                self._changed()
            return
        self._pos -= 1
        self._changed()

    def reset(self) -> None:
        """Back to step 0.

        Example:
            >>> loss = (torch.ones(2, requires_grad=True) * 3).sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> r = Replay(rec); _ = r.run(); r.reset(); r.position
            0
        """
        self._check_open()
        self._pos = 0
        self._failure = None
        self._changed()

    # ----------------------------------------------------------------- gradients
    def _edge(self, edge_or_id: Edge | str) -> Edge:
        return self._graph.edge(edge_or_id.id if isinstance(edge_or_id, Edge) else edge_or_id)

    def _flowed(self, e: Edge) -> bool:
        k = self._step_of.get(e.src)
        return k is not None and k < self._pos and k != self._fail_at

    def edge_summary(self, edge_or_id: Edge | str) -> Summary | None:
        """The recorded summary of an edge's gradient; None before it flowed.

        Example:
            >>> loss = (torch.ones(2, requires_grad=True) * 3).sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> r = Replay(rec); r.edge_summary("n0:0") is None; _ = r.step()
            True
            >>> r.edge_summary("n0:0").shape
            (2,)
        """
        e = self._edge(edge_or_id)
        return self.recording.edge_summary(e.id) if self._flowed(e) else None

    def edge_summaries(self) -> dict[str, Summary]:
        """Summaries of every edge that has flowed so far.

        Example:
            >>> loss = (torch.ones(2, requires_grad=True) * 3).sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> r = Replay(rec); _ = r.step(); list(r.edge_summaries())
            ['n0:0']
        """
        out: dict[str, Summary] = {}
        for e in self._graph.edges:
            if self._flowed(e):
                s = self.recording.edge_summary(e.id)
                if s is not None:
                    out[e.id] = s
        return out

    def edge_grad(self, edge_or_id: Edge | str) -> Any:
        """The kept full gradient of an edge once it flowed (`record(keep="tensors")`), else None.

        Example:
            >>> loss = (torch.ones(2, requires_grad=True) * 3).sum()
            >>> with aw.record(loss, keep="tensors") as rec:
            ...     loss.backward()
            >>> r = Replay(rec); _ = r.run(); r.edge_grad("n1:0")
            tensor([3., 3.])
        """
        e = self._edge(edge_or_id)
        return self.recording.edge_grad(e.id) if self._flowed(e) else None

    def waiting(self, node_id: str) -> list[Summary | None]:
        """Per input slot of `node_id`: what it received, once every edge into that slot has
        flowed (a recording holds sums per slot, not partial sums); None before.

        Example:
            >>> loss = (torch.ones(2, requires_grad=True) * 3).sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> r = Replay(rec); _ = r.step(); r.waiting("n1")[0].shape
            (2,)
        """
        node = self._graph.nodes[self._graph.check_id(node_id)]
        received = self._inputs(node.id)
        slots: list[Summary | None] = [None] * len(node.inputs)
        pending: dict[int, bool] = {}
        for e in self._graph.in_edges(node.id):
            pending[e.input_nr] = pending.get(e.input_nr, True) and self._flowed(e)
        for slot, ok in pending.items():
            if ok and slot < len(received) and slot < len(slots):
                slots[slot] = received[slot]
        if not self._graph.in_edges(node.id) and node.id in self._step_of:
            # a root: its seed arrives with the run
            slots = [s for s in received] or slots
        return slots

    def grad(self, tensor: Any) -> Any:
        """Not available: a recording holds no tensors to look up.

        Example:
            >>> loss = (torch.ones(2, requires_grad=True) * 3).sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> r = Replay(rec)
            >>> r.grad(torch.ones(2))
            Traceback (most recent call last):
            RuntimeError: grad(tensor) needs the live graph: ...
        """
        raise RuntimeError(_LIVE_ONLY.format(what="grad(tensor)", why="read gradients by tensor"))

    def first_nonfinite(self) -> tuple[Edge, Summary] | None:
        """The first edge, in run order among the steps shown, whose gradient has a NaN/Inf.

        Example:
            >>> loss = (torch.ones(2, requires_grad=True) * 3).sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> r = Replay(rec); _ = r.run(); r.first_nonfinite() is None
            True
        """
        for k in range(self._pos):
            for e in self._graph.out_edges(self._order[k]):
                s = self.recording.edge_summary(e.id)
                if s is not None and (s.nan or s.inf):
                    return e, s
        return None

    def nonfinite_origins(self) -> list[Origin]:
        """The recording's `nonfinite_origins()` among the steps shown so far.

        Example:
            >>> loss = (torch.ones(2, requires_grad=True) * 3).sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> r = Replay(rec); _ = r.run(); r.nonfinite_origins()
            []
        """
        return [o for o in self.recording.nonfinite_origins() if o.step < self._pos]

    def explain_failure(self) -> FailureExplanation | None:
        """Why the recorded backward failed (computed while the graph was live), once the replay
        reached the failing node; None otherwise.

        Example:
            >>> a = torch.ones(2, requires_grad=True); b = a.sigmoid(); _ = b.mul_(2)
            >>> loss = b.sum()
            >>> try:
            ...     with aw.record(loss) as rec:
            ...         loss.backward()
            ... except RuntimeError:
            ...     pass
            >>> r = Replay(rec); _ = r.run(); r.explain_failure().saved_name
            'result'
        """
        if self._failure is None or self.recording.failure is None:
            return None
        return self.recording.failure.explanation

    # ----------------------------------------------------------------- live-only
    def compare_with_engine(
        self, *, rtol: float | None = None, atol: float | None = None, tensors: Sequence[Any] = ()
    ) -> list[Difference]:
        """Not available: the recording IS the engine's run.

        Example:
            >>> loss = (torch.ones(2, requires_grad=True) * 3).sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> r = Replay(rec)
            >>> r.compare_with_engine()
            Traceback (most recent call last):
            RuntimeError: compare_with_engine() needs the live graph: ...
        """
        raise RuntimeError(_LIVE_ONLY.format(what="compare_with_engine()",
                                             why="compare a manual run with the engine"))

    def jacobian_norms(
        self, nodes: str | Node | Iterable[str | Node] | None = None, samples: int = 16,
        seed: int | None = None, *, exact_max: int | None = None,
    ) -> dict[str, JacobianNorm]:  # fmt: skip
        """Not available: probing calls the nodes.

        Example:
            >>> loss = (torch.ones(2, requires_grad=True) * 3).sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> r = Replay(rec)
            >>> r.jacobian_norms()
            Traceback (most recent call last):
            RuntimeError: Sensitivity (jacobian_norms) needs the live graph: ...
        """
        raise RuntimeError(_LIVE_ONLY.format(what="Sensitivity (jacobian_norms)",
                                             why="probe the nodes"))

    def _no_edit(self, *_: Any, **__: Any) -> None:
        raise RuntimeError(_LIVE_ONLY.format(what="Editing a gradient", why="try a what-if"))

    set_edge_grad = scale_edge_grad = zero_edge_grad = clear_edits = _no_edit

    def leaf_grad_diff(self) -> dict[str, Any]:
        """Always empty: nothing can be edited.

        Example:
            >>> loss = (torch.ones(2, requires_grad=True) * 3).sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> r = Replay(rec)
            >>> r.leaf_grad_diff()
            {}
        """
        return {}

    # ----------------------------------------------------------------- cleanup
    def close(self) -> None:
        """Stop: every move raises afterwards. Idempotent.

        Example:
            >>> loss = (torch.ones(2, requires_grad=True) * 3).sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> r = Replay(rec)
            >>> r.close(); r.closed
            True
        """
        self._closed = True

    def __repr__(self) -> str:
        return f"<Replay step {self._pos}/{len(self._order)} of a recording>"


def recording_name(recording: Recording) -> str:
    """How the drawing names a recording: "rank N" for one rank of a distributed job, else
    "the compared recording".

    Example:
        >>> loss = (torch.ones(2, requires_grad=True) * 3).sum()
        >>> with aw.record(loss) as rec:
        ...     loss.backward()
        >>> recording_name(rec)
        'the compared recording'
    """
    meta = recording.meta or {}
    if int(meta.get("world_size", 1) or 1) > 1:
        return f"rank {meta.get('rank', 0)}"
    return "the compared recording"
