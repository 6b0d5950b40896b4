"""The drawing family of front-end messages: unfold and fold boxes, show or hide plumbing, the
drawing's measured size, fold a level.

Each message is one `Handler` (message.py) that protocol.py's one table names: "expand",
"collapse", "plumbing", "viewport", "fold_level". They change `session.scene` (view/scene.py)
and send the new drawing with the step state mapped onto it (`Session.redraw`); the stepper is
never moved.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeGuard

from ..view.fitrule import Viewport
from ..view.modules import module_paths
from .message import Handler, Invalid, node_arg, request_id
from .quoting import quote

if TYPE_CHECKING:
    from .session import Session

__all__ = ["COLLAPSE", "EXPAND", "FOLD_LEVEL", "MAX_VIEWPORT_PX", "PLUMBING", "VIEWPORT"]

#: The largest drawing size (px) a "viewport" message may name.
MAX_VIEWPORT_PX = 100_000


# ----------------------------------------------------------------------------- validators
def _v_expand(s: Session, msg: dict[str, Any]) -> str:
    """The collapsed module or folded run `group` to unfold."""
    group = msg.get("group")
    if not (s.scene.is_collapsed(group) or s.scene.is_folded(group)):
        raise Invalid(f"expand: {quote(group)} is not a collapsed module or a folded run")
    return str(group)


def _v_collapse(s: Session, msg: dict[str, Any]) -> str:
    """The module `group` to fold, or the module of the visible item `node`."""
    group = msg.get("group")
    if group is None and "node" in msg:
        node = node_arg(s, msg)
        group = s.scene.graph.nodes[node].module if node is not None else None
    if not isinstance(group, str) or group not in module_paths(s.scene.graph):
        raise Invalid(f"collapse: {quote(group)} is not a module of this graph")
    return group


def _v_viewport(s: Session, msg: dict[str, Any]) -> Viewport:
    """The drawing's size in px: positive numbers (the plot's width and height)."""
    request_id(msg, "viewport")
    w, h = msg.get("width"), msg.get("height")
    if not (_is_px(w) and _is_px(h)):
        raise Invalid("viewport needs width and height in px (40 to 100000)")
    return Viewport(float(w), float(h))


def _is_px(v: Any) -> TypeGuard[float]:
    """A drawing size in px: a number (not a bool) in 40..`MAX_VIEWPORT_PX`."""
    return isinstance(v, int | float) and not isinstance(v, bool) and 40 <= v <= MAX_VIEWPORT_PX


def _v_fold_level(s: Session, msg: dict[str, Any]) -> str | None:
    """The module path the fold keeps in view (None: the whole drawing)."""
    anchor = msg.get("anchor")
    if anchor is not None and not isinstance(anchor, str):
        raise Invalid("fold_level: anchor must be a module path or null")
    if not s.scene.layout.frames:
        raise Invalid("fold_level: no unfolded module to fold")
    return anchor


def _v_plumbing(s: Session, msg: dict[str, Any]) -> bool:
    """Show (True) or contract (False) the plumbing nodes."""
    show = msg.get("show")
    if not isinstance(show, bool):
        raise Invalid("plumbing needs show: true or false")
    return show


# ----------------------------------------------------------------------------- handlers
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


# ----------------------------------------------------------------------------- the family
#: "expand" {group}: unfold a collapsed module or a folded run.
EXPAND = Handler(_v_expand, _expand)
#: "collapse" {group | node}: fold a module into one box.
COLLAPSE = Handler(_v_collapse, _collapse)
#: "plumbing" {show}: show or contract views, reshapes, transposes, expands.
PLUMBING = Handler(_v_plumbing, _plumbing)
#: "viewport" {request, width, height}: the drawing was measured; replies {changed}.
VIEWPORT = Handler(_v_viewport, _viewport, "reply")
#: "fold_level" {anchor}: fold the deepest unfolded level.
FOLD_LEVEL = Handler(_v_fold_level, _fold_level)
