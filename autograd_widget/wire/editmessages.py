"""The editing family of front-end messages: what-if edits of an edge's gradient, and what
they changed at the leaves.

Each message is one `Handler` (message.py) that protocol.py's one table names: "edit_edge"
(zero, scale or clear the edit of one edge's gradient: engine/step/edits.py) and "leaf_diff"
(each leaf's gradient with the edits against without them: view/inspect.py
`leaf_diff_report`). Both need a live graph (`Capabilities.edit`); on a replay the stepper
refuses, and the refusal is the warning sent back.

Guarantees: a refused edit changes nothing (the stepper checks before it changes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..view import inspect
from .message import Handler, Invalid, needs_request, visible_edge

if TYPE_CHECKING:
    from .session import Session

__all__ = ["EDIT_EDGE", "LEAF_DIFF"]


def _v_edit_edge(s: Session, msg: dict[str, Any]) -> tuple[str, str, float]:
    """(edge id, "zero" | "scale" | "clear", the scale factor: 0.0 unless "scale")."""
    eid = visible_edge(s, msg.get("edge"), "edit_edge needs a visible edge index")
    op, factor = msg.get("op"), 0.0
    if op == "scale":
        f = msg.get("factor")
        if isinstance(f, bool) or not isinstance(f, int | float):
            raise Invalid("edit_edge scale needs a numeric factor")
        factor = float(f)
    elif op not in ("zero", "clear"):
        raise Invalid("edit_edge op must be 'zero', 'scale' or 'clear'")
    return eid, op, factor


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


#: "edit_edge" {edge, op, factor?}: a what-if edit of one edge's gradient.
EDIT_EDGE = Handler(_v_edit_edge, _edit_edge)
#: "leaf_diff" {request}: each leaf's gradient with the edits against without them.
LEAF_DIFF = Handler(needs_request("leaf_diff"), _leaf_diff, "reply")
