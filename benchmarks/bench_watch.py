"""Benchmark: what `aw.watch` (and `aw.record`) cost on a whole training step (issue 31).

Run `python benchmarks/bench_watch.py` (the GPT-2-like setting of issue 31: a transformers
`GPT2Config` with 4 layers, d 256, 8 heads, vocab 5000; batch 8, seq 128; forward + backward +
AdamW; CPU, 2 threads; several minutes; writes its section of benchmarks/RESULTS.md) or with
`--tiny` (CI: a 1-layer d 32 model, prints the tables, writes nothing unless `--write`).

Method: every variant is one whole training step of the SAME model and optimizer (zero_grad,
forward, the backward inside the variant's block, AdamW step), in INTERLEAVED rounds in a rotated
order within one process, a garbage collection before each call; medians with the warm-up round
dropped, of wall time and of this process's CPU time (the machine is shared: CPU time is less
sensitive to other processes than wall time; both are shown). Variants:
- `plain`: no watch;
- `watch every=1`: every step watched (the lean path, engine/watch/lean.py);
- `watch, unwatched step`: a step of a watch with `every` > 1 that is not watched (its parameter
  check only). `every=10` is then (1 watched + 9 unwatched) / (10 plain), from these medians;
- `record summaries`: `with aw.record(loss, model=model): loss.backward()` (full summaries);
- the ideas of issue 31, each a variant of the watched step (`--ideas`): the post-hooks with no
  norm at all; a pre-hook on every node too (as `aw.record` has); hooks on every AccumulateGrad
  node; no norm taken from the input of rearranging nodes (view, transpose...); norms as the
  square root of a dot product (`lean.set_kernel("dot")`) instead of `vector_norm`; NaN/Inf
  counted for every gradient.
Every watched gradient is checked bit-equal to a plain step's from the same state.

Memory: bytes per edge per watched step in memory (the step's arrays and record, beyond the one
copy of the structure) and in the file. Loading: a synthetic watch of 10,000 steps over a real
~700-node graph (random norms), `aw.load_watch` timed.

RESULTS.md may hold sections from several scripts: this one writes only between
`<!-- watch:start -->` and `<!-- watch:end -->`.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

import autograd_widget as aw
from autograd_widget.engine.watch import leafcheck, lean
from autograd_widget.engine.watch import watch as watch_module
from autograd_widget.engine.watch.trainstep import TrainingStep

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))  # run as a script or loaded by path (tests)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
from _results import RESULTS, commit, machine, write_section  # noqa: E402

SECTION = "watch"
#: What the measurements showed (the same in both runs reported; rerun to check).
NOTES = [
    "Kept (engine/watch/lean.py): one post-hook per node and none on AccumulateGrad nodes "
    "(their place is inferred: right after their producer; a parameter's norm is its one "
    "edge's, a pre-hook only for a parameter fed by several edges or carrying tensor hooks); "
    "norms staged and read once per step (on CPU each is read at once: no device to wait for, "
    "and a non-finite one is then counted and its birth read while the saved values exist); "
    "NaN/Inf counted only where a norm is not finite (counting them for every gradient is the "
    "`NaN/Inf counted always` row: 2.2x and 3.7x in the two runs); a rearranging node's norm "
    "(view, transpose, slice) "
    "taken from its input; torch's `vector_norm` rather than a dot product: MKL's dot is ~3x "
    "faster per MB in isolation but its result depends on memory alignment and thread count, and "
    "on the whole step the difference is inside the noise.",
    "Not available on the pinned torch 2.13: `torch.autograd.graph.node_creation_hook` (2.15); "
    "the set-up it could save is measured above. `queue_callback` is not used: the step block's "
    "exit runs after the backward already.",
    "`aw.record` keeps its design (a pre- and a post-hook per node, full summaries): its cost on "
    "this step is the four passes of each large gradient's summary (aminmax, sum, dot, norm), "
    "not the hooks; dropping its pre-hooks measured ~10% of its overhead on the zoo's vit "
    "(24.0 -> 21.6 ms CPU, engine 4.4 ms) but would lose `seconds` and the failing node's "
    "received gradients, which its tests check.",
    "CUDA: no GPU in this session: the device path (norms staged, one transfer per step) is not "
    "measured here.",
]
TARGETS = {"watch every=1": 1.30, "watch every=10": 1.05, "record summaries": 1.5}
#: The setting of issue 31 (full) and the CI one (tiny): (layers, d, heads, vocab, batch, seq).
CONFIGS = {"full": (4, 256, 8, 5000, 8, 128), "tiny": (1, 32, 2, 100, 2, 8)}


def build(size: str, seed: int = 0) -> tuple[torch.nn.Module, torch.Tensor]:
    """The GPT-2-like model (a transformers config, random weights: nothing downloaded) and
    a batch."""
    import transformers

    transformers.logging.set_verbosity_error()
    layers, d, heads, vocab, batch, seq = CONFIGS[size]
    torch.manual_seed(seed)
    cfg = transformers.GPT2Config(vocab_size=vocab, n_positions=seq, n_embd=d, n_layer=layers,
                                  n_head=heads, bos_token_id=0, eos_token_id=0,
                                  attn_implementation="eager")  # fmt: skip
    model = transformers.GPT2LMHeadModel(cfg)
    ids = torch.randint(0, vocab, (batch, seq))
    return model, ids


# ------------------------------------------------------------------------------ the ideas
class HooksOnly(lean.LeanPass):
    """The post-hooks, recording the order only: no norm."""

    def node_done(self, i: int, sent: Any, got: Any) -> None:
        self._check_task()
        self.order.append(i)


class WithPreHooks(lean.LeanPass):
    """Also a no-op pre-hook on every hooked node (what `aw.record` registers)."""

    def start(self) -> None:
        super().start()
        for i, fn in enumerate(self.fns):
            if not self.s.accumulate[i]:
                self.handles.append(fn.register_prehook(lambda grads: None))


class AccumulateHooked(lean.LeanPass):
    """A hook on every AccumulateGrad node (each parameter's norm taken there)."""

    def start(self) -> None:
        s, fns = self.s, self.fns
        for k, i in enumerate(s.param_nodes):
            self.param_hooked[k] = i
            self.handles.append(fns[i].register_prehook(self._acc_pre(i, k)))
        for i, fn in enumerate(fns):
            if not s.accumulate[i]:
                self.handles.append(fn.register_hook(self._post(i)))


class NoRearranging(lean.LeanPass):
    """Every edge normed, also where a node only rearranges its input."""

    def __init__(self, structure: Any, fns: Any, **kw: Any) -> None:
        s = copy.copy(structure)
        s.rearranging = [-1] * len(structure.names)
        super().__init__(s, fns, **kw)


class CountEverything(lean.LeanPass):
    """NaN and Inf counted for every gradient, not only where the norm is not finite."""

    def node_done(self, i: int, sent: Any, got: Any) -> None:
        super().node_done(i, sent, got)
        for t in sent:
            if t is not None:
                torch.stack((torch.isnan(t).sum(), torch.isinf(t).sum())).tolist()


@contextlib.contextmanager
def variant(cls: type | None = None, kernel: str | None = None) -> Iterator[None]:
    """Make `aw.watch` use `cls` for its watched steps and/or `kernel` for CPU norms, inside."""
    old_cls, old_kernel = watch_module.LeanPass, None
    if cls is not None:
        watch_module.LeanPass = cls  # type: ignore[misc]
    if kernel is not None:
        old_kernel = lean.set_kernel(kernel)
    try:
        yield
    finally:
        watch_module.LeanPass = old_cls  # type: ignore[misc]
        if old_kernel is not None:
            lean.set_kernel(old_kernel)


IDEAS: dict[str, tuple[type | None, str | None]] = {
    "idea: hooks only, no norm": (HooksOnly, None),
    "idea: + a pre-hook per node": (WithPreHooks, None),
    "idea: + hooks on AccumulateGrad": (AccumulateHooked, None),
    "idea: no norm from the input": (NoRearranging, None),
    "idea: norms by dot product": (None, "dot"),
    "idea: NaN/Inf counted always": (CountEverything, None),
}


# ------------------------------------------------------------------------------ timing
class Trainer:
    """One model, one AdamW, the batch; `step(backward_block)` is one whole training step."""

    def __init__(self, size: str) -> None:
        self.model, self.ids = build(size)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-4)

    def step(self, block: Callable[[torch.Tensor], Any]) -> None:
        self.opt.zero_grad(set_to_none=True)
        loss = self.model(input_ids=self.ids, labels=self.ids).loss
        block(loss)
        self.opt.step()


