"""From a visible graph to its cluster layout: item sizes, clusters, keys, titles.

`clusters.ClusterLayouter` knows nothing of graphs; this module says, for the items of a
`VisibleGraph`, how big each box is (its label's length: a box must hold its text at the size
the front-end writes it), which module frame holds it, which items are leaves that may be drawn
beside each consumer, and which names stay stable across re-layouts (node ids; ``m:<path>`` for
a module, the same whether it is folded into a box or unfolded into a frame, so its parent's
arrangement is reused). Pure: graph records only, no torch.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from ..util.gcpause import gc_paused
from .clusters import ClusterLayout, ClusterLayouter
from .labels import module_title, run_title, short_label
from .modules import module_paths, parent
from .visible import is_plumbing

if TYPE_CHECKING:
    from ..core.graph import BackwardGraph
    from .repeats import Repeat
    from .visible import VisibleGraph

__all__ = ["CHAR_W", "compact_modules", "item_sizes", "item_titles", "scene_layout"]

#: Width of one label character, in layout units (one unit = one line of label text).
CHAR_W = 0.62
_PAD_W = 1.2  # a box's text margin, left and right together
_LINE_H = 1.0
_PAD_H = 0.5


def _box(lines: list[str]) -> tuple[float, float]:
    chars = max(3, *(len(t) for t in lines))
    return chars * CHAR_W + _PAD_W, len(lines) * _LINE_H + _PAD_H


_compact: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def compact_modules(graph: BackwardGraph) -> dict[str, int]:
    """Module path -> position (in `graph.nodes`) of its one op, for every module drawn as one
    titled box rather than a frame: a module with no submodule whose graph is a single op, or
    one op plus plumbing (views, transposes), parameters aside ("flat · Flatten" over "View",
    "fc · Linear" over "Addmm" with its "T" and parameters beside it). Cached per graph.

    Example:
        >>> gm = aw.capture(model(torch.randn(5, 4)).sum(), model=model)
        >>> sorted(compact_modules(gm))  # two Linear layers: Addmm (+ T) each
        ['0', '2']
    """
    hit = _compact.get(graph)
    if hit is not None:
        return hit
    paths = module_paths(graph)
    inner = {parent(p) for p in paths if p}
    ops: dict[str, list[int]] = {}
    plumbing: dict[str, list[int]] = {}
    for i, node in enumerate(graph.nodes.values()):
        m = node.module
        if not m or m in inner or node.kind == "accumulate_grad":
            continue
        (plumbing if is_plumbing(node.name) else ops).setdefault(m, []).append(i)
    out: dict[str, int] = {}
    for m in set(ops) | set(plumbing):
        main = ops.get(m, [])
        if len(main) == 1:
            out[m] = main[0]
        elif not main and len(plumbing.get(m, [])) == 1:
            out[m] = plumbing[m][0]
    _compact[graph] = out
    return out


def item_titles(graph: BackwardGraph, vis: VisibleGraph) -> dict[int, str]:
    """Item -> its module's title, for the items that stand for a compact module (its one op,
    drawn alone: `compact_modules`). The op's name is the box's second line.

    Example:
        >>> from autograd_widget.view.visible import visible_graph
        >>> gm = aw.capture(model(torch.randn(5, 4)).sum(), model=model)
        >>> sorted(item_titles(gm, visible_graph(gm)).values())
        ['0 · Linear', '2 · Linear']
    """
    compact = compact_modules(graph)
    out: dict[int, str] = {}
    for m, r in compact.items():
        j = int(vis.real_item[r])
        if j >= 0 and vis.item_real[j] == r:
            out[j] = module_title(graph, m)
    return out


def item_sizes(
    graph: BackwardGraph, vis: VisibleGraph, titles: Mapping[str, str],
    item_title: Mapping[int, str] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Box size (width, height) of every item, to hold its text: a node's short op name (a
    leaf's name and shape; a compact module's op: its module's title in `item_title`, then the
    op), a box's title and its op count.

    Example:
        >>> from autograd_widget.view.visible import visible_graph
        >>> w, h = item_sizes(g, visible_graph(g), {}); h.tolist()  # ops one line, leaves two
        [1.5, 1.5, 2.5, 2.5]
    """
    nodes = list(graph.nodes.values())
    n = vis.n_items
    w = np.zeros(n)
    h = np.zeros(n)
    # One size per distinct (op, kind, leaf name, leaf shape): a 100k-node chain has three.
    by_key: dict[tuple, tuple[float, float]] = {}
    item_title = item_title or {}
    for j, r in enumerate(vis.item_real.tolist()):
        if r >= 0 and j in item_title:
            hit = _box([item_title[j], short_label(nodes[r])])
        elif r >= 0:
            node = nodes[r]
            leafy = node.kind == "accumulate_grad"
            key = (node.name, node.kind, node.leaf_name,
                   node.inputs[0].shape if leafy and node.inputs else None)
            hit = by_key.get(key)
            if hit is None:
                lines = [short_label(node)]
                if key[3] is not None:
                    lines.append(str(list(key[3])))
                hit = by_key[key] = _box(lines)
        else:
            group = vis.item_group[j] or ""
            members = vis.item_members[j]
            lines = [titles.get(group, group), f"{0 if members is None else len(members)} ops"]
            hit = _box(lines)
        w[j], h[j] = hit
    return w, h


