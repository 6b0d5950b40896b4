"""The watch benchmark (benchmarks/bench_watch.py) keeps working: a tiny run times every variant
and idea of issue 31 on a 1-layer GPT-2 (checking watched gradients bit-equal to plain ones),
measures memory and a load, and writes only its own section."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def bench():
    path = Path(__file__).parents[2] / "benchmarks" / "bench_watch.py"
    spec = importlib.util.spec_from_file_location("bench_watch", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_watch"] = mod
    try:
        spec.loader.exec_module(mod)
    finally:
        del sys.modules["bench_watch"]
    return mod


def test_tiny_run_writes_only_its_section(bench, tmp_path, capsys):
    from autograd_widget.engine.watch import lean
    from autograd_widget.engine.watch import watch as watch_module

    results = tmp_path / "RESULTS.md"
    results.write_text("# Benchmark results\n\n<!-- other:start -->\nkeep me\n<!-- other:end -->\n")
    threads = torch.get_num_threads()
    kernel = lean.set_kernel("vector_norm")
    argv = ["--tiny", "--repeats", "1", "--write", "--results", str(results), "--threads", "1",
            "--load-steps", "30"]  # fmt: skip
    assert bench.main(argv) == 0
    assert torch.get_num_threads() == threads
    assert watch_module.LeanPass is lean.LeanPass and lean.set_kernel(kernel) == "vector_norm"
    text = results.read_text()
    assert "keep me" in text and text.count("<!-- watch:start -->") == 1
    rows = [line.split(" | ")[0][2:] for line in text.splitlines() if line.startswith("| ")]
    assert rows[1:6] == ["plain", "watch every=1", "watch, unwatched step", "watch every=10",
                         "record summaries"]  # fmt: skip
    assert sum(r.startswith("idea: ") for r in rows) == len(bench.IDEAS)
    assert "bytes per edge per watched step" in text
    assert "aw.watch and aw.record" in capsys.readouterr().out
