"""Layered (Sugiyama-style) layout of a DAG with sized nodes, in numpy.

Graphviz ``dot`` needs a binary, takes ~56 s on a 10k fan and crashes on a 50k chain. Backward
graphs are deep (one layer per op) and often wide (one leaf per parameter), so every step here is
either vectorised over all nodes or loops only over the layer pairs that can hold a crossing.

The steps are the classic ones, as in ``dot`` (`arrange` does 1-3, `place` does 4-5):

1. layering (`layers`): longest path, then network simplex to shorten the edges in total;
   nodes pinned to the ``top`` or ``bottom`` (a cluster's ports) go to the first or last layer;
2. one dummy node per layer crossed, but only on edges spanning at most `MAX_DUMMY_SPAN` (4)
   layers (at most 3 dummies: constant work); a longer edge costs O(1) work whatever its span,
   because it runs in a *lane*, a straight line beside the boxes of the layers it passes
   (interval colouring gives each lane a track), instead of through every layer (dot's dummies
   made a 10k-node fan take ~56 s);
3. crossing reduction (`ordering`) on the short edges;
4. within-layer coordinates: neighbour averaging projected onto "ordered, at least a gap apart"
   per layer, the gap between two neighbours being half of each one's breadth plus a margin,
   which centres parents over children and keeps routes nearly straight;
5. across-layer coordinates: each layer as thick as its thickest node, a gap between layers;
   routes: node centre, dummies, node centre; a lane edge leaves its source's box downwards,
   crosses the gap below that layer to its lane, follows it, and enters its target from above.

Because 1-3 depend only on the graph and 4-5 also on the sizes, a caller that re-sizes a node
(a cluster unfolding inside it) re-runs `place` on the cached `Arrangement` only.

The module is pure: numpy and the standard library only, no torch, traitlets or plotly. Nothing is
random and every sort is stable, so the same input always gives bit-identical output.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Literal, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .layers import as_edges, longest_path_layers, min_length_layers
from .ordering import crossings_between, reduce_crossings

__all__ = [
    "DUMMY_GAP",
    "MAX_DUMMY_SPAN",
    "NODE_GAP",
    "Arrangement",
    "Layout",
    "arrange",
    "count_crossings",
    "layered_layout",
    "longest_path_layers",
    "place",
]

Orientation = Literal["TB", "LR"]

# Within a layer, the margin between two real nodes' boxes, and between any pair involving a
# dummy (dummies are only bends of edges, so they may sit closer); also the spacing of lanes.
NODE_GAP = 1.0
DUMMY_GAP = 0.5
# Gap between two layers (the pitch of layers of zero-thickness nodes).
LAYER_GAP = 1.0
# Rounds of neighbour averaging in the coordinate step. Each round moves information one layer,
# so this bounds how far a wide part of the graph can pull a narrow one; rounds stop early
# once nothing moves (a fan settles in one or two).
COORD_ROUNDS = 24
#: Edges spanning at most this many layers bend through one dummy per layer crossed; longer
#: ones run in a lane (O(1) work each, whatever the span).
MAX_DUMMY_SPAN = 4


@dataclass(frozen=True, eq=False)
class Arrangement:
    """Steps 1-3 of a layout (layers, dummies, order): everything that does not depend on the
    nodes' sizes, so it can be cached and re-placed when a size changes.

    ``us``/``ud``: the unique edges; ``inverse`` maps each input edge to its unique edge;
    ``lane`` marks the unique edges routed in lanes. ``ext_*``/``seg_*``: the extended graph
    (nodes ``0..n-1``, then the dummies) and its segments, all between adjacent layers; ``pos``
    each extended node's order in its layer; ``p_node``/``pstart``: each unique edge's points
    (source, dummies, target) for the edges that are not in lanes.

    Example:
        >>> arr = arrange(3, [0, 1, 0], [1, 2, 2]); arr.layer.tolist(), arr.n_dummies
        ([0, 1, 2], 1)
    """

    n: int
    layer: NDArray[np.int64]
    n_layers: int
    us: NDArray[np.int64]
    ud: NDArray[np.int64]
    inverse: NDArray[np.int64]
    lane: NDArray[np.bool_]
    n_dummies: int
    ext_layer: NDArray[np.int64]
    is_dummy: NDArray[np.bool_]
    seg_u: NDArray[np.int64]
    seg_v: NDArray[np.int64]
    pos: NDArray[np.int64]
    p_node: NDArray[np.int64]
    pstart: NDArray[np.int64]
    npts: NDArray[np.int64]
    crossings: int
    initial_crossings: int


@dataclass(frozen=True, eq=False)
class Layout:
    """A finished layout. Arrays are read-only, so a layout can be shared and cached safely.

    Units: with zero-size nodes (the default), 1.0 between adjacent layers and at least 1.0
    between neighbouring nodes of a layer (0.5 where a dummy is involved); with sizes, each
    layer is as thick as its thickest node plus ``layer_gap`` and neighbours keep their boxes
    ``node_gap`` apart. ``"TB"``: ``y`` decreases layer after layer (roots on top, since
    plotly's y axis points up) and ``x >= 0`` grows with ``order``. ``"LR"``: ``x`` grows layer
    after layer and ``y <= 0`` decreases with ``order``, so the first node of a layer is on top.
    ``x``, ``y`` are box centres. In both, the within-layer coordinate of the outermost box edge
    (real node or dummy) is exactly 0, and the two orientations are the same drawing turned:
    ``LR.x == -TB.y`` and ``LR.y == -TB.x`` (given sizes turned with them). ``bounds`` (xmin,
    xmax, ymin, ymax) holds every box, bend and lane.

    Extended ids: ``0..n-1`` are the real nodes, ``n..n+n_dummies-1`` the dummies. ``seg_src``,
    ``seg_dst`` are the unique edges of the extended graph, every one between adjacent layers;
    duplicate input edges share one route and are counted once in ``crossings``; the
    ``n_lanes`` unique edges longer than `MAX_DUMMY_SPAN` layers are routed in lanes and are
    not in the extended graph. ``initial_crossings`` is the count for the discovery order before
    any sweep, kept so a caller can report what the reduction bought.

    Edge polylines: input edge ``e`` is drawn through the points
    ``edge_x[edge_ptr[e]:edge_ptr[e + 1] - 1]`` (same for ``edge_y``), from its source's centre
    to its target's; the last slot of each edge is NaN, so ``edge_x``/``edge_y`` can go straight
    into one plotly line trace.

    Example:
        >>> lay = layered_layout(2, [0], [1]); lay.y.tolist(), lay.bounds
        ([0.0, -1.0], (0.0, 0.0, -1.0, 0.0))
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
    n_lanes: int = 0
    n_tracks: int = 0
    bounds: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)

    @property
    def n_nodes(self) -> int:
        """How many real nodes the layout places (dummy bend points excluded).

        Example:
            >>> layered_layout(3, [0], [1]).n_nodes
            3
        """
        return int(self.layer.shape[0])


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
    edges once; edges routed in lanes are not in it: `Layout.n_lanes`).
    ``count_crossings(layer, order, src, dst)`` counts any drawing whose edges all
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
        s, d = as_edges(layer_a.shape[0], src, dst)
    return crossings_between(layer_a.astype(np.int64), order_a.astype(np.int64), s, d)




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
    bsz: NDArray[np.float64],
    node_gap: float,
    dummy_gap: float,
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
    half = 0.5 * bsz[perm]
    gap = np.where(dum[1:] | dum[:-1], dummy_gap, node_gap) + half[1:] + half[:-1]
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
        return x - (x - 0.5 * bsz).min() if n_ext else x
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
    return x - (x - 0.5 * bsz).min()


