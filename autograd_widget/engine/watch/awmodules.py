"""The module records of a format 2.0 `.awwatch` file (awtile.py): per structure its module
paths (`MODS`), per sealed tile a summary of every module's norm and the columns of the large
modules (`MSUM`), written by the writer as the run goes, read by a stored watch's timeline and
`series` instead of summing the module tree over every parameter's column.

Why: a module's norm is the root of the summed squares of its parameters' norms
(watchseries.py's `tree_norms`); computed at reading time, opening the timeline of a
100,000-step GPT-2-sized run read 352 parameter columns of 782 tiles and summed a 267-module
tree over them (~2 s), and `series("")` did the same for one module (~0.5 s). A column per
module would cost 4 bytes per module per step (+0.5 byte per edge-step there: past the 4.5
bytes budget of issue 39), so the writer stores, once per tile (computed at its seal from its
columns: nothing added to a step's own cost):
- per module a `SUMMARY` (22 bytes) of its norm divided by the step's loss scale (what
  `Watch.series` gives): min and max over present values (NaN = absent, an Inf kept), the
  smallest and largest finite non-zero value and their columns, how many such values: what
  the timeline's min/max bands and its "moved" list need (watchseries.py's `Bands`);
- the unscaled float32 column of each module holding at least `BIG` parameters (for GPT-2:
  the model, `transformer`, `transformer.h`): `series` of such a module reads one column, a
  smaller module's reads its (< `BIG`) parameters' columns.

Layout: `MODS`: `<I` (structure) then a JSON list of module paths (those of the structure
holding a parameter, `module_tree`'s order), written right after the structure's `STRC`.
`MSUM`: right after its tile's `SUMS`: `<QIII` (the tile's byte, modules M, filled columns n,
stored columns B), M `SUMMARY` rows, B u32 module rows, B u32 crc32 (one per stored column),
then B x n float32. Its record checksum covers all but the columns (each checked by its own
crc32 when read, as a tile's). The writer leaves a tile's `MSUM` out where float32 cannot hold
one of its norms (a finite one overflowing, a non-zero one underflowing): such a tile, a tile
of a file written before these records, and the open tile of a killed writer are computed from
their parameters' columns, as before (the same numbers, float32-rounded alike).

Guarantees (reading): an `MSUM` is used only when it is whole, its checksum matches, it names
its own tile, its counts match the tile's and its structure's `MODS`, and its fields lie in
range, and it ends before its tile's `SEAL` (a tile never sealed is computed from its columns);
an `MSUM` that fails any of these, a `MODS` that is not a list of distinct module paths
of its structure each holding a parameter, raise ValueError naming the file and the byte.

Example:
    >>> SUMMARY.itemsize, BIG
    (22, 32)
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np

from ...util.fields import strict_loads
from .structure import Structure
from .watchseries import ModuleTree, module_tree, tree_norms

__all__ = ["BIG", "MSUM_HEAD", "SUMMARY", "ModuleIndex", "TileModules", "big_rows", "crc_part",
           "mods_record", "msum_cap", "msum_record", "read_mods", "summarize",
           "tile_norms"]  # fmt: skip

#: A module of at least this many parameters gets its column stored in each tile's `MSUM`.
BIG = 32
#: An `MSUM` record's header: tile byte, modules, filled columns, stored columns.
MSUM_HEAD = struct.Struct("<QIII")
#: One module's summary over a tile (its norm divided by the loss scale): min, max over present
#: values; low, high: smallest, largest finite non-zero value (NaN for none), their columns and
#: how many such values (n_ok).
SUMMARY = np.dtype([("min", "<f4"), ("max", "<f4"), ("low", "<f4"), ("high", "<f4"),
                    ("n_ok", "<u2"), ("low_at", "<u2"), ("high_at", "<u2")])  # fmt: skip
_REC = struct.Struct("<4sQ")
_U32 = struct.Struct("<I")


def _record(tag: bytes, payload: bytes, checked: int) -> bytes:
    crc = zlib.crc32(memoryview(payload)[:checked])
    return tag + struct.pack("<Q", len(payload)) + payload + _U32.pack(crc)


def mods_record(sid: int, tree: ModuleTree) -> bytes:
    """The `MODS` record of structure `sid` (its module paths: `tree.order`).

    Example:
        >>> mods_record(0, module_tree(Structure(g), ["", "0"]))[:4]
        b'MODS'
    """
    payload = _U32.pack(sid) + json.dumps(tree.order, separators=(",", ":")).encode("utf-8")
    return _record(b"MODS", payload, len(payload))


def big_rows(s: Structure, tree: ModuleTree) -> np.ndarray:
    """The rows of `tree.order` holding at least `BIG` parameters of `s` ("": its parameter
    leaves; another path: the parameters named under it).

    Example:
        >>> big_rows(Structure(g), module_tree(Structure(g), [""])).tolist()
        []
    """
    count = dict.fromkeys(tree.order, 0)
    for name in s.params:
        cut = name.find(".")
        while cut > 0:
            if name[:cut] in count:
                count[name[:cut]] += 1
            cut = name.find(".", cut + 1)
    if "" in count:
        count[""] = len(tree.root[1])
    return np.array([r for r, m in enumerate(tree.order) if count[m] >= BIG], dtype=np.intp)


def tile_norms(s: Structure, tree: ModuleTree, cols: np.ndarray,
               exc: list[tuple[int, int, float]] | np.ndarray, bad: list[tuple[str, ...]]
               ) -> np.ndarray:  # fmt: skip
    """The (`tree.order` x n) float64 module norms of a tile's n filled columns: its edge
    columns `cols` (edges x n, float32), its parameter exceptions `exc` ((column, parameter,
    value)) and each step's non-finite parameter names `bad`: exactly what a stored watch
    computes from the tile (storedwatch.py's `param_blocks`, then `tree_norms`).

    Example:
        >>> s = Structure(g); tree = module_tree(s, [""])
        >>> tree.order, tile_norms(s, tree, np.zeros((3, 0), "<f4"), [], []).shape
        ([''], (1, 0))
    """
    n = cols.shape[1]
    pe = np.asarray(s.param_edge, dtype=np.intp)[tree.need]
    has = np.flatnonzero(pe >= 0)
    params = np.full((len(tree.need), n), np.nan, dtype=np.float64)
    params[has] = cols[pe[has]]
    where = np.full(len(s.params), -1, dtype=np.intp)
    where[tree.need] = np.arange(len(tree.need))
    for col, k, v in (exc.tolist() if isinstance(exc, np.ndarray) else exc):
        if where[k] >= 0:
            params[where[k], col] = np.float32(v)
    return tree_norms(tree, params, bad)


def summarize(values: np.ndarray) -> np.ndarray:
    """The `SUMMARY` of each row of `values` (modules x steps, float64), float32-rounded.

    Example:
        >>> s = summarize(np.array([[2.0, np.nan, 0.0, np.inf, 1.0]]))
        >>> [float(s[f][0]) for f in ("min", "max", "low", "high")], int(s["low_at"][0])
        ([0.0, inf, 1.0, 2.0], 4)
    """
    m, n = values.shape
    out = np.zeros(m, dtype=SUMMARY)
    if not n:
        for f in ("min", "max", "low", "high"):
            out[f] = np.nan
        return out
    with np.errstate(all="ignore"):
        out["min"] = np.fmin.reduce(values, axis=1)
        out["max"] = np.fmax.reduce(values, axis=1)
    ok = np.isfinite(values) & (values > 0)
    out["n_ok"] = ok.sum(axis=1)
    k = np.arange(m)
    for name, fill, pick in (("low", np.inf, np.argmin), ("high", -np.inf, np.argmax)):
        masked = np.where(ok, values, fill)
        at = pick(masked, axis=1)
        out[name] = np.where(out["n_ok"] > 0, masked[k, at], np.nan)
        out[f"{name}_at"] = np.where(out["n_ok"] > 0, at, 0)
    return out


def _fits(values: np.ndarray) -> bool:
    """Whether float32 keeps every value's kind: finite stays finite, non-zero non-zero."""
    with np.errstate(over="ignore", under="ignore"):
        v32 = values.astype(np.float32)
    fin = np.isfinite(values)
    return not bool(np.any(fin & ~np.isfinite(v32)) or np.any(fin & (values != 0) & (v32 == 0)))


def msum_record(tile_at: int, norms: np.ndarray, scale: np.ndarray, big: np.ndarray
                ) -> bytes | None:  # fmt: skip
    """The `MSUM` record of the tile at byte `tile_at` from its module norms (`tile_norms`),
    each step's loss scale (`scale`: 1 where none) and the stored rows `big`; None where
    float32 cannot hold one of them (the reader then computes the tile from its columns).

    Example:
        >>> rec = msum_record(8, np.array([[3.0, 4.0]]), np.ones(2), np.array([0]))
        >>> rec[:4], len(rec) == 12 + MSUM_HEAD.size + SUMMARY.itemsize + 8 + 8 + 4
        (b'MSUM', True)
    """
    scaled = norms / scale[None, :]
    if not (_fits(scaled) and _fits(norms[big])):
        return None
    m, n = norms.shape
    cols = np.ascontiguousarray(norms[big], dtype="<f4")
    crcs = np.fromiter((zlib.crc32(row.tobytes()) for row in cols), dtype="<u4", count=len(big))
    head = (MSUM_HEAD.pack(tile_at, m, n, len(big)) + summarize(scaled).tobytes()
            + np.asarray(big, dtype="<u4").tobytes() + crcs.tobytes())  # fmt: skip
    return _record(b"MSUM", head + cols.tobytes(), len(head))


def msum_cap(items: int, t_max: int) -> int:
    """The largest `MSUM` payload a structure of `items` items may have (tiles of <= `t_max`
    steps).

    Example:
        >>> msum_cap(0, 8)
        20
    """
    return MSUM_HEAD.size + (SUMMARY.itemsize + 8 + 4 * t_max) * items


def crc_part(tag: bytes, body: memoryview) -> memoryview:
    """The part of a record's payload its checksum covers: an `MSUM`'s all but its columns
    (the whole payload where its header is cut), any other record's whole payload (a `TILE`'s
    is awstore.py's to cut).

    Example:
        >>> bytes(crc_part(b"SUMS", memoryview(b"abc")))
        b'abc'
    """
    if tag != b"MSUM" or len(body) < MSUM_HEAD.size:
        return body
    _, m, _, nb = MSUM_HEAD.unpack_from(body)
    return body[: MSUM_HEAD.size + SUMMARY.itemsize * m + 8 * nb]


def read_mods(body: memoryview, n_structures: int) -> tuple[int, list[str]]:
    """(structure, module paths) of a `MODS` record (its shape checked; `ModuleIndex` checks
    the paths against the structure when first used).

    Example:
        >>> read_mods(memoryview(b"\\x00\\x00\\x00\\x00[\\"\\"]"), 1)
        (0, [''])
    """
    if len(body) < _U32.size:
        raise ValueError("a MODS record shorter than its structure number")
    (sid,) = _U32.unpack_from(body)
    if sid >= n_structures:
        raise ValueError(f"module paths of structure {sid}: only {n_structures} read")
    paths = strict_loads(body[_U32.size :])
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths) \
            or len(set(paths)) != len(paths):  # fmt: skip
        raise ValueError("the module paths are not a list of distinct strings")
    return int(sid), paths


