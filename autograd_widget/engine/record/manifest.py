"""A recording's manifest (`Recording.to_manifest()`, inside every `.awrec` file) read strictly.

A manifest may come from anyone's file, so `decode_manifest` checks all of it before a record is
built, and says where a problem is (`all_runs[3][0]: no node 'n99' in the graph`):

- every field's type and range (`util.fields`); the graph as `core.graphdict` reads it (unique
  ids, real slots, no cycle);
- every node id it names (runs, failure, the failure's explanation, births) is a node of the
  graph; a node runs at most once per pass; passes are numbered in the order they began (0, 1,
  ...); steps count 0, 1, 2, ... in each pass; the failure is in the last pass;
- bounded sizes from the recording's own structure: a run lists at most one summary per input
  slot and per output slot of its node, a summary at most `MAX_LISTED` values, flat;
- `check_tensors`: every kept tensor belongs to an edge of the graph and has the shape and dtype
  of the gradient recorded on that edge.

Fields it does not know are ignored (a newer minor version may add some). It returns the checked
fields in the order the records take them; recording.py builds the records.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, get_args

from ...core.graph import DICT_FORMAT, BackwardGraph
from ...core.graphdict import parse_graph_dict, parse_regions, parse_shape
from ...core.summary import MAX_LISTED, Summary
from ...util.fields import (
    U64,
    FieldError,
    at,
    need_bool,
    need_choice,
    need_dict,
    need_float,
    need_int,
    need_list,
    need_str,
    opt_float,
    opt_int,
    opt_str,
    short,
)
from ..diagnose.failure import FailureExplanation, FailureKind

__all__ = ["ManifestParts", "check_tensors", "decode_manifest"]

_I64 = 2**63
_META_COUNTS = ("rank", "world_size", "passes")
_META_FLOATS = ("loss", "loss_scale")


@dataclass(frozen=True)
class ManifestParts:
    """A manifest, checked: the graph, each run's `NodeExecution` fields in order, the
    `Failure` fields by name (None: no failure), births, meta and warnings.

    Example:
        >>> loss = (x * 3).sum()
        >>> with aw.record(loss) as rec:
        ...     loss.backward()
        >>> parts = decode_manifest(rec.to_manifest())
        >>> [r[0] for r in parts.runs], parts.failure
        (['n0', 'n1', 'n2'], None)
    """

    graph: BackwardGraph
    runs: list[tuple[Any, ...]]
    failure: dict[str, Any] | None
    births: dict[str, tuple[str, bool]]
    meta: dict[str, Any]
    warnings: list[str]


def _node(graph: BackwardGraph, v: Any, where: str) -> str:
    nid = need_str(v, where)
    if nid not in graph.nodes:
        raise FieldError(where, f"no node {short(nid)} in the graph")
    return nid


def _value(v: Any, where: str) -> Any:
    """One listed value: a number (bool, int, float, or 'nan'/'inf'/'-inf') or [re, im]."""
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return need_int(v, where, -_I64, U64)
    if isinstance(v, list):
        re, im = need_list(v, where, length=2)
        return [need_float(re, at(where, 0)), need_float(im, at(where, 1))]
    return need_float(v, where)


def _summary(v: Any, where: str) -> Summary | None:
    if v is None:
        return None
    d = need_dict(v, where)
    for key in ("shape", "dtype", "norm", "nan", "inf", "values", "numel"):
        if key not in d:
            raise FieldError(at(where, key), "missing")
    values = need_list(d["values"], at(where, "values"), max_len=MAX_LISTED)
    return Summary(
        parse_shape(d["shape"], at(where, "shape")), need_str(d["dtype"], at(where, "dtype")),
        need_float(d["norm"], at(where, "norm")),  # type: ignore[arg-type]
        opt_float(d.get("min"), at(where, "min")), opt_float(d.get("max"), at(where, "max")),
        opt_float(d.get("mean"), at(where, "mean")), opt_float(d.get("std"), at(where, "std")),
        _count(d["nan"], at(where, "nan")), _count(d["inf"], at(where, "inf")),
        [_value(x, at(at(where, "values"), i)) for i, x in enumerate(values)],
        need_int(d["numel"], at(where, "numel")),
        shard=_shard(d.get("shard"), at(where, "shard")),
    )


def _shard(v: Any, where: str) -> str | None:
    """A DTensor summary's note (`Summary.shard`): a short string, or absent."""
    if v is None:
        return None
    text = need_str(v, where)
    if len(text) > _MAX_SHARD:
        raise FieldError(where, f"longer than {_MAX_SHARD} characters")
    return text


