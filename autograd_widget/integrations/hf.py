"""`aw.watch` for a Hugging Face `transformers.Trainer`, without editing its loop.

`trainer = Trainer(model, args, ..., callbacks=[WatchCallback(path="run.awwatch")])`: the
callback watches every backward pass the trainer runs. The `Trainer` documents no event between
its loss and its backward, so the loss is found through a forward hook of the model (the one
hook added, on `on_train_begin`; removed on `on_train_end`): the model's first training
forward after the previous step opens a step on the loss it returns (`output["loss"]`,
`output.loss` or `output[0]`, as `Trainer.compute_loss` reads it; trainerblock.py `loss_of`),
and the trainer's next event after the backward (`on_substep_end`, or `on_pre_optimizer_step`
for the last micro-batch of an optimizer step) closes it. Forwards in evaluation (no grad) and
further forwards before that backward are not watched.

What a step holds: the gradients that backward produced, before clipping (`max_grad_norm`)
and the optimizer. With `gradient_accumulation_steps=a`, each optimizer step is `a` watch
steps (one per micro-batch; `every` counts backward passes), each the micro-batch's own
gradients (divided by `a` where the `Trainer` divides the loss); `optimizer_steps[k]` is the
`global_step` of watch step `k`. `losses()` are the model's losses, before the trainer divides
them. A model that returns no loss (label smoothing, `compute_loss_func`) is watched from its
first output that requires grad: the loss's own ops are then not in the graph, `losses()` NaN.

Needs the `hf` extra: `pip install transformers accelerate`.

Example:
    >>> WatchCallback(every=2).every
    2
"""

from __future__ import annotations

import os
from typing import Any

import torch

from ..engine.watch.watch import Watch
from ..util.warn import warn_user
from .trainerblock import TrainerSteps, check_every, loss_of, watch_options

try:
    from transformers import TrainerCallback
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "autograd_widget.integrations.hf needs transformers: pip install transformers accelerate"
    ) from e

__all__ = ["NO_LOSS", "WatchCallback"]

#: What a model whose output holds no loss warns (once per training run).
NO_LOSS = (
    "the model's output holds no loss (the Trainer computes it from the outputs: label "
    "smoothing, compute_loss_func, a compute_loss of your own): each step is watched from the "
    "model's first output that requires grad, so the loss's own ops are not in the graph and "
    "watch.losses() are NaN. Return the loss from the model (output['loss']) to watch it too"
)


class WatchCallback(TrainerCallback):
    """A `transformers.TrainerCallback` that watches every backward pass of a `Trainer` (see
    the module docstring): `Trainer(..., callbacks=[WatchCallback(path="run.awwatch")])`.

    The arguments are `aw.watch`'s (`path`, `every`, and any other by name: `params=`,
    `best_effort=`, ...; `model=` is the trainer's model). After (or during) training,
    `callback.watch` is the `Watch` (`series`, `first_nonfinite`, `aw.explore`);
    `callback.optimizer_steps[k]` the trainer's `global_step` of watch step `k`. Each
    `trainer.train()` starts a new watch (with `path=`, give each run its own file). A
    training run that raises keeps the forward hook until `callback.close(exc)`.

    Raises:
        ValueError: `every` is not an int >= 1 (at once); `path` refused (at `on_train_begin`).

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
        self.path = path
        self.every = check_every(every)
        self.options = watch_options(options)
        self.watch: Watch | None = None
        self._steps: TrainerSteps | None = None
        self._handle: Any = None
        self._state: Any = None
        self._warned = False

    @property
    def optimizer_steps(self) -> list[int]:
        """The trainer's `global_step` (optimizer steps done) when each watch step's backward
        ran: `optimizer_steps[k]` for watch step `k` ([] before training)."""
        return [] if self._steps is None else list(self._steps.optimizer_steps)

    # ----------------------------------------------------------------- the Trainer's events
    def on_train_begin(self, args: Any, state: Any, control: Any,
                       model: torch.nn.Module | None = None, **kwargs: Any) -> None:
        """Start a new watch of `model` and hook its forward (the trainer calls this).

        Example:
            >>> cb = WatchCallback(); cb.on_train_begin(None, None, None, model=model)
            >>> cb.watch.model is model
            True
            >>> cb.close()
        """
        if not isinstance(model, torch.nn.Module):
            raise TypeError("WatchCallback: the Trainer gave no model to watch (on_train_begin "
                            f"got model={type(model).__name__})")  # fmt: skip
        self.close()
        self.watch = Watch(model, every=self.every, path=self.path, **self.options)
        self._steps = TrainerSteps(self.watch)
        self._state = state
        self._warned = False
        self._handle = model.register_forward_hook(self._forward)

    def _forward(self, module: torch.nn.Module, inputs: Any, output: Any) -> None:
        steps = self._steps
        if steps is None or steps.is_open or not module.training or not torch.is_grad_enabled():
            return None
        loss, is_loss = loss_of(output)
        if loss is None:
            return None
        if not is_loss and not self._warned:
            self._warned = True
            warn_user(NO_LOSS)
        at = getattr(self._state, "global_step", 0)
        steps.open(loss, optimizer_step=int(at or 0))
        return None

    def on_substep_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """A micro-batch's backward is done (gradient accumulation): close its step.

        Example:
            >>> WatchCallback().on_substep_end(None, None, None) is None
            True
        """
        if self._steps is not None:
            self._steps.close()

    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """The last backward of an optimizer step is done: close its step (its norms were
        read during the backward, before the trainer clipped the gradients).

        Example:
            >>> WatchCallback().on_pre_optimizer_step(None, None, None) is None
            True
        """
        if self._steps is not None:
            self._steps.close()

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Training is over: close the last step and the watch, remove the forward hook.

        Example:
            >>> cb = WatchCallback(); cb.on_train_begin(None, None, None, model=model)
            >>> cb.on_train_end(None, None, None); cb.watch.closed
            True
        """
        self.close()

    def close(self, exc: BaseException | None = None) -> None:
        """Remove the forward hook and close the watch (what `on_train_end` does). After a
        training run that raised (the `Trainer` has no event for it), pass its exception:
        the step it broke is recorded with that failure. The watch stays readable.
        Idempotent.

        Example:
            >>> cb = WatchCallback(); cb.close(); cb.watch is None
            True
        """
        handle, self._handle = self._handle, None
        if handle is not None:
            handle.remove()
        if self._steps is not None:
            self._steps.finish(exc)
