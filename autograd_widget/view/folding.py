"""Repeated subgraphs outside modules: one kind of foldable group collapse="auto" folds.

Pure (graph records only, no torch) and linear in the graph. `autofold.choose_folds` decides
what to fold; this module finds what CAN fold where no module says so:

- `find_subgraph_runs`: runs of structurally identical consecutive subgraphs in nodes outside
  every module (an RNN cell unrolled in plain torch, `sum((x * (i + 1)).sin() for i in ...)`),
  found in the forward's creation order (autograd sequence numbers): the op sequence is scanned
  for periodic stretches (numpy, every period up to `MAX_SUBGRAPH_PERIOD`), then each block's
  wiring is compared (edges inside the block, edges into the block before it, edges to shared
  nodes and leaves by kind). A `RepeatedSubgraph` folds into one box like a run of module blocks.

"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..core.graph import BackwardGraph
from ..core.records import ACCUMULATE_GRAD_SEQUENCE_NR

__all__ = [
    "MAX_SUBGRAPH_PERIOD",
    "MIN_SUBGRAPH_COUNT",
    "MIN_SUBGRAPH_NODES",
    "RepeatedSubgraph",
    "find_subgraph_runs",
]

#: Longest repeated block (in ops) `find_subgraph_runs` looks for.
MAX_SUBGRAPH_PERIOD = 64
#: Fewest nodes a run of repeated subgraphs must cover to be worth a box.
MIN_SUBGRAPH_NODES = 8
#: Fewest blocks a run of repeated subgraphs must have (two blocks of a random graph often
#: match by chance; three rarely do).
MIN_SUBGRAPH_COUNT = 3


@dataclass(frozen=True)
class RepeatedSubgraph:
    """A run of `count` consecutive, structurally identical subgraphs outside every module.

    `units` holds each block's node ids (its ops in creation order, then the leaves only it
    consumes); `ops` the block's op names; `label` is what the folded box says, "×1000 ·
    repeated block (MulBackward0 → SinBackward0)"; `signature` a short digest of the shared
    structure. Read like a `Repeat` by the drawing: `members` is empty (no module is a member)
    and `period` is 1.

    Example:
        >>> run = RepeatedSubgraph(
        ...     ("n1", "n2"), (("n1",), ("n2",)), 2, 1, "×2 · repeated block (Mul)", "sig",
        ...     ("MulBackward0",))
        >>> run.members, run.period, run.node_ids
        ((), 1, ('n1', 'n2'))
    """

    node_ids: tuple[str, ...]
    units: tuple[tuple[str, ...], ...]
    count: int
    nodes_per_unit: int
    label: str
    signature: str
    ops: tuple[str, ...]

    @property
    def members(self) -> tuple[str, ...]:
        """No module path is a member (the nodes are outside every module)."""
        return ()

    @property
    def period(self) -> int:
        """One block per unit."""
        return 1


def _run_label(count: int, ops: list[str]) -> str:
    if len(ops) <= 4:
        what = " → ".join(ops)
    else:
        what = f"{ops[0]} → {ops[1]} → … → {ops[-1]}, {len(ops)} ops"
    return f"×{count} · repeated block ({what})"


def _periodic_stretches(tok: np.ndarray, max_period: int) -> list[tuple[int, int, int]]:
    """Maximal stretches (start, stop, period) of `tok` with period p repeated at least twice."""
    m = len(tok)
    out: list[tuple[int, int, int]] = []
    for p in range(1, min(max_period, m // 2) + 1):
        eq = np.concatenate(([False], tok[:-p] == tok[p:], [False]))
        d = np.diff(eq.astype(np.int8))
        starts = np.flatnonzero(d == 1)
        stops = np.flatnonzero(d == -1)
        keep = stops - starts >= p  # tok[i : j + p] has period p and length >= 2p
        for i, j in zip(starts[keep].tolist(), stops[keep].tolist()):
            out.append((i, j + p, p))
    return out


def find_subgraph_runs(
    graph: BackwardGraph,
    nodes: Iterable[str] | None = None,
    *,
    max_period: int = MAX_SUBGRAPH_PERIOD,
    min_nodes: int = MIN_SUBGRAPH_NODES,
    min_count: int = MIN_SUBGRAPH_COUNT,
) -> list[RepeatedSubgraph]:
    """Runs of >= `min_count` consecutive, structurally identical subgraphs among `nodes`.

    Args:
        graph: the graph.
        nodes: node ids to look in (default: every node outside every module).
        max_period: the longest block, in ops.
        min_nodes: the fewest nodes a run must cover.
        min_count: the fewest blocks a run must have (at least 2).

    Returns:
        Non-overlapping runs, biggest first (most nodes covered, then the shorter block, then
        the earliest). The ops of `nodes` are taken in creation order (autograd sequence
        number); a stretch whose op names repeat with period p is cut into blocks of p ops, and
        consecutive blocks fold when their wiring is equal: the edges inside the block, into
        the block just before, and to anything else by its op (a shared weight or a shared
        intermediate is the same for every block). A leaf joins the block whose ops alone
        consume it. Cost: O(len(nodes) * max_period) numpy work plus one pass over the edges.

    Example:
        >>> xs = torch.randn(3, requires_grad=True)
        >>> gs = aw.capture(sum((xs * (i + 1)).sin() for i in range(5)).sum())
        >>> [(r.count, r.ops) for r in find_subgraph_runs(gs)]
        [(4, ('MulBackward0', 'SinBackward0', 'AddBackward0'))]
    """
    all_nodes = list(graph.nodes.values())
    pos = {nd.id: i for i, nd in enumerate(all_nodes)}
    if nodes is None:
        cand = [i for i, nd in enumerate(all_nodes) if nd.module is None]
    else:
        cand = [pos[graph.check_id(nid)] for nid in nodes]
    acc = ACCUMULATE_GRAD_SEQUENCE_NR
    ops = [i for i in cand if all_nodes[i].sequence_nr != acc]
    if len(ops) < 2:
        return []
    ops.sort(key=lambda i: (all_nodes[i].sequence_nr, i))
    intern: dict[tuple, int] = {}

    def token(i: int) -> int:
        nd = all_nodes[i]
        key = (nd.name, nd.kind, tuple((m.shape, m.dtype) for m in nd.inputs), nd.num_outputs,
               nd.leaf_kind)
        return intern.setdefault(key, len(intern))

    tokens = [token(i) for i in range(len(all_nodes))]
    tok = np.asarray([tokens[i] for i in ops], np.int64)
    rank = {i: r for r, i in enumerate(ops)}  # op position -> place in creation order
    in_cand = set(cand)
    out_edges: dict[int, list[tuple[int, int, int]]] = {}
    consumers: dict[int, set[int]] = {}
    for e in graph.edges:
        s, d = pos[e.src], pos[e.dst]
        if s in rank:
            out_edges.setdefault(s, []).append((e.output_nr, d, e.input_nr))
        if d in in_cand and all_nodes[d].sequence_nr == acc:
            consumers.setdefault(d, set()).add(s)

    def unit_sig(start: int, p: int) -> tuple:
        """The wiring of the block of ops [start, start + p) in creation order."""
        sig = []
        for r in range(start, start + p):
            for out_nr, d, in_nr in out_edges.get(ops[r], ()):
                q = rank.get(d)
                if q is not None and start <= q < start + p:
                    sig.append((r - start, out_nr, "in", q - start, in_nr))
                elif q is not None and start - p <= q < start:
                    sig.append((r - start, out_nr, "prev", q - start, in_nr))
                else:
                    sig.append((r - start, out_nr, "ext", tokens[d], in_nr))
        return tuple(sorted(sig))

    # Candidate stretches, best first; a stretch overlapping a chosen run is trimmed to its
    # longest free part and tried again.
    heap = [(-((j - i) // p * p), p, i, j) for i, j, p in _periodic_stretches(tok, max_period)]
    heapq.heapify(heap)
    taken = np.zeros(len(ops), bool)
    chosen: list[tuple[int, int, int]] = []  # (start, period, count)
    while heap:
        _, p, i, j = heapq.heappop(heap)
        free = ~taken[i:j]
        if not free.all():
            # Longest free sub-stretch.
            f = np.concatenate(([False], free, [False])).astype(np.int8)
            d = np.diff(f)
            st, sp = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
            k = int(np.argmax(sp - st)) if len(st) else -1
            if k < 0 or sp[k] - st[k] < 2 * p:
                continue
            i, j = i + int(st[k]), i + int(sp[k])
            heapq.heappush(heap, (-((j - i) // p * p), p, i, j))
            continue
        count = (j - i) // p
        sigs = [unit_sig(i + u * p, p) for u in range(count)]
        k = 0
        for e in range(1, count + 1):
            if e < count and sigs[e] == sigs[k]:
                continue
            if e - k >= max(min_count, 2):
                chosen.append((i + k * p, p, e - k))
                taken[i + k * p : i + e * p] = True
            k = e
    runs: list[tuple[tuple, RepeatedSubgraph]] = []
    for start, p, count in chosen:
        unit_of: dict[int, int] = {}
        for u in range(count):
            for r in range(start + u * p, start + (u + 1) * p):
                unit_of[ops[r]] = u
        leaves: list[list[int]] = [[] for _ in range(count)]
        for leaf, srcs in consumers.items():
            us = {unit_of.get(s, -1) for s in srcs}
            if len(us) == 1 and -1 not in us:
                leaves[us.pop()].append(leaf)
        units = tuple(
            tuple(all_nodes[i].id for i in [*ops[start + u * p : start + (u + 1) * p],
                                             *sorted(leaves[u])])
            for u in range(count)
        )
        node_ids = tuple(nid for unit in units for nid in unit)
        if len(node_ids) < min_nodes:
            continue
        names = [all_nodes[ops[r]].name for r in range(start, start + p)]
        facts = list(intern)
        sig = [(*t[:2], t[2], facts[t[3]] if t[2] == "ext" else t[3], t[4])
               for t in unit_sig(start, p)]
        text = repr(([facts[t] for t in tok[start : start + p].tolist()], sig))
        digest = hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
        run = RepeatedSubgraph(
            node_ids=node_ids,
            units=units,
            count=count,
            nodes_per_unit=len(units[0]),
            label=_run_label(count, names),
            signature=digest,
            ops=tuple(names),
        )
        runs.append(((-len(node_ids), p, start), run))
    runs.sort(key=lambda t: t[0])
    return [r for _, r in runs]
