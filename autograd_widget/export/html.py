"""Standalone export: the whole step-through walked once, played with no kernel: a walkthrough.

A walkthrough (format `WALKTHROUGH_FORMAT`, wire/protocol.py) is the widget's own protocol frozen
in time: the `_graph` payload, the `_state` of position 0, and per step only what changed (indices
with old and new values, so the front-end can step forward and back without a kernel), plus the
inspector data as of the end of the run and the replies of the modes that need no kernel once
answered: the memory report (with and without leaves), the sensitivity probe, and what "First
NaN/Inf" answers (the step after which the first NaN/Inf has flowed, and the reply there). The
HTML file wraps the same JS bundle the widget uses and this walkthrough (js/src/walkthrough.js
plays it), under a header (title, description, how to use it); nothing else: no CDN, no request.
It is not `aw.record`'s Recording (an engine run the live widget replays through the kernel).

The run is walked by a Session of its own (a separate `Stepper` over the same graph, a fresh
`Scene` with the widget's folds) driven through the protocol, so the live widget is not moved.
"""

from __future__ import annotations

import base64
import json
from html import escape as _escape
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..util import static
from ..util.atomic import write_bytes
from ..util.bidi import isolate
from ..util.jsonsafe import encode_number
from ..view.scene import Scene
from ..view.timeline import timeline
from ..wire.protocol import REPLY, STATE_ARRAYS, STEP_SCALARS, WALKTHROUGH_FORMAT, dispatch
from ..wire.session import Session, freed_notice
from .rankpage import rank_pages

if TYPE_CHECKING:
    from ..core.graph import BackwardGraph
    from ..view.repeats import Repeat

__all__ = [
    "HOW_TO",
    "PROBE_SAMPLES",
    "WALKTHROUGH_FORMAT",
    "Exportable",
    "html",
    "pair_html",
    "save_html",
    "save_pair_html",
    "start_step",
    "walkthrough",
    "walkthrough_session",
]


class Exportable(Protocol):
    """What `walkthrough` reads of a widget (its public API only): the graph, the stepper's options,
    and how the drawing is folded, oriented and sized."""

    graph: BackwardGraph
    stepper: Any
    height: int | None
    drawn_orientation: str
    show_plumbing: bool

    @property
    def collapsed(self) -> list[str]:
        """Module paths folded into boxes now."""
        ...

    @property
    def folds(self) -> dict[str, Repeat]:
        """Runs of repeated blocks folded now, by fold key."""
        ...

    @property
    def compared(self) -> str:
        """The compared recording's name ("" when none: `explore(a, compare_to=b)`)."""
        ...


#: Samples of the walked sensitivity probe (js/src/sensitivity.js PROBE_SAMPLES asks the same).
PROBE_SAMPLES = 16
#: The page's one-line how-to, under its title.
HOW_TO = ("Step with \u2192 / \u2190 (or the Step and Back buttons), click a node or an edge to "
          "inspect it, ? for all keys.")


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
        raise RuntimeError(f"walkthrough: {msg['type']} was refused: {out.get('message')}")
    return out["data"]


def _try_ask(session: Session, msg: dict[str, Any]) -> dict[str, Any]:
    """A request whose refusal is walked as `{"error": message}` (the front-end shows it)."""
    (out,) = dispatch(session, {**msg, "request": 0})
    if out["type"] != REPLY:
        return {"error": str(out.get("message"))}
    return out["data"]


def _walk_modes(session: Session) -> dict[str, Any] | None:
    """The colour modes' replies, asked at step 0 (they do not change with the step): memory with
    and without leaves, and the sensitivity probe. None for a replayed engine run (it has no saved
    tensors to weigh nor nodes to call)."""
    if session.recorded:
        return None
    return {
        "memory": {
            "false": _try_ask(session, {"type": "memory", "exclude_leaves": False}),
            "true": _try_ask(session, {"type": "memory", "exclude_leaves": True}),
        },
        "probe": _try_ask(session, {"type": "probe", "samples": PROBE_SAMPLES, "seed": 0}),
    }


