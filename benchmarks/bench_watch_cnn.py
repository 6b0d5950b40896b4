"""Benchmark: what `aw.watch` costs on a resnet18 training step, every=1 and every=10 (issue 40).

resnet18's architecture (7x7 stride-2 stem, max-pool, four stages of two basic blocks, widths
64-512, 1000 classes: 11.7 M parameters) is written out here, random weights, nothing downloaded
(torchvision is not a dependency). A whole training step (forward, backward, SGD) on a batch of
images is timed plain, watched (every=1), and unwatched (the steps `every=10` skips: the
parameters' exact non-finite check, engine/watch/leafcheck.py); `every=10` is (1 watched + 9
unwatched) / 10 plain, from the medians. Interleaved rounds in one process, wall and CPU time;
also each variant's backward CPU time, the check's own CPU time per unwatched step, measured
inside it (its hooks and its end-of-backward read), against the plain step's and the plain
backward's CPU time, which the machine's other load does not swamp, and the check's floor: the
same sums over the same gradients in a tight loop, in the same process.

    python benchmarks/bench_watch_cnn.py             # writes its section of RESULTS.md
    python benchmarks/bench_watch_cnn.py --tiny      # a few seconds, prints only
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _results import RESULTS, commit, machine, write_section

import autograd_widget as aw
from autograd_widget.engine.watch import leafcheck

SECTION = "watch_cnn"
#: (widths, blocks per stage, batch, image side): resnet18, and a toy for CI.
SIZES = {"full": ((64, 128, 256, 512), 2, 8, 112), "tiny": ((4, 8), 1, 2, 16)}


class Block(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.downsample = None
        if stride != 1 or c_in != c_out:
            self.downsample = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False),
                                            nn.BatchNorm2d(c_out))  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + (x if self.downsample is None else self.downsample(x)))


class ResNet(nn.Module):
    """resnet18's layout (torchvision's names: conv1, bn1, layer1..4, fc)."""

    def __init__(self, widths: tuple[int, ...], blocks: int, classes: int = 1000) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, widths[0], 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        c = widths[0]
        for i, w in enumerate(widths):
            stage = [Block(c if b == 0 else w, w, 2 if (b == 0 and i > 0) else 1)
                     for b in range(blocks)]  # fmt: skip
            setattr(self, f"layer{i + 1}", nn.Sequential(*stage))
            c = w
        self.n_stages = len(widths)
        self.fc = nn.Linear(c, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, 2, 1)
        for i in range(self.n_stages):
            y = getattr(self, f"layer{i + 1}")(y)
        return self.fc(F.adaptive_avg_pool2d(y, 1).flatten(1))


class Trainer:
    """One model, one SGD, one batch; `step(block)` is a whole training step."""

    def __init__(self, size: str, seed: int = 0) -> None:
        widths, blocks, batch, side = SIZES[size]
        torch.manual_seed(seed)
        self.model = ResNet(widths, blocks)
        self.x = torch.randn(batch, 3, side, side)
        self.y = torch.randint(0, 1000, (batch,))
        self.opt = torch.optim.SGD(self.model.parameters(), lr=1e-3)

    def step(self, block: Callable[[torch.Tensor], None]) -> None:
        self.opt.zero_grad(set_to_none=True)
        block(F.cross_entropy(self.model(self.x), self.y))
        self.opt.step()


def run(size: str, repeats: int) -> dict[str, Any]:
    """Interleaved medians (ms) of the three variants; the CPU time of each one's backward
    (the unwatched one's `with` block: its check's set-up, hooks, end-of-backward read and
    finish); the check's own CPU time (its hooks and its end-of-backward read, timed inside
    them: engine/watch/leafcheck.py); and its floor: the same plain sums over the plain step's
    gradients in a tight loop, in the same process."""
    tr = Trainer(size)
    every1, unwatched = aw.watch(tr.model), aw.watch(tr.model, every=10**9)
    backward: dict[str, list[float]] = {}
    timing = [False]  # round 0 (and the unwatched watch's step 0) warm up

    def by(w: aw.Watch | None, name: str) -> Callable[[torch.Tensor], None]:
        def block(loss: torch.Tensor) -> None:
            c0 = time.process_time()
            if w is None:
                loss.backward()
            else:
                with w.step(loss):
                    loss.backward()
            if timing[0]:
                backward.setdefault(name, []).append((time.process_time() - c0) * 1e3)

        return block

    names = ("plain", "watch every=1", "watch, unwatched step")
    variants = dict(zip(names, (by(None, names[0]), by(every1, names[1]), by(unwatched, names[2]))))
    tr.step(variants[names[2]])  # its step 0 is watched: every later one is unwatched
    wall: dict[str, list[float]] = {k: [] for k in variants}
    cpu: dict[str, list[float]] = {k: [] for k in variants}
    spent = [0.0]
    real_pre, real_end = leafcheck.LeafCheck._pre, leafcheck.LeafCheck._end

    def timed(fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*a: Any) -> Any:
            t0 = time.process_time()
            try:
                return fn(*a)
            finally:
                spent[0] += time.process_time() - t0

        return wrapper

    check: list[float] = []
    floor: list[float] = []
    leafcheck.LeafCheck._pre = lambda self, k: timed(real_pre(self, k))  # type: ignore[method-assign]
    leafcheck.LeafCheck._end = timed(real_end)  # type: ignore[method-assign]
    try:
        for r in range(repeats + 1):
            timing[0] = r > 0
            for name, block in variants.items():
                spent[0] = 0.0
                w0, c0 = time.perf_counter(), time.process_time()
                tr.step(block)
                w1, c1 = time.perf_counter(), time.process_time()
                if r:  # round 0 warms up
                    wall[name].append((w1 - w0) * 1e3)
                    cpu[name].append((c1 - c0) * 1e3)
                    if name == "watch, unwatched step":
                        check.append(spent[0] * 1e3)
                if name == "plain" and r:
                    grads = [p.grad for p in tr.model.parameters() if p.grad is not None]
                    c0 = time.process_time()
                    [g.sum().item() for g in grads]
                    floor.append((time.process_time() - c0) * 1e3)
    finally:
        leafcheck.LeafCheck._pre, leafcheck.LeafCheck._end = real_pre, real_end  # type: ignore[method-assign]
        every1.close()
        unwatched.close()
    med = {k: (statistics.median(wall[k]), statistics.median(cpu[k])) for k in variants}
    n_params = sum(p.numel() for p in tr.model.parameters())
    return {"median": med, "check_ms": statistics.median(check), "params": n_params,
            "floor_ms": statistics.median(floor),
            "backward_ms": {k: statistics.median(v) for k, v in backward.items()},
            "spread": (min(wall["plain"]), max(wall["plain"]))}  # fmt: skip


def text_of(res: dict[str, Any], size: str, repeats: int, threads: int,
            load: tuple[float, float]) -> str:
    med = res["median"]
    plain_w, plain_c = med["plain"]
    rows = dict(med)
    rows["watch every=10"] = tuple((med["watch every=1"][i] + 9 * med["watch, unwatched step"][i])
                                   / 10 for i in (0, 1))  # fmt: skip
    targets = {"watch every=1": "-", "watch every=10": "<= 1.05x"}
    lines = ["| variant | wall ms | ratio (wall) | cpu ms | ratio (cpu) | target |",
             "|---|---:|---:|---:|---:|---|"]  # fmt: skip
    for k in ("plain", "watch every=1", "watch, unwatched step", "watch every=10"):
        w, c = rows[k]
        lines.append(f"| {k} | {w:.1f} | {w / plain_w:.3f}x | {c:.1f} | {c / plain_c:.3f}x | "
                     f"{targets.get(k, '-')} |")  # fmt: skip
    widths, blocks, batch, side = SIZES[size]
    return (
        f"## aw.watch on a resnet18 training step (bench_watch_cnn.py{' --tiny' if size == 'tiny' else ''})\n\n"  # noqa: E501
        f"Commit {commit()}; {machine(f'{threads} torch threads')}. resnet18's layout written out "
        f"(widths {list(widths)}, {blocks} blocks per stage; {res['params'] / 1e6:.1f} M "
        f"parameters; random weights), batch {batch} of {side}x{side} images, whole training "
        f"step (forward, backward, SGD); interleaved medians of {repeats} rounds (warm-up "
        f"dropped); plain wall times ranged {res['spread'][0]:.0f}-{res['spread'][1]:.0f} ms; "
        f"load average (1 min) before/after: {load[0]:.2f} / {load[1]:.2f}.\n\n"
        + "\n".join(lines) + "\n\n"
        f"Backward CPU time (the `with` block for the watch): plain "
        f"{res['backward_ms']['plain']:.1f} ms, unwatched step "
        f"{res['backward_ms']['watch, unwatched step']:.1f} ms.\n\n"
        f"The unwatched steps' check (engine/watch/leafcheck.py: the leaves noted in the hooks, "
        f"their `.grad` summed once at the end of the backward), its own CPU time measured "
        f"inside it: {res['check_ms']:.2f} ms per step, {100 * res['check_ms'] / plain_c:.2f}% "
        f"of the plain step's CPU time, {100 * res['check_ms'] / res['backward_ms']['plain']:.2f}% "
        f"of the plain backward's. Its floor, the same sums over the same gradients in a tight "
        f"loop in this process: {res['floor_ms']:.2f} ms "
        f"({100 * res['floor_ms'] / res['backward_ms']['plain']:.2f}% of the plain backward). "
        "One read of every parameter gradient: an exact check cannot cost less on a CPU.\n\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="toy sizes, a few seconds (CI)")
    parser.add_argument("--repeats", type=int, default=None, help="rounds (after a warm-up)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument("--write", action="store_true", help="write RESULTS.md even with --tiny")
    parser.add_argument("--results", type=Path, default=RESULTS, help="the file to write")
    args = parser.parse_args(argv)
    size = "tiny" if args.tiny else "full"
    repeats = args.repeats or (1 if args.tiny else 10)
    threads = torch.get_num_threads()
    torch.set_num_threads(args.threads)
    before = os.getloadavg()[0]
    try:
        res = run(size, repeats)
    finally:
        torch.set_num_threads(threads)
    text = text_of(res, size, repeats, args.threads, (before, os.getloadavg()[0]))
    print(text)
    if not args.tiny or args.write:
        write_section(SECTION, text, args.results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
