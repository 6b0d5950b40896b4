"""A module's calls within one step: a recurrent cell run through time, seen in the graph.

An `nn.LSTMCell` (or a GRU unrolled by hand, or any module) called T times in one forward
leaves T copies of its ops in the backward graph, all stamped with the same module path: the
graph records no call number. The calls are told apart by the forward order: the module's own
nodes, sorted by autograd sequence number (the order the forward created them), repeat one
call's pattern T times: the same op names, and the same gaps in sequence numbers (the ops the
call creates in between, and the ops between two calls, are the same each time through the
loop). The smallest period of that (name, gap) sequence that divides it at least twice gives
the calls; call t is the t-th period, t = 0 the first in the forward. AccumulateGrad nodes
(the parameters, shared by every call) belong to no call.

A module whose pattern does not repeat exactly (a call that takes another branch) is read as
one call: its ops stay one row each, as for any module, never a wrong split.

A fused recurrent node (`nn.LSTM`'s `MkldnnRnnLayerBackward0` on CPU, `CudnnRnnBackward0` on
CUDA, the fused cells' `ThnnFused...Backward0`) runs the whole sequence in one node: autograd
holds no gradient per time step there, so it stays one row (`fused`), and the timeline says so.

Pure (graph records only), linear in the module's nodes per candidate period.

Example:
    >>> w = aw.watch(model); out = model(torch.ones(2, 4)).sum()
    >>> with w.step(out):
    ...     out.backward()
    >>> module_calls(w.structures, ["0"])
    {'0': (1, False)}
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..engine.watch.structure import Structure

__all__ = ["FUSED_NOTE", "calls_of", "is_fused", "module_calls"]

#: The op names of fused recurrent kernels: one node for a whole sequence (or one cell step).
_FUSED = re.compile(r"(rnn|lstm|gru).*backward", re.IGNORECASE)

#: What the timeline says of a fused recurrent node.
FUSED_NOTE = (
    "{op} is torch's fused recurrent kernel: it runs the whole sequence in one node, so "
    "autograd holds no gradient per time step and it stays one row; to see the time steps, "
    "unroll the loop (nn.LSTMCell / nn.GRUCell called once per step)"
)


def is_fused(name: str) -> bool:
    """Whether an op name is a fused recurrent kernel's backward (one node for many steps).

    Example:
        >>> is_fused("MkldnnRnnLayerBackward0"), is_fused("AddmmBackward0")
        (True, False)
    """
    return name != "AccumulateGrad" and bool(_FUSED.search(name))


def calls_of(s: Structure, module: str) -> tuple[int, dict[int, int]]:
    """(T, node index -> call number) of `module`'s own nodes in structure `s` (see the module
    docstring): T == 1 and an empty map when its ops do not repeat.

    Example:
        >>> w = aw.watch(model); out = model(torch.ones(2, 4)).sum()
        >>> with w.step(out):
        ...     out.backward()
        >>> calls_of(w.structures[0], "0")
        (1, {})
    """
    own = [(node.sequence_nr, i, node.name)
           for i, node in enumerate(s.graph.nodes.values())
           if node.module == module and node.name != "AccumulateGrad"]  # fmt: skip
    own.sort()
    n = len(own)
    if n < 2:
        return 1, {}
    names = [x[2] for x in own]
    gaps = [own[k + 1][0] - own[k][0] for k in range(n - 1)]
    for p in range(1, n // 2 + 1):
        if n % p:
            continue
        if all(names[k] == names[k + p] for k in range(n - p)) and all(
            gaps[k] == gaps[k + p] for k in range(n - 1 - p)
        ):
            return n // p, {i: k // p for k, (_, i, _) in enumerate(own)}
    return 1, {}


def module_calls(structures: Sequence[Structure], modules: list[str]
                 ) -> dict[str, tuple[int, bool]]:  # fmt: skip
    """Per module: (the most calls per step over the structures, whether its own ops hold a
    fused recurrent node).

    Example:
        >>> module_calls([], ["", "fc"])
        {'': (1, False), 'fc': (1, False)}
    """
    out = dict.fromkeys(modules, (1, False))
    have = set(modules)
    for s in structures:
        by_module: dict[str, list[str]] = {}
        for node in s.graph.nodes.values():
            if node.module in have:
                by_module.setdefault(node.module, []).append(node.name)
        for m, names in by_module.items():
            t, fused = out[m]
            if len(names) - names.count("AccumulateGrad") >= 2:
                t = max(t, calls_of(s, m)[0])
            out[m] = (t, fused or any(is_fused(x) for x in names))
    return out
