"""`aw.explore(group)` of every rank's files: the rank selector's payload and the rank switch.

A group (`aw.load_watch("run_{rank}.awwatch")` -> `RankWatches`, `aw.load_recording(
"x_{rank}.awrec")` -> `RankRecordings`) explores as ONE rank's usual view (a watch's timeline
above its step's graph, or a recording's replay) plus a rank selector. The widget (widget.py)
syncs:
- `ranks`: one line per rank (`view.ranklines.rank_lines`: label, detail, role), set once;
- `rank`: the rank shown; it opens on the rank that matters (`view.ranklines.opening_rank`).

The front-end (js/src/ranks.js) sends "select_rank" {rank}; `select_rank` (Python) and setting
`widget.rank` do the same: `show_rank` swaps the run behind the session and redraws. For a watch
group, the session's watch becomes that rank's (its timeline is sent anew, its opening step is
shown: the first non-finite watched step, else the last); for a recording group, that rank's
recording is replayed from step 0 in a fresh scene (same collapse mode, orientation and
plumbing).

The message's validator and handler are its `Handler`, `SELECT_RANK` (message.py), which
protocol.py's one table names "select_rank".

Guarantees: a refused switch (no group, not a rank, a rank whose watch has no watched step, a
released widget) changes nothing; the old run's stepper is closed; the group's objects are only
read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..engine.record.ranks import RankRecordings
from ..engine.record.recorder import empty_notice
from ..engine.record.replay import Replay
from ..engine.watch.rankwatch import RankWatches
from ..view.ranklines import opening_rank, rank_lines
from ..view.scene import Scene
from ..view.timeline import first_nonfinite
from .message import Handler, Invalid
from .quoting import quote
from .trainpayload import timeline_payload

if TYPE_CHECKING:
    from ..engine.record.recording import Recording
    from ..engine.watch.watch import Watch
    from .session import Session

__all__ = [
    "SELECT_RANK",
    "Group",
    "RankSelection",
    "group_of",
    "member",
    "opening_step",
    "rank_refusal",
    "select_rank",
    "show_rank",
]

#: A rank group: every rank's watch files, or every rank's recordings.
Group = RankWatches | RankRecordings


def group_of(obj: Any, compare_to: Any = None) -> Group | None:
    """`obj` when it is a rank group (what `aw.explore(obj)` then shows rank by rank), else None.

    Example:
        >>> group_of(x) is None
        True
    """
    if not isinstance(obj, RankWatches | RankRecordings):
        return None
    if compare_to is not None:
        raise TypeError("compare_to compares two recordings; a rank group already shows every "
                        "rank: aw.explore(group), or aw.side_by_side(group.recording(0), "
                        "group.recording(1))")  # fmt: skip
    return obj


def member(group: Group, rank: int | None = None) -> Watch | Recording:
    """Rank `rank`'s watch (a `RankWatches`) or recording (a `RankRecordings`); None: the rank
    the group opens on (`view.ranklines.opening_rank`: where it broke).

    Example:
        >>> from pathlib import Path
        >>> rec = aw.record((x * 3).sum())
        >>> member(aw.RankRecordings("r_{rank}", [Path("r_0")], [rec]), 0) is rec
        True
    """
    rank = opening_rank(group) if rank is None else rank
    return group.watch(rank) if isinstance(group, RankWatches) else group.recording(rank)


def opening_step(watch: Watch) -> int:
    """The watched step a watch opens on: its first non-finite step where it was watched, else
    its last watched step (as `aw.explore(watch)` does).

    Example:
        >>> w = aw.watch(); loss = (x * 3).sum()
        >>> for _ in range(2):
        ...     with w.step(loss):
        ...         loss.backward(retain_graph=True)
        >>> opening_step(w)
        1
    """
    first = first_nonfinite(watch)
    return first["step"] if first and first["watched"] else watch.steps[-1]


def attach(session: Session, group: Group) -> list[dict[str, Any]]:
    """Mark `session` (built on `member(group)`, the rank the group opens on) as showing `group`;
    return the `ranks` payload.

    Example:
        >>> from pathlib import Path
        >>> from autograd_widget.wire.session import Session
        >>> rec = aw.record((x * 3).sum()); rp = aw.Replay(rec)
        >>> session = Session(rec.graph, rp, Scene(rec.graph, rp))
        >>> attach(session, aw.RankRecordings("r_{rank}", [Path("r_0")], [rec]))[0]["label"]
        'rank 0: ran to the end'
    """
    session.rank_group, session.rank = group, opening_rank(group)
    return [line.as_dict() for line in rank_lines(group)]


def rank_refusal(session: Session, rank: Any) -> str | None:
    """Why rank `rank` cannot be shown in `session` (None: it can).

    Example:
        >>> from autograd_widget.wire.session import Session
        >>> rank_refusal(Session(g, st, Scene(g, st)), 1)
        "this widget shows no rank group: aw.explore(aw.load_watch('run_{rank}.awwatch')) ..."
    """
    group = session.rank_group
    if group is None:
        return ("this widget shows no rank group: aw.explore(aw.load_watch('run_{rank}.awwatch')) "
                "or aw.explore(aw.load_recording('x_{rank}.awrec')) shows every rank")
    if session.released:
        return "this widget was released (widget.release()): aw.explore(group) again"
    if isinstance(rank, bool) or not isinstance(rank, int) or rank not in group.ranks:
        return f"select_rank: {quote(rank)} is not a rank of this run (ranks 0..{len(group) - 1})"
    if isinstance(group, RankWatches) and not group.watch(rank).steps:
        return f"select_rank: rank {rank}'s watch has no watched step to show"
    return None


def show_rank(session: Session, rank: int | None) -> None:
    """Show rank `rank`'s run in `session` (module docstring); a ValueError naming the ranks when
    it cannot (None, or anything that is not a rank of the group: nothing changed then). The
    same rank again changes nothing.

    Example:
        >>> from pathlib import Path
        >>> from autograd_widget.wire.session import Session
        >>> loss = (x * 3).sum()
        >>> recs = [aw.record(loss), aw.record(loss)]
        >>> rp = aw.Replay(recs[0]); session = Session(recs[0].graph, rp, Scene(recs[0].graph, rp))
        >>> _ = attach(session, aw.RankRecordings("r_{rank}", [Path("r_0"), Path("r_1")], recs))
        >>> show_rank(session, 1); session.rank, session.stepper.recording is recs[1]
        (1, True)
    """
    why = rank_refusal(session, rank)
    if why is not None:
        raise ValueError(why)
    group = session.rank_group
    assert group is not None and rank is not None  # rank_refusal refused both
    if rank == session.rank:
        return
    show = getattr(session.front, "show_rank", None)
    if isinstance(group, RankWatches):
        watch = group.watch(rank)
        step = opening_step(watch)
        timeline = timeline_payload(watch, step)  # read before anything changes
        session.watch, session.rank = watch, rank
        if show is not None:  # its timeline first: the step's graph follows
            show(rank, None, timeline)
        session.show_step(step)
        return
    rec = group.recording(rank)
    stepper = Replay(rec)
    old = session.scene
    scene = Scene(rec.graph, stepper, collapse=session.collapse, orientation=old.orientation,
                  show_plumbing=old.show_plumbing)  # fmt: skip
    session.replace(rec.graph, stepper, scene, empty_notice(rec))
    session.rank = rank  # before the front shows it: the widget's `rank` trait then agrees
    if show is not None:
        show(rank, stepper, None)
    session.redraw()


def _v_select_rank(session: Session, msg: dict[str, Any]) -> int:
    """The rank to show; `Invalid` with `rank_refusal`'s reason when it cannot be."""
    rank = msg.get("rank")
    why = rank_refusal(session, rank)
    if why is not None:
        raise Invalid(why)
    assert isinstance(rank, int)  # rank_refusal refused anything but a rank of the group
    return rank


