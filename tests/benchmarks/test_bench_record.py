"""The recording benchmark (benchmarks/bench_record.py) keeps working: a tiny run over two zoo
models checks every recorded gradient against the engine and writes only its own section."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch


@pytest.fixture(scope="module")
def bench():
    path = Path(__file__).parents[2] / "benchmarks" / "bench_record.py"
    spec = importlib.util.spec_from_file_location("bench_record", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_record"] = mod
    try:
        spec.loader.exec_module(mod)
    finally:
        del sys.modules["bench_record"]
    return mod


def test_tiny_run_writes_only_its_section(bench, tmp_path, capsys):
    results = tmp_path / "RESULTS.md"
    results.write_text("# Benchmark results\n\n<!-- other:start -->\nkeep me\n<!-- other:end -->\n")
    threads = torch.get_num_threads()
    argv = ["--tiny", "--repeats", "1", "--write", "--results", str(results),
            "--models", "vit,lstm"]  # fmt: skip
    assert bench.main(argv) == 0
    assert torch.get_num_threads() == threads
    text = results.read_text()
    assert "keep me" in text and text.count("<!-- record:start -->") == 1
    rows = [line for line in text.splitlines() if line.startswith("| ") and "x |" in line]
    assert [r.split(" | ")[0] for r in rows] == ["| vit (small)", "| lstm (small)"]
    assert "aw.record overhead" in capsys.readouterr().out
