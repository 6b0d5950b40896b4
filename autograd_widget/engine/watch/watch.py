"""`aw.watch`: gradient flow across training steps, at the op level, cheap enough to leave on.

In the training loop, `with watch.step(loss): loss.backward()`. Every `every`-th block (step 0
first) is WATCHED: the engine's own backward runs with the lean hooks of lean.py (one post-hook
per node, norms only, read once per step) and leaves, per edge, the gradient's norm, per
parameter the norm of the gradient this backward produced for it, the engine's order, where a
NaN/Inf was born and why, the failing node. The other blocks only hook the parameters'
AccumulateGrad nodes, to flag a non-finite parameter gradient (leafcheck.py). Every block
records the loss. With `flight=K` (the flight recorder) every block is hooked as a watched one,
and what is kept of it is decided afterwards (flight.py, watchkeep.py): the steps around a
NaN/Inf, a failure or a spike in full, the others as `every` says; `max_bytes=` bounds the file.
What was recorded is read through watchread.py (`series`, `first_nonfinite`, `recording`).

A graph structure is captured in full (`aw.capture`: shapes, modules, parameter names) the first
time it is seen (structure.py's `walk` recognises it again from its nodes' names and edges); a
watched step then stores plain arrays against it (trainstep.py). With `path=` each completed step
is appended to an `.awwatch` file as it completes (awwatch.py): a process killed mid-training
leaves a file that `aw.load_watch` reads with every completed step.

A `torch.amp.GradScaler`'s `scaler.scale(loss)` is recognised at the root (its saved factor):
the factor is kept per step (`Watch.scales`), `series` divides by it (the norms of the true
gradients, so a change of scale is not an explosion), the loss is stored unscaled, and an
overflow it causes is its expected one (`TrainingStep.expected_overflow`, the births' causes name
the scaler).

Guarantees: gradients, `.grad` writes and the user's hooks are exactly as without watching (the
hooks return None and write nothing); nothing stays attached to the model or the graph after a
block (also when the backward raises: its exception propagates unchanged and the step is
recorded with its failure); problems inside the hooks become `warnings`, never errors.
"""

from __future__ import annotations

import math
import os
import secrets
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...core.capture import capture
from ...core.fsdp import fsdp_leaf_names
from ...util.warn import warn_user
from ..diagnose.origins import root_loss_scale
from ..record.ranks import RANK
from ..record.recording import new_meta, rank_info
from . import awwatch
from .awwatch_write import check_target, write_failed
from .flight import DiskBudget, FlightRecorder
from .leafcheck import LeafCheck
from .lean import LeanPass
from .rankwatch import RankWatches
from .stepblock import NO_BACKWARD, UNENTERED, StepBlock
from .storedwatch import StoredReading
from .structure import Structure, walk
from .trainstep import TrainingStep
from .watchkeep import WatchKeeping, plain_meta
from .watchread import WatchReading

__all__ = ["NO_BACKWARD", "UNENTERED", "StepBlock", "StoredWatch", "Watch", "load_watch", "watch"]


