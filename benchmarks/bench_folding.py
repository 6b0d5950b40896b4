"""Benchmark: collapse="auto"'s fold choice (`autofold.choose_folds`) on models and big shapes.

Run `python benchmarks/bench_folding.py` (writes the "folding" section of benchmarks/RESULTS.md)
or `--tiny` (toy sizes, prints only unless `--write`). Per graph, the best of a few repeats in
one process, one torch thread:

- repeats ms: `repeats.find_repeats` + `visible.fold_keys` (what `Scene.fold_index` does; the
  "repeats" mode pays it too);
- select ms: the rest of `choose_folds` in the default drawing (`fitrule.default_viewport()`,
  orientation="auto": the candidates measured by their layout, both directions, repeated
  subgraphs outside modules), given the runs;
- items, fits, direction: what the first render shows, whether it is whole and legible there.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

import autograd_widget as aw
from autograd_widget.view import modules
from autograd_widget.view.autofold import choose_folds
from autograd_widget.view.fitrule import default_viewport
from autograd_widget.view.repeats import find_repeats
from autograd_widget.view.visible import fold_keys

sys.path.insert(0, str(Path(__file__).parent))  # run as a script or loaded by path (tests)
from _results import RESULTS, commit, machine, write_section

SECTION = "folding"


class Block(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
                   for z in self.qkv(self.ln1(x)).split(d, dim=2))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        att = att.masked_fill(torch.tril(torch.ones(t, t)) == 0, float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    """GPT-2-like: embeddings, `n` blocks (`uneven`: every block a different width), tied head."""

    def __init__(self, n: int, uneven: bool = False, d: int = 32, vocab: int = 50) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(8, d)
        self.h = nn.ModuleList([Block(d, 2 if uneven and i % 2 else 4) for i in range(n)])
        self.extra = nn.ModuleList([nn.Linear(d, d) for _ in range(n)]) if uneven else None
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for i, block in enumerate(self.h):
            x = block(x)
            if self.extra is not None and i % 3 == 0:
                x = self.extra[i](x)
        return self.lm_head(self.ln_f(x))


def gpt(n: int, uneven: bool = False) -> aw.BackwardGraph:
    torch.manual_seed(0)
    model = GPT(n, uneven)
    with aw.track(model):
        out = model(torch.randint(0, 50, (2, 8)))
    return aw.capture(out.pow(2).mean(), model=model)


def ladder(n: int) -> aw.BackwardGraph:
    x = torch.randn(3, requires_grad=True)
    return aw.capture(sum((x * (i + 1)).sin() for i in range(n)).sum())


def chain(n: int) -> aw.BackwardGraph:
    y = x = torch.randn(3, requires_grad=True)
    for _ in range(n):
        y = y * 1.0001
    return aw.capture(y.sum() + x.sum())


def rnn(n: int) -> aw.BackwardGraph:
    cell, h = nn.RNNCell(8, 8), torch.zeros(2, 8)
    xs = torch.randn(n, 2, 8)
    for t in range(n):
        h = torch.tanh(xs[t] @ cell.weight_ih.t() + h @ cell.weight_hh.t() + cell.bias_ih)
    return aw.capture(h.sum())


def random_dag(n: int) -> aw.BackwardGraph:
    rng = random.Random(0)
    vals = [torch.randn(4, requires_grad=True) for _ in range(20)]
    ops = [torch.sin, torch.cos, torch.tanh, torch.exp]
    while len(vals) < n:
        a = rng.choice(vals[-50:]) if rng.random() < 0.8 else rng.choice(vals)
        b = rng.choice(vals)
        vals.append(rng.choice(ops)(a) + b * 0.5 if rng.random() < 0.5 else rng.choice(ops)(a))
    return aw.capture(sum(v.sum() for v in vals[-30:]))


def cases(tiny: bool) -> list[tuple[str, Callable[[], aw.BackwardGraph]]]:
    k = 10 if tiny else 1
    return [
        ("GPT-2-like, 14 blocks", lambda: gpt(14 // (7 if tiny else 1))),
        ("GPT-2-like, 14 uneven blocks", lambda: gpt(14 // (7 if tiny else 1), True)),
        ("GPT-2-like, 190 blocks", lambda: gpt(190 // k)),
        ("GPT-2-like, 190 uneven blocks", lambda: gpt(190 // k, True)),
        ("ladder sum((x*(i+1)).sin()) x3333", lambda: ladder(3333 // k)),
        ("chain x10000", lambda: chain(10000 // k)),
        ("RNN cell x1000, shared weights", lambda: rnn(1000 // k)),
        ("random DAG", lambda: random_dag(5000 // k)),
    ]


def measure(graph: aw.BackwardGraph, repeats: int) -> tuple[float, float, object]:
    best_r = best_s = math.inf
    plan = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        runs = fold_keys(find_repeats(graph), modules.module_paths(graph))
        t1 = time.perf_counter()
        plan = choose_folds(graph, lambda runs=runs: runs, default_viewport())
        t2 = time.perf_counter()
        best_r, best_s = min(best_r, t1 - t0), min(best_s, t2 - t1)
    return best_r * 1e3, best_s * 1e3, plan


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print the table; write RESULTS.md unless --tiny without --write."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="toy sizes (seconds)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="write RESULTS.md even with --tiny")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rows = ["| graph | nodes | repeats ms | select ms | items | fits | direction | folds |",
            "|---|---|---|---|---|---|---|---|"]
    for name, make in cases(args.tiny):
        g = make()
        rep, sel, plan = measure(g, args.repeats)
        keys = [k if len(k) < 60 else k[:57] + "…" for k in plan.folds]
        folds = "; ".join(keys[:2]) + (f" (+{len(keys) - 2} more)" if len(keys) > 2 else "")
        folds = folds or "-"
        rows.append(f"| {name} | {len(g)} | {rep:.1f} | {sel:.1f} | {plan.items} | "
                    f"{'yes' if plan.fits else 'no'} | {plan.orientation} | {folds} |")
        print(rows[-1], flush=True)
    body = (f"## collapse=\"auto\" fold choice (default drawing {default_viewport()})\n\n"
            f"commit {commit()}; {machine()}\n\n"
            + "\n".join(rows) + "\n")
    if args.write or not args.tiny:
        write_section(SECTION, body, args.results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