def _pin(
    layer: NDArray[np.int64],
    n: int,
    s: NDArray[np.int64],
    d: NDArray[np.int64],
    top: ArrayLike | None,
    bottom: ArrayLike | None,
) -> NDArray[np.int64]:
    """Move the ``top`` nodes (sources) to a first layer of their own and the ``bottom`` nodes
    (sinks) to a last one: a cluster's entry and exit ports sit on its frame."""
    t = np.asarray(top if top is not None else [], dtype=np.int64).reshape(-1)
    b = np.asarray(bottom if bottom is not None else [], dtype=np.int64).reshape(-1)
    if not (t.size or b.size):
        return layer
    for name, a in (("top", t), ("bottom", b)):
        if a.size and (a.min() < 0 or a.max() >= n):
            raise ValueError(f"{name} nodes must be in [0, {n})")
    if t.size and np.isin(d, t).any():
        raise ValueError("a node pinned to the top must have no incoming edge")
    if b.size and np.isin(s, b).any():
        raise ValueError("a node pinned to the bottom must have no outgoing edge")
    if np.intersect1d(t, b).size:
        raise ValueError("a node cannot be pinned to both the top and the bottom")
    out = layer.copy()
    inner = np.ones(n, dtype=bool)
    inner[t] = inner[b] = False
    if inner.any():
        out[inner] -= out[inner].min() - (1 if t.size else 0)
        last = int(out[inner].max()) + 1
    else:
        last = 1 if t.size else 0
    out[t] = 0
    out[b] = last
    return out