def _walk_nonfinite(session: Session) -> dict[str, Any]:
    """What "First NaN/Inf" answers, asked through the protocol at the end of the walked run:
    `step` (the position after which the first NaN/Inf has flowed; None: none flows) and `reply`
    (the reply from there on, its `edge` the walked drawing's edge index) and `select` (the node
    the live widget selects: where the NaN/Inf is born); with none, `reply` is what the live
    widget answers at the end without searching and `seek` what a search from an earlier step
    answers (it stops at a failing node)."""
    stepper, scene = session.stepper, session.scene
    found = stepper.first_nonfinite()
    if found is None:
        reply = _try_ask(session, {"type": "first_nonfinite"})
        if stepper.last_error is None and not stepper.done:
            seek = None  # a walkthrough cut short (max_steps): nothing walked beyond, no search
        elif stepper.last_error is None:
            seek = _try_ask(session, {"type": "first_nonfinite", "chunk_ms": 1000})
        else:  # a search from before the failing step stops at it: ask one from step 0
            dispatch(session, {"type": "reset"})
            seek = {"searching": True}
            while seek.get("searching"):
                seek = _try_ask(session, {"type": "first_nonfinite", "chunk_ms": 1000})
        return {"step": None, "reply": reply, "seek": seek, "select": None}
    edge = scene.graph.edge(found[0].id)  # as drawn (a compiled region's output: from its op)
    real = scene.graph.edges.index(edge)
    shown = [int(j) for j in (scene.visible.edge_real == real).nonzero()[0]]
    step = stepper.order.index(edge.src) + 1
    reply = dict(_ask(session, {"type": "first_nonfinite"}))  # reveals on this (last) scene
    reply["edge"] = shown[0] if shown else None
    if not shown:  # inside a folded box of the walked drawing: say where, select nothing
        reply["message"] = (f"{reply.get('sentence', '')} (The edge is inside a folded module: "
                            "unfold it in the live widget to see it.)").strip()
    return {"step": step, "reply": reply, "seek": None, "select": edge.src if shown else None}


