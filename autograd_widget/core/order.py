"""The engine's execution order, computed on the graph's records alone (no stepper, no torch).

The autograd engine runs Kahn's algorithm: a node becomes ready when every edge into it has
delivered (one dependency PER EDGE, so `x*x` counts twice), and among ready nodes it pops the
highest `sequence_nr` first (AccumulateGrad has 2**64-1, so a leaf runs as soon as it is ready).
The engine's GraphRoot runs first and feeds every root edge. Ties between equal sequence numbers
(several AccumulateGrads) are unspecified in the engine; here they are first-ready-first (FIFO),
which is deterministic.

Guaranteed: the order contains every node of the graph exactly once and is a valid topological
order of its edges; it equals the engine's for every graph whose ready queue never holds two
nodes with the same sequence number (DESIGN.md, "Engine order").

Example:
    >>> import torch, autograd_widget as aw
    >>> x = torch.tensor(2.0, requires_grad=True)
    >>> y = torch.tensor(3.0, requires_grad=True)
    >>> g = aw.capture(x**2 + y)
    >>> [g.nodes[n].name for n in engine_order(g)]
    ['AddBackward0', 'AccumulateGrad', 'PowBackward0', 'AccumulateGrad']
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .graph import BackwardGraph

__all__ = ["engine_order", "engine_order_indices"]


def engine_order_indices(graph: BackwardGraph) -> list[int]:
    """Node indices (`int(node_id[1:])`) in the engine's execution order.

    Raises RuntimeError when some node never becomes ready (records that are not a DAG reachable
    from the roots: only possible for a hand-made or corrupted `from_dict` graph).

    Example:
        >>> engine_order_indices(g)
        [0, 2, 1, 3]
    """
    n = len(graph.nodes)
    edges = graph.edges
    deps = [0] * n
    out_by_node: list[list[int]] = [[] for _ in range(n)]
    dst_of = [int(e.dst[1:]) for e in edges]  # ids are f"n{i}": parse each once
    for ei, e in enumerate(edges):
        out_by_node[int(e.src[1:])].append(ei)
        deps[dst_of[ei]] += 1
    for nid, _ in graph.roots:
        deps[int(nid[1:])] += 1
    seq = [graph.nodes[f"n{i}"].sequence_nr for i in range(n)]
    heap: list[tuple[int, int, int]] = []
    tick = 0
    for nid, _ in graph.roots:  # GraphRoot runs first and feeds every root edge
        i = int(nid[1:])
        deps[i] -= 1
        if deps[i] == 0:
            heapq.heappush(heap, (-seq[i], tick, i))
            tick += 1
    order: list[int] = []
    while heap:
        _, _, i = heapq.heappop(heap)
        order.append(i)
        for ei in out_by_node[i]:
            j = dst_of[ei]
            deps[j] -= 1
            if deps[j] == 0:
                heapq.heappush(heap, (-seq[j], tick, j))
                tick += 1
    if len(order) != n:
        raise RuntimeError(
            f"cannot order this graph: {n - len(order)} node(s) never became ready (the graph "
            "records are inconsistent with a DAG reachable from the roots)"
        )
    return order


def engine_order(graph: BackwardGraph) -> list[str]:
    """Node ids in the order the autograd engine would execute them (the steps of a Stepper).

    Works on any graph, live or rebuilt with `from_dict` (it reads records only).

    Example:
        >>> engine_order(g)
        ['n0', 'n2', 'n1', 'n3']
    """
    return [f"n{i}" for i in engine_order_indices(graph)]
