"""The fast paths of issue 18's per-node overhead work stay exact: the memcmp equality the engine
comparison trusts, the comparison done inside the engine's pre-hooks (same list as the engine-first
route), the norm a view of a gradient reuses (never after an in-place change), and the in-place
fan-in add into a slot's first gradient (only when nothing else can see that tensor)."""

from __future__ import annotations

import torch

import autograd_widget as aw
from autograd_widget.core.store import SummaryStore
from autograd_widget.core.summary import Summary
from autograd_widget.engine.step.bitequal import same_bits
from autograd_widget.engine.step.compare import compare, differences, manual_pass, run_engine
from autograd_widget.engine.step.fanin import stealable


def test_same_bits_says_true_only_for_identical_values():
    t = torch.randn(5, 7)
    assert same_bits(t, t.clone()) and same_bits(t, t)
    u = t.clone()
    u[2, 3] = u[2, 3].nextafter(torch.tensor(float("inf")))  # one ulp apart
    assert not same_bits(t, u)
    assert not same_bits(t, t.double())  # dtype
    assert not same_bits(t, t.reshape(7, 5))  # shape
    assert not same_bits(t.t(), t.t().clone())  # not contiguous: torch.equal decides
    c = torch.randn(4, dtype=torch.complex64)
    assert not same_bits(c.conj(), c)  # the same bytes, a pending conjugate bit
    assert not same_bits(torch.zeros(0), torch.ones(1))
    assert same_bits(torch.zeros(0), torch.zeros(0))


def _hooked_loss():
    torch.manual_seed(0)
    lin = torch.nn.Linear(6, 5)
    x = torch.randn(4, 6, requires_grad=True)
    h = torch.tanh(lin(x))
    h.register_hook(lambda g: g * 10)  # the engine sees this, manual stepping does not
    return (h * h).sum() + h.mean(), lin


def test_compare_inside_the_hooks_lists_what_the_engine_first_route_lists():
    loss, _ = _hooked_loss()
    g = aw.capture(loss)
    st = aw.Stepper(g)
    plan, seeds = st.plan, st._state.seeds
    want = differences(g, plan, run_engine(g, plan), *manual_pass(g, plan, seeds))
    got = compare(g, plan, seeds)
    assert want and [(d.kind, d.node, d.slot, d.max_abs_diff) for d in got] == [
        (d.kind, d.node, d.slot, d.max_abs_diff) for d in want
    ]
    public = st.compare_with_engine()
    assert [(d.kind, d.node, d.slot) for d in public] == [(d.kind, d.node, d.slot) for d in got]


def test_compare_finds_nothing_on_a_faithful_graph_and_leaves_no_grad():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    loss = model(torch.randn(3, 8)).pow(2).sum()
    st = aw.Stepper(aw.capture(loss))
    assert st.compare_with_engine() == []
    assert all(p.grad is None for p in model.parameters())


def _lazy_store() -> SummaryStore:
    store = SummaryStore()
    store.resolver = lambda: None  # eager norms, as a stepper's store
    return store


def test_a_view_reuses_the_norm_only_while_the_memory_is_unchanged():
    t = torch.randn(40, 30)
    store = _lazy_store()
    store.add(0, t)
    store.add(1, t.view(30, 40))  # same memory, same order: the same norm
    assert store.get(1).norm == store.get(0).norm == Summary.of(t).norm
    t.mul_(3)  # in place: the remembered norm is stale
    store.add(2, t.view(-1))
    assert store.get(2).norm == Summary.of(t).norm != store.get(0).norm


def test_a_reused_norm_never_outlives_the_tensor_it_came_from():
    store = _lazy_store()
    a = torch.ones(600)
    store.add(0, a)
    ptr = a.data_ptr()
    del a
    b = torch.full((600,), 2.0)  # may land at the same address
    store.add(1, b)
    assert store.get(1).norm == Summary.of(b).norm != Summary.of(torch.ones(600)).norm
    del ptr


def test_stealable_refuses_every_tensor_another_can_see():
    t = torch.ones(8)
    assert stealable(t)
    v = t[2:]
    assert not stealable(t) and not stealable(v)  # shared storage, a view
    del v
    assert stealable(t)
    assert not stealable(torch.ones(4, 2).t().contiguous().t())  # not contiguous
    assert not stealable(torch.ones(3, requires_grad=True))
    a = torch.randn(5, requires_grad=True)
    out = a.exp()  # ExpBackward saves its result: shares out's storage
    assert not stealable(out.detach())
    c = torch.randn(3, dtype=torch.complex64)
    assert not stealable(c.conj())


def test_fan_in_in_place_keeps_every_gradient_and_the_inputs_intact():
    torch.manual_seed(0)
    w = torch.randn(16, 16, requires_grad=True)
    x = torch.randn(4, 16)
    h = x @ w
    parts = [h.tanh(), h.sigmoid(), h * 2, h.relu()]  # four contributions into h's slot
    loss = sum(p.sum() for p in parts) + h.pow(2).mean()
    want = torch.autograd.grad(loss, w, retain_graph=True)[0]
    for keep in ("summaries", "tensors", 4096):
        st = aw.Stepper(aw.capture(loss), keep=keep)
        st.run()
        assert torch.equal(st.grad(w), want), keep
        assert st.compare_with_engine() == []
        assert w.grad is None
