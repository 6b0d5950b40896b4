"""Layout quality: edge shortening (network simplex) and crossing reduction (transposition).

The reference numbers come from `benchmarks/bench_scale.py` (issue #8): on the backward graph of
an `nn.LSTMCell` unrolled 10 steps, Graphviz `dot` draws 61 crossings with 1164 dummies; the
barycenter-only ordering on a longest-path layering drew 113 crossings with 1524 dummies.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograd_widget.view import layers, ordering
from autograd_widget.view.drawn import drawn_crossings
from autograd_widget.view.layers import min_length_layers as _min_length_layers
from autograd_widget.view.layout import count_crossings, layered_layout, longest_path_layers
from autograd_widget.view.ordering import _Orderer
from autograd_widget.view.ordering import reduce_crossings as _reduce_crossings


def unique_edges(n: int, src, dst) -> tuple[np.ndarray, np.ndarray]:
    key = np.unique(np.asarray(src, dtype=np.int64) * max(n, 1) + np.asarray(dst, dtype=np.int64))
    return key // max(n, 1), key % max(n, 1)


def total_span(layer: np.ndarray, us: np.ndarray, ud: np.ndarray) -> int:
    return int((layer[ud] - layer[us]).sum())


@st.composite
def small_dags(draw, max_n: int = 25):
    """DAGs with ids in random topological order, multi-edges and isolated nodes allowed."""
    n = draw(st.integers(1, max_n))
    rank = draw(st.permutations(range(n)))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n))
    src, dst = [], []
    for a, b in pairs:
        if rank[a] != rank[b]:
            src.append(a if rank[a] < rank[b] else b)
            dst.append(b if rank[a] < rank[b] else a)
    return n, np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64)


# --- layering: network simplex ----------------------------------------------------------------


def shortest_total_span(n: int, us: np.ndarray, ud: np.ndarray) -> int:
    """The least total edge span over layerings with edges pointing down and sources in layer 0,
    solved independently: the linear program's dual is a min-cost flow (networkx).

    Primal: min sum(layer[v] - layer[u]) over edges, layer[v] - layer[u] >= 1, plus a root S
    joined to every source by an edge of weight W (more than all others together), which pins
    the sources one layer below S. Dual: flows f >= 0 with inflow - outflow = (in-weight -
    out-weight) at every node, maximising sum(f): a min-cost flow with edge costs -1.
    """
    import networkx as nx

    indeg, outdeg = np.bincount(ud, minlength=n), np.bincount(us, minlength=n)
    sources = np.flatnonzero(indeg == 0).tolist()
    heavy = us.size + 1
    g = nx.DiGraph()
    for v in range(n):
        g.add_node(v, demand=int(indeg[v] - outdeg[v]) + (heavy if indeg[v] == 0 else 0))
    g.add_node("S", demand=-heavy * len(sources))
    g.add_edges_from(zip(us.tolist(), ud.tolist()), weight=-1)
    g.add_edges_from((("S", s) for s in sources), weight=-1)
    cost, _ = nx.network_simplex(g)
    return -cost - heavy * len(sources)


@settings(max_examples=150, deadline=None)
@given(small_dags(max_n=30))
def test_layering_is_the_shortest_one(dag):
    n, src, dst = dag
    us, ud = unique_edges(n, src, dst)
    layer = _min_length_layers(n, us, ud, longest_path_layers(n, src, dst).astype(np.int64))
    assert np.all(layer[ud] >= layer[us] + 1)
    assert np.all(layer[np.bincount(ud, minlength=n) == 0] == 0)
    assert total_span(layer, us, ud) == shortest_total_span(n, us, ud)


def test_layering_is_the_shortest_one_on_random_dags():
    rng = np.random.default_rng(3)
    for _ in range(100):
        n = int(rng.integers(2, 60))
        a, b = rng.integers(0, n, 2 * n), rng.integers(0, n, 2 * n)
        keep = a != b
        rank = rng.permutation(n)
        up = rank[a[keep]] < rank[b[keep]]
        src = np.where(up, a[keep], b[keep])
        dst = np.where(up, b[keep], a[keep])
        us, ud = unique_edges(n, src, dst)
        layer = _min_length_layers(n, us, ud, longest_path_layers(n, src, dst).astype(np.int64))
        assert total_span(layer, us, ud) == shortest_total_span(n, us, ud)


@settings(max_examples=60, deadline=None)
@given(small_dags(), st.sampled_from([0, 1, 7, 10**9]))
def test_a_cut_short_network_simplex_still_gives_a_valid_layering(dag, work):
    """Every pivot keeps the layering feasible and no longer, so stopping anywhere is safe."""
    n, src, dst = dag
    us, ud = unique_edges(n, src, dst)
    start = longest_path_layers(n, src, dst).astype(np.int64)
    old = layers.NS_WORK
    layers.NS_WORK = work
    try:
        layer = _min_length_layers(n, us, ud, start)
    finally:
        layers.NS_WORK = old
    assert np.all(layer[ud] >= layer[us] + 1)
    assert np.all(layer[np.bincount(ud, minlength=n) == 0] == 0)
    assert total_span(layer, us, ud) <= total_span(start, us, ud)


def test_network_simplex_pulls_each_steps_ops_down_to_the_shared_leaves():
    # Chain 0-1-2-3 (one node per step); step i: c_i -> m_i (Addmm) -> B (a shared bias) and
    # m_i -> t_i (T) -> W (a shared weight). Longest path leaves m_i under c_i and gives each
    # step two long edges; moving {m_i, t_i} down trades them for one long c_i -> m_i.
    src, dst = [0, 1, 2], [1, 2, 3]
    for i in range(4):
        src += [i, 4 + i, 4 + i, 8 + i]
        dst += [4 + i, 12, 8 + i, 13]
    np.testing.assert_array_equal(
        longest_path_layers(14, src, dst), [0, 1, 2, 3, 1, 2, 3, 4, 2, 3, 4, 5, 5, 6]
    )
    lay = layered_layout(14, src, dst)
    np.testing.assert_array_equal(lay.layer, [0, 1, 2, 3, 4, 4, 4, 4, 5, 5, 5, 5, 5, 6])
    # Was 12 dummies: (3 + 2 + 1) to B and as many to W. Now c_i -> m_i spans 4, 3, 2, 1
    # layers: the edges to W are gone, and these bend through 3 + 2 + 1 dummies (spans up to
    # MAX_DUMMY_SPAN do; longer ones would run in lanes).
    assert (lay.n_dummies, lay.n_lanes) == (6, 0)
    assert lay.crossings <= 2


def test_plain_paths_keep_their_length_and_sit_under_their_head():
    # 0 -> 1 -> 2 -> 3 -> 4 and 0 -> 5 -> 4: the path through 5 is contracted for the simplex
    # and put back right under its head, 0; nothing to shorten, so longest path stands.
    src, dst = [0, 1, 2, 3, 0, 5], [1, 2, 3, 4, 5, 4]
    lay = layered_layout(6, src, dst)
    np.testing.assert_array_equal(lay.layer, [0, 1, 2, 3, 4, 1])
    assert (lay.n_dummies, lay.n_lanes) == (2, 0)  # 5 -> 4 spans 3 layers: two dummies


# --- crossing reduction: transposition --------------------------------------------------------


def extended(n: int, src, dst):
    """The layout's extended graph (layers, discovery keys, unit segments) for an input DAG."""
    lay = layered_layout(n, src, dst, sweeps=0)
    n_ext = n + lay.n_dummies
    key = lay.ext_order.astype(np.float64)  # discovery order, as sweeps=0 left it
    return (
        lay.ext_layer.astype(np.int64),
        key,
        lay.seg_src.astype(np.int64),
        lay.seg_dst.astype(np.int64),
        lay.n_layers,
        n_ext,
    )