def calls(tr: Trainer, ideas: bool) -> tuple[dict[str, Callable[[], None]], aw.Watch]:
    """The variants as zero-argument calls (see the module docstring)."""

    def plain(loss: torch.Tensor) -> None:
        loss.backward()

    every1 = aw.watch(tr.model)
    unwatched = aw.watch(tr.model, every=10**9)

    def watched_by(w: aw.Watch) -> Callable[[torch.Tensor], None]:
        def block(loss: torch.Tensor) -> None:
            with w.step(loss):
                loss.backward()

        return block

    def record(loss: torch.Tensor) -> None:
        with aw.record(loss, model=tr.model):
            loss.backward()

    out: dict[str, Callable[[], None]] = {
        "plain": lambda: tr.step(plain),
        "watch every=1": lambda: tr.step(watched_by(every1)),
        "watch, unwatched step": lambda: tr.step(watched_by(unwatched)),
        "record summaries": lambda: tr.step(record),
    }
    tr.step(watched_by(unwatched))  # its step 0 (watched): every later one is unwatched
    if ideas:
        for name, (cls, kernel) in IDEAS.items():
            w = aw.watch(tr.model)

            def run(w: aw.Watch = w, cls: type | None = cls, kernel: str | None = kernel) -> None:
                with variant(cls, kernel):
                    tr.step(watched_by(w))

            out[name] = run
    return out, every1


