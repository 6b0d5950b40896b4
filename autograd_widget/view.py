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

from .groups import VisibleGraph, module_paths, visible_graph
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


def compute_layout(
    graph: BackwardGraph, orientation: str = "TB", visible: VisibleGraph | None = None
) -> Layout:
    """Layered layout of the visible items, roots on top (TB) or left (LR)."""
    vis = visible if visible is not None else visible_graph(graph)
    index = {nid: i for i, nid in enumerate(graph.nodes)}
    roots = sorted({int(vis.real_item[index[r]]) for r, _ in graph.roots} - {-1})
    return layered_layout(
        vis.n_items, vis.edge_src, vis.edge_dst, roots=roots, orientation=orientation
    )


def group_label(path: str, model_name: str | None) -> str:
    return path if path else (model_name or "model")


SAVED_OK, SAVED_STALE, SAVED_FREED = 0, 1, 2
_SAVED_CODES = {"stale": SAVED_STALE, "freed": SAVED_FREED}


def graph_payload(
    graph: BackwardGraph,
    layout: Layout,
    visible: VisibleGraph | None = None,
    validity: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The `_graph` trait: everything static about the drawing of the visible graph, once.

    `validity` (from `saved.node_validity`) marks nodes whose saved tensors are stale or freed,
    so the drawing shows which nodes will fail before any step.
    """
    vis = visible if visible is not None else visible_graph(graph)
    validity = validity or {}
    nodes = list(graph.nodes.values())
    edges = graph.edges
    e_count = len(vis.edge_real)
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
    if vis.n_items:
        bounds = [float(x.min()), float(x.max()), float(y.min()), float(y.max())]
    root_ids = {r for r, _ in graph.roots}
    ids, labels, names, kinds, modules, shapes, inputs = [], [], [], [], [], [], []
    root = np.zeros(vis.n_items, np.uint8)
    members = np.zeros(vis.n_items, np.int32)
    saved_state = np.zeros(vis.n_items, np.uint8)
    for j in range(vis.n_items):
        r = int(vis.item_real[j])
        if r < 0:
            path = vis.item_group[j] or ""
            mem = vis.item_members[j]
            if validity and mem is not None:
                saved_state[j] = max(
                    (_SAVED_CODES.get(validity.get(nodes[int(i)].id, ""), 0) for i in mem),
                    default=0,
                )
            members[j] = 0 if mem is None else len(mem)
            ids.append(f"group:{path}")
            labels.append(group_label(path, graph.model_name))
            names.append(f"{group_label(path, graph.model_name)} ({members[j]} nodes)")
            kinds.append("group")
            modules.append(path)
            shapes.append("")
            inputs.append([])
            if mem is not None and any(nodes[int(i)].id in root_ids for i in mem):
                root[j] = 1
            continue
        n = nodes[r]
        saved_state[j] = _SAVED_CODES.get(validity.get(n.id, ""), 0)
        ids.append(n.id)
        labels.append(short_label(n))
        names.append(n.name)
        kinds.append(display_kind(n))
        modules.append(n.module)
        if n.kind == "accumulate_grad" and n.inputs:
            shapes.append(str(list(n.inputs[0].shape)))
        else:
            shapes.append("")
        inputs.append([[list(m.shape), m.dtype, m.device] for m in n.inputs])
        root[j] = n.id in root_ids
    real_edges = vis.edge_real
    return {
        "version": 1,
        "orientation": layout.orientation,
        "bounds": bounds,
        "collapsed": sorted(vis.collapsed),
        "show_plumbing": vis.show_plumbing,
        "real_count": len(nodes),
        "hidden": int((vis.real_item < 0).sum()),
        "groups": module_paths(graph),
        "nodes": {
            "count": vis.n_items,
            "id": ids,
            "label": labels,
            "name": names,
            "kind": kinds,
            "root": _buf(root),
            "module": modules,
            "shape": shapes,
            "inputs": inputs,
            "members": _buf(members),
            "saved_state": _buf(saved_state),
            "real": _buf(vis.item_real.astype(np.int32)),
            "x": _buf(x),
            "y": _buf(y),
        },
        "edges": {
            "count": e_count,
            "id": [edges[int(k)].id for k in real_edges],
            "src": _buf(vis.edge_src.astype(np.int32)),
            "dst": _buf(vis.edge_dst.astype(np.int32)),
            "output_nr": _buf(np.fromiter((edges[int(k)].output_nr for k in real_edges),
                                          np.int32, e_count)),
            "input_nr": _buf(np.fromiter((edges[int(k)].input_nr for k in real_edges),
                                         np.int32, e_count)),
            "real": _buf(real_edges.astype(np.int32)),
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

    def __init__(
        self, graph: BackwardGraph, stepper: Stepper, visible: VisibleGraph | None = None
    ) -> None:
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
        self._edit_seq = getattr(stepper, "edit_seq", 0)
        self._next = -1
        self._error: dict[str, Any] | None = None
        self.seq = 0
        self.set_visible(visible if visible is not None else visible_graph(graph))

    def set_visible(self, visible: VisibleGraph) -> None:
        """Map state onto a new set of visible items (after a fold, unfold or plumbing toggle)."""
        self.visible = visible
        by_real: dict[int, list[int]] = {}
        for j, k in enumerate(visible.edge_real.tolist()):
            by_real.setdefault(k, []).append(j)
        self._vis_edges_of_real = by_real
        boxes = [j for j in range(visible.n_items) if visible.item_real[j] < 0]
        self._boxes = boxes
        self._box_members = [visible.item_members[j] for j in boxes]

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
        edit_seq = getattr(st, "edit_seq", 0)
        if edit_seq != self._edit_seq:
            # A what-if edit changed gradients without moving the position: redo every step.
            self._edit_seq = edit_seq
            for k in range(self._applied):
                self._clear_step(k)
            self._applied = 0
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

    def _item(self, real: int) -> int:
        return -1 if real < 0 else int(self.visible.real_item[real])

    def visible_arrays(self) -> dict[str, Any]:
        """Node and edge state per VISIBLE item/edge, as numpy arrays (boxes aggregated)."""
        vis = self.visible
        real = vis.item_real
        node_state = np.zeros(vis.n_items, np.uint8)
        progress = np.zeros(vis.n_items, np.float32)
        is_real = real >= 0
        node_state[is_real] = self.node_state[real[is_real]]
        finished = (self.node_state == DONE) | (self.node_state == NO_GRADIENT)
        progress[is_real] = finished[real[is_real]]
        for j, mem in zip(self._boxes, self._box_members):
            st_m = self.node_state[mem]
            done = int(finished[mem].sum())
            progress[j] = done / len(mem) if len(mem) else 1.0
            if (st_m == FAILED).any():
                node_state[j] = FAILED
            elif (st_m == NEXT).any():
                node_state[j] = NEXT
            elif done == len(mem):
                node_state[j] = DONE
        edge_values: dict[str, list] = {}
        for k, vals in self.edge_values.items():
            for j in self._vis_edges_of_real.get(int(k), ()):
                edge_values[str(j)] = vals
        return {
            "node_state": node_state,
            "progress": progress,
            "edge_norm": self.edge_norm[vis.edge_real],
            "edge_flag": self.edge_flag[vis.edge_real],
            "edge_values": edge_values,
        }

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
        arrays = self.visible_arrays()
        edits: dict[str, Any] = {}
        for eid, info in getattr(st, "edits", {}).items():
            k = self.edge_index.get(eid)
            for j in self._vis_edges_of_real.get(k, ()) if k is not None else ():
                edits[str(j)] = {"id": eid, **info.as_dict()}
        error = None
        if self._error is not None:
            error = dict(self._error)
            error["node"] = self._item(self._error["node"])
            error["id"] = self.node_ids[self._error["node"]]
        last = self.node_index[st.order[pos - 1]] if pos > 0 else -1
        return {
            "seq": self.seq,
            "position": pos,
            "total": total,
            "done": pos >= total,
            "running": running,
            "next": self._item(self._next),
            "next_id": self.node_ids[self._next] if self._next >= 0 else None,
            "last": self._item(last),
            "node_state": _buf(arrays["node_state"]),
            "progress": _buf(arrays["progress"]),
            "edge_norm": _buf(arrays["edge_norm"]),
            "edge_flag": _buf(arrays["edge_flag"]),
            "edge_values": arrays["edge_values"],
            "edits": edits,
            "norm_range": norm_range,
            "waiting": waiting,
            "status": status_line(self.graph, st),
            "error": error,
        }


def _numel(shape: Any) -> int:
    return math.prod(shape)


def status_line(graph: BackwardGraph, stepper: Stepper) -> str:
    """ "step 7 / 23 — MulBackward0": steps done, total, and the node about to run (or done)."""
    pos, total = stepper.position, len(stepper.order)
    err = stepper.last_error
    if err is not None and pos < total and err[0] == stepper.order[pos]:
        return f"step {pos} / {total} — {node_title(graph.nodes[err[0]])} failed: {err[1]}"
    if pos >= total:
        return f"step {pos} / {total} — done"
    return f"step {pos} / {total} — {node_title(graph.nodes[stepper.order[pos]])}"


def node_title(node: Any) -> str:
    """A node's name, with the leaf's name for AccumulateGrad ("AccumulateGrad (x)")."""
    if node.kind == "accumulate_grad" and node.leaf_name:
        return f"{node.name} ({node.leaf_name})"
    return node.name


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
GROUP_COLOR = "#6c757d"


def to_figure(payload: dict[str, Any], arrays: dict[str, Any] | None, title: str = "") -> go.Figure:
    """A plotly figure of the visible graph (`graph_payload`) in a state (`visible_arrays`)."""
    import plotly.graph_objects as go

    nodes, edges = payload["nodes"], payload["edges"]
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
            colors.append(KIND_COLORS[kinds[j]])
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
