"""Layered layout: invariants, hand-checked shapes and crossing counts, a real backward graph."""

from __future__ import annotations

import collections
import itertools
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from autograd_widget.view.drawn import drawn_crossings
from autograd_widget.view.layout import (
    DUMMY_GAP,
    MAX_DUMMY_SPAN,
    NODE_GAP,
    Layout,
    count_crossings,
    layered_layout,
    longest_path_layers,
)

ARRAY_FIELDS = (
    "layer",
    "order",
    "x",
    "y",
    "edge_x",
    "edge_y",
    "edge_ptr",
    "ext_layer",
    "ext_order",
    "ext_x",
    "ext_y",
    "seg_src",
    "seg_dst",
)


def brute_crossings(layer, order, src, dst) -> int:
    """Reference count: every pair of edges between the same adjacent layers, checked directly."""
    segs = []
    for s, d in zip(src, dst):
        up, lo = (s, d) if layer[s] < layer[d] else (d, s)
        segs.append((layer[up], order[up], order[lo]))
    total = 0
    for (l1, a1, b1), (l2, a2, b2) in itertools.combinations(segs, 2):
        if l1 == l2 and (a1 - a2) * (b1 - b2) < 0:
            total += 1
    return total


def assert_layout_invariants(lay: Layout, n: int, src, dst, roots=()) -> None:
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    layer = lay.layer.astype(np.int64)
    assert lay.layer.dtype == np.int32 and lay.order.dtype == np.int32
    assert lay.x.dtype == np.float32 and lay.y.dtype == np.float32
    assert lay.layer.shape == lay.order.shape == lay.x.shape == lay.y.shape == (n,)

    # Layering: every edge points down; sources and (source) roots sit in layer 0; every other
    # node has an edge of length 1 (the network simplex keeps a spanning tree of those, so no
    # node floats between its neighbours); edges are in total no longer than longest path's.
    assert np.all(layer[dst] >= layer[src] + 1)
    has_pred = np.zeros(n, dtype=bool)
    has_pred[dst] = True
    assert np.all(layer[~has_pred] == 0)
    for r in roots:
        if not has_pred[r]:
            assert layer[r] == 0
    short = layer[dst] == layer[src] + 1
    tight = ~has_pred
    tight[dst[short]] = True
    tight[src[short]] = True
    assert np.all(tight)
    if n:
        assert lay.n_layers == layer.max() + 1
        ukey = np.unique(src * n + dst)
        us, ud = ukey // n, ukey % n
        lp = longest_path_layers(n, src, dst).astype(np.int64)
        assert (layer[ud] - layer[us]).sum() <= (lp[ud] - lp[us]).sum()

    # Extended graph: each layer's order is a permutation of 0..size-1, so no two nodes (real or
    # dummy) share a slot, and segments join adjacent layers only.
    n_ext = n + lay.n_dummies
    ukey2 = np.unique(src * max(n, 1) + dst)
    spans = layer[ukey2 % max(n, 1)] - layer[ukey2 // max(n, 1)] if n else np.zeros(0, int)
    # No edge costs dummies in proportion to its span: long ones are lanes.
    assert lay.n_dummies == int(np.where(spans <= MAX_DUMMY_SPAN, spans - 1, 0).sum())
    assert lay.n_lanes == int((spans > MAX_DUMMY_SPAN).sum())
    assert lay.ext_layer.shape == lay.ext_order.shape == (n_ext,)
    np.testing.assert_array_equal(lay.ext_layer[:n], lay.layer)
    np.testing.assert_array_equal(lay.ext_order[:n], lay.order)
    for k in range(lay.n_layers):
        members = lay.ext_order[lay.ext_layer == k]
        np.testing.assert_array_equal(np.sort(members), np.arange(members.size))
    seg_l = lay.ext_layer[lay.seg_src].astype(np.int64)
    assert np.all(lay.ext_layer[lay.seg_dst] == seg_l + 1)

    # Coordinates: order is left to right (TB) with at least the gap between neighbours.
    along = lay.ext_x if lay.orientation == "TB" else -lay.ext_y
    across = lay.ext_y if lay.orientation == "TB" else lay.ext_x
    expect_across = -lay.ext_layer if lay.orientation == "TB" else lay.ext_layer
    np.testing.assert_array_equal(across, expect_across.astype(np.float32))
    perm = np.lexsort((lay.ext_order, lay.ext_layer))
    same = lay.ext_layer[perm][1:] == lay.ext_layer[perm][:-1]
    step = np.diff(along[perm].astype(np.float64))[same]
    assert np.all(step >= DUMMY_GAP - 1e-4)
    real = perm < n
    both_real = (real[1:] & real[:-1])[same]
    assert np.all(step[both_real] >= NODE_GAP - 1e-4)
    if n_ext:
        assert abs(float(along.min())) < 1e-4

    # Crossings: stored count is the real count, and never worse than the discovery order.
    assert lay.crossings == count_crossings(lay)
    assert lay.crossings == brute_crossings(lay.ext_layer, lay.ext_order, lay.seg_src, lay.seg_dst)
    assert lay.crossings <= lay.initial_crossings

    # Polylines: one per input edge, from its source to its target, NaN-terminated.
    assert lay.edge_ptr.shape == (src.size + 1,) and lay.edge_ptr[0] == 0
    assert lay.edge_x.dtype == np.float32 and lay.edge_x.shape == lay.edge_y.shape
    assert lay.edge_ptr[-1] == lay.edge_x.size
    for e in range(src.size):
        a, b = lay.edge_ptr[e], lay.edge_ptr[e + 1]
        span = layer[dst[e]] - layer[src[e]]
        if span <= MAX_DUMMY_SPAN:  # through one dummy per layer crossed
            assert b - a == span + 2
        else:  # a lane: out of the source, beside every box, into the target; O(1) points
            assert b - a == 7
            along_e = lay.edge_x[a : b - 1] if lay.orientation == "TB" else -lay.edge_y[a : b - 1]
            lane = float(along_e[2])
            assert along_e[3] == along_e[2]
            # beside every node and dummy of the layers it passes
            passed = (lay.ext_layer > layer[src[e]]) & (lay.ext_layer < layer[dst[e]])
            if passed.any():
                lo, hi = float(along[passed].min()), float(along[passed].max())
                assert lane < lo - 1e-4 or lane > hi + 1e-4
        assert np.isnan(lay.edge_x[b - 1]) and np.isnan(lay.edge_y[b - 1])
        assert not np.isnan(lay.edge_x[a : b - 1]).any()
        assert (lay.edge_x[a], lay.edge_y[a]) == (lay.x[src[e]], lay.y[src[e]])
        assert (lay.edge_x[b - 2], lay.edge_y[b - 2]) == (lay.x[dst[e]], lay.y[dst[e]])


def assert_same_layout(a: Layout, b: Layout) -> None:
    for name in ARRAY_FIELDS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert (a.n_layers, a.n_dummies, a.crossings, a.initial_crossings) == (
        b.n_layers,
        b.n_dummies,
        b.crossings,
        b.initial_crossings,
    )


# --- crossing counts on hand-made drawings ---------------------------------------------------


def test_k22_crosses_once():
    # Two upper nodes (0, 1), two lower (2, 3), all four edges: only 0-3 and 1-2 cross.
    layer, order = [0, 0, 1, 1], [0, 1, 0, 1]
    assert count_crossings(layer, order, [0, 0, 1, 1], [2, 3, 2, 3]) == 1


def test_crossing_counts_by_hand():
    layer, order = [0, 0, 1, 1], [0, 1, 0, 1]
    assert count_crossings(layer, order, [0, 1], [2, 3]) == 0  # parallel
    assert count_crossings(layer, order, [0, 1], [3, 2]) == 1  # an X
    assert count_crossings(layer, order, [0, 0], [2, 3]) == 0  # shared upper end
    assert count_crossings(layer, order, [0, 1], [2, 2]) == 0  # shared lower end
    assert count_crossings(layer, order, [0, 1, 1], [3, 2, 2]) == 2  # a duplicate counts twice
    assert count_crossings(layer, order, [3, 2], [0, 1]) == 1  # direction does not matter
    # K3,3 crosses 9 times in any order; a reversal of 4 parallel edges crosses C(4, 2) = 6.
    k33 = [(u, v) for u in range(3) for v in range(3, 6)]
    assert count_crossings([0] * 3 + [1] * 3, [0, 1, 2] * 2, *zip(*k33)) == 9
    assert count_crossings([0] * 4 + [1] * 4, [0, 1, 2, 3, 3, 2, 1, 0], range(4), range(4, 8)) == 6
    # Crossings in different layer pairs add up; edges in different pairs never cross.
    assert count_crossings([0, 0, 1, 1, 2, 2], [0, 1] * 3, [0, 1, 2, 3], [3, 2, 5, 4]) == 2


def test_crossing_count_rejects_long_edges():
    with pytest.raises(ValueError, match="adjacent layers"):
        count_crossings([0, 1, 2], [0, 0, 0], [0], [2])


def test_crossing_count_matches_brute_force_on_random_bipartite_graphs():
    rng = np.random.default_rng(0)
    for _ in range(50):
        nu, nl, m = rng.integers(1, 8), rng.integers(1, 8), rng.integers(0, 30)
        layer = np.r_[np.zeros(nu, int), np.ones(nl, int), np.full(nl, 2)]
        order = np.r_[rng.permutation(nu), rng.permutation(nl), rng.permutation(nl)]
        src = np.r_[rng.integers(0, nu, m), rng.integers(nu, nu + nl, m)]
        dst = np.r_[rng.integers(nu, nu + nl, m), rng.integers(nu + nl, nu + 2 * nl, m)]
        assert count_crossings(layer, order, src, dst) == brute_crossings(layer, order, src, dst)


# --- shapes -----------------------------------------------------------------------------------


def test_chain_is_a_straight_line():
    n = 100
    lay = layered_layout(n, np.arange(n - 1), np.arange(1, n))
    np.testing.assert_array_equal(lay.layer, np.arange(n))
    np.testing.assert_array_equal(lay.order, 0)
    np.testing.assert_array_equal(lay.x, 0.0)
    np.testing.assert_array_equal(lay.y, -np.arange(n, dtype=np.float32))
    assert lay.n_layers == n and lay.n_dummies == 0 and lay.crossings == 0


def test_fan_centres_the_root_over_its_leaves():
    k = 50
    lay = layered_layout(k + 1, np.zeros(k, int), np.arange(1, k + 1))
    assert lay.layer[0] == 0 and np.all(lay.layer[1:] == 1)
    leaves = np.sort(lay.x[1:])
    np.testing.assert_allclose(np.diff(leaves), NODE_GAP, atol=1e-4)  # compact, evenly spaced
    assert lay.x[0] == pytest.approx(float(leaves.mean()), abs=1e-3)


def test_diamond():
    lay = layered_layout(4, [0, 0, 1, 2], [1, 2, 3, 3])
    np.testing.assert_array_equal(lay.layer, [0, 1, 1, 2])
    assert abs(float(lay.x[1] - lay.x[2])) >= NODE_GAP - 1e-4
    mid = 0.5 * float(lay.x[1] + lay.x[2])
    assert lay.x[0] == pytest.approx(mid, abs=1e-3)
    assert lay.x[3] == pytest.approx(mid, abs=1e-3)
    assert lay.crossings == 0


def test_long_edge_gets_a_dummy_and_a_bent_route():
    # 0 -> 1 -> 2 plus the skip edge 0 -> 2 (a residual connection).
    src, dst = [0, 1, 0], [1, 2, 2]
    lay = layered_layout(3, src, dst)
    np.testing.assert_array_equal(lay.layer, [0, 1, 2])
    assert lay.n_dummies == 1 and lay.ext_layer[3] == 1
    np.testing.assert_array_equal(lay.edge_ptr, [0, 3, 6, 10])
    route = slice(6, 9)
    np.testing.assert_array_equal(lay.edge_x[route], [lay.x[0], lay.ext_x[3], lay.x[2]])
    np.testing.assert_array_equal(lay.edge_y[route], [0.0, -1.0, -2.0])
    assert_layout_invariants(lay, 3, src, dst)


def test_duplicate_edges_share_a_route():
    src, dst = [0, 0, 0, 1], [1, 2, 2, 2]
    lay = layered_layout(3, src, dst)
    assert lay.n_dummies == 1  # one dummy for the doubled long edge, not two
    p = lay.edge_ptr
    np.testing.assert_array_equal(lay.edge_x[p[1] : p[2]], lay.edge_x[p[2] : p[3]])
    assert lay.seg_src.size == 4  # 0-1, 1-2, and 0-dummy-2 once for both copies
    assert_layout_invariants(lay, 3, src, dst)


def test_empty_and_edgeless_graphs():
    lay = layered_layout(0, [], [])
    assert lay.n_layers == 0 and lay.layer.size == 0 and lay.edge_x.size == 0
    np.testing.assert_array_equal(lay.edge_ptr, [0])
    lay = layered_layout(3, [], [])
    np.testing.assert_array_equal(lay.layer, 0)
    np.testing.assert_array_equal(lay.order, [0, 1, 2])
    np.testing.assert_array_equal(lay.x, [0.0, 1.0, 2.0])


def test_roots_lead_layer_zero_in_the_given_order():
    # Sources 0, 1, 2; roots=[2, 0] puts 2 first, then 0, then the other source.
    lay = layered_layout(4, [0, 1, 2], [3, 3, 3], roots=[2, 0], sweeps=0)
    assert np.all(lay.layer[:3] == 0)
    np.testing.assert_array_equal(lay.order[[2, 0, 1]], [0, 1, 2])
    lay = layered_layout(4, [0, 1, 2], [3, 3, 3], roots=[2, 0])
    assert np.all(lay.layer[[0, 2]] == 0)


def test_a_root_below_another_root_keeps_edges_pointing_down():
    lay = layered_layout(3, [0, 1], [1, 2], roots=[0, 1])
    np.testing.assert_array_equal(lay.layer, [0, 1, 2])


def test_orientation_swaps_axes():
    rng = np.random.default_rng(3)
    n, (src, dst) = 40, random_dag(rng, 40, 80)
    tb = layered_layout(n, src, dst, orientation="TB")
    lr = layered_layout(n, src, dst, orientation="LR")
    np.testing.assert_array_equal(lr.x, -tb.y)
    np.testing.assert_array_equal(lr.y, -tb.x)
    np.testing.assert_array_equal(lr.x, tb.layer.astype(np.float32))
    np.testing.assert_array_equal(lr.edge_x, -tb.edge_y)
    np.testing.assert_array_equal(lr.order, tb.order)
    assert_layout_invariants(lr, n, src, dst)
    with pytest.raises(ValueError, match="orientation"):
        layered_layout(n, src, dst, orientation="BT")  # type: ignore[arg-type]


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="cycle"):
        layered_layout(3, [0, 1, 2], [1, 2, 0])
    with pytest.raises(ValueError, match="cycle"):
        longest_path_layers(2, [1], [1])  # a self-loop
    with pytest.raises(ValueError, match="in \\[0, 3\\)"):
        layered_layout(3, [0], [3])
    with pytest.raises(ValueError, match="differ in length"):
        layered_layout(3, [0, 1], [1])
    with pytest.raises(ValueError, match="roots"):
        layered_layout(3, [0], [1], roots=[5])


