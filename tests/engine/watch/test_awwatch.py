"""The `.awwatch` file (engine/watch/awwatch.py): save/load round trips, the file appended as
training runs, a SIGKILLed training process whose file still loads with every completed step,
a record cut at every byte, and a strict reader: every malformed file is a ValueError naming
what is wrong, and nothing in a file is ever executed (no pickle)."""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import autograd_widget as aw
from autograd_widget.engine.watch import awwatch
from tests.helpers.watchcraft import (
    file_with,
    graph_dict,
    head,
    rec,
    save_v1,
    stp,
    strc,
    watched_step,
)

ROOT = Path(__file__).parents[3]





def small_run(tmp_path, steps=4, every=2, path=True, inject=None):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    target = tmp_path / "run.awwatch" if path else None
    w = aw.watch(model, every=every, path=target)
    for step in range(steps):
        x = torch.randn(2, 3)
        if inject == step:
            x[0, 0] = float("nan")
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        with w.step(loss):
            loss.backward()
        opt.step()
    w.close()
    return w, target


def assert_same(a: aw.Watch, b: aw.Watch):
    assert a.steps == b.steps and a.nonfinite_steps == b.nonfinite_steps
    assert a.every == b.every and len(a.records) == len(b.records)
    for s, t in zip(a.records, b.records):
        assert (s.step, s.watched, s.scale, s.nonfinite_params, s.failure) == (
            t.step, t.watched, t.scale, t.nonfinite_params, t.failure
        )  # fmt: skip
        assert s.loss == t.loss or (s.loss != s.loss and t.loss != t.loss)
        if s.watched:
            for f in ("order", "edge_norms", "param_norms", "slot_norms"):
                assert np.array_equal(getattr(s, f), getattr(t, f), equal_nan=True), f
            assert (s.nonfinite, s.slot_nonfinite, s.births) == (
                t.nonfinite, t.slot_nonfinite, t.births
            )  # fmt: skip
    for x, y in zip(a.structures, b.structures):
        assert x.graph.to_dict() == y.graph.to_dict()
    for k in a.keys()["params"] + a.keys()["modules"]:
        assert np.array_equal(a.series(k), b.series(k), equal_nan=True)
    assert a.first_nonfinite() == b.first_nonfinite()


def test_save_load_and_the_appended_file_are_the_same_watch(tmp_path):
    w, path = small_run(tmp_path, steps=6, every=2, inject=4)
    assert w.path == path and w.nonfinite_steps[0] == 4
    appended = aw.load_watch(path)
    saved = aw.load_watch(w.save(tmp_path / "saved.awwatch"))
    assert_same(w, appended)
    assert_same(w, saved)
    assert appended.warnings == [] and appended.read_only
    assert aw.load_watch(path).recording(4).nonfinite_origins()[0].kind == "born"
    with pytest.raises(RuntimeError, match="loaded from a file"):
        appended.step(torch.ones(1, requires_grad=True).sum())


def test_each_completed_step_is_in_the_file_as_soon_as_it_completes(tmp_path):
    w = aw.watch(path=tmp_path / "live_{rank}.awwatch", every=3)
    x = torch.ones(2, requires_grad=True)
    for step in range(5):
        loss = (x * (step + 1)).sum()
        with w.step(loss):
            loss.backward()
        back = aw.load_watch(tmp_path / "live_0.awwatch")  # read while it is being written
        assert [s.step for s in back.records] == list(range(step + 1))
        assert back.losses()[-1] == 2.0 * (step + 1)
    assert back.steps == [0, 3]
    w.close()


CHILD = textwrap.dedent(
    """
    import sys, torch, autograd_widget as aw
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    w = aw.watch(model, path=sys.argv[1])
    step = 0
    while True:
        x = torch.randn(16, 8)
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        with w.step(loss):
            loss.backward()
        opt.step()
        print("done", step, flush=True)
        step += 1
    """
)


def test_a_killed_training_process_leaves_a_file_with_every_completed_step(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    path = tmp_path / "killed.awwatch"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, str(script), str(path)], stdout=subprocess.PIPE,
                            text=True, env=env, cwd=ROOT)  # fmt: skip
    done = -1
    deadline = time.monotonic() + 120
    try:
        while done < 20 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            if line.startswith("done"):
                done = int(line.split()[1])
        proc.send_signal(signal.SIGKILL)  # mid-training: no cleanup, no close()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    assert done >= 20, "the child did not train"
    w = aw.load_watch(path)
    n = len(w.records)
    assert n >= done + 1  # every step it reported done, maybe one or two more
    assert w.steps == list(range(n)) and np.isfinite(w.series("")).all()
    assert len(w.structures) == 1 and w.recording(n - 1).order


