"""The model zoo through the package: every gradient the stepper computes on real architectures
(transformers GPT-2, BERT, T5, Llama; a ResNet, a ViT, an SDPA decoder, bf16 autocast, an LSTM,
non-reentrant checkpointing; toy sizes, random weights) equals `torch.autograd.grad`'s, bit for
bit, `compare_with_engine()` finds nothing, and `explore()` builds on the tracked model.

Run alone with `pytest -m zoo`. Public API only (`import autograd_widget as aw`).
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # random configs only; never reach a hub

import importlib.util

import pytest
import torch

import autograd_widget as aw

from .models import MODELS, TRANSFORMERS, Built, forward, params

pytestmark = pytest.mark.zoo

HAVE_TRANSFORMERS = importlib.util.find_spec("transformers") is not None


def _cases() -> list:
    out = []
    for name in MODELS:
        marks = []
        if name in TRANSFORMERS and not HAVE_TRANSFORMERS:
            marks.append(pytest.mark.skip(reason="transformers is not installed (dev extra)"))
        out.append(pytest.param(name, id=name, marks=marks))
    return out


def _build(name: str) -> tuple[Built, torch.Tensor, list[torch.Tensor]]:
    built = MODELS[name]("small")
    loss = forward(built)  # under aw.track(model): nodes carry module paths
    return built, loss, params(built.model)


def _engine(loss: torch.Tensor, ps: list[torch.Tensor]) -> tuple[torch.Tensor | None, ...]:
    return torch.autograd.grad(loss, ps, retain_graph=True, allow_unused=True)


def _assert_same_grads(
    stepper: aw.Stepper, model: torch.nn.Module, want: tuple[torch.Tensor | None, ...]
) -> None:
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    used = 0
    for name, p, w in zip(names, params(model), want):
        if w is None:  # unused by this loss (the engine's allow_unused): not in the graph
            continue
        used += 1
        got = stepper.grad(p)
        assert got is not None, f"no gradient for {name}"
        # Same kernels, same order, same process: the stepper's numbers are the engine's,
        # exactly (measured on every zoo model; tolerances would hide an accumulation-order slip).
        torch.testing.assert_close(got, w, rtol=0, atol=0, msg=lambda m, n=name: f"{n}: {m}")
    assert used > 0


@pytest.mark.parametrize("keep", ["summaries", "tensors"])
@pytest.mark.parametrize("name", _cases())
def test_stepper_matches_engine(name: str, keep: str) -> None:
    built, loss, ps = _build(name)
    want = _engine(loss, ps)
    graph = aw.capture(loss, model=built.model)
    assert any(n.module for n in graph.nodes.values()), "track() stamped no module path"
    known = {path for path, _ in built.model.named_modules()}
    assert {n.module for n in graph.nodes.values() if n.module is not None} <= known
    stepper = aw.Stepper(graph, keep=keep)
    stepper.run()
    assert stepper.done and stepper.position == len(stepper.order) == len(graph.nodes)
    _assert_same_grads(stepper, built.model, want)
    assert stepper.compare_with_engine() == []
    # Stepping touched nothing of the user's: no .grad written, and their own backward works
    # (and gives the same gradients).
    assert all(p.grad is None for p in ps)
    loss.backward()
    for p, w in zip(ps, want):
        if w is not None:
            torch.testing.assert_close(p.grad, w, rtol=0, atol=0)
    stepper.close()
    graph.close()


@pytest.mark.parametrize("name", _cases())
def test_explore_builds(name: str) -> None:
    built, loss, ps = _build(name)
    want = _engine(loss, ps)
    widget = aw.explore(loss, model=built.model)
    try:
        assert isinstance(widget, aw.AutogradWidget)
        nodes = widget.graph.nodes
        assert len(nodes) == len(widget.stepper.order) > 0
        assert sum(n.leaf_name is not None for n in nodes.values()) == sum(
            w is not None for w in want
        )
        # The widget's own stepper is live: one step, then the rest, same gradients.
        assert widget.stepper.step().error is None
        widget.stepper.run()
        _assert_same_grads(widget.stepper, built.model, want)
    finally:
        widget.close()
