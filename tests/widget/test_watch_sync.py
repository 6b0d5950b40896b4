"""aw.explore(watch) keeps one truth on screen (issue 40, part 3): after another watched step is
shown (`widget.watch_step = k`, the timeline's "watch_step" message, First NaN/Inf), the synced
state says every node ran, as the status does; the selection follows the same op onto a graph
that differs (by identity, not by node id), or is cleared with a notice saying why."""

from __future__ import annotations

import numpy as np
import torch

import autograd_widget as aw
from autograd_widget.wire.protocol import dispatch
from autograd_widget.wire.session import follow_node

DONE = 2


def two_structures():
    """Four watched steps alternating two graphs: even steps `a(x)`, odd steps
    `sqrt(b(a(x)))` (more nodes: b's ops and a sqrt, every id after n1 shifted)."""
    torch.manual_seed(0)
    a, b = torch.nn.Linear(3, 3), torch.nn.Linear(3, 3)
    model = torch.nn.ModuleDict({"a": a, "b": b})
    w = aw.watch(model)
    for step in range(4):
        x = torch.randn(2, 3)
        h = a(x) if step % 2 == 0 else (b(a(x)) ** 2 + 1).sqrt()
        loss = h.pow(2).sum()
        with w.step(loss):
            loss.backward()
    assert len(w.structures) == 2
    return w


def node_state(wid):
    return np.frombuffer(wid._state["node_state"], np.uint8)


def progress(wid):
    return np.frombuffer(wid._state["progress"], np.float32)


def assert_done(wid):
    st = wid._state
    assert st["done"] and st["position"] == st["total"] and "done" in st["status"]
    assert (node_state(wid) == DONE).all(), node_state(wid)
    assert (progress(wid) == 1.0).all()


def by_name(graph, name, module=None):
    (nid,) = [n.id for n in graph.nodes.values() if n.name == name and n.module == module]
    return nid


def test_a_step_whose_graph_differs_is_drawn_run_to_the_end_as_the_status_says():
    w = two_structures()
    wid = aw.explore(w)
    assert_done(wid)
    seqs = [wid._state["seq"]]
    for step in (2, 1, 3, 0):  # other graph, back, same graph, other graph
        wid.watch_step = step
        assert wid.stepper.recording.meta["watch_step"] == step
        assert_done(wid)
        seqs.append(wid._state["seq"])
    # every step's state under a seq never sent before: no front-end cache keyed by it is stale
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    wid.close()


def test_the_timeline_message_and_first_nonfinite_with_a_node_draw_the_final_state():
    w = two_structures()
    wid = aw.explore(w)
    s = wid._session
    assert dispatch(s, {"type": "watch_step", "step": 0}) == []  # a new scene
    assert_done(wid)
    assert dispatch(s, {"type": "watch_step", "step": 2, "node": "n1"}) == []  # same graph
    assert_done(wid)
    assert wid.selected == "n1"
    assert dispatch(s, {"type": "watch_step", "step": 1, "node": "n2"}) == []  # other graph
    assert_done(wid)
    assert wid.selected == "n2" and wid.graph.nodes["n2"].name == "SqrtBackward0"
    wid.close()


def test_the_selection_follows_the_same_op_onto_a_graph_that_differs():
    w = two_structures()
    wid = aw.explore(w)
    wid.watch_step = 0
    g0 = wid.graph
    addmm = by_name(g0, "AddmmBackward0", "a")
    wid.selected = addmm
    wid.watch_step = 1
    g1 = wid.graph
    # the old id names another node in this graph (the n64: another op, another step)...
    assert g1 is not g0 and g1.nodes[addmm].name != "AddmmBackward0"
    # ...so the selection is the same op under its id here
    assert wid.selected == by_name(g1, "AddmmBackward0", "a") != addmm
    assert not wid._state["notice"]
    bias = next(n.id for n in g1.nodes.values() if n.leaf_name == "a.bias")
    wid.selected = bias  # a parameter's AccumulateGrad: followed by its parameter
    wid.watch_step = 2
    assert wid.graph.nodes[wid.selected].leaf_name == "a.bias" and wid.selected != bias
    # an edge follows its source node
    src = by_name(wid.graph, "AddmmBackward0", "a")
    edge = next(e.id for e in wid.graph.edges if e.src == src)
    wid.selected = src
    wid.selected_edge = edge
    wid.watch_step = 3
    new_src = by_name(wid.graph, "AddmmBackward0", "a")
    assert wid.selected == new_src and wid.selected_edge == f"{new_src}:{edge.split(':')[1]}"
    wid.close()


def test_a_node_not_in_the_steps_graph_is_unselected_with_a_notice():
    w = two_structures()
    wid = aw.explore(w)
    wid.watch_step = 1
    sqrt = by_name(wid.graph, "SqrtBackward0")
    wid.selected = sqrt
    assert dispatch(wid._session, {"type": "watch_step", "step": 0}) == []  # a timeline click
    assert sqrt in wid.graph.nodes  # the id exists there, as another node: not selected
    assert wid.selected is None and wid.selected_edge is None
    notice = wid._state["notice"]
    assert "SqrtBackward0" in notice and "not in step 0" in notice and "step 1" in notice
    assert_done(wid)
    wid.stepper.back()  # the stepper moved: the notice has said its piece
    assert not wid._state["notice"]
    wid.watch_step = 1
    assert not wid._state["notice"] and wid.selected is None
    wid.close()


def test_the_same_graph_keeps_the_selection_and_first_nonfinite_chooses_its_own():
    w = two_structures()
    wid = aw.explore(w)
    wid.watch_step = 0
    wid.selected = "n2"
    wid.watch_step = 2  # the same structure: the same nodes, the same ids
    assert wid.selected == "n2" and not wid._state["notice"]
    assert dispatch(wid._session, {"type": "watch_step", "step": 1, "node": "n3"}) == []
    assert wid.selected == "n3" and not wid._state["notice"]  # the node asked for, not n2's op
    wid.close()


def test_follow_node_matches_identity_not_position():
    torch.manual_seed(0)
    a, b = torch.nn.Linear(3, 3), torch.nn.Linear(3, 3)
    net = torch.nn.ModuleDict({"a": a, "b": b})
    x = torch.ones(2, 3)
    one = aw.capture(a(x).relu().sum(), model=net)
    two = aw.capture(b(a(x).relu()).relu().sum(), model=net)
    names = {nid: (n.name, n.module, n.leaf_name) for nid, n in one.nodes.items()}
    for nid, (name, module, leaf) in names.items():
        got = follow_node(one, nid, two)
        assert got is not None, (nid, name)
        n = two.nodes[got]
        assert (n.name, n.module, n.leaf_name) == (name, module, leaf)
    # ReLUs outside any module: a's ReLU is the one that sends gradient to a alone, not the
    # first ReLU in node order (b's, in the bigger graph)
    relu = by_name(one, "ReluBackward0")
    got = follow_node(one, relu, two)
    assert got != relu and two.nodes[got].name == "ReluBackward0"
    assert follow_node(two, got, one) == relu
    # the same id is another node in the other graph: never taken for the same op
    shifted = [nid for nid in one.nodes if nid in two.nodes
               and one.nodes[nid].name != two.nodes[nid].name]  # fmt: skip
    assert shifted and all(follow_node(one, nid, two) != nid for nid in shifted)
    assert follow_node(two, by_name(two, "AddmmBackward0", "b"), one) is None
    assert follow_node(one, "n999", two) is None
    one.close(), two.close()
