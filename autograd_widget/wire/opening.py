"""What `aw.explore()` was given, resolved into the run a Session shows: the graph, the stepper
that drives it, and what opens with it (a watch's step, a rank group's rank).

`explore()` takes one of five things: tensors (captured now, stepped live by a `Stepper`), a
`BackwardGraph` (stepped live), a `Recording` (replayed by a `Replay`), a `Watch` (its opening
step's recording replayed: the first non-finite watched step, else the last) or a rank group
(`RankWatches` / `RankRecordings`: the rank that matters, where it broke, shown as one of the
above). `open_run` tells them apart and refuses the options that do not apply to what was
given, each with a `TypeError` that says where they apply; `check_options` checks the options
every kind shares. The widget (widget.py) then builds the Scene and the Session on the result.

Guarantees: a refusal happens before anything is built or stepped; the user's tensors, graph,
recording or watch are only read (a graph that was given stays the caller's: `owns_graph`
False, so releasing the widget never closes it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from ..core.capture import capture
from ..core.graph import BackwardGraph
from ..engine.record.recorder import empty_notice
from ..engine.record.recording import Recording
from ..engine.record.replay import Replay
from ..engine.step.stepper import Keep, Stepper
from ..engine.watch.watch import Watch
from ..view.scene import COLLAPSE_MODES, ORIENTATIONS
from .rankswitch import Group, group_of, member, opening_step
from .session import freed_notice

if TYPE_CHECKING:
    from ..engine.interface import Stepping

__all__ = ["Opening", "check_options", "open_run"]


@dataclass(frozen=True)
class Opening:
    """The run `aw.explore()` shows, resolved (`open_run`).

    Attributes:
        graph: the graph drawn (a recording's records for a replay).
        stepper: what the buttons drive: a `Stepper` for a live graph, a `Replay` otherwise.
        owns_graph: True when the graph was captured here (the widget closes it on release);
            False for a graph or recording the caller gave.
        recording: the recording replayed (a watch's step, a rank's file, or the one given),
            else None.
        watch: the `aw.watch` shown, else None; `step`: its watched step the view opens on.
        group: the rank group shown (every rank's files), else None.

    Example:
        >>> run = open_run(x * y)
        >>> run.owns_graph, run.recording is None, run.stepper.capabilities.live
        (True, True, True)
    """

    graph: BackwardGraph
    stepper: Stepping
    owns_graph: bool
    recording: Recording | None = None
    watch: Watch | None = None
    step: int | None = None
    group: Group | None = None

    @property
    def notice(self) -> str | None:
        """The banner shown with the state from the start: a recording that holds no run says
        so; a graph that `backward()` already freed says stepping fails; else None.

        Example:
            >>> open_run(x * y).notice is None
            True
        """
        notice = freed_notice(self.graph)
        if self.recording is not None:
            notice = empty_notice(self.recording) or notice
        return notice


def check_options(collapse: str, orientation: str, height: int | None) -> None:
    """The drawing options every kind of run shares; a `ValueError` naming the valid values.

    Example:
        >>> check_options("auto", "LR", None)
        >>> check_options("auto", "up", None)
        Traceback (most recent call last):
        ValueError: orientation must be 'auto', 'TB' or 'LR', got 'up'
    """
    if collapse not in COLLAPSE_MODES:
        raise ValueError(f"collapse must be one of {COLLAPSE_MODES}, got {collapse!r}")
    if orientation not in ORIENTATIONS:
        raise ValueError(f"orientation must be 'auto', 'TB' or 'LR', got {orientation!r}")
    if height is not None and (
            not isinstance(height, int) or isinstance(height, bool) or height < 100):
        raise ValueError(
            f"height must be None (what the graph needs) or an int number of pixels >= 100, "
            f"got {height!r}")


def open_run(
    given: Any,
    grad_outputs: torch.Tensor | Sequence[torch.Tensor | None] | None = None,
    *,
    model: torch.nn.Module | None = None,
    params: Mapping[str, torch.Tensor] | None = None,
    keep: Keep = "summaries",
    create_graph: bool = False,
    compare_to: object = None,
) -> Opening:
    """The run `aw.explore(given, ...)` shows (see the module docstring for the five kinds).

    Raises:
        TypeError: the module itself as `given` (pass what it computed), or an option that does
            not apply to what was given (the message says where it applies).
        ValueError: a watch with no watched step; what `capture` refuses (a leaf, a tensor
            without a graph).

    Example:
        >>> run = open_run(aw.record((x * 3).sum()))
        >>> run.owns_graph, run.stepper.capabilities.live, run.recording is not None
        (False, False, True)
        >>> open_run(aw.record((x * 3).sum()), keep="tensors")
        Traceback (most recent call last):
        TypeError: keep/create_graph choose how a live graph is stepped; ...
    """
    if isinstance(given, torch.nn.Module):
        name = type(given).__name__
        raise TypeError(
            f"aw.explore() got the module itself ({name}); it draws the backward of a "
            f"tensor the module computed: pass the loss or the output, and the module as "
            f"model=, e.g. aw.explore(model(x).sum(), model=model) or "
            f"aw.explore(loss, model=model)"
        )
    watch: Watch | None = None
    step: int | None = None
    group = group_of(given, compare_to)  # every rank's files: one rank shown
    if group is not None:
        given = member(group)  # the rank that matters: where it broke
    if isinstance(given, Watch):
        if grad_outputs is not None or model is not None or params is not None:
            raise TypeError("a watch was recorded already: model/params apply to aw.watch()")
        if compare_to is not None or keep != "summaries" or create_graph:
            raise TypeError("compare_to/keep/create_graph do not apply to a watch")
        watch = given
        if not watch.steps:
            raise ValueError("this watch has no watched step yet: run a training step in "
                             "`with watch.step(loss): loss.backward()` first")  # fmt: skip
        step = opening_step(watch)
        given = watch.recording(step)
    if isinstance(given, Recording):
        if grad_outputs is not None or model is not None or params is not None:
            raise TypeError(
                "a recording was captured already: grad_outputs/model/params apply to "
                "aw.record(...), not to explore(recording)"
            )
        if keep != "summaries" or create_graph:
            raise TypeError(
                "keep/create_graph choose how a live graph is stepped; a recording replays "
                "what aw.record(..., keep=...) kept"
            )
        if compare_to is not None and not isinstance(compare_to, Recording):
            raise TypeError(f"compare_to must be a Recording, got {type(compare_to).__name__}")
        return Opening(given.graph, Replay(given), False, given, watch, step, group)
    if compare_to is not None:
        raise TypeError("compare_to compares two recordings: pass aw.record(...) results")
    if isinstance(given, BackwardGraph):
        if grad_outputs is not None or model is not None or params is not None:
            raise TypeError(
                "grad_outputs/model/params apply when capturing; pass them to "
                "aw.capture() or give the widget the tensors instead of a graph"
            )
        return Opening(given, Stepper(given, create_graph=create_graph, keep=keep), False)
    graph = capture(given, grad_outputs, model=model, params=params)
    return Opening(graph, Stepper(graph, create_graph=create_graph, keep=keep), True)
