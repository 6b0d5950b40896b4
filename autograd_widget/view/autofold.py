"""collapse="auto" and orientation="auto": THE one owner of what the first render folds.

The rule (docs/drawing.md, "The whole model at first sight"): the first render shows the WHOLE
graph at a legible scale in the pixels the drawing has (`fitrule`: the layout's extent at
`LEGIBLE_PPU` inside the drawing).
Foldable groups are folded from the finest drawing to the coarsest until one fits:

- F0: nothing folded (a graph that fits as it is shows every node);
- F1: every run folded: runs of repeated blocks (`repeats.find_repeats`, "layers.0–5 ×6") and
  runs of repeated subgraphs among the nodes left alone (`folding.find_subgraph_runs`, an RNN
  unrolled in plain torch); a new kind of foldable group (a compiled region) is one more run;
- then modules from the deepest level up: level L collapses the outermost modules at depth >= L,
  looking through the modules that must stay open (those holding a folded run, whose box they
  would swallow, and those the user opened);
- the coarsest: every top-level module one box (a module holding a run too);
- between the finest level that fits and the next finer one, the modules of that level are
  opened one by one, fewest nodes first, while it still fits.

One pass over these candidates: the one drawing that fits is found by bisection (a finer
candidate is never smaller), each candidate measured by its real layout (`placement`), laid out
through the Scene's `ClusterLayouter`, whose per-module cache makes a candidate that differs in a
few modules cost only those. A candidate that cannot fit by area alone (more items than the
drawing has room for) is never laid out. When even the coarsest (the model's top level) does not
fit, it is drawn anyway and Fit shows the legible part around the next node (js/src/camera.js).

Orientation "auto": each candidate is laid out top-to-bottom and left-to-right, and the one
that shows it at the larger scale wins (Fit's scale: both at `MAX_FIT_PPU` is a tie, which
top-to-bottom wins). The user's own folds and unfolds (`Pins`) are kept:
a module or run the user opened is never folded, one the user folded stays folded.

Guaranteed: deterministic (same graph, viewport, pins: same plan); the plan's `visible` and
`layout` are the ones its folds give (the Scene draws them as they are).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from ..core.graph import BackwardGraph
from ..util.gcpause import gc_paused
from . import modules
from .clusters import ClusterLayout, ClusterLayouter
from .fitrule import LEGIBLE_PPU, MAX_FIT_PPU, Viewport, fit_scale
from .folding import RepeatedSubgraph, find_subgraph_runs
from .placement import scene_layout
from .repeats import Repeat
from .visible import FOLD_PREFIX, VisibleGraph, fold_members, visible_graph

__all__ = ["MIN_ITEM_AREA", "FoldPlan", "Pins", "choose_folds", "node_fold_positions"]

#: The least room (layout units squared) an item takes in a layout: a 3-character box with its
#: gaps. A candidate with more items than the drawing has room for is not laid out.
MIN_ITEM_AREA = 5.0

Run = Repeat | RepeatedSubgraph


class FoldPlan(NamedTuple):
    """A drawing collapse="auto" may show: runs folded (fold key -> run), modules collapsed,
    the visible graph and layout they give, and the Fit scale of that layout (`fitrule`)."""

    folds: dict[str, Run]
    collapsed: frozenset[str]
    visible: VisibleGraph
    layout: ClusterLayout
    scale: float

    @property
    def items(self) -> int:
        """How many items it shows."""
        return self.visible.n_items

    @property
    def fits(self) -> bool:
        """Whether the whole drawing is legible at Fit."""
        return self.scale >= LEGIBLE_PPU

    @property
    def orientation(self) -> str:
        """"TB" or "LR": the layout's direction."""
        return self.layout.orientation


@dataclass(frozen=True)
class Pins:
    """The user's own folds: module paths and fold keys opened (never folded again) and closed
    (kept folded)."""

    opened: frozenset[str] = field(default_factory=frozenset)
    closed: frozenset[str] = field(default_factory=frozenset)


