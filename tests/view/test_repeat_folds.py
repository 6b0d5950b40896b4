"""Folded runs of repeated blocks in the widget: one box "layers.0–5 ×6" for identical layers.

`repeats.find_repeats` recognises the runs (tests/view/test_repeats.py); here:
`visible.visible_graph`'s `folds`, the payload's fold boxes,
`AutogradWidget.fold/unfold/expand/reveal`, collapse="repeats" and collapse="auto", and stepping
through a folded run.
"""

from __future__ import annotations

import itertools
import random
from collections import OrderedDict

import networkx as nx
import numpy as np
import pytest
import torch
from torch import nn

import autograd_widget as aw
from autograd_widget.view import modules, repeats, visible
from autograd_widget.view import scene as scene_mod
from autograd_widget.view import stateview as view_state
from autograd_widget.view.fitrule import Viewport
from autograd_widget.wire import payload as view
from tests.helpers.models import make_transformer
from tests.helpers.wire import arr, send


def tracked(model, x, loss=lambda o: o.pow(2).mean()):
    with aw.track(model):
        out = model(x)
    return aw.capture(loss(out), model=model)


class Stack(nn.Module):
    """`layers` one after the other, a ReLU between (outside any layer)."""

    def __init__(self, layers) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layers)

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


class Block(nn.Module):
    def __init__(self, extra: bool = False) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.extra = extra

    def forward(self, x):
        x = self.lin(x)
        return x * 2 if self.extra else x


