"""Reading a format 2.0 `.awwatch` file (awtile.py) lazily: opening reads the head, the
structures and each tile's `SEAL` (its steps' numbers, losses, scales, flags and where their
records are), never a step's own record nor the columns; `series(key)` reads one key's column
of every tile (in one gather: awcolumns.py); `step(k)` reads one step's record when asked for
(module records: awmodules.py).

Why: a run of 100,000 steps must open as fast as one of 1,000 (awtile.py says what format 1.0
costs). The file is mapped read-only (`mmap`): what is read is what is touched.

Guarantees (as awwatch.py's for 1.0): no code from the file runs; every length is checked
against what is left of the file and what a record of its kind may hold before it is read
(a `TILE` exactly what its structure and length declare, a `SEAL` what its counts declare);
checksums; steps strictly increase below 2**31-1; a tile's columns are checked when read
(each key's crc32 against its `SUMS`, each step's row crc32 when its record is read). A
truncated LAST record (a killed writer) is dropped with a warning; the open tile of a killed
writer (no `SEAL`) is read by walking its steps' records; a tile whose pointer to its `SEAL`
is 0 or points anywhere but at its own whole `SEAL` is walked the same way (with a warning
where it pointed somewhere); a `SEAL` disagreeing with the steps walked, a damaged record in
the middle, a malformed field raise ValueError naming the file and the record's byte.

Example:
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     w = aw.watch(params={"x": x}); loss = (x * 3).sum()
    ...     with w.step(loss):
    ...         loss.backward()
    ...     p = w.save(d + "/w.awwatch"); st = open_store(Path(p))
    ...     st.steps().tolist(), st.series_of(0, "edge", 1).tolist()
    ([0], [3.0])
"""

from __future__ import annotations

import mmap
import os
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from ...util.fields import strict_loads
from ...util.regular import open_regular
from ...util.warn import warn_user
from . import awcolumns, awmodules
from . import awwatch as aw1
from .awtile import (
    EXC,
    ORDER_HEAD,
    ROW,
    ROW_FLAGS,
    SEAL_HEAD,
    SUMS_HEAD,
    T_MAX,
    TILE_HEAD,
)
from .structure import Structure
from .trainstep import TrainingStep

__all__ = ["Store", "open_store", "read", "read_head"]

_REC = struct.Struct("<4sQ")
_CRC = struct.Struct("<I")
_U32 = struct.Struct("<I")
_TAGS = (b"HEAD", b"STRC", b"STEP", b"TILE", b"SUMS", b"SEAL", b"ORDR", b"MODS", b"MSUM")


class _Tile:
    """One tile as the index knows it."""

    __slots__ = ("at", "base", "exc", "k", "n", "sid", "sums", "t", "w0")

    def __init__(self, at: int, sid: int, t: int, k: int) -> None:
        self.at, self.sid, self.t, self.k = at, sid, t, k
        self.base = at + 12 + TILE_HEAD.size + 8
        self.n = 0  # filled columns
        self.sums = 0  # the byte of its SUMS record, 0 when none
        self.w0 = 0  # its first column's place among the watched steps
        self.exc = np.zeros(0, dtype=EXC)


