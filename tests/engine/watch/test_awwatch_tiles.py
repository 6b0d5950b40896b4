"""Format 2.0 of the watch file (engine/watch/awtile.py, awstore.py, storedwatch.py): the
columns read back equal to what the run kept, several tiles and structures, damage in every
part of the new layout a clear error (or the documented walk), overview against series."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest
import torch

import autograd_widget as aw
from autograd_widget.engine.watch import awtile
from autograd_widget.engine.watch.watch import StoredWatch
from autograd_widget.engine.watch.watchseries import overview_of


def run(tmp_path, monkeypatch, steps=23, every=1, tile=4, path=True):
    """A run over two graph shapes (two structures), a NaN injected at step 9, tiles of
    `tile` steps (several tiles, a partial last one)."""
    monkeypatch.setattr(awtile, "tile_steps", lambda k, wanted=0: tile)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    target = tmp_path / "run.awwatch" if path else None
    with aw.watch(model, every=every, path=target) as w:
        for k in range(steps):
            x = torch.randn(2, 3)
            if k == 9:
                x[0, 0] = float("nan")
            opt.zero_grad()
            out = model(x)
            loss = out.pow(2).mean() if k % 5 else out.abs().mean()  # a second structure
            with w.step(loss):
                loss.backward()
            opt.step()
    return w, target


def same(a, b):
    assert a.steps == b.steps and a.nonfinite_steps == b.nonfinite_steps
    assert np.array_equal(a.losses(), b.losses(), equal_nan=True)
    assert np.array_equal(a.scales, b.scales, equal_nan=True)
    keys = a.keys()
    assert keys == b.keys()
    allkeys = keys["params"] + keys["modules"] + keys["edges"]
    assert np.array_equal(a.table(allkeys), b.table(allkeys), equal_nan=True)
    for s in [r.step for r in a.records]:
        x, y = a.record(s), b.record(s)
        assert (x.step, x.watched, x.nonfinite_params, x.births, x.nonfinite) == (
            y.step, y.watched, y.nonfinite_params, y.births, y.nonfinite)  # fmt: skip
        if x.watched:
            for f in ("order", "edge_norms", "param_norms", "slot_norms"):
                assert np.array_equal(getattr(x, f), getattr(y, f), equal_nan=True), f
    assert a.first_nonfinite() == b.first_nonfinite()


@pytest.mark.parametrize("every", [1, 3])
def test_tiles_read_back_what_the_run_kept(tmp_path, monkeypatch, every):
    w, path = run(tmp_path, monkeypatch, every=every)
    back = aw.load_watch(path)
    assert isinstance(back, StoredWatch) and back.warnings == []
    assert len(back.store.tiles) >= 3 and len(back.structures) == 2
    same(w, back)
    same(w, aw.load_watch(w.save(tmp_path / "saved.awwatch")))
    assert back.recording(9).nonfinite_origins()


def _flip(path, at, tmp_path, name="bad.awwatch"):
    data = bytearray(path.read_bytes())
    data[at] ^= 0x10
    p = tmp_path / name
    p.write_bytes(bytes(data))
    return p


def test_a_damaged_column_is_an_error_when_read_never_a_wrong_series(tmp_path, monkeypatch):
    _w, path = run(tmp_path, monkeypatch)
    back = aw.load_watch(path)
    tile = back.store.tiles[0]
    edge = back.structures[tile.sid].edge_ids[0]
    p = _flip(path, tile.base + 1, tmp_path)  # edge 0, first step of the first tile
    bad = aw.load_watch(p)  # opening reads no column
    with pytest.raises(ValueError, match="do not match their checksum"):
        bad.series(edge)
    first = int(back.store.rows["step"][back.store.watched_rows[0]])
    step = bad.record(first)  # from the index: its own record is read when its data is asked for
    with pytest.raises(ValueError, match="checksum"):
        _ = step.edge_norms


def test_damaged_index_records_are_errors_naming_their_byte(tmp_path, monkeypatch):
    _, path = run(tmp_path, monkeypatch)
    data = path.read_bytes()
    for tag in (b"TILE", b"SEAL", b"SUMS", b"ORDR"):
        at = data.index(tag)
        p = _flip(path, at + 12 + 2, tmp_path, f"bad_{tag.decode()}.awwatch")
        with pytest.raises(ValueError, match=r"byte \d+|checksum"):
            w = aw.load_watch(p)
            w.table(w.keys()["edges"] + w.keys()["params"])
            [w.record(s).order for s in w.steps]


def _reseal(data: bytearray, at: int, mutate) -> None:
    """Change a record's payload in place through `mutate(payload)` and fix its checksum (a
    hostile file: whole records that lie)."""
    (n,) = struct.unpack_from("<Q", data, at + 4)
    payload = bytearray(data[at + 12 : at + 12 + n])
    mutate(payload)
    data[at + 12 : at + 12 + n] = payload
    struct.pack_into("<I", data, at + 12 + n, zlib.crc32(bytes(payload)))


def test_an_index_that_lies_is_an_error_never_a_silent_wrong_value(tmp_path, monkeypatch):
    _w, path = run(tmp_path, monkeypatch)
    data = bytearray(path.read_bytes())
    seal = data.index(b"SEAL")
    rows_at = seal + 12 + awtile.SEAL_HEAD.size

    def loss(p):  # the first row's loss
        struct.pack_into("<d", p, awtile.SEAL_HEAD.size + 5, 123.0)

    _reseal(data, seal, loss)
    p = tmp_path / "lies.awwatch"
    p.write_bytes(bytes(data))
    bad = aw.load_watch(p)
    with pytest.raises(ValueError, match="disagrees"):
        _ = bad.record(0).order
    data = bytearray(path.read_bytes())

    def past(p):  # the first row's record byte: past the end of the file
        struct.pack_into("<Q", p, awtile.SEAL_HEAD.size + 21, len(data) + 100)

    _reseal(data, seal, past)
    p.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="outside its tile's span"):
        aw.load_watch(p)
    data = bytearray(path.read_bytes())
    sums = data.index(b"SUMS")

    def summary(p):  # a key's crc in the summaries
        struct.pack_into("<I", p, awtile.SUMS_HEAD.size, 7)

    _reseal(data, sums, summary)
    p.write_bytes(bytes(data))
    bad = aw.load_watch(p)
    edge = bad.structures[0].edge_ids[0]
    with pytest.raises(ValueError, match="checksum"):
        bad.series(edge)
    assert rows_at > seal


def test_a_tile_pointer_elsewhere_is_walked_with_a_warning(tmp_path, monkeypatch):
    w, path = run(tmp_path, monkeypatch)
    data = bytearray(path.read_bytes())
    tile = data.index(b"TILE")
    struct.pack_into("<Q", data, tile + 12 + awtile.TILE_HEAD.size, 8)  # at the HEAD
    p = tmp_path / "pointer.awwatch"
    p.write_bytes(bytes(data))
    with pytest.warns(UserWarning, match="not at its own index"):
        back = aw.load_watch(p)
    same(w, back)
    struct.pack_into("<Q", data, tile + 12 + awtile.TILE_HEAD.size, 0)  # a killed writer's
    p.write_bytes(bytes(data))
    same(w, aw.load_watch(p))


def test_overview_bins_hold_the_min_max_and_mean_of_the_series(tmp_path, monkeypatch):
    _w, path = run(tmp_path, monkeypatch, steps=40)
    back = aw.load_watch(path)
    key = back.keys()["params"][0]
    v, steps = back.series(key), np.asarray(back.steps)
    o = back.overview(key, 0, 40, 7)
    for b in range(7):
        lo, hi = o["start"][b], (o["start"][b + 1] if b < 6 else 40)
        seg = v[(steps >= lo) & (steps < hi)]
        seg = seg[~np.isnan(seg)]  # NaN: steps of the other structure (no such key)
        assert o["count"][b] == seg.size and seg.size
        assert o["min"][b] == seg.min() and o["max"][b] == seg.max()
        assert o["mean"][b] == pytest.approx(seg[np.isfinite(seg)].mean())
    spike = overview_of(np.array([1.0, np.inf, 2.0, np.nan]), np.arange(4), 0, 4, 1)
    assert spike["max"][0] == np.inf and spike["mean"][0] == 1.5 and spike["count"][0] == 3
    with pytest.raises(ValueError, match="bins"):
        back.overview(key, bins=0)


def test_dataframes_equal_the_series(tmp_path, monkeypatch):
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    from autograd_widget.engine.watch.watchframe import to_arrow, to_pandas

    w, path = run(tmp_path, monkeypatch, every=2)
    for watch in (w, aw.load_watch(path)):
        for kind, entry in (("parameter", "params"), ("module", "modules"), ("edge", "edges")):
            df = to_pandas(watch, kind)
            assert df.index.tolist() == watch.steps and df.index.name == "step"
            assert list(df.columns) == watch.keys()[entry]
            table = to_arrow(watch, kind)
            assert table.column("step").to_pylist() == watch.steps
            for key in watch.keys()[entry]:
                assert np.array_equal(df[key].to_numpy(), watch.series(key), equal_nan=True)
                assert np.array_equal(table.column(key).to_numpy(), watch.series(key),
                                      equal_nan=True)  # fmt: skip
    with pytest.raises(ValueError, match="kind must be one of"):
        to_pandas(w, "params")


def test_without_pandas_the_error_names_the_extra(monkeypatch):
    import sys

    from autograd_widget.engine.watch.watchframe import to_arrow, to_pandas

    monkeypatch.setitem(sys.modules, "pandas", None)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ImportError, match=r"pip install pandas pyarrow"):
        to_pandas(aw.watch())
    with pytest.raises(ImportError, match=r"pip install pandas pyarrow"):
        to_arrow(aw.watch())
