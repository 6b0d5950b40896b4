"""Standalone export: the whole step-through recorded once, replayable with no kernel.

A recording is the widget's own protocol frozen in time: the `_graph` payload, the `_state` of
position 0, and per step only what changed (indices with old and new values, so the front-end can
step forward and back without a kernel), plus the inspector data as of the end of the run. The HTML
file wraps the same JS bundle the widget uses and this recording; nothing else: no CDN, no request.

The run is recorded by a Session of its own (a separate `Stepper` over the same graph, a fresh
`Scene` with the widget's folds) driven through the protocol, so the live widget is not moved.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..engine.replay import Replay
from ..engine.stepper import Stepper
from ..util.jsonsafe import encode_number
from ..view.scene import Scene
from ..wire.protocol import REPLY, STATE_ARRAYS, STEP_SCALARS, dispatch
from ..wire.session import Session

if TYPE_CHECKING:
    from ..core.graph import BackwardGraph
    from ..view.repeats import Repeat

__all__ = ["RECORDING_FORMAT", "Exportable", "html", "record", "record_session", "save_html"]


class Exportable(Protocol):
    """What `record` reads of a widget (its public API only): the graph, the stepper's options,
    and how the drawing is folded, oriented and sized."""

    graph: BackwardGraph
    stepper: Any
    height: int
    orientation: str
    show_plumbing: bool

    @property
    def collapsed(self) -> list[str]:
        """Module paths folded into boxes now."""
        ...

    @property
    def folds(self) -> dict[str, Repeat]:
        """Runs of repeated blocks folded now, by fold key."""
        ...

RECORDING_FORMAT = "autograd_widget.recording/1"
_STATIC = Path(__file__).parent.parent / "static"


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


def _typed_graph(payload: dict[str, Any]) -> dict[str, Any]:
    """The graph payload with each buffer tagged by its element type (memoryviews carry bytes),
    from the payload's own `dtypes` ("nodes.label" -> "uint16")."""
    named = payload["dtypes"]
    out = dict(payload)
    # every section a buffer is named in: nodes, edges, copies (leaf copies)
    for part in sorted({key.partition(".")[0] for key in named}):
        if not isinstance(payload.get(part), dict):
            continue
        sec = dict(payload[part])
        for name, value in sec.items():
            dtype = named.get(f"{part}.{name}")
            if dtype is not None and isinstance(value, memoryview):
                sec[name] = np.frombuffer(value.tobytes(), dtype=dtype)
        out[part] = sec
    return out


def _scalars(state: dict[str, Any]) -> dict[str, Any]:
    return {k: state.get(k) for k in STEP_SCALARS}


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


def _ask(session: Session, msg: dict[str, Any]) -> Any:
    """One request through the protocol; its reply's data (a warning is an error here)."""
    (out,) = dispatch(session, {**msg, "request": 0})
    if out["type"] != REPLY:
        raise RuntimeError(f"recording: {msg['type']} was refused: {out.get('message')}")
    return out["data"]


def record_session(
    session: Session, *, title: str, height: int, max_steps: int | None = None
) -> dict[str, Any]:
    """Record `session`'s run from its stepper's position (step 0 for a fresh one) to the end
    (or `max_steps` steps), driving it through the protocol like the front-end does.

    Args:
        session: a session of its own (its stepper is moved; it needs no front).
        title, height: the page's title and the drawing's height in pixels.
        max_steps: stop after this many steps.

    Example:
        >>> session = Session(g, st, Scene(g, st))
        >>> rec = record_session(session, title="z", height=600)
        >>> rec["format"], len(rec["steps"]), st.position
        ('autograd_widget.recording/1', 4, 4)
    """
    stepper, sv = session.stepper, session.scene.state
    state0 = sv.update()
    arrays = sv.visible_arrays()
    first = {name: arrays[name] for name in STATE_ARRAYS}
    steps: list[dict[str, Any]] = []
    limit = len(stepper.order) if max_steps is None else min(max_steps, len(stepper.order))
    failed = None
    while stepper.position < limit:
        refused = dispatch(session, {"type": "step"})  # a node that fails is no refusal
        if refused:
            raise RuntimeError(
                f"recording: step {stepper.position} was refused: {refused[0].get('message')}"
            )
        state = sv.update()
        new = sv.visible_arrays()
        delta: dict[str, Any] = {"scalars": _scalars(state)}
        for name in STATE_ARRAYS:
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
        err = stepper.last_error
        if err is not None:
            failed = {"node": err[0], "message": err[1]}
            break
    vis = session.scene.visible
    inspect = {
        "nodes": {str(j): _ask(session, {"type": "inspect", "node": j})
                  for j in range(vis.n_items)},
        "edges": {str(k): _ask(session, {"type": "inspect", "edge": k})
                  for k in range(len(vis.edge_real))},
    }
    return {
        "format": RECORDING_FORMAT,
        "title": title,
        "height": height,
        "graph": _encode(_typed_graph(session.graph_payload())),
        "state": _encode({**state0, **first}),
        "steps": _encode(steps),
        "failed": failed,
        "inspect": _encode(inspect),
    }


def record(widget: Exportable, *, max_steps: int | None = None) -> dict[str, Any]:
    """Record the whole run (or `max_steps` steps) of `widget`'s graph, as the widget shows it.

    A session of its own: a separate `Stepper` over the same graph and a fresh `Scene` with the
    widget's current folds, plumbing and orientation; the widget is only read through its
    public API, and its stepper is not moved.

    Example:
        >>> w = aw.explore(z, params={"x": x, "y": y})
        >>> record(w)["format"], w.stepper.position  # the widget's stepper is not moved
        ('autograd_widget.recording/1', 0)
    """
    graph = widget.graph
    source = widget.stepper
    stepper: Stepper | Replay = (
        Replay(source.recording) if isinstance(source, Replay)  # a recorded engine run
        else Stepper(graph, create_graph=source.create_graph, keep="summaries")
    )
    try:
        scene = Scene(graph, stepper, orientation=widget.orientation,
                      show_plumbing=widget.show_plumbing, collapsed=widget.collapsed,
                      folds=widget.folds)
        return record_session(Session(graph, stepper, scene), title=_title(graph),
                              height=widget.height, max_steps=max_steps)
    finally:
        stepper.close()


def _title(g: Any) -> str:
    what = g.model_name or (g.nodes[g.roots[0][0]].name if g.roots else "graph")
    return f"autograd_widget — backward of {what} ({len(g.nodes)} nodes)"


def _script_json(obj: Any) -> str:
    """JSON safe to inline in a <script> element: no "<" at all (so no "</script>" can close it
    and no markup can appear in the page's text, e.g. KaTeX's own "<img" strings)."""
    return json.dumps(obj, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")


def html(recording: dict[str, Any]) -> str:
    """A self-contained page: the widget's bundle and stylesheet inlined, and the recording.

    Example:
        >>> page = html(record(aw.explore(z, params={"x": x, "y": y})))
        >>> page.startswith("<!doctype html>")
        True
    """
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


def save_html(widget: Exportable, path: str | Path) -> Path:
    """Write the recorded step-through of `widget` as one offline HTML file; return its path.

    Example:
        >>> import tempfile
        >>> w = aw.explore(z, params={"x": x, "y": y})
        >>> with tempfile.TemporaryDirectory() as d:
        ...     path = save_html(w, Path(d) / "run.html")
        ...     path.name, path.read_text(encoding="utf-8").startswith("<!doctype html>")
        ('run.html', True)
    """
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
