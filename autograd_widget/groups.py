"""What is visible: module groups folded into boxes, plumbing nodes hidden, and the edges between.

Real models have hundreds to thousands of nodes. Two folds make them readable:
- a collapsed module becomes one box holding every node whose module path is that module or lies
  under it (the outermost collapsed ancestor wins); the edges crossing its boundary stay, so the
  gradients flowing into and out of the module stay visible;
- pure plumbing nodes (views, reshapes, transposes, expands...) can be hidden: their edges are
  contracted, and the contracted edge shows the gradient that finally arrives (the last real edge
  of the path), which is what the receiving node sees.

Pure: works on the graph records (no torch), so it is cheap and testable on a graph from a dict.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .graph import BackwardGraph

#: Nodes that only move or re-view data: their backward re-shapes the gradient, nothing more.
PLUMBING = frozenset(
    {
        "ViewBackward0",
        "UnsafeViewBackward0",
        "ReshapeAliasBackward0",
        "AsStridedBackward0",
        "AliasBackward0",
        "TBackward0",
        "TransposeBackward0",
        "TransposeBackward1",
        "PermuteBackward0",
        "ExpandBackward0",
        "SqueezeBackward0",
        "SqueezeBackward1",
        "SqueezeBackward2",
        "SqueezeBackward3",
        "SqueezeBackward4",
        "UnsqueezeBackward0",
        "UnsqueezeBackward1",
        "ViewAsRealBackward0",
        "ViewAsComplexBackward0",
    }
)

#: collapse="auto" folds the model into its top-level modules above this many nodes.
AUTO_COLLAPSE_NODES = 300


def is_plumbing(name: str) -> bool:
    return name in PLUMBING


def in_group(module: str | None, group: str) -> bool:
    """True when `module` is `group` or lies under it ("" is the whole model)."""
    if module is None:
        return False
    return group == "" or module == group or module.startswith(group + ".")


def module_paths(graph: BackwardGraph) -> list[str]:
    """Every module path that holds a node, with all its ancestors, sorted."""
    paths: set[str] = set()
    for n in graph.nodes.values():
        m = n.module
        if m is None:
            continue
        paths.add(m)
        if m:
            parts = m.split(".")
            paths.add("")
            for k in range(1, len(parts)):
                paths.add(".".join(parts[:k]))
    return sorted(paths)


def top_level_groups(graph: BackwardGraph) -> list[str]:
    """The modules `collapse="modules"` folds: the model's children, looking through containers.

    A module with no ops of its own that only holds children (a ModuleList, a plain Sequential
    of layers) is replaced by its children, so a TransformerEncoder folds into `layers.0` ...
    `layers.11` rather than one `layers` box holding everything.
    """
    paths = module_paths(graph)
    if not paths:
        return []
    own: set[str] = {n.module for n in graph.nodes.values() if n.module is not None}
    children: dict[str, list[str]] = {p: [] for p in paths}
    for p in paths:
        if p:
            parent = p.rpartition(".")[0] if "." in p else ""
            if parent in children:
                children[parent].append(p)
    todo = list(children.get("", [])) if "" in children else [p for p in paths if "." not in p]
    out: list[str] = []
    while todo:
        p = todo.pop(0)
        if p not in own and children.get(p):
            todo[0:0] = children[p]
        else:
            out.append(p)
    return out


def default_collapsed(graph: BackwardGraph, mode: str) -> set[str]:
    """Groups folded at start: none, the top-level modules, or those when the graph is big."""
    if mode == "none":
        return set()
    if mode == "modules" or (mode == "auto" and len(graph.nodes) > AUTO_COLLAPSE_NODES):
        return set(top_level_groups(graph))
    return set()


@dataclass(frozen=True, eq=False)
class VisibleGraph:
    """Visible items (real nodes and module boxes) and the edges between them.

    `real_item[i]` is the item showing real node i (-1 when hidden as plumbing); `item_real[j]`
    the real node item j shows (-1 for a box, whose name is `item_group[j]` and members
    `item_members[j]`). Visible edge k goes from item `edge_src[k]` to `edge_dst[k]` and shows the
    gradient of real edge `edge_real[k]`.
    """

    item_real: np.ndarray
    item_group: list[str | None]
    item_members: list[np.ndarray | None]
    real_item: np.ndarray
    edge_src: np.ndarray
    edge_dst: np.ndarray
    edge_real: np.ndarray
    collapsed: frozenset[str]
    show_plumbing: bool

    @property
    def n_items(self) -> int:
        return len(self.item_real)

    @property
    def is_identity(self) -> bool:
        return len(self.item_real) == len(self.real_item) and bool(
            (self.item_real == np.arange(len(self.item_real))).all()
        )


def visible_graph(
    graph: BackwardGraph, collapsed: Iterable[str] = (), show_plumbing: bool = True
) -> VisibleGraph:
    """Fold `collapsed` module groups into boxes and, unless `show_plumbing`, hide plumbing."""
    nodes = list(graph.nodes.values())
    n = len(nodes)
    index = {node.id: i for i, node in enumerate(nodes)}
    groups = sorted(set(collapsed), key=lambda g: (g.count(".") if g else -1, g))
    # Outermost collapsed group of each node (groups sorted outermost first).
    group_of: list[str | None] = [None] * n
    for i, node in enumerate(nodes):
        for g in groups:
            if in_group(node.module, g):
                group_of[i] = g
                break
    roots = {index[r] for r, _ in graph.roots}
    hidden = np.zeros(n, bool)
    if not show_plumbing:
        for i, node in enumerate(nodes):
            hidden[i] = group_of[i] is None and i not in roots and is_plumbing(node.name)

    item_real: list[int] = []
    item_group: list[str | None] = []
    members: dict[str, list[int]] = {}
    group_item: dict[str, int] = {}
    real_item = np.full(n, -1, np.int32)
    for i in range(n):
        g = group_of[i]
        if g is not None:
            if g not in group_item:
                group_item[g] = len(item_real)
                item_real.append(-1)
                item_group.append(g)
            real_item[i] = group_item[g]
            members.setdefault(g, []).append(i)
        elif not hidden[i]:
            real_item[i] = len(item_real)
            item_real.append(i)
            item_group.append(None)

    out_edges: list[list[int]] = [[] for _ in range(n)]
    src = np.fromiter((index[e.src] for e in graph.edges), np.int64, len(graph.edges))
    dst = np.fromiter((index[e.dst] for e in graph.edges), np.int64, len(graph.edges))
    for k in range(len(src)):
        out_edges[src[k]].append(k)

    e_src: list[int] = []
    e_dst: list[int] = []
    e_real: list[int] = []
    for k in range(len(src)):
        u, v = int(src[k]), int(dst[k])
        if hidden[u]:
            continue  # reached through the visible node before it
        a = int(real_item[u])
        if not hidden[v]:
            b = int(real_item[v])
            if a != b:
                e_src.append(a)
                e_dst.append(b)
                e_real.append(k)
            continue
        # Contract through hidden plumbing (iteratively: chains of views are common).
        stack = [v]
        seen: set[int] = set()
        while stack:
            h = stack.pop()
            if h in seen:
                continue
            seen.add(h)
            for k2 in out_edges[h]:
                w = int(dst[k2])
                if hidden[w]:
                    stack.append(w)
                else:
                    b = int(real_item[w])
                    if a != b:
                        e_src.append(a)
                        e_dst.append(b)
                        e_real.append(k2)
    return VisibleGraph(
        item_real=np.asarray(item_real, np.int32),
        item_group=item_group,
        item_members=[
            np.asarray(members[g], np.int32) if g is not None else None for g in item_group
        ],
        real_item=real_item,
        edge_src=np.asarray(e_src, np.int32),
        edge_dst=np.asarray(e_dst, np.int32),
        edge_real=np.asarray(e_real, np.int32),
        collapsed=frozenset(groups),
        show_plumbing=show_plumbing,
    )


def search(graph: BackwardGraph, query: str, limit: int = 50) -> list[str]:
    """Node ids whose name, module path, leaf name or id contains `query` (case-insensitive).

    Exact matches of a leaf name or id come first, then prefix matches, then substrings, each in
    graph order, so typing a parameter's full name jumps straight to it.
    """
    q = query.strip().lower()
    if not q:
        return []
    ranked: list[tuple[int, int, str]] = []
    for pos, node in enumerate(graph.nodes.values()):
        fields = [node.id, node.name, node.leaf_name or "", node.module or ""]
        best = None
        for f in fields:
            f = f.lower()
            if f == q:
                score = 0
            elif f.startswith(q):
                score = 1
            elif q in f:
                score = 2
            else:
                continue
            best = score if best is None else min(best, score)
        if best is not None:
            ranked.append((best, pos, node.id))
    ranked.sort()
    return [nid for _, _, nid in ranked[:limit]]
