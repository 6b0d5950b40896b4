"""The plotly figure of a drawing in a state: a static picture of what the widget shows.

`to_figure` draws a graph payload (`wire.payload.graph_payload`) in a step state
(`view.stateview.StateView.visible_arrays`) with the widget's palette (js/src/style.js), so a static
export looks like the live view. plotly is imported only when a figure is made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..view.stateview import DONE, FAILED, FLOWED, NEXT, NO_GRADIENT, NONFINITE, PENDING
from ..wire.payload import decode_graph

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = ["to_figure"]

# The widget's palette (js/src/style.js), so a static export looks like the live view.
KIND_COLORS = {
    "function": "#4e79a7",
    "parameter": "#59a14f",
    "input": "#f28e2b",
    "custom_function": "#b07aa1",
    "cpp_function": "#9c755f",
    "communication": "#ff9da7",  # js/src/style.js: DTensor redistributions, collectives
}
ROOT_COLOR = "#76b7b2"
NORM_BINS = ["#0d0887", "#46039f", "#7201a8", "#9c179e", "#bd3786", "#d8576b", "#ed7953", "#fb9f3a"]
NONFINITE_COLOR = "#ff1f1f"
GROUP_COLOR = "#6c757d"


def to_figure(payload: dict[str, Any], arrays: dict[str, Any] | None, title: str = "") -> go.Figure:
    """A plotly figure of the visible graph (`graph_payload`) in a state (`visible_arrays`).

    Args:
        payload: a graph payload.
        arrays: the visible step-state arrays (None: every node pending, nothing flowed).
        title: the figure's title (the widget passes its status line).

    Example:
        >>> from autograd_widget.view.scene import Scene
        >>> from autograd_widget.wire.payload import graph_payload
        >>> scene = Scene(g, st)
        >>> fig = to_figure(graph_payload(g, scene.layout, scene.visible), None, "step 0 / 4")
        >>> fig.layout.title.text
        'step 0 / 4'
    """
    import plotly.graph_objects as go

    decoded = decode_graph(payload)
    nodes, edges = decoded["nodes"], decoded["edges"]
    n_items, n_edges = nodes["count"], edges["count"]

    def arr(buf: Any, dtype: Any) -> np.ndarray:
        return np.frombuffer(bytes(buf), dtype=dtype)

    x, y = arr(nodes["x"], np.float32).astype(float), arr(nodes["y"], np.float32).astype(float)
    ex = arr(edges["path_x"], np.float32).astype(float)
    ey = arr(edges["path_y"], np.float32).astype(float)
    ptr = arr(edges["path_ptr"], np.int32)
    if arrays is None:
        arrays = {
            "node_state": np.zeros(n_items, np.uint8),
            "progress": np.zeros(n_items, np.float32),
            "edge_norm": np.full(n_edges, np.nan, np.float32),
            "edge_flag": np.zeros(n_edges, np.uint8),
            "edge_values": {},
        }
    flag, norm = arrays["edge_flag"], arrays["edge_norm"].astype(float)
    traces: list[Any] = []

    def segs(idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if len(idx) == 0:
            return np.zeros(0), np.zeros(0)
        sel = np.concatenate([np.arange(ptr[i], ptr[i + 1]) for i in idx])
        return ex[sel], ey[sel]

    gx, gy = segs(np.flatnonzero(flag != FLOWED))
    traces.append(go.Scatter(x=gx, y=gy, mode="lines", line={"color": "#bbbbbb", "width": 1},
                             hoverinfo="skip", name="no gradient yet", showlegend=False))
    bad = np.flatnonzero(flag == NONFINITE)
    if len(bad):
        bx, by = segs(bad)
        traces.append(go.Scatter(x=bx, y=by, mode="lines", name="NaN/Inf gradient",
                                 line={"color": NONFINITE_COLOR, "width": 3, "dash": "dash"}))
    flowed = np.flatnonzero(flag == FLOWED)
    if len(flowed):
        with np.errstate(divide="ignore", invalid="ignore"):
            logn = np.log10(np.where(norm[flowed] > 0, norm[flowed], np.nan))
        finite = np.isfinite(logn)
        lo = float(np.nanmin(logn)) if finite.any() else 0.0
        hi = float(np.nanmax(logn)) if finite.any() else 1.0
        bins = len(NORM_BINS)
        span = hi - lo if hi > lo else 1.0
        which = np.where(
            finite, np.clip(((logn - lo) / span * (bins - 1)).round(), 0, bins - 1), 0
        )
        for b in range(bins):
            idx = flowed[which == b]
            if len(idx):
                bx, by = segs(idx)
                traces.append(go.Scatter(x=bx, y=by, mode="lines", hoverinfo="skip",
                                         line={"color": NORM_BINS[b], "width": 2.5},
                                         showlegend=False))
        scale = [[i / (bins - 1), c] for i, c in enumerate(NORM_BINS)]
        traces.append(go.Scatter(
            x=[None], y=[None], mode="markers", hoverinfo="skip", showlegend=False,
            marker={"colorscale": scale, "cmin": lo, "cmax": hi, "color": [lo],
                    "colorbar": {"title": {"text": "log10 ‖grad‖"}}},
        ))
    line_colors = {PENDING: "#9aa5b1", NEXT: "#f5b700", DONE: "#222222", FAILED: "#e15759",
                   NO_GRADIENT: "#9aa5b1"}
    root = arr(nodes["root"], np.uint8)
    kinds = nodes["kind"]
    symbols, colors, texts = [], [], []
    for j in range(n_items):
        if kinds[j] == "group":
            symbols.append("square-open")
            colors.append(GROUP_COLOR)
        elif root[j]:
            symbols.append("diamond")
            colors.append(ROOT_COLOR)
        else:
            symbols.append("square" if kinds[j] in ("parameter", "input") else "circle")
            colors.append(KIND_COLORS.get(kinds[j], KIND_COLORS["function"]))  # "aten": an op
        label = nodes["label"][j]
        if kinds[j] == "group":
            label = f"{label} ({int(arrays['progress'][j] * 100)}%)"
        elif nodes["shape"][j]:
            label = f"{label} {nodes['shape'][j]}"
        texts.append(label)
    traces.append(go.Scatter(
        x=x, y=y, mode="markers+text", text=texts, textposition="middle right",
        marker={"size": [24 if k == "group" else 14 for k in kinds], "symbol": symbols,
                "color": colors,
                "line": {"width": 2,
                         "color": [line_colors[int(s)] for s in arrays["node_state"]]}},
        hovertext=[f"{nodes['name'][j]}<br>{nodes['id'][j]}" for j in range(n_items)],
        hoverinfo="text", showlegend=False,
    ))
    if arrays["edge_values"]:
        mids_x = arr(edges["mid_x"], np.float32)
        mids_y = arr(edges["mid_y"], np.float32)
        ks = [int(k) for k in arrays["edge_values"]]
        traces.append(go.Scatter(
            x=[float(mids_x[k]) for k in ks], y=[float(mids_y[k]) for k in ks], mode="text",
            text=[", ".join(_fmt(v) for v in arrays["edge_values"][str(k)]) for k in ks],
            hoverinfo="skip", textfont={"color": "#1d3557"}, showlegend=False,
        ))
    fig = go.Figure(traces)
    fig.update_layout(
        xaxis={"visible": False}, yaxis={"visible": False, "scaleanchor": "x"},
        margin={"l": 10, "r": 10, "t": 40, "b": 10}, plot_bgcolor="white",
        title={"text": title},
    )
    return fig


def _fmt(v: Any) -> str:
    if isinstance(v, str):
        return v
    return f"{v:.4g}"