_MAX_SHARD = 400  # core/dtensor.py's notes are ~100 characters


def _count(v: Any, where: str) -> int:
    """A NaN or Inf count: -1 means "present, not counted" (a watched step's norms only tell
    that a gradient is non-finite, trainstep.py), else 0..2**63-1."""
    return need_int(v, where, -1, _I64 - 1)


def _summaries(v: Any, where: str, slots: int) -> tuple[Summary | None, ...]:
    """At most one summary per slot of the node (`slots`): the file bounds the work."""
    items = need_list(v, where, max_len=slots)
    return tuple(_summary(s, at(where, i)) for i, s in enumerate(items))


def _graph(d: Any) -> BackwardGraph:
    d = need_dict(d, "graph")
    if d.get("format") != DICT_FORMAT:
        raise FieldError("graph.format", f"expected {DICT_FORMAT!r}, got {short(d.get('format'))}")
    try:
        nodes, edges, roots, name, classes = parse_graph_dict(d)
        regions = parse_regions(d, nodes)
    except FieldError as e:
        raise FieldError(f"graph.{e.where}", e.what) from None
    return BackwardGraph(nodes, edges, roots, model_name=name, module_classes=classes,
                         regions=regions)


def _runs(graph: BackwardGraph, v: Any) -> list[tuple[Any, ...]]:
    runs: list[tuple[Any, ...]] = []
    ran: set[tuple[str, int]] = set()
    steps: dict[int, int] = {}  # pass -> runs seen in it
    for k, run in enumerate(need_list(v, "all_runs")):
        w = at("all_runs", k)
        nid, step, seq, thread, p, secs, ins, outs = need_list(run, w, length=8)
        nid = _node(graph, nid, at(w, 0))
        if need_int(p, at(w, 4)) > len(steps):
            raise FieldError(at(w, 4), f"pass {p} before pass {len(steps)} began (passes are "
                             "numbered in the order they began)")
        if (nid, p) in ran:
            raise FieldError(at(w, 0), f"{short(nid)} runs a second time in pass {p} (a node "
                             "runs once per pass)")
        ran.add((nid, p))
        expected = steps.get(p, 0)
        if need_int(step, at(w, 1)) != expected:
            raise FieldError(at(w, 1), f"step {step} where step {expected} of pass {p} comes "
                             "next (steps count 0, 1, 2, ... in each pass)")
        steps[p] = expected + 1
        seconds = need_float(secs, at(w, 5))
        if not math.isfinite(seconds):
            raise FieldError(at(w, 5), f"expected a finite number of seconds, got {short(secs)}")
        node = graph.nodes[nid]
        runs.append((
            nid, step, need_int(seq, at(w, 2)), need_int(thread, at(w, 3)), p, seconds,
            _summaries(ins, at(w, 6), len(node.inputs)),
            _summaries(outs, at(w, 7), node.num_outputs),
        ))  # fmt: skip
    return runs


def _explanation(graph: BackwardGraph, v: Any, where: str) -> FailureExplanation | None:
    if v is None:
        return None
    d = need_dict(v, where)
    for key in ("node", "kind", "sentence"):
        if key not in d:
            raise FieldError(at(where, key), "missing")
    culprit = d.get("culprit")
    tb = d.get("traceback")
    cands = need_list(d.get("candidates") or [], at(where, "candidates"))
    return FailureExplanation(
        node=_node(graph, d["node"], at(where, "node")),
        kind=need_choice(d["kind"], at(where, "kind"), get_args(FailureKind)),
        sentence=need_str(d["sentence"], at(where, "sentence")),
        saved_name=opt_str(d.get("saved_name"), at(where, "saved_name")),
        saved_version=opt_int(d.get("saved_version"), at(where, "saved_version")),
        current_version=opt_int(d.get("current_version"), at(where, "current_version")),
        culprit=None if culprit is None else _node(graph, culprit, at(where, "culprit")),
        culprit_name=opt_str(d.get("culprit_name"), at(where, "culprit_name")),
        candidates=tuple(_node(graph, c, at(at(where, "candidates"), i))
                         for i, c in enumerate(cands)),
        traceback=None if tb is None else [
            need_str(s, at(at(where, "traceback"), i))
            for i, s in enumerate(need_list(tb, at(where, "traceback")))
        ],
        hint=need_str(d.get("hint", ""), at(where, "hint")),
        error=need_str(d.get("error", ""), at(where, "error")),
    )


