"""Benchmark: `aw.watch`, `aw.record` and stepping by hand under FSDP2 on 2 gloo ranks (issue 36).

Run `python benchmarks/bench_distributed.py` (a GPT-2-like model from a transformers config: 4
layers, d 128, 4 heads, vocab 2000; batch 4, seq 64 per rank; each block `fully_shard`-ed, then
the root; 2 ranks on CPU over gloo, 1 torch thread each; sized for about a minute on 2 cores;
writes its section of benchmarks/RESULTS.md) or with `--quick` (CI: d 32, 1 round; prints the
tables, writes nothing unless `--write`).

The script spawns its ranks itself (`python bench_distributed.py --worker RANK WORLD PORT OUT`:
the port from the OS, one timeout over the whole run, every rank's process group killed at the
end, as tests/helpers/ranks.py does for the tests). Each rank times its OWN calls and writes them
to a JSON file; this process reads both and writes the tables, one row per rank.

Method, on each rank:
- watch and record: bench_watch.py's method, reused (its `calls` and `interleaved`): every variant
  is one whole training step of the same FSDP2 model and AdamW (zero_grad, forward, the backward
  inside the variant's block, optimizer step), in interleaved rounds in a rotated order, a garbage
  collection before each call; medians with the warm-up round dropped, of wall time and of the
  process's CPU time. `watch every=10` is (1 watched + 9 unwatched steps) / 10 plain steps. Both
  ranks run the same rounds in the same order (FSDP's collectives pair them up). Checked first:
  a watched step's and a recorded step's sharded gradients bit-equal to a plain step's from the
  same state, and the watch's series named by the model's parameter names.
- stepping by hand: per round a fresh forward of the same model (untimed), then either the
  engine's `loss.backward()` (timed; it also reduce-scatters the gradients, FSDP's
  post-backward) or `aw.capture(loss, model=m)` and `Stepper(graph, keep=...)` (untimed) and
  `run()` (timed; it all-gathers what each step reads, never reduce-scatters), the stepper
  closed and `loss.backward()` run (untimed) to end FSDP's iteration as training would. Every run
  reaches the end without an error (checked).
- memory: in one further run each, the FSDP modules whose unsharded parameters hold their
  storage, and those storages' bytes, sampled before every node of the engine's backward (a
  pre-hook on each node) and, for the stepper, at the end of every segment of
  engine/step/sharded.py (right before it reshards: nothing is unsharded inside a segment), and
  after the run; also, with those bytes, the buffers of all-gathers issued and not yet copied
  out (the engine's backward prefetches the next module). Their maxima are the rows.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

HERE = Path(__file__).parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))  # run as a script or loaded by path (tests)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import bench_watch  # noqa: E402
from _results import RESULTS, commit, machine, write_section  # noqa: E402

SECTION = "distributed"
WORLD = 2
#: Per-process targets, the same as for one process: bench_watch.py's (watch and record) and
#: bench_stepper.py's for a transformer (the stepper's run against the engine's backward).
WATCH_TARGETS = bench_watch.TARGETS
STEP_TARGETS = {"tensors": 1.3, "summaries": 2.0}
#: (layers, d, heads, vocab, batch, seq) of the full run and of `--quick`.
CONFIGS = {"full": (4, 128, 4, 2000, 4, 64), "quick": (4, 32, 2, 100, 2, 16)}
VARIANTS = ["plain", "watch every=1", "watch, unwatched step", "watch every=10",
            "record summaries"]  # fmt: skip
STEPPING = ["engine", "stepper tensors", "stepper summaries"]


# ------------------------------------------------------------------------------ one rank
def build(size: str, rank: int) -> tuple[torch.nn.Module, torch.Tensor]:
    """The GPT-2-like model, each block `fully_shard`-ed then the root (the same weights on every
    rank: seed 0; no dropout, so that two steps from the same state are comparable), and this
    rank's batch."""
    import transformers
    from torch.distributed.fsdp import fully_shard

    transformers.logging.set_verbosity_error()
    layers, d, heads, vocab, batch, seq = CONFIGS[size]
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=vocab, n_positions=seq, n_embd=d, n_layer=layers,
                                  n_head=heads, bos_token_id=0, eos_token_id=0, resid_pdrop=0.0,
                                  embd_pdrop=0.0, attn_pdrop=0.0,
                                  attn_implementation="eager")  # fmt: skip
    model = transformers.GPT2LMHeadModel(cfg)
    for block in model.transformer.h:
        fully_shard(block)
    fully_shard(model)
    torch.manual_seed(100 + rank)
    return model, torch.randint(0, vocab, (batch, seq))


