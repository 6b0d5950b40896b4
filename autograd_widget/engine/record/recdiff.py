"""Which gradients differ between two recordings of the same program (two ranks, two runs).

`compare_recordings(a, b)` first checks that both recordings are of the same graph (same node
types in the same capture positions, same edges, same roots): comparing gradients of different
graphs edge by edge would pair unrelated tensors, so a structural difference is a ValueError
naming the first one. Then, per edge, in the graph's edge order: full tensors where both
recordings kept that edge's gradient (`torch.allclose` with the tolerances, NaN equal to
NaN), else the summaries: shape, dtype, NaN and Inf counts equal, and `norm`, `min`, `max`,
`mean` within `atol + rtol * max(|a|, |b|)` (NaN equals NaN, infinities equal only with the same
sign). An edge where one recording has a gradient and the other has none differs.
"""

from __future__ import annotations

import math

import torch

from ...core.summary import Summary
from .recording import Recording

__all__ = ["compare_recordings", "structure_difference", "summaries_differ"]

_STATS = ("norm", "min", "max", "mean")


def structure_difference(a: Recording, b: Recording) -> str | None:
    """The first structural difference between the two recordings' graphs, or None.

    Example:
        >>> ra, rb = aw.record((x * 3).sum()), aw.record((x + 3).sum())
        >>> structure_difference(ra, rb)
        'node n1 is MulBackward0 in a, AddBackward0 in b (the graphs differ from there)'
    """
    ga, gb = a.graph, b.graph
    na, nb = list(ga.nodes.values()), list(gb.nodes.values())
    for i, (u, v) in enumerate(zip(na, nb)):
        if u.name != v.name or u.id != v.id:
            return (
                f"node {u.id if u.id == v.id else i} is {u.name} in a, {v.name} in b "
                "(the graphs differ from there)"
            )
        su = [tuple(m.shape) for m in u.inputs]
        sv = [tuple(m.shape) for m in v.inputs]
        if su != sv:
            return f"node {u.id} ({u.name}) takes gradients of shapes {su} in a, {sv} in b"
    if len(na) != len(nb):
        return f"a has {len(na)} nodes, b has {len(nb)}"
    if len(ga.edges) != len(gb.edges):
        return f"a has {len(ga.edges)} edges, b has {len(gb.edges)}"
    for e, f in zip(ga.edges, gb.edges):
        if tuple(e) != tuple(f):
            return (
                f"edge {e.id} goes to {e.dst}[{e.input_nr}] in a, edge {f.id} to "
                f"{f.dst}[{f.input_nr}] in b"
            )
    if ga.roots != gb.roots:
        return f"the roots are {ga.roots} in a, {gb.roots} in b"
    return None


def _close(x: float | None, y: float | None, rtol: float, atol: float) -> bool:
    if x is None or y is None:
        return x is y
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    if math.isinf(x) or math.isinf(y):
        return x == y
    return abs(x - y) <= atol + rtol * max(abs(x), abs(y))


def summaries_differ(sa: Summary, sb: Summary, rtol: float, atol: float) -> bool:
    """True when two gradient summaries differ (the module docstring's rule).

    Example:
        >>> s = Summary.of(torch.tensor([1.0, float("nan")]))
        >>> summaries_differ(s, s, 1e-5, 1e-8)
        False
        >>> summaries_differ(s, Summary.of(torch.ones(2)), 1e-5, 1e-8)
        True
    """
    if tuple(sa.shape) != tuple(sb.shape) or sa.dtype != sb.dtype:
        return True
    if sa.nan != sb.nan or sa.inf != sb.inf:
        return True
    return not all(_close(getattr(sa, k), getattr(sb, k), rtol, atol) for k in _STATS)


def _tensors_differ(ta: torch.Tensor, tb: torch.Tensor, rtol: float, atol: float) -> bool:
    if ta.shape != tb.shape or ta.dtype != tb.dtype:
        return True
    if not (ta.is_floating_point() or ta.is_complex()):
        return not torch.equal(ta, tb)
    return not torch.allclose(ta, tb, rtol=rtol, atol=atol, equal_nan=True)


def compare_recordings(
    a: Recording, b: Recording, *, rtol: float = 1e-5, atol: float = 1e-8
) -> list[str]:
    """Ids of the edges whose gradients differ between recordings `a` and `b`, in edge order.

    Guarantees: ValueError naming the first structural difference when the graphs differ;
    full tensors compared where both kept them, else summaries; NaN equals NaN.

    Example:
        >>> w = torch.ones(3, requires_grad=True)
        >>> def run(k):
        ...     loss = (w * k).sum()
        ...     with aw.record(loss) as rec:
        ...         loss.backward()
        ...     return rec
        >>> aw.compare_recordings(run(2.0), run(2.0)), aw.compare_recordings(run(2.0), run(5.0))
        ([], ['n1:0'])
    """
    if not isinstance(a, Recording) or not isinstance(b, Recording):
        raise TypeError(
            f"compare_recordings takes two Recordings (from aw.record or aw.load_recording), got "
            f"{type(a).__name__} and {type(b).__name__}"
        )
    diff = structure_difference(a, b)
    if diff is not None:
        raise ValueError(f"the recordings are of different graphs: {diff}")
    out: list[str] = []
    sa_all, sb_all = a.edge_summaries(), b.edge_summaries()
    for e in a.graph.edges:
        eid = e.id
        ta, tb = a.edge_grad(eid), b.edge_grad(eid)
        if ta is not None and tb is not None:
            if _tensors_differ(ta, tb, rtol, atol):
                out.append(eid)
            continue
        sa, sb = sa_all.get(eid), sb_all.get(eid)
        if sa is None or sb is None:
            if (sa is None) != (sb is None):
                out.append(eid)
            continue
        if summaries_differ(sa, sb, rtol, atol):
            out.append(eid)
    return out
