"""What-if on one stepper: its edits applied to its state, and the unedited reference run.

`Edits` (edits.py) is only the set of edits. Applying a change to that set means replaying the
plan from the start to the current position under the new edits, which rebuilds the slot buffers
and the undo log (exact and simple; an edit is a user action, not a hot path): `WhatIf.apply`
runs that replay as a transaction, all or nothing.

A `LeafDiff` compares the edited run with the unedited one at the same position. That reference
run belongs here, to the stepper's what-if side: a bare `StepState` of its own over the same plan
and root seeds with no edits (not a second `Stepper`: no listeners, breakpoints or records),
made on the first request and moved to the stepper's position on each (a replay).
"""

from __future__ import annotations

import torch

from ...core.summary import Summary
from ...util.gcpause import gc_paused
from .calls import IN_STEP_CODES
from .edits import Edits
from .guard import Guard
from .results import EditInfo
from .stepstate import ADVANCE_CODE, StepState

__all__ = ["WhatIf"]


class WhatIf:
    """The what-if side of one stepper (see the module docstring).

    Args:
        state: the stepper's state; its `edits` are the ones applied.

    Guarantees: `apply` leaves everything as before when it fails; the reference run never
    sees an edit and never touches the stepper's state.

    Example:
        >>> state = st._state  # internal: the Stepper's own is the only route
        >>> state.advance(1)
        >>> whatif = WhatIf(state)
        >>> whatif.apply({0: state.edits.make(0, "zero", None, None, state.summary_of(0))}, [])
        >>> state.summary_of(0).mean, whatif.reference_leaf_grads()
        (0.0, [tensor(1.), None])
    """

    def __init__(self, state: StepState) -> None:
        self._state = state
        #: The unedited reference run, made on the first `reference_leaf_grads`.
        self.reference: StepState | None = None

    def apply(self, new: dict[int, EditInfo], drop: list[int]) -> None:
        """Add `new` edits and remove `drop`, then replay to the current position under them.

        Args:
            new: edge index -> edit.
            drop: edge indices whose edit goes.

        Guarantees: on failure everything (state, edits, summaries) is as before and the error
        propagates; on success `edits.seq` is bumped (the caller notifies).

        Example:
            >>> state = st._state  # internal: the Stepper's own is the only route
            >>> state.advance(1)
            >>> info = state.edits.make(0, "zero", None, None, state.summary_of(0))
            >>> WhatIf(state).apply({0: info}, []); state.summary_of(0).mean, state.edits.seq
            (0.0, 1)
        """
        state = self._state
        edits, store = state.edits, state.store
        store.settle()
        affected = [*new, *drop]
        old_summaries = {ei: state.summary_of(ei) for ei in affected}
        old_edits = edits.replace(new, drop)
        for ei in affected:
            store.pop(ei)
        edits.capture = {}
        try:
            state.rebuild(state.pos)
            captured = edits.capture
        except BaseException:
            edits.restore(old_edits)
            for ei, s in old_summaries.items():
                if s is not None:
                    store.put(ei, s)
            raise
        finally:
            edits.capture = None
        for ei in new:
            g = captured.get(ei)
            if g is not None:
                store.put(ei, Summary.of(g))
        for ei in drop:
            before = old_edits[ei].before  # what the source computes, unedited
            if before is not None and not isinstance(state.edge_val[ei], torch.Tensor):
                store.put(ei, before)
        edits.seq += 1

    def reference_leaf_grads(self) -> list:
        """Each leaf's gradient in the unedited run at the stepper's position (`graph.leaves`
        order): partial sums before a leaf's AccumulateGrad ran, the full gradient after.

        Guarantees: RuntimeError, saying why, when the unedited run cannot reach the position
        (a node raises there).

        Example:
            >>> _ = st.run(); WhatIf(st._state).reference_leaf_grads()
            [tensor(1.), tensor(4.)]
        """
        state = self._state
        ref = self.reference
        if ref is None:
            plan = state.plan
            ref = self.reference = StepState(
                state.graph, plan, state.seeds, create_graph=False, keep="summaries",
                edits=Edits(plan), guard=Guard(ADVANCE_CODE, IN_STEP_CODES),
            )  # fmt: skip
        ref.graph = state.graph
        pos = state.pos
        if ref.pos > pos:
            ref.reset()
        with gc_paused():
            failure = ref.advance(pos, replay=True) if ref.pos < pos else None
        if failure is not None or ref.pos != pos:
            why = failure.error if failure is not None else "it stopped early"
            raise RuntimeError(
                f"the unedited run cannot reach position {pos} to compare with: {why}"
            )
        return ref.leaf_grads()

    def close(self) -> None:
        """Forget every edit and drop the reference run (the stepper is closing).

        Example:
            >>> whatif = WhatIf(st._state); _ = whatif.reference_leaf_grads()
            >>> whatif.close(); whatif.reference is None
            True
        """
        edits = self._state.edits
        edits.replace({}, list(edits.active))
        if self.reference is not None:
            self.reference.close()
            self.reference = None
