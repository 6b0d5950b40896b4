"""The flight recorder of `aw.watch(..., flight=K)` and the disk budget of `max_bytes=`.

`every=n` hooks one step in n: a NaN born at a step in between is flagged (its parameters) but
its birth node and cause are gone with the step's graph. With `flight=K` EVERY step runs the lean
hooks of lean.py (so its cost per step is `every=1`'s: measured, docs/watch.md "The flight
recorder"), and `FlightRecorder` decides afterwards what is kept: the last K steps' full records
wait in memory (`ring`); a step in which a gradient came out non-finite (a parameter's, or one
born and healed inside the graph), whose backward raised, or whose gradient norm jumped by more
than `spike` times the step before it is an EVENT: it, the K steps before it (still in the
ring) and the K steps after it are kept in full, in memory and in the file; the other steps are
kept as `every` says (full every n-th step, their loss and non-finite flags otherwise). So a
NaN's birth node and cause are never lost because of `every`.

`DiskBudget` keeps the `.awwatch` file under `max_bytes`: when the next record would pass it,
the oldest ORDINARY full steps (kept because of `every`, not an event's) are thinned first (every
second one of the oldest half, again while needed: they keep their loss and flags, lose their
arrays) until the file is back to `SLACK` of the budget (so a file is rewritten rarely, not at
every step). Events are thinned never. When nothing ordinary is left to thin, a step is written
without its arrays, and a step that does not fit even so is not written (a warning says which).
A budget smaller than the file's head, the first graph's structure and one full step is a
ValueError at the first step, naming the size needed.

Example:
    >>> f = FlightRecorder(2, spike=None)
    >>> [[(s.step, kind) for s, kind in f.take(_step(k, k == 3), k % 4 == 0)] for k in range(5)]
    [[], [], [(0, 'ordinary')], [(1, 'event'), (2, 'event'), (3, 'event')], []]
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from .trainstep import TrainingStep

__all__ = ["SLACK", "DiskBudget", "FlightRecorder", "OnDisk", "light", "total_norm"]

#: Where `DiskBudget` thins the file down to when it passes its budget (a fraction of it).
SLACK = 0.75

#: What a step kept by the flight recorder is: "event" (around a NaN/Inf or a spike, full),
#: "ordinary" (every n-th step, full), "light" (its loss and flags only).
KINDS = ("event", "ordinary", "light")


def light(st: TrainingStep) -> TrainingStep:
    """`st` without its arrays (an unwatched step's record: loss, scale, flags, failure).

    Example:
        >>> light(_step(4, True)).watched, light(_step(4, True)).nonfinite_params
        (False, ('w',))
    """
    return dataclasses.replace(
        st, watched=False, structure=None, order=None, edge_norms=None, param_norms=None,
        slot_norms=None, nonfinite={}, slot_nonfinite={}, births={},
    )  # fmt: skip


def total_norm(st: TrainingStep) -> float:
    """The norm of every parameter's gradient together (what `series("")` gives), unscaled;
    NaN for a step without arrays.

    Example:
        >>> total_norm(_step(0, False))
        5.0
    """
    if st.param_norms is None:
        return math.nan
    v = np.asarray(st.param_norms, dtype=np.float64)
    v = v[~np.isnan(v)]
    return float(np.sqrt(np.sum(v * v))) / (st.scale or 1.0)


def _eventful(st: TrainingStep) -> bool:
    return bool(st.nonfinite_params or st.nonfinite or st.slot_nonfinite
                or st.failure is not None)  # fmt: skip


class FlightRecorder:
    """Which steps a watch keeps in full (see the module docstring): `take` each step, full, in
    order; it returns the steps that leave the ring, each with its kind (`KINDS`).

    `keep`: K, the steps kept in memory before an event and in full after it; `spike`: the
    factor a step's total gradient norm must jump by, against the step before, to be an event
    (None: non-finite gradients only).

    Example:
        >>> f = FlightRecorder(1, spike=10.0)
        >>> f.take(_step(0, False), True), [k for _, k in f.take(_step(1, False, 80.0), False)]
        ([], ['event', 'event'])
    """

    def __init__(self, keep: int, spike: float | None) -> None:
        self.keep = keep
        self.spike = spike
        self.ring: deque[tuple[TrainingStep, str]] = deque()
        #: steps still to keep in full after the last event
        self.after = 0
        self.last_total = math.nan

    def take(self, st: TrainingStep, ordinary: bool) -> list[tuple[TrainingStep, str]]:
        """Step `st` (with its arrays where it was hooked) just ended; `ordinary`: `every`
        would keep it. Returns the steps decided now, in step order: everything in the ring when
        `st` is an event, else the oldest step once the ring holds more than K.

        Example:
            >>> f = FlightRecorder(0, spike=None)
            >>> [(s.step, kind) for s, kind in f.take(_step(0, False), False)]
            [(0, 'light')]
        """
        total = total_norm(st)
        event = _eventful(st) or (
            self.spike is not None and self.last_total > 0.0
            and (not math.isfinite(total) or total > self.spike * self.last_total)
        )  # fmt: skip
        if not math.isnan(total):
            self.last_total = total
        if event:
            out = [(s, "event") for s, _ in self.ring] + [(st, "event")]
            self.ring.clear()
            self.after = self.keep
            return out
        if self.after > 0:
            self.after -= 1
            kind = "event"
        else:
            kind = "ordinary" if ordinary else "light"
        self.ring.append((st, kind))
        out = []
        while len(self.ring) > self.keep:
            out.append(self.ring.popleft())
        return out

    def flush(self) -> list[tuple[TrainingStep, str]]:
        """Everything still in the ring, in order (the watch is closing).

        Example:
            >>> f = FlightRecorder(3, spike=None); _ = f.take(_step(0, False), True)
            >>> [(s.step, k) for s, k in f.flush()], f.flush()
            ([(0, 'ordinary')], [])
        """
        out = list(self.ring)
        self.ring.clear()
        return out


@dataclass
class OnDisk:
    """One step record in the file: its step, its kind (`KINDS`), the bytes of its full and of
    its light record, and whether it was thinned to its light record.

    Example:
        >>> OnDisk(3, "ordinary", 900, 60).saved
        840
    """

    step: int
    kind: str
    full: int
    light: int
    thinned: bool = False

    @property
    def saved(self) -> int:
        """Bytes freed by thinning it (0 when it holds no arrays or was thinned)."""
        return 0 if self.kind == "light" or self.thinned else self.full - self.light


class DiskBudget:
    """The `max_bytes=` budget of a watch's file (see the module docstring): `entries` is what
    the file holds, in order; `thin(size, needed)` chooses the ordinary steps to thin.

    Example:
        >>> b = DiskBudget(1000)
        >>> b.entries = [OnDisk(k, "ordinary", 200, 20) for k in range(4)]
        >>> [e.step for e in b.thin(900, 200)]
        [0, 1]
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.entries: list[OnDisk] = []

    def fits(self, size: int, needed: int) -> bool:
        """Whether `needed` more bytes fit in a file of `size` bytes.

        Example:
            >>> DiskBudget(10).fits(4, 6), DiskBudget(10).fits(4, 7)
            (True, False)
        """
        return size + needed <= self.max_bytes

    def thin(self, size: int, needed: int) -> list[OnDisk]:
        """The ordinary full steps to thin so that a file of `size` bytes takes `needed` more
        and ends at most at `SLACK` of the budget (or as close as they allow): every second
        one of the oldest half, oldest first, again over what is left while needed. Marks them
        `thinned`; [] when thinning is not needed.

        Example:
            >>> b = DiskBudget(100); b.entries = [OnDisk(0, "event", 50, 5)]
            >>> b.thin(90, 20)  # an event is never thinned
            []
        """
        if self.fits(size, needed):
            return []
        goal = int(self.max_bytes * SLACK)
        over = size + needed - goal
        chosen: list[OnDisk] = []
        left = [e for e in self.entries if e.saved > 0 and e.kind == "ordinary"]
        while over > 0 and left:
            half = left[: max(1, (len(left) + 1) // 2)]
            for e in half[::2]:
                over -= e.saved
                e.thinned = True
                chosen.append(e)
                if over <= 0:
                    break
            left = [e for e in left if not e.thinned]
        chosen.sort(key=lambda e: e.step)
        return chosen


def _step(k: int, nan: bool, norm: float = 5.0) -> TrainingStep:
    """A small full step for the examples above."""
    st = TrainingStep(k, True, 1.0, nonfinite_params=("w",) if nan else ())
    st.param_norms = np.array([math.nan if nan else norm], dtype=np.float32)
    return st
