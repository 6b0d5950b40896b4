"""Layered (Sugiyama-style) layout of a DAG, in numpy.

Graphviz ``dot`` needs a binary, takes ~56 s on a 10k fan and crashes on a 50k chain; networkx
takes ~1 s on a 50k chain. Backward graphs are deep (one layer per op) and often wide (one leaf per
parameter), so every step here is either vectorised over all nodes or loops only over the layer
pairs that can hold a crossing (both layers at least two nodes wide). A chain or a fan therefore
costs one Python-level pass over the edges (the layering) plus a handful of array operations.

The steps are the classic ones, as in ``dot``:

1. layering: longest path from the sources (``layer[dst] >= layer[src] + 1``, sources in layer 0),
   then, where some edge is longer than one layer, network simplex on the graph with its plain
   paths contracted to shorten the edges in total (a shared weight used at every step of an
   unrolled RNN pulls each step's ops down to it rather than trailing a long edge per use);
2. dummy nodes on every edge spanning more than one layer, so that the ordering sees long edges
   and crossings are counted between adjacent layers only;
3. crossing reduction: barycenter sweeps down and up, then sweeps each followed by vectorised
   transposition (adjacent swaps that remove crossings), keeping the best ordering seen; graphs
   of bounded size get a second start from the sinks' side and keep the better;
4. x coordinates: neighbour averaging projected onto "ordered, at least a gap apart" per layer,
   which centres parents over children and keeps long edges nearly straight.

The network simplex pivots (a Python loop) and the transpositions run under fixed work budgets
and the second start only on graphs of bounded size, so a big tangled graph gets a partial
improvement rather than a stall; a graph whose edges all span one layer (a chain, a fan) skips
both.
The module is pure: numpy and the standard library only, no torch, traitlets or plotly. Nothing is
random and every sort is stable, so the same input always gives bit-identical output.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Literal, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["Layout", "count_crossings", "layered_layout", "longest_path_layers"]

Orientation = Literal["TB", "LR"]

# Horizontal distance (within a layer) between two real nodes, and between any pair involving a
# dummy: dummies are only bends of long edges, so they may sit closer than boxes do.
NODE_GAP = 1.0
DUMMY_GAP = 0.5
# Rounds of neighbour averaging in the coordinate step. Each round moves information one layer,
# so this bounds how far a wide part of the graph can pull a narrow one; 24 is plenty for the
# local centring that reads well, and costs ~2 ms per round at 50k nodes; rounds stop early
# once nothing moves (a fan settles in one or two).
COORD_ROUNDS = 24
# Node visits the network simplex may spend shortening edges (~0.5 us each): an unrolled
# 100-step LSTM (1.5k nodes) needs ~1.5e5 and finishes; a big tangled graph stops part way.
_NS_WORK = 200_000
# Adjacent pairs whose edges make at most this many edge pairs are compared outright in a
# transposition step; busier pairs sort and search instead.
_EXPAND_LIMIT = 64
# The crossing reduction runs a second time from another starting order (dot does the same)
# on graphs of at most this many nodes and dummies.
_SECOND_START_MAX = 10_000
# Budget of the transpositions, in pair checks: _BASE_WORK plus _TRANSPOSE_WORK per node of
# the reorderable layers, each vectorised check of a batch of pairs costing _CHECK_COST on top
# (numpy's per-call overhead). ~0.3 us per unit: an unrolled 100-step LSTM (121k nodes and
# dummies) uses ~1.1M of its 1.3M and converges; a dense random DAG stops at the budget.
_BASE_WORK = 100_000
_TRANSPOSE_WORK = 10
_CHECK_COST = 400


@dataclass(frozen=True, eq=False)
class Layout:
    """A finished layout. Arrays are read-only, so a layout can be shared and cached safely.

    Units: 1.0 between adjacent layers and at least 1.0 between neighbouring nodes of a layer
    (0.5 where a dummy is involved). ``"TB"``: ``y = -layer`` (roots on top, since plotly's y axis
    points up) and ``x >= 0`` grows with ``order``. ``"LR"``: ``x = layer`` and ``y <= 0``
    decreases with ``order``, so the first node of a layer is on top. In both, the within-layer
    coordinate of the outermost node (real or dummy) is exactly 0, and the two orientations are
    the same drawing turned: ``LR.x == -TB.y`` and ``LR.y == -TB.x``.

    Extended ids: ``0..n-1`` are the real nodes, ``n..n+n_dummies-1`` the dummies. ``seg_src``,
    ``seg_dst`` are the unique edges of the extended graph, every one between adjacent layers;
    duplicate input edges share one route and are counted once in ``crossings``.
    ``initial_crossings`` is the count for the discovery order before any sweep, kept so a caller
    can report what the reduction bought.

    Edge polylines: input edge ``e`` is drawn through the points
    ``edge_x[edge_ptr[e]:edge_ptr[e + 1] - 1]`` (same for ``edge_y``); the last slot of each edge
    is NaN, so ``edge_x``/``edge_y`` can go straight into one plotly line trace.
    """

    layer: NDArray[np.int32]
    order: NDArray[np.int32]
    x: NDArray[np.float32]
    y: NDArray[np.float32]
    n_layers: int
    orientation: Orientation
    edge_x: NDArray[np.float32]
    edge_y: NDArray[np.float32]
    edge_ptr: NDArray[np.int32]
    n_dummies: int
    ext_layer: NDArray[np.int32]
    ext_order: NDArray[np.int32]
    ext_x: NDArray[np.float32]
    ext_y: NDArray[np.float32]
    seg_src: NDArray[np.int32]
    seg_dst: NDArray[np.int32]
    crossings: int
    initial_crossings: int

    @property
    def n_nodes(self) -> int:
        """How many real nodes the layout places (dummy bend points excluded).
        """
        return int(self.layer.shape[0])


def _as_edges(n: int, src: ArrayLike, dst: ArrayLike) -> tuple[NDArray[np.int64], ...]:
    s = np.asarray(src, dtype=np.int64).reshape(-1)
    d = np.asarray(dst, dtype=np.int64).reshape(-1)
    if s.shape != d.shape:
        raise ValueError(f"src and dst differ in length: {s.shape[0]} != {d.shape[0]}")
    if s.size and (min(s.min(), d.min()) < 0 or max(s.max(), d.max()) >= n):
        raise ValueError(f"edge endpoints must be in [0, {n})")
    return s, d


def longest_path_layers(n: int, src: ArrayLike, dst: ArrayLike) -> NDArray[np.int32]:
    """Layer of each node: the length of the longest path reaching it from a source.

    Longest path rather than BFS depth: it is the layering with the fewest layers in which every
    edge points strictly down (``layer[dst] >= layer[src] + 1``), and every non-source has a
    predecessor exactly one layer up (so the edges of length 1 reach every node: the tight tree
    ``layered_layout``'s network simplex starts from). Leaves (AccumulateGrad) land just below
    their consumer instead of all sinking to the bottom. Raises ValueError on a cycle (self-loops
    included).

    This is the one Python-level loop over edges in the module (Kahn's algorithm on CSR lists):
    the dependency chain of a DAG is inherently sequential, and a plain loop over a 50k-chain
    costs ~20 ms where a numpy step per level would cost ~1 s. No recursion, so depth is unbounded.

    Example:
        >>> longest_path_layers(3, [0, 1], [1, 2]).tolist()
        [0, 1, 2]
    """
    s, d = _as_edges(n, src, dst)
    order = np.argsort(s, kind="stable")
    adj = d[order].tolist()
    ptr = np.concatenate(([0], np.cumsum(np.bincount(s, minlength=n)))).tolist()
    indeg_a = np.bincount(d, minlength=n)
    stack = np.flatnonzero(indeg_a == 0)[::-1].tolist()
    indeg = indeg_a.tolist()
    layer = [0] * n
    done = 0
    while stack:
        u = stack.pop()
        done += 1
        lv = layer[u] + 1
        for v in adj[ptr[u] : ptr[u + 1]]:
            if layer[v] < lv:
                layer[v] = lv
            k = indeg[v] - 1
            indeg[v] = k
            if k == 0:
                stack.append(v)
    if done != n:
        raise ValueError("the graph has a cycle; a layered layout needs a DAG")
    return np.asarray(layer, dtype=np.int32)


def _chain_heads(
    n: int, us: NDArray[np.int64], ud: NDArray[np.int64]
) -> tuple[NDArray[np.bool_], NDArray[np.int64], NDArray[np.int64]]:
    """Nodes on plain paths, and where each path starts.

    A node with one in-edge and at most one out-edge (unique edges) only ever sits between its
    predecessor and successor, so it can leave the rank problem: a path ``u -> c1 -> c2 -> w``
    costs ``layer[w] - layer[u]`` however c1, c2 sit, and a path ending in a leaf costs its
    length. Returns ``(on_path, head, depth)``: head is the nearest ancestor off the path, depth
    the hops to it (0 off the path), by pointer doubling (log(path length) numpy steps).
    """
    indeg = np.bincount(ud, minlength=n)
    outdeg = np.bincount(us, minlength=n)
    on_path = (indeg == 1) & (outdeg <= 1)
    head = np.arange(n, dtype=np.int64)
    head[ud[on_path[ud]]] = us[on_path[ud]]
    depth = on_path.astype(np.int64)
    while True:
        up = on_path[head]
        if not up.any():
            return on_path, head, depth
        depth = depth + np.where(up, depth[head], 0)
        head = np.where(up, head[head], head)


def _min_length_layers(
    n: int, us: NDArray[np.int64], ud: NDArray[np.int64], layer: NDArray[np.int64]
) -> NDArray[np.int64]:
    """Shorten the long edges of a longest-path layering: fewer dummies, fewer crossings.

    Longest path puts every node as high as it can go, so a node whose edges mostly point down
    (``Addmm -> T -> weight`` in each step of an unrolled RNN, all joining the one weight leaf
    at the bottom) trails a long edge per use. The layering that minimises the total edge span
    is a linear program; this solves it by Gansner et al.'s network simplex, as Graphviz ``dot``
    does: a spanning tree of tight edges, and pivots that lengthen one tree edge to tighten a
    cheaper non-tree one while that lowers the total span.

    Plain paths are contracted first (``_chain_heads``) and put back just below their head, and
    a virtual root joined to every source by a heavy edge keeps the sources in layer 0. The
    pivots are a Python loop costing O(tree) each, so they stop after ``_NS_WORK`` node visits:
    every pivot lowers the total span, so stopping early gives a valid, partly shortened
    layering (a 760-node unrolled LSTM needs ~100 pivots, ~15 ms).
    """
    span = layer[ud] - layer[us]
    if us.size == 0 or np.all(span == 1):
        return layer  # every edge already has its minimum length
    on_path, head, depth = _chain_heads(n, us, ud)
    # Edges between kept nodes, a path standing for the hops along it (minimum length).
    keep = ~on_path[ud]
    tail_n = head[us[keep]]
    head_n = ud[keep]
    minlen = depth[us[keep]] + 1
    kept = np.flatnonzero(~on_path)
    m_idx = np.full(n, -1, dtype=np.int64)
    m_idx[kept] = np.arange(kept.shape[0])
    k = kept.shape[0]
    ekey = np.unique(
        np.stack((m_idx[tail_n], m_idx[head_n], minlen), axis=1), axis=0, return_counts=True
    )
    edges, weight = ekey
    indeg = np.bincount(ud, minlength=n)
    sources = m_idx[np.flatnonzero(indeg == 0)]
    heavy = int(weight.sum()) + 1
    tail = edges[:, 0].tolist() + [k] * sources.shape[0]
    hd = edges[:, 1].tolist() + sources.tolist()
    ml = edges[:, 2].tolist() + [1] * sources.shape[0]
    wt = weight.tolist() + [heavy] * sources.shape[0]
    rank = [*layer[kept].tolist(), -1]
    rank = _network_simplex(k + 1, tail, hd, ml, wt, rank, k)
    out = np.empty(n, dtype=np.int64)
    out[kept] = np.asarray(rank[:k], dtype=np.int64) - (rank[k] + 1)
    out[on_path] = out[head[on_path]] + depth[on_path]
    return out


def _network_simplex(
    n: int,
    tail: list[int],
    head: list[int],
    minlen: list[int],
    weight: list[int],
    rank: list[int],
    root: int,
) -> list[int]:
    """Network simplex on a feasible ranking whose tight edges reach every node from ``root``.

    Follows Graphviz's ns.c: tree edges carry cut values (the weight of edges from the tail
    side to the head side of the cut the edge makes, minus the reverse), kept up to date along
    the tree path of each pivot; nodes carry DFS post-order intervals (``low``, ``lim``) so that
    "is x below v in the tree" is two comparisons. Everything is iterative (deep trees are fine)
    and deterministic: ties go to the first edge met, in edge order.
    """
    m = len(tail)
    out_e: list[list[int]] = [[] for _ in range(n)]
    in_e: list[list[int]] = [[] for _ in range(n)]
    for e in range(m):
        out_e[tail[e]].append(e)
        in_e[head[e]].append(e)
    in_tree = [False] * m
    tree_adj: list[dict[int, None]] = [{} for _ in range(n)]  # insertion-ordered edge sets
    tree_edges: list[int] = []
    seen = [False] * n
    seen[root] = True
    stack = [root]
    while stack:
        v = stack.pop()
        for e in out_e[v]:
            w = head[e]
            if not seen[w] and rank[w] - rank[v] == minlen[e]:
                seen[w] = True
                stack.append(w)
                in_tree[e] = True
                tree_edges.append(e)
                tree_adj[v][e] = tree_adj[w][e] = None
        for e in in_e[v]:
            w = tail[e]
            if not seen[w] and rank[v] - rank[w] == minlen[e]:
                seen[w] = True
                stack.append(w)
                in_tree[e] = True
                tree_edges.append(e)
                tree_adj[v][e] = tree_adj[w][e] = None
    if len(tree_edges) != n - 1:  # cannot happen for a longest-path start; keep it as given
        return rank
    tree_index = [-1] * m
    for i, e in enumerate(tree_edges):
        tree_index[e] = i
    par = [-1] * n
    low = [0] * n
    lim = [0] * n
    cut = [0] * m
    work = 0

    def dfs_range(v0: int, par0: int, low0: int) -> None:
        """Post-order numbers of v0's subtree; a subtree whose parent edge and first number
        are unchanged keeps its numbers (Graphviz's incremental dfs_range)."""
        nonlocal work
        par[v0] = par0
        low[v0] = low0
        nxt = low0
        stack = [(v0, iter(tree_adj[v0]))]
        while stack:
            v, it = stack[-1]
            for e in it:
                if e != par[v]:
                    w = head[e] if tail[e] == v else tail[e]
                    if par[w] == e and low[w] == nxt:
                        nxt = lim[w] + 1
                        continue
                    par[w] = e
                    low[w] = nxt
                    stack.append((w, iter(tree_adj[w])))
                    break
            else:
                stack.pop()
                lim[v] = nxt
                nxt += 1
                work += 1

    def set_cutvalue(f: int) -> None:
        """Cut value of tree edge f from the cut values below it (ns.c's x_cutvalue/x_val)."""
        # v: the end of f away from the root; its subtree is one side of the cut.
        if lim[tail[f]] < lim[head[f]]:
            v, forward = tail[f], True
        else:
            v, forward = head[f], False
        lo, li = low[v], lim[v]
        s = 0
        for e in out_e[v] + in_e[v]:
            other = head[e] if tail[e] == v else tail[e]
            outside = not lo <= lim[other] <= li
            if outside:
                rv = weight[e]
            else:
                rv = (cut[e] if in_tree[e] else 0) - weight[e]
            sign = (head[e] == v) if forward else (tail[e] == v)
            if sign == outside:
                rv = -rv
            s += rv
        cut[f] = s

    dfs_range(root, -1, 1)
    for v in sorted(range(n), key=lim.__getitem__):  # post-order: children before parents
        if par[v] >= 0:
            set_cutvalue(par[v])

    n_tree = len(tree_edges)
    search_at = 0

    def leave_edge() -> int:
        """A tree edge with a negative cut value: the most negative among the next 30 found,
        scanning round-robin from where the last search stopped (dot's Search_size)."""
        nonlocal search_at, work
        best, best_cut, found = -1, 0, 0
        for step in range(n_tree):
            i = (search_at + step) % n_tree
            e = tree_edges[i]
            if cut[e] < 0:
                if cut[e] < best_cut:
                    best, best_cut = e, cut[e]
                found += 1
                if found >= 30:
                    search_at = i
                    work += step
                    return best
        work += n_tree
        return best

    def enter_edge(e: int) -> int:
        """The non-tree edge of least slack crossing e's cut the other way."""
        nonlocal work
        if lim[tail[e]] < lim[head[e]]:
            v, outward = tail[e], False
        else:
            v, outward = head[e], True
        lo, li = low[v], lim[v]
        best, best_slack = -1, 0
        stack = [v]
        while stack:
            u = stack.pop()
            work += 1
            if outward:
                for f in out_e[u]:
                    w = head[f]
                    if in_tree[f]:
                        if lim[w] < lim[u]:
                            stack.append(w)
                    elif not lo <= lim[w] <= li:
                        sl = rank[w] - rank[u] - minlen[f]
                        if best < 0 or sl < best_slack:
                            best, best_slack = f, sl
                for f in tree_adj[u]:
                    w = tail[f]
                    if head[f] == u and lim[w] < lim[u]:
                        stack.append(w)
            else:
                for f in in_e[u]:
                    w = tail[f]
                    if in_tree[f]:
                        if lim[w] < lim[u]:
                            stack.append(w)
                    elif not lo <= lim[w] <= li:
                        sl = rank[u] - rank[w] - minlen[f]
                        if best < 0 or sl < best_slack:
                            best, best_slack = f, sl
                for f in tree_adj[u]:
                    w = head[f]
                    if tail[f] == u and lim[w] < lim[u]:
                        stack.append(w)
        return best

    def rerank(v0: int, delta: int) -> None:
        nonlocal work
        stack = [v0]
        while stack:
            v = stack.pop()
            work += 1
            rank[v] -= delta
            for e in tree_adj[v]:
                if e != par[v]:
                    stack.append(head[e] if tail[e] == v else tail[e])

    def tree_update(v: int, w: int, cv: int, forward: bool) -> int:
        """Add or subtract cv along the tree path from v up to the ancestor of w; that node."""
        while not low[v] <= lim[w] <= lim[v]:
            e = par[v]
            if (v == tail[e]) == forward:
                cut[e] += cv
            else:
                cut[e] -= cv
            v = tail[e] if lim[tail[e]] > lim[head[e]] else head[e]
        return v

    while work < _NS_WORK:
        e = leave_edge()
        if e < 0:
            break
        f = enter_edge(e)
        if f < 0:  # cannot happen in a connected graph; stop rather than loop
            break
        delta = rank[head[f]] - rank[tail[f]] - minlen[f]
        if delta > 0:  # move the side of e's cut that does not hold the root
            te, he = tail[e], head[e]
            if lim[te] < lim[he]:
                rerank(te, delta)
            else:
                rerank(he, -delta)
        cv = cut[e]
        lca = tree_update(tail[f], head[f], cv, True)
        tree_update(head[f], tail[f], cv, False)
        lca_low = low[lca]
        for v in (tail[f], head[f]):  # the tree paths that change: renumber them
            while low[v] >= 0 and v != lca:
                low[v] = -1
                v = tail[par[v]] if lim[tail[par[v]]] > lim[head[par[v]]] else head[par[v]]
        cut[f] = -cv
        cut[e] = 0
        in_tree[e], in_tree[f] = False, True
        del tree_adj[tail[e]][e], tree_adj[head[e]][e]
        tree_adj[tail[f]][f] = tree_adj[head[f]][f] = None
        i = tree_index[e]
        tree_edges[i], tree_index[f], tree_index[e] = f, i, -1
        dfs_range(lca, par[lca], lca_low)
    return rank


def _inversions(a: NDArray[np.int64]) -> int:
    """Pairs i < j with a[i] > a[j], by a bottom-up merge sort done a whole level at a time.

    Each level is one stable argsort over the full array (blocks are kept apart by adding
    block * span to the values), after which a left-half element is out of order with exactly the
    right-half elements merged before it. That is log m numpy calls instead of m Python steps of a
    Fenwick tree; ~0.7 s for 1.7M values, ~1 ms for a few thousand.
    """
    m = a.shape[0]
    if m < 2:
        return 0
    vals = a - a.min()
    span = np.int64(vals.max() + 1)
    if int(span) * (m // 2 + 1) >= 2**62:  # dense ranks keep block * span + value in int64
        vals = np.unique(vals, return_inverse=True)[1].reshape(-1).astype(np.int64)
        span = np.int64(vals.max() + 1)
    idx = np.arange(m, dtype=np.int64)
    total = 0
    width = 1
    while width < m:
        block = idx // (2 * width)
        keys = block * span + vals
        perm = np.argsort(keys, kind="stable")  # ties: left half first, so they do not count
        from_right = (perm % (2 * width)) >= width
        right_before = np.cumsum(from_right)
        # Blocks before this one are full, each with exactly `width` right-half elements.
        left = ~from_right
        total += int((right_before[left] - block[left] * width).sum())
        vals = keys[perm] - block * span
        width *= 2
    return total


def _crossings(pair: NDArray[np.int64], upos: NDArray[np.int64], lpos: NDArray[np.int64]) -> int:
    """Crossings among segments grouped by layer pair, given both endpoints' positions.

    Two segments of the same pair cross iff their upper and lower positions are in opposite
    strict order; segments sharing an endpoint never cross. Sorting by (pair, upper, lower) turns
    that into counting strict inversions of the lower positions, and offsetting by pair keeps
    groups from inverting against each other, so the whole graph is one inversion count.
    """
    if pair.shape[0] < 2:
        return 0
    wu, wl = int(upos.max()) + 1, int(lpos.max()) + 1
    if (int(pair.max()) + 1) * wu * wl < 2**62:
        perm = np.argsort((pair * wu + upos) * wl + lpos, kind="stable")
    else:
        perm = np.lexsort((lpos, upos, pair))
    v = pair[perm] * wl + lpos[perm]  # ascending groups, so one running max/min covers all
    # A segment whose lower end is >= every earlier one's and <= every later one's (in its
    # group) crosses nothing; in a drawing of long parallel edges that is most of them, and
    # dropping them leaves the merge sort far less to do.
    before = np.empty_like(v)
    before[0] = v[0]
    np.maximum.accumulate(v[:-1], out=before[1:])
    after = np.empty_like(v)
    after[-1] = v[-1]
    after[:-1] = np.minimum.accumulate(v[:0:-1])[::-1]
    tangled = (before > v) | (after < v)
    return _inversions(v[tangled]) if tangled.any() else 0


@overload
def count_crossings(layout: Layout, /) -> int: ...
@overload
def count_crossings(
    layer: ArrayLike, order: ArrayLike, src: ArrayLike, dst: ArrayLike, /
) -> int: ...
def count_crossings(
    layout_or_layer: Layout | ArrayLike,
    order: ArrayLike | None = None,
    src: ArrayLike | None = None,
    dst: ArrayLike | None = None,
    /,
) -> int:
    """Number of edge crossings, counted between adjacent layers.

    ``count_crossings(layout)`` recounts a layout's extended graph (dummies included, duplicate
    edges once). ``count_crossings(layer, order, src, dst)`` counts any drawing whose edges all
    join adjacent layers (``|layer[src] - layer[dst]| == 1``, either direction): duplicates of an
    edge are counted as separate edges there, as drawn. Edges sharing an endpoint never cross.

    Example:
        >>> count_crossings(layered_layout(4, [0, 0, 1], [1, 2, 3]))
        0
    """
    if isinstance(layout_or_layer, Layout):
        lay = layout_or_layer
        layer_a, order_a = lay.ext_layer, lay.ext_order
        s, d = lay.seg_src.astype(np.int64), lay.seg_dst.astype(np.int64)
    else:
        if order is None or src is None or dst is None:
            raise TypeError("count_crossings(layer, order, src, dst) needs all four arrays")
        layer_a = np.asarray(layout_or_layer, dtype=np.int64).reshape(-1)
        order_a = np.asarray(order, dtype=np.int64).reshape(-1)
        s, d = _as_edges(layer_a.shape[0], src, dst)
    ls, ld = layer_a[s].astype(np.int64), layer_a[d].astype(np.int64)
    if np.any(np.abs(ls - ld) != 1):
        raise ValueError("every edge must join adjacent layers; insert dummy nodes first")
    up = ls < ld
    upper, lower = np.where(up, s, d), np.where(up, d, s)
    pair = np.minimum(ls, ld)
    return _crossings(pair, order_a[upper].astype(np.int64), order_a[lower].astype(np.int64))


class _Orderer:
    """Per-layer orderings of the extended graph and the barycenter sweeps over them.

    Layers are kept as a list of id arrays in current order plus a global position array; a
    sweep step touches one layer with a handful of numpy calls. Only layer pairs where both layers
    hold at least two nodes can cross, so only those are swept and counted: a chain or a fan
    costs nothing here however long or wide it is.
    """

    def __init__(
        self,
        ext_layer: NDArray[np.int64],
        key: NDArray[np.float64],
        seg_u: NDArray[np.int64],
        seg_v: NDArray[np.int64],
        n_layers: int,
    ) -> None:
        n_ext = ext_layer.shape[0]
        self.size = np.bincount(ext_layer, minlength=n_layers)
        ranked = np.lexsort((np.arange(n_ext), key, ext_layer))
        bounds = np.concatenate(([0], np.cumsum(self.size)))
        self.pos = np.empty(n_ext, dtype=np.int64)
        self.pos[ranked] = np.arange(n_ext) - bounds[ext_layer[ranked]]
        self.npos = (self.pos + 0.5) / self.size[ext_layer]

        pair = ext_layer[seg_u]
        by_pair = np.argsort(pair, kind="stable")
        self.seg_u, self.seg_v = seg_u[by_pair], seg_v[by_pair]
        self.pair_ptr = np.concatenate(([0], np.cumsum(np.bincount(pair, minlength=n_layers))))
        wide = self.size >= 2
        active = wide[:-1] & wide[1:]  # pair i joins layers i, i + 1
        self.active_pairs = np.flatnonzero(active)
        # Node lists only for the layers a sweep can touch: a 50k chain would otherwise pay
        # 50k slices here for nothing.
        touched = np.union1d(self.active_pairs, self.active_pairs + 1).tolist()
        self.layers = {i: ranked[bounds[i] : bounds[i + 1]] for i in touched}
        seg_active = active[pair[by_pair]] if pair.size else np.zeros(0, dtype=bool)
        self.cu, self.cv = self.seg_u[seg_active], self.seg_v[seg_active]
        self.cpair = ext_layer[self.cu]
        self.ext_layer = ext_layer
        self.touched = np.asarray(touched, dtype=np.int64)
        self.n_active = int(self.size[self.touched].sum())
        # Pair checks the transpositions may spend, in all (a full pass is ~n_active / 2).
        self.budget = _BASE_WORK + _TRANSPOSE_WORK * self.n_active
        self.has_adjacency = False  # built by the first transposition

    def _adjacency(self) -> None:
        """Neighbour lists across the crossing-capable segments (no other can cross anything).

        ``nb[up_ptr[v]:up_ptr[v + 1]]`` are v's neighbours one layer up and
        ``nb[n_up + down_ptr[v]:n_up + down_ptr[v + 1]]`` those one layer down;
        ``adj[adj_ptr[v]:adj_ptr[v + 1]]`` are both together.
        """
        n_ext = self.pos.shape[0]
        self.up_ptr = np.concatenate(([0], np.cumsum(np.bincount(self.cv, minlength=n_ext))))
        self.down_ptr = np.concatenate(([0], np.cumsum(np.bincount(self.cu, minlength=n_ext))))
        up = self.cu[np.argsort(self.cv, kind="stable")]
        down = self.cv[np.argsort(self.cu, kind="stable")]
        self.n_up = up.shape[0]
        self.nb = np.concatenate((up, down))
        ends = np.concatenate((self.cv, self.cu))
        self.adj = np.concatenate((self.cu, self.cv))[np.argsort(ends, kind="stable")]
        self.adj_ptr = np.concatenate(([0], np.cumsum(np.bincount(ends, minlength=n_ext))))
        self.has_adjacency = True

    def crossings(self) -> int:
        return _crossings(self.cpair, self.pos[self.cu], self.pos[self.cv])

    def _reorder(self, i: int, lp: NDArray[np.int64], w: NDArray[np.float64]) -> None:
        cur = self.layers[i]
        sz = cur.shape[0]
        s = np.bincount(lp, weights=w, minlength=sz)
        c = np.bincount(lp, minlength=sz)
        # A node with no neighbour on the swept side keeps its relative place in the layer.
        bary = np.where(c > 0, s / np.maximum(c, 1), self.npos[cur])
        new = cur[np.argsort(bary, kind="stable")]
        self.layers[i] = new
        r = np.arange(sz)
        self.pos[new] = r
        self.npos[new] = (r + 0.5) / sz

    def sweep_down(self) -> None:
        for p in self.active_pairs.tolist():
            a, b = self.pair_ptr[p], self.pair_ptr[p + 1]
            self._reorder(p + 1, self.pos[self.seg_v[a:b]], self.npos[self.seg_u[a:b]])

    def sweep_up(self) -> None:
        for p in self.active_pairs[::-1].tolist():
            a, b = self.pair_ptr[p], self.pair_ptr[p + 1]
            self._reorder(p, self.pos[self.seg_u[a:b]], self.npos[self.seg_v[a:b]])

    def set_pos(self, pos: NDArray[np.int64]) -> None:
        """Go back to an ordering saved from ``pos`` (a copy of it)."""
        self.pos = pos.copy()
        for i in self.touched.tolist():
            cur = self.layers[i]
            new = np.empty_like(cur)
            new[self.pos[cur]] = cur
            self.layers[i] = new
        self.npos = (self.pos + 0.5) / self.size[self.ext_layer]

    def _pair_crossings(
        self, a: NDArray[np.int64], b: NDArray[np.int64]
    ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Crossings between the edges of ``a[j]`` and ``b[j]`` with a left of b, and after
        swapping them: ``(#x > y, #x < y)`` over their neighbours x of a, y of b on the same
        side (layer above, layer below), by position.

        Pairs with few edge pairs (dummies: one each side) are expanded outright; the rest sort
        the y lists of all pairs together (keyed by pair) and look each x up twice, O(d log d)
        in the degrees rather than their product.
        """
        npairs = a.shape[0]
        # Owner o < npairs: pair o's edges up; o >= npairs: pair o - npairs's edges down.
        sa = np.concatenate((self.up_ptr[a], self.down_ptr[a] + self.n_up))
        sb = np.concatenate((self.up_ptr[b], self.down_ptr[b] + self.n_up))
        da = np.concatenate((self.up_ptr[a + 1], self.down_ptr[a + 1] + self.n_up)) - sa
        db = np.concatenate((self.up_ptr[b + 1], self.down_ptr[b + 1] + self.n_up)) - sb
        prod = da * db
        nb, pos = self.nb, self.pos
        if np.all(prod == 1):  # the common case: dummies and chain links, one edge each side
            x, y = pos[nb[sa]], pos[nb[sb]]
            now, swapped = (x > y).astype(np.int64), (x < y).astype(np.int64)
            return now[:npairs] + now[npairs:], swapped[:npairs] + swapped[npairs:]
        now = np.zeros(2 * npairs, dtype=np.int64)
        swapped = np.zeros(2 * npairs, dtype=np.int64)
        small = prod <= _EXPAND_LIMIT
        j = np.flatnonzero(small & (prod > 0))
        if j.size:
            cnt = prod[j]
            owner = np.repeat(np.arange(j.size), cnt)
            t = np.arange(owner.shape[0]) - np.repeat(np.cumsum(cnt) - cnt, cnt)
            dbo = db[j][owner]
            x = pos[nb[sa[j][owner] + t // dbo]]
            y = pos[nb[sb[j][owner] + t % dbo]]
            now[j] = np.bincount(owner, weights=x > y, minlength=j.size)
            swapped[j] = np.bincount(owner, weights=x < y, minlength=j.size)
        j = np.flatnonzero(~small)
        if j.size:
            width = int(self.size.max()) + 1

            def gather(st: NDArray[np.int64], deg: NDArray[np.int64]):
                owner = np.repeat(np.arange(st.shape[0]), deg)
                start = np.repeat(st - np.cumsum(deg) + deg, deg)
                return owner, pos[nb[np.arange(owner.shape[0]) + start]]

            ja, xa = gather(sa[j], da[j])
            jb, yb = gather(sb[j], db[j])
            ykeys = np.sort(jb * width + yb)
            xkeys = ja * width + xa
            below = np.searchsorted(ykeys, xkeys, side="left")
            above = np.searchsorted(ykeys, xkeys, side="right")
            bstart = np.searchsorted(ykeys, ja * width, side="left")
            bend = np.searchsorted(ykeys, (ja + 1) * width, side="left")
            now[j] = np.bincount(ja, weights=below - bstart, minlength=j.size)
            swapped[j] = np.bincount(ja, weights=bend - above, minlength=j.size)
        return now[:npairs] + now[npairs:], swapped[:npairs] + swapped[npairs:]

    def _neighbours(self, v: NDArray[np.int64]) -> NDArray[np.int64]:
        """The nodes ``v`` and every node one layer up or down from them (with repeats)."""
        deg = self.adj_ptr[v + 1] - self.adj_ptr[v]
        start = np.repeat(self.adj_ptr[v] - np.cumsum(deg) + deg, deg)
        return np.concatenate((v, self.adj[np.arange(start.shape[0]) + start]))

    def transpose(self, ties: bool = False, max_rounds: int = 32) -> int:
        """Swap adjacent nodes of a layer wherever that removes crossings; how many it removed.

        Swapping neighbours a, b changes only the crossings between a's and b's own edges, so
        disjoint pairs of one layer can be swapped together, and layers two apart share no
        gap, so all layers of one parity go at once: a round is four numpy steps (layer parity
        x parity of the pair's position). After the first round only pairs next to a change
        are checked again (a node that moved, or a neighbour of one). Rounds stop once one
        removes nothing, or when the orderer's ``budget`` runs out. ``ties`` also swaps pairs
        that cross as much either way (as dot's transpose does every other pass), which lets a
        node drift across a plateau; the count never goes up.
        """
        tl = self.touched
        if tl.size == 0 or self.budget <= 0:
            return 0
        if not self.has_adjacency:
            self._adjacency()
        sizes = self.size[tl]
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        ids = np.concatenate([self.layers[i] for i in tl.tolist()])
        first = np.zeros(self.size.shape[0], dtype=np.int64)
        first[tl] = starts  # ids[first[l] + p] is the node at position p of layer l
        # Slot j is the pair (ids[j], ids[j + 1]) when both are in one layer; four groups by
        # (layer parity, parity of the pair's left position).
        owner = np.repeat(np.arange(tl.shape[0]), sizes)
        k = np.arange(ids.shape[0]) - starts[owner]
        valid = np.zeros(ids.shape[0], dtype=bool)
        valid[:-1] = k[:-1] < sizes[owner[:-1]] - 1
        code = (tl[owner] & 1) * 2 + (k & 1)
        groups = [valid & (code == g) for g in range(4)]

        def mark(nodes: NDArray[np.int64], *masks: NDArray[np.bool_]) -> None:
            f = first[self.ext_layer[nodes]] + self.pos[nodes]  # a node is in slots f - 1, f
            for m in masks:
                m[f] = True
                m[np.maximum(f - 1, 0)] = True

        todo = valid.copy()
        removed = 0
        for _ in range(max_rounds):
            later = np.zeros_like(todo)
            gained = 0
            for g in groups:
                j = np.flatnonzero(todo & g)
                if j.size == 0:
                    continue
                self.budget -= j.size + _CHECK_COST
                a, b = ids[j], ids[j + 1]
                now, swapped = self._pair_crossings(a, b)
                sel = swapped < now
                gained += int((now - swapped)[sel].sum())
                if ties:
                    sel |= (swapped == now) & (now > 0)
                if not sel.any():
                    continue
                j = j[sel]
                a, b = ids[j], ids[j + 1]
                ids[j], ids[j + 1] = b, a
                self.pos[a] += 1
                self.pos[b] -= 1
                # Pairs holding a moved node or a neighbour of one: later groups of this round
                # and the next round look at them again.
                mark(self._neighbours(np.concatenate((a, b))), todo, later)
            removed += gained
            if gained == 0 or not later.any() or self.budget <= 0:
                break
            todo = later
        bounds = np.concatenate((starts, [ids.shape[0]])).tolist()
        for t, i in enumerate(tl.tolist()):
            self.layers[i] = ids[bounds[t] : bounds[t + 1]]
        self.npos[ids] = (self.pos[ids] + 0.5) / self.size[self.ext_layer[ids]]
        return removed


def _upward_bfs_key(
    key: NDArray[np.float64], seg_u: NDArray[np.int64], seg_v: NDArray[np.int64]
) -> NDArray[np.float64]:
    """A second starting order: breadth-first visit order going up from the sinks.

    dot's mincross starts once from the sources and once from the sinks and keeps the better
    result; the default order here is the sources' one (discovery order), this is the other.
    Each sink (in ``key`` order) is searched from in turn, a node's upper neighbours in
    ``key`` order. A plain loop over the extended graph; only run on graphs of bounded size.
    """
    n_ext = key.shape[0]
    o = np.lexsort((seg_u, key[seg_u], seg_v))
    ups = seg_u[o].tolist()
    ptr = np.concatenate(([0], np.cumsum(np.bincount(seg_v, minlength=n_ext)))).tolist()
    has_down = np.zeros(n_ext, dtype=bool)
    has_down[seg_u] = True
    sinks = np.flatnonzero(~has_down)
    sinks = sinks[np.argsort(key[sinks], kind="stable")].tolist()
    seen = [False] * n_ext
    visit = [0] * n_ext
    count = 0
    for s0 in sinks:
        if seen[s0]:
            continue
        seen[s0] = True
        queue = collections.deque([s0])
        while queue:
            v = queue.popleft()
            visit[v] = count
            count += 1
            for u in ups[ptr[v] : ptr[v + 1]]:
                if not seen[u]:
                    seen[u] = True
                    queue.append(u)
    return np.asarray(visit, dtype=np.float64)


def _sweep(orderer: _Orderer, sweeps: int) -> tuple[int, NDArray[np.int64]]:
    """Reduce crossings from the orderer's current order: (best count, its positions).

    First barycenter sweeps down and up while they improve (cheap, vectorised per layer); then,
    from the best order so far, the same sweeps each followed by transposition (adjacent swaps
    that remove crossings, with ties allowed every other time so nodes can drift across a
    plateau), again while they improve. The best order seen wins, so the second phase can only
    improve on the first.
    """
    best = orderer.crossings()
    best_pos = orderer.pos.copy()
    for _ in range(sweeps):
        if best == 0:
            return best, best_pos
        improved = False
        for step in (orderer.sweep_down, orderer.sweep_up):
            step()
            c = orderer.crossings()
            if c < best:
                best, best_pos, improved = c, orderer.pos.copy(), True
        if not improved:
            break
    orderer.set_pos(best_pos)
    ties = True
    for _ in range(sweeps):
        if best == 0 or orderer.budget <= 0:
            break
        improved = False
        for step in (orderer.sweep_down, orderer.sweep_up):
            step()
            c = orderer.crossings()
            if c < best:
                best, best_pos, improved = c, orderer.pos.copy(), True
            c -= orderer.transpose(ties=ties)
            ties = not ties
            if c < best:
                best, best_pos, improved = c, orderer.pos.copy(), True
        if not improved:
            break
    return best, best_pos


def _reduce_crossings(
    ext_layer: NDArray[np.int64],
    key: NDArray[np.float64],
    seg_u: NDArray[np.int64],
    seg_v: NDArray[np.int64],
    n_layers: int,
    sweeps: int,
) -> tuple[int, int, NDArray[np.int64]]:
    """Order every layer: (crossings of the ``key`` order, crossings after, positions)."""
    orderer = _Orderer(ext_layer, key, seg_u, seg_v, n_layers)
    initial = orderer.crossings()
    if sweeps <= 0 or initial == 0:
        return initial, initial, orderer.pos.copy()
    best, best_pos = _sweep(orderer, sweeps)
    if best > 0 and ext_layer.shape[0] <= _SECOND_START_MAX:
        other = _Orderer(ext_layer, _upward_bfs_key(key, seg_u, seg_v), seg_u, seg_v, n_layers)
        c, pos = _sweep(other, sweeps)
        if c < best:
            best, best_pos = c, pos
    return initial, best, best_pos


def _group_cummax(y: NDArray[np.float64], group: NDArray[np.int64]) -> NDArray[np.float64]:
    """Running maximum restarting at each group (groups contiguous and ascending)."""
    lo, hi = y.min(), y.max()
    off = (hi - lo + 1.0) * group
    return np.maximum.accumulate(y - lo + off) - off + lo


def _coordinates(
    ext_layer: NDArray[np.int64],
    pos: NDArray[np.int64],
    is_dummy: NDArray[np.bool_],
    seg_u: NDArray[np.int64],
    seg_v: NDArray[np.int64],
) -> NDArray[np.float64]:
    """Within-layer coordinates: ordered, gapped, each node near the mean of its neighbours.

    One round moves every node to the mean position of its neighbours (both sides), then projects
    each layer back onto the constraint ``x[k+1] - x[k] >= gap[k]`` by averaging a left-to-right
    push (running max) and a right-to-left push (running min): both satisfy the constraint, so
    their mean does, and the mean does not drift sideways as a one-sided push would. Rounds are
    whole-array operations (Jacobi, not Gauss-Seidel), so depth costs nothing.
    """
    n_ext = ext_layer.shape[0]
    perm = np.lexsort((pos, ext_layer))  # (layer, order)
    grp = ext_layer[perm]
    first = np.ones(n_ext, dtype=bool)
    first[1:] = grp[1:] != grp[:-1]
    dum = is_dummy[perm]
    gap = np.where(dum[1:] | dum[:-1], DUMMY_GAP, NODE_GAP)
    gap = np.concatenate(([0.0], gap))
    gap[first] = 0.0
    cum = np.cumsum(gap)
    cum -= np.maximum.accumulate(np.where(first, cum, -np.inf))  # restart per layer
    rgrp = grp.max() - grp[::-1]

    def project(want: NDArray[np.float64]) -> NDArray[np.float64]:
        yv = want[perm] - cum
        left = _group_cummax(yv, grp)
        right = -_group_cummax(-yv[::-1], rgrp)[::-1]
        out = np.empty(n_ext)
        out[perm] = 0.5 * (left + right) + cum
        return out

    # Start from each layer centred on 0, in order.
    x = np.zeros(n_ext)
    last = np.ones(n_ext, dtype=bool)
    last[:-1] = grp[1:] != grp[:-1]
    width = np.repeat(cum[last], np.bincount(grp))
    x[perm] = cum - 0.5 * width
    if seg_u.size == 0 or width.max() == 0:
        return x - x.min() if n_ext else x
    ends = np.concatenate((seg_u, seg_v))
    other = np.concatenate((seg_v, seg_u))
    deg = np.bincount(ends, minlength=n_ext)
    has = deg > 0
    for _ in range(COORD_ROUNDS):
        want = np.bincount(ends, weights=x[other], minlength=n_ext)
        want = np.where(has, want / np.maximum(deg, 1), x)
        new = project(want)
        moved = float(np.abs(new - x).max())
        x = new
        if moved < 1e-3:
            break
    return x - x.min()


def layered_layout(
    n: int,
    src: ArrayLike,
    dst: ArrayLike,
    roots: ArrayLike | None = None,
    orientation: Orientation = "TB",
    sweeps: int = 8,
) -> Layout:
    """Lay out a DAG of ``n`` nodes with edges ``src[i] -> dst[i]`` in layers.

    Edges point in gradient flow, from the roots of a backward graph to its leaves; duplicates
    and multi-edges are allowed and share one route. Every source is in layer 0 and every edge
    points at least one layer down; within that, the layers make the edges as short as they can
    in total (up to a work budget on big tangled graphs), and every node has an edge of length
    1. ``roots`` come first in layer 0's initial order, in the given order; a root with an
    incoming edge (one root reachable from another) cannot be in layer 0 without an upward edge,
    so it is layered like any other node.

    ``sweeps`` bounds the down+up passes of each phase of the crossing reduction (barycenter
    alone, then barycenter plus transposition); the best ordering seen wins, and a phase stops
    early once a pass fails to improve it. ``sweeps=0`` keeps the discovery order (real nodes by
    index, roots first; each dummy sorted as its edge's source index), the unreduced baseline
    for ``initial_crossings``.

    Example:
        >>> lay = layered_layout(4, [0, 0, 1], [1, 2, 3])
        >>> lay.layer.tolist()
        [0, 1, 1, 2]
    """
    if orientation not in ("TB", "LR"):
        raise ValueError(f"orientation must be 'TB' or 'LR', not {orientation!r}")
    if n < 0:
        raise ValueError("n must be >= 0")
    s, d = _as_edges(n, src, dst)
    n_edges = s.shape[0]
    # Unique edges drive the layout; input edges map onto them for drawing.
    ukey, inverse = np.unique(s * max(n, 1) + d, return_inverse=True)
    inverse = inverse.reshape(-1)
    us, ud = ukey // max(n, 1), ukey % max(n, 1)
    layer = longest_path_layers(n, s, d).astype(np.int64)
    layer = _min_length_layers(n, us, ud, layer)
    n_layers = int(layer.max()) + 1 if n else 0

    span = layer[ud] - layer[us]
    n_dum_e = span - 1
    n_dummies = int(n_dum_e.sum())
    dum_start = n + np.concatenate(([0], np.cumsum(n_dum_e)[:-1])).astype(np.int64)

    # Points of each unique edge's route: source, its dummies, target.
    npts = span + 1
    pstart = np.concatenate(([0], np.cumsum(npts)[:-1])).astype(np.int64)
    p_edge = np.repeat(np.arange(us.shape[0]), npts)
    k = np.arange(int(npts.sum())) - pstart[p_edge]
    p_node = np.where(k == 0, us[p_edge], dum_start[p_edge] + k - 1)
    p_node = np.where(k == span[p_edge], ud[p_edge], p_node)
    same = p_edge[1:] == p_edge[:-1]
    seg_u, seg_v = p_node[:-1][same], p_node[1:][same]

    n_ext = n + n_dummies
    ext_layer = np.empty(n_ext, dtype=np.int64)
    ext_layer[:n] = layer
    is_dummy = np.zeros(n_ext, dtype=bool)
    is_dummy[n:] = True
    key = np.zeros(n_ext, dtype=np.float64)
    key[:n] = np.arange(n)
    dmask = (k > 0) & (k < span[p_edge])
    ext_layer[p_node[dmask]] = layer[us[p_edge[dmask]]] + k[dmask]
    # Dummies sort just after their source's index; ties keep creation order (by target).
    key[p_node[dmask]] = us[p_edge[dmask]] + 0.5
    if roots is not None:
        r = np.asarray(roots, dtype=np.int64).reshape(-1)
        if r.size and (r.min() < 0 or r.max() >= n):
            raise ValueError(f"roots must be in [0, {n})")
        _, first = np.unique(r, return_index=True)
        r = r[np.sort(first)]
        key[r] = np.arange(r.shape[0]) - float(r.shape[0])

    if n_ext:
        initial, best, best_pos = _reduce_crossings(ext_layer, key, seg_u, seg_v, n_layers, sweeps)
        coord = _coordinates(ext_layer, best_pos, is_dummy, seg_u, seg_v)
    else:
        initial = best = 0
        best_pos = np.zeros(0, dtype=np.int64)
        coord = np.zeros(0)

    depth = ext_layer.astype(np.float64)
    if orientation == "TB":
        ex, ey = coord, -depth
    else:
        ex, ey = depth, -coord

    # Polylines per input edge: its unique edge's points plus a NaN separator.
    e_pts = npts[inverse] if n_edges else np.zeros(0, dtype=np.int64)
    eptr = np.concatenate(([0], np.cumsum(e_pts + 1))).astype(np.int64)
    total = int(eptr[-1])
    slot_edge = np.repeat(np.arange(n_edges), e_pts + 1)
    j = np.arange(total) - eptr[slot_edge]
    is_sep = j == e_pts[slot_edge] if n_edges else np.zeros(0, dtype=bool)
    src_pt = pstart[inverse[slot_edge]] + np.minimum(j, e_pts[slot_edge] - 1)
    pts_node = p_node[src_pt] if total else np.zeros(0, dtype=np.int64)
    edge_x = np.where(is_sep, np.nan, ex[pts_node] if total else 0.0).astype(np.float32)
    edge_y = np.where(is_sep, np.nan, ey[pts_node] if total else 0.0).astype(np.float32)

    arrays = {
        "layer": layer.astype(np.int32),
        "order": best_pos[:n].astype(np.int32),
        "x": ex[:n].astype(np.float32),
        "y": ey[:n].astype(np.float32),
        "edge_x": edge_x,
        "edge_y": edge_y,
        "edge_ptr": eptr.astype(np.int32),
        "ext_layer": ext_layer.astype(np.int32),
        "ext_order": best_pos.astype(np.int32),
        "ext_x": ex.astype(np.float32),
        "ext_y": ey.astype(np.float32),
        "seg_src": seg_u.astype(np.int32),
        "seg_dst": seg_v.astype(np.int32),
    }
    for a in arrays.values():
        a.flags.writeable = False
    return Layout(
        n_layers=n_layers,
        orientation=orientation,
        n_dummies=n_dummies,
        crossings=int(best),
        initial_crossings=int(initial),
        **arrays,
    )
