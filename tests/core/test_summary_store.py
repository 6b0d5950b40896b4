"""Summaries of large gradients under keep="summaries" (issue 18, per-node overhead): norm and
finiteness computed as the gradient flows, min/max/mean/std/values completed by one replay the
first time one is read. Whatever the route, every field equals `Summary.of` of the real gradient
(from a keep="tensors" stepper), also for summaries read after the stepper moved on."""

from __future__ import annotations

import pickle

import pytest
import torch

import autograd_widget as aw
from autograd_widget.core.store import SummaryStore
from autograd_widget.core.summary import SMALL_NUMEL, Summary


def _mlp_loss(nonfinite: bool = False) -> tuple[torch.Tensor, torch.nn.Module]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(32, 48), torch.nn.Tanh(), torch.nn.Linear(48, 32), torch.nn.ReLU(),
        torch.nn.Linear(32, 8),
    )  # fmt: skip
    x = torch.randn(24, 32)
    y = model(x)
    if nonfinite:
        y = y * torch.tensor([1.0, float("inf")] * 4)  # inf * 0 grads downstream: NaN, Inf
    return y.pow(2).mean(), model


def _truth(loss: torch.Tensor) -> dict[str, Summary]:
    s = aw.Stepper(aw.capture(loss), keep="tensors")
    s.run()
    return {e: Summary.of(s.edge_grad(e)) for e in s.plan.edge_ids if s.edge_grad(e) is not None}


def _same(a: Summary, b: Summary) -> bool:
    return a.as_dict() == b.as_dict()  # NaN-safe


@pytest.mark.parametrize("nonfinite", [False, True])
@pytest.mark.parametrize("keep", ["summaries", 4096])
def test_every_field_equals_the_real_gradients_summary(nonfinite, keep):
    loss, _ = _mlp_loss(nonfinite)
    truth = _truth(loss)
    assert any(s.numel > SMALL_NUMEL for s in truth.values())  # the lazy route is exercised
    st = aw.Stepper(aw.capture(loss), keep=keep)
    st.run()
    got = st.edge_summaries()
    assert set(got) == set(truth)
    for e, want in truth.items():
        s = got[e]
        # the eager fields first (no replay needed for them), then everything
        assert (s.shape, s.dtype, s.numel, s.nan, s.inf) == (
            want.shape, want.dtype, want.numel, want.nan, want.inf,
        )  # fmt: skip
        assert s.norm == want.norm or (s.norm != s.norm and want.norm != want.norm)
        assert _same(s, want), e
    if nonfinite:
        assert any(not s.finite for s in got.values())


def test_one_replay_completes_every_waiting_summary():
    loss, _ = _mlp_loss()
    st = aw.Stepper(aw.capture(loss))
    st.run()
    store = st._state.store
    waiting = store.waiting_keys()
    assert len(waiting) > 3
    big = [e for e in st.plan.edge_ids if (s := st.edge_summary(e)) and s.numel > SMALL_NUMEL]
    calls = []
    resolve = store.resolver()

    def counting(keys):
        calls.append(len(keys))
        resolve(keys)

    store.resolver = lambda: counting
    assert st.edge_summary(big[0]).min is not None
    assert calls == [len(waiting)] and not store.waiting_keys()
    for e in big[1:]:
        assert st.edge_summary(e).values
    assert len(calls) == 1
    assert st.position == len(st.plan.order)  # the replay left the stepper where it was


@pytest.mark.parametrize("move", ["reset", "back", "edit", "close", "run_again"])
def test_a_summary_held_across_a_move_keeps_its_values(move):
    loss, _ = _mlp_loss()
    truth = _truth(loss)
    g = aw.capture(loss)
    st = aw.Stepper(g)
    st.run()
    big = [e for e in truth if truth[e].numel > SMALL_NUMEL]
    held = {e: st.edge_summary(e) for e in big}
    if move == "reset":
        st.reset()
    elif move == "back":
        for _ in range(len(st.plan.order)):
            st.back()
    elif move == "edit":
        for _ in range(len(st.plan.order) - 1):
            st.back()
        st.scale_edge_grad(st.plan.edge_ids[0], 3.0)  # flowed at step 0, consumed at step 1
        st.run()
    elif move == "close":
        st.close()
    else:
        st.reset()
        st.run()
    for e in big:
        assert _same(held[e], truth[e]), e


def test_lazy_summaries_compare_print_and_pickle_as_summaries():
    loss, _ = _mlp_loss()
    truth = _truth(loss)
    st = aw.Stepper(aw.capture(loss))
    st.run()
    e = next(e for e in truth if truth[e].numel > SMALL_NUMEL)
    s = st.edge_summary(e)
    assert isinstance(s, Summary)
    assert repr(s) == repr(truth[e]) and repr(s).startswith("Summary(shape=")
    back = pickle.loads(pickle.dumps(st.edge_summary(e)))
    assert type(back) is Summary and _same(back, truth[e])
    assert s == truth[e]
    with pytest.raises(TypeError):
        hash(s)


def test_a_summary_read_after_its_graph_closed_says_why():
    loss, _ = _mlp_loss()
    g = aw.capture(loss)
    st = aw.Stepper(g)
    st.run()
    e = next(e for e in st.plan.edge_ids if (s := st.edge_summary(e)) and s.numel > SMALL_NUMEL)
    s = st.edge_summary(e)
    norm = s.norm  # known without the graph
    g.close()
    assert s.norm == norm and s.finite
    with pytest.raises(RuntimeError, match="closed"):
        _ = s.mean


def test_a_store_without_resolver_summarises_large_tensors_at_once():
    store = SummaryStore()
    t = torch.randn(40, 20)
    store.add(0, t)
    assert not store.waiting_keys()
    assert _same(store.get(0), Summary.of(t))


def test_summaries_run_frees_gradients_like_the_engine():
    """Nothing but leaf gradients (and summaries) is held after a keep="summaries" run."""
    loss, model = _mlp_loss()
    st = aw.Stepper(aw.capture(loss))
    st.run()
    held = [v for v in st._state.slots if v is not None]
    assert len(held) == len(list(model.parameters()))
    assert not any(isinstance(v, torch.Tensor) for v in st._state.edge_val)


def test_half_precision_gradients_too():
    torch.manual_seed(0)
    lin = torch.nn.Linear(64, 64)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = lin(torch.randn(32, 64))
    loss = y.float().pow(2).mean()
    truth = _truth(loss)
    assert any(s.dtype == "bfloat16" and s.numel > SMALL_NUMEL for s in truth.values())
    st = aw.Stepper(aw.capture(loss))
    st.run()
    for e, want in truth.items():
        assert _same(st.edge_summary(e), want), e
