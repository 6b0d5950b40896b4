"""One watched step around each backward pass a trainer runs itself (hf.py, lightning.py).

A trainer (Hugging Face's, Lightning's) calls `loss.backward()` inside its own loop, where
`with watch.step(loss):` cannot be written. Its callbacks can: `TrainerSteps.open(loss)` is
what entering that block does (`Watch.step` + `Watch.begin`: the step numbered, its graph
hooked) at the last moment the trainer shows the loss before its backward, and
`TrainerSteps.close()` is what leaving it does (`Watch.end`) at the first moment after.

Gradient accumulation (several backward passes per optimizer step) is one watched step PER
BACKWARD PASS: each micro-batch is its own graph, and a step's norms are that graph's own
gradients, the gradient each backward produced (not the accumulated `.grad`). `optimizer_steps`
says which optimizer step each watched step belongs to.

Guarantees: a problem of the watch's own (a graph it cannot hook) is warned once
(`RuntimeWarning`) and the trainer's step runs unwatched, never fails because of the watch;
nothing stays attached to the graph after `close()`; the trainer's own exception goes through
unchanged (`close(exc)` records the step with its failure).

Example:
    >>> w = aw.watch(params={"x": x}); steps = TrainerSteps(w)
    >>> loss = (x * 3).sum(); steps.open(loss, optimizer_step=7)
    True
    >>> loss.backward(); steps.close()
    >>> w.series("x").tolist(), steps.optimizer_steps
    ([3.0], [7])
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import torch

from ..engine.watch.stepblock import StepBlock
from ..engine.watch.watch import Watch
from ..util.warn import warn_user

__all__ = ["TrainerSteps", "check_every", "loss_of", "watch_options"]


def check_every(every: Any) -> int:
    """`every` as `aw.watch` takes it (an int >= 1), checked when the callback is made, not
    when training starts.

    Example:
        >>> check_every(2)
        2
        >>> check_every(0)
        Traceback (most recent call last):
        ValueError: every must be an int >= 1 (watch every n-th backward pass), got 0
    """
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise ValueError(f"every must be an int >= 1 (watch every n-th backward pass), "
                         f"got {every!r}")  # fmt: skip
    return every


def watch_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The other `aw.watch` arguments a callback passes on (`params=`, `best_effort=`, ...),
    their NAMES checked when the callback is made (their values by `aw.watch`, when training
    starts); `model`, `every` and `path` are the callback's own.

    Example:
        >>> watch_options({"best_effort": True})
        {'best_effort': True}
        >>> watch_options({"evry": 2})
        Traceback (most recent call last):
        TypeError: unknown aw.watch argument(s) ['evry']; a WatchCallback passes on ...
    """
    allowed = [n for n, p in inspect.signature(Watch.__init__).parameters.items()
               if p.kind is p.KEYWORD_ONLY and n not in ("every", "path")]  # fmt: skip
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise TypeError(f"unknown aw.watch argument(s) {unknown}; a WatchCallback passes on "
                        f"{allowed} (and takes path= and every= itself)")  # fmt: skip
    return dict(options)


def loss_of(output: Any) -> tuple[torch.Tensor | None, bool]:
    """(the tensor a model's output gives the backward to start from, whether it is the loss).

    The loss as Hugging Face's `Trainer.compute_loss` finds it: `output["loss"]` (a dict or a
    `ModelOutput`), `output.loss`, `output[0]` of a tuple, the output itself when it is a
    one-element tensor. A model that returns no loss (the trainer computes it from the logits:
    label smoothing, `compute_loss_func`) gives its first output that requires grad instead,
    and False: the graph watched is then the model's own, without the loss's ops. (None, False)
    when no output requires grad (evaluation, `torch.no_grad()`).

    Example:
        >>> loss_of({"loss": z, "logits": x})[1], loss_of((x * y, z))[0] is not None
        (True, True)
        >>> loss_of({"logits": torch.ones(2, requires_grad=True) * 2})[1]
        False
        >>> loss_of(torch.ones(2))
        (None, False)
    """
    found: torch.Tensor | None = None
    if isinstance(output, Mapping):
        found = output.get("loss")
        values = list(output.values())
    elif isinstance(getattr(output, "loss", None), torch.Tensor):
        found = output.loss
        values = [found]
    elif isinstance(output, tuple | list):
        values = list(output)
        first = values[0] if values else None
        found = first if isinstance(first, torch.Tensor) and first.numel() == 1 else None
    else:
        values = [output]
        found = output if isinstance(output, torch.Tensor) and output.numel() == 1 else None
    if isinstance(found, torch.Tensor) and found.requires_grad:
        return found, True
    for v in values:
        if isinstance(v, torch.Tensor) and v.requires_grad:
            return v, False
    return None, False


class TrainerSteps:
    """The blocks of a watch opened and closed around a trainer's own backward passes (see the
    module docstring). `watch`: the `Watch` steps go to; `optimizer_steps[k]`: the trainer's
    optimizer step (its `global_step` when the backward ran) of watch step `k`; `problems`:
    the watch's own problems met (warned once each).

    Example:
        >>> steps = TrainerSteps(aw.watch()); steps.open((x * 3).sum(), optimizer_step=0)
        True
        >>> steps.is_open
        True
    """

    def __init__(self, watch: Watch) -> None:
        self.watch = watch
        self.block: StepBlock | None = None
        self.optimizer_steps: list[int] = []
        self.problems: list[str] = []
        self._at = 0

    @property
    def is_open(self) -> bool:
        """Whether a step is open (its backward not yet closed)."""
        return self.block is not None

    def open(self, loss: torch.Tensor, *, optimizer_step: int) -> bool:
        """Open the step whose backward starts at (or above) `loss`; False when none opened: a
        step is open already, the watch is closed, `loss` has no graph, or hooking it failed
        (warned once, the trainer runs on).

        Example:
            >>> steps = TrainerSteps(aw.watch()); steps.open(torch.ones(1), optimizer_step=0)
            False
        """
        w = self.watch
        if self.block is not None or w.closed or loss.grad_fn is None:
            return False
        try:
            block = w.step(loss)
            w.begin(block)
        except Exception as e:  # a watch problem must not stop the user's training
            self._problem(f"the step could not be watched ({type(e).__name__}: {e}); "
                          "training goes on unwatched")  # fmt: skip
            return False
        self.block, self._at = block, int(optimizer_step)
        return True

    def close(self, exc: BaseException | None = None) -> None:
        """Close the open step (nothing when none is): its hooks removed, its norms kept;
        `exc` is the exception the trainer's backward raised, if it raised.

        Example:
            >>> steps = TrainerSteps(aw.watch()); steps.close(); steps.optimizer_steps
            []
        """
        block, self.block = self.block, None
        if block is None:
            return
        before = len(self.watch.records)
        try:
            self.watch.end(block, exc)
        finally:
            if len(self.watch.records) > before:
                self.optimizer_steps.append(self._at)

    def finish(self, exc: BaseException | None = None) -> None:
        """Close the open step, then the watch (its file released; its data stays readable).

        Example:
            >>> steps = TrainerSteps(aw.watch()); steps.finish(); steps.watch.closed
            True
        """
        try:
            self.close(exc)
        finally:
            self.watch.close()

    def _problem(self, msg: str) -> None:
        if msg not in self.problems:
            self.problems.append(msg)
            warn_user(msg, RuntimeWarning)
