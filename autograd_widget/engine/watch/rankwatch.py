"""Every rank's watch of one distributed training run: where a NaN/Inf was born, where ranks part.

`aw.load_watch("run_{rank}.awwatch")` returns a `RankWatches` (files read and checked by
ranks.py's `load_ranks`: one run, one world size, the same parameters).

Where a NaN/Inf was born: on DDP a NaN born on rank 1 at step 3 reaches rank 0 through the
all-reduce of that step's gradients: rank 0's own (local) gradients stay finite at step 3, and
its first non-finite step is 4, born wherever the poisoned weights first meet its backward.
Read alone, rank 0's watch points at the wrong step and the wrong node. `first_nonfinite()` takes
the earliest step at which any rank's own gradients went non-finite and, of the ranks that did at
that step, the one whose birth is most surely its own (diagnose/collective.py's
`birth_evidence`: an op's own reason, such as sqrt at 0, beats a saved value that was already
non-finite in the forward, which beats a birth at a node that communicates, or an unwatched
step); `nonfinite_ranks()` says how every other rank is explained: received through a
collective (a later step: through the averaged gradients; the same step: through a collective
of the forward or the backward), born there too, or finite.

Where ranks part (`divergence(keys)`): a watch keeps each rank's LOCAL gradients (what its own
backward produced, before DDP's all-reduce or FSDP's reduce-scatter), which differ between ranks
that saw different data; what must agree depends on the program: a loss scaler's factor
("scale") under DDP, a replicated parameter's gradient and the loss under tensor parallelism,
everything when every rank sees the same data. The caller names the keys; the first watched
step and key where a rank differs from rank 0 is reported.

Guarantees: built on `Watch`'s public reading API (`first_nonfinite`, `recording(step)`, `steps`,
`table`, `losses`, `record(step)`), never on the file layout; nothing is changed.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..diagnose.collective import birth_evidence
from ..record.ranks import load_ranks

if TYPE_CHECKING:
    from ..diagnose.origins import Origin
    from .watch import Watch

__all__ = ["Divergence", "RankNonfinite", "RankWatches", "params_difference"]

RankRole = Literal["born", "received", "unknown", "finite"]
#: Keys of `divergence` that are not gradients: the loss and the loss scaler's factor.
SCALAR_KEYS = ("loss", "scale")


@dataclass(frozen=True)
class RankNonfinite:
    """How one rank took part in the run's first NaN/Inf (`RankWatches.nonfinite_ranks`).

    `rank`; `step`: its own first non-finite step (None: its gradients stayed finite);
    `origin`: the `Origin` its watch gives for that step (None where the step was not
    watched); `node_name`: that node's type; `role`: "born" (its own graph made it), "received"
    (it came from a peer through a collective), "unknown" (not watched at that step: cannot be
    told) or "finite"; `sentence`: one line saying so.

    Example:
        >>> RankNonfinite(0, None, None, "", "finite", "rank 0: finite").role
        'finite'
    """

    rank: int
    step: int | None
    origin: Origin | None
    node_name: str
    role: RankRole
    sentence: str


@dataclass(frozen=True)
class Divergence:
    """The first watched step and key where a rank's value differs from rank 0's.

    `step`, `key` (a parameter, module, edge id, "loss" or "scale"), `values` (rank -> value at
    that step), `ranks` (the ranks that differ from rank 0), `sentence`.

    Example:
        >>> Divergence(3, "w", {0: 1.0, 1: 2.0}, (1,), "...").ranks
        (1,)
    """

    step: int
    key: str
    values: dict[int, float]
    ranks: tuple[int, ...]
    sentence: str


def params_difference(a: Any, b: Any) -> str | None:
    """What differs between two watches' parameters (rank 0's `a`, another rank's `b`), or None.

    Example:
        >>> w0, w1 = aw.watch(params={"w": x}), aw.watch(params={"v": x})
        >>> for w in (w0, w1):
        ...     loss = (x * 3).sum()
        ...     with w.step(loss):
        ...         loss.backward()
        >>> params_difference(w0, w1)
        "parameters only rank 0 watched: ['w']; only this rank: ['v']"
    """
    pa, pb = a.keys()["params"], b.keys()["params"]
    if set(pa) == set(pb):
        return None
    only_a = [p for p in pa if p not in set(pb)][:5]
    only_b = [p for p in pb if p not in set(pa)][:5]
    return f"parameters only rank 0 watched: {only_a}; only this rank: {only_b}"


class RankWatches:
    """Every rank's `Watch` of one training run (`aw.load_watch` with `{rank}` in the path).

    `ranks`, `paths`, `watch(rank)`, `first_nonfinite()`, `nonfinite_ranks()`, `divergence()`.

    Example:
        >>> w = aw.watch(params={"x": x}); loss = (x * 3).sum()
        >>> with w.step(loss):
        ...     loss.backward()
        >>> group = RankWatches("run_{rank}", [Path("run_0")], [w])
        >>> group.ranks, group.first_nonfinite()
        ([0], None)
    """

    def __init__(self, pattern: str, paths: Sequence[Path], watches: Sequence[Watch]) -> None:
        self.pattern = str(pattern)
        self.paths = list(paths)
        self.watches = list(watches)

    @classmethod
    def load(cls, pattern: str | os.PathLike, load_one: Callable[[Path], Watch]) -> RankWatches:
        """Every rank's watch of `pattern`, checked (`load_ranks`): one run (torch version,
        `every`, the model's class), the same parameters.

        Example:
            >>> RankWatches.load("none_{rank}.awwatch", aw.load_watch)
            Traceback (most recent call last):
            ValueError: no rank's file matches 'none_{rank}.awwatch': rank 0's would be ...
        """
        paths, watches = load_ranks(pattern, load_one, same=("torch", "every", "model"),
                                    difference=params_difference, what="watch")  # fmt: skip
        return cls(str(pattern), paths, watches)

    def __repr__(self) -> str:
        first = self.first_nonfinite()
        tail = f", first NaN/Inf at step {first[0]} on rank {first[1]}" if first else ""
        return f"<RankWatches {len(self.watches)} ranks of {self.pattern!r}{tail}>"

    def __len__(self) -> int:
        return len(self.watches)

    @property
    def ranks(self) -> list[int]:
        """The ranks read: 0, 1, ..., world size - 1."""
        return list(range(len(self.watches)))

    def watch(self, rank: int) -> Watch:
        """Rank `rank`'s `Watch` (KeyError naming the ranks otherwise).

        Example:
            >>> w = aw.watch()
            >>> RankWatches("run_{rank}", [Path("run_0")], [w]).watch(0) is w
            True
        """
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < len(self):
            raise KeyError(f"no rank {rank!r}: these watches are of ranks 0..{len(self) - 1}")
        return self.watches[rank]

    # ----------------------------------------------------------------- NaN/Inf
    def first_nonfinite(self, *, expected: bool = True
                        ) -> tuple[int, int, Origin | None] | None:  # fmt: skip
        """(step, rank, origin): the earliest step at which any rank's own gradients went
        non-finite, the rank where the NaN/Inf was born in its own graph (module docstring),
        and its `Origin` there (None where that step was not watched); None when every rank's
        gradients stayed finite. `expected=False` skips a loss scaler's expected overflows.

        Example:
            >>> w = torch.tensor([0.0, 1.0], requires_grad=True)
            >>> watch = aw.watch(params={"w": w}); loss = w.sqrt().sum()
            >>> with watch.step(loss):
            ...     loss.backward()
            >>> group = RankWatches("r_{rank}", [Path("r_0")], [watch])
            >>> step, rank, origin = group.first_nonfinite(); step, rank, origin.node
            (0, 0, 'n1')
        """
        ranks, chosen = self._explain(expected)
        if chosen is None:
            return None
        r = ranks[chosen]
        assert r.step is not None
        return r.step, chosen, r.origin

    def nonfinite_ranks(self, *, expected: bool = True) -> list[RankNonfinite]:
        """How each rank took part in the first NaN/Inf, in rank order (the rank
        `first_nonfinite` names first says "born at step ..." or, unwatched, "first non-finite").

        Example:
            >>> w = torch.tensor([0.0, 1.0], requires_grad=True)
            >>> watch = aw.watch(params={"w": w}); loss = w.sqrt().sum()
            >>> with watch.step(loss):
            ...     loss.backward()
            >>> group = RankWatches("r_{rank}", [Path("r_0")], [watch])
            >>> print(group.nonfinite_ranks()[0].sentence)
            rank 0: born at step 0 in its own graph, at n1 (SqrtBackward0): saved `result` has
            1 zero: the derivative of sqrt at 0 is infinite
        """
        return self._explain(expected)[0]

    def _explain(self, expected: bool) -> tuple[list[RankNonfinite], int | None]:
        firsts: list[tuple[int | None, Origin | None, str]] = []
        for w in self.watches:
            got = w.first_nonfinite(expected=expected)
            if got is None:
                firsts.append((None, None, ""))
                continue
            step, origin = got
            firsts.append((step, origin, _node_name(w, step, origin)))
        steps = [s for s, _, _ in firsts if s is not None]
        if not steps:
            return [RankNonfinite(r, None, None, "", "finite", self._finite(r, None))
                    for r in self.ranks], None  # fmt: skip
        first = min(steps)
        at_first = [r for r, (s, _, _) in enumerate(firsts) if s == first]
        score = {r: birth_evidence(firsts[r][1], firsts[r][2]) for r in at_first}
        best = max(score.values())
        chosen = next(r for r in at_first if score[r] == best)
        out: list[RankNonfinite] = []
        for r, (step, origin, name) in enumerate(firsts):
            where = _where(origin, name)
            if step is None:
                out.append(RankNonfinite(r, None, None, "", "finite", self._finite(r, first)))
            elif r == chosen:
                role: RankRole = "born" if best > 0 else "unknown"
                text = (f"born at step {step} in its own graph, {where}" if best > 0 else
                        f"first non-finite at step {step}, {where}: where it was born cannot be "
                        "told (the step was not watched, or only collectives carried it)")
                out.append(RankNonfinite(r, step, origin, name, role, f"rank {r}: {text}"))
            elif step == first and score[r] == best and best > 0:
                out.append(RankNonfinite(r, step, origin, name, "born",
                                         f"rank {r}: born at step {step} in its own graph too, "
                                         f"{where}"))  # fmt: skip
            elif step == first and origin is None:
                out.append(RankNonfinite(r, step, None, "", "unknown",
                                         f"rank {r}: non-finite at step {step} too; not watched "
                                         "then, so how it came cannot be told"))  # fmt: skip
            else:
                out.append(RankNonfinite(r, step, origin, name, "received",
                                         f"rank {r}: {_received(step, first, chosen, where)}"))
        return out, chosen

    def _finite(self, rank: int, first: int | None) -> str:
        w = self.watches[rank]
        n = len(w.records)
        upto = f"0..{n - 1}" if n else "none"
        tail = "" if first is None else f" (the run's first NaN/Inf: step {first})"
        return f"rank {rank}: its own gradients stayed finite in every step it recorded " \
               f"({upto}){tail}"

    # ----------------------------------------------------------------- divergence
    def divergence(self, keys: str | Sequence[str], *, rtol: float = 1e-5, atol: float = 0.0
                   ) -> Divergence | None:  # fmt: skip
        """The first watched step (all ranks watched it), and key in the order given, where a
        rank's value differs from rank 0's by more than `atol + rtol * max(|a|, |b|)` (NaN
        equals NaN); None when they agree everywhere.

        Args:
            keys: what must agree across ranks in this program (module docstring): parameter
                names, module paths or edge ids (their gradient norms, `Watch.series`), "loss"
                (the loss of the step) or "scale" (the loss scaler's factor).
            rtol: the relative tolerance (norms computed on different ranks may differ in the
                last bits when their reduction orders differ).
            atol: the absolute tolerance.

        Example:
            >>> def run(k):
            ...     w = aw.watch(params={"x": x}); loss = (x * k).sum()
            ...     with w.step(loss):
            ...         loss.backward()
            ...     return w
            >>> group = RankWatches("r_{rank}", [Path("r_0"), Path("r_1")], [run(3), run(4)])
            >>> d = group.divergence("x"); d.step, d.key, d.values, d.ranks
            (0, 'x', {0: 3.0, 1: 4.0}, (1,))
            >>> print(group.divergence("scale"))
            None
        """
        keys = [keys] if isinstance(keys, str) else [str(k) for k in keys]
        if not keys:
            raise ValueError("divergence(keys) needs at least one key: a parameter name, a "
                             "module path, an edge id, 'loss' or 'scale'")  # fmt: skip
        if rtol < 0 or atol < 0:
            raise ValueError(f"rtol and atol must be >= 0, got rtol={rtol}, atol={atol}")
        common = sorted(set.intersection(*(set(w.steps) for w in self.watches)))
        if not common:
            return None
        values = [_values(w, keys, common) for w in self.watches]  # rank -> step -> key -> v
        for step in common:
            for key in keys:
                base = values[0][step][key]
                differ = tuple(r for r in self.ranks[1:]
                               if not _close(values[r][step][key], base, rtol, atol))  # fmt: skip
                if differ:
                    vals = {r: values[r][step][key] for r in self.ranks}
                    shown = ", ".join(f"rank {r}: {v:.6g}" for r, v in vals.items())
                    return Divergence(step, key, vals, differ,
                                      f"ranks diverge at step {step} in {key!r}: {shown}")
        return None


def _node_name(w: Any, step: int, origin: Origin | None) -> str:
    if origin is None:
        return ""
    try:
        return w.recording(step).graph.nodes[origin.node].name
    except Exception:
        return ""


def _where(origin: Origin | None, name: str) -> str:
    if origin is None:
        return "not watched at that step"
    return f"at {origin.node} ({name or '?'}): {origin.cause}"


def _received(step: int, first: int, chosen: int, where: str) -> str:
    if step > first:
        return (f"received it through a collective: its own gradients stayed finite at step "
                f"{first}, where rank {chosen} made it; the averaged gradients (DDP's all-reduce, "
                f"FSDP's reduce-scatter) brought it into its weights, and its first non-finite "
                f"step is {step}, {where}")  # fmt: skip
    return (f"received it through a collective at step {step} (a collective of the forward or "
            f"the backward carried rank {chosen}'s NaN/Inf), {where}")


def _values(w: Any, keys: list[str], steps: list[int]) -> dict[int, dict[str, float]]:
    """step -> key -> value over the watched `steps` of watch `w`."""
    grads = [k for k in keys if k not in SCALAR_KEYS]
    table = w.table(grads) if grads else None
    row = {s: i for i, s in enumerate(w.steps)}
    out: dict[int, dict[str, float]] = {}
    for s in steps:
        vals: dict[str, float] = {}
        for k in keys:
            if k == "loss":
                vals[k] = float(w.record(s).loss)
            elif k == "scale":
                sc = w.record(s).scale
                vals[k] = math.nan if sc is None else float(sc)
            else:
                assert table is not None
                vals[k] = float(table[row[s], grads.index(k)])
        out[s] = vals
    return out


def _close(a: float, b: float, rtol: float, atol: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= atol + rtol * max(abs(a), abs(b))