@settings(max_examples=80, deadline=None)
@given(small_dags(), st.booleans(), st.integers(0, 3))
def test_transposition_never_adds_crossings_and_reports_what_it_removed(dag, ties, sweeps):
    n, src, dst = dag
    ext_layer, key, seg_u, seg_v, n_layers, n_ext = extended(n, src, dst)
    if n_ext == 0:
        return
    orderer = _Orderer(ext_layer, key, seg_u, seg_v, n_layers)
    for _ in range(sweeps):
        orderer.sweep_down()
    before = orderer.crossings()
    removed = orderer.transpose(ties=ties)
    after = orderer.crossings()
    assert removed >= 0 and after == before - removed
    assert after == count_crossings(ext_layer, orderer.pos, seg_u, seg_v)
    for i, nodes in orderer.layers.items():  # layer lists and positions still agree
        np.testing.assert_array_equal(orderer.pos[nodes], np.arange(nodes.shape[0]))
        assert np.all(ext_layer[nodes] == i)


def barycenter_only(ext_layer, key, seg_u, seg_v, n_layers, sweeps) -> int:
    """The ordering before transposition existed: sweeps while they improve, best kept."""
    orderer = _Orderer(ext_layer, key, seg_u, seg_v, n_layers)
    best = orderer.crossings()
    for _ in range(sweeps):
        if best == 0:
            break
        improved = False
        for step in (orderer.sweep_down, orderer.sweep_up):
            step()
            c = orderer.crossings()
            if c < best:
                best, improved = c, True
        if not improved:
            break
    return best


