"""What a `Watch` (watch/watch.py) answers about its steps: the steps, their losses, one step's
record and drawable `Recording`, the first non-finite step, and the series of gradient norms.

Split from watch.py by responsibility: watch.py records (the blocks, the file), this module reads
what was recorded (`WatchReading`, a mixin `Watch` inherits; it reads only `records`,
`structures`, `every`, `meta` and the step index). Every method works the same on a live watch
and on one loaded from a file.

Example:
    >>> w = aw.watch(); loss = (x * 3).sum()
    >>> with w.step(loss):
    ...     loss.backward()
    >>> isinstance(w, WatchReading), w.steps
    (True, [0])
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..diagnose.origins import Origin
from ..record.recording import Recording
from . import watchframe
from .structure import Structure
from .trainstep import TrainingStep, as_recording
from .watchfirst import first_nonfinite
from .watchseries import overview_of, table_of

__all__ = ["WatchReading"]

_EDGE_ID = re.compile(r"n\d+:\d+")


class WatchReading:
    """The reading half of `Watch` (see the module docstring): what was recorded, as steps,
    records, recordings and series.

    Example:
        >>> w = aw.watch(every=2); loss = (x * 3).sum()
        >>> for _ in range(3):
        ...     with w.step(loss):
        ...         loss.backward(retain_graph=True)
        >>> w.steps, w.losses().tolist()
        ([0, 2], [6.0, 6.0, 6.0])
    """

    every: int
    records: list[TrainingStep]
    structures: list[Structure]
    meta: dict[str, Any]
    _index: dict[int, int]

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

    # ------------------------------------------------------------------ the series, elsewhere
    def overview(self, key: str, start: int | None = None, stop: int | None = None,
                 bins: int = 512) -> dict[str, np.ndarray]:
        """`key`'s series over watched steps `start <= step < stop` in `bins` equal step ranges
        (what a timeline `bins` pixels wide draws): per bin its first step, min and max (a
        spike is never averaged away; an Inf kept), mean (of the finite values) and count of
        present values; NaN for a bin with none (watchseries.py's `overview_of`).

        Example:
            >>> w = aw.watch(params={"x": x}); loss = (x * 3).sum()
            >>> with w.step(loss):
            ...     loss.backward()
            >>> w.overview("x", bins=1)["max"].tolist()
            [3.0]
        """
        return overview_of(self.series(key), np.asarray(self.steps, dtype=np.int64),
                           start, stop, bins)  # fmt: skip

    def to_pandas(self, kind: str = "parameter") -> Any:
        """The series of `kind` ("parameter", "module" or "edge") as a `pandas.DataFrame`:
        index = `steps` (named "step"), one float64 column per key of `keys()`, values =
        `series(key)` (watchframe.py). pandas is optional: an ImportError naming
        `pip install pandas pyarrow` without it.

        Example:
            >>> w = aw.watch(params={"x": x}); loss = (x * 3).sum()
            >>> with w.step(loss):
            ...     loss.backward()
            >>> w.to_pandas("parameter")["x"].tolist()
            [3.0]
        """
        return watchframe.to_pandas(self, kind)

    def to_arrow(self, kind: str = "parameter") -> Any:
        """The same as a `pyarrow.Table`, a "step" column first (`polars.from_arrow` reads it).

        Example:
            >>> w = aw.watch(params={"x": x}); loss = (x * 3).sum()
            >>> with w.step(loss):
            ...     loss.backward()
            >>> w.to_arrow("parameter").to_pydict()
            {'step': [0], 'x': [3.0]}
        """
        return watchframe.to_arrow(self, kind)

    def to_tensorboard(self, logdir: str | os.PathLike[str], *, kind: str = "module") -> Path:
        """Write this watch's gradient norms per module (`kind="parameter"`: per parameter) and
        its losses as TensorBoard scalars into `logdir` (integrations/tensorboard.py: the tags,
        NaN kept); returns `logdir`. Needs `pip install tensorboard`.

        Example:
            >>> import tempfile
            >>> w = aw.watch(model); loss = model(torch.ones(2, 4)).sum()
            >>> with w.step(loss):
            ...     loss.backward()
            >>> with tempfile.TemporaryDirectory() as d:
            ...     w.to_tensorboard(d).is_dir()
            True
        """
        from ...integrations.tensorboard import to_tensorboard  # the optional extra, on demand

        return to_tensorboard(self, logdir, kind=kind)  # type: ignore[arg-type]