class TileModules:
    """One tile's `MSUM`, checked: `summary` (modules x `SUMMARY`), `big` ({module row: its
    place among the stored columns}), and the stored columns' reads (`column`).

    Example:
        >>> TileModules.__name__
        'TileModules'
    """

    def __init__(self, mm: Any, at: int, values_at: int, n: int, summary: np.ndarray,
                 big: np.ndarray, crcs: np.ndarray) -> None:  # fmt: skip
        self.mm, self.at, self.values_at, self.n = mm, at, values_at, n
        self.summary, self.crcs = summary, crcs
        self.big = {int(r): j for j, r in enumerate(big.tolist())}
        self.checked: set[int] = set()

    def column(self, row: int) -> np.ndarray:
        """Module row `row`'s unscaled float32 norms (its crc32 checked once).

        Example:
            >>> TileModules.column.__name__
            'column'
        """
        j = self.big[row]
        at = self.values_at + 4 * j * self.n
        values = np.frombuffer(self.mm, dtype="<f4", count=self.n, offset=at)
        if j not in self.checked:
            if zlib.crc32(values.tobytes()) != int(self.crcs[j]):
                raise ValueError(f"the module column {row} of the MSUM record at byte {self.at} "
                                 "does not match its checksum (the file was damaged)")
            self.checked.add(j)
        return values