class Watch(WatchKeeping, WatchReading):
    """A training run watched step by step (see the module docstring and `aw.watch`).

    Attributes: `every`, `records` (a `TrainingStep` per block, in order), `structures` (the
    distinct graph structures, `Structure`), `meta` (rank, world size, torch version, created,
    every), `warnings` (problems met and swallowed), `path` (the file appended to, or None).

    Example:
        >>> w = torch.tensor([1.0, 2.0], requires_grad=True)
        >>> with aw.watch(params={"w": w}) as watch:
        ...     for _ in range(3):
        ...         loss = (w * w).sum()
        ...         with watch.step(loss):
        ...             loss.backward()
        >>> watch.steps, watch.series("w").round(3).tolist()
        ([0, 1, 2], [4.472, 4.472, 4.472])
    """

    def __init__(
        self,
        model: torch.nn.Module | None = None,
        *,
        every: int = 1,
        path: str | os.PathLike | None = None,
        params: Mapping[str, torch.Tensor] | None = None,
        best_effort: bool = False,
        flight: int = 0,
        spike: float | None = None,
        max_bytes: int | None = None,
    ) -> None:
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"every must be an int >= 1 (watch every n-th step), got {every!r}")
        _check_flight(flight, spike, max_bytes, path)
        if model is not None and not isinstance(model, torch.nn.Module):
            raise TypeError(f"model= must be a torch.nn.Module, got {type(model).__name__}")
        if params is not None and not isinstance(params, Mapping):
            raise TypeError(f"params= must be a mapping of name -> tensor, got "
                            f"{type(params).__name__}")  # fmt: skip
        self.model = model
        self.params = params
        self.every = every
        self.path: Path | None = None
        self._target = None if path is None else str(os.fspath(path))
        self.best_effort = bool(best_effort)
        self._names: dict[int, str] = {}
        if model is not None:
            for name, p in model.named_parameters():
                self._names.setdefault(id(p), name)
        for name, p in (params or {}).items():
            if not isinstance(p, torch.Tensor):
                raise TypeError(f"params[{name!r}] is a {type(p).__name__}, not a tensor")
            self._names[id(p)] = str(name)
        self.records: list[TrainingStep] = []
        self.structures: list[Structure] = []
        self._by_key: dict[tuple, int] = {}
        self._index: dict[int, int] = {}
        self._count = 0
        self._open: StepBlock | None = None
        self._pending: weakref.ref[StepBlock] | None = None  # the last block step() returned
        self._writer: awwatch.Writer | None = None
        self._written = 0
        self._flight = FlightRecorder(flight, spike) if flight else None
        self._budget = DiskBudget(max_bytes) if max_bytes is not None else None
        self.closed = False
        self.read_only = False
        self.warnings: list[str] = []
        self.meta: dict[str, Any] = {
            **new_meta("norms"), "every": every, "flight": flight,
            "model": None if model is None else type(model).__name__,
            "run": secrets.token_hex(8),  # what a file of this run says (awwatch_write.py)
        }  # fmt: skip
        if self._target is not None:  # what is wrong with path= already: said now, not later
            try:
                check_target(self._target)
            except (ValueError, OSError) as e:
                self._warn(write_failed(e, path=self._target, step=0, first=True,
                                        warn=self.best_effort))  # fmt: skip
                self._target = None

    def __repr__(self) -> str:
        return (f"<Watch {len(self.records)} steps ({len(self.steps)} watched, every "
                f"{self.every}), {len(self.nonfinite_steps)} non-finite, "
                f"{len(self.structures)} structure(s)>")  # fmt: skip

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ----------------------------------------------------------------- recording
    def step(self, loss: torch.Tensor | Sequence[torch.Tensor]) -> StepBlock:
        """The block of one training step: `with watch.step(loss): loss.backward()`.

        `loss` is what the backward starts from (a tensor, or several); a GradScaler's
        `scaler.scale(loss)` is recognised. Steps are numbered from 0 in the order of their
        blocks; a block whose backward raises still counts (recorded with its failure).

        Misuse is never silent (each a `UserWarning` at your line, saying what to do):
        `watch.step(loss)` without `with` records nothing (`StepBlock`); a block in which no
        backward of `loss` ran records nothing, and its number goes to the next block; a block
        with several backward passes (`retain_graph=True`, a gradient penalty's
        `torch.autograd.grad`) is ONE step that keeps every pass: each norm is the passes'
        gradients on that edge taken together (sqrt of the sum of their squared norms: not the
        norm of their sum), NaN/Inf counts added, births the first pass's, and a NaN/Inf of any
        pass flags its parameter; a `UserWarning` says how many passes ran. Give each backward
        its own block to see each pass on its own (gradient accumulation over micro-batches:
        one block per micro-batch, so one step per backward).

        Example:
            >>> w = aw.watch(); loss = (x * 3).sum()
            >>> with w.step(loss):
            ...     loss.backward()
            >>> w.records[0].loss, x.grad
            (6.0, tensor(3.))
        """
        if self.read_only:
            raise RuntimeError("this watch was loaded from a file: it records no new steps")
        if self.closed:
            raise RuntimeError("this watch is closed; start a new one with aw.watch(...)")
        previous = self._pending() if self._pending is not None else None
        self._pending = None
        if previous is not None:
            previous.warn_unentered()
        roots = [loss] if isinstance(loss, torch.Tensor) else list(loss)
        if not roots or not all(isinstance(t, torch.Tensor) for t in roots):
            raise TypeError("watch.step(loss) takes the tensor the backward starts from (the "
                            "loss), or a list of tensors")  # fmt: skip
        for t in roots:
            if t.grad_fn is None and not t.requires_grad:
                raise ValueError(
                    "the loss given to watch.step() has no grad_fn and does not require grad: "
                    "there is no backward to watch (compute it outside torch.no_grad())"
                )
        block = StepBlock(self, roots)
        self._pending = weakref.ref(block)
        return block

    def begin(self, block: StepBlock) -> None:
        """Enter `block` (what `StepBlock.__enter__` calls): number it, hook its graph.

        Guarantees: if hooking fails, nothing stays attached and the error is raised before the
        user's backward starts (the step is then not counted).

        Example:
            >>> w = aw.watch(); loss = (x * 3).sum(); b = w.step(loss); w.begin(b)
            >>> loss.backward(); w.end(b, None); b.number
            0
        """
        if block.entered:
            raise RuntimeError("this watch.step(...) block was entered already: call "
                               "watch.step(loss) again for the next step")  # fmt: skip
        block.entered = True
        if self._open is not None:
            raise RuntimeError("a watch.step(...) block is already open: steps do not nest")
        block.number = self._count
        # with a flight recorder every block is hooked; what is kept is decided at its end
        block.watched = block.number % self.every == 0 or self._flight is not None
        roots = block.roots
        block.scale = root_loss_scale(roots[0].grad_fn) if len(roots) == 1 else None
        loss = roots[0].detach()
        if len(roots) != 1 or loss.numel() != 1:
            block.loss_at = block.staged.add(math.nan)
        else:
            block.loss_at = block.staged.add(loss.item() if loss.is_cpu else loss.reshape(()))
        try:
            if block.watched:
                if self.model is not None:  # FSDP2: the leaves are unsharded parameters
                    self._names = {**fsdp_leaf_names(self.model), **self._names}
                fns, key = walk(roots, self._names)
                sid = self._by_key.get(key)
                if sid is None:
                    sid = block.new_sid = self._new_structure(roots, fns, key)
                block.sid = sid
                block.lean = LeanPass(self.structures[sid], fns, scale=block.scale)
                block.lean.start()
            else:
                block.check = LeafCheck(roots, self._names)
                block.check.start()
        except BaseException:
            block.lean = block.check = None
            raise
        self._count += 1
        self._open = block

    def _new_structure(self, roots: list[torch.Tensor], fns: list, key: tuple) -> int:
        graph = capture(roots, model=self.model, params=self.params)
        try:
            structure = Structure.of(graph, key)
        finally:
            graph.close()
        if len(structure.names) != len(fns):
            raise RuntimeError(f"the captured graph has {len(structure.names)} nodes, the walk "
                               f"{len(fns)}: the graph changed while it was read")  # fmt: skip
        sid = len(self.structures)
        self.structures.append(structure)
        self._by_key[key] = sid
        return sid

    def end(self, block: StepBlock, exc: BaseException | None) -> None:
        """Leave `block`: remove its hooks, read its values (one transfer), keep its
        `TrainingStep`, append it to the file. Raises only when the step cannot be written to
        `path=` (see `aw.watch`'s `best_effort`); other problems become `warnings` (a misused
        block, a `UserWarning`).

        A block in which no backward of its graph ran, and which did not raise, records
        nothing: `NO_BACKWARD` is warned, its number goes to the next block (and a structure
        first seen in it is forgotten). Several passes: one step, and a warning (see `step`).

        Example:
            >>> w = aw.watch(); loss = (x * 3).sum(); b = w.step(loss); w.begin(b)
            >>> loss.backward(); w.end(b, None)
            >>> len(w.records)
            1
        """
        self._open = None
        failure = None if exc is None else (type(exc).__name__, str(exc), None)
        st = TrainingStep(block.number, block.watched, math.nan, block.scale, failure=failure)
        passes = -1  # unknown (a watch problem): recorded as before
        try:
            if block.lean is not None:
                r = block.lean.finish(exc, block.staged)
                passes = r.passes
                s = self.structures[block.sid or 0]
                st.structure, st.order = block.sid, np.asarray(r.order, dtype=np.int32)
                st.edge_norms, st.param_norms, st.slot_norms = (r.edge_norms, r.param_norms,
                                                                r.slot_norms)  # fmt: skip
                st.nonfinite, st.slot_nonfinite, st.births = (r.nonfinite, r.slot_nonfinite,
                                                              r.births)  # fmt: skip
                st.nonfinite_params = tuple(s.params[k] for k in r.param_nonfinite)
                st.warnings = tuple(r.warnings)
                if failure is not None:
                    st.failure = (failure[0], failure[1], r.failed)
            elif block.check is not None:
                st.nonfinite_params = tuple(block.check.finish(block.staged))
                st.warnings = tuple(block.check.warnings)
                passes = block.check.passes
            values = block.staged.read()
            loss = values[block.loss_at]
            st.loss = loss / block.scale if block.scale else loss
        except Exception as e:  # a watch bug must not replace the user's error
            self._warn(f"step {block.number}: {type(e).__name__}: {e}")
        finally:
            if block.lean is not None:
                block.lean.remove()
            if block.check is not None:
                block.check.remove()
            block.lean = block.check = None
        block.roots = []
        if passes == 0 and exc is None:
            self._forget(block)
            warn_user(NO_BACKWARD)
            return
        self._keep(st)  # watchkeep.py: in memory and in the file, as every / flight= say
        if passes > 1:  # said last: a warning filter that raises loses no step
            kept = ("its norms are every pass's taken together (the square root of the sum of "
                    "their squares), " if st.watched else "")  # fmt: skip
            msg = (f"step {st.step}: {passes} backward passes ran inside one watch.step block: "
                   f"one step; {kept}a NaN/Inf in any pass is flagged. Give each backward its "
                   "own `with watch.step(...)` block to see each pass")  # fmt: skip
            self._warn(msg)
            warn_user(msg)

    def _forget(self, block: StepBlock) -> None:
        """Undo a block that recorded nothing: its number is the next block's again, and a
        structure it captured first (the last one, written nowhere yet) is dropped."""
        if block.number == self._count - 1:
            self._count -= 1
        sid = block.new_sid
        if sid is not None and sid == len(self.structures) - 1 and sid >= self._written:
            del self._by_key[self.structures.pop().key]

    # ----------------------------------------------------------------- files
    def save(self, path: str | os.PathLike) -> Path:
        """Write the whole watch to an `.awwatch` file (complete or absent) and return its path;
        `{rank}` in `path` becomes the torch.distributed rank. `path=` appends the same format.
        Only a regular file (or nothing) is replaced: a folder, a named pipe, a device, a
        symbolic link, or a file a watch is appending to right now raise ValueError, untouched.

        Example:
            >>> import tempfile
            >>> w = aw.watch(); loss = (x * 3).sum()
            >>> with w.step(loss):
            ...     loss.backward()
            >>> with tempfile.TemporaryDirectory() as d:
            ...     p = w.save(d + "/run_{rank}.awwatch")
            ...     p.name, aw.load_watch(p).series("n1:0").tolist()
            ('run_0.awwatch', [3.0])
        """
        rank, world = rank_info()
        target = Path(str(os.fspath(path)).replace("{rank}", str(rank)))
        meta = plain_meta(self.meta)
        if world > 1:  # a watch made before init_process_group still says which rank it is
            meta.update(rank=rank, world_size=world)
        awwatch.save(target, self.every, meta, self.structures, self.records)
        return target

    @classmethod
    def from_file(cls, path: str | os.PathLike, *,
                  max_structure_bytes: int = awwatch.MAX_STRUCTURE) -> Watch:
        """A read-only watch from an `.awwatch` file (what `aw.load_watch` returns);
        `max_structure_bytes` bounds one graph structure's record (`aw.load_watch`).

        Example:
            >>> Watch.from_file("missing.awwatch")
            Traceback (most recent call last):
            FileNotFoundError: no watch at missing.awwatch
        """
        if awwatch.major_of(Path(os.fspath(path))) == 2:  # read lazily (storedwatch.py)
            return StoredWatch.open(Path(os.fspath(path)), max_structure_bytes=max_structure_bytes)
        head, structures, steps, warnings = awwatch.read(
            Path(os.fspath(path)), max_structure_bytes=max_structure_bytes)
        w = cls(every=head["every"])
        w.meta = dict(head["meta"])
        w.structures = structures
        w.records = steps
        w._index = {s.step: k for k, s in enumerate(steps)}
        w._count = steps[-1].step + 1 if steps else 0
        w.warnings = list(warnings)
        w.read_only = w.closed = True
        w.path = Path(os.fspath(path))
        return w


