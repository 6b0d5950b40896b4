"""The module records of the watch file (engine/watch/awmodules.py): `series` of a module and the
timeline's module bands read from them equal what the parameter columns give (randomized), a
file without them (written before them) and a tile without them still read, damage a clear
ValueError."""

from __future__ import annotations

import struct
import zlib
from itertools import pairwise

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

import autograd_widget as aw
from autograd_widget.engine.watch import awmodules, awtile, awwatch, storedwatch
from autograd_widget.engine.watch.structure import Structure
from autograd_widget.engine.watch.trainstep import TrainingStep
from autograd_widget.engine.watch.watchseries import module_bands, table_of
from autograd_widget.view import timeline as tl

_REC = struct.Struct("<4sQ")


def _structure() -> tuple[Structure, np.ndarray]:
    """A real structure of nested modules (5 modules, 6 parameters) and its order."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(),
                                torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 1)))
    w = aw.watch(model)
    out = model(torch.ones(2, 3)).sum()
    with w.step(out):
        out.backward()
    return w.structures[0], w.records[0].order


S, ORDER = _structure()


def _step(k: int, rng: np.random.Generator, scale: float | None, special: str) -> TrainingStep:
    """Watched step `k` with random norms laid out as the lean hooks do (a parameter's norm its
    one edge's); `special`: "nan" (a parameter's gradient NaN), "inf", "absent" (a parameter
    without gradient) or ""."""
    edges = rng.random(len(S.edge_ids), dtype=np.float32) * np.float32(10.0 ** rng.integers(-3, 4))
    pe = np.asarray(S.param_edge)
    params = np.full(len(S.params), np.nan, dtype=np.float32)
    params[pe >= 0] = edges[pe[pe >= 0]]
    bad: tuple[str, ...] = ()
    if special:
        e = int(pe[1])
        edges[e] = params[1] = {"nan": np.nan, "inf": np.inf, "absent": np.nan}[special]
        bad = (S.params[1],) if special != "absent" else ()
    return TrainingStep(k, True, float(rng.random()), structure=0, order=ORDER, edge_norms=edges,
                        param_norms=params, slot_norms=rng.random(len(S.extra), dtype=np.float32),
                        scale=scale, nonfinite_params=bad)  # fmt: skip


def _write(path, steps: list[TrainingStep]) -> None:
    w = awwatch.Writer(path, 1, {"run": "t"})
    w.structure(0, S)
    for st in steps:
        w.step(st)
    w.close()


def _expected(steps: list[TrainingStep], keys: list[str]) -> np.ndarray:
    """What the parameter norms give: watchseries.py's `table_of` (the in-memory watch's path),
    divided by the loss scale as `Watch.table` does."""
    scale = np.array([1.0 if s.scale is None or s.scale == 0 else s.scale for s in steps])
    return table_of(S, steps, keys) / scale[:, None]


def _steps(seed: int, n: int) -> list[TrainingStep]:
    rng = np.random.default_rng(seed)
    specials = ["", "", "", "", "nan", "inf", "absent"]
    return [_step(k, rng, [None, 1.0, 1024.0, 0.5][int(rng.integers(4))],
                  specials[int(rng.integers(len(specials)))]) for k in range(n)]  # fmt: skip


@pytest.fixture
def small(monkeypatch):
    """Tiles of 8 steps; every module of 2+ parameters stored as a column."""
    monkeypatch.setattr(awtile, "tile_steps", lambda k, wanted=0: 8)
    monkeypatch.setattr(awmodules, "BIG", 2)
    monkeypatch.setattr(storedwatch, "TILED_FROM", 0)  # small runs stand for long ones


def _column_bands(values: np.ndarray, cut: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(min, max) per column of `values` (steps x modules) cut at watched positions `cut`."""
    lo = np.array([np.fmin.reduce(values[a:b], axis=0) for a, b in pairwise(cut)]).T
    hi = np.array([np.fmax.reduce(values[a:b], axis=0) for a, b in pairwise(cut)]).T
    return lo, hi


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=hs.integers(0, 2**16), n=hs.integers(1, 48), bins=hs.integers(1, 9))
def test_module_series_and_bands_equal_the_parameters(tmp_path_factory, small, seed, n, bins):
    steps = _steps(seed, n)
    path = tmp_path_factory.mktemp("m") / "w.awwatch"
    _write(path, steps)
    back = aw.load_watch(path)
    mods = back.keys()["modules"]
    want = _expected(steps, mods)
    np.testing.assert_allclose(back.table(mods), want, rtol=1e-6, equal_nan=True)
    for m in mods:
        np.testing.assert_allclose(back.series(m), want[:, mods.index(m)], rtol=1e-6,
                                   equal_nan=True)  # fmt: skip
    b = module_bands(back, mods, None, None, bins)
    assert b.cut[0] == 0 and b.cut[-1] == n and len(b.columns) == len(b.cut) - 1
    lo, hi = _column_bands(want, b.cut)
    np.testing.assert_allclose(b.min, lo, rtol=1e-6, equal_nan=True)
    np.testing.assert_allclose(b.max, hi, rtol=1e-6, equal_nan=True)
    ok = np.isfinite(want) & (want > 0)
    np.testing.assert_array_equal(b.n_ok, ok.sum(axis=0))
    for r in range(len(mods)):
        if ok[:, r].any():
            v = want[ok[:, r], r]
            np.testing.assert_allclose([b.low[r], b.high[r]], [v.min(), v.max()], rtol=1e-6)
            assert np.isclose(want[b.low_at[r], r], b.low[r], rtol=1e-6)
            assert np.isclose(want[b.high_at[r], r], b.high[r], rtol=1e-6)
    rows = tl.bands(back, None, None, bins, mods)  # the timeline's module rows
    with np.errstate(divide="ignore"):
        logs = np.where(np.isfinite(hi) & (hi > 0), np.log10(np.where(hi > 0, hi, 1)), np.nan)
    flagged = np.array([any(st.nonfinite_params for st in steps[a:b])
                        for a, b in pairwise(b.cut)])  # drawn +inf by the timeline
    fin = np.isfinite(logs) & ~flagged[None, :]
    np.testing.assert_allclose(rows["values"][fin], logs[fin], rtol=1e-5, atol=1e-6)
    back.close()


