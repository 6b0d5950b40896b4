"""Crossings of a drawing as drawn: polylines intersecting in the plane.

`layout.count_crossings` counts crossings between adjacent layers of the extended graph, the
quantity the ordering step minimises. A drawing also has edges that are not in that graph (lanes
beside the layers, routes into and out of cluster frames) and drawings made by other tools
(Graphviz ``dot``'s splines), so quality is compared on the geometry itself: two segments of
different edges cross when they intersect properly (each one's ends strictly on opposite sides
of the other), which never counts segments that share an end, touch, or overlap collinearly.
Pure numpy: segments are bucketed into a uniform grid and only pairs sharing a cell are tested.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["drawn_crossings", "polyline_segments"]


def polyline_segments(
    edge_x: ArrayLike, edge_y: ArrayLike, edge_ptr: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """The segments of NaN-separated polylines: ``(seg, edge)`` with ``seg[k] = (x0, y0, x1,
    y1)``; zero-length segments are dropped.

    Example:
        >>> seg, edge = polyline_segments([0, 1, 2, np.nan], [0, 0, 1, np.nan], [0, 4])
        >>> seg.tolist(), edge.tolist()
        ([[0.0, 0.0, 1.0, 0.0], [1.0, 0.0, 2.0, 1.0]], [0, 0])
    """
    x = np.asarray(edge_x, dtype=np.float64).reshape(-1)
    y = np.asarray(edge_y, dtype=np.float64).reshape(-1)
    ptr = np.asarray(edge_ptr, dtype=np.int64).reshape(-1)
    n_pts = x.shape[0]
    owner = np.repeat(np.arange(max(ptr.shape[0] - 1, 0)), np.diff(ptr)) if n_pts else ptr[:0]
    ok = ~(np.isnan(x[:-1]) | np.isnan(x[1:]) | np.isnan(y[:-1]) | np.isnan(y[1:]))
    ok &= owner[:-1] == owner[1:]
    ok &= (x[:-1] != x[1:]) | (y[:-1] != y[1:])
    k = np.flatnonzero(ok)
    seg = np.stack([x[k], y[k], x[k + 1], y[k + 1]], axis=1) if k.size else np.zeros((0, 4))
    return seg, owner[k]


def _orient(ax, ay, bx, by, cx, cy):  # vectorised over arrays
    return np.sign((bx - ax) * (cy - ay) - (by - ay) * (cx - ax))


def drawn_crossings(
    edge_x: ArrayLike, edge_y: ArrayLike, edge_ptr: ArrayLike, *, max_pairs: int = 50_000_000
) -> int:
    """How many times two different edges' polylines cross (proper intersections).

    Edges that share an end point are drawn from the same box, so segments touching at an end
    never count; duplicate edges drawn on one route overlap and never count. Raises
    ValueError when the grid would test more than ``max_pairs`` pairs (a drawing so dense that
    its crossings are not a useful number).

    Example:
        >>> ex = [0, 1, np.nan, 1, 0, np.nan]; ey = [0, 1, np.nan, 0, 1, np.nan]  # an X
        >>> drawn_crossings(ex, ey, [0, 3, 6])
        1
    """
    seg, edge = polyline_segments(edge_x, edge_y, edge_ptr)
    m = seg.shape[0]
    if m < 2:
        return 0
    x0 = np.minimum(seg[:, 0], seg[:, 2])
    x1 = np.maximum(seg[:, 0], seg[:, 2])
    y0 = np.minimum(seg[:, 1], seg[:, 3])
    y1 = np.maximum(seg[:, 1], seg[:, 3])
    length = np.hypot(x1 - x0, y1 - y0)
    cell = max(float(np.median(length)), 1e-9)
    gx0, gx1 = np.floor(x0 / cell).astype(np.int64), np.floor(x1 / cell).astype(np.int64)
    gy0, gy1 = np.floor(y0 / cell).astype(np.int64), np.floor(y1 / cell).astype(np.int64)
    nx, ny = gx1 - gx0 + 1, gy1 - gy0 + 1
    cnt = nx * ny
    owner = np.repeat(np.arange(m), cnt)
    k = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    cx = gx0[owner] + k % nx[owner]
    cy = gy0[owner] + k // nx[owner]
    # One id per cell, then every pair of segments sharing a cell.
    _, cell_id = np.unique(np.stack([cx, cy], axis=1), axis=0, return_inverse=True)
    cell_id = cell_id.reshape(-1)
    o = np.argsort(cell_id, kind="stable")
    cell_id, owner = cell_id[o], owner[o]
    size = np.bincount(cell_id)
    if int((size * (size - 1) // 2).sum()) > max_pairs:
        raise ValueError("too dense to count crossings by pairs")
    start = np.concatenate(([0], np.cumsum(size)[:-1]))
    pairs_i: list[NDArray[np.int64]] = []
    pairs_j: list[NDArray[np.int64]] = []
    for s in np.unique(size[size > 1]).tolist():
        cells = np.flatnonzero(size == s)
        members = owner[start[cells][:, None] + np.arange(s)]
        a, b = np.triu_indices(s, 1)
        pairs_i.append(members[:, a].reshape(-1))
        pairs_j.append(members[:, b].reshape(-1))
    if not pairs_i:
        return 0
    i = np.concatenate(pairs_i)
    j = np.concatenate(pairs_j)
    keep = edge[i] != edge[j]
    i, j = np.minimum(i[keep], j[keep]), np.maximum(i[keep], j[keep])
    key = np.unique(i * m + j)
    i, j = key // m, key % m
    # Bounding boxes must overlap, then the four orientation tests.
    box = (x0[i] <= x1[j]) & (x0[j] <= x1[i]) & (y0[i] <= y1[j]) & (y0[j] <= y1[i])
    i, j = i[box], j[box]
    p, q = seg[i], seg[j]
    o1 = _orient(p[:, 0], p[:, 1], p[:, 2], p[:, 3], q[:, 0], q[:, 1])
    o2 = _orient(p[:, 0], p[:, 1], p[:, 2], p[:, 3], q[:, 2], q[:, 3])
    o3 = _orient(q[:, 0], q[:, 1], q[:, 2], q[:, 3], p[:, 0], p[:, 1])
    o4 = _orient(q[:, 0], q[:, 1], q[:, 2], q[:, 3], p[:, 2], p[:, 3])
    proper = (o1 * o2 < 0) & (o3 * o4 < 0)
    # Two edges cross once per crossing point, even where a crossing falls on a bend shared by
    # two of one edge's segments: count distinct edge pairs per crossing location.
    ei, ej = edge[i[proper]], edge[j[proper]]
    px = _intersection(p[proper], q[proper])
    loc = np.round(px / max(cell * 1e-6, 1e-12))
    uniq = np.unique(np.column_stack([np.minimum(ei, ej), np.maximum(ei, ej), loc]), axis=0)
    return int(uniq.shape[0])


def _intersection(p: NDArray[np.float64], q: NDArray[np.float64]) -> NDArray[np.float64]:
    """Intersection points of segment pairs known to cross properly."""
    d1 = p[:, 2:] - p[:, :2]
    d2 = q[:, 2:] - q[:, :2]
    den = d1[:, 0] * d2[:, 1] - d1[:, 1] * d2[:, 0]
    w = q[:, :2] - p[:, :2]
    t = (w[:, 0] * d2[:, 1] - w[:, 1] * d2[:, 0]) / den
    return p[:, :2] + t[:, None] * d1
