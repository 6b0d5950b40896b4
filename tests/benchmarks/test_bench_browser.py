"""The browser benchmark runs end to end at tiny size and writes its RESULTS.md section."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.browser
@pytest.mark.slow
def test_bench_browser_tiny_writes_section(tmp_path: Path) -> None:
    results = tmp_path / "RESULTS.md"
    shutil.copy(ROOT / "benchmarks" / "RESULTS.md", results)
    before = results.read_text()
    proc = subprocess.run(
        [sys.executable, "benchmarks/bench_browser.py", "--tiny", "--results", str(results)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    text = results.read_text()
    start, end = "<!-- browser:start -->", "<!-- browser:end -->"
    assert text.count(start) == 1 and text.count(end) == 1
    body = text[text.index(start) : text.index(end)]
    rows = [ln for ln in body.splitlines() if re.match(r"\| (TransformerEncoder|chain) ", ln)]
    measures = set()
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        nodes, collapse, measure, median = int(cells[1]), cells[2], cells[3], float(cells[4])
        repeats = [float(x) for x in cells[5].split(",")]
        assert nodes > 50 and collapse in ("none", "auto") and median > 0, row
        assert len(repeats) == 2 and min(repeats) <= median <= max(repeats), row
        measures.add((cells[0].split()[0], measure))
    assert measures == {
        ("TransformerEncoder", "explore -> painted"),
        ("TransformerEncoder", "step round trip"),
        ("TransformerEncoder", "unfold round trip"),
        ("TransformerEncoder", "semantic zoom out: fold"),
        ("TransformerEncoder", "semantic zoom in: open"),
        ("chain", "explore -> painted"),
    }, body
    watch = [ln for ln in body.splitlines() if ln.startswith("| watch 300 steps")]
    assert {ln.split("|")[4].strip() for ln in watch} == {
        "aw.load_watch (kernel)", "load + explore -> timeline painted",
        "timeline built -> painted",
    }, body
    # the other sections are kept as they were
    for name in ("stepper", "scale"):
        marker = f"<!-- {name}:start -->"
        if marker in before:
            sect = before[before.index(marker) : before.index(f"<!-- {name}:end -->")]
            assert sect in text