def arrange(
    n: int,
    src: ArrayLike,
    dst: ArrayLike,
    roots: ArrayLike | None = None,
    sweeps: int = 8,
    *,
    top: ArrayLike | None = None,
    bottom: ArrayLike | None = None,
    max_dummy_span: int = MAX_DUMMY_SPAN,
) -> Arrangement:
    """Steps 1-3 of `layered_layout`: layers, dummies on short edges, lanes for long ones, and
    the order within each layer. Arguments as `layered_layout`'s; ``max_dummy_span``: the longest
    span routed through dummies (a huge value gives the classic all-dummies layout, the baseline
    the benchmarks compare with).

    Example:
        >>> arr = arrange(6, [0, 1, 2, 3, 4, 0], [1, 2, 3, 4, 5, 5])  # 0 -> 5 spans 5 layers
        >>> arr.lane.tolist(), arr.n_dummies
        ([False, True, False, False, False, False], 0)
    """
    if n < 0:
        raise ValueError("n must be >= 0")
    s, d = as_edges(n, src, dst)
    # Unique edges drive the layout; input edges map onto them for drawing.
    ukey, inverse = np.unique(s * max(n, 1) + d, return_inverse=True)
    inverse = inverse.reshape(-1)
    us, ud = ukey // max(n, 1), ukey % max(n, 1)
    layer = longest_path_layers(n, s, d).astype(np.int64)
    layer = min_length_layers(n, us, ud, layer)
    layer = _pin(layer, n, s, d, top, bottom)
    n_layers = int(layer.max()) + 1 if n else 0

    span = layer[ud] - layer[us]
    lane = span > max_dummy_span
    n_dum_e = np.where(lane, 0, span - 1)
    n_dummies = int(n_dum_e.sum())
    dum_start = n + np.concatenate(([0], np.cumsum(n_dum_e)[:-1])).astype(np.int64)

    # Points of each unique edge's route through the layers (a lane edge: its two ends only).
    npts = n_dum_e + 2
    pstart = np.concatenate(([0], np.cumsum(npts)[:-1])).astype(np.int64)
    p_edge = np.repeat(np.arange(us.shape[0]), npts)
    k = np.arange(int(npts.sum())) - pstart[p_edge]
    last = npts[p_edge] - 1
    p_node = np.where(k == 0, us[p_edge], dum_start[p_edge] + k - 1)
    p_node = np.where(k == last, ud[p_edge], p_node)
    same = (p_edge[1:] == p_edge[:-1]) & ~lane[p_edge[1:]]
    seg_u, seg_v = p_node[:-1][same], p_node[1:][same]

    n_ext = n + n_dummies
    ext_layer = np.empty(n_ext, dtype=np.int64)
    ext_layer[:n] = layer
    is_dummy = np.zeros(n_ext, dtype=bool)
    is_dummy[n:] = True
    key = np.zeros(n_ext, dtype=np.float64)
    key[:n] = np.arange(n)
    dmask = (k > 0) & (k < last)
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
        initial, best, pos = reduce_crossings(ext_layer, key, seg_u, seg_v, n_layers, sweeps)
    else:
        initial = best = 0
        pos = np.zeros(0, dtype=np.int64)
    return Arrangement(
        n=n, layer=layer, n_layers=n_layers, us=us, ud=ud, inverse=inverse, lane=lane,
        n_dummies=n_dummies, ext_layer=ext_layer, is_dummy=is_dummy, seg_u=seg_u, seg_v=seg_v,
        pos=pos, p_node=p_node, pstart=pstart, npts=npts, crossings=int(best),
        initial_crossings=int(initial),
    )


