"""Compiled regions under inductor that stayed opaque or flat (issue 40, part 7), each on the
smallest model that showed it (inductor compiles C++ with gcc: seconds per model):

- resnet18's stem (conv 7x7 stride 2, BatchNorm, ReLU, max-pool) stayed opaque with a raw stride
  error: inductor's layout optimisation saves the activations channels-last, and the graph's
  `aten.view` of a saved value fails on them (core/regionvalues.py runs it as a reshape);
- no region op carried its module under inductor: torch's compile cache clears the backward
  graph's metadata when it saves the region (at its first backward). A region captured before
  that keeps its modules for later captures; `enable_autograd_cache = False` keeps them always.

Gradients stepped through every opened region equal the engine's bit for bit.
"""

from __future__ import annotations

import collections

import pytest
import torch
import torch._functorch.config

import autograd_widget as aw

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("open_regions")]


def _params(m: torch.nn.Module) -> list[torch.Tensor]:
    return [p for p in m.parameters() if p.requires_grad]


def _stepped_bit_equal(g: aw.BackwardGraph, loss: torch.Tensor, m: torch.nn.Module) -> None:
    ref = torch.autograd.grad(loss, _params(m), retain_graph=True)
    st = aw.Stepper(g)
    rec = st.run()
    assert rec.error is None, rec.error
    assert all(f"{nid}/0" in st.order for nid in g.regions)
    for p, r in zip(_params(m), ref):
        assert torch.equal(st.grad(p), r), (st.grad(p) - r).abs().max()
    # the ops' own results against the compiled kernels': inside float32's tolerance
    assert st.compare_with_engine() == []


class Stem(torch.nn.Module):
    """resnet18's stem at 64 channels, on a 16x16 image."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(64)
        self.relu = torch.nn.ReLU(inplace=True)
        self.maxpool = torch.nn.MaxPool2d(3, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.maxpool(self.relu(self.bn1(self.conv1(x))))


def test_resnet_stem_under_inductor_opens_and_steps_bit_equal():
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = Stem()
    cm = torch.compile(m, backend="inductor", dynamic=False)
    x = torch.randn(2, 3, 16, 16)
    try:
        torch.autograd.grad(cm(x).square().mean(), _params(m), retain_graph=True)  # compile
        loss = cm(x).square().mean()
        g = aw.capture(loss, model=m)
        (r,) = g.regions.values()
        assert r.available, r.note
        names = [op.name for op in r.ops]
        assert "aten::convolution_backward" in names and "aten::view" in names
        # the saved activations are channels-last (inductor's layout): the ops read them so
        saved = [i.meta for i in r.inputs if i.kind == "saved" and i.meta is not None]
        assert any(s.shape == (2, 64, 8, 8) for s in saved)
        _stepped_bit_equal(g, loss, m)
        g.close()
    finally:
        torch._dynamo.reset()


def _mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.GELU(), torch.nn.Linear(6, 2))


def _modules(g: aw.BackwardGraph) -> collections.Counter:
    (r,) = g.regions.values()
    assert r.available, r.note
    return collections.Counter(op.module for op in r.ops)


def test_inductor_ops_keep_their_modules_when_captured_before_the_first_backward(monkeypatch,
                                                                                 tmp_path):
    # A cold compile cache of its own: a region loaded from a warm one (an earlier test's or
    # run's) never had its modules in this process (docs/compiled.md).
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()
    m = _mlp()
    cm = torch.compile(m, backend="inductor", dynamic=False)
    x = torch.randn(3, 4)
    try:
        first = aw.capture(cm(x).square().mean(), model=m)  # before any backward
        before = _modules(first)
        assert {"0", "1", "2"} <= set(before), before
        first.close()
        torch.autograd.grad(cm(x).square().mean(), _params(m), retain_graph=True)
        loss = cm(x).square().mean()
        fn = loss.grad_fn
        while fn.name() != "CompiledFunctionBackward":
            fn = fn.next_functions[0][0]
        info = fn._forward_cls._lazy_backward_info
        module = getattr(info, "bw_module", None) or info.bw_module_fn()
        # torch cleared the graph's metadata when it saved the region to its cache
        assert not any("nn_module_stack" in n.meta for n in module.graph.nodes)
        g = aw.capture(loss, model=m)
        assert _modules(g) == before
        _stepped_bit_equal(g, loss, m)
        g.close()
    finally:
        torch._dynamo.reset()


def test_inductor_ops_keep_their_modules_without_the_autograd_cache():
    """docs/compiled.md's remedy, as written there: `import torch._functorch.config`, then
    `torch._functorch.config.enable_autograd_cache = False` before compiling (set here through
    the config's own `patch`, which restores it: pytest's monkeypatch deletes a config entry on
    undo, and every later inductor compile in the process then fails)."""
    torch._dynamo.reset()
    with torch._functorch.config.patch(enable_autograd_cache=False):
        _modules_kept_without_the_cache()


def _modules_kept_without_the_cache() -> None:
    m = _mlp()
    cm = torch.compile(m, backend="inductor", dynamic=False)
    x = torch.randn(3, 4)
    try:
        torch.autograd.grad(cm(x).square().mean(), _params(m), retain_graph=True)  # compile
        loss = cm(x).square().mean()
        g = aw.capture(loss, model=m)
        mods = _modules(g)
        assert {"0", "1", "2"} <= set(mods), mods
        _stepped_bit_equal(g, loss, m)
        g.close()
    finally:
        torch._dynamo.reset()