def walkthrough_session(
    session: Session, *, title: str, height: int | None, max_steps: int | None = None,
    description: str | None = None,
) -> dict[str, Any]:
    """Walk `session`'s run from its stepper's position (step 0 for a fresh one) to the end
    (or `max_steps` steps), driving it through the protocol like the front-end does: the
    walkthrough a standalone page plays.

    Args:
        session: a session of its own (its stepper is moved; it needs no front).
        title, height: the page's title and the drawing's height in pixels.
        max_steps: stop after this many steps.
        description: a paragraph the page shows under its title (plain text).

    Guarantees: the replies a walkthrough answers offline (inspector, colour modes, First
    NaN/Inf) are the protocol's own replies, asked of this session; the front-end computes none
    of them.

    Example:
        >>> session = Session(g, st, Scene(g, st))
        >>> walk = walkthrough_session(session, title="z", height=600)
        >>> walk["format"], len(walk["steps"]), st.position
        ('autograd_widget.walkthrough/3', 4, 4)
        >>> walk["modes"]["memory"]["false"]["total"], walk["first_nonfinite"]["step"]
        (4, None)
    """
    stepper, sv = session.stepper, session.scene.state
    state0 = sv.update()
    modes = _walk_modes(session)
    arrays = sv.visible_arrays()
    first = {name: arrays[name] for name in STATE_ARRAYS}
    steps: list[dict[str, Any]] = []
    limit = len(stepper.order) if max_steps is None else min(max_steps, len(stepper.order))
    failed = None
    # Per step only what it changed (`take_changes`): the scalars, the differences of the arrays
    # at the items and edges it touched, the values of the edges it touched; so walking a large
    # graph costs no pass over every item, edge or value (nor a whole payload) per step.
    current = {name: arrays[name].copy() for name in STATE_ARRAYS}
    shown: dict[str, Any] = arrays["edge_values"]
    sv.take_changes()
    while stepper.position < limit:
        refused = dispatch(session, {"type": "step"})  # a node that fails is no refusal
        if refused:
            raise RuntimeError(
                f"walkthrough: step {stepper.position} was refused: {refused[0].get('message')}"
            )
        sv.advance()
        changes = sv.take_changes()
        at = {"node_state": changes["items"], "progress": changes["items"],
              "edge_norm": changes["edges"], "edge_flag": changes["edges"]}  # fmt: skip
        new = sv.visible_arrays(False, items=changes["items"], edges=changes["edges"])
        delta: dict[str, Any] = {"scalars": _scalars(sv.scalars())}
        for name in STATE_ARRAYS:
            d = _array_delta(current[name][at[name]], new[name])
            if d is not None:
                d["index"] = at[name][d["index"]].astype(np.int32)
                delta[name] = d
            current[name][at[name]] = new[name]
        set_vals, unset, was = {}, {}, {}
        for k, now in changes["edge_values"].items():
            old = shown.get(k)
            if now is None and old is not None:
                unset[k] = shown.pop(k)
            elif now is not None and old != now:
                set_vals[k] = shown[k] = now
                if old is not None:
                    was[k] = old
        if set_vals or unset:
            delta["edge_values"] = {"set": set_vals, "unset": unset, "was": was}
        steps.append(delta)
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
    graph = _encode(_typed_graph(session.graph_payload()))  # before First NaN/Inf reveals
    nonfinite = _walk_nonfinite(session)
    return {
        "format": WALKTHROUGH_FORMAT,
        "title": title,
        "description": description,
        "height": height,
        "graph": graph,
        "state": _encode({**state0, **first, "notice": session.notice}),
        "steps": _encode(steps),
        "failed": failed,
        "inspect": _encode(inspect),
        "modes": _encode(modes),
        "first_nonfinite": _encode(nonfinite),
    }


def walkthrough(
    widget: Exportable, *, max_steps: int | None = None, title: str | None = None,
    description: str | None = None, start: int = 0,
) -> dict[str, Any]:
    """Walk the whole run (or `max_steps` steps) of `widget`'s graph, as the widget shows it:
    the walkthrough its standalone page plays.

    A session of its own: a separate `Stepper` over the same graph and a fresh `Scene` with the
    widget's current folds, plumbing and orientation, its standing notice (a graph freed by
    backward) and the edges it flags as differing from a compared recording; the widget is only
    read through its public API, and its stepper is not moved. A watch's widget
    (`aw.explore(watch)`) adds its timeline (`view.timeline.timeline`, every step) and the step
    the page's graph is (`watch_step`): the page shows the timeline above that step's graph.
    A rank group's widget (`aw.explore(group)`) adds every other rank's walkthrough (`ranks`,
    rankpage.py).

    Args:
        widget: what to walk through.
        max_steps: stop after this many steps.
        title: the page's title (None: "autograd_widget — backward of MODEL (N nodes)").
        description: a paragraph under the title (plain text; None: none).
        start: the walked step the page opens at (clamped to the steps walked; Reset still
            goes back to step 0).

    Example:
        >>> w = aw.explore(z, params={"x": x, "y": y})
        >>> walkthrough(w)["format"], w.stepper.position  # the widget's stepper is not moved
        ('autograd_widget.walkthrough/3', 0)
        >>> walkthrough(w, title="z = x² + y")["title"]
        'z = x² + y'
    """
    if not isinstance(start, int) or isinstance(start, bool) or start < 0:
        raise ValueError(f"start must be a step number >= 0, got {start!r}")
    graph = widget.graph
    stepper = widget.stepper.twin()  # the same kind of run, from step 0
    try:
        scene = Scene(graph, stepper, orientation=widget.drawn_orientation,
                      show_plumbing=widget.show_plumbing, collapsed=widget.collapsed,
                      folds=widget.folds)
        session = Session(graph, stepper, scene, notice=freed_notice(graph))
        differences = getattr(widget, "differences", None)
        if differences is not None:  # a replay compared with another recording
            scene.state.mark_differences(differences)
            session.compared = widget.compared
        walk = walkthrough_session(
            session, title=_title(graph) if title is None else title,
            height=widget.height, max_steps=max_steps, description=description,
        )
    finally:
        stepper.close()
    walk["start"] = min(start, len(walk["steps"]))
    watch = getattr(widget, "watch", None)
    if watch is not None:  # aw.explore(watch): the timeline above the step this page holds
        step = getattr(widget, "watch_step", None)
        walk["timeline"] = _encode(timeline(watch, step))
        walk["watch_step"] = step
    if getattr(widget, "rank_group", None) is not None:  # aw.explore(group): every rank's run
        walk["ranks"] = rank_pages(widget, lambda one: walkthrough(
            one, max_steps=max_steps, title=title, description=description, start=start))
    return walk


