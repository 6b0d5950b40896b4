"""autograd_widget.integrations.tensorboard.to_tensorboard: a watch's per-module (or
per-parameter) gradient norms and its losses, read back from the event file with TensorBoard's
own EventAccumulator: every tag, every step, every value equal to `watch.series` (as float32,
NaN kept), `every` honoured, bad input refused with what to do."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

pytest.importorskip("tensorboard")

import autograd_widget as aw
from autograd_widget.integrations.tensorboard import tag_of, to_tensorboard


def read_back(logdir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(logdir), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: acc.Scalars(tag) for tag in acc.Tags()["scalars"]}


def watched_run(every=1, steps=5, nan_at=None):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    w = aw.watch(net, every=every)
    for k in range(steps):
        opt.zero_grad()
        loss = net(torch.randn(3, 4)).pow(2).mean()
        if k == nan_at:
            loss = loss * torch.tensor(float("nan"))
        with w.step(loss):
            loss.backward()
        opt.step()
    return w


def test_module_norms_and_losses_read_back_equal_to_the_series(tmp_path):
    w = watched_run(every=2)
    out = to_tensorboard(w, tmp_path / "tb")
    assert out == tmp_path / "tb" and len(list(out.iterdir())) == 1
    got = read_back(out)
    modules = w.keys()["modules"]
    assert set(got) == {tag_of(m) for m in modules} | {"loss"}
    assert "grad_norm/(model)" in got and "grad_norm/0" in got
    for m in modules:
        events = got[tag_of(m)]
        assert [e.step for e in events] == w.steps == [0, 2, 4]
        np.testing.assert_array_equal([e.value for e in events],
                                      w.series(m).astype(np.float32))  # fmt: skip
    assert [e.step for e in got["loss"]] == list(range(5))
    np.testing.assert_array_equal([e.value for e in got["loss"]], w.losses().astype(np.float32))


def test_parameter_norms_and_a_nan_step_are_written_as_the_series_gives_them(tmp_path):
    w = watched_run(nan_at=3)
    got = read_back(to_tensorboard(w, tmp_path, kind="parameter"))
    params = w.keys()["params"]
    assert set(got) == {tag_of(p) for p in params} | {"loss"}
    values = [e.value for e in got[tag_of("2.weight")]]
    assert math.isnan(values[3]) and np.isfinite(values[:3]).all()
    np.testing.assert_array_equal(values, w.series("2.weight").astype(np.float32))


def test_a_loaded_watch_writes_the_same(tmp_path):
    w = watched_run(steps=2)
    back = aw.Watch.from_file(w.save(tmp_path / "w.awwatch"))
    a = read_back(to_tensorboard(w, tmp_path / "a"))
    b = read_back(to_tensorboard(back, tmp_path / "b"))
    assert {t: [e.value for e in v] for t, v in a.items()} == \
        {t: [e.value for e in v] for t, v in b.items()}  # fmt: skip


def test_bad_input_is_refused_with_what_to_do(tmp_path):
    w = watched_run(steps=1)
    with pytest.raises(ValueError, match="kind must be one of"):
        to_tensorboard(w, tmp_path, kind="edge")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="is a file: give a folder"):
        to_tensorboard(w, tmp_path / "file")
    with pytest.raises(TypeError, match="takes a Watch"):
        to_tensorboard(object(), tmp_path)


def test_the_watch_method_writes_what_the_function_writes(tmp_path):
    w = watched_run(steps=2)
    if not hasattr(w, "to_tensorboard"):
        pytest.skip("Watch.to_tensorboard (the thin door to to_tensorboard) is not added yet")
    out = w.to_tensorboard(tmp_path / "m", kind="parameter")
    assert out == tmp_path / "m"
    a, b = read_back(out), read_back(to_tensorboard(w, tmp_path / "f", kind="parameter"))
    assert {t: [e.value for e in v] for t, v in a.items()} == \
        {t: [e.value for e in v] for t, v in b.items()}  # fmt: skip
