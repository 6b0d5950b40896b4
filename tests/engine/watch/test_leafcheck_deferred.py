"""The unwatched steps' check reads the fresh `.grad`s once, at the end of the backward
(engine/watch/leafcheck.py, issue 40 part 4), and falls back to reading in the hook wherever
`.grad` is not simply the gradient this backward produced.

What these pin: the hooks of a common CPU step read nothing (the leaves are noted, the engine's
end-of-backward callback reads them before `backward()` returns); what is named is still only
the gradient THIS backward produced (a NaN left in `.grad` by an earlier step is not named
again); a post-accumulate-grad hook that clears `.grad` (an optimizer in the backward), a
torch.distributed process group, a second pass and a backward that raises are all still
checked exactly; no hook is left.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.distributed as dist

from autograd_widget.engine.watch import leafcheck
from autograd_widget.engine.watch.leafcheck import LeafCheck

NAN = float("nan")


def _two_leaves(nan_in_a: bool = False):
    a = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    b = torch.nn.Parameter(torch.tensor([3.0, 4.0]))
    x = torch.tensor([NAN if nan_in_a else 1.0, 1.0])
    return a, b, (a * x).sum() + (b * b).sum()


def test_the_hooks_only_note_the_leaves_and_the_backward_end_reads_them(monkeypatch):
    probe = torch.ones(2, requires_grad=True)
    first = probe * 2.0  # made first, so its branch (and probe's AccumulateGrad) runs last
    a, b, loss = _two_leaves(nan_in_a=True)
    loss = loss + first.sum()
    reads = []
    real_flag = LeafCheck._flag
    monkeypatch.setattr(LeafCheck, "_flag",
                        lambda self, k, g: reads.append(k) or real_flag(self, k, g))  # fmt: skip
    c = LeafCheck([loss], {id(a): "a", id(b): "b", id(probe): "probe"})
    seen = []
    probe.register_hook(lambda g: seen.append((list(reads), len(c.deferred))))
    c.start()
    loss.backward()
    assert seen == [([], 2)]  # a and b noted, nothing read, while the backward ran
    assert sorted(reads) == [0, 1, 2] and c.deferred == []  # all read before backward() returned
    assert c.finish() == ["a"] and c.handles == []
    assert math.isnan(a.grad[0]) and torch.equal(b.grad, torch.tensor([6.0, 8.0]))


def test_a_nan_left_in_grad_by_an_earlier_step_is_not_named_again():
    a, b, loss = _two_leaves(nan_in_a=True)
    loss.backward()  # an earlier step: a.grad holds a NaN, never zeroed
    loss2 = (a * 1.0).sum() + (b * 1.0).sum()
    c = LeafCheck([loss2], {id(a): "a", id(b): "b"})
    c.start()
    loss2.backward()
    assert c.finish() == []  # this backward's gradients were finite
    assert math.isnan(a.grad[0])  # untouched


def test_a_post_accumulate_hook_that_clears_grad_is_checked_in_the_hook():
    a, b, loss = _two_leaves(nan_in_a=True)
    stepped = []

    def optimizer_in_backward(p):  # as torch's "optimizer in the backward" recipe does
        stepped.append(bool(p.grad.isnan().any()))
        p.grad = None

    a.register_post_accumulate_grad_hook(optimizer_in_backward)
    c = LeafCheck([loss], {id(a): "a", id(b): "b"})
    c.start()
    loss.backward()
    assert stepped == [True] and a.grad is None
    assert c.finish() == ["a"] and c.warnings == []


def test_with_a_process_group_every_leaf_is_checked_in_the_hook(tmp_path):
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0,
                            world_size=1)  # fmt: skip
    try:
        net = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 1))
        x = torch.tensor([[NAN, 1.0]])
        loss = net(x).sum()
        names = {id(p): n for n, p in net.module.named_parameters()}
        c = LeafCheck([loss], names)
        c.start()
        assert c.can_defer and not any(c.can_defer)
        loss.backward()
        assert c.deferred == [] and c.finish() == ["weight"]
    finally:
        dist.destroy_process_group()


def test_two_passes_name_a_nan_of_either_pass():
    for bad_pass in (0, 1):
        a, b, _ = _two_leaves()
        xs = [torch.tensor([1.0, 1.0]), torch.tensor([1.0, 1.0])]
        xs[bad_pass][1] = NAN
        losses = [(a * x).sum() + (b * 2.0).sum() for x in xs]
        c = LeafCheck(losses, {id(a): "a", id(b): "b"})
        c.start()
        for loss in losses:
            loss.backward()
        assert c.passes == 2 and c.finish() == ["a"], bad_pass


def test_a_finite_grad_whose_sum_overflows_is_not_named_when_read_at_the_end():
    w = torch.nn.Parameter(torch.ones(3))
    loss = (w * torch.full((3,), 3e38)).sum()
    c = LeafCheck([loss], {id(w): "w"})
    c.start()
    loss.backward()
    assert math.isinf(w.grad.sum().item()) and bool(w.grad.isfinite().all())
    assert c.finish() == []


def test_a_backward_that_raises_still_checks_what_it_accumulated():
    a = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    b = torch.nn.Parameter(torch.tensor([1.0]))

    class Fails(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 1.0

        @staticmethod
        def backward(ctx, g):
            raise RuntimeError("boom")

    # a's AccumulateGrad runs first (its branch's sequence number is higher), then b's raises
    loss = Fails.apply(b).sum() + (a * torch.tensor([NAN, 1.0])).sum()
    c = LeafCheck([loss], {id(a): "a", id(b): "b"})
    c.start()
    with pytest.raises(RuntimeError, match="boom"):
        loss.backward()
    assert a.grad is not None and b.grad is None
    assert c.finish() == ["a"] and c.handles == []


def test_grad_cleared_during_the_backward_is_said_not_guessed(monkeypatch):
    a, b, loss = _two_leaves()
    c = LeafCheck([loss], {id(a): "a", id(b): "b"})
    c.start()
    monkeypatch.setattr(leafcheck, "_queue", lambda fn: None)  # the end-of-backward read is skipped
    loss.backward()
    a.grad = None  # gone before finish could read it
    assert c.finish() == [] and any("not checked" in w for w in c.warnings)


def test_half_and_sparse_cpu_gradients_read_at_the_end_take_leaf_flag():
    h = torch.nn.Parameter(torch.ones(3, dtype=torch.bfloat16))
    emb = torch.nn.Embedding(5, 2, sparse=True)
    x = torch.tensor([1.0, NAN, 1.0], dtype=torch.bfloat16)
    loss = (h * x).float().sum() + (emb(torch.tensor([0, 3])) * NAN).sum()
    c = LeafCheck([loss], {id(h): "h", id(emb.weight): "emb"})
    c.start()
    loss.backward()
    assert emb.weight.grad.is_sparse and h.grad.dtype is torch.bfloat16
    assert sorted(c.finish()) == ["emb", "h"] and c.warnings == []