class Store:
    """The index of a format 2.0 file, and its lazy reads (see the module docstring).

    Example:
        >>> Store.__name__
        'Store'
    """

    def __init__(self, path: Path, mm: Any, size: int, head: dict[str, Any], pos: int,
                 max_structure: int) -> None:  # fmt: skip
        self.path, self.mm, self.size, self.head = path, mm, size, head
        self.max_structure = max_structure
        self.structures: list[Structure] = []
        self.tiles: list[_Tile] = []
        self.warnings: list[str] = []
        self.modules: dict[int, list[str]] = {}  # structure -> its MODS (awmodules.py)
        self._rows: list[np.ndarray] = []  # ROW arrays, in order
        self._tile_of: list[np.ndarray] = []  # per row: its tile, -1 for none
        self._walked: dict[int, TrainingStep] = {}  # rows read whole while walking
        self._exc: dict[int, list[tuple[int, int, float]]] = {}  # their parameter exceptions
        self._items = 0
        self._last = -1
        self._open(pos)
        rows = np.concatenate(self._rows) if self._rows else np.zeros(0, dtype=ROW)
        self.rows = rows
        self.row_tile = (np.concatenate(self._tile_of) if self._tile_of
                         else np.zeros(0, dtype=np.int32))  # fmt: skip
        self.watched_rows = np.flatnonzero(rows["col"] >= 0)
        self.index = {int(s): k for k, s in enumerate(rows["step"].tolist())}
        w = 0
        for tile in self.tiles:
            tile.w0, w = w, w + tile.n
        self._verified: set[tuple[int, int]] = set()
        self._exc_of: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._spans: dict[int, awcolumns.Spans] = {}  # per structure: where its columns lie
        self._checked: dict[int, set[int]] = {}  # per structure: keys checked in every tile

    # ------------------------------------------------------------------ opening
    def _bad(self, why: str) -> ValueError:
        return aw1.unreadable(self.path, why)

    def _open(self, pos: int) -> None:
        mm, size = self.mm, self.size
        tile: _Tile | None = None  # the tile being walked
        walked: list[tuple[Any, ...]] = []
        while pos < size:
            if pos + _REC.size > size:
                self.warnings.append(aw1.TRUNCATED.format(path=self.path))
                break
            tag, length = _REC.unpack_from(mm, pos)
            if tag not in _TAGS:
                raise self._bad(f"the record at byte {pos} is damaged (its tag {tag!r} is not "
                                "a record's)")  # fmt: skip
            cap = self._cap(tag, tile)
            left = size - pos - _REC.size - _CRC.size
            if length > cap:
                raise self._bad(f"a record claims {length} bytes at byte {pos} (the limit for a "
                                f"{tag.decode()} record here is {cap})")  # fmt: skip
            if length > left:
                self.warnings.append(aw1.TRUNCATED.format(path=self.path))
                break
            body = memoryview(mm)[pos + _REC.size : pos + _REC.size + length]
            checked = body[: TILE_HEAD.size] if tag == b"TILE" else awmodules.crc_part(tag, body)
            if zlib.crc32(checked) != _CRC.unpack_from(mm, pos + _REC.size + length)[0]:
                raise self._bad(f"the checksum of the {tag!r} record at byte {pos} does not "
                                "match (the file was damaged)")  # fmt: skip
            end = pos + _REC.size + length + _CRC.size
            try:
                if tag == b"STRC":
                    self._close_walk(tile, walked)
                    tile = None
                    self._structure(body)
                elif tag == b"TILE":
                    self._close_walk(tile, walked)
                    tile = None
                    tile, jump = self._tile(pos, body)
                    if jump:
                        end, tile = jump, None
                elif tag == b"STEP":
                    st, col, exc = aw1_step(body, self.structures, self._last, tile, self.mm,
                                            self._json_cap())  # fmt: skip
                    self._exc[st.step] = exc
                    self._last = st.step
                    self._walked[st.step] = st
                    walked.append(_row_of(st, pos, col))
                    if st.watched and tile is not None:
                        if col != tile.n:
                            raise ValueError(f"step {st.step} fills column {col} of its "
                                             f"tile, the next one is {tile.n}")
                        tile.n += 1
                elif tag == b"SUMS":
                    if tile is not None and SUMS_HEAD.unpack_from(body)[0] == tile.at:
                        tile.sums = pos
                elif tag == b"SEAL":
                    if tile is None or SEAL_HEAD.unpack_from(body)[0] != tile.at:
                        raise ValueError("a SEAL record that closes no open tile")
                    self._check_seal(tile, body, walked, pos)
                    self._close_walk(tile, walked)
                    tile = None
                elif tag == b"MODS":  # a structure's module paths: its MSUMs' rows
                    sid, self.modules[sid] = awmodules.read_mods(body, len(self.structures))
                    self._items = max(self._items, len(self.modules[sid]))
                elif tag == b"HEAD":
                    raise ValueError("a second b'HEAD' record (a file has one HEAD, first)")
            except (TypeError, ValueError, KeyError, OverflowError, RecursionError) as e:
                if isinstance(e, ValueError) and "is not a readable" in str(e):
                    raise
                raise self._bad(f"its {tag.decode('ascii', 'replace')} record at byte {pos} "
                                f"is malformed ({type(e).__name__}: {str(e)[:300]})") from e
            pos = end
        self._close_walk(tile, walked)

    def _json_cap(self) -> int:
        return min(aw1.MAX_STEP_JSON, aw1.STEP_JSON_BASE + aw1.STEP_JSON_PER_ITEM * self._items)

    def _cap(self, tag: bytes, tile: _Tile | None) -> int:
        if tag in (b"STRC", b"MODS"):
            return self.max_structure
        if tag == b"MSUM":
            return awmodules.msum_cap(self._items, T_MAX)
        if tag == b"HEAD":
            return aw1.MAX_HEAD
        if tag == b"TILE":
            return TILE_HEAD.size + 8 + 4 * self._items * T_MAX
        if tag == b"STEP":
            return _U32.size + self._json_cap() + 8 * self._items
        if tag == b"ORDR":
            return ORDER_HEAD.size + 4 * self._items
        if tag == b"SUMS":
            return SUMS_HEAD.size + 16 * self._items
        return SEAL_HEAD.size + (ROW.itemsize + EXC.itemsize * max(1, self._items)) * T_MAX * 8

    def _structure(self, body: memoryview) -> None:
        max_slots = max(aw1.SLOTS_FLOOR, aw1.SLOTS_PER_BYTE * len(body))
        doc = aw1.check_dict(strict_loads(body), "structure")
        aw1.check_int(doc.get("id"), "structure.id", len(self.structures), len(self.structures) + 1)
        s = Structure(aw1.check_graph(doc.get("graph"), max_slots))
        self.structures.append(s)
        self._items = max(self._items, len(s.names) + len(s.edge_ids) + len(s.params)
                          + len(s.extra))  # fmt: skip

    def _tile(self, pos: int, body: memoryview) -> tuple[_Tile, int]:
        """A TILE record: checked against its structure; (the tile, the byte after its SEAL
        when its pointer leads to its own whole SEAL, else 0: walk it)."""
        sid, t, k, zero = TILE_HEAD.unpack_from(body)
        if sid >= len(self.structures):
            raise ValueError(f"tile of structure {sid}: only {len(self.structures)} read")
        s = self.structures[sid]
        if k != len(s.edge_ids) + len(s.extra) or zero or not 1 <= t <= T_MAX:
            raise ValueError(f"a tile of {k} keys x {t} steps: structure {sid} has "
                             f"{len(s.edge_ids) + len(s.extra)} keys (at most {T_MAX} steps)")
        if len(body) != TILE_HEAD.size + 8 + 4 * k * t:
            raise ValueError(f"a tile of {len(body)} bytes, its header declares "
                             f"{TILE_HEAD.size + 8 + 4 * k * t}")  # fmt: skip
        tile = _Tile(pos, sid, t, k)
        self.tiles.append(tile)
        (seal,) = struct.unpack_from("<Q", body, TILE_HEAD.size)
        if seal == 0:
            return tile, 0
        end = self._seal_at(tile, seal)
        cut = seal + _REC.size > self.size or (
            seal + _REC.size + _CRC.size + _REC.unpack_from(self.mm, seal)[1] > self.size)
        if not end and not cut:  # a SEAL cut short: a cut file, said by its last record
            self.warnings.append(f"{self.path}: the tile at byte {pos} points at byte {seal}, "
                                 "not at its own index (SEAL) record: its steps were read one "
                                 "by one instead")  # fmt: skip
        return tile, end

    def _seal_at(self, tile: _Tile, at: int) -> int:
        """The byte after the whole SEAL of `tile` at byte `at` (its rows taken), 0 when there
        is none there."""
        end_tile = tile.base + 4 * tile.k * tile.t + _CRC.size
        if not end_tile <= at <= self.size - _REC.size - _CRC.size:
            return 0
        tag, length = _REC.unpack_from(self.mm, at)
        cap = self._cap(b"SEAL", tile)
        if tag != b"SEAL" or length > min(cap, self.size - at - _REC.size - _CRC.size):
            return 0
        body = memoryview(self.mm)[at + _REC.size : at + _REC.size + length]
        if zlib.crc32(body) != _CRC.unpack_from(self.mm, at + _REC.size + length)[0]:
            return 0
        if SEAL_HEAD.unpack_from(body)[0] != tile.at:
            return 0
        rows, exc, n, sums = self._seal_rows(tile, body, at)
        tile.n, tile.exc, tile.sums = n, exc, sums
        self._add_rows(rows, len(self.tiles) - 1)
        return int(at + _REC.size + length + _CRC.size)

    def _seal_rows(self, tile: _Tile, body: memoryview, at: int
                   ) -> tuple[np.ndarray, np.ndarray, int, int]:  # fmt: skip
        _, sums, n, n_rows, n_exc = SEAL_HEAD.unpack_from(body)
        if len(body) != SEAL_HEAD.size + ROW.itemsize * n_rows + EXC.itemsize * n_exc:
            raise self._bad(f"the SEAL record at byte {at} holds {len(body)} bytes, its counts "
                            "declare otherwise")  # fmt: skip
        rows = np.frombuffer(body, dtype=ROW, count=n_rows, offset=SEAL_HEAD.size).copy()
        exc = np.frombuffer(body, dtype=EXC, count=n_exc,
                            offset=SEAL_HEAD.size + ROW.itemsize * n_rows).copy()  # fmt: skip
        s = self.structures[tile.sid]
        steps = rows["step"].astype(np.int64)
        watched = rows["col"] >= 0
        why = ""
        if n > tile.t or int(watched.sum()) != n:
            why = f"{n} filled columns of {tile.t}, {int(watched.sum())} watched steps"
        elif n_rows and (steps[0] <= self._last or np.any(np.diff(steps) <= 0)
                         or steps[-1] >= aw1.MAX_STEP):  # fmt: skip
            why = "its steps do not strictly increase after the steps before it"
        elif not np.array_equal(rows["col"][watched], np.arange(n)):
            why = "its watched steps' columns are not 0, 1, ... in order"
        elif np.any(rows["col"][~watched] != -1) or np.any(rows["flags"] >= 32) or np.any(
                (rows["flags"] & ROW_FLAGS["watched"]).astype(bool) != watched):  # fmt: skip
            why = "a step's flags or column are out of range"
        elif n_rows and (np.any(rows["at"] <= tile.at) or np.any(rows["at"] >= at)):
            why = "a step's record lies outside its tile's span"
        elif n_exc and (np.any(exc["col"] < 0) or np.any(exc["col"] >= max(n, 1))
                        or np.any(exc["param"] < 0) or np.any(exc["param"] >= len(s.params))):
            why = "a parameter exception names a column or parameter outside its tile"
        elif sums and not tile.base < sums < at:
            why = f"its summaries' byte {sums} lies outside its tile's span"
        elif sums and not self._sums_ok(tile, sums):
            why = f"its summaries' byte {sums} holds no summaries of this tile"
        if why:
            raise self._bad(f"the SEAL record at byte {at} is malformed ({why})")
        if n_rows:
            self._last = int(steps[-1])
        return rows, exc, n, sums

    def _sums_ok(self, tile: _Tile, at: int) -> bool:
        """Whether a whole `SUMS` record of `tile` starts at byte `at` (its header: its kind,
        length and tile; its per-key checksums are checked as each column is read)."""
        want = SUMS_HEAD.size + 16 * tile.k
        if at + _REC.size + want + _CRC.size > self.size:
            return False
        tag, length = _REC.unpack_from(self.mm, at)
        head = SUMS_HEAD.unpack_from(self.mm, at + _REC.size)
        return tag == b"SUMS" and length == want and head == (tile.at, tile.k)

    def _check_seal(self, tile: _Tile, body: memoryview, walked: list[tuple[Any, ...]],
                    at: int) -> None:  # fmt: skip
        """A SEAL met while walking its tile (its pointer was not written): it must say what
        the walked steps say."""
        last, self._last = self._last, (walked[0][0] - 1 if walked else self._last)
        try:
            rows, exc, n, sums = self._seal_rows(tile, body, at)
        finally:
            self._last = last
        mine = np.array(walked, dtype=ROW)
        same = (len(rows) == len(mine) and n == tile.n
                and all(np.array_equal(rows[f], mine[f], equal_nan=(f in ("loss", "scale")))
                        for f in ("step", "flags", "loss", "scale", "at", "col")))  # fmt: skip
        if not same:
            raise ValueError("its index (SEAL) disagrees with the steps' own records")
        tile.exc, tile.sums = exc, sums or tile.sums

    def _close_walk(self, tile: _Tile | None, walked: list[tuple[Any, ...]]) -> None:
        if walked:
            t = -1 if tile is None else self.tiles.index(tile)
            self._add_rows(np.array(walked, dtype=ROW), t)
            if tile is not None:
                exc = [x for r in walked for x in self._exc.get(r[0], ())]
                tile.exc = np.array(exc, dtype=EXC)
            walked.clear()

    def _add_rows(self, rows: np.ndarray, tile: int) -> None:
        self._rows.append(rows)
        self._tile_of.append(np.full(len(rows), tile, dtype=np.int32))

    # ------------------------------------------------------------------ reading
    def steps(self) -> np.ndarray:
        """The watched step numbers (int64), in order.

        Example:
            >>> Store.steps.__doc__.split(" (")[0]
            'The watched step numbers'
        """
        return self.rows["step"][self.watched_rows].astype(np.int64)

    def block(self, tile: _Tile, keys: np.ndarray) -> np.ndarray:
        """Keys `keys`' filled values in `tile`, a (keys x filled columns) float32 view-copy,
        each key's crc32 checked against its SUMS record once per tile (a pass over every tile
        for many keys, a tile at a time; `series_of` checks a key in every tile at once).

        Example:
            >>> Store.block.__name__
            'block'
        """
        cols = np.frombuffer(self.mm, dtype="<f4", count=tile.k * tile.t, offset=tile.base)
        if tile.sums:
            mv = memoryview(self.mm)
            table = tile.sums + _REC.size + SUMS_HEAD.size
            tid, verified = id(tile), self._verified
            for key in keys.tolist():
                if (tid, key) in verified:
                    continue
                at = tile.base + 4 * key * tile.t
                (want,) = _U32.unpack_from(self.mm, table + 16 * key)
                if zlib.crc32(mv[at : at + 4 * tile.n]) != want:
                    raise self._bad(f"the values of key {key} in the tile at byte {tile.at} do "
                                    "not match their checksum (the file was damaged)")  # fmt: skip
                verified.add((tid, key))
        return cols.reshape(tile.k, tile.t)[keys, : tile.n]

    def release(self, tile: _Tile) -> None:
        """Drop `tile`'s columns from this process's mapped pages (they stay in the OS's page
        cache): a pass over every tile for many keys then holds one tile mapped at a time,
        never the whole file. Call it only once nothing views those columns (`block` copies).

        Example:
            >>> Store.release.__name__
            'release'
        """
        advise = getattr(self.mm, "madvise", None)
        dontneed = getattr(mmap, "MADV_DONTNEED", None)
        if advise is None or dontneed is None:
            return
        page = mmap.PAGESIZE
        a = (tile.base // page + 1) * page  # whole pages inside the columns only
        b = (tile.base + 4 * tile.k * tile.t) // page * page
        if b > a:
            advise(dontneed, a, b - a)

    def params_of(self, sid: int, params: list[int]) -> np.ndarray:
        """The (`params` x watched steps) float32 norms of parameters `params` of structure
        `sid` (NaN on steps of another structure): their columns of every tile in one gather
        (awcolumns.py; each checked against its crc32 at its first read), the exceptions put in.

        Example:
            >>> Store.params_of.__name__
            'params_of'
        """
        s = self.structures[sid]
        pe = np.asarray(s.param_edge, dtype=np.intp)[params] if params else np.zeros(0, np.intp)
        has = np.flatnonzero(pe >= 0)
        if len(has) == len(params):
            out = self._keys(sid, pe)
        else:
            out = np.full((len(params), len(self.watched_rows)), np.nan, dtype=np.float32)
            out[has] = self._keys(sid, pe[has])
        pos, param, value = self._exceptions(sid)  # sorted by parameter: a slice each
        lo, hi = np.searchsorted(param, params), np.searchsorted(param, params, "right")
        for j in np.flatnonzero(hi > lo).tolist():
            out[j, pos[lo[j] : hi[j]]] = value[lo[j] : hi[j]]
        return out

    def series_of(self, sid: int, kind: str, k: int) -> np.ndarray:
        """One key's float32 values per watched step (NaN where a step of another structure):
        `kind` "edge" (k: edge index), "slot" (k: slot index) or "param" (k: parameter).

        Example:
            >>> Store.series_of.__name__
            'series_of'
        """
        s = self.structures[sid]
        n_e = len(s.edge_ids)
        key = k if kind == "edge" else n_e + k if kind == "slot" else s.param_edge[k]
        if key >= 0:
            out: np.ndarray = self._keys(sid, np.array([key]))[0]
        else:
            out = np.full(len(self.watched_rows), np.nan, dtype=np.float32)
        if kind == "param":
            pos, param, value = self._exceptions(sid)
            hit = slice(np.searchsorted(param, k), np.searchsorted(param, k, "right"))
            out[pos[hit]] = value[hit]
        return out

    def _keys(self, sid: int, keys: np.ndarray) -> np.ndarray:
        """(keys x watched steps) float32: columns `keys` of structure `sid`'s tiles, each
        key checked in every tile at its first read (awcolumns.py)."""
        spans = self._spans.get(sid)
        if spans is None:
            spans = self._spans[sid] = awcolumns.spans_of(self.tiles, sid)
        awcolumns.check_keys(self.mm, spans, keys.tolist(), self._checked.setdefault(sid, set()),
                             self._bad)  # fmt: skip
        return awcolumns.gather(self.mm, spans, keys, len(self.watched_rows))

    def _exceptions(self, sid: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(place among the watched steps, parameter, value) of every parameter exception of
        structure `sid`'s tiles, gathered once, sorted by parameter (stably: in file order)."""
        got = self._exc_of.get(sid)
        if got is None:
            parts = [(t.w0 + t.exc["col"].astype(np.int64), t.exc["param"], t.exc["value"])
                     for t in self.tiles if t.sid == sid and len(t.exc)]  # fmt: skip
            got = (np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int64),
                   np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.int32),
                   np.concatenate([p[2] for p in parts]) if parts else np.zeros(0, np.float32))
            order = np.argsort(got[1], kind="stable")  # int64: searchsorted casts nothing
            got = self._exc_of[sid] = (got[0][order], got[1][order].astype(np.int64),
                                       got[2][order])  # fmt: skip
        return got

    def step(self, k: int) -> TrainingStep:
        """The whole `TrainingStep` of row `k` (its record read now, checked against the index:
        its number, flags, loss and scale, its norms' crc32).

        Example:
            >>> Store.step.__name__
            'step'
        """
        row = self.rows[k]
        step = int(row["step"])
        got = self._walked.get(step)
        if got is not None:
            return got
        at = int(row["at"])
        if not 8 <= at <= self.size - _REC.size - _CRC.size:
            raise self._bad(f"step {step}'s index points at byte {at}, outside the file")
        tag, length = _REC.unpack_from(self.mm, at)
        if tag != b"STEP" or length > min(self._cap(b"STEP", None),
                                          self.size - at - _REC.size - _CRC.size):
            raise self._bad(f"step {step}'s index points at byte {at}, not at a step record")
        body = memoryview(self.mm)[at + _REC.size : at + _REC.size + length]
        if zlib.crc32(body) != _CRC.unpack_from(self.mm, at + _REC.size + length)[0]:
            raise self._bad(f"the checksum of step {step}'s record at byte {at} does not match")
        t = int(self.row_tile[k])
        tile = self.tiles[t] if t >= 0 else None
        try:
            st, col, _ = aw1_step(body, self.structures, step - 1, tile, self.mm,
                                  self._json_cap())  # fmt: skip
        except (TypeError, ValueError, KeyError, OverflowError, RecursionError) as e:
            raise self._bad(f"its STEP record at byte {at} is malformed ({type(e).__name__}: "
                            f"{str(e)[:300]})") from e  # fmt: skip
        from .awtile import flags_of

        mine = (st.step, flags_of(st), col)
        if mine != (step, int(row["flags"]), int(row["col"])) or not _same(st.loss, row["loss"]) \
                or not _same(np.nan if st.scale is None else st.scale, row["scale"]):
            raise self._bad(f"its index (SEAL) disagrees with step {step}'s own record at byte "
                            f"{at}")  # fmt: skip
        return st

    def close(self) -> None:
        """Unmap the file (left to the garbage collector while an array still views it).

        Example:
            >>> Store.close.__name__
            'close'
        """
        try:
            self.mm.close()
        except BufferError:
            pass


