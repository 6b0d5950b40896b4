"""What the stepper benchmarks share: timing the engine against steppers in interleaved, rotated
rounds (every call from the same state, a garbage collection before each), and the median that
drops the warm-up round."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any

import torch


def median_ms(xs: list[float]) -> float:
    """Median in ms of per-round seconds, the first (warm-up) round dropped when there are more."""
    return statistics.median(xs[1:] if len(xs) > 1 else xs) * 1e3


def interleaved(
    loss: torch.Tensor, params: list[torch.Tensor], steppers: Mapping[str, Any], repeats: int
) -> dict[str, list[float]]:
    """Seconds per round of the engine (`torch.autograd.grad(loss, params)`) and of each
    stepper's `run()` (keyed as in `steppers`), `repeats + 1` rounds, each in a rotated order;
    a stepper is reset (untimed) after its run, so nothing of one run is held into the next
    (a stepper that kept every tensor makes whatever runs next allocate fresh memory)."""

    def engine() -> None:
        torch.autograd.grad(loss, params, retain_graph=True, allow_unused=True)

    calls: dict[str, Callable[[], Any]] = {"engine": engine}
    calls.update({k: st.run for k, st in steppers.items()})
    times: dict[str, list[float]] = {k: [] for k in calls}
    order = list(calls)
    for i in range(repeats + 1):
        for k in order[i % len(order) :] + order[: i % len(order)]:
            gc.collect()
            t0 = time.perf_counter()
            calls[k]()
            times[k].append(time.perf_counter() - t0)
            if k in steppers:
                steppers[k].reset()
    return times
