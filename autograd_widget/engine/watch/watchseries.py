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

__all__ = ["module_norms", "overview_of", "table_of"]

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
            _module_norms(out, params, pk, pj, [mod_cols[m] for m in order],
                          [st.nonfinite_params for st in steps], s)  # fmt: skip
    return out


def module_norms(s: Structure, params: np.ndarray, bad: list[tuple[str, ...]],
                 modules: list[str]) -> np.ndarray:  # fmt: skip
    """The (steps x modules) norms of module paths `modules` from the (steps x parameters)
    norms `params` of steps sharing structure `s` and each step's non-finite parameter names
    `bad` (what `table_of` computes for module keys, from columns: a watch read from a file
    of format 2.0 has no `TrainingStep` per step in memory). NaN for a path holding no
    parameter of `s`.

    Example:
        >>> w = aw.watch(params={"x": x}); loss = (x * 3).sum()
        >>> with w.step(loss):
        ...     loss.backward()
        >>> module_norms(w.structures[0], np.array([[3.0]]), [()], [""]).tolist()
        [[3.0]]
    """
    out = np.full((len(params), len(modules)), np.nan, dtype=np.float64)
    pk, pj, order = _module_pairs(s, list(dict.fromkeys(modules)))
    if pk.size:
        cols = [[c for c, m in enumerate(modules) if m == name] for name in order]
        _module_norms(out, np.asarray(params, dtype=np.float64), pk, pj, cols, bad, s)
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
                  cols: list[list[int]], bad_names: list[tuple[str, ...]], s: Structure
                  ) -> None:  # fmt: skip
    """Fill the module columns `cols[j]` of `out`: the (pk, pj) pairs' squared norms summed
    per module (by blocks of steps: the pairs' matrix stays a few MB), NaN where none of its
    parameters had a gradient, and where one of them had a NaN gradient (not an absent one)."""
    starts = np.flatnonzero(np.r_[True, pj[1:] != pj[:-1]])
    present = ~np.isnan(params)
    sq = np.where(present, params * params, 0.0)
    norms = np.empty((len(params), len(cols)))
    block = max(1, _PAIR_BLOCK // max(1, pk.size))
    for a in range(0, len(params), block):
        b = min(len(params), a + block)
        total = np.add.reduceat(sq[a:b, pk], starts, axis=1)
        count = np.add.reduceat(present[a:b, pk].astype(np.int64), starts, axis=1)
        norms[a:b] = np.where(count > 0, np.sqrt(total), np.nan)
    by_name: dict[str, list[int]] = {}
    for k, name in enumerate(s.params):
        by_name.setdefault(name, []).append(k)
    mods_of: dict[int, list[int]] | None = None
    for row, names in enumerate(bad_names):  # a NaN gradient (not an absent one) stays NaN
        if not names:
            continue
        bad = [k for name in set(names) for k in by_name.get(name, ())
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


def overview_of(values: np.ndarray, steps: np.ndarray, start: int | None, stop: int | None,
                bins: int) -> dict[str, np.ndarray]:  # fmt: skip
    """The per-bin summary of a series (`values` per watched step `steps`) over `start <= step
    < stop` cut into `bins` equal step ranges: {"start" (int64 first step of each bin), "min",
    "max", "mean", "count"}. min/max over present values (NaN = absent; an Inf kept), mean over
    the finite ones. ValueError for bins < 1 or an empty range.

    Example:
        >>> o = overview_of(np.array([1.0, 5.0, 2.0, np.nan]), np.arange(4), 0, 4, 2)
        >>> o["min"].tolist(), o["max"].tolist(), o["mean"].tolist(), o["count"].tolist()
        ([1.0, 2.0], [5.0, 2.0], [3.0, 2.0], [2, 1])
    """
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
        raise ValueError(f"bins must be an int >= 1 (the pixels to fill), got {bins!r}")
    lo = int(steps[0]) if start is None and len(steps) else int(start or 0)
    hi = int(steps[-1]) + 1 if stop is None and len(steps) else int(stop or 0)
    if hi <= lo:
        raise ValueError(f"the step range {lo}..{hi} is empty: pass start < stop")
    edges = lo + (np.arange(bins + 1, dtype=np.float64) * (hi - lo) / bins)
    cut = np.searchsorted(steps, np.ceil(edges).astype(np.int64))
    v = np.asarray(values, dtype=np.float64)
    out = {k: np.full(bins, np.nan) for k in ("min", "max", "mean")}
    count = np.zeros(bins, dtype=np.int64)
    for b in range(bins):
        seg = v[cut[b] : cut[b + 1]]
        present = seg[~np.isnan(seg)]
        count[b] = present.size
        if present.size:
            out["min"][b], out["max"][b] = present.min(), present.max()
            fin = present[np.isfinite(present)]
            if fin.size:
                out["mean"][b] = fin.mean()
    return {"start": np.ceil(edges[:-1]).astype(np.int64), **out, "count": count}
