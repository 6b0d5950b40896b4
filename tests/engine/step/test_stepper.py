"""Hand-written tests of the stepper: API.md's contract, the engine's rules, and the edge cases."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.nn.functional as F

import autograd_widget as aw
from autograd_widget.core.store import SummaryStore
from autograd_widget.core.summary import SMALL_NUMEL, Summary, summarize
from autograd_widget.engine.step.stepper import Difference, Stepper, StepRecord
from tests.helpers.programs import HalfNone, NoMaterialize, Scale, TwoOut

KEEPS = ["tensors", "summaries", 1, 10**9]


def zxy():
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    return x, y, x**2 + y


def engine_grads(roots, inputs, grad_outputs=None):
    return torch.autograd.grad(roots, inputs, grad_outputs, retain_graph=True, allow_unused=True)


def assert_parity(stepper: Stepper, inputs, want) -> None:
    for i, (t, w) in enumerate(zip(inputs, want)):
        got = stepper.grad(t)
        if w is None:
            assert got is None, f"input {i}"
            continue
        assert got is not None, f"input {i}: no gradient"
        assert got.shape == w.shape and got.dtype == w.dtype, f"input {i}"
        torch.testing.assert_close(got, w, msg=f"input {i}")


# --------------------------------------------------------------------------- API.md's example
@pytest.mark.parametrize("keep", KEEPS)
def test_z_equals_x_squared_plus_y_takes_four_steps(keep):
    x, y, z = zxy()
    g = aw.capture(z, params={"x": x, "y": y})
    s = Stepper(g, keep=keep)
    names = [g.nodes[n].name for n in s.order]
    assert names == ["AddBackward0", "AccumulateGrad", "PowBackward0", "AccumulateGrad"]
    assert [g.nodes[n].leaf_name for n in s.order[1::2]] == ["y", "x"]
    assert s.position == 0 and not s.done and s.next_node == s.order[0]

    r0 = s.step()
    assert isinstance(r0, StepRecord) and r0.error is None and r0.called
    assert r0.node.name == "AddBackward0" and r0.index == 0
    assert [float(v) for v in r0.inputs] == [1.0]
    assert {k: float(v) for k, v in r0.outputs.items()} == {"n0:0": 1.0, "n0:1": 1.0}
    r1 = s.step()
    assert r1.node.leaf_name == "y" and not r1.called and not r1.no_gradient
    assert float(s.grad(y)) == 1.0 and s.grad(x) is None
    r2 = s.step()
    assert r2.node.name == "PowBackward0" and float(r2.outputs[f"{r2.node.id}:0"]) == 4.0
    r3 = s.step()
    assert r3.node.leaf_name == "x" and float(r3.inputs[0]) == 4.0
    assert s.done and s.position == 4 and s.step() is None
    assert float(s.grad(x)) == 4.0 and float(s.grad(y)) == 1.0
    assert [r.node.id for r in s.history] == s.order and len(s.history) == 4
    # the history of a summaries stepper holds Summary objects where tensors were freed
    if keep == "summaries":
        assert isinstance(s.history[2].outputs[f"{r2.node.id}:0"], Summary)
    assert x.grad is None and y.grad is None


def test_step_info_waiting_and_next_node():
    _, _, z = zxy()
    s = Stepper(aw.capture(z))
    pow_id = s.order[2]
    assert s.waiting(pow_id) == [None]
    s.step()
    waiting = s.waiting(pow_id)
    assert waiting[0].values == [1.0]
    s.run()
    info = s.step_info(2)
    assert info.node == pow_id and info.called and not info.no_gradient and info.seconds >= 0
    with pytest.raises(IndexError):
        s.step_info(4)
    assert s.next_node is None


# --------------------------------------------------------------------------- back() and keep
def _snapshot(s: Stepper) -> tuple:
    def t(v):
        return None if v is None else (tuple(v.shape), v.dtype, v.detach().flatten().tolist())

    plan = s.plan
    return (
        s.position,
        [t(v) for v in s._state.slots],
        [None if (x := s.edge_summary(e)) is None else x.as_dict() for e in plan.edge_ids],
        [t(s.edge_grad(e)) for e in plan.edge_ids],
        [(r.index, r.called) for r in s.history],
    )


@pytest.mark.parametrize("keep", KEEPS)
def test_back_and_forward_restore_every_state_exactly(keep):
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    x = torch.randn(5, 4)
    loss = F.cross_entropy(model(x), torch.tensor([0, 1, 2, 1, 0])) + model[0].weight.pow(2).sum()
    g = aw.capture(loss, model=model)
    s = Stepper(g, keep=keep)
    forward = [_snapshot(s)]
    while s.step() is not None:
        forward.append(_snapshot(s))
    assert s.done
    for k in range(len(forward) - 1, 0, -1):
        assert _snapshot(s) == forward[k], f"state after back() to {k}"
        s.back()
    assert _snapshot(s) == forward[0]
    s.back()  # a no-op at the start
    assert s.position == 0
    for k in range(1, len(forward)):
        s.step()
        assert _snapshot(s) == forward[k]
    assert_parity(s, list(model.parameters()), engine_grads(loss, list(model.parameters())))


def test_keep_budget_keeps_tensors_until_it_is_used_then_summaries():
    w = torch.randn(64, 64, requires_grad=True)
    x = torch.randn(64, 64, requires_grad=True)
    loss = ((w @ x).tanh() @ w).sum()
    g = aw.capture(loss)
    one_grad = 64 * 64 * 4
    s = Stepper(g, keep=one_grad + 1)
    s.run()
    kept = [e for e in s.plan.edge_ids if s.edge_grad(e) is not None]
    flowed = [e for e in s.plan.edge_ids if s.edge_summary(e) is not None]
    assert 0 < len(kept) < len(flowed)
    # the kept ones are the first to flow, in execution order
    first = [e for k in range(len(s.order)) for e in s.record(k).outputs]
    first = [e for e in first if s.edge_summary(e) is not None]
    assert first[: len(kept)] == kept
    # leaf gradients are always kept
    want = engine_grads(loss, [w, x])
    assert_parity(s, [w, x], want)
    tiny = Stepper(g, keep=1)  # smaller than any gradient: one step's worth kept
    tiny.run()
    assert_parity(tiny, [w, x], want)
    assert sum(tiny.edge_grad(e) is not None for e in tiny.plan.edge_ids) <= 2


@pytest.mark.parametrize("keep", ["summaries", "tensors"])
def test_grad_of_a_non_leaf_replays_when_its_slot_was_freed(keep):
    x = torch.randn(3, 4, requires_grad=True)
    h = x.tanh()
    m = h * h
    loss = (m @ torch.ones(4)).exp().sum()
    g = aw.capture(loss)
    s = Stepper(g, keep=keep)
    s.run()
    want = engine_grads(loss, [h, m, x])
    pos = s.position
    assert_parity(s, [h, m, x], want)
    assert s.position == pos and s.done
    s.back()
    s.back()
    assert_parity(s, [h, m], want[:2])


# --------------------------------------------------------------------------- errors
def test_a_failing_node_is_a_failed_step_with_the_engines_message():
    x = torch.randn(3, requires_grad=True)
    y = x * 2
    z = (y**2).sum()
    y.add_(1)  # modifies a tensor PowBackward0 saved
    with pytest.raises(RuntimeError) as engine_error:
        torch.autograd.grad(z, x, retain_graph=True)
    g = aw.capture(z)
    for keep in ("summaries", "tensors"):
        s = Stepper(g, keep=keep)
        rec = s.run()
        assert rec is not None and not rec.ok
        assert str(engine_error.value) in rec.error
        assert "PowBackward0" in rec.error and rec.node.id in rec.error
        assert s.failure is rec and s.last_error == (rec.node.id, rec.error)
        assert s.position == 1 and s.next_node == rec.node.id
        again = s.step()
        assert again.error == rec.error and s.position == 1
        s.back()
        assert s.position == 0 and s.failure is None
        s.step()
        assert s.position == 1 and s.record(0).ok
        s.reset()
        assert s.position == 0 and s.last_error is None


def test_custom_function_result_checks_use_the_engines_messages():
    class WrongCount(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g

    class WrongShape(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g[:2]

    class NonTensor(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, g

    for fn, extra in ((WrongCount, (2.0,)), (WrongShape, ()), (NonTensor, (2.0,))):
        x = torch.randn(3, requires_grad=True)
        y = fn.apply(x, *extra).sum()
        with pytest.raises(RuntimeError) as engine_error:
            torch.autograd.grad(y, x, retain_graph=True)
        rec = Stepper(aw.capture(y)).run()
        assert rec.error is not None and str(engine_error.value) in rec.error, fn.__name__


def test_implicit_root_gradients_follow_the_engine():
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        Stepper(aw.capture(x * 2))
    c = torch.randn((), dtype=torch.complex64, requires_grad=True)
    with pytest.raises(RuntimeError, match="only for real scalar outputs"):
        Stepper(aw.capture(c * 2))
    one = (x.sum() * 1).reshape(1)  # numel 1, not 0-d: implicit is fine
    s = Stepper(aw.capture(one))
    s.run()
    torch.testing.assert_close(s.grad(x), torch.ones(3))


def test_actionable_errors():
    _, _, z = zxy()
    g = aw.capture(z)
    with pytest.raises(RuntimeError, match="from_dict"):
        Stepper(aw.BackwardGraph.from_dict(g.to_dict()))
    with pytest.raises(ValueError, match="keep must be"):
        Stepper(g, keep="all")
    with pytest.raises(TypeError, match="BackwardGraph"):
        Stepper(z)
    s = Stepper(g)
    with pytest.raises(ValueError, match="not part of the captured graph"):
        s.grad(torch.randn(2, requires_grad=True) * 2)
    with pytest.raises(ValueError, match="does not require grad"):
        s.grad(torch.randn(2))
    with pytest.raises(KeyError, match="no edge"):
        s.edge_summary("n99:0")
    with pytest.raises(KeyError, match="no node"):
        s.run(until="n99")
    s.run()
    with pytest.raises(ValueError, match="already ran"):
        s.run(until=s.order[0])
    with pytest.raises(IndexError):
        s.record(7)
    s.close()
    with pytest.raises(RuntimeError, match="closed"):
        s.step()
    s2 = Stepper(g)
    g.close()
    with pytest.raises(RuntimeError, match="closed"):
        s2.step()


# --------------------------------------------------------------------------- running
def test_run_until_and_breakpoints():
    x = torch.randn(3, requires_grad=True)
    loss = x.exp().sin().tanh().sum()
    g = aw.capture(loss)
    s = Stepper(g)
    names = [g.nodes[n].name for n in s.order]
    assert names == [
        "SumBackward0",
        "TanhBackward0",
        "SinBackward0",
        "ExpBackward0",
        "AccumulateGrad",
    ]
    rec = s.run(until=s.order[1])
    assert rec.node.id == s.order[1] and s.position == 2
    assert s.break_at(lambda n: n.name == "ExpBackward0") == [s.order[3]]
    assert not s.at_breakpoint
    s.run()
    assert s.position == 3 and s.at_breakpoint  # stopped BEFORE the breakpoint node
    s.run()  # starts on the breakpoint: runs it and goes on
    assert s.done
    s.reset()
    s.break_at(s.order[2])
    assert s.breakpoints == [s.order[2], s.order[3]]
    s.run()
    assert s.position == 2
    s.clear_breakpoints(s.order[2])
    assert s.breakpoints == [s.order[3]]
    s.clear_breakpoints()
    assert s.breakpoints == [] and s.run() is not None and s.done
    assert s.run() is None


def test_listeners_and_batch():
    _, _, z = zxy()
    s = Stepper(aw.capture(z))
    seen = []
    s.add_listener(lambda st: seen.append(st.position))
    s.step()
    s.run()
    s.back()
    s.reset()
    assert seen == [1, 4, 3, 0]
    with s.batch():
        s.step()
        s.step()
    assert seen[-1] == 2 and len(seen) == 5
    s.remove_listener(seen.append)  # not registered: nothing happens
    s.close()


# --------------------------------------------------------------------------- engine rules
def test_leaf_used_twice_gets_both_edges_summed():
    x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    loss = (x * x).sum()
    g = aw.capture(loss)
    acc = g.leaves[0]
    assert len(g.in_edges(acc)) == 2
    s = Stepper(g, keep="tensors")
    s.run()
    torch.testing.assert_close(s.grad(x), 2 * x.detach())
    mul = next(n for n in g.nodes.values() if n.name == "MulBackward0")
    rec = s.record(s.step_index(mul.id))
    assert len(rec.outputs) == 2 and all(v is not None for v in rec.outputs.values())


def test_broadcast_bias_is_reduced_with_sum_to_size():
    torch.manual_seed(0)
    w = torch.randn(4, 3, requires_grad=True)
    b = torch.randn(3, requires_grad=True)
    b2 = torch.randn(1, 3, requires_grad=True)
    x = torch.randn(6, 4)
    loss = ((x @ w + b) * b2).pow(2).mean()
    g = aw.capture(loss)
    s = Stepper(g)
    s.run()
    assert_parity(s, [w, b, b2], engine_grads(loss, [w, b, b2]))
    assert s.grad(b).shape == (3,) and s.grad(b2).shape == (1, 3)


def test_mixed_dtypes_are_cast_to_the_destination():
    a = torch.randn(3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3, dtype=torch.float32, requires_grad=True)
    loss = (a * b).sum().float()
    s = Stepper(aw.capture(loss))
    s.run()
    assert s.grad(a).dtype == torch.float64 and s.grad(b).dtype == torch.float32
    assert_parity(s, [a, b], engine_grads(loss, [a, b]))


def test_split_and_unbind_with_unused_outputs():
    x = torch.randn(6, 4, requires_grad=True)
    a, _b, c = x.split(2)
    r0, _r1, r2 = x.unbind(1)[:3]
    loss = (a * 2).sum() + c.exp().sum() + (r0 * r2).sum()
    g = aw.capture(loss)
    s = Stepper(g)
    s.run()
    assert_parity(s, [x], engine_grads(loss, [x]))
    split = next(n for n in g.nodes.values() if n.name == "SplitBackward0")
    rec = s.record(s.step_index(split.id))
    assert rec.inputs[1] is None and rec.inputs[0] is not None  # the unused piece: empty slot
    assert not s.compare_with_engine()


def test_multiple_roots_with_grad_outputs_and_a_root_feeding_another():
    torch.manual_seed(0)
    w = torch.randn(4, 3, requires_grad=True)
    x = torch.randn(3, requires_grad=True)
    y = w @ x  # a root AND an input of the next root
    z = y.tanh().sum()
    gos = [torch.randn(4), None, torch.tensor(2.0)]
    roots = [y, z, (x**2).sum()]
    g = aw.capture(roots, grad_outputs=gos)
    s = Stepper(g, keep="tensors")
    s.run()
    assert_parity(s, [w, x, y], engine_grads(roots, [w, x, y], gos))
    assert s.compare_with_engine() == []


def test_order_is_the_engines_on_a_diamond_with_interleaved_sequence_numbers():
    def build():
        torch.manual_seed(3)
        x = torch.randn(4, requires_grad=True)
        a = x.sin()
        b = x.cos()
        c = a * b
        d = (a.exp() + c).sum() + b.sum()
        return x, d

    _, d = build()
    s = Stepper(aw.capture(d))
    _, d2 = build()
    g2 = aw.capture(d2)
    seen = []
    hs = [
        fn.register_prehook(lambda _g, i=i: seen.append(f"n{i}"))
        for i, fn in enumerate(g2._live.fns)
    ]
    d2.backward()
    for h in hs:
        h.remove()
    assert s.order == seen


# --------------------------------------------------------------------------- custom Functions
def test_custom_functions_follow_the_engine():
    x = torch.randn(5, requires_grad=True)
    b = torch.randn(5, requires_grad=True)
    scaled = Scale.apply(x, 3.0, "tag")  # non-tensor args: results None for them
    sin_part, _unused = TwoOut.apply(scaled)  # second output unused: zeros materialised
    u, _v = NoMaterialize.apply(x)  # set_materialize_grads(False): gets None for v
    h = HalfNone.apply(x, b)  # returns None for b although b requires grad
    loss = sin_part.sum() + u.sum() + h.sum()
    g = aw.capture(loss)
    kinds = {n.name: n.kind for n in g.nodes.values()}
    assert kinds["ScaleBackward"] == kinds["NoMaterializeBackward"] == "custom_function"
    s = Stepper(g, keep="tensors")
    s.run()
    assert_parity(s, [x, b], engine_grads(loss, [x, b]))
    assert s.grad(b) is None
    nomat = next(n for n in g.nodes.values() if n.name == "NoMaterializeBackward")
    assert s.record(s.step_index(nomat.id)).inputs[1] is None
    assert s.compare_with_engine() == []


def test_custom_function_with_all_slots_empty_is_still_called_like_the_engine_does():
    calls = []

    class Spy(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            calls.append(g)
            return g * 2

    x = torch.randn(3, requires_grad=True)
    w = torch.randn(3, requires_grad=True)
    loss = (HalfNone.apply(w, Spy.apply(x))).sum()  # Spy's only slot receives None
    want = engine_grads(loss, [x, w])
    assert calls and torch.equal(calls[0], torch.zeros(3))  # the engine called it with zeros
    calls.clear()
    s = Stepper(aw.capture(loss))
    s.run()
    assert calls and torch.equal(calls[0], torch.zeros(3))
    assert_parity(s, [x, w], want)  # x gets zeros, not None, exactly like the engine


def test_a_builtin_node_with_no_gradient_is_recorded_not_called():
    x = torch.randn(3, requires_grad=True)
    w = torch.randn(3, requires_grad=True)
    loss = HalfNone.apply(w, x.exp()).sum()
    g = aw.capture(loss)
    s = Stepper(g)
    s.run()
    exp = next(n for n in g.nodes.values() if n.name == "ExpBackward0")
    rec = s.record(s.step_index(exp.id))
    assert rec.no_gradient and not rec.called and rec.inputs == (None,)
    assert s.step_info(rec.index).no_gradient
    assert s.grad(x) is None and engine_grads(loss, [x])[0] is None


# --------------------------------------------------------------------------- diagnostics
@pytest.mark.parametrize("keep", ["summaries", "tensors"])
def test_first_nonfinite_finds_the_first_nan_or_inf_edge(keep):
    x = torch.tensor([1.0, 0.0, 4.0], requires_grad=True)
    w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    loss = (x.sqrt() * w).sum()  # d sqrt(x)/dx at 0 = inf
    g = aw.capture(loss)
    s = Stepper(g, keep=keep)
    s.run()
    edge, summ = s.first_nonfinite()
    assert g.nodes[edge.src].name == "SqrtBackward0" and summ.inf == 1 and summ.nan == 0
    assert math.isinf(summ.max)
    y = torch.tensor([1.0, 0.0], requires_grad=True)
    loss2 = (y.sqrt() * 0).sum() + (y * 2).sum()  # 0 * inf = nan
    s2 = Stepper(aw.capture(loss2), keep=keep)
    s2.run()
    edge2, summ2 = s2.first_nonfinite()
    assert summ2.nan == 1 and s2.graph.nodes[edge2.src].name == "SqrtBackward0"
    s3 = Stepper(aw.capture(zxy()[2]), keep=keep)
    s3.run()
    assert s3.first_nonfinite() is None


def test_compare_with_engine_catches_x10_hooks_on_a_leaf_and_a_non_leaf():
    torch.manual_seed(0)
    x = torch.randn(3, requires_grad=True)
    h = torch.randn(3, requires_grad=True)
    m = x * 2
    m.register_hook(lambda g: g * 10)
    h.register_hook(lambda g: g * 10)
    loss = (m * h).sum()
    loss.retain_grad()
    g = aw.capture(loss)
    s = Stepper(g)
    s.step()
    diffs = s.compare_with_engine()
    assert s.position == 1  # untouched by the comparison
    assert all(isinstance(d, Difference) for d in diffs)
    by = {(d.kind, g.nodes[d.node].name): d for d in diffs}
    slot = by[("slot", "MulBackward0")]  # m's grad_fn (x * 2) receives 10x what we computed
    assert slot.slot == 0 and slot.engine.norm == pytest.approx(10 * slot.manual.norm, rel=1e-5)
    leaf_h = next(d for d in diffs if d.kind == "leaf" and d.node == g.gradient_edge(h)[0])
    assert leaf_h.max_abs_diff > 0 and leaf_h.engine.norm == pytest.approx(10 * leaf_h.manual.norm)
    assert any(d.kind == "leaf" and d.node == g.gradient_edge(x)[0] for d in diffs)
    json.dumps([d.as_dict() for d in diffs], allow_nan=False)
    # nothing of the user's changed: no .grad, the retained root grad untouched, hooks as before
    assert x.grad is None and h.grad is None and loss.grad is None
    assert len(m._backward_hooks) == 1 and len(h._backward_hooks) == 1
    for fn in g._live.fns:
        probe = fn.register_prehook(lambda _g: None)
        assert len(probe.hooks_dict_ref()) == 1
        probe.remove()
    loss.backward()
    torch.testing.assert_close(h.grad, 10 * (2 * x).detach())


def test_compare_with_engine_removes_its_hooks_when_the_engine_raises():
    x = torch.randn(3, requires_grad=True)
    y = x * 2
    z = (y**2).sum()
    y.add_(1)
    g = aw.capture(z)
    s = Stepper(g)
    with pytest.raises(RuntimeError, match="inplace operation"):
        s.compare_with_engine()
    for fn in g._live.fns:
        probe = fn.register_prehook(lambda _g: None)
        assert len(probe.hooks_dict_ref()) == 1
        probe.remove()


# --------------------------------------------------------------------------- create_graph
def test_create_graph_gives_gradients_with_a_graph_that_can_be_stepped():
    torch.manual_seed(0)
    x = torch.randn(4, requires_grad=True)
    w = torch.randn(4, requires_grad=True)
    y = (x.sin() * w).pow(2).sum()
    s = Stepper(aw.capture(y), create_graph=True)
    s.run()
    gx = s.grad(x)
    assert gx.grad_fn is not None
    loss2 = (gx**2).sum() + (s.grad(w) * x).sum()
    s2 = Stepper(aw.capture(loss2))
    s2.run()
    ex, ew = torch.autograd.grad(y, [x, w], create_graph=True)
    want = torch.autograd.grad((ex**2).sum() + (ew * x).sum(), [x, w])
    assert_parity(s2, [x, w], want)
    assert x.grad is None and w.grad is None


# --------------------------------------------------------------------------- complex
def test_complex_tensors():
    torch.manual_seed(0)
    z = torch.randn(4, dtype=torch.complex64, requires_grad=True)
    r = torch.randn(4, requires_grad=True)
    loss = ((z * r).exp() * z.conj()).abs().sum() + torch.view_as_real(z).pow(2).sum()
    g = aw.capture(loss)
    s = Stepper(g, keep="summaries")
    s.run()
    assert_parity(s, [z, r], engine_grads(loss, [z, r]))
    assert s.grad(z).dtype == torch.complex64 and s.grad(r).dtype == torch.float32
    complex_edges = [v for v in s.edge_summaries().values() if v.dtype == "complex64"]
    assert complex_edges and all(len(v.values[0]) == 2 for v in complex_edges)
    assert s.compare_with_engine() == []


# --------------------------------------------------------------------------- a real model
def test_twelve_layer_transformer_under_track():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(
        64, nhead=4, dim_feedforward=128, dropout=0.0, batch_first=True
    )
    model = torch.nn.TransformerEncoder(layer, 12, enable_nested_tensor=False)
    x = torch.randn(2, 8, 64)
    with aw.track(model):
        out = model(x)
    loss = out.pow(2).mean()
    g = aw.capture(loss, model=model)
    params = list(model.parameters())
    want = engine_grads(loss, params)
    for keep in ("summaries", "tensors"):
        s = Stepper(g, keep=keep)
        assert s.run().error is None and s.done
        assert_parity(s, params, want)
    assert all(p.grad is None for p in params)
    assert s.compare_with_engine() == []


# --------------------------------------------------------------------------- untouched
def test_nothing_of_the_users_is_touched():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2))
    x = torch.randn(4, 3, requires_grad=True)
    h = model[0](x)
    out = model[2](model[1](h))
    loss = out.pow(2).sum()
    tensors = [x, h, out, loss, *model.parameters()]
    versions = [t._version for t in tensors]
    want = engine_grads(loss, [x, *model.parameters()])
    g = aw.capture(loss, model=model)
    for keep in KEEPS:
        s = Stepper(g, keep=keep)
        s.run()
        s.back()
        s.grad(h)
        s.first_nonfinite()
        s.compare_with_engine()
        s.close()
    assert [t._version for t in tensors] == versions
    assert all(t.grad is None for t in tensors if t.is_leaf)
    assert all(not t._backward_hooks for t in tensors)
    loss.backward()
    for t, w in zip([x, *model.parameters()], want):
        torch.testing.assert_close(t.grad, w)


def test_deep_chain_steps_and_tears_down_safely():
    """60k nodes: past the depth where a leaf-first teardown segfaults (AUTOGRAD_FACTS.md).
    The stepper holds no node objects; run in a subprocess so a crash fails only this test."""
    code = textwrap.dedent(
        """
        import torch, autograd_widget as aw
        from autograd_widget.engine.step.stepper import Stepper
        x = torch.randn(4, requires_grad=True)
        y = x
        for _ in range(60_000):
            y = y * 1.00001
        loss = y.sum()
        want = torch.autograd.grad(loss, x, retain_graph=True)[0]
        g = aw.capture(loss)
        s = Stepper(g)
        s.run()
        assert s.done and torch.equal(s.grad(x), want)
        s.close()
        del s
        g.close()
        del g, y, loss
        print("ok")
        """
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-2000:]


# --------------------------------------------------------------------------- summaries
def _expect(t: torch.Tensor, s: Summary) -> None:
    x = t.detach()
    x = x.abs().double() if x.is_complex() else x.double()
    assert s.shape == tuple(t.shape) and s.numel == t.numel()
    assert s.dtype == str(t.dtype).removeprefix("torch.")
    assert s.nan == int(torch.isnan(t).sum()) and s.inf == int(torch.isinf(t).sum())
    if t.numel() == 0:
        assert s.min is None and s.max is None and s.mean is None and s.std is None
        assert s.values == [] and s.norm == 0.0
        return
    if s.finite:
        assert s.min == float(x.min()) and s.max == float(x.max())
        assert s.mean == pytest.approx(float(x.mean()), rel=1e-5, abs=1e-6)
        assert s.norm == pytest.approx(float(torch.linalg.vector_norm(x)), rel=1e-5)
        if t.numel() > 1:
            assert s.std == pytest.approx(float(x.std()), rel=1e-4, abs=1e-6)
    if t.numel() == 1:
        assert s.std is None
    listed = t.detach().reshape(-1)[: t.numel() if t.numel() <= 64 else 8]
    if t.is_complex():
        listed = torch.view_as_real(listed)
    elif t.dtype in (torch.float16, torch.bfloat16):
        listed = listed.float()
    assert repr(s.values) == repr(listed.tolist())  # repr: NaN-safe, and ints stay ints


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.tensor(3.5),
        lambda: torch.randn(5),
        lambda: torch.randn(64),
        lambda: torch.randn(65),
        lambda: torch.randn(40, 30),
        lambda: torch.randn(30, 40).t(),  # dense, not contiguous
        lambda: torch.randn(5, 1).expand(5, 300),  # overlapping
        lambda: torch.randn(600)[::2],  # gappy
        lambda: torch.randn(3, 4, dtype=torch.float64),
        lambda: torch.randn(500, dtype=torch.float16),
        lambda: torch.randn(10, dtype=torch.bfloat16),
        lambda: torch.randint(-5, 5, (20,)),
        lambda: torch.randint(-5, 5, (400,)),
        lambda: torch.rand(7) > 0.5,
        lambda: torch.randn(6, dtype=torch.complex64),
        lambda: torch.randn(300, dtype=torch.complex128),
        lambda: torch.empty(0, 3),
        lambda: torch.full((10,), 0.1),
        lambda: torch.full((1000,), 0.1),
        lambda: torch.tensor([1.0, float("nan"), float("inf"), -float("inf")]),
        lambda: torch.cat([torch.randn(500), torch.tensor([float("nan"), float("inf")])]),
    ],
)
def test_summary_statistics(make):
    t = make()
    one = Summary.of(t)
    _expect(t, one)
    assert [x.as_dict() for x in summarize([t, t])] == [one.as_dict()] * 2  # NaN-safe ==
    json.dumps(one.as_dict(), allow_nan=False)
    if t.numel() and torch.all(t == t.flatten()[0]):
        assert one.std in (0.0, None)  # a constant is exactly 0, not a rounding residue


def test_summaries_are_batched_and_views_reuse_statistics():
    store = SummaryStore()
    small = [torch.randn(4) for _ in range(10)]
    for i, t in enumerate(small):
        store.add(i, t)
    assert store.pending == 10
    big = torch.randn(64, 32)
    store.add(100, big)  # large: summarised at once
    store.add(101, big.t())  # a view of it: statistics reused, values its own
    store.add(102, big.view(-1))
    assert store.pending == 10
    got, want = store.get(3), Summary.of(small[3])  # batched vs single: float64 both ways
    assert store.pending == 0 and got.values == want.values and got.shape == want.shape
    assert got.min == want.min and got.max == want.max
    for field in ("norm", "mean", "std"):
        assert getattr(got, field) == pytest.approx(getattr(want, field), rel=1e-12)
    for key, t in ((100, big), (101, big.t()), (102, big.view(-1))):
        got, want = store.get(key), Summary.of(t)
        assert got.shape == want.shape and got.values == want.values
        assert got.min == want.min and got.max == want.max
        assert got.norm == pytest.approx(want.norm) and got.mean == pytest.approx(want.mean)
    assert SMALL_NUMEL < 64 * 32


@pytest.mark.parametrize("keep", KEEPS)
def test_a_partial_leaf_gradient_handed_out_is_never_modified_later(keep):
    """Fan-in sums may be accumulated in place when nobody else holds them (like the engine);
    a tensor the user got from grad() must never change under them."""
    x = torch.randn(5, requires_grad=True)
    branches = [x * (i + 1.0) for i in range(6)]
    loss = torch.stack(branches).sum()
    g = aw.capture(loss)
    s = Stepper(g, keep=keep)
    held = []
    while s.step() is not None:
        got = s.grad(x)
        if got is not None:
            held.append((got, got.clone()))
    assert len(held) >= 6
    for t, copy in held:
        assert torch.equal(t, copy)
    assert_parity(s, [x], engine_grads(loss, [x]))
    s.reset()
    s.run()
    assert_parity(s, [x], engine_grads(loss, [x]))


def test_unshared_partial_sums_are_accumulated_in_place():
    import weakref

    x = torch.randn(5, requires_grad=True)
    loss = torch.stack([x * (i + 1.0) for i in range(6)]).sum()
    s = Stepper(aw.capture(loss), keep="summaries")
    seen = []
    while s.step() is not None:
        got = s.grad(x)
        if got is not None:
            seen.append((weakref.ref(got), got.clone()))
        del got
    # an object seen earlier is still the leaf's sum, now holding a different value: updated in
    # place (nobody held it), exactly as the engine's InputBuffer does
    assert any(r() is not None and not torch.equal(r(), v) for r, v in seen)
    assert_parity(s, [x], engine_grads(loss, [x]))


# --------------------------------------------------------------------------- the benchmark
def _bench_module():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parents[3] / "benchmarks" / "bench_stepper.py"
    spec = importlib.util.spec_from_file_location("bench_stepper", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_stepper"] = mod  # dataclasses resolve annotations through sys.modules
    try:
        spec.loader.exec_module(mod)
    finally:
        del sys.modules["bench_stepper"]
    return mod


def test_benchmark_runs_at_tiny_sizes_and_keeps_other_sections(tmp_path, capsys):
    bench = _bench_module()
    threads = torch.get_num_threads()
    try:
        assert bench.main(["--tiny", "--repeats", "1"]) == 0
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    assert "chain 200 nodes" in out and "summaries" in out
    results = tmp_path / "RESULTS.md"
    results.write_text("# Benchmark results\n\n<!-- other:start -->\nkeep me\n<!-- other:end -->\n")
    bench.write_section("stepper", "first\n", results)
    bench.write_section("stepper", "second\n", results)
    text = results.read_text()
    assert "keep me" in text and "second" in text and "first" not in text
    assert text.count("<!-- stepper:start -->") == 1


class NoneBack(torch.autograd.Function):
    """Sends no gradient back: the nodes before it get every slot empty."""

    @staticmethod
    def forward(ctx, a):
        return a * 1

    @staticmethod
    def backward(ctx, g):
        return None


@pytest.mark.parametrize("bend", ["stale", "freed"])
def test_a_node_with_every_slot_empty_fails_where_the_engine_fails(bend):
    # The engine invokes a built-in node even when none of its slots got a gradient, and the node
    # unpacks its saved tensors first: a stale or freed one raises there (found by test_fuzz).
    x = torch.randn(3, requires_grad=True)
    e = x.exp()  # ExpBackward0 saves its result
    loss = NoneBack.apply(e).sum() + x.sum()
    if bend == "stale":
        with torch.no_grad():
            e.add_(1)
    else:
        torch.autograd.grad(loss, x, retain_graph=False)
    with pytest.raises(RuntimeError) as engine:
        torch.autograd.grad(loss, x, retain_graph=True)
    if bend == "freed":
        with pytest.warns(UserWarning, match="already freed by backward"):
            g = aw.capture(loss)
    else:
        g = aw.capture(loss)
    s = Stepper(g)
    rec = s.run()
    assert rec is not None and rec.error is not None and rec.node.name == "ExpBackward0"
    assert str(engine.value).splitlines()[0] in rec.error
    assert s.failure is rec and not s.done


def test_a_node_with_every_slot_empty_is_still_no_gradient():
    x = torch.randn(3, requires_grad=True)
    loss = NoneBack.apply(x.exp()).sum() + x.sum()
    s = Stepper(aw.capture(loss))
    s.run()
    assert s.done
    (rec,) = [r for r in s.history if r.node.name == "ExpBackward0"]
    assert not rec.called and all(v is None for v in rec.outputs.values())
    assert torch.equal(s.grad(x), torch.ones(3))
