"""Repeated blocks: sibling module groups whose backward subgraphs are structurally identical.

A 48-layer Transformer draws as 48 copies of the same few dozen nodes. Folding them into one box
"layers.0–47 ×48" is what makes such a model readable, but only when the copies really are the
same: two layers of different widths, or one layer with an extra op, must stay apart, or the
picture would lie. So blocks are compared by a canonical structural signature computed from the
graph records alone (no torch objects, no parameter values):

- the block's nodes in a deterministic order: non-leaf nodes by autograd sequence number (the
  order the forward created them, which identical blocks share), then each AccumulateGrad leaf
  after the node that first consumes it;
- per node: op name, kind, the shapes and dtypes of its gradient slots, its number of outputs,
  its module path relative to the block and, for parameters, their name relative to the block;
- the internal wiring as (source position, output slot, target position, input slot);
- the edges crossing the boundary, by position, slot, shape and dtype only, since the node on the
  other side is necessarily different for every copy (layer i feeds layer i + 1). Incoming edges
  count once per receiving slot: the last layer's output feeds only the loss where the others
  feed the next layer twice (attention and residual), which is no difference of the block.

Candidates are sibling module groups (children of the same module path), in the order the
forward ran them. A block is one sibling (`layers.3`), or a unit of a few consecutive siblings
when the model is a flat `nn.Sequential` (`Linear, ReLU, Linear, ReLU, ...` repeats the pair
`(Linear, ReLU)`, never a single sibling). Only runs of at least two consecutive identical
blocks fold, and a block that differs breaks the run. Devices and values are ignored.

One consequence worth knowing: the first layer of a model whose input needs no gradient lacks the
input-side nodes its successors have (no gradient flows to the input), so it differs and is left
out of the run ("layers.1–47 ×47"). That is the graph's real structure, not a miss.

Pure (graph records only, no torch) and linear in the graph size times the module nesting depth:
10-20 ms for a 48-layer Transformer (2.7k nodes; benchmarks/bench_scale.py measures it). Two
things keep it there: a sibling whose cheap fingerprint (node count, token sum) no other sibling
shares is never walked, and the blocks inside a repeated block are compared once, in its first
copy, and mirrored to the others.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from ..core.graph import BackwardGraph
from ..core.records import ACCUMULATE_GRAD_SEQUENCE_NR
from ..util.bidi import isolate
from ..util.gcpause import gc_paused
from . import modules

__all__ = ["MAX_PERIOD", "Repeat", "find_repeats", "fold_map", "signatures"]

#: Longest unit of consecutive siblings tried as one block (a VGG stage in a flat Sequential,
#: conv-relu-conv-relu-pool, is 5).
MAX_PERIOD = 8

_DIGITS = re.compile(r"(\d+)")


@dataclass(frozen=True)
class Repeat:
    """A run of `count` consecutive, structurally identical blocks of sibling module groups.

    A block (a "unit") is `period` consecutive siblings, usually one (`layers.3`). `members` are
    all the group paths of the run, unit after unit, in the order the forward ran them; `label`
    is what a folded box says ("layers.0–47 ×48", or "(2, 3)–(6, 7) ×3" for units of two);
    `signature` a short digest of the shared structure (equal digests, equal blocks, also
    across graphs);
    `nodes_per_unit` how many graph nodes each copy holds, so the box can say how much it hides.
    """

    parent: str
    members: tuple[str, ...]
    count: int
    period: int
    label: str
    signature: str
    nodes_per_unit: int

    def __post_init__(self) -> None:
        if self.count < 2 or self.period < 1 or len(self.members) != self.count * self.period:
            raise ValueError("a Repeat needs count >= 2 units of `period` members each")

    @property
    def units(self) -> tuple[tuple[str, ...], ...]:
        """The member paths, one tuple per repeated block."""
        p = self.period
        return tuple(self.members[k : k + p] for k in range(0, len(self.members), p))

    @property
    def representative(self) -> tuple[str, ...]:
        """The block whose drawing stands for all of them (the first one run)."""
        return self.members[: self.period]




def _natural_key(path: str) -> tuple:
    """ "layers.10" after "layers.9": digit runs compare as numbers."""
    return tuple(int(t) if t.isdigit() else t for t in _DIGITS.split(path))


def _label(parent: str, units: list[tuple[str, ...]]) -> str:
    """ "layers.0–47 ×48": parent path, first and last block, count."""

    def name(unit: tuple[str, ...]) -> str:
        names = [isolate(modules.child_name(m)) for m in unit]
        return names[0] if len(names) == 1 else f"({', '.join(names)})"

    prefix = f"{isolate(parent)}." if parent else ""
    return f"{prefix}{name(units[0])}–{name(units[-1])} ×{len(units)}"


class _Index:
    """Per-graph lookups shared by every block: built once, O(nodes + edges)."""

    def __init__(self, graph: BackwardGraph) -> None:
        nodes = list(graph.nodes.values())
        self.nodes = nodes
        index = {n.id: i for i, n in enumerate(nodes)}
        n = len(nodes)
        self.out: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]
        self.inc: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]
        for e in graph.edges:
            s, d = index[e.src], index[e.dst]
            self.out[s].append((e.output_nr, d, e.input_nr))
            self.inc[d].append((s, e.output_nr, e.input_nr))
        for lst in self.out:
            lst.sort()
        # Facts that do not depend on the block, interned once so signatures compare small ints.
        self.slot_meta = [tuple((m.shape, m.dtype) for m in nd.inputs) for nd in nodes]
        intern: dict[tuple, int] = {}
        self.token = [
            intern.setdefault((nd.name, nd.kind, meta, nd.num_outputs, nd.leaf_kind), len(intern))
            for nd, meta in zip(nodes, self.slot_meta)
        ]
        #: token -> the facts it stands for (token numbers depend on the graph's node order).
        self.facts = list(intern)
        acc = ACCUMULATE_GRAD_SEQUENCE_NR
        self.is_leaf = [nd.sequence_nr == acc for nd in nodes]
        #: Canonical order of non-leaf nodes inside any block: creation order, then op facts.
        self.op_key = [(nd.sequence_nr, t) for nd, t in zip(nodes, self.token)]


def _members(index: _Index, candidates: set[str]) -> dict[str, list[int]]:
    """Node indices of each candidate group (node's module is the group or lies under it)."""
    members: dict[str, list[int]] = {c: [] for c in candidates}
    # The candidate groups holding each distinct module path (itself and its ancestors).
    holders: dict[str | None, list[list[int]]] = {None: []}
    for i, nd in enumerate(index.nodes):
        m = nd.module
        lists = holders.get(m)
        if lists is None:
            lists = []
            a: str = m  # type: ignore[assignment]
            while True:
                if a in members:
                    lists.append(members[a])
                if not a:
                    break
                a = modules.parent(a)
            holders[m] = lists
        for lst in lists:
            lst.append(i)
    return members


def _signature(index: _Index, block: list[tuple[str, list[int]]]) -> tuple:
    """The canonical structure of one block: its sibling groups (path, node indices), in order.

    Module paths and parameter names are taken relative to the sibling holding them, tagged
    with that sibling's place in the block, so `2.weight` in unit (2, 3) matches `4.weight` in
    unit (4, 5).
    """
    nodes, token, is_leaf, inc = index.nodes, index.token, index.is_leaf, index.inc
    where: dict[int, int] = {}
    for k, (_, mem) in enumerate(block):
        for i in mem:
            where[i] = k
    ops = [i for i in where if not is_leaf[i]]
    ops.sort(key=index.op_key.__getitem__)
    pos = {i: p for p, i in enumerate(ops)}
    leaves = [i for i in where if is_leaf[i]]
    if leaves:
        # A leaf goes after the first (in canonical order) node that feeds it, by output slot.
        far = (len(where), 0)

        def leaf_key(i: int) -> tuple:
            first = min(((pos[s], k) for s, k, _ in inc[i] if s in pos), default=far)
            return (*first, token[i])

        leaves.sort(key=leaf_key)
        for i in leaves:
            pos[i] = len(pos)
    # Every member's module is its group or lies under it, so its relative path is a slice.
    groups = [g for g, _ in block]
    cuts = [len(g) + 1 if g else 0 for g in groups]
    prefixes = [g + "." if g else "" for g in groups]
    node_part = []
    internal = []
    out_boundary = []
    in_boundary = []
    for i in ops + leaves:
        nd = nodes[i]
        k = where[i]
        m = nd.module
        rel = "" if m == groups[k] else m[cuts[k] :]  # type: ignore[index]
        leaf = nd.leaf_name if nd.leaf_kind == "parameter" else None
        if leaf is not None:
            leaf = leaf[cuts[k] :] if leaf.startswith(prefixes[k]) else None
        node_part.append((token[i], k, rel, leaf))
        p = pos[i]
        for out_nr, j, in_nr in index.out[i]:
            q = pos.get(j)
            if q is not None:
                internal.append((p, out_nr, q, in_nr))
            else:
                meta = index.slot_meta[j]
                out_boundary.append((p, out_nr, meta[in_nr] if in_nr < len(meta) else None))
        for s, _, in_nr in inc[i]:
            if s not in pos:
                in_boundary.append((p, in_nr))
    # Internal and outgoing edges come out sorted ((position, output slot) is unique); incoming
    # edges count once per receiving slot (see the module docstring).
    return (tuple(node_part), tuple(internal), tuple(out_boundary), tuple(sorted(set(in_boundary))))


def _tandem_runs(ids: list[int], weight: list[int]) -> list[tuple[int, int, int]]:
    """Non-overlapping runs (start, period, count) of a block of `period` ids repeated `count`.

    Greedy, biggest first: the run covering the most siblings wins, then the shorter period
    (`a a a a` is 4 x a, not 2 x (a a)), then the phase whose block starts with the heaviest
    sibling (`Linear, ReLU` rather than `ReLU, Linear`: a layer is drawn from its weights), then
    the earliest; the parts left and right of it are searched the same way. For a period p,
    `ids[i] == ids[i + p]` over a stretch of L - p positions means L periodic ids, so each
    period costs one pass: O(len(ids) * MAX_PERIOD) per run found.
    """
    out: list[tuple[int, int, int]] = []
    todo = [(0, len(ids))]
    while todo:
        lo, hi = todo.pop()
        best: tuple | None = None
        for p in range(1, min(MAX_PERIOD, (hi - lo) // 2) + 1):
            i = lo
            while i + p < hi:
                if ids[i] != ids[i + p]:
                    i += 1
                    continue
                j = i
                while j + p < hi and ids[j] == ids[j + p]:
                    j += 1
                length = j - i + p  # ids[i:j + p] has period p
                count = length // p
                if count >= 2:
                    for start in range(i, i + length - count * p + 1):
                        key = (count * p, -p, weight[start], -start)
                        if best is None or key > best[0]:
                            best = (key, start, p, count)
                i = j + 1
        if best is None:
            continue
        _, start, p, count = best
        out.append((start, p, count))
        todo.append((lo, start))
        todo.append((start + p * count, hi))
    out.sort()
    return out


def signatures(graph: BackwardGraph, groups: Iterable[str] | None = None) -> dict[str, tuple]:
    """The structural signature of each group (default: every module path of the graph).

    Exposed so tests and tools can see WHY two blocks do or do not fold: equal tuples fold.
    Node facts are numbered per graph, so compare tuples within one graph only (across graphs,
    compare `Repeat.signature`).

    Example:
        >>> block = lambda: torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh())
        >>> blocks = torch.nn.Sequential(block(), block(), block())
        >>> with aw.track(blocks):
        ...     out = blocks(torch.randn(2, 4))
        >>> sig = signatures(aw.capture(out.sum(), model=blocks))
        >>> sig["1"] == sig["2"] != sig["0"]  # block 0's input needs no gradient: another graph
        True
    """
    with gc_paused():
        index = _Index(graph)
        if groups is None:
            groups = modules.module_paths_of({nd.module for nd in index.nodes})
        wanted = set(groups)
        mem = _members(index, wanted)
        return {g: _signature(index, [(g, m)]) for g, m in sorted(mem.items()) if m}


def find_repeats(graph: BackwardGraph, groups: Iterable[str] | None = None) -> list[Repeat]:
    """Runs of >= 2 consecutive, structurally identical blocks of sibling module groups.

    `groups` limits the candidates (default: every module path holding a node, from `track()` or
    from parameter ownership with `capture(model=...)`); a graph without module paths has no
    repeats. Siblings are ordered as the forward ran them (first autograd sequence number, then
    natural path order), so "consecutive" means consecutive in the model's execution.

    Returned outermost first, then in execution order; repeats nested inside another repeat's
    members are included (they matter once the outer box is expanded).

    Example:
        >>> block = lambda: torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh())
        >>> blocks = torch.nn.Sequential(block(), block(), block())
        >>> with aw.track(blocks):
        ...     out = blocks(torch.randn(2, 4))
        >>> [(r.label, r.members) for r in find_repeats(aw.capture(out.sum(), model=blocks))]
        [('1–2 ×2', ('1', '2'))]
    """
    with gc_paused():
        return _find_repeats(graph, groups)


def _find_repeats(graph: BackwardGraph, groups: Iterable[str] | None) -> list[Repeat]:
    nodes = list(graph.nodes.values())
    if groups is None:
        groups = modules.module_paths_of({nd.module for nd in nodes})
    paths = sorted(set(groups), key=_natural_key)
    siblings: dict[str, list[str]] = {}
    for p in paths:
        if p:
            siblings.setdefault(modules.parent(p), []).append(p)
    candidates = {p for sibs in siblings.values() if len(sibs) >= 2 for p in sibs}
    if not candidates:
        return []
    index = _Index(graph)
    members = _members(index, candidates)
    acc = ACCUMULATE_GRAD_SEQUENCE_NR
    # Where each group's forward began: its first non-leaf node's sequence number.
    first_run = {
        g: (min((s for i in m if (s := nodes[i].sequence_nr) != acc), default=acc), _natural_key(g))
        for g, m in members.items()
        if m
    }

    # Runs per parent: (units, digest). Equal blocks have equal insides, so the runs inside a
    # repeated block are those inside its first copy with the path prefix swapped: computed once
    # per distinct block, not once per copy (`mirror`: member of a later copy -> first copy's).
    Run = tuple[list[tuple[str, ...]], str]
    mirror: dict[str, str] = {}
    memo: dict[str, list[Run]] = {}

    def ordered(parent: str) -> list[str]:
        return sorted((g for g in siblings[parent] if g in first_run), key=first_run.__getitem__)

    def digest(sig: tuple) -> str:
        # Over the facts, not the token numbers, so that equal blocks in different graphs get
        # equal digests.
        facts = index.facts
        nodes_part = tuple((facts[t], *rest) for t, *rest in sig[0])
        text = repr((nodes_part, *sig[1:]))
        return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()

    def runs_of(parent: str) -> list[Run]:
        done = memo.get(parent)
        if done is not None:
            return done
        sibs = ordered(parent)
        a = parent
        while a and a not in mirror:
            a = modules.parent(a)
        if a:
            src = mirror[a] + parent[len(a) :]
            if src in siblings and [src + g[len(parent) :] for g in sibs] == ordered(src):
                out = [
                    ([tuple(parent + m[len(src) :] for m in u) for u in units], d)
                    for units, d in runs_of(src)
                ]
                memo[parent] = out
                return out
        # A cheap fingerprint first (node count, sum of node tokens; equal blocks have equal
        # ones): a sibling whose fingerprint no other sibling shares cannot repeat, so its full
        # signature is never built (an `encoder` beside an `embed` is not walked twice).
        tok = index.token.__getitem__
        fps = [(len(members[g]), sum(map(tok, members[g]))) for g in sibs]
        seen = Counter(fps)  # not fps.count per sibling: siblings x siblings on a wide model
        shared = {fp for fp, c in seen.items() if c > 1}
        sigs: list[tuple] = [
            _signature(index, [(g, members[g])]) if fp in shared else ("unique", k)
            for k, (g, fp) in enumerate(zip(sibs, fps))
        ]
        ids_of: dict[tuple, int] = {}
        ids = [ids_of.setdefault(s, len(ids_of)) for s in sigs]
        out = []
        for start, p, count in _tandem_runs(ids, [len(members[g]) for g in sibs]):
            units = [tuple(sibs[start + u * p : start + (u + 1) * p]) for u in range(count)]
            if p == 1:
                out.append((units, digest(sigs[start])))
                continue
            # Equal siblings do not yet make equal units: check the wiring between them.
            usigs = [_signature(index, [(g, members[g]) for g in u]) for u in units]
            k = 0
            for e in range(1, count + 1):
                if e < count and usigs[e] == usigs[k]:
                    continue
                if e - k >= 2:
                    out.append((units[k:e], digest(usigs[k])))
                k = e
        memo[parent] = out
        return out

    found: list[tuple[tuple, Repeat]] = []
    # Outermost parents first, so `mirror` knows every run enclosing a parent before it is seen.
    for parent in sorted(siblings, key=lambda p: (p.count(".") if p else -1, _natural_key(p))):
        if len(siblings[parent]) < 2:
            continue
        for units, d in runs_of(parent):
            for u in units[1:]:
                for m, m0 in zip(u, units[0]):
                    mirror[m] = m0
            rep = Repeat(
                parent=parent,
                members=tuple(m for u in units for m in u),
                count=len(units),
                period=len(units[0]),
                label=_label(parent, units),
                signature=d,
                nodes_per_unit=sum(len(members[m]) for m in units[0]),
            )
            depth = parent.count(".") + 1 if parent else 0
            found.append(((depth, first_run[units[0][0]]), rep))
    found.sort(key=lambda t: t[0])
    return [r for _, r in found]


def fold_map(graph: BackwardGraph, repeats: Iterable[Repeat]) -> dict[str, str]:
    """Each repeated group path -> the label of the box standing for its whole run.

    Raises ValueError for a member that is not a module path of `graph` (repeats found on a
    different graph), so a stale fold cannot silently hide the wrong nodes.

    Example:
        >>> block = lambda: torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh())
        >>> blocks = torch.nn.Sequential(block(), block(), block())
        >>> with aw.track(blocks):
        ...     out = blocks(torch.randn(2, 4))
        >>> gb = aw.capture(out.sum(), model=blocks)
        >>> fold_map(gb, find_repeats(gb))
        {'1': '1–2 ×2', '2': '1–2 ×2'}
    """
    known = set(modules.module_paths(graph))
    out: dict[str, str] = {}
    for r in repeats:
        for m in r.members:
            if m not in known:
                raise ValueError(f"{m!r} is not a module path of this graph")
            out[m] = r.label
    return out
