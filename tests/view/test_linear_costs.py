"""Costs linear in the input (issue 38): opening a watch, a graph of many modules and a large
recording does no work that grows as steps x names x modules, modules x modules or nodes x nodes.

Work is COUNTED, not timed (the machine may be shared): the Python calls a function makes (its
own and builtins such as `str.startswith`, through `sys.setprofile`), at two sizes of one input;
doubling the input must not much more than double the count. The quadratic code these tests
guard against made 3.5-4x the calls (steps x names x modules in the timeline's non-finite mask and
the module norms, a scan of every group for every module when folding, every shown value revisited
at every step of a walkthrough)."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import autograd_widget as aw
from autograd_widget.engine.watch.trainstep import as_recording
from autograd_widget.export.html import walkthrough
from autograd_widget.view import modules, stateview, timeline, visible
from autograd_widget.view.stateview import DONE, FAILED, NEXT, NO_GRADIENT

#: Doubling the input may multiply the calls by at most this (linear: ~2; quadratic: ~4).
GROWTH = 2.6


def calls(fn: Callable[[], Any], within: tuple[str, ...] = ()) -> int:
    """How many Python and builtin calls `fn()` makes (`within`: only those made by, or made
    to, the code of files whose path ends so)."""
    n = 0

    def count(frame: Any, event: str, arg: Any) -> None:
        nonlocal n
        if event in ("call", "c_call") and (
                not within or frame.f_code.co_filename.endswith(within)):  # fmt: skip
            n += 1

    sys.setprofile(count)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return n


def growth(work: Callable[[int], int], size: int) -> float:
    """calls at 2 x size / calls at size (each after a first run: lazy imports and caches
    filled on first use are no part of the cost)."""
    work(size), work(2 * size)
    return work(2 * size) / work(size)


# ------------------------------------------------------------------------------ watches
def nan_watch(blocks: int, steps: int = 8) -> aw.Watch:
    """A watch of `blocks` blocks of two Linear(1, 1) (3 modules each) whose every step has a
    NaN in every weight's gradient (a NaN input: every module is non-finite)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        *[torch.nn.Sequential(torch.nn.Linear(1, 1), torch.nn.Linear(1, 1))
          for _ in range(blocks)])  # fmt: skip
    w = aw.watch(model)
    for _ in range(steps):
        loss = model(torch.full((1, 1), float("nan"))).sum()
        with w.step(loss):
            loss.backward()
        model.zero_grad()
    assert len(w.nonfinite_steps) == steps and len(w.keys()["modules"]) == 3 * blocks + 1
    return w


@pytest.fixture(scope="module")
def watches() -> dict[int, aw.Watch]:
    return {b: nan_watch(b, steps=4) for b in (24, 48)}


def test_the_timeline_of_a_nonfinite_run_is_linear_in_steps_x_names(watches):
    # before: every step's every non-finite name tested against every module (and the module
    # norms built by testing every parameter name against every module)
    assert growth(lambda b: calls(lambda: timeline.timeline(watches[b])), 24) < GROWTH
    t = timeline.timeline(watches[24])
    assert np.isinf(t["values"]).all() and (t["values"] > 0).all()  # every module non-finite


def test_module_norms_are_linear_in_parameters_and_steps(watches):
    def work(b: int) -> int:
        w = watches[b]
        return calls(lambda: w.table(w.keys()["modules"]))

    assert growth(work, 24) < GROWTH


class Name(str):
    """A parameter name whose comparisons are Python calls (so `calls` sees them)."""

    def __eq__(self, other: object) -> bool:
        return str.__eq__(self, other)

    def __hash__(self) -> int:
        return str.__hash__(self)