class StoredWatch(StoredReading, Watch):
    """A `Watch` read lazily from a format 2.0 `.awwatch` file (storedwatch.py's reading: the
    index, the columns, a step's record on demand); what `aw.load_watch` returns for one.

    Example:
        >>> issubclass(StoredWatch, Watch)
        True
    """


def watch(
    model: torch.nn.Module | None = None,
    *,
    every: int = 1,
    path: str | os.PathLike | None = None,
    params: Mapping[str, torch.Tensor] | None = None,
    best_effort: bool = False,
    flight: int = 0,
    spike: float | None = None,
    max_bytes: int | None = None,
) -> Watch:
    """Watch a training run's gradient flow step by step (see the module docstring).

    In the loop, `with w.step(loss): loss.backward()`; `w.series(key)`, `w.nonfinite_steps`,
    `w.first_nonfinite()`, `w.recording(step)` read it, `aw.explore(w)` draws its timeline.

    Args:
        model: the `nn.Module` being trained: names the parameters ("0.weight") and so the
            modules `series` accepts. None: leaves are named by `params`, else by their shape.
        every: watch every n-th step (0, n, 2n, ...: the norms of every edge, parameter and
            module); the other steps only flag a non-finite parameter gradient (an int >= 1).
        path: append each completed step to this `.awwatch` file as it completes (`{rank}`
            becomes the torch.distributed rank: one file per rank); None keeps it in memory
            (`Watch.save` writes it later). Only a new or empty regular file is written: a
            folder, a named pipe, a device, a symbolic link, a file holding anything else, a
            file another watch is writing (two ranks without `{rank}`) are refused.
        params: names for other tensors, `{"w": w}` (they win over `model`'s names); a tensor
            named here counts as a parameter in `series("")`.
        best_effort: when the file cannot be written (refused, a missing permission, a full
            disk), False (the default) raises: at once where the path is visibly wrong, else
            at the step that could not be written; True warns once (`RuntimeWarning`, with
            the reason) and trains on, keeping every step in memory (`Watch.save` later).
        flight: K > 0 turns the flight recorder on (flight.py, docs/watch.md): EVERY step is
            hooked (the cost per step of `every=1`), the last K steps wait in memory in full,
            and a step with a NaN/Inf gradient (or a `spike`) is kept in full with the K steps
            before and after it, in memory and in the file: a NaN born at a step `every`
            skips is found with its birth node and cause. The other steps are kept as `every`
            says. 0 (the default): off.
        spike: with `flight`, a step whose gradient norm (`series("")`) is more than `spike`
            times the step before it is an event too (a float > 1; None: NaN/Inf only).
        max_bytes: a budget for the file at `path`: when it is full, the oldest ordinary
            steps (kept by `every`, not around an event) lose their norms first (the file is
            rewritten, atomically); a budget below one step is a ValueError at the first step.

    Returns:
        The `Watch` (a context manager: leaving `with aw.watch(...) as w:` closes it).

    Raises:
        ValueError: `every` is not an int >= 1; `path` is refused (see `path`); `flight`,
            `spike` or `max_bytes` is out of range, or given without what it needs.
        OSError: the file cannot be written (at the step that could not be written).
        TypeError: `model` is not an `nn.Module`, `params` not a mapping of tensors.

    Example:
        >>> net = torch.nn.Linear(3, 1); opt = torch.optim.SGD(net.parameters(), lr=0.1)
        >>> with aw.watch(net, every=2) as w:
        ...     for _ in range(4):
        ...         opt.zero_grad(); loss = net(torch.ones(2, 3)).pow(2).mean()
        ...         with w.step(loss):
        ...             loss.backward()
        ...         opt.step()
        >>> w.steps, w.series("weight").shape, w.nonfinite_steps
        ([0, 2], (2,), [])
    """
    return Watch(model, every=every, path=path, params=params, best_effort=best_effort,
                 flight=flight, spike=spike, max_bytes=max_bytes)  # fmt: skip


