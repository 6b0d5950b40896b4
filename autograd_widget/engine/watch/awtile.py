"""Format 2.0 of the `.awwatch` file: the norms of watched steps stored in columns (tiles), laid
out for reading, still appended step by step and safe to kill (the reader: awstore.py).

Why: in format 1.0 (awwatch.py) every step is one record holding its whole arrays (the engine's
order, one float32 per edge, parameter and slot): opening a run means reading every step, and
one edge's series means visiting every step's record. At 100,000 steps of a 2,000-edge graph
that is ~1.8 GB and tens of seconds. Format 2.0 keeps the same framing (tag, u64 length,
payload, crc32) and the same `HEAD` and `STRC` records, and adds:

- `TILE`: the columns of up to `T` watched steps of one structure, key-major (key k's T values
  contiguous; keys = the structure's edges, then its slots), written ONCE as zeros when the
  tile opens (so its blocks are allocated: filling it never meets a full disk), then filled in
  place (`pwrite`) as each step completes. Payload: `<IIII` (structure, T, K, 0), then the
  u64 offset of its `SEAL` record (0 until sealed: the one field ever rewritten), then K x T
  float32. Its record checksum covers the first 16 bytes only (the columns are checked by the
  `SUMS` record's per-key crc32 and each step's row crc32).
- `STEP`: as in 1.0 (a u32 JSON length, JSON) but a watched step holds no arrays: its JSON
  adds `col` (its column in the open tile), `order` (the byte of its `ORDR` record), `crc`
  (crc32 of its edge, parameter and slot norms as 1.0 would store them), `n_px`; then the
  parameters whose norm is not their one edge's (tied, hooked, fed by no edge): `n_px` int32
  indices, then `n_px` float32 values. The step's record is its commit: written after its
  column, so a process killed between the two leaves the step out, never half of it.
- `ORDR`: an engine order, written once per distinct order of a structure: `<II` (structure,
  n) then n int32 node indices.
- `SUMS` then `SEAL` when a tile is full (or its structure changes, or the writer closes):
  `SUMS`: `<QI` (the tile's byte, K), then K rows of (crc32 of the key's filled values,
  min, max, mean: float32 bits): the per-tile summary (min and max over present values, an
  Inf kept; mean over finite ones). `SEAL`: `<QQIII` (the tile's byte, the SUMS' byte, filled
  columns, steps, parameter exceptions), then per step since the tile opened: step (i32),
  flags (u8: `ROW_FLAGS`), loss and scale (f64, NaN for no scale), the byte of its `STEP`
  record (u64), its column (i32, -1 unwatched); then the tile's parameter exceptions: column
  (i32), parameter (i32), value (f32). Opening reads the `SEAL`s (the TILE's pointer jumps
  over its steps), never the steps or the columns.
- `MODS` after each `STRC` (a structure's module paths) and `MSUM` right after a tile's `SUMS`
  (its modules' summaries, the large modules' columns): awmodules.py.

A parameter's norm is, as the lean hooks compute it (lean.py), its one edge's: only the others
are stored (the exceptions), so the columns hold edges and slots: ~4 bytes per edge per step
plus 16 bytes per key per tile of summaries, plus the step's short JSON.

Example:
    >>> ROW_FLAGS["watched"], T_MAX
    (1, 4096)
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np

from ...util.jsonsafe import encode_float
from . import awmodules
from .structure import Structure
from .trainstep import TrainingStep

__all__ = ["EXC", "ORDER_HEAD", "ROW", "ROW_FLAGS", "SEAL_HEAD", "SUMS_HEAD", "TILE_HEAD",
           "T_DEFAULT", "T_MAX", "TileSink", "fd_patch", "file_sink", "flags_of", "row_crc",
           "tile_steps"]  # fmt: skip

#: A tile's fixed header: structure, capacity T, keys K, 0.
TILE_HEAD = struct.Struct("<IIII")
#: A `SEAL` record's header: tile byte, SUMS byte, filled columns, steps, exceptions.
SEAL_HEAD = struct.Struct("<QQIII")
#: A `SUMS` record's header: tile byte, keys.
SUMS_HEAD = struct.Struct("<QI")
#: An `ORDR` record's header: structure, length.
ORDER_HEAD = struct.Struct("<II")
#: One step's row in a `SEAL`: step, flags, loss, scale, STEP byte, column.
ROW = np.dtype([("step", "<i4"), ("flags", "u1"), ("loss", "<f8"), ("scale", "<f8"),
                ("at", "<u8"), ("col", "<i4")])  # fmt: skip
#: One parameter exception in a `SEAL`: column, parameter, value.
EXC = np.dtype([("col", "<i4"), ("param", "<i4"), ("value", "<f4")])
#: The bits of a row's flags.
ROW_FLAGS = {"watched": 1, "nonfinite": 2, "expected": 4, "failed": 8, "healed": 16}
#: Tiles hold up to this many steps (a reader refuses more).
T_MAX = 4096
#: The default tile length: 128 steps (16 bytes of summary per key per 128 steps).
T_DEFAULT = 128
#: A tile's columns stay below this size (a structure of many keys gets shorter tiles).
_TILE_BYTES = 4 << 20
_U32 = struct.Struct("<I")
_SEAL_PTR = TILE_HEAD.size  # where the u64 pointer to the SEAL sits in a TILE's payload


def _record(tag: bytes, payload: bytes, crc_of: bytes | None = None) -> bytes:
    crc = zlib.crc32(payload if crc_of is None else crc_of)
    return tag + struct.pack("<Q", len(payload)) + payload + _U32.pack(crc)


def tile_steps(n_keys: int, wanted: int = T_DEFAULT) -> int:
    """The tile length for a structure of `n_keys` columns: `wanted`, shorter where the tile
    would pass 4 MiB (each step rewrites its tile), at least 8.

    Example:
        >>> tile_steps(2000), tile_steps(100_000)
        (128, 10)
    """
    return max(8, min(wanted, T_MAX, _TILE_BYTES // max(1, 4 * n_keys)))


def flags_of(st: TrainingStep) -> int:
    """A step's row flags (`ROW_FLAGS`).

    Example:
        >>> flags_of(TrainingStep(0, False, 1.0, nonfinite_params=("w",)))
        2
    """
    f = ROW_FLAGS["watched"] if st.watched else 0
    if not st.finite:
        f |= ROW_FLAGS["nonfinite"]
    if st.expected_overflow:
        f |= ROW_FLAGS["expected"]
    if st.failure is not None:
        f |= ROW_FLAGS["failed"]
    if st.watched and st.finite and (st.nonfinite or st.slot_nonfinite):
        f |= ROW_FLAGS["healed"]
    return f


def row_crc(edges: np.ndarray, params: np.ndarray, slots: np.ndarray) -> int:
    """crc32 of a watched step's norms as format 1.0 stores them (float32, little-endian).

    Example:
        >>> one = np.ones(1, "<f4"); none = np.ones(0, "<f4")
        >>> row_crc(one, none, none) == zlib.crc32(one.tobytes())
        True
    """
    crc = zlib.crc32(np.ascontiguousarray(edges, "<f4").tobytes())
    crc = zlib.crc32(np.ascontiguousarray(params, "<f4").tobytes(), crc)
    return zlib.crc32(np.ascontiguousarray(slots, "<f4").tobytes(), crc)


def _json(obj: Any) -> bytes:
    return json.dumps(obj, allow_nan=False, separators=(",", ":")).encode("utf-8")


def _exceptions(s: Structure, edges: np.ndarray, params: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(indices, values) of the parameters whose float32 norm is not their one edge's."""
    pe = np.asarray(s.param_edge, dtype=np.intp)
    p = np.ascontiguousarray(params, "<f4")
    own = np.full(p.shape, np.nan, dtype="<f4")
    has = pe >= 0
    own[has] = np.ascontiguousarray(edges, "<f4")[pe[has]]
    differ = (p.view("<u4") != own.view("<u4")) | ~has
    idx = np.flatnonzero(differ).astype("<i4")
    return idx, p[idx]