def test_the_recording_of_a_step_with_many_nonfinite_parameters_is_linear(watches):
    # before: each parameter looked for in the step's tuple of non-finite names
    def work(b: int) -> int:
        w = watches[b]
        st = w.record(w.steps[-1])
        named = dataclasses.replace(st, nonfinite_params=tuple(map(Name, st.nonfinite_params)))
        structure = w.structures[st.structure]
        return calls(lambda: as_recording(named, structure), within=(__file__,))

    assert growth(work, 24) < GROWTH
    w = watches[24]
    s, bad = w.structures[0], set(w.records[-1].nonfinite_params)
    rec = w.recording(w.steps[-1])
    marked = {s.params[s.param_of[int(r.node[1:])]]: r.inputs[0].nan == -1  # -1: not counted
              for r in rec.executions if s.accumulate[int(r.node[1:])]}  # fmt: skip
    assert len(marked) == 96 and len(bad) == 48
    assert all(marked[name] == (name in bad) for name in marked)  # the weights, not the biases


def test_module_norms_equal_the_norm_of_their_parameters():
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Linear(3, 1)),
                                torch.nn.Linear(1, 1))  # fmt: skip
    w = aw.watch(model)
    for k in range(3):
        x = torch.randn(4, 2)
        if k == 1:
            x[0, 0] = float("nan")
        loss = model(x).pow(2).sum()
        with w.step(loss):
            loss.backward()
        model.zero_grad()
    names = w.keys()["params"]
    got = w.table(["", "0", "0.0", "1", "0"])
    for col, m in enumerate(["", "0", "0.0", "1", "0"]):
        inside = [n for n in names if m == "" or n.startswith(m + ".")]
        want = np.sqrt((w.table(inside) ** 2).sum(axis=1))
        assert np.allclose(got[:, col], want, rtol=1e-12, atol=0, equal_nan=True), m
    assert np.isnan(got[1]).all() and np.isfinite(got[[0, 2]]).all()  # the NaN step stays NaN


# ------------------------------------------------------------------------------ many modules
def tanh_chain(n: int) -> tuple[torch.Tensor, torch.nn.Module]:
    """A model of `n` top-level Tanh modules after one Linear, tracked."""
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), *[torch.nn.Tanh() for _ in range(n)])
    with aw.track(model):
        loss = model(torch.ones(1, 2)).sum()
    return loss, model


def test_folding_every_module_is_linear_in_modules():
    # before: each module's box found by scanning every collapsed group
    graphs = {}
    for n in (400, 800):
        loss, model = tanh_chain(n)
        graphs[n] = aw.capture(loss, model=model)

    def work(n: int) -> int:
        g, every = graphs[n], modules.module_paths(graphs[n])[1:]
        return calls(lambda: visible.visible_graph(g, every))

    assert growth(work, 400) < GROWTH
    g = graphs[400]
    vis = visible.visible_graph(g, modules.module_paths(g)[1:])
    assert vis.n_items == 401 + 1  # the sum, and one box per module
    assert sorted(vis.item_group[1:], key=int) == [str(k) for k in range(401)]


def test_top_level_groups_keep_the_model_order_through_containers():
    # (now a stack, not insertions at the front of the to-do list: the same order)
    model = torch.nn.Sequential(torch.nn.Linear(2, 2),
                                torch.nn.Sequential(*[torch.nn.Tanh() for _ in range(3)]))
    with aw.track(model):
        g = aw.capture(model(torch.ones(1, 2)).sum(), model=model)
    assert modules.top_level_groups(g) == ["0", "1.0", "1.1", "1.2"]  # through the container


def test_explore_is_linear_in_modules():
    # before: choosing the folds tested every top-level module against every one chosen
    chains = {n: tanh_chain(n) for n in (300, 600)}

    def work(n: int) -> int:
        loss, model = chains[n]
        return calls(lambda: aw.explore(loss, model=model))

    assert growth(work, 300) < GROWTH


