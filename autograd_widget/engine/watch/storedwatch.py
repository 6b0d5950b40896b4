"""The reading of a read-only `Watch` over a format 2.0 `.awwatch` file (awtile.py), lazily:
`StoredReading`, which watch.py's `StoredWatch` (what `aw.load_watch` returns for such a file)
puts before `Watch`'s own reading.

Why: opening a run of 100,000 steps must cost about what opening one of 1,000 does. The file's
index (awstore.py) gives every step's number, loss, scale and flags at once; a step's own
record (its order, births, warnings) is read when asked for (`record`, `recording`); a series
is read from its columns (`series`, `table`: one key's values of every tile, checked against
their crc32), never by visiting every step.

Guarantees: the same answers as the `Watch` the run kept in memory (tests compare every key's
series, every step's record); `records` is a sequence whose items are read on access, so code
that walks it still works (slowly: each item is a read); the file stays mapped read-only while
the watch lives.

Example:
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with aw.watch(params={"x": x}, path=d + "/w.awwatch") as w:
    ...         loss = (x * 3).sum()
    ...         with w.step(loss):
    ...             loss.backward()
    ...     back = aw.load_watch(d + "/w.awwatch")
    ...     type(back).__name__, back.steps, back.series("n1:0").tolist()
    ('StoredWatch', [0], [3.0])
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, overload

import numpy as np

from ..diagnose.origins import Origin
from . import awwatch
from .awcolumns import Spans, gather
from .awmodules import BIG, SUMMARY, ModuleIndex, big_rows, summarize
from .awstore import Store, open_store
from .awtile import ROW_FLAGS
from .trainstep import TrainingStep
from .watchfirst import first_nonfinite
from .watchseries import Bands, ModuleTree, merged_blocks, module_tree, tree_norms

__all__ = ["TILED_FROM", "IndexedStep", "StepRecords", "StoredReading"]

#: A range of at least this many watched steps is drawn in columns of whole tiles, from their
#: module summaries (`StoredReading.tile_bands`); a shorter one from its columns, in equal step
#: ranges (watchseries.py's `column_cuts`: a few tenths of a second at most).
TILED_FROM = 16384
_EDGE_ID = re.compile(r"n\d+:\d+")  # an edge key, as `Watch.series` takes it


_HEAVY = ("order", "edge_norms", "param_norms", "slot_norms", "births",
          "warnings")  # what only the step's own record holds
#: A step flagged neither non-finite nor healed had no NaN/Inf count at all (awtile.flags_of).
_ANY_NONFINITE = ROW_FLAGS["nonfinite"] | ROW_FLAGS["healed"]


class IndexedStep(TrainingStep):
    """A `TrainingStep` made from the file's index (number, watched, loss, scale, flags): what
    the index says is answered at once (`finite`, `failure is None`, `structure`); the rest
    (its order, norms, births, warnings, the non-finite parameters' names, the failure's text)
    is read from its record the first time it is asked for, then kept.

    Example:
        >>> IndexedStep.__mro__[1].__name__
        'TrainingStep'
    """

    def __init__(self, store: Store, k: int, sid: int | None) -> None:
        row = store.rows[k]
        self.__dict__.update(step=int(row["step"]), watched=bool(row["col"] >= 0),
                             loss=float(row["loss"]), _store=store, _k=k, _sid=sid,
                             _flags=int(row["flags"]), _full=None)  # fmt: skip
        scale = float(row["scale"])
        self.__dict__["scale"] = None if scale != scale else scale

    def _read(self) -> TrainingStep:
        full: TrainingStep | None = self.__dict__["_full"]
        if full is None:
            full = self.__dict__["_full"] = self.__dict__["_store"].step(self.__dict__["_k"])
        return full

    @property
    def nonfinite_params(self) -> tuple[str, ...]:  # type: ignore[override]
        """The non-finite parameters' names: () at once when the index flags none.

        Example:
            >>> IndexedStep.nonfinite_params.__doc__ is not None
            True
        """
        if not self.__dict__["_flags"] & ROW_FLAGS["nonfinite"]:
            return ()
        return self._read().nonfinite_params

    @property
    def failure(self) -> tuple[str, str, int | None] | None:  # type: ignore[override]
        """The failure: None at once when the index flags none.

        Example:
            >>> IndexedStep.failure.__doc__ is not None
            True
        """
        if not self.__dict__["_flags"] & ROW_FLAGS["failed"]:
            return None
        return self._read().failure

    @property
    def structure(self) -> int | None:  # type: ignore[override]
        """The structure of a watched step (from its tile), None for another.

        Example:
            >>> IndexedStep.structure.__doc__ is not None
            True
        """
        sid: int | None = self.__dict__["_sid"]
        return sid

    @property
    def nonfinite(self) -> dict[int, tuple[int, int]]:  # type: ignore[override]
        """The edges' NaN/Inf counts: {} at once when the index flags no NaN/Inf.

        Example:
            >>> IndexedStep.nonfinite.__doc__ is not None
            True
        """
        if not self.__dict__["_flags"] & _ANY_NONFINITE:
            return {}
        return self._read().nonfinite

    @property
    def slot_nonfinite(self) -> dict[int, tuple[int, int]]:  # type: ignore[override]
        """The slots' NaN/Inf counts: {} at once when the index flags no NaN/Inf.

        Example:
            >>> IndexedStep.slot_nonfinite.__doc__ is not None
            True
        """
        if not self.__dict__["_flags"] & _ANY_NONFINITE:
            return {}
        return self._read().slot_nonfinite


def _heavy(name: str) -> property:
    def get(self: IndexedStep) -> Any:
        return getattr(self._read(), name)

    return property(get)


for _name in _HEAVY:
    setattr(IndexedStep, _name, _heavy(_name))


class StepRecords(Sequence[TrainingStep]):
    """Every step of a stored watch, each `TrainingStep` read from the file when accessed.

    Example:
        >>> StepRecords.__name__
        'StepRecords'
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        sids = np.array([t.sid for t in store.tiles] + [-1], dtype=np.int64)
        self.sids = sids[store.row_tile].tolist()  # a row of no tile: -1 (never watched)

    def __len__(self) -> int:
        return len(self.store.rows)

    @overload
    def __getitem__(self, k: int) -> TrainingStep: ...
    @overload
    def __getitem__(self, k: slice) -> list[TrainingStep]: ...
    def __getitem__(self, k: int | slice) -> TrainingStep | list[TrainingStep]:
        if isinstance(k, slice):
            return [self._at(i) for i in range(*k.indices(len(self)))]
        n = len(self)
        if not -n <= k < n:
            raise IndexError(f"step record {k} out of range ({n} steps)")
        return self._at(k % n)

    def _at(self, k: int) -> IndexedStep:
        sid = self.sids[k]
        watched = self.store.rows["col"][k] >= 0
        return IndexedStep(self.store, k, sid if watched and sid >= 0 else None)

    def __iter__(self) -> Iterator[TrainingStep]:
        return (self._at(i) for i in range(len(self)))

    def __eq__(self, other: object) -> bool:  # as the list of its steps (each read)
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<StepRecords {len(self)} steps, each read from {self.store.path} on access>"


