"""collapse="auto" by pixels (view/autofold.py: the whole graph legible in the drawing), module
classes recorded at capture (graph.module_classes) and the titles that name them
(view/labels.py)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import autograd_widget as aw
from autograd_widget.view import labels, modules, visible
from autograd_widget.view.autofold import Pins, choose_folds
from autograd_widget.view.fitrule import LEGIBLE_PPU, Viewport, default_viewport, fit_scale
from autograd_widget.view.folding import RepeatedSubgraph, find_subgraph_runs
from autograd_widget.view.repeats import find_repeats
from tests.helpers.models import make_mlp, make_transformer


def tracked(model, *inputs, loss=lambda o: o.float().pow(2).mean()):
    with aw.track(model):
        out = model(*inputs)
    return aw.capture(loss(out), model=model)


def scale_of(layout, viewport=None):
    b = layout.bounds
    return fit_scale(b[1] - b[0], b[3] - b[2], viewport or default_viewport())


def check_visible(w):
    """`widget.visible` counts exactly the items the scene draws, and the whole drawing is
    legible at Fit in the default viewport."""
    scene = w._session.scene
    assert len(w.visible) == scene.visible.n_items == len(set(w.visible))
    assert scale_of(scene.layout) >= LEGIBLE_PPU, scene.layout.bounds
    return w.visible


# ----------------------------------------------------------------------------- models
class Res(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(x + self.bn2(self.conv2(y)))


class ResNet(nn.Module):
    def __init__(self, c: int = 4, blocks: int = 4) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, c, 3, padding=1)
        self.blocks = nn.Sequential(*[Res(c) for _ in range(blocks)])
        self.head = nn.Linear(c, 5)

    def forward(self, x):
        x = self.blocks(F.relu(self.stem(x)))
        return self.head(x.mean((2, 3)))


class Attn(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
                   for z in self.qkv(x).split(d, dim=2))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        att = att.masked_fill(torch.tril(torch.ones(t, t)) == 0, float("-inf")).softmax(-1)
        return self.proj((att @ v).transpose(1, 2).reshape(b, t, d))


class GPTBlock(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = Attn(d, heads)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    """A GPT-2-like decoder in plain torch: embeddings, blocks, final LN, tied lm_head."""

    def __init__(self, n: int = 6, d: int = 32, vocab: int = 50, ctx: int = 8) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.h = nn.ModuleList([GPTBlock(d, 4) for _ in range(n)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class Uneven(nn.Module):
    """Blocks that all differ (widths grow): no runs, the depth search alone must fit."""

    def __init__(self, n: int = 10) -> None:
        super().__init__()
        self.h = nn.ModuleList([GPTBlock(8 * (i + 1), 2) for i in range(n)])
        self.up = nn.ModuleList([nn.Linear(8 * (i + 1), 8 * (i + 2)) for i in range(n)])

    def forward(self, x):
        for block, up in zip(self.h, self.up):
            x = up(block(x))
        return x


class Flat(nn.Module):
    """Hundreds of parameters of the model's own: the top level alone is over budget."""

    def __init__(self, n: int = 150) -> None:
        super().__init__()
        self.ws = [nn.Parameter(torch.randn(3)) for _ in range(n)]
        for i, w in enumerate(self.ws):
            self.register_parameter(f"w{i}", w)
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(sum(torch.tanh(x * w) for w in self.ws))


# ----------------------------------------------------------------------------- module classes
def test_module_classes_recorded_by_track_and_model():
    net = ResNet()
    with aw.track(net):
        out = net(torch.randn(1, 3, 6, 6))
    g = aw.capture(out.sum())  # track() alone knows the classes
    classes = dict(g.module_classes)
    assert classes[""] == "ResNet" and classes["blocks"] == "Sequential"
    assert classes["blocks.2"] == "Res" and classes["blocks.2.bn1"] == "BatchNorm2d"
    assert all(type(n.module) is str for n in g.nodes.values() if n.module is not None)
    # model= alone: every module of the model, paths from parameter owners.
    g2 = aw.capture(net(torch.randn(1, 3, 6, 6)).sum(), model=net)
    assert dict(g2.module_classes) == classes
    assert g2.model_name == g2.module_classes[""] == "ResNet"
    # No model: empty, read-only.
    plain = aw.capture((torch.randn(3, requires_grad=True) * 2).sum())
    assert dict(plain.module_classes) == {}
    with pytest.raises(TypeError):
        g.module_classes["x"] = "y"  # type: ignore[index]


