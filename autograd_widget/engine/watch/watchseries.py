"""The numbers behind `Watch.series` and `Watch.table` (watch/watch.py): per watched step, the
gradient norm of an edge, a parameter or a module, from the arrays the steps of one structure
keep.

A module's norm is the norm of its parameters' gradients together (the root of the sum of their
squares); "" is the whole model: the leaves that are parameters (the model's, those named in
`params=`, any `nn.Parameter`), never an input tensor's gradient.

The bands (`module_bands`): min/max of many module series at once, at the resolution of the
pixels, what the timeline of a long run (view/timeline.py) draws and refines as the user
zooms.

Why: a run of 100,000 watched steps cannot be drawn step by step (nor held as a steps x
modules table: 100,000 x 240 modules is 190 MB of float64); a timeline `bins` columns wide
needs, per module and column, the smallest and largest norm of the steps the column covers (a
spike is never averaged away). A stored watch (storedwatch.py) gives its parameters'
norms one tile at a time (`param_blocks`), summed up the module tree (`tree_norms`): the bands
are reduced block by block, memory bounded by a block and the bands; a watch held in memory
gives its `table`.

Guarantees: a column's min/max are exactly the min/max of `Watch.table`'s values (divided by
the loss scale; both sum a module's squares up the module tree, `tree_norms`, in the same
order) over the watched steps it covers (NaN = absent, an Inf kept, NaN for a column
with none); the columns cut `start <= step < stop` as `Watch.overview` does, or, where the
range holds no more watched steps than `bins`, one column per watched step, or, for a stored
watch whose range of at least 16,384 watched steps starts and ends on its tiles and spans at
least `bins` / 2 of them, columns of whole tiles read from the tiles' module summaries
(storedwatch.py's `tile_bands`, awmodules.py: the same min/max, float32-rounded); `low`/`high`: per
module its smallest and largest finite non-zero value over the steps read and where (the
first such step), what view/timeline.py's "moved" list ranks.

Example:
    >>> w = aw.watch(params={"x": x}); loss = (x * 3).sum()
    >>> with w.step(loss):
    ...     loss.backward()
    >>> table_of(w.structures[0], w.records, ["x", "n1:0", ""]).tolist()
    [[3.0, 3.0, 3.0]]
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import compress
from typing import Any

import numpy as np

from .structure import Structure
from .trainstep import TrainingStep

__all__ = ["Bands", "ModuleTree", "column_cuts", "merged_blocks", "module_bands", "module_norms",
           "module_tree", "overview_of", "table_of", "tree_norms"]  # fmt: skip

#: Watched steps per block of a stored watch's bands (a few MB of parameter norms).
_BLOCK = 2048


def table_of(s: Structure, steps: list[TrainingStep], keys: list[str]) -> np.ndarray:
    """The (steps x keys) norms of steps sharing structure `s` (unscaled); module columns all
    at once: per step, the root of the summed squared norms of each module's parameters. NaN
    where a step has no gradient for the key; a module with a NaN parameter gradient stays NaN.

    Linear in steps x (parameters + modules): each parameter is matched to the modules holding
    it by its dotted prefixes (dict look-ups), never by testing every parameter against every
    module; each parameter's square is summed once into its innermost module and each module's
    sum into its enclosing one (`tree_norms`, by blocks of steps: temporaries of a few MB).

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
        tree = module_tree(s, list(mod_cols))
        bad = [st.nonfinite_params for st in steps]
        for a in range(0, len(steps), _BLOCK):  # temporaries of a few MB
            b = min(len(steps), a + _BLOCK)
            norms = tree_norms(tree, params[a:b, tree.need].T, bad[a:b])
            for j, m in enumerate(tree.order):
                out[a:b, mod_cols[m]] = norms[j][:, None]
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
    tree = module_tree(s, modules)
    if tree.order:
        norms = tree_norms(tree, np.asarray(params, dtype=np.float64)[:, tree.need].T, bad)
        for j, name in enumerate(tree.order):
            out[:, [c for c, m in enumerate(modules) if m == name]] = norms[j][:, None]
    return out


