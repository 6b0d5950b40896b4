"""What the layout benchmarks share: the flat baseline layout and dot's splines as polylines.

`flat_layout` is the layered core as it drew before issue 16 (no frames, no leaf copies, one
dummy per layer on every long edge: `max_dummy_span` unbounded), the "before" of bench_layout and
the rank-by-rank comparison of bench_scale; `bezier_polyline` samples the piecewise cubic
splines of Graphviz `-Tplain` output.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from autograd_widget.view import layout

#: A span no edge reaches: every long edge through dummies.
ALL_DUMMIES = 1 << 30


def flat_layout(graph: Any, vis: Any, **sizes: Any) -> layout.Layout:
    """The flat layered layout of `vis` (roots first), every long edge through dummies.
    `sizes`: `layered_layout`'s breadth/depth/gaps."""
    ids = list(graph.nodes)
    roots = sorted({int(vis.real_item[ids.index(r)]) for r, _ in graph.roots} - {-1})
    return layout.layered_layout(vis.n_items, vis.edge_src, vis.edge_dst, roots=roots,
                                 max_dummy_span=ALL_DUMMIES, **sizes)


def bezier_polyline(pts: np.ndarray, samples: int = 12) -> np.ndarray:
    """Sample a piecewise cubic Bezier (dot's 3k + 1 control points) into a polyline."""
    k = (len(pts) - 1) // 3
    if k < 1:
        return pts
    t = np.linspace(0.0, 1.0, samples)[:, None]
    parts = []
    for s in range(k):
        p0, p1, p2, p3 = pts[3 * s : 3 * s + 4]
        u = 1.0 - t
        parts.append(u**3 * p0 + 3 * u * u * t * p1 + 3 * u * t * t * p2 + t**3 * p3)
    return np.concatenate(parts)
