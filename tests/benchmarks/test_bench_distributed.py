"""The distributed benchmark (benchmarks/bench_distributed.py) keeps working: a `--quick` run on 2
gloo ranks (spawned by the benchmark: OS port, one timeout, nothing left behind) times the watch,
the recording and the stepper under FSDP2 on every rank, checks their gradients, and writes only
its own section with every row; a rank that fails is reported with what it printed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from tests.helpers.ranks import gloo_only

pytest.importorskip("transformers")

try:
    from autograd_widget.core.fsdp import fsdp_note

    _NOTE = fsdp_note()
except ImportError:  # pragma: no cover
    _NOTE = "autograd_widget.core.fsdp is missing"

pytestmark = [gloo_only, pytest.mark.slow,
              pytest.mark.skipif(_NOTE is not None, reason=str(_NOTE))]  # fmt: skip


@pytest.fixture(scope="module")
def bench():
    path = Path(__file__).parents[2] / "benchmarks" / "bench_distributed.py"
    spec = importlib.util.spec_from_file_location("bench_distributed", path)
    mod = importlib.util.module_from_spec(spec)
    had_watch = "bench_watch" in sys.modules  # imported by the benchmark (its method reused)
    sys.modules["bench_distributed"] = mod
    try:
        spec.loader.exec_module(mod)
    finally:
        del sys.modules["bench_distributed"]
        if not had_watch:
            sys.modules.pop("bench_watch", None)
    return mod


def _rows(text: str, header: str) -> list[tuple[str, str, str]]:
    """(first cell, rank, last cell) of the table whose header row starts with `header`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {header} |"))
    out = []
    for line in lines[start + 2:]:  # fmt: skip
        if not line.startswith("| "):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        out.append((cells[0], cells[1], cells[-1]))
    return out


def test_quick_run_writes_its_section_with_every_row(bench, tmp_path, capsys):
    results = tmp_path / "RESULTS.md"
    results.write_text("# Benchmark results\n\n<!-- other:start -->\nkeep me\n<!-- other:end -->\n")
    threads = torch.get_num_threads()
    argv = ["--quick", "--repeats", "1", "--write", "--results", str(results), "--timeout", "400"]
    assert bench.main(argv) == 0
    assert torch.get_num_threads() == threads
    text = results.read_text()
    assert "keep me" in text and text.count("<!-- distributed:start -->") == 1
    assert text.count("<!-- distributed:end -->") == 1
    section = text[text.index("<!-- distributed:start -->"):]  # fmt: skip
    assert "Commit " in section and "Load average (1 min) before/after" in section

    watch = _rows(section, "variant")
    assert [(v, r) for v, r, _ in watch] == [(v, str(r)) for v in bench.VARIANTS for r in (0, 1)]
    for v, _, met in watch:
        assert (met == "-") == (v not in bench.WATCH_TARGETS), (v, met)
    stepping = _rows(section, "keep")
    assert [(k, r) for k, r, _ in stepping] == [(k, str(r)) for k in ("tensors", "summaries")
                                                for r in (0, 1)]  # fmt: skip
    memory = _rows(section, "run")
    assert [r for _, r, _ in memory] == ["0", "1", "0", "1"]
    assert [m[0].split()[0] for m in memory] == ["engine", "engine", "stepper", "stepper"]
    # not a timing: the stepper never holds every FSDP module unsharded at once (5 here)
    assert [m[2] for m in memory[2:]] == ["yes", "yes"], memory
    assert "GPT-2 from a transformers config (4 layers" in section
    assert "aw.watch, aw.record and stepping under FSDP2" in capsys.readouterr().out


def test_a_failing_rank_is_reported_with_its_output(bench):
    with pytest.raises(RuntimeError, match="a rank failed") as info:
        bench.run_ranks("no such size", 1, timeout=120)
    assert "--- rank 0:" in str(info.value) and "invalid choice" in str(info.value)
