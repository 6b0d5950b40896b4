"""The stepper: backward by hand, node by node, exactly as the autograd engine would run it.

A `Stepper` turns a live `BackwardGraph` into a PLAN once: the engine's execution order (Kahn's
algorithm with a max-heap on `sequence_nr`, AccumulateGrad first as soon as ready, one dependency
per edge) and routing tables (which slot buffers a step reads, where each output goes, the
shape/dtype each destination slot expects). Stepping is then a tight loop over the plan that calls
each node as the engine does (AUTOGRAD_FACTS.md): one slot per `_input_metadata` entry, `None` for
empty slots, outputs reduced with `sum_to_size` and cast to the destination's metadata,
AccumulateGrad never called, grad mode off unless `create_graph=True`. Fan-in is summed out of
place, except into a partial sum the stepper made itself and nobody else references (checked by
identity and refcount), which gets `add_` like the engine's own input buffers: bitwise the same.

Two engine facts beyond AUTOGRAD_FACTS.md, verified on torch 2.13:
- a built-in node whose slots all stayed empty returns nothing, so it is not called ("no
  gradient"); a custom Function in that state IS called by the engine (with zeros, unless it
  turned materialisation off) and its results flow on, so it is called here too;
- `ctx.set_materialize_grads(False)` is not readable from Python; we read the flag's byte in the
  node's C struct, at an offset found once per process on a probe node of our own (see
  `_calibrate_materialize`). Without it we would pass zeros, then None if the Function raises.
  Empty slots of non-differentiable outputs get zeros shaped like their (default, 0-d) metadata:
  the engine uses the real output shape, which Python cannot see; a backward that ignores those
  gradients (the normal case) sees no difference, one that uses them sees a broadcastable zero.

State = position + slot buffers + edge records. `back()` restores the previous state exactly:
while tensors are kept, each step logs the slot values it overwrote (a per-step delta); once they
are not (`keep="summaries"` or past an int budget), `back()` replays the plan from the start, which
is exact because CPU kernels are deterministic for identical inputs (a replay re-runs custom
Functions' Python backward too).

Probes and what-if edits (issue 10). `jacobian_norms()` calls nodes again with gradients of its
own choosing (probes.py), apart from stepping: it changes nothing here. `set_edge_grad()` (and
`scale_edge_grad`/`zero_edge_grad`) replaces what flowed on an edge whose source has run and
whose destination has not; an edit lives ON ITS EDGE: every replay applies it when the source
runs again, so back()/forward over later steps keeps it, back() past the edge's source (the step
that produced the gradient) drops it, and reset() drops all of them. Applying an edit replays
the plan from the start to the current position, which rebuilds the slot buffers and the undo
log under the edit (exact and simple; an edit is a user action, not a hot path).

The stepper holds no autograd node objects (it fetches them from the graph at call time; see the
teardown hazard in AUTOGRAD_FACTS.md), writes no `.grad`, bumps no version counter and leaves no
hook behind: the user's own `backward()` works afterwards with identical results.
"""

from __future__ import annotations

import _signal
import contextlib
import ctypes
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import torch

from ..core.graph import BackwardGraph
from ..core.order import engine_order_indices
from ..core.records import Edge, Node
from ..core.summary import Summary, SummaryStore, summarize
from ..util.compat import check_step_api, gradient_edge
from ..util.dtypes import dtype_from_name
from ..util.gcpause import gc_paused
from ..util.jsonsafe import encode_float, encode_number

if TYPE_CHECKING:
    from .probes import JacobianNorm, LeafDiff

__all__ = ["Difference", "EditInfo", "StepInfo", "StepRecord", "Stepper"]

Keep = Literal["summaries", "tensors"] | int

# Step kinds in the plan.
_FUNCTION, _ACCUMULATE, _CUSTOM, _CPP = 0, 1, 2, 3
_KIND_CODE = {
    "function": _FUNCTION,
    "accumulate_grad": _ACCUMULATE,
    "custom_function": _CUSTOM,
    "cpp_function": _CPP,
}

#: Marks an edge whose gradient flowed but was not kept (its summary is in the summary store).
_FLOWED = object()

# --------------------------------------------------------------------------- custom Functions
# The engine materialises empty slots of a custom Function as zeros unless the Function called
# `ctx.set_materialize_grads(False)`. That flag has a setter but no getter in Python, so we find
# its byte in the C struct (THPFunction) once per process by flipping it on a probe node of our
# own, and read it on user nodes. If the calibration is inconclusive (a future torch), we fall back
# to: zeros first, and None if the Function raises on zeros.
_materialize_offset: int | None = None
_materialize_calibrated = False


class _Probe(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:
        return g


def _calibrate_materialize() -> int | None:
    global _materialize_offset, _materialize_calibrated
    if _materialize_calibrated:
        return _materialize_offset
    _materialize_calibrated = True
    try:
        with torch.enable_grad():
            node = _Probe.apply(torch.zeros(1, requires_grad=True)).grad_fn
        size = torch._C._FunctionBase.__basicsize__
        head = object.__basicsize__  # refcount + type: may change under us, never the flag
        before = ctypes.string_at(id(node), size)
        node.set_materialize_grads(False)
        after = ctypes.string_at(id(node), size)
        diff = [i for i in range(head, size) if before[i] != after[i]]
        if len(diff) == 1 and before[diff[0]] == 1 and after[diff[0]] == 0:
            node.set_materialize_grads(True)
            if ctypes.string_at(id(node) + diff[0], 1)[0] == 1:
                _materialize_offset = diff[0]
    except Exception:
        _materialize_offset = None
    return _materialize_offset


def _materializes(fn: Any) -> bool | None:
    """Whether the engine would pass zeros (True) or None (False) for this node's empty slots."""
    off = _calibrate_materialize()
    if off is None:
        return None
    flag = ctypes.string_at(id(fn) + off, 1)[0]
    return bool(flag) if flag in (0, 1) else None


@dataclass(frozen=True)
class _CustomInfo:
    """How to call one custom Function node and map its results back onto its edges."""

    name: str
    #: One entry per forward argument (tensor or not): does the engine want its gradient?
    needs: tuple[bool, ...]
    #: Output slots (next_functions indices) that lead somewhere, in order.
    valid: tuple[int, ...]
    n_outputs: int
    #: Forward-argument positions known to be non-tensors (a non-None result there is an error).
    nontensor: frozenset[int]
    #: True: zeros for empty slots; False: None; None: unknown (zeros, then None on error).
    materialize: bool | None
    zeros: tuple[tuple[tuple[int, ...], torch.dtype, torch.device], ...]
    #: Why this node must never be called by hand (None: it may be).
    refuse: str | None = None


def _reentrant_checkpoint(fn: Any, node: Node) -> str | None:
    """The refusal for a reentrant-checkpoint node: calling it would write `.grad`."""
    fwd = getattr(type(fn), "_forward_cls", None)
    if node.name != "CheckpointFunctionBackward" and getattr(fwd, "__name__", "") != (
        "CheckpointFunction"
    ):
        return None
    return (
        f"{node.id} ({node.name}) is reentrant activation checkpointing "
        "(torch.utils.checkpoint.checkpoint(..., use_reentrant=True)): its backward re-runs the "
        "forward and calls backward() inside, which writes .grad of the parameters it hides "
        "from this graph, so autograd_widget will not call it. Use "
        "checkpoint(..., use_reentrant=False), which is transparent (every recomputed node is "
        "visible and steppable), or capture without checkpointing."
    )


def _custom_info(fn: Any, node: Node) -> _CustomInfo:
    refuse = _reentrant_checkpoint(fn, node)
    needs = tuple(bool(b) for b in fn.needs_input_grad)
    nexts = fn.next_functions
    valid = tuple(i for i, (f, _) in enumerate(nexts) if f is not None)
    n_args, n_tensors = len(needs), len(nexts)
    n_false = sum(1 for b in needs if not b)
    if n_args == n_tensors:
        nontensor: frozenset[int] = frozenset()
    elif n_false == n_args - n_tensors:
        nontensor = frozenset(i for i, b in enumerate(needs) if not b)
    else:
        nontensor = frozenset()  # ambiguous: cannot tell non-tensors from tensors without grad
    if sum(needs) != len(valid):
        raise RuntimeError(
            f"custom Function node {node.id} ({node.name}) has {sum(needs)} inputs needing grad "
            f"but {len(valid)} outgoing edges; cannot map its backward results onto its edges"
        )
    zeros = tuple((m.shape, dtype_from_name(m.dtype), torch.device(m.device)) for m in node.inputs)
    return _CustomInfo(
        node.name, needs, valid, n_tensors, nontensor, _materializes(fn), zeros, refuse
    )


def _apply_custom(info: _CustomInfo, fn: Any, args: list) -> tuple:
    """Call a custom Function node like PyNode::apply does, with its result checks and messages."""
    if info.refuse is not None:
        raise RuntimeError(info.refuse)
    if info.materialize is False or all(a is not None for a in args):
        res = fn.apply(*args)
    else:
        filled = [
            torch.zeros(z[0], dtype=z[1], device=z[2]) if a is None else a
            for a, z in zip(args, info.zeros)
        ]
        if info.materialize:
            res = fn.apply(*filled)
        else:
            try:
                res = fn.apply(*filled)
            except Exception:
                res = fn.apply(*args)
    if not isinstance(res, tuple):
        res = (res,)
    nf = len(info.needs)
    if len(res) > nf and all(r is None for r in res[nf:]):
        res = res[:nf]
    if len(res) != nf:
        raise RuntimeError(
            f"function {info.name} returned an incorrect number of gradients (expected {nf}, "
            f"got {len(res)})"
        )
    out: list = [None] * info.n_outputs
    j = 0
    for pos, val in enumerate(res):
        if val is not None:
            if pos in info.nontensor:
                raise RuntimeError(
                    f"function {info.name} returned a gradient different than None at position "
                    f"{pos + 1}, but the corresponding forward input was not a Variable"
                )
            if not isinstance(val, torch.Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(val).__name__})")
        if info.needs[pos]:
            out[info.valid[j]] = val
            j += 1
    return tuple(out)


