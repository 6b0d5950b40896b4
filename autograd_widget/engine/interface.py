"""The one stepping interface: what a view, the wire and the export may ask of a backward run.

Two classes implement it: `Stepper` (engine/step/: a live graph, stepped by hand) and `Replay`
(engine/record/: a `Recording` of the engine's own run, stepped through). Everything outside
engine/ is typed against `Stepping` and never tests which class it holds: where the two differ,
it reads `capabilities` (what this run can do) or calls a member whose answer already says it
(`execution_of` is None for a live stepper, `known_run_norms` is None until something ran).

The members are documented here, once, with one meaning each that both classes keep; the
classes' own docstrings say only what is particular to them, with an example each. What the two
share is one piece of code, `RunBase` (engine/step/runbase.py); a contract test
(tests/engine/step/test_interface_contract.py) runs both through the same calls over the same
program and compares the answers, and `mypy --strict` checks that both conform
(tests/engine/step/typecheck_stepping.py).

Example:
    >>> def describe(st: Stepping) -> str:
    ...     return "live" if st.capabilities.live else "recorded"
    >>> describe(aw.Stepper(g))
    'live'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..core.graph import BackwardGraph
    from ..core.records import Edge, Node
    from ..core.summary import Summary
    from .diagnose.failure import FailureExplanation
    from .diagnose.origins import Origin
    from .record.recording import NodeExecution
    from .step.listeners import ListenerHandle
    from .step.probes import JacobianNorm
    from .step.results import Difference, StepInfo, StepRecord

__all__ = ["LIVE", "RECORDED", "Capabilities", "Stepping"]


@dataclass(frozen=True)
class Capabilities:
    """What a backward run can do beyond moving and reading gradient summaries.

    Attributes:
        live: a torch graph stands behind it (nodes can be called, saved values read, hooks
            listed); False for a recording of the engine's run.
        edit: what-if edits (`set_edge_grad`, `scale_edge_grad`, `zero_edge_grad`).
        probe: Jacobian probes (`jacobian_norms`).
        compare: `compare_with_engine()` (a recording IS the engine's run).
        grad_of_tensor: `grad(tensor)` (a recording holds no tensors to look up).
        saved_values: the inspector may read the nodes' saved tensors.

    Example:
        >>> LIVE.edit, RECORDED.edit, RECORDED.live
        (True, False, False)
    """

    live: bool
    edit: bool
    probe: bool
    compare: bool
    grad_of_tensor: bool
    saved_values: bool


#: A live `Stepper`: everything.
LIVE = Capabilities(True, True, True, True, True, True)
#: A `Replay` of a recording: moving, summaries, origins, the failure; nothing that calls a node.
RECORDED = Capabilities(False, False, False, False, False, False)


@runtime_checkable
class Stepping(Protocol):
    """A backward run stepped node by node, in the engine's order (see the module docstring).

    A STEP is one entry of `order`. Every change of state (a move: `step`, `back`, `run`,
    `reset`, or an edit) notifies the listeners once; a call that changes nothing notifies
    nobody; reading never moves. A node that raises gives a record with `error` set and the
    position does not pass it: that record is `failure` until the next move.
    """

    @property
    def capabilities(self) -> Capabilities:
        """What this run can do (`LIVE` or `RECORDED`); views offer only what it says."""
        ...

    @property
    def graph(self) -> BackwardGraph:
        """The graph whose nodes are the steps: what a view draws (`capabilities.live` says
        whether its nodes can be called)."""
        ...

    @graph.setter
    def graph(self, graph: BackwardGraph) -> None:
        """Put a graph of the same structure in its place (what the widget does when it lets
        go of a live graph: records in place of the live nodes)."""
        ...

    @property
    def create_graph(self) -> bool:
        """Whether the gradients carry their own graph (double backward)."""
        ...

    @property
    def closed(self) -> bool:
        """True once `close()` was called: every move raises afterwards."""
        ...

    @property
    def order(self) -> Sequence[str]:
        """Node ids, one per step, in the order they run (read-only): the steps this run can
        show, so a run whose backward raised ends with the node that raised."""
        ...

    @property
    def position(self) -> int:
        """Number of steps done (0..len(order))."""
        ...

    @property
    def done(self) -> bool:
        """True when position == len(order) (a run stopped by a failing node is never done)."""
        ...

    @property
    def next_node(self) -> str | None:
        """Id of the node the next `step()` runs, None when done."""
        ...

    @property
    def failure(self) -> StepRecord | None:
        """The record of the step that just failed (cleared by any successful move)."""
        ...

    @property
    def last_error(self) -> tuple[str, str] | None:
        """(node id, message) of the step that just failed, else None. The message holds the
        exception's own text (a live run puts its type and node first: "ValueError in n3
        (MulBackward0): ..."; a recording keeps the engine's text as it was raised)."""
        ...

    @property
    def at_breakpoint(self) -> bool:
        """True when the next node is a breakpoint (where `run()` stops); False when done."""
        ...

    @property
    def history(self) -> Sequence[StepRecord]:
        """Records of the steps done so far, in order (built on read; follows the moves)."""
        ...

    @property
    def breakpoints(self) -> list[str]:
        """Node ids with a breakpoint, in step order."""
        ...

    @property
    def edits(self) -> dict[str, Any]:
        """Edge id -> the what-if edit on it (`EditInfo`), in step order of the sources;
        always empty without `capabilities.edit`."""
        ...

    @property
    def edit_seq(self) -> int:
        """A counter bumped whenever the set of edits changes (a view re-reads the edited
        edges); constant without `capabilities.edit`."""
        ...

    # ------------------------------------------------------------------ moving
    def step(self) -> StepRecord | None:
        """Run the next step: its record (`error` set when the node raised, position
        unchanged, `failure` set), or None when done (nothing changes)."""
        ...

    def run(self, until: str | None = None) -> StepRecord | None:
        """Run to the end, or up to and including node `until`; stops AT a failing node (its
        record, `failure` set) or BEFORE a breakpoint (a run that starts on one runs it
        first). The last record, None if nothing ran. KeyError for an `until` not in
        `order`, ValueError for one that already ran."""
        ...

    def back(self) -> None:
        """Undo the last step that moved the position, exactly, and clear `failure` (a failed
        step never moved it, so after a failure the step undone is the one before the node
        that raised). At position 0 it only clears `failure`."""
        ...

    def reset(self) -> None:
        """Back to position 0, `failure` cleared, every edit dropped; breakpoints stay."""
        ...

    def break_at(self, target: str | Callable[[Node], bool]) -> list[str]:
        """Make `run()` stop before the node `target` names (an id or a `Node`) or before
        every node it accepts (a predicate on `Node`, called once per node, now). Returns
        every node id that now breaks, in step order (`breakpoints`). KeyError for an id not
        in `order`, TypeError for a predicate that raises; neither changes anything."""
        ...

    def clear_breakpoints(self, target: str | Callable[[Node], bool] | None = None) -> None:
        """Remove the breakpoints on the nodes `target` names (an id or a `Node`) or accepts
        (any predicate, asked about each node: not only one given to `break_at`), however they
        were set; all of them for None. Breakpoints are a set of nodes: afterwards no node of
        `target` is in `breakpoints`, and the others stay."""
        ...

    def step_index(self, node_id: str | Node) -> int:
        """The step at which `node_id` (an id or a `Node`) runs; KeyError for a node not in
        `order`, TypeError for anything else."""
        ...

    # ------------------------------------------------------------------ reading
    def record(self, index: int) -> StepRecord:
        """The record of step `index` (0 <= index < position, else IndexError): node,
        inputs, outputs (tensors where kept, else summaries), seconds."""
        ...

    def step_info(self, index: int) -> StepInfo:
        """Node, called / no-gradient and time of step `index` (as `record`), no tensors."""
        ...

    def edge_summary(self, edge_or_id: Edge | str) -> Summary | None:
        """The summary of an edge's gradient once its source ran (among the steps done),
        None before. KeyError for an unknown edge id."""
        ...

    def edge_summaries(self) -> dict[str, Summary]:
        """Edge id -> summary, for every edge that has flowed so far."""
        ...

    def edge_grad(self, edge_or_id: Edge | str) -> Any:
        """The full gradient on an edge once it flowed, where it was kept; else None."""
        ...

    def waiting(self, node_id: str) -> list[Summary | None]:
        """Per input slot of `node_id`: the summary of the gradient the slot holds now, None
        where this run holds nothing for it yet. A slot fed by several edges reads its partial
        sum where the run keeps partial sums (a live run), else (a recording holds the totals
        only) None until every edge into it has flowed."""
        ...

    def grad(self, tensor: Any) -> Any:
        """The gradient computed so far for a captured tensor (needs `grad_of_tensor`, else
        RuntimeError)."""
        ...

    def first_nonfinite(self) -> tuple[Edge, Summary] | None:
        """The first edge, in step order among the steps done, whose gradient has NaN/Inf."""
        ...

    def nonfinite_origins(self) -> list[Origin]:
        """Per node that produced or received a NaN/Inf so far: born / propagated / healed,
        a birth with its cause."""
        ...

    def first_birth(self) -> Origin | None:
        """The first "born" origin of `nonfinite_origins()`, or None."""
        ...

    def explain_failure(self) -> FailureExplanation | None:
        """Why the step that just failed (`failure`) failed, or None when none did."""
        ...

    def execution_of(self, node_id: str) -> NodeExecution | None:
        """How the engine itself ran `node_id` (a recording's `NodeExecution`); None when this
        run was not the engine's (a live stepper) or the node did not run."""
        ...

    def known_run_norms(self) -> list[float] | None:
        """Every edge's gradient norm over the WHOLE run, when known without running anything
        (a recording holds them); None when it would take a run (a live stepper)."""
        ...

    def twin(self) -> Stepping:
        """A new run of the same kind over the same graph at position 0 (keep="summaries"):
        what an export steps through without moving this one. The caller closes it."""
        ...

    # ------------------------------------------------------------------ live only
    def compare_with_engine(
        self,
        *,
        rtol: float | None = None,
        atol: float | None = None,
        tensors: Sequence[Any] = (),
    ) -> list[Difference]:
        """Where a manual run of this graph and one run of the real engine disagree, with
        torch.testing's tolerances unless given; `tensors`: non-leaf tensors whose `.grad`
        must be restored (needs `compare`, else RuntimeError)."""
        ...

    def jacobian_norms(
        self,
        nodes: str | Node | Iterable[str | Node] | None = None,
        samples: int = 16,
        seed: int | None = None,
        *,
        exact_max: int | None = None,
    ) -> dict[str, JacobianNorm]:
        """Per node, the squared Frobenius norm of its gradient map (needs `probe`, else
        RuntimeError)."""
        ...

    def set_edge_grad(self, edge_or_id: Edge | str, tensor: Any) -> None:
        """What-if: replace the gradient on an edge (needs `edit`, else
        RuntimeError)."""
        ...

    def scale_edge_grad(self, edge_or_id: Edge | str, factor: float) -> None:
        """What-if: scale the gradient on an edge (needs `edit`, else
        RuntimeError)."""
        ...

    def zero_edge_grad(self, edge_or_id: Edge | str) -> None:
        """What-if: zero the gradient on an edge (needs `edit`, else
        RuntimeError)."""
        ...

    def clear_edits(self, edge_or_id: Edge | str | None = None) -> None:
        """Undo the edit on an edge, or every edit (needs `edit`, else
        RuntimeError)."""
        ...

    def leaf_grad_diff(self) -> dict[str, Any]:
        """Leaf id -> `LeafDiff` against the unedited run; empty without edits."""
        ...

    # ------------------------------------------------------------------ following
    def add_listener(self, fn: Callable[[Any], None]) -> ListenerHandle:
        """Call `fn(run)` after every change of state; the handle removes it (or use it as a
        context)."""
        ...

    def remove_listener(self, fn: Callable[[Any], None]) -> None:
        """Stop calling `fn`; a no-op if absent."""
        ...

    def batch(self) -> AbstractContextManager[Any]:
        """Group moves into one notification, sent when the outermost batch exits."""
        ...

    def close(self) -> None:
        """Drop every tensor held; idempotent; moves raise RuntimeError afterwards."""
        ...
