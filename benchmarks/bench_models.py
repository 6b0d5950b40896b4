"""Benchmark: the model zoo (tests/zoo/models.py) through capture, explore and the stepper, with
torchviz + Graphviz and torchlens on the same models where they are installed.

Run `python benchmarks/bench_models.py` (the zoo's "large" sizes, a few minutes, writes its
section of benchmarks/RESULTS.md) or with `--tiny` (CI: the zoo's "small" sizes in seconds;
prints the table, writes nothing unless `--write`). Public API only. Per model, in ONE process
with `torch.set_num_threads(1)`, medians over repeats (the first of each series is a warm-up and
is dropped):

- forward: the model's forward under `aw.track(model)` plus its loss (for scale: torchlens
  runs a forward of its own, ours starts from the loss);
- capture: `aw.capture(loss, model=model)` of a fresh forward each repeat (a second capture of
  the same tensors would find torch's Python node wrappers already made);
- explore: `aw.explore(loss, model=model)` of a fresh forward each repeat (capture, folding,
  layout and the payload: the Python side of the first render);
- engine vs stepper: `torch.autograd.grad(loss, params, retain_graph=True)` against one
  `aw.Stepper` per keep mode ("summaries", the default, and "tensors"), `reset()` untimed then
  `run()`, INTERLEAVED per round (engine, summaries, tensors, in an order rotated every round,
  each run starting with nothing of the previous one held: a stepper is `reset()` right after
  its timed `run()`) so load drift hits all alike; the stepper's gradients are checked equal to
  the engine's afterwards;
- torchviz: `make_dot(loss, params)` + `dot -Tsvg` (a subprocess with a timeout);
- torchlens: `torchlens.trace` of the model + loss, `log_backward(loss)` (its backward graph)
  and `draw_backward(svg)`, the nearest thing it has to capturing and drawing the backward graph.

The two comparison tools are benchmark-only (the `bench` extra; Debian's `graphviz` for `dot`)
and run after all our own measurements (torchlens wraps torch functions while it traces). A
column whose tool is absent reads "not installed". RESULTS.md may hold sections from several
scripts: this one writes only between `<!-- models:start -->` and `<!-- models:end -->`.
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

import autograd_widget as aw

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))  # run as a script or loaded by path (tests)
sys.path.insert(0, str(HERE.parent / "tests"))  # the zoo's builders
os.environ.setdefault("HF_HUB_OFFLINE", "1")
from _results import RESULTS, commit, machine, write_section  # noqa: E402
from _timing import interleaved, median_ms  # noqa: E402
from zoo.models import MODELS, SIZES, TRANSFORMERS, Built, WithLoss, forward, params  # noqa: E402

SECTION = "models"
KEEPS = ("summaries", "tensors")
#: Seconds `dot` may run on one graph before it counts as "did not finish".
DOT_TIMEOUT_S = 120.0
#: A comparison tool's run shorter than this is repeated (median of 3); longer ones run once.
TOOL_REPEAT_BELOW_S = 2.0


@dataclass
class Row:
    model: str
    size: str
    nodes: int
    params: int
    forward_ms: float
    capture_ms: float
    explore_ms: float
    engine_ms: float
    stepper_ms: dict[str, float]
    torchviz: str = "not measured"  # "123 ms" or what happened instead
    torchviz_ms: float | None = None
    torchlens: str = "not measured"
    torchlens_ms: float | None = None
    notes: list[str] = field(default_factory=list)

    def ratio(self, keep: str) -> float:
        return self.stepper_ms[keep] / self.engine_ms


def _fresh(name: str, size: str) -> Built:
    torch.manual_seed(0)
    return MODELS[name](size)


def _settle() -> None:
    """Collect garbage before a timed call, so a collection does not land inside it (cheap:
    `main()` freezes what was alive at the start)."""
    gc.collect()


def measure(name: str, size: str, repeats: int) -> Row:
    """Our columns for one zoo model (no comparison tools)."""
    built = _fresh(name, size)
    ps = params(built.model)
    fwd, cap, exp = [], [], []
    nodes = 0
    for _ in range(repeats + 1):
        _settle()
        t0 = time.perf_counter()
        loss = forward(built)
        t1 = time.perf_counter()
        graph = aw.capture(loss, model=built.model)
        t2 = time.perf_counter()
        fwd.append(t1 - t0)
        cap.append(t2 - t1)
        nodes = len(graph.nodes)
        graph.close()
        del loss, graph
    for _ in range(repeats + 1):
        loss = forward(built)
        _settle()
        t0 = time.perf_counter()
        widget = aw.explore(loss, model=built.model)
        exp.append(time.perf_counter() - t0)
        widget.close()
        del loss, widget

    loss = forward(built)
    graph = aw.capture(loss, model=built.model)
    steppers = {keep: aw.Stepper(graph, keep=keep) for keep in KEEPS}
    # Rotated rounds, every run from the same state (a stepper that kept every tensor makes
    # whatever runs next allocate fresh memory: the engine measured 2.8x slower on the ResNet).
    times = interleaved(loss, ps, steppers, repeats)
    want = torch.autograd.grad(loss, ps, retain_graph=True, allow_unused=True)
    for keep, st in steppers.items():
        st.run()
        for p, w in zip(ps, want):
            if w is not None and not torch.equal(st.grad(p), w):
                raise AssertionError(f"{name}: stepper (keep={keep}) and engine disagree")
        st.close()
    graph.close()
    return Row(
        model=name,
        size=size,
        nodes=nodes,
        params=sum(p.numel() for p in ps),
        forward_ms=median_ms(fwd),
        capture_ms=median_ms(cap),
        explore_ms=median_ms(exp),
        engine_ms=median_ms(times["engine"]),
        stepper_ms={keep: median_ms(times[keep]) for keep in KEEPS},
    )


# ------------------------------------------------------------------------- comparison tools
def _have_torchviz() -> bool:
    return importlib.util.find_spec("torchviz") is not None


def _have_torchlens() -> bool:
    return importlib.util.find_spec("torchlens") is not None


def _repeat(run: Callable[[], float]) -> float:
    """Median of 3 runs (seconds) when one is short, else that one run."""
    first = run()
    if first >= TOOL_REPEAT_BELOW_S:
        return first
    return statistics.median([first, run(), run()])


def torchviz_time(name: str, size: str, timeout: float) -> tuple[str, float | None]:
    """torchviz `make_dot` + `dot -Tsvg` on a fresh forward: (text for the table, ms)."""
    if not _have_torchviz():
        return "not installed", None
    if shutil.which("dot") is None:
        return "not installed (no Graphviz `dot`)", None
    from torchviz import make_dot

    built = _fresh(name, size)
    loss = forward(built, track=False)
    named = dict(built.model.named_parameters())
    status: list[str] = []

    def run() -> float:
        t0 = time.perf_counter()
        with warnings.catch_warnings():  # torchviz 0.0.3 compares versions with distutils
            warnings.simplefilter("ignore")
            source = make_dot(loss, params=named).source
        try:
            subprocess.run(
                ["dot", "-Tsvg"], input=source, capture_output=True, text=True,
                timeout=timeout, check=True,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            status.append(f"dot did not finish in {timeout:.0f} s")
        except subprocess.CalledProcessError as e:
            status.append(f"dot failed ({e.returncode})")
        return time.perf_counter() - t0

    try:
        secs = _repeat(run)
    except RecursionError:
        return "RecursionError in make_dot", None
    if status:
        return status[0], None
    return f"{secs * 1e3:.0f}", secs * 1e3


def torchlens_time(name: str, size: str) -> tuple[str, float | None]:
    """torchlens: trace the model + loss, log its backward, draw the backward graph as SVG."""
    if not _have_torchlens():
        return "not installed", None
    if shutil.which("dot") is None:
        return "not installed (no Graphviz `dot`)", None
    import torchlens as tl

    def run() -> float:
        built = _fresh(name, size)
        wrapped = WithLoss(built)
        with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its train-mode and capture disclosures
            t0 = time.perf_counter()
            trace = tl.trace(
                wrapped,
                input_args=list(built.inputs.values()),
                capture=tl.options.CaptureOptions(unwrap_when_done=True),
            )
            loss = trace.reconstruct_output()
            trace.log_backward(loss)
            trace.draw_backward(
                vis_outpath=str(Path(tmp) / "backward"), vis_save_only=True, vis_fileformat="svg"
            )
            return time.perf_counter() - t0

    try:
        secs = _repeat(run)
    except Exception as e:  # a tool failing on a model is a result
        return f"failed: {type(e).__name__}", None
    return f"{secs * 1e3:.0f}", secs * 1e3


# ------------------------------------------------------------------------------ the section
def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def tools() -> str:
    parts = []
    for dist in ("transformers", "torchviz", "torchlens"):
        v = _version(dist)
        parts.append(f"{dist} {v}" if v else f"{dist} not installed")
    dot = "dot not installed"
    if shutil.which("dot"):
        out = subprocess.run(["dot", "-V"], capture_output=True, text=True)
        dot = (out.stderr or out.stdout).strip()
    return "; ".join([*parts, dot])


def _ratio(row: Row, ms: float | None) -> str:
    """A tool's time against ours (forward + explore, the same starting point: a model)."""
    if ms is None:
        return ""
    return f" ({ms / (row.forward_ms + row.explore_ms):.1f}x)"


