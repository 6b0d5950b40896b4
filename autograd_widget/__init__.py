"""autograd_widget: see PyTorch's backward pass, step through it, inspect what every node holds.

Public API (names and meanings fixed in the project's API contract):
`capture`, `track`, `BackwardGraph` (+ records `Node`, `Edge`, `SavedValue`), `Stepper`
(+ `StepRecord`, `Summary`), `explore` / `AutogradWidget`.
"""

from .util.compat import UnsupportedTorchError, check_torch

check_torch()

from .core.capture import capture  # noqa: E402
from .core.graph import BackwardGraph  # noqa: E402
from .core.records import Edge, Node, TensorMeta  # noqa: E402
from .core.saved import SavedValue  # noqa: E402
from .core.summary import Summary  # noqa: E402
from .core.track import track  # noqa: E402
from .engine.stepper import Stepper, StepRecord  # noqa: E402
from .widget import AutogradWidget, explore  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "AutogradWidget",
    "BackwardGraph",
    "Edge",
    "Node",
    "SavedValue",
    "StepRecord",
    "Stepper",
    "Summary",
    "TensorMeta",
    "UnsupportedTorchError",
    "capture",
    "explore",
    "track",
]
