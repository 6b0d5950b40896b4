"""The numbers behind `Watch.series` and `Watch.table` (watch/watch.py): per watched step, the
gradient norm of an edge, a parameter or a module, from the arrays the steps of one structure
keep.

A module's norm is the norm of its parameters' gradients together (the root of the sum of their
squares); "" is the whole model: the leaves that are parameters (the model's, those named in
`params=`, any `nn.Parameter`), never an input tensor's gradient.

Example:
    >>> w = aw.watch(params={"x": x}); loss = (x * 3).sum()
    >>> with w.step(loss):
    ...     loss.backward()
    >>> table_of(w.structures[0], w.records, ["x", "n1:0", ""]).tolist()
    [[3.0, 3.0, 3.0]]
"""

from __future__ import annotations

import numpy as np

from .structure import Structure
from .trainstep import TrainingStep

__all__ = ["table_of"]

#: How many (step, pair) squared norms the module sums hold at once (8 MB of float64).
_PAIR_BLOCK = 1 << 20


def table_of(s: Structure, steps: list[TrainingStep], keys: list[str]) -> np.ndarray:
    """The (steps x keys) norms of steps sharing structure `s` (unscaled); module columns all
    at once: per step, the root of the summed squared norms of each module's parameters. NaN
    where a step has no gradient for the key; a module with a NaN parameter gradient stays NaN.

    Linear in steps x (parameters x their depth): each parameter is matched to the modules
    holding it by its dotted prefixes (dict look-ups), never by testing every parameter against
    every module, and the sums run over those (parameter, module) pairs only (no dense
    parameters x modules matrix).

    Example:
        >>> w = aw.watch(params={"x": x}); loss = (x * y).sum()
        >>> with w.step(loss):
        ...     loss.backward()
        >>> table_of(w.structures[0], w.records, ["", "x", "input 0 []"]).tolist()
        [[3.0, 3.0, 2.0]]
    """
    out = np.full((len(steps), len(keys)), np.nan, dtype=np.float64)
    params = np.stack([st.param_norms for st in steps]).astype(np.float64)  # type: ignore[misc]
    edges = None
    mod_cols: dict[str, list[int]] = {}
    for col, key in enumerate(keys):
        e = s.edge_index.get(key)
        if e is not None:
            if edges is None:
                edges = np.stack([st.edge_norms for st in steps])  # type: ignore[misc]
            out[:, col] = edges[:, e]
            continue
        k = s.param_index.get(key)
        if k is not None:
            out[:, col] = params[:, k]
            continue
        mod_cols.setdefault(key, []).append(col)
    if mod_cols:
        pk, pj, order = _module_pairs(s, list(mod_cols))
        if pk.size:
            _module_norms(out, params, pk, pj, [mod_cols[m] for m in order], steps, s)
    return out


def _module_pairs(s: Structure, wanted: list[str]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(parameter index, module index) pairs, grouped by module, of the `wanted` module paths
    that hold a parameter of `s`, and those paths (in the order of their index). "" holds the
    leaves that are parameters; another path the parameters named under it ("a.b" holds
    "a.b.weight", "a.b.c.bias")."""
    want = set(wanted)
    pairs: dict[str, list[int]] = {}
    if "" in want:
        pairs[""] = [k for k, i in enumerate(s.param_nodes)
                     if s.graph.nodes[f"n{i}"].leaf_kind == "parameter"]  # fmt: skip
    for k, name in enumerate(s.params):
        cut = name.find(".")
        while cut >= 0:  # every proper dotted prefix: the module paths holding `name`
            prefix = name[:cut]
            if prefix in want and prefix:
                pairs.setdefault(prefix, []).append(k)
            cut = name.find(".", cut + 1)
    order = [m for m in wanted if pairs.get(m)]
    pk = np.fromiter((k for m in order for k in pairs[m]), dtype=np.intp)
    pj = np.repeat(np.arange(len(order), dtype=np.intp), [len(pairs[m]) for m in order])
    return pk, pj, order


def _module_norms(out: np.ndarray, params: np.ndarray, pk: np.ndarray, pj: np.ndarray,
                  cols: list[list[int]], steps: list[TrainingStep], s: Structure) -> None:
    """Fill the module columns `cols[j]` of `out`: the (pk, pj) pairs' squared norms summed
    per module (by blocks of steps: the pairs' matrix stays a few MB), NaN where none of its
    parameters had a gradient, and where one of them had a NaN gradient (not an absent one)."""
    starts = np.flatnonzero(np.r_[True, pj[1:] != pj[:-1]])
    present = ~np.isnan(params)
    sq = np.where(present, params * params, 0.0)
    norms = np.empty((len(steps), len(cols)))
    block = max(1, _PAIR_BLOCK // max(1, pk.size))
    for a in range(0, len(steps), block):
        b = min(len(steps), a + block)
        total = np.add.reduceat(sq[a:b, pk], starts, axis=1)
        count = np.add.reduceat(present[a:b, pk].astype(np.int64), starts, axis=1)
        norms[a:b] = np.where(count > 0, np.sqrt(total), np.nan)
    by_name: dict[str, list[int]] = {}
    for k, name in enumerate(s.params):
        by_name.setdefault(name, []).append(k)
    mods_of: dict[int, list[int]] | None = None
    for row, st in enumerate(steps):  # a NaN gradient (not an absent one) stays NaN
        if not st.nonfinite_params:
            continue
        bad = [k for name in set(st.nonfinite_params) for k in by_name.get(name, ())
               if not present[row, k]]  # fmt: skip
        if not bad:
            continue
        if mods_of is None:
            mods_of = {}
            for k, j in zip(pk.tolist(), pj.tolist()):
                mods_of.setdefault(k, []).append(j)
        for k in bad:
            norms[row, mods_of.get(k, [])] = np.nan
    for j, cs in enumerate(cols):
        out[:, cs] = norms[:, j : j + 1]
