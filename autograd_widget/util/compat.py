"""Which torch we support, and a clear failure when a private API we rely on is gone.

The stepper and capture read a few private attributes of autograd nodes (`_input_metadata`,
`_sequence_nr`, `_raw_saved_*`). They are stable across the supported range, but nothing promises
that, so we check for them once and fail with a message that names the torch version instead of
an AttributeError from deep inside a walk.
"""

from __future__ import annotations

import torch

__all__ = [
    "SUPPORTED_TORCH",
    "UnsupportedTorchError",
    "check_node_api",
    "check_step_api",
    "check_torch",
    "gradient_edge",
]

#: The range declared in pyproject.toml: the oldest torch the suite passes on (2.13.0), no upper
#: bound (2.15.0 passes too; a newer torch that drops a private API fails with a message).
SUPPORTED_TORCH = ">=2.13"

_NODE_API = ("_input_metadata", "_sequence_nr", "next_functions", "name", "metadata")


class UnsupportedTorchError(RuntimeError):
    """Raised when the installed torch lacks a private autograd API this package needs."""


def check_node_api(fn: object) -> None:
    """Fail with an actionable message if `fn` lacks an attribute every autograd node had.

    Example:
        >>> check_node_api(z.grad_fn)  # passes silently on a supported torch
    """
    missing = [a for a in _NODE_API if not hasattr(fn, a)]
    if type(fn).__name__ == "AccumulateGrad" and not hasattr(fn, "variable"):
        missing.append("variable")
    if missing:
        raise UnsupportedTorchError(
            f"autograd_widget needs the autograd Node attribute(s) {', '.join(missing)}, which "
            f"torch {torch.__version__} does not provide (node type {type(fn).__name__}). "
            f"Install a supported torch ({SUPPORTED_TORCH}), e.g. `pip install torch==2.13.0`."
        )


_CUSTOM_API = ("needs_input_grad", "apply")


def check_step_api(fn: object, kind: str) -> None:
    """Like `check_node_api`, plus what stepping needs of a custom Function node.

    Example:
        >>> check_step_api(z.grad_fn, "function")
    """
    check_node_api(fn)
    missing = [a for a in _CUSTOM_API if kind == "custom_function" and not hasattr(fn, a)]
    if missing:
        raise UnsupportedTorchError(
            f"autograd_widget needs the custom Function node attribute(s) {', '.join(missing)}, "
            f"which torch {torch.__version__} does not provide (node type {type(fn).__name__}). "
            f"Install a supported torch ({SUPPORTED_TORCH}), e.g. `pip install torch==2.13.0`."
        )


def gradient_edge(t: torch.Tensor) -> tuple[object, int]:
    """`torch.autograd.graph.get_gradient_edge(t)` as (node, output_nr), also for a sparse leaf.

    A view of a leaf taken under `no_grad()` has no gradient edge: ValueError saying so (torch
    itself only asserts). Torch finds a leaf's AccumulateGrad node through `t.view_as(t)`, which
    sparse layouts do not implement (NotImplementedError on `aten::view`); a multiplication
    reaches the same node (a leaf has exactly one AccumulateGrad, shared by every graph using it).

    Example:
        >>> node, nr = gradient_edge(z)
        >>> node.name(), nr
        ('AddBackward0', 0)
    """
    try:
        e = torch.autograd.graph.get_gradient_edge(t)
    except AssertionError:
        # A view of a leaf taken under no_grad() (`with torch.no_grad(): v = x[:2]`) requires
        # grad and reads as a leaf, but autograd made no AccumulateGrad for it: torch asserts.
        base = getattr(t, "_base", None)
        if t.grad_fn is None and base is not None:
            raise ValueError(
                "this tensor is a view of a leaf taken under torch.no_grad(), so autograd gives "
                "it no gradient of its own; ask for the gradient of its base tensor "
                "(`t._base`) and index that the way the view was taken"
            ) from None
        raise ValueError(f"this tensor has no gradient edge in autograd ({type(t).__name__} "
                         f"of shape {list(t.shape)}, requires_grad={t.requires_grad})") from None
    except (NotImplementedError, RuntimeError):
        if t.grad_fn is not None or not t.requires_grad:
            raise
        with torch.enable_grad():
            return t.mul(1).grad_fn.next_functions[0][0], 0  # type: ignore[union-attr]
    return e.node, int(e.output_nr)


def check_torch() -> None:
    """Check module-level torch APIs at import time (UnsupportedTorchError naming what is missing).

    Example:
        >>> check_torch()  # raises UnsupportedTorchError naming the version when unsupported
    """
    missing = []
    if not hasattr(torch.autograd.graph, "get_gradient_edge"):
        missing.append("torch.autograd.graph.get_gradient_edge")
    if not hasattr(torch.autograd.graph, "Node"):
        missing.append("torch.autograd.graph.Node")
    saved_tensor = getattr(torch._C._autograd, "SavedTensor", None)
    if saved_tensor is None or not hasattr(saved_tensor, "data"):
        # Before 2.13 a saved tensor cannot be looked at without unpacking it (which runs the
        # user's saved_tensors_hooks): aliases, packed and stale states would be silently wrong.
        missing.append("torch._C._autograd.SavedTensor.data")
    if missing:
        raise UnsupportedTorchError(
            f"autograd_widget needs {', '.join(missing)}, missing in torch {torch.__version__}. "
            f"Install a supported torch ({SUPPORTED_TORCH}), e.g. `pip install torch==2.13.0`."
        )
