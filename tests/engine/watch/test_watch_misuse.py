"""aw.watch misused is never silent (issue 38 part 3, issue 40's "silent traps").

- `watch.step(loss)` without `with`: a warning at once when the unentered block is collected (a
  bare statement), else at the next `watch.step(...)`; once per block; nothing recorded.
- a block in which no backward of its loss ran: a warning, nothing recorded (no step of NaN
  norms), the step number given to the next block, a structure first seen there forgotten; a
  block that raised before its backward is still recorded with its failure.
- several backward passes in one block: one step that keeps every pass, a warning naming the
  count; each norm is the passes' norms taken together (sqrt of the sum of squares), counts
  added, and a NaN/Inf of ANY pass is flagged (watched and unwatched steps).
- `series("")` is the parameters' norm only, never an input tensor's gradient.
- `first_nonfinite()` is None on a finite run; the docs never unpack it unchecked.
"""

from __future__ import annotations

import gc
import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import autograd_widget as aw
from autograd_widget.engine.watch.watch import NO_BACKWARD, UNENTERED

ROOT = Path(__file__).resolve().parents[3]


def _net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))


def _caught():
    return warnings.catch_warnings(record=True)


def _messages(caught) -> list[str]:
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


# --------------------------------------------------------------------------- without `with`
def test_a_bare_step_call_warns_at_its_own_line_and_records_nothing():
    net = _net()
    w = aw.watch(net)
    loss = net(torch.ones(2, 3)).sum()
    with _caught() as caught:
        warnings.simplefilter("always")
        w.step(loss); line = _line()  # noqa: E702  (the warning must name THIS line)
        loss.backward()
    assert _messages(caught) == [UNENTERED]
    assert caught[0].filename == __file__ and caught[0].lineno == line
    assert "with watch.step(loss): loss.backward()" in UNENTERED
    assert w.records == [] and w.steps == []


def _line() -> int:
    import sys

    return sys._getframe(1).f_lineno


def test_a_kept_unentered_block_warns_at_the_next_step_call_once():
    net = _net()
    w = aw.watch(net)
    kept = w.step(net(torch.ones(2, 3)).sum())  # e.g. a notebook's Out[] keeps it alive
    with _caught() as caught:
        warnings.simplefilter("always")
        loss = net(torch.ones(2, 3)).sum()
        with w.step(loss):
            loss.backward()
        del kept
        gc.collect()
    assert _messages(caught) == [UNENTERED]  # at the next step(), and not again when collected
    assert w.steps == [0]


def test_an_entered_block_never_warns_and_cannot_be_entered_twice():
    net = _net()
    w = aw.watch(net)
    loss = net(torch.ones(2, 3)).sum()
    with _caught() as caught:
        warnings.simplefilter("always")
        block = w.step(loss)
        with block:
            loss.backward(retain_graph=True)
        with pytest.raises(RuntimeError, match="entered already"):
            with block:
                loss.backward()
        del block
        gc.collect()
    assert _messages(caught) == []
    assert w.steps == [0]


# --------------------------------------------------------------------------- no backward
@pytest.mark.parametrize("every", [1, 2])
def test_a_block_without_backward_warns_and_records_nothing(every):
    net = _net()
    w = aw.watch(net, every=every)
    x = torch.ones(2, 3)
    for _ in range(2):  # a first watched step, so the second block is unwatched when every=2
        loss = net(x).sum()
        with w.step(loss):
            loss.backward()
    before = (len(w.records), len(w.structures))
    with pytest.warns(UserWarning) as caught:
        with w.step(net(x).sum()):
            pass  # the backward was forgotten
    assert [str(c.message) for c in caught] == [NO_BACKWARD]
    assert (len(w.records), len(w.structures)) == before  # no step of NaN norms
    assert not np.isnan(w.series("")).any()
    loss = net(x).sum()
    with w.step(loss) as b:
        loss.backward()
    assert b.number == 2  # the number of the empty block went to this one
    assert [s.step for s in w.records] == [0, 1, 2]


def test_a_first_block_without_backward_leaves_no_structure_behind():
    net = _net()
    w = aw.watch(net)
    with pytest.warns(UserWarning, match="no backward of the loss ran"):
        with w.step(net(torch.ones(2, 3)).sum()):
            pass
    assert w.structures == [] and w.records == [] and w.keys()["edges"] == []


def test_a_backward_of_another_graph_is_no_backward_of_the_blocks_loss():
    net = _net()
    w = aw.watch(net)
    with pytest.warns(UserWarning, match="no backward of the loss ran"):
        with w.step(net(torch.ones(2, 3)).sum()):
            net(torch.ones(2, 3)).sum().backward()  # a fresh forward: not the block's loss
    assert w.records == []


def test_a_block_that_raises_before_its_backward_is_still_recorded_with_its_failure():
    net = _net()
    w = aw.watch(net)
    with pytest.raises(KeyError):
        with w.step(net(torch.ones(2, 3)).sum()):
            raise KeyError("the user's own error, before the backward")
    assert len(w.records) == 1 and w.records[0].failure[0] == "KeyError"


