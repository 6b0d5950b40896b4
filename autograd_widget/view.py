"""The view model: what the front-end draws, as arrays, and what changes after each step.

Two payloads (see the widget protocol in `widget.py`):
- the graph payload, built once per layout: node/edge arrays, labels, coordinates and edge
  polylines as float32 buffers;
- the state payload, rebuilt after every step: node states, edge gradient norms/flags, the small
  gradients' values, the slots waiting at the next node, the status line. It is built
  incrementally: only the nodes of steps done or undone since the last update are revisited.

Also the plotly `go.Figure` of the current state (`to_figure`), for static export. Knows nothing of
traitlets or anywidget; everything autograd comes from the graph and the stepper.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

import numpy as np

from .layout import Layout, layered_layout

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from .graph import BackwardGraph
    from .stepper import Stepper
    from .summary import Summary

PENDING, NEXT, DONE, FAILED, NO_GRADIENT = 0, 1, 2, 3, 4
NOT_FLOWED, FLOWED, NONFINITE, FLOWED_NONE = 0, 1, 2, 3
#: Gradients with at most this many elements get their values written on the edge.
LABEL_MAX_NUMEL = 4

_BACKWARD_SUFFIX = re.compile(r"Backward\d*$")


def short_label(node: Any) -> str:
    """What the box says: the op without its "Backward0" suffix, or the leaf's name."""
    if node.kind == "accumulate_grad":
        return node.leaf_name or "leaf"
    name = node.name.rpartition("::")[2]
    return _BACKWARD_SUFFIX.sub("", name) or name


def display_kind(node: Any) -> str:
    if node.kind == "accumulate_grad":
        return "parameter" if node.leaf_kind == "parameter" else "input"
    return node.kind


def _buf(a: np.ndarray) -> memoryview:
    """A binary buffer ipywidgets sends as-is (it arrives in JS as a DataView)."""
    return memoryview(np.ascontiguousarray(a).tobytes())


def _json_number(v: float) -> float | str:
    if isinstance(v, complex):
        return f"{v.real:g}{v.imag:+g}j"
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def compute_layout(graph: BackwardGraph, orientation: str = "TB") -> Layout:
    """Layered layout of the graph's nodes, roots on top (TB) or left (LR)."""
    index = {nid: i for i, nid in enumerate(graph.nodes)}
    src = np.fromiter((index[e.src] for e in graph.edges), np.int64, len(graph.edges))
    dst = np.fromiter((index[e.dst] for e in graph.edges), np.int64, len(graph.edges))
    roots = sorted({index[r] for r, _ in graph.roots})
    return layered_layout(len(index), src, dst, roots=roots, orientation=orientation)