class Trainer:
    """One FSDP2 model, one AdamW, this rank's batch; `step(block)` is one whole training step
    (what bench_watch.calls drives)."""

    def __init__(self, size: str, rank: int) -> None:
        self.model, self.ids = build(size, rank)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-4)

    def loss(self) -> torch.Tensor:
        return self.model(input_ids=self.ids, labels=self.ids).loss

    def step(self, block: Callable[[torch.Tensor], Any]) -> None:
        self.opt.zero_grad(set_to_none=True)
        block(self.loss())
        self.opt.step()


def _bits(t: torch.Tensor) -> torch.Tensor:
    local = t.to_local() if hasattr(t, "to_local") else t
    return local.detach().reshape(-1).view(torch.int32)


def check_watch_and_record(size: str, rank: int) -> int:
    """A watched and a recorded step's sharded gradients against a plain step's from the same
    state, bit for bit; the watch names its series by the model's parameter names. Returns the
    number of edges of the watched graph."""
    import autograd_widget as aw

    plain, watched, recorded = (Trainer(size, rank) for _ in range(3))
    plain.step(lambda loss: loss.backward())
    w = aw.watch(watched.model)

    def watch_block(loss: torch.Tensor) -> None:
        with w.step(loss):
            loss.backward()

    def record_block(loss: torch.Tensor) -> None:
        with aw.record(loss, model=recorded.model):
            loss.backward()

    watched.step(watch_block)
    recorded.step(record_block)
    for (name, a), b, c in zip(plain.model.named_parameters(), watched.model.parameters(),
                               recorded.model.parameters()):  # fmt: skip
        assert torch.equal(_bits(a.grad), _bits(b.grad)), f"watched gradient of {name} differs"
        assert torch.equal(_bits(a.grad), _bits(c.grad)), f"recorded gradient of {name} differs"
    assert w.warnings == [], w.warnings
    assert len(w.series("transformer.h.0.attn.c_attn.weight")) == 1
    return len(w.structures[0].edge_ids)


def stepping_rounds(size: str, rank: int, repeats: int) -> dict[str, list[tuple]]:
    """(wall s, cpu s) of the engine's `loss.backward()` and of `Stepper.run()` per keep mode,
    each on a fresh forward of the same model, `repeats + 1` rotated rounds (module doc)."""
    import autograd_widget as aw

    tr = Trainer(size, rank)

    def zero() -> None:
        tr.opt.zero_grad(set_to_none=True)

    def engine() -> tuple[float, float]:
        loss = tr.loss()
        gc.collect()
        w0, c0 = time.perf_counter(), time.process_time()
        loss.backward()
        out = time.perf_counter() - w0, time.process_time() - c0
        zero()
        return out

    def stepper(keep: str) -> Callable[[], tuple[float, float]]:
        def run() -> tuple[float, float]:
            loss = tr.loss()
            st = aw.Stepper(aw.capture(loss, model=tr.model), keep=keep)
            gc.collect()
            w0, c0 = time.perf_counter(), time.process_time()
            rec = st.run()
            out = time.perf_counter() - w0, time.process_time() - c0
            assert st.done and (rec is None or rec.error is None), rec
            st.close()
            loss.backward()  # ends FSDP's iteration, as training would
            zero()
            return out

        return run

    calls = {"engine": engine, "stepper tensors": stepper("tensors"),
             "stepper summaries": stepper("summaries")}  # fmt: skip
    times: dict[str, list[tuple]] = {k: [] for k in calls}
    order = list(calls)
    for i in range(repeats + 1):
        for k in order[i % len(order):] + order[: i % len(order)]:  # fmt: skip
            times[k].append(calls[k]())
    return times