def interleaved(fns: dict[str, Callable[[], None]], repeats: int) -> dict[str, list[tuple]]:
    """(wall s, cpu s) per round of each call, `repeats + 1` rotated rounds."""
    times: dict[str, list[tuple]] = {k: [] for k in fns}
    order = list(fns)
    for i in range(repeats + 1):
        for k in order[i % len(order):] + order[: i % len(order)]:  # fmt: skip
            gc.collect()
            w0, c0 = time.perf_counter(), time.process_time()
            fns[k]()
            times[k].append((time.perf_counter() - w0, time.process_time() - c0))
    return times


def med(xs: list[tuple], j: int) -> float:
    vals = [x[j] for x in (xs[1:] if len(xs) > 1 else xs)]
    return statistics.median(vals)


def check_bit_equal(size: str) -> int:
    """A watched step's gradients against a plain step's from the same state: bit-equal."""
    tr = Trainer(size)
    state = copy.deepcopy(tr.model.state_dict())
    torch.manual_seed(1)  # the same dropout masks in both forwards
    loss = tr.model(input_ids=tr.ids, labels=tr.ids).loss
    loss.backward()
    plain = [p.grad.clone() for p in tr.model.parameters()]
    tr.model.load_state_dict(state)
    tr.model.zero_grad(set_to_none=True)
    w = aw.watch(tr.model)
    torch.manual_seed(1)
    loss = tr.model(input_ids=tr.ids, labels=tr.ids).loss
    with w.step(loss):
        loss.backward()
    for a, p in zip(plain, tr.model.parameters()):
        assert torch.equal(a.view(-1).view(torch.int32), p.grad.view(-1).view(torch.int32))
    assert w.warnings == [], w.warnings
    return len(w.structures[0].edge_ids)


# ------------------------------------------------------------------------------ memory, load
def memory_per_edge(w: aw.Watch, tmp: Path) -> tuple[float, float, int]:
    """(bytes per edge per watched step in memory, in the file, edges) of watch `w`."""
    st = next(s for s in w.records if s.watched)
    arrays = sum(a.nbytes for a in (st.order, st.edge_norms, st.param_norms, st.slot_norms))
    record = sys.getsizeof(st) + sys.getsizeof(st.__dict__) + 4 * 112  # 4 ndarray headers
    extra = sum(sys.getsizeof(d) for d in (st.nonfinite, st.slot_nonfinite, st.births))
    edges = len(w.structures[st.structure or 0].edge_ids)
    path = w.save(tmp / "mem.awwatch")
    from autograd_widget.engine.watch import awwatch

    file_bytes = len(awwatch.step_record(st))
    del path
    return (arrays + record + extra) / edges, file_bytes / edges, edges


