"""The plan of open compiled regions: each region's node becomes its entry step plus one step
per aten op (what that promises: docs/compiled.md; the calls themselves: regioncalls.py).

`expand_regions` rewrites the flat lists `plan.build_plan` made for the graph's own nodes: the
step of an open region's node keeps its input slots but becomes the ENTRY (kind `REGION`), its
ops follow it in the region's own order, each with one input slot per gradient-carrying input,
and the region's edges join the graph's (after them: graph edge indices do not move). Each of the
node's outgoing graph edges leaves from the step of the op that computes that output (its value
being the compiled node's, see regioncalls.py), or from the entry when the backward passes an
input straight through. Nodes are indexed as in the graph, the ops after them.

Guarantees: a graph without open regions is left exactly as `build_plan` made it (nothing is
copied); with them, every per-step, per-slot and per-edge list stays consistent (each slot of an
op is fed by exactly one edge).
"""

from __future__ import annotations

from typing import Any

import torch

from ...core.graph import BackwardGraph
from ...core.records import Node
from ...util.dtypes import dtype_from_name
from .calls import custom_info
from .regioncalls import EntryCall, OpCall

__all__ = ["REGION", "expand_regions", "open_regions"]

#: Step kind of a region's entry and of its ops (`Plan.kind`; plan.py's codes are 0-3).
REGION = 4


def open_regions(graph: BackwardGraph, create_graph: bool = False) -> list[str]:
    """Ids of the regions a stepper opens: the available ones, in graph order (none when the
    gradients must carry their own graph: a compiled backward has no double backward).

    Example:
        >>> open_regions(g)  # no compiled region
        []
    """
    if create_graph:
        return []
    return [nid for nid, r in graph.regions.items() if r.available]


def expand_regions(graph: BackwardGraph, fns: list, f: dict[str, Any], ids: list[str]) -> None:
    """Open the regions `ids` in the plan fields `f` (in place; see the module docstring).

    Args:
        graph: the live graph (its regions and their programs).
        fns: its live nodes.
        f: `build_plan`'s fields: the per-step lists (node_of, kind, start, arity, routes,
            out_edges, multi, names, records), the per-slot lists (slot_edge, slot_contrib,
            slot_node), node_start, n_slots, edge_ids, edge_step, custom, calls, node_ids.
        ids: the regions to open (`open_regions`).

    Example:
        >>> f = {"node_ids": ["n0"]}
        >>> expand_regions(g, [], f, []); f
        {'node_ids': ['n0']}
    """
    if not ids:
        return
    node_ids: list[str] = f["node_ids"]
    node_start: list[int] = f["node_start"]
    slot_edge, contrib, slot_node = f["slot_edge"], f["slot_contrib"], f["slot_node"]
    edge_ids: list[str] = f["edge_ids"]
    base: dict[str, tuple[int, int]] = {}  # region node id -> (first op index, first edge)
    dst_slot: dict[str, int] = {}  # region edge id -> the op slot it feeds
    targets: dict[str, tuple] = {}
    for nid in ids:
        region = graph.regions[nid]
        base[nid] = (len(node_ids), len(edge_ids))
        for op in region.ops:
            i = len(node_ids)
            node_ids.append(op.id)
            node_start.append(f["n_slots"])
            f["n_slots"] += len(op.inputs)
            slot_node.extend([i] * len(op.inputs))
            slot_edge.extend([-1] * len(op.inputs))
            contrib.extend([0] * len(op.inputs))
        for e in region.edges:
            k = int(e.dst.rpartition("/")[2])
            s = node_start[base[nid][0] + k] + e.input_nr
            ei = len(edge_ids)
            edge_ids.append(e.id)
            slot_edge[s] = ei
            contrib[s] += 1
            dst_slot[e.id] = s
            m = region.ops[k].inputs[e.input_nr]
            targets[e.id] = (torch.Size(m.shape), dtype_from_name(m.dtype), None)
    f["edge_step"].extend([0] * (len(edge_ids) - len(f["edge_step"])))
    old = {key: f[key] for key in ("node_of", "kind", "start", "arity", "routes", "out_edges",
                                   "multi", "names", "records")}  # fmt: skip
    for key in old:
        f[key] = []
    old_custom, f["custom"] = f["custom"], {}
    index = {nid: int(nid[1:]) for nid in ids}
    for k_old, i in enumerate(old["node_of"]):
        nid = node_ids[i]
        if nid not in base:
            _append(f, old, k_old)
            if k_old in old_custom:
                f["custom"][len(f["kind"]) - 1] = old_custom[k_old]
            continue
        _open(graph, fns, f, old, k_old, index[nid], base[nid], dst_slot, targets,
              ids.index(nid))  # fmt: skip
    edge_step = f["edge_step"]
    for k, outs in enumerate(f["out_edges"]):
        for ei in outs:
            edge_step[ei] = k