def unsharded_now(sharding: Any) -> tuple[int, int, int]:
    """(FSDP modules whose unsharded parameters hold storage now, those storages' bytes, the
    bytes of all-gather buffers still pending: gathered ahead, not yet copied out into the
    parameters, as the engine's backward prefetch does; FSDP's private state, 0 where it moved)."""
    modules = nbytes = pending = 0
    for m in sharding.modules:
        held: dict[int, int] = {}
        for p in m.params:
            if p.unsharded is None:
                continue
            s = p.unsharded.untyped_storage()
            if s.size() > 0:
                held[s.data_ptr()] = s.nbytes()
        if held:
            modules += 1
            nbytes += sum(held.values())
        try:
            groups = m.module._get_fsdp_state()._fsdp_param_groups
        except AttributeError:
            continue
        for group in groups:
            buf = getattr(getattr(group, "_all_gather_result", None), "all_gather_output", None)
            if isinstance(buf, torch.Tensor):
                pending += buf.untyped_storage().nbytes()
    return modules, nbytes, pending


def memory(size: str, rank: int) -> dict[str, Any]:
    """The most FSDP modules unsharded at once, and the most unsharded bytes, during the
    engine's backward and during a stepper's `run()` (module doc)."""
    import autograd_widget as aw
    from autograd_widget.core.fsdp import sharding_of
    from autograd_widget.engine.step import sharded

    tr = Trainer(size, rank)
    out: dict[str, Any] = {}

    # the engine: a pre-hook on every node samples the state before the node runs
    loss = tr.loss()
    sharding = sharding_of(tr.model)
    samples = [unsharded_now(sharding)]
    seen, todo, handles = set(), [loss.grad_fn], []
    while todo:
        fn = todo.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        handles.append(fn.register_prehook(lambda grads: samples.append(unsharded_now(sharding))))
        todo.extend(f for f, _ in fn.next_functions)
    try:
        loss.backward()
    finally:
        for h in handles:
            h.remove()
    samples.append(unsharded_now(sharding))
    out["engine"] = _peaks(samples, len(sharding.modules), nodes=len(seen))
    tr.opt.zero_grad(set_to_none=True)

    # the stepper: sampled at the end of every segment, right before it reshards
    loss = tr.loss()
    sharding = sharding_of(tr.model)
    samples = [unsharded_now(sharding)]
    real = sharded.ShardedSteps.release

    def release(self: Any, pos: int) -> None:
        samples.append(unsharded_now(sharding))
        real(self, pos)

    sharded.ShardedSteps.release = release  # type: ignore[method-assign]
    try:
        st = aw.Stepper(aw.capture(loss, model=tr.model))
        rec = st.run()
        assert st.done and (rec is None or rec.error is None), rec
        segments = len(samples) - 1
        samples.append(unsharded_now(sharding))
        st.close()
    finally:
        sharded.ShardedSteps.release = real  # type: ignore[method-assign]
    assert segments > 0, "the stepper did not step through engine/step/sharded.py"
    out["stepper"] = _peaks(samples, len(sharding.modules), segments=segments)
    loss.backward()
    return out


def _peaks(samples: list[tuple[int, int, int]], total: int, **extra: int) -> dict[str, int]:
    return {"max_modules": max(s[0] for s in samples), "max_bytes": max(s[1] for s in samples),
            "max_with_pending": max(s[1] + s[2] for s in samples), "after": samples[-1][0],
            "modules": total, **extra}  # fmt: skip


