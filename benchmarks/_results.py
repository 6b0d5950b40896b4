"""What every bench_*.py shares: writing its section of RESULTS.md, and the commit and machine
each section names."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")
HERE = Path(__file__).parent


def commit() -> str:
    """The short HEAD commit, marked when the tree has uncommitted changes."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], capture_output=True, text=True, check=True, cwd=HERE
        ).stdout.strip()

    try:
        head, dirty = git("rev-parse", "--short", "HEAD"), git("status", "--porcelain")
    except (subprocess.CalledProcessError, FileNotFoundError):
        return "uncommitted"
    return f"{head} (with uncommitted changes)" if dirty else head


def machine(threads: str = "1 torch thread") -> str:
    """Platform, processor, CPUs, Python and torch versions (torch imported only when asked)."""
    import torch

    return (
        f"{platform.platform()}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, torch {torch.__version__}, "
        f"{threads}"
    )


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
