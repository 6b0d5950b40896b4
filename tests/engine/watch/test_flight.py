"""aw.watch's flight recorder (`flight=K`, `spike=`) and disk budget (`max_bytes=`): issue 39.3.

- a NaN born at a step `every` skips (step 13, every=10) is found with its birth node and cause,
  in memory and in the file; without the flight recorder it is flagged without them;
- the K steps before and after an event are kept in full; the others as `every` says;
- a spike (the gradient norm jumping by more than `spike` times) is an event;
- `max_bytes`: the file stays under it; the oldest ordinary steps are thinned first, events
  never; a budget below one step is a ValueError at the first step naming the size needed;
- the file loads after the training process is killed (SIGKILL) mid-run;
- gradients are bit-equal to an unwatched twin's with the flight recorder on.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
import torch

import autograd_widget as aw

NAN_AT = 13


def _train(w: aw.Watch | None, steps: int, *, nan_at: int | None = NAN_AT, jump_at: int = -1,
           seed: int = 0, each=None) -> tuple[torch.nn.Module, torch.nn.Parameter, list]:
    """A small model whose extra parameter's sqrt is taken at 0 at step `nan_at` (an Inf born
    in the backward, a NaN in its gradient) and whose loss is scaled x1000 at `jump_at`."""
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    extra = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    grads = []
    for k in range(steps):
        x = torch.randn(5, 4)
        scale = torch.tensor(0.0 if k == nan_at else 1.0)
        gain = 1000.0 if k == jump_at else 1.0
        loss = gain * net(x).pow(2).mean() + (extra * scale).sqrt().sum()
        for p in (*net.parameters(), extra):
            p.grad = None
        if w is None:
            loss.backward()
        else:
            with w.step(loss):
                loss.backward()
        grads.append([p.grad.clone() for p in (*net.parameters(), extra)])
        if each is not None:
            each(k)
    return net, extra, grads


def _births(w: aw.Watch, step: int) -> list[str]:
    st = w.record(step)
    names = w.structures[st.structure].names
    return [names[i] for i in st.births]


# --------------------------------------------------------------------------- the NaN at step 13
def test_a_nan_born_at_a_skipped_step_is_found_with_its_birth_node_and_cause():
    w = aw.watch(every=10, flight=4)
    _train(w, 30)
    w.close()
    found = w.first_nonfinite()
    assert found is not None
    step, origin = found
    assert step == NAN_AT and origin is not None and origin.kind == "born"
    assert "sqrt" in origin.cause.lower()
    assert _births(w, NAN_AT) == ["SqrtBackward0"]
    # the K=4 steps before and after it are kept in full, the others as every=10 says
    assert w.steps == [0, 9, 10, 11, 12, 13, 14, 15, 16, 17, 20]
    assert all(not w.record(k).watched for k in (1, 8, 18, 19, 21, 29))
    assert w.nonfinite_steps == [NAN_AT]


def test_without_the_flight_recorder_the_same_nan_is_flagged_without_its_birth():
    w = aw.watch(every=10)
    _train(w, 30)
    assert w.first_nonfinite() == (NAN_AT, None)  # the step and its parameter, no origin
    assert w.record(NAN_AT).nonfinite_params and not w.record(NAN_AT).watched


def test_the_birth_is_in_the_file_and_found_after_loading(tmp_path):
    path = tmp_path / "run.awwatch"
    with aw.watch(every=10, flight=3, path=path) as w:
        _train(w, 25)
    back = aw.load_watch(path)
    step, origin = back.first_nonfinite()
    assert step == NAN_AT and origin is not None and "sqrt" in origin.cause.lower()
    assert back.steps == w.steps == [0, 10, 11, 12, 13, 14, 15, 16, 20]
    assert back.losses().tolist() == pytest.approx(w.losses().tolist(), nan_ok=True)


def test_the_ring_is_written_when_the_watch_closes(tmp_path):
    path = tmp_path / "run.awwatch"
    w = aw.watch(every=2, flight=5, path=path)
    _train(w, 4, nan_at=None)  # 4 steps, all still in the ring
    assert len(w.records) == 4 and w.steps == [0, 2]
    w.close()
    assert [s.step for s in aw.load_watch(path).records] == [0, 1, 2, 3]


# --------------------------------------------------------------------------- spikes
def test_a_spike_is_an_event_kept_in_full_with_its_neighbours():
    w = aw.watch(every=100, flight=2, spike=10.0)
    _train(w, 12, nan_at=None, jump_at=7)
    w.close()
    assert w.steps == [0, 5, 6, 7, 8, 9]
    series = w.series("")
    assert series[w.steps.index(7)] > 10 * series[w.steps.index(6)]
    calm = aw.watch(every=100, flight=2)  # no spike=: the jump is no event
    _train(calm, 12, nan_at=None, jump_at=7)
    calm.close()
    assert calm.steps == [0]


# --------------------------------------------------------------------------- the disk budget
def _one_step_bytes(tmp_path: Path) -> tuple[int, int]:
    """(bytes of a file holding one full step, bytes one more full step adds)."""
    p = tmp_path / "probe.awwatch"
    with aw.watch(path=p) as w:
        _train(w, 1, nan_at=None)
    one = p.stat().st_size
    p2 = tmp_path / "probe2.awwatch"
    with aw.watch(path=p2) as w:
        _train(w, 2, nan_at=None)
    return one, p2.stat().st_size - one


def _file_bytes(tmp_path: Path, name: str, steps: int, every: int) -> int:
    p = tmp_path / name
    with aw.watch(every=every, path=p) as w:
        _train(w, steps, nan_at=None)
    return p.stat().st_size


def test_the_budget_thins_the_oldest_ordinary_steps_first_and_never_an_event(tmp_path):
    light = _file_bytes(tmp_path, "light.awwatch", 60, 1000)  # 60 losses, one step in full
    full = _file_bytes(tmp_path, "full.awwatch", 60, 1)  # 60 steps in full
    budget = light + int(0.4 * (full - light))  # room for ~24 of the 60 in full
    path = tmp_path / "run.awwatch"
    with aw.watch(every=1, flight=2, max_bytes=budget, path=path) as w:
        _train(w, 60, nan_at=40)
    assert path.stat().st_size <= budget
    back = aw.load_watch(path)
    full = back.steps
    assert [s.step for s in back.records] == list(range(60))  # every loss kept
    assert {38, 39, 40, 41, 42} <= set(full)  # the event and its neighbours: in full
    assert back.first_nonfinite()[0] == 40 and back.first_nonfinite()[1] is not None
    thinned = sorted(set(range(60)) - set(full))
    assert thinned and thinned[0] == 0  # the oldest first
    old, new = [k for k in full if k < 30], [k for k in full if k >= 30]
    assert len(old) < len(new)  # the old half thinned more than the new one
    assert w.steps == list(range(60))  # memory keeps everything


def test_a_budget_too_small_for_one_step_is_a_clear_error_at_the_first_step(tmp_path):
    one, _ = _one_step_bytes(tmp_path)
    path = tmp_path / "run.awwatch"
    w = aw.watch(max_bytes=one - 50, path=path)
    with pytest.raises(ValueError, match=r"max_bytes=\d+ is smaller than .* at least \d+"):
        _train(w, 1, nan_at=None)
    assert not path.exists() or path.stat().st_size == 0
    assert len(w.records) == 1  # the step itself is kept in memory


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"flight": -1}, "flight must be an int >= 0"),
        ({"flight": True}, "flight must be an int >= 0"),
        ({"flight": 2, "spike": 0.5}, "spike must be a number > 1"),
        ({"spike": 3.0}, "spike= needs the flight recorder"),
        ({"max_bytes": 0, "path": "x.awwatch"}, "max_bytes must be an int >= 1"),
        ({"max_bytes": 10_000}, "pass path= too"),
    ],
)
def test_bad_flight_arguments_are_refused_with_the_fix(kw, match):
    with pytest.raises(ValueError, match=match):
        aw.watch(**kw)


# --------------------------------------------------------------------------- gradients, kill
def test_gradients_are_bit_equal_to_an_unwatched_twin_with_the_flight_recorder_on():
    *_, plain = _train(None, 16)
    w = aw.watch(every=10, flight=3)
    *_, watched = _train(w, 16)
    for a, b in zip(plain, watched):
        for x, y in zip(a, b):
            assert torch.equal(x, y) or (x.isnan().any() and torch.equal(x.isnan(), y.isnan()))


CHILD = textwrap.dedent(
    """
    import sys, torch
    sys.path.insert(0, {root!r})
    import autograd_widget as aw
    from tests.engine.watch.test_flight import _train
    w = aw.watch(every=10, flight=3, max_bytes={budget}, path={path!r})
    _train(w, 100_000, nan_at=13, each=lambda k: print("step", k, flush=True))
    """
)


def test_the_file_loads_after_the_process_is_killed(tmp_path):
    budget = _file_bytes(tmp_path, "probe.awwatch", 30, 1)  # 30 steps in full
    path = tmp_path / "killed.awwatch"
    root = str(Path(__file__).resolve().parents[3])
    code = CHILD.format(root=root, budget=budget, path=str(path))
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, cwd=root)  # fmt: skip
    timer = threading.Timer(180, proc.kill)  # never a hang: the child is killed at the latest
    timer.start()
    try:
        seen = -1
        assert proc.stdout is not None
        for line in proc.stdout:  # bounded: the child prints a line per step
            seen = int(line.split()[1])
            if seen >= 60:
                break
        assert seen >= 60
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        timer.cancel()
        proc.kill()
        proc.wait(timeout=60)
    back = aw.load_watch(path)
    steps = [s.step for s in back.records]
    assert steps == list(range(len(steps))) and len(steps) >= 50  # at most the ring is lost
    assert path.stat().st_size <= budget
    step13 = back.record(13)
    assert step13.watched and step13.births  # the event, written at once, survived the kill
    assert math.isnan(back.series("")[back.steps.index(13)])


def test_a_backward_that_raises_is_an_event_and_a_block_without_backward_records_nothing():
    v = torch.tensor([1.0, 2.0], requires_grad=True)
    w = aw.watch(params={"v": v}, every=100, flight=1)
    for k in range(5):
        loss = (v * v).sum()
        if k == 2:
            with pytest.raises(RuntimeError, match="boom"):
                with w.step(loss):
                    h = v.register_hook(lambda g: (_ for _ in ()).throw(RuntimeError("boom")))
                    try:
                        loss.backward()
                    finally:
                        h.remove()
        else:
            with w.step(loss):
                loss.backward()
    with pytest.warns(UserWarning, match="no backward of the loss ran"):
        with w.step((v * v).sum()):
            pass
    w.close()
    assert len(w.records) == 5  # the empty block recorded nothing
    assert w.record(2).failure is not None and w.record(2).failure[0] == "RuntimeError"
    assert w.steps == [0, 1, 2, 3]  # the failure, one step before and after it, in full
