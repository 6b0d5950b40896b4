"""One training step as a watch keeps it, and a watched step turned into a drawable `Recording`.

A `TrainingStep` is what `aw.watch` (watch/watch.py) keeps of every `watch.step(loss)` block:
the loss, the loss scaler's factor when there is one, the parameters whose gradient came out
non-finite, the failure; a WATCHED step also the arrays its lean hooks left (lean.py), indexed by
its graph's `Structure` (structure.py): the engine's order, one float32 norm per edge, per
parameter and per input slot no single edge feeds, the NaN/Inf counts of the non-finite ones and
where a NaN/Inf was born, with its cause.

`as_recording(step, structure)` makes a `Recording` of a watched step, so `aw.explore` draws it
and `Replay` steps through it like any recorded backward: its summaries carry the norm, shape,
dtype and NaN/Inf counts (min, max, mean, std and values were not computed: None and []).

Example:
    >>> t = TrainingStep(3, False, 0.5); t.watched, t.finite
    (False, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...core.summary import Summary
from ..record.recording import Failure, NodeExecution, Recording
from .structure import Structure

__all__ = ["TrainingStep", "as_recording", "summary_of_norm"]


@dataclass
class TrainingStep:
    """One `watch.step(loss)` block (see the module docstring).

    `step`: its number (0 = the first block); `watched`; `loss`: the loss's value (divided by
    the loss scale when a `GradScaler` scaled it; NaN when the loss has more than one element);
    `scale`: the scaler's factor, else None; `nonfinite_params`: names of the parameters whose
    gradient in this backward held a NaN or an Inf; `failure`: (exception type, message, failing
    node index or None) when the backward raised. A watched step also has `structure` (index into
    the watch's structures), `order` (int32 node indices), `edge_norms`, `param_norms`,
    `slot_norms` (float32; NaN where nothing flowed), `nonfinite` and `slot_nonfinite` (index ->
    (NaN count, Inf count), -1 where present but not counted), `births` (node index -> (cause,
    expected)) and `warnings`.

    Example:
        >>> TrainingStep(0, False, 1.0, nonfinite_params=("w",)).finite
        False
    """

    step: int
    watched: bool
    loss: float
    scale: float | None = None
    nonfinite_params: tuple[str, ...] = ()
    failure: tuple[str, str, int | None] | None = None
    structure: int | None = None
    order: np.ndarray | None = None
    edge_norms: np.ndarray | None = None
    param_norms: np.ndarray | None = None
    slot_norms: np.ndarray | None = None
    nonfinite: dict[int, tuple[int, int]] = field(default_factory=dict)
    slot_nonfinite: dict[int, tuple[int, int]] = field(default_factory=dict)
    births: dict[int, tuple[str, bool]] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    @property
    def finite(self) -> bool:
        """True when every parameter gradient of this step was finite."""
        return not self.nonfinite_params

    @property
    def expected_overflow(self) -> bool:
        """A non-finite step under a loss scaler that the scaler explains: every NaN/Inf born
        in it is the scaler's expected overflow (an unwatched step: a scaler was in use).

        Example:
            >>> TrainingStep(0, False, 1.0, 65536.0, ("w",)).expected_overflow
            True
        """
        if self.finite or self.scale is None:
            return False
        if not self.watched:
            return True
        return bool(self.births) and all(e for _, e in self.births.values())


def summary_of_norm(norm: float, counts: tuple[int, int] | None, shape: tuple[int, ...],
                    dtype: str) -> Summary:  # fmt: skip
    """A `Summary` that knows only the norm, the NaN/Inf counts, shape and dtype (a watch's).

    Example:
        >>> s = summary_of_norm(5.0, None, (2,), "float32"); (s.norm, s.min, s.numel, s.finite)
        (5.0, None, 2, True)
    """
    nan, inf = counts if counts is not None else (0, 0)
    numel = math.prod(shape)
    return Summary(tuple(shape), dtype, float(norm), None, None, None, None, int(nan), int(inf),
                   [], numel)  # fmt: skip


def _edge_summary(st: TrainingStep, s: Structure, e: int) -> Summary | None:
    assert st.edge_norms is not None
    v = float(st.edge_norms[e])
    counts = st.nonfinite.get(e)
    if v != v and counts is None:
        return None  # nothing flowed along it
    dst, slot = s.edge_dst[e], s.graph.edges[e].input_nr
    meta = s.graph.nodes[f"n{dst}"].inputs[slot]
    return summary_of_norm(v, counts, meta.shape, meta.dtype)


def _inputs(st: TrainingStep, s: Structure, i: int,
            bad_names: frozenset[str]) -> tuple[Summary | None, ...]:  # fmt: skip
    """Node `i`'s received gradients; `bad_names`: the step's `nonfinite_params` as a set (a
    look-up per parameter, not a scan of every name: a run with every parameter non-finite)."""
    assert st.param_norms is not None and st.slot_norms is not None
    node = s.graph.nodes[f"n{i}"]
    out: list[Summary | None] = []
    extra = dict(s.extra_of[i])
    for slot, meta in enumerate(node.inputs):
        if s.accumulate[i]:
            k = s.param_of[i]
            v = float(st.param_norms[k])
            name = s.params[k]
            bad = name in bad_names
            counts = None if not bad else ((-1, 0) if v != v else (0, -1))
            out.append(None if v != v and not bad else
                       summary_of_norm(v, counts, meta.shape, meta.dtype))  # fmt: skip
        elif slot in extra:
            x = extra[slot]
            v = float(st.slot_norms[x])
            counts = st.slot_nonfinite.get(x)
            out.append(None if v != v and counts is None else
                       summary_of_norm(v, counts, meta.shape, meta.dtype))  # fmt: skip
        elif s.in_edge[i][slot] >= 0:
            out.append(_edge_summary(st, s, s.in_edge[i][slot]))
        else:
            out.append(None)
    return tuple(out)


def _outputs(st: TrainingStep, s: Structure, i: int) -> tuple[Summary | None, ...]:
    return tuple(None if e < 0 else _edge_summary(st, s, e) for e in s.out_edge[i])


def as_recording(st: TrainingStep, s: Structure, meta: dict | None = None) -> Recording:
    """A `Recording` of watched step `st` over its structure `s` (see the module docstring).

    Guarantees: ValueError for a step that was not watched; the recording holds no torch
    object; `nonfinite_origins()` gives the births the step's hooks read, with their causes.

    Example:
        >>> w = torch.tensor([0.0, 4.0], requires_grad=True)
        >>> with aw.watch(params={"w": w}) as watch:
        ...     loss = w.sqrt().sum()
        ...     with watch.step(loss):
        ...         loss.backward()
        >>> rec = watch.recording(0)
        >>> rec.order, [o.kind for o in rec.nonfinite_origins()]
        (['n0', 'n1', 'n2'], ['born', 'propagated'])
    """
    if not st.watched or st.order is None:
        raise ValueError(f"step {st.step} was not watched: only watched steps have a recording")
    runs = []
    bad = frozenset(st.nonfinite_params)
    for k, i in enumerate(st.order.tolist()):
        runs.append(NodeExecution(f"n{i}", k, k, 0, 0, 0.0, _inputs(st, s, i, bad),
                                  _outputs(st, s, i)))  # fmt: skip
    failure = None
    if st.failure is not None and st.failure[2] is not None:
        node = st.failure[2]
        failure = Failure(f"n{node}", _inputs(st, s, node, bad), st.failure[1], st.failure[0], 0)
    m = {"keep": "norms", "watch_step": st.step, "loss": st.loss, "loss_scale": st.scale,
         **(meta or {})}  # fmt: skip
    rec = Recording(s.graph, runs, failure=failure, meta=m, warnings=list(st.warnings))
    rec.births = {f"n{i}": (c, bool(e)) for i, (c, e) in st.births.items()}
    return rec
