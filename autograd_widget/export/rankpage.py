"""The standalone page of `aw.explore(group)`: every rank's run in one page, with the selector.

A rank group's widget (wire/rankswitch.py) shows one rank at a time; its page (html.py
`walkthrough`, `save_html`) is that rank's walkthrough plus `ranks`: the selector's lines (the
widget's `ranks` trait), the rank the page opens on, the group's pattern and one walkthrough per
other rank (js/src/ranks.js swaps them in the page, with no kernel). Each other rank is walked
exactly as a widget of that rank alone would be (`RankExport`: its recording, or its watch's
opening step with the watch's timeline), through the same `walkthrough` (passed in by html.py,
which imports this module).

Size: each rank's walkthrough is a page's worth of data; past `MAX_PAGE_RANKS` ranks the page
carries the opening rank and the lowest others, and says which ranks it holds and how to see
the rest (`aw.explore(aw.load_watch(pattern))` in a notebook).

Guarantees: the widget and the group are only read (their public API); each other rank's
replay is closed once walked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..engine.record.ranks import graph_difference
from ..engine.record.replay import Replay
from ..engine.watch.rankwatch import RankWatches
from ..wire.rankswitch import opening_step

__all__ = ["MAX_PAGE_RANKS", "RankExport", "carried_ranks", "rank_pages"]

#: The most ranks one page carries (each is a walkthrough of its own).
MAX_PAGE_RANKS = 16


@dataclass
class RankExport:
    """One other rank of a group's widget, as `walkthrough` reads a widget: its graph, a replay
    of its run, the widget's height, orientation and plumbing, the widget's folds where the
    rank's graph has the same structure (else None: folded for the page, as a new widget
    would), and its watch and step (a watch group).

    Example:
        >>> loss = (x * 3).sum(); rec = aw.record(loss)
        >>> RankExport(rec.graph, aw.Replay(rec), None, "TB", True, None, None).compared
        ''
    """

    graph: Any
    stepper: Any
    height: int | None
    drawn_orientation: str
    show_plumbing: bool
    collapsed: list[str] | None
    folds: dict[str, Any] | None
    watch: Any = None
    watch_step: int | None = None
    compared: str = field(default="")


def carried_ranks(world: int, opening: int, cap: int = MAX_PAGE_RANKS) -> list[int]:
    """The ranks a page carries: all of them up to `cap`; else the opening rank and the lowest
    others, `cap` in all, in rank order.

    Example:
        >>> carried_ranks(3, 1), carried_ranks(40, 30, cap=4)
        ([0, 1, 2], [0, 1, 2, 30])
    """
    if world <= cap:
        return list(range(world))
    others = [r for r in range(world) if r != opening][: max(cap - 1, 0)]
    return sorted([opening, *others])


def _export(widget: Any, group: Any, rank: int) -> RankExport:
    """Rank `rank` of `group`, as its own widget would show it, folded as `widget` where the
    structures agree."""
    watch, step = None, None
    if isinstance(group, RankWatches):
        watch = group.watch(rank)
        step = opening_step(watch)
        rec = watch.recording(step)
    else:
        rec = group.recording(rank)
    same = graph_difference(rec, widget) is None
    return RankExport(rec.graph, Replay(rec), widget.height, widget.drawn_orientation,
                      widget.show_plumbing, list(widget.collapsed) if same else None,
                      dict(widget.folds) if same else None, watch, step)  # fmt: skip


def rank_pages(widget: Any, walk_one: Callable[[RankExport], dict[str, Any]]) -> dict[str, Any]:
    """The `ranks` part of a group widget's walkthrough: {"lines": the widget's `ranks`,
    "selected": the rank the page opens on (the widget's own walkthrough), "pattern", "world",
    "carried": the ranks the page holds, "walks": rank (as text) -> walkthrough of each other
    carried rank (`walk_one` of its `RankExport`), "kind": "watch" or "recording"}.

    Example:
        >>> from pathlib import Path
        >>> loss = (x * 3).sum(); recs = [aw.record(loss), aw.record(loss)]
        >>> w = aw.explore(aw.RankRecordings("r_{rank}.awrec", [Path("r_0"), Path("r_1")], recs))
        >>> pages = rank_pages(w, lambda one: {"nodes": len(one.graph.nodes)})
        >>> pages["selected"], pages["carried"], pages["walks"]
        (0, [0, 1], {'1': {'nodes': 3}})
    """
    group, selected = widget.rank_group, widget.rank
    carried = carried_ranks(len(group), selected)
    walks: dict[str, Any] = {}
    for rank in carried:
        if rank == selected:
            continue
        one = _export(widget, group, rank)
        try:
            walks[str(rank)] = walk_one(one)
        finally:
            one.stepper.close()
    kind = "watch" if isinstance(group, RankWatches) else "recording"
    return {"lines": list(widget.ranks), "selected": selected, "pattern": group.pattern,
            "world": len(group), "carried": carried, "walks": walks, "kind": kind}  # fmt: skip
