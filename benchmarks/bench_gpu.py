"""Benchmark: the stepper and `aw.record` against the plain engine on a GPU (issue 28).

Run by `.ci/gpu` (or `python benchmarks/bench_gpu.py`): two of the zoo's transformers models
(tests/zoo/models.py: GPT-2 with eager attention, Llama with SDPA and grouped-query attention)
at realistic sizes on `cuda`: GPT-2 small's shape (12 layers, width 768, batch 8 x 256 tokens)
and a 8-layer Llama (width 1024, 16 heads, 4 KV heads, batch 4 x 256). Per model, interleaved
rounds in a rotated order, each call followed by `torch.cuda.synchronize()`, medians with the
warm-up round dropped: the engine (`torch.autograd.grad(loss, params, retain_graph=True)`), a
`Stepper(graph, keep="summaries").run()` (graph captured once; reset untimed between rounds) and
the engine call inside `with aw.record(loss):` (capture and hooks included). Every stepped
gradient is checked against the engine's (CUDA reductions may use atomics: equal up to
summation order), the recorded ones bit for bit.

`--tiny --device cpu` (what `.ci/gpu --dry-run` runs): the zoo's small sizes on the CPU, one
round: the same code path, no device. Prints a table; writes nothing.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

import autograd_widget as aw

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the zoo's builders
os.environ.setdefault("HF_HUB_OFFLINE", "1")
from zoo.models import MODELS, Built, forward, params  # noqa: E402

NAMES = ("gpt2", "llama")


def realistic(name: str) -> Built:
    """The zoo model `name` at a size a GPU is used for (random weights, nothing downloaded)."""
    import transformers

    transformers.logging.set_verbosity_error()
    vocab = 8192
    if name == "gpt2":
        cfg = transformers.GPT2Config(
            vocab_size=vocab, n_positions=256, n_embd=768, n_layer=12, n_head=12,
            bos_token_id=0, eos_token_id=0, attn_implementation="eager",
        )  # fmt: skip
        model, batch = transformers.GPT2LMHeadModel(cfg), 8
    elif name == "llama":
        cfg = transformers.LlamaConfig(
            vocab_size=vocab, hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
            num_attention_heads=16, num_key_value_heads=4, max_position_embeddings=256,
            attn_implementation="sdpa",
        )  # fmt: skip
        model, batch = transformers.LlamaForCausalLM(cfg), 4
    else:
        raise ValueError(f"no realistic size for {name!r}; one of {NAMES}")
    ids = torch.randint(0, vocab, (batch, 256))
    return Built(model, {"input_ids": ids, "labels": ids.clone()}, lambda out: out.loss)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(calls: dict[str, Callable[[], Any]], resets: dict[str, Callable[[], None]],
          repeats: int, device: torch.device) -> dict[str, float]:
    """Median ms per call name over `repeats` rounds (a warm-up round first, dropped)."""
    times: dict[str, list[float]] = {k: [] for k in calls}
    order = list(calls)
    for i in range(repeats + 1):
        for k in order[i % len(order):] + order[: i % len(order)]:
            gc.collect()
            _sync(device)
            t0 = time.perf_counter()
            calls[k]()
            _sync(device)
            times[k].append(time.perf_counter() - t0)
            if k in resets:
                resets[k]()
    return {k: statistics.median(v[1:] if len(v) > 1 else v) * 1e3 for k, v in times.items()}


def measure(name: str, device: torch.device, tiny: bool, repeats: int) -> dict:
    torch.manual_seed(0)
    built = MODELS[name]("small") if tiny else realistic(name)
    built.model.to(device)
    built.inputs = {k: v.to(device) for k, v in built.inputs.items()}
    loss = forward(built, track=False)
    ps = params(built.model)
    graph = aw.capture(loss)
    stepper = aw.Stepper(graph, keep="summaries")
    recorded: dict[str, Any] = {}

    def engine() -> None:
        recorded["engine"] = torch.autograd.grad(loss, ps, retain_graph=True)

    def record() -> None:
        with aw.record(loss) as rec:
            recorded["record"] = torch.autograd.grad(loss, ps, retain_graph=True)
        recorded["recording"] = rec

    ms = timed({"engine": engine, "stepper": stepper.run, "record": record},
               {"stepper": stepper.reset}, repeats, device)  # fmt: skip
    stepper.run()
    for p, want, rec in zip(ps, recorded["engine"], recorded["record"]):
        got = stepper.grad(p)
        assert got is not None and got.device == want.device, f"{name}: no stepped gradient"
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5, msg=f"{name}: stepper")
        assert torch.equal(rec, want), f"{name}: a recorded gradient differs from the engine's"
    assert recorded["recording"].warnings == [], recorded["recording"].warnings
    row = {"name": name, "nodes": len(graph.nodes), "params": sum(p.numel() for p in ps), **ms}
    stepper.close()
    graph.close()
    return row


def table(rows: list[dict]) -> str:
    lines = ["| model | nodes | params | engine ms | stepper ms | ratio | record ms | ratio |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['nodes']} | {r['params'] / 1e6:.2f}M | {r['engine']:.2f} | "
            f"{r['stepper']:.2f} | {r['stepper'] / r['engine']:.2f}x | {r['record']:.2f} | "
            f"{r['record'] / r['engine']:.2f}x |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    parser.add_argument("--tiny", action="store_true", help="the zoo's small sizes")
    parser.add_argument("--repeats", type=int, default=None, help="rounds per model")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("bench_gpu: no CUDA device (use --device cpu --tiny for a dry run)", file=sys.stderr)
        return 2
    card = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    repeats = args.repeats or (1 if args.tiny else 5)
    size = "zoo small" if args.tiny else "realistic"
    print(f"bench_gpu: {card}, torch {torch.__version__}, {size} sizes, {repeats} rounds "
          f"(medians, warm-up dropped)", flush=True)  # fmt: skip
    rows = []
    for name in NAMES:
        rows.append(measure(name, device, args.tiny, repeats))
        print("done:", table(rows[-1:]).splitlines()[-1], flush=True)
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
