"""aw.watch: gradient flow across training steps, recorded without changing what the user sees.

Gradients and `.grad` bit-equal with and without watching, the user's hooks fire once, nothing
stays attached after a step (also when it raises), norms equal the real gradients' (edges,
parameters, modules), the engine's order, `every`, unwatched steps' non-finite flags, tied
weights, `torch.autograd.grad`, retain_graph passes, non-reentrant checkpoint, AMP autocast and
a GradScaler (named, not an explosion), the recording of a step, bad inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch.utils.checkpoint import checkpoint

import autograd_widget as aw
from autograd_widget.engine.watch.lean import LeanPass
from tests.helpers.programs import raising
from tests.zoo.models import MODELS, forward


def mlp(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))


def train(model, steps, watch=None, lr=0.1, seed=1, inject=None):
    """SGD on random data; `inject(step, x)` may poison a batch. Returns the per-step grads."""
    torch.manual_seed(seed)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    grads = []
    for step in range(steps):
        x = torch.randn(5, 4)
        if inject is not None:
            x = inject(step, x)
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        if watch is None:
            loss.backward()
        else:
            with watch.step(loss):
                loss.backward()
        grads.append([p.grad.clone() for p in model.parameters()])
        opt.step()
    return grads


def bits(t):
    return t.contiguous().view(-1).view(torch.uint8)


def assert_bit_equal(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        assert u.dtype == v.dtype and u.shape == v.shape and torch.equal(bits(u), bits(v))


def canon(order, nodes):
    """The order with each run of consecutive AccumulateGrad nodes sorted (the engine's order
    among AccumulateGrad nodes ready together is unspecified; the watch puts them in output
    order, as the stepper does)."""
    out, run = [], []
    for n in order:
        if nodes[n].name == "AccumulateGrad":
            run.append(n)
            continue
        out += [*sorted(run), n]
        run = []
    return out + sorted(run)


def test_training_is_bit_equal_and_every_step_is_watched_by_default():
    plain = train(mlp(), 4)
    model = mlp()
    w = aw.watch(model)
    watched = train(model, 4, w)
    for a, b in zip(plain, watched):
        assert_bit_equal(a, b)
    assert w.steps == [0, 1, 2, 3] and w.nonfinite_steps == [] and w.warnings == []
    assert len(w.structures) == 1  # the same graph each step: captured once
    assert w.first_nonfinite() is None


def test_norms_equal_the_real_gradients_and_the_order_is_the_engines():
    torch.manual_seed(0)
    built = MODELS["vit"]("small")
    loss = forward(built, track=False)
    with aw.record(loss, model=built.model, keep="tensors") as rec:
        loss.backward(retain_graph=True)
    for p in built.model.parameters():
        p.grad = None
    w = aw.watch(built.model)
    with w.step(loss):
        loss.backward()
    st, s = w.records[0], w.structures[0]
    assert [f"n{i}" for i in st.order] != [] and w.warnings == []
    assert canon([f"n{i}" for i in st.order], rec.graph.nodes) == canon(rec.order, rec.graph.nodes)
    for k, eid in enumerate(s.edge_ids):
        g = rec.edge_grad(eid)
        if g is None:
            assert math.isnan(st.edge_norms[k])
        else:
            assert st.edge_norms[k] == pytest.approx(g.double().norm().item(), rel=1e-5, abs=1e-30)
    named = dict(built.model.named_parameters())
    for name in s.params:
        want = named[name].grad.double().norm().item()
        assert w.series(name)[0] == pytest.approx(want, rel=1e-5)
    # a module: its parameters' gradients together
    mod = "blocks.0"
    ps = [p for n, p in named.items() if n.startswith(mod + ".")]
    want = math.sqrt(sum(p.grad.double().norm().item() ** 2 for p in ps))
    assert w.series(mod)[0] == pytest.approx(want, rel=1e-5)
    assert w.series("")[0] == pytest.approx(
        math.sqrt(sum(p.grad.double().norm().item() ** 2 for p in named.values())), rel=1e-5
    )


def test_rearranging_nodes_repeat_their_input_norm_without_a_pass(monkeypatch):
    from autograd_widget.engine.watch import lean

    w = torch.randn(6, 4, requires_grad=True)
    loss = (w.t().reshape(3, 8)[1:] * 2).sum()
    p = LeanPass.of([loss])
    normed = []
    real = lean.norm_of
    monkeypatch.setattr(lean, "norm_of", lambda t: normed.append(tuple(t.shape)) or real(t))
    p.start()
    loss.backward()
    r = p.finish(None)
    names = p.s.names
    by_name = {names[p.s.edge_src[e]]: r.edge_norms[e] for e in range(len(p.s.edge_ids))}
    # slice, unsafe view, clone and transpose send what they got, rearranged: the same norm,
    # taken from the input (one norm for the whole chain below the multiplication)
    chain = ["SliceBackward0", "UnsafeViewBackward0", "CloneBackward0", "TBackward0"]
    assert len({float(by_name[n]) for n in chain}) == 1
    assert by_name["TBackward0"] == pytest.approx(w.grad.norm().item())
    assert normed == [(), (2, 8), (2, 8)]  # the root, the sum and the multiplication only


def test_every_and_unwatched_steps_flag_nonfinite_parameter_gradients():
    def poison(step, x):
        if step == 3:  # an unwatched step (every=2)
            x = x.clone()
            x[0, 0] = float("inf")
        return x

    model = mlp()
    w = aw.watch(model, every=2)
    train(model, 6, w, inject=poison)
    assert w.steps == [0, 2, 4]
    assert [s.watched for s in w.records] == [True, False, True, False, True, False]
    assert set(w.records[3].nonfinite_params) >= {"0.weight"}
    step, origin = w.first_nonfinite()
    assert step == 3 and origin is None  # unwatched: the step, not where
    assert len(w.series("0.weight")) == 3 and len(w.losses()) == 6
    # tanh saturates: the loss of step 3 stays finite, its gradients do not; its update breaks
    # the weights, so every later step is non-finite (and watched step 4 shows where)
    assert np.isfinite(w.losses()[:4]).all() and np.isnan(w.losses()[4:]).all()
    assert w.nonfinite_steps == [3, 4, 5]


def test_a_nan_injected_at_a_watched_step_is_found_at_its_birth_node_with_its_cause():
    w = torch.tensor([1.0, 4.0, 9.0], requires_grad=True)
    watch = aw.watch(params={"w": w})
    for step in range(4):
        v = w * (0.0 if step == 2 else 1.0)  # step 2: a zero under the square root
        loss = v.sqrt().sum()
        with watch.step(loss):
            loss.backward()
        w.grad = None
    assert watch.nonfinite_steps == [2]
    step, origin = watch.first_nonfinite()
    rec = watch.recording(2)
    assert step == 2 and origin.kind == "born"
    assert rec.graph.nodes[origin.node].name == "SqrtBackward0"
    assert origin.cause == "saved `result` has 3 zeros: the derivative of sqrt at 0 is infinite"
    edge = rec.graph.out_edges(origin.node)[0]
    s = rec.edge_summary(edge)
    assert s.inf == 3 and s.nan == 0 and math.isinf(s.norm)
    # the Inf meets the multiplication by 0.0 on its way to w: NaN there
    assert np.isfinite(watch.series("w")[[0, 1, 3]]).all() and math.isnan(watch.series("w")[2])


def test_user_hooks_fire_once_and_nothing_stays_attached():
    calls = {"tensor": 0, "pre": 0, "post": 0, "acc": 0, "leaf": 0}
    w = torch.randn(3, requires_grad=True)
    w.register_hook(lambda g: calls.__setitem__("leaf", calls["leaf"] + 1))
    w.register_post_accumulate_grad_hook(lambda p: calls.__setitem__("acc", calls["acc"] + 1))
    h = w * 2
    h.register_hook(lambda g: (calls.__setitem__("tensor", calls["tensor"] + 1), g * 10)[1])
    out = h.sin()
    out.grad_fn.register_prehook(lambda g: calls.__setitem__("pre", calls["pre"] + 1))
    out.grad_fn.register_hook(lambda gi, go: calls.__setitem__("post", calls["post"] + 1))
    loss = out.sum()
    watch = aw.watch(params={"w": w})
    with watch.step(loss):
        loss.backward(retain_graph=True)
    assert calls == {"tensor": 1, "pre": 1, "post": 1, "acc": 1, "leaf": 1}
    want = torch.cos(w.detach() * 2) * 10 * 2
    assert torch.equal(w.grad, want)
    # the parameter's norm is what reached it (after the x10 hook), not the edge before it
    assert watch.series("w")[0] == pytest.approx(want.norm().item())
    n_steps = len(watch.records)
    seen = []
    orig = LeanPass.node_done
    LeanPass.node_done = lambda self, *a: seen.append(a)  # would see any leftover hook
    try:
        loss.backward()
    finally:
        LeanPass.node_done = orig
    assert seen == [] and len(watch.records) == n_steps
    assert calls["post"] == 2 and w._backward_hooks is not None  # (the user's own hook)
    p = torch.nn.Parameter(torch.ones(2))
    watch2 = aw.watch(params={"p": p}, every=2)
    for _ in range(2):
        loss = (p * 3).sum()
        with watch2.step(loss):
            loss.backward()
    assert p._backward_hooks is None  # no tensor hook was ever put on the parameter


def test_exception_propagates_unchanged_and_the_failing_node_is_recorded():
    boom = raising(ValueError, "boom in backward")
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    watch = aw.watch(params={"w": w})
    loss = (boom.apply(w) * 3).sum()
    with pytest.raises(ValueError, match="boom in backward"):
        with watch.step(loss):
            loss.backward()
    st = watch.records[0]
    assert st.failure[:2] == ("ValueError", "boom in backward")
    rec = watch.recording(0)
    assert rec.graph.nodes[rec.failure.node].name == "BoomBackward"
    assert rec.failure.inputs[0].norm == pytest.approx(torch.full((2,), 3.0).norm().item())
    assert w.grad is None
    # the step counted; the next one works and nothing of the failed step is left attached
    loss = (w * 2).sum()
    with watch.step(loss):
        loss.backward()
    assert watch.steps == [0, 1] and torch.equal(w.grad, torch.full((2,), 2.0))


def test_tied_weights_autograd_grad_and_retain_graph_passes():
    emb = torch.nn.Parameter(torch.randn(5, 3))
    ids = torch.tensor([0, 2, 4])
    loss = (emb[ids] @ emb.t()).pow(2).sum()  # emb used twice: its gradient is a sum
    watch = aw.watch(params={"emb": emb})
    with watch.step(loss):
        loss.backward(retain_graph=True)
    assert watch.series("emb")[0] == pytest.approx(emb.grad.norm().item(), rel=1e-6)
    # torch.autograd.grad: no AccumulateGrad runs, no .grad written, the order has none
    g = torch.autograd.grad(loss, emb, retain_graph=True)[0]
    with watch.step(loss):
        got = torch.autograd.grad(loss, emb, retain_graph=True)[0]
    assert torch.equal(g, got)
    rec = watch.recording(1)
    assert "AccumulateGrad" not in {rec.graph.nodes[n].name for n in rec.order}
    # two equal passes in one block: every pass kept (sqrt 2 x one pass's), a warning says so
    with pytest.warns(UserWarning, match="2 backward passes ran inside one watch.step block"):
        with watch.step(loss):
            loss.backward(retain_graph=True)
            loss.backward(retain_graph=True)
    assert watch.recording(2).order == watch.recording(0).order
    assert watch.series("n0:0")[2] == pytest.approx(math.sqrt(2) * watch.series("n0:0")[0])


def test_non_reentrant_checkpoint_watches_without_checkpoint_error():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    x = torch.randn(3, 4, requires_grad=True)
    loss = checkpoint(model, x, use_reentrant=False).sum()
    plain = torch.autograd.grad(loss, list(model.parameters()), retain_graph=True)
    watch = aw.watch(model)
    with watch.step(loss):
        loss.backward()
    assert watch.warnings == []
    assert_bit_equal(list(plain), [p.grad for p in model.parameters()])
    assert np.isfinite(watch.series("")).all()


def test_autocast_and_grad_scaler_the_scale_is_named_not_an_explosion():
    torch.manual_seed(0)
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16, growth_interval=1)
    watch = aw.watch(model)
    losses = []
    for step in range(4):
        x = torch.randn(5, 4)
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        if step == 2:
            loss = loss * 1e34  # finite, but its gradient times the scale overflows float32
        losses.append(loss.item())
        scaled = scaler.scale(loss)
        with watch.step(scaled):
            scaled.backward()
        scaler.step(opt)
        scaler.update()
    assert watch.warnings == []
    assert list(np.isfinite(watch.scales)) == [True] * 4 and watch.scales[0] == 2.0**16
    assert watch.scales[1] == 2.0**17  # grew after a clean step: not an explosion
    # series are unscaled: steps 0, 1 and 3 have norms of the same order though the scale doubled
    s = watch.series("")
    assert 0.1 < s[1] / s[0] < 10
    assert 2 in watch.nonfinite_steps and watch.records[2].expected_overflow
    step, origin = watch.first_nonfinite()
    assert step == 2
    assert origin is not None and origin.expected and "loss scaler" in origin.cause
    assert watch.first_nonfinite(expected=False) is None
    assert watch.losses()[[0, 1, 3]] == pytest.approx(np.array(losses)[[0, 1, 3]])  # unscaled


def test_the_recording_of_a_step_is_explorable_and_holds_norms():
    model = mlp()
    watch = aw.watch(model, every=2)
    train(model, 3, watch)
    rec = watch.recording(2)
    assert isinstance(rec, aw.Recording) and rec.meta["watch_step"] == 2
    s = rec.edge_summary("n0:0")
    assert s.min is None and s.values == [] and s.norm > 0 and s.shape == (5, 3)
    widget = aw.explore(rec)
    assert widget is not None
    with pytest.raises(ValueError, match="not watched"):
        watch.recording(1)
    with pytest.raises(KeyError, match="no step 9"):
        watch.recording(9)


def test_bad_inputs_say_what_to_do():
    with pytest.raises(ValueError, match="every must be"):
        aw.watch(every=0)
    with pytest.raises(TypeError, match="model= must be"):
        aw.watch(model="net")
    w = aw.watch()
    with pytest.raises(ValueError, match="no grad_fn"):
        w.step(torch.ones(2).sum())
    with pytest.raises(TypeError, match="tensor the backward starts from"):
        w.step("loss")
    loss = (torch.ones(2, requires_grad=True) * 2).sum()
    with pytest.raises(KeyError, match="not an edge id"):
        w.series("nope")
    with w.step(loss):
        with pytest.raises(RuntimeError, match="do not nest"):
            with w.step(loss):
                pass
        loss.backward()
    w.close()
    with pytest.raises(RuntimeError, match="closed"):
        w.step(loss)
