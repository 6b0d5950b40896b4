"""Standalone export: the whole step-through recorded once, replayable with no kernel.

A recording is the widget's own protocol frozen in time: the `_graph` payload, the `_state` of
position 0, and per step only what changed (indices with old and new values, so the front-end can
step forward and back without a kernel), plus the inspector data as of the end of the run. The HTML
file wraps the same JS bundle the widget uses and this recording; nothing else: no CDN, no request.

The run is recorded by a separate `Stepper` over the same graph, so the live widget is not moved.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..engine.stepper import Stepper
from ..util.jsonsafe import encode_number
from ..wire import payload as view

if TYPE_CHECKING:
    from ..widget import AutogradWidget

RECORDING_FORMAT = "autograd_widget.recording/1"
_STATIC = Path(__file__).parent.parent / "static"
_ARRAYS = ("node_state", "progress", "edge_norm", "edge_flag")
_SCALARS = (
    "position", "total", "done", "next", "next_id", "last", "status", "waiting", "error",
    "norm_range",
)


def _encode(obj: Any) -> Any:
    """JSON-safe copy of a payload: binary buffers become {"dtype", "bdata"} (base64)."""
    if isinstance(obj, memoryview):
        return {"dtype": "bytes", "bdata": base64.b64encode(obj.tobytes()).decode("ascii")}
    if isinstance(obj, np.ndarray):
        a = np.ascontiguousarray(obj)
        return {"dtype": str(a.dtype), "bdata": base64.b64encode(a.tobytes()).decode("ascii")}
    if isinstance(obj, dict):
        return {k: _encode(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_encode(v) for v in obj]
    return encode_number(obj) if isinstance(obj, float | complex) else obj


#: Element types of the buffers of a version-1 graph payload (version 2 names its own).
_V1_DTYPES = {
    "nodes": {"root": "uint8", "members": "int32", "saved_state": "uint8", "real": "int32",
              "x": "float32", "y": "float32"},
    "edges": {"src": "int32", "dst": "int32", "output_nr": "int32", "input_nr": "int32",
              "real": "int32", "path_x": "float32", "path_y": "float32",
              "path_ptr": "int32", "mid_x": "float32", "mid_y": "float32"},
}


def _typed_graph(payload: dict[str, Any]) -> dict[str, Any]:
    """The graph payload with each buffer tagged by its element type (memoryviews carry bytes):
    the payload's own `dtypes` ("nodes.label" -> "uint16"), else version 1's fixed types."""
    named = payload.get("dtypes") or {}
    out = dict(payload)
    for part, fields in _V1_DTYPES.items():
        sec = dict(payload[part])
        for name, value in sec.items():
            dtype = named.get(f"{part}.{name}") or fields.get(name)
            if dtype is not None and isinstance(value, memoryview):
                sec[name] = np.frombuffer(value.tobytes(), dtype=dtype)
        out[part] = sec
    return out


def _scalars(state: dict[str, Any]) -> dict[str, Any]:
    return {k: state.get(k) for k in _SCALARS}


def _array_delta(old: np.ndarray, new: np.ndarray) -> dict[str, Any] | None:
    changed = np.flatnonzero(~((old == new) | (np.isnan(old) & np.isnan(new)))
                             if old.dtype.kind == "f" else old != new)
    if len(changed) == 0:
        return None
    return {
        "index": changed.astype(np.int32),
        "old": old[changed],
        "new": new[changed],
    }


def record(widget: AutogradWidget, *, max_steps: int | None = None) -> dict[str, Any]:
    """Record the whole run (or `max_steps` steps) of `widget`'s graph, as the widget shows it."""
    graph = widget.graph
    stepper = Stepper(graph, create_graph=widget.stepper.create_graph, keep="summaries")
    try:
        sv = view.StateView(graph, stepper, widget._visible)
        state0 = sv.update()
        arrays = sv.visible_arrays()
        first = {name: arrays[name] for name in _ARRAYS}
        steps: list[dict[str, Any]] = []
        limit = len(stepper.order) if max_steps is None else min(max_steps, len(stepper.order))
        failed = None
        while stepper.position < limit:
            rec = stepper.step()
            state = sv.update()
            new = sv.visible_arrays()
            delta: dict[str, Any] = {"scalars": _scalars(state)}
            for name in _ARRAYS:
                d = _array_delta(arrays[name], new[name])
                if d is not None:
                    delta[name] = d
            old_vals, new_vals = arrays["edge_values"], new["edge_values"]
            set_vals = {k: v for k, v in new_vals.items() if old_vals.get(k) != v}
            unset = {k: v for k, v in old_vals.items() if k not in new_vals}
            was = {k: old_vals[k] for k in set_vals if k in old_vals}
            if set_vals or unset:
                delta["edge_values"] = {"set": set_vals, "unset": unset, "was": was}
            steps.append(delta)
            arrays = new
            if rec is not None and rec.error is not None:
                failed = {"node": rec.node.id, "message": rec.error}
                break
        inspect = _final_inspect(widget, stepper)
    finally:
        stepper.close()
    return {
        "format": RECORDING_FORMAT,
        "title": _title(widget),
        "height": widget.height,
        "graph": _encode(_typed_graph(widget._graph)),
        "state": _encode({**state0, **first}),
        "steps": _encode(steps),
        "failed": failed,
        "inspect": _encode(inspect),
    }


