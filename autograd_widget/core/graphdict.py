"""A graph dict (`BackwardGraph.to_dict()` output, also inside a saved recording) read strictly.

`BackwardGraph.from_dict` rebuilds a graph from a dict that may come from a file anyone wrote,
so every field is checked before a record is built: types (`util.fields`), ranges, and what a
captured graph always satisfies:

- node ids are unique; an edge's ends and a root are nodes; no two edges share `(src,
  output_nr)` (the edge id);
- an edge leaves an output slot its source has (`output_nr < num_outputs`) and enters an input
  slot its destination has (`input_nr < len(inputs)`);
- the edges make no cycle (a backward graph is acyclic; the layout and the engine's order
  assume it).

Fields the format does not know are ignored (a newer minor version may add some). Errors are
`FieldError`s (ValueError) saying where: `nodes[3].inputs[0]: expected a list of 3 items, got 2`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_args

from ..util.fields import (
    FieldError,
    at,
    need_bool,
    need_choice,
    need_dict,
    need_int,
    need_list,
    need_str,
    opt_str,
    short,
)
from .records import Edge, LeafKind, Node, NodeKind, RegionEdge, TensorMeta
from .regions import Region, RegionInput, RegionOutput

__all__ = ["MAX_DIMS", "GraphParts", "parse_graph_dict", "parse_shape"]

#: The most dimensions a shape in a file may have (torch's own limit is far above any real one).
MAX_DIMS = 64
_KINDS: tuple[str, ...] = get_args(NodeKind)
_LEAF_KINDS: tuple[str | None, ...] = (*get_args(LeafKind), None)
#: A dimension as torch stores it: a signed 64-bit integer, never negative.
_MAX_DIM = 2**63 - 1

GraphParts = tuple[dict[str, Node], list[Edge], list[tuple[str, int]], str | None, dict[str, str]]


def parse_shape(v: Any, where: str) -> tuple[int, ...]:
    """A tensor shape: at most `MAX_DIMS` ints, each in 0..2**63-1.

    Example:
        >>> parse_shape([2, 3], "shape")
        (2, 3)
        >>> parse_shape("3", "nodes[0].inputs[0][0]")
        Traceback (most recent call last):
        autograd_widget.util.fields.FieldError: nodes[0].inputs[0][0]: expected a list, got '3'
    """
    dims = need_list(v, where, max_len=MAX_DIMS)
    return tuple(need_int(n, at(where, i), 0, _MAX_DIM) for i, n in enumerate(dims))


def _node(nd: Any, where: str, seq_lo: int = 0) -> Node:
    nd = need_dict(nd, where)
    for key in ("id", "name", "kind", "sequence_nr", "inputs"):
        if key not in nd:
            raise FieldError(at(where, key), "missing")
    inputs = []
    for i, meta in enumerate(need_list(nd["inputs"], at(where, "inputs"))):
        w = at(at(where, "inputs"), i)
        shape, dtype, device = need_list(meta, w, length=3)
        inputs.append(TensorMeta(parse_shape(shape, at(w, 0)), need_str(dtype, at(w, 1)),
                                 need_str(device, at(w, 2))))
    tb = nd.get("traceback")
    if tb is not None:
        tb = [need_str(line, at(at(where, "traceback"), i))
              for i, line in enumerate(need_list(tb, at(where, "traceback")))]
    return Node(
        id=need_str(nd["id"], at(where, "id")),
        name=need_str(nd["name"], at(where, "name")),
        kind=need_choice(nd["kind"], at(where, "kind"), _KINDS),
        sequence_nr=need_int(nd["sequence_nr"], at(where, "sequence_nr"), seq_lo),
        inputs=inputs,
        module=opt_str(nd.get("module"), at(where, "module")),
        leaf_name=opt_str(nd.get("leaf_name"), at(where, "leaf_name")),
        traceback=tb,
        leaf_kind=need_choice(nd.get("leaf_kind"), at(where, "leaf_kind"), _LEAF_KINDS),
        num_outputs=need_int(nd.get("num_outputs", 0), at(where, "num_outputs")),
        is_root=need_bool(nd.get("is_root", False), at(where, "is_root")),
    )


def _acyclic(nodes: Mapping[str, Node], edges: list[Edge]) -> None:
    """FieldError naming a node on a cycle, if the edges make one (Kahn's algorithm)."""
    indeg = dict.fromkeys(nodes, 0)
    out: dict[str, list[str]] = {nid: [] for nid in nodes}
    for e in edges:
        indeg[e.dst] += 1
        out[e.src].append(e.dst)
    ready = [nid for nid, k in indeg.items() if k == 0]
    seen = 0
    while ready:
        nid = ready.pop()
        seen += 1
        for dst in out[nid]:
            indeg[dst] -= 1
            if indeg[dst] == 0:
                ready.append(dst)
    if seen < len(nodes):
        stuck = next(nid for nid, k in indeg.items() if k > 0)
        raise FieldError("edges", f"they make a cycle through node {short(stuck)} (a backward "
                         "graph has none)")


def parse_graph_dict(d: Mapping[str, Any]) -> GraphParts:
    """(nodes by id, edges, roots, model name, module classes) of a graph dict, every field
    checked (see the module docstring); FieldError saying where otherwise.

    Example:
        >>> nodes, edges, roots, name, classes = parse_graph_dict(g.to_dict())
        >>> list(nodes), edges[0], roots
        (['n0', 'n1', 'n2', 'n3'], Edge(src='n0', output_nr=0, dst='n1', input_nr=0), [('n0', 0)])
        >>> bad = {**g.to_dict(), "edges": [["n0", 0, "n1", 0], ["n0", 0, "n2", 0]]}
        >>> parse_graph_dict(bad)
        Traceback (most recent call last):
        autograd_widget.util.fields.FieldError: edges[1]: a second edge 'n0:0' (edge ids are unique)
    """
    for key in ("nodes", "edges", "roots"):
        if key not in d:
            raise FieldError(key, "missing")
    nodes: dict[str, Node] = {}
    for i, nd in enumerate(need_list(d["nodes"], "nodes")):
        node = _node(nd, at("nodes", i))
        if node.id in nodes:
            raise FieldError(at(at("nodes", i), "id"), f"a second node {short(node.id)} "
                             "(node ids are unique)")
        nodes[node.id] = node
    edges: list[Edge] = []
    seen: set[tuple[str, int]] = set()
    for i, e in enumerate(need_list(d["edges"], "edges")):
        w = at("edges", i)
        src, nr, dst, slot = need_list(e, w, length=4)
        edge = Edge(need_str(src, at(w, 0)), need_int(nr, at(w, 1)), need_str(dst, at(w, 2)),
                    need_int(slot, at(w, 3)))
        for end, nid in ((0, edge.src), (2, edge.dst)):
            if nid not in nodes:
                raise FieldError(at(w, end), f"edge {_edge_name(edge)} names an unknown node "
                                 f"{short(nid)}")
        if (edge.src, edge.output_nr) in seen:
            raise FieldError(w, f"a second edge {short(edge.id)} (edge ids are unique)")
        seen.add((edge.src, edge.output_nr))
        if edge.output_nr >= nodes[edge.src].num_outputs:
            raise FieldError(at(w, 1), f"output slot {edge.output_nr} of {short(edge.src)}, "
                             f"which has {nodes[edge.src].num_outputs} (num_outputs)")
        if edge.input_nr >= len(nodes[edge.dst].inputs):
            raise FieldError(at(w, 3), f"input slot {edge.input_nr} of {short(edge.dst)}, "
                             f"which has {len(nodes[edge.dst].inputs)} (inputs)")
        edges.append(edge)
    _acyclic(nodes, edges)
    roots: list[tuple[str, int]] = []
    for i, r in enumerate(need_list(d["roots"], "roots")):
        w = at("roots", i)
        nid, slot = need_list(r, w, length=2)
        if need_str(nid, at(w, 0)) not in nodes:
            raise FieldError(at(w, 0), f"root {short(nid)} is not a node")
        roots.append((nid, need_int(slot, at(w, 1))))
    name = opt_str(d.get("model_name"), "model_name")
    classes = need_dict(d.get("module_classes") or {}, "module_classes")
    module_classes = {need_str(k, "module_classes"): need_str(v, at("module_classes", k))
                      for k, v in classes.items()}
    return nodes, edges, roots, name, module_classes


def _edge_name(e: Edge) -> str:
    """An edge as an error message names it ("'n0:1' (to 'n3')")."""
    return f"{short(e.id)} (to {short(e.dst)})"


def parse_regions(d: Mapping[str, Any], nodes: Mapping[str, Node]) -> dict[str, Region]:
    """The compiled regions of a graph dict (`"regions"`, absent in graphs without any): node id
    -> `Region`, each one's node a node of the graph, at most one per node.

    Args:
        d: what `BackwardGraph.to_dict()` returned.
        nodes: the graph's nodes (`parse_graph_dict`).

    Guarantees: every field of every region is type- and range-checked before a record is built
    (ops as strictly as the graph's nodes, traceback lines as strings, integers as ints in range,
    ids unique, every edge's ends the region's node or its ops), so nothing malformed reaches a
    record (no OverflowError, no nesting a later save recurses into); anything malformed is a
    `FieldError` naming the region and the field.

    Example:
        >>> parse_regions({"regions": []}, {})
        {}
        >>> parse_regions({"regions": [{"node": "n0"}]}, {"n0": g.nodes["n0"]})
        Traceback (most recent call last):
        autograd_widget.util.fields.FieldError: regions[0].index: missing
    """
    items = d.get("regions") or []
    if not isinstance(items, list) or len(items) > len(nodes):
        raise FieldError("regions", f"expected a list of at most {len(nodes)} regions")
    out: dict[str, Region] = {}
    for i, rd in enumerate(items):
        where = at("regions", i)
        region = _region(rd, where)
        if region.node not in nodes or region.node in out:
            why = f"{short(region.node)} is not a node with one region"
            raise FieldError(at(where, "node"), why)
        out[region.node] = region
    return out


#: The largest small count in a region (an index, a position, a slot): a signed 32-bit int.
_SMALL = 2**31 - 1
_INPUT_KINDS: tuple[str, ...] = ("saved", "gradient", "symint", "opaque", "other")


def _region(rd: Any, where: str) -> Region:
    """One region dict (`Region.to_dict()` output), every field checked."""
    rd = need_dict(rd, where)
    for key in ("node", "index", "ops", "edges", "inputs", "outputs", "available", "note"):
        if key not in rd:
            raise FieldError(at(where, key), "missing")
    nid = need_str(rd["node"], at(where, "node"))
    ops: list[Node] = []
    ids = {nid}
    for k, od in enumerate(need_list(rd["ops"], at(where, "ops"))):
        w = at(at(where, "ops"), k)
        op = _node(od, w, seq_lo=-1)  # an FX node without a seq_nr is -1
        if op.id in ids:
            raise FieldError(at(w, "id"), f"a second op {short(op.id)} (op ids are unique)")
        ids.add(op.id)
        ops.append(op)
    edges = []
    for k, e in enumerate(need_list(rd["edges"], at(where, "edges"))):
        w = at(at(where, "edges"), k)
        src, nr, dst, slot = need_list(e, w, length=4)
        edge = RegionEdge(need_str(src, at(w, 0)), need_int(nr, at(w, 1), 0, _SMALL),
                          need_str(dst, at(w, 2)), need_int(slot, at(w, 3), 0, _SMALL))
        for end, name in ((0, edge.src), (2, edge.dst)):
            if name not in ids:
                raise FieldError(at(w, end), f"{short(name)} is neither the region's node nor "
                                 "one of its ops")
        edges.append(edge)
    inputs = []
    for k, x in enumerate(need_list(rd["inputs"], at(where, "inputs"))):
        w = at(at(where, "inputs"), k)
        x = need_dict(x, w)
        meta = x.get("meta")
        if meta is not None:
            shape, dtype, device = need_list(meta, at(w, "meta"), length=3)
            meta = TensorMeta(parse_shape(shape, at(at(w, "meta"), 0)),
                              need_str(dtype, at(at(w, "meta"), 1)),
                              need_str(device, at(at(w, "meta"), 2)))
        inputs.append(RegionInput(
            need_str(x.get("name"), at(w, "name")),
            need_choice(x.get("kind"), at(w, "kind"), _INPUT_KINDS),
            need_int(x.get("position"), at(w, "position"), 0, _SMALL),
            need_int(x.get("index"), at(w, "index"), -1, _SMALL), meta,
            [need_str(u, at(at(w, "users"), j))
             for j, u in enumerate(need_list(x.get("users", []), at(w, "users")))],
        ))  # fmt: skip
    outputs = []
    for k, o in enumerate(need_list(rd["outputs"], at(where, "outputs"))):
        w = at(at(where, "outputs"), k)
        o = need_dict(o, w)
        outputs.append(RegionOutput(
            need_int(o.get("slot"), at(w, "slot"), 0, _SMALL), opt_str(o.get("src"), at(w, "src")),
            need_int(o.get("output_nr", 0), at(w, "output_nr"), 0, _SMALL),
            opt_str(o.get("input"), at(w, "input")),
        ))  # fmt: skip
    edge_ids = {e.id for e in edges}
    values = []  # the edges that carry no gradient (absent in older files: none)
    for k, v in enumerate(need_list(rd.get("values", []), at(where, "values"))):
        v = need_str(v, at(at(where, "values"), k))
        if v not in edge_ids:
            raise FieldError(at(at(where, "values"), k), f"{short(v)} is not an edge of the region")
        values.append(v)
    return Region(
        nid, need_int(rd["index"], at(where, "index"), 0, _SMALL), ops, edges, inputs, outputs,
        need_bool(rd["available"], at(where, "available")), need_str(rd["note"], at(where, "note")),
        need_str(rd.get("source", ""), at(where, "source")), values,
        need_str(rd.get("modules_note", ""), at(where, "modules_note")),
    )  # fmt: skip