def test_layout_arrays_are_read_only():
    lay = layered_layout(3, [0, 1], [1, 2])
    with pytest.raises(ValueError):
        lay.x[0] = 1.0


def test_deterministic():
    rng = np.random.default_rng(7)
    src, dst = random_dag(rng, 300, 900)
    assert_same_layout(layered_layout(300, src, dst), layered_layout(300, src, dst))


def test_sweeps_zero_is_the_unreduced_order():
    rng = np.random.default_rng(11)
    src, dst = random_dag(rng, 200, 600)
    raw = layered_layout(200, src, dst, sweeps=0)
    lay = layered_layout(200, src, dst)
    assert raw.crossings == raw.initial_crossings == lay.initial_crossings
    assert lay.crossings < raw.crossings
    np.testing.assert_array_equal(raw.layer, lay.layer)


def test_big_chain_and_fan_are_fast_and_not_recursive():
    n = 50_000
    t = time.perf_counter()
    lay = layered_layout(n, np.arange(n - 1), np.arange(1, n))
    chain_s = time.perf_counter() - t
    assert lay.n_layers == n and lay.layer[-1] == n - 1
    t = time.perf_counter()
    fan = layered_layout(n + 1, np.zeros(n, int), np.arange(1, n + 1))
    fan_s = time.perf_counter() - t
    assert fan.n_layers == 2 and fan.crossings == 0
    # ~30 ms each when measured; a generous bound catches a quadratic step, not a slow machine.
    assert chain_s < 3.0 and fan_s < 3.0


