"""The models benchmark (benchmarks/bench_models.py) keeps working: a tiny run over the whole
zoo writes only its own section, and missing comparison tools are recorded, not fatal."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest
import torch


@pytest.fixture(scope="module")
def bench():
    path = Path(__file__).parents[2] / "benchmarks" / "bench_models.py"
    spec = importlib.util.spec_from_file_location("bench_models", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_models"] = mod  # dataclasses resolve annotations through sys.modules
    try:
        spec.loader.exec_module(mod)
    finally:
        del sys.modules["bench_models"]
    return mod


@pytest.mark.zoo
def test_tiny_run_covers_the_zoo_and_writes_only_its_section(bench, tmp_path, capsys, monkeypatch):
    # The comparison tools are benchmark-only: CI has neither; the table says so.
    monkeypatch.setattr(bench, "_have_torchviz", lambda: False)
    monkeypatch.setattr(bench, "_have_torchlens", lambda: False)
    results = tmp_path / "RESULTS.md"
    results.write_text("# Benchmark results\n\n<!-- other:start -->\nkeep me\n<!-- other:end -->\n")
    threads = torch.get_num_threads()
    try:
        assert bench.main(["--tiny", "--repeats", "1", "--write", "--results", str(results)]) == 0
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    text = results.read_text()
    assert "keep me" in text and text.count("<!-- models:start -->") == 1
    rows = [line for line in text.splitlines() if line.startswith("| ") and "small" in line]
    names = [n for n in bench.MODELS if importlib.util.find_spec("transformers") or
             n not in bench.TRANSFORMERS]  # fmt: skip
    assert [r.split(" | ")[0].removeprefix("| ") for r in rows] == names
    for r in rows:
        assert r.count("not installed") == 2
    assert "stepper ms, summaries" in out and "stepper ms, tensors" in out


def test_comparison_tools_time_a_model_where_installed(bench):
    if shutil.which("dot") is None:
        pytest.skip("Graphviz `dot` is not installed (benchmark-only)")
    ran = 0
    if bench._have_torchviz():
        text, ms = bench.torchviz_time("resnet", "small", 30.0)
        assert ms is not None and ms > 0, text
        ran += 1
    if bench._have_torchlens():
        text, ms = bench.torchlens_time("resnet", "small")
        assert ms is not None and ms > 0, text
        ran += 1
    if not ran:
        pytest.skip("neither torchviz nor torchlens is installed (the bench extra)")
