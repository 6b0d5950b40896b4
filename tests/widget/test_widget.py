"""AutogradWidget's Python side: payloads, state after each command, message validation."""

from __future__ import annotations

import gc
import logging
import weakref

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

import autograd_widget as aw
from autograd_widget.view import stateview as view_state
from autograd_widget.wire import payload as view
from tests.helpers.models import make_mlp
from tests.helpers.wire import arr, send


def zxy():
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    return x, y, x**2 + y


@pytest.fixture
def zw():
    x, y, z = zxy()
    w = aw.explore(z, params={"x": x, "y": y})
    yield w
    w.close()


def edge_index(w, src_label, dst_label):
    g = view.decode_graph(w._graph)
    labels = g["nodes"]["label"]
    src, dst = arr(g["edges"]["src"], np.int32), arr(g["edges"]["dst"], np.int32)
    for i, (a, b) in enumerate(zip(src, dst)):
        if labels[a] == src_label and labels[b] == dst_label:
            return i
    raise AssertionError(f"no edge {src_label} -> {dst_label}")


def test_graph_payload(zw):
    assert zw._graph["version"] == view.PAYLOAD_VERSION == 2
    g = view.decode_graph(zw._graph)
    assert g["orientation"] == "TB"
    assert g["nodes"]["count"] == 4 and g["edges"]["count"] == 3
    assert g["nodes"]["label"] == ["Add", "Pow", "y", "x"]
    assert g["nodes"]["kind"] == ["function", "function", "parameter", "parameter"]
    assert g["nodes"]["name"][0] == "AddBackward0"
    assert list(arr(g["nodes"]["root"], np.uint8)) == [1, 0, 0, 0]
    x, y = arr(g["nodes"]["x"], np.float32), arr(g["nodes"]["y"], np.float32)
    assert len(x) == 4 and y[0] == y.max(), "the root is on top"
    ptr = arr(g["edges"]["path_ptr"], np.int32)
    px = arr(g["edges"]["path_x"], np.float32)
    assert len(ptr) == 4 and ptr[-1] == len(px)
    assert all(np.isnan(px[p - 1]) for p in ptr[1:]), "each polyline ends with a NaN gap"
    assert g["nodes"]["inputs"][3] == [[[], "float32", "cpu"]]


def test_state_after_creation(zw):
    s = zw._state
    assert s["position"] == 0 and s["total"] == 4 and not s["done"]
    assert s["status"] == "step 0 / 4 → next AddBackward0"
    assert s["next"] == 0
    assert list(arr(s["node_state"], np.uint8)) == [view_state.NEXT, 0, 0, 0]
    assert np.isnan(arr(s["edge_norm"], np.float32)).all()
    assert s["waiting"][0]["values"] == [1.0], "the implicit root gradient waits at Add"
    assert s["error"] is None and s["notice"] is None


def test_stepping_from_python_updates_the_state(zw):
    seq = zw._state["seq"]
    zw.stepper.step()
    s = zw._state
    assert s["seq"] > seq
    assert s["position"] == 1
    assert s["status"] == "ran AddBackward0 (step 1 / 4) → next AccumulateGrad (y)"
    states = arr(s["node_state"], np.uint8)
    assert states[0] == view_state.DONE
    e_y = edge_index(zw, "Add", "y")
    assert s["edge_values"][str(e_y)] == [1.0]
    zw.stepper.run()
    s = zw._state
    assert s["done"] and s["next"] == -1
    assert s["status"] == "ran AccumulateGrad (x) (step 4 / 4) — done"
    e_x = edge_index(zw, "Pow", "x")
    assert s["edge_values"][str(e_x)] == [4.0]
    flags = arr(s["edge_flag"], np.uint8)
    assert (flags == view_state.FLOWED).all()
    norms = arr(s["edge_norm"], np.float32)
    assert norms[e_x] == pytest.approx(4.0) and norms[e_y] == pytest.approx(1.0)
    assert s["norm_range"] == [pytest.approx(0.0), pytest.approx(np.log10(4.0))]
    zw.stepper.back()
    s = zw._state
    assert s["position"] == 3 and str(e_x) in s["edge_values"]
    zw.stepper.reset()
    s = zw._state
    assert s["position"] == 0 and s["edge_values"] == {}
    assert np.isnan(arr(s["edge_norm"], np.float32)).all()


def test_step_back_reset_run_to_select_messages(zw):
    order = ["AddBackward0", "AccumulateGrad", "PowBackward0", "AccumulateGrad"]
    for k in range(4):
        assert send(zw, {"type": "step"}) == []
        assert zw._state["position"] == k + 1
        assert zw.stepper.order[k] in zw.graph.nodes
        assert zw.graph.nodes[zw.stepper.order[k]].name == order[k]
    sent = send(zw, {"type": "step"})
    assert sent and sent[0]["type"] == "warning" and "end" in sent[0]["message"]
    send(zw, {"type": "back"})
    assert zw._state["position"] == 3 == zw.stepper.position
    send(zw, {"type": "reset"})
    assert zw.stepper.position == 0
    pow_idx = view.decode_graph(zw._graph)["nodes"]["label"].index("Pow")
    send(zw, {"type": "run_to", "node": pow_idx})
    assert zw.stepper.position == 3
    assert zw._state["status"] == "ran PowBackward0 (step 3 / 4) → next AccumulateGrad (x)"
    send(zw, {"type": "select", "node": pow_idx})
    assert zw.selected == "n1"
    send(zw, {"type": "select", "node": None})
    assert zw.selected is None
    send(zw, {"type": "run", "chunk_ms": 50})
    assert zw.stepper.done and not zw._state["running"]


