"""Property tests of aw.watch (hypothesis): watching never changes a gradient, its norms are the
gradients' norms, and a NaN injected at a known step and row is found at that step, at its birth
node, with the right cause.

- random differentiable programs (tests/helpers/programs.py: views, slices, in-place ops, custom
  Functions, several roots with explicit grad_outputs): every leaf's `.grad` bit-equal with and
  without the watch; each edge norm equal to the norm of the gradient `aw.record` kept there;
- random small MLPs trained for a few SGD steps with random `every`: every step's `.grad` and the
  final weights bit-equal to an unwatched run;
- a zero injected under a sqrt or a log at a random step and batch row: `first_nonfinite()` names
  that step and, when it was watched, the SqrtBackward0/LogBackward0 node with a cause counting
  the row's elements.
"""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autograd_widget as aw
from tests.helpers.programs import build, specs

SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]


def bits(t):
    return t.contiguous().view(-1).view(torch.uint8)


@settings(deadline=None, max_examples=60, suppress_health_check=SLOW_OK)
@given(spec=specs(max_steps=14))
def test_random_programs_bit_equal_and_norms_are_the_gradients(spec):
    plain = build(spec)
    torch.autograd.backward(plain.roots, plain.grad_outputs)
    watched = build(spec)
    w = aw.watch(params={f"leaf{i}": t for i, t in enumerate(watched.leaves)})
    with w.step(watched.roots):
        torch.autograd.backward(watched.roots, watched.grad_outputs)
    assert w.warnings == []
    for i, (a, b) in enumerate(zip(plain.leaves, watched.leaves)):
        assert (a.grad is None) == (b.grad is None)
        if a.grad is not None:
            assert torch.equal(bits(a.grad), bits(b.grad))
            want = a.grad.double().norm().item()
            got = w.series(f"leaf{i}")[0]
            assert got == pytest.approx(want, rel=1e-5, abs=1e-30) or (
                math.isnan(want) and math.isnan(got)
            )
    kept = build(spec)
    with aw.record(kept.roots, kept.grad_outputs, keep="tensors") as rec:
        torch.autograd.backward(kept.roots, kept.grad_outputs)
    st_, s = w.records[0], w.structures[0]
    assert s.edge_ids == [e.id for e in rec.graph.edges]
    for k, eid in enumerate(s.edge_ids):
        g = rec.edge_grad(eid)
        v = float(st_.edge_norms[k])
        if g is None or not g.is_floating_point():
            continue
        want = g.double().norm().item()
        assert v == pytest.approx(want, rel=1e-4, abs=1e-30) or (math.isnan(want) and v != v), (
            eid, rec.graph.nodes[eid.split(":")[0]].name
        )


@st.composite
def mlps(draw):
    depth = draw(st.integers(1, 3))
    widths = [draw(st.integers(1, 6)) for _ in range(depth + 1)]
    act = draw(st.sampled_from(["tanh", "relu", "gelu", "none"]))
    return widths, act


def make(widths, act, seed):
    torch.manual_seed(seed)
    layers: list[torch.nn.Module] = []
    acts = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU, "gelu": torch.nn.GELU}
    for a, b in itertools.pairwise(widths):
        layers.append(torch.nn.Linear(a, b))
        if act != "none":
            layers.append(acts[act]())
    return torch.nn.Sequential(*layers)


def train(model, steps, every, seed, width):
    torch.manual_seed(seed)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    w = None if every is None else aw.watch(model, every=every)
    grads = []
    for _ in range(steps):
        x = torch.randn(3, width)
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        if w is None:
            loss.backward()
        else:
            with w.step(loss):
                loss.backward()
        grads.append([p.grad.clone() for p in model.parameters()])
        opt.step()
    return grads, [p.detach().clone() for p in model.parameters()], w


@settings(deadline=None, max_examples=40, suppress_health_check=SLOW_OK)
@given(net=mlps(), steps=st.integers(1, 6), every=st.integers(1, 3), seed=st.integers(0, 999))
def test_random_training_is_bit_equal_watched_or_not(net, steps, every, seed):
    widths, act = net
    g0, p0, _ = train(make(widths, act, seed), steps, None, seed, widths[0])
    g1, p1, w = train(make(widths, act, seed), steps, every, seed, widths[0])
    for a, b in zip(g0, g1):
        assert all(torch.equal(bits(u), bits(v)) for u, v in zip(a, b))
    assert all(torch.equal(bits(u), bits(v)) for u, v in zip(p0, p1))
    assert w.steps == list(range(0, steps, every)) and w.warnings == []
    for k, st_ in enumerate(w.steps):  # the per-parameter norm is that step's gradient's
        for name, g in zip([n for n, _ in w.model.named_parameters()], g1[st_]):
            assert w.series(name)[k] == pytest.approx(g.double().norm().item(), rel=1e-5, abs=1e-30)


@settings(deadline=None, max_examples=40, suppress_health_check=SLOW_OK)
@given(
    steps=st.integers(2, 6), data=st.data(), op=st.sampled_from(["sqrt", "log"]),
    every=st.integers(1, 2), width=st.integers(1, 4), seed=st.integers(0, 999),
)  # fmt: skip
def test_a_zero_injected_at_a_known_step_and_row_is_found_there(steps, data, op, every, width,
                                                                 seed):  # fmt: skip
    bad_step = data.draw(st.integers(0, steps - 1))
    bad_row = data.draw(st.integers(0, 3))
    torch.manual_seed(seed)
    lin = torch.nn.Linear(3, width)
    w = aw.watch(lin, every=every)
    for step in range(steps):
        x = torch.randn(4, 3)
        mask = torch.ones(4, width)
        if step == bad_step:
            mask[bad_row] = 0.0  # that row's activations become exactly 0 under the op
        h = lin(x)
        inner = h * h * mask + (1.0 - mask) * 0.0
        out = inner.sqrt() if op == "sqrt" else (inner + mask * 1.0).log()
        loss = out.sum()
        lin.zero_grad()
        with w.step(loss):
            loss.backward()
    assert w.nonfinite_steps[0] == bad_step
    step, origin = w.first_nonfinite()
    assert step == bad_step
    if bad_step % every:
        assert origin is None
        return
    rec = w.recording(bad_step)
    name = rec.graph.nodes[origin.node].name
    assert origin.kind == "born" and name == ("SqrtBackward0" if op == "sqrt" else "LogBackward0")
    zeros = f"{width} zero" + ("s" if width > 1 else "")
    if op == "sqrt":
        assert origin.cause == (
            f"saved `result` has {zeros}: the derivative of sqrt at 0 is infinite"
        )
    else:
        assert f"log of {zeros}" in origin.cause
    (edge,) = rec.graph.out_edges(origin.node)
    assert rec.edge_summary(edge).inf + rec.edge_summary(edge).nan == width  # the row's elements