class Two(nn.Module):
    """Two different runs (`a`: 4 blocks, `b`: 3 blocks) and a head."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.ModuleList([nn.Linear(8, 8) for _ in range(4)])
        self.b = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        for m in [*self.a, *self.b]:
            x = torch.tanh(m(x))
        return self.head(x)


class Wrapped(nn.Module):
    """A Transformer inside a module with ops of its own: `enc` holds the whole run."""

    def __init__(self, layers: int) -> None:
        super().__init__()
        self.enc = Scaled(make_transformer(layers, 16))
        self.head = nn.Linear(16, 2)

    def forward(self, x):
        return self.head(self.enc(x))


class Scaled(nn.Module):
    def __init__(self, inner) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x * 2.0)


def transformer_widget(layers: int = 6, **kw):
    model = make_transformer(layers, 16)
    x = torch.randn(1, 3, 16, requires_grad=True)
    with aw.track(model):
        out = model(x)
    loss = out.pow(2).mean()
    w = aw.explore(loss, model=model, **kw)
    return w, model, x, loss


def items(w):
    return view.decode_graph(w._graph)["nodes"]


def box_of(w, key):
    return items(w)["id"].index(f"group:{key}")


def boundary(g, members):
    """Real edge ids crossing the border of the nodes under `members`."""
    inside = {
        nid for nid, n in g.nodes.items()
        if any(modules.in_group(n.module, m) for m in members)
    }
    return {e.id for e in g.edges if (e.src in inside) != (e.dst in inside)}, inside


# ----------------------------------------------------------------------------- what folds
def test_fold_makes_one_box_for_the_run_with_its_boundary_edges():
    w, *_ = transformer_widget(6, collapse="none")
    full = items(w)["count"]
    assert [r.label for r in w.repeats] == ["layers.0–5 ×6"] and w.folds == {}
    w.fold()
    key = "layers.0–5 ×6"
    assert list(w.folds) == [key] and w.folds[key].count == 6
    g = view.decode_graph(w._graph)
    nodes = g["nodes"]
    assert nodes["kind"].count("group") == 1
    b = box_of(w, key)
    assert nodes["label"][b] == key and "×6" in nodes["label"][b]
    run = w.folds[key]
    npu = run.nodes_per_unit
    # the hover name has the blocks' class (issue 16's titles)
    assert nodes["name"][b] == (f"{key} · TransformerEncoderLayer: 6 blocks × {npu} nodes "
                                f"({6 * npu} nodes)")
    assert nodes["module"][b] == key
    assert arr(nodes["members"], np.int32)[b] == 6 * run.nodes_per_unit
    assert nodes["count"] < full / 20  # 333 nodes -> a handful of items
    assert g["folds"] == [{
        "key": key, "label": key, "count": 6, "period": 1, "nodes_per_unit": run.nodes_per_unit,
        "members": [f"layers.{i}" for i in range(6)], "item": b,
    }]
    # The visible edges touching the box are exactly the real edges crossing the run's border,
    # and nothing inside the run is drawn.
    crossing, inside = boundary(w.graph, run.members)
    src, dst = arr(g["edges"]["src"], np.int32), arr(g["edges"]["dst"], np.int32)
    touching = {g["edges"]["id"][k] for k in range(g["edges"]["count"]) if b in (src[k], dst[k])}
    assert touching == crossing and crossing
    assert not ((src == b) & (dst == b)).any()
    assert not inside & set(nodes["id"])
    into = [k for k in range(len(src)) if dst[k] == b]
    assert len(into) >= 1 and all(src[k] != b for k in into)
    # The static figure says it too.
    fig = w.to_figure()
    assert any(key in t for tr in fig.data for t in (tr.text or ()) if isinstance(t, str))
    w.close()


def test_visible_graph_folds_outermost_wins_and_absorbs():
    g = tracked(Wrapped(3), torch.randn(1, 3, 16, requires_grad=True))
    (run,) = [r for r in repeats.find_repeats(g) if r.parent == "enc.inner.layers"]
    keys = visible.fold_keys([run], modules.module_paths(g))
    folds = visible.fold_members(keys)
    key = next(iter(keys))
    vis = visible.visible_graph(g, folds=folds)
    assert [p for p in vis.item_group if p] == [key] and vis.folds == {key}
    (b,) = [j for j, p in enumerate(vis.item_group) if p == key]
    assert len(vis.item_members[b]) == run.count * run.nodes_per_unit
    # A collapsed module holding the whole run wins: one "enc" box, no fold box.
    vis = visible.visible_graph(g, {"enc"}, folds=folds)
    assert [p for p in vis.item_group if p] == ["enc"]
    # Collapsed modules inside a member (or a member itself) are absorbed by the fold.
    vis = visible.visible_graph(g, {"enc.inner.layers.1.self_attn", "enc.inner.layers.2"},
                               folds=folds)
    assert [p for p in vis.item_group if p] == [key]
    assert len(vis.item_members[b]) == run.count * run.nodes_per_unit


def test_layers_of_different_widths_do_not_fold():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 32), nn.ReLU(),
                          nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 128), nn.ReLU())
    g = tracked(model, torch.randn(4, 8, requires_grad=True))
    w = aw.explore(g, collapse="repeats")
    assert w.repeats == [] and w.folds == {}
    assert items(w)["count"] == len(g) and "group" not in items(w)["kind"]
    w.fold()  # nothing to fold: nothing changes
    assert items(w)["count"] == len(g) and w._graph["folds"] == []
    with pytest.raises(ValueError, match="no run of repeated blocks"):
        w.fold("2")
    w.close()


def test_a_layer_with_an_extra_op_stays_out_of_the_run():
    layers = [Block(), Block(), Block(), Block(extra=True), Block()]
    g = tracked(Stack(layers), torch.randn(3, 8, requires_grad=True))
    w = aw.explore(g, collapse="repeats")
    assert list(w.folds) == ["layers.0–2 ×3"]
    shown = {g.nodes[i].module for i in items(w)["id"] if i in g.nodes}
    # The odd layer (and the lone one after it) are drawn node by node, outside the box.
    assert {"layers.3.lin", "layers.3", "layers.4.lin"} <= shown
    assert not shown & {"layers.0.lin", "layers.1.lin", "layers.2.lin"}
    # The ReLUs the Stack runs between the folded layers (outside any layer) would leave the box
    # and come back in, a cycle: the box takes them (2 of them), the drawing stays a DAG.
    run = w.folds["layers.0–2 ×3"]
    b = box_of(w, "layers.0–2 ×3")
    assert arr(items(w)["members"], np.int32)[b] == 3 * run.nodes_per_unit + 2
    w.close()


def test_boxes_take_what_lies_between_their_blocks_so_the_drawing_stays_a_dag():
    g = tracked(Stack([nn.Linear(8, 8) for _ in range(4)]), torch.randn(3, 8, requires_grad=True))
    relus = {nid for nid, n in g.nodes.items() if n.name == "ReluBackward0"}
    for vis in (visible.visible_graph(g, {"layers"}),  # a collapsed ModuleList: same story
                visible.visible_graph(g, folds={f"layers.{i}": "k" for i in range(4)})):
        key = next(p for p in vis.item_group if p)
        (b,) = [j for j, p in enumerate(vis.item_group) if p == key]
        held = {list(g.nodes)[int(i)] for i in vis.item_members[b]}
        assert len(held & relus) == 3  # the three between the four layers, not the last one
        assert nx.is_directed_acyclic_graph(
            nx.DiGraph(list(zip(vis.edge_src.tolist(), vis.edge_dst.tolist())))
        )
    w = aw.explore(g, collapse="none")
    w.collapse("layers")  # used to fail: "the graph has a cycle"
    assert w.collapsed == ["layers"]
    w.close()
    # Selecting such a node (module "", not under any member) opens the box holding it.
    w = aw.explore(g, collapse="repeats")
    inside = sorted(relus - set(items(w)["id"]))
    assert len(inside) == 3
    relu = inside[1]
    send(w, {"type": "select", "id": relu})
    assert w.selected == relu and relu in items(w)["id"] and w.folds == {}
    assert w.collapsed == [f"layers.{i}" for i in range(4)]
    w.close()


@pytest.mark.parametrize("seed", range(60))
def test_cycle_merge_is_the_condensation(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 12)
    edges = [(a, b) for a, b in ((rng.randrange(n), rng.randrange(n)) for _ in range(25)) if a != b]
    vis = visible.VisibleGraph(
        item_real=np.full(n, -1, np.int32), item_group=[f"g{j}" for j in range(n)],
        item_members=[np.array([j], np.int32) for j in range(n)],
        real_item=np.arange(n, dtype=np.int32),
        edge_src=np.array([a for a, _ in edges], np.int32),
        edge_dst=np.array([b for _, b in edges], np.int32),
        edge_real=np.arange(len(edges), dtype=np.int32), collapsed=frozenset(), show_plumbing=True,
    )
    got: dict[str, set[int]] = {}
    for i, key in visible._cycle_merge(vis).items():
        got.setdefault(key, set()).add(i)
    g = nx.DiGraph(edges)
    sccs = [c for c in nx.strongly_connected_components(g) if len(c) > 1]
    want = {f"g{min(c)}": set(c) - {min(c)} for c in sccs}
    assert got == want


# ----------------------------------------------------------------------------- stepping
def test_stepping_through_a_folded_run():
    w, model, x, loss = transformer_widget(4, collapse="repeats")
    key = "layers.0–3 ×4"
    b = box_of(w, key)
    seen_state, seen_progress = [], []
    while not w.stepper.done:
        send(w, {"type": "step"})
        s = w._state
        seen_state.append(int(arr(s["node_state"], np.uint8)[b]))
        seen_progress.append(float(arr(s["progress"], np.float32)[b]))
    assert seen_progress[0] == 0.0 and seen_progress[-1] == 1.0
    assert any(0 < p < 1 for p in seen_progress)
    assert all(a <= c for a, c in itertools.pairwise(seen_progress))
    # pending -> next (the next node is inside the run) -> done.
    runs = [s for k, s in enumerate(seen_state) if k == 0 or s != seen_state[k - 1]]
    assert runs[0] == view_state.PENDING and view_state.NEXT in runs and runs[-1] == view_state.DONE
    assert runs.index(view_state.NEXT) < len(runs) - 1
    # Every leaf gradient is the engine's.
    params = [x, *model.parameters()]
    want = torch.autograd.grad(loss, params, retain_graph=True)
    for p, g in zip(params, want):
        torch.testing.assert_close(w.stepper.grad(p), g)
    w.close()


def test_run_to_inside_and_through_a_folded_run():
    w, *_ = transformer_widget(3, collapse="repeats")
    key = "layers.0–2 ×3"
    b = box_of(w, key)
    run = w.folds[key]
    order = w.stepper.order
    inside = [k for k, nid in enumerate(order)
              if any(modules.in_group(w.graph.nodes[nid].module, m) for m in run.members)]
    target = order[inside[len(inside) // 2]]
    w.stepper.run(until=target)
    assert w.stepper.position == order.index(target) + 1
    progress = arr(w._state["progress"], np.float32)[b]
    assert 0 < progress < 1
    assert list(w.folds) == [key], "stepping never unfolds"
    # "Run to" on the box runs until every node of the run has run.
    send(w, {"type": "run_to", "node": b})
    assert w.stepper.position == inside[-1] + 1
    s = w._state
    assert arr(s["progress"], np.float32)[b] == 1.0
    assert arr(s["node_state"], np.uint8)[b] == view_state.DONE
    (reply,) = send(w, {"type": "inspect", "request": 1, "node": b})
    data = reply["data"]
    assert data["label"] == key and data["fold"]["count"] == 3 and data["progress"] == 1.0
    w.close()


# ----------------------------------------------------------------------------- unfold, reveal
def test_unfold_is_local():
    g = tracked(Two(), torch.randn(5, 8, requires_grad=True))
    w = aw.explore(g, collapse="repeats")
    assert list(w.folds) == ["a.0–3 ×4", "b.0–2 ×3"]
    w.collapse("head")
    before = items(w)["count"]
    # A click on the box sends "expand" with the fold key: the run becomes one box per block.
    send(w, {"type": "expand", "group": "a.0–3 ×4"})
    assert list(w.folds) == ["b.0–2 ×3"]
    assert w.collapsed == ["a.0", "a.1", "a.2", "a.3", "head"]
    boxes = [i for i, k in zip(items(w)["id"], items(w)["kind"]) if k == "group"]
    assert sorted(boxes) == sorted(
        ["group:a.0", "group:a.1", "group:a.2", "group:a.3", "group:b.0–2 ×3", "group:head"]
    )
    assert items(w)["count"] > before
    # Unfolding without blocks drops the fold only; folding again gives the box back.
    w.unfold("b.0–2 ×3", blocks=False)
    assert w.folds == {} and "b.0" not in w.collapsed
    w.fold("b.1")  # by a member's path
    assert list(w.folds) == ["b.0–2 ×3"]
    w.fold("a.0–3 ×4")
    assert w.collapsed == ["head"], "collapsed blocks are absorbed by the fold"
    assert items(w)["count"] == before
    with pytest.raises(ValueError, match="not folded"):
        w.unfold("a.0–3 ×4") or w.unfold("a.0–3 ×4")
    for msg in ({"type": "expand", "group": "a.0–3 ×5"}, {"type": "expand", "group": 7}):
        (warning,) = send(w, msg)
        assert warning["type"] == "warning"
    w.expand()
    assert w.folds == {} and w.collapsed == [] and items(w)["count"] == len(g)
    w.close()


def test_reveal_unfolds_the_run_holding_the_node():
    g = tracked(Two(), torch.randn(5, 8, requires_grad=True))
    w = aw.explore(g, collapse="repeats")
    leaf = next(n.id for n in g.nodes.values() if n.leaf_name == "b.1.weight")
    assert leaf not in items(w)["id"]
    send(w, {"type": "select", "id": leaf})
    assert w.selected == leaf and leaf in items(w)["id"]
    assert list(w.folds) == ["a.0–3 ×4"], "the other run stays folded"
    assert w.collapsed == ["b.0", "b.2"], "the run's other blocks stay boxes"
    w.close()


def test_fold_keys_never_name_a_module():
    w, *_ = transformer_widget(3, collapse="repeats")
    assert set(w.folds).isdisjoint(w.modules)
    w.close()
    # A module literally named like the run's label: the key gets a prefix.
    model = nn.Sequential(OrderedDict(
        [("0", nn.Linear(8, 8)), ("1", nn.Linear(8, 8)), ("0–1 ×2", nn.Linear(8, 3))]
    ))
    g = tracked(model, torch.randn(4, 8, requires_grad=True))
    w = aw.explore(g, collapse="repeats")
    assert [r.label for r in w.repeats] == ["0–1 ×2"]
    assert list(w.folds) == [f"{visible.FOLD_PREFIX}0–1 ×2"]
    key = next(iter(w.folds))
    assert key not in w.modules and w.folds[key].label == "0–1 ×2"
    b = box_of(w, key)
    assert items(w)["label"][b] == "0–1 ×2"
    # The module of that name is not in the fold's box and folds into a box of its own.
    w.collapse("0–1 ×2")
    assert sorted(i for i, k in zip(items(w)["id"], items(w)["kind"]) if k == "group") == [
        "group:0–1 ×2", f"group:{key}"
    ]
    w.unfold("0–1 ×2")  # by label
    assert w.folds == {} and w.collapsed == ["0", "0–1 ×2", "1"]
    w.close()
    r = repeats.Repeat("x", ("x.0", "x.1"), 2, 1, "x.0–1 ×2", "s", 3)
    assert list(visible.fold_keys([r], ["x.0–1 ×2", "fold:x.0–1 ×2"])) == ["fold:fold:x.0–1 ×2"]


def test_repeats_are_found_once_per_graph(monkeypatch):
    calls = []
    real = scene_mod.find_repeats
    monkeypatch.setattr(scene_mod, "find_repeats", lambda g: calls.append(1) or real(g))
    w, *_ = transformer_widget(3, collapse="none")
    assert calls == []  # "none" never looks
    assert len(w.repeats) == 1 and len(w.repeats) == 1
    w.fold()
    w.unfold()
    w.fold()
    assert calls == [1]
    w.close()


# ----------------------------------------------------------------------------- collapse modes
def test_auto_on_48_layers_opens_as_one_fold_box():
    w, *_ = transformer_widget(48)  # collapse="auto"
    assert len(w.graph) > 2000
    assert list(w.folds) == ["layers.0–47 ×48"]
    nodes = items(w)
    assert nodes["count"] <= 6, nodes["label"]
    assert nodes["kind"].count("group") == 1
    assert "layers.0–47 ×48" in nodes["label"]
    w.close()


def test_auto_looks_through_a_module_holding_the_run_and_collapses_the_rest():
    model = Wrapped(8)
    x = torch.randn(1, 3, 16, requires_grad=True)
    g = tracked(model, x)
    w = aw.explore(g)  # "auto"
    assert list(w.folds) == ["enc.inner.layers.0–7 ×8"]
    # The modules holding the run ("enc", "enc.inner") are looked through, not folded over
    # it (what else folds depends on the drawing's room).
    assert not {"", "enc", "enc.inner"} & set(w.collapsed)
    boxes = [i for i, k in zip(items(w)["id"], items(w)["kind"]) if k == "group"]
    assert "group:enc.inner.layers.0–7 ×8" in boxes
    assert items(w)["count"] == len(w.visible)
    w.close()
    # "modules" is unchanged: top-level modules, no folds; a small graph stays open on "auto".
    w = aw.explore(g, collapse="modules")
    assert w.folds == {} and w.collapsed == ["enc", "head"]
    w.close()
    small = tracked(Stack([nn.Linear(8, 8) for _ in range(3)]), torch.randn(2, 8))
    w = aw.explore(small)
    w._session.scene.fit_to(Viewport(3000, 2000))  # room for every node: nothing folds
    w._session.redraw()
    assert w.folds == {} and w.collapsed == [] and items(w)["count"] == len(small)
    w.close()
    with pytest.raises(ValueError, match="repeats"):
        aw.explore(small, collapse="fold")