# --------------------------------------------------------------------------- engine checks
def _expandable(shape: Sequence[int], to: Sequence[int]) -> bool:
    """at::is_expandable_to: can a tensor of `shape` broadcast to `to`?"""
    ns, nt = len(shape), len(to)
    if ns > nt:
        return False
    for i in range(1, ns + 1):
        a, b = shape[ns - i], to[nt - i]
        if a != b and a != 1:
            return False
    return True


_COMPLEX_CHECK = (
    "Expected isFloatingType(grad.scalar_type()) || (input_is_complex == grad_is_complex) to be "
    "true, but got false.  (Could this error message be improved?  If so, please report an "
    "enhancement request to PyTorch.)"
)


def _validate(
    g: torch.Tensor,
    shape: torch.Size,
    dtype: torch.dtype,
    device: torch.device | None,
    name: str,
    index: int,
) -> torch.Tensor:
    """The engine's validate_outputs for one gradient: reduce to shape, cast dtype and device."""
    if g.shape != shape:
        if not _expandable(shape, g.shape):
            raise RuntimeError(
                f"Function {name} returned an invalid gradient at index {index} - got "
                f"{list(g.shape)} but expected shape compatible with {list(shape)}"
            )
        g = g.sum_to_size(shape) if len(shape) else g.sum()
    if g.dtype is not dtype:
        if g.is_complex() and not dtype.is_complex:
            raise RuntimeError(_COMPLEX_CHECK)
        g = g.to(dtype)
    if device is not None and g.device != device:
        g = g.to(device)
    return g




# --------------------------------------------------------------------------- the plan
@dataclass(frozen=True)
class _Plan:
    """Everything about stepping that depends only on the graph's structure (computed once)."""

    order: tuple[str, ...]
    step_of: dict[str, int]
    node_of: list[int]
    kind: list[int]
    start: list[int]
    arity: list[int]
    #: Per step: (output_nr, edge index, destination slot, shape, dtype, device or None).
    routes: list[tuple]
    #: Per step: every edge index leaving the node (also the ones that get no gradient).
    out_edges: list[tuple[int, ...]]
    #: Per step: the node's slots that receive more than one contribution (summarised as sums).
    multi: list[tuple[int, ...]]
    node_start: list[int]
    n_slots: int
    edge_ids: list[str]
    edge_index: dict[str, int]
    edge_step: list[int]
    #: Per step: the node's name (for error messages).
    names: list[str]
    #: Per slot: the one edge feeding it (and no root seed), else -1.
    slot_edge: list[int]
    #: Per slot: number of contributions (incoming edges + root seeds).
    slot_contrib: list[int]
    slot_node: list[int]
    root_slots: list[int]
    custom: dict[int, _CustomInfo] = field(default_factory=dict)


def _build_plan(graph: BackwardGraph, fns: list) -> _Plan:
    nodes = graph.nodes
    n = len(nodes)
    recs: list[Node] = [nodes[f"n{i}"] for i in range(n)]
    node_start = [0] * n
    total = 0
    for i, rec in enumerate(recs):
        node_start[i] = total
        total += len(rec.inputs)
    devices = {m.device for rec in recs for m in rec.inputs}
    check_device = len(devices) > 1

    edges = graph.edges
    edge_ids = [e.id for e in edges]
    out_by_node: list[list[int]] = [[] for _ in range(n)]
    contrib = [0] * total
    feeder = [-1] * total
    src_of = [int(e.src[1:]) for e in edges]  # ids are f"n{i}": parse each once
    dst_of = [int(e.dst[1:]) for e in edges]
    for ei, e in enumerate(edges):
        src, dst = src_of[ei], dst_of[ei]
        out_by_node[src].append(ei)
        s = node_start[dst] + e.input_nr
        contrib[s] += 1
        feeder[s] = ei
    root_slots = []
    for nid, onr in graph.roots:
        i = int(nid[1:])
        s = node_start[i] + onr
        root_slots.append(s)
        contrib[s] += 1
        feeder[s] = -1
    slot_edge = [feeder[s] if contrib[s] == 1 else -1 for s in range(total)]

    order_idx = engine_order_indices(graph)

    metas: dict[tuple, tuple] = {}
    node_of, kind, start, arity, routes, out_edges, multi = [], [], [], [], [], [], []
    edge_step = [0] * len(edges)
    custom: dict[int, _CustomInfo] = {}
    for k, i in enumerate(order_idx):
        rec = recs[i]
        node_of.append(i)
        code = _KIND_CODE[rec.kind]
        kind.append(code)
        a = node_start[i]
        start.append(a)
        arity.append(len(rec.inputs))
        rts = []
        for ei in out_by_node[i]:
            e = edges[ei]
            edge_step[ei] = k
            dst = dst_of[ei]
            m = recs[dst].inputs[e.input_nr]
            target = metas.get(m)
            if target is None:
                target = metas[m] = (
                    torch.Size(m.shape),
                    dtype_from_name(m.dtype),
                    torch.device(m.device) if check_device else None,
                )
            rts.append((e.output_nr, ei, node_start[dst] + e.input_nr, *target))
        routes.append(tuple(rts))
        out_edges.append(tuple(out_by_node[i]))
        multi.append(tuple(s for s in range(a, a + len(rec.inputs)) if contrib[s] > 1))
        if code == _CUSTOM:
            custom[k] = _custom_info(fns[i], rec)
    order = tuple(f"n{i}" for i in order_idx)
    return _Plan(
        order=order,
        step_of={nid: k for k, nid in enumerate(order)},
        node_of=node_of,
        kind=kind,
        start=start,
        arity=arity,
        routes=routes,
        out_edges=out_edges,
        multi=multi,
        node_start=node_start,
        n_slots=total,
        edge_ids=edge_ids,
        edge_index={eid: ei for ei, eid in enumerate(edge_ids)},
        edge_step=edge_step,
        names=[recs[i].name for i in order_idx],
        slot_edge=slot_edge,
        slot_contrib=contrib,
        slot_node=[i for i, rec in enumerate(recs) for _ in rec.inputs],
        root_slots=root_slots,
        custom=custom,
    )


def _root_seeds(graph: BackwardGraph, plan: _Plan) -> list[tuple[int, torch.Tensor]]:
    """The root gradients, as torch.autograd.grad makes them (implicit ones for real scalars)."""
    roots = graph.root_tensors
    gos = graph.grad_outputs or (None,) * len(roots)
    seeds = []
    for j, (t, go, s) in enumerate(zip(roots, gos, plan.root_slots)):
        if go is None:
            if t.numel() != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for scalar outputs (output {j} has "
                    f"shape {list(t.shape)}); pass grad_outputs= to capture() for it"
                )
            if not t.dtype.is_floating_point:
                raise RuntimeError(
                    f"grad can be implicitly created only for real scalar outputs but got "
                    f"{t.dtype} (output {j}); pass grad_outputs= to capture() for it"
                )
            go = torch.ones_like(t, memory_format=torch.preserve_format)
        i = plan.slot_node[s]
        m = graph.nodes[f"n{i}"].inputs[s - plan.node_start[i]]
        dev = torch.device(m.device)  # a 0-d grad_output elsewhere is moved, like the engine
        dt = dtype_from_name(m.dtype)
        seeds.append((s, _validate(go, torch.Size(m.shape), dt, dev, "GraphRoot", j)))
    return seeds


