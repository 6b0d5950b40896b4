"""The graph model: typed records for the nodes and edges of one captured backward graph.

A `BackwardGraph` is the single source of autograd facts for everything downstream (stepper,
layout, widget). Records are plain dataclasses so they can be tested, serialised and drawn without
torch objects; the live torch nodes sit beside them in `LiveRefs`, released in a safe order.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import asdict
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..util.compat import gradient_edge
from ..util.fields import FieldError
from .formulas.api import NodeFormula, node_formula
from .graphdict import parse_graph_dict, parse_regions
from .live import LiveRefs, release
from .memory import SavedMemory, saved_memory
from .order import engine_order
from .records import Edge, Node
from .regions import Region, RegionProgram
from .saved import SavedIndex, read_saved_tensor

if TYPE_CHECKING:
    import networkx
    import torch

    from .saved import SavedValue

__all__ = ["DICT_FORMAT", "BackwardGraph"]

DICT_FORMAT = "autograd_widget.BackwardGraph/1"


class BackwardGraph:
    """A captured backward graph: nodes, edges, roots and leaves, plus the live torch nodes.

    Build one with `autograd_widget.capture()`. A graph from `from_dict()` has no live nodes: it
    can be drawn and inspected, not stepped. `close()` (or garbage collection) releases every torch
    reference root-first; after that the records stay readable.

    Example:
        >>> g = aw.capture(x**2 + y, params={"x": x, "y": y})
        >>> g
        <BackwardGraph 4 nodes, 3 edges, 1 root(s), 2 leaves, live>
        >>> [(n.id, n.name, n.leaf_name) for n in g.nodes.values()]
        [('n0', 'AddBackward0', None), ('n1', 'PowBackward0', None), ('n2', 'AccumulateGrad', 'y'),
         ('n3', 'AccumulateGrad', 'x')]
    """

    def __init__(
        self,
        nodes: Mapping[str, Node],
        edges: list[Edge],
        roots: list[tuple[str, int]],
        *,
        live: LiveRefs | None = None,
        model_name: str | None = None,
        module_classes: Mapping[str, str] | None = None,
        regions: Mapping[str, Region] | None = None,
        programs: Mapping[str, RegionProgram] | None = None,
    ) -> None:
        self.nodes: dict[str, Node] = dict(nodes)
        #: Compiled region node id -> its inside (`core.regions.Region`; what it promises:
        #: docs/compiled.md). Empty for a graph without torch.compile.
        self.regions: dict[str, Region] = dict(regions or {})
        self._programs: dict[str, RegionProgram] = dict(programs or {})
        self.edges: list[Edge] = list(edges)
        self.roots: list[tuple[str, int]] = [(str(a), int(b)) for a, b in roots]
        self.leaves: list[str] = [n.id for n in self.nodes.values() if n.kind == "accumulate_grad"]
        self.model_name = model_name
        self._module_classes = MappingProxyType(
            {str(k): str(v) for k, v in (module_classes or {}).items()}
        )
        self._live = live
        self._finalizer = weakref.finalize(self, release, live) if live is not None else None
        self._out: dict[str, list[Edge]] | None = None
        self._in: dict[str, list[Edge]] | None = None
        self._edge_by_id: dict[str, Edge] | None = None
        self._saved = SavedIndex()

    # ----------------------------------------------------------------- structure
    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes.values())

    def __repr__(self) -> str:
        state = "live" if self.is_live else "not live"
        return (
            f"<BackwardGraph {len(self.nodes)} nodes, {len(self.edges)} edges, "
            f"{len(self.roots)} root(s), {len(self.leaves)} leaves, {state}>"
        )

    def _index(self) -> None:
        out: dict[str, list[Edge]] = {nid: [] for nid in self.nodes}
        inc: dict[str, list[Edge]] = {nid: [] for nid in self.nodes}
        for e in self.edges:
            out[e.src].append(e)
            inc[e.dst].append(e)
        self._out, self._in = out, inc
        self._edge_by_id = {e.id: e for e in self.edges}
        for r in self.regions.values():
            self._edge_by_id.update((e.id, e) for e in r.edges)

    def out_edges(self, node_id: str) -> list[Edge]:
        """Edges leaving `node_id`, in output-slot order.

        Example:
            >>> [e.id for e in g.out_edges("n0")]
            ['n0:0', 'n0:1']
        """
        if self._out is None:
            self._index()
        return self._out[self.check_id(node_id)]  # type: ignore[index]

    def in_edges(self, node_id: str) -> list[Edge]:
        """Edges arriving at `node_id` (several may share an input slot: fan-in).

        Example:
            >>> g.in_edges("n3")
            [Edge(src='n1', output_nr=0, dst='n3', input_nr=0)]
        """
        if self._in is None:
            self._index()
        return self._in[self.check_id(node_id)]  # type: ignore[index]

    def edge(self, edge_id: str) -> Edge:
        """The edge named `"{src}:{output_nr}"` (or a compiled region's edge, by its id).

        Example:
            >>> g.edge("n0:1")
            Edge(src='n0', output_nr=1, dst='n2', input_nr=0)
        """
        if self._edge_by_id is None:
            self._index()
        try:
            return self._edge_by_id[edge_id]  # type: ignore[index]
        except KeyError:
            raise KeyError(
                f"no edge {edge_id!r} in this graph (edge ids read 'src:output_nr')"
            ) from None

    def node(self, node_id: str) -> Node:
        """The record of `node_id`: a node of `nodes`, or an op of a compiled region ("n1/3").

        Example:
            >>> g.node("n1").name
            'PowBackward0'
        """
        found = self.nodes.get(node_id)
        if found is None and isinstance(node_id, str) and "/" in node_id:
            region = self.regions.get(node_id.partition("/")[0])
            k = node_id.partition("/")[2]
            if region is not None and k.isdigit() and int(k) < len(region.ops):
                found = region.ops[int(k)]
        if found is None:
            self.check_id(node_id)
        return found  # type: ignore[return-value]

    def region_program(self, node_id: str) -> RegionProgram:
        """How to run the ops of compiled region `node_id` (live: holds its FX module); a
        KeyError when it has no available region, a RuntimeError when the graph is not live.

        Example:
            >>> g.region_program("n0")
            Traceback (most recent call last):
            KeyError: 'n0 has no available compiled region (graph.regions)'
        """
        self.require_live("run a compiled region")
        program = self._programs.get(node_id)
        if program is None:
            raise KeyError(f"{node_id} has no available compiled region (graph.regions)")
        return program

    def check_id(self, node_id: str) -> str:
        """`node_id` itself when it names a node here; else a KeyError saying what ids look like.

        Example:
            >>> g.check_id("n1")
            'n1'
            >>> g.check_id("x")
            Traceback (most recent call last):
            KeyError: "no node 'x' in this graph (ids look like 'n0', 'n1', ...)"
        """
        if node_id not in self.nodes:
            raise KeyError(f"no node {node_id!r} in this graph (ids look like 'n0', 'n1', ...)")
        return node_id

    def modules(self) -> dict[str, list[str]]:
        """Module path -> ids of the nodes attributed to it (from `track()` or parameter owners).

        Example:
            >>> with aw.track(model):
            ...     out = model(torch.randn(2, 4))
            >>> sorted(aw.capture(out.sum(), model=model).modules())
            ['0', '1', '2']
        """
        out: dict[str, list[str]] = {}
        for n in self.nodes.values():
            if n.module is not None:
                out.setdefault(n.module, []).append(n.id)
        return out

    @property
    def module_classes(self) -> Mapping[str, str]:
        """Module path -> the module's class `__name__` ("" is the model itself), read-only.

        Recorded at capture from `track()` and from `model=`; empty for a graph captured
        without either. Kept by `to_dict()`/`from_dict()` (a dict without it loads as empty).

        Example:
            >>> with aw.track(model):
            ...     out = model(torch.randn(2, 4))
            >>> dict(aw.capture(out.sum()).module_classes)
            {'': 'Sequential', '0': 'Linear', '1': 'ReLU', '2': 'Linear'}
            >>> dict(g.module_classes)
            {}
        """
        return self._module_classes

    # ----------------------------------------------------------------- live torch objects
    @property
    def is_live(self) -> bool:
        """True while the graph holds its torch nodes (captured, not closed, not from a dict)."""
        return self._live is not None and bool(self._live.root_tensors)

    def require_live(self, what: str) -> LiveRefs:
        """The live torch references, or a RuntimeError saying why `what` cannot be done.

        Example:
            >>> len(g.require_live("read the nodes").fns)
            4
        """
        if self._live is None:
            raise RuntimeError(
                f"cannot {what}: this graph was rebuilt with from_dict() and holds no torch "
                "nodes; capture() the tensors again to step or read saved values"
            )
        if not self._live.root_tensors:
            raise RuntimeError(
                f"cannot {what}: the graph was closed (graph.close() or widget.release()); "
                "capture() the tensors again"
            )
        return self._live

    def fn(self, node_id: str) -> Any:
        """The live `torch.autograd.graph.Node` behind `node_id`.

        Example:
            >>> g.fn("n1").name()
            'PowBackward0'
        """
        live = self.require_live("reach the torch node")
        return live.fns[self.index_of(node_id)]

    def index_of(self, node_id: str) -> int:
        """The position of `node_id` in capture order (`int(node_id[1:])`), checked.

        Example:
            >>> g.index_of("n3")
            3
        """
        self.check_id(node_id)
        return int(node_id[1:])

    def id_of(self, obj: Any) -> str | None:
        """The id of a live autograd node, or None when it is not part of this graph.

        Example:
            >>> g.id_of(z.grad_fn)
            'n0'
        """
        live = self.require_live("look up a torch node")
        i = live.by_fn.get(obj)
        return None if i is None else f"n{i}"

    def gradient_edge(self, tensor: torch.Tensor) -> tuple[str, int]:
        """(node id, input slot) through which `tensor`'s gradient flows in this graph.

        Example:
            >>> g.gradient_edge(x)
            ('n3', 0)
        """
        import torch

        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"expected a torch.Tensor, got {type(tensor).__name__}")
        if not tensor.requires_grad:
            raise ValueError("this tensor does not require grad, so it has no gradient edge")
        node, output_nr = gradient_edge(tensor)
        nid = self.id_of(node)
        if nid is None:
            raise ValueError(
                "this tensor is not part of the captured graph: its gradient node was not "
                "reached from the captured outputs (was it created after capture, or used "
                "only outside the graph?)"
            )
        return nid, int(output_nr)

    @property
    def root_tensors(self) -> list:
        """The captured output tensors (held so the C++ graph stays alive)."""
        return list(self.require_live("reach the root tensors").root_tensors)

    @property
    def grad_outputs(self) -> tuple | None:
        """The `grad_outputs` given to `capture()` (one per root, None where implicit)."""
        return None if self._live is None else self._live.grad_outputs

    def close(self) -> None:
        """Release every torch reference root-first (safe for deep graphs). Idempotent.

        Example:
            >>> g.close(); g.is_live
            False
            >>> g.nodes["n0"].name
            'AddBackward0'
        """
        self._saved.clear()
        self._programs = {}
        if self._finalizer is not None:
            self._finalizer()

    def formula(self, node_id: str) -> NodeFormula:
        """What node `node_id` computes, as a `NodeFormula`: its type's formula (`aw.formula`)
        with the node's actual shapes per gradient, found without reading any data (`meta`
        tensors; a checkpointed value is never unpacked). Displayed in a notebook, it is
        typeset; `.latex_shapes` is its LaTeX, `.lines` one `FormulaLine` per gradient.

        Example:
            >>> lin = torch.nn.Linear(8, 4)
            >>> h = aw.capture(lin(torch.randn(16, 8)).sum(), model=lin)
            >>> nf = h.formula("n1"); nf.name, [line.label for line in nf.lines]
            ('AddmmBackward0', ['self', 'mat1', 'mat2'])
            >>> print(nf.lines[2].shapes)  # grad of mat2 = mat1^T G
            [8\\times 16]\\cdot[16\\times 4] \\to [8\\times 4]
        """
        return node_formula(self, node_id)

    # ----------------------------------------------------------------- saved values
    def saved(self, node_id: str) -> list[SavedValue]:
        """The values `node_id` saved for backward, read on first request and then cached.

        Example:
            >>> [(v.name, v.kind) for v in g.saved("n1")]
            [('exponent', 'scalar'), ('self', 'tensor')]
        """
        self.check_id(node_id)
        return self._saved.read(self, node_id)

    def saved_tensor(self, node_id: str, name: str) -> torch.Tensor:
        """The full value of saved tensor `name` of `node_id` (detached; no copy).

        Example:
            >>> g.saved_tensor("n1", "self")
            tensor(2.)
        """
        self.check_id(node_id)
        return read_saved_tensor(self, node_id, name)

    def saved_memory(self, by: str = "node", *, exclude_leaves: bool = False) -> SavedMemory:
        """Bytes held for backward per node id or per module path (a `SavedMemory`: a dict of
        ints, plus `notes` for what torch hides and what a checkpoint region holds).

        Each storage referenced by saved values is counted once, at its full storage size, and
        charged to the first node in the engine's order that saves it: tensors inside saved
        lists and the inputs a checkpoint region keeps included; a checkpointed value is never
        unpacked (no recompute). Bytes torch hides (a `CopySlices` node) are not guessed: the
        owner appears in `notes` saying so. `exclude_leaves=True` leaves out storages owned by
        leaf tensors (parameters, inputs): activation memory alone. Nodes outside any module
        are charged to "<outside any module>" with `by="module"`.

        Example:
            >>> g.saved_memory()
            SavedMemory({'n1': 4}, notes={})
        """
        self.require_live("read saved tensors")
        order = engine_order(self)
        return saved_memory(self, self._saved, order, by, exclude_leaves=exclude_leaves)

    # ----------------------------------------------------------------- conversions
    def to_networkx(self) -> networkx.MultiDiGraph:
        """A `networkx.MultiDiGraph`; attributes are the records' fields, edge keys are ids.

        Example:
            >>> g.to_networkx()
            <networkx.classes.multidigraph.MultiDiGraph object at ...>
        """
        import networkx as nx

        g = nx.MultiDiGraph()
        g.add_nodes_from((n.id, asdict(n)) for n in self.nodes.values())
        g.add_edges_from((e.src, e.dst, e.id, e.as_dict()) for e in self.edges)
        g.graph["roots"] = list(self.roots)
        return g

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict of structure and metadata (no tensors); see `from_dict()`.

        Example:
            >>> d = g.to_dict()
            >>> d["edges"]
            [['n0', 0, 'n1', 0], ['n0', 1, 'n2', 0], ['n1', 0, 'n3', 0]]
        """
        nodes = []
        for n in self.nodes.values():
            d = asdict(n)
            d["inputs"] = [[list(m.shape), m.dtype, m.device] for m in n.inputs]
            nodes.append(d)
        return {
            "format": DICT_FORMAT,
            "model_name": self.model_name,
            "nodes": nodes,
            "edges": [[e.src, e.output_nr, e.dst, e.input_nr] for e in self.edges],
            "roots": [[a, b] for a, b in self.roots],
            "module_classes": dict(self._module_classes),
            "regions": [r.to_dict() for r in self.regions.values()],
        }

    def to_json(self) -> str:
        """The `to_dict()` record as a JSON string (json.dumps of it).

        Example:
            >>> aw.BackwardGraph.from_json(g.to_json())
            <BackwardGraph 4 nodes, 3 edges, 1 root(s), 2 leaves, not live>
        """
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> BackwardGraph:
        """Rebuild a graph (records only, not steppable) from `to_dict()` output.

        Guarantees: every field is checked first (core/graphdict.py: types, unique node and
        edge ids, slots that exist, no cycle); anything else is a ValueError saying where.

        Example:
            >>> aw.BackwardGraph.from_dict(g.to_dict())
            <BackwardGraph 4 nodes, 3 edges, 1 root(s), 2 leaves, not live>
            >>> aw.BackwardGraph.from_dict({**g.to_dict(), "roots": [["n9", 0]]})
            Traceback (most recent call last):
            ValueError: malformed BackwardGraph dict: roots[0][0]: root 'n9' is not a node; ...
        """
        if not isinstance(d, Mapping) or d.get("format") != DICT_FORMAT:
            raise ValueError(
                f"not a BackwardGraph dict: expected format {DICT_FORMAT!r} (from graph.to_dict())"
            )
        try:
            nodes, edges, roots, name, classes = parse_graph_dict(d)
            regions = parse_regions(d, nodes)
        except FieldError as e:
            raise ValueError(
                f"malformed BackwardGraph dict: {e}; pass what graph.to_dict() returned"
            ) from None
        return cls(nodes, edges, roots, model_name=name, module_classes=classes, regions=regions)

    @classmethod
    def from_json(cls, s: str) -> BackwardGraph:
        """Rebuild a graph (records only, not steppable) from `to_json()` output.

        Example:
            >>> aw.BackwardGraph.from_json(g.to_json()).edges[0].id
            'n0:0'
        """
        try:
            d = json.loads(s)
        except RecursionError:
            raise ValueError("not a BackwardGraph JSON: nested too deeply") from None
        return cls.from_dict(d)
