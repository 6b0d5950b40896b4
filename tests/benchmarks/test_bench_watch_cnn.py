"""The resnet18 watch benchmark (benchmarks/bench_watch_cnn.py) keeps working: a tiny run times
the plain, watched and unwatched steps, measures the unwatched steps' check, and writes only its
own section."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def bench():
    path = Path(__file__).parents[2] / "benchmarks" / "bench_watch_cnn.py"
    spec = importlib.util.spec_from_file_location("bench_watch_cnn", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_watch_cnn"] = mod
    try:
        spec.loader.exec_module(mod)
    finally:
        del sys.modules["bench_watch_cnn"]
    return mod


def test_tiny_run_writes_only_its_section(bench, tmp_path, capsys):
    from autograd_widget.engine.watch import leafcheck

    real = (leafcheck.LeafCheck._pre, leafcheck.LeafCheck._end)
    results = tmp_path / "RESULTS.md"
    results.write_text("# Benchmark results\n\n<!-- other:start -->\nkeep me\n<!-- other:end -->\n")
    assert bench.main(["--tiny", "--repeats", "2", "--write", "--results", str(results),
                       "--threads", "1"]) == 0  # fmt: skip
    text = results.read_text()
    assert "keep me" in text and "<!-- watch_cnn:start -->" in text
    for row in ("| plain |", "| watch every=1 |", "| watch, unwatched step |",
                "| watch every=10 |"):  # fmt: skip
        assert row in text
    assert "The unwatched steps' check" in text and "Its floor" in text
    assert "Backward CPU time" in text
    assert (leafcheck.LeafCheck._pre, leafcheck.LeafCheck._end) == real  # timers taken off


def test_the_model_is_resnet18(bench):
    model = bench.ResNet(*bench.SIZES["full"][:2])
    assert sum(p.numel() for p in model.parameters()) == 11_689_512  # torchvision's resnet18