# --------------------------------------------------------------------------- records
GradView = torch.Tensor | Summary | None


@dataclass(frozen=True, repr=False)
class StepRecord:
    """One step of the plan: what node ran, what it received and what it sent along each edge.

    `inputs` has one entry per input slot, `outputs` one per outgoing edge id. Values are tensors
    when available (always in the record `step()` returns; in `history` only when kept), else the
    `Summary` kept in their place; None means no gradient. `called` is False for AccumulateGrad
    (it receives, never runs) and for built-in nodes whose slots all stayed empty ("no gradient").
    A failed step has `error` set (the engine's message, with the node) and did not advance.
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
        return self.error is None

    @property
    def no_gradient(self) -> bool:
        """True for a node that was not called because every slot stayed empty."""
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
    """The cheap facts of one step done (no tensors, no summaries): for views that redraw often."""

    index: int
    node: str
    called: bool
    no_gradient: bool
    seconds: float


@dataclass(frozen=True)
class Difference:
    """One place where manual stepping and the engine disagree (see `compare_with_engine`)."""

    #: "slot": what a node received in one input slot; "leaf": a leaf's gradient;
    #: "manual_error": manual stepping failed where the engine did not.
    kind: Literal["slot", "leaf", "manual_error"]
    node: str
    name: str
    slot: int | None
    #: Largest |engine - manual|; None when one side has no gradient (or shapes differ).
    max_abs_diff: float | None
    engine: Summary | None
    manual: Summary | None
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
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
    when the source sent no gradient there). Compared by identity (`value` is a tensor)."""

    edge: str
    kind: Literal["set", "scale", "zero"]
    factor: float | complex | None
    value: torch.Tensor | None
    before: Summary | None

    def as_dict(self) -> dict[str, Any]:
        f = self.factor
        return {
            "edge": self.edge,
            "kind": self.kind,
            "factor": encode_number(f),
            "before": None if self.before is None else self.before.as_dict(),
        }


class _History(Sequence):
    """A read-only sequence view of the executed steps' records (built on access)."""

    def __init__(self, stepper: Stepper) -> None:
        self._s = stepper

    def __len__(self) -> int:
        return self._s.position

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self._s.record(k) for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        return self._s.record(i)

    def __iter__(self) -> Iterator[StepRecord]:
        for k in range(len(self)):
            yield self._s.record(k)


