"""The lean recording path: the hooks of one watched backward, norms only, read once.

What a watched step of `aw.watch` (watch/watch.py) records, at a cost meant to be left on:

- one post-hook per node the engine runs (`node.register_hook`: it receives what the node got
  and what it sent, so no pre-hook is needed), none on AccumulateGrad nodes: those run right
  after their producer (the engine's top priority), so their place in the order is inferred and
  a parameter's gradient is the one edge into it. Only a parameter fed by several edges (tied
  weights) or carrying the user's own tensor hooks gets a pre-hook on its AccumulateGrad node
  (it sees the summed, hooked gradient);
- per edge, the gradient's 2-norm (`norm_of`): one pass over its memory; a node whose output
  is its input rearranged (view, transpose, reshape, slice...: `structure.REARRANGING`) repeats
  its input's norm when that input is the very tensor the upstream node sent;
- on CPU each norm is read at once (no device to wait for): a non-finite one is counted (NaN
  and Inf) right there and, when everything the node received was finite, the NaN/Inf is born
  here and its cause is read now, while the node's saved values exist (`birth_cause`, with the
  forward op that made a NaN/Inf the node saved: diagnose/forward.py). On other
  devices norms stay on the device and are read with ONE transfer per step (`Staged`): no
  synchronisation per node; a birth there is found from the norms afterwards and its cause
  says it was not read;
- a backward that raises: the failing node is inferred as the engine picks its next node: the
  ready node (every producer done) with the highest sequence number that did not finish.

Guarantees (as `aw.record`'s): the hooks never raise (a problem becomes a warning), return None
(gradients unchanged), never write `.grad`, never unpack a checkpointed saved value, hold no
gradient past the node (a weak reference only, to recognise a rearranged one), and are all
removed by `remove()`.

Example:
    >>> w = torch.tensor([3.0, 4.0], requires_grad=True)
    >>> loss = (w * 2).sum()
    >>> p = LeanPass.of([loss]); p.start(); loss.backward(); r = p.finish(None)
    >>> r.order, [round(float(v), 3) for v in r.edge_norms]
    ([0, 1, 2], [1.414, 2.828])
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from ...core.capture import capture
from ..diagnose.causes import counts_of
from ..diagnose.origins import Locator, birth_cause
from .structure import Structure, walk

__all__ = ["KERNELS", "LeanPass", "PassResult", "Staged", "norm_of", "set_kernel"]

_vn = torch.linalg.vector_norm
_HALF = {torch.float16: torch.float32, torch.bfloat16: torch.float32}
_STRIDED = torch.strided
_F64 = torch.float64
_task_id = torch._C._current_graph_task_id
_will_run = torch._C._will_engine_execute_node
_weakref = weakref.ref

#: How a CPU float32/float64 norm is taken: "vector_norm" (torch's reduction) or "dot" (the
#: square root of a dot product over the tensor's memory order, MKL's). benchmarks/bench_watch.py
#: measures both; `set_kernel` switches.
KERNELS = ("vector_norm", "dot")
_kernel = {"cpu": "vector_norm"}

#: Where a cause could not be read (norms read once after the step, on a device).
NOT_READ = (
    "produced a NaN or an Inf from finite incoming gradients (its cause is read only on CPU: on "
    "{device} reading a value per node would synchronise the device)"
)


def set_kernel(name: str) -> str:
    """Choose how CPU float norms are taken (one of `KERNELS`); returns the previous choice.

    Example:
        >>> old = set_kernel("dot"); set_kernel(old)
        'dot'
    """
    if name not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {name!r}")
    old, _kernel["cpu"] = _kernel["cpu"], name
    return old


def _memory_order(t: torch.Tensor) -> torch.Tensor | None:
    """A 1-d view of every element of a dense tensor in memory order, None when it has gaps or
    overlaps."""
    if t.is_contiguous():
        return t.view(-1)
    p = t.permute(sorted(range(t.dim()), key=t.stride().__getitem__, reverse=True))
    return p.view(-1) if p.is_contiguous() else None


def norm_of(t: torch.Tensor) -> float | torch.Tensor:
    """The 2-norm of a gradient: a Python float on CPU (read now), a 0-d float tensor on its
    device elsewhere (read later, with the others: `Staged`).

    Half-precision gradients are reduced in float32; complex ones by their magnitudes; a sparse
    one by its stored values; a ZeroTensor is 0.0. A float32 sum of squares that overflows
    while no element is infinite is redone in float64.

    Example:
        >>> norm_of(torch.tensor([3.0, 4.0])), norm_of(torch.ones(2, dtype=torch.bfloat16))
        (5.0, 1.4142135381698608)
    """
    if t.requires_grad:
        t = t.detach()
    if t.layout is not _STRIDED or t.is_meta or t._is_zerotensor():
        if t.is_meta or t._is_zerotensor():
            return 0.0
        t = t.coalesce().values() if t.is_sparse else t.to_dense()
    cast = _HALF.get(t.dtype)
    if not t.is_cpu:
        return _vn(t) if cast is None else _vn(t, dtype=cast)
    if cast is None and _kernel["cpu"] == "dot" and not t.is_complex() and t.numel():
        flat = _memory_order(t)
        if flat is not None:
            sq = torch.dot(flat, flat).item()
            if sq - sq == 0.0:
                return math.sqrt(sq)
    v = (_vn(t) if cast is None else _vn(t, dtype=cast)).item()
    if v - v != 0.0 and counts_of(t) == (0, 0):  # an overflow of the sum of squares
        v = _vn(t, dtype=_F64).item()
    return v


class Staged:
    """Values some of which are 0-d device tensors, read together: one transfer per device.

    Example:
        >>> s = Staged(); a = s.add(1.5); b = s.add(torch.tensor(2.0)); s.read()
        [1.5, 2.0]
    """

    def __init__(self) -> None:
        self.values: list[Any] = []

    def add(self, v: float | torch.Tensor) -> int:
        """Stage `v`; returns its index in `read()`.

        Example:
            >>> Staged().add(torch.tensor(1.0))
            0
        """
        self.values.append(v)
        return len(self.values) - 1

    def read(self) -> list[float]:
        """Every staged value as a float (tensors grouped per device, stacked, read once).

        Example:
            >>> s = Staged(); _ = s.add(torch.tensor(3.0)); _ = s.add(float("nan")); s.read()
            [3.0, nan]
        """
        out = [v if not isinstance(v, torch.Tensor) else math.nan for v in self.values]
        groups: dict[Any, list[int]] = {}
        for k, v in enumerate(self.values):
            if isinstance(v, torch.Tensor):
                groups.setdefault(v.device, []).append(k)
        for dev, ks in groups.items():
            # float64 where the device has it (MPS has not: float32 there, as the arrays store)
            dt = torch.float32 if dev.type == "mps" else torch.float64
            got = torch.stack([self.values[k].detach().reshape(()).to(dt) for k in ks]).tolist()
            for k, v in zip(ks, got):
                out[k] = float(v)
        return out


@dataclass
class PassResult:
    """What one watched backward left (see `LeanPass.finish`).

    `order`: node indices as the engine ran them (AccumulateGrad nodes placed after their
    producer); `edge_norms`, `param_norms`, `slot_norms`: float32 per structure edge, parameter
    and extra input slot (NaN where nothing flowed); `nonfinite`: edge index -> (NaN count, Inf
    count) of each non-finite gradient (-1: present, not counted); `slot_nonfinite`: the same
    per extra slot; `births`: node index -> (cause, expected); `failed`: the node index the
    backward raised in (inferred), else None; `warnings`: problems the hooks swallowed.

    Example:
        >>> PassResult([], np.zeros(0, np.float32), np.zeros(0, np.float32),
        ...            np.zeros(0, np.float32)).failed is None
        True
    """

    order: list[int]
    edge_norms: np.ndarray
    param_norms: np.ndarray
    slot_norms: np.ndarray
    nonfinite: dict[int, tuple[int, int]] = field(default_factory=dict)
    slot_nonfinite: dict[int, tuple[int, int]] = field(default_factory=dict)
    births: dict[int, tuple[str, bool]] = field(default_factory=dict)
    failed: int | None = None
    warnings: list[str] = field(default_factory=list)
    #: parameter indices whose gradient held a NaN or an Inf, in any pass of the step
    param_nonfinite: list[int] = field(default_factory=list)
    #: how many backward passes ran nodes of the graph (0: no backward ran in the block)
    passes: int = 0


@dataclass
class _Totals:
    """The passes of one step seen so far, taken together (`LeanPass._fold`)."""

    order: list[int]
    norms: list[Any]
    slots: list[Any]
    params: list[Any]
    nonfinite: dict[int, tuple[int, int]]
    slot_nonfinite: dict[int, tuple[int, int]]
    births: dict[int, tuple[str, bool]]


def _rss(a: Any, b: Any) -> Any:
    """sqrt(a^2 + b^2) of two norms (floats, or 0-d tensors on a device), None where absent;
    without overflow, a NaN or an Inf stays non-finite."""
    if a is None or b is None:
        return b if a is None else a
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        t = a if isinstance(a, torch.Tensor) else b
        a, b = (torch.as_tensor(v, dtype=t.dtype, device=t.device) for v in (a, b))
        return torch.hypot(a, b)
    return math.hypot(a, b)


def _add_counts(a: tuple[int, int] | None, b: tuple[int, int]) -> tuple[int, int]:
    """(NaN, Inf) counts of two passes added; -1 (present, not counted) stays -1."""
    if a is None:
        return b
    return (-1 if -1 in (a[0], b[0]) else a[0] + b[0], -1 if -1 in (a[1], b[1]) else a[1] + b[1])


class LeanPass:
    """The hooks of one watched backward over a graph of structure `structure` (see the module
    docstring). `fns`: its live nodes in the structure's order (`walk`). `scale`: a loss
    scaler's factor at the root (births then say an overflow is the scaler's expected one).

    `start()` registers the hooks, `finish(exc)` removes them and returns a `PassResult`.
    Several backward passes over the graph in one step (`retain_graph=True`, a gradient
    penalty's `torch.autograd.grad`) are ALL kept, one step (`passes` counts them): each norm is
    every pass's gradients on that edge taken together, the square root of the sum of their
    squared norms (as if the passes' gradients were one vector; not the norm of their sum); the
    NaN/Inf counts are added; each node's birth is the first pass's that had one; the order is
    the first pass's, then the nodes only a later pass ran. A NaN or an Inf of any pass stays
    non-finite in the step (`param_nonfinite`).

    Example:
        >>> loss = (x * 3).sum(); p = LeanPass.of([loss]); p.start(); len(p.handles)
        2
        >>> loss.backward(); p.finish(None).order
        [0, 1, 2]
    """

    def __init__(self, structure: Structure, fns: Sequence[Any], *,
                 scale: float | None = None) -> None:  # fmt: skip
        self.s = structure
        self.fns = list(fns)
        if len(self.fns) != len(structure.names):
            raise ValueError(f"{len(self.fns)} live nodes for a structure of "
                             f"{len(structure.names)}")  # fmt: skip
        self.scale = scale
        self.handles: list[Any] = []
        self.warnings: list[str] = []
        #: parameter k -> hooked on its AccumulateGrad node (fed by several edges, or hooked)
        self.param_hooked: dict[int, int] = {}
        #: backward passes seen, and the passes before the current one taken together
        self.passes = 0
        self.done: _Totals | None = None
        self._reset(None)

    @classmethod
    def of(cls, roots: Sequence[torch.Tensor], *, scale: float | None = None) -> LeanPass:
        """The pass over the graph behind `roots`, its structure captured now (what a watch
        does for a structure it has not seen).

        Example:
            >>> p = LeanPass.of([(x * 3).sum()]); p.s
            <Structure 3 nodes, 2 edges, 1 parameters>
        """
        fns, key = walk(roots)
        graph = capture(list(roots))
        try:
            return cls(Structure.of(graph, key), fns, scale=scale)
        finally:
            graph.close()

    def _reset(self, task: int | None) -> None:
        s = self.s
        self.task = task
        self.order: list[int] = []
        self.norms: list[Any] = [None] * len(s.edge_ids)
        self.slots: list[Any] = [None] * len(s.extra)
        self.params: list[Any] = [None] * len(s.params)
        self.refs: dict[int, Any] = {}
        self.nonfinite: dict[int, tuple[int, int]] = {}
        self.slot_nonfinite: dict[int, tuple[int, int]] = {}
        self.births: dict[int, tuple[str, bool]] = {}
        self.locator: Locator | None = None  # built on the pass's first birth
        self.runs_acc: dict[int, bool] | None = None

    def note(self, where: str, err: BaseException) -> None:
        """Remember a problem met inside a hook (the hook itself returns normally).

        Example:
            >>> loss = (x * 3).sum(); p = LeanPass.of([loss])
            >>> p.note("post-hook", ValueError("x")); p.warnings
            ['post-hook: ValueError: x']
        """
        try:
            msg = f"{where}: {type(err).__name__}: {err}"
            if msg not in self.warnings and len(self.warnings) < 100:
                self.warnings.append(msg)
        except Exception:  # a hook must never raise
            pass

    # ----------------------------------------------------------------- hooks
    def _post(self, i: int) -> Any:
        done, note = self.node_done, self.note

        def post_hook(sent: tuple, got: tuple) -> None:
            # torch names them (grad_inputs, grad_outputs): what the node SENT, what it GOT
            try:
                done(i, sent, got)
            except Exception as e:  # never disturb the user's backward
                note("post-hook", e)
            return None

        return post_hook

    def _acc_pre(self, i: int, k: int) -> Any:
        note = self.note

        def pre_hook(got: tuple) -> None:
            try:
                self._check_task()
                self.order.append(i)
                t = got[0] if got else None
                if t is not None:
                    self.params[k] = norm_of(t)
            except Exception as e:
                note("parameter hook", e)
            return None

        return pre_hook

    def _check_task(self) -> None:
        task = _task_id()
        if task != self.task:
            if self.task is not None:  # a pass ended: add it to the step's totals
                self._fold()
            self.passes += 1
            self._reset(task)  # a new backward pass over the same graph: keep the last one
            s, fns = self.s, self.fns
            hooked = self.param_hooked
            try:
                self.runs_acc = {
                    i: bool(_will_run(fns[i])) for k, i in enumerate(s.param_nodes)
                    if k not in hooked
                }  # fmt: skip
            except RuntimeError:  # torch.autograd.grad: no AccumulateGrad node runs
                self.runs_acc = {}

    def _fold(self) -> None:
        """Add the pass that just ended to `done`, the step's totals (see the class docstring)."""
        now = _Totals(self._full_order(), self.norms, self.slots, self.params, dict(self.nonfinite),
                      dict(self.slot_nonfinite), dict(self.births))  # fmt: skip
        d = self.done
        if d is None:
            self.done = now
            return
        seen = set(d.order)
        d.order += [i for i in now.order if i not in seen]
        d.norms = [_rss(a, b) for a, b in zip(d.norms, now.norms)]
        d.slots = [_rss(a, b) for a, b in zip(d.slots, now.slots)]
        d.params = [_rss(a, b) for a, b in zip(d.params, now.params)]
        for mine, theirs in ((d.nonfinite, now.nonfinite), (d.slot_nonfinite, now.slot_nonfinite)):
            for k, c in theirs.items():
                mine[k] = _add_counts(mine.get(k), c)
        for i, b in now.births.items():
            d.births.setdefault(i, b)

    def node_done(self, i: int, sent: Sequence[Any], got: Sequence[Any]) -> None:
        """Node `i` ran: the norms of what it sent (per output edge) and of what it got in the
        input slots no single edge feeds; a non-finite norm read on CPU is counted, and a NaN or
        Inf born here gets its cause read now (see the module docstring).

        Example:
            >>> loss = (x * 3).sum(); p = LeanPass.of([loss]); p._check_task()
            >>> p.node_done(1, (torch.tensor(3.0),), (torch.tensor(1.0),)); p.norms
            [None, 3.0]
        """
        self._check_task()
        self.order.append(i)
        s = self.s
        for slot, x in s.extra_of[i]:
            t = got[slot] if slot < len(got) else None
            if t is not None:
                v = self.slots[x] = norm_of(t)
                if not isinstance(v, torch.Tensor) and v - v != 0.0:
                    self.slot_nonfinite[x] = counts_of(t)
        outs = s.out_edge[i]
        same = s.rearranging[i]
        if same >= 0:  # the input rearranged: its norm, when it is the tensor the edge carried
            ref = self.refs.pop(same, None)
            if ref is None or not got or ref() is not got[0] or self.norms[same] is None:
                same = -1
        bad = False
        for nr, t in enumerate(sent):
            if t is None or nr >= len(outs):
                continue
            e = outs[nr]
            if e < 0:
                continue
            if same >= 0:
                v = self.norms[e] = self.norms[same]
                if same in self.nonfinite:
                    self.nonfinite[e] = self.nonfinite[same]
                    bad = True
            else:
                v = self.norms[e] = norm_of(t)
                if not isinstance(v, torch.Tensor) and v - v != 0.0:
                    self.nonfinite[e] = counts_of(t)
                    bad = True
            if s.rearranging[s.edge_dst[e]] == e:
                self.refs[e] = _weakref(t)
        if bad and same < 0:
            self._birth(i, sent, got)

    def _birth(self, i: int, sent: Sequence[Any], got: Sequence[Any]) -> None:
        if any(t is not None and counts_of(t) != (0, 0) for t in got):
            return  # propagated, not born
        if not any(t is not None and counts_of(t) != (0, 0) for t in sent):
            return  # an overflow of the norm's sum of squares, not a non-finite element
        self.births[i] = birth_cause(self.fns[i], got, sent, loss_scale=self.scale,
                                     locator=self._locator())  # fmt: skip

    def _locator(self) -> Locator:
        """The graph's live nodes with their ids and modules, for a birth's forward walk (built
        on the first birth of the pass only: a finite step never pays for it)."""
        if self.locator is None:
            nodes = self.s.graph.nodes
            ids = [f"n{i}" for i in range(len(self.fns))]
            mods = [nodes[n].module if n in nodes else None for n in ids]
            self.locator = Locator(self.fns, ids, mods)
        return self.locator

    # ----------------------------------------------------------------- the pass
    def start(self) -> None:
        """Register the post-hooks (and the parameter pre-hooks the module docstring names).

        Guarantees: if registering fails half-way, what was registered is removed and the error
        raised (the user's backward has not started).

        Example:
            >>> loss = (x * 3).sum(); p = LeanPass.of([loss]); p.start(); p.remove()
            >>> p.handles
            []
        """
        s, fns, add = self.s, self.fns, self.handles.append
        try:
            for k, i in enumerate(s.param_nodes):
                var = getattr(fns[i], "variable", None)
                if s.param_edge[k] < 0 or getattr(var, "_backward_hooks", None):
                    self.param_hooked[k] = i
                    add(fns[i].register_prehook(self._acc_pre(i, k)))
            for i, fn in enumerate(fns):
                if not s.accumulate[i]:
                    add(fn.register_hook(self._post(i)))
        except BaseException:
            self.remove()
            raise

    def remove(self) -> None:
        """Remove every hook registered (each one even when another's removal fails).

        Example:
            >>> loss = (x * 3).sum(); p = LeanPass.of([loss]); p.remove(); p.handles
            []
        """
        handles, self.handles = self.handles, []
        for h in handles:
            try:
                h.remove()
            except Exception as e:
                self.note("removing a hook", e)

    def finish(self, exc: BaseException | None, staged: Staged | None = None) -> PassResult:
        """Remove the hooks and turn what they collected into a `PassResult`; norms still on a
        device are read now, with `staged`'s values, in one transfer per device.

        Example:
            >>> loss = (x * 3).sum(); p = LeanPass.of([loss]); p.start()
            >>> p.finish(None).order
            []
        """
        self.remove()
        s = self.s
        failed = self._failed() if exc is not None else None  # in the last pass
        order = None
        if self.passes > 1:  # every pass, taken together
            self._fold()
            d, self.done = self.done, None
            assert d is not None
            order, self.norms, self.slots, self.params = d.order, d.norms, d.slots, d.params
            self.nonfinite, self.slot_nonfinite, self.births = (d.nonfinite, d.slot_nonfinite,
                                                                d.births)  # fmt: skip
            self.order = [i for i in order if not s.accumulate[i]]
        stage = staged if staged is not None else Staged()
        base = len(stage.values)
        for v in (*self.norms, *self.params, *self.slots):
            stage.add(math.nan if v is None else v)
        values = stage.read()
        stage.values[:] = values[:base]  # the caller's own values, read in the same transfer
        n_e, n_p, n_x = len(self.norms), len(self.params), len(self.slots)
        edge = np.asarray(values[base : base + n_e], dtype=np.float32)
        slots = np.asarray(values[base + n_e + n_p : base + n_e + n_p + n_x], dtype=np.float32)
        params = np.asarray(values[base + n_e : base + n_e + n_p], dtype=np.float32)
        bad_params = []
        for k, e in enumerate(s.param_edge):
            if k in self.param_hooked:
                present = self.params[k] is not None
            else:
                present = e >= 0 and self.norms[e] is not None
                if present:
                    params[k] = edge[e]
            if present and not np.isfinite(params[k]):
                bad_params.append(k)
        device = next((v.device for v in (*self.norms, *self.slots)
                       if isinstance(v, torch.Tensor)), None)  # fmt: skip
        if device is not None:
            self._late_counts(edge, slots, str(device))
        if order is None:
            order = self._full_order()
        result = PassResult(order, edge, params, slots, dict(self.nonfinite),
                            dict(self.slot_nonfinite), dict(self.births), failed,
                            list(self.warnings), bad_params, self.passes)  # fmt: skip
        self.fns = []
        self.locator = None  # it holds the live nodes: nothing outlives the step
        self.refs.clear()
        return result

    def _late_counts(self, edge: np.ndarray, slots: np.ndarray, device: str) -> None:
        """Norms read after the step (a device): non-finite ones marked with unknown counts,
        births found from them (the first nodes sending a non-finite gradient from finite
        inputs), their cause not read."""
        s = self.s
        for e in np.flatnonzero(~np.isfinite(edge)).tolist():
            if self.norms[e] is not None and e not in self.nonfinite:
                self.nonfinite[e] = (-1, 0) if math.isnan(edge[e]) else (0, -1)
        for x in np.flatnonzero(~np.isfinite(slots)).tolist():
            if self.slots[x] is not None and x not in self.slot_nonfinite:
                self.slot_nonfinite[x] = (-1, 0) if math.isnan(slots[x]) else (0, -1)
        bad_slot = {s.extra[x] for x in self.slot_nonfinite}
        for i in self.order:
            if s.accumulate[i] or i in self.births:
                continue
            outs = [e for e in s.out_edge[i] if e >= 0 and e in self.nonfinite]
            ins = [e for e in s.in_edge[i] if e >= 0 and e in self.nonfinite]
            if outs and not ins and not any((i, k) in bad_slot for k in range(len(s.in_edge[i]))):
                self.births[i] = (f"{s.names[i]} " + NOT_READ.format(device=device), False)

    def _full_order(self) -> list[int]:
        """The observed order with each AccumulateGrad node placed right after its producer
        (when it ran in this pass and got a gradient)."""
        s, runs = self.s, self.runs_acc or {}
        out: list[int] = []
        for i in self.order:
            out.append(i)
            for j in s.acc_after[i]:
                e = s.in_edge[j][0]
                if runs.get(j, False) and self.norms[e] is not None:
                    out.append(j)
        return out

    def _failed(self) -> int | None:
        """The node the engine was running when the backward raised: among the nodes whose
        producers all finished and which did not, the one with the highest sequence number."""
        s = self.s
        done = set(self.order)
        producers: list[set[int]] = [set() for _ in s.names]
        for e, dst in enumerate(s.edge_dst):
            producers[dst].add(s.edge_src[e])
        best = None
        for i in range(len(s.names)):
            if s.accumulate[i] or i in done or not producers[i] <= done:
                continue
            if not producers[i] and not any(x[0] == i for x in s.extra):
                continue  # neither fed by a node nor by the caller: unreachable
            if best is None or s.seq[i] > s.seq[best]:
                best = i
        return best
