"""The records of a captured graph: plain, typed, torch-free.

`Node` and `Edge` are what every layer above reads (the engine routes by them, the view draws
them, the wire encodes them); they hold no torch objects, so they can be tested, serialised and
drawn without the live graph. A `TensorMeta` is one gradient slot's shape, dtype and device.

Example:
    >>> e = Edge("n0", 1, "n3", 0)
    >>> e.id
    'n0:1'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

__all__ = [
    "ACCUMULATE_GRAD_SEQUENCE_NR",
    "Edge",
    "LeafKind",
    "Node",
    "NodeKind",
    "RegionEdge",
    "TensorMeta",
]

#: "aten": an op inside a compiled region (`core.regions.Region.ops`), never in `graph.nodes`.
NodeKind = Literal["function", "accumulate_grad", "custom_function", "cpp_function", "aten"]
LeafKind = Literal["parameter", "input"]

#: Sequence number of every AccumulateGrad node (UINT64_MAX): the engine runs them as soon as ready.
ACCUMULATE_GRAD_SEQUENCE_NR = 2**64 - 1

class TensorMeta(NamedTuple):
    """Shape, dtype and device of one gradient slot (a node's `_input_metadata` entry)."""

    shape: tuple[int, ...]
    dtype: str
    device: str


@dataclass(slots=True)
class Node:
    """One autograd node. `inputs` has one entry per incoming gradient slot (the node's arity).

    Example:
        >>> n = g.nodes["n3"]
        >>> n.name, n.kind, n.leaf_name
        ('AccumulateGrad', 'accumulate_grad', 'x')
        >>> n.inputs
        [TensorMeta(shape=(), dtype='float32', device='cpu')]
    """

    id: str
    name: str
    kind: NodeKind
    sequence_nr: int
    inputs: list[TensorMeta]
    module: str | None = None
    leaf_name: str | None = None
    traceback: list[str] | None = None
    #: "parameter" or "input" for AccumulateGrad nodes, else None.
    leaf_kind: LeafKind | None = None
    #: Number of gradient outputs (len(next_functions)), including ones that feed nothing.
    num_outputs: int = 0
    #: True when some root edge points into this node.
    is_root: bool = False


class Edge(NamedTuple):
    """Gradient output `output_nr` of node `src` flows into input slot `input_nr` of node `dst`.

    `(src, output_nr)` is unique, so it names the edge: `id == f"{src}:{output_nr}"`. A named
    tuple because a capture makes one per edge and must stay near a microsecond per node.

    Example:
        >>> [e.id for e in g.edges]
        ['n0:0', 'n0:1', 'n1:0']
    """

    src: str
    output_nr: int
    dst: str
    input_nr: int

    @property
    def id(self) -> str:
        """`"{src}:{output_nr}"`, unique in its graph."""
        return f"{self.src}:{self.output_nr}"

    def as_dict(self) -> dict[str, Any]:
        """The fields and the id, JSON-safe.

        Example:
            >>> Edge("n0", 1, "n2", 0).as_dict()
            {'src': 'n0', 'output_nr': 1, 'dst': 'n2', 'input_nr': 0, 'id': 'n0:1'}
        """
        return {**self._asdict(), "id": self.id}


class RegionEdge(Edge):
    """An edge inside a compiled region (`Region.edges`): from an op's output (or the region's
    node, for the incoming gradient of input slot `output_nr`) to an op's input slot.

    Inside a region one op output may feed several ops, so `(src, output_nr)` is not unique
    there: the id names the destination too, `f"{src}:{output_nr}>{dst}:{input_nr}"`.

    Example:
        >>> RegionEdge("n1/0", 0, "n1/2", 1).id
        'n1/0:0>n1/2:1'
        >>> isinstance(RegionEdge("n1", 0, "n1/0", 0), Edge)
        True
    """

    __slots__ = ()

    @property
    def id(self) -> str:
        """`"{src}:{output_nr}>{dst}:{input_nr}"`, unique in its region."""
        return f"{self.src}:{self.output_nr}>{self.dst}:{self.input_nr}"