# --------------------------------------------------------------------------- the stepper
class Stepper:
    """Run a captured graph's backward by hand, one engine step at a time (see the module doc).

    `keep`: "summaries" (default) keeps a `Summary` per edge gradient and frees the tensors as the
    engine would; "tensors" keeps every edge gradient (and makes `back()` O(1)); an int is a byte
    budget: tensors while the next step's gradients (and partial sums) still fit in it, summaries
    from the first step that does not fit on (a budget smaller than one gradient keeps none).
    Leaf gradients are always kept.
    `create_graph=True` runs the nodes with grad mode on, so the gradients carry their own graph
    (capture it and step it again: double backward).
    """

    def __init__(
        self, graph: BackwardGraph, *, create_graph: bool = False, keep: Keep = "summaries"
    ) -> None:
        if not isinstance(graph, BackwardGraph):
            raise TypeError(
                f"Stepper needs a BackwardGraph from aw.capture(...), got {type(graph).__name__}"
            )
        if isinstance(keep, bool) or not (
            keep in ("summaries", "tensors") or (isinstance(keep, int) and keep >= 0)
        ):
            raise ValueError(
                f"keep must be 'summaries', 'tensors' or a byte budget (int >= 0), got {keep!r}"
            )
        live = graph.require_live("step this graph")
        self.graph = graph
        self.create_graph = bool(create_graph)
        self.keep: Keep = keep
        self._keep_all = keep == "tensors"
        self._budget: int | None = keep if isinstance(keep, int) else None
        try:
            with gc_paused():
                self._plan = _build_plan(graph, live.fns)
        except AttributeError:
            # A node lacking an attribute stepping relies on: name the torch version instead.
            for i, fn in enumerate(live.fns):
                check_step_api(fn, graph.nodes[f"n{i}"].kind)
            raise
        self._seeds = _root_seeds(graph, self._plan)
        #: Per step, an upper bound of the bytes it adds when kept (budget mode only).
        self._step_bytes: list[int] = _step_bytes(self._plan) if self._budget is not None else []
        self._store = SummaryStore()
        self._breaks: set[str] = set()
        self._break_preds: list[Callable[[Node], bool]] = []
        self._break_steps: list[int] = []
        self._break_set: frozenset[int] = frozenset()
        self._closed = False
        self._seconds: list[float] = []
        self._nograd: set[int] = set()
        self._failure: StepRecord | None = None
        self._listeners: list[Callable[[Stepper], None]] = []
        self._batch_depth = 0
        self._dirty = False
        self._order: _ReadOnlyList | None = None
        self._guarded = False
        self._sigint = False
        self._limit: list[int] | None = None
        # What-if edits: edge index -> EditInfo; the steps whose outputs they replace.
        self._edits: dict[int, EditInfo] = {}
        self._edit_steps: frozenset[int] = frozenset()
        self._edit_seq = 0
        self._edit_capture: dict[int, torch.Tensor | None] | None = None
        self._faithful: Stepper | None = None
        #: Node id -> why its Jacobian probe failed, from the last `jacobian_norms()` call.
        self.probe_errors: dict[str, str] = {}
        self._reset_state()

    # ----------------------------------------------------------------- listeners
    def add_listener(self, fn: Callable[[Stepper], None]) -> None:
        """Call `fn(stepper)` after every change of state (step, back, run, reset): how a view
        stays in sync when the stepper is driven from Python. Exceptions propagate."""
        self._listeners.append(fn)

    def remove_listener(self, fn: Callable[[Stepper], None]) -> None:
        # == not `is`: a bound method is a new object at every attribute access.
        self._listeners = [f for f in self._listeners if f != fn]

    @contextlib.contextmanager
    def batch(self) -> Iterator[Stepper]:
        """Group many moves into one notification, sent when the outermost batch exits."""
        self._batch_depth += 1
        try:
            with self._interruptible():  # one SIGINT guard for all the steps of the batch
                yield self
        finally:
            self._batch_depth -= 1
            if self._batch_depth == 0 and self._dirty:
                self._notify()

    def _notify(self) -> None:
        if self._batch_depth:
            self._dirty = True
            return
        self._dirty = False
        for fn in list(self._listeners):
            fn(self)

    # ----------------------------------------------------------------- state
    def _reset_state(self) -> None:
        """Position 0: slots hold the root seeds; no edge has flowed; no undo log."""
        plan = self._plan
        slots: list = [None] * plan.n_slots
        for s, seed in self._seeds:
            slots[s] = seed if slots[s] is None else slots[s] + seed
        self._slots = slots
        self._edge_val: list = [None] * len(plan.edge_ids)
        # Undo log of the kept steps (a prefix of the steps done): for step k, entries
        # _u_slot/_u_old[_u_mark[k]:] of what each slot held before the step wrote it.
        self._u_slot: list[int] = []
        self._u_old: list = []
        self._u_mark: list[int] = []
        self._u_used: list[int] = []
        self._used = 0
        self._pos = 0
        self._cache: dict[int, torch.Tensor] = {}
        # slot -> the partial sum the stepper made for it (identity-checked before an in-place
        # add: after a rollback or back() the slot may hold someone else's tensor again)
        self._owned: dict[int, torch.Tensor] = {}

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this Stepper was closed; create a new one from a live graph")

    @property
    def order(self) -> list[str]:
        """Node ids in the engine's execution order: one entry per step (a read-only list,
        built once: views index it once per step, and a copy per access made that O(n^2))."""
        order = self._order
        if order is None:
            order = self._order = _ReadOnlyList(self._plan.order)
        return order

    @property
    def position(self) -> int:
        """Number of steps done (0..len(order))."""
        return self._pos

    @property
    def done(self) -> bool:
        return self._pos == len(self._plan.order)

    @property
    def next_node(self) -> str | None:
        """Id of the node the next `step()` runs, None when done."""
        return None if self.done else self._plan.order[self._pos]

    @property
    def failure(self) -> StepRecord | None:
        """The record of the step that just failed (cleared by any successful move)."""
        return self._failure

    @property
    def last_error(self) -> tuple[str, str] | None:
        """(node id, error message) of the step that just failed, else None."""
        f = self._failure
        return None if f is None else (f.node.id, f.error or "")

    @property
    def at_breakpoint(self) -> bool:
        """True when the next node to run is a breakpoint (where `run()` stops)."""
        return not self.done and self._pos in self._break_set

    @property
    def history(self) -> Sequence[StepRecord]:
        """Records of the steps done so far, in order (built on access)."""
        return _History(self)

    def step_index(self, node_id: str | Node) -> int:
        """The step at which `node_id` (an id, or a `Node` record of this graph) runs."""
        node_id = _node_id(node_id)
        try:
            return self._plan.step_of[node_id]
        except KeyError:
            raise KeyError(
                f"no node {node_id!r} in this graph (ids look like 'n0', 'n1', ...)"
            ) from None

    def _consumed(self, k: int) -> bool:
        """Step k ran and, not being kept, freed its input slots (AccumulateGrad never does)."""
        return k < self._pos and k >= len(self._u_mark) and self._plan.kind[k] != _ACCUMULATE

    # ----------------------------------------------------------------- the loop
    def _advance(
        self,
        stop: int,
        *,
        replay: bool = False,
        capture: bool = False,
        retain: frozenset[int] = frozenset(),
    ) -> StepRecord | None:
        """Execute steps position..stop-1 and return the failure record, if a node raised.

        `capture`: return the record of the (single) step done, with its tensors.
        `replay`: rebuild state only (records and summaries of these steps already exist).
        `retain`: slots not to free even when tensors are not kept (for `grad()`).
        """
        plan = self._plan
        fns = self.graph.require_live("step this graph").fns
        slots, ev = self._slots, self._edge_val
        u_slot, u_old, u_mark, u_used = self._u_slot, self._u_old, self._u_mark, self._u_used
        secs, nograd = self._seconds, self._nograd
        node_of, kinds, starts, arities = plan.node_of, plan.kind, plan.start, plan.arity
        routes, out_edges, multi, custom = plan.routes, plan.out_edges, plan.multi, plan.custom
        keep_all, budget, used = self._keep_all, self._budget, self._used
        step_bytes = self._step_bytes
        store_add = self._store.add
        n_edges = len(plan.edge_ids)
        flowed = _FLOWED
        inplace = not self.create_graph
        refcount = sys.getrefcount
        owned = self._owned
        perf = time.perf_counter
        k = self._pos
        result: StepRecord | None = None
        edit_steps = self._edit_steps
        grad_ctx = torch.enable_grad() if self.create_graph else torch.no_grad()
        # A deferred Ctrl-C (see `_interruptible`) lowers the limit: the loop stops at a step
        # boundary. Replays are not deferred (`_rebuild` restores the old state instead).
        limit = [stop]
        self._limit = None if replay else limit
        t0 = perf()
        try:
            with grad_ctx:
                while k < limit[0]:
                    kind = kinds[k]
                    # Kept steps are a prefix of the steps done (len(u_mark) == k), and a step is
                    # kept only if its gradients surely fit in what is left of the budget.
                    kept = keep_all or (
                        budget is not None and len(u_mark) == k and used + step_bytes[k] <= budget
                    )
                    m0 = len(u_slot)
                    try:
                        if kind != _ACCUMULATE:
                            a = starts[k]
                            n = arities[k]
                            if n == 1:
                                g0 = slots[a]
                                if kind == _FUNCTION:
                                    out = None if g0 is None else fns[node_of[k]](g0)
                                elif kind == _CUSTOM:
                                    out = _apply_custom(custom[k], fns[node_of[k]], [g0])
                                else:
                                    out = fns[node_of[k]](g0)
                            else:
                                args = slots[a : a + n]
                                if kind == _FUNCTION:
                                    # Identity tests only: `list.count(None)` calls Tensor.__eq__.
                                    out = (
                                        None
                                        if all(x is None for x in args)
                                        else fns[node_of[k]](*args)
                                    )
                                elif kind == _CUSTOM:
                                    out = _apply_custom(custom[k], fns[node_of[k]], args)
                                else:
                                    out = fns[node_of[k]](*args)
                            if edit_steps and k in edit_steps:
                                out = self._edited_outputs(k, out, replay)
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
                                        g = _validate(g, shape, dtype, dev, plan.names[k], onr)
                                    old = slots[s]
                                    if old is None:
                                        u_slot.append(s)
                                        u_old.append(None)
                                        slots[s] = g
                                    elif (
                                        r is last
                                        and not kept
                                        and inplace
                                        and owned.get(s) is old
                                        and refcount(old) == 4
                                    ):
                                        # Our own partial sum that nobody else references
                                        # (refs: slots, owned, `old`, getrefcount's argument),
                                        # and the step's last write (nothing after it can fail
                                        # and need a rollback): add in place like the engine
                                        # does (same bits as old + g).
                                        old.add_(g)
                                    else:
                                        u_slot.append(s)
                                        u_old.append(old)
                                        slots[s] = owned[s] = old + g
                                    ev[ei] = g
                    except BaseException as exc:
                        for j in range(len(u_slot) - 1, m0 - 1, -1):
                            slots[u_slot[j]] = u_old[j]
                            owned.pop(u_slot[j], None)
                        del u_slot[m0:], u_old[m0:]
                        for ei in out_edges[k]:
                            ev[ei] = None
                        if not replay:
                            nograd.discard(k)
                        if not isinstance(exc, Exception):
                            # KeyboardInterrupt (Ctrl-C inside a node, or raised by a backward):
                            # step k is rolled back; the finally below records the position.
                            raise
                        result = self._failed(k, exc, perf() - t0)
                        break
                    if capture:
                        result = self._captured(k, perf() - t0)
                    if kept:
                        u_mark.append(m0)
                        u_used.append(used)
                        if budget is not None:
                            for ei in out_edges[k]:
                                g = ev[ei]
                                if g is not None:
                                    used += _nbytes(g)
                            for j in range(m0, len(u_slot)):
                                if u_old[j] is not None:  # a new partial sum, kept for back()
                                    used += _nbytes(slots[u_slot[j]])
                    else:
                        del u_slot[m0:], u_old[m0:]
                        for ei in out_edges[k]:
                            g = ev[ei]
                            if g is not None:
                                ev[ei] = flowed
                                if not replay:
                                    store_add(ei, g)
                        if kind != _ACCUMULATE:
                            if not replay:
                                for s in multi[k]:
                                    v = slots[s]
                                    if v is not None:
                                        store_add(n_edges + s, v)
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
            self._pos = k
            self._used = used
        return result

    def _failed(self, k: int, exc: BaseException, seconds: float) -> StepRecord:
        plan = self._plan
        nid = plan.order[k]
        node = self.graph.nodes[nid]
        a, n = plan.start[k], plan.arity[k]
        return StepRecord(
            k,
            node,
            tuple(self._slots[a : a + n]),
            {},
            seconds,
            f"{type(exc).__name__} in {nid} ({node.name}): {exc}",
            plan.kind[k] != _ACCUMULATE,
        )

    def _captured(self, k: int, seconds: float) -> StepRecord:
        """The record of step k just done, with its tensors (before any are freed)."""
        plan = self._plan
        a, n = plan.start[k], plan.arity[k]
        outs = {plan.edge_ids[ei]: self._edge_val[ei] for ei in plan.out_edges[k]}
        called = plan.kind[k] != _ACCUMULATE and k not in self._nograd
        return StepRecord(
            k,
            self.graph.nodes[plan.order[k]],
            tuple(self._slots[a : a + n]),
            outs,
            seconds,
            None,
            called,
        )

    _STATE = (
        "_slots", "_edge_val", "_u_slot", "_u_old", "_u_mark", "_u_used", "_used", "_pos",
        "_cache", "_owned",
    )  # fmt: skip

    def _rebuild(self, stop: int, retain: frozenset[int] = frozenset()) -> None:
        """Replay from the start to `stop` (state only: records and summaries stay).

        If the replay fails (the graph changed since the steps ran: a saved tensor modified in
        place, a backward that now raises) or is interrupted, the previous state is put back
        whole before the error propagates: the stepper stays where it was, consistent."""
        before = [getattr(self, name) for name in self._STATE]
        self._reset_state()
        try:
            with gc_paused():
                failure = self._advance(stop, replay=True, retain=retain)
        except BaseException:
            for name, value in zip(self._STATE, before):
                setattr(self, name, value)
            raise
        if failure is not None:  # only if the graph changed under us (e.g. an in-place op)
            for name, value in zip(self._STATE, before):
                setattr(self, name, value)
            raise RuntimeError(
                f"replaying the steps already done failed, the graph changed since they ran "
                f"(position {self._pos} kept; reset() and capture() again to step the new "
                f"values): {failure.error}"
            )

    def _interruptible(self) -> _SigintGuard:
        """Make Ctrl-C (SIGINT: also a notebook's interrupt button) safe while stepping.

        A SIGINT that lands inside a node's own code (a custom Function's backward, a Python
        subclass's dispatch) raises KeyboardInterrupt there: that step is rolled back whole. One
        that lands anywhere else (between nodes, in the stepper's bookkeeping or summaries, where
        an exception could leave a half-recorded step) stops the loop at the next step boundary
        and is raised once the state is complete. Either way the stepper is left at a step
        boundary, consistent, and `back()`/`reset()`/`run()` work. Only in the main thread and
        only over Python's default SIGINT handler (anything else is left alone)."""
        return _SigintGuard(self)

    def _on_sigint(self, signum: int, frame: Any) -> None:
        """The SIGINT handler while guarded (see `_interruptible`)."""
        child = None
        f = frame
        while f is not None and f.f_code is not _ADVANCE_CODE:
            child, f = f, f.f_back
        if f is not None and (
            self._limit is None  # a replay: `_rebuild` restores the old state
            or (
                child is not None
                and (child.f_code in _IN_STEP_CODES or not _ours(child.f_code.co_filename))
            )
        ):
            raise KeyboardInterrupt
        self._sigint = True
        if self._limit is not None:
            self._limit[0] = 0

    # ----------------------------------------------------------------- moving
    def step(self) -> StepRecord | None:
        """Run the next step. Returns its record (with the tensors it received and produced),
        a record with `error` set if the node raised (position unchanged), or None when done."""
        self._check_open()
        if self.done:
            return None
        with self._interruptible():
            try:
                with gc_paused():
                    rec = self._advance(self._pos + 1, capture=True)
            except BaseException:  # KeyboardInterrupt: rolled back to a step boundary
                self._store.release_recent()
                self._failure = None
                self._notify()
                raise
            self._store.release_recent()
            self._failure = rec if rec is not None and rec.error else None
            self._notify()
        return rec

    def run(self, until: str | None = None) -> StepRecord | None:
        """Run to the end, or up to AND including node `until`.

        Stops early BEFORE a breakpoint node (a run that starts on one executes it first, so
        repeated `run()` calls move from breakpoint to breakpoint) and AT a failing node (its
        record, with `error`, is returned and `failure` set). Returns the last record, or None
        when nothing ran. Summaries of the small gradients are computed before returning.
        """
        self._check_open()
        stop = len(self._plan.order)
        if until is not None:
            k = self.step_index(until)
            if k < self._pos:
                raise ValueError(
                    f"node {until!r} already ran (step {k}, position {self._pos}); call back() "
                    "or reset() to run up to it again"
                )
            stop = k + 1
        for b in self._break_steps:
            if self._pos < b < stop:
                stop = b
                break
        if self._pos >= stop:
            return None
        with self._interruptible():
            try:
                with gc_paused():
                    failure = self._advance(stop)
            except BaseException:  # KeyboardInterrupt: stopped at a step boundary
                self._store.release_recent()
                self._failure = None
                self._notify()
                raise
            with gc_paused():
                self._store.release_recent()
                self._store.flush()
            self._failure = failure
            self._notify()
        if failure is not None:
            return failure
        return self.record(self._pos - 1)

    def back(self) -> None:
        """Undo the last step exactly: a logged delta while tensors are kept, else a replay."""
        self._check_open()
        self._failure = None
        if self._pos == 0:
            return
        k = self._pos - 1
        if k < len(self._u_mark):
            m0 = self._u_mark.pop()
            self._used = self._u_used.pop()
            slots, u_slot, u_old = self._slots, self._u_slot, self._u_old
            for j in range(len(u_slot) - 1, m0 - 1, -1):
                slots[u_slot[j]] = u_old[j]
                self._owned.pop(u_slot[j], None)
            del u_slot[m0:], u_old[m0:]
            self._pos = k
        else:
            self._rebuild(k)
        plan = self._plan
        n_edges = len(plan.edge_ids)
        for ei in plan.out_edges[k]:
            self._edge_val[ei] = None
        if k in self._edit_steps:  # the gradient an edit replaced is un-computed: drop the edit
            self._drop_edits([ei for ei in plan.out_edges[k] if ei in self._edits])
        self._store.discard([*plan.out_edges[k], *(n_edges + s for s in plan.multi[k])])
        del self._seconds[k:]
        self._nograd.discard(k)
        self._cache.clear()
        self._notify()

    def reset(self) -> None:
        """Back to position 0 (root gradients seeded, nothing run): the faithful run, without
        any what-if edit."""
        self._check_open()
        if self._edits:
            self._drop_edits(list(self._edits))
        self._store.clear()
        self._seconds.clear()
        self._nograd.clear()
        self._failure = None
        self._reset_state()
        self._notify()

    # ----------------------------------------------------------------- breakpoints
    def break_at(self, target: str | Callable[[Node], bool]) -> list[str]:
        """Stop `run()` before node `target` (an id) or before every node for which
        `target(node_record)` is true. Returns the node ids that now break, in step order."""
        if callable(target):
            self._break_preds.append(target)
            try:
                self._update_breaks()
            except Exception as err:
                self._break_preds.pop()  # not registered: later calls must not trip over it
                self._update_breaks()
                raise TypeError(
                    f"the breakpoint predicate {getattr(target, '__name__', target)!r} raised "
                    f"{type(err).__name__}: {err}. It is called with each Node record "
                    "(fields id, name, kind, module, ...) and must return a bool, e.g. "
                    "lambda n: n.name == 'MulBackward0'"
                ) from err
            except BaseException:
                self._break_preds.pop()
                self._update_breaks()
                raise
            return self.breakpoints
        target = _node_id(target)
        self.step_index(target)  # validates the id
        self._breaks.add(target)
        self._update_breaks()
        return self.breakpoints

    def clear_breakpoints(self, target: str | Callable[[Node], bool] | None = None) -> None:
        """Remove one breakpoint (the id or the callable given to `break_at`), or all of them."""
        if target is None:
            self._breaks.clear()
            self._break_preds.clear()
        elif callable(target):
            self._break_preds = [p for p in self._break_preds if p is not target]
        else:
            self._breaks.discard(_node_id(target))
        self._update_breaks()

    @property
    def breakpoints(self) -> list[str]:
        """Node ids `run()` stops before, in step order."""
        return [self._plan.order[k] for k in self._break_steps]

    def _update_breaks(self) -> None:
        nodes, order = self.graph.nodes, self._plan.order
        steps = {self._plan.step_of[b] for b in self._breaks}
        for pred in self._break_preds:
            steps.update(k for k, nid in enumerate(order) if pred(nodes[nid]))
        self._break_steps = sorted(steps)
        self._break_set = frozenset(steps)

    # ----------------------------------------------------------------- inspection
    def _edge(self, edge_or_id: Edge | str) -> int:
        eid = edge_or_id.id if isinstance(edge_or_id, Edge) else edge_or_id
        ei = self._plan.edge_index.get(eid) if isinstance(eid, str) else None
        if ei is None:
            raise KeyError(f"no edge {edge_or_id!r} in this graph (edge ids read 'src:output_nr')")
        return ei

    def edge_grad(self, edge_or_id: Edge | str) -> torch.Tensor | None:
        """The gradient that flowed along an edge, or None (not flowed yet, none, or not kept)."""
        v = self._edge_val[self._edge(edge_or_id)]
        return v if isinstance(v, torch.Tensor) else None

    def edge_summary(self, edge_or_id: Edge | str) -> Summary | None:
        """The `Summary` of an edge's gradient; None before it flowed (or when none flowed)."""
        return self._summary_of(self._edge(edge_or_id))

    def _summary_of(self, ei: int) -> Summary | None:
        v = self._edge_val[ei]
        if v is None:
            return None
        s = self._store.get(ei)
        if s is None and isinstance(v, torch.Tensor):
            s = Summary.of(v)
            self._store.put(ei, s)
        return s

    def edge_summaries(self) -> dict[str, Summary]:
        """Summaries of every edge whose gradient has flowed (missing ones in one batch)."""
        store, ev = self._store, self._edge_val
        store.flush()
        missing = [ei for ei, v in enumerate(ev) if isinstance(v, torch.Tensor) and ei not in store]
        for ei, s in zip(missing, summarize(ev[ei] for ei in missing)):
            store.put(ei, s)
        ids = self._plan.edge_ids
        return {ids[ei]: store.get(ei) for ei, v in enumerate(ev) if v is not None}  # type: ignore[misc]

    def _slot_view(self, s: int) -> GradView:
        v = self._slots[s]
        if v is not None:
            return v
        plan = self._plan
        if not self._consumed(plan.step_of[f"n{plan.slot_node[s]}"]):
            return None  # not freed: the slot really is empty
        ei = plan.slot_edge[s]
        if ei >= 0:
            return self._summary_of(ei)
        if plan.slot_contrib[s] == 1:  # fed only by a root seed, which is always kept
            return next(t for rs, t in self._seeds if rs == s)
        return self._store.get(len(plan.edge_ids) + s)

    def record(self, index: int) -> StepRecord:
        """The record of step `index` (< position): tensors where kept, else summaries."""
        if not 0 <= index < self._pos:
            raise IndexError(f"step {index} has not run (position {self._pos})")
        plan = self._plan
        a, n = plan.start[index], plan.arity[index]
        inputs = tuple(self._slot_view(s) for s in range(a, a + n))
        outputs: dict[str, GradView] = {}
        for ei in plan.out_edges[index]:
            v = self._edge_val[ei]
            outputs[plan.edge_ids[ei]] = (
                v if v is None or isinstance(v, torch.Tensor) else self._summary_of(ei)
            )
        called = plan.kind[index] != _ACCUMULATE and index not in self._nograd
        return StepRecord(
            index,
            self.graph.nodes[plan.order[index]],
            inputs,
            outputs,
            self._seconds[index],
            None,
            called,
        )

    def step_info(self, index: int) -> StepInfo:
        """Node, called/no-gradient and time of step `index` (< position), without tensors."""
        if not 0 <= index < self._pos:
            raise IndexError(f"step {index} has not run (position {self._pos})")
        plan = self._plan
        acc = plan.kind[index] == _ACCUMULATE
        nograd = index in self._nograd
        return StepInfo(
            index, plan.order[index], not acc and not nograd, nograd, self._seconds[index]
        )

    def waiting(self, node_id: str) -> list[Summary | None]:
        """Per input slot of `node_id`, a summary of the gradient it holds: what has arrived so
        far for a node still to run, what it received for one that ran; None where empty."""
        plan = self._plan
        i = int(self.graph.check_id(node_id)[1:])
        a = plan.node_start[i]
        out: list[Summary | None] = []
        for s in range(a, a + len(self.graph.nodes[node_id].inputs)):
            v = self._slot_view(s)
            out.append(Summary.of(v) if isinstance(v, torch.Tensor) else v)
        return out

    def grad(self, tensor: torch.Tensor) -> torch.Tensor | None:
        """The gradient computed so far for a captured tensor: a leaf (what its AccumulateGrad
        received), or a non-leaf through its gradient edge (the sum arriving in that slot).
        Replays from the start when that slot's tensor was freed (`keep="summaries"`)."""
        self._check_open()
        try:
            nid, slot = self.graph.gradient_edge(tensor)
        except NotImplementedError:  # a sparse leaf: torch's helper needs `view`
            node, slot = gradient_edge(tensor)
            found = self.graph.id_of(node)
            if found is None:
                raise ValueError(
                    "this tensor is not part of the captured graph: its gradient node was not "
                    "reached from the captured outputs"
                ) from None
            nid = found
        s = self._plan.node_start[int(nid[1:])] + slot
        v = self._slots[s]
        if v is not None or not self._consumed(self._plan.step_of[nid]):
            return v
        cached = self._cache.get(s)
        if cached is None:
            self._rebuild(self._pos, retain=frozenset({s}))
            cached = self._slots[s]
            self._slots[s] = None  # back to the engine-like memory profile
            if cached is not None:
                self._cache[s] = cached
        return cached

    def first_nonfinite(self) -> tuple[Edge, Summary] | None:
        """The first edge, in execution order, whose gradient holds a NaN or an Inf."""
        self.edge_summaries()
        plan = self._plan
        for k in range(self._pos):
            for ei in plan.out_edges[k]:
                if self._edge_val[ei] is None:
                    continue
                s = self._summary_of(ei)
                if s is not None and not s.finite:
                    return self.graph.edge(plan.edge_ids[ei]), s
        return None

    # ----------------------------------------------------------------- the engine, for real
    def compare_with_engine(
        self,
        *,
        rtol: float | None = None,
        atol: float | None = None,
        tensors: Sequence[torch.Tensor] = (),
    ) -> list[Difference]:
        """Run the real engine once and list where it disagrees with manual stepping.

        One `torch.autograd.grad(roots, leaves, grad_outputs, retain_graph=True)` with a
        temporary pre-hook on every node recording what it receives per input slot (the sum per
        slot, after tensor hooks), removed afterwards, also on error. Manual values come from a
        separate full pass, so this stepper's position is untouched (and its what-if edits play
        no part: the comparison is always of the faithful run). Hooks that change gradients
        (a x10 tensor hook on a non-leaf shows in that slot and downstream; one on a leaf shows in
        the leaf's gradient) are exactly what this finds. `.grad` of leaves is never written; a
        non-leaf with `retain_grad()` gets its `.grad` restored if it is an output or listed in
        `tensors`. Tolerances default to torch.testing's for the dtype. If the engine itself
        raises (e.g. a saved tensor was modified in place), its error propagates, hooks removed.
        """
        self._check_open()
        graph = self.graph
        live = graph.require_live("compare with the engine")
        fns = live.fns
        plan = self._plan
        for info in plan.custom.values():
            if info.refuse is not None:
                raise RuntimeError(
                    f"compare_with_engine() would run the real engine through it: {info.refuse}"
                )
        got: dict[int, tuple] = {}
        handles = []

        def hook_for(i: int) -> Callable:
            def hook(grads: tuple) -> None:
                got[i] = tuple(None if g is None else g.detach().clone() for g in grads)

            return hook

        roots = graph.root_tensors
        watch = [t for t in [*roots, *tensors] if t.retains_grad]
        saved_grads = [t.grad for t in watch]
        leaf_ids = list(graph.leaves)
        leaves = [fns[int(nid[1:])].variable for nid in leaf_ids]
        try:
            for i, fn in enumerate(fns):
                if plan.kind[plan.step_of[f"n{i}"]] != _ACCUMULATE:
                    handles.append(fn.register_prehook(hook_for(i)))
            engine = torch.autograd.grad(
                roots,
                leaves,
                grad_outputs=list(graph.grad_outputs or [None] * len(roots)),
                retain_graph=True,
                allow_unused=True,
            )
        finally:
            for h in handles:
                h.remove()
            for t, g in zip(watch, saved_grads):
                t.grad = g
        del leaves

        shadow = Stepper(graph, keep="tensors")
        try:
            failed = shadow.run()
            diffs: list[Difference] = []
            if failed is not None and failed.error:
                nid = failed.node.id
                diffs.append(
                    Difference(
                        "manual_error", nid, failed.node.name, None, None, None, None, failed.error
                    )
                )
            for k in range(shadow.position):
                i = plan.node_of[k]
                nid = plan.order[k]
                if plan.kind[k] == _ACCUMULATE or i not in got:
                    continue
                a = plan.start[k]
                for slot, ev in enumerate(got[i]):
                    d = _differ(ev, shadow._slots[a + slot], rtol, atol)
                    if d is not None:
                        diffs.append(
                            Difference(
                                "slot", nid, graph.nodes[nid].name, slot, d[0], d[1], d[2], d[3]
                            )
                        )
            for nid, ev in zip(leaf_ids, engine):
                k = plan.step_of[nid]
                if k >= shadow.position:
                    continue
                d = _differ(ev, shadow._slots[plan.start[k]], rtol, atol)
                if d is not None:
                    diffs.append(
                        Difference(
                            "leaf",
                            nid,
                            graph.nodes[nid].leaf_name or "leaf",
                            0,
                            d[0],
                            d[1],
                            d[2],
                            d[3],
                        )
                    )
            diffs.sort(key=lambda d: plan.step_of[d.node])
            return diffs
        finally:
            shadow.close()

    # ----------------------------------------------------------------- probes
    def jacobian_norms(
        self,
        nodes: str | Node | Iterable[str | Node] | None = None,
        samples: int = 16,
        seed: int | None = None,
        *,
        exact_max: int | None = None,
    ) -> dict[str, JacobianNorm]:
        """Squared Frobenius norm of each node's gradient map, `{node_id: (estimate, stderr,
        exact)}` (`probes.JacobianNorm`, a named tuple).

        The map is what the node computes in a step: its incoming gradients (all input slots,
        concatenated) -> the gradients it sends along its edges, after the engine's
        `sum_to_size`/cast, i.e. its Jacobian restricted to the inputs that need grad. Plain
        backward only ever evaluates this map once, at the gradient that flowed; here the node is
        called again with gradients of our choosing: every basis vector for nodes with at most
        `exact_max` (default `probes.EXACT_MAX` = 64) real input elements (`exact=True`, stderr
        0.0), else `samples` Rademacher vectors (Hutchinson: `E ||J^T v||^2 = ||J||_F^2`), batched
        with `torch.func.vmap` where the node allows it. AccumulateGrad nodes are the identity
        (norm = numel, exact). `nodes`: ids or `Node` records (default: every node, in step
        order). `seed` makes the result deterministic (per node: probing a subset gives the same
        numbers); `None` draws one from the OS (torch's global RNG is never touched).

        Nothing is disturbed: the calls run under `no_grad`, apart from stepping (position,
        records, slot buffers and edits stay as they are), and node calls free nothing, write no
        `.grad` and bump no version counter. A node whose call fails (saved tensors freed by a
        `backward()` without `retain_graph`, or modified in place; a reentrant checkpoint) is
        left out of the result and listed in `stepper.probe_errors` (node id -> the error),
        which each call replaces: one bad node does not cost the others.
        """
        self._check_open()
        from .probes import EXACT_MAX
        from .probes import jacobian_norms as _probe

        results, errors = _probe(
            self, nodes, samples, seed, exact_max=EXACT_MAX if exact_max is None else exact_max
        )
        self.probe_errors = errors
        return results

    # ----------------------------------------------------------------- what-if edits
    @property
    def edits(self) -> dict[str, EditInfo]:
        """Edge id -> the what-if edit on it, in step order of the edges' sources (for a view:
        mark these edges; the edited value is `edge_summary(edge id)`, the old one `.before`)."""
        plan = self._plan
        order = sorted(self._edits, key=lambda ei: (plan.edge_step[ei], ei))
        return {plan.edge_ids[ei]: self._edits[ei] for ei in order}

    @property
    def edit_seq(self) -> int:
        """A counter bumped whenever the set of edits changes (set, clear, dropped by `back()`
        or `reset()`): a view that updates incrementally by position re-reads the edited edges
        when it moves, since an edit changes an edge's value without moving the position."""
        return self._edit_seq

    def set_edge_grad(self, edge_or_id: Edge | str, tensor: torch.Tensor) -> None:
        """What-if: replace the gradient on an edge, at the current position, and continue.

        Allowed for an edge whose gradient has flowed (its source ran) and whose destination has
        not run yet; anything else raises ValueError saying whether the edge is in the future or
        already consumed. `tensor` must have exactly the shape, dtype and device of the edge's
        gradient (what the destination slot expects). The destination's slot buffer becomes the
        other contributions plus the edited one, the edge's summary and records show the edited
        value, and every later step uses it. The edit stays while the edge's gradient exists:
        back() past the edge's source drops it, `reset()` drops all; `clear_edits()` undoes it
        while the destination has not run. One edit per edge: a new one replaces the old.
        Costs one replay from the start to the current position.
        """
        ei = self._editable(edge_or_id, "set the gradient of")
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"expected a torch.Tensor, got {type(tensor).__name__}")
        edge = self.graph.edge(self._plan.edge_ids[ei])
        meta = self.graph.nodes[edge.dst].inputs[edge.input_nr]
        shape, dtype = torch.Size(meta.shape), dtype_from_name(meta.dtype)
        device = torch.device(meta.device)
        if tensor.shape != shape or tensor.dtype != dtype or tensor.device != device:
            raise ValueError(
                f"edge {edge.id} carries a gradient of shape {list(shape)}, dtype {dtype}, device "
                f"{device} (what {edge.dst} ({self.graph.nodes[edge.dst].name}) expects in slot "
                f"{edge.input_nr}); got shape {list(tensor.shape)}, dtype {tensor.dtype}, device "
                f"{tensor.device}"
            )
        self._apply_edit(ei, "set", None, tensor.detach().clone())

    def scale_edge_grad(self, edge_or_id: Edge | str, factor: float) -> None:
        """What-if: multiply the gradient the source computed for this edge by `factor` (not
        compounding: a second scale replaces the first). Same rules as `set_edge_grad`."""
        if isinstance(factor, bool) or not isinstance(factor, (int, float, complex)):
            raise TypeError(f"factor must be a number, got {type(factor).__name__}")
        ei = self._editable(edge_or_id, "scale the gradient of")
        self._apply_edit(ei, "scale", factor, None)

    def zero_edge_grad(self, edge_or_id: Edge | str) -> None:
        """What-if: replace the gradient on this edge by zeros. Same rules as `set_edge_grad`."""
        ei = self._editable(edge_or_id, "zero the gradient of")
        self._apply_edit(ei, "zero", None, None)

    def clear_edits(self, edge_or_id: Edge | str | None = None) -> None:
        """Undo the edit on one edge (a no-op if it has none), or every edit. Only while the
        edited gradient has not been consumed (its destination has not run): past that, earlier
        records already show its consequences; back() to before the destination, or `reset()`."""
        self._check_open()
        if edge_or_id is None:
            targets = list(self._edits)
        else:
            ei = self._edge(edge_or_id)
            targets = [ei] if ei in self._edits else []
        for ei in targets:
            self._editable(self._plan.edge_ids[ei], "clear the edit on")
        if targets:
            self._change_edits({}, targets)

    def leaf_grad_diff(self) -> dict[str, LeafDiff]:
        """Leaf id -> `probes.LeafDiff`: each leaf's gradient here (edits applied) against the
        unedited run at the same position (partial sums before a leaf's AccumulateGrad ran; the
        full gradients once done). The unedited run is a separate faithful stepper, made on the
        first request and moved to this position on each (a replay). Without edits both sides
        are this stepper's gradients, and no faithful run is made."""
        self._check_open()
        from .probes import LeafDiff

        plan = self._plan
        leaves = self.graph.leaves

        def leaf_grads(st: Stepper) -> list:
            return [st._slots[plan.node_start[int(lid[1:])]] for lid in leaves]

        mine = leaf_grads(self)
        theirs = leaf_grads(self._faithful_at(self._pos)) if self._edits else mine
        nodes = self.graph.nodes
        return {
            lid: LeafDiff(lid, nodes[lid].leaf_name, a, b)
            for lid, a, b in zip(leaves, mine, theirs)
        }

    def _faithful_at(self, pos: int) -> Stepper:
        ref = self._faithful
        if ref is None or ref._closed:
            ref = self._faithful = Stepper(self.graph, keep="summaries")
        if ref.position > pos:
            ref.reset()
        if ref.position < pos:
            ref.run(until=self._plan.order[pos - 1])
        if ref.position != pos:
            err = ref.failure.error if ref.failure is not None else "it stopped early"
            raise RuntimeError(
                f"the unedited run cannot reach position {pos} to compare with: {err}"
            )
        return ref

    def _editable(self, edge_or_id: Edge | str, what: str) -> int:
        """The edge's index, if its gradient can be edited now, else a ValueError saying why."""
        self._check_open()
        ei = self._edge(edge_or_id)
        plan, nodes, pos = self._plan, self.graph.nodes, self._pos
        eid = plan.edge_ids[ei]
        edge = self.graph.edge(eid)
        ks, kd = plan.edge_step[ei], plan.step_of[edge.dst]
        src, dst = f"{edge.src} ({nodes[edge.src].name})", f"{edge.dst} ({nodes[edge.dst].name})"
        if ks >= pos:
            raise ValueError(
                f"cannot {what} edge {eid}: it is in the future, its gradient has not flowed yet "
                f"(its source {src} runs at step {ks}, the stepper is at position {pos}); step "
                f"to position {ks + 1} or later first"
            )
        if kd < pos:
            raise ValueError(
                f"cannot {what} edge {eid}: it is in the past, its gradient was already consumed "
                f"by {dst} at step {kd} (the stepper is at position {pos}); back() to a position "
                f"from {ks + 1} to {kd} first"
            )
        return ei

    def _apply_edit(
        self,
        ei: int,
        kind: Literal["set", "scale", "zero"],
        factor: float | complex | None,
        value: torch.Tensor | None,
    ) -> None:
        prev = self._edits.get(ei)
        before = prev.before if prev is not None else self._summary_of(ei)
        eid = self._plan.edge_ids[ei]
        if kind != "set" and before is None:
            raise ValueError(
                f"cannot {kind} the gradient of edge {eid}: its source sent no gradient along it "
                "(None); set_edge_grad() puts one there"
            )
        self._change_edits({ei: EditInfo(eid, kind, factor, value, before)}, [])

    def _change_edits(self, new: dict[int, EditInfo], drop: list[int]) -> None:
        """Add `new` edits and remove `drop`, then replay to the current position under them;
        on failure everything (state, edits, summaries) is as before and the error propagates."""
        plan = self._plan
        old_edits, old_steps = self._edits, self._edit_steps
        edits = {ei: e for ei, e in old_edits.items() if ei not in drop}
        edits.update(new)
        affected = [*new, *drop]
        old_summaries = {ei: self._summary_of(ei) for ei in affected}
        self._edits = edits
        self._edit_steps = frozenset(plan.edge_step[ei] for ei in edits)
        for ei in affected:
            self._store.pop(ei)
        self._edit_capture = {}
        try:
            self._rebuild(self._pos)
            captured = self._edit_capture
        except BaseException:
            self._edits, self._edit_steps = old_edits, old_steps
            for ei, s in old_summaries.items():
                if s is not None:
                    self._store.put(ei, s)
            raise
        finally:
            self._edit_capture = None
        for ei in new:
            g = captured.get(ei)
            if g is not None:
                self._store.put(ei, Summary.of(g))
        for ei in drop:
            before = old_edits[ei].before  # what the source computes, unedited
            if before is not None and not isinstance(self._edge_val[ei], torch.Tensor):
                self._store.put(ei, before)
        self._failure = None
        self._edit_seq += 1
        self._notify()

    def _drop_edits(self, eis: list[int]) -> None:
        """Forget edits whose state the caller is discarding anyway (back(), reset())."""
        if not eis:
            return
        for ei in eis:
            self._edits.pop(ei, None)
        self._edit_steps = frozenset(self._plan.edge_step[ei] for ei in self._edits)
        self._edit_seq += 1

    def _edited_outputs(self, k: int, out: Any, replay: bool) -> tuple:
        """Step k's outputs with the edits on its edges applied (after the engine's reduction,
        so an edit is in the destination's shape and dtype); called inside `_advance`."""
        plan = self._plan
        rts = plan.routes[k]
        if out is None:  # not called (every slot empty): an edit can still put a gradient out
            if not replay:
                self._nograd.add(k)
            res: list = [None] * (max(r[0] for r in rts) + 1)
        else:
            res = list(out) if type(out) is tuple else [out]
        cap = self._edit_capture
        for onr, ei, _s, shape, dtype, dev in rts:
            ed = self._edits.get(ei)
            if ed is None:
                continue
            if ed.kind == "set":
                g = ed.value
            else:
                g = res[onr]
                if g is None:
                    continue
                g = _validate(g, shape, dtype, dev, plan.names[k], onr)
                g = g * ed.factor if ed.kind == "scale" else torch.zeros_like(g)
            res[onr] = g
            if cap is not None:
                cap[ei] = g
        return tuple(res)

    # ----------------------------------------------------------------- cleanup
    def close(self) -> None:
        """Drop every tensor this stepper holds (the graph stays open; it is the caller's)."""
        self._closed = True
        self._edits = {}
        self._edit_steps = frozenset()
        if self._faithful is not None:
            self._faithful.close()
            self._faithful = None
        self._store.clear()
        self._slots = []
        self._edge_val = []
        self._u_slot, self._u_old, self._u_mark, self._u_used = [], [], [], []
        self._seeds = []
        self._cache = {}
        self._owned = {}
        self._failure = None

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"step {self._pos}/{len(self._plan.order)}"
        return f"<Stepper {state}, keep={self.keep!r}, create_graph={self.create_graph}>"


