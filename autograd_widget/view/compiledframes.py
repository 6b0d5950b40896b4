"""What a compiled region looks like: its aten ops drawn as nodes inside a frame of its own.

A stepper that opens a compiled region (docs/compiled.md) steps its node (the ENTRY:
the gradients arrive there) and then each aten op; the gradients leaving the region leave from
the op that computes each of them. `drawn_graph` builds the graph the view draws so that it
shows exactly that: the graph's own nodes, then every op of each opened region; the region's
node and its ops sit in one module frame titled "compiled region k · N aten ops" (below the
node's own module when it has one; ops with a module path in the FX metadata sit in sub-frames
named after it), so the auto folding folds a region into one box like a module and unfolding
opens it. The region's edges join the graph's; each outgoing edge of the region's node is drawn
from the op that computes that output (`ExitEdge`: same id, so it shows the gradient that
flowed on it), and stays on the node when the backward passes an input straight through.

The drawn graph is a `BackwardGraph` of records whose live parts (nodes' saved values, root
tensors, closing) are the captured graph's: `DrawnGraph.base`. An op's saved values are the
region's saved tensors it reads, under the names torch gives them.

A region that stays opaque is its node alone in a frame titled with why ("compiled region 1 ·
opaque: sizes not worked out"), so the reason is on the drawing, not only in the inspector; the
status line says it in full when that node runs next or just ran (`region_status`). An open
region whose ops' modules could not be had (`Region.modules_note`) says so the same way: its
title ends in "· modules unknown", the status line and the inspector give the reason.

Guarantees: a graph without compiled regions is drawn as itself (`drawn_graph` returns it);
the drawn graph's first nodes and edges are the captured graph's, in the same order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..core.graph import BackwardGraph
from ..core.records import Edge, Node
from ..core.regions import Region, region_title
from .labels import REGION_PREFIX, region_of_path

if TYPE_CHECKING:
    import torch

    from ..core.memory import SavedMemory
    from ..core.saved import SavedValue
    from ..engine.interface import Stepping

__all__ = [
    "REGION_PREFIX",
    "DrawnGraph",
    "ExitEdge",
    "drawn_graph",
    "opened_regions",
    "region_frame",
    "region_note",
    "region_of_path",
    "region_status",
]

class ExitEdge(Edge):
    """Output `output_nr` of a region's node, drawn from the op that computes it (`src`, an op
    id "n1/15"): its id stays the node's edge id, "n1:0".

    Example:
        >>> ExitEdge("n1/15", 0, "n2", 0).id
        'n1:0'
    """

    __slots__ = ()

    @property
    def id(self) -> str:
        """The region node's edge id, `"{node}:{output_nr}"`."""
        return f"{self.src.partition('/')[0]}:{self.output_nr}"


def opened_regions(graph: BackwardGraph, stepper: Stepping | None) -> list[str]:
    """Ids of the regions `stepper` steps op by op (their first op is one of its steps).

    Example:
        >>> opened_regions(g, st)
        []
    """
    if not graph.regions or stepper is None:
        return []
    steps = set(stepper.order)
    return [nid for nid, r in graph.regions.items() if r.ops and f"{nid}/0" in steps]


def region_frame(graph: BackwardGraph, region: Region) -> str:
    """The module path of a region's frame: its title, below its node's own module if any.

    Example:
        >>> region_frame(g, Region("n0", 1, [], [], [], [], True, ""))
        'compiled region 1 · 0 aten ops'
    """
    title = region_title(region)
    owner = (graph.base if isinstance(graph, DrawnGraph) else graph).nodes[region.node].module
    return f"{owner}.{title}" if owner else title