def _title(g: Any) -> str:
    what = g.model_name or (g.nodes[g.roots[0][0]].name if g.roots else "graph")
    return f"autograd_widget — backward of {isolate(what)} ({len(g.nodes)} nodes)"


def _script_json(obj: Any) -> str:
    """JSON safe to inline in a <script> element: no "<" at all (so no "</script>" can close it
    and no markup can appear in the page's text, e.g. KaTeX's own "<img" strings)."""
    return json.dumps(obj, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")


#: The page's own layout: a header, then the widget filling the rest of the window's height.
_PAGE_CSS = """
html, body { height: 100%; margin: 0; }
body { display: flex; flex-direction: column; box-sizing: border-box; padding: 8px 12px 12px;
  font-family: system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; color: #222;
  background: #fff; }
.agw-page-head { flex: none; margin: 0 0 8px; }
.agw-page-head h1 { font-size: 1.25rem; font-weight: 600; margin: 0 0 2px; }
.agw-page-desc { margin: 2px 0; max-width: 70em; white-space: pre-line; }
.agw-page-howto { margin: 2px 0; font-size: 0.85rem; color: #555; }
.agw-page-howto kbd { font: inherit; border: 1px solid #bbb; border-radius: 3px; padding: 0 3px; }
#autograd-widget-root { flex: 1 1 auto; min-height: 320px; display: flex; }
#autograd-widget-root > .agw-root { flex: 1 1 auto; height: auto !important; min-height: 0; }
#autograd-widget-root.agw-pair { gap: 10px; }
.agw-pair > section { flex: 1 1 0; min-width: 0; display: flex; flex-direction: column; }
.agw-pair-name { font-size: 1rem; font-weight: 600; margin: 0 0 4px; }
.agw-pair > section > div { flex: 1 1 auto; min-height: 0; display: flex; }
.agw-pair > section > div > .agw-root { flex: 1 1 auto; height: auto !important; min-height: 0; }
@media (prefers-color-scheme: dark) {
  body { background: #111; color: #ddd; }
  .agw-page-howto { color: #aaa; }
  .agw-page-howto kbd { border-color: #555; }
}
"""


def html(walk: dict[str, Any]) -> str:
    """A self-contained page: a header (the walkthrough's title, its description, a one-line
    how-to), then the widget's bundle and stylesheet inlined, playing the walkthrough in the rest
    of the window's height. The title and description are plain text (escaped), each isolated
    from the text around it (`<bdi>`; the `<title>` by `util.bidi.isolate`).

    Example:
        >>> w = aw.explore(z, params={"x": x, "y": y})
        >>> page = html(walkthrough(w, description="a <small> z"))
        >>> page.startswith("<!doctype html>"), "a &lt;small&gt; z" in page
        (True, True)
    """
    main = "<main id=\"autograd-widget-root\"></main>\n"
    data = (f"<script type=\"application/json\" id=\"autograd-widget-walkthrough\">"
            f"{_script_json(walk)}</script>\n")
    # the bundle's `mountWalkthrough` export draws the walkthrough into the page
    mount = "mountWalkthroughRanks" if walk.get("ranks") else "mountWalkthrough"  # rankpage.py
    draw = (f"mod.{mount}(document.getElementById('autograd-widget-root'),"
            " read('autograd-widget-walkthrough'), { fill: true });\n")
    return _page(walk, main, data, draw)


def pair_html(left: dict[str, Any], right: dict[str, Any], names: tuple[str, str]) -> str:
    """One self-contained page of two walkthroughs side by side, stepped together (the bundle's
    `mountWalkthroughPair`: a move in either brings the other to the same number of steps), each
    titled by its name; the header is `left`'s (title, description, how-to).

    Example:
        >>> walk = walkthrough(aw.explore(z, params={"x": x, "y": y}))
        >>> page = pair_html(walk, walk, ("rank 0", "rank <1>"))
        >>> "mod.mountWalkthroughPair(" in page, "rank &lt;1&gt;" in page
        (True, True)
    """
    heads = [f"<h2 class=\"agw-pair-name\"><bdi>{_escape(str(n))}</bdi></h2>" for n in names]
    main = ("<main id=\"autograd-widget-root\" class=\"agw-pair\">"
            f"<section>{heads[0]}<div id=\"autograd-widget-left\"></div></section>"
            f"<section>{heads[1]}<div id=\"autograd-widget-right\"></div></section></main>\n")
    data = "".join(
        f"<script type=\"application/json\" id=\"autograd-widget-walkthrough-{side}\">"
        f"{_script_json(walk)}</script>\n" for side, walk in (("left", left), ("right", right)))
    draw = ("mod.mountWalkthroughPair([document.getElementById('autograd-widget-left'),"
            " document.getElementById('autograd-widget-right')],"
            " [read('autograd-widget-walkthrough-left'),"
            " read('autograd-widget-walkthrough-right')], { fill: true });\n")
    return _page(left, main, data, draw)


def _page(walk: dict[str, Any], main: str, data: str, draw: str) -> str:
    """The page around `main` (where the widgets go), `data` (the walkthroughs' script
    elements) and `draw` (the module code drawing them, with `mod` the bundle and `read(id)` a
    JSON reader)."""
    front = static.bundle()
    bundle, css = front.code, front.css
    title = str(walk.get("title") or "autograd_widget")
    desc = walk.get("description")
    desc_html = f'<p class="agw-page-desc"><bdi>{_escape(str(desc))}</bdi></p>' if desc else ""
    how = _escape(HOW_TO).replace("?", "<kbd>?</kbd>", 1)
    safe_css = (css + _PAGE_CSS).replace("</", "<\\/")
    # The bundle is an ES module, imported from a blob: URL (no network).
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{_escape(isolate(title))}</title>"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<style>{safe_css}</style></head>\n<body>"
        f"<header class=\"agw-page-head\"><h1><bdi>{_escape(title)}</bdi></h1>{desc_html}"
        f"<p class=\"agw-page-howto\">{how}</p></header>\n"
        f"{main}{data}"
        f"<script type=\"application/json\" id=\"autograd-widget-bundle\">"
        f"{_script_json(bundle)}</script>\n"
        "<script type=\"module\">\n"
        "const read = (id) => JSON.parse(document.getElementById(id).textContent);\n"
        "const url = URL.createObjectURL(new Blob([read('autograd-widget-bundle')],"
        " { type: 'text/javascript' }));\n"
        "const mod = await import(url);\n"
        f"{draw}"
        "</script>\n</body></html>\n"
    )


