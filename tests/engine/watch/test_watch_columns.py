"""A stored watch's columns read in one gather (engine/watch/awcolumns.py): every key's series
equal, bit for bit, to a loop over the tiles and to what the run kept; a small module's series
the root of its parameters' summed squares (watchseries.py's `tree_norms`) over several tiles,
a partial last tile, a killed writer's open tile, tiles of another length and two structures;
a damaged column in any tile still a ValueError at the first read that touches it."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import autograd_widget as aw
from autograd_widget.engine.watch import awtile, awwatch
from autograd_widget.engine.watch.trainstep import TrainingStep
from autograd_widget.engine.watch.watchseries import table_of


def _model_steps(n: int, seed: int, specials: bool) -> tuple[object, list[TrainingStep]]:
    """A structure of a nested model (modules of 2 to 6 parameters, all below awmodules.py's
    BIG: every module's series summed from its parameters) and `n` watched steps of random
    norms; `specials`: some steps with a NaN, an infinite or an absent parameter gradient."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(),
                                torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 1)))
    w = aw.watch(model)
    out = model(torch.ones(2, 3)).sum()
    with w.step(out):
        out.backward()
    s, order = w.structures[0], w.records[0].order
    rng = np.random.default_rng(seed)
    pe = np.asarray(s.param_edge)
    steps = []
    for k in range(n):
        size = np.float32(10.0 ** rng.integers(-3, 4))
        edges = rng.random(len(s.edge_ids), dtype=np.float32) * size
        params = np.full(len(s.params), np.nan, dtype=np.float32)
        params[pe >= 0] = edges[pe[pe >= 0]]
        bad: tuple[str, ...] = ()
        kind = ["", "", "nan", "inf", "absent"][k % 5] if specials else ""
        if kind:
            edges[pe[1]] = params[1] = {"nan": np.nan, "inf": np.inf, "absent": np.nan}[kind]
            bad = (s.params[1],) if kind != "absent" else ()
        steps.append(TrainingStep(k, True, float(rng.random()), structure=0, order=order,
                                  edge_norms=edges, param_norms=params,
                                  slot_norms=rng.random(len(s.extra), dtype=np.float32),
                                  nonfinite_params=bad))  # fmt: skip
    return s, steps


def _write(path, s, steps, killed: bool = False) -> None:
    w = awwatch.Writer(path, 1, {"run": "t"})
    w.structure(0, s)
    for st in steps:
        w.step(st)
    if killed:
        w._sink.tile = None  # killed: its open tile is never sealed
    w.close()


def _loop(store, sid: int, key: int) -> np.ndarray:
    """Key `key`'s values per watched step, one tile at a time (the reference)."""
    out = np.full(len(store.watched_rows), np.nan, dtype=np.float32)
    for tile in store.tiles:
        if tile.sid == sid and tile.n:
            out[tile.w0 : tile.w0 + tile.n] = np.frombuffer(
                store.mm, dtype="<f4", count=tile.n, offset=tile.base + 4 * key * tile.t)
    return out


@pytest.mark.parametrize("killed", [False, True])
@pytest.mark.parametrize("lengths", [(8,), (8, 8, 5)])
def test_a_small_modules_series_is_its_parameters_root_sum_of_squares(tmp_path, monkeypatch,
                                                                      killed, lengths):
    """Exactly (bit for bit) what the run's own steps give (`table_of`) and, where every
    parameter has a finite gradient, sqrt of the float64 sum of its parameters' squares in
    their order; over tiles of 8 steps and a partial last one, a killed writer's open tile,
    and tiles of two lengths in one structure."""
    cycle = itertools.cycle(lengths)
    monkeypatch.setattr(awtile, "tile_steps", lambda k, wanted=0: next(cycle))
    s, steps = _model_steps(45, 1, specials=True)
    path = tmp_path / "w.awwatch"
    _write(path, s, steps, killed=killed)
    back = aw.load_watch(path)
    assert len(back.store.tiles) >= 6 and back.store.tiles[-1].n < back.store.tiles[-1].t
    mods = back.keys()["modules"]
    assert set(mods) >= {"", "0", "2", "2.0", "2.1"}
    want = table_of(s, steps, mods)  # the in-memory watch's path (no scale here)
    for m in mods:
        got = back.series(m)
        assert np.array_equal(got, want[:, mods.index(m)], equal_nan=True), m
        names = [p for p in s.params if m == "" or p.startswith(m + ".")]
        cols = np.array([back.series(p) for p in names], dtype=np.float64)
        fine = np.isfinite(cols).all(axis=0)
        total = np.zeros(len(steps))
        for c in cols:  # in the parameters' order, in float64, as tree_norms sums them
            total = total + c * c
        assert fine.sum() >= 15
        assert np.array_equal(got[fine], np.sqrt(total[fine])), m
    assert np.array_equal(back.table(mods), want, equal_nan=True)
    back.close()


