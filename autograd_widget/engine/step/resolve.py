"""What a `Stepper` is given, checked and resolved: its arguments, its plan, and the nodes, edges
and tensors its methods are named with.

Moved out of stepper.py (which keeps the public face) with the same messages and behaviour:
`make_plan` checks the constructor's arguments and builds the plan and root seeds; `edge_index`,
`step_index` and `grad_slot` turn what a user passes (an `Edge` or an edge id, a node id or
`Node`, a tensor) into the plan's indices, with the errors the stepper documents.

Guarantees: nothing here moves a stepper or keeps a reference to one; every error names what
was wrong and what is expected.
"""

from __future__ import annotations

from typing import Any

import torch

from ...core.fsdp import graph_sharding
from ...core.graph import BackwardGraph
from ...core.records import Edge, Node
from ...util.compat import NoGradientEdge, check_step_api, gradient_edge
from ...util.gcpause import gc_paused
from .plan import Plan, build_plan, node_id, root_seeds
from .regionplan import open_regions

__all__ = ["edge_index", "grad_slot", "make_plan", "step_index", "through"]


def make_plan(
    graph: Any, keep: Any, regions: Any = "open", create_graph: bool = False
) -> tuple[Plan, list[tuple[int, torch.Tensor]]]:
    """Check a stepper's `graph`, `keep` and `regions`, then build its plan and root seeds.

    Args:
        graph: what was passed as the graph (a live `BackwardGraph`, else TypeError).
        keep: "summaries", "tensors" or a byte budget (an int >= 0), else ValueError.
        regions: "open" (each aten op of an available compiled region is a step) or "closed"
            (each region one step), else ValueError.
        create_graph: the stepper's; regions stay closed with it (no double backward).

    Guarantees: a node lacking an attribute stepping relies on names the torch version
    (`check_step_api`) instead of a bare AttributeError.

    Example:
        >>> plan, seeds = make_plan(g, "summaries")
        >>> plan.order, seeds
        (('n0', 'n2', 'n1', 'n3'), [(0, tensor(1.))])
    """
    if not isinstance(graph, BackwardGraph):
        raise TypeError(
            f"Stepper needs a BackwardGraph from aw.capture(...), got {type(graph).__name__}"
        )
    if isinstance(keep, bool) or not (
        keep in ("summaries", "tensors") or (isinstance(keep, int) and keep >= 0)
    ):
        raise ValueError(
            f"keep must be 'summaries', 'tensors' or a byte budget (int >= 0), got {keep!r}"
        )
    if regions not in ("open", "closed"):
        raise ValueError(f"regions must be 'open' or 'closed', got {regions!r}")
    live = graph.require_live("step this graph")
    ids = tuple(open_regions(graph, create_graph)) if regions == "open" else ()
    try:
        with gc_paused():
            plan = build_plan(graph, live.fns, ids)
    except AttributeError:
        # A node lacking an attribute stepping relies on: name the torch version instead.
        for i, fn in enumerate(live.fns):
            check_step_api(fn, graph.nodes[f"n{i}"].kind)
        raise
    return plan, root_seeds(graph, plan)


def edge_index(plan: Plan, edge_or_id: Edge | str) -> int:
    """The plan's index of edge `edge_or_id` (an `Edge` or an id "src:output_nr"), else KeyError.

    Example:
        >>> edge_index(st.plan, "n1:0"), edge_index(st.plan, g.edges[0])
        (2, 0)
    """
    eid = edge_or_id.id if isinstance(edge_or_id, Edge) else edge_or_id
    ei = plan.edge_index.get(eid) if isinstance(eid, str) else None
    if ei is None:
        raise KeyError(f"no edge {edge_or_id!r} in this graph (edge ids read 'src:output_nr')")
    return ei


def step_index(plan: Plan, target: str | Node) -> int:
    """The step at which node `target` (an id or a `Node`) runs: KeyError for an unknown id,
    TypeError for anything else.

    Example:
        >>> step_index(st.plan, "n1")
        2
    """
    nid = node_id(target)
    try:
        return plan.step_of[nid]
    except KeyError:
        raise KeyError(f"no node {nid!r} in this graph (ids look like 'n0', 'n1', ..., "
                       "'n1/0' for an op of an open compiled region)") from None


def through(plan: Plan, k: int) -> int:
    """The last step of the node that runs at step k: k itself, or the last op of an open
    compiled region whose entry k is (its ops run right after it, ids "n1/0", "n1/1", ...).

    Example:
        >>> through(st.plan, 1)
        1
    """
    order, head = plan.order, plan.order[k] + "/"
    while k + 1 < len(order) and order[k + 1].startswith(head):
        k += 1
    return k


def grad_slot(graph: BackwardGraph, tensor: torch.Tensor) -> tuple[str, int] | None:
    """(node id, input slot) through which `tensor`'s gradient flows in `graph` (a leaf: its
    AccumulateGrad; a non-leaf: its gradient edge), sparse leaves included; None for a tensor
    autograd gives no gradient edge (a view of a leaf taken under `no_grad()`: the engine's
    `torch.autograd.grad(..., allow_unused=True)` gives None for it).

    An FSDP2 parameter (the sharded DTensor `model.parameters()` returns) is found through its
    unsharded tensor, the graph's leaf (core/fsdp.py): its slot holds this rank's local gradient
    of the whole parameter, before FSDP's reduce-scatter.

    Example:
        >>> grad_slot(g, x), grad_slot(g, z)
        (('n3', 0), ('n0', 0))
    """
    try:
        return graph.gradient_edge(tensor)
    except NoGradientEdge:
        return None
    except ValueError:
        sharding = graph_sharding(graph)
        leaf = sharding.unsharded_for(tensor) if sharding is not None else None
        if leaf is None or leaf is tensor:
            raise
        return graph.gradient_edge(leaf)
    except NotImplementedError:  # a sparse leaf: torch's helper needs `view`
        node, slot = gradient_edge(tensor)
        found = graph.id_of(node)
        if found is None:
            raise ValueError(
                "this tensor is not part of the captured graph: its gradient node was not "
                "reached from the captured outputs"
            ) from None
        return found, slot
