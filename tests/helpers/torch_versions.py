"""Tests that need a newer torch than the oldest supported one: `@needs_torch("2.13", why)`.

The compat runs (`make compat TORCH=x.y.z`) run the whole suite on older torches; a test that
checks something only a newer torch can show (a value `util.compat` reports as unknown on an
older one) is skipped there with a reason naming the version, and nothing else skips.
"""

from __future__ import annotations

import functools

import pytest
import torch

__all__ = [
    "WHY_CULPRIT",
    "WHY_FIND",
    "WHY_FRAMES",
    "WHY_FRAMES_HOOK",
    "WHY_GROUP",
    "WHY_META",
    "WHY_PACKED",
    "WHY_STALE",
    "checkpoint_frames_hidden",
    "checkpoint_frames_skip",
    "needs_checkpoint_frames",
    "needs_torch",
    "needs_torch_reason",
    "torch_at_least",
]

#: Why a test needs the torch it names (what that torch added), one wording per reason.
WHY_CULPRIT = "SavedTensor.data shows the modified tensor, whose grad_fn names the in-place op"
WHY_GROUP = "torch.utils.checkpoint.GraphExecGroup: one recompute per region per pass"
WHY_FIND = (
    "SavedTensor.unpack_hook: which nodes hold checkpointed values, found without unpacking"
)
WHY_META = (
    "SavedTensor.unpack_hook: a checkpointed value's shape and its region's inputs, "
    "without recomputing"
)
WHY_PACKED = "SavedTensor.data: a packed value's packed form without running its unpack hook"
WHY_STALE = "SavedTensor.data: a stale value's shape and bytes without unpacking"


def torch_at_least(version: str) -> bool:
    """Whether the installed torch is `version` or newer ("2.13" or "2.13.1")."""
    have = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:3] if p.isdigit())
    want = tuple(int(p) for p in version.split("."))
    return have[: len(want)] >= want


def needs_torch_reason(version: str, why: str) -> str:
    """The one wording of "this test needs a newer torch": the version, the installed one, why."""
    return f"needs torch >= {version} (installed: {torch.__version__}): {why}"


def needs_torch(version: str, why: str) -> pytest.MarkDecorator:
    """Skip the test on a torch older than `version`, saying which torch it needs and why."""
    return pytest.mark.skipif(not torch_at_least(version), reason=needs_torch_reason(version, why))


#: Why a test needs a torch whose checkpoint bookkeeping autograd_widget reads.
WHY_FRAMES = (
    "non-reentrant checkpoint's per-region frame, read from its unpack hook (a checkpointed "
    "value's shape, its region's inputs, one recompute per region): read in the layouts of "
    "torch 2.10 and 2.13, not found in this one"
)
#: The frame is reached through `SavedTensor.unpack_hook`, which an older torch lacks.
WHY_FRAMES_HOOK = (
    "SavedTensor.unpack_hook: non-reentrant checkpoint's per-region frame is reached through a "
    "checkpointed value's unpack hook (its shape, its region's inputs, one recompute per region)"
)


@functools.cache
def checkpoint_frames_hidden() -> bool:
    """True where this torch keeps non-reentrant checkpoint's frame where `core.checkpoint`
    does not find it (`frame_of` None for a checkpointed value): found by checkpointing one
    tiny function, not from a version number (torch's internals, read as they are)."""
    from torch.utils.checkpoint import checkpoint

    from autograd_widget.core.checkpoint import frame_of, is_checkpointed

    a = torch.ones(3, requires_grad=True)
    out = checkpoint(torch.sin, a, use_reentrant=False)
    raw = out.grad_fn._raw_saved_self
    return not is_checkpointed(raw) or frame_of(raw) is None


def checkpoint_frames_skip() -> str | None:
    """Why a test that reads checkpoint frames cannot run on this torch, or None where it can:
    before `SavedTensor.unpack_hook` (torch 2.10) the version it needs; from it, where the
    frame is laid out a way `core.checkpoint` does not know (`checkpoint_frames_hidden`)."""
    from autograd_widget.util.compat import SAVED_DATA, SAVED_DATA_TORCH

    if not SAVED_DATA:
        return needs_torch_reason(SAVED_DATA_TORCH, WHY_FRAMES_HOOK)
    if checkpoint_frames_hidden():
        return f"torch {torch.__version__} does not show it: {WHY_FRAMES}"
    return None


def needs_checkpoint_frames() -> pytest.MarkDecorator:
    """Skip where `checkpoint_frames_skip()` says why: what users see there is tested by the
    unknown paths (a note, nothing counted, nothing guessed)."""
    why = checkpoint_frames_skip()
    return pytest.mark.skipif(why is not None, reason=why or "")