def test_a_record_cut_at_any_byte_loses_only_that_step(tmp_path):
    """Format 2.0: a file cut anywhere (a writer killed at any byte, its tile's pointer and
    index written or not) loads with exactly the steps whose records are whole, each the same
    as in the whole file."""
    _, path = small_run(tmp_path, steps=3, every=1)
    data = path.read_bytes()
    full = aw.load_watch(path)
    store = full.store
    ends = [int(a) + 16 + struct.unpack_from("<Q", data, int(a) + 4)[0]
            for a in store.rows["at"]]  # where each step's record ends  # fmt: skip
    start = data.index(b"TILE")
    bounds, pos = set(), len(awwatch.MAGIC)
    while pos < len(data):  # every record's end: a cut there is a whole file, no warning
        pos += 16 + struct.unpack_from("<Q", data, pos + 4)[0]
        bounds.add(pos)
    for cut in [*range(start, len(data), 97), *(e - 1 for e in ends), *ends]:
        p = tmp_path / "cut.awwatch"
        p.write_bytes(data[:cut])
        back = aw.load_watch(p)
        want = [s for s, e in enumerate(ends) if e <= cut]
        assert [s.step for s in back.records] == want, cut
        assert (back.warnings != []) == (cut not in bounds), cut
        assert all("incomplete" in x for x in back.warnings)
        for s in want:
            a, b = full.record(s), back.record(s)
            for f in ("order", "edge_norms", "param_norms", "slot_norms"):
                assert np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True), (cut, f)
        if want:
            assert np.array_equal(back.series(""), full.series("")[: len(want)])
    p.write_bytes(data[:5])
    with pytest.raises(ValueError, match="does not start with"):
        aw.load_watch(p)
    p.write_bytes(awwatch.MAGIC + head()[:10])
    with pytest.raises(ValueError, match="before its HEAD record is complete"):
        aw.load_watch(p)
    p.write_bytes(awwatch.MAGIC + head())
    assert aw.load_watch(p).records == []


