"""`aw.record`: watch the engine run the user's OWN backward, node by node, and keep what flowed.

On entering the block the graph of `outputs` is captured and every captured node gets a
pre-hook and a post-hook (`register_prehook` / `register_hook`; AccumulateGrad nodes too: their
pre-hook sees the leaf's gradient). The pre-hook only notes the start (a global counter, the
time, the thread, the engine's graph-task id, the incoming gradients); the post-hook summarises
what came in and what went out (core/store.py's `SummaryStore`, small gradients batched and
flushed at the end of the block) and, when `keep` asks, copies full gradients. On leaving, every
hook is removed (also when the backward raised), the graph's torch references are released and
the `Recording` is filled (record/recording.py).

What the hooks guarantee, since they run inside the user's backward: they never raise (a
recorder problem becomes a line in `rec.warnings`), return None (gradients unchanged), never
unpack saved values (so nodes inside a non-reentrant checkpoint region record without
`CheckpointError`), never write `.grad`, and hold no tensor past the block unless `keep` asked
(the incoming gradients a pre-hook notes are dropped by the post-hook). The user's exception
propagates unchanged; `rec.failure` names the node whose pre-hook fired and whose post-hook did
not.

Which node ran: a node's incoming gradient in a slot fed by exactly one edge is, unless a
tensor hook replaced it, the very tensor the upstream node sent (torch keeps a tensor's Python
object while C++ holds it): that identity, checked through a weak reference, reuses the
upstream summary instead of summarising the same memory twice.

Under `torch.autograd.grad(outputs, inputs)` the engine does not run the AccumulateGrad nodes
of `inputs` (it captures the gradient instead): they are absent from `order`, their incoming
gradients are still the recorded edge summaries.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import torch

from ...core.capture import capture
from ...core.graph import BackwardGraph
from ...core.regions import Region
from ...core.store import SummaryStore
from ...core.summary import Summary
from ...util.gcpause import gc_paused
from ...util.warn import warn_user
from ..diagnose.failure import explain_failure
from ..diagnose.origins import Locator, birth_cause, loss_scale
from .recording import Failure, NodeExecution, Recording, new_meta

__all__ = ["EMPTY_RECORDING", "Recorder", "empty_notice", "record", "recorded_regions"]

#: What an `aw.record` block in which no backward of its graph ran says (a `UserWarning` when
#: the block ends, a line of `rec.warnings`, the notice of `aw.explore(rec)`).
EMPTY_RECORDING = (
    "no backward of the recorded graph ran inside the `with aw.record(...)` block: the "
    "recording is empty (0 passes). Call loss.backward() (or torch.autograd.grad) inside the "
    "block, on the tensor given to aw.record"
)

_perf = time.perf_counter
_get_ident = threading.get_ident
_task_id = torch._C._current_graph_task_id
_weakref = __import__("weakref").ref


def _check_keep(keep: Any) -> None:
    if keep in ("summaries", "tensors"):
        return
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
        raise ValueError(
            f"keep must be 'summaries', 'tensors' or a byte budget (an int >= 0), got {keep!r}"
        )


class Recorder:
    """The hooks of one `aw.record` block and what they collected (see the module docstring).

    `start()` registers the hooks; `finish(exc)` removes them and fills the `Recording`.
    `node_finished` is the one place where, for each node the engine ran, the live node, its
    incoming and its outgoing gradient tensors are all at hand.

    Example:
        >>> loss = (x * 3).sum()
        >>> rec = aw.record(loss)
        >>> with rec:
        ...     loss.backward()
        >>> rec.order
        ['n0', 'n1', 'n2']
    """

    def __init__(self, graph: BackwardGraph, recording: Recording, keep: Any) -> None:
        self.graph = graph
        self.recording = recording
        self.keep = keep
        self.budget = None if keep in ("summaries", "tensors") else int(keep)
        live = graph.require_live("record its backward")
        self.fns: list = list(live.fns)
        n = len(self.fns)
        self.ids = [f"n{i}" for i in range(n)]
        # per node and output slot: does an edge leave it (else its gradient is not summarised);
        # per node and input slot: (src index, output_nr) of its ONLY in-edge, else None
        index = {nid: i for i, nid in enumerate(self.ids)}
        has_edge = [[False] * node.num_outputs for node in graph.nodes.values()]
        single: list[list[Any]] = [[None] * len(node.inputs) for node in graph.nodes.values()]
        for src_id, nr, dst_id, slot in graph.edges:
            src, dst = index[src_id], index[dst_id]
            has_edge[src][nr] = True
            slots = single[dst]
            if slot < len(slots):
                # first in-edge: remember it; a second one: fan-in, no single source
                slots[slot] = (src, nr) if slots[slot] is None else False
        self.has_edge: list[list[bool]] = has_edge
        self.single_src = [[s or None for s in slots] for slots in single]
        self.store = SummaryStore()
        self.lock = threading.Lock()
        self.counter = itertools.count()
        self.keys = itertools.count()
        self.pending: dict[int, tuple] = {}  # node index -> (seq, t0, thread, task, grads)
        self.done: list[tuple] = []  # (index, seq, thread, task, seconds, in_keys, out_keys)
        self.sent: dict[tuple[int, int], tuple[Any, int]] = {}  # (src, nr) -> (weakref, key)
        self.kept: dict[tuple[int, str], torch.Tensor] = {}  # (task, edge id) -> copy
        self.kept_bytes: dict[int, int] = {}  # task -> bytes kept
        self.handles: list = []
        self.warnings: list[str] = []
        self.started = False
        #: (task, node index) -> (cause, expected) where a NaN/Inf was born (`note_birth`).
        self.births: dict[tuple[int, int], tuple[str, bool]] = {}
        self.scale = loss_scale(graph)

    # ----------------------------------------------------------------- hooks
    def note(self, where: str, err: BaseException) -> None:
        """Remember a problem met inside a hook (the hook itself returns normally).

        Example:
            >>> loss = (x * 3).sum(); rec = aw.record(loss)
            >>> r = Recorder(aw.capture(loss), rec, "summaries")
            >>> r.note("pre-hook", ValueError("x")); r.warnings
            ['pre-hook: ValueError: x']
        """
        try:
            msg = f"{where}: {type(err).__name__}: {err}"
            if msg not in self.warnings and len(self.warnings) < 100:
                self.warnings.append(msg)
        except Exception:  # a hook must never raise
            pass

    def _pre(self, i: int) -> Any:
        pending, counter, note = self.pending, self.counter, self.note

        def pre_hook(grads: tuple) -> None:
            try:
                pending[i] = (next(counter), _perf(), _get_ident(), _task_id(), grads)
            except Exception as e:  # never disturb the user's backward
                note("pre-hook", e)
            return None

        return pre_hook

    def _post(self, i: int) -> Any:
        finished, note = self.node_finished, self.note

        def post_hook(grads_out: tuple, grads_in: tuple) -> None:
            # torch names them (grad_inputs, grad_outputs): what the node SENT, what it GOT
            try:
                finished(i, grads_in, grads_out, _perf())
            except Exception as e:  # never disturb the user's backward
                note("post-hook", e)
            return None

        return post_hook

    def node_finished(self, i: int, grads_in: Sequence, grads_out: Sequence, t1: float) -> None:
        """Node `i` ran: summarise what it got (per input slot) and sent (per output slot).

        Here the live node (`self.fns[i]`), its incoming gradients `grads_in` and its outgoing
        ones `grads_out` are all at hand, before the engine frees the node's saved values.
        Never unpack saved values here: inside a non-reentrant checkpoint region that makes
        the user's backward raise `CheckpointError` (core/checkpoint.py tells those nodes).

        Example:
            >>> loss = (x * 3).sum(); rec = aw.record(loss)
            >>> r = Recorder(aw.capture(loss), rec, "summaries")
            >>> r.pending[1] = (0, 0.0, 1, 7, None)
            >>> r.node_finished(1, (torch.tensor(1.0),), (torch.tensor(3.0),), 0.5)
            >>> r.done[0][:5]
            (1, 0, 1, 7, 0.5)
        """
        entry = self.pending.pop(i, None)
        if entry is None:  # a hook registered mid-pass: its start was not seen
            entry = (next(self.counter), t1, _get_ident(), _task_id(), None)
        seq, t0, thread, task, _ = entry
        with self.lock:
            store, keys, sent = self.store, self.keys, self.sent
            srcs = self.single_src[i]
            in_keys: list[int | None] = []
            for s, t in enumerate(grads_in):
                if t is None:
                    in_keys.append(None)
                    continue
                src = srcs[s] if s < len(srcs) else None
                hit = sent.get(src) if src is not None else None
                if hit is not None and hit[0]() is t:
                    in_keys.append(hit[1])
                    continue
                k = next(keys)
                store.add(k, t)
                in_keys.append(k)
            out_keys: list[int | None] = []
            has_edge = self.has_edge[i]
            for nr, t in enumerate(grads_out):
                if t is None or nr >= len(has_edge) or not has_edge[nr]:
                    out_keys.append(None)
                    continue
                k = next(keys)
                store.add(k, t)
                sent[(i, nr)] = (_weakref(t), k)
                out_keys.append(k)
                if self.keep != "summaries":
                    self.keep_tensor(task, f"{self.ids[i]}:{nr}", t)
            self.done.append((i, seq, thread, task, t1 - t0, tuple(in_keys), tuple(out_keys)))
            if any(k is not None and not _finite(store, k, t)
                   for k, t in zip(out_keys, grads_out)):
                self.note_birth(i, task, grads_in, grads_out)

    def note_birth(self, i: int, task: int, grads_in: Sequence, grads_out: Sequence) -> None:
        """Node `i` sent a NaN/Inf: if everything it received was finite, the NaN/Inf is born
        here, and why is read now, while its saved values are still there (`birth_cause`,
        which never unpacks a checkpointed value and never raises), with the forward op that
        made a NaN/Inf it saved (its `Origin` then says `where="forward"`).

        Example:
            >>> w = torch.zeros(2, requires_grad=True); loss = w.sqrt().sum()
            >>> rec = aw.record(loss); r = Recorder(aw.capture(loss), rec, "summaries")
            >>> r.note_birth(1, 7, (torch.ones(2),), (torch.full((2,), float("inf")),))
            >>> r.births[(7, 1)][0]
            'saved `result` has 2 zeros: the derivative of sqrt at 0 is infinite'
        """
        if any(t is not None and not _all_finite(t) for t in grads_in):
            return  # propagated, not born
        nodes = self.graph.nodes  # a Locator per birth: none outlives the hook
        locator = Locator(self.fns, self.ids, [nodes[n].module if n in nodes else None
                                               for n in self.ids])  # fmt: skip
        self.births[(task, i)] = birth_cause(self.fns[i], grads_in, grads_out,
                                             loss_scale=self.scale, locator=locator)

    def keep_tensor(self, task: int, eid: str, t: torch.Tensor) -> None:
        """Keep a detached copy of edge `eid`'s gradient in pass `task` while `keep` allows.

        Example:
            >>> loss = (x * 3).sum(); rec = aw.record(loss)
            >>> r = Recorder(aw.capture(loss), rec, 4)
            >>> r.keep_tensor(1, "n1:0", torch.ones(1)); r.keep_tensor(1, "n0:0", torch.ones(1))
            >>> sorted(e for _, e in r.kept)
            ['n1:0']
        """
        if t.layout is not torch.strided or t.is_meta:
            return
        nbytes = t.numel() * t.element_size()
        if self.budget is not None:
            used = self.kept_bytes.get(task, 0)
            if used + nbytes > self.budget:
                return
            self.kept_bytes[task] = used + nbytes
        copy = torch.zeros(t.shape, dtype=t.dtype) if t._is_zerotensor() else t.detach().clone()
        self.kept[(task, eid)] = copy

    # ----------------------------------------------------------------- the block
    def start(self) -> None:
        """Register a pre-hook and a post-hook on every captured node.

        Guarantees: if registering fails half-way, the hooks already registered are removed
        and the error is raised (the user's backward has not started yet).

        Example:
            >>> loss = (x * 3).sum(); rec = aw.record(loss)
            >>> r = Recorder(aw.capture(loss), rec, "summaries"); r.start(); len(r.handles)
            6
            >>> loss.backward(); r.finish(None); r.handles
            []
        """
        if self.started:
            raise RuntimeError("this aw.record(...) block was already entered once")
        self.started = True
        add = self.handles.append
        try:
            with gc_paused():  # two closures and two handles per node: no collection pass
                for i, fn in enumerate(self.fns):
                    add(fn.register_prehook(self._pre(i)))
                    add(fn.register_hook(self._post(i)))
        except BaseException:
            self.remove_hooks()
            self.graph.close()
            raise

    def remove_hooks(self) -> None:
        """Remove every hook registered (each one even when another's removal fails).

        Example:
            >>> loss = (x * 3).sum(); rec = aw.record(loss)
            >>> r = Recorder(aw.capture(loss), rec, "summaries"); r.remove_hooks(); r.handles
            []
        """
        handles, self.handles = self.handles, []
        for h in handles:
            try:
                h.remove()
            except Exception as e:  # keep removing the others
                self.note("removing a hook", e)

    def finish(self, exc: BaseException | None) -> None:
        """Remove the hooks, release the torch graph, fill the recording. Never raises.

        Example:
            >>> loss = (x * 3).sum(); rec = aw.record(loss)
            >>> r = Recorder(aw.capture(loss), rec, "summaries"); r.start()
            >>> loss.backward(); r.finish(None); rec.order
            ['n0', 'n1', 'n2']
        """
        self.remove_hooks()
        try:
            with gc_paused():
                self.fill(exc)
        except Exception as e:  # a recorder bug must not replace the user's error
            self.note("building the recording", e)
            try:
                self.recording.populate([], warnings=self.warnings)
            except Exception:
                pass
        finally:
            self.pending.clear()
            self.sent.clear()
            self.kept.clear()
            self.store.clear()
            self.fns = []
            try:
                self.graph.close()
            except Exception as e:
                self.note("releasing the graph", e)

    def fill(self, exc: BaseException | None) -> None:
        """Turn what the hooks collected into the recording's runs, failure and tensors.

        Example:
            >>> loss = (x * 3).sum(); rec = aw.record(loss)
            >>> r = Recorder(aw.capture(loss), rec, "summaries"); r.start(); loss.backward()
            >>> r.remove_hooks(); r.fill(None); rec.passes
            1
        """
        store = self.store
        store.flush()
        tasks: dict[int, int] = {}
        for d in sorted(self.done, key=lambda d: d[1]):
            tasks.setdefault(d[3], len(tasks))
        failed = None
        if exc is not None and self.pending:
            i, (seq, _, _, task, grads) = min(self.pending.items(), key=lambda kv: kv[1][0])
            tasks.setdefault(task, len(tasks))
            ins = tuple(None if t is None else Summary.of(t) for t in grads or ())
            failed = Failure(self.ids[i], ins, str(exc), type(exc).__name__, tasks[task])
        get = store.get
        runs: list[NodeExecution] = []
        steps: dict[int, int] = {}
        for i, seq, thread, task, secs, in_keys, out_keys in sorted(self.done, key=lambda d: d[1]):
            p = tasks[task]
            step = steps[p] = steps.get(p, -1) + 1
            runs.append(NodeExecution(
                self.ids[i], step, seq, thread, p, secs,
                tuple(None if k is None else get(k) for k in in_keys),
                tuple(None if k is None else get(k) for k in out_keys),
            ))  # fmt: skip
        last = max(tasks.values(), default=-1)
        kept = {eid: t for (task, eid), t in self.kept.items() if tasks.get(task) == last}
        if failed is not None:  # why, while the graph is live (its saved values readable)
            try:
                why = explain_failure(self.graph, failed.node, failed.error)
            except Exception as e:  # an explanation must never hide the failure itself
                why = None
                self.note("explaining the failure", e)
            failed = dataclasses.replace(failed, explanation=why)
        if exc is not None and failed is None:  # raised after every node ran (DDP's all-reduce
            # waits at the end of the backward): no node to blame; the error is kept for the
            # rank group (ranks.py), which explains it as waiting on a peer
            self.recording.meta["error"] = str(exc)[:2000]
            self.recording.meta["error_type"] = type(exc).__name__
        if exc is None and not runs and next(self.counter) == 0:  # no pre-hook ever fired
            self.warnings.append(EMPTY_RECORDING)
            warn_user(EMPTY_RECORDING)
        self.recording.populate(runs, failure=failed, tensors=kept, warnings=self.warnings)
        self.recording.births = {
            self.ids[i]: why for (task, i), why in self.births.items() if tasks.get(task) == last
        }


def empty_notice(rec: Recording) -> str | None:
    """`EMPTY_RECORDING`, as a sentence, when `rec` holds no run and no failure (the block ran
    no backward of its graph), else None: what `aw.explore(rec)` shows instead of a silent
    "step 0 / 0".

    Example:
        >>> empty_notice(Recording(g, []))[:40]
        'No backward of the recorded graph ran in'
    """
    if rec.all_executions or rec.failure is not None:
        return None
    return EMPTY_RECORDING[0].upper() + EMPTY_RECORDING[1:] + "."


def _all_finite(t: Any) -> bool:
    """Whether tensor `t` holds no NaN/Inf: one sum (NaN/Inf make it non-finite), checked
    element-wise only when the sum is not finite (a finite overflow)."""
    if not isinstance(t, torch.Tensor) or not (t.is_floating_point() or t.is_complex()):
        return True
    if t.layout is not torch.strided or t.is_meta or t._is_zerotensor():
        return True
    total = t.detach().sum().item()
    if total - total == 0:
        return True
    return bool(torch.isfinite(t.detach()).all())


def _finite(store: SummaryStore, key: int, t: Any) -> bool:
    """Whether the gradient stored under `key` is finite: from its summary when the store
    computed it already (large tensors), else by `_all_finite` (small, still queued)."""
    known = store.finite_now(key)
    return _all_finite(t) if known is None else known


def recorded_regions(graph: BackwardGraph) -> dict[str, Region]:
    """The compiled regions of a recording's graph: each one node, recorded like any other (its
    gradients in and out), so opaque (`available` False) with a note saying so and how many aten
    ops a live graph would step through (or why the inside was not reachable at all).

    Example:
        >>> recorded_regions(g)  # no compiled region
        {}
    """
    out: dict[str, Region] = {}
    for nid, r in graph.regions.items():
        note = (f"aw.record keeps a compiled region as one node (its gradients in and out, as "
                f"the engine ran it); explore the live graph to step through its {len(r.ops)} "
                "aten ops") if r.available else r.note  # fmt: skip
        out[nid] = Region(nid, r.index, [], [], [], [], False, note, r.source)
    return out


def record(
    outputs: torch.Tensor | Sequence[torch.Tensor],
    grad_outputs: torch.Tensor | Sequence[torch.Tensor | None] | None = None,
    *,
    model: torch.nn.Module | None = None,
    params: Mapping[str, torch.Tensor] | None = None,
    keep: Literal["summaries", "tensors"] | int = "summaries",
) -> Recording:
    """Record the engine's own backward of `outputs` run inside a `with` block.

    `with aw.record(loss, model=model) as rec: loss.backward()` (or `torch.autograd.grad`, a
    DDP model's loss, several backward passes with `retain_graph=True`). The graph is captured
    now (as `aw.capture` with the same arguments); the hooks live only inside the block.
    Gradients, `.grad` writes and the user's hooks are exactly as without recording; an
    exception propagates unchanged and `rec.failure` names the node that was running.

    Args:
        outputs: the tensor(s) whose backward the block runs (the loss), as `aw.capture`'s.
        grad_outputs: their seeds, as `aw.capture`'s (what the block's `backward(gradient)`
            passes; used to draw the graph's roots).
        model: the `nn.Module` that computed `outputs` (names leaves and module paths).
        params: names for other leaves, `{"x": x}`.
        keep: "summaries" (statistics and small values of every edge's gradient), "tensors"
            (also a copy of every edge gradient), or a budget in bytes (copies while they fit,
            per pass; summaries always).

    Returns:
        The `Recording`, filled when the block ends: `order`, `runs`, `edge_summary()`,
        `failure`, `nonfinite_origins()`, `save()`; `aw.explore(rec)` replays it.

    Raises:
        ValueError: as `aw.capture` (an output without a graph, a leaf alone); a bad `keep`.

    Example:
        >>> w = torch.tensor([1.0, -2.0], requires_grad=True)
        >>> loss = (w * 3).relu().sum()
        >>> with aw.record(loss, params={"w": w}) as rec:
        ...     loss.backward()
        >>> rec.order, w.grad
        (['n0', 'n1', 'n2', 'n3'], tensor([3., 0.]))
        >>> rec.edge_summary("n2:0").values
        [3.0, 0.0]
    """
    _check_keep(keep)
    graph = capture(outputs, grad_outputs, model=model, params=params)
    drawable = BackwardGraph(
        graph.nodes, graph.edges, graph.roots, model_name=graph.model_name,
        module_classes=graph.module_classes, regions=recorded_regions(graph),
    )  # fmt: skip
    rec = Recording(drawable, [], meta=new_meta(keep))
    rec.attach(Recorder(graph, rec, keep))
    return rec