# --- a real backward graph --------------------------------------------------------------------


def backward_edges(root) -> tuple[int, np.ndarray, np.ndarray]:
    """Edges of the autograd graph under `root`, ids in BFS discovery order (root = 0)."""
    ids = {root: 0}
    src: list[int] = []
    dst: list[int] = []
    queue = collections.deque([root])
    while queue:
        fn = queue.popleft()
        for nxt, _ in fn.next_functions:
            if nxt is None:
                continue
            if nxt not in ids:
                ids[nxt] = len(ids)
                queue.append(nxt)
            src.append(ids[fn])
            dst.append(ids[nxt])
    return len(ids), np.array(src), np.array(dst)


def test_crossing_reduction_on_a_transformer_backward_graph():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    block = torch.nn.TransformerEncoderLayer(
        d_model=16, nhead=2, dim_feedforward=32, batch_first=True
    )
    model = torch.nn.TransformerEncoder(block, num_layers=12, enable_nested_tensor=False)
    loss = model(torch.randn(2, 5, 16)).sum()
    n, src, dst = backward_edges(loss.grad_fn)
    assert n > 500  # the walk reached the whole 12-layer graph

    raw = layered_layout(n, src, dst, roots=[0], sweeps=0)
    lay = layered_layout(n, src, dst, roots=[0])
    # The residual skips are lanes (no per-layer dummies); crossings as drawn, lanes included.
    assert lay.n_lanes >= 12 and lay.n_dummies < n
    drawn_raw = drawn_crossings(raw.edge_x, raw.edge_y, raw.edge_ptr)
    drawn = drawn_crossings(lay.edge_x, lay.edge_y, lay.edge_ptr)
    assert lay.crossings <= raw.crossings and drawn <= drawn_raw
    assert lay.layer[0] == 0
    assert_layout_invariants(lay, n, src, dst, roots=[0])


