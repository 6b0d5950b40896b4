"""The plan: everything about stepping that depends only on the graph's structure, computed once.

A `Stepper` turns a live `BackwardGraph` into a `Plan` when it is made: the engine's execution order
(core/order.py: Kahn's algorithm with a max-heap on `sequence_nr`, AccumulateGrad first as soon as
ready, one dependency per edge) and routing tables (which slot buffers a step reads, where each
output goes, the shape/dtype each destination slot expects). Stepping is then a tight loop over
these flat lists (stepper.py); they are plain lists indexed by step, slot or edge number, because
the loop reads them once per step and an attribute lookup per node would cost more than a small
node's call.

Guarantees: a `Plan` holds no autograd node object (the stepper fetches nodes from the graph at call
time; see DESIGN.md, "Teardown hazard") and never changes after `build_plan`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from ...core.graph import BackwardGraph
from ...core.order import engine_order_indices
from ...core.records import Node
from ...util.dtypes import dtype_from_name
from .calls import CustomInfo, custom_info, validate
from .regionplan import REGION, expand_regions

__all__ = [
    "ACCUMULATE",
    "CPP",
    "CUSTOM",
    "FUNCTION",
    "KIND_CODE",
    "REGION",
    "Plan",
    "build_plan",
    "nbytes",
    "node_id",
    "root_seeds",
    "step_bytes",
]

#: Step kinds in the plan (`Plan.kind`): ints, compared in the stepper's hot loop.
FUNCTION, ACCUMULATE, CUSTOM, CPP = 0, 1, 2, 3
#: `Node.kind` -> step kind code.
KIND_CODE = {
    "function": FUNCTION,
    "accumulate_grad": ACCUMULATE,
    "custom_function": CUSTOM,
    "cpp_function": CPP,
}


@dataclass(frozen=True)
class Plan:
    """Everything about stepping that depends only on the graph's structure (computed once).

    Read it through `Stepper.plan`; build it with `build_plan`. Per-step lists are indexed by the
    step number k (0..len(order)-1), per-slot ones by the global slot number (`node_start[i]` +
    input number), per-edge ones by the edge's index in `graph.edges`.

    Example:
        >>> plan = st.plan
        >>> plan.order, plan.step_of["n1"]
        (('n0', 'n2', 'n1', 'n3'), 2)
        >>> plan.edge_ids, plan.routes[0][1][:3]  # n0's output 1 -> edge 1 (n0:1) -> slot 2
        (['n0:0', 'n0:1', 'n1:0'], (1, 1, 2))
    """

    order: tuple[str, ...]
    step_of: dict[str, int]
    node_of: list[int]
    kind: list[int]
    start: list[int]
    arity: list[int]
    #: Per step: (output_nr, edge index, destination slot, shape, dtype, device or None).
    routes: list[tuple]
    #: Per step: every edge index leaving the node (also the ones that get no gradient).
    out_edges: list[tuple[int, ...]]
    #: Per step: the node's slots that receive more than one contribution (summarised as sums).
    multi: list[tuple[int, ...]]
    node_start: list[int]
    n_slots: int
    edge_ids: list[str]
    edge_index: dict[str, int]
    edge_step: list[int]
    #: Per step: the node's name (for error messages).
    names: list[str]
    #: Per slot: the one edge feeding it (and no root seed), else -1.
    slot_edge: list[int]
    #: Per slot: number of contributions (incoming edges + root seeds).
    slot_contrib: list[int]
    slot_node: list[int]
    root_slots: list[int]
    custom: dict[int, CustomInfo] = field(default_factory=dict)
    #: Per node index (the graph's nodes, then the ops of open compiled regions): its id.
    node_ids: list[str] = field(default_factory=list)
    #: Per step: the record of the node (or region op) it runs.
    records: list[Node] = field(default_factory=list)
    #: Step -> the call of a compiled region's entry or op (`REGION` steps, regioncalls.py).
    calls: dict[int, object] = field(default_factory=dict)


def build_plan(graph: BackwardGraph, fns: list, regions: tuple[str, ...] = ()) -> Plan:
    """The plan of a live graph: order, routing tables and custom-Function call info.

    Args:
        graph: the captured graph.
        fns: its live nodes, `fns[i]` for node `f"n{i}"` (`graph.require_live(...).fns`).
        regions: ids of the compiled regions to open (regionplan.py: entry + one step per op).

    Guarantees: `order` is the engine's order (`core.order.engine_order_indices`); each route
    carries the destination's shape and dtype (and device when the graph spans several), so a
    step can run `validate` only where a gradient differs. Raises AttributeError when a node lacks
    an attribute stepping relies on (the stepper then names the torch version).

    Example:
        >>> plan = build_plan(g, g.require_live("step").fns)
        >>> plan.order, plan.names[:3]
        (('n0', 'n2', 'n1', 'n3'), ['AddBackward0', 'AccumulateGrad', 'PowBackward0'])
    """
    nodes = graph.nodes
    n = len(nodes)
    recs: list[Node] = [nodes[f"n{i}"] for i in range(n)]
    node_start = [0] * n
    total = 0
    for i, rec in enumerate(recs):
        node_start[i] = total
        total += len(rec.inputs)
    devices = {m.device for rec in recs for m in rec.inputs}
    check_device = len(devices) > 1

    edges = graph.edges
    edge_ids = [e.id for e in edges]
    out_by_node: list[list[int]] = [[] for _ in range(n)]
    contrib = [0] * total
    feeder = [-1] * total
    src_of = [int(e.src[1:]) for e in edges]  # ids are f"n{i}": parse each once
    dst_of = [int(e.dst[1:]) for e in edges]
    for ei, e in enumerate(edges):
        src, dst = src_of[ei], dst_of[ei]
        out_by_node[src].append(ei)
        s = node_start[dst] + e.input_nr
        contrib[s] += 1
        feeder[s] = ei
    root_slots = []
    for nid, onr in graph.roots:
        i = int(nid[1:])
        s = node_start[i] + onr
        root_slots.append(s)
        contrib[s] += 1
        feeder[s] = -1
    slot_edge = [feeder[s] if contrib[s] == 1 else -1 for s in range(total)]

    order_idx = engine_order_indices(graph)

    metas: dict[tuple, tuple] = {}
    node_of, kind, start, arity, routes, out_edges, multi = [], [], [], [], [], [], []
    edge_step = [0] * len(edges)
    custom: dict[int, CustomInfo] = {}
    for k, i in enumerate(order_idx):
        rec = recs[i]
        node_of.append(i)
        code = KIND_CODE[rec.kind]
        kind.append(code)
        a = node_start[i]
        start.append(a)
        arity.append(len(rec.inputs))
        rts = []
        for ei in out_by_node[i]:
            e = edges[ei]
            edge_step[ei] = k
            dst = dst_of[ei]
            m = recs[dst].inputs[e.input_nr]
            target = metas.get(m)
            if target is None:
                target = metas[m] = (
                    torch.Size(m.shape),
                    dtype_from_name(m.dtype),
                    torch.device(m.device) if check_device else None,
                )
            rts.append((e.output_nr, ei, node_start[dst] + e.input_nr, *target))
        routes.append(tuple(rts))
        out_edges.append(tuple(out_by_node[i]))
        multi.append(tuple(s for s in range(a, a + len(rec.inputs)) if contrib[s] > 1))
        if code == CUSTOM:
            custom[k] = custom_info(fns[i], rec)
    f = dict(
        node_of=node_of, kind=kind, start=start, arity=arity, routes=routes, out_edges=out_edges,
        multi=multi, node_start=node_start, n_slots=total, edge_ids=edge_ids,
        edge_step=edge_step, names=[recs[i].name for i in order_idx], slot_edge=slot_edge,
        slot_contrib=contrib, slot_node=[i for i, rec in enumerate(recs) for _ in rec.inputs],
        custom=custom, node_ids=[f"n{i}" for i in range(n)], records=[recs[i] for i in order_idx],
        calls={},
    )  # fmt: skip
    expand_regions(graph, fns, f, list(regions))
    order = tuple(f["node_ids"][i] for i in f["node_of"])
    return Plan(order=order, step_of={nid: k for k, nid in enumerate(order)},
                edge_index={eid: ei for ei, eid in enumerate(f["edge_ids"])},
                root_slots=root_slots, **f)  # fmt: skip


def root_seeds(graph: BackwardGraph, plan: Plan) -> list[tuple[int, torch.Tensor]]:
    """The root gradients, as torch.autograd.grad makes them (implicit ones for real scalars).

    Args:
        graph: the captured graph (its `root_tensors` and `grad_outputs`).
        plan: its plan (`root_slots`).

    Guarantees: one `(slot, gradient)` per root, validated to the root slot's metadata like the
    engine's GraphRoot outputs; the engine's error text for an implicit gradient of a non-scalar
    or non-real output.

    Example:
        >>> root_seeds(g, st.plan)
        [(0, tensor(1.))]
    """
    roots = graph.root_tensors
    gos = graph.grad_outputs or (None,) * len(roots)
    seeds = []
    for j, (t, go, s) in enumerate(zip(roots, gos, plan.root_slots)):
        if go is None:
            if t.numel() != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for scalar outputs (output {j} has "
                    f"shape {list(t.shape)}): reduce it to a scalar first (e.g. output.sum()), "
                    "or seed it with grad_outputs= in aw.explore() / aw.capture() (e.g. "
                    "torch.ones_like(output))"
                )
            if not t.dtype.is_floating_point:
                raise RuntimeError(
                    f"grad can be implicitly created only for real scalar outputs but got "
                    f"{t.dtype} (output {j}); seed it with grad_outputs= in aw.explore() / "
                    "aw.capture()"
                )
            go = torch.ones_like(t, memory_format=torch.preserve_format)
        i = plan.slot_node[s]
        m = graph.nodes[f"n{i}"].inputs[s - plan.node_start[i]]
        dev = torch.device(m.device)  # a 0-d grad_output elsewhere is moved, like the engine
        dt = dtype_from_name(m.dtype)
        seeds.append((s, validate(go, torch.Size(m.shape), dt, dev, "GraphRoot", j)))
    return seeds


def nbytes(t: torch.Tensor) -> int:
    """Bytes a gradient holds; sparse ones (no `nbytes`) count their indices and values.

    Args:
        t: a gradient tensor (any layout).

    Guarantees: the storage actually held for strided and sparse COO tensors; numel x element
    size for other layouts.

    Example:
        >>> nbytes(torch.zeros(3))
        12
    """
    if t.layout is torch.strided:
        return t.nbytes
    if t.layout is torch.sparse_coo:
        return t._indices().nbytes + t._values().nbytes
    return t.numel() * t.element_size()


def step_bytes(plan: Plan) -> list[int]:
    """Per step, an upper bound of what keeping it costs: each outgoing gradient at its
    destination's size, twice where the destination slot sums several contributions.

    Args:
        plan: the plan.

    Guarantees: one int per step, never below what the step's kept tensors hold (the stepper's
    byte budget relies on it).

    Example:
        >>> step_bytes(st.plan)  # n0 sends two float32 scalars, n1 one; AccumulateGrad none
        [8, 0, 4, 0]
    """
    out = []
    for rts in plan.routes:
        total = 0
        for _onr, _ei, s, shape, dtype, _dev in rts:
            n = math.prod(shape) * dtype.itemsize
            total += 2 * n if plan.slot_contrib[s] > 1 else n
        out.append(total)
    return out


def node_id(node: str | Node) -> str:
    """A node id from an id or a `Node` record; a clear TypeError for anything else.

    Args:
        node: an id such as "n3" or a `Node` record.

    Guarantees: returns a str (not checked against any graph).

    Example:
        >>> node_id("n3")
        'n3'
    """
    if isinstance(node, Node):
        return node.id
    if not isinstance(node, str):
        raise TypeError(
            f"expected a node id such as 'n3' (or a Node record from graph.nodes), got "
            f"{type(node).__name__} {node!r}"
        )
    return node