def _sizes(a: ArrayLike | None, n: int, name: str) -> NDArray[np.float64]:
    if a is None:
        return np.zeros(n)
    out = np.asarray(a, dtype=np.float64).reshape(-1)
    if out.shape != (n,) or not np.isfinite(out).all() or (out < 0).any():
        raise ValueError(f"{name} must be {n} finite sizes >= 0")
    return out


def _tracks(start: NDArray[np.int64], end: NDArray[np.int64]) -> NDArray[np.int64]:
    """Track of each interval so that intervals sharing a track do not overlap (touching ends
    may share): greedy by start, reusing the lowest free track; as few tracks as possible."""
    out = np.zeros(start.shape[0], dtype=np.int64)
    free: list[int] = []
    busy: list[tuple[int, int]] = []
    n_tracks = 0
    for i in np.lexsort((end, start)).tolist():
        s0 = int(start[i])
        while busy and busy[0][0] <= s0:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            t = heapq.heappop(free)
        else:
            t, n_tracks = n_tracks, n_tracks + 1
        out[i] = t
        heapq.heappush(busy, (int(end[i]), t))
    return out


def _range_max(
    v: NDArray[np.float64], a: NDArray[np.int64], b: NDArray[np.int64]
) -> NDArray[np.float64]:
    """``max(v[a[i]:b[i] + 1])`` for every i (``a <= b``), from a sparse table: O(len(v) log)
    to build, O(1) per query."""
    table = [v]
    width = 1
    while 2 * width <= v.shape[0]:
        prev = table[-1]
        table.append(np.maximum(prev[:-width], prev[width:]))
        width *= 2
    k = np.floor(np.log2(b - a + 1)).astype(np.int64)
    out = np.empty(a.shape[0])
    for lvl in np.unique(k).tolist():
        i = np.flatnonzero(k == lvl)
        t = table[lvl]
        out[i] = np.maximum(t[a[i]], t[b[i] - (1 << lvl) + 1])
    return out