# The C functions behind `signal.signal`/`signal.getsignal`, without their enum conversions
# (10 us a pair, more than a small step): the guard is set and removed on every step().
_SIGINT = int(signal.SIGINT)


class _SigintGuard:
    """`Stepper._interruptible()`: the SIGINT handler installed for one move (or one batch)."""

    __slots__ = ("outer", "previous", "stepper")

    def __init__(self, stepper: Stepper) -> None:
        self.stepper = stepper
        self.previous: Any = None
        self.outer = False

    def __enter__(self) -> None:
        st = self.stepper
        if st._guarded:  # inside an outer guard (a batch): it owns the handler
            self.outer = True
            return
        if (
            threading.current_thread() is not threading.main_thread()
            or _signal.getsignal(_SIGINT) is not signal.default_int_handler
        ):
            return
        st._sigint = False
        st._guarded = True
        self.previous = _signal.signal(_SIGINT, st._on_sigint)

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        st = self.stepper
        if self.previous is not None:
            _signal.signal(_SIGINT, self.previous)
            self.previous = None
            st._guarded = False
            st._limit = None
        elif not self.outer:
            return
        # A deferred Ctrl-C: raise it now that the state is complete (here, at a step boundary).
        if st._sigint and exc_type is None:
            st._sigint = False
            raise KeyboardInterrupt


