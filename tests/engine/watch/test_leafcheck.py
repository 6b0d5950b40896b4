"""The unwatched steps' check (engine/watch/leafcheck.py, issue 40 part 4): exact at a lower cost.

`leaf_flag` takes a plain sum on CPU instead of a norm; these pin what makes it exact: any NaN or
Inf in any element is flagged (also +inf and -inf together, whose sum is NaN), a finite gradient
whose sum overflows is never flagged (confirmed by counting), half, complex, sparse and
ZeroTensor gradients take the norm, and an unwatched step names exactly the parameters whose
gradient was not finite, through the watch.
"""

from __future__ import annotations

import math

import pytest
import torch

import autograd_widget as aw
from autograd_widget.engine.watch.leafcheck import LeafCheck, leaf_flag

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    "t",
    [
        torch.tensor([1.0, NAN, 2.0]),
        torch.tensor([INF, 1.0]),
        torch.tensor([INF, -INF]),  # a sum of NaN, still flagged
        torch.tensor([[1.0, 2.0], [NAN, 3.0]]).t(),  # not contiguous
        torch.tensor([1.0, NAN], dtype=torch.float64),
        torch.tensor([1.0, NAN], dtype=torch.bfloat16),
        torch.tensor([1 + 1j, complex(NAN, 0)]),
        torch.sparse_coo_tensor([[0, 3]], [1.0, NAN], (5,), check_invariants=True),
    ],
)
def test_any_nan_or_inf_is_flagged(t):
    assert math.isnan(leaf_flag(t))


@pytest.mark.parametrize(
    "t",
    [
        torch.tensor([3e38, 3e38, 3e38]),  # float32: the sum overflows, every element is finite
        torch.full((4,), 1e308, dtype=torch.float64),
        torch.zeros(0),
        torch.tensor([1.0, -2.0]),
        torch.tensor([6e4, 6e4], dtype=torch.float16),
    ],
)
def test_a_finite_gradient_is_never_flagged_even_when_its_sum_overflows(t):
    assert leaf_flag(t) == 0.0


def test_the_sum_replaces_the_norm_on_cpu_floats(monkeypatch):
    from autograd_widget.engine.watch import leafcheck

    normed = []
    monkeypatch.setattr(leafcheck, "norm_of", lambda t: normed.append(t.dtype) or 0.0)
    leaf_flag(torch.ones(3))
    leaf_flag(torch.ones(3, dtype=torch.float64))
    assert normed == []  # float32 and float64 on CPU: no norm taken
    leaf_flag(torch.ones(3, dtype=torch.bfloat16))
    assert normed == [torch.bfloat16]


def test_an_unwatched_step_names_exactly_the_nonfinite_parameters():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    big = torch.nn.Parameter(torch.full((3,), 3e38))  # finite, its sum overflows
    w = aw.watch(net, params={"big": big}, every=2)
    for k in range(3):
        x = torch.randn(2, 3)
        if k == 1:  # unwatched: an Inf into the first layer's weight gradient only
            x[0, 0] = INF
        loss = net(x).sum() + (big * 1.0).sum()
        for p in (*net.parameters(), big):
            p.grad = None
        with w.step(loss):
            loss.backward()
        if k == 1:
            named = {**dict(net.named_parameters()), "big": big}
            bad = tuple(n for n, p in named.items() if not p.grad.isfinite().all())
    st = w.record(1)
    assert not st.watched and "0.weight" in bad and "big" not in bad
    assert set(st.nonfinite_params) == set(bad) and w.nonfinite_steps == [1]


def test_leaf_check_removes_its_hooks_and_counts_passes():
    v = torch.tensor([1.0, 2.0], requires_grad=True)
    loss = (v * v).sum()
    c = LeafCheck([loss], {id(v): "v"})
    c.start()
    loss.backward(retain_graph=True)
    loss.backward(torch.tensor(NAN))
    assert c.finish() == ["v"] and c.passes == 2 and c.handles == []
