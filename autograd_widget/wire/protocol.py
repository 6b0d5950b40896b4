"""The widget protocol, in ONE table: every message the front-end may send, and the state keys.

Python is the source of truth; the front-end draws and sends gestures as custom messages
`{"type": name, ...}`. `MESSAGES` maps each name to its `Message`: a validator (reads the message
and the session, changes NOTHING, returns the handler's arguments or raises `Invalid`), a
handler (acts on a `Session`) and the reply shape ("reply": answered with
`{"type": "reply", "request": id, "data": ...}`; "none": the change shows in the synced state).
`dispatch` runs one message: an unknown or malformed one, or one its validator rejects, is
answered with `{"type": "warning", "message": ...}` and changes nothing; a handler that fails is
logged and warned about, never raised into the kernel. After a failed step, "step", "run" and
"run_to" are refused ("can't step: X failed — Back or Reset to go on"): they would only call the
failing node again. js/src/protocol.js lists the same names
(tests/wire/test_protocol.py checks).

The synced traits the front-end reads and writes are `TRAITS` (widget.py declares them); the
`_state` trait's keys are `STATE_KEYS`; the standalone page's walkthrough (export/html.py, format
`WALKTHROUGH_FORMAT`) stores `STATE_ARRAYS` per item/edge and `STEP_SCALARS` per step.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..view import inspect
from ..view.fitrule import Viewport
from ..view.labels import node_title
from ..view.modules import module_paths
from . import rankswitch, trainpayload
from .quoting import MAX_WARNING, quote, shown

if TYPE_CHECKING:
    from .session import Session

__all__ = [
    "BUNDLE",
    "HOST_MESSAGES",
    "MAX_CHUNK_MS",
    "MESSAGES",
    "REPLY",
    "REPLY_TYPES",
    "STATE_ARRAYS",
    "STATE_KEYS",
    "STEP_SCALARS",
    "TRAITS",
    "WALKTHROUGH_FORMAT",
    "WARNING",
    "Invalid",
    "Message",
    "dispatch",
]

log = logging.getLogger("autograd_widget")

#: Messages to the widget's host rather than its session: the loader (js/src/loader.js) asks
#: for the front-end bundle once per page; widget.py answers with a REPLY.
BUNDLE = "bundle"
HOST_MESSAGES = (BUNDLE,)

#: Reply types Python sends to the front-end.
REPLY, WARNING = "reply", "warning"
REPLY_TYPES = (REPLY, WARNING)

#: The widget's synced traits the front-end reads or writes (js/src/protocol.js `TRAIT`): the
#: graph and state payloads, the bundle's hash, the selection, the height (None: what the graph
#: needs), the layout direction ("auto", "TB", "LR"), the plumbing toggle; a watch's timeline and
#: step; a rank group's rank shown and its one line per rank (rankswitch.py).
TRAITS = (
    "_graph", "_state", "_bundle", "selected", "selected_edge", "height", "orientation",
    "show_plumbing", "_timeline", "watch_step", "rank", "ranks",
)

#: The format of the walkthrough a standalone page embeds (export/html.py; js/src/walkthrough.js
#: plays it): the page's own recorded step-through, not `aw.record`'s Recording.
WALKTHROUGH_FORMAT = "autograd_widget.walkthrough/3"

#: Keys of the `_state` trait (`StateView.update()` plus "running" and "notice").
STATE_KEYS = (
    "seq", "position", "total", "done", "running", "next", "next_id", "last",
    "node_state", "progress", "edge_norm", "edge_flag", "edge_values", "edits", "norm_range",
    "norm_scale", "waiting", "status", "announce", "error", "notice",
)
#: The per-item/edge arrays of the state (binary buffers).
STATE_ARRAYS = ("node_state", "progress", "edge_norm", "edge_flag")
#: The scalars a walkthrough stores per step.
STEP_SCALARS = (
    "position", "total", "done", "next", "next_id", "last", "status", "announce", "waiting",
    "error", "norm_range", "norm_scale",
)

#: Longest a single "run" chunk may take, whatever the front-end asks: the kernel handler blocks
#: every other message (Pause included) while it runs.
MAX_CHUNK_MS = 1000


class Invalid(ValueError):
    """A message rejected before anything changed; its text is the warning sent back."""


@dataclass(frozen=True)
class Message:
    """One message type: `validate(session, msg) -> args` (pure; raises `Invalid`), then
    `handle(session, args) -> reply data | None`; `reply` is "reply" or "none";
    `after_release`: still handled once the session is released."""

    name: str
    validate: Callable[[Session, dict], Any]
    handle: Callable[[Session, Any], Any]
    reply: str = "none"
    after_release: bool = False


# ----------------------------------------------------------------------------- validators
def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _request(msg: dict, what: str) -> int:
    req = msg.get("request")
    if not _is_int(req):
        raise Invalid(f"{what} needs an integer request id")
    return req


def _visible_edge(s: Session, idx: Any, why: str) -> str:
    if not _is_int(idx) or not 0 <= idx < len(s.scene.visible.edge_real):
        raise Invalid(why)
    return s.scene.edge_id(idx)


def _node_arg(s: Session, msg: dict) -> str | None:
    """The real node id behind the visible item `msg["node"]` (None: a box or a bad index)."""
    j = s.scene.item_index(msg.get("node"))
    return None if j is None else s.scene.node_of_item(j)


def _none(s: Session, msg: dict) -> None:
    return None


def _refuse_after_failure(s: Session, what: str) -> None:
    """After a failed step, moving forward would only call the failing node again: say so and
    point to Back (when there is a step to undo) or Reset."""
    err = s.stepper.last_error
    if err is None:
        return
    way = "Back or Reset" if s.stepper.position > 0 else "Reset"
    node = node_title(s.scene.graph.nodes[err[0]])
    raise Invalid(f"can't {what}: {node} failed — {way} to go on")


def _v_step(s: Session, msg: dict) -> None:
    if s.stepper.done:
        raise Invalid("already at the end of backward: nothing left to step")
    _refuse_after_failure(s, "step")


def _v_back(s: Session, msg: dict) -> None:
    if s.stepper.position == 0:
        raise Invalid("already at the start: nothing to undo")


def _v_run_to(s: Session, msg: dict) -> str:
    _refuse_after_failure(s, "run to a node")
    scene, st = s.scene, s.stepper
    j = scene.item_index(msg.get("node"))
    if j is not None and scene.node_of_item(j) is None:
        # A module box: run until every node inside it has run.
        ids = set(scene.box_members(j))
        steps = [k for k, nid in enumerate(st.order) if nid in ids]
        if not steps or steps[-1] < st.position:
            raise Invalid("every node of this module has already run")
        return st.order[steps[-1]]
    node = _node_arg(s, msg)
    if node is None:
        raise Invalid(f"run_to needs a node index in 0..{scene.visible.n_items - 1}")
    if node not in st.order[st.position :]:
        raise Invalid(f"{node} has already run or never runs: nothing to run to")
    return node


def _v_run(s: Session, msg: dict) -> float:
    chunk = msg.get("chunk_ms", 100)
    if isinstance(chunk, bool) or not isinstance(chunk, int | float) or not chunk > 0:
        raise Invalid("run needs a positive chunk_ms")
    _refuse_after_failure(s, "run on")
    return min(float(chunk), MAX_CHUNK_MS) / 1000.0


def _v_select(s: Session, msg: dict) -> tuple[bool, str | None]:
    """(reveal first, node id or None)."""
    if "id" in msg:  # a real node id, e.g. from search: reveal it first
        nid = msg.get("id")
        if not isinstance(nid, str) or nid not in s.scene.graph.nodes:
            raise Invalid(f"select: no node {quote(nid)}")
        return True, nid
    if msg.get("node") is None:
        return False, None
    node = _node_arg(s, msg)
    if node is None:
        raise Invalid("select needs a node index (not a module box) or null")
    return False, node


def _v_select_edge(s: Session, msg: dict) -> str | None:
    eid = msg.get("edge")
    if eid is None:
        return None
    return _visible_edge(s, eid, "select_edge needs a visible edge index or null")


def _v_expand(s: Session, msg: dict) -> str:
    group = msg.get("group")
    if not (s.scene.is_collapsed(group) or s.scene.is_folded(group)):
        raise Invalid(f"expand: {quote(group)} is not a collapsed module or a folded run")
    return group


def _v_collapse(s: Session, msg: dict) -> str:
    group = msg.get("group")
    if group is None and "node" in msg:
        node = _node_arg(s, msg)
        group = s.scene.graph.nodes[node].module if node is not None else None
    if not isinstance(group, str) or group not in module_paths(s.scene.graph):
        raise Invalid(f"collapse: {quote(group)} is not a module of this graph")
    return group


#: The largest drawing size (px) a "viewport" message may name.
MAX_VIEWPORT_PX = 100_000


def _v_viewport(s: Session, msg: dict) -> Viewport:
    """The drawing's size in px: positive numbers (the plot's width and height)."""
    _request(msg, "viewport")
    w, h = msg.get("width"), msg.get("height")
    ok = all(isinstance(v, int | float) and not isinstance(v, bool) and 40 <= v <= MAX_VIEWPORT_PX
             for v in (w, h))
    if not ok:
        raise Invalid("viewport needs width and height in px (40 to 100000)")
    return Viewport(float(w), float(h))


def _v_fold_level(s: Session, msg: dict) -> str | None:
    anchor = msg.get("anchor")
    if anchor is not None and not isinstance(anchor, str):
        raise Invalid("fold_level: anchor must be a module path or null")
    if not s.scene.layout.frames:
        raise Invalid("fold_level: no unfolded module to fold")
    return anchor


def _v_plumbing(s: Session, msg: dict) -> bool:
    show = msg.get("show")
    if not isinstance(show, bool):
        raise Invalid("plumbing needs show: true or false")
    return show


def _v_search(s: Session, msg: dict) -> str:
    query = msg.get("query")
    if not _is_int(msg.get("request")) or not isinstance(query, str):
        raise Invalid("search needs an integer request id and a query string")
    return query


def _v_probe(s: Session, msg: dict) -> tuple[int, int | None]:
    _request(msg, "probe")
    samples, seed = msg.get("samples", 16), msg.get("seed", 0)
    if not _is_int(samples) or not 2 <= samples <= 1024:
        raise Invalid("probe: samples must be an int in 2..1024")
    if seed is not None and not _is_int(seed):
        raise Invalid("probe: seed must be an int or null")
    return samples, seed


def _v_edit_edge(s: Session, msg: dict) -> tuple[str, str, float]:
    eid = _visible_edge(s, msg.get("edge"), "edit_edge needs a visible edge index")
    op, factor = msg.get("op"), 0.0
    if op == "scale":
        f = msg.get("factor")
        if isinstance(f, bool) or not isinstance(f, int | float):
            raise Invalid("edit_edge scale needs a numeric factor")
        factor = float(f)
    elif op not in ("zero", "clear"):
        raise Invalid("edit_edge op must be 'zero', 'scale' or 'clear'")
    return eid, op, factor


def _v_request(what: str) -> Callable[[Session, dict], None]:
    def validate(s: Session, msg: dict) -> None:
        _request(msg, what)

    return validate


def _v_memory(s: Session, msg: dict) -> bool:
    exclude = msg.get("exclude_leaves", False)
    if not _is_int(msg.get("request")) or not isinstance(exclude, bool):
        raise Invalid("memory needs an integer request id (and exclude_leaves: bool)")
    return exclude


def _v_saved_values(s: Session, msg: dict) -> tuple[str, str, int]:
    _request(msg, "saved_values")
    nid, name = msg.get("id"), msg.get("name")
    if not isinstance(nid, str) or nid not in s.scene.graph.nodes or not isinstance(name, str):
        raise Invalid("saved_values needs a node id and a saved value's name")
    limit = msg.get("limit", 4096)
    if not _is_int(limit) or limit < 1:
        limit = 4096
    return nid, name, limit


def _v_inspect(s: Session, msg: dict) -> tuple[str, Any]:
    """("edge", edge id) | ("node", node id) | ("item", visible item index)."""
    _request(msg, "inspect")
    scene = s.scene
    if "edge_id" in msg:
        eid = msg.get("edge_id")
        if not isinstance(eid, str) or eid not in scene.state.edge_index:
            raise Invalid(f"inspect: no edge {quote(eid)}")
        return "edge", eid
    if "edge" in msg:
        idx = msg.get("edge")
        return "edge", _visible_edge(s, idx, f"inspect: no edge index {quote(idx)}")
    if "id" in msg:
        nid = msg.get("id")
        if not isinstance(nid, str) or nid not in s.scene.graph.nodes:
            raise Invalid(f"inspect: no node {quote(nid)}")
        return "node", nid
    j = scene.item_index(msg.get("node"))
    if j is None:
        raise Invalid(f"inspect: no node index {quote(msg.get('node'))}")
    return "item", j


# ----------------------------------------------------------------------------- handlers
def _step(s: Session, _: None) -> None:
    s.stepper.step()


def _back(s: Session, _: None) -> None:
    s.stepper.back()


def _reset(s: Session, _: None) -> None:
    s.running = False
    s.stepper.reset()


def _run_to(s: Session, node: str) -> None:
    s.stepper.run(until=node)


def _run(s: Session, seconds: float) -> None:
    """One time-boxed chunk of Play; the front-end asks for the next one."""
    deadline = time.perf_counter() + seconds
    st = s.stepper
    try:
        with st.batch():
            while not st.done:
                rec = st.step()
                if rec is None or rec.error is not None or st.at_breakpoint:
                    s.running = False
                    break
                if time.perf_counter() >= deadline:
                    break
    except BaseException:  # e.g. a kernel interrupt: stop the run, show where it stopped
        s.running = False
        s.refresh()
        raise
    if st.done:
        s.running = False
    else:
        s.running = s.running or (st.last_error is None and not st.at_breakpoint)
    s.refresh()


def _pause(s: Session, _: None) -> None:
    s.refresh(running=False)


def _select(s: Session, args: tuple[bool, str | None]) -> None:
    reveal, node = args
    if reveal and node is not None:
        s.scene.reveal(node)
        s.redraw()
    s.select(node)


def _select_edge(s: Session, edge: str | None) -> None:
    s.select_edge(edge)


def _expand(s: Session, group: str) -> None:
    s.scene.expand(group)  # a folded run unfolds locally, one box per block
    s.redraw()


def _collapse(s: Session, group: str) -> None:
    s.scene.collapse(group)
    s.redraw()


def _viewport(s: Session, viewport: Viewport) -> dict[str, Any]:
    """The drawing was measured (first render, resize): collapse="auto" and orientation="auto"
    choose again for it; a new drawing only when they changed (sent before the reply, which
    says whether it did)."""
    changed = s.scene.fit_to(viewport)
    if changed:
        s.redraw()
    return {"changed": changed}


def _fold_level(s: Session, anchor: str | None) -> None:
    s.scene.fold_level(anchor)
    s.redraw()


def _plumbing(s: Session, show: bool) -> None:
    s.scene.set_plumbing(show)
    s.redraw()


def _search(s: Session, query: str) -> dict[str, Any]:
    return inspect.search_matches(s.scene, query)


def _probe(s: Session, args: tuple[int, int | None]) -> dict[str, Any]:
    return inspect.sensitivity_report(s.scene, s.stepper, *args)


def _edit_edge(s: Session, args: tuple[str, str, float]) -> None:
    eid, op, factor = args
    try:
        if op == "zero":
            s.stepper.zero_edge_grad(eid)
        elif op == "scale":
            s.stepper.scale_edge_grad(eid, factor)
        else:
            s.stepper.clear_edits(eid)
    except (ValueError, TypeError, KeyError) as e:  # the stepper refuses before changing
        raise Invalid(str(e)) from None


def _leaf_diff(s: Session, _: None) -> dict[str, Any]:
    return inspect.leaf_diff_report(s.scene, s.stepper)


def _memory(s: Session, exclude: bool) -> dict[str, Any]:
    return inspect.memory_report(s.scene, exclude_leaves=exclude)


def _saved_values(s: Session, args: tuple[str, str, int]) -> dict[str, Any]:
    return inspect.saved_values_reply(s.scene.graph, *args)


def _v_first_nonfinite(s: Session, msg: dict) -> float | None:
    _request(msg, "first_nonfinite")
    if "chunk_ms" not in msg:
        return None
    return _v_run(s, msg)


def _seek_nonfinite(s: Session, seconds: float) -> bool:
    """Step ahead for at most `seconds`, stopping right after the first step that sent a NaN/Inf
    along an edge; True when one did (or one had flowed before)."""
    st = s.stepper
    if st.first_nonfinite() is not None:
        return True
    deadline = time.perf_counter() + seconds
    graph = s.scene.graph
    found = False
    try:
        with st.batch():
            while not st.done and st.last_error is None:
                rec = st.step()
                if rec is None or rec.error is not None:
                    break
                for e in graph.out_edges(rec.node.id):
                    sm = st.edge_summary(e.id)
                    if sm is not None and (sm.nan or sm.inf):
                        found = True
                        break
                if found or time.perf_counter() >= deadline:
                    break
    finally:
        s.refresh(running=False)
    return found


def _first_nonfinite(s: Session, seconds: float | None) -> dict[str, Any]:
    """The first edge whose gradient holds NaN/Inf: revealed, selected, described with the
    cause of its birth (`nonfinite_origins`). With a chunk (`chunk_ms`), runs ahead to find it:
    one time-boxed chunk per message, `searching` while it goes on (the front-end asks again
    unless the user paused)."""
    st = s.stepper
    if seconds is not None and not _seek_nonfinite(s, seconds):
        total = len(st.order)
        if st.last_error is not None:
            node = node_title(s.scene.graph.nodes[st.last_error[0]])
            return {"edge": None, "message": f"stopped looking: {node} failed before any NaN/Inf"}
        if not st.done:
            return {"edge": None, "searching": True, "position": st.position, "total": total}
        return {"edge": None, "message": "no NaN/Inf gradient in the whole backward"}
    found = st.first_nonfinite()
    if found is None:
        return {
            "edge": None,
            "message": "no NaN/Inf gradient so far"
            + ("" if st.done else " (run further: only flowed edges count)"),
        }
    edge, summary = found
    edge = s.scene.graph.edge(edge.id)  # as drawn (a compiled region's output: from its op)
    born = st.first_birth()
    if born is not None and born.node != edge.src:
        born = None
    s.scene.reveal(edge.src)
    s.scene.reveal(edge.dst)
    s.redraw()
    real = s.scene.graph.edges.index(edge)
    vis_edges = [int(j) for j in (s.scene.visible.edge_real == real).nonzero()[0]]
    s.select_edge(edge.id)
    s.select(edge.src)
    src = s.scene.graph.nodes[edge.src]
    return {
        "edge": vis_edges[0] if vis_edges else None,
        "id": edge.id,
        "src": src.name,
        "dst": s.scene.graph.nodes[edge.dst].name,
        "summary": inspect.summary_payload(summary),
        "cause": None if born is None else born.cause,
        "expected": bool(born is not None and born.expected),
        "sentence": _birth_sentence(node_title(src), summary, born),
    }


def _birth_sentence(title: str, summary: Any, born: Any) -> str:
    bad = " and ".join(
        f"{n} {what}{'' if n == 1 else 's'}"
        for n, what in ((summary.nan, "NaN"), (summary.inf, "Inf")) if n
    )
    head = f"The first NaN/Inf is born in {title}: {bad or 'non-finite values'} in its output"
    if born is None or not born.cause:
        return head + "."
    return f"{head}. {born.cause[0].upper()}{born.cause[1:]}"


def _v_watch_step(s: Session, msg: dict) -> tuple[int, str | None]:
    if s.watch is None:
        raise Invalid("watch_step: this widget shows no watch")
    step, node = msg.get("step"), msg.get("node")
    if not _is_int(step) or not s.is_watched(step):
        raise Invalid(f"watch_step: {quote(step)} is not a watched step of this watch")
    if node is not None and not isinstance(node, str):
        raise Invalid("watch_step: node must be a node id")
    return step, node


def _watch_step(s: Session, args: tuple[int, str | None]) -> None:
    s.show_step(*args)


def _v_timeline_rows(s: Session, msg: dict) -> str:
    _request(msg, "timeline_rows")
    if s.watch is None or not isinstance(msg.get("module"), str):
        raise Invalid("timeline_rows needs a watch and a module path ('' for the model)")
    return msg["module"]


def _timeline_rows(s: Session, module: str) -> dict[str, Any]:
    assert s.watch is not None
    return trainpayload.rows_payload(s.watch, module)


def _v_gain(s: Session, msg: dict) -> None:
    _request(msg, "gain")
    if getattr(s.stepper, "recording", None) is None:
        raise Invalid("gain needs a recorded step: aw.explore(watch) or aw.explore(recording)")


def _gain(s: Session, _: None) -> dict[str, Any]:
    return trainpayload.gain_payload(s.scene, s.stepper.recording)  # type: ignore[attr-defined]


def _inspect(s: Session, args: tuple[str, Any]) -> dict[str, Any]:
    what, key = args
    live = s.live_stepper
    if what == "edge":
        return inspect.inspect_edge(s.scene, live, key)
    if what == "node":
        return inspect.inspect_node(s.scene, live, key)
    return inspect.inspect_item(s.scene, live, key)


def _message(name: str, validate: Callable, handle: Callable, reply: str = "none",
             after_release: bool = False) -> tuple[str, Message]:
    return name, Message(name, validate, handle, reply, after_release)


#: THE table: message name -> Message (validator, handler, reply shape).
MESSAGES: dict[str, Message] = dict([
    _message("expand", _v_expand, _expand),
    _message("collapse", _v_collapse, _collapse),
    _message("plumbing", _v_plumbing, _plumbing),
    _message("viewport", _v_viewport, _viewport, "reply"),
    _message("fold_level", _v_fold_level, _fold_level),
    _message("search", _v_search, _search, "reply"),
    _message("first_nonfinite", _v_first_nonfinite, _first_nonfinite, "reply"),
    _message("memory", _v_memory, _memory, "reply"),
    _message("saved_values", _v_saved_values, _saved_values, "reply"),
    _message("probe", _v_probe, _probe, "reply"),
    _message("edit_edge", _v_edit_edge, _edit_edge),
    _message("leaf_diff", _v_request("leaf_diff"), _leaf_diff, "reply"),
    _message("select_edge", _v_select_edge, _select_edge),
    _message("step", _v_step, _step),
    _message("back", _v_back, _back),
    _message("reset", _none, _reset),
    _message("run_to", _v_run_to, _run_to),
    _message("run", _v_run, _run),
    _message("pause", _none, _pause, after_release=True),
    _message("select", _v_select, _select, after_release=True),
    _message("inspect", _v_inspect, _inspect, "reply", after_release=True),
    _message("watch_step", _v_watch_step, _watch_step),
    _message("timeline_rows", _v_timeline_rows, _timeline_rows, "reply"),
    _message("gain", _v_gain, _gain, "reply"),
    _message("select_rank", rankswitch.select_rank_validator(Invalid), rankswitch.select_rank),
])


def _warning(message: str) -> dict[str, Any]:
    log.warning("autograd_widget: %s", message)
    return {"type": WARNING, "message": message}


def dispatch(session: Session, msg: Any) -> list[dict[str, Any]]:
    """Run one front-end message against `session`; return the messages to send back.

    Never raises for a bad message (a warning comes back, nothing changed) nor for a failing
    handler (logged, warned, Play stopped), nor when showing the state after a failure fails
    too (logged; the next message is handled as usual); a step that waited in vain for the
    other ranks (`Session.stalled_on`) is a short warning and the standing notice, no traceback;
    a KeyboardInterrupt is re-raised after the state shows where it stopped.

    Example:
        >>> from autograd_widget.view.scene import Scene
        >>> from autograd_widget.wire.session import Session
        >>> session = Session(g, st, Scene(g, st))
        >>> dispatch(session, {"type": "step"}), st.position
        ([], 1)
        >>> dispatch(session, {"type": "nope"})[0]["type"]
        'warning'
    """
    if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
        return [_warning(f"ignored a malformed message: {shown(msg)}")]
    kind = msg["type"]
    spec = MESSAGES.get(kind)
    if spec is None:
        return [_warning(f"ignored an unknown message type {quote(kind)}")]
    if session.released and not spec.after_release:
        return [_warning("this widget was released (widget.release()): explore() the tensors "
                         "again")]
    try:
        args = spec.validate(session, msg)
        data = spec.handle(session, args)
    except Invalid as bad:
        return [_warning(str(bad)[:MAX_WARNING])]
    except Exception as err:  # a UI command must never take the kernel or the widget down
        stalled = session.stalled_on(err)  # the other ranks not stepping: said, not a crash
        if stalled is not None:
            return [_warning(f"{kind} {stalled}")]
        log.exception("autograd_widget: %s failed", kind)
        out = [_warning(f"{kind} failed: {type(err).__name__}: {str(err)[:300]}")]
        try:
            session.refresh(running=False)
        except Exception:  # the state cannot be shown either: say so, raise nothing
            log.exception("autograd_widget: showing the state after %s failed", kind)
            session.running = False
        return out
    if spec.reply == REPLY:
        return [{"type": REPLY, "request": msg["request"], "data": data}]
    return []
