"""Layered (Sugiyama-style) layout of a DAG, in numpy.

Graphviz ``dot`` needs a binary, takes ~56 s on a 10k fan and crashes on a 50k chain; networkx
takes ~1 s on a 50k chain. Backward graphs are deep (one layer per op) and often wide (one leaf per
parameter), so every step here is either vectorised over all nodes or loops only over the layer
pairs that can hold a crossing (both layers at least two nodes wide). A chain or a fan therefore
costs one Python-level pass over the edges (the layering) plus a handful of array operations.

The steps are the classic ones:

1. longest-path layering from the sources (``layer[dst] >= layer[src] + 1``, sources in layer 0);
2. dummy nodes on every edge spanning more than one layer, so that the ordering sees long edges
   and crossings are counted between adjacent layers only;
3. crossing reduction: barycenter sweeps down and up, keeping the best ordering seen;
4. x coordinates: neighbour averaging projected onto "ordered, at least a gap apart" per layer,
   which centres parents over children and keeps long edges nearly straight.

The module is pure: numpy and the standard library only, no torch, traitlets or plotly. Nothing is
random and every sort is stable, so the same input always gives bit-identical output.
"""

from __future__ import annotations

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
    predecessor exactly one layer up, which the barycenter sweeps rely on. Leaves (AccumulateGrad)
    land just below their consumer instead of all sinking to the bottom. Raises ValueError on a
    cycle (self-loops included).

    This is the one Python-level loop over edges in the module (Kahn's algorithm on CSR lists):
    the dependency chain of a DAG is inherently sequential, and a plain loop over a 50k-chain
    costs ~20 ms where a numpy step per level would cost ~1 s. No recursion, so depth is unbounded.
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
    return _inversions(pair[perm] * wl + lpos[perm])


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
    points at least one layer down. ``roots`` come first in layer 0's initial order, in the given
    order; a root with an incoming edge (one root reachable from another) cannot be in layer 0
    without an upward edge, so it is layered like any other node.

    ``sweeps`` bounds the down+up barycenter passes; the best ordering seen wins, and passes stop
    early once one fails to improve it. ``sweeps=0`` keeps the discovery order (real nodes by
    index, roots first; each dummy sorted as its edge's source index), the unreduced baseline
    for ``initial_crossings``.
    """
    if orientation not in ("TB", "LR"):
        raise ValueError(f"orientation must be 'TB' or 'LR', not {orientation!r}")
    if n < 0:
        raise ValueError("n must be >= 0")
    s, d = _as_edges(n, src, dst)
    n_edges = s.shape[0]
    layer = longest_path_layers(n, s, d).astype(np.int64)
    n_layers = int(layer.max()) + 1 if n else 0

    # Unique edges drive the layout; input edges map onto them for drawing.
    ukey, inverse = np.unique(s * max(n, 1) + d, return_inverse=True)
    inverse = inverse.reshape(-1)
    us, ud = ukey // max(n, 1), ukey % max(n, 1)
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
        orderer = _Orderer(ext_layer, key, seg_u, seg_v, n_layers)
        initial = best = orderer.crossings()
        best_pos = orderer.pos.copy()
        for _ in range(sweeps):
            if best == 0:
                break
            improved = False
            for step in (orderer.sweep_down, orderer.sweep_up):
                step()
                c = orderer.crossings()
                if c < best:
                    best, best_pos, improved = c, orderer.pos.copy(), True
            if not improved:
                break
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
