"""The checkpointing benchmark (benchmarks/bench_ckpt.py) keeps working at a tiny size: it writes
only its own section, and its numbers say what the issue asks (the stepper recomputes what the
engine recomputes, inspection recomputes nothing, nothing recomputed is kept)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from tests.helpers.torch_versions import WHY_GROUP, needs_torch


@pytest.fixture(scope="module")
def bench():
    path = Path(__file__).parents[2] / "benchmarks" / "bench_ckpt.py"
    spec = importlib.util.spec_from_file_location("bench_ckpt", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_ckpt"] = mod  # dataclasses resolve annotations through sys.modules
    try:
        spec.loader.exec_module(mod)
    finally:
        del sys.modules["bench_ckpt"]
    return mod


@needs_torch("2.10", WHY_GROUP)
def test_tiny_run_writes_only_its_section(bench, tmp_path):
    results = tmp_path / "RESULTS.md"
    results.write_text("# Benchmark results\n\n<!-- other:start -->\nkeep me\n<!-- other:end -->\n")
    threads = torch.get_num_threads()
    assert bench.main(["--tiny", "--cases", "blocks", "--write", "--results", str(results)]) == 0
    assert torch.get_num_threads() == threads
    text = results.read_text()
    assert "keep me" in text and text.count("<!-- ckpt:start -->") == 1
    rows = [line.split(" | ") for line in text.splitlines() if line.startswith("| blocks | 23 |")]
    by_what = {r[2]: (int(r[3]), int(r[4].rstrip(" |"))) for r in rows}
    assert by_what["engine"] == (4, 0)
    assert by_what["saved reads"] == (0, 0)
    for keep in ("tensors", "summaries"):
        assert by_what[f"run ({keep})"] == (4, 0)
        assert by_what[f"reset+run ({keep})"] == (4, 0)


@needs_torch("2.10", WHY_GROUP)
@pytest.mark.zoo
def test_tiny_gpt2(bench):
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("transformers is not installed (dev extra)")
    row = bench.measure("gpt2", True, 1)
    assert row.recomputes["engine"] == 2
    assert {k: v for k, v in row.recomputes.items() if k != "saved reads"} == {
        k: 2 for k in row.recomputes if k != "saved reads"
    }
    assert row.recomputes["saved reads"] == 0 and set(row.kept.values()) - {0} == {
        row.kept["saved_memory bytes"]
    }
