"""One line per rank of a distributed run's files: what the rank selector of `aw.explore(group)`
shows, and the rank it opens on.

`aw.load_watch("run_{rank}.awwatch")` gives a `RankWatches`, `aw.load_recording("x_{rank}.awrec")`
a `RankRecordings` (engine/watch/rankwatch.py, ranks.py). Their own explanations are whole
sentences (`RankWatches.nonfinite_ranks`, `RankRecordings.failures`); a selector needs a line a
user reads at a glance ("rank 1: NaN/Inf born at step 3 in SqrtBackward0", "rank 0: waiting on
rank 1 (collective)"), with the whole sentence kept as its `detail`. The group opens on the rank
that matters: where the first NaN/Inf was born (`first_nonfinite`), the rank whose own node raised
(`first_failure`), else rank 0.

A watch group's lines also carry each rank's row of the timeline (`strip`): the whole model's
gradient norm (`Watch.series("")`, log10) across the run's steps, binned to at most `STRIP_BINS`
columns (a column shows the largest value of its watched steps), the columns holding a
non-finite step (`nonfinite_steps`, watched or not) listed as `alarm`, on one colour range shared
by every rank: the ranks' rows side by side show where each one's gradients went bad.

Guarantees: every word comes from the group's own reading API (roles, steps, node types,
explanations); nothing is recomputed here and nothing is changed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..engine.record.ranks import RankRecordings
from ..engine.watch.rankwatch import RankWatches

__all__ = ["STRIP_BINS", "RankLine", "opening_rank", "rank_lines", "rank_strips"]

#: The most columns of a rank's strip (the run's steps binned to them).
STRIP_BINS = 240


@dataclass(frozen=True)
class RankLine:
    """One rank in the selector: `rank`, `label` (one short line), `detail` (the group's whole
    sentence for it) and `role`: for watches "born", "received", "unknown" or "finite" (as
    `RankNonfinite.role`); for recordings "raised" (its own code raised), "collective" (it
    failed waiting on a peer) or "ok" (its backward ran to the end). `strip`: the rank's row of
    the timeline (module docstring; watches only, else None).

    Example:
        >>> RankLine(0, "rank 0: finite", "rank 0: ...", "finite").role
        'finite'
    """

    rank: int
    label: str
    detail: str
    role: str
    strip: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The line as JSON (the widget's `ranks` trait, the standalone page).

        Example:
            >>> RankLine(1, "rank 1: ok", "rank 1: ran", "ok").as_dict()["label"]
            'rank 1: ok'
        """
        out = {"rank": self.rank, "label": self.label, "detail": self.detail, "role": self.role}
        if self.strip is not None:
            out["strip"] = self.strip
        return out


def rank_lines(group: RankWatches | RankRecordings) -> list[RankLine]:
    """One `RankLine` per rank of `group`, in rank order.

    Example:
        >>> from pathlib import Path
        >>> w = torch.tensor([0.0, 1.0], requires_grad=True)
        >>> watch = aw.watch(params={"w": w}); loss = w.sqrt().sum()
        >>> with watch.step(loss):
        ...     loss.backward()
        >>> group = aw.RankWatches("r_{rank}", [Path("r_0")], [watch])
        >>> rank_lines(group)[0].label
        'rank 0: NaN/Inf born at step 0 in SqrtBackward0'
    """
    if isinstance(group, RankWatches):
        strips = rank_strips(group)
        return [_watch_line(r, strips[r.rank]) for r in group.nonfinite_ranks()]
    if isinstance(group, RankRecordings):
        return [_recording_line(group, f) for f in group.failures()]
    raise TypeError(f"rank_lines needs a RankWatches or a RankRecordings, got "
                    f"{type(group).__name__}")  # fmt: skip