class ModuleIndex:
    """A stored watch's module records (awstore.py's `Store` with its `modules` from `MODS`):
    per structure its tree (checked against the structure once), per tile its `MSUM` (found
    right after the tile's `SUMS`, checked, cached; None where the tile has none); damage
    raised as `unreadable(path, why)` (awwatch.py's, which names the file).

    Example:
        >>> ModuleIndex.__name__
        'ModuleIndex'
    """

    def __init__(self, store: Any, unreadable: Callable[[Any, str], ValueError]) -> None:
        self.store, self.unreadable = store, unreadable
        self._trees: dict[int, ModuleTree] = {}
        self._tiles: dict[int, TileModules | None] = {}

    def tree(self, sid: int) -> ModuleTree | None:
        """Structure `sid`'s module tree as its `MODS` lists it (None without one).

        Example:
            >>> ModuleIndex.tree.__name__
            'tree'
        """
        paths = self.store.modules.get(sid)
        if paths is None:
            return None
        tree = self._trees.get(sid)
        if tree is None:
            s = self.store.structures[sid]
            known = set(s.modules())
            tree = module_tree(s, [p for p in paths if p in known])
            if tree.order != paths:
                raise self._bad(f"its module paths of structure {sid} are not the structure's "
                                "modules holding a parameter, in order")
            self._trees[sid] = tree
        return tree

    def _bad(self, why: str) -> ValueError:
        return self.unreadable(self.store.path, why)

    def tile(self, t: int) -> TileModules | None:
        """Tile number `t`'s checked `MSUM` (None where it has none).

        Example:
            >>> ModuleIndex.tile.__name__
            'tile'
        """
        if t in self._tiles:
            return self._tiles[t]
        got = self._tiles[t] = self._read(t)
        return got

    def _read(self, t: int) -> TileModules | None:
        store, tile = self.store, self.store.tiles[t]
        mm, size = store.mm, store.size
        (seal,) = struct.unpack_from("<Q", mm, tile.base - 8)  # the TILE's pointer to its SEAL
        if not tile.sums or not tile.n or not seal or seal > size:
            return None  # a tile never sealed (a killed writer): computed from the columns
        at = tile.sums + _REC.size + _REC.unpack_from(mm, tile.sums)[1] + _U32.size
        if at + _REC.size > seal:
            return None
        tag, length = _REC.unpack_from(mm, at)
        if tag != b"MSUM":
            return None  # a file written before these records: computed from the columns
        tree = self.tree(tile.sid)
        if tree is None:
            raise self._bad(f"the MSUM record at byte {at} belongs to a structure without "
                            "module paths (MODS)")
        m = len(tree.order)
        if length > min(msum_cap(m, tile.t), seal - at - _REC.size - _U32.size) \
                or length < MSUM_HEAD.size:  # fmt: skip
            raise self._bad(f"the MSUM record at byte {at} claims {length} bytes, past its tile's "
                            "index (SEAL) or what its tile's modules can hold")
        body = memoryview(mm)[at + _REC.size : at + _REC.size + length]
        tile_at, mm_, n, nb = MSUM_HEAD.unpack_from(body)
        prefix = MSUM_HEAD.size + SUMMARY.itemsize * m + 8 * nb
        why = ""
        if (tile_at, mm_, n) != (tile.at, m, tile.n) or nb > m:
            why = (f"it names tile {tile_at}, {mm_} modules, {n} columns, {nb} stored; its "
                   f"tile at byte {tile.at} has {tile.n} columns of {m} modules")
        elif length != prefix + 4 * nb * n:
            why = f"its {length} bytes are not what its counts declare ({prefix + 4 * nb * n})"
        elif zlib.crc32(body[:prefix]) != _U32.unpack_from(mm, at + _REC.size + length)[0]:
            why = "its checksum does not match (the file was damaged)"
        if why:
            raise self._bad(f"the MSUM record at byte {at} is malformed ({why})")
        summary = np.frombuffer(body, dtype=SUMMARY, count=m, offset=MSUM_HEAD.size).copy()
        off = MSUM_HEAD.size + SUMMARY.itemsize * m
        big = np.frombuffer(body, dtype="<u4", count=nb, offset=off).astype(np.intp)
        crcs = np.frombuffer(body, dtype="<u4", count=nb, offset=off + 4 * nb).copy()
        ok = summary["n_ok"] > 0
        if np.any(summary["n_ok"] > n) or np.any(ok & ((summary["low_at"] >= n)
                                                       | (summary["high_at"] >= n))) \
                or np.any(np.diff(big) <= 0) or (nb and (big[0] < 0 or big[-1] >= m)):  # fmt: skip
            raise self._bad(f"the MSUM record at byte {at} is malformed (a count, a column or "
                            "a module row out of range)")
        return TileModules(mm, at, at + _REC.size + prefix, n, summary, big, crcs)