def _check_flight(flight: Any, spike: Any, max_bytes: Any, path: Any) -> None:
    """ValueError for a `flight=`, `spike=` or `max_bytes=` out of range (`aw.watch`)."""
    if isinstance(flight, bool) or not isinstance(flight, int) or flight < 0:
        raise ValueError(f"flight must be an int >= 0 (the steps kept in full around a "
                         f"NaN/Inf; 0: off), got {flight!r}")  # fmt: skip
    if spike is not None:
        if isinstance(spike, bool) or not isinstance(spike, int | float) or not spike > 1.0:
            raise ValueError(f"spike must be a number > 1 (the factor a gradient norm jumps "
                             f"by), or None, got {spike!r}")  # fmt: skip
        if not flight:
            raise ValueError("spike= needs the flight recorder: pass flight=K too (the steps "
                             "kept in full around a spike)")  # fmt: skip
    if max_bytes is not None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
            raise ValueError(f"max_bytes must be an int >= 1 (bytes), got {max_bytes!r}")
        if path is None:
            raise ValueError("max_bytes= bounds the file written at path=: pass path= too")


def load_watch(path: str | os.PathLike, *,
               max_structure_bytes: int = awwatch.MAX_STRUCTURE) -> Watch | RankWatches:
    """Read an `.awwatch` file written by `Watch.save` or `aw.watch(..., path=...)`: another
    process, no model needed; read-only. With `{rank}` in `path`: every rank's file (0, 1, ...
    while it exists) as a `RankWatches` (rankwatch.py; bad sets of files are a ValueError).

    Guarantees: runs no code from the file; a file cut short by a killed process loads with
    every step it completed (its `warnings` say what was left out); anything malformed raises
    ValueError naming it. One graph structure's record may take `max_structure_bytes` (16 MiB
    by default, ~50,000 nodes): a larger one is refused saying so; raise it for a file you
    trust.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     with aw.watch(path=d + "/w.awwatch") as w:
        ...         loss = (x * 3).sum()
        ...         with w.step(loss):
        ...             loss.backward()
        ...     back = aw.load_watch(d + "/w.awwatch")
        >>> back.steps, back.losses().tolist()
        ([0], [6.0])
    """
    def one(p: str | os.PathLike) -> Watch:
        return Watch.from_file(p, max_structure_bytes=max_structure_bytes)

    if RANK in str(os.fspath(path)):
        return RankWatches.load(path, one)
    return one(path)