def test_bands_come_from_the_tiles_summaries(tmp_path, small, monkeypatch):
    """A run of 40 tiles drawn in 16 columns: whole tiles, from their stored summaries (no
    parameter column read), equal to what the columns give."""
    steps = _steps(1, 320)
    _write(tmp_path / "w.awwatch", steps)
    back = aw.load_watch(tmp_path / "w.awwatch")
    mods = back.keys()["modules"]
    assert all(back.mods.tile(t) is not None for t in range(len(back.store.tiles)))
    monkeypatch.setattr(type(back), "param_blocks", None)  # reading a parameter would fail
    b = module_bands(back, mods, None, None, 16)
    assert np.all(np.isin(b.cut[:-1], [t.w0 for t in back.store.tiles]))
    lo, hi = _column_bands(_expected(steps, mods), b.cut)
    np.testing.assert_allclose(b.max, hi, rtol=1e-6, equal_nan=True)
    np.testing.assert_allclose(b.min, lo, rtol=1e-6, equal_nan=True)
    assert back.series("").shape == (320,)  # "" is stored: no parameter read either


def test_a_file_without_module_records_reads_as_before(tmp_path, small, monkeypatch):
    """A file written before the module records (format 2.0 without MODS/MSUM) opens, and its
    module series and bands are summed from the parameter columns."""
    steps = _steps(2, 100)
    with monkeypatch.context() as m:
        m.setattr(awmodules, "mods_record", lambda sid, tree: b"")
        m.setattr(awmodules, "msum_record", lambda *a: None)
        _write(tmp_path / "old.awwatch", steps)
    raw = (tmp_path / "old.awwatch").read_bytes()
    assert _records(raw, b"MODS") == _records(raw, b"MSUM") == [] and _records(raw, b"SEAL")
    back = aw.load_watch(tmp_path / "old.awwatch")
    assert back.store.modules == {} and back.mods.tile(0) is None
    mods = back.keys()["modules"]
    want = _expected(steps, mods)
    np.testing.assert_allclose(back.table(mods), want, rtol=1e-6, equal_nan=True)
    b = module_bands(back, mods, None, None, 6)
    np.testing.assert_allclose(b.max, _column_bands(want, b.cut)[1], rtol=1e-6, equal_nan=True)