def test_damage_inside_the_file_is_an_error_not_a_silent_loss(tmp_path):
    w, _ = small_run(tmp_path, steps=3, every=1, path=False)
    path = save_v1(w, tmp_path / "v1.awwatch")  # format 1.0 (format 2.0: test_awwatch_tiles.py)
    assert_same(w, aw.load_watch(path))
    data = bytearray(path.read_bytes())
    flipped = bytearray(data)
    flipped[len(flipped) // 2] ^= 0x40
    p = tmp_path / "bad.awwatch"
    p.write_bytes(bytes(flipped))
    with pytest.raises(ValueError, match=r"checksum|malformed|exceeds|claims"):
        aw.load_watch(p)







def test_the_hand_made_good_file_loads(tmp_path):
    p = tmp_path / "good.awwatch"
    doc, arrays = watched_step()
    p.write_bytes(file_with(strc(), stp(doc, arrays)))
    w = aw.load_watch(p)
    assert w.steps == [0] and w.series("x").tolist() == [1.0]


def _bad_graphs():
    def edit(fn):
        d = graph_dict()
        fn(d)
        return d

    return {
        "node id": edit(lambda d: d["nodes"][1].__setitem__("id", "n7")),
        "extra field": edit(lambda d: d["nodes"][0].__setitem__("code", "x")),
        "kind": edit(lambda d: d["nodes"][0].__setitem__("kind", "evil")),
        "name type": edit(lambda d: d["nodes"][0].__setitem__("name", ["a"])),
        "shape": edit(lambda d: d["nodes"][0]["inputs"][0].__setitem__(0, [-1])),
        "edge slot": edit(lambda d: d["edges"][0].__setitem__(3, 5)),
        "edge node": edit(lambda d: d["edges"][0].__setitem__(2, "n99")),
        "edge twice": edit(lambda d: d["edges"].append(list(d["edges"][0]))),
        "root": edit(lambda d: d["roots"].__setitem__(0, ["n42", 0])),
        "format": edit(lambda d: d.__setitem__("format", "other")),
        "not a dict": [1, 2],
    }


@pytest.mark.parametrize("what", list(_bad_graphs()))
def test_malformed_structures_are_value_errors(tmp_path, what):
    p = tmp_path / "g.awwatch"
    p.write_bytes(file_with(strc(_bad_graphs()[what])))
    with pytest.raises(ValueError, match="not a readable autograd_widget watch"):
        aw.load_watch(p)


def _bad_steps():
    doc, arrays = watched_step()
    cases = {}
    for field, value in [("step", "0"), ("step", -1), ("watched", 1), ("loss", [1]),
                         ("loss", "lots"), ("scale", {}), ("structure", 3), ("n_order", 4),
                         ("nonfinite", [[9, 1, 0]]), ("nonfinite", [[0, 1]]),
                         ("births", [[0, "x", "yes"]]), ("births", [[17, "x", True]]),
                         ("failure", ["E", "m"]), ("failure", ["E", "m", 99]),
                         ("nonfinite_params", [3]), ("warnings", "w")]:  # fmt: skip
        cases[f"{field}={value!r}"] = stp({**doc, field: value}, arrays)
    cases["order outside"] = stp(doc, np.array([0, 1, 9], "<i4").tobytes() + arrays[12:])
    cases["arrays short"] = stp(doc, arrays[:-4])
    cases["arrays on unwatched"] = stp({**doc, "watched": False}, arrays)
    cases["json length"] = rec(b"STEP", struct.pack("<I", 1 << 30) + b"{}")
    cases["not json"] = rec(b"STEP", struct.pack("<I", 3) + b"{x}")
    cases["deep json"] = rec(b"STEP", step_payload_raw(b"[" * 100000 + b"]" * 100000))
    cases["unknown tag"] = rec(b"EXEC", b"print('hi')")
    cases["second head"] = head()
    return cases


def step_payload_raw(text: bytes) -> bytes:
    return struct.pack("<I", len(text)) + text


@pytest.mark.parametrize("what", list(_bad_steps()))
def test_malformed_steps_are_value_errors(tmp_path, what):
    p = tmp_path / "s.awwatch"
    p.write_bytes(file_with(strc(), _bad_steps()[what]))
    with pytest.raises(ValueError, match="not a readable autograd_widget watch"):
        aw.load_watch(p)


def test_steps_must_increase_and_structures_come_in_order(tmp_path):
    doc, arrays = watched_step()
    p = tmp_path / "o.awwatch"
    p.write_bytes(file_with(strc(), stp(doc, arrays), stp(doc, arrays)))
    with pytest.raises(ValueError, match=r"step\.step must be an int >= 1"):
        aw.load_watch(p)
    p.write_bytes(file_with(strc(sid=1)))
    with pytest.raises(ValueError, match=r"structure\.id"):
        aw.load_watch(p)


def test_versions_heads_and_limits(tmp_path):
    p = tmp_path / "v.awwatch"
    p.write_bytes(awwatch.MAGIC + head(version=[3, 0]))
    with pytest.raises(ValueError, match="upgrade autograd_widget"):
        aw.load_watch(p)
    p.write_bytes(awwatch.MAGIC + head(version=[2, 0]))
    assert aw.load_watch(p).records == []  # format 2.0 (awtile.py), no step yet
    p.write_bytes(awwatch.MAGIC + head(version=[1, 7], extra="ignored"))
    assert aw.load_watch(p).records == []  # a newer minor version reads
    p.write_bytes(awwatch.MAGIC + head(format="autograd_widget.recording"))
    with pytest.raises(ValueError, match="its format is"):
        aw.load_watch(p)
    p.write_bytes(awwatch.MAGIC + head(every=0))
    with pytest.raises(ValueError, match=r"head\.every"):
        aw.load_watch(p)
    p.write_bytes(awwatch.MAGIC + head(meta={"a": [1]}))
    with pytest.raises(ValueError, match="plain value"):
        aw.load_watch(p)
    p.write_bytes(awwatch.MAGIC + head() + b"STEP" + struct.pack("<Q", 1 << 40) + b"x" * 64)
    with pytest.raises(ValueError, match="claims"):
        aw.load_watch(p)
    p.write_bytes(awwatch.MAGIC + rec(b"STRC", b"{}"))
    with pytest.raises(ValueError, match="first record"):
        aw.load_watch(p)
    with pytest.raises(FileNotFoundError):
        aw.load_watch(tmp_path / "none.awwatch")


def test_a_pickle_in_the_file_is_never_executed(tmp_path):
    import pickle

    marker = tmp_path / "executed"

    class Evil:
        def __reduce__(self):
            return (Path.touch, (marker,))

    payload = pickle.dumps(Evil())
    p = tmp_path / "p.awwatch"
    for data in (payload, awwatch.MAGIC + rec(b"HEAD", payload),
                 file_with(rec(b"STEP", struct.pack("<I", len(payload)) + payload))):  # fmt: skip
        p.write_bytes(data)
        with pytest.raises(ValueError):
            aw.load_watch(p)
    assert not marker.exists()