def node_fold_positions(
    graph: BackwardGraph, folds: Mapping[str, object], index: Mapping[str, int] | None = None
) -> dict[int, str]:
    """Node position -> fold key for the `RepeatedSubgraph`s among `folds` (for `visible_graph`'s
    `node_folds`); `index`: node id -> position when the caller has it.

    Example:
        >>> xs = torch.randn(3, requires_grad=True)
        >>> gs = aw.capture(sum((xs * (i + 1)).sin() for i in range(5)).sum())
        >>> run = find_subgraph_runs(gs)[0]
        >>> len(node_fold_positions(gs, {run.label: run})) == len(run.node_ids)
        True
    """
    runs = [(k, r) for k, r in folds.items() if isinstance(r, RepeatedSubgraph)]
    if not runs:
        return {}
    if index is None:
        index = {nid: i for i, nid in enumerate(graph.nodes)}
    return {index[nid]: key for key, r in runs for nid in r.node_ids}


def choose_folds(
    graph: BackwardGraph,
    runs: Callable[[], Mapping[str, Repeat]],
    viewport: Viewport,
    *,
    orientation: str = "auto",
    show_plumbing: bool = True,
    layouter: ClusterLayouter | None = None,
    pins: Pins | None = None,
    fixed: tuple[Mapping[str, Run], frozenset[str]] | None = None,
) -> FoldPlan:
    """The drawing collapse="auto" shows in `viewport` (see the module docstring for the rule).

    Args:
        graph: the graph.
        runs: returns fold key -> run of repeated blocks (`Scene.fold_index`); called only when
            the graph has module paths and does not fit unfolded.
        viewport: the drawing's size in px.
        orientation: "auto" (the direction that shows the drawing larger), "TB" or "LR".
        show_plumbing: whether plumbing nodes are drawn.
        layouter: the layout cache to use (the Scene's); a fresh one by default.
        pins: the user's own folds and unfolds, kept.
        fixed: (folds, collapsed) to lay out as they are (only the orientation is chosen), for
            collapse modes other than "auto".

    Example:
        >>> blocks = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(30)])
        >>> gb = aw.capture(blocks(torch.randn(2, 4, requires_grad=True)).sum(), model=blocks)
        >>> from autograd_widget.view.repeats import find_repeats
        >>> from autograd_widget.view.visible import fold_keys
        >>> plan = choose_folds(gb, lambda: fold_keys(find_repeats(gb)), Viewport(800, 450))
        >>> list(plan.folds), sorted(plan.collapsed), plan.items, plan.fits
        (['0–29 ×30'], [], 3, True)
    """
    if orientation not in ("auto", "TB", "LR"):
        raise ValueError(f"orientation must be 'auto', 'TB' or 'LR', got {orientation!r}")
    with gc_paused():
        chooser = _Chooser(graph, viewport, orientation, show_plumbing,
                           layouter or ClusterLayouter())
        if fixed is not None:
            return chooser.measure(dict(fixed[0]), frozenset(fixed[1]), force=True)
        return chooser.choose(runs, pins or Pins())