def save_html(
    widget: Exportable, path: str | Path, title: str | None = None,
    description: str | None = None, *, start: int = 0,
) -> Path:
    """Write the walkthrough of `widget` (its whole step-through) as one offline HTML file;
    return its path.

    Args:
        widget: what to walk through (its stepper is not moved).
        path: where to write (an .html or .htm file; folders are created). The page is written
            beside it and renamed: the file is complete or untouched, never half-written.
        title: the page's title and heading (None: "autograd_widget — backward of MODEL (N
            nodes)").
        description: a paragraph under the title, plain text (None: none).
        start: the step the page opens at (0: before the first step).

    Example:
        >>> import tempfile
        >>> w = aw.explore(z, params={"x": x, "y": y})
        >>> with tempfile.TemporaryDirectory() as d:
        ...     path = save_html(w, Path(d) / "run.html")
        ...     path.name, path.read_text(encoding="utf-8").startswith("<!doctype html>")
        ('run.html', True)
    """
    out = _html_path(path, title, description)
    walk = walkthrough(widget, title=title, description=description, start=start)
    # complete or absent: a page that fails half-way never replaces a good one
    write_bytes(out, html(walk).encode("utf-8"))
    return out


def save_pair_html(
    left: Exportable, right: Exportable, path: str | Path, *, names: tuple[str, str],
    title: str | None = None, description: str | None = None, start: int = 0,
) -> Path:
    """Write two widgets' walkthroughs as one offline page, side by side and stepped together
    (`pair_html`); return its path. Arguments as `save_html`; `names` titles the sides.

    Example:
        >>> import tempfile
        >>> a, b = aw.explore(z, params={"x": x}), aw.explore(z, params={"y": y})
        >>> with tempfile.TemporaryDirectory() as d:
        ...     save_pair_html(a, b, Path(d) / "pair.html", names=("a", "b")).name
        'pair.html'
    """
    out = _html_path(path, title, description)
    walks = [walkthrough(w, title=title, description=description, start=start)
             for w in (left, right)]
    write_bytes(out, pair_html(walks[0], walks[1], names).encode("utf-8"))
    return out


