"""Benchmark: `Stepper.run()` against the autograd engine (`torch.autograd.grad`), one thread.

Run `python benchmarks/bench_stepper.py` (full sizes, writes benchmarks/RESULTS.md) or with
`--tiny` (CI: every graph at toy size in a few seconds; prints the table, writes nothing unless
`--write` is given). Each measurement is the median of repeats in ONE process with
`torch.set_num_threads(1)`:

- engine: `torch.autograd.grad(roots, leaves, retain_graph=True)`;
- stepper: one `Stepper` per graph and keep mode, built once (the plan, reported separately as
  "plan ms"), then `reset()` + `run()` per repeat. `run()` includes the summaries of every edge
  (small ones are batched and flushed before `run()` returns).

RESULTS.md may hold sections from several scripts: each writes only between its own markers
(`<!-- stepper:start -->` ... `<!-- stepper:end -->` here) and keeps the rest of the file.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

import autograd_widget as aw
from autograd_widget.engine.step.stepper import Stepper

sys.path.insert(0, str(Path(__file__).parent))  # run as a script or loaded by path (tests)
from _results import RESULTS, commit, machine, write_section

SECTION = "stepper"


@dataclass
class Case:
    name: str
    build: Callable[[], tuple[torch.Tensor, list[torch.Tensor]]]
    #: Target ratio (stepper / engine) per keep mode; None = no target for that mode.
    targets: dict[str, float | None]


@dataclass
class Row:
    graph: str
    nodes: int
    keep: str
    engine_ms: float
    stepper_ms: float
    reset_ms: float
    plan_ms: float
    target: float | None

    @property
    def ratio(self) -> float:
        return self.stepper_ms / self.engine_ms

    @property
    def met(self) -> str:
        if self.target is None:
            return "-"
        return "yes" if self.ratio <= self.target else "NO"


def mlp(width: int, batch: int) -> Callable:
    def build():
        model = torch.nn.Sequential(
            torch.nn.Linear(width, width),
            torch.nn.ReLU(),
            torch.nn.Linear(width, width),
            torch.nn.ReLU(),
            torch.nn.Linear(width, width),
        )
        x = torch.randn(batch, width)
        loss = model(x).pow(2).mean()
        return loss, list(model.parameters())

    return build


def transformer(layers: int, batch: int, seq: int, d_model: int = 64) -> Callable:
    def build():
        layer = torch.nn.TransformerEncoderLayer(
            d_model, nhead=4, dim_feedforward=2 * d_model, dropout=0.0, batch_first=True
        )
        model = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        x = torch.randn(batch, seq, d_model)
        loss = model(x).pow(2).mean()
        return loss, list(model.parameters())

    return build


def chain(n: int, width: int = 16) -> Callable:
    """x -> n multiplications -> sum: n + 2 nodes in a single line."""

    def build():
        x = torch.randn(width, requires_grad=True)
        y = x
        for _ in range(n):
            y = y * 1.0001
        return y.sum(), [x]

    return build


def fan(n: int, width: int = 16) -> Callable:
    """x -> n independent multiplications -> stack -> sum: n + 3 nodes, n-way fan-out/in."""

    def build():
        x = torch.randn(width, requires_grad=True)
        ys = [x * (1.0 + 1e-4 * i) for i in range(n)]
        return torch.stack(ys).sum(), [x]

    return build


def cases(tiny: bool) -> list[Case]:
    if tiny:
        return [
            Case("MLP 3x16, batch 4", mlp(16, 4), {"tensors": None, "summaries": None}),
            Case(
                "TransformerEncoder 2 layers, d64",
                transformer(2, 2, 4),
                {"tensors": None, "summaries": None},
            ),
            Case("chain 200 nodes", chain(198), {"tensors": None, "summaries": None}),
            Case("fan 200 nodes", fan(197), {"tensors": None, "summaries": None}),
        ]
    return [
        Case("MLP 3x256, batch 64", mlp(256, 64), {"tensors": None, "summaries": 2.0}),
        Case(
            "TransformerEncoder 12 layers, d64 (batch 16, seq 32)",
            transformer(12, 16, 32),
            {"tensors": 1.3, "summaries": 2.0},
        ),
        Case(
            "TransformerEncoder 48 layers, d64 (batch 16, seq 32)",
            transformer(48, 16, 32),
            {"tensors": None, "summaries": 2.0},
        ),
        Case("chain 10k nodes", chain(9998), {"tensors": 1.0, "summaries": 2.0}),
        Case("fan 10k nodes", fan(9997), {"tensors": 1.0, "summaries": 2.0}),
    ]


def measure(case: Case, repeats: int) -> list[Row]:
    """Interleaved repeats (engine, then each keep mode, per round) so that drifting load on a
    shared machine hits all of them alike; the first round is a warm-up and is dropped."""
    torch.manual_seed(0)
    loss, leaves = case.build()
    graph = aw.capture(loss)
    steppers: dict[str, Stepper] = {}
    plan_ms: dict[str, float] = {}
    for keep in case.targets:
        t0 = time.perf_counter()
        steppers[keep] = Stepper(graph, keep=keep)  # type: ignore[arg-type]
        plan_ms[keep] = (time.perf_counter() - t0) * 1e3
    engine: list[float] = []
    runs: dict[str, list[float]] = {k: [] for k in steppers}
    resets: dict[str, list[float]] = {k: [] for k in steppers}
    for _ in range(repeats + 1):
        t0 = time.perf_counter()
        torch.autograd.grad(loss, leaves, retain_graph=True)
        engine.append(time.perf_counter() - t0)
        for keep, s in steppers.items():
            t0 = time.perf_counter()
            s.reset()
            t1 = time.perf_counter()
            s.run()
            runs[keep].append(time.perf_counter() - t1)
            resets[keep].append(t1 - t0)
    want = torch.autograd.grad(loss, leaves, retain_graph=True)
    rows = []
    for keep, s in steppers.items():
        for leaf, w in zip(leaves, want):
            if not torch.allclose(s.grad(leaf), w, rtol=1e-4, atol=1e-6):
                raise AssertionError(f"{case.name}: stepper and engine disagree on a leaf gradient")
        s.close()
        rows.append(
            Row(
                case.name,
                len(graph),
                keep,
                statistics.median(engine[1:]) * 1e3,
                statistics.median(runs[keep][1:]) * 1e3,
                statistics.median(resets[keep][1:]) * 1e3,
                plan_ms[keep],
                case.targets[keep],
            )
        )
    graph.close()
    return rows


def stepper_section(rows: list[Row], repeats: int, argv: list[str], load: str) -> str:
    lines = [
        "## Stepper: `Stepper.run()` vs `torch.autograd.grad`",
        "",
        f"- commit: {commit()}",
        f"- machine: {machine('1 thread')}",
        f"- load average (1 min) before/after: {load} (other processes share the machine; the "
        "interleaved repeats expose engine and stepper to the same load)",
        f"- rerun: `{' '.join(['python benchmarks/bench_stepper.py', *argv])}`",
        f"- method: median of {repeats} interleaved repeats (one warm-up round dropped) in one "
        "process, 1 thread. engine = `torch.autograd.grad(loss, leaves, retain_graph=True)`. "
        'stepper = one `Stepper` per graph and keep mode, plan built once ("plan ms"); per '
        "repeat `reset()` (untimed in the ratio: it frees the previous run's tensors; shown as "
        '"reset ms") then `run()` (timed: every step, every edge summary).',
        "",
        "| graph | nodes | keep | engine ms | stepper `run()` ms | ratio | target | met? "
        "| reset ms | plan ms |",
        "|---|---:|---|---:|---:|---:|---:|---|---:|---:|",
    ]
    for r in rows:
        target = "-" if r.target is None else f"<= {r.target:.1f}x"
        lines.append(
            f"| {r.graph} | {r.nodes} | {r.keep} | {r.engine_ms:.2f} | {r.stepper_ms:.2f} | "
            f"{r.ratio:.2f}x | {target} | {r.met} | {r.reset_ms:.2f} | {r.plan_ms:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="toy sizes, a few seconds (CI)")
    parser.add_argument("--repeats", type=int, default=None, help="repeats per measurement")
    parser.add_argument("--write", action="store_true", help="write RESULTS.md even with --tiny")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    repeats = args.repeats or (3 if args.tiny else 15)
    rows: list[Row] = []
    load0 = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    for case in cases(args.tiny):
        for row in measure(case, repeats):
            rows.append(row)
            print(
                f"{row.graph:55s} {row.nodes:6d} {row.keep:9s} engine {row.engine_ms:8.2f} ms  "
                f"stepper {row.stepper_ms:8.2f} ms  {row.ratio:5.2f}x  target "
                f"{'-' if row.target is None else row.target}  {row.met}",
                flush=True,
            )
    load1 = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    section = stepper_section(rows, repeats, argv, f"{load0:.2f} / {load1:.2f}")
    if not args.tiny or args.write:
        write_section(SECTION, section)
        print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