def graph_payload(graph: BackwardGraph, layout: Layout) -> dict[str, Any]:
    """The `_graph` trait: everything static about the drawing, once."""
    nodes = list(graph.nodes.values())
    index = {n.id: i for i, n in enumerate(nodes)}
    edges = graph.edges
    e_count = len(edges)
    src = np.fromiter((index[e.src] for e in edges), np.int32, e_count)
    dst = np.fromiter((index[e.dst] for e in edges), np.int32, e_count)
    out_nr = np.fromiter((e.output_nr for e in edges), np.int32, e_count)
    in_nr = np.fromiter((e.input_nr for e in edges), np.int32, e_count)
    ptr = np.asarray(layout.edge_ptr, np.int32)
    # Label anchor: the middle point of each polyline (its first segment's middle for 2 points).
    ex, ey = np.asarray(layout.edge_x), np.asarray(layout.edge_y)
    if e_count:
        npts = ptr[1:] - ptr[:-1] - 1
        a = ptr[:-1] + np.maximum((npts - 1) // 2, 0)
        b = np.minimum(a + 1, ptr[:-1] + npts - 1)
        mid_x = ((ex[a] + ex[b]) / 2).astype(np.float32)
        mid_y = ((ey[a] + ey[b]) / 2).astype(np.float32)
    else:
        mid_x = mid_y = np.zeros(0, np.float32)
    x, y = np.asarray(layout.x, np.float32), np.asarray(layout.y, np.float32)
    bounds = [0.0, 0.0, 0.0, 0.0]
    if len(nodes):
        bounds = [float(x.min()), float(x.max()), float(y.min()), float(y.max())]
    root = np.zeros(len(nodes), np.uint8)
    for r, _ in graph.roots:
        root[index[r]] = 1
    leaf_shape = []
    for n in nodes:
        if n.kind == "accumulate_grad" and n.inputs:
            leaf_shape.append(str(list(n.inputs[0].shape)))
        else:
            leaf_shape.append("")
    return {
        "version": 1,
        "orientation": layout.orientation,
        "bounds": bounds,
        "nodes": {
            "count": len(nodes),
            "id": [n.id for n in nodes],
            "label": [short_label(n) for n in nodes],
            "name": [n.name for n in nodes],
            "kind": [display_kind(n) for n in nodes],
            "root": _buf(root),
            "module": [n.module for n in nodes],
            "shape": leaf_shape,
            "inputs": [[[list(m.shape), m.dtype, m.device] for m in n.inputs] for n in nodes],
            "x": _buf(x),
            "y": _buf(y),
        },
        "edges": {
            "count": e_count,
            "id": [e.id for e in edges],
            "src": _buf(src),
            "dst": _buf(dst),
            "output_nr": _buf(out_nr),
            "input_nr": _buf(in_nr),
            "path_x": _buf(np.asarray(layout.edge_x, np.float32)),
            "path_y": _buf(np.asarray(layout.edge_y, np.float32)),
            "path_ptr": _buf(ptr),
            "mid_x": _buf(mid_x),
            "mid_y": _buf(mid_y),
        },
    }


def summary_payload(s: Summary | None) -> dict[str, Any] | None:
    """A Summary as JSON-safe numbers (NaN/Inf as strings)."""
    if s is None:
        return None
    d = s.as_dict() if hasattr(s, "as_dict") else dict(vars(s))
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, float | complex):
            out[k] = _json_number(v)
        elif isinstance(v, list):
            out[k] = [_json_number(x) if isinstance(x, float | complex) else x for x in v]
        elif isinstance(v, tuple):
            out[k] = list(v)
        else:
            out[k] = v
    return out


class StateView:
    """Incrementally maintained step state of one graph under one stepper.

    Node and edge arrays are indexed like the graph payload. `update()` revisits only the steps
    done or undone since the previous call, so a step on a 10k-node graph costs a few entries.
    """

    def __init__(self, graph: BackwardGraph, stepper: Stepper) -> None:
        self.graph = graph
        self.stepper = stepper
        self.node_ids = list(graph.nodes)
        self.node_index = {nid: i for i, nid in enumerate(graph.nodes)}
        self.edge_index = {e.id: i for i, e in enumerate(graph.edges)}
        self.out_edges = [
            [self.edge_index[e.id] for e in graph.out_edges(nid)] for nid in graph.nodes
        ]
        n, m = len(graph.nodes), len(graph.edges)
        self.node_state = np.zeros(n, np.uint8)
        self.edge_norm = np.full(m, np.nan, np.float32)
        self.edge_flag = np.zeros(m, np.uint8)
        self.edge_values: dict[str, list] = {}
        self._applied = 0  # steps reflected in the arrays
        self._next = -1
        self._error: dict[str, Any] | None = None
        self.seq = 0

    def _clear_step(self, k: int) -> None:
        i = self.node_index[self.stepper.order[k]]
        self.node_state[i] = PENDING
        for e in self.out_edges[i]:
            self.edge_norm[e] = np.nan
            self.edge_flag[e] = NOT_FLOWED
            self.edge_values.pop(str(e), None)

    def _apply_step(self, k: int) -> None:
        st = self.stepper
        nid = st.order[k]
        i = self.node_index[nid]
        info = st.step_info(k)
        self.node_state[i] = NO_GRADIENT if info.no_gradient else DONE
        edges = self.graph.edges
        for e in self.out_edges[i]:
            s = st.edge_summary(edges[e].id)
            if s is None:
                self.edge_flag[e] = FLOWED_NONE
                continue
            self.edge_norm[e] = s.norm
            nonfinite = bool(s.nan or s.inf)
            self.edge_flag[e] = NONFINITE if nonfinite else FLOWED
            if _numel(s.shape) <= LABEL_MAX_NUMEL:
                self.edge_values[str(e)] = [_json_number(v) for v in s.values]

    def update(self) -> dict[str, Any]:
        """The `_state` payload for the stepper's current position."""
        st = self.stepper
        pos = st.position
        if self._next >= 0 and self.node_state[self._next] in (NEXT, FAILED):
            self.node_state[self._next] = PENDING
        if pos < self._applied:
            for k in range(pos, self._applied):
                self._clear_step(k)
        else:
            for k in range(self._applied, pos):
                self._apply_step(k)
        self._applied = pos
        err = st.last_error
        self._next = self.node_index[st.order[pos]] if pos < len(st.order) else -1
        if self._next >= 0:
            failed = err is not None and err[0] == st.order[pos]
            self.node_state[self._next] = FAILED if failed else NEXT
        self._error = (
            {"node": self.node_index[err[0]], "message": err[1]} if err is not None else None
        )
        self.seq += 1
        return self.payload()

    def payload(self, running: bool = False) -> dict[str, Any]:
        st = self.stepper
        pos, total = st.position, len(st.order)
        finite = self.edge_norm[(self.edge_flag == FLOWED) & (self.edge_norm > 0)]
        norm_range = None
        if finite.size:
            norm_range = [float(np.log10(finite.min())), float(np.log10(finite.max()))]
        waiting: list[Any] = []
        if self._next >= 0:
            for slot, s in enumerate(st.waiting(st.order[pos])):
                if s is None:
                    waiting.append(None)
                    continue
                small = _numel(s.shape) <= LABEL_MAX_NUMEL
                waiting.append(
                    {
                        "slot": slot,
                        "shape": list(s.shape),
                        "dtype": s.dtype,
                        "norm": _json_number(s.norm),
                        "values": [_json_number(v) for v in s.values] if small else None,
                    }
                )
        return {
            "seq": self.seq,
            "position": pos,
            "total": total,
            "done": pos >= total,
            "running": running,
            "next": self._next,
            "last": self.node_index[st.order[pos - 1]] if pos > 0 else -1,
            "node_state": _buf(self.node_state),
            "edge_norm": _buf(self.edge_norm),
            "edge_flag": _buf(self.edge_flag),
            "edge_values": dict(self.edge_values),
            "norm_range": norm_range,
            "waiting": waiting,
            "status": status_line(self.graph, st),
            "error": self._error,
        }


