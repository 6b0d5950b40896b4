"""Small float tensors are summarised in one batch of segment reductions (`summarize_small`,
issue 18 "Overhead"): every row must equal `Summary.of` of its tensor exactly, whatever else is in
the batch, and agree with torch's own statistics to float64 rounding."""

from __future__ import annotations

import math
import random

import pytest
import torch

from autograd_widget.core.store import MAX_PENDING_NUMEL, SummaryStore
from autograd_widget.core.summary import (
    SMALL_NUMEL,
    Summary,
    materialize,
    summarize,
    summarize_small,
)


def _tensors(seed: int) -> list[torch.Tensor]:
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(120):
        n = rng.randint(1, SMALL_NUMEL)
        dtype = rng.choice([torch.float32, torch.float64])
        t = torch.randn(n, generator=gen, dtype=dtype) * 10 ** rng.uniform(-8, 8)
        t = t + rng.uniform(-3, 3)
        r = rng.random()
        if r < 0.08:
            t[rng.randrange(n)] = float("nan")
        elif r < 0.16:
            t[rng.randrange(n)] = -float("inf")
        elif r < 0.24:
            t = torch.full((n,), 0.1, dtype=dtype)  # a constant: std exactly 0
        if n % 4 == 0 and rng.random() < 0.5:
            t = t.reshape(4, n // 4)
            if rng.random() < 0.5:
                t = t.t()  # non-contiguous
        out.append(t)
    out.append(torch.tensor(2.5))  # 0-dim
    out.append(torch.randn(3, dtype=torch.float64, requires_grad=True))
    return out


def _same(a: Summary, b: Summary) -> bool:
    return a.as_dict() == b.as_dict()  # NaN-safe


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_each_row_of_a_batch_equals_its_own_summary(seed):
    ts = _tensors(seed)
    batch = [materialize(r) for r in summarize_small(ts)]
    shuffled = list(range(len(ts)))
    random.Random(seed).shuffle(shuffled)
    other = [materialize(r) for r in summarize_small([ts[i] for i in shuffled])]
    for j, i in enumerate(shuffled):
        assert _same(other[j], batch[i])  # independent of the batch's other rows
    assert [s.as_dict() for s in summarize(ts)] == [s.as_dict() for s in batch]
    for t, s in zip(ts, batch):
        assert _same(s, Summary.of(t))
        x = t.detach().double().reshape(-1)
        n = x.numel()
        assert (s.shape, s.numel) == (tuple(t.shape), n)
        assert s.dtype == str(t.dtype).removeprefix("torch.")
        assert s.nan == int(x.isnan().sum()) and s.inf == int(x.isinf().sum())
        if s.finite:
            assert s.values == x[: n if n <= 64 else 8].tolist()
            assert (s.min, s.max) == (x.min().item(), x.max().item())
            assert math.isclose(s.norm, x.norm().item(), rel_tol=1e-13)
            assert math.isclose(s.mean, x.mean().item(), rel_tol=1e-12, abs_tol=1e-13 * s.norm)
            if n > 1:
                spread = 1e-13 * (abs(s.mean) + x.std().item())
                assert math.isclose(s.std, x.std().item(), rel_tol=1e-9, abs_tol=spread)
            if s.min == s.max and n > 1:
                assert s.std == 0.0
        else:
            assert math.isnan(s.mean) or math.isinf(s.mean)


def test_the_store_batches_small_gradients_of_every_shape_and_matches_summary_of():
    ts = _tensors(5)
    store = SummaryStore()
    for i, t in enumerate(ts):
        store.add(i, t)
        # what waits is bounded: flushed once past MAX_PENDING_NUMEL elements
        assert sum(x.numel() for x in ts[i - store.pending + 1 : i + 1]) <= MAX_PENDING_NUMEL
    assert 0 < store.pending < len(ts)
    assert store.get(len(ts) - 1) is not None and store.pending == 0  # a read flushes what waits
    for i, t in enumerate(ts):
        assert _same(store.get(i), Summary.of(t))


def test_mixed_queue_other_dtypes_still_summarised():
    small = [torch.arange(5), torch.ones(3, dtype=torch.float16), torch.randn(4)]
    store = SummaryStore()
    for i, t in enumerate(small):
        store.add(i, t)
    for i, t in enumerate(small):
        assert _same(store.get(i), Summary.of(t))