@settings(max_examples=80, deadline=None)
@given(small_dags(max_n=40), st.sampled_from([1, 8]))
def test_full_reduction_is_never_worse_than_barycenter_alone(dag, sweeps):
    n, src, dst = dag
    ext_layer, key, seg_u, seg_v, n_layers, n_ext = extended(n, src, dst)
    if n_ext == 0:
        return
    initial, best, pos = _reduce_crossings(ext_layer, key, seg_u, seg_v, n_layers, sweeps)
    assert best == count_crossings(ext_layer, pos, seg_u, seg_v) <= initial
    assert best <= barycenter_only(ext_layer, key, seg_u, seg_v, n_layers, sweeps)


def test_budgets_and_second_start_switched_off_still_give_valid_layouts(monkeypatch):
    rng = np.random.default_rng(4)
    n = 200
    a, b = rng.integers(0, n, 500), rng.integers(0, n, 500)
    keep = a != b
    src, dst = np.minimum(a[keep], b[keep]), np.maximum(a[keep], b[keep])
    full = layered_layout(n, src, dst)
    monkeypatch.setattr(ordering, "_BASE_WORK", 0)
    monkeypatch.setattr(ordering, "_TRANSPOSE_WORK", 0)
    monkeypatch.setattr(ordering, "SECOND_START_MAX", 0)
    monkeypatch.setattr(layers, "NS_WORK", 0)
    cheap = layered_layout(n, src, dst)
    np.testing.assert_array_equal(cheap.layer, longest_path_layers(n, src, dst))
    assert cheap.crossings == count_crossings(cheap) <= cheap.initial_crossings
    assert full.crossings < cheap.crossings  # the budgets buy something on a tangled graph


# --- the issue's graph --------------------------------------------------------------------------


def lstm_layout(steps: int):
    torch = pytest.importorskip("torch")
    import autograd_widget as aw
    from autograd_widget.view import visible
    from autograd_widget.view.scene import compute_layout

    class UnrolledLSTM(torch.nn.Module):  # as benchmarks/bench_scale.py builds it
        def __init__(self, d_in: int, hidden: int) -> None:
            super().__init__()
            self.cell = torch.nn.LSTMCell(d_in, hidden)
            self.head = torch.nn.Linear(hidden, 1)

        def forward(self, xs):
            h = c = xs.new_zeros(xs.shape[1], self.cell.hidden_size)
            for x in xs:
                h, c = self.cell(x, (h, c))
            return self.head(h)

    torch.manual_seed(0)
    model = UnrolledLSTM(8, 16)
    with aw.track(model):
        out = model(torch.randn(steps, 2, 8))
    graph = aw.capture(out.float().pow(2).mean(), model=model)
    vis = visible.visible_graph(graph)
    return vis, compute_layout(graph, "TB", vis)


def test_unrolled_lstm_is_within_the_issue_target_of_dot():
    vis, lay = lstm_layout(10)
    n = vis.n_items
    assert n >= 150  # the whole 10-step graph (160 nodes with torch 2.x)
    # The cell's shared weights are drawn beside each step (copies), so no edge trails from
    # every step down to one leaf: no dummies and a handful of lanes, where dot bends 1164
    # dummies through the layers.
    assert lay.n_dummies <= 40 and len(lay.copy_item) >= 4 * 9
    assert {f.path for f in lay.frames} == {"cell"}  # "head" is one op: a titled box
    # dot draws 61 crossings (counted as drawn), the old flat layout 64; the issue asked for at
    # most 1.5x dot's.
    assert drawn_crossings(lay.edge_x, lay.edge_y, lay.edge_ptr) <= 61