def test_module_classes_round_trip_and_release():
    g = tracked(make_transformer(2, 16), torch.randn(2, 4, 16))
    d = g.to_dict()
    assert d["module_classes"]["layers.1"] == "TransformerEncoderLayer"
    g2 = aw.BackwardGraph.from_dict(d)
    assert dict(g2.module_classes) == dict(g.module_classes)
    assert aw.BackwardGraph.from_json(g.to_json()).module_classes == g.module_classes
    old = {k: v for k, v in d.items() if k != "module_classes"}  # a dict from before
    assert dict(aw.BackwardGraph.from_dict(old).module_classes) == {}
    with pytest.raises(ValueError, match="module_classes"):
        aw.BackwardGraph.from_dict({**d, "module_classes": ["x"]})
    w = aw.explore(g)
    w.release()
    assert not w.graph.is_live and dict(w.graph.module_classes) == dict(g.module_classes)
    w.close()


# ----------------------------------------------------------------------------- titles
def test_titles_name_the_class():
    g = tracked(make_transformer(6, 16), torch.randn(2, 4, 16))
    assert labels.module_title(g, "layers.3") == "layers.3 · TransformerEncoderLayer"
    assert labels.module_title(g, "layers.3.self_attn") == "layers.3.self_attn · MultiheadAttention"
    assert labels.module_title(g, "") == "TransformerEncoder"
    assert labels.module_title(g, "nowhere") == "nowhere"  # class unknown: the path
    (run,) = [r for r in find_repeats(g) if r.parent == "layers"]
    assert labels.run_title(g, run) == f"{run.label} · TransformerEncoderLayer"
    assert run.label in ("layers.0–5 ×6", "layers.1–5 ×5")
    # Without classes (a plain capture) the labels stay what they were.
    plain = aw.BackwardGraph.from_dict({**g.to_dict(), "module_classes": {}, "model_name": None})
    assert labels.module_title(plain, "layers.3") == "layers.3"
    assert labels.module_title(plain, "") == labels.group_label("", None) == "model"
    assert labels.run_title(plain, run) == run.label
    # Units of several siblings: "(Linear, ReLU)".
    mlp = make_mlp((8,) * 7)
    gm = tracked(mlp, torch.randn(2, 8, requires_grad=True))
    (pair,) = [r for r in find_repeats(gm) if r.period == 2]
    assert labels.run_title(gm, pair).endswith(" · (Linear, ReLU)")


# ----------------------------------------------------------------------------- fold depth
def test_small_graph_shows_every_node():
    g = tracked(make_mlp((4, 16, 3)), torch.randn(5, 4))
    w = aw.explore(g)
    assert sorted(check_visible(w)) == sorted(g.nodes)
    assert w.folds == {} and w.collapsed == []
    w.close()


def test_cnn_with_identical_residual_blocks_folds_them_first():
    g = tracked(ResNet(), torch.randn(1, 3, 6, 6))
    w = aw.explore(g)
    vis = check_visible(w)
    assert next(iter(w.folds)) == "blocks.0–3 ×4"  # then the runs nested in its blocks
    assert "box:blocks.0–3 ×4" in vis
    # The top-level structure is there: the stem and the head are not hidden in one box.
    assert "box:" not in " ".join(v for v in vis if "stem" in v)
    assert not {"", "blocks"} & set(w.collapsed)
    w.close()


def test_transformer_encoder_six_layers():
    g = tracked(make_transformer(6, 16), torch.randn(2, 4, 16))
    w = aw.explore(g)
    vis = check_visible(w)
    key = next(iter(w.folds))
    assert key in ("layers.0–5 ×6", "layers.1–5 ×5")
    run = w.folds[key]
    assert "box:" + key in vis
    assert labels.run_title(g, run) == f"{key} · TransformerEncoderLayer"
    w.close()


def test_gpt2_like_decoder_in_plain_torch():
    torch.manual_seed(0)
    g = tracked(GPT(6), torch.randint(0, 50, (2, 8)))
    assert len(g) > 300
    w = aw.explore(g)
    vis = check_visible(w)
    assert next(iter(w.folds)) == "h.0–5 ×6"
    assert "box:h.0–5 ×6" in vis
    assert labels.run_title(g, w.folds["h.0–5 ×6"]) == "h.0–5 ×6 · GPTBlock"
    # Stepping through the folded drawing still gives the engine's gradients.
    w.stepper.run()
    assert w.stepper.compare_with_engine() == []
    w.close()