def test_selection_from_python_is_validated(zw, caplog):
    zw.selected = "n2"
    assert zw.selected == "n2"
    with caplog.at_level(logging.WARNING, logger="autograd_widget"):
        zw.selected = "n99"
    assert zw.selected == "n2"
    assert "unknown node" in caplog.text


@pytest.mark.parametrize(
    "msg",
    [
        "step",
        {"no": "type"},
        {"type": 3},
        {"type": "fly"},
        {"type": "run_to"},
        {"type": "run_to", "node": 99},
        {"type": "run_to", "node": "n1"},
        {"type": "run_to", "node": True},
        {"type": "run", "chunk_ms": -1},
        {"type": "run", "chunk_ms": "fast"},
        {"type": "select", "node": 1.5},
        {"type": "inspect", "node": 0},
        {"type": "inspect", "request": 1, "edge": 42},
        {"type": "inspect", "request": 1, "node": -1},
        {"type": "back"},
    ],
)
def test_bad_messages_are_ignored_with_a_warning(zw, msg, caplog):
    before = dict(zw._state)
    with caplog.at_level(logging.WARNING, logger="autograd_widget"):
        sent = send(zw, msg)
    assert sent and sent[0]["type"] == "warning"
    assert caplog.records
    assert zw.stepper.position == 0
    assert zw._state["position"] == before["position"]
    assert zw.selected is None


def test_inspect_replies(zw):
    zw.stepper.run()
    e = edge_index(zw, "Pow", "x")
    (reply,) = send(zw, {"type": "inspect", "request": 7, "edge": e})
    assert reply["type"] == "reply" and reply["request"] == 7
    data = reply["data"]
    assert data["src"]["name"] == "PowBackward0" and data["dst"]["label"] == "x"
    assert data["summary"]["values"] == [4.0] and data["summary"]["norm"] == pytest.approx(4.0)
    (reply,) = send(zw, {"type": "inspect", "request": 8, "node": 1})
    data = reply["data"]
    assert data["name"] == "PowBackward0" and data["inputs"] == [[[], "float32", "cpu"]]
    assert data["incoming"][0]["values"] == [1.0]
    assert next(iter(data["outgoing"].values()))["values"] == [4.0]


def test_nan_gradient_is_flagged():
    x = torch.tensor([0.0, 1.0], requires_grad=True)
    y = torch.sqrt(x) * 0.0
    w = aw.explore(y.sum())
    w.stepper.run()
    flags = arr(w._state["edge_flag"], np.uint8)
    assert (flags == view_state.NONFINITE).any()
    w.close()


def test_failing_node_is_shown_and_widget_stays_usable():
    x = torch.randn(3, requires_grad=True)
    h = x * 2
    y = h.exp()
    y.add_(1)  # ExpBackward0 saved its result: stepping it must fail with the version error
    w = aw.explore(y.sum())
    w.stepper.run()
    s = w._state
    assert s["error"] is not None and "inplace" in s["error"]["message"]
    failed = s["error"]["node"]
    assert view.decode_graph(w._graph)["nodes"]["name"][failed] == "ExpBackward0"
    assert arr(s["node_state"], np.uint8)[failed] == view_state.FAILED
    assert "failed" in s["status"]
    send(w, {"type": "back"})
    assert w._state["position"] == w.stepper.position
    send(w, {"type": "reset"})
    assert w.stepper.position == 0
    w.close()


def _failing_widget():
    x = torch.randn(3, requires_grad=True)
    y = (x * 2).exp()
    y.add_(1)  # ExpBackward0's saved result is stale: its step fails
    return aw.explore(y.sum())


@pytest.mark.parametrize(
    ("msg", "what"),
    [
        ({"type": "step"}, "can't step"),
        ({"type": "run", "chunk_ms": 50}, "can't run on"),
        ({"type": "run_to", "node": 0}, "can't run to a node"),
    ],
)
def test_after_a_failure_moving_on_is_refused_with_the_way_out(msg, what):
    w = _failing_widget()
    w.stepper.run()
    pos, seq, err = w.stepper.position, w._state["seq"], w._state["error"]
    assert err is not None
    out = send(w, msg)
    assert out == [{
        "type": "warning",
        "message": f"{what}: ExpBackward0 failed — Back or Reset to go on",
    }]
    # refused before anything changed: same position, same state, the failure still shown
    assert w.stepper.position == pos and w._state["seq"] == seq and w._state["error"] == err
    assert not w._state["running"]
    # Back clears the failure: stepping is allowed again (and fails again at the same node)
    assert send(w, {"type": "back"}) == []
    assert w._state["error"] is None
    assert w.stepper.position == pos - 1
    assert send(w, {"type": "step"}) == [] and w.stepper.position == pos
    assert send(w, {"type": "step"}) == [] and w._state["error"] is not None
    w.close()


