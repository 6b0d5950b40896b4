"""Summaries of gradients that have no storage: torch's efficient ZeroTensors (issue 15).

`torch.sgn`'s backward (and a few others) return a ZeroTensor: no storage, so `.tolist()`,
`.item()` and data pointers fail on it. Every summary path treats it as the zeros it stands for.
"""

from __future__ import annotations

import pytest
import torch

import autograd_widget as aw
from autograd_widget.core.store import SummaryStore
from autograd_widget.core.summary import Summary, summarize


def _sgn_loss(shape, dtype=torch.float64):
    x = torch.randn(shape, dtype=dtype, requires_grad=True)
    return x, torch.sgn(x).sum()


def _zero_tensor(shape, dtype=torch.float64):
    x, loss = _sgn_loss(shape, dtype)
    (g,) = torch.autograd.grad(loss, x)
    assert g._is_zerotensor()
    return g


@pytest.mark.parametrize("shape", [(), (3,), (2, 40), (0,), (300,)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_zero_tensor_is_summarised_as_the_zeros_it_stands_for(shape, dtype):
    zt = _zero_tensor(shape, dtype)
    expected = Summary.of(torch.zeros(shape, dtype=dtype))
    assert Summary.of(zt) == expected
    assert summarize([zt, torch.ones(2, dtype=dtype)])[0] == expected
    store = SummaryStore()
    store.add(0, zt)
    assert store.get(0) == expected


@pytest.mark.parametrize("keep", ["summaries", "tensors", 64])
def test_default_stepper_and_widget_run_through_sgn(keep):
    x, loss = _sgn_loss((5,))
    (engine,) = torch.autograd.grad(loss, x, retain_graph=True)
    g = aw.capture(loss)
    st = aw.Stepper(g, keep=keep)
    st.run()
    assert st.done and st.failure is None
    got = st.grad(x)
    assert got.shape == engine.shape and got.dtype == engine.dtype and torch.equal(got, engine)
    leaf, _ = g.gradient_edge(x)
    (into_leaf,) = g.in_edges(leaf)
    assert st.edge_summary(into_leaf) == Summary.of(torch.zeros(5, dtype=torch.float64))
    assert st.compare_with_engine() == []
    w = aw.explore(loss, keep=keep)
    w.stepper.run()
    w.stepper.back()
    w.stepper.run()
    assert w.stepper.done and w.stepper.failure is None
