"""`aw.watch` for a Lightning `Trainer`, without editing the `LightningModule`.

`Trainer(..., callbacks=[WatchCallback(path="run.awwatch")])`: the callback watches every
backward pass the trainer runs, through the two events Lightning documents around it:
`on_before_backward(trainer, module, loss)` opens a step on the very tensor the backward starts
from, `on_after_backward` closes it (and `on_exception`, with the exception, when the backward
raised). Automatic and manual optimization alike (`self.manual_backward(loss)` sends the same
events); several optimizers: one step per backward. `lightning.pytorch` is used where
installed, else the older `pytorch_lightning` package (the callback is a `Callback` of
whichever was found: `CALLBACK_PACKAGE`).

What a step holds: the gradients that backward produced, before clipping
(`gradient_clip_val`) and the optimizer. With `accumulate_grad_batches=a`, each optimizer step
is `a` watch steps (one per micro-batch; `every` counts backward passes), each the micro-batch's
own gradients, and its loss as Lightning backwards it (the `training_step` loss divided by `a`);
`optimizer_steps[k]` is the trainer's `global_step` of watch step `k`.

Needs the `lightning` extra: `pip install lightning`.

Example:
    >>> WatchCallback(every=2).every, CALLBACK_PACKAGE in ("lightning.pytorch", "pytorch_lightning")
    (2, True)
"""

from __future__ import annotations

import os
from typing import Any

import torch

from ..engine.watch.watch import Watch
from .trainerblock import TrainerSteps, check_every, watch_options

try:
    from lightning.pytorch import Callback
except ImportError:
    try:
        from pytorch_lightning import Callback
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "autograd_widget.integrations.lightning needs Lightning: "
            "pip install lightning"
        ) from e

__all__ = ["CALLBACK_PACKAGE", "WatchCallback"]

#: The package whose `Callback` `WatchCallback` is ("lightning.pytorch" or "pytorch_lightning").
CALLBACK_PACKAGE = Callback.__module__.split(".callbacks")[0]


class WatchCallback(Callback):
    """A Lightning `Callback` that watches every backward pass of a `Trainer` (see the module
    docstring): `Trainer(..., callbacks=[WatchCallback(path="run.awwatch")])`.

    The arguments are `aw.watch`'s (`path`, `every`, and any other by name: `params=`,
    `best_effort=`, ...; `model=` is the `LightningModule`: parameters are named as
    its `named_parameters()`). After (or during) training, `callback.watch` is the `Watch`;
    `callback.optimizer_steps[k]` the trainer's `global_step` of watch step `k`. Each `fit()`
    starts a new watch (with `path=`, give each run its own file).

    Raises:
        ValueError: `every` is not an int >= 1 (at once); `path` refused (at `on_train_start`).

    Example:
        >>> cb = WatchCallback(every=3); cb.watch is None, cb.every
        (True, 3)
    """

    def __init__(
        self,
        path: str | os.PathLike | None = None,
        every: int = 1,
        **options: Any,
    ) -> None:
        super().__init__()
        self.path = path
        self.every = check_every(every)
        self.options = watch_options(options)
        self.watch: Watch | None = None
        self._steps: TrainerSteps | None = None

    @property
    def optimizer_steps(self) -> list[int]:
        """The trainer's `global_step` (optimizer steps done) when each watch step's backward
        ran: `optimizer_steps[k]` for watch step `k` ([] before training)."""
        return [] if self._steps is None else list(self._steps.optimizer_steps)

    # ----------------------------------------------------------------- Lightning's events
    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        """Start a new watch of `pl_module` (the trainer calls this).

        Example:
            >>> cb = WatchCallback(); cb.on_train_start(None, model); cb.watch.model is model
            True
        """
        if self._steps is not None:
            self._steps.finish()
        self.watch = Watch(pl_module, every=self.every, path=self.path, **self.options)
        self._steps = TrainerSteps(self.watch)

    def on_before_backward(self, trainer: Any, pl_module: Any, loss: torch.Tensor) -> None:
        """Open a step on `loss`, the tensor the trainer's backward starts from.

        Example:
            >>> cb = WatchCallback(); cb.on_train_start(None, model)
            >>> loss = model(torch.ones(2, 4)).sum(); cb.on_before_backward(None, model, loss)
            >>> loss.backward(); cb.on_after_backward(None, model); cb.watch.steps
            [0]
        """
        if self._steps is None:
            return
        self._steps.close()  # a step left open (its backward never ran): closed first
        step = getattr(trainer, "global_step", 0)
        self._steps.open(loss, optimizer_step=int(step or 0))

    def on_after_backward(self, trainer: Any, pl_module: Any) -> None:
        """The backward is done: close its step (its norms are kept).

        Example:
            >>> WatchCallback().on_after_backward(None, model) is None
            True
        """
        if self._steps is not None:
            self._steps.close()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        """Training raised: the open step is recorded with the exception, the watch closed.

        Example:
            >>> cb = WatchCallback(); cb.on_train_start(None, model)
            >>> cb.on_exception(None, model, RuntimeError("boom")); cb.watch.closed
            True
        """
        if self._steps is not None:
            self._steps.finish(exception)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        """Training is over: close the watch (it stays readable; its file is released).

        Example:
            >>> cb = WatchCallback(); cb.on_train_start(None, model)
            >>> cb.on_train_end(None, model); cb.watch.closed
            True
        """
        if self._steps is not None:
            self._steps.finish()