def test_a_failure_at_step_0_points_to_reset_only():
    x = torch.tensor(2.0, requires_grad=True)
    loss = x.exp()  # the root itself saved its result...
    loss.backward()  # ...which backward() freed: step 0 fails
    with pytest.warns(UserWarning, match="already freed by backward"):
        w = aw.explore(loss)
    assert send(w, {"type": "step"}) == []
    assert w.stepper.position == 0 and w._state["error"] is not None
    out = send(w, {"type": "step"})
    msg = "can't step: ExpBackward0 failed — Reset to go on"
    assert out == [{"type": "warning", "message": msg}]
    assert send(w, {"type": "reset"}) == []
    assert w._state["error"] is None and w.stepper.position == 0
    w.close()


def test_freed_graph_says_what_is_wrong():
    x = torch.randn(3, requires_grad=True)
    loss = x.exp().sum()
    loss.backward()
    with pytest.warns(UserWarning, match="already freed by backward"):
        w = aw.explore(loss)
    assert "freed by backward()" in w._state["notice"]
    assert "retain_graph=True" in w._state["notice"]
    w.stepper.run()
    assert w._state["error"] is not None
    w.close()


def test_mlp_widget_and_figure():
    model = make_mlp((4, 8, 3))
    with aw.track(model):
        out = model(torch.randn(5, 4))
    w = aw.explore(out.pow(2).mean(), model=model, orientation="LR")
    assert w._graph["orientation"] == "LR"
    w.stepper.run()
    fig = w.to_figure()
    assert isinstance(fig, go.Figure)
    assert "done" in fig.layout.title.text
    w.orientation = "TB"
    assert w._graph["orientation"] == "TB"
    w.close()


class _Marker:
    """A weakref-able object a custom Function keeps on its ctx: alive exactly as long as the
    graph (and so its saved activations) is."""


class _Keep(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, marker):
        ctx.marker = marker
        ctx.save_for_backward(a)
        return a * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2, None


def test_release_keeps_the_drawing_and_frees_torch_objects():
    x = torch.randn(64, 64, requires_grad=True)
    marker = _Marker()
    graph_ref = weakref.ref(marker)
    loss = _Keep.apply(x.exp(), marker).sum()
    loss_ref = weakref.ref(loss)
    w = aw.explore(loss)
    w.stepper.step()
    del loss, marker
    gc.collect()
    assert loss_ref() is not None and graph_ref() is not None, "the widget holds the graph"
    graph_payload = w._graph
    w.release()
    gc.collect()
    assert loss_ref() is None and graph_ref() is None, "released: nothing torch is pinned"
    assert w._graph is graph_payload
    assert "released" in w._state["notice"]
    sent = send(w, {"type": "step"})
    assert sent[0]["type"] == "warning" and "released" in sent[0]["message"]
    w.close()


def test_close_and_del_frees_the_graph():
    marker = _Marker()
    ref = weakref.ref(marker)
    w = aw.explore(_Keep.apply(torch.randn(3, requires_grad=True), marker).sum())
    del marker
    w.stepper.run()
    w.close()
    del w
    gc.collect()
    assert ref() is None


def test_bad_options():
    _x, _y, z = zxy()
    with pytest.raises(ValueError, match="collapse"):
        aw.explore(z, collapse="all")
    with pytest.raises(ValueError, match="orientation"):
        aw.explore(z, orientation="BT")
    with pytest.raises(ValueError, match="height"):
        aw.explore(z, height=-3)
    g = aw.capture(z)
    with pytest.raises(TypeError, match="capture"):
        aw.AutogradWidget(g, model=torch.nn.Linear(1, 1))
    w = aw.AutogradWidget(g)
    assert w.graph is g
    w.close()


def test_a_what_if_edit_from_python_shows_on_the_edge(zw):
    zw.stepper.run(until=zw.stepper.order[2])  # Add, y, Pow have run; x's slot waits
    e_x = edge_index(zw, "Pow", "x")
    assert zw._state["edge_values"][str(e_x)] == [4.0]
    zw.stepper.zero_edge_grad(zw.graph.edges[e_x].id)  # the stepper notifies the widget
    assert zw._state["edge_values"][str(e_x)] == [0.0]
    zw.stepper.run()
    x_leaf = next(n.id for n in zw.graph.nodes.values() if n.leaf_name == "x")
    assert zw._state["done"] and x_leaf
    zw.stepper.reset()
    zw.stepper.run()
    assert zw._state["edge_values"][str(e_x)] == [4.0]
