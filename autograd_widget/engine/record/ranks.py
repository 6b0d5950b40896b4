"""Every rank's file of one distributed run, read together; the rank whose own node raised.

`aw.load_recording("fail_{rank}.awrec")` (and `aw.load_watch("run_{rank}.awwatch")`, rankwatch.py)
read rank 0, 1, ... while the file exists, through `load_ranks`, which checks the files belong
together before handing any back: no file at all, a rank missing in the middle (0 and 2 present,
1 not), a file whose meta names another rank or another world size, files of different runs
(another torch, another `keep` or `every`, another model) or of different structures (another
graph, other parameters) are each a ValueError naming the file and what differs. Nothing is
returned half loaded.

`RankRecordings.first_failure()` answers the question a failed distributed backward leaves: which
rank's own node raised. The others failed inside a collective because that peer stopped (gloo's
"Connection closed by peer", NCCL's errors): `failures()` explains each of them as such
(`FailureExplanation.kind == "collective"`, naming the peer rank and its node), never as a bug
of their own.

A recording whose block raised after every node had run (DDP waits for its all-reduce at the end
of the backward, after the last node) has no failing node: its error is read from
`meta["error"]` / `meta["error_type"]` where the recorder kept them.

Guarantees: built on the public reading API of `Watch` and `Recording` (their `meta`, `graph`,
`failure`, `keys()`), not on their files' layout; reads only the files the pattern names, each
with its own loader's bounds; never changes a loaded object.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..diagnose.collective import is_collective_error
from ..diagnose.failure import FailureExplanation, explain_peer_wait

if TYPE_CHECKING:
    from .recording import Failure, Recording

__all__ = ["RANK", "RankFailure", "RankRecordings", "graph_difference", "load_ranks",
           "rank_paths"]  # fmt: skip

#: What a path names every rank's file with.
RANK = "{rank}"

T = TypeVar("T")


def rank_paths(pattern: str | os.PathLike) -> list[Path]:
    """The files of ranks 0, 1, ... of `pattern` (a path with `{rank}` in it), while they exist.

    Guarantees: a ValueError naming the pattern when no rank's file exists, and naming the
    missing file when a higher rank's file exists beyond a gap (0 and 2 present, 1 missing).

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     for r in (0, 1):
        ...         _ = open(f"{d}/run_{r}.txt", "w").close()
        ...     [p.name for p in rank_paths(d + "/run_{rank}.txt")]
        ['run_0.txt', 'run_1.txt']
    """
    text = str(os.fspath(pattern))
    if RANK not in text:
        raise ValueError(f"{text!r} has no {RANK}: it names one file, not every rank's")
    pieces = text.split(RANK)
    paths: list[Path] = []
    while Path(_fill(pieces, len(paths))).is_file():
        paths.append(Path(_fill(pieces, len(paths))))
    others = sorted(r for r in _ranks_on_disk(pieces) if r > len(paths))
    if not paths:
        seen = f" (files of ranks {others[:5]} exist)" if others else ""
        raise ValueError(
            f"no rank's file matches {text!r}: rank 0's would be {_fill(pieces, 0)}{seen}; "
            "check the folder and the name the ranks saved to"
        )
    if others:
        raise ValueError(
            f"rank {len(paths)}'s file {_fill(pieces, len(paths))} is missing, but "
            f"{_fill(pieces, others[0])} (rank {others[0]}) exists: every rank's file is needed "
            "(copy the missing one next to the others)"
        )
    return paths


def _fill(pieces: Sequence[str], rank: int) -> str:
    return str(rank).join(pieces)


def _ranks_on_disk(pieces: Sequence[str]) -> set[int]:
    """The rank numbers of the files on disk that the pattern names (for the gap check)."""
    found: set[int] = set()
    regex = re.compile(r"(\d+)".join(re.escape(p) for p in pieces[:2])
                       + "".join(r"\1" + re.escape(p) for p in pieces[2:]))  # fmt: skip
    try:
        names = glob.glob("*".join(glob.escape(p) for p in pieces))[:100_000]
    except OSError:
        return found
    for name in names:
        m = regex.fullmatch(name)
        if m and str(int(m.group(1))) == m.group(1):
            found.add(int(m.group(1)))
    return found


def load_ranks(
    pattern: str | os.PathLike,
    load_one: Callable[[Path], T],
    *,
    same: Sequence[str] = ("torch",),
    difference: Callable[[T, T], str | None] | None = None,
    what: str = "file",
) -> tuple[list[Path], list[T]]:
    """Every rank's file of `pattern`, each read by `load_one` and checked against rank 0's.

    Args:
        pattern: a path with `{rank}` in it (`rank_paths`).
        load_one: reads one file (`Watch.from_file`, `load_recording` with its limits); its
            errors propagate (they name the file).
        same: `meta` keys every rank's file must agree on (one run: the torch version, ...).
        difference: (rank 0's, rank k's) -> what differs in their structures, or None.
        what: the kind of file, for the messages ("recording", "watch").

    Guarantees: all files are read and checked before anything is returned; a ValueError names
    the file and what differs: its meta's rank is not its place in the pattern, its world size
    is not the number of files found, a `same` key or the structure differs from rank 0's.

    Example:
        >>> import tempfile
        >>> class F:  # any object with a `meta`
        ...     def __init__(self, path): self.meta = {"rank": int(path.stem[-1]), "world_size": 2}
        >>> with tempfile.TemporaryDirectory() as d:
        ...     for r in (0, 1):
        ...         _ = open(f"{d}/f_{r}", "w").close()
        ...     paths, items = load_ranks(d + "/f_{rank}", F)
        >>> [f.meta["rank"] for f in items]
        [0, 1]
    """
    paths = rank_paths(pattern)
    items = [load_one(p) for p in paths]
    world = len(paths)
    for rank, (path, item) in enumerate(zip(paths, items)):
        meta = getattr(item, "meta", None) or {}
        r, w = meta.get("rank"), meta.get("world_size")
        if isinstance(r, int) and r != rank:
            raise ValueError(
                f"{path} holds rank {r}'s {what} (its meta says rank {r} of world size {w}), "
                f"not rank {rank}'s: it was renamed, or saved without {RANK} in the path"
            )
        if isinstance(w, int) and w != world:
            missing = f"; {_fill(str(pattern).split(RANK), world)} is missing" if w > world else ""
            raise ValueError(
                f"{path} is from a run of world size {w}, but {world} rank file(s) match "
                f"{str(pattern)!r}{missing}: every file must come from the same run"
            )
        if rank == 0:
            continue
        first = getattr(items[0], "meta", None) or {}
        for key in same:
            if first.get(key) != meta.get(key):
                raise ValueError(
                    f"{path} and {paths[0]} are of different runs: {key} is "
                    f"{meta.get(key)!r} in rank {rank}'s {what}, {first.get(key)!r} in rank 0's"
                )
        why = difference(items[0], item) if difference is not None else None
        if why:
            raise ValueError(
                f"{path} and {paths[0]} are of different structures ({why}): the ranks of one "
                "program record the same graph"
            )
    return paths, items


def graph_difference(a: Any, b: Any) -> str | None:
    """The first structural difference between two recordings' graphs (rank 0's `a`, another
    rank's `b`: node types in capture order, edges, roots), or None.

    Example:
        >>> ra, rb = aw.record((x * 3).sum()), aw.record((x + 3).sum())
        >>> graph_difference(ra, rb)
        'node n1 is MulBackward0 on rank 0, AddBackward0 on this rank'
    """
    ga, gb = a.graph, b.graph
    na, nb = list(ga.nodes.values()), list(gb.nodes.values())
    for u, v in zip(na, nb):
        if u.name != v.name or u.id != v.id:
            return f"node {u.id} is {u.name} on rank 0, {v.name} on this rank"
    if len(na) != len(nb):
        return f"{len(na)} nodes on rank 0, {len(nb)} on this rank"
    ea, eb = [tuple(e) for e in ga.edges], [tuple(e) for e in gb.edges]
    if ea != eb:
        k = next((i for i, (e, f) in enumerate(zip(ea, eb)) if e != f), min(len(ea), len(eb)))
        return f"edge {k} differs ({len(ea)} edges on rank 0, {len(eb)} on this rank)"
    if list(ga.roots) != list(gb.roots):
        return f"the roots are {list(ga.roots)} on rank 0, {list(gb.roots)} on this rank"
    return None


@dataclass(frozen=True)
class RankFailure:
    """How one rank's recorded backward ended, read with the other ranks'.

    `rank`; `failure` (its `Failure`: the node that was running, or None); `error` and
    `error_type` (also for a block that raised after its last node, from its meta; "" when the
    block did not raise); `own`: True when its own code raised (not a collective waiting on a
    peer); `explanation`: why (for a rank that waited on a peer: kind "collective", `peer` the
    rank whose own node raised, `culprit` that rank's node); `sentence`: one line.

    Example:
        >>> RankFailure(0, None, "", "", False, None, "rank 0: no failure").own
        False
    """

    rank: int
    failure: Failure | None
    error: str
    error_type: str
    own: bool
    explanation: FailureExplanation | None
    sentence: str


class RankRecordings:
    """Every rank's `Recording` of one distributed backward (`aw.load_recording` with `{rank}`).

    `ranks` (0, 1, ...), `paths`, `recording(rank)`, `first_failure()`, `failures()`.

    Example:
        >>> loss = (x * 3).sum()
        >>> with aw.record(loss) as rec:
        ...     loss.backward()
        >>> group = RankRecordings("r_{rank}.awrec", [Path("r_0.awrec")], [rec])
        >>> group.ranks, group.first_failure()
        ([0], None)
    """

    def __init__(self, pattern: str, paths: Sequence[Path], recordings: Sequence[Recording]
                 ) -> None:  # fmt: skip
        self.pattern = str(pattern)
        self.paths = list(paths)
        self.recordings = list(recordings)

    @classmethod
    def load(cls, pattern: str | os.PathLike, load_one: Callable[[Path], Recording]
             ) -> RankRecordings:  # fmt: skip
        """Every rank's recording of `pattern`, checked (`load_ranks`): one run (torch version,
        `keep`), the same graph.

        Example:
            >>> RankRecordings.load("none_{rank}.awrec", aw.load_recording)
            Traceback (most recent call last):
            ValueError: no rank's file matches 'none_{rank}.awrec': rank 0's would be ...
        """
        paths, recs = load_ranks(pattern, load_one, same=("torch", "keep"),
                                 difference=graph_difference, what="recording")  # fmt: skip
        return cls(str(pattern), paths, recs)

    def __repr__(self) -> str:
        first = self.first_failure()
        tail = f", rank {first[0]} failed at {first[1].node}" if first else ""
        return f"<RankRecordings {len(self.paths)} ranks of {self.pattern!r}{tail}>"

    def __len__(self) -> int:
        return len(self.recordings)

    @property
    def ranks(self) -> list[int]:
        """The ranks read: 0, 1, ..., world size - 1."""
        return list(range(len(self.recordings)))

    def recording(self, rank: int) -> Recording:
        """Rank `rank`'s `Recording` (KeyError naming the ranks otherwise).

        Example:
            >>> loss = (x * 3).sum(); rec = aw.record(loss)
            >>> RankRecordings("r_{rank}", [Path("r_0")], [rec]).recording(0) is rec
            True
        """
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < len(self):
            raise KeyError(f"no rank {rank!r}: these recordings are of ranks 0..{len(self) - 1}")
        return self.recordings[rank]

    def failures(self) -> list[RankFailure]:
        """How each rank's backward ended, in rank order: its own node raised (`own`), it
        failed in a collective waiting on the peer that did (`explanation.kind ==
        "collective"`, `explanation.peer`), or it did not fail.

        Example:
            >>> loss = (x * 3).sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> RankRecordings("r_{rank}", [Path("r_0")], [rec]).failures()[0].sentence
            'rank 0: its backward ran to the end'
        """
        raw = [_ended(r, rec) for r, rec in enumerate(self.recordings)]
        own = [f for f in raw if f.own and f.failure is not None]
        peer = own[0] if own else None
        out: list[RankFailure] = []
        for f in raw:
            if f.error and not f.own:
                node = f.failure.node if f.failure is not None else ""
                name = self._name(f.rank, node)
                why = explain_peer_wait(
                    node, name, f.error, None if peer is None else peer.rank,
                    peer.failure.node if peer and peer.failure else None,
                    self._name(peer.rank, peer.failure.node) if peer and peer.failure else None,
                    peer.error if peer else "",
                )  # fmt: skip
                f = RankFailure(f.rank, f.failure, f.error, f.error_type, False, why,
                                f"rank {f.rank}: {why.sentence}")  # fmt: skip
            out.append(f)
        return out

    def first_failure(self) -> tuple[int, Failure] | None:
        """(rank, its `Failure`) of the rank whose own node raised (the lowest such rank when
        several did); where every failing rank failed inside a collective (the rank that
        stopped first left no failure in these files), the lowest failing rank; None when no
        rank's recording failed at a node.

        Example:
            >>> loss = (x * 3).sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> print(RankRecordings("r_{rank}", [Path("r_0")], [rec]).first_failure())
            None
        """
        ends = [f for f in self.failures() if f.failure is not None]
        own = [f for f in ends if f.own]
        pick = (own or ends or [None])[0]
        return None if pick is None or pick.failure is None else (pick.rank, pick.failure)

    def _name(self, rank: int, node: str) -> str:
        try:
            return self.recordings[rank].graph.nodes[node].name if node else ""
        except Exception:
            return "?"


def _ended(rank: int, rec: Any) -> RankFailure:
    """How rank `rank`'s recording ended, before the others are looked at."""
    f = rec.failure
    meta = getattr(rec, "meta", None) or {}
    if f is not None:
        error, etype = f.error, f.error_type
    else:
        error, etype = str(meta.get("error") or ""), str(meta.get("error_type") or "")
    if not error and f is None:
        return RankFailure(rank, None, "", "", False, None,
                           f"rank {rank}: its backward ran to the end")  # fmt: skip
    why = f.explanation if f is not None else None
    collective = is_collective_error(error, etype) or (why is not None and why.kind == "collective")
    if collective:
        return RankFailure(rank, f, error, etype, False, why,
                           f"rank {rank}: failed in a collective")  # fmt: skip
    where = f"{f.node} ({rec.graph.nodes[f.node].name})" if f is not None else "its backward"
    sentence = why.sentence if why is not None else f"{where} raised: {_first(error)}"
    return RankFailure(rank, f, error, etype, True, why, f"rank {rank}: {sentence}")


def _first(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""