def _same(a: float, b: float) -> bool:
    return bool(a == b or (a != a and b != b))


def _row_of(st: TrainingStep, at: int, col: int) -> tuple[Any, ...]:
    from .awtile import flags_of

    return (st.step, flags_of(st), st.loss, np.nan if st.scale is None else st.scale, at,
            col)


def aw1_step(body: memoryview, structures: list[Structure], previous: int, tile: _Tile | None,
             mm: Any, json_cap: int) -> tuple[TrainingStep, int, list[tuple[int, int, float]]]:
    """A format 2.0 `STEP` record: its JSON checked as 1.0's (awwatch.py), its norms gathered
    from its tile's column and checked against its crc32, its order read from its `ORDR`."""
    if len(body) < _U32.size:
        raise ValueError("a step record is shorter than its JSON length")
    (n,) = _U32.unpack_from(body)
    if n > json_cap or _U32.size + n > len(body):
        raise ValueError(f"a step's JSON length {n} exceeds its record or {json_cap} bytes")
    doc = aw1.check_dict(strict_loads(body[_U32.size : _U32.size + n]), "step")
    watched = doc.get("watched")
    if watched is not True:  # an unwatched step: exactly as 1.0 reads it
        return aw1.read_step(body, structures, previous, json_cap), -1, []
    sid = aw1.check_int(doc.get("structure"), "step.structure", 0, len(structures))
    s = structures[sid]
    if tile is None or tile.sid != sid:
        raise ValueError("a watched step outside a tile of its structure")
    col = aw1.check_int(doc.get("col"), "step.col", 0, tile.t)
    n_e, n_p = len(s.edge_ids), len(s.params)
    n_px = aw1.check_int(doc.get("n_px"), "step.n_px", 0, n_p + 1)
    rest = body[_U32.size + n :]
    if len(rest) != 8 * n_px:
        raise ValueError(f"a step holds {len(rest)} bytes after its JSON, {8 * n_px} declared")
    idx = np.frombuffer(rest, dtype="<i4", count=n_px)
    vals = np.frombuffer(rest, dtype="<f4", count=n_px, offset=4 * n_px)
    if n_px and (idx.min() < 0 or idx.max() >= n_p or np.unique(idx).size != n_px):
        raise ValueError("a step's parameter exceptions name a parameter twice or outside")
    cols = np.frombuffer(mm, dtype="<f4", count=tile.k * tile.t, offset=tile.base)
    row = cols.reshape(tile.k, tile.t)[:, col].copy()
    edges, slots = row[:n_e], row[n_e:]
    pe = np.asarray(s.param_edge, dtype=np.intp)
    params = np.full(n_p, np.nan, dtype="<f4")
    params[pe >= 0] = edges[pe[pe >= 0]]
    params[idx] = vals
    from .awtile import row_crc

    if row_crc(edges, params, slots) != aw1.check_int(doc.get("crc"), "step.crc", 0, 2**32):
        raise ValueError(f"step {doc.get('step')}'s norms do not match their checksum (its "
                         "tile was damaged)")  # fmt: skip
    order_at = aw1.check_int(doc.get("order"), "step.order", 8, len(mm))
    order = _order(mm, order_at, sid, len(s.names))
    arrays = order.tobytes() + edges.tobytes() + params.tobytes() + slots.tobytes()
    text = bytes(body[_U32.size : _U32.size + n])
    st = aw1.read_step(_U32.pack(len(text)) + text + arrays, structures, previous, json_cap)
    return st, col, [(col, int(k), float(v)) for k, v in zip(idx, vals)]


