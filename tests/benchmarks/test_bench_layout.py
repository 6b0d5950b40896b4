"""benchmarks/bench_layout.py runs at toy sizes and reports every shape (its numbers are in
RESULTS.md; no speed is asserted here)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_layout.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_layout", BENCH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_layout"] = mod  # dataclasses resolve annotations through sys.modules
    try:
        spec.loader.exec_module(mod)
        yield mod
    finally:
        del sys.modules["bench_layout"]



def test_tiny_run_reports_every_shape_and_writes_only_its_section(bench, tmp_path, capsys):
    results = tmp_path / "RESULTS.md"
    results.write_text("# Benchmark results\n\n<!-- other:start -->\nkeep me\n<!-- other:end -->\n")
    assert bench.main(["--tiny", "--write", "--no-dot", str(results)]) == 0
    out = capsys.readouterr().out
    for case in bench.cases(tiny=True):
        assert case.name in out
    text = results.read_text()
    assert "keep me" in text and "<!-- layout:start -->" in text
    assert "ladder 10k" in text


def test_quality_counts_crossings_as_drawn(bench):
    import numpy as np

    ex = np.array([0, 1, np.nan, 1, 0, np.nan])
    ey = np.array([0, 1, np.nan, 0, 1, np.nan])
    q = bench.polyline_quality(ex, ey, np.array([0, 3, 6]), 2, (0.0, 1.0, 0.0, 1.0), 1.0)
    assert q.crossings == 1 and q.aspect == 1.0 and q.area_per_node == 0.5
