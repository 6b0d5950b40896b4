"""autograd_widget: see PyTorch's backward pass, step through it, inspect what every node holds.

Public API (names and meanings fixed in the project's API contract):
`capture`, `track`, `BackwardGraph` (+ records `Node`, `Edge`, `TensorMeta`, `SavedValue`),
`Stepper`, `explore` / `AutogradWidget`, and every type their methods return: `StepRecord`,
`StepInfo`, `Summary`, `SavedMemory`, `Difference`, `EditInfo`, `LeafDiff`, `JacobianNorm`,
`ListenerHandle`, `Repeat`, `SubgraphRun`, `Origin`, `FailureExplanation`; `record` /
`load_recording` / `compare_recordings` / `side_by_side` and their `Recording`, `NodeRun`,
`Failure`, `Replay`, `RecordingPair`; `formula` and what `graph.formula(node_id)` returns,
`NodeFormula` (with `FormulaLine`s). Everything else lives in the layers (`util`,
`core`, `engine`, `view`, `wire`, `export`) and may change.

Example:
    >>> x = torch.tensor(2.0, requires_grad=True)
    >>> st = aw.Stepper(aw.capture(x**2))
    >>> _ = st.run()
    >>> st.grad(x)
    tensor(4.)
"""

from .util.compat import UnsupportedTorchError, check_torch

check_torch()

from .core.capture import capture  # noqa: E402
from .core.formulas.api import FormulaLine, NodeFormula, formula  # noqa: E402
from .core.graph import BackwardGraph  # noqa: E402
from .core.memory import SavedMemory  # noqa: E402
from .core.records import Edge, Node, TensorMeta  # noqa: E402
from .core.saved import SavedValue  # noqa: E402
from .core.summary import Summary  # noqa: E402
from .core.track import track  # noqa: E402
from .engine.failure import FailureExplanation  # noqa: E402
from .engine.listeners import ListenerHandle  # noqa: E402
from .engine.origins import Origin  # noqa: E402
from .engine.probes import JacobianNorm  # noqa: E402
from .engine.recompare import compare_recordings  # noqa: E402
from .engine.recorder import record  # noqa: E402
from .engine.recording import Failure, NodeRun, Recording, load_recording  # noqa: E402
from .engine.records import Difference, EditInfo, LeafDiff, StepInfo, StepRecord  # noqa: E402
from .engine.replay import Replay  # noqa: E402
from .engine.stepper import Stepper  # noqa: E402
from .pair import RecordingPair, side_by_side  # noqa: E402
from .view.folding import SubgraphRun  # noqa: E402
from .view.repeats import Repeat  # noqa: E402
from .widget import AutogradWidget, explore  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "AutogradWidget",
    "BackwardGraph",
    "Difference",
    "Edge",
    "EditInfo",
    "Failure",
    "FailureExplanation",
    "FormulaLine",
    "JacobianNorm",
    "LeafDiff",
    "ListenerHandle",
    "Node",
    "NodeFormula",
    "NodeRun",
    "Origin",
    "Recording",
    "RecordingPair",
    "Repeat",
    "Replay",
    "SavedMemory",
    "SavedValue",
    "StepInfo",
    "StepRecord",
    "Stepper",
    "SubgraphRun",
    "Summary",
    "TensorMeta",
    "UnsupportedTorchError",
    "capture",
    "compare_recordings",
    "explore",
    "formula",
    "load_recording",
    "record",
    "side_by_side",
    "track",
]
