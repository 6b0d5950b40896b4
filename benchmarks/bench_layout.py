"""Benchmark: the structure-aware layout (issue 16): speed on hard shapes, quality, unfold time.

Run `python benchmarks/bench_layout.py` (full sizes, a few minutes; writes its section of
benchmarks/RESULTS.md) or `--tiny` (CI: toy sizes, prints, writes nothing unless `--write`).

- explore(): `aw.explore(loss, model=...)` end to end on the Python side (capture, folds,
  layout, stepper, payload; no browser), collapse="auto" and "none", median of repeats, on a 10k
  chain, a 10k wide fan, the 10k ladder `sum((x * (i + 1)).sin() ...)`, an RNNCell unrolled 1000
  steps (shared weights), a 5k random DAG with long-range reuse, and a 100k chain.
- quality on those shapes and on the models of bench_scale, every node visible: ours (the
  cluster layout users see: frames, lanes, leaf copies), "flat" (today's layered core before
  this issue: one dummy per layer on every long edge, no frames, no copies) and Graphviz `dot`
  on the same visible graph with the same box sizes and gaps. Crossings are counted as drawn
  (`view.drawn.drawn_crossings`: proper intersections of the polylines, dot's splines sampled),
  edge length is the mean polyline length in box heights, area per node is the bounding box
  over the number of items in squared box heights, aspect is width / height.
- unfold/fold of one module on a GPT-2-size graph (~900 nodes, tests/zoo's GPT-2 config): the
  Python side of `Scene.expand` / `Scene.collapse` (visible graph, layout, state), median.

RESULTS.md may hold sections from several scripts: this one writes only between
`<!-- layout:start -->` and `<!-- layout:end -->`.
"""

from __future__ import annotations

import argparse
import gc
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

import autograd_widget as aw
from autograd_widget.view.drawn import drawn_crossings
from autograd_widget.view.scene import Scene, compute_layout
from autograd_widget.view.visible import visible_graph

sys.path.insert(0, str(Path(__file__).parent))
from _drawing import bezier_polyline, flat_layout
from _results import RESULTS, commit, machine, write_section

SECTION = "layout"
DOT_TIMEOUT_S = 60.0


# ------------------------------------------------------------------------------- the shapes
def chain(n: int) -> tuple[torch.Tensor, nn.Module | None]:
    x = torch.randn(4, requires_grad=True)
    y = x
    for _ in range(n - 2):
        y = y * 1.0001
    return y.sum(), None