def _common_module(nodes: list, members: np.ndarray | None) -> str:
    """The deepest module holding every member node ("" when none does)."""
    paths = {nodes[int(i)].module or "" for i in (members if members is not None else [])}
    if not paths:
        return ""
    parts = [p.split(".") if p else [] for p in paths]
    common: list[str] = []
    for level in zip(*parts, strict=False):
        if any(x != level[0] for x in level):
            break
        common.append(level[0])
    return ".".join(common)


def scene_layout(
    graph: BackwardGraph,
    vis: VisibleGraph,
    orientation: str = "TB",
    *,
    folds: Mapping[str, Repeat] | None = None,
    layouter: ClusterLayouter | None = None,
) -> ClusterLayout:
    """The cluster layout of `vis`: every unfolded module a frame, every box sized to its text.

    Args:
        graph: the graph `vis` was built from.
        vis: the visible graph.
        orientation: "TB" or "LR".
        folds: fold key -> run, for the folded runs' boxes (their frame is the run's parent).
        layouter: the cache to reuse (a Scene keeps one); a fresh one by default.

    Example:
        >>> from autograd_widget.view.visible import visible_graph
        >>> lay = scene_layout(g, visible_graph(g)); lay.n_nodes, lay.frames
        (4, [])
    """
    with gc_paused():
        return _scene_layout(graph, vis, orientation, folds or {}, layouter)


def _scene_layout(
    graph: BackwardGraph,
    vis: VisibleGraph,
    orientation: str,
    folds: Mapping[str, Repeat],
    layouter: ClusterLayouter | None,
) -> ClusterLayout:
    nodes = list(graph.nodes.values())
    item_real = vis.item_real.tolist()
    n = vis.n_items
    compact = compact_modules(graph)
    if vis.is_identity:  # every node drawn as itself: no per-item branching
        cluster = [node.module or "" for node in nodes]
        if compact:  # a compact module has no frame: its nodes sit in its parent's
            cluster = [parent(m) if m in compact else m for m in cluster]
        own = cluster
        keys = list(graph.nodes)
        leaf = np.fromiter((node.kind == "accumulate_grad" for node in nodes), bool, n)
        rank = np.arange(n, dtype=np.float64)
    else:
        cluster, keys, own = [], [], []
        leaf = np.zeros(n, dtype=bool)
        rank = np.zeros(n)
        for j, r in enumerate(item_real):
            members = vis.item_members[j]
            rank[j] = r if r >= 0 else (int(members.min()) if members is not None
                                        and len(members) else len(nodes))
            if r >= 0:
                node = nodes[r]
                m = node.module or ""
                if m in compact:
                    m = parent(m)
                cluster.append(m)
                own.append(m)
                keys.append(node.id)
                leaf[j] = node.kind == "accumulate_grad"
            else:
                group = vis.item_group[j] or ""
                run = folds.get(group) if group in vis.folds else None
                if run is not None:  # a run's box sits where its blocks would
                    cluster.append(getattr(run, "parent", "") or _common_module(nodes, members))
                else:
                    cluster.append(parent(group))
                own.append(cluster[-1])
                keys.append("m:" + group)
    paths = set(cluster)
    for p in list(paths):
        while p:
            p = parent(p)
            paths.add(p)
    boxes = {vis.item_group[j] or "" for j, r in enumerate(item_real) if r < 0}
    titles = {p: module_title(graph, p) for p in paths | boxes}
    for key, run in folds.items():
        if key in boxes:
            titles[key] = run_title(graph, run)
    w, h = item_sizes(graph, vis, titles, item_titles(graph, vis))
    ids = list(graph.nodes)  # (ids may be renamed: not always "n<index>")
    roots = sorted({int(vis.real_item[ids.index(r)]) for r, _ in graph.roots} - {-1})
    return (layouter or ClusterLayouter()).layout(
        vis.n_items, vis.edge_src, vis.edge_dst, cluster, w, h, item_key=keys, leaf=leaf,
        item_module=own, roots=roots, titles=titles, orientation=orientation, item_rank=rank,
    )
