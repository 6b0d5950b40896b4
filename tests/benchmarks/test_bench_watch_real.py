"""The real-watch benchmark (benchmarks/bench_watch_real.py) keeps working: a tiny run trains two
short watched runs, opens each file in a fresh process, and writes only its own section with the
long/short ratio of load + explore."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path


def _bench():
    path = Path(__file__).parents[2] / "benchmarks" / "bench_watch_real.py"
    spec = importlib.util.spec_from_file_location("bench_watch_real", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_watch_real"] = mod
    try:
        spec.loader.exec_module(mod)
    finally:
        del sys.modules["bench_watch_real"]
    return mod


def test_tiny_run_writes_only_its_section(tmp_path):
    bench = _bench()
    results = tmp_path / "RESULTS.md"
    results.write_text("# Benchmark results\n\n<!-- other:start -->\nkeep me\n<!-- other:end -->\n")
    assert bench.main(["--steps", "8", "24", "--repeats", "1", "--results", str(results)]) == 0
    text = results.read_text()
    assert "keep me" in text and "<!-- watch_real:start -->" in text
    rows = re.findall(r"^\| (8|24) \| [\d.]+ \|", text, flags=re.M)
    assert rows == ["8", "24"]
    assert re.search(r"load \+ explore at 24 steps / at 8: [\d.]+x", text)
