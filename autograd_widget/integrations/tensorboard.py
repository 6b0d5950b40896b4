"""A watch's gradient norms as TensorBoard scalars, for people who read their runs there.

`to_tensorboard(watch, logdir)` (also `watch.to_tensorboard(logdir)`) writes, through
`torch.utils.tensorboard.SummaryWriter`, one scalar per watched step for each module path
(`kind="module"`, the default: `watch.series(path)`, the norm of that module's parameters'
gradients together) or each parameter (`kind="parameter"`), tagged `grad_norm/<path>`
(`grad_norm/(model)` for the whole model, `series("")`), and the loss of every step, tagged
`loss`. The x axis is the watch's step number. A value is written as `series` gives it: NaN
where the step's graph lacked the module or its gradient was NaN (TensorBoard skips NaN
points). TensorBoard keeps scalars as float32, as the watch does.

Needs the `tensorboard` extra: `pip install tensorboard`.

Example:
    >>> import tempfile
    >>> w = aw.watch(model); loss = model(torch.ones(2, 4)).sum()
    >>> with w.step(loss):
    ...     loss.backward()
    >>> with tempfile.TemporaryDirectory() as d:
    ...     to_tensorboard(w, d).name == Path(d).name
    True
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

try:
    from torch.utils.tensorboard import SummaryWriter
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "autograd_widget.integrations.tensorboard needs tensorboard: "
        "pip install tensorboard"
    ) from e

if TYPE_CHECKING:
    from ..engine.watch.watch import Watch

__all__ = ["KINDS", "WHOLE_MODEL", "tag_of", "to_tensorboard"]

#: What `kind=` accepts, and the `watch.keys()` list each one writes.
KINDS = {"module": "modules", "parameter": "params"}
#: The tag's name for the whole model (`series("")`).
WHOLE_MODEL = "(model)"


def tag_of(key: str) -> str:
    """The scalar tag of a module path or parameter name.

    Example:
        >>> tag_of("encoder.layers.0"), tag_of("")
        ('grad_norm/encoder.layers.0', 'grad_norm/(model)')
    """
    return f"grad_norm/{key or WHOLE_MODEL}"


def to_tensorboard(watch: Watch, logdir: str | os.PathLike, *, kind: str = "module") -> Path:
    """Write `watch`'s gradient norms (per module, or per parameter) and losses as TensorBoard
    scalars into a new event file under `logdir` (made if missing); returns `logdir`. See the
    module docstring for the tags.

    Raises:
        TypeError: `watch` is not a `Watch` (a `RankWatches`: one call per rank,
            `group.watch(rank)`, into a folder per rank).
        ValueError: `kind` is not "module" or "parameter"; `logdir` is a file.

    Example:
        >>> import tempfile
        >>> w = aw.watch(model); loss = model(torch.ones(2, 4)).sum()
        >>> with w.step(loss):
        ...     loss.backward()
        >>> with tempfile.TemporaryDirectory() as d:
        ...     out = to_tensorboard(w, d, kind="parameter")
        ...     len(list(out.iterdir()))
        1
    """
    if not all(hasattr(watch, a) for a in ("keys", "table", "steps", "losses")):
        hint = (" (a RankWatches: write each rank's, group.watch(rank), into its own folder)"
                if hasattr(watch, "ranks") else "")  # fmt: skip
        raise TypeError(f"to_tensorboard takes a Watch (aw.watch(...) or aw.load_watch(...)), "
                        f"got {type(watch).__name__}{hint}")  # fmt: skip
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {sorted(KINDS)}, got {kind!r}")
    out = Path(os.fspath(logdir))
    if out.exists() and not out.is_dir():
        raise ValueError(f"logdir {out} is a file: give a folder (TensorBoard reads the event "
                         f"files in it)")  # fmt: skip
    keys = watch.keys()[KINDS[kind]]
    steps = watch.steps
    rows = watch.table(keys).tolist() if keys else [[] for _ in steps]
    tags = [tag_of(k) for k in keys]
    losses = watch.losses()
    with SummaryWriter(log_dir=str(out)) as writer:
        for step, row in zip(steps, rows):
            for tag, value in zip(tags, row):
                writer.add_scalar(tag, value, global_step=step)
        for step, loss in enumerate(losses.tolist()):
            writer.add_scalar("loss", loss, global_step=step)
    return out