def place(
    arr: Arrangement,
    orientation: Orientation = "TB",
    *,
    breadth: ArrayLike | None = None,
    depth: ArrayLike | None = None,
    node_gap: float = NODE_GAP,
    dummy_gap: float = DUMMY_GAP,
    layer_gap: float = LAYER_GAP,
) -> Layout:
    """Steps 4-5 of `layered_layout`: coordinates and routes of an `Arrangement`, for nodes of
    the given sizes. ``breadth[i]``: node i's extent along its layer (its width in TB, height in
    LR); ``depth[i]``: across the layers. Zero sizes (the default) give the unit drawing.

    Example:
        >>> arr = arrange(3, [0, 0], [1, 2])
        >>> place(arr, breadth=[1.0, 2.0, 2.0], node_gap=0.5).x.tolist()  # centres 2.5 apart
        [2.25, 1.0, 3.5]
    """
    if orientation not in ("TB", "LR"):
        raise ValueError(f"orientation must be 'TB' or 'LR', not {orientation!r}")
    n, n_layers = arr.n, arr.n_layers
    n_ext = n + arr.n_dummies
    bsz = np.zeros(n_ext)
    bsz[:n] = _sizes(breadth, n, "breadth")
    dsz = _sizes(depth, n, "depth")
    if n_ext:
        coord = _coordinates(arr.ext_layer, arr.pos, arr.is_dummy, arr.seg_u, arr.seg_v,
                             bsz, node_gap, dummy_gap)
    else:
        coord = np.zeros(0)
    # Layers: each as thick as its thickest node, `layer_gap` apart; centres in the middle.
    thick = np.zeros(n_layers)
    if n:
        np.maximum.at(thick, arr.layer, dsz)
    top = np.concatenate(([0.0], np.cumsum(thick + layer_gap)[:-1])) if n_layers else thick
    centre = top + 0.5 * thick
    depth_c = centre[arr.ext_layer] if n_ext else np.zeros(0)

    # Routes of the unique edges: through the layers, or in a lane. Through the layers, a
    # route leaves its source straight down to the bottom of the source's layer, crosses each
    # gap between layers diagonally, passes each layer it crosses straight down (at its dummy),
    # and enters its target from the top of the target's layer: only the gaps hold slanted
    # segments, so a route never cuts through a box, however thick a layer (a module's frame).
    # Points that coincide (layers of zero thickness) are dropped.
    us, ud, lane = arr.us, arr.ud, arr.lane
    lane_e = np.flatnonzero(lane)
    short_e = np.flatnonzero(~lane)
    bottom = top + thick
    cnt = arr.npts[short_e]
    rep = np.repeat(short_e, cnt)
    j = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    nodes = arr.p_node[arr.pstart[rep] + j] if rep.size else rep
    last_j = np.repeat(cnt - 1, cnt)
    nl = arr.ext_layer[nodes] if rep.size else nodes
    first_d = np.where(j == 0, depth_c[nodes] if rep.size else 0.0, top[nl] if rep.size else 0.0)
    second_d = np.where(j == last_j, depth_c[nodes] if rep.size else 0.0,
                        bottom[nl] if rep.size else 0.0)
    sx = np.repeat(coord[nodes] if rep.size else np.zeros(0), 2)
    sd = np.stack([first_d, second_d], 1).reshape(-1)
    s_edge = np.repeat(rep, 2)
    # The layer-edge points of a route's two ends (not its dummies): straight below the source,
    # straight above the target; redundant when the route is straight there.
    s_help = np.stack([(j == last_j) & (j > 0), (j == 0) & (j < last_j)], 1).reshape(-1)
    keep = np.ones(sx.shape[0], dtype=bool)
    keep[1:] = (s_edge[1:] != s_edge[:-1]) | (sx[1:] != sx[:-1]) | (sd[1:] != sd[:-1])
    sx, sd, s_edge, s_help = sx[keep], sd[keep], s_edge[keep], s_help[keep]
    # ...and such an end point on a straight vertical run (an edge between aligned boxes).
    if sx.size > 2:
        inner = np.zeros(sx.shape[0], dtype=bool)
        inner[1:-1] = (s_edge[1:-1] == s_edge[:-2]) & (s_edge[1:-1] == s_edge[2:])
        inner[1:-1] &= (sx[1:-1] == sx[:-2]) & (sx[1:-1] == sx[2:]) & s_help[1:-1]
        sx, sd, s_edge = sx[~inner], sd[~inner], s_edge[~inner]
    npts = np.where(lane, 6, 0)
    npts[short_e] = np.bincount(s_edge, minlength=us.shape[0])[short_e] if s_edge.size else 0
    ustart = np.concatenate(([0], np.cumsum(npts)[:-1])).astype(np.int64)
    total_u = int(npts.sum())
    ub = np.zeros(total_u)
    ud_ = np.zeros(total_u)
    if s_edge.size:
        k_in = np.arange(s_edge.shape[0]) - np.searchsorted(s_edge, s_edge)
        ub[ustart[s_edge] + k_in] = sx
        ud_[ustart[s_edge] + k_in] = sd
    lo = coord - 0.5 * bsz if n_ext else coord
    hi = coord + 0.5 * bsz if n_ext else coord
    bmin = float(lo.min()) if n_ext else 0.0
    bmax = float(hi.max()) if n_ext else 0.0
    n_tracks = 0
    blo, bhi = bmin, bmax
    if lane_e.size:
        a, b = us[lane_e], ud[lane_e]
        la, lb = arr.layer[a], arr.layer[b]
        # Each lane runs just beside the boxes of the layers it passes (a range maximum over
        # those layers, O(1) per lane from a sparse table), on the side nearer its ends;
        # lanes overlapping in depth get different tracks (interval colouring, per side).
        lay_hi = np.full(n_layers, -np.inf)
        lay_lo = np.full(n_layers, np.inf)
        np.maximum.at(lay_hi, arr.ext_layer, hi)
        np.minimum.at(lay_lo, arr.ext_layer, lo)
        ext_hi = _range_max(lay_hi, la + 1, lb - 1)
        ext_lo = -_range_max(-lay_lo, la + 1, lb - 1)
        mid = 0.5 * (coord[a] + coord[b])
        right = (ext_hi - mid) <= (mid - ext_lo)
        track = np.zeros(lane_e.size, dtype=np.int64)
        for side in (right, ~right):
            idx = np.flatnonzero(side)
            if idx.size:
                track[idx] = _tracks(la[idx], lb[idx])
        n_tracks = int(track.max()) + 1
        off = dummy_gap * (track + 1)
        lane_b = np.where(right, ext_hi + off, ext_lo - off)
        below = top[la] + thick[la]
        above = top[lb]
        pts_b = np.stack([coord[a], coord[a], lane_b, lane_b, coord[b], coord[b]], axis=1)
        pts_d = np.stack([depth_c[a], below, below + 0.5 * layer_gap,
                          above - 0.5 * layer_gap, above, depth_c[b]], axis=1)
        at = ustart[lane_e][:, None] + np.arange(6)
        ub[at] = pts_b
        ud_[at] = pts_d
        blo, bhi = min(bmin, float(lane_b.min())), max(bmax, float(lane_b.max()))
    dlo = float(top[0]) if n_layers else 0.0
    dhi = float(top[-1] + thick[-1]) if n_layers else 0.0

    # (+ 0.0 turns the -0.0 of a negated 0 into 0.0.)
    if orientation == "TB":
        ex, ey = coord, 0.0 - depth_c
        px, py = ub, 0.0 - ud_
        bounds = (blo, bhi, 0.0 - dhi, 0.0 - dlo)
    else:
        ex, ey = depth_c, 0.0 - coord
        px, py = ud_, 0.0 - ub
        bounds = (dlo, dhi, 0.0 - bhi, 0.0 - blo)

    # Polylines per input edge: its unique edge's points plus a NaN separator.
    inv = arr.inverse
    n_edges = inv.shape[0]
    e_pts = npts[inv] if n_edges else np.zeros(0, dtype=np.int64)
    eptr = np.concatenate(([0], np.cumsum(e_pts + 1))).astype(np.int64)
    total = int(eptr[-1])
    slot_edge = np.repeat(np.arange(n_edges), e_pts + 1)
    j = np.arange(total) - eptr[slot_edge]
    is_sep = j == e_pts[slot_edge] if n_edges else np.zeros(0, dtype=bool)
    src_pt = ustart[inv[slot_edge]] + np.minimum(j, e_pts[slot_edge] - 1) if total else j
    edge_x = np.where(is_sep, np.nan, px[src_pt] if total else 0.0).astype(np.float32)
    edge_y = np.where(is_sep, np.nan, py[src_pt] if total else 0.0).astype(np.float32)

    arrays = {
        "layer": arr.layer.astype(np.int32),
        "order": arr.pos[:n].astype(np.int32),
        "x": ex[:n].astype(np.float32),
        "y": ey[:n].astype(np.float32),
        "edge_x": edge_x,
        "edge_y": edge_y,
        "edge_ptr": eptr.astype(np.int32),
        "ext_layer": arr.ext_layer.astype(np.int32),
        "ext_order": arr.pos.astype(np.int32),
        "ext_x": ex.astype(np.float32),
        "ext_y": ey.astype(np.float32),
        "seg_src": arr.seg_u.astype(np.int32),
        "seg_dst": arr.seg_v.astype(np.int32),
    }
    for v in arrays.values():
        v.flags.writeable = False
    return Layout(
        n_layers=n_layers,
        orientation=orientation,
        n_dummies=arr.n_dummies,
        crossings=arr.crossings,
        initial_crossings=arr.initial_crossings,
        n_lanes=int(lane_e.size),
        n_tracks=n_tracks,
        bounds=tuple(float(v) for v in bounds),
        **arrays,
    )


