"""autograd_widget: see PyTorch's backward pass, step through it, inspect what every node holds.

Public API (names and meanings fixed in the project's API contract):
`capture`, `track`, `BackwardGraph` (+ records `Node`, `Edge`, `TensorMeta`, `SavedValue`;
a compiled region's `Region`, `RegionEdge`, `RegionInput`, `RegionOutput`, `RegionProgram`),
`Stepper` (and `Stepping`, the interface it shares with `Replay`, with its `Capabilities`),
`explore` / `AutogradWidget`, and every type their methods return: `StepRecord`,
`StepInfo`, `Summary`, `SavedMemory`, `Difference`, `EditInfo`, `LeafDiff`, `JacobianNorm`,
`ListenerHandle`, `Repeat`, `RepeatedSubgraph`, `Origin`, `FailureExplanation`; `record` /
`load_recording` / `compare_recordings` / `side_by_side` and their `Recording`, `NodeExecution`,
`Failure`, `Replay`, `RecordingPair`; `watch` / `load_watch` and their `Watch`, `TrainingStep`;
every rank's files of a distributed run (`load_watch` / `load_recording` with `{rank}` in the
path): `RankWatches` (`RankNonfinite`, `Divergence`), `RankRecordings` (`RankFailure`);
`formula` and what `graph.formula(node_id)` returns, `NodeFormula` (with `FormulaLine`s).

The package map (each subpackage's own docstring maps it): `util`, `core`, `engine`, `view`,
`wire`, `export` are the layers, each importing only from those before it; `widget`
(`AutogradWidget`, `explore`: traits + dispatch), `pair` (`side_by_side`), `__main__` (the
command line: a recording's standalone page) and `static` (the built front-end, no Python) sit
on top; `integrations` (the trainers' callbacks and TensorBoard: `integrations.hf`, `.lightning`,
`.tensorboard`, each an optional extra, not imported here) sits on top of them all. Everything not
exported here may change.

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
from .core.records import Edge, Node, RegionEdge, TensorMeta  # noqa: E402
from .core.regions import Region, RegionInput, RegionOutput, RegionProgram  # noqa: E402
from .core.saved import SavedValue  # noqa: E402
from .core.summary import Summary  # noqa: E402
from .core.track import track  # noqa: E402
from .engine.diagnose.failure import FailureExplanation  # noqa: E402
from .engine.diagnose.origins import Origin  # noqa: E402
from .engine.interface import Capabilities, Stepping  # noqa: E402
from .engine.record.ranks import RankFailure, RankRecordings  # noqa: E402
from .engine.record.recdiff import compare_recordings  # noqa: E402
from .engine.record.recorder import record  # noqa: E402
from .engine.record.recording import Failure, NodeExecution, Recording, load_recording  # noqa: E402
from .engine.record.replay import Replay  # noqa: E402
from .engine.step.listeners import ListenerHandle  # noqa: E402
from .engine.step.probes import JacobianNorm  # noqa: E402
from .engine.step.results import Difference, EditInfo, LeafDiff, StepInfo, StepRecord  # noqa: E402
from .engine.step.stepper import Stepper  # noqa: E402
from .engine.watch.rankwatch import Divergence, RankNonfinite, RankWatches  # noqa: E402
from .engine.watch.trainstep import TrainingStep  # noqa: E402
from .engine.watch.watch import Watch, load_watch, watch  # noqa: E402
from .pair import RecordingPair, side_by_side  # noqa: E402
from .view.folding import RepeatedSubgraph  # noqa: E402
from .view.repeats import Repeat  # noqa: E402
from .widget import AutogradWidget, explore  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "AutogradWidget",
    "BackwardGraph",
    "Capabilities",
    "Difference",
    "Divergence",
    "Edge",
    "EditInfo",
    "Failure",
    "FailureExplanation",
    "FormulaLine",
    "JacobianNorm",
    "LeafDiff",
    "ListenerHandle",
    "Node",
    "NodeExecution",
    "NodeFormula",
    "Origin",
    "RankFailure",
    "RankNonfinite",
    "RankRecordings",
    "RankWatches",
    "Recording",
    "RecordingPair",
    "Region",
    "RegionEdge",
    "RegionInput",
    "RegionOutput",
    "RegionProgram",
    "Repeat",
    "RepeatedSubgraph",
    "Replay",
    "SavedMemory",
    "SavedValue",
    "StepInfo",
    "StepRecord",
    "Stepper",
    "Stepping",
    "Summary",
    "TensorMeta",
    "TrainingStep",
    "UnsupportedTorchError",
    "Watch",
    "capture",
    "compare_recordings",
    "explore",
    "formula",
    "load_recording",
    "load_watch",
    "record",
    "side_by_side",
    "track",
    "watch",
]
