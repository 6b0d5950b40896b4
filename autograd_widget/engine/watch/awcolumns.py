"""A few keys' columns of every tile of one structure of a format 2.0 `.awwatch` file
(awtile.py), read in one vectorised gather: what `Store.series_of` and `Store.params_of`
(awstore.py) give for an edge, a parameter, or the parameters of a small module.

Why: a run of 100,000 steps has 782 tiles of 128 steps; a Python loop over them, one
`np.frombuffer` and one checksum look-up per tile and key, costs tens of milliseconds per
`series()` (issue 39 asks 5 ms). The tiles of one structure hold the same (keys x T) float32
layout, so the wanted rows of every tile are rows of one sliding-window view of the mapped
file's bytes (whatever each tile's byte alignment), taken by one fancy index: one numpy copy,
whatever the number of tiles. Where each tile's columns lie (`Spans`) is computed once per
structure.

Guarantees: the values are the file's bytes, exactly those a loop over the tiles reads (the
same float32 bits, NaN on the watched steps of another structure); each key's column of each
tile that has a `SUMS` record is checked against its crc32 at the first read of that key (a
damaged column is a ValueError then, whatever tile it is in, with awstore.py's message), and
only then taken as checked; a tile filled to less than the others (the last, a killed
writer's open one) is read whole (its unfilled columns lie inside it) and cut.

Example (two tiles of 2 keys x 2 steps, bytes 0 and 16 of a mapped file, here bytes):
    >>> mm = np.arange(8, dtype="<f4").tobytes()
    >>> spans = Spans(np.array([0, 16]), np.array([2, 2]), np.array([2, 2]), np.array([0, 2]))
    >>> gather(mm, spans, np.array([1]), 4).tolist()  # key 1 of each tile
    [[2.0, 3.0, 6.0, 7.0]]
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .awtile import SUMS_HEAD

__all__ = ["Spans", "check_keys", "gather", "spans_of"]

_SUMS_TABLE = struct.calcsize("<4sQ") + SUMS_HEAD.size  # a SUMS record's first key's entry
_U32 = struct.Struct("<I")


@dataclass(frozen=True)
class Spans:
    """Where the filled columns of one structure's tiles lie, one entry per tile holding a
    watched step (in file order): `base` the byte of its first column, `t` its steps per
    column, `n` its filled columns, `w0` its first place among the watched steps; `sums` the
    byte of its SUMS record (0: none, its columns are checked by each step's row crc32) and
    `at` its TILE record's byte (what an error names), both optional for a plain gather.

    Example:
        >>> Spans(np.array([8]), np.array([4]), np.array([2]), np.array([0])).n.tolist()
        [2]
    """

    base: np.ndarray
    t: np.ndarray
    n: np.ndarray
    w0: np.ndarray
    sums: np.ndarray | None = None
    at: np.ndarray | None = None


def spans_of(tiles: list[Any], sid: int) -> Spans:
    """The `Spans` of the tiles (awstore.py's `_Tile`s) of structure `sid` holding a watched
    step.

    Example:
        >>> spans_of([], 0).base.tolist()
        []
    """
    mine = [t for t in tiles if t.sid == sid and t.n]

    def field(name: str) -> np.ndarray:
        return np.array([getattr(t, name) for t in mine], dtype=np.int64)

    return Spans(field("base"), field("t"), field("n"), field("w0"), field("sums"), field("at"))


def check_keys(mm: Any, spans: Spans, keys: list[int], checked: set[int],
               bad: Callable[[str], ValueError]) -> None:  # fmt: skip
    """Check the column of each key of `keys` not in `checked` in every tile of `spans` that
    has a SUMS record against the crc32 it keeps, then add those keys to `checked`; the first
    mismatch raises `bad(why)` (the key stays unchecked).

    Example:
        >>> check_keys(b"", spans_of([], 0), [3], set(), ValueError)
    """
    todo = [k for k in keys if k not in checked]
    if not todo:
        return
    sums = spans.sums if spans.sums is not None else np.zeros_like(spans.base)
    ats = spans.at if spans.at is not None else spans.base
    mv = memoryview(mm)
    tiles = [(int(b), int(t), int(n), int(s), int(a)) for b, t, n, s, a in
             zip(spans.base, spans.t, spans.n, sums, ats) if s]  # fmt: skip
    for key in todo:
        for base, t, n, table, at in tiles:
            start = base + 4 * key * t
            (want,) = _U32.unpack_from(mm, table + _SUMS_TABLE + 16 * key)
            if zlib.crc32(mv[start : start + 4 * n]) != want:
                raise bad(f"the values of key {key} in the tile at byte {at} do not match "
                          "their checksum (the file was damaged)")  # fmt: skip
        checked.add(key)


def gather(mm: Any, spans: Spans, keys: np.ndarray, total: int) -> np.ndarray:
    """The (`keys` x `total` watched steps) float32 values of keys `keys` (rows of each
    tile's columns) from every tile of `spans`, NaN on the steps of no tile of it: a new
    array (or a view of one, never of the file). Unchecked: call `check_keys` first.

    Example:
        >>> gather(b"", spans_of([], 0), np.array([0]), 2).tolist()
        [[nan, nan]]
    """
    keys = np.asarray(keys, dtype=np.int64)
    if not len(spans.n) or not len(keys):
        return np.full((len(keys), total), np.nan, dtype=np.float32)
    width = int(spans.t.max())  # a key's row of a tile of `width` steps: `width` floats,
    same = spans.t == width  # filled or not, all inside the tile: read whole, cut to `n`
    starts = spans.base[:, None] + 4 * spans.t[:, None] * keys[None, :]  # (tiles x keys) bytes
    sel = np.flatnonzero(same)
    rows = np.lib.stride_tricks.sliding_window_view(np.frombuffer(mm, dtype=np.uint8),
                                                    4 * width)  # fmt: skip
    vals = rows[starts[sel].T].view("<f4")  # (keys x tiles x width): one copy, any alignment
    n, w0 = spans.n[sel], spans.w0[sel]
    if len(sel) and w0[0] == 0 and np.all(n[:-1] == width) and np.all(np.diff(w0) == width):
        covered = int(w0[-1] + n[-1])  # full tiles in order from the first step (the usual)
        if covered == total and len(sel) == len(spans.n):
            got: np.ndarray = vals.reshape(len(keys), -1)[:, :total]
            return got  # every step: no other copy
        out = np.full((len(keys), total), np.nan, dtype=np.float32)
        out[:, :covered] = vals.reshape(len(keys), -1)[:, :covered]
    else:
        out = np.full((len(keys), total), np.nan, dtype=np.float32)
        keep = np.arange(width)[None, :] < n[:, None]  # (tiles x width): the filled columns
        out[:, (w0[:, None] + np.arange(width))[keep]] = vals[:, keep]
    for i in np.flatnonzero(~same).tolist():  # a tile of fewer steps: read on its own
        n_i, w0_i = int(spans.n[i]), int(spans.w0[i])
        for j, start in enumerate(starts[i].tolist()):
            out[j, w0_i : w0_i + n_i] = np.frombuffer(mm, dtype="<f4", count=n_i, offset=start)
    return out