def test_every_key_equals_a_loop_over_the_tiles_with_two_structures(tmp_path, monkeypatch):
    """Two structures (their tiles interleaved, each sealed early when the other comes), tiles
    of 4 steps: each edge, slot and parameter of each structure read in one gather equals a
    loop over its tiles, and parameters read together (`params_of`) equal each one's series."""
    monkeypatch.setattr(awtile, "tile_steps", lambda k, wanted=0: 4)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    with aw.watch(model, path=tmp_path / "run.awwatch") as w:
        for k in range(23):
            out = model(torch.randn(2, 3))
            loss = out.pow(2).mean() if k % 5 else out.abs().mean()
            with w.step(loss):
                loss.backward()
    back = aw.load_watch(tmp_path / "run.awwatch")
    store = back.store
    assert len(store.structures) == 2
    for sid, s in enumerate(store.structures):
        n_e = len(s.edge_ids)
        for e in range(n_e):
            assert np.array_equal(store.series_of(sid, "edge", e), _loop(store, sid, e),
                                  equal_nan=True)  # fmt: skip
        for k in range(len(s.extra)):
            assert np.array_equal(store.series_of(sid, "slot", k), _loop(store, sid, n_e + k),
                                  equal_nan=True)  # fmt: skip
        together = store.params_of(sid, list(range(len(s.params))))
        for p in range(len(s.params)):
            alone = store.series_of(sid, "param", p)
            assert np.array_equal(together[p], alone, equal_nan=True)
            if s.param_edge[p] >= 0:
                assert np.array_equal(alone, _loop(store, sid, s.param_edge[p]), equal_nan=True)
    allkeys = [*w.keys()["params"], *w.keys()["modules"], *w.keys()["edges"]]
    assert np.array_equal(back.table(allkeys), w.table(allkeys), equal_nan=True)


@pytest.mark.parametrize("which", ["edge", "module"])
def test_a_damaged_column_in_a_later_tile_is_an_error_at_each_read(tmp_path, monkeypatch, which):
    """A flipped byte in the third tile's column of a parameter: the series of that parameter
    (or of a small module holding it) is a ValueError naming the checksum, at the first read
    and at the next (the key is never taken as checked); the other keys still read."""
    monkeypatch.setattr(awtile, "tile_steps", lambda k, wanted=0: 8)
    s, steps = _model_steps(30, 2, specials=False)
    path = tmp_path / "w.awwatch"
    _write(path, s, steps)
    good = aw.load_watch(path)
    tile = good.store.tiles[2]
    p = s.params.index("2.0.weight")
    key = s.param_edge[p]
    raw = bytearray(path.read_bytes())
    raw[tile.base + 4 * key * tile.t + 5] ^= 0x10
    (tmp_path / "bad.awwatch").write_bytes(bytes(raw))
    bad = aw.load_watch(tmp_path / "bad.awwatch")
    name = "2.0.weight" if which == "edge" else "2.0"
    for _ in range(2):
        with pytest.raises(ValueError, match="do not match their checksum"):
            bad.series(name)
    assert np.array_equal(bad.series("0.weight"), good.series("0.weight"), equal_nan=True)