def _numel(shape: Any) -> int:
    return int(np.prod(shape)) if len(shape) else 1


def status_line(graph: BackwardGraph, stepper: Stepper) -> str:
    """ "step 7 / 23 — MulBackward0": steps done, total, and the node about to run (or done)."""
    pos, total = stepper.position, len(stepper.order)
    err = stepper.last_error
    if err is not None and pos < total and err[0] == stepper.order[pos]:
        return f"step {pos} / {total} — {graph.nodes[err[0]].name} failed: {err[1]}"
    if pos >= total:
        return f"step {pos} / {total} — done"
    return f"step {pos} / {total} — {graph.nodes[stepper.order[pos]].name}"


# ------------------------------------------------------------------------------- static figure
# The widget's palette (js/src/style.js), so a static export looks like the live view.
KIND_COLORS = {
    "function": "#4e79a7",
    "parameter": "#59a14f",
    "input": "#f28e2b",
    "custom_function": "#b07aa1",
    "cpp_function": "#9c755f",
}
ROOT_COLOR = "#76b7b2"
NORM_BINS = ["#0d0887", "#46039f", "#7201a8", "#9c179e", "#bd3786", "#d8576b", "#ed7953", "#fb9f3a"]
NONFINITE_COLOR = "#ff1f1f"


