"""collapse="auto": the folds of a first render that shows at most `AUTO_ITEMS` items.

The rule (API.md, "Widget"): a graph of at most `AUTO_ITEMS` nodes shows every node. A bigger
graph with module paths folds its runs of repeated blocks first (`repeats.find_repeats`, the
outermost runs), then collapses modules from the deepest level that fits
(`folding.plan_collapsed`), counted as the visible graph will draw them. Nodes outside every
module (a graph without module paths, a loss computed after the model) that are still too many
fold their runs of repeated subgraphs (`folding.find_subgraph_runs`), the biggest first, only
as many as needed. What is left is drawn as it is: a graph with no repeated structure and no
modules (a random DAG) shows every node, and a model whose top level alone is over budget (a
model with hundreds of parameters of its own) opens as one box.

Guaranteed: deterministic; the result's `items` is the exact item count of the visible graph it
builds; at most `limit` whenever the folds described above can reach it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

from ..core.graph import BackwardGraph
from ..core.records import Node
from ..util.gcpause import gc_paused
from . import modules
from .folding import AUTO_ITEMS, RepeatedSubgraph, find_subgraph_runs, plan_collapsed
from .repeats import Repeat
from .visible import FOLD_PREFIX, VisibleGraph, fold_members, is_plumbing, visible_graph

__all__ = ["FoldPlan", "auto_folds", "node_fold_positions"]


class FoldPlan(NamedTuple):
    """What collapse="auto" folds: runs (fold key -> `Repeat` or `RepeatedSubgraph`), collapsed
    module paths, and the visible graph they give (`visible.n_items` items)."""

    folds: dict[str, Repeat | RepeatedSubgraph]
    collapsed: frozenset[str]
    visible: VisibleGraph

    @property
    def items(self) -> int:
        """How many items the first render shows."""
        return self.visible.n_items


def node_fold_positions(
    graph: BackwardGraph, folds: Mapping[str, object], index: Mapping[str, int] | None = None
) -> dict[int, str]:
    """Node position -> fold key for the `RepeatedSubgraph`s among `folds` (for `visible_graph`'s
    `node_folds`); `index`: node id -> position when the caller has it.

    Example:
        >>> xs = torch.randn(3, requires_grad=True)
        >>> gs = aw.capture(sum((xs * (i + 1)).sin() for i in range(5)).sum())
        >>> from autograd_widget.view.folding import find_subgraph_runs
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


def auto_folds(
    graph: BackwardGraph,
    runs: Callable[[], Mapping[str, Repeat]],
    *,
    limit: int = AUTO_ITEMS,
    show_plumbing: bool = True,
) -> FoldPlan:
    """The folds collapse="auto" starts with (see the module docstring for the rule).

    Args:
        graph: the graph.
        runs: returns fold key -> run of repeated blocks (`Scene.fold_index`); called only when
            the graph has more than `limit` items and module paths.
        limit: the item budget (`AUTO_ITEMS`).
        show_plumbing: whether plumbing nodes are drawn (hidden ones are no items).

    Example:
        >>> blocks = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(30)])
        >>> gb = aw.capture(blocks(torch.randn(2, 4, requires_grad=True)).sum(), model=blocks)
        >>> from autograd_widget.view.repeats import find_repeats
        >>> from autograd_widget.view.visible import fold_keys
        >>> plan = auto_folds(gb, lambda: fold_keys(find_repeats(gb)))
        >>> list(plan.folds), sorted(plan.collapsed), plan.items
        (['0–29 ×30'], [], 3)
    """
    with gc_paused():
        return _auto_folds(graph, runs, limit, show_plumbing)


def _auto_folds(
    graph: BackwardGraph, runs: Callable[[], Mapping[str, Repeat]], limit: int,
    show_plumbing: bool,
) -> FoldPlan:
    vis = visible_graph(graph, (), show_plumbing)
    if vis.n_items <= limit:
        return FoldPlan({}, frozenset(), vis)
    roots = {r for r, _ in graph.roots}

    def shown(node: Node) -> bool:
        return show_plumbing or node.id in roots or not is_plumbing(node.name)

    folds: dict[str, Repeat | RepeatedSubgraph] = {}
    collapsed: set[str] = set()
    paths = modules.module_paths(graph)
    if paths:
        # Every run, as collapse="repeats" does (a run nested in another's member is inside
        # that box until it unfolds).
        folds.update(runs())
        members = fold_members(folds)
        collapsed, estimate = plan_collapsed(graph, members, limit, shown=shown)
        vis = visible_graph(graph, collapsed, show_plumbing, folds=members)
        if vis.n_items < estimate:
            # The visible graph merged items into boxes to stay a DAG: spend what it saved.
            more, _ = plan_collapsed(graph, members, limit + estimate - vis.n_items, shown=shown)
            if more != collapsed:
                vis2 = visible_graph(graph, more, show_plumbing, folds=members)
                if vis2.n_items <= limit:
                    collapsed, vis = more, vis2
        if "" in collapsed:
            # Even the top level is over budget (a model with hundreds of ops or parameters of
            # its own): open it anyway when its repeated subgraphs fold it under the limit.
            top = {c for c in modules.children("", paths) if c not in members}
            alt = _with_subgraph_runs(graph, dict(folds), top, limit, show_plumbing, shown)
            if alt.items <= limit:
                return alt
        if vis.n_items <= limit:
            return FoldPlan(folds, frozenset(collapsed), vis)
    return _with_subgraph_runs(graph, folds, collapsed, limit, show_plumbing, shown, vis)


def _with_subgraph_runs(
    graph: BackwardGraph, folds: dict[str, Repeat | RepeatedSubgraph], collapsed: set[str],
    limit: int, show_plumbing: bool, shown: Callable[[Node], bool],
    vis: VisibleGraph | None = None,
) -> FoldPlan:
    """Fold the repeated subgraphs among the nodes drawn alone, biggest first, until it fits."""
    members = fold_members(folds)
    if vis is None:
        vis = visible_graph(graph, collapsed, show_plumbing, folds=members)
    ids = list(graph.nodes)
    lone = [ids[r] for r in vis.item_real.tolist() if r >= 0]
    taken = set(modules.module_paths(graph)) | set(folds)
    items = vis.n_items
    added = False
    for run in find_subgraph_runs(graph, lone):
        if items <= limit:
            break
        key = run.label
        while key in taken:
            key = FOLD_PREFIX + key
        taken.add(key)
        folds[key] = run
        items -= sum(1 for nid in run.node_ids if shown(graph.nodes[nid])) - 1
        added = True
    if added:
        vis = visible_graph(graph, collapsed, show_plumbing, folds=members,
                            node_folds=node_fold_positions(graph, folds))
    return FoldPlan(folds, frozenset(collapsed), vis)