# ------------------------------------------------------------------------------ walkthroughs
def linear_chain(blocks: int) -> tuple[torch.Tensor, torch.nn.Module]:
    """`blocks` blocks of two Linear(2, 2): every gradient small enough to be shown as values."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        *[torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 2))
          for _ in range(blocks)])  # fmt: skip
    with aw.track(model):
        loss = model(torch.ones(1, 2)).sum()
    return loss, model


def test_a_walkthrough_is_linear_in_the_steps():
    # before: every step rebuilt the whole state and compared every value shown so far
    widgets = {}
    for b in (40, 80):
        loss, model = linear_chain(b)
        widgets[b] = aw.explore(loss, model=model, collapse="none")
    # the walk's own work (the state it keeps and the steps it stores), not the protocol's
    # per-step replies, which are constant per step and would hide a quadratic term
    # (linear: exactly 2x, a fixed number of calls per step; before: 2.5x at these sizes)
    own = ("view/stateview.py", "export/html.py")
    assert growth(lambda b: calls(lambda: walkthrough(widgets[b]), own), 40) < 2.2


def reference_arrays(sv: stateview.StateView) -> dict[str, Any]:
    """The visible state computed the direct way: each box from all its members."""
    vis = sv.visible
    real = vis.item_real
    state = np.zeros(vis.n_items, np.uint8)
    progress = np.zeros(vis.n_items, np.float32)
    finished = (sv.node_state == DONE) | (sv.node_state == NO_GRADIENT)
    for j in range(vis.n_items):
        if real[j] >= 0:
            state[j], progress[j] = sv.node_state[real[j]], finished[real[j]]
            continue
        mem = vis.item_members[j]
        done = int(finished[mem].sum())
        progress[j] = done / len(mem) if len(mem) else 1.0
        st = sv.node_state[mem]
        state[j] = (FAILED if (st == FAILED).any() else NEXT if (st == NEXT).any()
                    else DONE if done == len(mem) else 0)  # fmt: skip
    values = {str(j): sv.edge_values[str(int(r))] for j, r in enumerate(vis.edge_real)
              if str(int(r)) in sv.edge_values}  # fmt: skip
    return {"node_state": state, "progress": progress, "edge_norm": sv.edge_norm[vis.edge_real],
            "edge_flag": sv.edge_flag[vis.edge_real], "edge_values": values}  # fmt: skip


def test_the_walkthrough_steps_rebuild_the_full_state_at_every_step(monkeypatch):
    # a folded drawing (boxes aggregate their members) with values on every edge: the changes
    # walked step by step give, at every step, what the direct computation gives
    loss, model = linear_chain(6)
    seen: list[dict[str, Any]] = []
    advance = stateview.StateView.advance

    def watched(self: stateview.StateView) -> None:
        advance(self)
        seen.append(reference_arrays(self))
        full = self.visible_arrays()
        for k in ("node_state", "progress", "edge_norm", "edge_flag"):
            assert np.array_equal(full[k], seen[-1][k], equal_nan=True), k
        assert full["edge_values"] == seen[-1]["edge_values"]

    monkeypatch.setattr(stateview.StateView, "advance", watched)
    for collapse in ("modules", "none"):
        widget = aw.explore(loss, model=model, collapse=collapse)
        seen.clear()
        walk = walkthrough(widget)
        assert len(walk["steps"]) == len(seen) - 1 > 10
        now = {k: np.array(v, copy=True) for k, v in seen[0].items() if k != "edge_values"}
        values = dict(seen[0]["edge_values"])
        for step, want in zip(walk["steps"], seen[1:]):
            for k in now:
                if k in step:
                    now[k][decode(step[k]["index"])] = decode(step[k]["new"])
                assert np.array_equal(now[k], want[k], equal_nan=True), k
            if "edge_values" in step:
                for key in step["edge_values"]["unset"]:
                    del values[key]
                values.update(step["edge_values"]["set"])
            assert values == want["edge_values"]


def decode(blob: dict[str, str]) -> np.ndarray:
    import base64

    return np.frombuffer(base64.b64decode(blob["bdata"]), dtype=blob["dtype"])