class StoredReading:
    """`Watch`'s reading methods over a format 2.0 file's index and columns (see the module
    docstring); a mixin: watch.py's `StoredWatch(StoredReading, Watch)` is the watch.

    Example:
        >>> from autograd_widget.engine.watch.watch import StoredWatch
        >>> StoredWatch.open(Path("missing.awwatch"))
        Traceback (most recent call last):
        FileNotFoundError: no watch at missing.awwatch
    """

    store: Store
    mods: ModuleIndex
    structures: list[Any]
    records: Any
    meta: dict[str, Any]
    warnings: list[str]
    read_only: bool
    closed: bool
    path: Path | None
    _index: dict[int, int]
    _count: int
    _sids: np.ndarray
    keys: Any
    series: Any
    recording: Any
    record: Any

    @classmethod
    def open(cls, path: Path, *, max_structure_bytes: int = awwatch.MAX_STRUCTURE
             ) -> Any:  # fmt: skip
        """The watch of the format 2.0 file at `path` (awstore.py's `open_store` checks it).

        Example:
            >>> StoredReading.open.__name__
            'open'
        """
        store = open_store(path, max_structure_bytes=max_structure_bytes)
        w = cls(every=store.head["every"])  # type: ignore[call-arg]
        w.store = store
        w.mods = ModuleIndex(store, awwatch.unreadable)
        w.meta = dict(store.head["meta"])
        w.structures = store.structures
        w.records = StepRecords(store)
        w._index = store.index
        steps = store.rows["step"]
        w._count = int(steps[-1]) + 1 if len(steps) else 0
        w.warnings = list(store.warnings)
        w.read_only = w.closed = True
        w.path = path
        tiles = store.tiles
        sid_of_tile = np.array([t.sid for t in tiles], dtype=np.int64)
        rt = store.row_tile[store.watched_rows]
        w._sids = sid_of_tile[rt] if len(rt) else np.zeros(0, dtype=np.int64)
        return w

    def _flagged(self, flag: str) -> np.ndarray:
        rows = self.store.rows
        return np.asarray(rows["step"][(rows["flags"] & ROW_FLAGS[flag]) != 0])

    @property
    def steps(self) -> list[int]:
        """The watched step numbers, in order (from the index, listed once: a new list each
        time, so a caller's edits stay its own)."""
        got = self.__dict__.get("_steps")
        if got is None:
            got = self.__dict__["_steps"] = self.store.steps().tolist()
        return list(got)

    @property
    def nonfinite_steps(self) -> list[int]:
        """Every step in which a parameter gradient came out non-finite (from the index)."""
        return list(self._flagged("nonfinite").astype(int).tolist())

    @property
    def expected_steps(self) -> list[int]:
        """The non-finite steps a loss scaler explains (from the index)."""
        return list(self._flagged("expected").astype(int).tolist())

    @property
    def scales(self) -> np.ndarray:
        """The loss scaler's factor per watched step (NaN where there was none; from the
        index, gathered once: a read-only watch's index never changes)."""
        got = self.__dict__.get("_scales")
        if got is None:
            got = self.__dict__["_scales"] = self.store.rows["scale"][
                self.store.watched_rows].astype(np.float64)  # fmt: skip
        return np.array(got)

    def losses(self) -> np.ndarray:
        """The loss of every step, in step order (from the index).

        Example:
            >>> StoredReading.losses.__name__
            'losses'
        """
        return self.store.rows["loss"].astype(np.float64)

    def first_nonfinite(self, *, expected: bool = True, healed: bool = True
                        ) -> tuple[int, Origin | None] | None:  # fmt: skip
        """As `Watch.first_nonfinite`, reading only the steps the index flags.

        Example:
            >>> StoredReading.first_nonfinite.__name__
            'first_nonfinite'
        """
        rows = self.store.rows
        hit = np.flatnonzero(rows["flags"] & (ROW_FLAGS["nonfinite"] | ROW_FLAGS["healed"]))
        view = _Flagged(self, [self.store.step(int(k)) for k in hit])
        return first_nonfinite(view, expected=expected, healed=healed)  # type: ignore[arg-type]

    def table(self, keys: Sequence[str]) -> np.ndarray:
        """`series` of several keys at once, from the file's columns (see `Watch.table`).

        Example:
            >>> StoredReading.table.__name__
            'table'
        """
        keys = [str(k) for k in keys]
        cached = self.__dict__.get("_known")
        if cached is None:  # a read-only watch: its keys never change
            known = self.keys()
            cached = self.__dict__["_known"] = (known, {*known["params"], *known["modules"]})
        known, names = cached
        for k in keys:
            if not (k in names or _EDGE_ID.fullmatch(k)):
                raise KeyError(
                    f"{k!r} is not an edge id, a parameter or a module of this watch; e.g. "
                    f"{(known['params'][:2] + known['modules'][1:3] + known['edges'][:2])}"
                )
        out = np.full((len(self._sids), len(keys)), np.nan, dtype=np.float64)
        for sid, s in enumerate(self.structures):
            mask = self._steps_of(sid)
            if mask is None:
                continue
            mods: dict[str, list[int]] = {}
            for col, key in enumerate(keys):
                e = s.edge_index.get(key)
                p = s.param_index.get(key)
                if e is not None:
                    out[mask, col] = self.store.series_of(sid, "edge", e)[mask]
                elif p is not None:
                    out[mask, col] = self.store.series_of(sid, "param", p)[mask]
                else:
                    mods.setdefault(key, []).append(col)
            if mods:
                self._modules(sid, mask, mods, out)
        scale = self.__dict__.get("_divisor")
        if scale is None:  # a read-only watch: its scales never change
            scale = np.nan_to_num(self.scales, nan=1.0)
            scale[scale == 0] = 1.0
            scale = self.__dict__["_divisor"] = scale[:, None]
        return np.asarray(out / scale)

    def _steps_of(self, sid: int) -> slice | np.ndarray | None:
        """The watched steps of structure `sid` as an index of them: every one (a slice, no
        copy), a mask, or None (none); kept (a read-only watch)."""
        masks = self.__dict__.setdefault("_masks", {})
        if sid not in masks:
            mask = self._sids == sid
            masks[sid] = slice(None) if mask.all() else mask if mask.any() else None
        return masks[sid]  # type: ignore[no-any-return]

    def _modules(self, sid: int, mask: slice | np.ndarray, mods: dict[str, list[int]],
                 out: np.ndarray) -> None:  # fmt: skip
        tree = self.mods.tree(sid)
        big = self.__dict__.setdefault("_big", {}).get(sid)
        if big is None:  # the modules whose columns the writer stores (awmodules.py)
            big = self.__dict__["_big"][sid] = {} if tree is None else {
                tree.order[r]: r for r in big_rows(self.structures[sid], tree).tolist()}
        for m in [m for m in mods if m in big]:
            got = self._stored_series(sid, big[m])
            if got is not None:
                for col in mods.pop(m):
                    out[mask, col] = got[mask]
        small = self._small_tree(sid, [m for m in mods if m not in big])
        if small.order and len(small.need) < BIG:  # a few parameters: read in one pass
            norms = self._few_params(sid, small)
            for j, m in enumerate(small.order):
                for col in mods.pop(m):
                    out[mask, col] = norms[j][mask]
        for group in ([m for m in mods if m in big], [m for m in mods if m not in big]):
            for w0, norms, order in self.module_blocks(sid, group) if group else ():
                rows = slice(w0, w0 + len(norms))
                for j, m in enumerate(order):
                    for col in mods[m]:
                        out[rows, col] = norms[:, j]

    def _small_tree(self, sid: int, modules: list[str]) -> ModuleTree:
        """`module_tree` of `modules` (those read from their parameters), kept for the next
        read of the same modules (a read-only watch's structures never change)."""
        trees = self.__dict__.setdefault("_trees", {})
        key = (sid, tuple(modules))
        if key not in trees:
            if len(trees) >= 256:  # bounded: a caller walking every module keeps a few
                trees.clear()
            trees[key] = module_tree(self.structures[sid], modules)
        return trees[key]  # type: ignore[no-any-return]

    def _few_params(self, sid: int, tree: ModuleTree) -> np.ndarray:
        """The (`tree.order` x watched steps) unscaled norms of modules holding few parameters
        (`tree.need`): their columns of every tile read in one gather (`Store.params_of`), the
        tree summed once over every step."""
        params = self.store.params_of(sid, tree.need.tolist())  # float32
        bad = self.__dict__.get("_bad")
        if bad is None:  # only the flagged steps (no list per step), kept: a read-only watch
            rows = self.store.watched_rows
            flagged = np.flatnonzero(self.store.rows["flags"][rows] & ROW_FLAGS["nonfinite"])
            bad = self.__dict__["_bad"] = {
                c: self.store.step(int(rows[c])).nonfinite_params for c in flagged.tolist()}
        return tree_norms(tree, params, bad)

    def _stored_series(self, sid: int, row: int) -> np.ndarray | None:
        """Module row `row`'s unscaled norms per watched step from every tile's stored column
        (NaN on steps of another structure); None where a tile of `sid` has none."""
        spans = self.__dict__.setdefault("_spans", {}).get((sid, row))
        if spans is None:  # each tile's column checked once, then where it lies kept
            found = []
            for t, tile in enumerate(self.store.tiles):
                if tile.sid == sid and tile.n:
                    tm = self.mods.tile(t)
                    if tm is None or row not in tm.big:
                        return None
                    tm.column(row)
                    found.append((tm.values_at + 4 * tm.big[row] * tile.n, tile.n, tile.w0))
            at, n, w0 = (np.array(c, dtype=np.int64).reshape(-1) for c in zip(*found)) if found \
                else (np.zeros(0, np.int64),) * 3  # fmt: skip
            spans = self.__dict__["_spans"][(sid, row)] = Spans(at, n, n, w0)
        total = len(self.store.watched_rows)  # the columns of every tile: one gather
        got: np.ndarray = gather(self.store.mm, spans, np.zeros(1, np.int64), total)[0]
        return got.astype(np.float64)

    def module_blocks(self, sid: int, modules: list[str], lo: int = 0, hi: int | None = None
                      ) -> Iterator[tuple[int, np.ndarray, list[str]]]:  # fmt: skip
        """Per tile of structure `sid` holding watched positions in `lo..hi` (None: all):
        (its first place among the watched steps, the (its steps x modules) float64 norms of
        the module paths `modules` that hold a parameter of it (unscaled), those paths): what
        `table` gives for them, tile by tile: read from the tile's stored module columns
        (awmodules.py's `MSUM`) where it holds every one of them, else summed from its
        parameters' columns (`param_blocks`, consecutive such tiles in one pass).

        Example:
            >>> StoredReading.module_blocks.__name__
            'module_blocks'
        """
        tree = module_tree(self.structures[sid], modules)
        if not tree.order:
            return
        mine = self.mods.tree(sid)
        rows = None if mine is None else [mine.order.index(m) for m in tree.order]
        run: list[int] = []  # watched positions of tiles to sum from their parameters
        for t, tile in enumerate(self.store.tiles):
            if tile.sid != sid or not tile.n or tile.w0 + tile.n <= lo or \
                    (hi is not None and tile.w0 >= hi):
                continue
            tm = None if rows is None else self.mods.tile(t)
            if tm is None or not all(r in tm.big for r in rows):
                run = [run[0] if run else tile.w0, tile.w0 + tile.n]
                continue
            yield from self._summed(sid, tree, run)
            run = []
            yield tile.w0, np.stack([tm.column(r) for r in rows], axis=1).astype(np.float64), \
                tree.order
        yield from self._summed(sid, tree, run)

    def _summed(self, sid: int, tree: ModuleTree, run: list[int]
                ) -> Iterator[tuple[int, np.ndarray, list[str]]]:  # fmt: skip
        for w0, params, bad in merged_blocks(self.param_blocks(sid, tree.need, *run)) if run \
                else ():  # fmt: skip
            yield w0, tree_norms(tree, params, bad).T, tree.order

    def tile_bands(self, modules: list[str], a: int, b: int, bins: int) -> Bands | None:
        """The `Bands` of module paths `modules` over watched positions `a..b` in columns of
        whole tiles, from each tile's stored summaries (awmodules.py's `MSUM`; a tile without
        one summed from its parameters' columns): the level that fits `bins` columns. None
        (the caller reads the columns) where `a..b` does not start and end on tiles, holds
        fewer than `TILED_FROM` watched steps or no more than `bins` (one column each), or
        fewer than `bins` / 2 tiles (a coarser level than the pixels ask for).

        Example:
            >>> StoredReading.tile_bands.__name__
            'tile_bands'
        """
        tiles = [t for t in range(len(self.store.tiles)) if self.store.tiles[t].n]
        w0 = np.array([self.store.tiles[t].w0 for t in tiles], dtype=np.int64)
        first, last = np.searchsorted(w0, [a, b])
        picked = tiles[first:last]
        if b - a <= bins or b - a < TILED_FROM or 2 * len(picked) < bins or not picked \
                or w0[first] != a or self.store.tiles[picked[-1]].w0 + \
                self.store.tiles[picked[-1]].n != b:  # fmt: skip
            return None
        s = np.zeros((len(picked), len(modules)), dtype=SUMMARY)
        for f in ("min", "max", "low", "high"):
            s[f] = np.nan
        for j, summary, rows in self._tile_summaries(picked, modules):
            s[j, rows] = summary
        n = min(bins, len(picked))
        starts = np.flatnonzero(np.r_[True, np.diff(np.arange(len(picked)) * n // len(picked))
                                      > 0])  # fmt: skip
        pos = w0[first:last]
        with np.errstate(all="ignore"):
            lo = np.fmin.reduceat(s["min"].astype(np.float64), starts, axis=0).T
            hi = np.fmax.reduceat(s["max"].astype(np.float64), starts, axis=0).T
        n_ok = s["n_ok"].sum(axis=0, dtype=np.int64)
        k = np.arange(len(modules))
        best: list[np.ndarray] = []
        for name, fill, pick in (("low", np.inf, np.min), ("high", -np.inf, np.max)):
            v = np.where(s["n_ok"] > 0, s[name].astype(np.float64), fill)
            got = pick(v, axis=0) if len(v) else np.full(len(modules), fill)
            at = np.argmax(v == got[None, :], axis=0)  # the first tile holding it
            none = n_ok == 0
            best += [np.where(none, np.nan, got),
                     np.where(none, -1, pos[at] + s[f"{name}_at"][at, k].astype(np.int64))]
        steps = self.store.steps()
        return Bands(steps[pos[starts]], np.r_[pos[starts], b].astype(np.int64), lo, hi,
                     best[0], best[2], best[1], best[3], n_ok)  # fmt: skip

    def _tile_summaries(self, picked: list[int], modules: list[str]
                        ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:  # fmt: skip
        """(place in `picked`, summaries, their rows in `modules`) per tile of `picked`:
        stored, or computed from its parameters' columns (divided by the loss scale)."""
        row_of = {m: r for r, m in enumerate(modules)}
        scale = np.nan_to_num(np.asarray(self.scales, dtype=np.float64), nan=1.0)
        scale[scale == 0] = 1.0
        where = {t: j for j, t in enumerate(picked)}
        todo: dict[int, list[int]] = {}
        hits: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # structure -> (its rows, ours)
        for j, t in enumerate(picked):
            sid = self.store.tiles[t].sid
            tm, mine = self.mods.tile(t), self.mods.tree(sid)
            if tm is None or mine is None:
                todo.setdefault(sid, []).append(t)
                continue
            hit = hits.get(sid)
            if hit is None:
                pairs = [(r, row_of[m]) for r, m in enumerate(mine.order) if m in row_of]
                hit = hits[sid] = (np.array([r for r, _ in pairs], np.intp),
                                   np.array([c for _, c in pairs], np.intp))  # fmt: skip
            yield j, tm.summary[hit[0]], hit[1]
        by_w0 = {self.store.tiles[t].w0: t for ts in todo.values() for t in ts}
        for sid, ts in todo.items():
            tree = module_tree(self.structures[sid], modules)
            if not tree.order:
                continue
            rows = np.array([row_of[m] for m in tree.order], dtype=np.intp)
            for lo, hi in _runs_of(self.store.tiles, ts):
                for w0, params, bad in self.param_blocks(sid, tree.need, lo, hi):
                    norms = tree_norms(tree, params, bad) / scale[None, w0 : w0 + len(bad)]
                    yield where[by_w0[w0]], summarize(norms), rows

    def param_blocks(self, sid: int, need: np.ndarray, lo: int = 0, hi: int | None = None
                     ) -> Iterator[tuple[int, np.ndarray, list[tuple[str, ...]]]]:  # fmt: skip
        """Per tile of structure `sid` holding watched positions in `lo..hi` (None: all):
        (its first place among the watched steps, the (`need` x its steps) float64 norms of
        parameters `need`, parameter-major as the tile stores them (unscaled, NaN where
        absent), each step's non-finite parameters' names). One pass over the tiles reading
        only those parameters' columns (each checked against its crc32 once, then its pages
        released: `Store.release`): memory bounded by a tile, never a (steps x parameters)
        matrix; a step's own record is read only where the index flags it non-finite.

        Example:
            >>> StoredReading.param_blocks.__name__
            'param_blocks'
        """
        s = self.structures[sid]
        pe = np.asarray(s.param_edge, dtype=np.intp)[need]
        has = np.flatnonzero(pe >= 0)
        keys = pe[has]
        where = np.full(len(s.params), -1, dtype=np.intp)
        where[need] = np.arange(len(need))
        rows, flags = self.store.watched_rows, self.store.rows["flags"]
        for tile in self.store.tiles:
            if tile.sid != sid or not tile.n or tile.w0 + tile.n <= lo or \
                    (hi is not None and tile.w0 >= hi):
                continue
            params = np.full((len(need), tile.n), np.nan, dtype=np.float64)
            if keys.size:
                params[has] = self.store.block(tile, keys)
                self.store.release(tile)
            if len(tile.exc):
                j = where[tile.exc["param"]]
                hit = j >= 0
                params[j[hit], tile.exc["col"][hit]] = tile.exc["value"][hit]
            mine = rows[tile.w0 : tile.w0 + tile.n]
            bad: list[tuple[str, ...]] = [()] * tile.n
            for c in np.flatnonzero(flags[mine] & ROW_FLAGS["nonfinite"]).tolist():
                bad[c] = self.store.step(int(mine[c])).nonfinite_params
            yield tile.w0, params, bad


def _runs_of(tiles: list[Any], picked: list[int]) -> list[tuple[int, int]]:
    """The watched-position ranges of runs of consecutive tiles among `picked` (in order)."""
    out: list[tuple[int, int]] = []
    for t in picked:
        lo, hi = tiles[t].w0, tiles[t].w0 + tiles[t].n
        if out and out[-1][1] == lo:
            out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


class _Flagged:
    """What watchfirst.py reads of a watch, over the flagged steps only."""

    def __init__(self, w: StoredReading, records: list[TrainingStep]) -> None:
        self.records, self.structures = records, w.structures
        self.recording, self.record = w.recording, w.record