def test_a_tile_float32_cannot_hold_is_summed_from_its_columns(tmp_path, small):
    """Norms near float32's largest: the module norm overflows float32, so that tile has no
    MSUM; its module series stays the exact float64 one."""
    rng = np.random.default_rng(3)
    steps = [_step(k, rng, None, "") for k in range(24)]
    steps[10].edge_norms[:] = 3e38
    steps[10].param_norms[np.asarray(S.param_edge) >= 0] = 3e38
    _write(tmp_path / "w.awwatch", steps)
    back = aw.load_watch(tmp_path / "w.awwatch")
    assert back.mods.tile(0) is not None and back.mods.tile(1) is None
    want = _expected(steps, [""])[:, 0]
    assert np.isfinite(want[10]) and want[10] > 3e38
    np.testing.assert_allclose(back.series(""), want, rtol=1e-6)


def _records(raw: bytes, tag: bytes) -> list[int]:
    out, pos = [], 8
    while pos + 12 <= len(raw):
        t, n = _REC.unpack_from(raw, pos)
        if t == tag:
            out.append(pos)
        pos += 12 + n + 4
    return out


def _refresh_crc(raw: bytearray, at: int, checked: int | None = None) -> None:
    _, n = _REC.unpack_from(raw, at)
    body = raw[at + 12 : at + 12 + (n if checked is None else checked)]
    raw[at + 12 + n : at + 16 + n] = struct.pack("<I", zlib.crc32(body))


def _damaged(tmp_path, edit) -> aw.Watch:
    (tmp_path / "w.awwatch").unlink(missing_ok=True)  # a Writer appends to its own run's file
    _write(tmp_path / "w.awwatch", _steps(4, 30))
    raw = bytearray((tmp_path / "w.awwatch").read_bytes())
    edit(raw)
    (tmp_path / "bad.awwatch").write_bytes(bytes(raw))
    return aw.load_watch(tmp_path / "bad.awwatch")


def _prefix(raw: bytearray, at: int) -> int:
    _, m, _, nb = awmodules.MSUM_HEAD.unpack_from(raw, at + 12)
    return awmodules.MSUM_HEAD.size + awmodules.SUMMARY.itemsize * m + 8 * nb


