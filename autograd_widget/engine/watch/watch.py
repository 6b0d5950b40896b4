"""`aw.watch`: gradient flow across training steps, at the op level, cheap enough to leave on.

In the training loop, `with watch.step(loss): loss.backward()`. Every `every`-th block (step 0
first) is WATCHED: the engine's own backward runs with the lean hooks of lean.py (one post-hook
per node, norms only, read once per step) and leaves, per edge, the gradient's norm, per
parameter the norm of the gradient this backward produced for it, the engine's order, where a
NaN/Inf was born and why, the failing node. The other blocks only hook the parameters'
AccumulateGrad nodes, to flag a non-finite parameter gradient. Every block records the loss.

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
import re
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
from ..diagnose.origins import Origin, root_loss_scale
from ..record.ranks import RANK
from ..record.recording import Recording, new_meta, rank_info
from . import awwatch
from .awwatch_write import check_target, write_failed
from .lean import LeafCheck, LeanPass
from .rankwatch import RankWatches
from .stepblock import NO_BACKWARD, UNENTERED, StepBlock
from .structure import Structure, walk
from .trainstep import TrainingStep, as_recording
from .watchfirst import first_nonfinite
from .watchseries import table_of

__all__ = ["NO_BACKWARD", "UNENTERED", "StepBlock", "Watch", "load_watch", "watch"]

_EDGE_ID = re.compile(r"n\d+:\d+")


class Watch:
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
    ) -> None:
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"every must be an int >= 1 (watch every n-th step), got {every!r}")
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
        self.closed = False
        self.read_only = False
        self.warnings: list[str] = []
        self.meta: dict[str, Any] = {
            **new_meta("norms"), "every": every,
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
        `torch.autograd.grad`) is ONE step: its norms, order and births are the last pass's, its
        non-finite parameters those of every pass (a NaN of an earlier pass is never hidden);
        give each backward its own block to see each pass.

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
        block.watched = block.number % self.every == 0
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
        self._index[st.step] = len(self.records)
        self.records.append(st)
        for w in st.warnings:
            self._warn(f"step {st.step}: {w}")
        if self._target is not None:
            self._append(st)
        if passes > 1:  # said last: a warning filter that raises loses no step
            kept = "the last pass's norms, order and births; " if st.watched else ""
            msg = (f"step {st.step}: {passes} backward passes ran inside one watch.step block: "
                   f"one step, which keeps {kept}a NaN/Inf in any pass is flagged. Give each "
                   "backward its own `with watch.step(...)` block to see each pass")  # fmt: skip
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

    def _warn(self, msg: str) -> None:
        if msg not in self.warnings and len(self.warnings) < 1000:
            self.warnings.append(msg)

    def _append(self, st: TrainingStep) -> None:
        """Append `st` (and the structures before it) to the file; a failure is raised, or
        warned once where the user asked for best effort or the step's own backward raised
        (awwatch_write.py's `write_failed`); either way the file takes no more steps."""
        first = self._writer is None
        try:
            if self._writer is None:
                rank, world = rank_info()
                self.meta.update(rank=rank, world_size=world)
                assert self._target is not None
                self.path = Path(self._target.replace("{rank}", str(rank)))
                self._writer = awwatch.Writer(self.path, self.every, _plain(self.meta))
            while self._written < len(self.structures):
                self._writer.structure(self._written, self.structures[self._written])
                self._written += 1
            self._writer.step(st)
        except Exception as e:
            where, self._target = self.path or self._target, None
            writer, self._writer = self._writer, None
            if writer is not None:
                writer.close()
            if first:
                self.path = None
            self._warn(write_failed(e, path=where, step=st.step, first=first,
                                    warn=self.best_effort or st.failure is not None))  # fmt: skip

    def close(self) -> None:
        """Close the file being appended to (releasing it to other writers); the watch then
        records no more steps (its data stays readable). Also what leaving
        `with aw.watch(...) as w:` does.

        Example:
            >>> w = aw.watch(); w.close(); w.closed
            True
        """
        self.closed = True
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()

    # ----------------------------------------------------------------- reading
    @property
    def steps(self) -> list[int]:
        """The watched step numbers, in order."""
        return [s.step for s in self.records if s.watched]

    @property
    def nonfinite_steps(self) -> list[int]:
        """Every step, watched or not, in which a parameter gradient came out non-finite."""
        return [s.step for s in self.records if s.nonfinite_params]

    @property
    def expected_steps(self) -> list[int]:
        """The non-finite steps a loss scaler explains (its expected overflow, see
        `TrainingStep.expected_overflow`)."""
        return [s.step for s in self.records if s.expected_overflow]

    @property
    def scales(self) -> np.ndarray:
        """The loss scaler's factor per watched step (NaN where there was none)."""
        return np.array([math.nan if s.scale is None else s.scale
                         for s in self.records if s.watched], dtype=np.float64)  # fmt: skip

    def losses(self) -> np.ndarray:
        """The loss of every step (watched or not), in step order (unscaled; NaN where the
        loss had more than one element).

        Example:
            >>> w = aw.watch(every=5); loss = (x * 3).sum()
            >>> for _ in range(2):
            ...     with w.step(loss):
            ...         loss.backward(retain_graph=True)
            >>> w.losses().tolist()
            [6.0, 6.0]
        """
        return np.array([s.loss for s in self.records], dtype=np.float64)

    def record(self, step: int) -> TrainingStep:
        """The `TrainingStep` of step number `step` (KeyError naming the range otherwise).

        Example:
            >>> w = aw.watch(); loss = (x * 3).sum()
            >>> with w.step(loss):
            ...     loss.backward()
            >>> w.record(0).watched
            True
        """
        k = self._index.get(step)
        if k is None:
            raise KeyError(f"no step {step}: this watch has steps 0..{len(self.records) - 1}")
        return self.records[k]

    def recording(self, step: int) -> Recording:
        """A drawable, replayable `Recording` of watched step `step` (`aw.explore` it).

        Its summaries hold each gradient's norm, NaN/Inf counts, shape and dtype (min, max,
        mean, std and values were not computed: None and []); `nonfinite_origins()` names
        where a NaN/Inf was born, with its cause; `failure` the node that raised.

        Example:
            >>> w = aw.watch(); loss = (x * 3).sum()
            >>> with w.step(loss):
            ...     loss.backward()
            >>> w.recording(0).edge_summary("n1:0").norm
            3.0
        """
        st = self.record(step)
        if not st.watched or st.structure is None:
            raise ValueError(f"step {step} was not watched (every={self.every}); watched steps "
                             f"near it: {self._near(step)}")  # fmt: skip
        meta = {k: v for k, v in self.meta.items() if k in ("rank", "world_size", "torch")}
        return as_recording(st, self.structures[st.structure], meta)

    def _near(self, step: int) -> list[int]:
        ws = self.steps
        k = int(np.searchsorted(ws, step))
        return ws[max(0, k - 2) : k + 2]

    def first_nonfinite(self, *, expected: bool = True, healed: bool = True
                        ) -> tuple[int, Origin | None] | None:  # fmt: skip
        """(step, where its NaN/Inf was born) of the earliest step in `nonfinite_steps`, or
        None when every step's gradients were finite (so test it before unpacking it). The
        `Origin` is where that step was watched (the first "born" node, with its cause, and for
        a NaN/Inf already made in the forward, `where="forward"` and the forward op), None
        where it was not. `expected=False` skips the loss scaler's expected overflows.

        `healed=True` (the default): when no step left a parameter gradient non-finite, the
        first WATCHED step in which some gradient was non-finite all the same (born and healed
        within the step: a mask or a multiplication by zero removed it before the parameters)
        is returned, its `Origin` of kind "healed": the node that healed it, its cause naming
        where it was born. So a NaN is never hidden behind "no NaN". An unwatched step checks
        only its parameters: a NaN healed there is not seen. `healed=False`: parameters only.

        Example:
            >>> w = torch.tensor([0.0, 1.0], requires_grad=True)
            >>> watch = aw.watch(params={"w": w}); loss = w.sqrt().sum()
            >>> with watch.step(loss):
            ...     loss.backward()
            >>> found = watch.first_nonfinite()
            >>> if found is not None:  # None: no step had a NaN/Inf
            ...     step, origin = found
            ...     print(step, origin and (origin.node, origin.kind))
            0 ('n1', 'born')
            >>> aw.watch().first_nonfinite() is None
            True
            >>> v = torch.tensor([-1.0, 4.0], requires_grad=True)
            >>> watch = aw.watch(params={"v": v}); loss = v.relu().sqrt().sum()
            >>> with watch.step(loss):
            ...     loss.backward()
            >>> found = watch.first_nonfinite()  # None only when no gradient had one
            >>> found[0], found[1].kind, v.grad.isfinite().all()
            (0, 'healed', tensor(True))
            >>> watch.first_nonfinite(healed=False) is None
            True
        """
        return first_nonfinite(self, expected=expected, healed=healed)

    # ----------------------------------------------------------------- series
    def keys(self) -> dict[str, list[str]]:
        """What `series` accepts: {"modules": [...], "params": [...], "edges": [...]} over
        every structure seen.

        Example:
            >>> w = aw.watch(params={"x": x}); loss = (x * 3).sum()
            >>> with w.step(loss):
            ...     loss.backward()
            >>> w.keys()
            {'modules': [''], 'params': ['x'], 'edges': ['n0:0', 'n1:0']}
        """
        modules: dict[str, None] = {}
        params: dict[str, None] = {}
        edges: dict[str, None] = {}
        for s in self.structures:
            modules.update(dict.fromkeys(s.modules()))
            params.update(dict.fromkeys(s.params))
            edges.update(dict.fromkeys(s.edge_ids))
        return {"modules": list(modules), "params": list(params), "edges": list(edges)}

    def series(self, key: str) -> np.ndarray:
        """One float per watched step: the gradient norm of `key`, an edge id ("n12:0"), a
        parameter name, or a module path (the norm of that module's parameters' gradients
        together). "" is the whole model: its PARAMETERS only (the model's, those named in
        `params=`, any `nn.Parameter`), never an input tensor's gradient (a leaf that requires
        grad, such as `x` in `model(x)`: its own key is its name in `keys()["params"]`,
        "input 0 [5, 4]"). NaN where a step's graph lacks the key or nothing flowed there.
        Divided by the loss scale where a scaler scaled the loss.

        Example:
            >>> w = aw.watch(params={"x": x}); loss = (x * 3 * y).sum()
            >>> with w.step(loss):
            ...     loss.backward()
            >>> w.series("x").tolist(), w.series("n1:0").tolist(), w.series("").tolist()
            ([9.0], [3.0], [9.0])
            >>> w.keys()["params"]  # y: an input, not in series("")
            ['input 0 []', 'x']
        """
        return self.table([key])[:, 0]

    def table(self, keys: Sequence[str]) -> np.ndarray:
        """`series` of several keys at once: a (watched steps x keys) float64 array.

        Example:
            >>> w = aw.watch(params={"x": x}); loss = (x * 3).sum()
            >>> with w.step(loss):
            ...     loss.backward()
            >>> w.table(["x", "n0:0"]).tolist()
            [[3.0, 1.0]]
        """
        keys = [str(k) for k in keys]
        known = self.keys()
        names = {*known["params"], *known["modules"]}  # a set: no scan per key
        for k in keys:
            if not (k in names or _EDGE_ID.fullmatch(k)):
                raise KeyError(
                    f"{k!r} is not an edge id, a parameter or a module of this watch; e.g. "
                    f"{(known['params'][:2] + known['modules'][1:3] + known['edges'][:2])}"
                )
        watched = [s for s in self.records if s.watched and s.structure is not None]
        out = np.full((len(watched), len(keys)), np.nan, dtype=np.float64)
        by_sid: dict[int, list[int]] = {}
        for row, st in enumerate(watched):
            by_sid.setdefault(st.structure, []).append(row)  # type: ignore[arg-type]
        for sid, rows in by_sid.items():
            out[rows] = table_of(self.structures[sid], [watched[r] for r in rows], keys)
        scale = np.array([s.scale or 1.0 for s in watched], dtype=np.float64)
        return out / scale[:, None]

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
        meta = _plain(self.meta)
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


def _plain(meta: Mapping[str, Any]) -> dict[str, Any]:
    return {str(k): v if isinstance(v, str | int | float | bool | type(None)) else repr(v)
            for k, v in meta.items()}  # fmt: skip


def watch(
    model: torch.nn.Module | None = None,
    *,
    every: int = 1,
    path: str | os.PathLike | None = None,
    params: Mapping[str, torch.Tensor] | None = None,
    best_effort: bool = False,
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

    Returns:
        The `Watch` (a context manager: leaving `with aw.watch(...) as w:` closes it).

    Raises:
        ValueError: `every` is not an int >= 1; `path` is refused (see `path`).
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
    return Watch(model, every=every, path=path, params=params, best_effort=best_effort)


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
