"""What a recorded backward holds: the records of the engine's OWN run of a captured graph.

`aw.record(...)` (record/recorder.py) hooks every node of a captured graph while the user's own
backward runs and hands back a `Recording`: the graph (records only, no torch objects), the
order the engine really ran the nodes in, per node a `NodeExecution` (incoming gradient
summaries per slot, outgoing per output slot, seconds, thread, a global counter, the backward
pass it belongs to), full gradient tensors where `keep` asked for them, and a `Failure` when the
backward raised.

Guarantees: a `Recording` holds no torch graph (its `graph` is a `BackwardGraph.from_dict` copy),
only summaries and, when kept, detached copies of gradients; it is the same object whether it
was just recorded or read back with `load_recording` (awrec.py is the file format; this module
turns a recording into that file's manifest and back, so loading runs no code: JSON and raw
bytes only). `rec.passes` counts the backward passes that ran nodes of the graph inside the block
(`retain_graph=True` lets the same graph run twice); `order`, `runs`, the summaries and the kept
tensors describe the LAST pass (the failing one, if the block raised: an exception ends the
block, so the failing pass is always the last), `all_executions` every pass.
"""

from __future__ import annotations

import datetime
import functools
import math
import os
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed

from ...core.graph import BackwardGraph
from ...core.records import Edge
from ...core.summary import Summary
from ...util.fields import FieldError
from ...util.gcpause import gc_paused
from ...util.jsonsafe import encode_float
from ..diagnose.failure import FailureExplanation
from ..diagnose.origins import Origin, classify
from . import awrec
from .manifest import ManifestParts, check_tensors, decode_manifest
from .ranks import RANK, RankRecordings

__all__ = ["Failure", "NodeExecution", "Recording", "load_recording", "new_meta", "rank_info"]


@dataclass(frozen=True)
class NodeExecution:
    """One node as the engine ran it during a recorded backward.

    `node`: the graph's node id; `step`: its position in its pass (0 = ran first); `seq`: a
    counter shared by every thread and pass (the engine runs one thread per device on CUDA, the
    caller's thread on CPU), in the order the nodes STARTED; `thread`: `threading.get_ident()`
    of the engine thread; `pass_index`: which backward pass of the block (0 = first);
    `seconds`: from the node's pre-hook to its post-hook; `inputs`: the summary of the gradient
    received per input slot (None: no gradient in that slot); `outputs`: per output slot
    (output_nr), the summary of the gradient sent along that edge (None: no edge or no gradient).

    Example:
        >>> loss = (x * 3).sum()
        >>> with aw.record(loss) as rec:
        ...     loss.backward()
        >>> r = rec.executions[0]
        >>> (r.node, r.step, r.pass_index, r.inputs[0].norm, len(r.outputs))
        ('n0', 0, 0, 1.0, 1)
    """

    node: str
    step: int
    seq: int
    thread: int
    pass_index: int
    seconds: float
    inputs: tuple[Summary | None, ...]
    outputs: tuple[Summary | None, ...]


@dataclass(frozen=True)
class Failure:
    """The node that was running when the recorded backward raised.

    `node`: its id (its pre-hook fired, its post-hook did not); `inputs`: the summary of each
    gradient it received (None: empty slot); `error`: the exception's message;
    `error_type`: the exception's class name; `pass_index`: the backward pass it ran in;
    `explanation`: why it failed (diagnose/failure.py), worked out while the graph was still live.

    Example:
        >>> Failure("n1", (None,), "boom", "RuntimeError").node
        'n1'
    """

    node: str
    inputs: tuple[Summary | None, ...]
    error: str
    error_type: str = ""
    pass_index: int = 0
    explanation: FailureExplanation | None = None


def rank_info() -> tuple[int, int]:
    """(rank, world size) from torch.distributed when it is initialised, else (0, 1).

    Example:
        >>> rank_info()
        (0, 1)
    """
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


