"""What a `Watch` (watch/watch.py) keeps of each completed step, in memory and in its file.

Split from watch.py by responsibility: watch.py hooks the blocks and reads their values; this
module decides what is kept (`WatchKeeping`, a mixin `Watch` inherits): every step as `every`
says, or, with `flight=K`, as the flight recorder says (flight.py: the steps around a NaN/Inf or
a spike in full); it appends each decided step to the `.awwatch` file, within the `max_bytes`
budget (flight.py's `DiskBudget`: the oldest ordinary steps thinned first, the file rewritten
whole, atomically, then appended to again), and closes the file.

Guarantees: the file is a complete `.awwatch` file after every step (appends are whole records;
a rewrite is complete or absent, util/atomic.py), so a process killed at any moment leaves a
file `aw.load_watch` reads; with `flight=K` the steps still in the ring (at most K, none of them
an event's: an event is written at once) are not in the file yet.

Example:
    >>> w = aw.watch(every=4, flight=2); loss = (x * 3).sum()
    >>> for _ in range(3):
    ...     with w.step(loss):
    ...         loss.backward(retain_graph=True)
    >>> w.steps, [s.watched for s in w.records]  # step 0: kept by every=4; 1, 2: in the ring
    ([0], [True, False, False])
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from ...util.warn import warn_user
from ..record.recording import rank_info
from . import awwatch
from .awwatch_write import write_failed
from .flight import SLACK, DiskBudget, FlightRecorder, OnDisk, light
from .structure import Structure
from .trainstep import TrainingStep

__all__ = ["WatchKeeping", "plain_meta"]


def _estimate(st: TrainingStep) -> tuple[int, int]:
    """(bytes of `st`'s full record, of its light one), roughly and whatever the file's layout:
    its arrays' bytes and a few dozen per NaN/Inf entry. It only steers how many steps a
    thinning round takes: the file itself is measured after each round."""
    small = 64
    if not st.watched:
        return small, small
    arrays = sum(a.nbytes for a in (st.order, st.edge_norms, st.param_norms, st.slot_norms)
                 if a is not None)  # fmt: skip
    entries = len(st.nonfinite) + len(st.slot_nonfinite) + len(st.births)
    return small + arrays + 48 * entries, small


def plain_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """`meta` with every value a JSON scalar (others by their repr): what a file's head holds.

    Example:
        >>> plain_meta({"every": 2, "device": torch.device("cpu")})
        {'every': 2, 'device': "device(type='cpu')"}
    """
    return {str(k): v if isinstance(v, str | int | float | bool | type(None)) else repr(v)
            for k, v in meta.items()}  # fmt: skip


class WatchKeeping:
    """The keeping half of `Watch` (see the module docstring).

    Example:
        >>> w = aw.watch(); isinstance(w, WatchKeeping), w.flight
        (True, 0)
    """

    every: int
    best_effort: bool
    records: list[TrainingStep]
    structures: list[Structure]
    meta: dict[str, Any]
    path: Path | None
    closed: bool
    warnings: list[str]
    _index: dict[int, int]
    _target: str | None
    _writer: awwatch.Writer | None
    _written: int
    _flight: FlightRecorder | None
    _budget: DiskBudget | None

    @property
    def flight(self) -> int:
        """K of `flight=K`: the steps kept in full around an event (0: no flight recorder)."""
        return 0 if self._flight is None else self._flight.keep

    def _warn(self, msg: str) -> None:
        if msg not in self.warnings and len(self.warnings) < 1000:
            self.warnings.append(msg)

    def _keep(self, st: TrainingStep) -> None:
        """Keep step `st` just recorded (full where it was hooked): in `records` and the file
        as `every` says, or as the flight recorder decides (flight.py)."""
        ordinary = st.step % self.every == 0
        self._index[st.step] = len(self.records)
        for w in st.warnings:
            self._warn(f"step {st.step}: {w}")
        if self._flight is None:
            self.records.append(st)
            if self._target is not None:
                self._append(st, "ordinary" if st.watched else "light")
            return
        self.records.append(st if ordinary else light(st))
        for s, kind in self._flight.take(st, ordinary):
            self._decided(s, kind)

    def _decided(self, st: TrainingStep, kind: str) -> None:
        """The flight recorder decided `st`'s kind: its full record replaces its light one in
        `records` when it is kept in full; it goes to the file."""
        if kind == "event":
            self.records[self._index[st.step]] = st
        if self._target is not None:
            self._append(st if kind != "light" else light(st), kind)

    def _append(self, st: TrainingStep, kind: str = "ordinary") -> None:
        """Append `st` (and the structures before it) to the file, within `max_bytes`; a
        failure is raised, or warned once where the user asked for best effort or the step's
        own backward raised (awwatch_write.py's `write_failed`); either way the file takes no
        more steps."""
        first = self._writer is None
        try:
            if self._writer is None:
                rank, world = rank_info()
                self.meta.update(rank=rank, world_size=world)
                assert self._target is not None
                self.path = Path(self._target.replace("{rank}", str(rank)))
                self._writer = awwatch.Writer(self.path, self.every, plain_meta(self.meta))
            while self._written < len(self.structures):
                self._writer.structure(self._written, self.structures[self._written])
                self._written += 1
            self._writer.step(st)
            if self._budget is not None:
                self._budget.entries.append(OnDisk(st.step, kind if st.watched else "light",
                                                   *_estimate(st)))  # fmt: skip
                if first:
                    self._check_first()
                elif self._writer.size > self._budget.max_bytes:
                    self._make_room(st, kind)
        except Exception as e:
            where, self._target = self.path or self._target, None
            writer, self._writer = self._writer, None
            if writer is not None:
                writer.close()
            if first:
                self.path = None
            self._warn(write_failed(e, path=where, step=st.step, first=first,
                                    warn=self.best_effort or st.failure is not None))  # fmt: skip

    def _check_first(self) -> None:
        """The file holding its first step, closed and measured: a budget it does not fit is
        refused (the file, which this watch created, is removed) naming the size needed."""
        b, writer = self._budget, self._writer
        assert b is not None and writer is not None and self.path is not None
        if writer.size <= b.max_bytes * SLACK:
            return
        writer.close()
        need = self.path.stat().st_size
        if need <= b.max_bytes:
            self._writer = awwatch.Writer(self.path, self.every, plain_meta(self.meta))
            return
        self._writer = None
        self.path.unlink()
        raise ValueError(
            f"max_bytes={b.max_bytes} is smaller than the file's head, the graph's structure "
            f"and one step ({need} bytes): raise max_bytes to at least {need} (a few hundred "
            "steps' worth is a useful budget)"
        )

    def _make_room(self, st: TrainingStep, kind: str) -> None:
        """The file passed the budget with `st`: the oldest ordinary steps are thinned (the
        file rewritten, measured again) until it is back under it; where nothing is left to
        thin, `st` is kept without its arrays, else not written (warned once each)."""
        b = self._budget
        assert b is not None and self._writer is not None
        size = self._writer.size
        while size > b.max_bytes and b.thin(size, 0):
            self._rewrite()
            size = self._writer.size
        if size <= b.max_bytes:
            return
        last = b.entries[-1]
        if last.kind != "light" and not last.thinned:
            last.thinned = True
            self._rewrite()
            if self._writer.size <= b.max_bytes:
                self._say_once(f"max_bytes={b.max_bytes} is full: step {st.step} ({kind}) and "
                               "later full steps are written without their norms (loss and "
                               "NaN/Inf flags only); the watch keeps them in memory")  # fmt: skip
                return
        b.entries.pop()
        self._rewrite()
        self._say_once(f"max_bytes={b.max_bytes} is full: step {st.step} and later steps that do "
                       "not fit are not written; the watch keeps them in memory "
                       "(watch.save(another_path) writes them all)")  # fmt: skip

    def _say_once(self, msg: str) -> None:
        key = msg.split(":")[0]
        if not any(w.startswith(key) for w in self.warnings):
            self._warn(msg)
            warn_user(msg, RuntimeWarning)

    def _rewrite(self) -> None:
        """Write the file again with its thinned steps light, and append to it from then on:
        a new file beside it, written by a `Writer` of its own (so it continues exactly as a
        file this watch wrote), renamed over the old one (`os.replace`: the path holds the old
        file or the new one, each complete, never a mix)."""
        writer, self._writer = self._writer, None
        assert writer is not None and self.path is not None
        writer.close()
        self._writer = self._thinned_copy(self.path)

    def _thinned_copy(self, path: Path) -> awwatch.Writer:
        """A `Writer` appending to `path` rewritten with the budget's thinned steps light."""
        b = self._budget
        assert b is not None
        tmp = path.with_name(f".{path.name}.{os.getpid()}.thinning")
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()  # a leftover of this very process, killed mid-rewrite
        writer = awwatch.Writer(tmp, self.every, plain_meta(self.meta))
        try:
            written = 0
            for e in b.entries:
                st = self.records[self._index[e.step]]
                st = light(st) if e.thinned or e.kind == "light" else st
                while st.structure is not None and written <= st.structure:
                    writer.structure(written, self.structures[written])
                    written += 1
                writer.step(st)
            os.replace(tmp, path)
        except BaseException:
            writer.close()
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        writer.path = path
        self._written = written
        return writer

    def _save_thinned(self) -> None:
        assert self.path is not None
        self._thinned_copy(self.path).close()

    def _seal_within_budget(self) -> None:
        """The closed file, measured: what closing it added (its last summaries and index)
        is made room for by thinning more, so the file ends within `max_bytes` too."""
        b, path = self._budget, self.path
        if b is None or path is None or not path.is_file():
            return
        for _ in range(64):  # each round thins more: bounded by the steps there are
            size = path.stat().st_size
            if size <= b.max_bytes:
                return
            if not b.thin(size, 0):
                break
            self._save_thinned()
        self._say_once(f"max_bytes={b.max_bytes} is passed by the file's own index and "
                       f"summaries ({path.stat().st_size} bytes) with nothing left to thin: "
                       "raise max_bytes")  # fmt: skip

    def _flush(self) -> None:
        """Decide and write what the flight recorder still holds (the watch is closing)."""
        if self._flight is not None:
            for s, kind in self._flight.flush():
                self._decided(s, kind)

    def close(self) -> None:
        """Close the file being appended to (releasing it to other writers), after writing
        the steps the flight recorder still held; the watch then records no more steps (its
        data stays readable). Also what leaving `with aw.watch(...) as w:` does.

        Example:
            >>> w = aw.watch(); w.close(); w.closed
            True
        """
        if not self.closed:
            self._flush()
        self.closed = True
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()
            try:
                self._seal_within_budget()
            except Exception as e:  # the file is complete as it is: said, never raised here
                self._warn(f"max_bytes: the file could not be thinned further: {e}")