def _failure(graph: BackwardGraph, v: Any, last_pass: int) -> dict[str, Any] | None:
    if v is None:
        return None
    d = need_dict(v, "failure")
    for key in ("node", "inputs", "error"):
        if key not in d:
            raise FieldError(at("failure", key), "missing")
    nid = _node(graph, d["node"], "failure.node")
    p = need_int(d.get("pass_index", 0), "failure.pass_index")
    if not max(last_pass, 0) <= p <= last_pass + 1:
        raise FieldError("failure.pass_index", f"pass {p}, but the failing pass is the last "
                         f"one (the runs reach pass {last_pass})")
    return {
        "node": nid,
        "inputs": _summaries(d["inputs"], "failure.inputs", len(graph.nodes[nid].inputs)),
        "error": need_str(d["error"], "failure.error"),
        "error_type": need_str(d.get("error_type", ""), "failure.error_type"),
        "pass_index": p,
        "explanation": _explanation(graph, d.get("explanation"), "failure.explanation"),
    }


def _meta(v: Any) -> dict[str, Any]:
    meta = dict(need_dict(v or {}, "meta"))
    for k, x in meta.items():
        if not isinstance(x, str | int | float | bool | type(None)):
            raise FieldError(at("meta", k), f"expected a string, number, bool or null, got "
                             f"{short(x)}")
    for k in _META_COUNTS:
        if k in meta:
            need_int(meta[k], at("meta", k))
    for k in _META_FLOATS:  # a watched step's loss may be NaN/Inf: saved as util/jsonsafe spells it
        if isinstance(meta.get(k), str):
            meta[k] = need_float(meta[k], at("meta", k))
    return meta


def decode_manifest(manifest: Any) -> ManifestParts:
    """The checked parts of a manifest (see the module docstring); FieldError (a ValueError
    saying where and what) for anything a recording never holds.

    Example:
        >>> loss = (x * 3).sum()
        >>> with aw.record(loss) as rec:
        ...     loss.backward()
        >>> m = rec.to_manifest(); m["failure"] = {"node": "n7", "inputs": [], "error": "?"}
        >>> decode_manifest(m)
        Traceback (most recent call last):
        autograd_widget.util.fields.FieldError: failure.node: no node 'n7' in the graph
    """
    m = need_dict(manifest, "recording")
    for key in ("graph", "all_runs"):
        if key not in m:
            raise FieldError(key, "missing")
    graph = _graph(m["graph"])
    runs = _runs(graph, m["all_runs"])
    last = max((r[4] for r in runs), default=-1)
    failure = _failure(graph, m.get("failure"), last)
    births = {}
    for nid, why in need_dict(m.get("births") or {}, "births").items():
        w = at("births", nid)
        _node(graph, nid, w)
        cause, expected = need_list(why, w, length=2)
        births[nid] = (need_str(cause, at(w, 0)), need_bool(expected, at(w, 1)))
    warnings = [need_str(s, at("warnings", i))
                for i, s in enumerate(need_list(m.get("warnings") or [], "warnings"))]
    return ManifestParts(graph, runs, failure, births, _meta(m.get("meta")), warnings)


def check_tensors(parts: ManifestParts, tensors: Mapping[str, Any]) -> None:
    """Each kept tensor (edge id -> anything with `shape` and a dtype name in `dtype_name`, or a
    torch tensor) belongs to an edge of the graph and matches the gradient recorded there (its
    summary in the last pass), when one was recorded.

    Example:
        >>> loss = (x * 3).sum()
        >>> with aw.record(loss) as rec:
        ...     loss.backward()
        >>> check_tensors(decode_manifest(rec.to_manifest()), {"n5:0": torch.ones(1)})
        Traceback (most recent call last):
        autograd_widget.util.fields.FieldError: tensors.n5:0: no edge 'n5:0' in the graph
    """
    graph = parts.graph
    edges = {e.id for e in graph.edges}
    last = max((r[4] for r in parts.runs), default=-1)
    recorded: dict[str, Summary] = {}
    for r in parts.runs:
        if r[4] == last:
            for nr, s in enumerate(r[7]):
                if s is not None:
                    recorded[f"{r[0]}:{nr}"] = s
    for eid, t in tensors.items():
        w = at("tensors", eid)
        if eid not in edges:
            raise FieldError(w, f"no edge {short(eid)} in the graph")
        s = recorded.get(eid)
        if s is None:
            continue
        shape = tuple(t.shape)
        dtype = getattr(t, "dtype_name", None) or str(t.dtype).removeprefix("torch.")
        if shape != s.shape or dtype != s.dtype:
            raise FieldError(w, f"a {dtype} tensor of shape {list(shape)}, but the gradient "
                             f"recorded on that edge is {s.dtype} of shape {list(s.shape)}")