def select_rank(session: Session, rank: int) -> None:
    """The "select_rank" message's handler: `show_rank`.

    Example:
        >>> from autograd_widget.wire.session import Session
        >>> select_rank(Session(g, st, Scene(g, st)), 0)
        Traceback (most recent call last):
        ValueError: this widget shows no rank group: ...
    """
    show_rank(session, rank)


#: "select_rank" {rank}: show that rank's run (the rank selector, js/src/ranks.js).
SELECT_RANK = Handler(_v_select_rank, select_rank)


class RankSelection:
    """What `aw.explore(group)` adds to the widget's public API (widget.py mixes it in):
    `rank_group` (the `RankWatches` / `RankRecordings` shown, None for anything else) and
    `select_rank(r)`. The synced `rank` and `ranks` traits are declared by the widget."""

    #: The group of every rank's files this widget shows (`aw.explore(group)`), else None.
    rank_group: Group | None = None
    rank: int | None

    def select_rank(self, rank: int) -> None:
        """Show rank `rank`: its watch's timeline and graph (opening on its first non-finite
        watched step, else its last), or its recording's replay from step 0. The same as
        setting `widget.rank`; a ValueError naming the ranks for anything else.

        Example:
            >>> from pathlib import Path
            >>> loss = (x * 3).sum()
            >>> recs = [aw.record(loss), aw.record(loss)]
            >>> w = aw.explore(aw.RankRecordings("r_{rank}", [Path("r_0"), Path("r_1")], recs))
            >>> w.rank, [r["label"] for r in w.ranks]
            (0, ['rank 0: ran to the end', 'rank 1: ran to the end'])
            >>> w.select_rank(1); w.rank, w.stepper.recording is recs[1]
            (1, True)
        """
        self.rank = rank
