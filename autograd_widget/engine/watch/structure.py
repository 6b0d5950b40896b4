"""A watched graph's structure: the index tables the lean hooks and a watch's series read.

`aw.watch` (watch/watch.py) sees the same graph structure on step after step of a training
loop. It captures the full graph (`aw.capture`: records with shapes, modules, parameter names)
only when a structure is new, and keeps one `Structure` per distinct one; every watched step then
stores plain arrays indexed by it (one float per edge, per parameter, per recorded input slot).

- `walk(roots)`: the lean walk of a live graph, in `aw.capture`'s breadth-first order (so node
  `i` of the walk is capture's `n{i}`), with a hashable `key` naming the structure: each node's
  name and where its edges go; an AccumulateGrad node is named by its leaf (the same parameter
  object gives the same key). Shapes are not part of the key.
- `Structure(graph)`: from a `BackwardGraph` (live or loaded: records only), which edge leaves each
  output slot, which edge alone feeds each input slot, the input slots whose gradient is the sum of
  several edges or comes from the caller (their norm is recorded apart), the parameters, and the
  nodes whose output is their input rearranged (same norm: taken from the input).

Example:
    >>> st_ = Structure(g)
    >>> st_.edge_ids, st_.params
    (['n0:0', 'n0:1', 'n1:0'], ['y', 'x'])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from ...core.graph import BackwardGraph
from ...util.compat import gradient_edge

__all__ = ["REARRANGING", "Structure", "accumulators", "walk"]

#: Backward nodes whose one output is their one input rearranged, padded with zeros or passed
#: through: its norm equals the input's (no second pass over the same memory).
REARRANGING = frozenset({
    "ViewBackward0", "UnsafeViewBackward0", "ReshapeAliasBackward0", "TBackward0",
    "TransposeBackward0", "TransposeBackward1", "PermuteBackward0", "SqueezeBackward0",
    "SqueezeBackward1", "SqueezeBackward2", "SqueezeBackward3", "SqueezeBackward4",
    "UnsqueezeBackward0", "UnsqueezeBackward1", "CloneBackward0", "AliasBackward0",
    "SliceBackward0", "SelectBackward0", "NarrowBackward0",
})  # fmt: skip

_ACC = "AccumulateGrad"


def walk(
    roots: Sequence[torch.Tensor], names: Mapping[int, str] | None = None
) -> tuple[list[Any], tuple]:
    """(live nodes in `aw.capture`'s order, the structure key) of the graph behind `roots`.

    The key is a tuple: per node its name and the (node index, input slot) of each of its
    edges; then the root edges. An AccumulateGrad node is named by its leaf: the name `names`
    gives its `id`, else its `id` for an `nn.Parameter` (the same parameter object, the same
    key), else "input" (a fresh input leaf each step keeps the key). Two graphs with equal keys
    have the same nodes and edges in the same order.

    Example:
        >>> fns, key = walk([z]); [f.name() for f in fns][:2], key == walk([x**2 + y])[1]
        (['AddBackward0', 'PowBackward0'], True)
    """
    fns: list[Any] = []
    index: dict[Any, int] = {}
    root_edges = []
    for t in roots:
        fn, nr = gradient_edge(t)
        if fn not in index:
            index[fn] = len(fns)
            fns.append(fn)
        root_edges.append((index[fn], nr))
    parts: list[Any] = []
    add = parts.append
    head = 0
    while head < len(fns):
        fn = fns[head]
        nexts = []
        for nxt, in_nr in fn.next_functions:
            if nxt is None:
                nexts.append(None)
                continue
            j = index.get(nxt)
            if j is None:
                j = index[nxt] = len(fns)
                fns.append(nxt)
            nexts.append((j, in_nr))
        if type(fn).__name__ == _ACC:
            var = fn.variable
            name = names.get(id(var)) if names else None
            if name is None:
                name = id(var) if isinstance(var, torch.nn.Parameter) else "input"
            add((name, tuple(nexts)))
        else:
            add((fn.name(), tuple(nexts)))
        head += 1
    add(tuple(root_edges))
    return fns, tuple(parts)


def accumulators(roots: Sequence[torch.Tensor]) -> list[Any]:
    """The AccumulateGrad nodes of the graph behind `roots` (its leaves), in walk order: what an
    unwatched step hooks (a breadth-first walk that builds no key).

    Example:
        >>> [n.variable is v for n, v in zip(accumulators([z]), (y, x))]
        [True, True]
    """
    seen: set[Any] = set()
    todo = []
    for t in roots:
        fn, _ = gradient_edge(t)
        if fn not in seen:
            seen.add(fn)
            todo.append(fn)
    out = []
    head = 0
    while head < len(todo):
        fn = todo[head]
        head += 1
        if type(fn).__name__ == _ACC:
            out.append(fn)
            continue
        for nxt, _ in fn.next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return out


class Structure:
    """Index tables of one graph structure (see the module docstring); records only.

    Attributes: `graph` (the drawable `BackwardGraph`), `edge_ids` (`graph.edges`' ids, the
    order of every per-edge array), `params` (leaf names, the order of per-parameter arrays) and
    `param_nodes` (their node indices), `extra` ((node, slot) per input slot whose received
    gradient is not one edge's: fed by several edges or by the caller; the order of the
    per-slot arrays), and per node index: `accumulate`, `out_edge` (edge index per output slot,
    -1 where none leaves), `in_edge` (the one edge feeding each input slot, -1 where several,
    none or the caller), `rearranging` (the input edge whose norm the output repeats, -1 when
    not such a node), `seq` (sequence numbers), `acc_after` (AccumulateGrad nodes fed only by
    this node, in output order: they run right after it).

    Example:
        >>> s = Structure(g); s.out_edge[0], s.in_edge[1], s.extra, s.acc_after[0]
        ([0, 1], [0], [(0, 0)], [2])
    """

    def __init__(self, graph: BackwardGraph, key: tuple | None = None) -> None:
        self.graph = graph
        self.key = key
        nodes = list(graph.nodes.values())
        n = len(nodes)
        index = {node.id: i for i, node in enumerate(nodes)}
        if any(node.id != f"n{i}" for i, node in enumerate(nodes)):
            raise ValueError("a watched graph's node ids must be n0, n1, ... in order")
        self.names = [node.name for node in nodes]
        self.accumulate = [node.kind == "accumulate_grad" for node in nodes]
        self.seq = [node.sequence_nr for node in nodes]
        self.edge_ids = [e.id for e in graph.edges]
        self.edge_src = [index[e.src] for e in graph.edges]
        self.edge_dst = [index[e.dst] for e in graph.edges]
        self.out_edge: list[list[int]] = [[-1] * node.num_outputs for node in nodes]
        feeders: list[list[list[int]]] = [[[] for _ in node.inputs] for node in nodes]
        for k, e in enumerate(graph.edges):
            src, dst = index[e.src], index[e.dst]
            if e.output_nr < len(self.out_edge[src]):
                self.out_edge[src][e.output_nr] = k
            if e.input_nr < len(feeders[dst]):
                feeders[dst][e.input_nr].append(k)
        rooted = set()
        for nid, nr in graph.roots:
            rooted.add((index[nid], nr))
        self.in_edge = [
            [f[0] if len(f) == 1 and (i, s) not in rooted else -1 for s, f in enumerate(slots)]
            for i, slots in enumerate(feeders)
        ]
        self.extra = [
            (i, s) for i, slots in enumerate(feeders) for s, f in enumerate(slots)
            if not self.accumulate[i] and (len(f) > 1 or (i, s) in rooted)
        ]  # fmt: skip
        self.extra_of: list[list[tuple[int, int]]] = [[] for _ in range(n)]
        for x, (i, s) in enumerate(self.extra):
            self.extra_of[i].append((s, x))
        self.param_nodes = [i for i in range(n) if self.accumulate[i]]
        self.params = [nodes[i].leaf_name or f"leaf {nodes[i].id}" for i in self.param_nodes]
        self.param_index = {name: k for k, name in enumerate(self.params)}
        self.param_of = {i: k for k, i in enumerate(self.param_nodes)}
        #: per parameter: the edge that alone feeds it, -1 where it needs a hook of its own
        self.param_edge = [self.in_edge[i][0] if self.in_edge[i] else -1 for i in self.param_nodes]
        self.acc_after: list[list[int]] = [[] for _ in range(n)]
        for i in self.param_nodes:
            e = self.in_edge[i][0] if self.in_edge[i] else -1
            if e >= 0:
                self.acc_after[self.edge_src[e]].append(i)
        for src in range(n):  # in output-slot order, as the engine queues them
            self.acc_after[src].sort(key=lambda j: graph.edges[self.in_edge[j][0]].output_nr)
        self.rearranging = [
            self.in_edge[i][0]
            if (self.names[i] in REARRANGING and len(self.in_edge[i]) == 1
                and self.in_edge[i][0] >= 0 and len(self.out_edge[i]) == 1)
            else -1
            for i in range(n)
        ]  # fmt: skip
        self.edge_index = {eid: k for k, eid in enumerate(self.edge_ids)}

    def __repr__(self) -> str:
        return (
            f"<Structure {len(self.names)} nodes, {len(self.edge_ids)} edges, "
            f"{len(self.params)} parameters>"
        )

    @classmethod
    def of(cls, graph: BackwardGraph, key: tuple | None = None) -> Structure:
        """The structure of `graph`, keeping a records-only copy of it (no torch objects).

        Example:
            >>> Structure.of(g).graph.is_live
            False
        """
        drawable = BackwardGraph(
            graph.nodes, graph.edges, graph.roots, model_name=graph.model_name,
            module_classes=graph.module_classes,
        )  # fmt: skip
        return cls(drawable, key)

    def modules(self) -> list[str]:
        """Every module path that owns a parameter of this structure (by the parameters' dotted
        names), sorted, the model's root ("") first.

        Example:
            >>> Structure(aw.capture(model(torch.ones(1, 4)).sum(), model=model)).modules()
            ['', '0', '2']
        """
        out: set[str] = set()
        for name in self.params:
            parts = name.split(".")
            for k in range(1, len(parts)):
                out.add(".".join(parts[:k]))
        return ["", *sorted(out)]
