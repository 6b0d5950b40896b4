"""Fan-in sums added in place while steps are kept (engine/step/fanin.py): `back()` rebuilds the old
partial sum from the kept edge gradients, bit for bit, and a tensor handed out is never written."""

from __future__ import annotations

import weakref

import pytest
import torch

import autograd_widget as aw

KEEPS = ["tensors", 1 << 30, 4096]  # everything kept; a budget that keeps all; one that runs out


def _graph() -> tuple[torch.Tensor, list[torch.Tensor]]:
    torch.manual_seed(0)
    x = torch.randn(64, dtype=torch.float64, requires_grad=True)
    w = torch.randn(64, dtype=torch.float64, requires_grad=True)
    h = (x * w).sin()  # a non-leaf with fan-in: 7 uses, one of them twice in one node (h * h)
    branches = [h * (i + 0.5) for i in range(5)] + [h * h, x.exp(), x.cos() * w]
    return torch.stack(branches).pow(2).sum(), [x, w, h]


def _grads(s: aw.Stepper, ts: list[torch.Tensor]) -> list[torch.Tensor | None]:
    return [None if (g := s.grad(t)) is None else g.clone() for t in ts]


def _same(a: list, b: list) -> bool:
    return all(
        (p is None and q is None) or (p is not None and q is not None and torch.equal(p, q))
        for p, q in zip(a, b)
    )


@pytest.mark.parametrize("keep", KEEPS)
def test_back_restores_every_partial_sum_bit_for_bit(keep):
    loss, ts = _graph()
    g = aw.capture(loss)
    s = aw.Stepper(g, keep=keep)
    forward = [_grads(s, ts)]
    while s.step() is not None:
        forward.append(_grads(s, ts))
    engine = torch.autograd.grad(loss, ts, retain_graph=True)
    assert all(torch.equal(a, b) for a, b in zip(forward[-1], engine))
    for want in reversed(forward[:-1]):
        s.back()
        assert _same(_grads(s, ts), want), s.position
    s.run()
    assert _same(_grads(s, ts), forward[-1])
    # the same positions reached again by a fresh stepper that frees as it goes
    ref = aw.Stepper(g, keep="summaries")
    for k, want in enumerate(forward[1:], 1):
        ref.step()
        assert _same(_grads(ref, ts), want), k


def test_kept_sums_are_added_in_place_and_held_ones_never_change():
    loss, (x, w, h) = _graph()
    s = aw.Stepper(aw.capture(loss), keep="tensors")
    seen, held = [], []
    while s.step() is not None:
        got = s.grad(h)
        if got is not None:
            seen.append((weakref.ref(got), got.clone()))
            if len(held) < 2:
                held.append((got, got.clone()))  # handed out and kept: must never change
        del got
    assert any(r() is not None and not torch.equal(r(), v) for r, v in seen)  # in place
    assert all(torch.equal(t, v) for t, v in held)
    engine = torch.autograd.grad(loss, [x, w], retain_graph=True)
    assert torch.equal(s.grad(x), engine[0]) and torch.equal(s.grad(w), engine[1])


def test_a_failing_step_after_in_place_sums_rolls_back_exactly():
    class Boom(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a.clone()

        @staticmethod
        def backward(ctx, grad):
            if Boom.armed:
                raise ValueError("boom")
            return grad

    Boom.armed = False
    loss, (x, w, h) = _graph()
    loss = loss + Boom.apply(h).sum()
    s = aw.Stepper(aw.capture(loss), keep="tensors")
    s.run()
    want = _grads(s, [x, w, h])
    s.reset()
    Boom.armed = True
    rec = s.run()
    assert rec is not None and rec.error and "boom" in rec.error
    before = _grads(s, [x, w, h])
    Boom.armed = False
    s.run()
    assert _same(_grads(s, [x, w, h]), want)
    while s.position > 0:
        s.back()
    assert s.grad(x) is None and before is not None
