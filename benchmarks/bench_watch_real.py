"""Issue 39's "done when": opening and drawing a REAL watch costs about the same at 20,000 steps as
at 1,000 (within 3x).

A small MLP (two hidden layers, named modules) is trained for real with `aw.watch(model, path=...)`
watching every step, the file appended step by step as a user's run appends it; then each file is
opened in a fresh Python process (as a user opens a run the next day): `aw.load_watch`, then
`aw.explore` (the timeline's payload, the Python side of drawing), then `series` of a parameter and
of a module, and `to_pandas("module")`. Every figure is the median of `--repeats` fresh processes;
the ratio of the long file's figures to the short one's is the point.

Usage (alone on the machine: no helper, suite or server beside it):

    python benchmarks/bench_watch_real.py                  # 1,000 and 20,000 steps
    python benchmarks/bench_watch_real.py --steps 200 2000 --no-write   # a quick look

Writes its section of benchmarks/RESULTS.md (unless --no-write).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _results import RESULTS, commit, machine, write_section

import autograd_widget as aw

#: What a fresh process does to open a watch and draw its timeline; prints one JSON line.
_OPEN = r"""
import json, sys, time
t0 = time.perf_counter()
import autograd_widget as aw
imported = time.perf_counter() - t0
path = sys.argv[1]
t0 = time.perf_counter(); w = aw.load_watch(path); load = time.perf_counter() - t0
t0 = time.perf_counter(); widget = aw.explore(w); explore = time.perf_counter() - t0
def size(o):  # the trait's bytes on the wire: binary buffers as they are, the rest as JSON
    if isinstance(o, (bytes, bytearray, memoryview)):
        return memoryview(o).nbytes
    if isinstance(o, dict):
        return sum(len(json.dumps(k)) + size(v) for k, v in o.items())
    if isinstance(o, (list, tuple)):
        return sum(size(v) for v in o) + 2
    return len(json.dumps(o, default=str))
payload = size(widget._timeline)
import pandas  # imported before the DataFrame is timed: pandas' own import is not the watch's
t0 = time.perf_counter(); w.series("0.0.weight"); p_ms = 1e3 * (time.perf_counter() - t0)
t0 = time.perf_counter(); w.series("0"); m_ms = 1e3 * (time.perf_counter() - t0)
t0 = time.perf_counter(); df = w.to_pandas(kind="module"); df_ms = 1e3 * (time.perf_counter() - t0)
widget.close()
print(json.dumps({"import_s": imported, "load_s": load, "explore_s": explore,
                  "payload_bytes": payload, "series_param_ms": p_ms, "series_module_ms": m_ms,
                  "to_pandas_ms": df_ms, "rows": len(df)}))
"""


def model() -> torch.nn.Module:
    """The MLP: 32 -> 64 -> 64 -> 10, modules 0 (Linear + ReLU), 1 ... 4."""
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU()),
                               torch.nn.Linear(64, 64), torch.nn.Tanh(), torch.nn.Linear(64, 10),
                               torch.nn.LogSoftmax(dim=-1))  # fmt: skip


def train(steps: int, path: Path) -> float:
    """Train `steps` real steps, every one watched and appended to `path`; seconds per step."""
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(256, 32, generator=g), torch.randint(0, 10, (256,), generator=g)
    t0 = time.perf_counter()
    with aw.watch(net, path=path) as w:
        for k in range(steps):
            i = (k * 16) % 240
            loss = torch.nn.functional.nll_loss(net(x[i:i + 16]), y[i:i + 16])
            opt.zero_grad()
            with w.step(loss):
                loss.backward()
            opt.step()
    return (time.perf_counter() - t0) / steps


def open_fresh(path: Path, repeats: int) -> dict[str, float]:
    """Medians over `repeats` fresh processes of what `_OPEN` measures."""
    runs = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", _OPEN, str(path)], capture_output=True,
                             text=True, timeout=600, check=True)  # fmt: skip
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def text(rows: list[dict[str, float]]) -> str:
    """The section: one row per length, then the ratio of the longest to the shortest."""
    head = ("| steps | file MB | train ms/step | load s | explore s | load + explore s | timeline "
            "payload KB | series(param) ms | series(module) ms | to_pandas(module) ms |\n"
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")  # fmt: skip
    body = "".join(
        f"| {r['steps']:,} | {r['mb']:.1f} | {1e3 * r['train_s']:.2f} | {r['load_s']:.3f} | "
        f"{r['explore_s']:.3f} | {r['load_s'] + r['explore_s']:.3f} | "
        f"{r['payload_bytes'] / 1e3:.0f} | {r['series_param_ms']:.2f} | "
        f"{r['series_module_ms']:.2f} | {r['to_pandas_ms']:.1f} |\n"
        for r in rows
    )
    a, b = rows[0], rows[-1]
    ratio = (b["load_s"] + b["explore_s"]) / (a["load_s"] + a["explore_s"])
    verdict = "met" if ratio <= 3 else "NOT met"
    return (
        f"Commit {commit()}; {machine('default torch threads')}. A real MLP (32-64-64-10, SGD) "
        "trained with `aw.watch(model, path=...)` watching every step; each file then opened in "
        "a fresh process (median of the repeats): `aw.load_watch`, `aw.explore` (the timeline's "
        "payload), series and a DataFrame.\n\n" + head + body +
        f"\nload + explore at {b['steps']:,} steps / at {a['steps']:,}: {ratio:.2f}x (issue 39's "
        f"target: within 3x: {verdict}).\n"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, nargs="+", default=[1000, 20000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-write", action="store_true", help="print only, leave RESULTS.md")
    ap.add_argument("--results", type=Path, default=RESULTS, help="the results file to update")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for steps in args.steps:
            path = Path(tmp) / f"mlp_{steps}.awwatch"
            train_s = train(steps, path)
            row = {"steps": steps, "train_s": train_s, "mb": path.stat().st_size / 1e6}
            row.update(open_fresh(path, args.repeats))
            rows.append(row)
            print(json.dumps(row), flush=True)
    body = text(rows)
    print(body)
    if not args.no_write:
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        write_section("watch_real", "## A real watch, short and long (bench_watch_real.py)\n\n"
                      + body + f"\nLoad average (1 min) at the end: {load:.2f}.\n",
                      args.results)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
