"""Benchmark: non-reentrant activation checkpointing, stepped by hand against the engine.

Run `python benchmarks/bench_ckpt.py` (writes its section of benchmarks/RESULTS.md) or with
`--tiny` (CI: small sizes in seconds; prints, writes nothing unless `--write`). Public API only,
one process, `torch.set_num_threads(1)`. Two cases:

- blocks: 4 blocks of `Linear(d, d) + GELU`, each under `checkpoint(..., use_reentrant=False)`
  (the issue's reproducer: d 1024, batch 256);
- gpt2: a transformers GPT-2 from a config (random weights, train mode) with
  `gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})`.

Per case: recomputes (a forward pre-hook on the first layer of each checkpointed block counts
its forwards, the forward's own not included) of the engine (`torch.autograd.grad(...,
retain_graph=True)`), of `Stepper.run()` (keep "tensors" and "summaries"), of `reset()` +
`run()`, and of `graph.saved_memory()` plus reading every node's saved values; bytes of
recomputed tensors still alive after each (weak references to the storages every module inside
a block produced while recomputing); time of the engine against `Stepper(keep=...)` `run()`,
interleaved per round in a rotated order (`reset()` untimed after each run), medians with the
first round dropped; gradients checked bit for bit.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

import autograd_widget as aw

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
from _results import RESULTS, commit, machine, write_section  # noqa: E402
from _timing import interleaved, median_ms  # noqa: E402

SECTION = "ckpt"
KEEPS = ("tensors", "summaries")


class Watch:
    """Counts forwards of the checkpointed blocks and, once armed, keeps weak references to the
    storages the modules inside them produce (the recomputed tensors)."""

    def __init__(self, blocks: list[nn.Module]) -> None:
        self.calls = 0
        self.armed = False
        self.refs: list[tuple[weakref.ref, int]] = []
        self.handles = []
        for b in blocks:
            # The block's first child: transformers checkpoints `forward`, not `__call__`, so a
            # hook on the block itself does not see the recompute; its first layer's does.
            first = next(b.children())
            self.handles.append(first.register_forward_pre_hook(self._count))
            for m in b.modules():
                self.handles.append(m.register_forward_hook(self._keep))

    def _count(self, *_: Any) -> None:
        self.calls += 1

    def _keep(self, _m: nn.Module, _args: Any, out: Any) -> None:
        if not self.armed:
            return
        for t in out if isinstance(out, tuple) else (out,):
            if isinstance(t, torch.Tensor):
                st = t.untyped_storage()
                self.refs.append((weakref.ref(st), st.nbytes()))

    def take(self) -> int:
        """Forwards counted since the last call."""
        n, self.calls = self.calls, 0
        return n

    def alive(self) -> int:
        """Bytes of recomputed storages still alive (each storage once)."""
        gc.collect()
        seen: dict[int, int] = {}
        for ref, nb in self.refs:
            st = ref()
            if st is not None:
                seen[st.data_ptr()] = nb
        return sum(seen.values())


class Blocks(nn.Module):
    def __init__(self, d: int, n: int) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(d, d), nn.GELU()) for _ in range(n)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for b in self.blocks:
            x = checkpoint(b, x, use_reentrant=False)
        return x


def blocks_case(tiny: bool) -> tuple[nn.Module, list[nn.Module], Callable[[], torch.Tensor]]:
    d, batch = (64, 8) if tiny else (1024, 256)
    model = Blocks(d, 4)
    x = torch.randn(batch, d, requires_grad=True)
    return model, list(model.blocks), lambda: model(x).square().mean()


def gpt2_case(tiny: bool) -> tuple[nn.Module, list[nn.Module], Callable[[], torch.Tensor]]:
    import transformers

    transformers.logging.set_verbosity_error()
    layers, width, seq, batch = (2, 32, 8, 2) if tiny else (6, 128, 64, 4)
    cfg = transformers.GPT2Config(
        vocab_size=96, n_positions=128, n_embd=width, n_layer=layers, n_head=2,
        bos_token_id=0, eos_token_id=0, attn_implementation="eager",
    )  # fmt: skip
    model = transformers.GPT2LMHeadModel(cfg)
    with warnings.catch_warnings():  # 5.x: "deprecated, use activation_checkpointing_enable"
        warnings.simplefilter("ignore", FutureWarning)
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    ids = torch.randint(0, 96, (batch, seq))
    return model, list(model.transformer.h), lambda: model(input_ids=ids, labels=ids).loss


CASES = {"blocks": blocks_case, "gpt2": gpt2_case}


@dataclass
class Row:
    case: str
    nodes: int
    recomputes: dict[str, int] = field(default_factory=dict)
    kept: dict[str, int] = field(default_factory=dict)
    ms: dict[str, float] = field(default_factory=dict)

    def ratio(self, keep: str) -> float:
        return self.ms[keep] / self.ms["engine"]


def measure(case: str, tiny: bool, repeats: int) -> Row:
    torch.manual_seed(0)
    model, blocks, run_forward = CASES[case](tiny)
    ps = [p for p in model.parameters() if p.requires_grad]
    watch = Watch(blocks)
    loss = run_forward()
    forwards = watch.take()  # the forward's own block calls
    graph = aw.capture(loss, model=model)
    row = Row(case, len(graph.nodes))
    watch.armed = True
    want = torch.autograd.grad(loss, ps, retain_graph=True, allow_unused=True)
    row.recomputes["engine"], row.kept["engine"] = watch.take(), watch.alive()
    assert forwards > 0
    mem = graph.saved_memory()
    for nid in graph.nodes:
        graph.saved(nid)
    row.recomputes["saved reads"], row.kept["saved reads"] = watch.take(), watch.alive()
    row.kept["saved_memory bytes"] = sum(mem.values())
    steppers = {keep: aw.Stepper(graph, keep=keep) for keep in KEEPS}
    for keep, st in steppers.items():
        st.run()
        row.recomputes[f"run ({keep})"], row.kept[f"run ({keep})"] = watch.take(), watch.alive()
        for p, w in zip(ps, want):
            if w is not None and not torch.equal(st.grad(p), w):
                raise AssertionError(f"{case}: stepper (keep={keep}) and engine disagree")
        st.reset()
        st.run()
        row.recomputes[f"reset+run ({keep})"] = watch.take()
        row.kept[f"reset+run ({keep})"] = watch.alive()
        st.reset()
    watch.armed = False
    times = interleaved(loss, ps, steppers, repeats)
    row.ms = {k: median_ms(v) for k, v in times.items()}
    for st in steppers.values():
        st.close()
    graph.close()
    for h in watch.handles:
        h.remove()
    return row


def section(rows: list[Row], repeats: int, argv: list[str], tiny: bool) -> str:
    lines = [
        "## Checkpointing: non-reentrant activation checkpointing stepped by hand",
        "",
        f"- commit: {commit()}",
        f"- machine: {machine()}",
        f"- rerun: `{' '.join(['python benchmarks/bench_ckpt.py', *argv])}`",
        "- method: see the script's docstring. blocks = 4 x (Linear(d, d) + GELU) under "
        f"checkpoint ({'d 64, batch 8' if tiny else 'd 1024, batch 256'}); gpt2 = transformers "
        f"GPT-2 ({'2 layers, width 32, seq 8' if tiny else '6 layers, width 128, seq 64, batch 4'}"
        ") with gradient_checkpointing_enable(use_reentrant=False), train mode. Recomputes = "
        "block forwards beyond the forward's own; kept = bytes of recomputed storages alive "
        f"afterwards; time = median of {repeats} interleaved rounds (first dropped), 1 thread.",
        "",
        "| case | nodes | what | recomputes | kept bytes |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        for what, n in r.recomputes.items():
            lines.append(f"| {r.case} | {r.nodes} | {what} | {n} | {r.kept[what]} |")
    lines += [
        "",
        "| case | engine ms | stepper ms, tensors | stepper ms, summaries | saved_memory bytes |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.case} | {r.ms['engine']:.1f} | {r.ms['tensors']:.1f} ({r.ratio('tensors'):.2f}x)"
            f" | {r.ms['summaries']:.1f} ({r.ratio('summaries'):.2f}x) "
            f"| {r.kept['saved_memory bytes']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="small sizes (CI)")
    parser.add_argument("--repeats", type=int, default=None, help="timed rounds")
    parser.add_argument("--write", action="store_true", help="write RESULTS.md even with --tiny")
    parser.add_argument("--results", type=Path, default=RESULTS, help="the file to write")
    parser.add_argument("--cases", default=None, help="comma-separated subset: blocks,gpt2")
    args = parser.parse_args(argv)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        repeats = args.repeats or (1 if args.tiny else 9)
        names = args.cases.split(",") if args.cases else list(CASES)
        try:
            import transformers  # noqa: F401
        except ImportError:
            names = [n for n in names if n != "gpt2"]
            print("transformers is not installed: skipping gpt2")
        rows = []
        for name in names:
            row = measure(name, args.tiny, repeats)
            rows.append(row)
            print(name, row.recomputes, row.kept, {k: round(v, 2) for k, v in row.ms.items()},
                  f"tensors {row.ratio('tensors'):.2f}x", flush=True)  # fmt: skip
    finally:
        torch.set_num_threads(threads)
    text = section(rows, repeats, argv, args.tiny)
    print(text)
    if not args.tiny or args.write:
        write_section(SECTION, text, args.results)
        print(f"wrote {args.results}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
