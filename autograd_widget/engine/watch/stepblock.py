"""One `with watch.step(loss):` block of `aw.watch` (watch/watch.py), and what its misuse says.

A `StepBlock` is what `Watch.step(loss)` returns: entering it (`Watch.begin`) numbers the step and
hooks its graph, leaving it (`Watch.end`) reads and keeps what the hooks saw. Misuse is never
silent: a block that is never entered warns `UNENTERED` (when it is garbage-collected unentered,
at once in plain Python for a bare `watch.step(loss)` statement, or at the watch's next
`step(...)`, whichever comes first; once per block); a block in which no backward of its loss
ran warns `NO_BACKWARD` (`Watch.end`). Both are `UserWarning`s at the user's own line
(util/warn.py).

Example:
    >>> w = aw.watch(); loss = (x * 3).sum()
    >>> with w.step(loss) as b:
    ...     loss.backward()
    >>> type(b).__name__, b.entered
    ('StepBlock', True)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from ...util.warn import warn_user
from .leafcheck import LeafCheck
from .lean import LeanPass, Staged

if TYPE_CHECKING:
    from .watch import Watch

__all__ = ["NO_BACKWARD", "UNENTERED", "StepBlock"]

#: What a `watch.step(loss)` that was never entered as a `with` block warns.
UNENTERED = (
    "watch.step(loss) was called without `with`: that step recorded nothing. Write "
    "`with watch.step(loss): loss.backward()` (the block hooks the backward run inside it)"
)

#: What a block in which no backward of its graph ran warns.
NO_BACKWARD = (
    "no backward of the loss ran inside this `with watch.step(loss):` block: nothing was "
    "recorded and the step number is given to the next block. Call loss.backward() (or "
    "torch.autograd.grad) inside the block"
)


class StepBlock:
    """One `with watch.step(loss):` block (see `Watch.step`); `number` is its step number and
    `watched` says whether it records the graph, once entered.

    A block that is never entered records nothing and says so: a `UserWarning` (`UNENTERED`)
    when it is garbage-collected unentered (at once, in plain Python, for a bare
    `watch.step(loss)` statement) or at the watch's next `step(...)` call, whichever comes
    first; once per block.

    Example:
        >>> w = aw.watch(every=2); loss = (x * 3).sum()
        >>> with w.step(loss) as b:
        ...     loss.backward()
        >>> b.number, b.watched
        (0, True)
    """

    def __init__(self, owner: Watch, roots: list[torch.Tensor]) -> None:
        self.owner = owner
        self.roots = roots
        self.number = -1
        self.watched = False
        self.scale: float | None = None
        self.staged = Staged()
        self.loss_at = -1
        self.lean: LeanPass | None = None
        self.check: LeafCheck | None = None
        self.sid: int | None = None
        #: the structure this block captured first (dropped again if no backward ran)
        self.new_sid: int | None = None
        #: entered (`begin`); warned about (`UNENTERED` is said once)
        self.entered = False
        self.warned = False

    def __enter__(self) -> StepBlock:
        self.owner.begin(self)
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        self.owner.end(self, exc)

    def warn_unentered(self) -> None:
        """Warn (`UNENTERED`, once) when this block was never entered.

        Example:
            >>> import warnings
            >>> w = aw.watch(); b = w.step((x * 3).sum())
            >>> with warnings.catch_warnings(record=True) as caught:
            ...     warnings.simplefilter("always"); b.warn_unentered(); b.warn_unentered()
            >>> len(caught), str(caught[0].message)[:35]
            (1, 'watch.step(loss) was called without')
        """
        if not self.entered and not self.warned:
            self.warned = True
            warn_user(UNENTERED)

    def __del__(self) -> None:
        try:
            if not self.entered and not self.warned:
                self.warn_unentered()
        except Exception:  # at interpreter exit, or a warning filter that raises: no noise
            pass
