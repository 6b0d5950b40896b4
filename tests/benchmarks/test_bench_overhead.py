"""The overhead benchmark (benchmarks/bench_overhead.py) keeps working: a tiny run over the tiny-op
graphs and a zoo model checks every gradient against the engine, finds no compare difference,
measures peak memory and writes only its own section."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch


@pytest.fixture(scope="module")
def bench():
    path = Path(__file__).parents[2] / "benchmarks" / "bench_overhead.py"
    spec = importlib.util.spec_from_file_location("bench_overhead", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_overhead"] = mod  # dataclasses resolve annotations through sys.modules
    try:
        spec.loader.exec_module(mod)
    finally:
        del sys.modules["bench_overhead"]
    return mod


def test_tiny_run_writes_only_its_section(bench, tmp_path, capsys):
    results = tmp_path / "RESULTS.md"
    results.write_text("# Benchmark results\n\n<!-- other:start -->\nkeep me\n<!-- other:end -->\n")
    threads = torch.get_num_threads()
    argv = ["--tiny", "--repeats", "1", "--write", "--results", str(results), "--models", "vit"]
    assert bench.main(argv) == 0
    assert torch.get_num_threads() == threads
    text = results.read_text()
    assert "keep me" in text and text.count("<!-- overhead:start -->") == 1
    rows = [line for line in text.splitlines() if line.startswith("| ") and " | " in line]
    names = [r.split(" | ")[0].removeprefix("| ") for r in rows[1:]]
    assert names[0].startswith("TransformerEncoder") and names[1].startswith("Mamba")
    assert names[2] == "zoo: vit (small)"
    assert "keep=summaries" in capsys.readouterr().out


def test_peak_memory_counts_live_storages_once(bench):
    def work():
        a = torch.ones(1000)  # 4000 bytes, freed before b exists
        del a
        b = torch.ones(500)
        views = [b[:10], b.view(5, 100)]  # same storage: counted once
        return b, views

    assert bench.peak_bytes(work) == 4000
    keep = []
    assert bench.peak_bytes(lambda: keep.extend([torch.ones(100), torch.ones(200)])) == 1200


def test_the_mamba_like_block_is_many_tiny_nodes(bench):
    torch.manual_seed(0)
    loss, ps = bench.mamba(8, 2, 16)()
    import autograd_widget as aw

    g = aw.capture(loss)
    assert len(g.nodes) > 8 * 12 and len(ps) == 12


def test_isolated_graphs_each_run_in_their_own_process(bench, capsys):
    argv = ["--tiny", "--repeats", "1", "--models", "", "--isolate"]
    assert bench.main(argv) == 0
    out = capsys.readouterr().out
    assert "each graph in a fresh process" in out
    assert out.count("| TransformerEncoder 2 layers") == 2  # its row as measured, then the table
    assert "| Mamba-like block" in out