class _Tile:
    """The open tile of one structure: its byte, its columns (in memory too) and its rows."""

    def __init__(self, at: int, sid: int, t: int, k: int) -> None:
        self.at, self.sid, self.t, self.k = at, sid, t, k
        self.cols = np.full((k, t), np.nan, dtype="<f4")
        self.n = 0
        self.rows: list[tuple[Any, ...]] = []
        self.exc: list[tuple[int, int, float]] = []
        self.bad: list[tuple[str, ...]] = []  # per filled column: its non-finite parameters
        self.scale: list[float] = []  # per filled column: its loss scale (NaN for none)

    @property
    def base(self) -> int:
        """The byte of column values (key 0, step 0)."""
        return self.at + 12 + TILE_HEAD.size + 8


class TileSink:
    """Writes format 2.0 records through `append(bytes) -> byte where they start` and
    `patch(byte, bytes)` (an in-place write of bytes already appended): the writer's file
    (awwatch_write.py's `Writer`: `os.write` and `pwrite`) or a whole file being saved.

    Guarantees: a step's column is written before its `STEP` record (its commit); a tile's
    `SUMS` and `SEAL` after its last step; a tile's pointer to its SEAL last of all; so a
    process killed at any moment leaves every completed step readable (awstore.py).

    Example:
        >>> out = bytearray()
        >>> def append(b): at = len(out); out.extend(b); return at
        >>> def patch(at, b): out[at:at + len(b)] = b
        >>> sink = TileSink(append, patch); sink.step(TrainingStep(0, False, 1.0)); sink.close()
        >>> bytes(out[:4])
        b'STEP'
    """

    def __init__(self, append: Callable[[bytes], int], patch: Callable[[int, Any], None],
                 tile: int = T_DEFAULT) -> None:  # fmt: skip
        self.append, self.patch, self.wanted = append, patch, tile
        self.structures: dict[int, Structure] = {}
        self.tile: _Tile | None = None
        self.orders: dict[int, tuple[bytes, int]] = {}  # structure -> (last order, its byte)
        self.trees: dict[int, tuple[Any, np.ndarray]] = {}  # structure -> (module tree, big rows)

    def structure(self, sid: int, s: Structure, record: bytes) -> None:
        """Append structure `sid`'s `STRC` record (sealing the open tile first), then its
        module paths (`MODS`, awmodules.py).

        Example:
            >>> TileSink.structure.__name__
            'structure'
        """
        self.seal()
        self.append(record)
        self.structures[sid] = s
        tree = awmodules.module_tree(s, s.modules())
        self.trees[sid] = (tree, awmodules.big_rows(s, tree))
        self.append(awmodules.mods_record(sid, tree))

    def step(self, st: TrainingStep) -> None:
        """Append one completed step (its column first when it was watched).

        Example:
            >>> out = bytearray(); sink = TileSink(lambda b: out.extend(b) or 0, None)
            >>> sink.step(TrainingStep(0, False, 1.0)); bytes(out[:4])
            b'STEP'
        """
        doc: dict[str, Any] = {
            "step": st.step, "watched": st.watched, "loss": encode_float(st.loss),
            "scale": encode_float(st.scale), "nonfinite_params": list(st.nonfinite_params),
            "failure": None if st.failure is None else list(st.failure),
        }  # fmt: skip
        tail = b""
        col = -1
        if st.watched:
            assert st.structure is not None and st.order is not None
            s = self.structures[st.structure]
            edges = np.ascontiguousarray(st.edge_norms, "<f4")
            params = np.ascontiguousarray(st.param_norms, "<f4")
            slots = np.ascontiguousarray(st.slot_norms, "<f4")
            tile = self._tile_for(st.structure, len(edges) + len(slots))
            col = tile.n
            tile.cols[: len(edges), col] = edges
            tile.cols[len(edges) :, col] = slots
            self.patch(tile.base, tile.cols.data.cast("B"))  # the tile's columns: one write
            idx, vals = _exceptions(s, edges, params)
            doc.update({
                "structure": st.structure, "n_order": len(st.order), "col": col,
                "order": self._order(st.structure, st.order), "crc": row_crc(edges, params, slots),
                "n_px": len(idx),
                "nonfinite": [[e, a, b] for e, (a, b) in st.nonfinite.items()],
                "slot_nonfinite": [[e, a, b] for e, (a, b) in st.slot_nonfinite.items()],
                "births": [[i, c, bool(x)] for i, (c, x) in st.births.items()],
                "warnings": list(st.warnings),
            })  # fmt: skip
            tail = idx.tobytes() + vals.tobytes()
            tile.exc.extend(zip([col] * len(idx), idx.tolist(), vals.tolist()))
            tile.bad.append(tuple(st.nonfinite_params))
            tile.scale.append(np.nan if st.scale is None else st.scale)
        text = _json(doc)
        at = self.append(_record(b"STEP", _U32.pack(len(text)) + text + tail))
        if self.tile is not None:
            scale = np.nan if st.scale is None else st.scale
            self.tile.rows.append((st.step, flags_of(st), st.loss, scale, at, col))
            if st.watched:
                self.tile.n += 1
                if self.tile.n == self.tile.t:
                    self.seal()

    def _tile_for(self, sid: int, k: int) -> _Tile:
        if self.tile is not None and self.tile.sid != sid:
            self.seal()
        if self.tile is None:
            t = tile_steps(k, self.wanted)
            payload = TILE_HEAD.pack(sid, t, k, 0) + bytes(8 + 4 * k * t)
            at = self.append(_record(b"TILE", payload, crc_of=payload[: TILE_HEAD.size]))
            self.tile = _Tile(at, sid, t, k)
        return self.tile

    def _order(self, sid: int, order: np.ndarray) -> int:
        raw = np.ascontiguousarray(order, "<i4").tobytes()
        last = self.orders.get(sid)
        if last is not None and last[0] == raw:
            return last[1]
        at = self.append(_record(b"ORDR", ORDER_HEAD.pack(sid, len(order)) + raw))
        self.orders[sid] = (raw, at)
        return at

    def seal(self) -> None:
        """Close the open tile: its `SUMS`, its `SEAL`, then its pointer to the SEAL (nothing
        when no tile is open).

        Example:
            >>> out = bytearray(); sink = TileSink(lambda b: out.extend(b) or 0, None)
            >>> sink.seal(); len(out)
            0
        """
        tile, self.tile = self.tile, None
        if tile is None:
            return
        vals = tile.cols[:, : tile.n]
        crcs = np.fromiter((zlib.crc32(row.tobytes()) for row in vals), dtype="<u4",
                           count=tile.k)  # fmt: skip
        with np.errstate(all="ignore"):
            lo = np.fmin.reduce(vals, axis=1) if tile.n else np.full(tile.k, np.nan, "<f4")
            hi = np.fmax.reduce(vals, axis=1) if tile.n else np.full(tile.k, np.nan, "<f4")
            fin = np.isfinite(vals)
            mean = (np.where(fin, vals, 0).sum(axis=1, dtype=np.float64) / fin.sum(axis=1))
        table = np.stack([crcs, lo.astype("<f4").view("<u4"), hi.astype("<f4").view("<u4"),
                          mean.astype("<f4").view("<u4")], axis=1).astype("<u4")  # fmt: skip
        sums = self.append(_record(b"SUMS", SUMS_HEAD.pack(tile.at, tile.k) + table.tobytes()))
        self._modules(tile)
        rows = np.array(tile.rows, dtype=ROW)
        exc = np.array(tile.exc, dtype=EXC)
        head = SEAL_HEAD.pack(tile.at, sums, tile.n, len(rows), len(exc))
        seal = self.append(_record(b"SEAL", head + rows.tobytes() + exc.tobytes()))
        self.patch(tile.at + 12 + _SEAL_PTR, struct.pack("<Q", seal))

    def _modules(self, tile: _Tile) -> None:
        """Append the tile's `MSUM` (awmodules.py), right after its `SUMS`: its modules'
        summaries and large modules' columns, from its columns (nothing where float32 cannot
        hold them, or where the structure has no module)."""
        got = self.trees.get(tile.sid)
        if got is None or not got[0].order or not tile.n:
            return
        tree, big = got
        s = self.structures[tile.sid]
        n_e = len(s.edge_ids)
        norms = awmodules.tile_norms(s, tree, tile.cols[:n_e, : tile.n], tile.exc, tile.bad)
        scale = np.nan_to_num(np.asarray(tile.scale, np.float64), nan=1.0)  # as `table` does
        scale[scale == 0] = 1.0
        rec = awmodules.msum_record(tile.at, norms, scale, big)
        if rec is not None:
            self.append(rec)

    def close(self) -> None:
        """Seal the open tile (a partial one): what a writer does when it closes.

        Example:
            >>> out = bytearray(); sink = TileSink(lambda b: out.extend(b) or 0, None)
            >>> sink.close(); sink.tile is None
            True
        """
        self.seal()


def file_sink(f: Any, start: int) -> tuple[Callable[[bytes], int], Callable[[int, Any], None]]:
    """(append, patch) over a binary file object `f` positioned at byte `start` (a whole file
    being saved).

    Example:
        >>> import io; f = io.BytesIO(); append, patch = file_sink(f, 0)
        >>> append(b"abc"), patch(1, b"X"), f.getvalue()
        (0, None, b'aXc')
    """
    pos = [start]

    def append(data: bytes) -> int:
        at = pos[0]
        f.write(data)
        pos[0] += len(data)
        return at

    def patch(at: int, data: Any) -> None:
        f.seek(at)
        f.write(data)
        f.seek(pos[0])

    return append, patch


def fd_patch(fd: int) -> Callable[[int, Any], None]:
    """A `patch` writing in place through `fd` (opened without O_APPEND): `os.pwrite` until
    every byte is written.

    Example:
        >>> callable(fd_patch(0))
        True
    """
    def patch(at: int, data: Any) -> None:
        view = memoryview(data).cast("B")
        while view:
            n = os.pwrite(fd, view, at)
            view, at = view[n:], at + n

    return patch
