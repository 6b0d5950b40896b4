"""The check of an UNWATCHED step of `aw.watch` (watch/watch.py): which parameter gradients came
out non-finite, at the lowest cost an exact check has.

Exact means every element of every parameter gradient is read once (a NaN can sit in any one of
them): the floor is one pass over the parameters' gradients' memory. `leaf_flag` takes that one
pass as a plain sum on CPU (measured ~25% under the norm it replaced), confirmed by counting only
where the sum is not finite. `LeafCheck` takes it, in the common case, as one batch over the
fresh `.grad`s at the end of the backward instead of one read inside each hook: on 2 threads the
reads interleaved with the backward cost about 3x the same reads in one batch (measured, see
docs/watch.md "What an unwatched step costs").

Guarantees (as lean.py's hooks'): the hooks never raise (a problem becomes a warning), return
None, never write `.grad`, hold no gradient past the hook, and are all removed by `remove()`;
what is named is the gradient THIS backward produced (never a NaN an earlier step left in
`.grad`), by the parameter's name.

Example:
    >>> w = torch.tensor([0.0, 1.0], requires_grad=True); loss = w.sqrt().sum()
    >>> c = LeafCheck([loss], {id(w): "w"}); c.start(); loss.backward(); c.finish()
    ['w']
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from ..diagnose.causes import counts_of
from .lean import Staged, norm_of
from .structure import accumulators

__all__ = ["LeafCheck", "leaf_flag"]

_STRIDED = torch.strided
_SUMMED = (torch.float32, torch.float64)
_task_id = torch._C._current_graph_task_id
_queue = torch.autograd.Variable._execution_engine.queue_callback


def leaf_flag(t: torch.Tensor) -> float | torch.Tensor:
    """0.0 when gradient `t` is finite, NaN when it holds a NaN or an Inf: the unwatched steps'
    check (`LeafCheck`), the cheapest exact one measured on CPU.

    On CPU, the plain sum of the elements (one pass, no squares: ~25% under a norm, see
    docs/watch.md "What an unwatched step costs"): a NaN or an Inf in any element makes it NaN or
    infinite; a non-finite sum is confirmed by counting (`counts_of`) while `t` exists, so a
    finite gradient whose sum overflows is never flagged. On other devices (and for sparse,
    complex, half or ZeroTensor gradients) the norm (`norm_of`), staged as the norms are.

    Example:
        >>> leaf_flag(torch.tensor([1e38, 1e38])), leaf_flag(torch.tensor([1.0, float("nan")]))
        (0.0, nan)
    """
    if t.requires_grad:
        t = t.detach()
    if (t.is_cpu and t.layout is _STRIDED and t.dtype in _SUMMED and not t.is_meta
            and not t._is_zerotensor()):  # fmt: skip
        total = t.sum().item()
        if total - total == 0.0 or counts_of(t) == (0, 0):
            return 0.0
        return math.nan
    v = norm_of(t)
    if isinstance(v, torch.Tensor):
        return v * 0.0  # NaN stays NaN, Inf becomes NaN, a finite norm 0.0
    return 0.0 if v - v == 0.0 else math.nan


def _distributed() -> bool:
    """Whether a torch.distributed process group is up (DDP/FSDP hooks may then average or
    reshard `.grad` during the backward: its parameters are checked in the hook)."""
    dist = torch.distributed
    return bool(dist.is_available() and dist.is_initialized())


class LeafCheck:
    """The hooks of an UNWATCHED step: which leaves' gradients THIS backward produced not
    finite (the summed gradient, after the user's tensor hooks; not an accumulated `.grad`);
    `finish()` names them. Under `torch.autograd.grad` no AccumulateGrad node runs: nothing is
    checked. A pre-hook on each root's node counts the backward passes (`passes`; 0: no
    backward ran); with several, a leaf is named when its gradient was not finite in any.

    A pre-hook on each leaf's AccumulateGrad node sees the gradient. Where that gradient
    simply becomes `.grad` (the common case: a CPU gradient, `.grad` None before it, no
    post-accumulate-grad hook of the user's on that leaf, no torch.distributed process group),
    the hook only notes the leaf (a few attribute reads, no read of the gradient) and the check
    is ONE pass over those `.grad`s at the end of the backward (`_end`, queued on the engine: it
    runs after the backward's last node, before `backward()` returns and before any code of
    the user's runs; from `finish` when the backward raised): `leaf_flag` (a plain sum for a
    float32/float64 dense one, confirmed by counting; a staged norm otherwise); no
    read interleaved with the backward's own work (measured in docs/watch.md "What an unwatched
    step costs"). Every other gradient (`.grad` already holding one: accumulation, a second
    pass; a device's; a leaf with post-accumulate-grad hooks, which may change or clear
    `.grad`: an optimizer in the backward; DDP/FSDP, which average `.grad` across ranks) is
    checked in the hook the same way, a device's value staged and read by `finish`, one
    transfer per device. No gradient is held past the hook (holding it would make
    AccumulateGrad copy it instead of stealing it).

    `names`: `id(leaf tensor)` -> name; other leaves are named by their shape.

    Example:
        >>> w = torch.tensor([0.0, 1.0], requires_grad=True); loss = w.sqrt().sum()
        >>> c = LeafCheck([loss], {id(w): "w"}); c.start(); loss.backward(); c.finish()
        ['w']
    """

    def __init__(self, roots: Sequence[torch.Tensor], names: dict[int, str]) -> None:
        self.leaves = accumulators(roots)
        self.vars: list[Any] = [getattr(fn, "variable", None) for fn in self.leaves]
        self.names = names
        #: leaf indices whose gradient was found not finite
        self.bad: set[int] = set()
        #: (leaf index, flag) read in `finish` (a device's value, staged)
        self.later: list[tuple[int, Any]] = []
        #: leaf indices whose fresh `.grad` is read at the end of the backward (`_end`)
        self.deferred: list[int] = []
        self.can_defer: list[bool] = []
        self.handles: list[Any] = []
        self.warnings: list[str] = []
        leaves = set(self.leaves)
        self.root_fns = list({fn: None for fn in (t.grad_fn for t in roots)
                              if fn is not None and fn not in leaves})  # fmt: skip
        #: backward passes seen (graph task ids met by a hook)
        self.passes = 0
        self.task: int | None = None
        self.queued: int | None = None  # the task whose end runs `_end`

    def _seen(self) -> None:
        task = _task_id()
        if task != self.task:
            self.task = task
            self.passes += 1

    def _warn(self, what: str, e: BaseException) -> None:
        if len(self.warnings) < 100:
            self.warnings.append(f"{what}: {type(e).__name__}: {e}")

    def _flag(self, k: int, g: torch.Tensor) -> None:
        v = leaf_flag(g)  # a float on a CPU; a device's value is staged, read in `finish`
        if isinstance(v, torch.Tensor):
            self.later.append((k, v))
        elif v - v != 0.0:
            self.bad.add(k)

    def _pre(self, k: int) -> Any:
        var, deferred, can, task_id = self.vars[k], self.deferred, self.can_defer[k], _task_id

        def pre_hook(got: tuple[Any, ...]) -> None:
            try:
                task = task_id()
                if task != self.task:
                    self._seen()
                g = got[0] if got else None
                if g is None:
                    return None
                if can and g.is_cpu and var.grad is None:  # g becomes .grad: read at the end
                    if self.queued != task:
                        _queue(self._end)
                        self.queued = task
                    deferred.append(k)
                    return None
                self._flag(k, g)
            except Exception as e:  # never disturb the user's backward
                self._warn("parameter hook", e)
            return None

        return pre_hook

    def _end(self) -> None:
        """Check the `.grad`s noted during this backward (run by the engine at its end).

        Example:
            >>> c = LeafCheck([z], {}); c._end(); c.deferred
            []
        """
        deferred, self.deferred[:] = list(self.deferred), []
        for k in deferred:
            try:
                g = self.vars[k].grad
                if g is None:  # cleared by a hook within the backward: say so, never guess
                    raise RuntimeError(".grad was cleared during the backward: not checked")
                self._flag(k, g)
            except Exception as e:  # never disturb the user's backward
                self._warn("parameter check", e)

    def _root_pre(self, grads: tuple[Any, ...]) -> None:
        try:
            self._seen()
        except Exception as e:  # never disturb the user's backward
            self._warn("root hook", e)
        return None

    def start(self) -> None:
        """Register the pre-hooks (all removed again if one fails).

        Example:
            >>> c = LeafCheck([z], {}); c.start(); len(c.handles)
            3
            >>> c.finish()
            []
        """
        distributed = _distributed()
        self.can_defer = [not distributed and v is not None
                          and not getattr(v, "_post_accumulate_grad_hooks", None)
                          for v in self.vars]  # fmt: skip
        try:
            for k, fn in enumerate(self.leaves):
                self.handles.append(fn.register_prehook(self._pre(k)))
            for fn in self.root_fns:
                self.handles.append(fn.register_prehook(self._root_pre))
        except BaseException:
            self.remove()
            raise

    def remove(self) -> None:
        """Remove every hook (each one even when another's removal fails).

        Example:
            >>> c = LeafCheck([z], {}); c.start(); c.remove(); c.handles
            []
        """
        handles, self.handles = self.handles, []
        for h in handles:
            try:
                h.remove()
            except Exception as e:
                self.warnings.append(f"removing a hook: {type(e).__name__}: {e}")

    def finish(self, staged: Staged | None = None) -> list[str]:
        """Remove the hooks; the names of the leaves whose gradient was not finite, in walk
        order (what a backward that raised left noted is checked now; a device's flags are read
        with `staged`'s values, one transfer per device; nothing is staged on a CPU).

        Example:
            >>> c = LeafCheck([z], {}); c.finish()
            []
        """
        self.remove()
        self._end()
        bad = set(self.bad)
        if self.later:
            stage = staged if staged is not None else Staged()
            base = len(stage.values)
            for _, v in self.later:
                stage.add(v)
            values = stage.read()
            stage.values[:] = values[:base]
            bad.update(k for (k, _), v in zip(self.later, values[base:]) if v - v != 0.0)
            self.later = []
        names = []
        for k in sorted(bad):
            var = self.vars[k]
            name = self.names.get(id(var))
            names.append(name if name is not None else f"leaf {list(getattr(var, 'shape', ()))}")
        self.leaves, self.vars = [], []
        return names