def layered_layout(
    n: int,
    src: ArrayLike,
    dst: ArrayLike,
    roots: ArrayLike | None = None,
    orientation: Orientation = "TB",
    sweeps: int = 8,
    *,
    top: ArrayLike | None = None,
    bottom: ArrayLike | None = None,
    breadth: ArrayLike | None = None,
    depth: ArrayLike | None = None,
    node_gap: float = NODE_GAP,
    dummy_gap: float = DUMMY_GAP,
    layer_gap: float = LAYER_GAP,
    max_dummy_span: int = MAX_DUMMY_SPAN,
) -> Layout:
    """Lay out a DAG of ``n`` nodes with edges ``src[i] -> dst[i]`` in layers.

    Edges point in gradient flow, from the roots of a backward graph to its leaves; duplicates
    and multi-edges are allowed and share one route. Every source is in layer 0 and every edge
    points at least one layer down; within that, the layers make the edges as short as they can
    in total (up to a work budget on big tangled graphs), and every node has an edge of length
    1. ``roots`` come first in layer 0's initial order, in the given order; a root with an
    incoming edge (one root reachable from another) cannot be in layer 0 without an upward edge,
    so it is layered like any other node. ``top``/``bottom``: sources/sinks pinned to a first /
    last layer of their own (a cluster's entry and exit ports).

    ``sweeps`` bounds the down+up passes of each phase of the crossing reduction (barycenter
    alone, then barycenter plus transposition); the best ordering seen wins, and a phase stops
    early once a pass fails to improve it. ``sweeps=0`` keeps the discovery order (real nodes by
    index, roots first; each dummy sorted as its edge's source index), the unreduced baseline
    for ``initial_crossings``. Sizes and gaps: see `place`. No edge costs work proportional to
    the number of layers it spans beyond ``max_dummy_span`` (`MAX_DUMMY_SPAN`): longer ones run
    in lanes.

    Example:
        >>> lay = layered_layout(4, [0, 0, 1], [1, 2, 3])
        >>> lay.layer.tolist()
        [0, 1, 1, 2]
    """
    if orientation not in ("TB", "LR"):
        raise ValueError(f"orientation must be 'TB' or 'LR', not {orientation!r}")
    arr = arrange(n, src, dst, roots, sweeps, top=top, bottom=bottom,
                  max_dummy_span=max_dummy_span)
    return place(arr, orientation, breadth=breadth, depth=depth, node_gap=node_gap,
                 dummy_gap=dummy_gap, layer_gap=layer_gap)
