"""Non-reentrant activation checkpointing stepped by hand costs what the engine costs: each region
recomputed once per run (run, step by step, run_to, back + replay, reset + run), nothing it
recomputed alive afterwards, no recompute at all for inspecting (saved values, saved_memory,
explore), the engine's gradients bit for bit.

Recomputes are counted by a counter in each region's forward; kept memory by weak references to
the storages the regions produce while recomputing (a storage's Python object lives exactly as
long as the storage: gc + weakref, no CUDA needed).
"""

from __future__ import annotations

import gc
import weakref

import pytest
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

import autograd_widget as aw
from autograd_widget.view.inspect import inspect_node, memory_report
from autograd_widget.view.scene import Scene
from tests.helpers.torch_versions import (
    WHY_FIND,
    WHY_GROUP,
    WHY_META,
    needs_checkpoint_frames,
    needs_torch,
)
from tests.zoo.models import MODELS, forward, params


class Watched(nn.Module):
    """4 blocks of Linear + GELU, each under checkpoint(use_reentrant=False), with a counter of
    region forwards and weak references to what recomputes produce."""

    def __init__(self, d: int = 32, n: int = 4) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(d, d), nn.GELU()) for _ in range(n)])
        self.calls = 0
        self.armed = False
        self.refs: list[weakref.ref] = []

    def _region(self, block: nn.Module, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        h = block[0](x)
        out = block[1](h)
        if self.armed:
            self.refs += [weakref.ref(h.untyped_storage()), weakref.ref(out.untyped_storage())]
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for b in self.blocks:
            x = checkpoint(self._region, b, x, use_reentrant=False)
        return x

    def take(self) -> int:
        n, self.calls = self.calls, 0
        return n

    def alive(self) -> int:
        gc.collect()
        return sum(1 for r in self.refs if r() is not None)


@pytest.fixture
def setup():
    model = Watched()
    x = torch.randn(4, 32, requires_grad=True)
    loss = model(x).square().mean()
    model.take()
    model.armed = True
    ps = [*model.parameters(), x]
    want = torch.autograd.grad(loss, ps, retain_graph=True)
    assert model.take() == 4 and model.alive() == 0  # the engine: 4 recomputes, nothing kept
    graph = aw.capture(loss)
    return model, graph, ps, want


def _same(st: aw.Stepper, ps, want) -> None:
    for p, w in zip(ps, want):
        assert torch.equal(st.grad(p), w)


@needs_torch("2.10", WHY_GROUP)
@pytest.mark.parametrize("keep", ["tensors", "summaries"])
def test_run_recomputes_each_region_once_and_keeps_nothing(setup, keep):
    model, graph, ps, want = setup
    st = aw.Stepper(graph, keep=keep)
    assert model.take() == 0
    st.run()
    assert model.take() == 4 and model.alive() == 0
    _same(st, ps, want)
    st.reset()
    st.run()
    assert model.take() == 4 and model.alive() == 0
    _same(st, ps, want)
    assert st.compare_with_engine() == []
    st.close()
    assert model.alive() == 0


@needs_torch("2.10", WHY_FIND)
@pytest.mark.parametrize("keep", ["tensors", "summaries"])
def test_stepping_run_to_back_and_reset_mid_run(setup, keep):
    model, graph, ps, want = setup
    st = aw.Stepper(graph, keep=keep)
    while st.step() is not None:
        pass
    assert model.take() == 4 and model.alive() == 0
    st.reset()
    st.run(until=st.order[len(st.order) // 2])
    half = model.take()
    assert 0 < half < 4
    st.run()
    assert model.take() == 4 - half and model.alive() == 0
    _same(st, ps, want)
    # reset in the middle of a run: what the abandoned pass recomputed is freed
    st.reset()
    st.run(until=st.order[len(st.order) // 2])
    model.take()
    st.reset()
    assert model.alive() == 0
    st.run()
    assert model.take() == 4 and model.alive() == 0
    # back over every step, then run again: each back() is a replay (summaries: one run of
    # its own, each region at most once) or the undo log (tensors: no recompute); the run then
    # recomputes each region once more at most
    model.take()
    for _ in range(len(st.order)):
        st.back()
        assert model.take() <= (4 if keep == "summaries" else 0)
    st.run()
    assert model.take() == 4 and model.alive() == 0
    _same(st, ps, want)


@needs_torch("2.10", WHY_FIND)
@needs_checkpoint_frames()
def test_back_then_step_forward_recomputes_only_what_it_must(setup):
    model, graph, ps, want = setup
    st = aw.Stepper(graph, keep="tensors")
    st.run()
    model.take()
    st.back()
    st.run()  # the last step is an AccumulateGrad: nothing to recompute
    assert model.take() == 0
    # back to the first block's Addmm (the last one to run): only its region is recomputed
    while st.position and st.graph.nodes[st.next_node or st.order[-1]].name != "AddmmBackward0":
        st.back()
    st.run()
    assert model.take() == 1 and model.alive() == 0
    _same(st, ps, want)


@needs_torch("2.10", WHY_META)
@needs_checkpoint_frames()
def test_inspecting_never_recomputes(setup):
    model, graph, _ps, _want = setup
    mem = graph.saved_memory()
    st = aw.Stepper(graph)
    scene = Scene(graph, st)
    recs = [v for nid in graph.nodes for v in graph.saved(nid)]
    for nid in graph.nodes:
        inspect_node(scene, st, nid)
    report = memory_report(scene)
    assert model.take() == 0 and model.alive() == 0
    ck = [v for v in recs if v.recomputed]
    assert len(ck) >= 8  # Addmm's and GELU's activations in each of the 4 regions
    v = ck[0]
    assert v.state == "packed" and "recomputed during backward" in v.note
    assert v.shape is not None and v.nbytes is not None  # shape/dtype known without recompute
    assert "recomputed during backward" in v.as_dict()["value"]
    nid = next(n for n in graph.nodes if any(s.recomputed for s in graph.saved(n)))
    name = next(s.name for s in graph.saved(nid) if s.recomputed)
    with pytest.raises(RuntimeError, match="recomputed during backward"):
        graph.saved_tensor(nid, name)
    # each region's input ([4, 32] float32) is what the regions hold; plus square's input
    assert sum(mem.values()) == 5 * 4 * 32 * 4
    assert len(mem.notes) == 4 and all("checkpoint region inputs" in n for n in mem.notes.values())
    assert report["notes"] == mem.notes
    st.run()
    assert model.take() == 4


def test_explore_does_not_recompute_before_the_first_step():
    model = Watched()
    x = torch.randn(4, 32, requires_grad=True)
    loss = model(x).square().mean()
    model.take()
    widget = aw.explore(loss, model=model)
    assert model.take() == 0
    widget.close()


def test_probes_release_what_they_recompute(setup):
    model, graph, _ps, _want = setup
    st = aw.Stepper(graph)
    norms = st.jacobian_norms(samples=2, seed=0)
    assert st.probe_errors == {} and norms
    assert model.take() > 0 and model.alive() == 0


def test_nothing_of_the_users_is_touched(setup):
    _model, graph, ps, want = setup
    versions = [p._version for p in ps]
    st = aw.Stepper(graph, keep="tensors")
    st.run()
    assert all(p.grad is None for p in ps)
    assert [p._version for p in ps] == versions
    loss = graph.root_tensors[0]
    loss.backward()
    for p, w in zip(ps, want):
        assert torch.equal(p.grad, w)


@needs_torch("2.10", WHY_GROUP)
def test_inside_a_users_group_stepping_uses_it(setup):
    model, graph, ps, want = setup
    st = aw.Stepper(graph, keep="tensors")
    with torch.utils.checkpoint.GraphExecGroup():
        st.run()
    assert model.take() == 4 and model.alive() == 0
    _same(st, ps, want)


@needs_torch("2.10", WHY_GROUP)
@pytest.mark.zoo
@pytest.mark.parametrize("keep", ["tensors", "summaries"])
def test_zoo_checkpointed_model(keep):
    built = MODELS["checkpoint"]("small")
    loss = forward(built)
    blocks = list(built.model.blocks)
    calls = [0]

    def count(*_: object) -> None:
        calls[0] += 1

    hooks = [next(b.children()).register_forward_pre_hook(count) for b in blocks]
    ps = params(built.model)
    want = torch.autograd.grad(loss, ps, retain_graph=True)
    engine, calls[0] = calls[0], 0
    assert engine == len(blocks)
    graph = aw.capture(loss, model=built.model)
    graph.saved_memory()
    st = aw.Stepper(graph, keep=keep)
    st.run()
    assert calls[0] == engine
    _same(st, ps, want)
    calls[0] = 0
    st.reset()
    st.run()
    assert calls[0] == engine
    for h in hooks:
        h.remove()
