"""Tensor summaries: the statistics on every edge, computed without a round trip per statistic.

Summarising an edge the obvious way (`t.norm().item()`, `t.min().item()`, ...) costs 35-55 us per
edge, more than the backward step that produced it. Two paths keep it cheap:

- small tensors (at most `SMALL_NUMEL` elements) are queued and summarised together: grouped by
  (shape, dtype), stacked into one `(k, n)` float64 matrix and reduced along its rows; rows become
  `Summary` objects only when asked for. Per tensor that costs about one `stack` entry (groups
  smaller than `MIN_BATCH` go one by one: a batch has a fixed cost of ~15 dispatches).
- larger tensors are summarised at once, while still in cache: `aminmax`, `sum`, `dot` (sum of
  squares) over memory order and the leading values, ~7 dispatches. Batching them would mean
  holding every gradient until the batch runs (the memory `keep="summaries"` exists to save) and
  reading it back cold. A large tensor that is a view of the one summarised just before (what
  `view`/`t`/`transpose`/pass-through backward nodes return) reuses its statistics.

Statistics follow torch's semantics: a NaN makes `norm`/`min`/`max`/`mean`/`std` NaN, an Inf
propagates; `nan` and `inf` count the offending elements. `std` is the sample standard deviation
(`t.std()`, correction 1); it is None below two elements, as are `min`/`max`/`mean` for an empty
tensor. Complex tensors are described by their magnitudes `|z|` (`norm` is then the usual 2-norm)
and list their values as `[re, im]` pairs. Integer and boolean tensors are summarised in float64
and list their values as ints/bools.

Precision: small tensors are reduced in float64 (two-pass std). Large float32 tensors use float32
sums, so `mean`/`norm` carry float32 rounding and `std` (from the sum and the sum of squares) loses
relative accuracy when |mean| >> std (about 1e-7 * mean**2 / std**2); a constant tensor reports
exactly 0. These are display numbers; exact values come from `edge_grad()`/`grad()`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from ..util.dtypes import dtype_name
from ..util.jsonsafe import encode, encode_float

__all__ = [
    "HEAD_VALUES",
    "MAX_LISTED",
    "MIN_BATCH",
    "SMALL_NUMEL",
    "SPARSE_DENSE_NUMEL",
    "Summary",
    "SummaryStore",
    "summarize",
]

#: Tensors with at most this many elements are summarised in batches (see the module docstring).
SMALL_NUMEL = 256
#: A batch costs ~15 dispatches whatever its size: fewer same-shape tensors than this are
#: summarised one by one (~7 dispatches each).
MIN_BATCH = 8
#: `values` lists every element up to this many, else the first `HEAD_VALUES`.
MAX_LISTED = 64
HEAD_VALUES = 8

_F64 = torch.float64
_FAST_REAL = (torch.float32, torch.float64)


@dataclass(frozen=True)
class Summary:
    """What a gradient looks like, in a few numbers (see the module docstring for semantics).

    Example:
        >>> s = Summary.of(torch.tensor([1.0, float("nan"), 3.0]))
        >>> s.nan, s.finite, s.values
        (1, False, [1.0, nan, 3.0])
    """

    shape: tuple[int, ...]
    dtype: str
    norm: float
    min: float | None
    max: float | None
    mean: float | None
    std: float | None
    #: Number of NaN elements (complex: either part NaN).
    nan: int
    #: Number of +/-Inf elements (complex: either part infinite).
    inf: int
    #: Every value when numel <= 64, else the first 8 (row-major). Complex: [re, im] pairs.
    values: list = field(default_factory=list)
    numel: int = 0

    @property
    def finite(self) -> bool:
        """True when the tensor holds no NaN and no Inf."""
        return self.nan == 0 and self.inf == 0

    @property
    def truncated(self) -> bool:
        """True when `values` holds only the first elements."""
        return len(self.values) < self.numel

    def as_dict(self) -> dict[str, Any]:
        """A JSON-safe dict: non-finite floats become "NaN", "Infinity" or "-Infinity".

        Example:
            >>> Summary.of(torch.tensor([float("inf"), 1.0])).as_dict()["max"]
            'inf'
        """
        return {
            "shape": list(self.shape),
            "dtype": self.dtype,
            "numel": self.numel,
            "norm": encode_float(self.norm),
            "min": encode_float(self.min),
            "max": encode_float(self.max),
            "mean": encode_float(self.mean),
            "std": encode_float(self.std),
            "nan": self.nan,
            "inf": self.inf,
            "values": encode(self.values),
        }

    @classmethod
    def of(cls, tensor: torch.Tensor) -> Summary:
        """Summarise one tensor (for many, `summarize()` batches the work).

        Example:
            >>> Summary.of(torch.ones(3)).norm
            1.7320508075688772
        """
        return summarize([tensor])[0]


def _n_listed(numel: int) -> int:
    return numel if numel <= MAX_LISTED else HEAD_VALUES


def _head(t: torch.Tensor, k: int) -> torch.Tensor:
    """The first `k` elements in row-major order without copying a large non-contiguous tensor."""
    if t.dim() == 0:
        return t.reshape(1)[:k]
    if t.is_contiguous():
        return t.view(-1)[:k]
    if t.shape[-1] >= k:
        return t[(0,) * (t.dim() - 1)][:k]
    return t.reshape(-1)[:k]


def _listed(vals: torch.Tensor) -> list:
    if vals.is_complex():
        return torch.view_as_real(vals.cpu().resolve_conj()).tolist()
    return vals.cpu().tolist()


def _std(n: int, sumsq_centered: float) -> float | None:
    if n < 2:
        return None
    return math.sqrt(max(sumsq_centered, 0.0) / (n - 1))


#: A summary before it becomes a `Summary`: the constructor's arguments, in order. Building the
#: frozen dataclass costs ~2 us, so stores keep raw tuples and build on first request.
Raw = tuple


def _empty(t: torch.Tensor) -> Raw:
    return (tuple(t.shape), dtype_name(t.dtype), 0.0, None, None, None, None, 0, 0, [], 0)


def _nonfinite_counts(t: torch.Tensor) -> tuple[int, int]:
    if not (t.is_floating_point() or t.is_complex()):
        return 0, 0
    counts = torch.stack((torch.isnan(t).sum(), torch.isinf(t).sum())).tolist()
    return int(counts[0]), int(counts[1])


def _finish(
    t: torch.Tensor, n: int, mn: float, mx: float, s: float, sq: float, vals: list, x: torch.Tensor
) -> Raw:
    """Raw summary from min, max, sum and sum of squares (of `x`, the real view of `t`)."""
    nan = inf = 0
    if not (math.isfinite(s) and math.isfinite(sq)):
        nan, inf = _nonfinite_counts(t)
        if nan == 0 and inf == 0:
            # Overflow of a float32 sum of squares, not a non-finite element: redo in float64.
            x64 = x.reshape(-1).to(_F64)
            s, sq = torch.stack((x64.sum(), torch.dot(x64, x64))).tolist()
    mean = s / n
    if mn == mx and nan == 0 and inf == 0:
        std: float | None = 0.0 if n > 1 else None
    else:
        std = _std(n, sq - s * mean)
    norm = math.sqrt(sq) if sq >= 0 else sq
    return (tuple(t.shape), dtype_name(t.dtype), norm, mn, mx, mean, std, nan, inf, vals, n)


def _reduce_flat(t: torch.Tensor, n: int, flat: torch.Tensor, head: torch.Tensor) -> Raw:
    """Raw summary of `t` from `flat`, a 1-d real view (or float64 copy) of all its elements."""
    mn, mx = torch.aminmax(flat)
    s, sq = flat.sum().item(), torch.dot(flat, flat).item()
    return _finish(t, n, mn.item(), mx.item(), s, sq, head.tolist(), flat)


#: Sparse tensors up to this many elements are summarised through their dense form (exact
#: `values` too); larger ones from their stored values alone (see `_summarize_special`).
SPARSE_DENSE_NUMEL = 1 << 20


def _special(t: torch.Tensor) -> bool:
    """Sparse (any non-strided layout), meta, or an efficient ZeroTensor: no storage to reduce
    over as it is (a ZeroTensor, which `torch.sgn`'s backward returns, has none at all)."""
    return t.layout is not torch.strided or t.is_meta or t._is_zerotensor()


def _summarize_zero(t: torch.Tensor) -> Raw:
    """An efficient ZeroTensor summarised as the zeros it stands for, without materialising it."""
    n = t.numel()
    if n == 0:
        return _empty(t)
    k = _n_listed(n)
    if t.is_complex():
        vals: list = [[0.0, 0.0] for _ in range(k)]
    else:
        vals = [0.0 if t.is_floating_point() else 0] * k
    std = 0.0 if n > 1 else None
    return (tuple(t.shape), dtype_name(t.dtype), 0.0, 0.0, 0.0, 0.0, std, 0, 0, vals, n)


def _summarize_special(t: torch.Tensor) -> Raw:
    """A sparse or meta tensor (sparse gradients: `Embedding(sparse=True)`, `torch.sparse.mm`).

    Small sparse tensors go through their dense form. Large ones are described exactly from their
    stored values plus the implicit zeros (coalesced first, so duplicates are summed), without
    densifying; `values` then lists the first elements only for a plain COO layout (else none).
    A meta tensor has no values: shape and dtype only, NaN norm.
    """
    if t.requires_grad:
        t = t.detach()
    if t._is_zerotensor():
        return _summarize_zero(t)
    n = t.numel()
    if t.is_meta:
        nan = math.nan
        return (tuple(t.shape), dtype_name(t.dtype), nan, None, None, None, None, 0, 0, [], n)
    if n == 0:
        return _empty(t)
    if n <= SPARSE_DENSE_NUMEL:
        return _summarize_one(t.to_dense())
    c = (t if t.layout is torch.sparse_coo else t.to_sparse_coo()).coalesce()
    v = c.values()
    x = (v.abs() if v.is_complex() else v).to(_F64).reshape(-1)
    if x.numel():
        mn, mx, s, sq = torch.stack((x.min(), x.max(), x.sum(), torch.dot(x, x))).tolist()
        nan_n, inf_n = _nonfinite_counts(v)
    else:
        mn = mx = s = sq = 0.0
        nan_n = inf_n = 0
    if x.numel() < n and not nan_n:  # implicit zeros
        mn, mx = min(mn, 0.0), max(mx, 0.0)
    head: list = []
    if c.dense_dim() == 0 and c.sparse_dim() > 0:
        stride = torch.tensor(
            torch.empty(tuple(c.shape), device="meta").stride(), dtype=torch.long
        ).to(c.device)
        flat = (c.indices() * stride[:, None]).sum(0)
        sel = flat < HEAD_VALUES
        dense_head = torch.zeros(min(n, HEAD_VALUES), dtype=c.dtype, device=c.device)
        dense_head[flat[sel]] = v[sel]
        head = _listed(dense_head)
    mean = s / n
    norm = math.sqrt(sq) if sq >= 0 else sq
    std = _std(n, sq - s * mean)
    return (tuple(t.shape), dtype_name(t.dtype), norm, mn, mx, mean, std, nan_n, inf_n, head, n)


def _summarize_one(t: torch.Tensor) -> Raw:
    """One tensor, now: about seven cheap dispatches (see the module docstring).

    Order-independent statistics are taken over memory order: a dense non-contiguous gradient (a
    transpose, which `t`/`mm` backward nodes return all the time) is permuted back to its
    contiguous layout first, since a strided `aminmax` is 5x slower. `.item()` on CPU costs
    ~0.3 us, less than stacking the four statistics into one tensor.
    """
    if _special(t):
        return _summarize_special(t)
    if t.requires_grad:
        t = t.detach()
    n = t.numel()
    if n == 0:
        return _empty(t)
    k = _n_listed(n)
    dtype = t.dtype
    if n <= SMALL_NUMEL and dtype is torch.float32:
        flat = t.reshape(-1).to(_F64)  # cheap at this size, and as precise as a batch
        return _reduce_flat(t, n, flat, _head(t, k))
    if dtype is torch.float32 or dtype is torch.float64:
        if t.is_contiguous():
            flat = t.view(-1)
            head = flat[:k]
        else:
            head = _head(t, k)
            strides = t.stride()
            p = t.permute(sorted(range(t.dim()), key=strides.__getitem__, reverse=True))
            flat = p.view(-1) if p.is_contiguous() else None
        if flat is not None:
            return _reduce_flat(t, n, flat, head)
        x = t  # overlapping or gappy (an expand, a strided slice): reduce it as it is
    elif t.is_complex():
        x = t.abs()
    elif t.is_floating_point():
        x = t.float()
    else:
        x = t.to(_F64)
    mn, mx = torch.aminmax(x)
    sq = torch.linalg.vector_norm(x).square()
    mn, mx, s, sq = torch.stack((mn, mx, x.sum(), sq.to(x.dtype))).tolist()
    return _finish(t, n, mn, mx, s, sq, _listed(_head(t, k)), x)


def _dense(t: torch.Tensor) -> bool:
    """True when `t` covers a block of memory exactly once (any permutation of a contiguous one)."""
    if t.is_contiguous():
        return True
    expected = 1
    for stride, size in sorted((st, sz) for st, sz in zip(t.stride(), t.shape) if sz != 1):
        if stride != expected:
            return False
        expected *= size
    return True


class _Group:
    """Summaries of a batch of same-shape small tensors, as arrays; rows become `Summary` args
    only when asked for (building ~10k tuples or Summaries per run would cost more than the
    statistics themselves)."""

    __slots__ = ("counts", "dtype", "heads", "n", "shape", "stats")

    def __init__(
        self,
        shape: tuple[int, ...],
        dtype: str,
        n: int,
        stats: Any,
        heads: Any,
        counts: dict[int, tuple[int, int]],
    ) -> None:
        self.shape, self.dtype, self.n = shape, dtype, n
        self.stats, self.heads, self.counts = stats, heads, counts

    def row(self, i: int) -> Raw:
        lo, hi, mu, sd, norm = self.stats[i].tolist()
        nan, inf = self.counts.get(i, (0, 0))
        std = None if self.n < 2 else sd
        return (
            self.shape,
            self.dtype,
            norm,
            lo,
            hi,
            mu,
            std,
            nan,
            inf,
            self.heads[i].tolist(),
            self.n,
        )


def _numpy(t: torch.Tensor) -> Any:
    """A numpy view for fast `tolist()` (torch's own costs ~0.3 us per element)."""
    t = t.detach().cpu()
    if t.dtype in (torch.bfloat16, torch.float16):
        t = t.float()
    if t.is_complex():
        t = torch.view_as_real(t.resolve_conj())
    return t.numpy()


def _summarize_group(ts: Sequence[torch.Tensor]) -> _Group | list[Raw]:
    """Same-shape, same-dtype small tensors: one stacked matrix, row reductions, no per-row
    Python work until a row is asked for."""
    t0 = ts[0]
    n = t0.numel()
    if n == 0:
        return [_empty(t) for t in ts]
    m = torch.stack(ts).detach().reshape(len(ts), n)
    k = _n_listed(n)
    heads = _numpy(m[:, :k])
    x = (m.abs() if m.is_complex() else m).to(_F64)
    mn, mx = torch.aminmax(x, dim=1)
    mean = x.sum(1) / n
    centered = x - mean[:, None]
    sd = ((centered * centered).sum(1) / max(n - 1, 1)).sqrt()
    stats = torch.stack((mn, mx, mean, sd, torch.linalg.vector_norm(x, dim=1)), 1)
    counts: dict[int, tuple[int, int]] = {}
    bad = torch.nonzero(~torch.isfinite(stats[:, 3:]).all(1)).view(-1)
    if len(bad):
        sub = m[bad]
        nf = torch.stack((torch.isnan(sub).sum(1), torch.isinf(sub).sum(1)), 1).tolist()
        counts = {i: (int(a), int(b)) for i, (a, b) in zip(bad.tolist(), nf)}
    return _Group(tuple(t0.shape), dtype_name(t0.dtype), n, stats.numpy(), heads, counts)


def _summarize_raw(tensors: Sequence[torch.Tensor]) -> list[Raw | tuple[_Group, int]]:
    """Raw summaries in input order: tuples, or (group, row) for batched small tensors."""
    out: list = [None] * len(tensors)
    groups: dict[tuple, list[int]] = {}
    for i, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"can only summarise tensors, got {type(t).__name__} at position {i}")
        if t.numel() <= SMALL_NUMEL and not _special(t):
            groups.setdefault((t.shape, t.dtype, t.device), []).append(i)
        else:
            out[i] = _summarize_one(t)
    for idx in groups.values():
        if len(idx) < MIN_BATCH:
            for i in idx:
                out[i] = _summarize_one(tensors[i])
            continue
        group = _summarize_group([tensors[i] for i in idx])
        if isinstance(group, list):
            for i, raw in zip(idx, group):
                out[i] = raw
        else:
            for row, i in enumerate(idx):
                out[i] = (group, row)
    return out