def _order(mm: Any, at: int, sid: int, n_nodes: int) -> np.ndarray:
    """The order in the `ORDR` record at byte `at`, checked (a whole record, its structure,
    at most one entry per node; awwatch.py's step check then checks its nodes)."""
    size = len(mm)
    if at + _REC.size + ORDER_HEAD.size + _CRC.size > size:
        raise ValueError(f"a step's order points at byte {at}, past the end of the file")
    tag, length = _REC.unpack_from(mm, at)
    if tag != b"ORDR" or length > min(ORDER_HEAD.size + 4 * n_nodes,
                                      size - at - _REC.size - _CRC.size):  # fmt: skip
        raise ValueError(f"a step's order points at byte {at}, not at an order record")
    body = memoryview(mm)[at + _REC.size : at + _REC.size + length]
    if zlib.crc32(body) != _CRC.unpack_from(mm, at + _REC.size + length)[0]:
        raise ValueError(f"the checksum of the order record at byte {at} does not match")
    osid, n = ORDER_HEAD.unpack_from(body)
    if osid != sid or len(body) != ORDER_HEAD.size + 4 * n:
        raise ValueError(f"the order record at byte {at} is not one of structure {sid}")
    return np.frombuffer(body, dtype="<i4", count=n, offset=ORDER_HEAD.size).copy()


