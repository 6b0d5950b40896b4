"""The summary store: every edge's `Summary`, computed as gradients flow, for a stepper that
frees the gradients themselves (`keep="summaries"`).

What it guarantees: `get(key)` returns the same numbers `Summary.of(tensor)` gives for the tensor
that was added under `key` (summary.py's semantics), however it got them. How it stays cheap (the
per-edge statistics used to cost more than the backward step itself on graphs of tiny ops):

- small tensors (<= `SMALL_NUMEL` elements) are queued and summarised in batches (summary.py);
- a large floating tensor (float32/64, float16, bfloat16), in a store with a `resolver` (a
  stepper's), costs ONE `vector_norm` when added: `norm`, `nan`, `inf`, `shape`, `dtype`, `numel` at
  once; the rest (`min`/`max`/`mean`/`std`/`values`) is computed for every such key together by one
  replay of the steps (CPU kernels are deterministic: the replayed tensor is the same tensor), the
  first time any of them is read. `get` hands out a `Summary` that triggers this by itself
  (`_Lazy`), so readers see plain `Summary` fields. `settle()` completes those still held before the
  steps stop being replayable (reset, undo, an edit changed, close);
- other large tensors are summarised at once; one that is a view of a large tensor summarised just
  before reuses its statistics;
- a DTensor (tensor parallel) is summarised at once by its local shard, its summary's `shard`
  saying so (summary.py): never batched with plain tensors (a DTensor and a plain tensor cannot
  meet in one op), never replayed lazily."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from dataclasses import fields
from typing import Any

import torch

from ..util.dtypes import dtype_name
from .dtensor import is_wrapped
from .summary import (
    SMALL_NUMEL,
    Raw,
    Summary,
    head_values,
    is_dense,
    is_special,
    large_norm,
    materialize,
    summarize_one,
    summarize_raw,
    summarize_small,
    summarize_special,
)

__all__ = ["SummaryStore"]

_vector_norm = torch.linalg.vector_norm
_TENSOR = torch.Tensor
_STRIDED = torch.strided
_F32, _F64 = torch.float32, torch.float64
#: Large gradients of these dtypes get an eager norm and a replayed rest (the class docstring).
#: (dtype -> the dtype its norm accumulates in, None: its own; what `large_norm` does).
_EAGER_CAST = {torch.float32: None, torch.float64: None, torch.float16: torch.float32,
               torch.bfloat16: torch.float32}  # fmt: skip
_NOT_EAGER = object()
#: Queued small tensors are summarised once they hold this many elements together: what a
#: `keep="summaries"` run holds past the gradients' last consumers stays about 16 KiB of float32
#: (on the Mamba-like benchmark graph the run's peak went from 1.12x the engine's, at 1 << 18, to
#: 1.08x; a batch costs ~30 us whatever its size, so flushing more often is cheap).
MAX_PENDING_NUMEL = 1 << 12
#: How many recently normed large gradients are remembered (weakly) to recognise a view of one.
_MAX_SEEN = 64
_weakref = weakref.ref

_FIELDS = tuple(f.name for f in fields(Summary))
_NAN, _INF = _FIELDS.index("nan"), _FIELDS.index("inf")
#: The fields every raw summary holds (a DTensor's adds `shard` after them).
_N_RAW = _FIELDS.index("shard")


class _Lazy(Summary):
    """A summary whose `norm`, `nan`, `inf`, `shape`, `dtype` and `numel` were computed as the
    gradient flowed and whose `min`/`max`/`mean`/`std`/`values` are computed on first read, all
    at once, by the store's resolver (a replay: the tensor itself was freed). Compares, prints and
    pickles as a plain `Summary` with every field read."""

    def __init__(self, eager: tuple, store: SummaryStore, key: int) -> None:
        put = object.__setattr__
        for name, value in zip(_EAGER, eager):
            put(self, name, value)
        put(self, "_rest", None)
        # the resolver held strongly: the stepper stays alive while one of its summaries waits
        put(self, "_source", (store, key, None if store.resolver is None else store.resolver()))

    def _get_rest(self) -> Raw:
        rest = self._rest
        if rest is None:
            store, key, resolve = self._source
            rest = store.rest_of(key, resolve)
            object.__setattr__(self, "_rest", rest)
            object.__setattr__(self, "_source", None)
        return rest

    @property
    def resolved(self) -> bool:
        """True once every field is known."""
        return self._rest is not None


def _lazy_field(i: int) -> property:
    return property(lambda self: self._get_rest()[i], doc=f"`{_FIELDS[i]}`, computed on first read")


#: The fields a lazy summary holds from the start (what stepping computes eagerly), in order.
_EAGER = ("shape", "dtype", "norm", "nan", "inf", "numel")
for _i, _name in enumerate(_FIELDS[:_N_RAW]):  # `shard`: None (DTensors are never lazy)
    if _name not in _EAGER:
        setattr(_Lazy, _name, _lazy_field(_i))


class SummaryStore:
    """Summaries keyed by int, computed as gradients flow; small ones batched until `flush()`.

    `add(key, tensor)` summarises a large tensor at once and queues a small one (held until the
    next flush: at most `max_pending`, so at most `max_pending * SMALL_NUMEL` elements). A large
    tensor that is a view of one summarised just before (same memory, same elements: what
    `view`/`t`/`transpose` backward nodes and pass-through nodes return) reuses its statistics;
    the last `recent` large tensors are held for that, so their memory cannot be reused under us.
    `get(key)` builds the `Summary` on first request.

    With a `resolver` (a `weakref.WeakMethod` to a callable that replays the steps and calls
    `complete(key, tensor)` for each key it is given: what a stepper installs), a large floating
    tensor costs one `vector_norm` when added: `norm`, `nan`, `inf`, `shape`, `dtype` and
    `numel` are known at once, and `min`/`max`/`mean`/`std`/`values` of every such key are
    computed together, by one replay, the first time one of them is read (`get` returns a
    `Summary` that does this by itself). `settle()` does it for every such summary still held by
    someone: call it before the replay could no longer reproduce them (a reset, an undone step, a
    changed edit, closing).

    Example:
        >>> store = SummaryStore()
        >>> store.add(0, torch.ones(4))
        >>> store.get(0).mean
        1.0
    """

    def __init__(self, max_pending: int = 4096, recent: int = 4) -> None:
        self.max_pending = max_pending
        self._raw: dict[int, Raw | tuple[Any, int]] = {}
        self._done: dict[int, Summary] = {}
        self._keys: list[int] = []
        self._tensors: list[torch.Tensor] = []
        self._recent: dict[tuple, tuple[torch.Tensor, Raw]] = {}
        self._n_recent = recent
        #: A `weakref.WeakMethod` (or any callable returning the resolver or None), or None: eager
        #: norms and replayed rest (see the class docstring).
        self.resolver: Callable[[], Callable[[set[int]], None] | None] | None = None
        self._eager: dict[int, tuple] = {}  # key -> (shape, dtype, norm, nan, inf, numel)
        # data_ptr of a contiguous large gradient normed eagerly -> (weak reference to it, its
        # numel, its dtype, its version, (norm, nan, inf)): views of it reuse the norm
        self._seen: dict[int, tuple] = {}
        self._rest: dict[int, Raw] = {}  # key -> the full raw summary, filled by the resolver
        self._lazies: weakref.WeakValueDictionary[int, _Lazy] = weakref.WeakValueDictionary()
        self._n_lazy = 0
        self._pending_numel = 0
        self._n_slow = 0  # queued tensors `summarize_small` does not take (summarize_raw's work)

    def add(self, key: int, t: torch.Tensor) -> None:
        """Queue tensor `t`'s summary under `key` (computed in a batch on the next `get`/`flush`).

        Example:
            >>> store = SummaryStore(); store.add(7, torch.zeros(2)); 7 in store
            True
        """
        if type(t) is not _TENSOR and is_wrapped(t):  # its local shard, at once (module docstring)
            self._raw[key] = summarize_one(t)
            return
        dtype = t.dtype
        n = t.numel()
        cast = _EAGER_CAST.get(dtype, _NOT_EAGER) if n > SMALL_NUMEL else _NOT_EAGER
        if (
            cast is not _NOT_EAGER
            and self.resolver is not None
            and t.layout is _STRIDED
            and not (t.is_meta or t._is_zerotensor())
        ):
            contiguous = t.is_contiguous()
            if contiguous:
                # The same memory as a gradient normed just before (what view/t/reshape and
                # pass-through nodes return): the same elements in the same order, so the same
                # norm, as long as that tensor is alive (its memory not reused) and neither was
                # modified in place since (the version counter views share).
                ptr = t.data_ptr()
                hit = self._seen.get(ptr)
                if hit is not None and hit[1] == n and hit[2] is dtype:
                    prev = hit[0]()
                    if prev is not None and prev._version == hit[3] == t._version:
                        self._eager[key] = (t.shape, dtype, *hit[4], n)
                        return
            src = t.detach() if t.requires_grad else t
            # as large_norm() (no keyword when there is no cast: cheaper)
            norm = (_vector_norm(src) if cast is None else _vector_norm(src, dtype=cast)).item()
            # finite: inf - inf and nan - nan are nan
            stats = (norm, 0, 0) if norm - norm == 0.0 else large_norm(src)
            # shape and dtype as torch gives them: converted when the summary is built
            self._eager[key] = (t.shape, dtype, *stats, n)
            if contiguous:
                seen = self._seen
                if len(seen) >= _MAX_SEEN:
                    seen.clear()
                seen[ptr] = (_weakref(t), n, dtype, t._version, stats)
            return
        if n <= SMALL_NUMEL and n and t.is_cpu and (dtype is _F32 or dtype is _F64):
            if t.layout is _STRIDED and not t._is_zerotensor():  # `summarize_small`'s kind
                self._keys.append(key)
                self._tensors.append(t)
                self._pending_numel += n
                if len(self._keys) >= self.max_pending or self._pending_numel > MAX_PENDING_NUMEL:
                    self.flush()
                return
        if is_special(t):  # sparse or meta: no data pointer to match views on, no batching
            self._raw[key] = summarize_special(t)
            return
        if n <= SMALL_NUMEL:
            self._keys.append(key)
            self._tensors.append(t)
            self._pending_numel += n
            self._n_slow += 1
            if len(self._keys) >= self.max_pending or self._pending_numel > MAX_PENDING_NUMEL:
                self.flush()
            return
        rkey = (t.data_ptr(), n, t.dtype)
        hit = self._recent.get(rkey)
        if hit is not None:
            prev, raw = hit
            if t is prev or (t.is_contiguous() and prev.is_contiguous()):
                self._raw[key] = (tuple(t.shape), *raw[1:])
                return
            if is_dense(t) and is_dense(prev):
                vals = head_values(t)
                self._raw[key] = (tuple(t.shape), *raw[1:9], vals, raw[10])
                return
        raw = summarize_one(t)
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
        eager = self._eager.get(key)
        if eager is not None:
            rest = self._rest.get(key)
            if rest is None:
                lazy = _Lazy((tuple(eager[0]), dtype_name(eager[1]), *eager[2:]), self, key)
                self._n_lazy += 1
                self._lazies[self._n_lazy] = lazy
                return lazy
            del self._eager[key], self._rest[key]
            s = self._done[key] = Summary(*rest)
            return s
        raw = self._raw.pop(key, None)
        if raw is None:
            if not self._keys:
                return None
            self.flush()
            raw = self._raw.pop(key, None)
            if raw is None:
                return None
        s = self._done[key] = materialize(raw)
        return s

    def __contains__(self, key: int) -> bool:
        return key in self._done or key in self._raw or key in self._eager or key in self._keys

    def finite_now(self, key: int) -> bool | None:
        """Whether the tensor added under `key` was finite, when that is known without more
        work (a large tensor is summarised, or normed, as it is added); None while it waits in
        a batch (or is unknown).

        Example:
            >>> store = SummaryStore(); store.add(1, torch.full((300,), float("nan")))
            >>> store.add(2, torch.ones(2)); store.finite_now(1), store.finite_now(2)
            (False, None)
        """
        eager = self._eager.get(key)
        if eager is not None:
            return not (eager[3] or eager[4])
        raw = self._raw.get(key)
        if raw is None or not isinstance(raw, tuple) or len(raw) < _N_RAW:
            return None
        return not (raw[_NAN] or raw[_INF])

    def waiting_keys(self) -> set[int]:
        """The keys whose `min`/`max`/`mean`/`std`/`values` wait for the resolver.

        Example:
            >>> SummaryStore().waiting_keys()
            set()
        """
        rest = self._rest
        return {k for k in self._eager if k not in rest}

    def complete(self, key: int, t: torch.Tensor) -> None:
        """The resolver's callback: the full summary of `key` from its tensor `t` (recomputed).

        Example:
            >>> store = SummaryStore(); store.complete(1, torch.ones(3)); store.waiting_keys()
            set()
        """
        self._rest[key] = summarize_one(t)

    def rest_of(self, key: int, resolve: Callable[[set[int]], None] | None = None) -> Raw:
        """The full raw summary of `key` (what a lazy `Summary` reads): replays once for every
        waiting key when it is not there yet.

        Guarantees: RuntimeError (saying why) when it can no longer be computed: the stepper is
        gone, its graph was closed, or the step was undone without `settle()`.

        Example:
            >>> store = SummaryStore(); store.complete(1, torch.ones(3)); store.rest_of(1)[5]
            1.0
        """
        rest = self._rest.get(key)
        if rest is not None:
            return rest
        if resolve is None and self.resolver is not None:
            resolve = self.resolver()
        if key not in self._eager or resolve is None:
            raise RuntimeError(
                "this summary's min/max/mean/std/values were not computed and its gradient can no "
                "longer be replayed (its stepper was closed or moved back)"
            )
        resolve(self.waiting_keys())
        rest = self._rest.get(key)
        if rest is None:
            raise RuntimeError(f"replaying the steps did not reproduce summary {key}")
        return rest

    def settle(self) -> None:
        """Complete every lazy summary handed out and still held (one replay, if any): call it
        before the steps that produced them can no longer be replayed as they ran.

        Example:
            >>> store = SummaryStore(); store.settle()
        """
        held = [s for s in self._lazies.values() if not s.resolved]
        self._lazies = weakref.WeakValueDictionary()
        if held:
            for s in held:
                s.min  # noqa: B018  # the first read replays once for all of them

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
        self._eager.pop(key, None)
        self._rest.pop(key, None)

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
        self._pending_numel = 0
        raws = summarize_raw(ts) if self._n_slow else summarize_small(ts)
        self._n_slow = 0
        self._raw.update(zip(keys, raws))

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
            self._n_slow = len(kept)  # an upper bound: summarize_raw takes any kind

    def release_recent(self) -> None:
        """Drop the references held for view detection (end of a run).

        Example:
            >>> store = SummaryStore(); store.add(1, torch.ones(2)); store.release_recent()
        """
        self._recent.clear()
        self._seen.clear()

    def clear(self) -> None:
        """Forget everything, pending and done.

        Example:
            >>> store = SummaryStore(); store.add(1, torch.ones(2)); store.clear(); 1 in store
            False
        """
        self._raw.clear()
        self._done.clear()
        self._eager.clear()
        self._rest.clear()
        self._keys, self._tensors = [], []
        self._pending_numel = 0
        self._n_slow = 0
        self._recent.clear()
        self._seen.clear()