@dataclass(frozen=True)
class ModuleTree:
    """The module norms of one structure as a tree (`tree_norms`): each parameter summed once
    into its innermost module, each module's sum added into its innermost enclosing one,
    deepest first; "" (the model: its leaves that are parameters) summed apart. `order` the
    module paths holding a parameter, `need` the parameters read (sorted), `names` theirs;
    `owned`: (positions in `need` sorted by owner, their segment starts, the owners' rows);
    `levels`: per depth, deepest first, (children's rows sorted by parent, segment starts, the
    parents' rows); `root`: ("" 's row or -1, the positions it sums); `mods_of`: per position
    in `need`, the rows of the modules holding it.

    Example:
        >>> ModuleTree.__dataclass_fields__.keys() >= {"order", "levels"}
        True
    """

    order: list[str]
    need: np.ndarray
    names: list[str]
    owned: tuple[np.ndarray, np.ndarray, np.ndarray]
    levels: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
    root: tuple[int, np.ndarray]
    mods_of: dict[int, list[int]]


def _segments(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the order sorting `keys`, the starts of its runs of equal keys, those keys)."""
    srt = np.argsort(keys, kind="stable")
    k = keys[srt]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]]) if k.size else np.zeros(0, np.intp)
    return srt, starts, k[starts]


def module_tree(s: Structure, modules: list[str]) -> ModuleTree:
    """The `ModuleTree` of module paths `modules` over structure `s`.

    Example:
        >>> w = aw.watch(model); out = model(torch.ones(2, 4)).sum()
        >>> with w.step(out):
        ...     out.backward()
        >>> module_tree(w.structures[0], ["", "0", "2"]).order
        ['', '0', '2']
    """
    pk, pj, order = _module_pairs(s, list(dict.fromkeys(modules)))
    need = np.unique(pk)
    pos = np.searchsorted(need, pk)
    row = {m: r for r, m in enumerate(order)}
    mods_of: dict[int, list[int]] = {}
    for k, j in zip(pos.tolist(), pj.tolist()):
        mods_of.setdefault(k, []).append(j)

    def inner(name: str) -> int:  # the innermost module of `order` (not "") enclosing `name`
        cut = name.rfind(".")
        while cut > 0:
            r = row.get(name[:cut], -1)
            if r >= 0 and name[:cut]:
                return r
            cut = name.rfind(".", 0, cut)
        return -1

    names = [s.params[k] for k in need.tolist()]
    owner = np.array([inner(n) for n in names], dtype=np.intp)
    mine = np.flatnonzero(owner >= 0)
    srt, starts, rows = _segments(owner[mine])
    levels = []
    parent = np.array([inner(m) if m else -1 for m in order], dtype=np.intp)
    depth = np.array([m.count(".") + 1 if m else 0 for m in order], dtype=np.intp)
    for d in sorted(set(depth[parent >= 0].tolist()), reverse=True):
        kids = np.flatnonzero((depth == d) & (parent >= 0))
        ksrt, kstarts, parents = _segments(parent[kids])
        levels.append((kids[ksrt], kstarts, parents))
    root = row.get("", -1)
    return ModuleTree(order, need, names, (mine[srt], starts, rows), levels,
                      (root, pos[pj == root] if root >= 0 else np.zeros(0, np.intp)),
                      mods_of)  # fmt: skip


def tree_norms(tree: ModuleTree, params: np.ndarray,
               bad: list[tuple[str, ...]] | dict[int, tuple[str, ...]]) -> np.ndarray:
    """The (`tree.order` x steps) module norms from the (`tree.need` x steps) parameter norms
    `params` (float64, or float32 as a file's columns hold them; both module- or
    parameter-major: each sum adds whole rows of steps) and each step's non-finite parameter
    names `bad` (a list, one per step, or a dict of the steps that have some): the root of
    the summed squares of each module's parameters (NaN where no parameter of the module had a
    gradient, and where one had a NaN gradient), in the tree's order, per step on its own (so
    the same bits whatever the block of steps: `table_of` and a stored watch's tiles agree
    exactly); linear in steps x (parameters + modules), where summing (parameter, module)
    pairs is steps x parameters x depth.

    Example:
        >>> w = aw.watch(model); out = model(torch.ones(2, 4)).sum()
        >>> with w.step(out):
        ...     out.backward()
        >>> tree = module_tree(w.structures[0], ["", "0", "2"])
        >>> norms = {"0.weight": 3.0, "0.bias": 4.0}  # every other parameter's gradient: 0
        >>> params = np.array([[norms.get(name, 0.0)] for name in tree.names])
        >>> tree_norms(tree, params, [()]).tolist()
        [[5.0], [5.0], [0.0]]
    """
    params = np.asarray(params)
    if params.dtype != np.float32:  # float32 (a file's columns) is squared in float64 below
        params = params.astype(np.float64, copy=False)
    bad = bad if isinstance(bad, dict) else {c: bad[c] for c in compress(range(len(bad)), bad)}
    m, n = len(tree.order), params.shape[1]
    cols, starts, rows = tree.owned
    if m == 1 and len(starts) == 1 and not tree.levels and tree.root[0] < 0:
        out = _one_module(params, cols)  # one module (series of a small one): row by row
        return _nan_where_bad(tree, params, bad, out)
    present = ~np.isnan(params)
    sq = np.square(params, dtype=np.float64)  # the float64 value's square, as p * p
    np.fmax(sq, 0.0, out=sq)  # an absent (NaN) gradient adds 0.0
    total = np.zeros((m, n))
    seen = np.zeros((m, n), dtype=bool)
    if cols.size and n:
        total[rows] = _runs(sq, starts, np.add, cols)
        seen[rows] = _runs(present, starts, np.logical_or, cols)
    for kids, kstarts, parents in tree.levels:
        if n:
            total[parents] += _runs(total, kstarts, np.add, kids)
            seen[parents] |= _runs(seen, kstarts, np.logical_or, kids)
    root, mine = tree.root
    if root >= 0:
        total[root] = sq[mine].sum(axis=0)
        seen[root] = present[mine].any(axis=0)
    return _nan_where_bad(tree, params, bad, np.where(seen, np.sqrt(total), np.nan))


def _one_module(params: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """`tree_norms` of a tree of one module owning parameters `cols` (rows of `params`): the
    same sums in the same order (0.0 + the first square is that square), a row at a time, so
    no (parameters x steps) float64 temporaries. Summed first as if no value were absent (two
    passes per row: a NaN spreads to its step's sum), then the steps whose sum is NaN summed
    again the NaN-aware way (`_masked_sums`): only those steps, or every step where they are
    many (a parameter absent from most steps): the same bits either way."""
    n = params.shape[1]
    total, sq = np.empty((1, n)), np.empty((1, n))
    for i, k in enumerate(cols.tolist()):
        np.copyto(total if i == 0 else sq, params[k : k + 1])  # float64: exact, then squared
        if i:
            np.multiply(sq, sq, out=sq)
            total += sq
        else:
            np.multiply(total, total, out=total)
    if not len(cols):
        total.fill(np.nan)  # no parameter: nothing seen
    gap = np.flatnonzero(np.isnan(total[0]))
    if 4 * len(gap) > n:
        return _masked_sums(params, cols)
    np.sqrt(total, out=total)
    if len(gap):
        total[:, gap] = _masked_sums(params[:, gap], cols)
    return total


def _masked_sums(params: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """`_one_module`, an absent (NaN) value adding 0.0, NaN where every one is absent: the
    squares of rows `cols` added in order, into buffers made once."""
    n = params.shape[1]
    total, sq = np.zeros((1, n)), np.empty((1, n))
    none, nan = np.ones((1, n), dtype=bool), np.empty((1, n), dtype=bool)
    for k in cols.tolist():
        row = params[k : k + 1]
        np.square(row, out=sq, dtype=np.float64)
        np.fmax(sq, 0.0, out=sq)
        total += sq
        np.logical_and(none, np.isnan(row, out=nan), out=none)
    np.sqrt(total, out=total)
    total[none] = np.nan
    return total


def _nan_where_bad(tree: ModuleTree, params: np.ndarray, bad: dict[int, tuple[str, ...]],
                   out: np.ndarray) -> np.ndarray:  # fmt: skip
    """`out` with NaN for the modules holding a parameter whose gradient was NaN (flagged in
    `bad`, present in no column: not an absent one) at that step."""
    by_name: dict[str, list[int]] | None = None
    for c, names in bad.items():  # a NaN gradient (not an absent one) stays NaN
        if not names:
            continue
        by_name = by_name if by_name is not None else _by_name(tree.names)
        for k in (k for name in set(names) for k in by_name.get(name, ())):
            if np.isnan(params[k, c]):
                out[tree.mods_of.get(k, []), c] = np.nan
    return out


def _runs(a: np.ndarray, starts: np.ndarray, op: np.ufunc, rows: np.ndarray) -> np.ndarray:
    """`op.reduceat(a[rows], starts, axis=0)`, the rows of each run taken in order, computed
    per run length (a few whole-array operations, `a[rows]` never copied whole): numpy's
    reduceat along the first axis pays a call per element column and is ~10x slower on
    (parameters x steps) blocks."""
    lens = np.diff(np.r_[starts, len(rows)])
    out = np.empty((len(starts), *a.shape[1:]), dtype=a.dtype)
    for size in np.unique(lens).tolist():
        sel = np.flatnonzero(lens == size)
        first = starts[sel]
        if len(sel) == 1:  # one run (a small module's parameters): rows as views, no copies
            k = rows[int(first[0]) : int(first[0]) + size].tolist()
            acc = a[k[0] : k[0] + 1].copy()
            for r in k[1:]:
                op(acc, a[r : r + 1], out=acc)
            out[sel] = acc
            continue
        acc = a[rows[first]]
        for j in range(1, size):
            op(acc, a[rows[first + j]], out=acc)
        out[sel] = acc
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


def _by_name(names: list[str]) -> dict[str, list[int]]:
    by_name: dict[str, list[int]] = {}
    for k, name in enumerate(names):
        by_name.setdefault(name, []).append(k)
    return by_name


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


@dataclass
class Bands:
    """Per module (rows, in the order asked) and column: `min`, `max` (float64); per column
    its first step (`columns`, int64) and where it stops (`cut`: watched positions, len
    columns + 1); per module `low`, `high` (its smallest / largest finite non-zero value,
    NaN for none), `low_at`, `high_at` (their watched positions, -1 for none), `n_ok` (how
    many such values).

    Example:
        >>> sorted(Bands.__dataclass_fields__)[:3]
        ['columns', 'cut', 'high']
    """

    columns: np.ndarray
    cut: np.ndarray
    min: np.ndarray
    max: np.ndarray
    low: np.ndarray
    high: np.ndarray
    low_at: np.ndarray
    high_at: np.ndarray
    n_ok: np.ndarray


def column_cuts(steps: np.ndarray, start: int | None, stop: int | None, bins: int
                ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(the first step of each column, the watched positions cutting them: len + 1) for the
    watched steps `steps` over `start <= step < stop`: one column per watched step where the
    range holds at most `bins` of them, else `bins` equal step ranges (as `Watch.overview`).
    ValueError for bins < 1 or an empty range.

    Example:
        >>> column_cuts(np.arange(0, 40, 10), None, None, 8)[0].tolist()
        [0, 10, 20, 30]
        >>> first, cut = column_cuts(np.arange(0, 40, 10), 0, 40, 2)
        >>> first.tolist(), cut.tolist()
        ([0, 20], [0, 2, 4])
    """
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
        raise ValueError(f"bins must be an int >= 1 (the pixels to fill), got {bins!r}")
    steps = np.asarray(steps, dtype=np.int64)
    lo = int(steps[0]) if start is None and len(steps) else int(start or 0)
    hi = int(steps[-1]) + 1 if stop is None and len(steps) else int(stop or 0)
    if hi <= lo:
        raise ValueError(f"the step range {lo}..{hi} is empty: pass start < stop")
    a, b = np.searchsorted(steps, [lo, hi])
    if b - a <= bins:
        return steps[a:b].copy(), np.arange(a, b + 1, dtype=np.int64)
    edges = np.ceil(lo + np.arange(bins + 1, dtype=np.float64) * (hi - lo) / bins)
    return edges[:-1].astype(np.int64), np.searchsorted(steps, edges.astype(np.int64))


class _Reduce:
    """The bands being reduced, block of watched steps by block."""

    def __init__(self, n: int, cut: np.ndarray) -> None:
        self.cut = cut
        cols = max(0, len(cut) - 1)
        self.min = np.full((n, cols), np.nan)
        self.max = np.full((n, cols), np.nan)
        self.low = np.full(n, np.inf)
        self.high = np.full(n, -np.inf)
        self.low_at = np.full(n, -1, dtype=np.int64)
        self.high_at = np.full(n, -1, dtype=np.int64)
        self.n_ok = np.zeros(n, dtype=np.int64)

    def add(self, w0: int, values: np.ndarray, rows: np.ndarray) -> None:
        """Values (`rows` x steps: module-major, so each reduction runs along memory) of the
        watched steps from position `w0` on."""
        pos = w0 + np.arange(values.shape[1], dtype=np.int64)
        keep = (pos >= self.cut[0]) & (pos < self.cut[-1])
        if not keep.any():
            return
        v, pos = (values, pos) if keep.all() else (values[:, keep], pos[keep])
        ok = np.isfinite(v) & (v > 0)
        self.n_ok[rows] += ok.sum(axis=1)
        k = np.arange(len(rows))
        for best, at, fill, pick, better in (
            (self.low, self.low_at, np.inf, np.argmin, np.less),
            (self.high, self.high_at, -np.inf, np.argmax, np.greater),
        ):
            masked = np.where(ok, v, fill)
            j = pick(masked, axis=1)
            m, where = masked[k, j], pos[j]
            old, old_at = best[rows], at[rows]
            win = ok[k, j] & (better(m, old) | ((m == old) & ((old_at < 0) | (where < old_at))))
            best[rows[win]], at[rows[win]] = m[win], where[win]
        col = np.searchsorted(self.cut, pos, side="right") - 1
        first = np.flatnonzero(np.r_[True, col[1:] != col[:-1]])
        grid = np.ix_(rows, col[first])
        self.min[grid] = np.fmin(self.min[grid], np.fmin.reduceat(v, first, axis=1))
        self.max[grid] = np.fmax(self.max[grid], np.fmax.reduceat(v, first, axis=1))

    def bands(self, columns: np.ndarray) -> Bands:
        none = self.n_ok == 0
        low, high = self.low.copy(), self.high.copy()
        low[none] = high[none] = np.nan
        return Bands(columns, self.cut, self.min, self.max, low, high, self.low_at,
                     self.high_at, self.n_ok)  # fmt: skip


def _blocks(w: Any, modules: list[str], a: int, b: int
            ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:  # fmt: skip
    """(first watched position, values (rows x steps), their rows in `modules`) per block of
    watched steps
    in positions a..b: a stored watch's tiles (its parameters' columns, summed up the module
    tree: watchseries.py's `tree_norms`), else its whole `table` once."""
    if not hasattr(w, "param_blocks"):
        yield 0, np.ascontiguousarray(w.table(modules).T), np.arange(len(modules))
        return
    row_of = {m: r for r, m in enumerate(modules)}
    scale = np.nan_to_num(np.asarray(w.scales, dtype=np.float64), nan=1.0)
    scale[scale == 0] = 1.0
    for sid, s in enumerate(w.structures):
        tree = module_tree(s, modules)
        if not tree.order:
            continue
        rows = np.array([row_of[m] for m in tree.order], dtype=np.intp)
        for w0, params, bad in merged_blocks(w.param_blocks(sid, tree.need, a, b)):
            norms = tree_norms(tree, params, bad)
            yield w0, norms / scale[None, w0 : w0 + norms.shape[1]], rows


def merged_blocks(blocks: Iterator[tuple[int, np.ndarray, list[tuple[str, ...]]]]
            ) -> Iterator[tuple[int, np.ndarray, list[tuple[str, ...]]]]:  # fmt: skip
    """Consecutive tiles joined into blocks of about `_BLOCK` steps: numpy's cost per call
    (one per module segment) is then paid per block, not per tile of 128 steps.

    Example:
        >>> blocks = iter([(0, np.ones((1, 2)), [(), ()]), (2, np.ones((1, 1)), [()])])
        >>> [(w0, p.shape) for w0, p, _ in merged_blocks(blocks)]
        [(0, (1, 3))]
    """
    parts: list[tuple[int, np.ndarray, list[tuple[str, ...]]]] = []
    size = 0
    for w0, params, bad in blocks:
        if parts and (w0 != parts[-1][0] + parts[-1][1].shape[1] or size >= _BLOCK):
            yield _join(parts)
            parts, size = [], 0
        parts.append((w0, params, bad))
        size += params.shape[1]
    if parts:
        yield _join(parts)


def _join(parts: list[tuple[int, np.ndarray, list[tuple[str, ...]]]]
          ) -> tuple[int, np.ndarray, list[tuple[str, ...]]]:  # fmt: skip
    bad: list[tuple[str, ...]] = []
    for p in parts:
        bad += p[2]
    return parts[0][0], np.concatenate([p[1] for p in parts], axis=1), bad


def module_bands(w: Any, modules: list[str], start: int | None, stop: int | None,
                 bins: int) -> Bands:  # fmt: skip
    """The `Bands` of module paths `modules` of watch `w` over `start <= step < stop` (None:
    the whole run) in at most `bins` columns (see the module docstring; `column_cuts`).

    Example:
        >>> w = aw.watch(params={"x": x}); loss = (x * 3).sum()
        >>> with w.step(loss):
        ...     loss.backward()
        >>> module_bands(w, [""], 0, 1, 4).min.tolist()
        [[3.0]]
    """
    steps = np.asarray(w.steps, dtype=np.int64)
    columns, cut = column_cuts(steps, start, stop, bins)
    tiled = getattr(w, "tile_bands", None)  # a stored watch: its tiles' module summaries
    got = tiled(modules, int(cut[0]), int(cut[-1]), bins) if tiled and modules else None
    if got is not None:
        return got
    acc = _Reduce(len(modules), cut)
    if modules and cut[-1] > cut[0]:
        for w0, values, rows in _blocks(w, modules, int(cut[0]), int(cut[-1])):
            acc.add(w0, values, rows)
    return acc.bands(columns)