def open_store(path: Path, *, max_structure_bytes: int = aw1.MAX_STRUCTURE) -> Store:
    """The `Store` of a format 2.0 file (ValueError for another format; see awwatch.py's `read`
    for the limits and errors).

    Example:
        >>> open_store(Path("missing.awwatch"))
        Traceback (most recent call last):
        FileNotFoundError: no watch at missing.awwatch
    """
    f = open_regular(path, what="a watch", hint="pass the path of an .awwatch file "
                     "(watch.save(...) or aw.watch(path=...) writes one)")
    with f:
        size = os.fstat(f.fileno()).st_size
        head, pos = read_head(path, f, size)
        if head["version"][0] != 2:
            raise ValueError(f"{path} is a watch of format {head['version'][0]}.x, not 2.x")
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    store = Store(path, mm, size, head, pos, max_structure_bytes)
    for message in store.warnings:
        if "points at byte" in message:
            warn_user(message)
    return store


def read_head(path: Path, f: Any, size: int) -> tuple[dict[str, Any], int]:
    """(the HEAD document, the byte after it) of the watch file open in `f` (checked as
    awwatch.py checks it: magic, length, checksum, fields, a known major version).

    Example:
        >>> import io
        >>> read_head(Path("x.awwatch"), io.BytesIO(b"PK"), 2)
        Traceback (most recent call last):
        ValueError: x.awwatch is not a readable autograd_widget watch: it does not start with ...
    """
    if f.read(len(aw1.MAGIC)) != aw1.MAGIC:
        raise aw1.unreadable(path, f"it does not start with {aw1.MAGIC!r}")
    raw = f.read(_REC.size)
    if len(raw) < _REC.size:
        raise aw1.unreadable(path, "it ends before its HEAD record is complete (no step was "
                                   "saved)")
    tag, length = _REC.unpack(raw)
    if tag != b"HEAD":
        raise aw1.unreadable(path, f"its HEAD record at byte 8 is malformed (ValueError: the first "
                             f"record is {tag!r}, not b'HEAD')")  # fmt: skip
    if length > aw1.MAX_HEAD:
        raise aw1.unreadable(path, f"a record claims {length} bytes at byte 8 (the limit for "
                                   f"a HEAD record here is {aw1.MAX_HEAD})")  # fmt: skip
    body = f.read(length + _CRC.size)
    if len(body) < length + _CRC.size:
        raise aw1.unreadable(path, "it ends before its HEAD record is complete (no step was "
                                   "saved)")
    if zlib.crc32(body[:length]) != _CRC.unpack_from(body, length)[0]:
        raise aw1.unreadable(path, "the checksum of the b'HEAD' record at byte 8 does not "
                                   "match (the file was damaged)")  # fmt: skip
    try:
        head = aw1.check_head(body[:length])
    except aw1.NewerVersion as e:
        raise ValueError(f"{path} {e}") from None
    except (TypeError, ValueError, KeyError, OverflowError, RecursionError) as e:
        raise aw1.unreadable(path, f"its HEAD record at byte 8 is malformed ({type(e).__name__}: "
                             f"{str(e)[:300]})") from e  # fmt: skip
    return head, len(aw1.MAGIC) + _REC.size + length + _CRC.size


def read(path: Path, *, max_structure_bytes: int = aw1.MAX_STRUCTURE
         ) -> tuple[dict[str, Any], list[Structure], list[TrainingStep], list[str]]:  # fmt: skip
    """(head, structures, steps, warnings) of a format 2.0 file, every step read whole (what
    awwatch.py's `read` gives for 1.0; the same checks as `open_store`, then each step's).

    Example:
        >>> import tempfile
        >>> from autograd_widget.engine.watch.awwatch_write import Writer
        >>> with tempfile.TemporaryDirectory() as d:
        ...     w = Writer(Path(d) / "w.awwatch", 1, {}); w.step(TrainingStep(0, False, 2.0))
        ...     w.close(); head, graphs, steps, warnings = read(Path(d) / "w.awwatch")
        >>> head["every"], [s.loss for s in steps], warnings
        (1, [2.0], [])
    """
    store = open_store(path, max_structure_bytes=max_structure_bytes)
    try:
        steps = [store.step(k) for k in range(len(store.rows))]
    finally:
        store.close()
    return store.head, store.structures, steps, list(store.warnings)
