"""Structure-aware layout: frames per module, per-cluster cache, leaf copies, lanes, anchors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import settings as st_settings
from hypothesis import strategies as hst
from torch import nn

import autograd_widget as aw
from autograd_widget.view.clusters import TITLE_CHAR_W, TITLE_PAD_W, ClusterLayouter
from autograd_widget.view.drawn import drawn_crossings
from autograd_widget.view.labels import module_title
from autograd_widget.view.layout import MAX_DUMMY_SPAN
from autograd_widget.view.modules import parent as parent_path
from autograd_widget.view.placement import compact_modules, item_titles
from autograd_widget.view.scene import Scene, compute_layout
from autograd_widget.view.visible import visible_graph


class Block(nn.Module):
    def __init__(self, d: int = 8) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.ff(self.norm(x))


class Net(nn.Module):
    def __init__(self, n: int = 3, d: int = 8) -> None:
        super().__init__()
        self.inp = nn.Linear(4, d)
        self.blocks = nn.ModuleList([Block(d) for _ in range(n)])
        self.out = nn.Linear(d, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        for b in self.blocks:
            h = b(h)
        return self.out(h)


def net_graph(n: int = 3) -> aw.BackwardGraph:
    torch.manual_seed(0)
    model = Net(n)
    with aw.track(model):
        out = model(torch.randn(2, 4))
    return aw.capture(out.sum(), model=model)


def polyline(lay, k: int) -> np.ndarray:
    a, b = int(lay.edge_ptr[k]), int(lay.edge_ptr[k + 1]) - 1
    return np.stack([lay.edge_x[a:b], lay.edge_y[a:b]], 1)


def inside(frame, x: float, y: float) -> bool:
    return frame.x0 - 1e-4 <= x <= frame.x1 + 1e-4 and frame.y0 - 1e-4 <= y <= frame.y1 + 1e-4


def test_every_unfolded_module_is_a_titled_frame_holding_its_items_and_frames_nest():
    g = net_graph()
    vis = visible_graph(g)
    lay = compute_layout(g, "TB", vis)
    paths = {f.path for f in lay.frames}
    assert {"blocks", "blocks.0", "blocks.0.ff"} <= paths
    # a module of one op (plus plumbing) is no frame: its op is one box titled by the module
    compact = compact_modules(g)
    assert {"inp", "blocks.2.norm", "out"} <= set(compact) and not set(compact) & paths
    titles = item_titles(g, vis)
    assert {titles[int(vis.real_item[r])] for r in compact.values()} >= {
        module_title(g, m) for m in ("inp", "out")}
    by_path = {f.path: f for f in lay.frames}
    nodes = list(g.nodes.values())
    for j, r in enumerate(vis.item_real.tolist()):
        node = nodes[r]
        if node.module and node.kind != "accumulate_grad":
            # a node sits inside its module's frame and inside every enclosing frame
            p = node.module if node.module not in compact else parent_path(node.module)
            while p:
                assert inside(by_path[p], float(lay.x[j]), float(lay.y[j])), (node.id, p)
                p = parent_path(p)
    for f in lay.frames:  # nested frames lie inside their parent frame
        if parent_path(f.path):
            outer = by_path[parent_path(f.path)]
            assert inside(outer, f.x0, f.y0) and inside(outer, f.x1, f.y1)
            assert f.depth == outer.depth + 1
    # sibling frames do not overlap
    frames = lay.frames
    for i, a in enumerate(frames):
        for b in frames[i + 1:]:
            if parent_path(a.path) == parent_path(b.path) and a.path != b.path:
                assert a.x1 <= b.x0 + 1e-4 or b.x1 <= a.x0 + 1e-4 or \
                    a.y1 <= b.y0 + 1e-4 or b.y1 <= a.y0 + 1e-4, (a.path, b.path)


def test_a_frame_is_never_narrower_than_its_title():
    g = net_graph()
    lay = compute_layout(g, "TB", visible_graph(g))
    for f in lay.frames:
        assert f.x1 - f.x0 >= len(f.title) * TITLE_CHAR_W + TITLE_PAD_W - 1e-4, f


def test_no_two_boxes_overlap_and_every_edge_runs_from_centre_to_centre():
    g = net_graph()
    vis = visible_graph(g)
    lay = compute_layout(g, "LR", vis)
    x, y, w, h = lay.x, lay.y, lay.width, lay.height
    n = len(x)
    for i in range(n):
        dx = np.abs(x[i] - x) < (w[i] + w) / 2 - 1e-4
        dy = np.abs(y[i] - y) < (h[i] + h) / 2 - 1e-4
        hit = np.flatnonzero(dx & dy)
        assert hit.tolist() == [i], (i, hit)
    for k in range(len(vis.edge_src)):
        pts = polyline(lay, k)
        s, d, c = int(vis.edge_src[k]), int(vis.edge_dst[k]), int(lay.edge_copy[k])
        assert np.allclose(pts[0], (x[s], y[s]))
        end = (lay.copy_x[c], lay.copy_y[c]) if c >= 0 else (x[d], y[d])
        assert np.allclose(pts[-1], end)
        assert not np.isnan(pts).any()


def test_unfolding_one_module_relays_out_that_cluster_only_and_keeps_its_place():
    g = net_graph(4)
    scene = Scene(g, aw.Stepper(g), collapse="none")
    scene.collapse("blocks.1")
    scene.collapse("blocks.3")
    before = scene.layout
    box = scene.visible.item_group.index("blocks.1")
    anchor = before.anchor(item=box)
    frames_before = {f.path: f for f in before.frames}
    arranged = scene._layouter.arranged
    scene.expand("blocks.1")
    after = scene.layout
    # only blocks.1's cluster was arranged anew (its children stay folded, as boxes); its
    # ancestors were re-placed with the same order
    assert scene._layouter.arranged - arranged == 1
    assert after.anchor(path="blocks.1") == pytest.approx(anchor, abs=1e-4)
    frames_after = {f.path: f for f in after.frames}
    # every other cluster keeps its inner layout: its frame only translates
    for path in ("blocks.0", "blocks.2", "blocks.0.ff"):
        fa, fb = frames_after[path], frames_before[path]
        assert fa.width == pytest.approx(fb.width, abs=1e-4)
        assert fa.y1 - fa.y0 == pytest.approx(fb.y1 - fb.y0, abs=1e-4)

    def rel(scene_, path):
        f = next(f for f in scene_.layout.frames if f.path == path)
        ids = scene_.visible_ids()
        return {ids[j]: (float(scene_.layout.x[j] - f.x0), float(scene_.layout.y[j] - f.y0))
                for j in range(len(ids))
                if scene_.node_of_item(j) and g.nodes[ids[j]].module == path}

    # and the items inside it keep their positions relative to the frame
    scene2 = Scene(g, aw.Stepper(g), collapse="none")
    scene2.collapse("blocks.1")
    scene2.collapse("blocks.3")
    rel_before = rel(scene2, "blocks.2.ff")
    scene2.expand("blocks.1")
    assert rel(scene2, "blocks.2.ff") == pytest.approx(rel_before, abs=1e-4)
    # folding it back restores the box where the frame was
    scene.collapse("blocks.1")
    box = scene.visible.item_group.index("blocks.1")
    assert scene.layout.anchor(item=box) == pytest.approx(anchor, abs=1e-4)


def rnn_graph(steps: int) -> tuple[aw.BackwardGraph, nn.RNNCell]:
    torch.manual_seed(0)
    cell = nn.RNNCell(3, 4)
    h = torch.zeros(1, 4)
    for _ in range(steps):
        h = cell(torch.randn(1, 3), h)
    return aw.capture(h.sum(), model=cell), cell


def test_a_shared_weight_is_drawn_beside_each_consumer_and_all_copies_are_one_parameter():
    g, _cell = rnn_graph(30)
    vis = visible_graph(g)
    lay = compute_layout(g, "TB", vis)
    ids = list(g.nodes)
    leaves = {j for j, r in enumerate(vis.item_real.tolist())
              if g.nodes[ids[r]].kind == "accumulate_grad"}
    assert len(lay.copy_item) >= 4 * 29  # four shared parameters, one per step each
    assert set(lay.copy_item.tolist()) <= leaves
    # every edge into a parameter is short: its consumer sits right above it (or the copy):
    # down from the consumer, across one gap, into the parameter
    for k in range(len(vis.edge_src)):
        if int(vis.edge_dst[k]) in leaves:
            assert len(polyline(lay, k)) <= 4
    # and the copies are the items' ids, so selecting one selects the parameter
    for c, j in enumerate(lay.copy_item.tolist()):
        assert vis.item_real[j] >= 0 and g.nodes[ids[vis.item_real[j]]].leaf_name
        assert lay.edge_copy.tolist().count(c) >= 1
    assert lay.n_dummies == 0 and lay.n_lanes == 0


def ladder_graph(n: int) -> aw.BackwardGraph:
    x = torch.randn(4, requires_grad=True)
    return aw.capture(sum((x * (i + 1)).sin() for i in range(n)).sum())


def random_dag_graph(n: int, seed: int = 0) -> aw.BackwardGraph:
    rng = np.random.default_rng(seed)
    x = torch.randn(3, requires_grad=True)
    vals = [x * 1.0, x.sin()]
    for _ in range(n):
        a, b = rng.integers(0, len(vals), 2)
        vals.append(vals[a] * 0.5 + vals[b].tanh())
    return aw.capture(vals[-1].sum())


def test_no_edge_costs_dummies_in_proportion_to_its_span():
    g = random_dag_graph(300)
    vis = visible_graph(g)
    lay = compute_layout(g, "TB", vis)
    flat = compute_layout(g, "TB", vis)
    assert lay.n_lanes >= 20  # long-range reuse: many long edges...
    # ...and at most MAX_DUMMY_SPAN - 1 dummies per edge, whatever the spans
    assert lay.n_dummies <= (MAX_DUMMY_SPAN - 1) * len(vis.edge_src)
    assert flat.n_dummies == lay.n_dummies  # deterministic
    # every route has a bounded number of points, however many layers it spans
    for k in range(len(vis.edge_src)):
        assert len(polyline(lay, k)) <= 2 * (MAX_DUMMY_SPAN + 1)


def test_a_module_called_twice_gets_no_frame_and_the_layout_still_holds():
    class Twice(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.lin(torch.relu(self.lin(x)))

    model = Twice()
    with aw.track(model):
        out = model(torch.randn(2, 4))
    g = aw.capture(out.sum(), model=model)
    lay = compute_layout(g, "TB", visible_graph(g))
    assert "lin" not in {f.path for f in lay.frames}
    assert lay.n_nodes == len(g.nodes)


def test_the_layouter_caches_arrangements_and_placements():
    lt = ClusterLayouter()
    args = (4, [0, 1, 2], [1, 2, 3], ["", "a", "a", "b"], np.ones(4), np.ones(4))
    first = lt.layout(*args)
    counts = (lt.arranged, lt.placed)
    second = lt.layout(*args)
    assert (lt.arranged, lt.placed) == counts
    np.testing.assert_array_equal(first.x, second.x)
    # a bigger box in "b" re-places b's parent, with the same arrangement
    lt.layout(4, [0, 1, 2], [1, 2, 3], ["", "a", "a", "b"], np.array([1, 1, 1, 5.0]),
              np.ones(4))
    assert lt.arranged == counts[0] and lt.placed > counts[1]


def test_crossings_as_drawn_on_a_transformer_stay_low():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, 32, batch_first=True, dropout=0.0)
    model = nn.TransformerEncoder(layer, 3, enable_nested_tensor=False)
    with aw.track(model):
        out = model(torch.randn(2, 5, 16))
    g = aw.capture(out.sum(), model=model)
    lay = compute_layout(g, "TB", visible_graph(g))
    assert {"layers.0", "layers.2.self_attn"} <= {f.path for f in lay.frames}
    assert drawn_crossings(lay.edge_x, lay.edge_y, lay.edge_ptr) <= 3 * 10


def test_frames_and_folded_boxes_are_titled_with_the_module_class():
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, 32, batch_first=True, dropout=0.0)
    model = nn.TransformerEncoder(layer, 6, enable_nested_tensor=False)
    with aw.track(model):
        out = model(torch.randn(2, 5, 16))
    g = aw.capture(out.sum(), model=model)
    scene = Scene(g, aw.Stepper(g), collapse="none")
    titles = {f.path: f.title for f in scene.layout.frames}
    assert titles["layers.3"] == "layers.3 · TransformerEncoderLayer"
    assert titles["layers.3.self_attn"] == "layers.3.self_attn · MultiheadAttention"
    assert titles["layers"] == "layers · ModuleList"
    scene.fold()  # the six layers as one run
    from autograd_widget.wire.payload import decode_graph, graph_payload

    d = decode_graph(graph_payload(g, scene.layout, scene.visible, folds=scene.folds))
    box = d["nodes"]["kind"].index("group")
    (key,) = scene.folds  # e.g. "layers.1–5 ×5" (layer 0 reads the input: not identical)
    assert d["nodes"]["name"][box].startswith(f"{key} · TransformerEncoderLayer")
    # the run's box sits in the frame of the module holding the blocks
    frame = next(f for f in scene.layout.frames if f.path == "layers")
    assert inside(frame, float(scene.layout.x[box]), float(scene.layout.y[box]))


def segment_hits_box(p0, p1, box) -> bool:
    """Liang-Barsky: does the segment p0-p1 enter the open rectangle (x0, x1, y0, y1)?"""
    x0, x1, y0, y1 = box
    if x0 >= x1 or y0 >= y1:
        return False
    t0, t1 = 0.0, 1.0
    dx, dy = p1[0] - p0[0], p1[1] - p0[1]
    for pk, qk in ((-dx, p0[0] - x0), (dx, x1 - p0[0]), (-dy, p0[1] - y0), (dy, y1 - p0[1])):
        if pk == 0:
            if qk <= 0:
                return False
        else:
            t = qk / pk
            if pk < 0:
                t0 = max(t0, t)
            else:
                t1 = min(t1, t)
            if t0 >= t1:
                return False
    return True


@st_settings(deadline=None, max_examples=100)
@given(data=hst.data())
def test_random_dags_in_random_nested_modules_lay_out_cleanly(data):
    """Any DAG, any assignment of its nodes to nested module paths (contiguous or not: a module
    on a cycle loses its frame), leaves shared across modules: the layout holds."""
    n = data.draw(hst.integers(1, 30), label="n")
    pairs = data.draw(hst.lists(hst.tuples(hst.integers(0, n - 1), hst.integers(0, n - 1)),
                                max_size=3 * n), label="edges")
    src = [min(a, b) for a, b in pairs if a != b]
    dst = [max(a, b) for a, b in pairs if a != b]
    paths = ["", "a", "a.b", "a.c", "d", "d.e.f"]
    cluster = [data.draw(hst.sampled_from(paths)) for _ in range(n)]
    outdeg = np.bincount(np.asarray(src, dtype=np.int64), minlength=n)
    leaf = np.asarray([outdeg[i] == 0 and data.draw(hst.booleans()) for i in range(n)])
    w = np.asarray([data.draw(hst.floats(0.5, 6.0)) for _ in range(n)])
    h = np.asarray([data.draw(hst.floats(0.5, 3.0)) for _ in range(n)])
    orientation = data.draw(hst.sampled_from(["TB", "LR"]))
    lay = ClusterLayouter().layout(n, src, dst, cluster, w, h, leaf=leaf,
                                   roots=[0], orientation=orientation)
    # every box apart from every other (copies included)
    xs = np.concatenate([lay.x, lay.copy_x])
    ys = np.concatenate([lay.y, lay.copy_y])
    items = np.concatenate([np.arange(n), lay.copy_item]).astype(int)
    ww, hh = w[items], h[items]
    for i in range(len(xs)):
        over = (np.abs(xs[i] - xs) < (ww[i] + ww) / 2 - 1e-3) & \
            (np.abs(ys[i] - ys) < (hh[i] + hh) / 2 - 1e-3)
        assert np.flatnonzero(over).tolist() == [i]
    # every edge: a polyline from its source's centre to its target's (or its copy's)
    for k in range(len(src)):
        a, b = int(lay.edge_ptr[k]), int(lay.edge_ptr[k + 1]) - 1
        pts = np.stack([lay.edge_x[a:b], lay.edge_y[a:b]], 1)
        assert len(pts) >= 2 and not np.isnan(pts).any()
        assert np.allclose(pts[0], (lay.x[src[k]], lay.y[src[k]]), atol=1e-3)
        c = int(lay.edge_copy[k])
        end = (lay.copy_x[c], lay.copy_y[c]) if c >= 0 else (lay.x[dst[k]], lay.y[dst[k]])
        assert np.allclose(pts[-1], end, atol=1e-3)
        # and no route passes through another box
        own = {int(src[k]), (n + c) if c >= 0 else int(dst[k])}
        for q in range(len(xs)):
            if q in own:
                continue
            box = (xs[q] - ww[q] / 2 + 1e-3, xs[q] + ww[q] / 2 - 1e-3,
                   ys[q] - hh[q] / 2 + 1e-3, ys[q] + hh[q] / 2 - 1e-3)
            for p0, p1 in itertools.pairwise(pts):
                assert not segment_hits_box(p0, p1, box), (k, q)
    # frames hold their own items, nest inside their parents, and fit in the bounds
    by_path = {f.path: f for f in lay.frames}
    for i in range(n):
        p = cluster[i]
        if p in by_path and not leaf[i]:
            assert inside(by_path[p], float(lay.x[i]), float(lay.y[i]))
    x0, x1, y0, y1 = lay.bounds
    for f in lay.frames:
        assert x0 - 1e-3 <= f.x0 and f.x1 <= x1 + 1e-3 and y0 - 1e-3 <= f.y0 and f.y1 <= y1 + 1e-3
