"""The watch family of front-end messages: `aw.explore(watch)`'s timeline and step cursor.

Each message is one `Handler` (message.py) that protocol.py's one table names: "watch_step"
(show another watched step's graph below the timeline: `Session.show_step`), "timeline_rows"
(a module's op rows), "timeline_range" (the module rows over a step range at a width: a zoom
or a pan of a long run's timeline) and "gain" (|grad out| / |grad in| per visible item of a
recorded step); trainpayload.py turns view/timeline.py's numbers into their payloads.

Guarantees: each is refused, changing nothing, on a widget that shows no watch (or, for "gain",
no recorded step); a step that was not watched is refused by name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..engine.record.recording import Recording
from . import trainpayload
from .message import Handler, Invalid, is_int, request_id
from .quoting import quote

if TYPE_CHECKING:
    from .session import Session

__all__ = ["GAIN", "MAX_BINS", "TIMELINE_RANGE", "TIMELINE_ROWS", "WATCH_STEP"]

#: "timeline_range" asks for at most this many columns (a wide screen's pixels, twice over).
MAX_BINS = 8192


def _v_watch_step(s: Session, msg: dict[str, Any]) -> tuple[int, str | None]:
    """(a watched step of this watch, the node id to select there or None)."""
    if s.watch is None:
        raise Invalid("watch_step: this widget shows no watch")
    step, node = msg.get("step"), msg.get("node")
    if not is_int(step) or not s.is_watched(step):
        raise Invalid(f"watch_step: {quote(step)} is not a watched step of this watch")
    if node is not None and not isinstance(node, str):
        raise Invalid("watch_step: node must be a node id")
    return step, node


def _watch_step(s: Session, args: tuple[int, str | None]) -> None:
    s.show_step(*args)


def _v_timeline_rows(s: Session, msg: dict[str, Any]) -> str:
    """The module path whose rows are asked for ('' for the model)."""
    request_id(msg, "timeline_rows")
    module = msg.get("module")
    if s.watch is None or not isinstance(module, str):
        raise Invalid("timeline_rows needs a watch and a module path ('' for the model)")
    return module


def _timeline_rows(s: Session, module: str) -> dict[str, Any]:
    assert s.watch is not None
    return trainpayload.rows_payload(s.watch, module)


def _v_timeline_range(s: Session, msg: dict[str, Any]) -> tuple[int, int, int]:
    """(start, stop, bins): a non-empty step range of this watch, 1 <= bins <= `MAX_BINS`."""
    request_id(msg, "timeline_range")
    if s.watch is None:
        raise Invalid("timeline_range: this widget shows no watch")
    start, stop, bins = msg.get("start"), msg.get("stop"), msg.get("bins")
    if not (is_int(start) and is_int(stop) and 0 <= start < stop):
        raise Invalid(f"timeline_range: start and stop must be steps with 0 <= start < stop, got "
                      f"{quote(start)}, {quote(stop)}")  # fmt: skip
    if not (is_int(bins) and 1 <= bins <= MAX_BINS):
        raise Invalid(f"timeline_range: bins must be an int in 1..{MAX_BINS} (the columns to "
                      f"fill), got {quote(bins)}")  # fmt: skip
    return start, stop, bins


def _timeline_range(s: Session, args: tuple[int, int, int]) -> dict[str, Any]:
    assert s.watch is not None
    return trainpayload.range_payload(s.watch, *args)


def _v_gain(s: Session, msg: dict[str, Any]) -> Recording:
    """The recording the stepper replays; refused unless it replays a recorded step."""
    request_id(msg, "gain")
    recording = getattr(s.stepper, "recording", None)  # a Replay's; a live Stepper has none
    if not isinstance(recording, Recording):
        raise Invalid("gain needs a recorded step: aw.explore(watch) or aw.explore(recording)")
    return recording


def _gain(s: Session, recording: Recording) -> dict[str, Any]:
    return trainpayload.gain_payload(s.scene, recording)


#: "watch_step" {step, node?}: show that watched step's graph below the timeline.
WATCH_STEP = Handler(_v_watch_step, _watch_step)
#: "timeline_rows" {request, module}: a module's op rows.
TIMELINE_ROWS = Handler(_v_timeline_rows, _timeline_rows, "reply")
#: "timeline_range" {request, start, stop, bins}: the module rows over a step range.
TIMELINE_RANGE = Handler(_v_timeline_range, _timeline_range, "reply")
#: "gain" {request}: |grad out| / |grad in| per visible item.
GAIN = Handler(_v_gain, _gain, "reply")