def fan(n: int) -> tuple[torch.Tensor, nn.Module | None]:
    ps = [torch.randn(2, requires_grad=True) for _ in range(n // 3)]
    return sum((p * 2).sum() for p in ps), None


def ladder(n: int) -> tuple[torch.Tensor, nn.Module | None]:
    x = torch.randn(4, requires_grad=True)
    return sum((x * (i + 1)).sin() for i in range(n // 3)).sum(), None


def rnn(steps: int) -> tuple[torch.Tensor, nn.Module | None]:
    torch.manual_seed(0)
    cell = nn.RNNCell(8, 16)
    h = torch.zeros(1, 16)
    for _ in range(steps):
        h = cell(torch.randn(1, 8), h)
    return h.sum(), cell


def random_dag(n: int, seed: int = 0) -> tuple[torch.Tensor, nn.Module | None]:
    """Each new value uses the last one and one random earlier one: long-range reuse."""
    rng = np.random.default_rng(seed)
    x = torch.randn(3, requires_grad=True)
    vals = [x * 1.0, x.sin()]
    for _ in range(n // 3):
        vals.append(vals[-1] * 0.5 + vals[int(rng.integers(0, len(vals)))].tanh())
    return vals[-1].sum(), None


def transformer(layers: int) -> tuple[torch.Tensor, nn.Module | None]:
    torch.manual_seed(0)
    block = nn.TransformerEncoderLayer(16, 2, 32, batch_first=True, dropout=0.0)
    model = nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
    with aw.track(model):
        out = model(torch.randn(2, 5, 16))
    return out.sum(), model


class _Cnn(nn.Module):
    def __init__(self, c: int = 8, blocks: int = 4) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, c, 3, padding=1)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU())
            for _ in range(blocks))
        self.head = nn.Linear(c, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stem(x)
        for b in self.blocks:
            h = h + b(h)
        return self.head(h.mean((2, 3)))


def cnn() -> tuple[torch.Tensor, nn.Module | None]:
    torch.manual_seed(0)
    model = _Cnn()
    with aw.track(model):
        out = model(torch.randn(2, 3, 8, 8))
    return out.sum(), model


class _Lstm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.LSTMCell(8, 16)
        self.head = nn.Linear(16, 1)

    def forward(self, xs: torch.Tensor) -> torch.Tensor:
        h = c = xs.new_zeros(xs.shape[1], 16)
        for x in xs:
            h, c = self.cell(x, (h, c))
        return self.head(h)


def lstm(steps: int) -> tuple[torch.Tensor, nn.Module | None]:
    torch.manual_seed(0)
    model = _Lstm()
    with aw.track(model):
        out = model(torch.randn(steps, 2, 8))
    return out.pow(2).mean(), model


@dataclass
class Case:
    name: str
    build: Callable[[], tuple[torch.Tensor, nn.Module | None]]
    speed: bool  # one of the timed shapes


def cases(tiny: bool) -> list[Case]:
    k = 20 if tiny else 1
    return [
        Case("chain 10k", lambda: chain(10_000 // k), True),
        Case("fan 10k", lambda: fan(10_000 // k), True),
        Case("ladder 10k", lambda: ladder(10_000 // k), True),
        Case("RNNCell x1000 (shared weights)", lambda: rnn(1000 // k), True),
        Case("random DAG 5k (long-range reuse)", lambda: random_dag(5000 // k), True),
        Case("chain 100k", lambda: chain(100_000 // (k * 5 if tiny else 1)), True),
        Case("CNN, 4 residual blocks", cnn, False),
        Case("TransformerEncoder 2 layers", lambda: transformer(2), False),
        Case("TransformerEncoder 12 layers", lambda: transformer(2 if tiny else 12), False),
        Case("LSTMCell unrolled 10 steps", lambda: lstm(10), False),
        Case("LSTMCell unrolled 50 steps", lambda: lstm(10 if tiny else 50), False),
    ]


# ------------------------------------------------------------------------------- measures
@dataclass
class Quality:
    crossings: int | None
    edge_length: float
    area_per_node: float
    aspect: float


def polyline_quality(ex: np.ndarray, ey: np.ndarray, ptr: np.ndarray, n: int,
                     bounds: tuple[float, float, float, float], unit: float) -> Quality:
    """Crossings as drawn, mean edge length and area per node in `unit`s (a box height)."""
    try:
        crossings: int | None = drawn_crossings(ex, ey, ptr)
    except ValueError:
        crossings = None
    x = np.asarray(ex, np.float64)
    y = np.asarray(ey, np.float64)
    seg = np.hypot(np.diff(x), np.diff(y))
    length = float(np.nansum(seg)) / max(len(ptr) - 1, 1) / unit
    w, h = bounds[1] - bounds[0], bounds[3] - bounds[2]
    return Quality(crossings, length, w * h / max(n, 1) / unit**2, w / h if h else float("inf"))


def dot_quality(vis, w: np.ndarray, h: np.ndarray, unit: float,
                timeout: float) -> tuple[Quality | None, str]:
    """Graphviz dot on the same visible graph, boxes of the same sizes, gaps alike."""
    if shutil.which("dot") is None:
        return None, "not installed"
    lines = ["digraph G {", "  nodesep=1.0; ranksep=1.4;",
             "  node [shape=box, fixedsize=true, label=\"\"];"]
    lines += [f"  n{j} [width={w[j]:.3f}, height={h[j]:.3f}];" for j in range(vis.n_items)]
    lines += [f"  n{a} -> n{b};" for a, b in zip(vis.edge_src.tolist(), vis.edge_dst.tolist(),
                                                 strict=True)]
    lines.append("}")
    t0 = time.perf_counter()
    try:
        out = subprocess.run(["dot", "-Tplain"], input="\n".join(lines), text=True,
                             capture_output=True, timeout=timeout, check=True).stdout
    except subprocess.TimeoutExpired:
        return None, f"timeout (> {timeout:.0f} s)"
    except subprocess.CalledProcessError as err:
        return None, f"failed ({err.returncode})"
    secs = time.perf_counter() - t0
    xs: list[float] = []
    ys: list[float] = []
    ptr = [0]
    bounds = (0.0, 0.0, 0.0, 0.0)
    for line in out.splitlines():
        tok = line.split()
        if tok and tok[0] == "graph":
            bounds = (0.0, float(tok[2]), 0.0, float(tok[3]))
        elif tok and tok[0] == "edge":
            k = int(tok[3])
            pts = np.asarray(tok[4 : 4 + 2 * k], dtype=np.float64).reshape(k, 2)
            poly = bezier_polyline(pts, samples=8)
            xs += [*poly[:, 0].tolist(), np.nan]
            ys += [*poly[:, 1].tolist(), np.nan]
            ptr.append(len(xs))
    q = polyline_quality(np.asarray(xs), np.asarray(ys), np.asarray(ptr), vis.n_items,
                         bounds, unit)
    return q, f"{secs:.1f} s"


def _median_s(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


@dataclass
class Row:
    name: str
    nodes: int
    explore_auto_s: float | None
    explore_none_s: float | None
    items_auto: int | None
    ours: Quality
    flat: Quality
    dot: Quality | None
    dot_text: str
    frames: int
    copies: int
    lanes: int
    dummies: int
    flat_dummies: int


def measure(case: Case, repeats: int, timeout: float, quality: bool) -> Row:
    loss, model = case.build()
    graph = aw.capture(loss, model=model)
    auto_s = none_s = None
    items = None
    if case.speed:
        def explore(collapse: str) -> aw.AutogradWidget:
            w = aw.explore(loss, model=model, collapse=collapse)
            w.close()
            return w
        auto_s = _median_s(lambda: explore("auto"), repeats)
        none_s = _median_s(lambda: explore("none"), repeats)
        w = aw.explore(loss, model=model, collapse="auto")
        items = len(w.visible)
        w.close()
    vis = visible_graph(graph)
    lay = compute_layout(graph, "TB", vis)
    w_, h_ = lay.width.astype(np.float64), lay.height.astype(np.float64)
    unit = float(np.median(h_)) if len(h_) else 1.0
    ours = polyline_quality(lay.edge_x, lay.edge_y, lay.edge_ptr, vis.n_items, lay.bounds, unit)
    flat = flat_layout(graph, vis, breadth=w_, depth=h_, node_gap=1.0, layer_gap=1.4,
                       dummy_gap=0.6)
    flat_q = polyline_quality(flat.edge_x, flat.edge_y, flat.edge_ptr, vis.n_items,
                              flat.bounds, unit)
    dq, dot_text = (dot_quality(vis, w_, h_, unit, timeout) if quality
                    else (None, "skipped"))
    return Row(case.name, len(graph.nodes), auto_s, none_s, items, ours, flat_q, dq, dot_text,
               len(lay.frames), len(lay.copy_item), lay.n_lanes, lay.n_dummies, flat.n_dummies)


def unfold_times(repeats: int, tiny: bool) -> tuple[int, float, float, float, str]:
    """Python time of Scene.expand / Scene.collapse of one block of a GPT-2 (transformers, 12
    layers, d 32: ~830 nodes): the first expand (nothing cached) and medians after."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import transformers as tf

    torch.manual_seed(0)
    cfg = tf.GPT2Config(vocab_size=128, n_positions=32, n_embd=32, n_layer=2 if tiny else 12,
                        n_head=2, attn_implementation="eager", loss_type="ForCausalLM")
    model = tf.GPT2LMHeadModel(cfg)
    ids = torch.randint(0, 128, (2, 8))
    with aw.track(model):
        out = model(input_ids=ids, labels=ids)
    graph = aw.capture(out.loss, model=model)
    scene = Scene(graph, aw.Stepper(graph), collapse="modules")
    scene.expand("transformer")
    scene.expand("transformer.h")
    target = f"transformer.h.{cfg.n_layer // 2}"
    t0 = time.perf_counter()
    scene.expand(target)
    first = time.perf_counter() - t0
    scene.collapse(target)
    exp, col = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        scene.expand(target)
        exp.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        scene.collapse(target)
        col.append(time.perf_counter() - t0)
    return len(graph.nodes), first, statistics.median(exp), statistics.median(col), target


# ------------------------------------------------------------------------------- report
def _q(q: Quality | None) -> str:
    if q is None:
        return "- | - | - | -"
    c = "too dense" if q.crossings is None else str(q.crossings)
    return f"{c} | {q.edge_length:.1f} | {q.area_per_node:.1f} | {q.aspect:.2f}"


def report(rows: list[Row], unfold: tuple[int, float, float, float, str] | None) -> str:
    lines = [
        "## Layout (issue 16): speed on hard shapes, quality as drawn, unfold",
        "",
        f"- commit: {commit()}",
        f"- machine: {machine()}",
        "- rerun: `python benchmarks/bench_layout.py` (Graphviz `dot` for its columns)",
        "- method: see the module docstring. explore() = `aw.explore(loss, model=...)` then "
        "`close()`, Python side, median; quality with every node visible (collapse=\"none\"), "
        "crossings as drawn, lengths and areas in box heights.",
        "",
        "### explore(), Python side (target <= 0.5 s on the 10k/5k/RNN shapes, <= 3 s on the "
        "100k chain)",
        "",
        "| graph | nodes | auto (items) | none |",
        "|---|---:|---:|---:|",
    ]
    for r in rows:
        if r.explore_auto_s is not None:
            lines.append(f"| {r.name} | {r.nodes} | {r.explore_auto_s:.3f} s ({r.items_auto}) "
                         f"| {r.explore_none_s:.3f} s |")
    lines += [
        "",
        "### Quality, every node visible: ours / flat (before) / Graphviz dot, same boxes",
        "",
        "crossings | mean edge length | area per node | aspect (w/h); frames, leaf copies, "
        "lanes and dummies of ours; dummies of the flat layout.",
        "",
        "| graph | nodes | ours: crossings | length | area | aspect | flat: crossings | length | "
        "area | aspect | dot: crossings | length | area | aspect | dot time | frames | copies | "
        "lanes | dummies (ours / flat) |",
        "|---|---:" + "|---:" * 12 + "|---|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(f"| {r.name} | {r.nodes} | {_q(r.ours)} | {_q(r.flat)} | {_q(r.dot)} | "
                     f"{r.dot_text} | {r.frames} | {r.copies} | {r.lanes} | "
                     f"{r.dummies} / {r.flat_dummies} |")
    if unfold is not None:
        n, first, e, c, target = unfold
        lines += ["", f"### Unfold / fold one module on GPT-2 ({n} nodes; `{target}`; target "
                  "<= 50 ms)", "",
                  f"Python side of `Scene.expand` / `Scene.collapse` (visible graph, layout, "
                  f"state): first expand (nothing cached) {first * 1000:.1f} ms; then, its "
                  f"layout cached, expand {e * 1000:.1f} ms and collapse {c * 1000:.1f} ms "
                  "(medians)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="toy sizes (CI)")
    ap.add_argument("--write", action="store_true", help="write RESULTS.md even with --tiny")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=DOT_TIMEOUT_S)
    ap.add_argument("--no-dot", action="store_true", help="skip Graphviz")
    ap.add_argument("results", nargs="?", default=str(RESULTS))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    rows = []
    for case in cases(args.tiny):
        row = measure(case, 1 if args.tiny else args.repeats, args.timeout, not args.no_dot)
        print(f"{row.name}: ours {_q(row.ours)} | flat {_q(row.flat)} | dot {_q(row.dot)} "
              f"({row.dot_text})", flush=True)
        rows.append(row)
    unfold = unfold_times(args.repeats * 3, args.tiny)
    text = report(rows, unfold)
    print(text)
    if not args.tiny or args.write:
        write_section(SECTION, text, Path(args.results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