# --- random DAGs ------------------------------------------------------------------------------


def random_dag(rng: np.random.Generator, n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Edges i -> j with rank[i] < rank[j] under a random ranking, so ids are not topological."""
    a, b = rng.integers(0, n, m), rng.integers(0, n, m)
    keep = a != b
    a, b = a[keep], b[keep]
    rank = rng.permutation(n)
    up = rank[a] < rank[b]
    return np.where(up, a, b), np.where(up, b, a)


@st.composite
def dags(draw):
    n = draw(st.integers(0, 25))
    if n < 2:
        return n, np.zeros(0, int), np.zeros(0, int), []
    rank = draw(st.permutations(range(n)))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n))
    src, dst = [], []
    for a, b in pairs:  # multi-edges stay in on purpose
        if rank[a] != rank[b]:
            src.append(a if rank[a] < rank[b] else b)
            dst.append(b if rank[a] < rank[b] else a)
    sources = sorted(set(range(n)) - set(dst))
    roots = draw(st.lists(st.sampled_from(sources), unique=True)) if sources else []
    return n, np.array(src, dtype=int), np.array(dst, dtype=int), roots


@given(dags(), st.sampled_from(["TB", "LR"]), st.sampled_from([0, 1, 8]))
def test_random_dag_invariants(dag, orientation, sweeps):
    n, src, dst, roots = dag
    lay = layered_layout(n, src, dst, roots=roots, orientation=orientation, sweeps=sweeps)
    assert_layout_invariants(lay, n, src, dst, roots)
    assert_same_layout(
        lay, layered_layout(n, src, dst, roots=roots, orientation=orientation, sweeps=sweeps)
    )


def test_max_dummy_span_chooses_between_dummies_and_a_lane():
    # 0 -> 1 -> 2 -> 3 -> 4 and the skip 0 -> 4 (spans 4 layers)
    src, dst = [0, 1, 2, 3, 0], [1, 2, 3, 4, 4]
    through = layered_layout(5, src, dst, max_dummy_span=4)
    beside = layered_layout(5, src, dst, max_dummy_span=3)
    assert (through.n_dummies, through.n_lanes) == (3, 0)
    assert (beside.n_dummies, beside.n_lanes) == (0, 1)
    assert_layout_invariants(through, 5, src, dst)