def opening_rank(group: RankWatches | RankRecordings) -> int:
    """The rank `aw.explore(group)` opens on: where the first NaN/Inf was born (watches), the rank
    whose own node raised (recordings), else rank 0.

    Example:
        >>> from pathlib import Path
        >>> loss = (x * 3).sum()
        >>> with aw.record(loss) as rec:
        ...     loss.backward()
        >>> opening_rank(aw.RankRecordings("r_{rank}", [Path("r_0")], [rec]))
        0
    """
    if isinstance(group, RankWatches):
        first = group.first_nonfinite()
        return 0 if first is None else first[1]
    failed = group.first_failure()
    return 0 if failed is None else failed[0]


def rank_strips(group: RankWatches, bins: int = STRIP_BINS) -> list[dict[str, Any]]:
    """Each rank's row of the timeline (module docstring): {"n_steps": the run's steps (the
    longest rank's), "values": per column log10 of the model's gradient norm, 4 decimals (None:
    no watched step there, or a zero or non-finite norm), "alarm": the columns holding a
    non-finite step, "range": [lo, hi] shared by every rank}.

    Example:
        >>> from pathlib import Path
        >>> w = torch.tensor([0.0, 1.0], requires_grad=True)
        >>> watch = aw.watch(params={"w": w})
        >>> for k in range(2):
        ...     loss = (w + k).sqrt().sum() if k == 0 else (w * 10).sum()
        ...     with watch.step(loss):
        ...         loss.backward()
        >>> s = rank_strips(aw.RankWatches("r_{rank}", [Path("r_0")], [watch]))[0]
        >>> s["n_steps"], s["values"], s["alarm"]
        (2, [None, 1.1505], [0])
    """
    n_steps = max((len(w.records) for w in group.watches), default=0)
    cols = max(1, min(bins, n_steps))
    rows: list[tuple[list[float | None], list[int]]] = []
    for w in group.watches:
        best = np.full(cols, np.nan)
        norms = np.asarray(w.series(""), dtype=np.float64)
        for step, v in zip(w.steps, norms):
            c = step * cols // max(n_steps, 1)
            if math.isfinite(v) and v > 0 and not best[c] >= v:
                best[c] = v
        alarm = sorted({s * cols // max(n_steps, 1) for s in w.nonfinite_steps})
        rows.append(([None if math.isnan(v) else round(math.log10(v), 4) for v in best], alarm))
    fin = [v for vals, _ in rows for v in vals if v is not None]
    lo, hi = (min(fin), max(fin)) if fin else (0.0, 1.0)
    if hi - lo < 1e-6:
        lo, hi = lo - 0.5, hi + 0.5
    return [{"n_steps": n_steps, "values": vals, "alarm": alarm, "range": [lo, hi]}
            for vals, alarm in rows]  # fmt: skip


def _watch_line(r: Any, strip: dict[str, Any] | None = None) -> RankLine:
    if r.role == "born":
        label = f"rank {r.rank}: NaN/Inf born at step {r.step} in {r.node_name or r.origin.node}"
    elif r.role == "received":
        label = (f"rank {r.rank}: NaN/Inf received through a collective (non-finite from "
                 f"step {r.step})")
    elif r.role == "unknown":
        label = f"rank {r.rank}: non-finite at step {r.step} (not watched then)"
    else:
        label = f"rank {r.rank}: gradients finite"
    return RankLine(r.rank, label, r.sentence, r.role, strip)


def _recording_line(group: RankRecordings, f: Any) -> RankLine:
    if f.own:
        node = f.failure.node if f.failure is not None else ""
        name = group.recording(f.rank).graph.nodes[node].name if node else "its backward"
        return RankLine(f.rank, f"rank {f.rank}: {name} raised", f.sentence, "raised")
    if f.error:
        peer = f.explanation.peer if f.explanation is not None else None
        label = (f"rank {f.rank}: waiting on rank {peer} (collective)" if peer is not None
                 else f"rank {f.rank}: failed in a collective")  # fmt: skip
        return RankLine(f.rank, label, f.sentence, "collective")
    return RankLine(f.rank, f"rank {f.rank}: ran to the end", f.sentence, "ok")
