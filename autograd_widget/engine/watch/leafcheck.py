"""The check of an UNWATCHED step of `aw.watch` (watch/watch.py): which parameter gradients came
out non-finite, at the lowest cost an exact check has.

Exact means every element of every parameter gradient is read once (a NaN can sit in any one of
them): the floor is one pass over the parameters' gradients' memory. `leaf_flag` takes that one
pass as a plain sum on CPU (measured ~25% under the norm it replaced, see docs/watch.md "What an
unwatched step costs"), confirmed by counting only where the sum is not finite.

Guarantees (as lean.py's hooks'): the hooks never raise (a problem becomes a warning), return
None, never write `.grad`, hold no gradient past the hook, and are all removed by `remove()`.

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


class LeafCheck:
    """The hooks of an UNWATCHED step: a pre-hook on each leaf's AccumulateGrad node checks the
    gradient this backward produced for it (the summed gradient, after the user's tensor hooks;
    not the accumulated `.grad`) with `leaf_flag` (no norm: a sum on CPU, confirmed by counting
    when it is not finite; a staged norm on a device); `finish()` reads them all at once and
    names the leaves whose gradient is not finite. Under `torch.autograd.grad` no
    AccumulateGrad node runs: nothing is checked. A pre-hook on each root's node counts the
    backward passes (`passes`; 0: no backward ran); with several, a leaf is named when its
    gradient was not finite in any of them (the passes' flags are added: a NaN stays one).

    `names`: `id(leaf tensor)` -> name; other leaves are named by their shape.

    Example:
        >>> w = torch.tensor([0.0, 1.0], requires_grad=True); loss = w.sqrt().sum()
        >>> c = LeafCheck([loss], {id(w): "w"}); c.start(); loss.backward(); c.finish()
        ['w']
    """

    def __init__(self, roots: Sequence[torch.Tensor], names: dict[int, str]) -> None:
        self.leaves = accumulators(roots)
        self.names = names
        self.norms: list[Any] = [None] * len(self.leaves)
        self.handles: list[Any] = []
        self.warnings: list[str] = []
        leaves = set(self.leaves)
        self.root_fns = list({fn: None for fn in (t.grad_fn for t in roots)
                              if fn is not None and fn not in leaves})  # fmt: skip
        #: backward passes seen (graph task ids met by a hook)
        self.passes = 0
        self.task: int | None = None

    def _seen(self) -> None:
        task = _task_id()
        if task != self.task:
            self.task = task
            self.passes += 1

    def _pre(self, k: int) -> Any:
        norms, warnings = self.norms, self.warnings

        def pre_hook(got: tuple) -> None:
            try:
                self._seen()
                if got and got[0] is not None:
                    v = leaf_flag(got[0])
                    norms[k] = v if norms[k] is None else norms[k] + v
            except Exception as e:  # never disturb the user's backward
                if len(warnings) < 100:
                    warnings.append(f"parameter hook: {type(e).__name__}: {e}")
            return None

        return pre_hook

    def _root_pre(self, grads: tuple) -> None:
        try:
            self._seen()
        except Exception as e:  # never disturb the user's backward
            if len(self.warnings) < 100:
                self.warnings.append(f"root hook: {type(e).__name__}: {e}")
        return None

    def start(self) -> None:
        """Register the pre-hooks (all removed again if one fails).

        Example:
            >>> c = LeafCheck([z], {}); c.start(); len(c.handles)
            3
            >>> c.finish()
            []
        """
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
        """Remove the hooks; the names of the leaves whose gradient was not finite (read with
        `staged`'s values, one transfer per device).

        Example:
            >>> c = LeafCheck([z], {}); c.finish()
            []
        """
        self.remove()
        stage = staged if staged is not None else Staged()
        base = len(stage.values)
        for v in self.norms:
            stage.add(0.0 if v is None else v)
        values = stage.read()
        stage.values[:] = values[:base]
        bad = []
        for fn, v in zip(self.leaves, values[base:]):
            if v - v != 0.0:
                var = getattr(fn, "variable", None)
                name = self.names.get(id(var))
                bad.append(name if name is not None else f"leaf {list(getattr(var, 'shape', ()))}")
        self.leaves = []
        return bad
