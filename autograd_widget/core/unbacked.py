"""A tensor whose storage no longer holds its values: told without reading it, and never read.

FSDP2 (`fully_shard`) frees each unsharded parameter after the forward by resizing its storage to
0 bytes; the tensor object keeps its shape, and the backward's saved tensors (and the graph's
leaves) still view it. FSDP's pre-backward hooks gather the values again before a node reads them
(engine/step/sharded.py does the same when stepping by hand). Read in between, such a tensor
points at freed memory: torch itself does not check (`t.sum()` crashes the process). So whatever
looks at a saved value's numbers asks `unbacked(t)` first, and says why there are none
(`UNBACKED_NOTE`) instead of reading.

Example:
    >>> t = torch.ones(4, 8)
    >>> unbacked(t)
    False
    >>> _ = t.untyped_storage().resize_(0); unbacked(t)
    True
"""

from __future__ import annotations

import torch

from .dtensor import is_wrapped, local_tensor

__all__ = ["UNBACKED_NOTE", "unbacked"]

#: Why an unbacked saved tensor shows no values.
UNBACKED_NOTE = (
    "no values here now: its storage is empty (FSDP2 frees the unsharded parameters after the "
    "forward and gathers them again right before the backward reads them; stepping by hand does "
    "too, module by module): shape and dtype only"
)


def unbacked(t: torch.Tensor) -> bool:
    """Whether `t` (this rank's local shard, for a DTensor) spans more bytes than its storage
    holds now. Only the metadata is read (shape, strides, offset, the storage's size); a tensor
    without a plain storage (sparse, meta, a tensor subclass torch cannot size) is False.

    Example:
        >>> unbacked(torch.ones(0))
        False
    """
    if type(t) is not torch.Tensor and is_wrapped(t):
        t = local_tensor(t)
    if t.layout != torch.strided or t.is_meta or t.numel() == 0:
        return False
    try:
        held = t.untyped_storage().nbytes()
        span = 1 + sum((n - 1) * abs(s) for n, s in zip(t.shape, t.stride()))
        return held < (t.storage_offset() + span) * t.element_size()
    except (RuntimeError, NotImplementedError, TypeError):
        return False