def start_step(stepper: Any, start: int | str) -> int:
    """`save_html`'s `start` as a walked step number: an int as it is, "current" where
    `stepper` is now (its position, plus the failed step when the last one failed: the page then
    shows the failure, as the widget does).

    Example:
        >>> start_step(st, 2), start_step(st, "current")
        (2, 0)
        >>> start_step(st, -1)
        Traceback (most recent call last):
        ValueError: start must be a step number >= 0 or 'current', got -1
    """
    if start == "current":
        return stepper.position + (1 if stepper.last_error is not None else 0)
    if not isinstance(start, int) or isinstance(start, bool) or start < 0:
        raise ValueError(f"start must be a step number >= 0 or 'current', got {start!r}")
    return start


def _html_path(path: str | Path, title: str | None, description: str | None) -> Path:
    """`path` as an .html file whose folder exists; the bundle and the page's text checked
    before anything is walked."""
    static.bundle()  # FileNotFoundError naming the build, before anything is walked
    out = Path(path)
    if out.suffix.lower() not in (".html", ".htm"):
        raise ValueError(f"save_html writes an .html file, got {str(path)!r}")
    for name, text in (("title", title), ("description", description)):
        _check_encodable(name, text)
    out.parent.mkdir(parents=True, exist_ok=True)
    return out


def _check_encodable(name: str, text: str | None) -> None:
    """A ValueError naming `name` when `text` cannot be written as UTF-8 (a lone surrogate,
    what Python makes of a command line's undecodable bytes)."""
    if text is None:
        return
    try:
        str(text).encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(
            f"the page's {name} cannot be written as UTF-8: character {e.object[e.start]!r} at "
            f"position {e.start} is a lone surrogate (undecodable bytes?); pass valid text"
        ) from None