def _materialize(raw: Raw | tuple[_Group, int]) -> Summary:
    if len(raw) == 2:
        return Summary(*raw[0].row(raw[1]))
    return Summary(*raw)


def summarize(tensors: Iterable[torch.Tensor]) -> list[Summary]:
    """Summaries of many tensors at once, in input order (see the module docstring).

    Example:
        >>> [s.numel for s in summarize([torch.ones(2), torch.zeros(3)])]
        [2, 3]
    """
    return [_materialize(raw) for raw in _summarize_raw(list(tensors))]


class SummaryStore:
    """Summaries keyed by int, computed as gradients flow; small ones batched until `flush()`.

    `add(key, tensor)` summarises a large tensor at once and queues a small one (held until the
    next flush: at most `max_pending`, so at most `max_pending * SMALL_NUMEL` elements). A large
    tensor that is a view of one summarised just before (same memory, same elements: what
    `view`/`t`/`transpose` backward nodes and pass-through nodes return) reuses its statistics;
    the last `recent` large tensors are held for that, so their memory cannot be reused under us.
    `get(key)` builds the `Summary` on first request.

    Example:
        >>> store = SummaryStore()
        >>> store.add(0, torch.ones(4))
        >>> store.get(0).mean
        1.0
    """

    def __init__(self, max_pending: int = 4096, recent: int = 4) -> None:
        self.max_pending = max_pending
        self._raw: dict[int, Raw | tuple[_Group, int]] = {}
        self._done: dict[int, Summary] = {}
        self._keys: list[int] = []
        self._tensors: list[torch.Tensor] = []
        self._recent: dict[tuple, tuple[torch.Tensor, Raw]] = {}
        self._n_recent = recent

    def add(self, key: int, t: torch.Tensor) -> None:
        """Queue tensor `t`'s summary under `key` (computed in a batch on the next `get`/`flush`).

        Example:
            >>> store = SummaryStore(); store.add(7, torch.zeros(2)); 7 in store
            True
        """
        if _special(t):  # sparse or meta: no data pointer to match views on, no batching
            self._raw[key] = _summarize_special(t)
            return
        n = t.numel()
        if n <= SMALL_NUMEL:
            self._keys.append(key)
            self._tensors.append(t)
            if len(self._keys) >= self.max_pending:
                self.flush()
            return
        rkey = (t.data_ptr(), n, t.dtype)
        hit = self._recent.get(rkey)
        if hit is not None:
            prev, raw = hit
            if t is prev or (t.is_contiguous() and prev.is_contiguous()):
                self._raw[key] = (tuple(t.shape), *raw[1:])
                return
            if _dense(t) and _dense(prev):
                vals = _listed(_head(t.detach(), HEAD_VALUES))
                self._raw[key] = (tuple(t.shape), *raw[1:9], vals, raw[10])
                return
        raw = _summarize_one(t)
        self._raw[key] = raw
        recent = self._recent
        recent[rkey] = (t, raw)
        if len(recent) > self._n_recent:
            del recent[next(iter(recent))]

    def get(self, key: int) -> Summary | None:
        """The summary under `key` (flushing pending work first), or None when there is none.

        Example:
            >>> SummaryStore().get(3) is None
            True
        """
        s = self._done.get(key)
        if s is not None:
            return s
        raw = self._raw.pop(key, None)
        if raw is None:
            if not self._keys:
                return None
            self.flush()
            raw = self._raw.pop(key, None)
            if raw is None:
                return None
        s = self._done[key] = _materialize(raw)
        return s

    def __contains__(self, key: int) -> bool:
        return key in self._done or key in self._raw or key in self._keys

    def put(self, key: int, summary: Summary) -> None:
        """Store an already computed summary under `key`.

        Example:
            >>> store = SummaryStore(); store.put(1, Summary.of(torch.ones(2))); store.get(1).norm
            1.4142135623730951
        """
        self._done[key] = summary

    def pop(self, key: int) -> None:
        """Forget the summary stored under `key`; a missing key is ignored.

        Example:
            >>> store = SummaryStore(); store.add(1, torch.ones(2)); _ = store.get(1)
            >>> store.pop(1); 1 in store
            False
        """
        self._done.pop(key, None)
        self._raw.pop(key, None)

    @property
    def pending(self) -> int:
        """How many tensors wait to be summarised.
        """
        return len(self._keys)

    def flush(self) -> None:
        """Summarise every queued small tensor (one batch per shape and dtype).

        Example:
            >>> store = SummaryStore(); store.add(1, torch.ones(2)); store.flush(); store.pending
            0
        """
        if not self._keys:
            return
        keys, ts = self._keys, self._tensors
        self._keys, self._tensors = [], []
        for key, raw in zip(keys, _summarize_raw(ts)):
            self._raw[key] = raw

    def discard(self, keys: Iterable[int]) -> None:
        """Forget `keys` entirely, queued or computed (their step was undone or failed).

        Example:
            >>> store = SummaryStore(); store.add(1, torch.ones(2)); store.discard([1]); 1 in store
            False
        """
        keys = set(keys)
        if not keys:
            return
        for key in keys:
            self.pop(key)
        if self._keys and not keys.isdisjoint(self._keys):
            kept = [(k, t) for k, t in zip(self._keys, self._tensors) if k not in keys]
            self._keys = [k for k, _ in kept]
            self._tensors = [t for _, t in kept]

    def release_recent(self) -> None:
        """Drop the references held for view detection (end of a run).

        Example:
            >>> store = SummaryStore(); store.add(1, torch.ones(2)); store.release_recent()
        """
        self._recent.clear()

    def clear(self) -> None:
        """Forget everything, pending and done.

        Example:
            >>> store = SummaryStore(); store.add(1, torch.ones(2)); store.clear(); 1 in store
            False
        """
        self._raw.clear()
        self._done.clear()
        self._keys, self._tensors = [], []
        self._recent.clear()
