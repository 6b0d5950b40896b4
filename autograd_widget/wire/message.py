"""What a front-end message is made of: `Invalid`, a `Handler` (validator + handler + reply
shape), the `Message` of protocol.py's one table, and the argument checks every family shares.

The families of handlers (stepmessages.py, drawmessages.py, inspectmessages.py,
editmessages.py, watchmessages.py, and rankswitch.py's rank switch) each export one `Handler`
per message; protocol.py names them in its one table (`MESSAGES`), so the message names stay in
one module and no family imports protocol.py (which imports them all).

Guarantees: a validator reads the message and the session and changes NOTHING; it returns the
handler's arguments or raises `Invalid`, whose text is the warning sent back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:
    from .session import Session

__all__ = [
    "MAX_CHUNK_MS",
    "Handler",
    "Invalid",
    "Message",
    "Validator",
    "is_int",
    "needs_request",
    "no_args",
    "node_arg",
    "request_id",
    "visible_edge",
]

#: Longest a single "run" chunk may take, whatever the front-end asks: the kernel handler blocks
#: every other message (Pause included) while it runs.
MAX_CHUNK_MS = 1000

#: A validator: (session, message) -> the handler's arguments; raises `Invalid`, changes nothing.
Validator = Callable[["Session", dict[str, Any]], Any]


class Invalid(ValueError):
    """A message rejected before anything changed; its text is the warning sent back."""


@dataclass(frozen=True)
class Handler:
    """How one message is answered, without its name (protocol.py's table gives the name):
    `validate(session, msg) -> args` (pure; raises `Invalid`), then
    `handle(session, args) -> reply data | None`; `reply` is "reply" (answered with
    `{"type": "reply", "request": id, "data": ...}`) or "none" (the change shows in the synced
    state); `after_release`: still handled once the session is released."""

    validate: Validator
    handle: Callable[[Session, Any], Any]
    reply: str = "none"
    after_release: bool = False


@dataclass(frozen=True)
class Message:
    """One message type: `validate(session, msg) -> args` (pure; raises `Invalid`), then
    `handle(session, args) -> reply data | None`; `reply` is "reply" or "none";
    `after_release`: still handled once the session is released."""

    name: str
    validate: Validator
    handle: Callable[[Session, Any], Any]
    reply: str = "none"
    after_release: bool = False

    @classmethod
    def named(cls, name: str, handler: Handler) -> Message:
        """The table's entry for message `name`, answered by `handler`.

        Example:
            >>> m = Message.named("nop", Handler(no_args, lambda s, _: None, after_release=True))
            >>> m.name, m.reply, m.after_release
            ('nop', 'none', True)
        """
        return cls(name, handler.validate, handler.handle, handler.reply, handler.after_release)


def is_int(v: Any) -> TypeGuard[int]:
    """A true int (a bool is not one: `True` is no index).

    Example:
        >>> is_int(3), is_int(True), is_int(3.0)
        (True, False, False)
    """
    return isinstance(v, int) and not isinstance(v, bool)


def request_id(msg: dict[str, Any], what: str) -> int:
    """The message's integer `request` id (its reply carries it back); `Invalid` without one.

    Example:
        >>> request_id({"request": 7}, "memory")
        7
        >>> request_id({}, "memory")
        Traceback (most recent call last):
        autograd_widget.wire.message.Invalid: memory needs an integer request id
    """
    req = msg.get("request")
    if not is_int(req):
        raise Invalid(f"{what} needs an integer request id")
    return req


def needs_request(what: str) -> Validator:
    """A validator for a message that takes nothing but its request id.

    Example:
        >>> needs_request("leaf_diff")(None, {"request": 1}) is None
        True
    """

    def validate(s: Session, msg: dict[str, Any]) -> None:
        request_id(msg, what)

    return validate


def no_args(s: Session, msg: dict[str, Any]) -> None:
    """The validator of a message that takes no argument ("reset", "pause"): nothing to check.

    Example:
        >>> no_args(None, {"type": "reset"}) is None
        True
    """
    return None


def visible_edge(s: Session, idx: Any, why: str) -> str:
    """The real edge id behind visible edge index `idx`; `Invalid(why)` for anything else.

    Example:
        >>> from autograd_widget.view.scene import Scene
        >>> from autograd_widget.wire.session import Session
        >>> session = Session(g, st, Scene(g, st))
        >>> visible_edge(session, 0, "no such edge")
        'n0:0'
    """
    if not is_int(idx) or not 0 <= idx < len(s.scene.visible.edge_real):
        raise Invalid(why)
    return s.scene.edge_id(idx)


def node_arg(s: Session, msg: dict[str, Any]) -> str | None:
    """The real node id behind the visible item `msg["node"]` (None: a box or a bad index).

    Example:
        >>> from autograd_widget.view.scene import Scene
        >>> from autograd_widget.wire.session import Session
        >>> session = Session(g, st, Scene(g, st))
        >>> node_arg(session, {"node": 0}), node_arg(session, {"node": 99})
        ('n0', None)
    """
    j = s.scene.item_index(msg.get("node"))
    return None if j is None else s.scene.node_of_item(j)
