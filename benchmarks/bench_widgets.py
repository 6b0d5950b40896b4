"""Benchmark: what N widgets cost a notebook (issue 20, "a notebook with ten widgets").

Run `python benchmarks/bench_widgets.py` (writes its section of benchmarks/RESULTS.md; `--n`
widgets, 10 by default). A real kernel (nbclient) executes a notebook that makes and shows N
widgets of a small MLP's loss, and stores the widget state the way JupyterLab's "save widget
state" does; the script reports the saved notebook's size and each widget's share, against the
bundle the front-end loads ONCE per page (each widget's `_esm` is the small loader). The wire
side (bytes per widget on the kernel's websocket, the bundle sent once) is measured by
tests/browser/test_ten_widgets_browser.py in a real JupyterLab.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

import autograd_widget as aw

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from _results import RESULTS, commit, machine, write_section  # noqa: E402

SECTION = "widgets"
STATIC = Path(aw.__file__).parent / "static"
#: Measured before the loader (commit 3d21174, the whole bundle as every widget's `_esm`):
#: ten widgets saved a 4,286,169-byte notebook, 417 KB of state per widget.
BEFORE = "4.29 MB saved for ten widgets (417 KB of state each: the whole bundle per widget)"


def measure(n: int) -> dict[str, float]:
    """Execute an N-widget notebook with a real kernel; sizes in bytes."""
    cells = [
        "import torch, autograd_widget as aw\ntorch.manual_seed(0)\n"
        "model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), "
        "torch.nn.Linear(16, 4))\nx = torch.randn(5, 8)",
        *[f"w{i} = aw.explore(model(x).pow(2).mean(), model=model)\nw{i}" for i in range(n)],
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    NotebookClient(nb, timeout=300, store_widget_state=True).execute()
    states = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    ours = [m for m in states.values() if "_bundle" in m["state"]]
    per = [len(json.dumps(m)) for m in ours]
    esm = max(len(m["state"]["_esm"]) for m in ours)
    return {
        "n": n,
        "saved": len(nbformat.writes(nb).encode()),
        "per_widget": sum(per) / len(per),
        "esm": esm,
        "bundle": (STATIC / "widget.js").stat().st_size + (STATIC / "widget.css").stat().st_size,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10, help="how many widgets (default 10)")
    ap.add_argument("--results", type=Path, default=RESULTS, help="the RESULTS.md to update")
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args(argv)
    r = measure(args.n)
    text = (
        f"## {r['n']} widgets in one notebook (bench_widgets.py)\n\n"
        f"Commit {commit()}; {machine('nbclient, a real kernel')}.\n\n"
        "| what | bytes |\n|---|---:|\n"
        f"| saved notebook with widget state, {r['n']} widgets | {r['saved']:,.0f} |\n"
        f"| one widget's saved state (loader + drawing + step state) | {r['per_widget']:,.0f} |\n"
        f"| of which the loader (`_esm`) | {r['esm']:,.0f} |\n"
        f"| the bundle (widget.js + widget.css), sent once per page, saved nowhere | "
        f"{r['bundle']:,.0f} |\n\n"
        f"Before the loader: {BEFORE}. On the wire (a real JupyterLab, "
        "tests/browser/test_ten_widgets_browser.py): the bundle crosses once per page, "
        "each widget adds ~14 KB.\n\n"
    )
    print(text)
    if not args.no_write:
        write_section(SECTION, text, args.results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