def to_figure(graph: BackwardGraph, layout: Layout, state: StateView | None) -> go.Figure:
    """A plotly figure of the graph in its current state (nodes by kind, edges by grad norm)."""
    import plotly.graph_objects as go

    nodes = list(graph.nodes.values())
    x, y = np.asarray(layout.x, np.float64), np.asarray(layout.y, np.float64)
    ex, ey = np.asarray(layout.edge_x, np.float64), np.asarray(layout.edge_y, np.float64)
    ptr = np.asarray(layout.edge_ptr)
    traces: list[Any] = []
    flag = state.edge_flag if state is not None else np.zeros(len(graph.edges), np.uint8)
    norm = state.edge_norm if state is not None else np.full(len(graph.edges), np.nan)
    flowed = np.flatnonzero(flag == FLOWED)
    logn = np.log10(np.where(norm[flowed] > 0, norm[flowed], np.nan)) if len(flowed) else None

    def segs(idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if len(idx) == 0:
            return np.zeros(0), np.zeros(0)
        parts = [np.arange(ptr[i], ptr[i + 1]) for i in idx]
        sel = np.concatenate(parts)
        return ex[sel], ey[sel]

    gx, gy = segs(np.flatnonzero(flag != FLOWED))
    traces.append(
        go.Scatter(x=gx, y=gy, mode="lines", line={"color": "#bbbbbb", "width": 1},
                   hoverinfo="skip", name="no gradient yet", showlegend=False)
    )
    bad = np.flatnonzero(flag == NONFINITE)
    if len(bad):
        bx, by = segs(bad)
        traces.append(go.Scatter(x=bx, y=by, mode="lines",
                                 line={"color": NONFINITE_COLOR, "width": 3, "dash": "dash"},
                                 name="NaN/Inf gradient"))
    if logn is not None and len(flowed):
        finite = np.isfinite(logn)
        lo = float(np.nanmin(logn)) if finite.any() else 0.0
        hi = float(np.nanmax(logn)) if finite.any() else 1.0
        bins = len(NORM_BINS)
        colors = NORM_BINS
        scale = [[i / (bins - 1), c] for i, c in enumerate(colors)]
        span = hi - lo if hi > lo else 1.0
        which = np.where(finite, np.clip(((logn - lo) / span * (bins - 1)).round(), 0, bins - 1), 0)
        for b in range(bins):
            idx = flowed[which == b]
            if len(idx) == 0:
                continue
            bx, by = segs(idx)
            traces.append(go.Scatter(x=bx, y=by, mode="lines", hoverinfo="skip",
                                     line={"color": colors[b], "width": 2.5}, showlegend=False))
        traces.append(go.Scatter(
            x=[None], y=[None], mode="markers", hoverinfo="skip", showlegend=False,
            marker={"colorscale": scale, "cmin": lo, "cmax": hi, "color": [lo],
                    "colorbar": {"title": {"text": "log10 ‖grad‖"}}},
        ))
    node_state = state.node_state if state is not None else np.zeros(len(nodes), np.uint8)
    line_colors = {PENDING: "#9aa5b1", NEXT: "#f5b700", DONE: "#222222", FAILED: "#e15759",
                   NO_GRADIENT: "#9aa5b1"}
    roots = {r for r, _ in graph.roots}
    traces.append(go.Scatter(
        x=x, y=y, mode="markers+text",
        text=[short_label(n) for n in nodes], textposition="middle right",
        marker={"size": 16,
                "symbol": [
                    "diamond" if n.id in roots else
                    "square" if n.kind == "accumulate_grad" else "circle"
                    for n in nodes
                ],
                "color": [
                    ROOT_COLOR if n.id in roots else KIND_COLORS[display_kind(n)] for n in nodes
                ],
                "line": {"width": 2, "color": [line_colors[int(s)] for s in node_state]}},
        hovertext=[f"{n.name}<br>{n.id}" + (f"<br>{n.module}" if n.module else "") for n in nodes],
        hoverinfo="text", showlegend=False,
    ))
    if state is not None and state.edge_values:
        ids = [int(k) for k in state.edge_values]
        mids_x, mids_y, texts = [], [], []
        for e in ids:
            seg_x, seg_y = ex[ptr[e]:ptr[e + 1] - 1], ey[ptr[e]:ptr[e + 1] - 1]
            mids_x.append(float(seg_x.mean()))
            mids_y.append(float(seg_y.mean()))
            texts.append(", ".join(_fmt(v) for v in state.edge_values[str(e)]))
        traces.append(go.Scatter(x=mids_x, y=mids_y, mode="text", text=texts, hoverinfo="skip",
                                 textfont={"color": "#1d3557"}, showlegend=False))
    fig = go.Figure(traces)
    fig.update_layout(
        xaxis={"visible": False}, yaxis={"visible": False, "scaleanchor": "x"},
        margin={"l": 10, "r": 10, "t": 30, "b": 10}, plot_bgcolor="white",
        title={"text": status_line(graph, state.stepper) if state is not None else ""},
    )
    return fig


def _fmt(v: Any) -> str:
    if isinstance(v, str):
        return v
    return f"{v:.4g}"
