"""The widget protocol, in ONE table: every message the front-end may send, and the state keys.

Python is the source of truth; the front-end draws and sends gestures as custom messages
`{"type": name, ...}`. `MESSAGES` maps each name to its `Message`: a validator (reads the message
and the session, changes NOTHING, returns the handler's arguments or raises `Invalid`), a
handler (acts on a `Session`) and the reply shape ("reply": answered with
`{"type": "reply", "request": id, "data": ...}`; "none": the change shows in the synced state).
The validators and handlers live by family, each family one module exporting a `Handler` per
message (message.py): stepping (stepmessages.py), drawing (drawmessages.py), inspection
(inspectmessages.py), editing (editmessages.py), a watch (watchmessages.py) and a rank group
(rankswitch.py); this module names them, once, in the one table.
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
from typing import TYPE_CHECKING, Any

from . import (
    drawmessages,
    editmessages,
    inspectmessages,
    rankswitch,
    stepmessages,
    watchmessages,
)
from .message import MAX_CHUNK_MS, Handler, Invalid, Message
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
#: for the front-end bundle once per page; widget.py answers with a REPLY (hostmessages.py
#: `bundle_reply`).
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


# ----------------------------------------------------------------------------- the one table
def _table(*entries: tuple[str, Handler]) -> dict[str, Message]:
    """The table from (name, handler) pairs; a name given twice is a bug, said at import."""
    table = {name: Message.named(name, handler) for name, handler in entries}
    if len(table) != len(entries):
        raise AssertionError("a message name is given twice in the protocol's table")
    return table


#: THE table: message name -> Message (validator, handler, reply shape). The handlers live in
#: their family's module; the names live here, once.
MESSAGES: dict[str, Message] = _table(
    # stepping (stepmessages.py): moving the stepper, Play in chunks, First NaN/Inf
    ("first_nonfinite", stepmessages.FIRST_NONFINITE),
    ("step", stepmessages.STEP),
    ("back", stepmessages.BACK),
    ("reset", stepmessages.RESET),
    ("run_to", stepmessages.RUN_TO),
    ("run", stepmessages.RUN),
    ("pause", stepmessages.PAUSE),
    # drawing (drawmessages.py): the scene changes, the stepper does not
    ("expand", drawmessages.EXPAND),
    ("collapse", drawmessages.COLLAPSE),
    ("plumbing", drawmessages.PLUMBING),
    ("viewport", drawmessages.VIEWPORT),
    ("fold_level", drawmessages.FOLD_LEVEL),
    # inspection (inspectmessages.py): selection, the inspector and reports
    ("search", inspectmessages.SEARCH),
    ("memory", inspectmessages.MEMORY),
    ("saved_values", inspectmessages.SAVED_VALUES),
    ("probe", inspectmessages.PROBE),
    ("select_edge", inspectmessages.SELECT_EDGE),
    ("select", inspectmessages.SELECT),
    ("inspect", inspectmessages.INSPECT),
    # editing (editmessages.py): what-if edits and their effect on the leaves
    ("edit_edge", editmessages.EDIT_EDGE),
    ("leaf_diff", editmessages.LEAF_DIFF),
    # a watch (watchmessages.py): the timeline's step cursor, op rows, gains
    ("watch_step", watchmessages.WATCH_STEP),
    ("timeline_rows", watchmessages.TIMELINE_ROWS),
    ("timeline_range", watchmessages.TIMELINE_RANGE),
    ("gain", watchmessages.GAIN),
    # a rank group (rankswitch.py): the rank selector
    ("select_rank", rankswitch.SELECT_RANK),
)


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