def synthetic_watch(nodes_wanted: int, steps: int, tmp: Path) -> tuple[Path, int, int]:
    """A watch of `steps` steps over a real graph of about `nodes_wanted` nodes (a GPT-2 config
    sized to it), random norms; saved. Returns (path, nodes, edges)."""
    import transformers

    transformers.logging.set_verbosity_error()
    layers = max(1, round(nodes_wanted / 70))
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=64, n_positions=8, n_embd=16, n_layer=layers,
                                  n_head=2, attn_implementation="eager")  # fmt: skip
    model = transformers.GPT2LMHeadModel(cfg)
    ids = torch.randint(0, 64, (1, 8))
    w = aw.watch(model)
    loss = model(input_ids=ids, labels=ids).loss
    with w.step(loss):
        loss.backward()
    first = w.records[0]
    s = w.structures[0]
    rng = np.random.default_rng(0)
    w.records = [synthetic_step(k, s, first.order, rng) for k in range(steps)]
    path = w.save(tmp / "synthetic.awwatch")
    return path, len(s.names), len(s.edge_ids)


def synthetic_step(k: int, s: Any, order: np.ndarray, rng: np.random.Generator) -> TrainingStep:
    """Watched step `k` of structure `s` with random norms, as the lean hooks lay them out
    (engine/watch/lean.py): a parameter's norm is its one edge's (random only for a parameter
    fed by no single edge, as a tied weight's pre-hook reads it)."""
    edges = rng.random(len(s.edge_ids), dtype=np.float32)
    params = rng.random(len(s.params), dtype=np.float32)
    pe = np.asarray(s.param_edge)
    params[pe >= 0] = edges[pe[pe >= 0]]
    return TrainingStep(k, True, float(rng.random()), structure=0, order=order,
                        edge_norms=edges, param_norms=params,
                        slot_norms=rng.random(len(s.extra), dtype=np.float32))  # fmt: skip


