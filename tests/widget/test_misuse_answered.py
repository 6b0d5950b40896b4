"""Three more mistakes, each answered where it is made (issue 38 part 3).

1. An `aw.record` block in which no backward ran: a `UserWarning` at the block, the sentence in
   `rec.warnings`, and `aw.explore(rec)` shows it as its notice instead of a bare "step 0 / 0".
2. `aw.formula(loss.grad_fn)`: the node's formula (not an AttributeError about `rsplit`); a
   tensor or anything else: a TypeError saying what to pass.
3. `aw.explore(model)`: a TypeError saying to pass the loss or the output, with `model=`.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import autograd_widget as aw
from autograd_widget.engine.record.recorder import EMPTY_RECORDING


def _net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))


# --------------------------------------------------------------------------- 1. empty record
def test_an_empty_record_block_warns_and_the_widget_says_so():
    net = _net()
    loss = net(torch.ones(2, 3)).sum()
    with pytest.warns(UserWarning) as caught:
        with aw.record(loss, model=net) as rec:
            pass  # the backward was forgotten
    assert [str(c.message) for c in caught] == [EMPTY_RECORDING]
    assert caught[0].filename == __file__
    assert "loss.backward()" in EMPTY_RECORDING and "inside the block" in EMPTY_RECORDING
    assert rec.passes == 0 and rec.warnings == [EMPTY_RECORDING]
    w = aw.explore(rec)
    try:
        assert w._state["notice"].startswith("No backward of the recorded graph ran")
    finally:
        w.close()


def test_a_recorded_block_with_a_backward_is_silent_and_has_no_notice():
    net = _net()
    loss = net(torch.ones(2, 3)).sum()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with aw.record(loss, model=net) as rec:
            loss.backward()
        w = aw.explore(rec)
    try:
        assert [str(c.message) for c in caught] == [] and rec.warnings == []
        assert w._state["notice"] is None
    finally:
        w.close()


def test_a_block_that_raised_before_its_backward_keeps_its_exception_and_no_empty_warning():
    loss = _net()(torch.ones(2, 3)).sum()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(KeyError):
            with aw.record(loss):
                raise KeyError("the user's own error")
    assert [str(c.message) for c in caught] == []


# --------------------------------------------------------------------------- 2. formula(node)
def test_formula_of_a_live_node_is_its_types_formula():
    x = torch.randn(3, requires_grad=True)
    loss = (x.exp() * 2).sum()
    assert aw.formula(loss.grad_fn) == aw.formula("SumBackward0") is not None
    mul = loss.grad_fn.next_functions[0][0]
    assert aw.formula(mul) == aw.formula("MulBackward0")
    acc = mul.next_functions[0][0].next_functions[0][0]
    assert type(acc).__name__ == "AccumulateGrad"
    assert aw.formula(acc) == aw.formula("AccumulateGrad")


@pytest.mark.parametrize("bad", [torch.ones(2, requires_grad=True), 3, None, ["MulBackward0"]])
def test_formula_of_something_else_says_what_to_pass(bad):
    with pytest.raises(TypeError) as err:
        aw.formula(bad)
    msg = str(err.value)
    assert "loss.grad_fn" in msg and "MulBackward0" in msg
    assert "rsplit" not in msg


# --------------------------------------------------------------------------- 3. explore(model)
@pytest.mark.parametrize("module", [_net(), torch.nn.Linear(2, 2)], ids=["sequential", "linear"])
def test_explore_of_a_module_says_to_pass_the_loss_with_model(module):
    with pytest.raises(TypeError) as err:
        aw.explore(module)
    msg = str(err.value)
    assert type(module).__name__ in msg
    assert "aw.explore(model(x).sum(), model=model)" in msg
