"""Records: the plain results the stepper hands out (steps, edits, differences, leaf diffs).

Typed, frozen dataclasses and named tuples with a format-tagged `as_dict` where a view needs JSON
(through util/jsonsafe.py, the one encoding of NaN/Inf/complex). None of them holds a reference to
a `Stepper`: a record stays valid (and cheap to keep) after the stepper moves on or is closed.
`History` and `ReadOnlyList` are the read-only views `Stepper.history` and `Stepper.order` return.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import torch

from ...core.records import Node
from ...core.summary import Summary
from ...util.jsonsafe import encode_float, encode_number

__all__ = [
    "Difference",
    "EditInfo",
    "GradView",
    "History",
    "LeafDiff",
    "ReadOnlyList",
    "StepInfo",
    "StepRecord",
]

#: What a record shows for one gradient: the tensor when kept, else its `Summary`; None: none.
GradView = torch.Tensor | Summary | None


@dataclass(frozen=True, repr=False)
class StepRecord:
    """One step of the plan: what node ran, what it received and what it sent along each edge.

    `inputs` has one entry per input slot, `outputs` one per outgoing edge id. Values are tensors
    when available (always in the record `step()` returns; in `history` only when kept), else the
    `Summary` kept in their place; None means no gradient. `called` is False for AccumulateGrad
    (it receives, never runs) and for built-in nodes whose slots all stayed empty ("no gradient":
    invoked as the engine does, so a freed or stale saved tensor fails, but nothing computed).
    A failed step has `error` set (the engine's message, with the node) and did not advance.

    Example:
        >>> rec = st.step()
        >>> rec
        <StepRecord 0: n0 AddBackward0 called, ... ms>
        >>> rec.inputs, rec.outputs
        ((tensor(1.),), {'n0:0': tensor(1.), 'n0:1': tensor(1.)})
    """

    index: int
    node: Node
    inputs: tuple[GradView, ...]
    outputs: dict[str, GradView]
    seconds: float
    error: str | None = None
    called: bool = True

    @property
    def ok(self) -> bool:
        """True when the step ran (no `error`).

        Example:
            >>> st.step().ok
            True
        """
        return self.error is None

    @property
    def no_gradient(self) -> bool:
        """True for a node that was not called because every slot stayed empty.

        Example:
            >>> st.step().no_gradient
            False
        """
        return self.error is None and not self.called and self.node.kind != "accumulate_grad"

    def __repr__(self) -> str:
        what = (
            "error"
            if self.error
            else (
                "called"
                if self.called
                else ("accumulated" if self.node.kind == "accumulate_grad" else "no gradient")
            )
        )
        return (
            f"<StepRecord {self.index}: {self.node.id} {self.node.name} {what}, "
            f"{self.seconds * 1e3:.3f} ms>"
        )


class StepInfo(NamedTuple):
    """The cheap facts of one step done (no tensors, no summaries): for views that redraw often.

    Example:
        >>> _ = st.step(); st.step_info(0)
        StepInfo(index=0, node='n0', called=True, no_gradient=False, seconds=...)
    """

    index: int
    node: str
    called: bool
    no_gradient: bool
    seconds: float


@dataclass(frozen=True)
class Difference:
    """One place where manual stepping and the engine disagree (see `compare_with_engine`).

    Example:
        >>> w = x * 3
        >>> _ = w.register_hook(lambda grad: grad * 10)  # the engine runs it; stepping does not
        >>> diffs = aw.Stepper(aw.capture(w)).compare_with_engine()
        >>> [(d.kind, d.node, d.max_abs_diff) for d in diffs]
        [('slot', 'n0', 9.0), ('leaf', 'n1', 27.0)]
    """

    #: "slot": what a node received in one input slot; "leaf": a leaf's gradient;
    #: "manual_error": manual stepping failed where the engine did not; "region_output": a
    #: compiled region's gradient output `slot`, the compiled kernels' (engine) against its
    #: aten ops' own result (manual; what flowed on is the compiled one: docs/compiled.md).
    kind: Literal["slot", "leaf", "manual_error", "region_output"]
    node: str
    name: str
    slot: int | None
    #: Largest |engine - manual|; None when one side has no gradient (or shapes differ).
    max_abs_diff: float | None
    engine: Summary | None
    manual: Summary | None
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        """JSON-safe fields (non-finite numbers through util/jsonsafe).

        Example:
            >>> d = Difference("leaf", "n3", "x", 0, float("inf"), None, None)
            >>> d.as_dict()["max_abs_diff"], d.as_dict()["engine"]
            ('inf', None)
        """
        return {
            "kind": self.kind,
            "node": self.node,
            "name": self.name,
            "slot": self.slot,
            "max_abs_diff": encode_float(self.max_abs_diff),
            "engine": None if self.engine is None else self.engine.as_dict(),
            "manual": None if self.manual is None else self.manual.as_dict(),
            "note": self.note,
        }


@dataclass(frozen=True, eq=False)
class EditInfo:
    """One what-if edit on an edge (see `Stepper.set_edge_grad`).

    `kind`: "set" (`value` replaces the gradient), "scale" (the computed gradient times
    `factor`) or "zero". `before`: the summary of what flowed on the edge before the edit (None
    when the source sent no gradient there). Compared by identity (`value` is a tensor).

    Example:
        >>> _ = st.step(); st.scale_edge_grad("n0:0", 10.0)
        >>> info = st.edits["n0:0"]
        >>> info.kind, info.factor, info.before.mean
        ('scale', 10.0, 1.0)
    """

    edge: str
    kind: Literal["set", "scale", "zero"]
    factor: float | complex | None
    value: torch.Tensor | None
    before: Summary | None

    def as_dict(self) -> dict[str, Any]:
        """JSON-safe fields (the factor through util/jsonsafe; the tensor value left out).

        Example:
            >>> _ = st.step(); st.scale_edge_grad("n0:0", 10.0)
            >>> st.edits["n0:0"].as_dict()["factor"]
            10.0
        """
        f = self.factor
        return {
            "edge": self.edge,
            "kind": self.kind,
            "factor": encode_number(f),
            "before": None if self.before is None else self.before.as_dict(),
        }


@dataclass(frozen=True)
class LeafDiff:
    """One leaf's gradient under the current what-if edits against the unedited run, both at
    the stepper's current position (see `Stepper.leaf_grad_diff`).

    Example:
        >>> _ = st.step(); st.scale_edge_grad("n0:0", 10.0); _ = st.run()
        >>> d = st.leaf_grad_diff()["n3"]
        >>> d.changed, d.edited, d.faithful, d.max_abs_diff
        (True, tensor(40.), tensor(4.), 36.0)
    """

    node: str
    name: str | None
    edited: torch.Tensor | None
    faithful: torch.Tensor | None

    @property
    def diff(self) -> torch.Tensor | None:
        """edited - faithful; None when either side has no gradient yet."""
        if self.edited is None or self.faithful is None:
            return None
        return _dense(self.edited) - _dense(self.faithful)

    @property
    def changed(self) -> bool:
        """Whether the edits changed this leaf's gradient at all (bitwise)."""
        if self.edited is None or self.faithful is None:
            return (self.edited is None) != (self.faithful is None)
        return not torch.equal(_dense(self.edited), _dense(self.faithful))

    @property
    def max_abs_diff(self) -> float | None:
        """Largest |edited - faithful|; None when either side has no gradient yet."""
        d = self.diff
        if d is None:
            return None
        return float(d.abs().max()) if d.numel() else 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-safe summaries (what a view shows on request).

        Example:
            >>> _ = st.step(); st.scale_edge_grad("n0:0", 10.0); _ = st.run()
            >>> d = st.leaf_grad_diff()["n3"].as_dict()
            >>> d["changed"], d["max_abs_diff"], d["diff"]["values"]
            (True, 36.0, [36.0])
        """

        def s(t: torch.Tensor | None) -> dict[str, Any] | None:
            return None if t is None else Summary.of(t).as_dict()

        return {
            "node": self.node,
            "name": self.name,
            "changed": self.changed,
            "max_abs_diff": encode_float(self.max_abs_diff),
            "edited": s(self.edited),
            "faithful": s(self.faithful),
            "diff": s(self.diff),
        }


def _dense(t: torch.Tensor) -> torch.Tensor:
    return t if t.layout is torch.strided else t.to_dense()


class History(Sequence):
    """A read-only sequence view of the executed steps' records, built on access.

    Args:
        length: returns the number of steps done (the stepper's position).
        record: returns the record of step k (< length()).

    Guarantees: `len()` and every item follow the stepper as it moves; nothing is copied.

    Example:
        >>> history = st.history
        >>> _ = st.run(until="n1")
        >>> len(history), [r.node.id for r in history]
        (3, ['n0', 'n2', 'n1'])
    """

    def __init__(self, length: Callable[[], int], record: Callable[[int], StepRecord]) -> None:
        self._len = length
        self._record = record

    def __len__(self) -> int:
        return self._len()

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self._record(k) for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        return self._record(i)

    def __iter__(self) -> Iterator[StepRecord]:
        for k in range(len(self)):
            yield self._record(k)


class ReadOnlyList(list):
    """A list that refuses changes: `Stepper.order`, shared by every caller.

    Guarantees: every mutating method raises TypeError; reading is a plain list's speed.

    Example:
        >>> order = ReadOnlyList(["n0", "n1"])
        >>> order[1]
        'n1'
    """

    def _readonly(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("Stepper.order is read-only; copy it first: list(stepper.order)")

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _readonly
    append = extend = insert = pop = remove = clear = sort = reverse = _readonly
