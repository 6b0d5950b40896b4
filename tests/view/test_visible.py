"""The visible graph: module folds, the plumbing filter and search (view/visible.py,
view/modules.py, the Scene and the widget's fold and search messages)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import autograd_widget as aw
from autograd_widget.view import modules, visible
from autograd_widget.view import stateview as view_state
from autograd_widget.wire import payload as view
from tests.helpers.models import make_mlp, make_transformer
from tests.helpers.wire import arr, send


def tracked(model, *inputs, loss=lambda o: o.pow(2).mean()):
    with aw.track(model):
        out = model(*inputs)
    return aw.capture(loss(out), model=model)


def test_top_level_groups_look_through_containers():
    g = tracked(make_transformer(3, 16), torch.randn(2, 4, 16))
    assert modules.top_level_groups(g) == ["layers.0", "layers.1", "layers.2"]
    mlp = tracked(make_mlp((4, 8, 8, 3)), torch.randn(5, 4))
    assert modules.top_level_groups(mlp) == ["0", "1", "2", "3", "4"]
    assert "layers.1.self_attn" in modules.module_paths(g)
    plain = aw.capture((torch.randn(3, requires_grad=True) * 2).sum())
    assert modules.top_level_groups(plain) == [] and modules.module_paths(plain) == []


def test_default_collapse_modes():
    big = tracked(make_transformer(12, 16), torch.randn(2, 4, 16))
    small = tracked(make_mlp((4, 8, 3)), torch.randn(5, 4))
    # "auto" is chosen by pixels (view/autofold.py), not by default_collapsed
    assert visible.default_collapsed(big, "auto") == set()
    assert visible.default_collapsed(small, "modules") == {"0", "1", "2"}
    assert visible.default_collapsed(big, "none") == set()


def test_visible_graph_folds_a_module_and_keeps_boundary_edges():
    g = tracked(make_mlp((4, 8, 3)), torch.randn(5, 4))
    vis = visible.visible_graph(g, {"0"})
    names = [g.nodes[i].name for i in g.nodes]
    box = vis.item_group.index("0")
    members = {names[i] for i in vis.item_members[box]}
    assert members == {"AddmmBackward0", "TBackward0", "AccumulateGrad"}
    assert len(vis.item_members[box]) == 4  # addmm, T, weight, bias
    assert vis.n_items == len(g) - 3
    # Every real edge is either inside the box (hidden) or shown exactly once.
    inside = sum(
        1 for e in g.edges
        if vis.real_item[int(e.src[1:])] == box and vis.real_item[int(e.dst[1:])] == box
    )
    assert inside + len(vis.edge_real) == len(g.edges)
    # The gradient entering the box is ReLU -> Addmm(0): one boundary edge into the box.
    into = [k for k in range(len(vis.edge_real)) if vis.edge_dst[k] == box]
    assert len(into) == 1
    assert g.nodes[g.edges[int(vis.edge_real[into[0]])].src].name == "ReluBackward0"


def test_outermost_collapsed_group_wins():
    g = tracked(make_transformer(2, 16), torch.randn(2, 4, 16))
    vis = visible.visible_graph(g, {"layers.0", "layers.0.self_attn"})
    assert [p for p in vis.item_group if p] == ["layers.0"]


def test_plumbing_filter_contracts_views():
    x = torch.randn(4, 6, requires_grad=True)
    w = torch.randn(6, 3, requires_grad=True)
    out = (x.view(2, 12).view(4, 6) @ w.t().t()).sum()
    g = aw.capture(out)
    full = visible.visible_graph(g)
    lean = visible.visible_graph(g, show_plumbing=False)
    names = [n.name for n in g.nodes.values()]
    hidden = [names[i] for i in np.flatnonzero(lean.real_item < 0)]
    assert sorted(hidden) == ["TBackward0", "TBackward0", "ViewBackward0", "ViewBackward0"]
    assert lean.n_items == full.n_items - 4
    mm = names.index("MmBackward0")
    leaves = {
        g.nodes[f"n{i}"].leaf_name: i for i in range(len(names)) if names[i] == "AccumulateGrad"
    }
    # mm now points straight at both leaves; each contracted edge shows the leaf's own gradient.
    targets = {
        int(lean.item_real[lean.edge_dst[k]]): int(lean.edge_real[k])
        for k in range(len(lean.edge_real)) if lean.item_real[lean.edge_src[k]] == mm
    }
    assert set(targets) == set(leaves.values())
    for leaf, real_edge in targets.items():
        assert g.edges[real_edge].dst == f"n{leaf}"


def test_search_ranks_exact_then_prefix_then_substring():
    g = tracked(make_mlp((4, 8, 3)), torch.randn(5, 4))
    hits = visible.search(g, "2.weight")
    assert g.nodes[hits[0]].leaf_name == "2.weight"
    assert {g.nodes[h].name for h in visible.search(g, "addmm")} == {"AddmmBackward0"}
    assert visible.search(g, "   ") == []
    assert visible.search(g, "n0")[0] == "n0"
    assert visible.search(g, "nothing-like-this") == []


@pytest.fixture
def mlp_widget():
    model = make_mlp((4, 8, 8, 3))
    with aw.track(model):
        out = model(torch.randn(5, 4))
    w = aw.explore(torch.nn.functional.cross_entropy(out, torch.tensor([0, 1, 2, 0, 1])),
                   model=model, collapse="modules")
    yield w
    w.close()


def test_widget_opens_collapsed_and_expands(mlp_widget):
    w = mlp_widget
    g = view.decode_graph(w._graph)
    assert w.collapsed == ["0", "1", "2", "3", "4"]
    kinds = g["nodes"]["kind"]
    assert kinds.count("group") == 5
    assert g["nodes"]["count"] == 5 + 2  # the boxes + NllLoss + LogSoftmax
    box = g["nodes"]["id"].index("group:2")
    assert arr(g["nodes"]["members"], np.int32)[box] == 4
    send(w, {"type": "expand", "group": "2"})
    assert "2" not in w.collapsed and w._graph["nodes"]["count"] == 7 - 1 + 4
    send(w, {"type": "collapse", "group": "2"})
    assert "2" in w.collapsed
    w.expand()
    assert w.collapsed == [] and w._graph["nodes"]["count"] == len(w.graph)


def test_collapsed_box_steps_as_one_unit(mlp_widget):
    w = mlp_widget
    box = view.decode_graph(w._graph)["nodes"]["id"].index("group:4")
    w.stepper.run(until=w.stepper.order[3])  # NllLoss, LogSoftmax, and into module 4
    s = w._state
    progress = arr(s["progress"], np.float32)
    assert 0 < progress[box] < 1
    assert arr(s["node_state"], np.uint8)[box] in (view_state.NEXT, view_state.PENDING)
    # run_to on the box runs until every node inside it has run.
    send(w, {"type": "run_to", "node": box})
    s = w._state
    assert arr(s["progress"], np.float32)[box] == 1.0
    assert arr(s["node_state"], np.uint8)[box] == view_state.DONE
    # The edge entering the box (LogSoftmax -> Addmm of module 4) carries the boundary gradient.
    flags = arr(s["edge_flag"], np.uint8)
    dst = arr(w._graph["edges"]["dst"], np.int32)
    assert (flags[dst == box] == view_state.FLOWED).all()


def test_state_survives_fold_changes(mlp_widget):
    w = mlp_widget
    w.stepper.run()
    w.expand()
    s = w._state
    assert s["done"] and (arr(s["node_state"], np.uint8) != view_state.PENDING).all()
    assert len(arr(s["edge_norm"], np.float32)) == len(w.graph.edges)


def test_plumbing_toggle_changes_visible_count(mlp_widget):
    w = mlp_widget
    w.expand()
    before = w._graph["nodes"]["count"]
    send(w, {"type": "plumbing", "show": False})
    assert not w.show_plumbing
    assert w._graph["nodes"]["count"] == before - 3  # the three TBackward0
    assert w._graph["hidden"] == 3
    send(w, {"type": "plumbing", "show": True})
    assert w._graph["nodes"]["count"] == before


def test_search_message_and_select_by_id_reveals(mlp_widget):
    w = mlp_widget
    (reply,) = send(w, {"type": "search", "request": 3, "query": "4.bias"})
    (m, *_) = reply["data"]["matches"]
    assert m["leaf_name"] == "4.bias"
    kinds = view.decode_graph(w._graph)["nodes"]["kind"]
    assert kinds[m["item"]] == "group", "hidden inside module 4's box"
    send(w, {"type": "select", "id": m["id"]})
    assert w.selected == m["id"]
    assert "4" not in w.collapsed
    assert m["id"] in view.decode_graph(w._graph)["nodes"]["id"]


def test_first_nonfinite_jumps_to_the_edge():
    x = torch.tensor([0.0, 4.0], requires_grad=True)
    w_ = torch.tensor([1.0, 1.0], requires_grad=True)
    loss = (torch.sqrt(x * w_)).sum()
    w = aw.explore(loss, params={"x": x, "w": w_})
    w.stepper.run()
    (reply,) = send(w, {"type": "first_nonfinite", "request": 1})
    data = reply["data"]
    edge, _ = w.stepper.first_nonfinite()
    assert data["id"] == edge.id and w.selected_edge == edge.id
    assert data["src"] == "SqrtBackward0"
    vis_edge = data["edge"]
    assert view.decode_graph(w._graph)["edges"]["id"][vis_edge] == edge.id
    assert arr(w._state["edge_flag"], np.uint8)[vis_edge] == view_state.NONFINITE
    w.close()


def test_inspector_for_node_group_and_hooks():
    model = make_mlp((4, 8, 3))
    model[0].weight.register_hook(lambda g: g * 10)
    with aw.track(model):
        out = model(torch.randn(5, 4))
    w = aw.explore(out.sum(), model=model, collapse="modules")
    box = view.decode_graph(w._graph)["nodes"]["id"].index("group:0")
    (reply,) = send(w, {"type": "inspect", "request": 1, "node": box})
    data = reply["data"]
    assert data["kind"] == "group" and data["members"] == 4
    assert set(data["leaves"]) == {"0.weight", "0.bias"}
    leaf = next(n.id for n in w.graph.nodes.values() if n.leaf_name == "0.weight")
    (reply,) = send(w, {"type": "inspect", "request": 2, "id": leaf})
    hooks = reply["data"]["hooks"]
    assert hooks and hooks[0]["kind"] == "tensor hook" and hooks[0]["on"] == "0.weight"
    addmm = next(n.id for n in w.graph.nodes.values() if n.name == "AddmmBackward0")
    (reply,) = send(w, {"type": "inspect", "request": 3, "id": addmm})
    data = reply["data"]
    assert {s["name"] for s in data["saved"]} >= {"mat1", "mat2"}
    assert any(h["kind"] == "note" for h in data["hooks"])
    assert data["sequence_nr"] == w.graph.nodes[addmm].sequence_nr
    w.close()


def test_bad_fold_messages(mlp_widget):
    w = mlp_widget
    for msg in (
        {"type": "expand", "group": "nope"},
        {"type": "expand", "group": 3},
        {"type": "collapse", "group": "x.y"},
        {"type": "plumbing", "show": "yes"},
        {"type": "search", "request": 1},
        {"type": "select", "id": "n999"},
        {"type": "first_nonfinite"},
    ):
        sent = send(w, msg)
        assert sent and sent[0]["type"] == "warning", msg
    with pytest.raises(ValueError, match="no module"):
        w.collapse("decoder")


def test_saved_values_on_demand_and_edge_by_id():
    model = make_mlp((4, 8, 3))
    w = aw.explore(model(torch.randn(5, 4)).sum(), model=model)
    addmm = next(n.id for n in w.graph.nodes.values() if n.name == "AddmmBackward0")
    (reply,) = send(w, {"type": "saved_values", "request": 4, "id": addmm, "name": "mat1"})
    data = reply["data"]
    assert data["shape"] == [5, 8] and data["numel"] == 40 and len(data["values"]) == 40
    want = w.graph.saved_tensor(addmm, "mat1").reshape(-1).tolist()
    assert data["values"] == pytest.approx(want)
    (reply,) = send(w, {"type": "saved_values", "request": 5, "id": addmm, "name": "nope"})
    assert "it saved" in reply["data"]["error"]
    e = w.graph.edges[0]
    (reply,) = send(w, {"type": "inspect", "request": 6, "edge_id": e.id})
    assert reply["data"]["id"] == e.id
    w.selected_edge = e.id
    w.selected_edge = "n99:9"
    assert w.selected_edge == e.id
    leaf = w.graph.leaves[0]
    (reply,) = send(w, {"type": "inspect", "request": 7, "id": leaf})
    assert reply["data"]["sequence_nr"] is None
    w.close()


def test_stale_marks_follow_in_place_changes_after_explore():
    x = torch.randn(3, requires_grad=True)
    y = x.exp()
    w = aw.explore(y.sum())
    nodes = view.decode_graph(w._graph)["nodes"]
    exp = nodes["name"].index("ExpBackward0")
    assert arr(nodes["saved_state"], np.uint8)[exp] == view.SAVED_OK
    y.add_(1)  # after explore(): the first failing step refreshes the marks
    w.stepper.run()
    assert w._state["error"] is not None
    nodes = view.decode_graph(w._graph)["nodes"]
    assert arr(nodes["saved_state"], np.uint8)[exp] == view.SAVED_STALE
    w.close()


def test_probe_edit_and_leaf_diff_messages():
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    w = aw.explore(x**2 + y, params={"x": x, "y": y})
    (reply,) = send(w, {"type": "probe", "request": 1, "samples": 8, "seed": 0})
    data = reply["data"]
    pow_item = view.decode_graph(w._graph)["nodes"]["label"].index("Pow")
    # PowBackward0 at x=2: d(x^2)/dx = 4, so the squared norm is 16, exactly.
    assert data["items"][pow_item] == pytest.approx(np.log10(16.0))
    assert data["exact"][pow_item] is True
    w.stepper.run(until=w.stepper.order[2])
    e = next(
        k for k, eid in enumerate(view.decode_graph(w._graph)["edges"]["id"])
        if w.graph.nodes[w.graph.edge(eid).dst].leaf_name == "x"
    )
    assert send(w, {"type": "edit_edge", "edge": e, "op": "zero"}) == []
    assert w._state["edits"][str(e)]["kind"] == "zero"
    assert w._state["edge_values"][str(e)] == [0.0]
    w.stepper.run()
    (reply,) = send(w, {"type": "leaf_diff", "request": 2})
    leaves = reply["data"]["leaves"]
    by_name = {d["name"]: d for d in leaves.values()}
    assert by_name["x"]["changed"] and not by_name["y"]["changed"]
    sent = send(w, {"type": "edit_edge", "edge": e, "op": "scale", "factor": 2})
    assert sent and sent[0]["type"] == "warning" and "past" in sent[0]["message"]
    for bad in ({"type": "probe", "request": 1, "samples": 1},
                {"type": "edit_edge", "edge": e, "op": "bend"},
                {"type": "leaf_diff"}):
        sent = send(w, bad)
        assert sent and sent[0]["type"] == "warning", bad
    w.close()
