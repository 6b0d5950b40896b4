"""The timeline of a long run at the resolution of the pixels (issue 39 part 2): min/max bands
per module (engine/watch/watchseries.py, view/timeline.py's `bands`), the banded payload built
from a stored watch's index, and the "timeline_range" message a zoom or a pan sends.

Small runs stand for long ones: `columns=` (the timeline's width) is set below the number of
watched steps, and tiles of 4 steps make a stored watch of several tiles and two structures."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
import torch

import autograd_widget as aw
from autograd_widget.engine.watch import awtile
from autograd_widget.engine.watch.watchseries import column_cuts, module_bands
from autograd_widget.view import timeline as tl
from autograd_widget.wire.protocol import dispatch
from autograd_widget.wire.watchmessages import MAX_BINS

STEPS, BAD, SPIKE = 23, 9, 14


def run(tmp_path, monkeypatch, every=1):
    """A run over two graph shapes, a NaN at step BAD, a gradient 1e6 x larger at SPIKE, tiles
    of 4 steps; (the watch in memory, the same loaded from its file)."""
    monkeypatch.setattr(awtile, "tile_steps", lambda k, wanted=0: 4)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    path = tmp_path / "run.awwatch"
    with aw.watch(model, every=every, path=path) as w:
        for k in range(STEPS):
            x = torch.randn(2, 3)
            if k == BAD:
                x[0, 0] = float("nan")
            model.zero_grad()
            out = model(x)
            loss = out.pow(2).mean() if k % 5 else out.abs().mean()  # a second structure
            with w.step(loss * (1e6 if k == SPIKE else 1.0)):
                (loss * (1e6 if k == SPIKE else 1.0)).backward()
    return w, aw.load_watch(path)


@pytest.mark.parametrize("every", [1, 3])
@pytest.mark.parametrize("bins", [1, 4, 7, 100])
def test_bands_are_the_min_and_max_of_each_module_series(tmp_path, monkeypatch, every, bins):
    w, back = run(tmp_path, monkeypatch, every)
    modules = tl._module_order(w)
    steps = np.asarray(w.steps)
    for watch in (w, back):  # in memory and stored: the same sums, in the same order
        b = module_bands(watch, modules, None, None, bins)
        for r, m in enumerate(modules):
            v = w.series(m)
            if len(steps) <= bins:  # one column per watched step
                assert b.columns.tolist() == steps.tolist()
                want_lo = want_hi = v
            else:
                o = w.overview(m, bins=bins)
                assert b.columns.tolist() == o["start"].tolist()
                want_lo, want_hi = o["min"], o["max"]
            for got, want in ((b.min[r], want_lo), (b.max[r], want_hi)):
                assert np.array_equal(got, want, equal_nan=True), m
            ok = np.flatnonzero(np.isfinite(v) & (v > 0))
            assert b.n_ok[r] == ok.size
            if ok.size:
                lo, hi = ok[np.argmin(v[ok])], ok[np.argmax(v[ok])]
                assert (b.low_at[r], b.high_at[r]) == (lo, hi), m


def test_a_spike_is_never_averaged_away_and_a_nan_shows_in_its_column(tmp_path, monkeypatch):
    w, back = run(tmp_path, monkeypatch)
    for watch in (w, back):
        t = tl.timeline(watch, columns=4)
        cols = t["columns"].tolist()
        assert len(cols) == 4 and t["values"].shape == t["values_min"].shape == (3, 4)
        spike = int(np.searchsorted(cols, SPIKE, side="right")) - 1
        bad = int(np.searchsorted(cols, BAD, side="right")) - 1
        row = t["rows"]["id"].index("")
        assert np.isinf(t["values"][row, bad]) and t["values"][row, bad] > 0
        finite = t["values"][row][np.isfinite(t["values"][row])]
        assert t["values"][row, spike] == finite.max()  # the 1e6 x step rules its column
        assert t["values"][row, spike] > t["values_min"][row, spike] + 3


@pytest.mark.parametrize("every", [1, 3])
def test_the_banded_payload_says_what_the_full_one_says(tmp_path, monkeypatch, every):
    w, back = run(tmp_path, monkeypatch, every)
    full = tl.timeline(w)
    assert "columns" not in full and "values_min" not in full  # a short run: as before
    for watch in (w, back):
        t = tl.timeline(watch, columns=2)
        same = ("n_steps", "first", "origin", "healed", "selected", "every", "rows", "moved_rule")
        for k in same:
            assert t[k] == full[k], k
        for k in ("loss", "flags", "scale"):
            assert np.array_equal(t[k], full[k], equal_nan=True), k
        # the grid's axis: each column's first watched step (what a click opens)
        assert t["watched"][0] == full["watched"][0] and len(t["watched"]) == len(t["columns"])
        assert set(t["watched"].tolist()) <= set(full["watched"].tolist())
        assert all(s >= c for s, c in zip(t["watched"].tolist(), t["columns"].tolist()))
        moved = [(m["module"], m["low_step"], m["high_step"]) for m in t["moved"]]
        assert moved == [(m["module"], m["low_step"], m["high_step"]) for m in full["moved"]]
        assert t["values"].shape == (len(full["rows"]["id"]), 2)
        lo, hi = t["range"]
        assert lo <= t["values_min"][np.isfinite(t["values_min"])].min()
        assert hi >= t["values"][np.isfinite(t["values"])].max()


def test_a_stored_long_run_is_drawn_from_its_index_never_step_by_step(tmp_path, monkeypatch):
    _, back = run(tmp_path, monkeypatch)
    read = []
    real = back.store.step
    monkeypatch.setattr(back.store, "step", lambda k: read.append(k) or real(k))
    t = tl.timeline(back, columns=4)
    assert t["n_steps"] == STEPS
    flagged = np.flatnonzero(
        back.store.rows["flags"] & (awtile.ROW_FLAGS["nonfinite"] | awtile.ROW_FLAGS["healed"])
    )
    assert set(read) <= set(flagged.tolist())  # only the steps the index flags are read


def test_column_cuts_refuse_bad_widths_and_empty_ranges():
    steps = np.arange(10)
    for bins in (0, -1, True, 2.0):
        with pytest.raises(ValueError, match="bins must be an int"):
            column_cuts(steps, None, None, bins)
    with pytest.raises(ValueError, match="is empty"):
        column_cuts(steps, 5, 5, 3)
    first, cut = column_cuts(steps, 100, 200, 3)  # past the run: columns with no step
    assert cut[0] == cut[-1] == 10 and len(first) == 0


def test_a_damaged_parameter_column_is_an_error_never_a_wrong_band(tmp_path, monkeypatch):
    _, back = run(tmp_path, monkeypatch)
    tile = back.store.tiles[0]
    s = back.structures[tile.sid]
    key = s.param_edge[0]
    at = tile.base + 4 * key * tile.t
    data = bytearray(back.store.path.read_bytes())
    data[at + 1] ^= 0x10
    bad_path = tmp_path / "bad.awwatch"
    bad_path.write_bytes(bytes(data))
    bad = aw.load_watch(bad_path)
    with pytest.raises(ValueError, match="checksum"):
        module_bands(bad, tl._module_order(bad), None, None, 4)


def _decode(data, what):
    return np.frombuffer(base64.b64decode(data[what]), "<f4").reshape(len(data["rows"]), -1)


def test_timeline_range_replies_with_the_refined_bands(tmp_path, monkeypatch):
    w, back = run(tmp_path, monkeypatch)
    wid = aw.explore(back)
    s = wid._session
    (rep,) = dispatch(s, {"type": "timeline_range", "request": 5, "start": 8, "stop": 16,
                          "bins": 4})  # fmt: skip
    data = rep["data"]
    json.dumps(data)  # a reply is JSON only
    assert rep["request"] == 5 and data["columns"] == [8, 10, 12, 14]
    want = tl.bands(w, 8, 16, 4)
    assert data["rows"] == want["rows"]
    assert np.array_equal(_decode(data, "values"), want["values"], equal_nan=True)
    assert np.array_equal(_decode(data, "values_min"), want["values_min"], equal_nan=True)
    (fine,) = dispatch(s, {"type": "timeline_range", "request": 6, "start": 8, "stop": 12,
                           "bins": 100})  # fmt: skip
    assert fine["data"]["columns"] == [8, 9, 10, 11]  # zoomed in: one column per step
    for bad in ({"start": 5, "stop": 5, "bins": 3}, {"start": -1, "stop": 5, "bins": 3},
                {"start": 0, "stop": 5, "bins": 0}, {"start": 0, "stop": 5, "bins": True},
                {"start": 0, "stop": 5, "bins": MAX_BINS + 1}, {"start": 0.5, "stop": 5,
                                                                "bins": 3}):  # fmt: skip
        (warn,) = dispatch(s, {"type": "timeline_range", "request": 7, **bad})
        assert warn["type"] == "warning" and "timeline_range" in warn["message"], bad
    (warn,) = dispatch(s, {"type": "timeline_range", "start": 0, "stop": 5, "bins": 3})
    assert warn["type"] == "warning" and "request id" in warn["message"]
    wid.close()
    plain = aw.explore((torch.ones(2, requires_grad=True) * 2).sum())
    (warn,) = dispatch(plain._session, {"type": "timeline_range", "request": 1, "start": 0,
                                        "stop": 2, "bins": 2})  # fmt: skip
    assert warn["type"] == "warning" and "no watch" in warn["message"]
    plain.close()