def _append(f: dict, old: dict, k: int) -> None:
    for key, values in old.items():
        f[key].append(values[k])


def _open(
    graph: BackwardGraph, fns: list, f: dict, old: dict, k_old: int, i: int,
    base: tuple[int, int], dst_slot: dict[str, int], targets: dict[str, tuple], r: int,
) -> None:  # fmt: skip
    """Append region `r`'s entry and op steps in place of node i's step k_old."""
    nid = f"n{i}"
    region = graph.regions[nid]
    program = graph.region_program(nid)
    node: Node = graph.nodes[nid]
    first_op, first_edge = base
    # The node's graph routes, by output slot (= e.output_nr).
    graph_routes: dict[int, list[tuple]] = {}
    for rt in old["routes"][k_old]:
        graph_routes.setdefault(rt[0], []).append(rt)
    made_by = {o.slot: (int(o.src.rpartition("/")[2]), o.output_nr)
               for o in region.outputs if o.src is not None}  # fmt: skip
    region_edges = range(first_edge, first_edge + len(region.edges))
    out_of: dict[str, list[int]] = {}
    for ei in region_edges:
        src = region.edges[ei - first_edge].src
        out_of.setdefault(src, []).append(ei)

    def routes_of(src: str, extra: list[tuple]) -> tuple[tuple, tuple]:
        rts = []
        for ei in out_of.get(src, ()):
            e = region.edges[ei - first_edge]
            rts.append((e.output_nr, ei, dst_slot[e.id], *targets[e.id]))
        rts.extend(extra)
        return tuple(rts), tuple(rt[1] for rt in rts)

    # Entry: the incoming gradients to the ops; outputs not computed by an op, downstream.
    arity = len(node.inputs)
    passed = [(arity + rt[0], *rt[1:]) for slot, rts in sorted(graph_routes.items())
              if slot not in made_by for rt in rts]  # fmt: skip
    rts, outs = routes_of(nid, passed)
    grads = [(inp.index, inp.position) for inp in region.inputs if inp.kind == "gradient"]
    info = custom_info(fns[i], node)
    k_entry = _push(f, i, old["start"][k_old], arity, rts, outs, old["multi"][k_old], node.name,
                    node, EntryCall(r, i, info, grads, arity))  # fmt: skip
    f["custom"][k_entry] = info
    # The ops, in the region's order.
    for k, op in enumerate(region.ops):
        prog = program.ops[k]
        emit = [slot for slots in prog.region_out for slot in slots]
        n_out = len(prog.tensor_out)
        extra = [(n_out + j, *rt[1:]) for j, slot in enumerate(emit)
                 for rt in graph_routes.get(slot, ())]  # fmt: skip
        rts, outs = routes_of(op.id, extra)
        j = first_op + k
        _push(f, j, f["node_start"][j], len(op.inputs), rts, outs, (), op.name, op,
              OpCall(r, k, prog, program, emit))


def _push(f: dict, i: int, start: int, arity: int, rts: tuple, outs: tuple, multi: tuple,
          name: str, rec: Node, call: Any) -> int:  # fmt: skip
    k = len(f["kind"])
    f["node_of"].append(i)
    f["kind"].append(REGION)
    f["start"].append(start)
    f["arity"].append(arity)
    f["routes"].append(rts)
    f["out_edges"].append(outs)
    f["multi"].append(multi)
    f["names"].append(name)
    f["records"].append(rec)
    f["calls"][k] = call
    return k
