"""Dtype names, one spelling everywhere: ``"float32"``, not ``"torch.float32"``.

Records, summaries and payloads carry dtypes as these short names (JSON-safe, torch-free for
readers); the engine turns them back into `torch.dtype` objects when it builds tensors.

Example:
    >>> import torch
    >>> dtype_name(torch.bfloat16), dtype_from_name("float64")
    ('bfloat16', torch.float64)
"""

from __future__ import annotations

import torch

__all__ = ["dtype_from_name", "dtype_name"]

_BY_NAME: dict[str, torch.dtype] = {}


def dtype_name(dtype: torch.dtype) -> str:
    """The short name of a torch dtype ("float32").

    Example:
        >>> dtype_name(torch.complex64)
        'complex64'
    """
    return str(dtype).removeprefix("torch.")


def dtype_from_name(name: str) -> torch.dtype:
    """The torch dtype called `name` (as `dtype_name` spells it); ValueError when unknown.

    Example:
        >>> dtype_from_name("int64")
        torch.int64
    """
    dt = _BY_NAME.get(name)
    if dt is None:
        dt = getattr(torch, name, None)
        if not isinstance(dt, torch.dtype):
            raise ValueError(f"unknown dtype {name!r} in the graph's input metadata")
        _BY_NAME[name] = dt
    return dt
