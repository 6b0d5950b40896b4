"""How a compiled region looks (issue 40, part 7): the edges inside an opened region that carry
no gradient (a weight's transpose, a recomputed activation, a mask) are drawn as saved values,
off the gradient-norm scale; a region that stays opaque says why on the drawing (its frame's
title) and on the status line, not only in the inspector."""

from __future__ import annotations

import math

import pytest
import torch

import autograd_widget as aw
from autograd_widget.core.regions import value_edges
from autograd_widget.view.scale import run_norm_scale
from autograd_widget.view.stateview import FLOWED, SAVED_VALUE


@pytest.fixture(scope="module")
def mlp():
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.GELU(), torch.nn.Linear(6, 2))
    cm = torch.compile(m, backend="aot_eager", dynamic=False)
    x = torch.randn(3, 4)
    torch.autograd.grad(cm(x).sum(), list(m.parameters()), retain_graph=True)  # lazy bw, kept
    yield m, cm, x
    torch._dynamo.reset()


def _compiled_node(t: torch.Tensor):
    fn = t.grad_fn
    while fn.name() != "CompiledFunctionBackward":
        fn = fn.next_functions[0][0]
    return fn


@pytest.mark.usefixtures("open_regions")
def test_saved_value_edges_are_drawn_off_the_gradient_scale(mlp):
    m, cm, x = mlp
    loss = cm(x).sum() * 1e-4  # gradients small; the weights' transposes are not gradients
    g = aw.capture(loss, model=m)
    (nid, r), = g.regions.items()
    assert r.values and set(r.values) < {e.id for e in r.edges}
    assert value_edges(g.regions) == frozenset(r.values)
    # a value edge leaves an op that reads no gradient (here: aten::t of a saved weight)
    fed = {e.dst for e in r.edges}
    for e in r.edges:
        src_fed_by_gradient = e.src == nid or any(
            f.dst == e.src and f.id not in r.values for f in r.edges)
        assert (e.id in r.values) == (not src_fed_by_gradient), e.id
    assert any(g.node(e.src).name == "aten::t" for e in r.edges if e.id in r.values)
    assert fed
    w = aw.explore(g)
    w.stepper.run()
    sv = w._session.scene.state
    sv.advance()
    flags = {e.id: int(sv.edge_flag[sv.edge_index[e.id]]) for e in r.edges}
    assert {e for e, f in flags.items() if f == SAVED_VALUE} == set(r.values)
    assert all(f == FLOWED for e, f in flags.items() if e not in r.values)
    # the colour scale is the gradients' alone: the saved values' norms lie outside it
    summaries = w.stepper.edge_summaries()
    grads = [s.norm for e, s in summaries.items() if e not in r.values and s.norm > 0]
    saved = [s.norm for e, s in summaries.items() if e in r.values]
    scale = run_norm_scale(w._session.scene.graph)
    assert scale.hi == pytest.approx(math.log10(max(grads)))
    assert max(saved) > 10 ** scale.hi
    assert sv.scalars()["norm_range"] == [scale.lo, scale.hi]
    w.close()
    g.close()


@pytest.mark.usefixtures("open_regions")
def test_a_region_round_trips_its_saved_value_edges(mlp):
    m, cm, x = mlp
    g = aw.capture(cm(x).sum(), model=m)
    r = next(iter(g.regions.values()))
    assert type(r).from_dict(r.to_dict()).values == r.values != []
    g.close()


def test_an_opaque_region_says_why_on_its_frame_and_the_status_line(mlp, monkeypatch):
    m, cm, x = mlp
    loss = cm(x).sum()
    monkeypatch.delattr(_compiled_node(loss)._forward_cls, "_lazy_backward_info")
    g = aw.capture(loss, model=m)
    (nid, r), = g.regions.items()
    assert not r.available
    w = aw.explore(g)
    drawn = w._session.scene.graph
    assert drawn.nodes[nid].module == "compiled region 1 · opaque: inside not reachable"
    assert g.nodes[nid].module is None  # the captured records are untouched
    st = w.stepper
    while st.order[st.position] != nid:
        st.step()
    sv = w._session.scene.state
    sv.advance()
    status = sv.scalars()["status"]
    assert "next CompiledFunctionBackward" in status
    assert f"compiled region 1 stays one node: {r.note}" in status
    st.step()
    sv.advance()
    assert "stays one node" in sv.scalars()["status"]  # it just ran
    st.step()
    sv.advance()
    assert "stays one node" not in sv.scalars()["status"]
    w.close()
    g.close()


@pytest.mark.usefixtures("open_regions")
def test_a_graph_file_naming_a_saved_value_edge_the_region_lacks_is_refused(mlp):
    m, cm, x = mlp
    g = aw.capture(cm(x).sum(), model=m)
    d = g.to_dict()
    assert aw.BackwardGraph.from_dict(d).regions == g.regions
    d["regions"][0]["values"] = ["n9/0:0>n9/1:0"]
    with pytest.raises(ValueError, match=r"regions\[0\]\.values\[0\]: 'n9/0:0>n9/1:0' is not an "
                                         r"edge of the region"):
        aw.BackwardGraph.from_dict(d)
    g.close()
