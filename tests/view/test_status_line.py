"""Stepping you can follow (issue 17): the status line says what ran and what runs next, the
state names the item that ran last, and the gradient colour scale is fixed for the whole run
(from a throwaway stepper run) or, when that run fails, the norms so far, said so."""

from __future__ import annotations

import gc
import math
import weakref

import numpy as np
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

import autograd_widget as aw
from autograd_widget.view import scale as scale_mod
from autograd_widget.view import stateview as view_state
from autograd_widget.view.labels import status_line
from autograd_widget.view.scale import SCALE_FIXED, SCALE_SO_FAR, run_norm_scale
from tests.helpers.models import make_mlp
from tests.helpers.wire import send


def zxy():
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    return x, y, x**2 + y


def _stale_mlp():
    """An MLP whose last Linear's saved weight was modified in place: its step fails."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    out = (model(torch.randn(5, 3)) * torch.tensor([1.0, 1e3])).sum()
    with torch.no_grad():
        model[2].weight.mul_(1.0)
    return model, out


# ----------------------------------------------------------------------------- status line
def test_status_line_says_what_ran_and_what_runs_next():
    x, y, z = zxy()
    g = aw.capture(z, params={"x": x, "y": y})
    st = aw.Stepper(g)
    seen = [status_line(g, st)]
    while not st.done:
        st.step()
        seen.append(status_line(g, st))
    assert seen == [
        "step 0 / 4 → next AddBackward0",
        "ran AddBackward0 (step 1 / 4) → next AccumulateGrad (y)",
        "ran AccumulateGrad (y) (step 2 / 4) → next PowBackward0",
        "ran PowBackward0 (step 3 / 4) → next AccumulateGrad (x)",
        "ran AccumulateGrad (x) (step 4 / 4) — done",
    ]
    st.back()
    assert status_line(g, st) == seen[3]
    st.close()


def test_status_line_of_a_failure_keeps_its_text():
    model, out = _stale_mlp()
    g = aw.capture(out, model=model)
    st = aw.Stepper(g)
    rec = st.run()
    assert rec is not None and rec.error
    text = status_line(g, st)
    assert text.startswith(f"step {st.position} / {len(st.order)} — ")
    assert " failed: " in text and "→" not in text
    st.close()


# ----------------------------------------------------------------------------- last ran
def test_state_names_the_item_that_ran_last():
    x, y, z = zxy()
    w = aw.explore(z, params={"x": x, "y": y})
    try:
        assert w._state["last"] == -1
        names = w.graph.nodes
        items = {}
        for k, nid in enumerate(w.stepper.order):
            w.stepper.step()
            s = w._state
            items[k] = s["last"]
            assert s["last"] >= 0 and s["last"] != s["next"]
            real = w._session.scene.visible.item_real[s["last"]]
            assert w._session.scene.state.node_ids[real] == nid
            assert names[nid].name in s["status"].split("(step")[0]
        send(w, {"type": "back"})
        assert w._state["last"] == items[len(items) - 2]
        send(w, {"type": "reset"})
        assert w._state["last"] == -1
    finally:
        w.close()


def test_last_ran_inside_a_box_is_the_box():
    model = make_mlp((4, 8, 3))
    w = aw.explore(model(torch.randn(5, 4)).sum(), model=model, collapse="modules")
    try:
        vis = w._session.scene.visible
        w.stepper.run(until=w.stepper.order[3])
        last = w._state["last"]
        ran = w.stepper.order[3]
        assert last == int(vis.real_item[w._session.scene.state.node_index[ran]])
    finally:
        w.close()


# ----------------------------------------------------------------------------- fixed scale
def test_scale_from_the_whole_run_is_fixed_before_the_first_colour_and_never_moves(monkeypatch):
    calls = []

    def counted(graph):
        calls.append(graph)
        return run_norm_scale(graph)

    monkeypatch.setattr(view_state, "run_norm_scale", counted)
    x, y, z = zxy()
    w = aw.explore(z, params={"x": x, "y": y})
    try:
        assert calls == [] and w._state["norm_range"] is None  # explore() runs nothing extra
        assert w._state["norm_scale"] is None
        ranges = []
        while not w.stepper.done:
            w.stepper.step()
            assert w._state["norm_scale"] == SCALE_FIXED
            ranges.append(w._state["norm_range"])
        assert len(calls) == 1, "computed once, on the first step"
        # the whole run's norms: 1, 1 (from Add) and 4 (from Pow), from the first step on
        assert ranges == [[0.0, math.log10(4.0)]] * 4
        send(w, {"type": "reset"})
        w.stepper.step()
        assert w._state["norm_range"] == ranges[0] and len(calls) == 1
        # the throwaway run left the user's tensors alone
        assert x.grad is None and y.grad is None
    finally:
        w.close()


def test_the_throwaway_run_touches_nothing_of_the_users():
    model = make_mlp((4, 8, 3))
    inp = torch.randn(5, 4, requires_grad=True)
    hidden = model[0](inp)
    fired = []
    hidden.register_hook(lambda g: fired.append("tensor"))
    hidden.grad_fn.register_hook(lambda gi, go: fired.append("node"))
    loss = model[2](model[1](hidden)).sum()
    g = aw.capture(loss, model=model)
    ps = [*model.parameters(), inp]
    versions = [p._version for p in ps]
    s = run_norm_scale(g)
    assert s.fixed and s.lo <= s.hi
    assert fired == [] and all(p.grad is None for p in ps)
    assert [p._version for p in ps] == versions
    # the graph is still whole: the user's own backward works and fires their hooks
    loss.backward()
    assert "tensor" in fired and all(p.grad is not None for p in ps)


def test_fallback_when_the_run_fails_says_so_and_rescales_as_it_goes():
    model, out = _stale_mlp()
    w = aw.explore(out, model=model, collapse="none")
    try:
        s = w._session.scene.state.norm_scale()
        assert s.kind == SCALE_SO_FAR and not s.fixed and "fails" in s.reason
        w.stepper.step()
        first = w._state["norm_range"]
        assert w._state["norm_scale"] == SCALE_SO_FAR and first is not None
        w.stepper.run()
        assert w._state["norm_scale"] == SCALE_SO_FAR
        assert w._state["norm_range"] != first  # so far: widened as gradients flow
    finally:
        w.close()


def test_fallback_when_no_norm_is_finite_and_nonzero():
    x = torch.randn(3, requires_grad=True)
    g = aw.capture((x * 2).sum(), grad_outputs=torch.tensor(0.0), params={"x": x})
    s = run_norm_scale(g)
    assert s == scale_mod.NormScale(None, None, SCALE_SO_FAR, "no finite nonzero gradient norm")


def test_records_only_graph_has_no_run_scale():
    x, y, z = zxy()
    g = aw.capture(z, params={"x": x, "y": y})
    s = run_norm_scale(aw.BackwardGraph.from_dict(g.to_dict()))
    assert s.kind == SCALE_SO_FAR and "records only" in s.reason


class _Regions(nn.Module):
    """3 checkpointed Linear+GELU blocks, with weak references to what recomputes produce."""

    def __init__(self, d: int = 16, n: int = 3) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(d, d), nn.GELU()) for _ in range(n)])
        self.armed = False
        self.calls = 0
        self.refs: list[weakref.ref] = []

    def _region(self, block: nn.Module, h: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        out = block(h)
        if self.armed:
            self.refs.append(weakref.ref(out.untyped_storage()))
        return out

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        for b in self.blocks:
            h = checkpoint(self._region, b, h, use_reentrant=False)
        return h

    def alive(self) -> int:
        gc.collect()
        return sum(1 for r in self.refs if r() is not None)


def test_the_throwaway_run_keeps_no_recomputed_tensor_alive():
    model = _Regions()
    inp = torch.randn(4, 16, requires_grad=True)
    loss = model(inp).square().mean()
    ps = [*model.parameters(), inp]
    want = torch.autograd.grad(loss, ps, retain_graph=True)
    model.armed, model.calls = True, 0
    w = aw.explore(loss, model=model)
    try:
        w.stepper.step()  # the scale's throwaway run happens here, mid-pass of the user's stepper
        assert w._state["norm_scale"] == SCALE_FIXED
        assert model.calls >= 3 and model.alive() == 0
        w.stepper.run()
        assert model.alive() == 0
        got = [w.stepper.grad(p) for p in ps]
        for a, b in zip(got, want):
            assert torch.allclose(a, b)
        assert all(p.grad is None for p in ps)
    finally:
        w.close()


def test_scale_matches_the_final_flowed_norms():
    model = make_mlp((4, 8, 8, 3))
    w = aw.explore(model(torch.randn(6, 4)).sum(), model=model, collapse="none")
    try:
        w.stepper.run()
        sv = w._session.scene.state
        flowed = sv.edge_norm[(sv.edge_flag == view_state.FLOWED) & (sv.edge_norm > 0)]
        lo, hi = np.log10(flowed.min()), np.log10(flowed.max())
        got = w._state["norm_range"]
        assert abs(got[0] - lo) < 1e-5 and abs(got[1] - hi) < 1e-5
    finally:
        w.close()
