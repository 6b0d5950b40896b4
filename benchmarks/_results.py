"""Writing one benchmark script's section of RESULTS.md, shared by every bench_*.py."""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")


def write_section(name: str, body: str, path: Path = RESULTS) -> None:
    """Replace this script's section of RESULTS.md (between its markers), keep everything else."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n{body}{end}\n"
    text = path.read_text() if path.exists() else "# Benchmark results\n\n"
    if start in text and end in text:
        before = text[: text.index(start)]
        after = text[text.index(end) + len(end) :].lstrip("\n")
        text = before + block + ("\n" + after if after else "")
    else:
        text = text.rstrip("\n") + "\n\n" + block
    path.write_text(text)