class Recording:
    """The engine's own run of a captured backward graph (see the module docstring).

    Attributes: `graph` (a drawable `BackwardGraph`, no torch objects), `runs` (`NodeExecution` per
    node of the LAST pass, in the order the engine ran them), `all_executions` (every pass),
    `order` (the node ids of `runs`), `failure` (`Failure` or None), `meta` (rank,
    world_size, torch version, created, passes, keep), `warnings` (problems the recorder met
    and swallowed so the user's backward was never disturbed; normally empty).

    Passes: with `retain_graph=True` the block may run the graph's backward more than once
    (each run is a separate engine graph task). `passes` counts them; every `NodeExecution` carries
    its `pass_index`; everything else describes the last pass, because an exception ends the
    block, so the last pass is the one `failure` is about, and a last pass is what the
    gradients the user reads next came from.

    Example:
        >>> loss = (x ** 2).sum()
        >>> with aw.record(loss) as rec:
        ...     loss.backward(retain_graph=True)
        ...     loss.backward()
        >>> rec.passes, rec.order, len(rec.all_executions)
        (2, ['n0', 'n1', 'n2'], 6)
    """

    def __init__(
        self,
        graph: BackwardGraph,
        all_executions: list[NodeExecution],
        *,
        failure: Failure | None = None,
        meta: Mapping[str, Any] | None = None,
        tensors: Mapping[str, torch.Tensor] | None = None,
        warnings: list[str] | None = None,
    ) -> None:
        self.graph = graph
        self.meta: dict[str, Any] = dict(meta or {})
        self._session: Any = None
        self.populate(all_executions, failure=failure, tensors=tensors, warnings=warnings)

    def populate(
        self,
        all_executions: list[NodeExecution],
        *,
        failure: Failure | None = None,
        tensors: Mapping[str, torch.Tensor] | None = None,
        warnings: list[str] | None = None,
    ) -> None:
        """Set what was recorded (the recorder calls this when its block ends); `passes`,
        `runs` and `meta["passes"]` follow from `all_executions` and `failure`.

        Example:
            >>> rec = Recording(g, [])
            >>> rec.populate([NodeExecution("n0", 0, 0, 1, 0, 0.0, (None,), (None, None))])
            >>> rec.order, rec.passes
            (['n0'], 1)
        """
        self.all_executions: list[NodeExecution] = list(all_executions)
        last = max((r.pass_index for r in self.all_executions), default=-1)
        if failure is not None:
            last = max(last, failure.pass_index)
        self.passes = last + 1
        self.executions: list[NodeExecution] = [
            r for r in self.all_executions if r.pass_index == last
        ]
        self.failure = failure
        self.meta["passes"] = self.passes
        self.warnings: list[str] = list(warnings or [])
        self._tensors: dict[str, torch.Tensor] = dict(tensors or {})
        self._edges: dict[str, Summary] | None = None
        #: node id -> (cause, expected) of each node where a NaN/Inf was born in the last pass,
        #: read from its saved values and inputs by the recorder's post-hook (diagnose/origins.py).
        self.births: dict[str, tuple[str, bool]] = {}

    def nonfinite_origins(self) -> list[Origin]:
        """Per node that produced or received a NaN/Inf gradient in the last pass: "born"
        (with the cause the recorder read from the node's saved values and inputs while the
        graph was live), "propagated" or "healed", in the engine's order.

        Example:
            >>> w = torch.zeros(3, requires_grad=True)
            >>> loss = w.sqrt().sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> [(o.node, o.kind) for o in rec.nonfinite_origins()]
            [('n1', 'born'), ('n2', 'propagated')]
            >>> rec.nonfinite_origins()[0].cause
            'saved `result` has 3 zeros: the derivative of sqrt at 0 is infinite'
        """
        births = self.births
        return classify(
            ((r.step, r.node, r.inputs, r.outputs) for r in self.executions),
            {n: c for n, (c, _) in births.items()},
            expected={n: e for n, (_, e) in births.items()},
        )

    def attach(self, session: Any) -> None:
        """Make this recording a context manager driving `session`: entering calls
        `session.start()`, leaving calls `session.finish(exc)` (what `aw.record` builds).

        Example:
            >>> class Noisy:
            ...     def start(self): print("start")
            ...     def finish(self, exc): print("finish", exc)
            >>> rec = Recording(g, []); rec.attach(Noisy())
            >>> with rec:
            ...     pass
            start
            finish None
        """
        self._session = session

    def __enter__(self) -> Recording:
        if self._session is None:
            raise RuntimeError("this recording is finished; use a new aw.record(...) block")
        self._session.start()
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        session, self._session = self._session, None
        if session is not None:
            session.finish(exc)

    def __repr__(self) -> str:
        fail = f", failed at {self.failure.node}" if self.failure else ""
        return (
            f"<Recording {len(self.executions)} node runs of {len(self.graph.nodes)} nodes, "
            f"{self.passes} pass(es), rank {self.meta.get('rank', 0)}{fail}>"
        )

    @property
    def order(self) -> list[str]:
        """Node ids of the last pass in the order the engine ran them (`runs`' nodes)."""
        return [r.node for r in self.executions]

    @property
    def kept_edges(self) -> list[str]:
        """Ids of the edges whose full gradient tensor was kept (`keep=`), sorted."""
        return sorted(self._tensors)

    # ----------------------------------------------------------------- edges
    def _edge_id(self, edge_or_id: Edge | str) -> str:
        eid = edge_or_id.id if isinstance(edge_or_id, Edge) else str(edge_or_id)
        self.graph.edge(eid)  # KeyError naming the id format when unknown
        return eid

    def edge_summaries(self) -> dict[str, Summary]:
        """Edge id -> `Summary` of the gradient that flowed along it in the last pass.

        Example:
            >>> loss = (x * y).sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> sorted(rec.edge_summaries())
            ['n0:0', 'n1:0', 'n1:1']
        """
        if self._edges is None:
            edges: dict[str, Summary] = {}
            for r in self.executions:
                for nr, s in enumerate(r.outputs):
                    if s is not None:
                        edges[f"{r.node}:{nr}"] = s
            self._edges = edges
        return dict(self._edges)

    def edge_summary(self, edge_or_id: Edge | str) -> Summary | None:
        """The `Summary` of the gradient along an edge (an `Edge` or "src:output_nr"), None
        when none flowed there in the last pass.

        Example:
            >>> loss = (x * 3).sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> rec.edge_summary("n1:0").norm == (torch.ones_like(x) * 3).norm().item()
            True
        """
        eid = self._edge_id(edge_or_id)
        if self._edges is None:
            self.edge_summaries()
        return self._edges.get(eid)  # type: ignore[union-attr]

    def edge_grad(self, edge_or_id: Edge | str) -> torch.Tensor | None:
        """The full gradient along an edge when `keep` kept it (a detached copy), else None.

        Example:
            >>> loss = (x * 3).sum()
            >>> with aw.record(loss, keep="tensors") as rec:
            ...     loss.backward()
            >>> rec.edge_grad("n1:0")
            tensor(3.)
        """
        return self._tensors.get(self._edge_id(edge_or_id))

    def first_nonfinite(self) -> tuple[Edge, Summary] | None:
        """The first edge, in the engine's run order, whose gradient holds a NaN or an Inf.

        Example:
            >>> a = torch.tensor([0.0, 1.0], requires_grad=True)
            >>> loss = a.sqrt().sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> edge, s = rec.first_nonfinite(); edge.id, s.inf
            ('n1:0', 1)
        """
        for r in self.executions:
            for nr, s in enumerate(r.outputs):
                if s is not None and not s.finite:
                    return self.graph.edge(f"{r.node}:{nr}"), s
        return None

    # ----------------------------------------------------------------- files
    def save(self, path: str | os.PathLike) -> Path:
        """Write the recording to a `.awrec` file (awrec.py's format) and return its path.

        A `{rank}` in `path` becomes the torch.distributed rank (0 when not initialised).

        Example:
            >>> import tempfile
            >>> loss = (x * 3).sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> with tempfile.TemporaryDirectory() as d:
            ...     p = rec.save(d + "/rec_{rank}.awrec")
            ...     (p.name, aw.load_recording(p).order == rec.order)
            ('rec_0.awrec', True)
        """
        rank, _ = rank_info()
        target = Path(str(os.fspath(path)).replace("{rank}", str(rank)))
        awrec.write(target, self.to_manifest(), self._tensors)
        return target

    def to_manifest(self) -> dict[str, Any]:
        """The JSON-safe manifest of the recording (no tensors; see awrec.py).

        Example:
            >>> loss = (x * 3).sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> sorted(rec.to_manifest())
            ['all_runs', 'births', 'failure', 'graph', 'meta', 'warnings']
        """
        f = self.failure
        return {
            "graph": self.graph.to_dict(),
            "all_runs": [
                [r.node, r.step, r.seq, r.thread, r.pass_index, r.seconds,
                 [_enc(s) for s in r.inputs], [_enc(s) for s in r.outputs]]
                for r in self.all_executions
            ],
            "failure": None if f is None else {
                "node": f.node, "inputs": [_enc(s) for s in f.inputs], "error": f.error,
                "error_type": f.error_type, "pass_index": f.pass_index,
                "explanation": None if f.explanation is None else asdict(f.explanation),
            },
            "births": {n: [c, e] for n, (c, e) in self.births.items()},
            "meta": _json_meta(self.meta),
            "warnings": list(self.warnings),
        }

    @classmethod
    def from_manifest(
        cls, manifest: Mapping[str, Any], tensors: Mapping[str, torch.Tensor] | None = None
    ) -> Recording:
        """Rebuild a recording from `to_manifest()` output (and the kept tensors by edge id).

        Guarantees: everything is checked before a record is built (manifest.py: every field's
        type, every node id against the graph, no duplicates, sizes bounded by the recording's
        own structure; each tensor on an edge of the graph, shaped like its gradient); a
        ValueError saying what is malformed where, never a KeyError from inside.

        Example:
            >>> loss = (x * 3).sum()
            >>> with aw.record(loss) as rec:
            ...     loss.backward()
            >>> Recording.from_manifest(rec.to_manifest()).order == rec.order
            True
            >>> m = rec.to_manifest(); m["all_runs"][1][0] = "n9"
            >>> Recording.from_manifest(m)
            Traceback (most recent call last):
            ValueError: malformed recording manifest: all_runs[1][0]: no node 'n9' in the graph; ...
        """
        try:
            parts = decode_manifest(manifest)
            check_tensors(parts, tensors or {})
        except FieldError as e:
            raise ValueError(
                f"malformed recording manifest: {e}; the file was not written by "
                "Recording.save(), or was edited by hand"
            ) from None
        return cls._build(parts, tensors)

    @classmethod
    def _build(cls, parts: ManifestParts, tensors: Mapping[str, torch.Tensor] | None
               ) -> Recording:
        runs = [NodeExecution(*r) for r in parts.runs]
        f = parts.failure
        failure = None if f is None else Failure(**f)
        rec = cls(parts.graph, runs, failure=failure, meta=parts.meta, tensors=tensors,
                  warnings=parts.warnings)
        rec.births = parts.births
        return rec