class _Chooser:
    """One choice: candidates measured once each (by layout), in one pass."""

    def __init__(self, graph: BackwardGraph, viewport: Viewport, orientation: str,
                 show_plumbing: bool, layouter: ClusterLayouter) -> None:
        self.graph = graph
        self.viewport = viewport
        self.orientations = ("TB", "LR") if orientation == "auto" else (orientation,)
        self.show_plumbing = show_plumbing
        self.layouter = layouter
        self.index = {nid: i for i, nid in enumerate(graph.nodes)}
        self.paths = modules.module_paths(graph)
        self.seen: dict[tuple, FoldPlan] = {}
        vw, vh = viewport.width / LEGIBLE_PPU, viewport.height / LEGIBLE_PPU
        self.room = vw * vh

    # ----------------------------------------------------------------- measuring
    def visible(self, folds: Mapping[str, Run], collapsed: frozenset[str]) -> VisibleGraph:
        return visible_graph(
            self.graph, collapsed, self.show_plumbing, folds=fold_members(folds),
            node_folds=node_fold_positions(self.graph, folds, self.index),
        )

    def measure(self, folds: dict[str, Run], collapsed: frozenset[str],
                force: bool = False) -> FoldPlan:
        """The plan of these folds, laid out in each orientation allowed (the larger scale
        wins); a candidate too big by area alone is laid out only when `force`d."""
        key = (tuple(sorted(folds)), collapsed)
        hit = self.seen.get(key)
        if hit is not None and (hit.layout is not None or not force):
            return hit
        vis = self.visible(folds, collapsed)
        best: FoldPlan | None = None
        if force or vis.n_items * MIN_ITEM_AREA <= self.room:
            for o in self.orientations:
                lay = scene_layout(self.graph, vis, o, folds=folds, layouter=self.layouter)
                b = lay.bounds
                s = fit_scale(b[1] - b[0], b[3] - b[2], self.viewport)
                # the scale Fit shows is capped: both at the cap is a tie, and TB wins it
                if best is None or min(s, MAX_FIT_PPU) > min(best.scale, MAX_FIT_PPU) + 1e-9:
                    best = FoldPlan(folds, collapsed, vis, lay, s)
        if best is None:  # cannot fit: no layout yet (made if it is chosen after all)
            best = FoldPlan(folds, collapsed, vis, None, 0.0)  # type: ignore[arg-type]
        self.seen[key] = best
        return best

    def finish(self, plan: FoldPlan) -> FoldPlan:
        return plan if plan.layout is not None else self.measure(
            plan.folds, plan.collapsed, force=True)

    # ----------------------------------------------------------------- candidates
    def choose(self, runs: Callable[[], Mapping[str, Repeat]], pins: Pins) -> FoldPlan:
        paths = set(self.paths)
        closed_mods = frozenset(p for p in pins.closed if p in paths)
        known: dict[str, Run] = dict(runs()) if pins.closed - paths else {}
        closed_runs = {k: known[k] for k in pins.closed if k in known}
        f0 = self.measure(dict(closed_runs), closed_mods)
        if f0.fits:
            return f0
        # F1: every run folded but those the user opened.
        if not known:
            known = dict(runs())
        folds: dict[str, Run] = {k: r for k, r in known.items() if k not in pins.opened}
        folds.update(self._subgraph_runs(folds, closed_mods, pins))
        members = fold_members(folds)
        cands = [(folds, closed_mods)]
        for cl in self._levels(members, pins, closed_mods):
            if cl != cands[-1][1]:
                cands.append((folds, cl))
        # The coarsest: the model's top-level modules as boxes, even those holding a run.
        top = self._top_level(pins, closed_mods)
        if top is not None and (top != cands[-1][1] or folds):
            kept = {k: r for k, r in known.items() if k in pins.closed}
            # (only when no finer: top-level blocks of a run may be more items than its box)
            if self.visible(kept, top).n_items <= self.visible(*cands[-1]).n_items:
                cands.append((kept, top))
        plans: dict[int, FoldPlan] = {}

        def at(i: int) -> FoldPlan:
            if i not in plans:
                plans[i] = self.measure(cands[i][0], cands[i][1])
            return plans[i]

        last = len(cands) - 1
        if not at(last).fits:
            return self.finish(at(last))  # even the top level does not fit: Fit falls back
        lo, hi = 0, last
        while lo < hi:
            mid = (lo + hi) // 2
            if at(mid).fits:
                hi = mid
            else:
                lo = mid + 1
        best = at(lo)
        if lo > 0:
            best = self._refine(cands[lo - 1][1], best)
        return self.finish(best)

    def _subgraph_runs(self, folds: Mapping[str, Run], closed: frozenset[str],
                       pins: Pins) -> dict[str, Run]:
        """Runs of repeated subgraphs among the nodes the other folds leave alone."""
        vis = self.visible(folds, closed)
        ids = list(self.graph.nodes)
        lone = [ids[r] for r in vis.item_real.tolist() if r >= 0]
        taken = set(self.paths) | set(folds)
        out: dict[str, Run] = {}
        for run in find_subgraph_runs(self.graph, lone):
            key = run.label
            while key in taken:
                key = FOLD_PREFIX + key
            taken.add(key)
            if key not in pins.opened:
                out[key] = run
        return out

    def _levels(self, members: Mapping[str, str], pins: Pins,
                closed: frozenset[str]) -> list[frozenset[str]]:
        """Collapsed modules of each level, finest (the deepest modules) first."""
        paths = self.paths
        if not paths:
            return []
        keep_open: set[str] = {""}
        for p in [*members, *(q for q in pins.opened if q in set(paths))]:
            a = p if p not in members else modules.parent(p)
            while True:
                keep_open.add(a)
                if not a:
                    break
                a = modules.parent(a)

        def hidden(p: str) -> bool:
            """Inside a folded run's box, or under a module the user collapsed."""
            a = p
            while True:
                if a in members or (a != p and a in closed):
                    return True
                if not a:
                    return False
                a = modules.parent(a)

        depth = {p: p.count(".") + 1 if p else 0 for p in paths}
        deepest = max(depth.values())
        out: list[frozenset[str]] = []
        for level in range(deepest, 0, -1):
            chosen = set(closed)
            for p in paths:  # sorted: a module before everything under it
                if depth[p] < level or p in keep_open or hidden(p) or p in chosen:
                    continue
                a = modules.parent(p)
                under = False
                while a:
                    if a in chosen:
                        under = True
                        break
                    a = modules.parent(a)
                if not under:
                    chosen.add(p)
            out.append(frozenset(chosen))
        return out

    def _top_level(self, pins: Pins, closed: frozenset[str]) -> frozenset[str] | None:
        """Every top-level module collapsed (but those the user opened: their children
        instead), None without modules."""
        if not self.paths:
            return None
        paths = set(self.paths)
        # every path holding an opened one (itself included): set look-ups, not a scan of the
        # opened paths per module, nor of `out` (modules x modules on a model of many)
        holds_opened: set[str] = set()
        for q in pins.opened:
            if q in paths:
                holds_opened.update(_self_and_ancestors(q))
        out = set(closed)
        todo = modules.children("", self.paths)
        while todo:
            p = todo.pop()
            if p in holds_opened:
                todo += modules.children(p, self.paths)
            elif not any(a in out for a in _self_and_ancestors(p)):
                out.add(p)
        return frozenset(out)

    def _refine(self, finer: frozenset[str], fits: FoldPlan) -> FoldPlan:
        """Open the modules `fits` collapses but `finer` opens, fewest nodes first, as many as
        still fit (bisection on how many)."""
        size: dict[str, int] = {}
        for node in self.graph.nodes.values():
            m = node.module
            while m is not None:
                size[m] = size.get(m, 0) + 1
                if not m:
                    break
                m = modules.parent(m)
        opening = sorted(fits.collapsed - finer, key=lambda p: (size.get(p, 0), p))
        if len(opening) < 2:
            return fits

        def state(k: int) -> frozenset[str]:
            opened = opening[:k]
            under = {c for c in finer
                     if any(modules.in_group(c, o) and c != o for o in opened)}
            return frozenset((fits.collapsed - set(opened)) | under)

        lo, hi = 0, len(opening) - 1  # opening all of them is `finer`, which does not fit
        best = fits
        while lo < hi:
            mid = (lo + hi + 1) // 2
            plan = self.measure(fits.folds, state(mid))
            if plan.fits:
                lo, best = mid, plan
            else:
                hi = mid - 1
        return best


def _self_and_ancestors(path: str) -> list[str]:
    """`path`, every module path holding it (its dotted prefixes) and "" (the model): the
    groups `path` is in (`modules.in_group`), for set look-ups."""
    out = ["", path]
    cut = path.find(".")
    while cut >= 0:
        out.append(path[:cut])
        cut = path.find(".", cut + 1)
    return out