class _ReadOnlyList(list):
    """A list that refuses changes: `Stepper.order`, shared by every caller."""

    def _readonly(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("Stepper.order is read-only; copy it first: list(stepper.order)")

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _readonly
    append = extend = insert = pop = remove = clear = sort = reverse = _readonly


def _nbytes(t: torch.Tensor) -> int:
    """Bytes a gradient holds; sparse ones (no `nbytes`) count their indices and values."""
    if t.layout is torch.strided:
        return t.nbytes
    if t.layout is torch.sparse_coo:
        return t._indices().nbytes + t._values().nbytes
    return t.numel() * t.element_size()


def _step_bytes(plan: _Plan) -> list[int]:
    """Per step, an upper bound of what keeping it costs: each outgoing gradient at its
    destination's size, twice where the destination slot sums several contributions."""
    out = []
    for rts in plan.routes:
        total = 0
        for _onr, _ei, s, shape, dtype, _dev in rts:
            n = math.prod(shape) * dtype.itemsize
            total += 2 * n if plan.slot_contrib[s] > 1 else n
        out.append(total)
    return out


def _node_id(node: str | Node) -> str:
    """A node id from an id or a `Node` record; a clear TypeError for anything else."""
    if isinstance(node, Node):
        return node.id
    if not isinstance(node, str):
        raise TypeError(
            f"expected a node id such as 'n3' (or a Node record from graph.nodes), got "
            f"{type(node).__name__} {node!r}"
        )
    return node


_ADVANCE_CODE = Stepper._advance.__code__
#: Functions `_advance` calls inside a step's rollback-protected block.
_IN_STEP_CODES = frozenset({_apply_custom.__code__, _validate.__code__})
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _ours(filename: str) -> bool:
    return os.path.abspath(filename).startswith(_PACKAGE_DIR)


def _tolerances(dtype: torch.dtype) -> tuple[float, float]:
    if dtype in (torch.float64, torch.complex128):
        return 1e-7, 1e-7
    if dtype in (torch.float16, torch.bfloat16):
        return 1e-3, 1e-5
    return 1.3e-6, 1e-5


def _differ(
    engine: torch.Tensor | None, manual: torch.Tensor | None, rtol: float | None, atol: float | None
) -> tuple[float | None, Summary | None, Summary | None, str] | None:
    if engine is None and manual is None:
        return None
    if engine is None or manual is None:
        note = (
            "the engine had no gradient here"
            if engine is None
            else "manual stepping had no gradient here"
        )
        return (
            None,
            None if engine is None else Summary.of(engine),
            None if manual is None else Summary.of(manual),
            note,
        )
    manual = manual.detach()
    if engine.shape != manual.shape:
        return (
            None,
            Summary.of(engine),
            Summary.of(manual),
            f"shapes differ: engine {list(engine.shape)}, manual {list(manual.shape)}",
        )
    r, a = _tolerances(engine.dtype)
    r = r if rtol is None else rtol
    a = a if atol is None else atol
    e, m = engine, manual.to(engine.dtype)
    if e.layout is not torch.strided:  # sparse gradients (Embedding(sparse=True), sparse.mm)
        e = e.to_dense()
    if m.layout is not torch.strided:
        m = m.to_dense()
    if torch.allclose(e, m, rtol=r, atol=a, equal_nan=True):
        return None
    diff = (e - m).abs()
    worst = float(diff.nan_to_num(nan=math.inf).max()) if diff.numel() else 0.0
    return worst, Summary.of(engine), Summary.of(manual), ""