def worker(rank: int, world: int, port: str, out: Path, size: str, repeats: int) -> None:
    """One rank: join the gloo group, measure, write `rank_{rank}.json` into `out`."""
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=120))  # fmt: skip
    result: dict[str, Any] = {"rank": rank}
    result["edges"] = check_watch_and_record(size, rank)
    tr = Trainer(size, rank)
    fns, _ = bench_watch.calls(tr, False)  # type: ignore[arg-type]
    result["watch"] = bench_watch.interleaved(fns, repeats)
    result["stepping"] = stepping_rounds(size, rank, repeats)
    result["memory"] = memory(size, rank)
    dist.barrier()
    tmp = out / f".rank_{rank}.json"
    tmp.write_text(json.dumps(result))
    tmp.replace(out / f"rank_{rank}.json")


# ------------------------------------------------------------------------------ the ranks
def free_port() -> int:
    """A TCP port on 127.0.0.1 that the OS says is free now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(size: str, repeats: int, timeout: float) -> list[dict[str, Any]]:
    """Spawn the ranks, wait at most `timeout` s for all, kill any left; each rank's results.
    Raises RuntimeError with every rank's output when one fails or the time runs out."""
    with tempfile.TemporaryDirectory() as d:
        port = str(free_port())
        env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
        script = str(Path(__file__).resolve())
        procs = [
            subprocess.Popen(
                [sys.executable, script, "--worker", str(rank), str(WORLD), port, d, "--size",
                 size, "--repeats", str(repeats)],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT,
                start_new_session=True,
            )
            for rank in range(WORLD)
        ]
        outs: list[str] = []
        deadline = time.monotonic() + timeout
        try:
            for p in procs:
                outs.append(p.communicate(timeout=max(1.0, deadline - time.monotonic()))[0])
        except subprocess.TimeoutExpired:
            _kill(procs)
            printed = [p.communicate()[0] for p in procs]
            raise RuntimeError(f"the {WORLD} ranks did not finish within {timeout:g} s:\n"
                               + _outputs(printed)) from None  # fmt: skip
        finally:
            _kill(procs)
        if any(p.returncode != 0 for p in procs):
            codes = ", ".join(f"rank {r}: {p.returncode}" for r, p in enumerate(procs))
            raise RuntimeError(f"a rank failed ({codes}):\n" + _outputs(outs))
        return [json.loads((Path(d) / f"rank_{r}.json").read_text()) for r in range(WORLD)]


def _outputs(outs: list[str]) -> str:
    return "\n".join(f"--- rank {r}:\n{o}" for r, o in enumerate(outs))


