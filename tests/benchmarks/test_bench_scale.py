"""The scale benchmark (benchmarks/bench_scale.py) keeps working: tiny run, section writing, and
the pieces that turn Graphviz output into numbers comparable with ours (checked without dot)."""

from __future__ import annotations

import importlib.util
import itertools
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from autograd_widget.view import layout


@pytest.fixture(scope="module")
def bench():
    path = Path(__file__).parents[2] / "benchmarks" / "bench_scale.py"
    spec = importlib.util.spec_from_file_location("bench_scale", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_scale"] = mod  # dataclasses resolve annotations through sys.modules
    try:
        spec.loader.exec_module(mod)
    finally:
        del sys.modules["bench_scale"]
    return mod


def test_tiny_run_prints_every_graph_and_writes_only_its_section(bench, tmp_path, capsys):
    results = tmp_path / "RESULTS.md"
    results.write_text("# Benchmark results\n\n<!-- other:start -->\nkeep me\n<!-- other:end -->\n")
    threads = torch.get_num_threads()
    try:
        argv = ["--tiny", "--repeats", "1", "--timeout", "30", "--write", "--results"]
        assert bench.main([*argv, str(results)]) == 0
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    for case in bench.cases(tiny=True):
        assert case.name in out
    text = results.read_text()
    assert "keep me" in text and text.count("<!-- scale:start -->") == 1
    assert "### Targets" in text and "payload < ~150 bytes/node" in text
    # A second write replaces the section instead of appending one.
    bench.write_section("scale", "second\n", results)
    text = results.read_text()
    assert "second" in text and "### Targets" not in text and "keep me" in text


def test_missing_torchviz_or_graphviz_is_recorded_not_fatal(bench, monkeypatch):
    monkeypatch.setattr(bench, "_have_torchviz", lambda: False)
    row = bench.measure(bench.Case("chain", bench.chain(50)), 1, 10.0)
    assert row.torchviz == "not installed" and row.torchviz_s is None
    assert bench._speedup(row)[:2] == ("-", None)
    assert row.nodes == 50 and row.ours.crossings == 0
    monkeypatch.setattr(bench.shutil, "which", lambda name: None)
    row = bench.measure(bench.Case("fan", bench.fan(40)), 1, 10.0)
    assert row.dot == "not installed" and row.dot_quality is None
    assert bench._cross_ratio(row)[:2] == ("-", None)
    lines = "\n".join(bench.targets_table([row]))
    assert "not measured in this run" in lines


def test_payload_bytes_counts_buffers_and_the_json_of_the_rest(bench):
    payload = {"a": memoryview(b"12345678"), "b": {"c": [1, 2], "d": memoryview(b"xy")}}
    rest = json.dumps({"a": None, "b": {"c": [1, 2], "d": None}})
    assert bench.payload_bytes(payload) == 10 + len(rest)


def _plain(nodes: dict[int, tuple[float, float]], edges: list[list[tuple[float, float]]]) -> str:
    """A `dot -Tplain` text: polylines as degenerate cubic Beziers (straight pieces)."""
    lines = ["graph 1 10 10"]
    lines += [
        f"node n{i} {x} {y} 0.75 0.5 op solid box black lightgrey" for i, (x, y) in nodes.items()
    ]
    for (a, b), pts in edges:
        ctrl = [pts[0]]
        for p, q in itertools.pairwise(pts):
            ctrl += [p, q, q]
        coords = " ".join(f"{x} {y}" for x, y in ctrl)
        lines.append(f"edge n{a} n{b} {len(ctrl)} {coords} solid black")
    return "\n".join([*lines, "stop"]) + "\n"


def test_dot_quality_places_long_edges_where_their_spline_crosses_a_rank(bench):
    # Ranks at y = 2, 1, 0. n0 -> n3 and n1 -> n2 cross once; the long edge n0 -> n4 crosses
    # n1 -> n2 too when it passes rank 1 right of n3, and nothing when it passes left of n2.
    nodes = {0: (0.0, 2.0), 1: (2.0, 2.0), 2: (0.0, 1.0), 3: (2.0, 1.0), 4: (4.0, 0.0)}
    short = [((0, 3), [(0.0, 2.0), (2.0, 1.0)]), ((1, 2), [(2.0, 2.0), (0.0, 1.0)])]
    unique = [(0, 3), (1, 2), (0, 4)]
    right = _plain(nodes, [*short, ((0, 4), [(0.0, 2.0), (3.0, 1.0), (4.0, 0.0)])])
    left = _plain(nodes, [*short, ((0, 4), [(0.0, 2.0), (-1.0, 1.0), (4.0, 0.0)])])
    q_right = bench.dot_quality(right, 5, unique)
    q_left = bench.dot_quality(left, 5, unique)
    assert (q_right.crossings, q_left.crossings) == (2, 1)
    assert q_right.layers == 3
    with pytest.raises(ValueError, match="placed 5 of 6"):
        bench.dot_quality(right, 6, unique)


def test_dot_quality_agrees_with_our_counter_on_our_own_drawing(bench):
    # Feed our layout back as if dot had drawn it: the reconstruction must find our crossings.
    rng = np.random.default_rng(3)
    n = 40
    src, dst = [], []
    for v in range(1, n):
        for u in rng.choice(v, size=min(v, 2), replace=False):
            src.append(int(u))
            dst.append(v)
    # every edge between adjacent layers, as dot's ranks are
    lay = layout.layered_layout(n, src, dst, sweeps=0, max_dummy_span=1 << 30)
    assert lay.crossings > 0
    # Each unique edge's route: from a real node, follow its dummies (one segment out each).
    segs = list(zip(lay.seg_src.tolist(), lay.seg_dst.tolist()))
    after = {u: v for u, v in segs if u >= n}
    routes = []
    for u, v in segs:
        if u >= n:
            continue
        pts = [u, v]
        while pts[-1] >= n:
            pts.append(after[pts[-1]])
        routes.append(((u, pts[-1]), [(float(lay.ext_x[p]), float(lay.ext_y[p])) for p in pts]))
    unique = sorted(set(zip(src, dst)))
    assert sorted(r[0] for r in routes) == unique
    plain = _plain({i: (float(lay.x[i]), float(lay.y[i])) for i in range(n)}, routes)
    q = bench.dot_quality(plain, n, unique)
    assert q.crossings == layout.count_crossings(lay)
    assert q.layers == lay.n_layers
    assert q.mean_edge_length == pytest.approx(bench.our_quality(lay).mean_edge_length, rel=1e-5)


def test_visible_dot_quotes_labels_and_lists_unique_edges(bench):
    i32 = np.int32
    payload = {  # a graph payload (version 2: labels index `strings`)
        "version": 2,
        "dtypes": {"nodes.label": "uint8", "edges.src": "int32", "edges.dst": "int32"},
        "nodes": {
            "count": 3,
            "strings": ['say "hi"', "back\\slash", "c"],
            "label": memoryview(np.array([0, 1, 2], np.uint8).tobytes()),
            "kinds": ["function"],
            "input_sigs": [[]],
        },
        "edges": {
            "count": 3,
            "src": memoryview(np.array([0, 0, 1], i32).tobytes()),
            "dst": memoryview(np.array([1, 1, 2], i32).tobytes()),
        },
    }
    source, unique = bench.visible_dot(payload)
    assert unique == [(0, 1), (1, 2)]
    assert 'n0 [label="say \\"hi\\""];' in source and 'label="back\\\\slash"' in source
    assert source.count("->") == 2
