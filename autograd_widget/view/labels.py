"""What a node, a box and the step counter SAY: the short texts of the drawing and the inspector.

One home for every label, so the payload, the state's status line, the inspector, the static
figure and the recording all write a node the same way. Pure functions of the records (and of a
stepper's public position/order/last_error for the status line); no torch.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..core.graph import BackwardGraph
    from ..engine.stepper import Stepper

__all__ = ["display_kind", "group_label", "node_title", "short_label", "status_line"]

_BACKWARD_SUFFIX = re.compile(r"Backward\d*$")


def short_label(node: Any) -> str:
    """What the box says: the op without its "Backward0" suffix, or the leaf's name.

    Args:
        node: a `Node` (or anything with its name/kind/leaf_name fields).

    Example:
        >>> short_label(g.nodes["n0"]), short_label(g.nodes["n3"])
        ('Add', 'x')
    """
    if node.kind == "accumulate_grad":
        return node.leaf_name or "leaf"
    name = node.name.rpartition("::")[2]
    return _BACKWARD_SUFFIX.sub("", name) or name


def display_kind(node: Any) -> str:
    """The kind the drawing colours by: "parameter" or "input" for a leaf, else `node.kind`.

    Example:
        >>> display_kind(g.nodes["n3"]), display_kind(g.nodes["n0"])
        ('parameter', 'function')
    """
    if node.kind == "accumulate_grad":
        return "parameter" if node.leaf_kind == "parameter" else "input"
    return node.kind


def group_label(path: str, model_name: str | None) -> str:
    """A module box's label: its path, or the model's name for the model itself ("").

    Example:
        >>> group_label("", "MLP"), group_label("layers.0", "MLP")
        ('MLP', 'layers.0')
    """
    return path if path else (model_name or "model")


def node_title(node: Any) -> str:
    """A node's name, with the leaf's name for AccumulateGrad ("AccumulateGrad (x)").

    Example:
        >>> node_title(g.nodes["n3"])
        'AccumulateGrad (x)'
    """
    if node.kind == "accumulate_grad" and node.leaf_name:
        return f"{node.name} ({node.leaf_name})"
    return node.name


def status_line(graph: BackwardGraph, stepper: Stepper) -> str:
    """ "step 7 / 23 — MulBackward0": steps done, total, and the node about to run (or done).

    Args:
        graph: the stepper's graph (for the nodes' names).
        stepper: read through its public `position`, `order` and `last_error`.

    Example:
        >>> status_line(g, st)
        'step 0 / 4 — AddBackward0'
    """
    pos, total = stepper.position, len(stepper.order)
    err = stepper.last_error
    if err is not None and pos < total and err[0] == stepper.order[pos]:
        return f"step {pos} / {total} — {node_title(graph.nodes[err[0]])} failed: {err[1]}"
    if pos >= total:
        return f"step {pos} / {total} — done"
    return f"step {pos} / {total} — {node_title(graph.nodes[stepper.order[pos]])}"
