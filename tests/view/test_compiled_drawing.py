"""Drawing compiled regions (issue 32, view/compiledframes.py): a region is a frame "compiled
region k · N aten ops" holding its node and its ops, folded into one box at start like a module,
unfoldable; the gradients leaving it are drawn from the op that computes each one; its saved
activations are in the Saved tab with their bytes and counted by the memory mode; the step state
colours the ops as they run; First NaN/Inf reveals an edge inside a region; a release, an HTML
export and a figure work with regions in the drawing. aot_eager models (the drawing does not
depend on the backend)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import autograd_widget as aw
from autograd_widget.core.regions import region_title
from autograd_widget.view import stateview
from autograd_widget.view.compiledframes import ExitEdge, drawn_graph
from autograd_widget.view.inspect import inspect_node, memory_report
from tests.helpers.compiled import compile_model
from tests.helpers.wire import arr, send

# Regions that open (conftest.py `open_regions`): an older torch keeps them opaque.
pytestmark = pytest.mark.usefixtures("open_regions")


@pytest.fixture(scope="module")
def compiled():
    torch._dynamo.reset()
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = compile_model(name, "aot_eager")
        return cache[name]

    yield get
    torch._dynamo.reset()


def _explore(c, **kw):
    loss, _x = c.fresh()
    return aw.explore(loss, model=c.model, **kw)


def test_a_region_starts_folded_and_unfolds_into_its_ops(compiled):
    c = compiled("mlp_gelu")
    w = _explore(c)
    g = w.graph
    nid, r = next(iter(g.regions.items()))
    title = region_title(r)
    assert title == f"compiled region 1 · {len(r.ops)} aten ops"
    assert w.collapsed == [title] and f"box:{title}" in w.visible
    assert nid not in w.visible and not any("/" in v for v in w.visible)
    payload = w._session.graph_payload()
    assert title in payload["box_titles"]
    w.expand(title)  # its module sub-frames stay folded, like a module's children
    assert nid in w.visible and all(b.startswith(f"box:{title}.") for b in w.visible
                                    if b.startswith("box:"))  # fmt: skip
    w.expand()
    assert {op.id for op in r.ops} <= set(w.visible) and w.collapsed == []
    frames = {f.path: f.title for f in w._session.scene.layout.frames}
    assert frames[title] == title
    inner = {p: t for p, t in frames.items() if p.startswith(title + ".")}
    assert inner and all(t.split(" · ")[0] == p[len(title) + 1 :] for p, t in inner.items())
    w.collapse(title)
    assert w.visible.count(f"box:{title}") == 1
    w.reveal(r.ops[3].id)
    assert r.ops[3].id in w.visible
    w.close()


def test_collapse_none_draws_every_op_and_outputs_leave_from_their_ops(compiled):
    c = compiled("two_regions")
    w = _explore(c, collapse="none")
    g, drawn = w.graph, w._session.scene.graph
    assert drawn is not g and drawn.base is g
    ids = set(w.visible)
    for nid, r in g.regions.items():
        assert nid in ids and {op.id for op in r.ops} <= ids
        for o in r.outputs:
            for e in g.out_edges(nid):
                if e.output_nr == o.slot:
                    d = drawn.edge(e.id)
                    assert isinstance(d, ExitEdge) and d.src == o.src and d.id == e.id
    # the graph's own nodes and edges first, in their order
    assert list(drawn.nodes)[: len(g.nodes)] == list(g.nodes)
    assert [e.id for e in drawn.edges[: len(g.edges)]] == [e.id for e in g.edges]
    assert drawn_graph(g, []) is g
    w.close()


def test_the_step_state_colours_ops_as_they_run(compiled):
    c = compiled("mlp_gelu")
    w = _explore(c, collapse="none")
    st, scene = w.stepper, w._session.scene
    nid, r = next(iter(w.graph.regions.items()))
    st.run(until=nid)  # the node and all its ops
    exits = [scene.graph.edge(e.id) for e in w.graph.out_edges(nid)]
    state = w._state
    flags = arr(state["edge_flag"], np.uint8)
    nodes = arr(state["node_state"], np.uint8)
    for op in r.ops:
        assert nodes[scene.item_of(op.id)] == stateview.DONE
    shown = {scene.edge_id(j): int(f) for j, f in enumerate(flags)}
    assert all(shown[e.id] == stateview.FLOWED for e in exits)
    st.reset()
    st.run(until=st.order[st.step_index(nid) + 1])  # the node and its first op only
    flags = arr(w._state["edge_flag"], np.uint8)
    shown = {scene.edge_id(j): int(f) for j, f in enumerate(flags)}
    assert all(shown[e.id] == stateview.NOT_FLOWED for e in exits)
    assert "aten::" in w._state["status"]
    w.close()


def test_saved_activations_are_in_the_saved_tab_and_counted(compiled):
    c = compiled("transformer_block")
    w = _explore(c)
    scene, st = w._session.scene, w.stepper
    nid, r = next(iter(w.graph.regions.items()))
    node = inspect_node(scene, st, nid)
    saved = [v for v in node["saved"] if v["kind"] == "tensor"]
    assert len(saved) == sum(1 for i in r.inputs if i.kind == "saved")
    assert all(v["nbytes"] > 0 for v in saved)
    assert "compiled region 1" in node["formula"]["note"]
    reader = next(op for op in r.ops if any(op.id in i.users and i.kind == "saved"
                                            for i in r.inputs))  # fmt: skip
    op_view = inspect_node(scene, st, reader.id)
    names = {i.name for i in r.inputs if reader.id in i.users and i.kind == "saved"}
    assert {v["name"] for v in op_view["saved"]} == names
    assert all(v["nbytes"] for v in op_view["saved"])
    assert reader.name in op_view["formula"]["note"]
    report = memory_report(scene, exclude_leaves=True)
    assert report["total"] > 0
    box = scene.item_of(nid)  # the folded region
    held = w.graph.saved_memory(exclude_leaves=True)[nid]  # the region's node holds them
    assert scene.visible.item_real[box] < 0 and report["items"][box] == held > 0
    got = send(w, {"type": "inspect", "request": 7, "id": reader.id})
    assert got and got[0]["data"]["id"] == reader.id
    w.close()


class _SqrtNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        return torch.sqrt(torch.relu(self.lin(x))).sum(dim=1)


def test_first_nonfinite_reveals_an_edge_inside_a_region():
    torch.manual_seed(0)
    m = _SqrtNet()
    with torch.no_grad():
        m.lin.bias.fill_(-10.0)
    cm = torch.compile(m, backend="aot_eager", dynamic=False)
    x = torch.randn(2, 3)
    torch.autograd.grad(cm(x).sum(), list(m.parameters()), retain_graph=True)
    w = aw.explore(cm(x).sum(), model=m)
    nid = next(iter(w.graph.regions))
    got = send(w, {"type": "first_nonfinite", "request": 1, "chunk_ms": 5000})
    reply = got[-1]["data"]
    assert reply["edge"] is not None and reply["id"].startswith(nid + "/")
    assert reply["cause"] is not None
    assert w.selected.startswith(nid + "/") and w.selected in w.visible
    w.close()


def test_release_export_and_figure_keep_the_regions(compiled, tmp_path):
    c = compiled("graph_break")
    w = _explore(c, collapse="none")
    w.stepper.run()
    visible = w.visible
    w.save_html(tmp_path / "page.html")
    assert "compiled region 2" in (tmp_path / "page.html").read_text()
    fig = w.to_figure()
    assert len(fig.data) > 0
    w.release()
    assert w.visible == visible and not w.graph.is_live
    assert all(r.available for r in w.graph.regions.values())
    w.close()
