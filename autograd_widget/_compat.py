"""Which torch we support, and a clear failure when a private API we rely on is gone.

The stepper and capture read a few private attributes of autograd nodes (`_input_metadata`,
`_sequence_nr`, `_raw_saved_*`). They are stable across the supported range, but nothing promises
that, so we check for them once and fail with a message that names the torch version instead of
an AttributeError from deep inside a walk.
"""

from __future__ import annotations

import torch

#: The range declared in pyproject.toml; tested on the upper end (2.13).
SUPPORTED_TORCH = ">=2.4,<2.14"

_NODE_API = ("_input_metadata", "_sequence_nr", "next_functions", "name", "metadata")


class UnsupportedTorchError(RuntimeError):
    """Raised when the installed torch lacks a private autograd API this package needs."""


def check_node_api(fn: object) -> None:
    """Fail with an actionable message if `fn` lacks an attribute every autograd node had."""
    missing = [a for a in _NODE_API if not hasattr(fn, a)]
    if missing:
        raise UnsupportedTorchError(
            f"autograd_widget needs the autograd Node attribute(s) {', '.join(missing)}, which "
            f"torch {torch.__version__} does not provide (node type {type(fn).__name__}). "
            f"Install a supported torch ({SUPPORTED_TORCH}), e.g. `pip install torch==2.13.0`."
        )


def check_torch() -> None:
    """Check module-level torch APIs at import time."""
    missing = []
    if not hasattr(torch.autograd.graph, "get_gradient_edge"):
        missing.append("torch.autograd.graph.get_gradient_edge")
    if not hasattr(torch.autograd.graph, "Node"):
        missing.append("torch.autograd.graph.Node")
    if missing:
        raise UnsupportedTorchError(
            f"autograd_widget needs {', '.join(missing)}, missing in torch {torch.__version__}. "
            f"Install a supported torch ({SUPPORTED_TORCH}), e.g. `pip install torch==2.13.0`."
        )
