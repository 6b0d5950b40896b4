"""The first non-finite step of a watch (what `Watch.first_nonfinite` returns), healed ones too.

A step is non-finite when a parameter gradient came out with a NaN or an Inf (`nonfinite_steps`):
those come first, in step order, with the step's first "born" `Origin` (where the NaN/Inf was
born, and for one already made in the forward the forward op: diagnose/forward.py). When there
is none, a NaN/Inf born and HEALED within a watched step (a mask, a multiplication by zero, a
relu in front of a sqrt at 0: some gradient was non-finite, every parameter gradient finite) is
the answer, so that "no NaN" is never said of a step that had one; its `Origin` is the node that
healed it (kind "healed"), its cause naming the birth. An unwatched step checks its parameters
only: a NaN healed there is not seen.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..diagnose.origins import Origin
    from .watchread import WatchReading

__all__ = ["first_nonfinite"]


def first_nonfinite(w: WatchReading, *, expected: bool = True, healed: bool = True
                    ) -> tuple[int, Origin | None] | None:  # fmt: skip
    """(step, origin) of watch `w`'s first non-finite step, else of its first healed one
    (`healed`), else None (see the module docstring; `Watch.first_nonfinite` documents it).

    Example:
        >>> v = torch.tensor([-1.0, 4.0], requires_grad=True)
        >>> watch = aw.watch(params={"v": v}); loss = v.relu().sqrt().sum()
        >>> with watch.step(loss):
        ...     loss.backward()
        >>> found = first_nonfinite(watch)  # None: no gradient had a NaN/Inf
        >>> origin = found[1]
        >>> print(origin.node, origin.kind, origin.cause)
        n2 healed healed: a NaN/Inf born at n1 (SqrtBackward0: saved `result` has 1 zero: the
        derivative of sqrt at 0 is infinite) was removed here (received 1 Inf in slot 0; every
        gradient it sent is finite); every parameter gradient came out finite
    """
    for st in w.records:
        if st.finite or (not expected and st.expected_overflow):
            continue
        if not st.watched:
            return st.step, None
        origins = w.recording(st.step).nonfinite_origins()
        born = [o for o in origins if o.kind == "born"]
        return st.step, next(iter(born or origins), None)
    if healed:
        for st in w.records:
            if st.watched and st.finite and (st.nonfinite or st.slot_nonfinite):
                return st.step, _healed(w, st.step)
    return None


def _healed(w: WatchReading, step: int) -> Origin | None:
    """The "healed" origin of a step whose parameter gradients came out finite, its cause
    naming where the NaN/Inf was born."""
    origins = w.recording(step).nonfinite_origins()
    cured = [o for o in origins if o.kind == "healed"]
    born = [o for o in origins if o.kind == "born"]
    if not cured:
        return next(iter(born or origins), None)
    o = cured[0]
    if born:
        st = w.record(step)
        nodes = w.structures[st.structure or 0].graph.nodes
        b = born[0]
        name = nodes[b.node].name if b.node in nodes else b.node
        cause = (f"healed: a NaN/Inf born at {b.node} ({name}: {b.cause}) was removed here "
                 f"({o.cause}); every parameter gradient came out finite")  # fmt: skip
        o = dataclasses.replace(o, cause=cause)
    return o
