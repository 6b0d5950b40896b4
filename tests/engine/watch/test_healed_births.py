"""A NaN/Inf born and healed within one watched step is offered by `first_nonfinite()`, marked
"healed" (engine/watch/watchfirst.py), never hidden behind "no NaN"."""

from __future__ import annotations

import torch
from torch import nn

import autograd_widget as aw


def _healed_model():
    """A relu in front of a sqrt: sqrt's derivative at the relu's zeros is Inf, and relu's
    backward zeroes it: every parameter gradient comes out finite."""
    torch.manual_seed(0)
    fc, x = nn.Linear(4, 3), torch.randn(5, 4)
    return fc, lambda: torch.sqrt(torch.relu(fc(x))).sum()


def _steps(w, loss_of, n, bad_at=None):
    for k in range(n):
        loss = loss_of() if k != bad_at else loss_of() * float("nan")
        with w.step(loss):
            loss.backward()


def test_a_healed_nan_is_offered_marked_healed():
    fc, loss_of = _healed_model()
    w = aw.watch(fc)
    _steps(w, loss_of, 3)
    assert all(torch.isfinite(p.grad).all() for p in fc.parameters())
    assert w.nonfinite_steps == []  # the parameters' gradients are finite...
    found = w.first_nonfinite()
    assert found is not None  # ...but the step had an Inf gradient: it is not hidden
    step, origin = found
    names = w.structures[w.record(step).structure].graph.nodes
    assert step == 0 and origin.kind == "healed"
    assert names[origin.node].name == "ReluBackward0"
    assert origin.cause.startswith("healed: a NaN/Inf born at ")
    assert "(SqrtBackward0: saved `result` has " in origin.cause
    assert w.first_nonfinite(healed=False) is None


def test_a_real_nonfinite_step_comes_before_a_healed_one():
    fc, loss_of = _healed_model()
    w = aw.watch(fc)
    _steps(w, loss_of, 3, bad_at=2)
    step, origin = w.first_nonfinite()
    assert step == 2 and origin.kind == "born"


def test_a_healed_step_that_was_not_watched_is_not_seen():
    fc, loss_of = _healed_model()
    w2 = aw.watch(fc, every=5)
    loss = (fc(torch.ones(1, 4)) ** 2).sum()
    with w2.step(loss):  # step 0 watched, finite
        loss.backward()
    _steps(w2, loss_of, 1)  # step 1: healed, unwatched (only its parameters are checked)
    assert w2.first_nonfinite() is None


def test_a_healed_step_reloaded_from_its_file_is_still_offered(tmp_path):
    fc, loss_of = _healed_model()
    with aw.watch(fc, path=tmp_path / "run.awwatch") as w:
        _steps(w, loss_of, 1)
    back = aw.load_watch(tmp_path / "run.awwatch")
    step, origin = back.first_nonfinite()
    assert step == 0 and origin.kind == "healed" and origin.cause.startswith("healed: ")