def test_damaged_module_records_are_clear_errors(tmp_path, small):
    def header(raw):  # a summary's byte flipped: its checksum
        at = _records(raw, b"MSUM")[1]
        raw[at + 12 + awmodules.MSUM_HEAD.size + 1] ^= 0xFF

    with pytest.raises(ValueError, match=r"MSUM record at byte \d+ is malformed .*checksum"):
        _damaged(tmp_path, header).series("")

    def column(raw):  # a stored column's value flipped: its own crc32
        at = _records(raw, b"MSUM")[0]
        raw[at + 12 + _prefix(raw, at) + 2] ^= 0xFF

    with pytest.raises(ValueError, match=r"module column .* does not match its checksum"):
        _damaged(tmp_path, column).series("")

    def other_tile(raw):  # an MSUM naming another tile (checksum refreshed)
        at = _records(raw, b"MSUM")[1]
        raw[at + 12 : at + 20] = struct.pack("<Q", _records(raw, b"TILE")[0])
        _refresh_crc(raw, at, _prefix(raw, at))

    with pytest.raises(ValueError, match="names tile"):
        _damaged(tmp_path, other_tile).series("")

    def past_end(raw):  # an MSUM claiming more bytes than the file has
        at = _records(raw, b"MSUM")[0]
        raw[at + 4 : at + 12] = struct.pack("<Q", 1 << 20)

    with pytest.raises(ValueError, match="MSUM"):
        _damaged(tmp_path, past_end).series("")

    def out_of_range(raw):  # a low/high column past the tile (checksum refreshed)
        at = _records(raw, b"MSUM")[0]
        off = at + 12 + awmodules.MSUM_HEAD.size + 16 + 2
        raw[off : off + 2] = struct.pack("<H", 999)
        _refresh_crc(raw, at, _prefix(raw, at))

    with pytest.raises(ValueError, match="out of range"):
        w = _damaged(tmp_path, out_of_range)
        module_bands(w, w.keys()["modules"], None, None, 2)

    def wrong_paths(raw):  # module paths that are not the structure's
        at = _records(raw, b"MODS")[0]
        i = raw.index(b'"2.0"', at)
        raw[i : i + 5] = b'"9.9"'
        _refresh_crc(raw, at)

    with pytest.raises(ValueError, match="not the structure's modules"):
        _damaged(tmp_path, wrong_paths).series("")

    def not_a_list(raw):
        at = _records(raw, b"MODS")[0]
        _, n = _REC.unpack_from(raw, at)
        raw[at + 16 : at + 12 + n] = b"{" + b" " * (n - 6) + b"}"
        _refresh_crc(raw, at)

    with pytest.raises(ValueError, match=r"MODS record at byte .* is malformed"):
        _damaged(tmp_path, not_a_list)


def test_a_killed_writers_open_tile_is_summed_from_its_columns(tmp_path, small):
    """The open tile of a killed writer (no SEAL, no MSUM) is walked; its module values are
    summed from its columns, the sealed tiles' read from their MSUM."""
    steps = _steps(5, 21)
    path = tmp_path / "w.awwatch"
    w = awwatch.Writer(path, 1, {"run": "t"})
    w.structure(0, S)
    for st in steps:
        w.step(st)
    w._sink.tile = None  # killed: the open tile is never sealed
    w.close()
    back = aw.load_watch(path)
    assert [back.mods.tile(t) is not None for t in range(3)] == [True, True, False]
    mods = back.keys()["modules"]
    np.testing.assert_allclose(back.table(mods), _expected(steps, mods), rtol=1e-6, equal_nan=True)


def test_a_tile_whose_pointer_was_never_written_is_walked_over_its_msum(tmp_path, small):
    """Killed after a tile's SUMS, MSUM and SEAL, before its pointer to the SEAL: the reader
    walks the tile (its MSUM checked as a record), sums its modules from its columns; a damaged
    byte in that MSUM is the record's checksum error."""
    steps = _steps(6, 20)
    _write(tmp_path / "w.awwatch", steps)
    raw = bytearray((tmp_path / "w.awwatch").read_bytes())
    tile = _records(raw, b"TILE")[1]
    raw[tile + 12 + 16 : tile + 12 + 24] = bytes(8)  # the pointer as a killed writer left it
    (tmp_path / "cut.awwatch").write_bytes(bytes(raw))
    back = aw.load_watch(tmp_path / "cut.awwatch")
    assert back.warnings == [] and back.mods.tile(1) is None and back.mods.tile(0) is not None
    mods = back.keys()["modules"]
    np.testing.assert_allclose(back.table(mods), _expected(steps, mods), rtol=1e-6, equal_nan=True)
    msum = next(a for a in _records(raw, b"MSUM") if a > tile)
    raw[msum + 12 + awmodules.MSUM_HEAD.size + 3] ^= 0xFF
    (tmp_path / "bad.awwatch").write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"checksum of the b'MSUM' record at byte \d+"):
        aw.load_watch(tmp_path / "bad.awwatch")