def test_more_pixels_show_more_detail_and_a_huge_drawing_folds_nothing():
    g = tracked(Uneven(10), torch.randn(2, 3, 8))
    assert find_repeats(g) == [] and len(g) > 400
    items = []
    for width, height in ((500, 300), (820, 450), (1600, 1000), (40000, 40000)):
        plan = choose_folds(g, dict, Viewport(width, height))
        items.append(plan.items)
        assert plan.fits or width == 500, (width, plan.scale)
        assert plan.scale == pytest.approx(scale_of(plan.layout, Viewport(width, height)))
    assert items == sorted(items) and items[-1] == len(g), items
    # Deterministic: the same records, the same plan.
    a = choose_folds(g, dict, Viewport(820, 450))
    b = choose_folds(aw.BackwardGraph.from_dict(g.to_dict()), dict, Viewport(820, 450))
    assert a.collapsed == b.collapsed and a.items == b.items and a.orientation == b.orientation


def test_the_chosen_level_is_the_finest_that_fits():
    """Opening every module the plan leaves collapsed (their children collapsed: the next
    level) no longer fits, in either direction; the plan is no coarser than the top level."""
    g = tracked(Uneven(10), torch.randn(2, 3, 8))
    vp = Viewport(820, 450)
    plan = choose_folds(g, dict, vp)
    assert plan.fits and "" not in plan.collapsed
    paths = modules.module_paths(g)
    trial = {c for p in plan.collapsed for c in modules.children(p, paths)}
    for o in ("TB", "LR"):
        other = choose_folds(g, dict, vp, orientation=o, fixed=({}, frozenset(trial)))
        assert not other.fits, o


def random_dag(n: int) -> torch.Tensor:
    """A loss over `n` random elementwise ops on earlier values: no repeated structure."""
    torch.manual_seed(0)
    vals = [torch.randn(2, requires_grad=True) for _ in range(4)]
    ops = [torch.sin, torch.cos, torch.exp, torch.tanh, torch.sigmoid]
    for i in range(n):
        a, b = vals[-1 - i % 3], vals[i % len(vals)]
        vals.append(ops[(i * i) % 5](a) * b if i % 4 else ops[i % 5](a) + b)
    return vals[-1].sum()


def test_a_drawing_too_big_for_any_fold_is_laid_out_all_the_same():
    """A random DAG with no structure to fold, in a small drawing: nothing fits, the coarsest
    candidate is drawn (Fit falls back to the legible part), with its layout."""
    g = aw.capture(random_dag(300))
    plan = choose_folds(g, dict, Viewport(400, 300))
    assert not plan.fits and plan.layout is not None and plan.orientation in ("TB", "LR")
    assert plan.layout.n_nodes == plan.items


def test_auto_orientation_picks_the_larger_scale():
    g = tracked(make_mlp((4, 16, 16, 16, 16, 16, 16, 3)), torch.randn(5, 4))
    wide = choose_folds(g, dict, Viewport(3000, 300))
    tall = choose_folds(g, dict, Viewport(300, 3000))
    assert (wide.orientation, tall.orientation) == ("LR", "TB")
    for plan, vp in ((wide, Viewport(3000, 300)), (tall, Viewport(300, 3000))):
        other = "TB" if plan.orientation == "LR" else "LR"
        alt = choose_folds(g, dict, vp, orientation=other)
        assert alt.items >= plan.items or alt.scale <= plan.scale


def test_user_folds_and_unfolds_are_kept():
    g = tracked(ResNet(), torch.randn(1, 3, 6, 6))
    vp = Viewport(820, 450)
    runs = lambda: visible.fold_keys(find_repeats(g), modules.module_paths(g))  # noqa: E731
    plan = choose_folds(g, runs, vp)
    assert "blocks.0–3 ×4" in plan.folds
    opened = choose_folds(g, runs, vp, pins=Pins(opened=frozenset({"blocks.0–3 ×4"})))
    assert "blocks.0–3 ×4" not in opened.folds
    closed = choose_folds(g, runs, Viewport(40000, 40000), pins=Pins(closed=frozenset({"head"})))
    assert closed.collapsed == {"head"} and closed.folds == {}