def region_note(graph: BackwardGraph, node_id: str) -> str | None:
    """What the inspector says of a compiled region's node or of one of its ops (None for any
    other node): the region, how it is stepped, or why its inside is not available; for an op,
    what it reads.

    Example:
        >>> region_note(g, "n0") is None
        True
    """
    region = graph.regions.get(node_id.partition("/")[0])
    if region is None:
        return None
    title = region_title(region)
    if "/" not in node_id:
        if not region.available:
            return f"{title} (torch.compile): its inside is not available: {region.note}"
        saved = sum(1 for i in region.inputs if i.kind == "saved")
        unknown = f"; {region.modules_note}" if region.modules_note else ""
        return (f"{title} (torch.compile, private API): the compiled node runs the region's "
                f"backward in one call; its {len(region.ops)} aten ops, reading {saved} saved "
                "tensors, are stepped one by one after it (regions='open'), and the gradients "
                f"leaving the region are the compiled node's own{unknown}")
    k = int(node_id.partition("/")[2])
    op = region.ops[k]
    reads = [f"{e.src} ({graph.node(e.src).name})" if "/" in e.src else
             next((f"the incoming gradient `{i.name}`" for i in region.inputs
                   if i.kind == "gradient" and i.index == e.output_nr), "the incoming gradient")
             for e in region.edges if e.dst == node_id]  # fmt: skip
    reads += [f"saved `{i.name}`" for i in region.inputs
              if node_id in i.users and i.kind != "gradient"]  # fmt: skip
    where = f" (module {op.module})" if op.module else ""
    return (f"{op.name}: op {k} of {title}{where}, run as an FX interpreter runs it; reads "
            f"{', '.join(reads) or 'nothing but constants'}")


def region_status(graph: BackwardGraph, node_id: str | None) -> str:
    """What the status line adds when `node_id` (the node that runs next, or just ran) is a
    compiled region that stays opaque: " · compiled region k stays one node: <its note>"; or
    one of an open region whose ops' modules are unknown (`Region.modules_note`): " · compiled
    region k: <why>"; "" otherwise.

    Example:
        >>> region_status(g, "n0")
        ''
    """
    region = graph.regions.get(str(node_id).partition("/")[0]) if node_id else None
    if region is None:
        return ""
    if region.available:
        return f" · compiled region {region.index}: {region.modules_note}" \
            if region.modules_note else ""
    return f" · compiled region {region.index} stays one node: {region.note}"


def drawn_graph(graph: BackwardGraph, opened: Iterable[str]) -> BackwardGraph:
    """The graph the view draws with regions `opened` open (see the module docstring); a region
    that stays opaque (`available` False) is drawn as its node alone in a frame whose title says
    why ("compiled region 1 · opaque: sizes not worked out").

    Args:
        graph: the captured graph (live, or records).
        opened: region node ids (`opened_regions`).

    Example:
        >>> drawn_graph(g, []) is g
        True
    """
    opened = [nid for nid in opened if nid in graph.regions and graph.regions[nid].available]
    opaque = [nid for nid, r in graph.regions.items() if not r.available and nid in graph.nodes]
    if not opened and not opaque:
        return graph
    if isinstance(graph, DrawnGraph):
        graph = graph.base
    nodes = dict(graph.nodes)
    classes = dict(graph.module_classes)
    edges: list[Edge] = list(graph.edges)
    exits: dict[tuple[str, int], str] = {}
    for nid in opaque:  # its frame's title says why it stays one node ("· opaque: ...")
        nodes[nid] = replace(graph.nodes[nid], module=region_frame(graph, graph.regions[nid]))
    for nid in opened:
        region = graph.regions[nid]
        frame = region_frame(graph, region)
        nodes[nid] = replace(graph.nodes[nid], module=frame)
        for op in region.ops:
            nodes[op.id] = replace(op, module=f"{frame}.{op.module}" if op.module else frame)
            if op.module:
                cls = graph.module_classes.get(op.module)
                if cls is not None:
                    classes[f"{frame}.{op.module}"] = cls
        edges.extend(region.edges)
        for out in region.outputs:
            if out.src is not None:
                exits[(nid, out.slot)] = out.src
    for i, e in enumerate(graph.edges):
        src = exits.get((e.src, e.output_nr))
        if src is not None:
            edges[i] = ExitEdge(src, e.output_nr, e.dst, e.input_nr)
    return DrawnGraph(graph, nodes, edges, classes)


