"""Tensor summaries: the statistics on every edge, computed without a round trip per statistic.

Summarising an edge the obvious way (`t.norm().item()`, `t.min().item()`, ...) costs 35-55 us per
edge, more than the backward step that produced it. Two paths keep it cheap:

- small tensors (at most `SMALL_NUMEL` elements) are queued and summarised together. Float32 and
  float64 CPU ones, of any shapes, go into ONE float64 array and a few numpy segment reductions
  (`summarize_small`: ~70 us for 50 tensors, where one by one cost ~13 us each); a row's numbers
  depend only on its own elements, so `Summary.of` (a batch of one) gives exactly the same.
  Others are grouped by (shape, dtype), stacked into one `(k, n)` float64 matrix and reduced
  along its rows (groups smaller than `MIN_BATCH` go one by one: a batch has a fixed cost of ~15
  dispatches). Rows become `Summary` objects only when asked for.
- larger tensors are summarised at once, while still in cache (a stepper's store, core/store.py,
  computes only their norm while stepping and the rest on first read): `aminmax`, `sum`, `dot` (sum
  of squares) over memory order and the leading values, ~7 dispatches. Batching them would mean
  holding every gradient until the batch runs (the memory `keep="summaries"` exists to save) and
  reading it back cold. A large tensor that is a view of the one summarised just before (what
  `view`/`t`/`transpose`/pass-through backward nodes return) reuses its statistics.

Statistics follow torch's semantics: a NaN makes `norm`/`min`/`max`/`mean`/`std` NaN, an Inf
propagates; `nan` and `inf` count the offending elements. `std` is the sample standard deviation
(`t.std()`, correction 1); it is None below two elements, as are `min`/`max`/`mean` for an empty
tensor. Complex tensors are described by their magnitudes `|z|` (`norm` is then the usual 2-norm)
and list their values as `[re, im]` pairs. Integer and boolean tensors are summarised in float64
and list their values as ints/bools.

Precision: small tensors are reduced in float64 (numpy's pairwise sums, two-pass std). Large
float32 tensors use float32 sums, so `mean`/`norm` carry float32 rounding and `std` (from the sum
and the sum of squares) loses relative accuracy when |mean| >> std (about 1e-7 * mean**2 /
std**2); a constant tensor reports exactly 0. These are display numbers; exact values come from
`edge_grad()`/`grad()`.

DTensors (tensor parallel): a summary describes this rank's local shard (`to_local()`: its shape,
its numbers) and says so in `Summary.shard` ("local shard [16, 16] of a DTensor [32, 16], S(0) on
mesh (2,) cpu", core/dtensor.py); global statistics would need every rank at once. They are
summarised one by one (`summarize_one`), never batched with plain tensors.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from itertools import accumulate
from typing import Any

import numpy as np
import torch

from ..util.dtypes import dtype_name
from ..util.jsonsafe import encode, encode_float
from .dtensor import describe, is_wrapped, local_tensor

__all__ = [
    "HEAD_VALUES",
    "MAX_LISTED",
    "MIN_BATCH",
    "SMALL_NUMEL",
    "SPARSE_DENSE_NUMEL",
    "Raw",
    "Summary",
    "head_values",
    "is_dense",
    "is_special",
    "large_norm",
    "materialize",
    "summarize",
    "summarize_one",
    "summarize_raw",
    "summarize_small",
    "summarize_special",
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
#: Half-precision norms are accumulated and reported in float32 (`large_norm`).
_NORM_DTYPE = {torch.float16: torch.float32, torch.bfloat16: torch.float32}


@dataclass(frozen=True, eq=False, repr=False)
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
    #: None for a plain tensor; for a DTensor, what the numbers describe: this rank's local
    #: shard, with the global shape and the placements (core/dtensor.py `describe`).
    shard: str | None = None

    def _fields(self) -> tuple:
        return tuple(getattr(self, name) for name in _FIELDS)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Summary):
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # `values` is a list, as before

    def __repr__(self) -> str:
        # `shard` only where it says something (a DTensor's summary): a plain tensor's summary
        # reads as it always has
        inner = ", ".join(f"{n}={v!r}" for n, v in zip(_FIELDS, self._fields())
                          if n != "shard" or v is not None)
        return f"Summary({inner})"

    def __reduce__(self) -> tuple:
        return (Summary, self._fields())

    @property
    def finite(self) -> bool:
        """True when the tensor holds no NaN and no Inf."""
        return self.nan == 0 and self.inf == 0

    @property
    def truncated(self) -> bool:
        """True when `values` holds only the first elements."""
        return len(self.values) < self.numel

    def as_dict(self) -> dict[str, Any]:
        """A JSON-safe dict: non-finite floats become "NaN", "Infinity" or "-Infinity"; the key
        "shard" only for a DTensor's summary.

        Example:
            >>> Summary.of(torch.tensor([float("inf"), 1.0])).as_dict()["max"]
            'inf'
        """
        d = {
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
        if self.shard is not None:
            d["shard"] = self.shard
        return d

    @classmethod
    def of(cls, tensor: torch.Tensor) -> Summary:
        """Summarise one tensor (for many, `summarize()` batches the work).

        Example:
            >>> Summary.of(torch.ones(3)).norm
            1.7320508075688772
        """
        return summarize([tensor])[0]


_FIELDS = tuple(f.name for f in fields(Summary))


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


def head_values(t: torch.Tensor) -> list:
    """The first `HEAD_VALUES` values of `t` (row-major) as a list, what a large tensor's
    `Summary.values` holds.

    Example:
        >>> head_values(torch.arange(20.0).reshape(4, 5).t())
        [0.0, 5.0, 10.0, 15.0, 1.0, 6.0, 11.0, 16.0]
    """
    return _listed(_head(t.detach(), HEAD_VALUES))


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


def large_norm(t: torch.Tensor) -> tuple[float, int, int]:
    """(norm, nan count, inf count) of a floating strided tensor: one `vector_norm` (the
    counts only when the norm is not finite; a float32 overflow is redone in float64). The norm
    every summary of such a tensor with more than `SMALL_NUMEL` elements reports.

    Example:
        >>> large_norm(torch.tensor([3.0, 4.0, float("inf")]))
        (inf, 0, 1)
    """
    norm = torch.linalg.vector_norm(t, dtype=_NORM_DTYPE.get(t.dtype)).item()
    if math.isfinite(norm):
        return norm, 0, 0
    nan, inf = _nonfinite_counts(t)
    if nan == 0 and inf == 0:
        norm = torch.linalg.vector_norm(t, dtype=_F64).item()
    return norm, nan, inf


def _reduce_flat(t: torch.Tensor, n: int, flat: torch.Tensor, head: torch.Tensor) -> Raw:
    """Raw summary of `t` from `flat`, a 1-d real view (or float64 copy) of all its elements."""
    mn, mx = torch.aminmax(flat)
    s, sq = flat.sum().item(), torch.dot(flat, flat).item()
    return _finish(t, n, mn.item(), mx.item(), s, sq, head.tolist(), flat)


#: Sparse tensors up to this many elements are summarised through their dense form (exact
#: `values` too); larger ones from their stored values alone (see `summarize_special`).
SPARSE_DENSE_NUMEL = 1 << 20


def is_special(t: torch.Tensor) -> bool:
    """Sparse (any non-strided layout), meta, or an efficient ZeroTensor: no storage to reduce
    over as it is (a ZeroTensor, which `torch.sgn`'s backward returns, has none at all).

    Example:
        >>> is_special(torch.ones(2)), is_special(torch.ones(2).to_sparse())
        (False, True)
    """
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


def summarize_special(t: torch.Tensor) -> Raw:
    """A sparse or meta tensor (sparse gradients: `Embedding(sparse=True)`, `torch.sparse.mm`).

    Small sparse tensors go through their dense form. Large ones are described exactly from their
    stored values plus the implicit zeros (coalesced first, so duplicates are summed), without
    densifying; `values` then lists the first elements only for a plain COO layout (else none).
    A meta tensor has no values: shape and dtype only, NaN norm. Returns a raw summary (the
    `Summary` constructor's arguments).

    Example:
        >>> summarize_special(torch.tensor([0.0, 2.0]).to_sparse())[3:6]  # min, max, mean
        (0.0, 2.0, 1.0)
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
        return summarize_one(t.to_dense())
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


def summarize_one(t: torch.Tensor) -> Raw:
    """One tensor, now: about seven cheap dispatches (see the module docstring). A DTensor is
    summarised by its local shard, `shard` saying so.

    Order-independent statistics are taken over memory order: a dense non-contiguous gradient (a
    transpose, which `t`/`mm` backward nodes return all the time) is permuted back to its
    contiguous layout first, since a strided `aminmax` is 5x slower. `.item()` on CPU costs
    ~0.3 us, less than stacking the four statistics into one tensor. Returns a raw summary (the
    `Summary` constructor's arguments).

    Example:
        >>> summarize_one(torch.tensor([1.0, 3.0]))[5]  # the mean
        2.0
    """
    if type(t) is not torch.Tensor and is_wrapped(t):
        return (*summarize_one(local_tensor(t))[:11], describe(t))
    if is_special(t):
        return summarize_special(t)
    if t.requires_grad:
        t = t.detach()
    n = t.numel()
    if n == 0:
        return _empty(t)
    k = _n_listed(n)
    dtype = t.dtype
    if n <= SMALL_NUMEL and (dtype is torch.float32 or dtype is torch.float64) and t.is_cpu:
        raw = summarize_small([t])[0]  # the batch's arithmetic: a batch of one, the same numbers
        return raw[0].row(raw[1]) if len(raw) == 2 else raw
    if dtype is torch.float32 or dtype is torch.float64:
        if t.is_contiguous():
            flat = t.view(-1)
            head = flat[:k]
        else:
            head = _head(t, k)
            strides = t.stride()
            p = t.permute(sorted(range(t.dim()), key=strides.__getitem__, reverse=True))
            flat = p.view(-1) if p.is_contiguous() else None
        raw = _reduce_flat(t, n, flat, head) if flat is not None else None
        if n > SMALL_NUMEL:  # the norm stepping computes eagerly (`SummaryStore.add`), exactly
            if raw is None:
                raw = _reduce_any(t, t, k)
            return (*raw[:2], large_norm(t)[0], *raw[3:])
        if raw is not None:
            return raw
        x = t  # overlapping or gappy (an expand, a strided slice): reduce it as it is
    elif t.is_complex():
        x = t.abs()
    elif t.is_floating_point():
        x = t.float()
        if n > SMALL_NUMEL:  # half precision: the norm stepping computes eagerly, exactly
            raw = _reduce_any(t, x, k)
            return (*raw[:2], large_norm(t)[0], *raw[3:])
    else:
        x = t.to(_F64)
    return _reduce_any(t, x, k)


def _reduce_any(t: torch.Tensor, x: torch.Tensor, k: int) -> Raw:
    """Raw summary of `t` from `x` (its real form, any layout), listing its first `k` values."""
    mn, mx = torch.aminmax(x)
    sq = torch.linalg.vector_norm(x).square()
    mn, mx, s, sq = torch.stack((mn, mx, x.sum(), sq.to(x.dtype))).tolist()
    return _finish(t, t.numel(), mn, mx, s, sq, _listed(_head(t, k)), x)


def is_dense(t: torch.Tensor) -> bool:
    """True when `t` covers a block of memory exactly once (any permutation of a contiguous one).

    Example:
        >>> is_dense(torch.ones(2, 3).t()), is_dense(torch.ones(4)[::2])
        (True, False)
    """
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


class _Rows:
    """Statistics of a batch of small real CPU tensors (`summarize_small`): per-tensor sums as
    Python floats and each tensor's listed values (at most `MAX_LISTED`) in one float64 array; a
    row becomes raw summary arguments only when asked for."""

    __slots__ = ("dtypes", "heads", "hoffs", "mn", "mx", "ns", "s", "shapes", "sq", "ssd")

    def __init__(self, heads: Any, hoffs: list, ns: list, shapes: list, dtypes: list,
                 stats: tuple[list, list, list, list, list]) -> None:  # fmt: skip
        self.heads, self.hoffs, self.ns, self.shapes, self.dtypes = heads, hoffs, ns, shapes, dtypes
        self.mn, self.mx, self.s, self.sq, self.ssd = stats

    def row(self, i: int) -> Raw:
        """Row `i` as raw summary arguments (its sums are finite: `summarize_small`)."""
        n = self.ns[i]
        mn, mx = self.mn[i], self.mx[i]
        if n < 2:
            std = None
        elif mn == mx:
            std = 0.0  # a constant is exactly 0, not a rounding residue
        else:
            std = math.sqrt(self.ssd[i] / (n - 1))  # two-pass: squared deviations from the mean
        vals = self.heads[self.hoffs[i] : self.hoffs[i + 1]].tolist()
        norm = math.sqrt(self.sq[i])
        return (tuple(self.shapes[i]), self.dtypes[i], norm, mn, mx, self.s[i] / n, std, 0, 0,
                vals, n)  # fmt: skip


def summarize_small(tensors: Sequence[torch.Tensor]) -> list[Raw | tuple[_Rows, int]]:
    """Raw summaries of small (<= `SMALL_NUMEL` elements, at least one) float32/float64 CPU
    tensors, any shapes, together: one concatenation into float64 and a few segment reductions
    (numpy's `reduceat`: min, max, sum, two-pass sum of squared deviations) for the whole batch,
    so the cost per tensor is about one list entry. Each tensor's numbers depend on its own
    elements only, never on its batch: `Summary.of` (a batch of one) gives the same. Rows whose
    sums are not finite (a NaN or an Inf inside) are summarised one by one (`nan`/`inf` counts).
    Returns raw summaries or (rows, index) pairs, in input order (`materialize` turns either
    into a `Summary`).

    Example:
        >>> raws = summarize_small([torch.ones(3), torch.tensor([[3.0], [4.0]])])
        >>> [materialize(r).norm for r in raws]
        [1.7320508075688772, 5.0]
    """
    flats = [t if t.dim() == 1 else t.reshape(-1) for t in tensors]
    with torch.no_grad():
        flat = torch.cat(flats) if len(flats) > 1 else flats[0].resolve_neg()
    x = flat.detach().numpy().astype(np.float64)  # a copy (dropped once the rows are built)
    ns = [t.numel() for t in tensors]
    offs = [0, *accumulate(ns)][:-1]
    at = np.array(offs, dtype=np.intp)
    nsa = np.array(ns, dtype=np.float64)
    with np.errstate(all="ignore"):  # non-finite rows are redone one by one below
        s = np.add.reduceat(x, at)
        sq = np.add.reduceat(x * x, at)
        dev = x - np.repeat(s / nsa, ns)
        ssd = np.add.reduceat(dev * dev, at)
        bad = ~np.isfinite(s + sq + ssd)  # a NaN/Inf inside, or an overflow
    stats = (
        np.minimum.reduceat(x, at).tolist(),
        np.maximum.reduceat(x, at).tolist(),
        s.tolist(),
        sq.tolist(),
        ssd.tolist(),
    )
    # each row's listed values (all up to MAX_LISTED, else the first HEAD_VALUES), packed
    ks = np.where(nsa <= MAX_LISTED, nsa, HEAD_VALUES).astype(np.intp)
    hoffs = np.zeros(len(ns) + 1, dtype=np.intp)
    np.cumsum(ks, out=hoffs[1:])
    heads = x[np.repeat(at - hoffs[:-1], ks) + np.arange(hoffs[-1])]
    names = {torch.float32: "float32", torch.float64: "float64"}
    shapes = [t.shape for t in tensors]
    rows = _Rows(heads, hoffs.tolist(), ns, shapes, [names[t.dtype] for t in tensors], stats)
    out: list = [(rows, i) for i in range(len(ns))]
    if bad.any():
        for i in np.flatnonzero(bad).tolist():
            t = tensors[i].detach()
            out[i] = _reduce_flat(t, ns[i], t.reshape(-1).to(_F64), _head(t, _n_listed(ns[i])))
    return out


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


def summarize_raw(tensors: Sequence[torch.Tensor]) -> list[Raw | tuple[_Group, int]]:
    """Raw summaries in input order: tuples, or (group, row) for batched small tensors (turn
    either into a `Summary` with `materialize`).

    Example:
        >>> [materialize(r).numel for r in summarize_raw([torch.ones(2), torch.ones(300)])]
        [2, 300]
    """
    out: list = [None] * len(tensors)
    groups: dict[tuple, list[int]] = {}
    fast: list[int] = []
    for i, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"can only summarise tensors, got {type(t).__name__} at position {i}")
        if type(t) is not torch.Tensor and is_wrapped(t):
            out[i] = summarize_one(t)
        elif t.numel() <= SMALL_NUMEL and not is_special(t):
            if t.dtype in _FAST_REAL and t.is_cpu and t.numel():
                fast.append(i)
            else:
                groups.setdefault((t.shape, t.dtype, t.device), []).append(i)
        else:
            out[i] = summarize_one(t)
    if fast:
        for i, raw in zip(fast, summarize_small([tensors[i] for i in fast])):
            out[i] = raw
    for idx in groups.values():
        if len(idx) < MIN_BATCH:
            for i in idx:
                out[i] = summarize_one(tensors[i])
            continue
        group = _summarize_group([tensors[i] for i in idx])
        if isinstance(group, list):
            for i, raw in zip(idx, group):
                out[i] = raw
        else:
            for row, i in enumerate(idx):
                out[i] = (group, row)
    return out


def materialize(raw: Raw | tuple[_Group, int]) -> Summary:
    """The `Summary` of a raw summary from `summarize_raw` / `summarize_one`.

    Example:
        >>> materialize(summarize_one(torch.ones(2))).norm
        1.4142135623730951
    """
    if len(raw) == 2:
        return Summary(*raw[0].row(raw[1]))
    return Summary(*raw)


def summarize(tensors: Iterable[torch.Tensor]) -> list[Summary]:
    """Summaries of many tensors at once, in input order (see the module docstring).

    Example:
        >>> [s.numel for s in summarize([torch.ones(2), torch.zeros(3)])]
        [2, 3]
    """
    return [materialize(raw) for raw in summarize_raw(list(tensors))]