def _kill(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()


# ------------------------------------------------------------------------------ report
def _met(ratio: float, target: float | None) -> str:
    return "-" if target is None else ("yes" if ratio <= target else "NO")


def watch_table(ranks: list[dict[str, Any]]) -> str:
    """One row per variant and rank: wall and CPU medians and their ratios to the plain step."""
    med = bench_watch.med
    rows = ["| variant | rank | wall ms | ratio (wall) | cpu ms | ratio (cpu) | target | "
            "met (wall / cpu) |", "|---|---:|---:|---:|---:|---:|---:|---|"]  # fmt: skip
    for name in VARIANTS:
        for r in ranks:
            t = r["watch"]
            if name == "watch every=10":
                w = (med(t["watch every=1"], 0) + 9 * med(t["watch, unwatched step"], 0)) / 10
                c = (med(t["watch every=1"], 1) + 9 * med(t["watch, unwatched step"], 1)) / 10
            else:
                w, c = med(t[name], 0), med(t[name], 1)
            rw, rc = w / med(t["plain"], 0), c / med(t["plain"], 1)
            target = WATCH_TARGETS.get(name)
            met = "-" if target is None else f"{_met(rw, target)} / {_met(rc, target)}"
            rows.append(f"| {name} | {r['rank']} | {w * 1e3:.0f} | {rw:.3f}x | {c * 1e3:.0f} | "
                        f"{rc:.3f}x | {'-' if target is None else f'<= {target}x'} | {met} |")
    return "\n".join(rows) + "\n"


def stepping_table(ranks: list[dict[str, Any]]) -> str:
    """One row per keep mode and rank: the engine's backward against the stepper's run()."""
    med = bench_watch.med
    rows = ["| keep | rank | engine `loss.backward()` ms | stepper `run()` ms | ratio (wall) | "
            "ratio (cpu) | target | met (wall / cpu) |",
            "|---|---:|---:|---:|---:|---:|---:|---|"]  # fmt: skip
    for keep, target in STEP_TARGETS.items():
        for r in ranks:
            t = r["stepping"]
            e, s = t["engine"], t[f"stepper {keep}"]
            rw, rc = med(s, 0) / med(e, 0), med(s, 1) / med(e, 1)
            rows.append(f"| {keep} | {r['rank']} | {med(e, 0) * 1e3:.0f} | "
                        f"{med(s, 0) * 1e3:.0f} | {rw:.2f}x | {rc:.2f}x | <= {target}x | "
                        f"{_met(rw, target)} / {_met(rc, target)} |")  # fmt: skip
    return "\n".join(rows) + "\n"


def memory_table(ranks: list[dict[str, Any]]) -> str:
    """One row per run (engine, stepper) and rank: the most FSDP modules unsharded at once and
    the most unsharded parameter bytes. Target for the stepper: fewer modules than all of them
    at once, unless the engine holds all of them too."""
    rows = ["| run | rank | FSDP modules unsharded at once (max of all) | peak unsharded "
            "parameters KiB | peak with pending all-gathers KiB | unsharded after | target | "
            "met? |", "|---|---:|---:|---:|---:|---:|---|---|"]  # fmt: skip
    for run in ("engine", "stepper"):
        for r in ranks:
            m, e = r["memory"][run], r["memory"]["engine"]
            label = ("engine `loss.backward()`" if run == "engine"
                     else "stepper `run()` (keep summaries)")  # fmt: skip
            if run == "engine":
                target, met = "-", "-"
            else:
                target = (f"< {m['modules']} (the engine: {e['max_modules']})")
                met = "yes" if (m["max_modules"] < m["modules"]
                                or e["max_modules"] >= e["modules"]) else "NO"  # fmt: skip
            rows.append(f"| {label} | {r['rank']} | {m['max_modules']} of {m['modules']} | "
                        f"{m['max_bytes'] / 1024:.1f} | {m['max_with_pending'] / 1024:.1f} | "
                        f"{m['after']} | {target} | {met} |")
    return "\n".join(rows) + "\n"


def report(ranks: list[dict[str, Any]], size: str, repeats: int, quick: bool,
           load: tuple[float, float]) -> str:  # fmt: skip
    layers, d, heads, vocab, batch, seq = CONFIGS[size]
    mem = ranks[0]["memory"]
    plain = [bench_watch.med(r["watch"]["plain"], 0) * 1e3 for r in ranks]
    return (
        f"## aw.watch, aw.record and stepping under FSDP2 on {WORLD} gloo ranks "
        f"(bench_distributed.py{' --quick' if quick else ''})\n\n"
        f"Commit {commit()}; {machine(f'1 torch thread per rank, {WORLD} ranks (gloo, CPU)')}. "
        f"Load average (1 min) before/after: {load[0]:.2f} / {load[1]:.2f}. Rerun: "
        f"`python benchmarks/bench_distributed.py`.\n\n"
        f"GPT-2 from a transformers config ({layers} layers, d {d}, {heads} heads, vocab "
        f"{vocab}; batch {batch}, seq {seq} per rank; no dropout; {ranks[0]['edges']} edges), each "
        f"block `fully_shard`-ed, then the root ({mem['engine']['modules']} FSDP modules). Each "
        "rank times its own calls; the ranks run the same rounds in the same order (FSDP's "
        "collectives pair them). Medians of "
        f"{repeats} interleaved rounds in a rotated order (warm-up dropped), wall and process "
        f"CPU time; plain step {', '.join(f'{p:.0f}' for p in plain)} ms (rank 0, 1).\n\n"
        "### aw.watch and aw.record on a training step\n\n"
        "bench_watch.py's method on each rank: a whole training step (forward, backward inside "
        "the variant's block, AdamW) of the same FSDP2 model; `watch every=10` = (1 watched + 9 "
        "unwatched steps) / 10 plain, from the medians. Checked first: a watched and a recorded "
        "step's sharded gradients bit-equal to a plain step's from the same state; the watch's "
        "series named by the model's parameter names. Targets as for one process "
        "(bench_watch.py).\n\n"
        + watch_table(ranks) + "\n"
        "### Stepping an FSDP2 model by hand against the engine's backward\n\n"
        "Per round a fresh forward (untimed), then the engine's `loss.backward()` (timed: it "
        "all-gathers through FSDP's pre-backward hooks, prefetching, and reduce-scatters the "
        "gradients) or `Stepper(aw.capture(loss, model=m), keep=...).run()` (only `run()` timed: "
        "it all-gathers what each step reads, in the engine's order, and reshards after a "
        "module's last step; it never reduce-scatters), every run to the end without an error "
        "(checked). Targets: bench_stepper.py's for a transformer.\n\n"
        + stepping_table(ranks) + "\n"
        "Memory, in one further run each: the FSDP modules whose unsharded parameters hold their "
        "storage (the root's stay unsharded after the forward: FSDP does not reshard the root) "
        "and those storages' bytes, sampled before every node of the engine's backward "
        f"({mem['engine']['nodes']} nodes; a pre-hook on each) and at the end of each of the "
        f"stepper's {mem['stepper']['segments']} segments between unshards and reshards "
        "(engine/step/sharded.py: nothing is unsharded inside a segment), maxima shown. "
        "\"pending all-gathers\": also the buffers of all-gathers issued but not yet copied "
        "out into the parameters (the engine's backward gathers the next module ahead; FSDP's "
        "private state, read for this count only). "
        "\"unsharded after\": once the run ended (the engine's last callback reshards the root "
        "too; the stepper leaves the root as FSDP left it, and the backward that follows "
        "reshards it). The claim: unsharding what the backward reads does not keep every module "
        "unsharded at once when the engine does not.\n\n"
        + memory_table(ranks) + "\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, 1 round (CI)")
    parser.add_argument("--repeats", type=int, default=None, help="rounds (after a warm-up)")
    parser.add_argument("--write", action="store_true", help="write RESULTS.md even with --quick")
    parser.add_argument("--results", type=Path, default=RESULTS, help="the file to write")
    parser.add_argument("--timeout", type=float, default=None, help="seconds for the whole run")
    parser.add_argument("--worker", nargs=4, metavar=("RANK", "WORLD", "PORT", "OUT"),
                        help=argparse.SUPPRESS)  # fmt: skip
    parser.add_argument("--size", choices=list(CONFIGS), default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    size = args.size or ("quick" if args.quick else "full")
    repeats = args.repeats or (1 if size == "quick" else 8)
    if args.worker is not None:
        rank, world, port, out = args.worker
        worker(int(rank), int(world), port, Path(out), size, repeats)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)  # gloo's threads make the interpreter's teardown abort now and then
    from autograd_widget.core.fsdp import fsdp_note

    note = fsdp_note()
    if note is not None or not torch.distributed.is_gloo_available():
        print(f"bench_distributed: skipped: {note or 'torch.distributed has no gloo'}")
        return 1
    before = os.getloadavg()[0]
    ranks = run_ranks(size, repeats, args.timeout or (300.0 if size == "quick" else 900.0))
    text = report(ranks, size, repeats, args.quick, (before, os.getloadavg()[0]))
    print(text)
    if not args.quick or args.write:
        write_section(SECTION, text, args.results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
