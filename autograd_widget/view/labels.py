"""What a node, a box and the step counter SAY: the short texts of the drawing and the inspector.

One home for every label, so the payload, the state's status line, the inspector, the static
figure and the recording all write a node the same way. Pure functions of the records (and of a
stepper's public position/order/last_error for the status line); no torch. Every name the user or
a file chose (op, leaf, module and class names, error messages) goes in through
`util.bidi.isolate`, so a right-to-left override inside one cannot reverse the text after it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..core.dtensor import communication_op
from ..core.fsdp import POST_BACKWARD_NODE
from ..util.bidi import isolate

if TYPE_CHECKING:
    from ..core.graph import BackwardGraph
    from ..engine.interface import Stepping

__all__ = [
    "REGION_PREFIX",
    "TITLE_SEP",
    "display_kind",
    "group_label",
    "module_title",
    "node_title",
    "region_of_path",
    "run_title",
    "short_label",
    "status_line",
    "step_announcement",
]

#: Between a module's path and its class in a title: "layers.3 · TransformerEncoderLayer".
TITLE_SEP = " · "


_BACKWARD_SUFFIX = re.compile(r"Backward\d*$")


def short_label(node: Any) -> str:
    """What the box says: the op without its "Backward0" suffix, or the leaf's name; a DTensor
    communication node says the call it undoes ("redistribute", "to_local", "from_local", a
    functional collective's op); FSDP2's bookkeeping node (RegisterPostBackwardFunctionBackward,
    plumbing: it only hands the gradient on) says "FSDP post-backward".

    Args:
        node: a `Node` (or anything with its name/kind/leaf_name fields).

    Example:
        >>> short_label(g.nodes["n0"]), short_label(g.nodes["n3"])
        ('Add', 'x')
    """
    if node.kind == "accumulate_grad":
        return isolate(node.leaf_name) if node.leaf_name else "leaf"
    op = communication_op(node.name)
    if op is not None:
        return op
    if node.name == POST_BACKWARD_NODE:
        return "FSDP post-backward"
    name = node.name.rpartition("::")[2]
    return isolate(_BACKWARD_SUFFIX.sub("", name) or name)


def display_kind(node: Any) -> str:
    """The kind the drawing colours by: "parameter" or "input" for a leaf, "communication" for a
    node that moves gradients between DTensor layouts or ranks (core/dtensor.py
    `is_communication`: redistribute, to_local, from_local, functional collectives), else
    `node.kind`.

    Example:
        >>> display_kind(g.nodes["n3"]), display_kind(g.nodes["n0"])
        ('parameter', 'function')
    """
    if node.kind == "accumulate_grad":
        return "parameter" if node.leaf_kind == "parameter" else "input"
    if communication_op(node.name) is not None:
        return "communication"
    return node.kind


def group_label(path: str, model_name: str | None) -> str:
    """A module box's label: its path, or the model's name for the model itself ("").

    Example:
        >>> group_label("", "MLP"), group_label("layers.0", "MLP")
        ('MLP', 'layers.0')
    """
    return isolate(path) if path else (isolate(model_name) if model_name else "model")


#: How a compiled region's frame (its module path segment) starts: "compiled region 1 · 22 aten
#: ops" (view/compiledframes.py).
REGION_PREFIX = "compiled region "


def region_of_path(path: str | None) -> str | None:
    """The compiled region frame a module path lies in (the path up to its "compiled region"
    segment, view/compiledframes.py), else None.

    Example:
        >>> region_of_path("block.compiled region 1 · 9 aten ops.fc1")
        'block.compiled region 1 · 9 aten ops'
        >>> region_of_path("block.fc1") is None
        True
    """
    if not path or REGION_PREFIX not in path:
        return None
    parts = path.split(".")
    for i, part in enumerate(parts):
        if part.startswith(REGION_PREFIX):
            return ".".join(parts[: i + 1])
    return None


def module_title(graph: BackwardGraph, path: str) -> str:
    """A module's frame or box title: "layers.3 · TransformerEncoderLayer".

    The class comes from `graph.module_classes` (recorded at capture from `track()` or
    `model=`); without it the title is the path alone (`group_label`: the model's name, or
    "model", for the model itself ""). The model itself with a known class is its class alone.

    Args:
        graph: the graph (its `module_classes` and `model_name` are read).
        path: a module path ("" for the model itself).

    Example:
        >>> gm = aw.capture(model(torch.randn(2, 4)).sum(), model=model)
        >>> module_title(gm, "0"), module_title(gm, ""), module_title(g, "layers.3")
        ('0 · Linear', 'Sequential', 'layers.3')
    """
    cls = graph.module_classes.get(path)
    region = region_of_path(path)
    if region is not None:  # inside a compiled region's frame: the path below it
        path = path[len(region) + 1 :] if path != region else path.rpartition(".")[2]
    if cls is None:
        return group_label(path, graph.model_name)
    return f"{isolate(path)}{TITLE_SEP}{isolate(cls)}" if path else isolate(cls)


def run_title(graph: BackwardGraph, run: Any) -> str:
    """A folded run's box title: "layers.0–5 ×6 · TransformerEncoderLayer".

    The class is that of the run's blocks, "(Linear, ReLU)" for a block of several siblings;
    the label alone when a class is unknown or the blocks' classes differ (they never do for a
    run of structurally identical blocks of one model). A run without module members (a
    repeated subgraph outside any module) has its own title as its label.

    Args:
        graph: the graph (its `module_classes` are read).
        run: a `repeats.Repeat` (anything with its `label`, `members` and `period`).

    Example:
        >>> from autograd_widget.view.repeats import Repeat
        >>> blocks = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(3)])
        >>> gb = aw.capture(blocks(torch.randn(2, 4)).sum(), model=blocks)
        >>> run_title(gb, Repeat("", ("1", "2"), 2, 1, "1–2 ×2", "sig", 3))
        '1–2 ×2 · Linear'
    """
    members = list(run.members)
    period = max(int(run.period), 1)
    classes = graph.module_classes
    if not members or any(m not in classes for m in members):
        return run.label
    units = [tuple(classes[m] for m in members[k : k + period])
             for k in range(0, len(members), period)]
    if any(u != units[0] for u in units):
        return run.label
    cls = isolate(units[0][0]) if period == 1 else f"({', '.join(map(isolate, units[0]))})"
    return f"{run.label}{TITLE_SEP}{cls}"


def node_title(node: Any) -> str:
    """A node's name, with the leaf's name for AccumulateGrad ("AccumulateGrad (x)").

    Example:
        >>> node_title(g.nodes["n3"])
        'AccumulateGrad (x)'
    """
    if node.kind == "accumulate_grad" and node.leaf_name:
        return f"{isolate(node.name)} ({isolate(node.leaf_name)})"
    return isolate(node.name)


def status_line(graph: BackwardGraph, stepper: Stepping) -> str:
    """What ran and what runs next: "ran MulBackward0 (step 7 / 23) → next AddBackward0".

    Before the first step there is nothing that ran ("step 0 / 23 → next AddBackward0"); at the
    end there is no next ("ran AccumulateGrad (x) (step 23 / 23) — done"); a failed step keeps
    its own text ("step 7 / 23 — AddBackward0 failed: ...", the failing node is the one that
    was about to run). Step k is the k-th node that ran, counting from 1.

    Args:
        graph: the stepper's graph (for the nodes' names).
        stepper: read through its public `position`, `order` and `last_error`.

    Example:
        >>> status_line(g, st)
        'step 0 / 4 → next AddBackward0'
        >>> _ = st.step(); status_line(g, st)
        'ran AddBackward0 (step 1 / 4) → next AccumulateGrad (y)'
        >>> _ = st.run(); status_line(g, st)
        'ran AccumulateGrad (x) (step 4 / 4) — done'
    """
    pos, total = stepper.position, len(stepper.order)
    err = stepper.last_error
    if err is not None and pos < total and err[0] == stepper.order[pos]:
        return (f"step {pos} / {total} — {node_title(graph.nodes[err[0]])} failed: "
                f"{isolate(err[1])}")
    counter = f"step {pos} / {total}"
    if pos > 0:
        counter = f"ran {node_title(graph.nodes[stepper.order[pos - 1]])} ({counter})"
    if pos >= total:
        return f"{counter} — done"
    return f"{counter} → next {node_title(graph.nodes[stepper.order[pos]])}"


def step_announcement(graph: BackwardGraph, stepper: Stepping) -> str:
    """What a screen reader hears after a step, as a sentence: "ran AddmmBackward0 in fc1, step
    3 of 16; next ReluBackward0" (the module named when the node has one; "done" at the end; a
    failed step says which node failed, its message is on the status line).

    Args:
        graph: the stepper's graph (names and modules).
        stepper: read through its public `position`, `order` and `last_error`.

    Example:
        >>> step_announcement(g, st)
        'step 0 of 4; next AddBackward0'
        >>> _ = st.step(); step_announcement(g, st)
        'ran AddBackward0, step 1 of 4; next AccumulateGrad (y)'
        >>> _ = st.run(); step_announcement(g, st)
        'ran AccumulateGrad (x), step 4 of 4; done'
    """
    pos, total = stepper.position, len(stepper.order)

    def named(nid: str) -> str:
        node = graph.nodes[nid]
        where = f" in {node.module}" if node.module else ""
        return f"{node_title(node)}{where}"

    err = stepper.last_error
    if err is not None and pos < total and err[0] == stepper.order[pos]:
        return f"step {pos} of {total}: {named(err[0])} failed"
    head = f"ran {named(stepper.order[pos - 1])}, step {pos} of {total}" if pos > 0 else (
        f"step 0 of {total}")
    if pos >= total:
        return f"{head}; done"
    return f"{head}; next {named(stepper.order[pos])}"