def load_recording(
    path: str | os.PathLike, *, max_manifest_bytes: int = awrec.Limits.manifest_bytes,
    max_tensor_bytes: int = awrec.Limits.tensor_bytes,
    max_inflation: int = awrec.Limits.inflation, max_nodes: int = awrec.Limits.nodes,
) -> Recording | RankRecordings:
    """Read a `.awrec` file written by `Recording.save()` (no model, no torch graph needed).
    With `{rank}` in `path`: every rank's file (0, 1, ... while it exists) as a `RankRecordings`
    (ranks.py: `first_failure()`; bad sets of files are a ValueError naming the file).

    A file from anyone opens safely: it runs no code (a zip of JSON and raw tensor bytes, see
    awrec.py), only a regular file is read, and nothing is read that was not bounded first.

    Args:
        path: the file.
        max_manifest_bytes: the largest manifest read (default 16 MiB: ~10,000 nodes).
        max_tensor_bytes: the most bytes of kept tensors read (default 1 GiB; `keep="tensors"`
            on a big model may need more).
        max_inflation: how many times a compressed member may inflate (default 200: a real
            manifest deflates 6-40x, a zip bomb ~1000x).
        max_nodes: the most nodes the graph may have, compiled regions' ops counted (default
            20,000: what opens in seconds; a manifest's size alone does not bound it).

    Guarantees: a wrong format, a newer major version, a corrupt file, a file over a limit or
    anything a recording never holds (a field of the wrong type, a node id not in the graph,
    a duplicate, a tensor for no edge) raise ValueError naming the file, what is wrong and
    where, and how to go on (a limit names its keyword); checked before any tensor byte is
    read. FileNotFoundError when there is no file.

    Example:
        >>> import tempfile
        >>> loss = (x * 3).sum()
        >>> with aw.record(loss, keep="tensors") as rec:
        ...     loss.backward()
        >>> with tempfile.TemporaryDirectory() as d:
        ...     back = aw.load_recording(rec.save(d + "/r.awrec"))
        ...     aw.load_recording(d + "/r.awrec", max_tensor_bytes=2)
        Traceback (most recent call last):
        ValueError: .../r.awrec: its tensors hold 8 bytes, more than max_tensor_bytes=2; ...
        >>> back.edge_grad("n1:0"), back.graph.is_live
        (tensor(3.), False)
    """
    if RANK in str(os.fspath(path)):  # every rank's file, as a RankRecordings (ranks.py)
        return RankRecordings.load(path, functools.partial(
            load_recording, max_manifest_bytes=max_manifest_bytes,
            max_tensor_bytes=max_tensor_bytes, max_inflation=max_inflation,
            max_nodes=max_nodes))
    limits = awrec.Limits(max_manifest_bytes, max_tensor_bytes, max_inflation, max_nodes)
    checked: list[ManifestParts] = []

    def check(manifest: dict[str, Any], index: dict[str, awrec.TensorSpec]) -> None:
        parts = decode_manifest(manifest)
        check_tensors(parts, index)
        checked.append(parts)

    with gc_paused():  # the manifest's many small objects hold no cycles
        _, tensors = awrec.read(Path(os.fspath(path)), limits, check)
        return Recording._build(checked[0], tensors)


def new_meta(keep: Any) -> dict[str, Any]:
    """The `meta` of a recording made now in this process (rank, torch version, ...).

    Example:
        >>> new_meta("summaries")["rank"]
        0
    """
    rank, world = rank_info()
    return {
        "rank": rank,
        "world_size": world,
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "keep": keep,
    }


def _json_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    """Plain values as they are (a NaN/Inf float spelled as util/jsonsafe.py spells it, so the
    JSON stays strict: a watched step's loss may be NaN), anything else as its repr."""
    out: dict[str, Any] = {}
    for k, v in meta.items():
        if isinstance(v, float) and not math.isfinite(v):
            v = encode_float(v)
        out[str(k)] = v if isinstance(v, str | int | float | bool | type(None)) else repr(v)
    return out


def _enc(s: Summary | None) -> dict[str, Any] | None:
    return None if s is None else s.as_dict()
