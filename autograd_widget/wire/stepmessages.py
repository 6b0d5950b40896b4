"""The stepping family of front-end messages: Step, Back, Reset, Run to a node, Play (time-boxed
chunks), Pause, and "First NaN/Inf" (run ahead to the first non-finite gradient).

Each message is one `Handler` (message.py) that protocol.py's one table names: "step", "back",
"reset", "run_to", "run", "pause", "first_nonfinite". They move `session.stepper`; the new
state reaches the front-end through the stepper's listener (`Session.refresh`), or through
`Session.refresh` itself after a chunk.

Guarantees: after a failed step, "step", "run" and "run_to" are refused ("can't step: X failed —
Back or Reset to go on"): they would only call the failing node again. A chunk ("run",
"first_nonfinite" with `chunk_ms`) never blocks the kernel longer than `MAX_CHUNK_MS`; the
front-end asks for the next one unless the user paused.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..view import inspect
from ..view.labels import node_title
from .message import MAX_CHUNK_MS, Handler, Invalid, no_args, node_arg, request_id

if TYPE_CHECKING:
    from .session import Session

__all__ = ["BACK", "FIRST_NONFINITE", "PAUSE", "RESET", "RUN", "RUN_TO", "STEP"]


# ----------------------------------------------------------------------------- validators
def _refuse_after_failure(s: Session, what: str) -> None:
    """After a failed step, moving forward would only call the failing node again: say so and
    point to Back (when there is a step to undo) or Reset."""
    err = s.stepper.last_error
    if err is None:
        return
    way = "Back or Reset" if s.stepper.position > 0 else "Reset"
    node = node_title(s.scene.graph.nodes[err[0]])
    raise Invalid(f"can't {what}: {node} failed — {way} to go on")


def _v_step(s: Session, msg: dict[str, Any]) -> None:
    """One step: refused at the end and after a failed step."""
    if s.stepper.done:
        raise Invalid("already at the end of backward: nothing left to step")
    _refuse_after_failure(s, "step")


def _v_back(s: Session, msg: dict[str, Any]) -> None:
    """Undo one step: refused at the start."""
    if s.stepper.position == 0:
        raise Invalid("already at the start: nothing to undo")


def _v_run_to(s: Session, msg: dict[str, Any]) -> str:
    """The node to run until: the visible item `node` (a module box: its last node to run);
    refused when it already ran or never runs."""
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
    node = node_arg(s, msg)
    if node is None:
        raise Invalid(f"run_to needs a node index in 0..{scene.visible.n_items - 1}")
    if node not in st.order[st.position :]:
        raise Invalid(f"{node} has already run or never runs: nothing to run to")
    return node


def _v_run(s: Session, msg: dict[str, Any]) -> float:
    """The chunk's length in seconds: `chunk_ms` (default 100), at most `MAX_CHUNK_MS`."""
    chunk = msg.get("chunk_ms", 100)
    if isinstance(chunk, bool) or not isinstance(chunk, int | float) or not chunk > 0:
        raise Invalid("run needs a positive chunk_ms")
    _refuse_after_failure(s, "run on")
    return min(float(chunk), MAX_CHUNK_MS) / 1000.0


def _v_first_nonfinite(s: Session, msg: dict[str, Any]) -> float | None:
    """None: only look at what flowed; with `chunk_ms`, the chunk to run ahead (as "run")."""
    request_id(msg, "first_nonfinite")
    if "chunk_ms" not in msg:
        return None
    return _v_run(s, msg)


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


# ----------------------------------------------------------------------------- First NaN/Inf
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
    """The reply's sentence: "The first NaN/Inf is born in X: 2 NaNs in its output.", then
    the cause of its birth when one is known."""
    bad = " and ".join(
        f"{n} {what}{'' if n == 1 else 's'}"
        for n, what in ((summary.nan, "NaN"), (summary.inf, "Inf")) if n
    )
    head = f"The first NaN/Inf is born in {title}: {bad or 'non-finite values'} in its output"
    if born is None or not born.cause:
        return head + "."
    return f"{head}. {born.cause[0].upper()}{born.cause[1:]}"


# ----------------------------------------------------------------------------- the family
#: "step": one node, as the engine would call it.
STEP = Handler(_v_step, _step)
#: "back": undo the last step.
BACK = Handler(_v_back, _back)
#: "reset": back to step 0 (Play stops).
RESET = Handler(no_args, _reset)
#: "run_to" {node}: run until that node (or a module box's last node) has run.
RUN_TO = Handler(_v_run_to, _run_to)
#: "run" {chunk_ms}: one chunk of Play.
RUN = Handler(_v_run, _run)
#: "pause": stop Play (still answered after release: the state shows it stopped).
PAUSE = Handler(no_args, _pause, after_release=True)
#: "first_nonfinite" {request, chunk_ms?}: the first NaN/Inf edge, running ahead in chunks.
FIRST_NONFINITE = Handler(_v_first_nonfinite, _first_nonfinite, "reply")