def _rss() -> int:
    """This process's resident memory in bytes (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def long_run(nodes_wanted: int, steps: int, tmp: Path) -> dict[str, float]:
    """Issue 39's long-run figures: a watch of `steps` steps over a real graph of about
    `nodes_wanted` nodes (synthetic norms, `synthetic_step`) written step by step through the
    project's own `Writer` (format 2.0: tiles), then bytes per edge-step on disk, the time and
    memory `aw.load_watch` adds, then `aw.explore` (the timeline's bands) and a zoom into 200
    steps, and `series` of an edge, a parameter, the whole model (a column of its own:
    engine/watch/awmodules.py) and a block of 12 parameters (summed from their columns)."""
    import transformers

    from autograd_widget.engine.watch import awwatch
    from autograd_widget.wire.protocol import dispatch

    transformers.logging.set_verbosity_error()
    layers = max(1, round(nodes_wanted / 70))
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=64, n_positions=8, n_embd=16, n_layer=layers,
                                  n_head=2, attn_implementation="eager")  # fmt: skip
    model = transformers.GPT2LMHeadModel(cfg)
    ids = torch.randint(0, 64, (1, 8))
    w = aw.watch(model)
    loss = model(input_ids=ids, labels=ids).loss
    with w.step(loss):
        loss.backward()
    order, s = w.records[0].order, w.structures[0]
    del w, model, loss
    rng = np.random.default_rng(0)
    path = tmp / f"long_{steps}.awwatch"
    writer = awwatch.Writer(path, 1, {"run": "bench"})
    t0 = time.perf_counter()
    writer.structure(0, s)
    for k in range(steps):
        writer.step(synthetic_step(k, s, order, rng))
    writer.close()
    write_s = time.perf_counter() - t0
    gc.collect()
    rss0 = _rss()
    t0 = time.perf_counter()
    back = aw.load_watch(path)
    open_s = time.perf_counter() - t0
    rss1 = _rss()
    t0 = time.perf_counter()
    widget = aw.explore(back)  # the timeline: min/max bands from the index (view/timeline.py)
    explore_s = time.perf_counter() - t0
    rss2 = _rss()
    edge, param = s.edge_ids[len(s.edge_ids) // 2], s.params[len(s.params) // 2]
    out = {"steps": steps, "edges": len(s.edge_ids), "nodes": len(s.names),
           "bytes_per_edge_step": path.stat().st_size / (steps * len(s.edge_ids)),
           "write_us_per_step": 1e6 * write_s / steps, "open_s": open_s,
           "open_mb": (rss1 - rss0) / 1e6, "explore_s": explore_s,
           "explore_mb": (rss2 - rss0) / 1e6}  # fmt: skip
    mid = steps // 2
    t0 = time.perf_counter()  # a zoom into 200 steps (the "timeline_range" message)
    dispatch(widget._session, {"type": "timeline_range", "request": 1, "start": mid - 100,
                               "stop": mid + 100, "bins": 1000})  # fmt: skip
    out["zoom_ms"] = 1e3 * (time.perf_counter() - t0)
    widget.close()
    block = "transformer.h.0" if "transformer.h.0" in s.modules() else ""
    for name, key in (("edge", edge), ("param", param), ("model", ""), ("block", block)):
        back.series(key)  # the first read checks the columns' checksums
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            back.series(key)
            times.append(time.perf_counter() - t0)
        out[f"series_{name}_ms"] = 1e3 * statistics.median(times)
    t0 = time.perf_counter()
    back.overview(edge, bins=1000)
    out["overview_ms"] = 1e3 * (time.perf_counter() - t0)
    t0 = time.perf_counter()
    back.recording(steps // 2)
    out["recording_ms"] = 1e3 * (time.perf_counter() - t0)
    out["rss_mb"] = _rss() / 1e6
    return out


def long_text(rows: list[dict[str, float]]) -> str:
    """The long-run table (`long_run` per length)."""
    head = ("| steps | bytes / edge-step | aw.load_watch s | + MB | aw.explore s | load + explore "
            "+ MB | zoom 200 steps ms | series edge ms | param ms | model ms | block ms "
            "| overview(1000 bins) ms | recording ms | write us/step |"
            "\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")  # fmt: skip
    body = "".join(
        f"| {r['steps']:,} | {r['bytes_per_edge_step']:.2f} | {r['open_s']:.3f} | "
        f"{r['open_mb']:.0f} | {r['explore_s']:.2f} | {r['explore_mb']:.0f} | "
        f"{r['zoom_ms']:.1f} | {r['series_edge_ms']:.2f} | {r['series_param_ms']:.2f} | "
        f"{r['series_model_ms']:.1f} | {r['series_block_ms']:.1f} | {r['overview_ms']:.1f} | "
        f"{r['recording_ms']:.1f} | "
        f"{r['write_us_per_step']:.0f} |\n"
        for r in rows
    )
    n = rows[0]
    return (f"Long runs (issue 39; bench_watch.py --steps): a real graph of {n['nodes']:,} nodes, "
            f"{n['edges']:,} edges (GPT-2 config), synthetic norms written step by step through "
            "the project's Writer (format 2.0, engine/watch/awtile.py); load + series in this "
            "process, once.\n\n" + head + body + "\n")


def load_seconds(path: Path, repeats: int = 3) -> tuple[float, float]:
    """(wall s, cpu s) medians of `aw.load_watch(path)`."""
    times = []
    for _ in range(repeats):
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        aw.load_watch(path)
        times.append((time.perf_counter() - t0, time.process_time() - c0))
    return med(times, 0), med(times, 1)


def own_cost(size: str, steps: int = 6) -> dict[str, float]:
    """The watch's OWN CPU time per step, measured inside it (its block's entry and exit, and
    its hooks' bodies: every norm, count and birth), against the plain step's CPU time: an
    estimate of the ratios that a loaded machine's noise does not swamp (it leaves out only the
    engine's cost of calling a Python hook, bounded by the "hooks only" row). Returns ms:
    "plain", "watched", "unwatched" and the estimated ratios "every=1", "every=10"."""
    spent = [0.0]

    def timed(fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*a: Any, **k: Any) -> Any:
            t0 = time.process_time()
            try:
                return fn(*a, **k)
            finally:
                spent[0] += time.process_time() - t0

        return wrapper

    tr = Trainer(size)
    patched = {
        (watch_module.Watch, "begin"): watch_module.Watch.begin,
        (watch_module.Watch, "end"): watch_module.Watch.end,
        (lean.LeanPass, "node_done"): lean.LeanPass.node_done,
        # the unwatched steps' check: in a hook, or once at the end of the backward
        (leafcheck.LeafCheck, "_flag"): leafcheck.LeafCheck._flag,
    }
    real_norm = lean.norm_of
    out: dict[str, list[float]] = {"plain": [], "watched": [], "unwatched": []}
    try:
        for (cls, name), fn in patched.items():
            setattr(cls, name, timed(fn))
        w1, wu = aw.watch(tr.model), aw.watch(tr.model, every=10**9)
        in_hook = [False]

        def norm(t: torch.Tensor) -> Any:  # the unwatched steps' hook bodies (LeafCheck)
            if in_hook[0]:
                return real_norm(t)
            t0 = time.process_time()
            try:
                return real_norm(t)
            finally:
                spent[0] += time.process_time() - t0

        lean.norm_of = norm
        for k in range(steps + 1):
            for name, w in (("watched", w1), ("unwatched", wu), ("plain", None)):
                spent[0] = 0.0
                c0 = time.process_time()
                if w is None:
                    tr.step(lambda loss: loss.backward())
                else:
                    def block(loss: torch.Tensor, w: aw.Watch = w, name: str = name) -> None:
                        with w.step(loss):
                            in_hook[0] = name == "watched"  # node_done times its own norms
                            loss.backward()
                            in_hook[0] = False

                    tr.step(block)
                if k:  # the first round warms up (and is each watch's step 0)
                    total = time.process_time() - c0
                    out[name].append(total if w is None else spent[0])
    finally:
        for (cls, name), fn in patched.items():
            setattr(cls, name, fn)
        lean.norm_of = real_norm
    plain, watched, unwatched = (statistics.median(out[k]) * 1e3
                                 for k in ("plain", "watched", "unwatched"))  # fmt: skip
    return {"plain": plain, "watched": watched, "unwatched": unwatched,
            "every=1": 1 + watched / plain,
            "every=10": 1 + (watched + 9 * unwatched) / (10 * plain)}  # fmt: skip


def setup_ms(size: str, repeats: int = 5) -> tuple[float, float, int]:
    """(walk ms, hooks on + off ms, nodes) of one watched step's set-up on the benchmark's
    graph: what `torch.autograd.graph.node_creation_hook` (torch >= 2.15, which attaches hooks
    while the forward builds the graph) could save at most; torch 2.13 has none."""
    from autograd_widget.engine.watch.structure import Structure, walk

    model, ids = build(size)
    loss = model(input_ids=ids, labels=ids).loss
    names = {id(p): n for n, p in model.named_parameters()}
    fns, key = walk([loss], names)
    s = Structure.of(aw.capture(loss, model=model), key)
    walks, hooks = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fns, key = walk([loss], names)
        t1 = time.perf_counter()
        p = lean.LeanPass(s, fns)
        p.start()
        p.remove()
        hooks.append(time.perf_counter() - t1)
        walks.append(t1 - t0)
    return statistics.median(walks) * 1e3, statistics.median(hooks) * 1e3, len(fns)


# ------------------------------------------------------------------------------ report
def table(times: dict[str, list[tuple]]) -> tuple[str, dict[str, tuple[float, float]]]:
    base_w, base_c = med(times["plain"], 0), med(times["plain"], 1)
    ratios: dict[str, tuple[float, float]] = {}
    rows = [
        "| variant | wall ms | ratio (wall) | cpu ms | ratio (cpu) | target | met (wall / cpu) |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]

    def row(name: str, w: float, c: float) -> None:
        rw, rc = w / base_w, c / base_c
        ratios[name] = (rw, rc)
        t = TARGETS.get(name)
        met = "-" if t is None else f"{'yes' if rw <= t else 'NO'} / {'yes' if rc <= t else 'NO'}"
        rows.append(f"| {name} | {w * 1e3:.0f} | {rw:.3f}x | {c * 1e3:.0f} | {rc:.3f}x | "
                    f"{'-' if t is None else f'<= {t}x'} | {met} |")  # fmt: skip

    for name, xs in times.items():
        row(name, med(xs, 0), med(xs, 1))
        if name == "watch, unwatched step":
            w10 = (med(times["watch every=1"], 0) + 9 * med(xs, 0)) / 10
            c10 = (med(times["watch every=1"], 1) + 9 * med(xs, 1)) / 10
            row("watch every=10", w10, c10)
    return "\n".join(rows) + "\n", ratios


def spread(times: dict[str, list[tuple]]) -> str:
    xs = [x[0] for x in times["plain"][1:]] or [x[0] for x in times["plain"]]
    lo, hi = min(xs), max(xs)
    return f"plain wall times ranged {lo * 1e3:.0f}-{hi * 1e3:.0f} ms ({hi / lo:.2f}x)"


def own_text(own: dict[str, float]) -> str:
    """The paragraph on the watch's own CPU time (`own_cost`)."""
    return (
        f"The watch's own CPU time per step, measured inside it (block entry and exit, every "
        f"hook body: norms, counts, births; median of the rounds): {own['watched']:.1f} ms on a "
        f"watched step, {own['unwatched']:.2f} ms on an unwatched one, against "
        f"{own['plain']:.0f} ms of CPU for the plain step: an estimated {own['every=1']:.3f}x "
        f"for `every=1` (target <= 1.30x) and {own['every=10']:.3f}x for `every=10` (target "
        "<= 1.05x), not counting the engine's cost of calling a Python hook (the `hooks only` "
        "row). Unlike the ratios above, this estimate does not depend on what else the machine "
        "runs.\n\n"
    )


def previous_ratios(path: Path) -> dict[str, tuple[float, float]]:
    """(wall ratio, cpu ratio) per variant from the watch section of an earlier RESULTS.md."""
    text = path.read_text()
    start, end = f"<!-- {SECTION}:start -->", f"<!-- {SECTION}:end -->"
    if start not in text or end not in text:
        return {}
    out = {}
    for line in text[text.index(start): text.index(end)].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[2].endswith("x") and cells[4].endswith("x"):
            out[cells[0]] = (float(cells[2][:-1]), float(cells[4][:-1]))
    return out


def compare(before: dict[str, tuple[float, float]], now: dict[str, tuple[float, float]]) -> str:
    """Both runs' ratios side by side, and how far they differ (the machine's noise)."""
    if not before:
        return ""
    rows = ["| variant | run 1 wall | run 2 wall | run 1 cpu | run 2 cpu |",
            "|---|---:|---:|---:|---:|"]  # fmt: skip
    diffs = []
    for name, (w2, c2) in now.items():
        if name not in before:
            continue
        w1, c1 = before[name]
        diffs += [abs(w2 - w1), abs(c2 - c1)]
        rows.append(f"| {name} | {w1:.3f}x | {w2:.3f}x | {c1:.3f}x | {c2:.3f}x |")
    worst = max(diffs, default=0.0)
    return (
        "Two runs (this one is run 2; run 1 earlier the same day, same command, same machine): "
        f"the same variant's ratio differs by up to {worst:.2f} between them, so differences "
        "smaller than that are noise.\n\n" + "\n".join(rows) + "\n\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="the CI size")
    parser.add_argument("--repeats", type=int, default=None, help="rounds (after a warm-up)")
    parser.add_argument("--ideas", action="store_true", help="also time the ideas of issue 31")
    parser.add_argument("--write", action="store_true", help="write RESULTS.md even with --tiny")
    parser.add_argument("--results", type=Path, default=RESULTS, help="the file to write")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (issue 31: 2)")
    parser.add_argument("--load-steps", type=int, default=None, help="steps of the load test")
    parser.add_argument("--steps", type=int, default=None,
                        help="only the long-run figures (issue 39) at 1,000 and this many steps")
    parser.add_argument("--nodes", type=int, default=2000, help="graph size of --steps")
    parser.add_argument("--previous", type=Path, default=None,
                        help="a RESULTS.md holding an earlier run's section: both runs compared")
    args = parser.parse_args(argv)
    if args.steps is not None:
        with tempfile.TemporaryDirectory() as d:
            rows = [long_run(args.nodes, n, Path(d)) for n in sorted({min(1000, args.steps),
                                                                       args.steps})]  # fmt: skip
        load = os.getloadavg()
        print(long_text(rows) + f"Load average (1, 5, 15 min) at the end: {load[0]:.2f}, "
              f"{load[1]:.2f}, {load[2]:.2f} on {os.cpu_count()} CPUs.")  # fmt: skip
        return 0
    size = "tiny" if args.tiny else "full"
    repeats = args.repeats or (1 if args.tiny else 8)
    threads = torch.get_num_threads()
    torch.set_num_threads(args.threads)
    load = os.getloadavg()
    try:
        edges = check_bit_equal(size)
        tr = Trainer(size)
        fns, every1 = calls(tr, args.ideas or args.tiny)
        times = interleaved(fns, repeats)
        with tempfile.TemporaryDirectory() as d:
            mem, file_bytes, _ = memory_per_edge(every1, Path(d))
            n_steps = args.load_steps or (200 if args.tiny else 10_000)
            path, n_nodes, n_edges = synthetic_watch(90 if args.tiny else 700, n_steps, Path(d))
            size_mb = path.stat().st_size / 1e6
            secs, cpu_secs = load_seconds(path)
        walk_ms, hook_ms, n_fns = setup_ms(size)
        own = own_cost(size, steps=2 if args.tiny else 6)
    finally:
        torch.set_num_threads(threads)
    after = os.getloadavg()
    tab, ratios = table(times)
    layers, dm, heads, vocab, batch, seq = CONFIGS[size]
    text = (
        f"## aw.watch and aw.record on a training step (bench_watch.py{' --tiny' if args.tiny else ''})\n\n"  # noqa: E501
        f"Commit {commit()}; {machine(f'{args.threads} torch threads')}. GPT-2 from a transformers "
        f"config ({layers} layers, d {dm}, {heads} heads, vocab {vocab}; batch {batch}, seq {seq}; "
        f"{edges} edges), whole training step (forward, backward, AdamW), interleaved medians "
        f"of {repeats} rounds (warm-up dropped), wall and process CPU time; {spread(times)}; load "
        f"average (1 min) before/after: {load[0]:.2f} / {after[0]:.2f}. Every watched gradient "
        "bit-equal to the plain step's (checked). `watch every=10` = (1 watched + 9 unwatched "
        "steps) / 10 plain, from the medians above.\n\n"
        + tab + "\n"
        f"Memory: {mem:.1f} bytes per edge per watched step in memory (its arrays and record, "
        f"beyond the one copy of the structure), {file_bytes:.1f} in the file (target <= 64). "
        f"Loading a synthetic watch of {n_steps} steps over a real graph of {n_nodes} nodes and "
        f"{n_edges} edges (random norms; {size_mb:.1f} MB): {secs:.2f} s wall, {cpu_secs:.2f} s "
        f"CPU{' (target < 2 s)' if n_steps >= 10_000 else ''}.\n\n"
        f"Set-up of a watched step on this graph ({n_fns} nodes): the walk that recognises its "
        f"structure {walk_ms:.2f} ms, registering and removing the hooks {hook_ms:.2f} ms: the "
        "most that attaching hooks while the forward builds the graph "
        "(`torch.autograd.graph.node_creation_hook`, torch >= 2.15; the pinned torch 2.13 has "
        "none) could save per step.\n\n"
    )
    text += own_text(own)
    if args.previous is not None:
        text += compare(previous_ratios(args.previous), ratios)
    if not args.tiny:
        text += "".join(f"{n}\n\n" for n in NOTES)
    print(text)
    if not args.tiny or args.write:
        write_section(SECTION, text, args.results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
