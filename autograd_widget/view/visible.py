"""What is visible: module groups folded into boxes, plumbing nodes hidden, and the edges between.

Real models have hundreds to thousands of nodes. Two folds make them readable:
- a collapsed module becomes one box holding every node whose module path is that module or lies
  under it (the outermost collapsed ancestor wins); the edges crossing its boundary stay, so the
  gradients flowing into and out of the module stay visible;
- pure plumbing nodes (views, reshapes, transposes, expands...) can be hidden: their edges are
  contracted, and the contracted edge shows the gradient that finally arrives (the last real edge
  of the path), which is what the receiving node sees;
- a run of structurally identical sibling blocks (`repeats.find_repeats`, 48 Transformer layers)
  can fold into ONE box for the whole run, "layers.0–47 ×48", keyed by `fold_keys`.

Pure: works on the graph records (no torch), so it is cheap and testable on a graph from a dict.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from operator import itemgetter
from typing import TYPE_CHECKING

import numpy as np

from ..core.graph import BackwardGraph
from .modules import children, in_group, module_paths, top_level_groups

if TYPE_CHECKING:
    from .repeats import Repeat

__all__ = [
    "FOLD_PREFIX",
    "PLUMBING",
    "VisibleGraph",
    "default_collapsed",
    "edge_arrays",
    "fold_keys",
    "fold_members",
    "is_plumbing",
    "search",
    "visible_graph",
]

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
        # FSDP2's bookkeeping: passes each gradient through unchanged (output i is input i)
        "RegisterPostBackwardFunctionBackward",
    }
)

def is_plumbing(name: str) -> bool:
    """True for a node type that only moves data around (views, reshapes, transposes,
    expands): what "Hide plumbing" contracts.

    Example:
        >>> is_plumbing("ViewBackward0"), is_plumbing("AddBackward0")
        (True, False)
    """
    return name in PLUMBING


def default_collapsed(
    graph: BackwardGraph, mode: str, folded: Iterable[str] | Mapping[str, str] = ()
) -> set[str]:
    """Groups folded at start: none ("none", "repeats") or the top-level modules ("modules").
    collapse="auto" is chosen by pixels (`autofold.choose_folds`), not here.

    `folded`: member paths of the runs folded at start, or member path -> fold key
    (`fold_members`). They are left to their fold box; with "modules" a top-level module
    holding one is looked through (its other children are collapsed instead), or it would
    swallow the fold box.

    Example:
        >>> with aw.track(model):
        ...     out = model(torch.randn(2, 4))
        >>> gm = aw.capture(out.sum(), model=model)
        >>> sorted(default_collapsed(gm, "modules")), sorted(default_collapsed(gm, "none"))
        (['0', '1', '2'], [])
    """
    if mode in ("none", "repeats", "auto"):
        return set()
    if mode == "modules":
        tops = top_level_groups(graph)
        members = set(folded)
        if not members:
            return set(tops)
        paths = module_paths(graph)
        out: set[str] = set()
        todo = list(tops)
        while todo:
            p = todo.pop()
            if any(in_group(p, f) for f in members):
                continue  # inside a folded member: the fold box shows it
            if any(in_group(f, p) for f in members):
                todo += children(p, paths)
                continue
            out.add(p)
        return out
    return set()


#: Prefix of a fold key whose run's label happens to be a module path too (see `fold_keys`).
FOLD_PREFIX = "fold:"


def fold_keys(repeats: Iterable[Repeat], paths: Iterable[str] = ()) -> dict[str, Repeat]:
    """Key -> run, in the runs' order: the key names the run's box (item id "group:<key>").

    The key is the run's label, "layers.0–47 ×48": a module path never has that form unless a
    module is literally named like one ("0–47 ×48"); such a clash with one of `paths` (the
    graph's module paths) or with another key gets `FOLD_PREFIX` until there is none, so a key
    never names a module.

    Example:
        >>> from autograd_widget.view.repeats import Repeat
        >>> run = Repeat("", ("1", "2"), 2, 1, "1–2 ×2", "sig", 5)
        >>> list(fold_keys([run]))
        ['1–2 ×2']
    """
    taken = set(paths)
    out: dict[str, Repeat] = {}
    for r in repeats:
        key = r.label
        while key in taken or key in out:
            key = FOLD_PREFIX + key
        out[key] = r
    return out


def fold_members(folds: Mapping[str, Repeat]) -> dict[str, str]:
    """Member module path -> fold key, for `visible_graph(folds=...)`.

    Example:
        >>> from autograd_widget.view.repeats import Repeat
        >>> fold_members({"1–2 ×2": Repeat("", ("1", "2"), 2, 1, "1–2 ×2", "sig", 5)})
        {'1': '1–2 ×2', '2': '1–2 ×2'}
    """
    return {m: key for key, r in folds.items() for m in r.members}


@dataclass(frozen=True, eq=False)
class VisibleGraph:
    """Visible items (real nodes and module boxes) and the edges between them.

    `real_item[i]` is the item showing real node i (-1 when hidden as plumbing); `item_real[j]`
    the real node item j shows (-1 for a box, whose name is `item_group[j]` and members
    `item_members[j]`). Visible edge k goes from item `edge_src[k]` to `edge_dst[k]` and shows the
    gradient of real edge `edge_real[k]`.

    Example:
        >>> vis = visible_graph(g)
        >>> vis.n_items, vis.is_identity
        (4, True)
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
    #: Keys of the folded runs of repeated blocks (see `visible_graph`'s `folds`); a box whose
    #: `item_group` is one of them stands for a whole run.
    folds: frozenset[str] = frozenset()

    @property
    def n_items(self) -> int:
        """How many items are drawn (lone nodes plus boxes).
        """
        return len(self.item_real)

    @property
    def is_identity(self) -> bool:
        """True when every node is drawn as itself (nothing folded or hidden).
        """
        return len(self.item_real) == len(self.real_item) and bool(
            (self.item_real == np.arange(len(self.item_real))).all()
        )


def visible_graph(
    graph: BackwardGraph,
    collapsed: Iterable[str] = (),
    show_plumbing: bool = True,
    *,
    folds: Mapping[str, str] | None = None,
    node_folds: Mapping[int, str] | None = None,
    _merged: Mapping[int, str] | None = None,
) -> VisibleGraph:
    """Fold `collapsed` module groups into boxes and, unless `show_plumbing`, hide plumbing.

    `folds` maps the member module paths of folded runs of repeated blocks to the run's fold key
    (`fold_keys`): every node under any member joins ONE box for the whole run, named by the key,
    exactly like a collapsed module (edges inside the run vanish, edges crossing it stay). A
    collapsed module holding the whole run still wins (outermost wins); a collapsed module
    inside a member, and a run nested inside a member, are absorbed by the fold.

    `node_folds` maps node positions (the order of `graph.nodes`) to the key of a box they join,
    for runs of repeated subgraphs outside modules (`folding.RepeatedSubgraph`); a node some module
    box or fold already took stays there. Its keys count as folds (`VisibleGraph.folds`).

    The result is always a DAG: a box whose nodes are not contiguous (the ReLU a parent runs
    between two folded layers) absorbs the items on a cycle through it (`_cycle_merge`).

    Example:
        >>> with aw.track(model):
        ...     out = model(torch.randn(2, 4))
        >>> visible_graph(aw.capture(out.sum(), model=model), ["0"]).n_items  # module 0 as one box
        7
    """
    facts = _node_facts(graph)
    nodes, index, n = facts.nodes, facts.index, len(facts.nodes)
    groups = sorted(set(collapsed), key=lambda g: (g.count(".") if g else -1, g))
    if not groups and not folds and not node_folds and not _merged:
        same = _identity_visible(graph, nodes, index, show_plumbing)
        if same is not None:
            return same
    # The box of each distinct module path (the outermost collapsed group holding it, unless a
    # folded run takes it), then of each node by its path's code: no Python step per node.
    names: list[str] = []
    name_id: dict[str, int] = {}

    def gid(name: str) -> int:
        k = name_id.get(name)
        if k is None:
            k = name_id[name] = len(names)
            names.append(name)
        return k

    mod_group = np.full(len(facts.modules), -1, np.int64)
    group_set = set(groups)
    for k, m in enumerate(facts.modules):
        g = _outermost_group(m, group_set) if groups else None
        f = _fold_member(m, folds) if folds else None
        if f is not None and not (g is not None and g != f and in_group(f, g)):
            g = folds[f]  # type: ignore[index]
        if g is not None:
            mod_group[k] = gid(g)
    group = mod_group[facts.code]
    for i, g in (node_folds or {}).items():
        if group[i] < 0:
            group[i] = gid(g)
    for i, g in (_merged or {}).items():
        group[i] = gid(g)
    if show_plumbing:
        hidden = np.zeros(n, bool)
    else:
        hidden = (group < 0) & facts.plumbing & ~facts.root

    # Items in the order of their first node: a lone node is its own key, a box n + its id.
    key = np.where(group >= 0, n + group, np.arange(n))
    shown = np.flatnonzero(~hidden)
    uniq, first = np.unique(key[shown], return_index=True)
    item_keys = uniq[np.argsort(first, kind="stable")]
    kmap = np.full(n + len(names), -1, np.int64)
    kmap[item_keys] = np.arange(len(item_keys))
    real_item = np.where(hidden, -1, kmap[key]).astype(np.int32)
    item_real = np.where(item_keys < n, item_keys, -1).astype(np.int32)
    item_group: list[str | None] = [names[k - n] if k >= n else None
                                    for k in item_keys.tolist()]
    grouped = np.flatnonzero(group >= 0)
    by_group = grouped[np.argsort(group[grouped], kind="stable")]
    cuts = np.searchsorted(group[by_group], np.arange(len(names) + 1))
    members = {names[k]: by_group[cuts[k]:cuts[k + 1]].astype(np.int32)
               for k in range(len(names))}

    src, out_nr, dst, in_nr = edge_arrays(graph, index)
    # Edges between two visible items map straight across (vectorised); an edge out of a
    # hidden node is reached through the visible node before it; an edge into a hidden node is
    # contracted through the plumbing (through a hidden node of several inputs, a pass-through
    # such as FSDP's, input i leads on to output i only). Output order: by real edge,
    # contractions in place.
    a_of, b_of = real_item[src], real_item[dst]
    hid_u, hid_v = hidden[src], hidden[dst]
    direct = np.flatnonzero(~hid_u & ~hid_v & (a_of != b_of))
    c_k: list[int] = []
    c_src: list[int] = []
    c_dst: list[int] = []
    c_real: list[int] = []
    into_hidden = np.flatnonzero(~hid_u & hid_v)
    if len(into_hidden):
        out_edges: dict[int, list[int]] = {}
        for k2 in np.flatnonzero(hid_u).tolist():
            out_edges.setdefault(int(src[k2]), []).append(k2)
        for k in into_hidden.tolist():
            a = int(a_of[k])
            # Contract through hidden plumbing (iteratively: chains of views are common).
            stack = [(int(dst[k]), int(in_nr[k]))]
            seen: set[tuple[int, int]] = set()
            while stack:
                h, slot = stack.pop()
                if (h, slot) in seen:
                    continue
                seen.add((h, slot))
                several = len(nodes[h].inputs) > 1
                for k2 in out_edges.get(h, ()):
                    if several and int(out_nr[k2]) != slot:
                        continue
                    w = int(dst[k2])
                    if hidden[w]:
                        stack.append((w, int(in_nr[k2])))
                    else:
                        b = int(real_item[w])
                        if a != b:
                            c_k.append(k)
                            c_src.append(a)
                            c_dst.append(b)
                            c_real.append(k2)
    e_src = a_of[direct]
    e_dst = b_of[direct]
    e_real = direct
    if c_k:
        order = np.argsort(np.concatenate([direct, np.asarray(c_k, np.int64)]), kind="stable")
        e_src = np.concatenate([e_src, np.asarray(c_src, np.int32)])[order]
        e_dst = np.concatenate([e_dst, np.asarray(c_dst, np.int32)])[order]
        e_real = np.concatenate([e_real, np.asarray(c_real, np.int64)])[order]
    vis = VisibleGraph(
        item_real=item_real,
        item_group=item_group,
        item_members=[members[g] if g is not None else None for g in item_group],
        real_item=real_item,
        edge_src=np.asarray(e_src, np.int32),
        edge_dst=np.asarray(e_dst, np.int32),
        edge_real=np.asarray(e_real, np.int32),
        collapsed=frozenset(groups),
        show_plumbing=show_plumbing,
        folds=frozenset((folds or {}).values()) | frozenset((node_folds or {}).values()),
    )
    if members and _merged is None:
        merged = _cycle_merge(vis)
        if merged:
            return visible_graph(graph, groups, show_plumbing, folds=folds,
                                 node_folds=node_folds, _merged=merged)
    return vis


def _cycle_merge(vis: VisibleGraph) -> dict[int, str]:
    """Real nodes to move into a box so that the visible graph is a DAG ({} when it is one).

    A box whose nodes are not contiguous in the graph has an edge out to a node that leads back
    into it: the ReLU a parent runs between two layers of a folded run (or of a collapsed
    ModuleList), or a run interleaved with another. That is a cycle, which a layered layout
    cannot draw. The graph itself is a DAG, so every cycle passes through a box: the items of
    each strongly connected component join the box holding the most nodes among them, and the
    drawing becomes its condensation, a DAG. Cost: one pass over the visible edges when there
    is no cycle (the usual case), networkx's strongly connected components on what is left.
    """
    n = vis.n_items
    src, dst = vis.edge_src.tolist(), vis.edge_dst.tolist()
    succ: list[list[int]] = [[] for _ in range(n)]
    pred: list[list[int]] = [[] for _ in range(n)]
    for a, b in zip(src, dst):
        succ[a].append(b)
        pred[b].append(a)
    # Peel sources, then sinks: what is left lies on a cycle or between two.
    alive = [True] * n
    for fwd, back in ((pred, succ), (succ, pred)):
        deg = [sum(1 for u in fwd[v] if alive[u]) for v in range(n)]
        todo = [v for v in range(n) if alive[v] and deg[v] == 0]
        while todo:
            v = todo.pop()
            alive[v] = False
            for w in back[v]:
                if alive[w]:
                    deg[w] -= 1
                    if deg[w] == 0:
                        todo.append(w)
    rest = [v for v in range(n) if alive[v]]
    if not rest:
        return {}
    import networkx as nx

    left = nx.DiGraph()
    left.add_nodes_from(rest)
    left.add_edges_from((v, w) for v in rest for w in succ[v] if alive[w])
    comps = [sorted(c) for c in nx.strongly_connected_components(left) if len(c) > 1]
    merged: dict[int, str] = {}
    size = [0 if m is None else len(m) for m in vis.item_members]
    for comp in comps:
        target = max((j for j in comp if vis.item_real[j] < 0), key=lambda j: (size[j], -j))
        key = vis.item_group[target]
        assert key is not None
        for j in comp:
            if j == target:
                continue
            r = int(vis.item_real[j])
            for i in (vis.item_members[j] if r < 0 else (r,)):  # type: ignore[union-attr]
                merged[int(i)] = key
    return merged


def _outermost_group(m: str | None, groups: set[str]) -> str | None:
    """The outermost of `groups` holding module path `m` (`in_group`), None: none. Walks the
    path's own prefixes (dict look-ups), so folding costs modules x depth, not modules x groups
    (a model of 50,000 modules collapsed to its blocks)."""
    if m is None:
        return None
    if "" in groups:
        return ""
    cut = m.find(".")
    while cut >= 0:
        if m[:cut] in groups:
            return m[:cut]
        cut = m.find(".", cut + 1)
    return m if m in groups else None


def _fold_member(m: str | None, folds: Mapping[str, str]) -> str | None:
    """The outermost folded member path holding module path `m` (None: none)."""
    hit, a = None, m
    while a:
        if a in folds:
            hit = a
        a = a.rpartition(".")[0]
    return hit


@dataclass(frozen=True, eq=False)
class _NodeFacts:
    """What folding reads of every node, once per graph: the nodes, id -> position, each
    node's module path as a code into `modules`, plumbing and root flags."""

    nodes: list
    index: dict[str, int]
    modules: list[str | None]
    code: np.ndarray
    plumbing: np.ndarray
    root: np.ndarray


_facts: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _node_facts(graph: BackwardGraph) -> _NodeFacts:
    hit = _facts.get(graph)
    if hit is None:
        nodes = list(graph.nodes.values())
        index = {node.id: i for i, node in enumerate(nodes)}
        mod_id: dict[str | None, int] = {}
        code = np.fromiter((mod_id.setdefault(node.module, len(mod_id)) for node in nodes),
                           np.int64, len(nodes))
        plumbing = np.fromiter((node.name in PLUMBING for node in nodes), bool, len(nodes))
        root = np.zeros(len(nodes), bool)
        root[[index[r] for r, _ in graph.roots]] = True
        hit = _facts[graph] = _NodeFacts(nodes, index, list(mod_id), code, plumbing, root)
    return hit


_edge_arrays: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def edge_arrays(
    graph: BackwardGraph, index: dict[str, int] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`(src, output_nr, dst, input_nr)` of every edge of `graph` as read-only int32 arrays, src
    and dst as node positions (the order of `graph.nodes`; `index`: node id -> position, when
    the caller has it).

    Built once per graph at C speed (no Python loop body per edge) and cached: folding, unfolding
    and the graph payload all read them. A graph's edges never change after it is built.

    Example:
        >>> [a.tolist() for a in edge_arrays(g)]
        [[0, 0, 1], [0, 1, 0], [1, 2, 3], [0, 0, 0]]
    """
    cached = _edge_arrays.get(graph)
    if cached is None:
        if index is None:
            index = {nid: i for i, nid in enumerate(graph.nodes)}
        edges, m = graph.edges, len(graph.edges)
        pos = index.__getitem__
        cached = (
            np.fromiter(map(pos, map(itemgetter(0), edges)), np.int32, m),
            np.fromiter(map(itemgetter(1), edges), np.int32, m),
            np.fromiter(map(pos, map(itemgetter(2), edges)), np.int32, m),
            np.fromiter(map(itemgetter(3), edges), np.int32, m),
        )
        for a in cached:
            a.flags.writeable = False
        _edge_arrays[graph] = cached
    return cached


def _identity_visible(
    graph: BackwardGraph, nodes: list, index: dict[str, int], show_plumbing: bool
) -> VisibleGraph | None:
    """Nothing folded and nothing hidden: every node is its own item and every edge is kept,
    built with no Python loop over the edges. None when plumbing would be hidden after all."""
    n = len(nodes)
    if not show_plumbing:
        roots = {index[r] for r, _ in graph.roots}
        if any(is_plumbing(node.name) and i not in roots for i, node in enumerate(nodes)):
            return None
    src, _, dst, _ = edge_arrays(graph, index)
    keep = src != dst  # a self-loop (only in a hand-made graph) joins an item to itself
    edge_real = np.arange(len(src), dtype=np.int32) if keep.all() else np.flatnonzero(keep)
    ident = np.arange(n, dtype=np.int32)
    return VisibleGraph(
        item_real=ident,
        item_group=[None] * n,
        item_members=[None] * n,
        real_item=ident.copy(),
        edge_src=src[edge_real].astype(np.int32),
        edge_dst=dst[edge_real].astype(np.int32),
        edge_real=edge_real.astype(np.int32),
        collapsed=frozenset(),
        show_plumbing=show_plumbing,
    )


def search(graph: BackwardGraph, query: str, limit: int = 50) -> list[str]:
    """Node ids whose name, module path, leaf name or id contains `query` (case-insensitive).

    Exact matches of a leaf name or id come first, then prefix matches, then substrings, each in
    graph order, so typing a parameter's full name jumps straight to it.

    Example:
        >>> search(g, "x")
        ['n3']
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
