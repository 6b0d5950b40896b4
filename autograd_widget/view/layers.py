"""Layering of a DAG: which layer each node sits in (step 1 of the layered layout).

Longest path from the sources first (``layer[dst] >= layer[src] + 1``), then, where some edge is
longer than one layer, network simplex on the graph with its plain paths contracted, to shorten
the edges in total as Graphviz ``dot`` does (a shared weight used at every step of an unrolled RNN
pulls each step's ops down to it rather than trailing a long edge per use). The pivots run under
a fixed work budget (``NS_WORK``), so a big tangled graph gets a partial improvement, not a stall.
Pure numpy and the standard library; deterministic.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["NS_WORK", "as_edges", "longest_path_layers", "min_length_layers"]

# Node visits the network simplex may spend shortening edges (~0.5 us each): an unrolled
# 100-step LSTM (1.5k nodes) needs ~1.5e5 and finishes; a big tangled graph stops part way.
NS_WORK = 200_000

def as_edges(n: int, src: ArrayLike, dst: ArrayLike) -> tuple[NDArray[np.int64], ...]:
    """Edge arrays as int64, checked: same length, endpoints in ``[0, n)`` (ValueError if not).

    Example:
        >>> [a.tolist() for a in as_edges(3, [0, 1], [1, 2])]
        [[0, 1], [1, 2]]
    """
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
    s, d = as_edges(n, src, dst)
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


def min_length_layers(
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
    pivots are a Python loop costing O(tree) each, so they stop after ``NS_WORK`` node visits:
    every pivot lowers the total span, so stopping early gives a valid, partly shortened
    layering (a 760-node unrolled LSTM needs ~100 pivots, ~15 ms).

    Example:
        >>> us, ud = np.array([0, 0, 1]), np.array([1, 2, 2])
        >>> min_length_layers(3, us, ud, np.array([0, 1, 2])).tolist()
        [0, 1, 2]
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

    while work < NS_WORK:
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