class DrawnGraph(BackwardGraph):
    """A captured graph with its opened regions' ops as nodes (`drawn_graph`); everything live
    is the captured graph's (`base`): saved values, root tensors, closing.

    Example:
        >>> DrawnGraph(g, dict(g.nodes), list(g.edges), {}).base is g
        True
    """

    def __init__(
        self, base: BackwardGraph, nodes: dict[str, Node], edges: list[Edge],
        classes: dict[str, str],
    ) -> None:  # fmt: skip
        super().__init__(nodes, edges, base.roots, model_name=base.model_name,
                         module_classes=classes, regions=base.regions)  # fmt: skip
        self.base = base

    @property
    def is_live(self) -> bool:
        """The captured graph's."""
        return self.base.is_live

    def require_live(self, what: str) -> Any:
        """The captured graph's live references (its error when it has none).

        Example:
            >>> DrawnGraph(g, dict(g.nodes), list(g.edges), {}).require_live("x") is not None
            True
        """
        return self.base.require_live(what)

    def fn(self, node_id: str) -> Any:
        """The captured graph's node (an op of a region has none: KeyError).

        Example:
            >>> DrawnGraph(g, dict(g.nodes), list(g.edges), {}).fn("n1").name()
            'PowBackward0'
        """
        return self.base.fn(self.base.check_id(node_id))

    def index_of(self, node_id: str) -> int:
        """The captured graph's (an op of a region has no capture position: KeyError).

        Example:
            >>> DrawnGraph(g, dict(g.nodes), list(g.edges), {}).index_of("n3")
            3
        """
        return self.base.index_of(node_id)

    def id_of(self, obj: Any) -> str | None:
        """The captured graph's.

        Example:
            >>> DrawnGraph(g, dict(g.nodes), list(g.edges), {}).id_of(z.grad_fn)
            'n0'
        """
        return self.base.id_of(obj)

    def gradient_edge(self, tensor: torch.Tensor) -> tuple[str, int]:
        """The captured graph's.

        Example:
            >>> DrawnGraph(g, dict(g.nodes), list(g.edges), {}).gradient_edge(x)
            ('n3', 0)
        """
        return self.base.gradient_edge(tensor)

    @property
    def root_tensors(self) -> list:
        """The captured graph's."""
        return self.base.root_tensors

    @property
    def grad_outputs(self) -> tuple | None:
        """The captured graph's."""
        return self.base.grad_outputs

    def close(self) -> None:
        """Close the captured graph.

        Example:
            >>> DrawnGraph(g, dict(g.nodes), list(g.edges), {}).close(); g.is_live
            False
        """
        self.base.close()

    def region_program(self, node_id: str) -> Any:
        """The captured graph's.

        Example:
            >>> DrawnGraph(g, dict(g.nodes), list(g.edges), {}).region_program("n0")
            Traceback (most recent call last):
            KeyError: 'n0 has no available compiled region (graph.regions)'
        """
        return self.base.region_program(node_id)

    def saved(self, node_id: str) -> list[SavedValue]:
        """A node's saved values (the captured graph's); an op's: the region's saved tensors it
        reads, named as torch names them ("addmm", "primals_3").

        Example:
            >>> [v.name for v in DrawnGraph(g, dict(g.nodes), list(g.edges), {}).saved("n1")]
            ['exponent', 'self']
        """
        if node_id in self.base.nodes:
            return self.base.saved(node_id)
        self.check_id(node_id)
        region = self.regions[node_id.partition("/")[0]]
        values = self.base.saved(region.node)
        out = []
        for inp in region.inputs:
            if node_id in inp.users and inp.kind == "saved" and inp.index < len(values):
                out.append(replace(values[inp.index], name=inp.name))
        return out

    def saved_tensor(self, node_id: str, name: str) -> torch.Tensor:
        """A saved tensor of a node (the captured graph's) or of an op (by its torch name).

        Example:
            >>> DrawnGraph(g, dict(g.nodes), list(g.edges), {}).saved_tensor("n1", "self")
            tensor(2.)
        """
        if node_id in self.base.nodes:
            return self.base.saved_tensor(node_id, name)
        self.check_id(node_id)
        region = self.regions[node_id.partition("/")[0]]
        for inp in region.inputs:
            if inp.name == name and inp.kind == "saved":
                return self.base.saved_tensor(region.node, f"saved_tensors[{inp.index}]")
        raise KeyError(f"{node_id} reads no saved tensor {name!r}")

    def saved_memory(
        self, by: str = "node", *, exclude_leaves: bool = False
    ) -> SavedMemory:
        """The captured graph's (a region's saved tensors are its node's).

        Example:
            >>> DrawnGraph(g, dict(g.nodes), list(g.edges), {}).saved_memory()
            SavedMemory({'n1': 4}, notes={})
        """
        return self.base.saved_memory(by, exclude_leaves=exclude_leaves)

    def to_dict(self) -> dict[str, Any]:
        """The captured graph's records (the drawing is rebuilt from them).

        Example:
            >>> len(DrawnGraph(g, dict(g.nodes), list(g.edges), {}).to_dict()["nodes"])
            4
        """
        return self.base.to_dict()
