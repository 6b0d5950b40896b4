"""Repeated blocks (repeats.py): what folds, what must not, and that the answer is stable."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

import autograd_widget as aw
from autograd_widget.core.graph import DICT_FORMAT, BackwardGraph
from autograd_widget.core.records import ACCUMULATE_GRAD_SEQUENCE_NR
from autograd_widget.view import repeats
from tests.helpers.models import make_transformer


class Stack(nn.Module):
    """`layers` applied one after the other, with a ReLU between (outside any layer)."""

    def __init__(self, layers: list[nn.Module]) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x


def captured(model: nn.Module, x: torch.Tensor, track: bool = True) -> BackwardGraph:
    if track:
        with aw.track(model):
            out = model(x)
    else:
        out = model(x)
    return aw.capture(out.pow(2).mean(), model=model)


def labels(graph: BackwardGraph, **kw) -> list[str]:
    return [r.label for r in repeats.find_repeats(graph, **kw)]


# ----------------------------------------------------------------------------- what folds
def test_48_identical_transformer_layers_fold_into_one_box():
    model = make_transformer(48, 16)
    g = captured(model, torch.randn(1, 2, 16, requires_grad=True))
    found = repeats.find_repeats(g)
    assert [r.label for r in found] == ["layers.0–47 ×48"]
    r = found[0]
    assert r.count == 48 and r.period == 1 and r.parent == "layers"
    assert r.members == tuple(f"layers.{i}" for i in range(48))
    assert r.representative == ("layers.0",)
    assert r.nodes_per_unit == len(g.modules()["layers.0"]) + sum(
        len(v) for k, v in g.modules().items() if k.startswith("layers.0.")
    )
    fm = repeats.fold_map(g, found)
    assert fm == {f"layers.{i}": "layers.0–47 ×48" for i in range(48)}


def test_first_layer_without_input_gradient_differs_and_stays_out():
    # No gradient flows to the input, so layer 0 lacks the input-side nodes the others have.
    g = captured(make_transformer(6, 16), torch.randn(1, 2, 16))
    assert labels(g) == ["layers.1–5 ×5"]
    sig = repeats.signatures(g, ["layers.0", "layers.1", "layers.5"])
    assert sig["layers.1"] == sig["layers.5"] != sig["layers.0"]


def test_identical_layers_fold_without_track_through_parameter_ownership():
    model = Stack([nn.Linear(8, 8) for _ in range(5)])
    g = captured(model, torch.randn(3, 8, requires_grad=True), track=False)
    assert labels(g) == ["layers.0–4 ×5"]


def test_mlp_with_identical_hidden_layers():
    widths = [nn.Linear(4, 8), nn.ReLU()]
    for _ in range(3):
        widths += [nn.Linear(8, 8), nn.ReLU()]
    mlp = nn.Sequential(*widths, nn.Linear(8, 3))
    x = torch.randn(5, 4)
    # Tracked, a flat Sequential alternates Linear and ReLU: the repeated block is the pair,
    # phased to start with the Linear (the heavier sibling), and the 4->8 input layer differs.
    r = repeats.find_repeats(captured(mlp, x))
    assert [(x.label, x.period, x.count) for x in r] == [("(2, 3)–(6, 7) ×3", 2, 3)]
    assert r[0].units == (("2", "3"), ("4", "5"), ("6", "7"))
    # Without track the ReLUs hold no nodes (no parameters), so the Linears are adjacent.
    assert labels(captured(mlp, x, track=False)) == ["2–6 ×3"]
    # Hidden layers as blocks of a ModuleList: one sibling per block.
    blocks = Stack([nn.Sequential(nn.Linear(8, 8), nn.Tanh()) for _ in range(4)])
    assert labels(captured(blocks, torch.randn(5, 8))) == ["layers.1–3 ×3"]
    assert labels(captured(blocks, torch.randn(5, 8, requires_grad=True))) == ["layers.0–3 ×4"]


def test_cnn_stages_in_a_flat_sequential_fold_as_units():
    def stage() -> list[nn.Module]:
        return [nn.Conv2d(4, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU()]

    cnn = nn.Sequential(*stage(), *stage(), *stage())
    g = captured(cnn, torch.randn(2, 4, 6, 6, requires_grad=True))
    r = repeats.find_repeats(g)
    assert [(x.label, x.period) for x in r] == [("(0, 1, 2)–(6, 7, 8) ×3", 3)]


# ------------------------------------------------------------------------- what must not fold
def test_layers_of_different_widths_do_not_fold():
    model = Stack([nn.Linear(8, 8), nn.Linear(8, 16), nn.Linear(16, 32), nn.Linear(32, 64)])
    g = captured(model, torch.randn(3, 8, requires_grad=True))
    assert repeats.find_repeats(g) == []
    sig = repeats.signatures(g, [f"layers.{i}" for i in range(4)])
    assert len(set(sig.values())) == 4


def test_same_ops_different_activation_shapes_do_not_fold():
    # A parameter-free block: only the slot shapes tell the copies apart.
    class Square(nn.Module):
        def forward(self, x):
            return x * x

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = Square(), Square()

        def forward(self, x):
            return self.b(self.a(x).flatten())

    g = captured(Net(), torch.randn(2, 3, requires_grad=True))
    assert repeats.find_repeats(g) == []
    same = captured(Net(), torch.randn(6, requires_grad=True))
    assert labels(same) == ["a–b ×2"]


def test_a_differing_layer_breaks_the_run_in_two():
    layers = [nn.Linear(8, 8) for _ in range(3)]
    layers += [nn.Linear(8, 8, bias=False)]  # MmBackward, no bias leaf
    layers += [nn.Linear(8, 8) for _ in range(3)]
    g = captured(Stack(layers), torch.randn(3, 8, requires_grad=True))
    assert labels(g) == ["layers.0–2 ×3", "layers.4–6 ×3"]
    widths = [nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 16), nn.Linear(16, 16)]
    widths += [nn.Linear(16, 16)]
    g = captured(Stack(widths), torch.randn(3, 8, requires_grad=True))
    assert labels(g) == ["layers.0–1 ×2", "layers.3–4 ×2"]


def test_no_modules_no_repeats():
    x = torch.randn(4, requires_grad=True)
    y = x
    for _ in range(20):
        y = y * 2.0
    g = aw.capture(y.sum())
    assert repeats.find_repeats(g) == [] and repeats.fold_map(g, []) == {}
    assert repeats.signatures(g) == {}


# ------------------------------------------------------------- pure records, wiring, determinism
def _node(i, name, seq, shape, module, **kw):
    d = {
        "id": f"n{i}",
        "name": name,
        "kind": "function",
        "sequence_nr": seq,
        "inputs": [[list(shape), "float32", "cpu"]],
        "module": module,
        "leaf_name": None,
        "traceback": None,
        "leaf_kind": None,
        "num_outputs": 1,
        "is_root": i == 0,
    }
    d.update(kw)
    return d


def _blocks_graph(n_blocks: int, cross_wire: int | None = None) -> BackwardGraph:
    """root -> block k-1 -> ... -> block 0 -> leaf; each block: A -> B -> C, plus A -> C.

    `cross_wire` = k gives block k the extra edge into C's slot 1 instead of B's: same nodes,
    names and shapes, different wiring.
    """
    nodes = [_node(0, "SumBackward0", 10_000, (), None)]
    edges = []
    prev = (0, 0)
    for k in reversed(range(n_blocks)):
        base = len(nodes)
        mod = f"blocks.{k}"
        seq = 100 * k
        nodes.append(_node(base, "AddBackward0", seq + 2, (4,), mod, num_outputs=2))
        nodes.append(_node(base + 1, "MulBackward0", seq + 1, (4,), mod))
        c = _node(base + 2, "CatBackward0", seq, (4,), mod, num_outputs=1)
        c["inputs"] = [[[4], "float32", "cpu"], [[4], "float32", "cpu"]]
        nodes.append(c)
        edges.append([f"n{prev[0]}", prev[1], f"n{base}", 0])
        edges.append([f"n{base}", 0, f"n{base + 1}", 0])
        if cross_wire == k:
            edges.append([f"n{base}", 1, f"n{base + 2}", 0])
            edges.append([f"n{base + 1}", 0, f"n{base + 2}", 1])
        else:
            edges.append([f"n{base}", 1, f"n{base + 2}", 1])
            edges.append([f"n{base + 1}", 0, f"n{base + 2}", 0])
        prev = (base + 2, 0)
    leaf = _node(
        len(nodes),
        "AccumulateGrad",
        ACCUMULATE_GRAD_SEQUENCE_NR,
        (4,),
        None,
        kind="accumulate_grad",
        leaf_kind="input",
        leaf_name="x",
    )
    nodes.append(leaf)
    edges.append([f"n{prev[0]}", 0, leaf["id"], 0])
    d = {"format": DICT_FORMAT, "model_name": None, "nodes": nodes, "edges": edges}
    d["roots"] = [["n0", 0]]
    return BackwardGraph.from_dict(d)


def test_records_only_graph_folds_and_wiring_counts():
    g = _blocks_graph(5)
    assert not g.is_live
    assert labels(g) == ["blocks.0–4 ×5"]
    # Block 2 has the same nodes, names and shapes but its edges land in swapped slots.
    assert labels(_blocks_graph(5, cross_wire=2)) == ["blocks.0–1 ×2", "blocks.3–4 ×2"]


def test_results_are_deterministic_and_survive_a_dict_round_trip():
    model = Stack([nn.Linear(6, 6) for _ in range(4)] + [nn.Linear(6, 2)])
    x = torch.randn(3, 6, requires_grad=True)
    g1, g2 = captured(model, x), captured(model, x)
    r1 = repeats.find_repeats(g1)
    assert r1 == repeats.find_repeats(g1) == repeats.find_repeats(g2)
    assert r1 == repeats.find_repeats(BackwardGraph.from_json(g1.to_json()))
    assert [r.label for r in r1] == ["layers.0–3 ×4"]
    # The digest names the structure, not the graph: the same block in a longer stack.
    longer = Stack([nn.Linear(6, 6) for _ in range(7)] + [nn.Linear(6, 2)])
    r2 = repeats.find_repeats(captured(longer, x))
    assert r2[0].count == 7 and r2[0].signature == r1[0].signature
    # ... even when other ops come first in the walk (the graph numbers its facts differently).
    with aw.track(model):
        out = model(x).exp().log1p().sum()
    r3 = repeats.find_repeats(aw.capture(out, model=model))
    assert [r.label for r in r3] == ["layers.0–3 ×4"] and r3[0].signature == r1[0].signature


def test_nested_repeats_are_found_in_every_copy():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lins = nn.ModuleList(nn.Linear(5, 5) for _ in range(3))

        def forward(self, x):
            for lin in self.lins:
                x = lin(x)
            return x.tanh()

    model = Stack([Block() for _ in range(4)])
    g = captured(model, torch.randn(2, 5, requires_grad=True))
    found = repeats.find_repeats(g)
    assert [r.label for r in found] == ["layers.0–3 ×4"] + [
        f"layers.{k}.lins.0–2 ×3" for k in range(4)
    ]
    # Inner runs of later copies are mirrored from the first one: same as computing them alone.
    for k in range(4):
        alone = repeats.find_repeats(g, groups=[f"layers.{k}.lins.{i}" for i in range(3)])
        assert alone == [found[1 + k]]
    fm = repeats.fold_map(g, found)
    assert fm["layers.2"] == "layers.0–3 ×4" and fm["layers.2.lins.1"] == "layers.2.lins.0–2 ×3"


def test_groups_argument_limits_the_candidates():
    g = captured(Stack([nn.Linear(8, 8) for _ in range(6)]), torch.randn(3, 8, requires_grad=True))
    assert labels(g, groups=["layers.1", "layers.2", "layers.3"]) == ["layers.1–3 ×3"]
    assert labels(g, groups=["layers.1"]) == []
    assert labels(g, groups=[]) == []


def test_repeat_validation_and_foreign_fold_maps():
    with pytest.raises(ValueError, match="count"):
        repeats.Repeat("p", ("p.0",), 1, 1, "p.0–0 ×1", "x", 1)
    with pytest.raises(ValueError, match="count"):
        repeats.Repeat("p", ("p.0", "p.1", "p.2"), 2, 2, "l", "x", 1)
    r = repeats.Repeat("p", ("p.0", "p.1"), 2, 1, "p.0–1 ×2", "x", 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.count = 3  # type: ignore[misc]
    g = _blocks_graph(3)
    with pytest.raises(ValueError, match="not a module path"):
        repeats.fold_map(g, [r])


def test_boundary_shapes_tell_apart_blocks_with_identical_insides():
    # Flattening a (2, 3) or a (3, 2) input gives the same nodes with the same slot shapes
    # inside the block; only the gradient leaving it for the input has a different shape.
    class Flat(nn.Module):
        def forward(self, x):
            return x.reshape(-1) * 2.0

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = Flat(), Flat()

        def forward(self, x1, x2):
            return self.a(x1) + self.b(x2)

    def graph(shape2):
        net = Net()
        x1, x2 = torch.randn(2, 3, requires_grad=True), torch.randn(*shape2, requires_grad=True)
        with aw.track(net):
            out = net(x1, x2)
        return aw.capture(out.sum(), model=net)

    assert repeats.find_repeats(graph((3, 2))) == []
    assert labels(graph((2, 3))) == ["a–b ×2"]


def test_tandem_runs_choose_coverage_then_short_period_then_heavy_phase():
    tr = repeats._tandem_runs
    assert tr([0, 0, 0, 0], [1] * 4) == [(0, 1, 4)]
    assert tr([0, 1, 2], [1] * 3) == []
    # r b r b r b: both phases cover 4 of the 6 (or 6 of 7); the block starts with the heavier.
    ids, w = [9, 1, 2, 1, 2, 1, 2, 1, 8], [5, 1, 4, 1, 4, 1, 4, 1, 5]
    assert tr(ids, w) == [(2, 2, 3)]
    # Several runs, left and right of the biggest.
    assert tr([0, 0, 1, 2, 2, 2, 3, 4, 3, 4], [1] * 10) == [(0, 1, 2), (3, 1, 3), (6, 2, 2)]
    assert tr(list(range(20)) * 2, [1] * 40) == []  # period 20 > MAX_PERIOD