def table(rows: list[Row]) -> list[str]:
    lines = [
        "| model | size | nodes | params | forward ms | capture ms | explore ms | engine ms "
        "| stepper ms, summaries (ratio) | stepper ms, tensors (ratio) "
        "| torchviz + dot ms | torchlens ms |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.model} | {r.size} | {r.nodes} | {r.params:,} | {r.forward_ms:.1f} "
            f"| {r.capture_ms:.1f} | {r.explore_ms:.1f} | {r.engine_ms:.1f} "
            f"| {r.stepper_ms['summaries']:.1f} ({r.ratio('summaries'):.2f}x) "
            f"| {r.stepper_ms['tensors']:.1f} ({r.ratio('tensors'):.2f}x) "
            f"| {r.torchviz}{_ratio(r, r.torchviz_ms)} | {r.torchlens}{_ratio(r, r.torchlens_ms)} |"
        )
    return lines


def section(rows: list[Row], repeats: int, argv: list[str], load: str) -> str:
    lines = [
        "## Models: the zoo through capture, explore and the stepper",
        "",
        f"- commit: {commit()}",
        f"- machine: {machine()}",
        f"- tools: {tools()}",
        f"- load average (1 min) before/after: {load} (a shared machine: wall times include "
        "waiting for the CPU; engine and stepper repeats are interleaved, so their ratio is "
        "robust to it)",
        f"- rerun: `{' '.join(['python benchmarks/bench_models.py', *argv])}` (the comparison "
        "columns need `pip install -e .[bench]` and Debian `graphviz`; both benchmark-only)",
        f"- method: median of {repeats} repeats (one warm-up dropped) in one process, 1 torch "
        "thread; models from `tests/zoo/models.py` at the given size, random weights, CPU, "
        "float32 (autocast_bf16: bf16 matmuls). forward = the forward under `aw.track` + loss; "
        "capture = `aw.capture(loss, model=...)` and explore = `aw.explore(loss, model=...)`, "
        "each of a fresh forward; engine = `torch.autograd.grad(loss, params, retain_graph="
        "True)`; stepper = `Stepper(graph, keep=...)` `run()` (`reset()` untimed, right after "
        "each run), interleaved with the engine per round in a rotated order; every stepper "
        "gradient checked equal (bit for bit) to the engine's. torchviz = `make_dot(loss, "
        "params)` + `dot -Tsvg`; torchlens = `trace` of "
        "model + loss, `log_backward`, `draw_backward` to SVG (median of 3 when under 2 s, "
        "else one run); the factor beside a tool is its time over ours from the same start "
        "(forward + explore ms).",
        "",
        *table(rows),
    ]
    notes = [f"- {r.model}: {n}" for r in rows for n in r.notes]
    if notes:
        lines += ["", *notes]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="the zoo's small sizes (CI)")
    parser.add_argument("--repeats", type=int, default=None, help="repeats per measurement")
    parser.add_argument("--write", action="store_true", help="write RESULTS.md even with --tiny")
    parser.add_argument("--results", type=Path, default=RESULTS, help="the file to write")
    parser.add_argument("--models", default=None, help="comma-separated subset of the zoo")
    parser.add_argument("--timeout", type=float, default=DOT_TIMEOUT_S, help="dot timeout (s)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    size = SIZES[0] if args.tiny else SIZES[1]
    repeats = args.repeats or (1 if args.tiny else 7)
    names = args.models.split(",") if args.models else list(MODELS)
    if importlib.util.find_spec("transformers") is None:
        names = [n for n in names if n not in TRANSFORMERS]
        print("transformers is not installed: skipping", ", ".join(TRANSFORMERS))
    load0 = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    gc.collect()
    gc.freeze()  # the modules imported so far: out of every later collection
    try:
        rows = run(names, size, repeats, args.timeout)
    finally:
        gc.unfreeze()
    load1 = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    text = section(rows, repeats, argv, f"{load0:.2f} / {load1:.2f}")
    print(text)
    if not args.tiny or args.write:
        write_section(SECTION, text, args.results)
        print(f"wrote {args.results}")
    return 0


def run(names: list[str], size: str, repeats: int, timeout: float) -> list[Row]:
    rows = []
    for name in names:
        row = measure(name, size, repeats)
        rows.append(row)
        print(
            f"{name:14s} {row.nodes:5d} nodes  forward {row.forward_ms:7.1f}  capture "
            f"{row.capture_ms:6.1f}  explore {row.explore_ms:7.1f}  engine {row.engine_ms:7.1f}  "
            + "  ".join(f"{k} {row.stepper_ms[k]:7.1f} ({row.ratio(k):.2f}x)" for k in KEEPS),
            flush=True,
        )
    # The comparison tools last: torchlens wraps torch's functions while it traces.
    for row in rows:
        row.torchviz, row.torchviz_ms = torchviz_time(row.model, size, timeout)
        print(f"{row.model:14s} torchviz + dot: {row.torchviz}", flush=True)
    for row in rows:
        row.torchlens, row.torchlens_ms = torchlens_time(row.model, size)
        print(f"{row.model:14s} torchlens: {row.torchlens}", flush=True)
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