# --------------------------------------------------------------------------- several passes
@pytest.mark.parametrize("every", [1, 2])
def test_several_passes_are_one_step_with_a_warning_and_every_pass_nan_flagged(every):
    w_ = torch.tensor([1.0, 2.0], requires_grad=True)
    watch = aw.watch(params={"w": w_}, every=every)
    if every == 2:  # step 0 watched; the block below is the unwatched step 1
        loss = (w_ * w_).sum()
        with watch.step(loss):
            loss.backward()
    loss = (w_ * w_).sum()
    with pytest.warns(UserWarning) as caught:
        with watch.step(loss):
            loss.backward(torch.tensor(math.nan), retain_graph=True)  # a NaN pass ...
            loss.backward()  # ... then a finite one
    msg = [str(c.message) for c in caught]
    assert len(msg) == 1 and "2 backward passes ran inside one watch.step block" in msg[0]
    assert "its own `with watch.step(...)` block" in msg[0]
    st = watch.records[-1]
    assert st.nonfinite_params == ("w",)  # the first pass's NaN is not hidden by the second
    assert watch.nonfinite_steps == [st.step]
    if st.watched:  # every pass kept: the NaN pass leaves the step's norm NaN, one order
        assert math.isnan(watch.series("w")[-1])
        assert len(watch.recording(st.step).order) == 3
        assert "the square root of the sum of their squares" in msg[0]


@pytest.mark.parametrize("grads", [(1.0, 1.0), (3.0, -0.5), (0.0, 2.0)])
def test_several_passes_keep_every_pass_norms_taken_together(grads):
    """Two passes with different incoming gradients: each edge's norm is sqrt(a^2 + b^2) of the
    two passes' norms (the last pass alone, before issue 40, gave b)."""
    w_ = torch.tensor([1.0, 2.0], requires_grad=True)
    watch = aw.watch(params={"w": w_})
    loss = (w_ * w_).sum()
    with pytest.warns(UserWarning, match="2 backward passes"):
        with watch.step(loss):
            for g in grads:
                loss.backward(torch.tensor(g), retain_graph=True)
    per_pass = [abs(g) * float((2 * w_.detach()).norm()) for g in grads]
    assert watch.series("w")[0] == pytest.approx(math.hypot(*per_pass), rel=1e-6)
    first = watch.series("n0:0")[0]  # sum -> mul: g * ones(2), sqrt(2) |g| per pass
    assert first == pytest.approx(math.hypot(*(abs(g) * math.sqrt(2) for g in grads)), rel=1e-6)
    # the .grad the passes accumulated is untouched by the watch: their sum
    assert torch.equal(w_.grad, sum(g * 2 * w_.detach() for g in grads))


def test_several_passes_keep_a_birth_of_the_first_pass_with_its_counts():
    """A NaN born in the first pass only (its incoming gradient made it 0 * inf) stays born in
    the step; the second, finite pass does not hide it."""
    w_ = torch.tensor([0.0, 4.0], requires_grad=True)
    watch = aw.watch(params={"w": w_})
    loss = w_.sqrt().sum()
    with pytest.warns(UserWarning, match="2 backward passes"):
        with watch.step(loss):
            loss.backward(torch.tensor(1.0), retain_graph=True)  # sqrt at 0: an Inf born
            loss.backward(torch.tensor(1.0), retain_graph=True)
    st = watch.records[0]
    assert st.nonfinite_params == ("w",) and st.births
    (_node, (cause, _)), = st.births.items()
    assert "sqrt" in cause
    counts = [c for c in st.nonfinite.values()]
    assert counts and all(c[1] == 2 for c in counts)  # one Inf per pass, added


def test_one_pass_gives_no_warning():
    w_ = torch.tensor([1.0, 2.0], requires_grad=True)
    watch = aw.watch(params={"w": w_}, every=2)
    with _caught() as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            loss = (w_ * w_).sum()
            with watch.step(loss):
                loss.backward()
    assert _messages(caught) == [] and watch.warnings == []


# --------------------------------------------------------------------------- series("")
def test_the_whole_model_series_counts_parameters_not_an_input_gradient():
    net = _net()
    w = aw.watch(net)
    x = torch.full((2, 3), 1000.0, requires_grad=True)  # an input that requires grad
    loss = net(x).sum() + (x * 1000.0).sum()  # its gradient dwarfs the parameters'
    with w.step(loss):
        loss.backward()
    expected = math.sqrt(sum(float(p.grad.pow(2).sum()) for p in net.parameters()))
    assert w.series("")[0] == pytest.approx(expected, rel=1e-5)
    inputs = [k for k in w.keys()["params"] if k.startswith("input")]
    assert len(inputs) == 1
    assert w.series(inputs[0])[0] == pytest.approx(float(x.grad.norm()), rel=1e-5)


def test_params_named_tensors_count_in_the_whole_model():
    a = torch.tensor([3.0], requires_grad=True)
    b = torch.tensor([4.0], requires_grad=True)
    w = aw.watch(params={"a": a})
    loss = (a * b).sum()
    with w.step(loss):
        loss.backward()
    assert w.series("").tolist() == [4.0]  # a's gradient only: b is an unnamed input


# --------------------------------------------------------------------------- first_nonfinite
def test_first_nonfinite_is_none_on_a_finite_run_and_the_docs_check_it():
    net = _net()
    w = aw.watch(net)
    loss = net(torch.ones(2, 3)).sum()
    with w.step(loss):
        loss.backward()
    assert w.first_nonfinite() is None
    unchecked = re.compile(r"^\s*(>>>\s*)?\w+\s*,\s*\w+\s*=\s*\w+\.first_nonfinite\(\)", re.M)
    for page in [*ROOT.glob("docs/*.md"), ROOT / "autograd_widget/engine/watch/watch.py"]:
        assert not unchecked.search(page.read_text(encoding="utf-8")), page
