"""Benchmark: what `aw.record` costs on top of the user's own backward (issue 19, "Speed").

Run `python benchmarks/bench_record.py` (the zoo's large sizes, a minute or two, writes its
section of benchmarks/RESULTS.md) or with `--tiny` (CI: small sizes, prints the table, writes
nothing unless `--write`). Public API only, `torch.set_num_threads(1)`.

Per zoo model, INTERLEAVED rounds in a rotated order (benchmarks/_timing.py), medians with the
warm-up round dropped: the engine alone (`torch.autograd.grad(loss, params, retain_graph=True)`)
against the SAME call inside `with aw.record(loss, keep="summaries"):`, the whole block timed:
capture, hook registration, the hooked backward, hook removal and building the recording. Every
recorded gradient is checked bit-equal to the engine's. The phases of one extra recording are
timed apart (capture+setup, registering, backward, removing+filling) to show where time goes.
RESULTS.md may hold sections from several scripts: this one writes only between
`<!-- record:start -->` and `<!-- record:end -->`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch

import autograd_widget as aw

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))  # run as a script or loaded by path (tests)
sys.path.insert(0, str(HERE.parent / "tests"))  # the zoo's builders
os.environ.setdefault("HF_HUB_OFFLINE", "1")
from _results import RESULTS, commit, machine, write_section  # noqa: E402
from _timing import interleaved, median_ms  # noqa: E402
from zoo.models import MODELS, SIZES, TRANSFORMERS, forward, params  # noqa: E402

SECTION = "record"
#: Issue 19's target: the recorded backward at most this many times the plain one.
TARGET = 1.5
#: What the table does not show (separate runs, same machine, 1 thread).
NOTES = [
    "Notes: the target is NOT met. Where the time goes (vit large, 362 nodes, engine ~3.9 ms, "
    "on a quiet machine: 4.2x): capture ~1.2 ms, registering 2 hooks per node ~1.4 ms, the "
    "hooked backward ~9.9 ms, removing the hooks ~0.3 ms, building the records ~1.7 ms. The "
    "hooks themselves cost ~1 us per node with no-op bodies (2.91 against 2.55 ms); with the "
    "summaries switched off (`SummaryStore.add` a no-op) the hooked backward drops from ~25 to "
    "~10 ms under load: the full summaries of the large gradients (`summarize_one`: aminmax, "
    "sum, dot and the norm, 13-19 us each at 1k-16k elements against 1.5-2.5 us for the norm "
    "alone) are most of it. A stepper's store defers min/max/mean/std to a replay; a recording "
    "cannot replay the engine, so it computes them while the gradient is alive.",
    "Why 1.5x is out of reach for these models on this CPU: their whole backward is 3-9 ms "
    "(~10 us per node), while the block's fixed costs alone, capturing the graph and "
    "registering a pre- and a post-hook on every node, then building the records (vit: "
    "1.5 + 1.4 + 1.8 ms), are already more than the 0.5x the target leaves, before any "
    "gradient is summarised; each large gradient's summary is a few kernel launches, "
    "comparable to the node's own work.",
]


class Recorded:
    """`run()`: the engine call inside `aw.record` (what `interleaved` times)."""

    def __init__(self, loss: torch.Tensor, ps: list[torch.Tensor], keep: str | int) -> None:
        self.loss, self.ps, self.keep = loss, ps, keep
        self.grads: tuple = ()
        self.recording: aw.Recording | None = None

    def run(self) -> None:
        with aw.record(self.loss, keep=self.keep) as rec:
            self.grads = torch.autograd.grad(self.loss, self.ps, retain_graph=True)
        self.recording = rec

    def reset(self) -> None:
        """Nothing to undo: every recording is separate."""


def phases(loss: torch.Tensor, ps: list[torch.Tensor]) -> dict[str, float]:
    """Milliseconds of each phase of one recording (capture+setup, hooks on, backward, finish)."""
    t0 = time.perf_counter()
    rec = aw.record(loss)
    t1 = time.perf_counter()
    rec.__enter__()
    t2 = time.perf_counter()
    torch.autograd.grad(loss, ps, retain_graph=True)
    t3 = time.perf_counter()
    rec.__exit__(None, None, None)
    t4 = time.perf_counter()
    return {
        "capture": (t1 - t0) * 1e3, "hooks": (t2 - t1) * 1e3, "backward": (t3 - t2) * 1e3,
        "finish": (t4 - t3) * 1e3,
    }  # fmt: skip


def measure(name: str, size: str, repeats: int) -> dict:
    torch.manual_seed(0)
    built = MODELS[name](size)
    loss = forward(built, track=False)
    ps = params(built.model)
    rec = Recorded(loss, ps, "summaries")
    times = interleaved(loss, ps, {"record": rec}, repeats)
    engine = torch.autograd.grad(loss, ps, retain_graph=True)
    for a, b in zip(engine, rec.grads):
        assert torch.equal(a, b), f"{name}: a recorded gradient differs from the engine's"
    assert rec.recording is not None and rec.recording.warnings == []
    ph = [phases(loss, ps) for _ in range(3)]
    return {
        "name": f"{name} ({size})",
        "nodes": len(rec.recording.graph.nodes),
        "engine": median_ms(times["engine"]),
        "record": median_ms(times["record"]),
        "phases": {k: sorted(p[k] for p in ph)[1] for k in ph[0]},
    }


def table(rows: list[dict]) -> str:
    lines = [
        "| model | nodes | engine ms | record ms | ratio | capture+setup | hooks on | hooked "
        "backward | finish |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        p = r["phases"]
        lines.append(
            f"| {r['name']} | {r['nodes']} | {r['engine']:.2f} | {r['record']:.2f} | "
            f"{r['record'] / r['engine']:.2f}x | {p['capture']:.2f} | {p['hooks']:.2f} | "
            f"{p['backward']:.2f} | {p['finish']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="small sizes (CI)")
    parser.add_argument("--repeats", type=int, default=None, help="rounds per model")
    parser.add_argument("--write", action="store_true", help="write RESULTS.md even with --tiny")
    parser.add_argument("--results", type=Path, default=RESULTS, help="the file to write")
    parser.add_argument("--models", default=None, help="comma-separated zoo subset")
    args = parser.parse_args(argv)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        if args.models is not None:
            names = [n for n in args.models.split(",") if n]
        else:
            names = list(MODELS)
            try:
                import transformers  # noqa: F401
            except ImportError:
                names = [n for n in names if n not in TRANSFORMERS]
        size = SIZES[0] if args.tiny else SIZES[1]
        repeats = args.repeats or (1 if args.tiny else 11)
        rows = []
        load = os.getloadavg()
        for name in names:
            rows.append(measure(name, size, repeats))
            print(table(rows[-1:]).splitlines()[-1], flush=True)
    finally:
        torch.set_num_threads(threads)
    ratios = [r["record"] / r["engine"] for r in rows]
    met = sum(x <= TARGET for x in ratios)
    text = (
        f"## aw.record overhead (bench_record.py{' --tiny' if args.tiny else ''})\n\n"
        f"Commit {commit()}; {machine()}. Whole `with aw.record(loss):` block around "
        f"`torch.autograd.grad(loss, params, retain_graph=True)` against that call alone, "
        f"interleaved medians of {repeats} rounds (warm-up dropped); phases in ms from "
        "separate runs (median of 3). Target: <= "
        f"{TARGET}x; met on {met} of {len(rows)} models. Load average (1 min) before/after: "
        f"{load[0]:.2f} / {os.getloadavg()[0]:.2f}.\n\n" + table(rows) + "\n"
        + "".join(f"{n}\n\n" for n in NOTES)
    )
    print(text)
    if not args.tiny or args.write:
        write_section(SECTION, text, args.results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
