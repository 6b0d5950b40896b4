"""aw.record: the engine's own backward, recorded without changing anything the user sees.

Gradients bit-equal with and without recording (`.grad` and `torch.autograd.grad`), the user's
tensor and node hooks fire once, retain_grad works, no hook is left after the block, the user's
exception propagates unchanged with the failing node recorded, retain_graph passes, non-reentrant
checkpoint without CheckpointError, keep budgets, and the recorder's own bugs never reach the
user's backward."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch
from torch.utils.checkpoint import checkpoint

import autograd_widget as aw
from autograd_widget.core.store import SummaryStore
from autograd_widget.engine.record.recorder import Recorder
from tests.helpers.programs import raising
from tests.zoo.models import MODELS, TRANSFORMERS, forward, params


def mlp():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    x = torch.randn(5, 4)
    return model, x


def grads_of(model):
    return [None if p.grad is None else p.grad.clone() for p in model.parameters()]


def assert_bit_equal(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        assert (u is None) == (v is None)
        if u is not None:
            assert u.dtype == v.dtype and u.shape == v.shape
            assert torch.equal(u.view(-1).view(torch.uint8) if u.is_floating_point() else u,
                               v.view(-1).view(torch.uint8) if v.is_floating_point() else v)


def test_order_summaries_and_tensors_match_a_stepper():
    model, x = mlp()
    loss = model(x).pow(2).mean()
    st = aw.Stepper(aw.capture(loss, model=model), keep="tensors")
    st.run()
    with aw.record(loss, model=model, keep="tensors") as rec:
        loss.backward()
    assert rec.order == st.order
    assert [r.step for r in rec.executions] == list(range(len(rec.executions)))
    seqs = [r.seq for r in rec.executions]
    assert seqs == sorted(seqs)
    import threading

    assert {r.thread for r in rec.executions} == {threading.get_ident()}  # CPU: the caller's thread
    assert rec.passes == 1 and rec.failure is None and rec.warnings == []
    assert set(rec.edge_summaries()) == {e.id for e in rec.graph.edges}
    for e in rec.graph.edges:
        assert torch.equal(rec.edge_grad(e), st.edge_grad(e))
        assert rec.edge_summary(e) == aw.Summary.of(st.edge_grad(e))
    # each node's incoming summaries: the root gets ones, the others what their edge carried
    by_node = {r.node: r for r in rec.executions}
    assert by_node["n0"].inputs[0].values == [1.0]
    for e in rec.graph.edges:
        assert by_node[e.dst].inputs[e.input_nr] == rec.edge_summary(e)
    assert all(r.seconds >= 0 for r in rec.executions)
    assert not rec.graph.is_live and rec.meta["rank"] == 0 and rec.meta["keep"] == "tensors"


@pytest.mark.parametrize("name", ["vit", "lstm", "checkpoint", "resnet", "autocast_bf16"])
def test_zoo_gradients_are_bit_equal_with_and_without_recording(name):
    def run(recording):
        torch.manual_seed(0)
        built = MODELS[name]("small")
        loss = forward(built, track=False)
        if recording:
            with aw.record(loss, model=built.model) as rec:
                loss.backward()
            assert rec.warnings == [] and len(rec.order) > 10
            assert rec.first_nonfinite() is None
        else:
            loss.backward()
        return grads_of(built.model)

    assert_bit_equal(run(False), run(True))


@pytest.mark.zoo
@pytest.mark.parametrize("name", TRANSFORMERS)
def test_transformers_record_bit_equal(name):
    pytest.importorskip("transformers")

    def run(recording):
        torch.manual_seed(0)
        built = MODELS[name]("small")
        loss = forward(built, track=False)
        ps = params(built.model)
        if recording:
            with aw.record(loss, model=built.model) as rec:
                out = torch.autograd.grad(loss, ps)
            assert rec.warnings == []
        else:
            out = torch.autograd.grad(loss, ps)
        return list(out)

    assert_bit_equal(run(False), run(True))


def test_autograd_grad_bit_equal_and_accumulate_grad_not_run():
    model, x = mlp()
    loss = model(x).sum()
    ps = list(model.parameters())
    plain = torch.autograd.grad(loss, ps, retain_graph=True)
    with aw.record(loss, model=model) as rec:
        got = torch.autograd.grad(loss, ps)
    assert_bit_equal(list(plain), list(got))
    assert all(p.grad is None for p in ps)
    names = {rec.graph.nodes[n].name for n in rec.order}
    assert "AccumulateGrad" not in names  # the engine captures instead of running them
    for lid in rec.graph.leaves:
        (e,) = rec.graph.in_edges(lid)
        assert rec.edge_summary(e) is not None


def _hooked_program(recording):
    torch.manual_seed(0)
    w = torch.randn(3, requires_grad=True)
    h = w * 2
    h.retain_grad()
    out = h.sin()
    loss = out.sum()
    calls = {"tensor": 0, "leaf": 0, "pre": 0, "post": 0, "acc": 0}

    def tensor_hook(g):
        calls["tensor"] += 1
        return g * 10  # the user's hook changes the gradient: the recording sees the change

    h.register_hook(tensor_hook)
    w.register_hook(lambda g: calls.__setitem__("leaf", calls["leaf"] + 1))
    out.grad_fn.register_prehook(lambda g: calls.__setitem__("pre", calls["pre"] + 1))
    out.grad_fn.register_hook(lambda gi, go: calls.__setitem__("post", calls["post"] + 1))
    w.register_post_accumulate_grad_hook(lambda p: calls.__setitem__("acc", calls["acc"] + 1))
    rec = None
    if recording:
        with aw.record(loss, params={"w": w}) as rec:
            loss.backward(retain_graph=True)
    else:
        loss.backward(retain_graph=True)
    return w, h, loss, calls, rec


def test_user_hooks_fire_once_retain_grad_works_and_no_hooks_are_left():
    w0, h0, _, calls0, _ = _hooked_program(False)
    w, h, loss, calls, rec = _hooked_program(True)
    assert calls == calls0 == {"tensor": 1, "leaf": 1, "pre": 1, "post": 1, "acc": 1}
    assert_bit_equal([w.grad, h.grad], [w0.grad, h0.grad])
    assert torch.equal(w.grad, torch.cos(w.detach() * 2) * 10 * 2)
    mul = rec.graph.nodes[rec.order[2]]
    assert mul.name == "MulBackward0"
    # MulBackward0 received the x10 gradient (the user's tensor hook runs before the node)
    ten = torch.cos(w.detach() * 2) * 10
    assert rec.executions[2].inputs[0] == aw.Summary.of(ten)
    assert rec.edge_summary("n1:0") == aw.Summary.of(torch.cos(w.detach() * 2))  # Sin sent
    n_runs = len(rec.all_executions)
    loss.backward()  # after the block: nothing of the recorder runs any more
    assert len(rec.all_executions) == n_runs and rec.passes == 1
    assert calls == {"tensor": 2, "leaf": 2, "pre": 2, "post": 2, "acc": 2}


def test_no_recorder_hook_left_on_any_node_by_behaviour():
    model, x = mlp()
    loss = model(x).sum()
    rec = aw.record(loss)
    with rec:
        loss.backward(retain_graph=True)
    recorders = [o for o in gc.get_referrers(rec) if isinstance(o, Recorder)]
    assert recorders == [] or all(r.handles == [] for r in recorders)
    counted = []
    orig = Recorder.node_finished
    Recorder.node_finished = lambda self, *a: counted.append(a)  # would see any leftover hook
    try:
        loss.backward()
    finally:
        Recorder.node_finished = orig
    assert counted == []


Boom = raising(ValueError, "boom in backward: custom message")


def test_exception_propagates_unchanged_and_failure_names_the_node():
    w = torch.tensor([1.0, float("inf")], requires_grad=True)
    loss = (Boom.apply(w) * 3).sum()
    with pytest.raises(ValueError) as plain:
        loss.backward(retain_graph=True)
    with pytest.raises(ValueError) as got:
        with aw.record(loss) as rec:
            loss.backward()
    assert type(got.value) is type(plain.value) and str(got.value) == str(plain.value)
    f = rec.failure
    assert isinstance(f, aw.Failure)
    assert rec.graph.nodes[f.node].name == "BoomBackward"
    assert f.error == str(plain.value) and f.error_type == "ValueError"
    assert f.inputs[0].values == [3.0, 3.0] and f.inputs[0].shape == (2,)
    assert rec.order[-1] != f.node and len(rec.order) == 2  # Sum and Mul ran before it
    assert w.grad is None


def test_retain_graph_two_passes_record_the_last():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    loss = (w**2).sum()
    with aw.record(loss, keep="tensors") as rec:
        loss.backward(retain_graph=True)
        loss.backward()
    assert rec.passes == 2 and rec.meta["passes"] == 2
    assert [r.pass_index for r in rec.all_executions] == [0, 0, 0, 1, 1, 1]
    assert [r.pass_index for r in rec.executions] == [1, 1, 1]
    assert [r.step for r in rec.executions] == [0, 1, 2]
    assert rec.order == ["n0", "n1", "n2"]
    assert torch.equal(rec.edge_grad("n1:0"), 2 * w.detach())  # one pass's gradient, not the sum
    assert torch.equal(w.grad, 4 * w.detach())


def test_failure_in_a_second_pass_is_the_last_pass():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    loss = (Boom.apply(w) * 3).sum() + (w * 5).sum()
    with pytest.raises(ValueError):
        with aw.record(loss) as rec:
            torch.autograd.grad((w * 5).sum(), w)  # a different root: not in the graph
            loss.backward()
    assert rec.passes == 1 and rec.failure.pass_index == 0


@pytest.mark.parametrize("zoo", [False, True])
def test_non_reentrant_checkpoint_records_without_checkpoint_error(zoo):
    torch.manual_seed(0)
    if zoo:
        built = MODELS["checkpoint"]("small")
        loss = forward(built, track=True)
        model = built.model
    else:
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
        x = torch.randn(3, 4, requires_grad=True)
        loss = checkpoint(model, x, use_reentrant=False).sum()
    plain = torch.autograd.grad(loss, list(model.parameters()), retain_graph=True)
    with aw.record(loss, model=model, keep="tensors") as rec:
        loss.backward()
    assert rec.warnings == [] and rec.failure is None
    assert_bit_equal(list(plain), [p.grad for p in model.parameters()])
    assert len(rec.edge_summaries()) == len(rec.graph.edges)


def test_keep_budget_keeps_tensors_while_it_lasts():
    torch.manual_seed(0)
    w = torch.randn(100, requires_grad=True)
    loss = (w.exp() * 2).sum()  # three edges of 100 float32 = 400 bytes each
    with aw.record(loss, keep=900) as rec:
        loss.backward()
    assert len(rec.kept_edges) == 2 and len(rec.edge_summaries()) == 3
    loss2 = (w * 2).sum()
    with aw.record(loss2, keep="summaries") as rec2:
        torch.autograd.grad(loss2, w)
    assert rec2.passes == 1 and rec2.kept_edges == [] and rec2.edge_grad("n1:0") is None
    with pytest.raises(ValueError, match="keep must be"):
        aw.record(loss, keep="all")


def test_the_recording_holds_no_torch_graph():
    torch.manual_seed(0)
    w = torch.randn(8, requires_grad=True)
    act = w.exp()  # saved by the next op
    loss = (act * act).sum()
    refs = [weakref.ref(loss), weakref.ref(act)]
    with aw.record(loss, keep="tensors") as rec:
        loss.backward()
    del loss, act
    gc.collect()
    assert all(r() is None for r in refs)
    assert not rec.graph.is_live and len(rec.order) == 4


def test_a_recorder_bug_never_reaches_the_users_backward(monkeypatch):
    model, x = mlp()
    loss = model(x).sum()
    plain = torch.autograd.grad(loss, list(model.parameters()), retain_graph=True)

    def broken(self, key, t):
        raise RuntimeError("recorder bug")

    monkeypatch.setattr(SummaryStore, "add", broken)
    with aw.record(loss) as rec:
        loss.backward()
    assert_bit_equal(list(plain), [p.grad for p in model.parameters()])
    assert any("recorder bug" in w for w in rec.warnings)


def test_nonfinite_first_in_run_order_and_entering_twice_is_refused():
    a = torch.tensor([0.0, 4.0], requires_grad=True)
    loss = (a.sqrt() * 2).sum()
    rec = aw.record(loss)
    with rec:
        loss.backward()
    edge, s = rec.first_nonfinite()
    assert rec.graph.nodes[edge.src].name == "SqrtBackward0" and s.inf == 1
    with pytest.raises(RuntimeError, match="finished"):
        with rec:
            pass