def test_scene_refits_on_resize_keeping_the_users_own_folds():
    g = tracked(ResNet(), torch.randn(1, 3, 6, 6))
    w = aw.explore(g)
    scene = w._session.scene
    assert w.folds
    v = scene.version
    assert scene.fit_to(Viewport(40000, 40000))  # room for everything: nothing folded
    assert w.folds == {} and w.collapsed == [] and scene.version == v + 1
    w.collapse("head")
    assert not scene.fit_to(Viewport(40001, 40000)) or "head" in w.collapsed
    assert "head" in w.collapsed
    scene.fit_to(Viewport(820, 450))
    assert "head" in w.collapsed and w.folds
    key = next(iter(w.folds))
    w.unfold(key)
    scene.fit_to(Viewport(700, 400))
    assert key not in w.folds and "head" in w.collapsed
    w.close()


def test_top_level_over_budget_opens_through_repeated_subgraphs():
    g = tracked(Flat(150), torch.randn(3))
    assert len(g) > 3 * 150
    w = aw.explore(g)
    check_visible(w)
    assert "" not in w.collapsed  # the model's own ops fold as repeated subgraphs instead
    runs = [r for r in w.folds.values() if isinstance(r, RepeatedSubgraph)]
    assert runs and max(r.count for r in runs) >= 100
    w.close()


# ----------------------------------------------------------------------------- no modules
def test_graph_without_modules_folds_repeated_subgraphs():
    x = torch.randn(3, requires_grad=True)
    g = aw.capture(sum((x * (i + 1)).sin() for i in range(40)).sum())
    assert modules.module_paths(g) == []
    w = aw.explore(g)
    vis = check_visible(w)
    (key,) = w.folds
    run = w.folds[key]
    assert isinstance(run, RepeatedSubgraph)
    assert run.ops == ("MulBackward0", "SinBackward0", "AddBackward0")
    assert key == run.label == f"×{run.count} · repeated block (MulBackward0 → SinBackward0 → " \
        "AddBackward0)"
    assert run.count >= 38 and run.nodes_per_unit == 3
    assert "box:" + key in vis
    # The shared leaf x is drawn once, outside the box.
    x_id = next(n.id for n in g.nodes.values() if n.kind == "accumulate_grad")
    assert x_id in vis
    # Steps through the box; gradients are the engine's.
    w.stepper.run()
    assert w.stepper.compare_with_engine() == []
    # Reveal a node inside: the run unfolds; fold() brings it back.
    inner = run.units[5][1]
    w.reveal(inner)
    assert inner in w.visible and w.folds == {}
    w.fold(key)
    assert list(w.folds) == [key] and inner not in w.visible
    w.unfold(key)
    assert sorted(w.visible) == sorted(g.nodes)
    w.close()


def test_subgraph_runs_shapes():
    # An RNN cell unrolled in plain torch, weights shared by every step.
    cell = nn.RNNCell(4, 4)
    h = torch.zeros(2, 4)
    for _t in range(30):
        h = torch.tanh(torch.randn(2, 4) @ cell.weight_ih.t() + h @ cell.weight_hh.t()
                       + cell.bias_ih)
    g = aw.capture(h.sum())
    (run,) = find_subgraph_runs(g)
    assert run.count >= 29 and "TanhBackward0" in run.ops
    shared = {n.id for n in g.nodes.values() if n.kind == "accumulate_grad"}
    assert not shared & set(run.node_ids)  # shared weights stay outside the box
    plan = choose_folds(g, dict, Viewport(820, 450))
    assert plan.fits and list(plan.folds) == [run.label]
    # A chain of one op repeated.
    y = torch.randn(2, requires_grad=True)
    z = y
    for _ in range(200):
        z = z * 1.5
    (chain,) = find_subgraph_runs(aw.capture(z.sum()))
    # (the first multiply feeds the leaf, not another multiply: it differs)
    assert chain.ops == ("MulBackward0",) and chain.count == 199
    # A graph with no repeated structure keeps every node (nothing folds by chance).
    gr = aw.capture(random_dag(120))
    plan = choose_folds(gr, dict, Viewport(820, 450))
    assert all(r.count >= 3 for r in plan.folds.values())


def test_other_modes_unchanged():
    g = tracked(ResNet(), torch.randn(1, 3, 6, 6))
    w = aw.explore(g, collapse="none")
    assert sorted(w.visible) == sorted(g.nodes)
    w.close()
    w = aw.explore(g, collapse="repeats")
    assert next(iter(w.folds)) == "blocks.0–3 ×4" and w.collapsed == []
    w.close()
    w = aw.explore(g, collapse="modules")
    assert w.folds == {} and w.collapsed == ["blocks.0", "blocks.1", "blocks.2", "blocks.3",
                                             "head", "stem"]

    w.close()
