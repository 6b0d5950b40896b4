"""Undoing an in-place fan-in add: a slot's partial sum as it was before a step, rebuilt.

The stepper's loop adds a fan-in contribution IN PLACE into a partial sum it made itself and nobody
else references (stepstate.py: owned, refcount-checked, the step's last write), as the engine does,
also while steps are kept for `back()` (`keep="tensors"` or within a byte budget): keeping every
partial sum out of place doubled the memory a kept run writes (measured 1.6-1.9x the engine on a
Mamba-like block instead of 1.4x). Such a write is logged as `ADDED` in the undo log instead of the
old tensor, and undoing it rebuilds the old value from what kept steps hold anyway: the slot's root
seeds and the gradients of its incoming edges, added in the loop's order (step order, then route
order within a step).

Guarantees: `FanIn.before(s, k, edge_val)` has the same bits as the value slot `s` held before
step k, for a slot whose contributions before k all flowed in kept steps (an elementwise add of
two tensors of the same shape and dtype gives the same bits in place or out of place: no
reduction, no reordering). Only dense (strided) partial sums are added in place while kept.
"""

from __future__ import annotations

import torch

from ...util.compat import storage_use_count
from .plan import Plan

__all__ = ["ADDED", "FanIn", "stealable"]

#: Undo-log marker: the step added into this slot's partial sum in place (rebuilt on undo).
ADDED = object()

_STRIDED = torch.strided


def stealable(t: torch.Tensor) -> bool:
    """The engine's test before it adds a fan-in contribution INTO the first gradient a slot
    received (InputBuffer's in-place accumulate), for a tensor the caller holds only once:
    no other holder of it in C++ (a view's base, `.grad`), its storage shared with no other
    tensor (a view, a saved output), dense and contiguous, plain (no conjugate/negative bit,
    not a ZeroTensor), needing no gradient itself.

    Args:
        t: the gradient a slot holds (the caller checked its Python reference count).

    Guarantees: True only when `t.add_(g)` changes no value any other tensor can see.

    Example:
        >>> t = torch.ones(3); stealable(t)
        True
        >>> v = t[1:]; stealable(t)  # a view shares its storage
        False
    """
    return (
        t._use_count() == 1
        and t.layout is _STRIDED
        and not t.requires_grad
        and t.is_contiguous()
        and not (t.is_conj() or t.is_neg() or t._is_zerotensor())
        and storage_use_count(t) == 1  # t's alone
    )


class FanIn:
    """Rebuilds partial sums of fan-in slots for the undo log (see the module docstring).

    Args:
        plan: the stepper's plan.
        seeds: its root gradients, (slot, tensor) in the order `StepState.reset` adds them.

    Example:
        >>> from autograd_widget.engine.step.plan import root_seeds
        >>> a = torch.tensor([1.0, 2.0], requires_grad=True)
        >>> h = aw.capture((a * a).sum()); s = aw.Stepper(h, keep="tensors"); _ = s.run()
        >>> fan = FanIn(s.plan, root_seeds(h, s.plan))
        >>> slot = s.plan.node_start[int(h.leaves[0][1:])]  # a's AccumulateGrad: 2 edges in
        >>> fan.before(slot, len(s.plan.order), s._state.edge_val)  # internal state: doctest only
        tensor([2., 4.])
    """

    def __init__(self, plan: Plan, seeds: list[tuple[int, torch.Tensor]]) -> None:
        self.plan = plan
        self.seeds = seeds
        self._sources: dict[int, list[tuple[int, int]]] | None = None

    def sources(self, s: int) -> list[tuple[int, int]]:
        """(step, edge index) of every edge feeding slot `s`, in the order the loop adds them.

        Args:
            s: a slot number.

        Example:
            >>> FanIn(st.plan, []).sources(3)  # x's AccumulateGrad: n1:0, written at step 2
            [(2, 2)]
        """
        if self._sources is None:
            table: dict[int, list[tuple[int, int]]] = {}
            for k, rts in enumerate(self.plan.routes):
                for r in rts:
                    table.setdefault(r[2], []).append((k, r[1]))
            self._sources = table
        return self._sources.get(s, [])

    def before(self, s: int, k: int, edge_val: list) -> torch.Tensor | None:
        """The value slot `s` held before step `k`: its seeds, then the gradients of its edges
        that flowed before `k`, added in the loop's order.

        Args:
            s: a slot number.
            k: a step; every step before it kept its edge gradients.
            edge_val: the state's per-edge values (tensors for kept steps, None: no gradient).

        Guarantees: a new tensor (never one the caller can see) when two or more terms are
        added; None when nothing flowed into `s` before `k`.

        Example:
            >>> FanIn(st.plan, []).before(3, 2, [None, None, None]) is None
            True
        """
        acc = None
        for rs, seed in self.seeds:
            if rs == s:
                acc = seed if acc is None else acc + seed
        for step, ei in self.sources(s):
            if step >= k:
                break
            g = edge_val[ei]
            if g is None:
                continue
            if not isinstance(g, torch.Tensor):
                raise RuntimeError(f"cannot undo step {k}: step {step}'s gradient was not kept")
            acc = g if acc is None else acc + g
        return acc

    def undo(
        self, slots: list, u_slot: list[int], u_old: list, m0: int, owned: dict, k: int,
        edge_val: list,
    ) -> None:  # fmt: skip
        """Put back what step `k` overwrote (undo-log entries `m0:`, newest first) and drop them.

        Args:
            slots, u_slot, u_old, owned: the state's slot buffers, undo log and owned sums.
            m0: where step k's entries start.
            k: the step being undone.
            edge_val: the state's per-edge values.

        Example:
            >>> slots, u_slot, u_old = [torch.ones(1)], [0], [None]
            >>> FanIn(st.plan, []).undo(slots, u_slot, u_old, 0, {}, 0, []); slots, u_slot
            ([None], [])
        """
        for j in range(len(u_slot) - 1, m0 - 1, -1):
            s = u_slot[j]
            old = u_old[j]
            slots[s] = self.before(s, k, edge_val) if old is ADDED else old
            owned.pop(s, None)
        del u_slot[m0:], u_old[m0:]