def _title(widget: AutogradWidget) -> str:
    g = widget.graph
    what = g.model_name or (g.nodes[g.roots[0][0]].name if g.roots else "graph")
    return f"autograd_widget — backward of {what} ({len(g.nodes)} nodes)"


def _final_inspect(widget: AutogradWidget, stepper: Stepper) -> dict[str, Any]:
    """Inspector data for every visible node and edge as of the end of the recorded run."""
    vis = widget._visible
    nodes: dict[str, Any] = {}
    edges: dict[str, Any] = {}
    live = widget.stepper
    try:
        widget.stepper = stepper  # the inspector helpers read widget.stepper
        for j in range(vis.n_items):
            r = int(vis.item_real[j])
            if r < 0:
                nodes[str(j)] = widget._inspect_group(j)
            else:
                nodes[str(j)] = widget._inspect_node(widget._view.node_ids[r])
        for k, real in enumerate(vis.edge_real.tolist()):
            edges[str(k)] = widget._inspect_edge(widget.graph.edges[real].id)
    finally:
        widget.stepper = live
    return {"nodes": nodes, "edges": edges}


def _script_json(obj: Any) -> str:
    """JSON safe to inline in a <script> element ("</" cannot close it)."""
    return json.dumps(obj, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")


def html(recording: dict[str, Any]) -> str:
    """A self-contained page: the widget's bundle and stylesheet inlined, and the recording."""
    bundle = (_STATIC / "widget.js").read_text(encoding="utf-8")
    css_path = _STATIC / "widget.css"
    css = css_path.read_text(encoding="utf-8") if css_path.exists() else ""
    title = recording.get("title", "autograd_widget")
    safe_title = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    safe_css = css.replace("</", "<\\/")
    # The bundle is an ES module; it is imported from a blob: URL (no network), and its
    # `replay` export draws the recording into the page.
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{safe_title}</title>"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<style>{safe_css}</style></head>\n<body>"
        "<main id=\"autograd-widget-root\"></main>\n"
        f"<script type=\"application/json\" id=\"autograd-widget-recording\">"
        f"{_script_json(recording)}</script>\n"
        f"<script type=\"application/json\" id=\"autograd-widget-bundle\">"
        f"{_script_json(bundle)}</script>\n"
        "<script type=\"module\">\n"
        "const read = (id) => JSON.parse(document.getElementById(id).textContent);\n"
        "const url = URL.createObjectURL(new Blob([read('autograd-widget-bundle')],"
        " { type: 'text/javascript' }));\n"
        "const mod = await import(url);\n"
        "mod.replay(document.getElementById('autograd-widget-root'),"
        " read('autograd-widget-recording'));\n"
        "</script>\n</body></html>\n"
    )


def save_html(widget: AutogradWidget, path: str | Path) -> Path:
    """Write the recorded step-through of `widget` as one offline HTML file; return its path."""
    bundle = _STATIC / "widget.js"
    if not bundle.exists():
        raise FileNotFoundError(
            "the front-end bundle autograd_widget/static/widget.js is missing; build it with "
            "`cd js && npm ci && npm run build` (or reinstall the package)"
        )
    out = Path(path)
    if out.suffix.lower() not in (".html", ".htm"):
        raise ValueError(f"save_html writes an .html file, got {str(path)!r}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html(record(widget)), encoding="utf-8")
    return out
