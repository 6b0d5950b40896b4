"""The `.awwatch` file: a watched training run on disk, appended step by step, safe to open.

Format (version 1.0): the 8 bytes `AWWATCH\\n`, then records, each `tag` (4 ASCII bytes),
`length` (unsigned 64-bit little-endian), `payload` (length bytes), `crc32(payload)` (unsigned
32-bit little-endian):
- `HEAD` (first, once): JSON `{"format": "autograd_widget.watch", "version": [1, 0], "every": n,
  "meta": {...}}`;
- `STRC`: a graph structure, JSON `{"id": k, "graph": BackwardGraph.to_dict()}` (ids 0, 1, ...
  in order, each before the first step that uses it);
- `STEP`: one `TrainingStep` (trainstep.py): a 32-bit little-endian JSON length, the JSON (step,
  watched, loss, scale, non-finite parameters, failure; a watched step also its structure, the
  length of its order, its NaN/Inf counts, births and warnings), then, for a watched step, raw
  little-endian arrays: the order (int32), the edge, parameter and slot norms (float32), whose
  lengths the structure fixes.

Why: a training process may be killed at any moment. `Writer` appends each completed step with
one `os.write` of one whole record, so a killed process leaves every completed step intact and
at most one truncated record at the end, which `read` drops (saying so in its warnings). No zip
(its directory sits at the end of the file), no pickle: JSON and raw numbers, read by any
language; loading runs no code.

Reading is strict and bounded: every length is checked against what is left of the file and
a fixed limit before anything is read, every checksum, every JSON field's type and range, every
index against its structure, steps strictly increasing; anything else raises ValueError saying
what is wrong and what to do. `save` writes a whole file beside the target and renames it
(complete or absent).
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...core.graph import BackwardGraph
from ...util.atomic import atomic_write
from ...util.jsonsafe import decode_float, encode_float
from ...util.regular import open_regular
from .structure import Structure
from .trainstep import TrainingStep

__all__ = ["EXTENSION", "FORMAT", "MAGIC", "VERSION", "Writer", "read", "save"]

FORMAT = "autograd_widget.watch"
#: (major, minor): a reader reads every file of its major version (minors only add JSON fields).
VERSION = (1, 0)
EXTENSION = ".awwatch"
MAGIC = b"AWWATCH\n"
_HEADER = struct.Struct("<4sQ")
_CRC = struct.Struct("<I")
_U32 = struct.Struct("<I")
#: The largest record read (a structure of ~1M nodes is ~300 MB of JSON).
MAX_RECORD = 1 << 30
#: The largest JSON part of a step record.
MAX_STEP_JSON = 1 << 26
_NODE_KINDS = {"function", "accumulate_grad", "custom_function", "cpp_function"}
_LEAF_KINDS = {None, "parameter", "input"}


# ------------------------------------------------------------------------------ writing
def _record(tag: bytes, payload: bytes) -> bytes:
    return _HEADER.pack(tag, len(payload)) + payload + _CRC.pack(zlib.crc32(payload))


def _json(obj: Any) -> bytes:
    return json.dumps(obj, allow_nan=False, separators=(",", ":")).encode("utf-8")


def head_record(every: int, meta: Mapping[str, Any]) -> bytes:
    """The `HEAD` record (magic not included)."""
    return _record(b"HEAD", _json({"format": FORMAT, "version": list(VERSION), "every": every,
                                   "meta": dict(meta)}))  # fmt: skip


def structure_record(sid: int, structure: Structure) -> bytes:
    """The `STRC` record of structure number `sid`."""
    return _record(b"STRC", _json({"id": sid, "graph": structure.graph.to_dict()}))


def step_record(st: TrainingStep) -> bytes:
    """The `STEP` record of one training step."""
    doc: dict[str, Any] = {
        "step": st.step, "watched": st.watched, "loss": encode_float(st.loss),
        "scale": encode_float(st.scale), "nonfinite_params": list(st.nonfinite_params),
        "failure": None if st.failure is None else list(st.failure),
    }  # fmt: skip
    arrays = b""
    if st.watched:
        assert st.order is not None and st.edge_norms is not None
        assert st.param_norms is not None and st.slot_norms is not None
        doc.update({
            "structure": st.structure, "n_order": len(st.order),
            "nonfinite": [[e, a, b] for e, (a, b) in st.nonfinite.items()],
            "slot_nonfinite": [[e, a, b] for e, (a, b) in st.slot_nonfinite.items()],
            "births": [[i, c, bool(x)] for i, (c, x) in st.births.items()],
            "warnings": list(st.warnings),
        })  # fmt: skip
        arrays = b"".join((
            np.ascontiguousarray(st.order, dtype="<i4").tobytes(),
            np.ascontiguousarray(st.edge_norms, dtype="<f4").tobytes(),
            np.ascontiguousarray(st.param_norms, dtype="<f4").tobytes(),
            np.ascontiguousarray(st.slot_norms, dtype="<f4").tobytes(),
        ))  # fmt: skip
    text = _json(doc)
    return _record(b"STEP", _U32.pack(len(text)) + text + arrays)


class Writer:
    """Appends a watch to `path` as it runs: the head at once, then each structure and step
    with one `os.write` of one whole record (see the module docstring).

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     w = Writer(Path(d) / "w.awwatch", 1, {}); w.step(TrainingStep(0, False, 2.0))
        ...     w.close(); head, graphs, steps, warnings = read(Path(d) / "w.awwatch")
        >>> head["every"], [s.loss for s in steps], warnings
        (1, [2.0], [])
    """

    def __init__(self, path: Path, every: int, meta: Mapping[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.fd: int | None = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self._write(MAGIC + head_record(every, meta))

    def _write(self, data: bytes) -> None:
        if self.fd is None:
            raise RuntimeError(f"the watch file {self.path} is closed")
        view = memoryview(data)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]

    def structure(self, sid: int, structure: Structure) -> None:
        """Append structure number `sid` (before the first step that uses it).

        Example:
            >>> import tempfile
            >>> with tempfile.TemporaryDirectory() as d:
            ...     w = Writer(Path(d) / "w.awwatch", 1, {}); w.structure(0, Structure(g))
            ...     w.close(); read(Path(d) / "w.awwatch")[1]
            [<Structure 4 nodes, 3 edges, 2 parameters>]
        """
        self._write(structure_record(sid, structure))

    def step(self, st: TrainingStep) -> None:
        """Append one completed step.

        Example:
            >>> import tempfile
            >>> with tempfile.TemporaryDirectory() as d:
            ...     w = Writer(Path(d) / "w.awwatch", 1, {}); w.step(TrainingStep(0, False, 1.0))
            ...     w.close(); [s.step for s in read(Path(d) / "w.awwatch")[2]]
            [0]
        """
        self._write(step_record(st))

    def close(self) -> None:
        """Close the file (a second call does nothing).

        Example:
            >>> import tempfile
            >>> with tempfile.TemporaryDirectory() as d:
            ...     w = Writer(Path(d) / "w.awwatch", 1, {}); w.close(); w.close(); w.fd
        """
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)


def save(path: Path, every: int, meta: Mapping[str, Any], structures: Sequence[Structure],
         steps: Iterable[TrainingStep]) -> None:  # fmt: skip
    """Write a whole watch to `path`: beside it first, then renamed (complete or absent).

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     save(Path(d) / "w.awwatch", 2, {"rank": 0}, [], [TrainingStep(0, False, 1.0)])
        ...     read(Path(d) / "w.awwatch")[0]["meta"]
        {'rank': 0}
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    written: set[int] = set()
    with atomic_write(path) as f:  # util/atomic.py: the one way the package writes a file
        f.write(MAGIC + head_record(every, meta))
        for st in steps:
            if st.structure is not None and st.structure not in written:
                for sid in range(len(written), st.structure + 1):
                    f.write(structure_record(sid, structures[sid]))
                    written.add(sid)
            f.write(step_record(st))


# ------------------------------------------------------------------------------ reading
def _bad(path: Path, why: str) -> ValueError:
    return ValueError(
        f"{path} is not a readable autograd_widget watch: {why}. Watch the run again with "
        f"aw.watch(..., path='{path.stem}{EXTENSION}') or save it with watch.save(...)"
    )


def _int(v: Any, what: str, lo: int = 0, hi: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo or (hi is not None and v >= hi):
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi})"
        raise TypeError(f"{what} must be an int {rng}, got {v!r}")
    return v


def _str(v: Any, what: str) -> str:
    if not isinstance(v, str):
        raise TypeError(f"{what} must be a string, got {type(v).__name__}")
    return v


def _opt_str(v: Any, what: str) -> str | None:
    return None if v is None else _str(v, what)


def _list(v: Any, what: str) -> list:
    if not isinstance(v, list):
        raise TypeError(f"{what} must be a list, got {type(v).__name__}")
    return v


def _float(v: Any, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float | str):
        raise TypeError(f"{what} must be a number, got {v!r}")
    out = decode_float(v)
    assert out is not None
    return out


def _dict(v: Any, what: str) -> dict:
    if not isinstance(v, dict):
        raise TypeError(f"{what} must be an object, got {type(v).__name__}")
    return v


_NODE_FIELDS = {"id", "name", "kind", "sequence_nr", "inputs", "module", "leaf_name", "traceback",
                "leaf_kind", "num_outputs", "is_root"}  # fmt: skip


def check_graph(d: Any) -> BackwardGraph:
    """A `BackwardGraph` from `to_dict()` output, every field checked first (ids `n0, n1, ...`
    in order, kinds, sequence numbers, shapes, edges within their nodes' slots, each output
    slot used once). TypeError or ValueError naming the field otherwise.

    Example:
        >>> check_graph(g.to_dict())
        <BackwardGraph 4 nodes, 3 edges, 1 root(s), 2 leaves, not live>
    """
    d = _dict(d, "graph")
    _opt_str(d.get("model_name"), "graph.model_name")
    nodes = _list(d.get("nodes"), "graph.nodes")
    n_out, n_in = [], []
    for i, nd in enumerate(nodes):
        where = f"graph.nodes[{i}]"
        nd = _dict(nd, where)
        if set(nd) != _NODE_FIELDS:
            raise ValueError(f"{where} has fields {sorted(nd)}, not {sorted(_NODE_FIELDS)}")
        if nd["id"] != f"n{i}":
            raise ValueError(f"{where}.id is {nd['id']!r}, not 'n{i}'")
        _str(nd["name"], f"{where}.name")
        if nd["kind"] not in _NODE_KINDS:
            raise ValueError(f"{where}.kind {nd['kind']!r} is not one of {sorted(_NODE_KINDS)}")
        _int(nd["sequence_nr"], f"{where}.sequence_nr", 0, 2**64)
        for k, m in enumerate(_list(nd["inputs"], f"{where}.inputs")):
            m = _list(m, f"{where}.inputs[{k}]")
            if len(m) != 3:
                raise ValueError(f"{where}.inputs[{k}] must be [shape, dtype, device]")
            for n in _list(m[0], f"{where}.inputs[{k}] shape"):
                _int(n, f"{where}.inputs[{k}] shape entry")
            _str(m[1], f"{where}.inputs[{k}] dtype")
            _str(m[2], f"{where}.inputs[{k}] device")
        _opt_str(nd["module"], f"{where}.module")
        _opt_str(nd["leaf_name"], f"{where}.leaf_name")
        if nd["traceback"] is not None:
            for line in _list(nd["traceback"], f"{where}.traceback"):
                _str(line, f"{where}.traceback line")
        if nd["leaf_kind"] not in _LEAF_KINDS:
            raise ValueError(f"{where}.leaf_kind {nd['leaf_kind']!r} is not a leaf kind")
        n_out.append(_int(nd["num_outputs"], f"{where}.num_outputs"))
        n_in.append(len(nd["inputs"]))
        if not isinstance(nd["is_root"], bool):
            raise TypeError(f"{where}.is_root must be true or false")
    ids = {f"n{i}": i for i in range(len(nodes))}
    used: set[tuple[int, int]] = set()
    for k, e in enumerate(_list(d.get("edges"), "graph.edges")):
        e = _list(e, f"graph.edges[{k}]")
        if len(e) != 4 or e[0] not in ids or e[2] not in ids:
            raise ValueError(f"graph.edges[{k}] must be [src node id, output_nr, dst id, slot]")
        src, dst = ids[e[0]], ids[e[2]]
        nr = _int(e[1], f"graph.edges[{k}] output_nr", 0, max(n_out[src], 1))
        _int(e[3], f"graph.edges[{k}] input slot", 0, max(n_in[dst], 1))
        if (src, nr) in used:
            raise ValueError(f"graph.edges[{k}]: output {nr} of {e[0]} is used twice")
        used.add((src, nr))
    for k, r in enumerate(_list(d.get("roots"), "graph.roots")):
        r = _list(r, f"graph.roots[{k}]")
        if len(r) != 2 or r[0] not in ids:
            raise ValueError(f"graph.roots[{k}] must be [node id, slot]")
        _int(r[1], f"graph.roots[{k}] slot")
    for key, value in _dict(d.get("module_classes") or {}, "graph.module_classes").items():
        _str(value, f"graph.module_classes[{key!r}]")
    return BackwardGraph.from_dict(d)


def _counts(v: Any, what: str, n: int) -> dict[int, tuple[int, int]]:
    out = {}
    for k, item in enumerate(_list(v, what)):
        item = _list(item, f"{what}[{k}]")
        if len(item) != 3:
            raise ValueError(f"{what}[{k}] must be [index, NaN count, Inf count]")
        out[_int(item[0], f"{what}[{k}] index", 0, n)] = (
            _int(item[1], f"{what}[{k}] NaN count", -1), _int(item[2], f"{what}[{k}] Inf count", -1)
        )  # fmt: skip
    return out


def _step(payload: bytes | memoryview, structures: list[Structure], previous: int
          ) -> TrainingStep:  # fmt: skip
    if len(payload) < _U32.size:
        raise ValueError("a step record is shorter than its JSON length")
    (n,) = _U32.unpack_from(payload)
    if n > MAX_STEP_JSON or _U32.size + n > len(payload):
        raise ValueError(f"a step's JSON length {n} exceeds its record")
    doc = _dict(json.loads(str(payload[_U32.size : _U32.size + n], "utf-8")), "step")
    step = _int(doc.get("step"), "step.step", previous + 1)
    watched = doc.get("watched")
    if not isinstance(watched, bool):
        raise TypeError("step.watched must be true or false")
    scale = doc.get("scale")
    failure = doc.get("failure")
    if failure is not None:
        failure = _list(failure, "step.failure")
        if len(failure) != 3:
            raise ValueError("step.failure must be [error type, message, node index or null]")
    st = TrainingStep(
        step, watched, _float(doc.get("loss"), "step.loss"),
        None if scale is None else _float(scale, "step.scale"),
        tuple(_str(p, "a non-finite parameter name") for p in
              _list(doc.get("nonfinite_params"), "step.nonfinite_params")),
    )  # fmt: skip
    rest = payload[_U32.size + n :]
    if not watched:
        if rest:
            raise ValueError(f"an unwatched step ({step}) carries {len(rest)} bytes of arrays")
        if failure is not None:
            st.failure = (_str(failure[0], "failure type"), _str(failure[1], "failure message"),
                          None)  # fmt: skip
        return st
    sid = _int(doc.get("structure"), "step.structure", 0, len(structures))
    s = structures[sid]
    n_nodes, n_e, n_p, n_x = len(s.names), len(s.edge_ids), len(s.params), len(s.extra)
    n_order = _int(doc.get("n_order"), "step.n_order", 0, n_nodes + 1)
    need = 4 * (n_order + n_e + n_p + n_x)
    if len(rest) != need:
        raise ValueError(f"step {step} holds {len(rest)} bytes of arrays, its structure needs "
                         f"{need}")  # fmt: skip
    # read-only views of the record's bytes (little-endian, as numpy reads them): no copy
    order = np.frombuffer(rest, dtype="<i4", count=n_order)
    if n_order and (order.min() < 0 or order.max() >= n_nodes):
        raise ValueError(f"step {step}'s order names a node outside its structure")
    arr = np.frombuffer(rest, dtype="<f4", offset=4 * n_order)
    st.structure, st.order = sid, order
    st.edge_norms, st.param_norms = arr[:n_e], arr[n_e : n_e + n_p]
    st.slot_norms = arr[n_e + n_p :]
    st.nonfinite = _counts(doc.get("nonfinite"), "step.nonfinite", n_e)
    st.slot_nonfinite = _counts(doc.get("slot_nonfinite"), "step.slot_nonfinite", n_x)
    births = {}
    for k, b in enumerate(_list(doc.get("births"), "step.births")):
        b = _list(b, f"step.births[{k}]")
        if len(b) != 3 or not isinstance(b[2], bool):
            raise ValueError(f"step.births[{k}] must be [node index, cause, expected]")
        births[_int(b[0], f"step.births[{k}] node", 0, n_nodes)] = (_str(b[1], "a cause"), b[2])
    st.births = births
    st.warnings = tuple(_str(w, "a warning") for w in _list(doc.get("warnings"), "warnings"))
    if failure is not None:
        node = failure[2]
        st.failure = (
            _str(failure[0], "failure type"),
            _str(failure[1], "failure message"),
            None if node is None else _int(node, "failure node", 0, n_nodes),
        )
    return st


def read(path: Path) -> tuple[dict[str, Any], list[Structure], list[TrainingStep], list[str]]:
    """(head, structures, steps, warnings) of a file `Writer` or `save` made.

    Guarantees: no code from the file runs; reads are bounded by the lengths checked first;
    a truncated LAST record (a process killed while appending) is dropped with a warning; a
    wrong format, a newer major version, a bad checksum or any malformed field raise ValueError
    naming it; FileNotFoundError when there is no file.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     _ = (Path(d) / "x.awwatch").write_bytes(b"PK\\x03\\x04")
        ...     read(Path(d) / "x.awwatch")
        Traceback (most recent call last):
        ValueError: ...x.awwatch is not a readable autograd_widget watch: it does not start...
    """
    f = open_regular(path, what="a watch", hint="pass the path of an .awwatch file "
                     "(watch.save(...) or aw.watch(path=...) writes one)")
    size = os.fstat(f.fileno()).st_size
    warnings: list[str] = []
    structures: list[Structure] = []
    steps: list[TrainingStep] = []
    head: dict[str, Any] | None = None
    with f:
        if f.read(len(MAGIC)) != MAGIC:
            raise _bad(path, f"it does not start with {MAGIC!r}")
        pos = len(MAGIC)
        while pos < size:
            raw = f.read(_HEADER.size)
            if len(raw) < _HEADER.size:
                warnings.append(_TRUNCATED.format(path=path))
                break
            tag, length = _HEADER.unpack(raw)
            left = size - pos - _HEADER.size - _CRC.size
            if length > MAX_RECORD:
                raise _bad(path, f"a record claims {length} bytes (the limit is {MAX_RECORD})")
            if length > left:
                warnings.append(_TRUNCATED.format(path=path))
                break
            body = f.read(length + _CRC.size)  # the payload and its checksum, one read
            if len(body) != length + _CRC.size:
                warnings.append(_TRUNCATED.format(path=path))
                break
            payload, crc = memoryview(body)[:length], body[length:]
            if _CRC.unpack(crc)[0] != zlib.crc32(payload):
                raise _bad(path, f"the checksum of the {tag!r} record at byte {pos} does not "
                                 "match (the file was damaged)")  # fmt: skip
            pos += _HEADER.size + length + _CRC.size
            try:
                head = _apply(tag, payload, head, structures, steps)
            except NewerVersion as e:
                raise ValueError(f"{path} {e}") from None
            except (TypeError, ValueError, KeyError, UnicodeDecodeError, RecursionError) as e:
                raise _bad(path, f"its {tag.decode('ascii', 'replace')} record at byte "
                                 f"{pos - length - _HEADER.size - _CRC.size} is malformed "
                                 f"({type(e).__name__}: {e})") from e  # fmt: skip
    if head is None:
        raise _bad(path, "it ends before its HEAD record is complete (no step was saved)")
    return head, structures, steps, warnings


_TRUNCATED = (
    "{path}: the last record is incomplete (the process was stopped while writing it): that "
    "step is left out, every completed step before it was read"
)


class NewerVersion(ValueError):
    """A file of a newer major format version than this reader's."""


def _apply(tag: bytes, payload: bytes | memoryview, head: dict[str, Any] | None,
           structures: list[Structure], steps: list[TrainingStep]) -> dict[str, Any]:  # fmt: skip
    if head is None:
        if tag != b"HEAD":
            raise ValueError(f"the first record is {tag!r}, not b'HEAD'")
        doc = _dict(json.loads(str(payload, "utf-8")), "head")
        if doc.get("format") != FORMAT:
            raise ValueError(f"its format is {doc.get('format')!r}, not {FORMAT!r}")
        version = _list(doc.get("version"), "head.version")
        if len(version) != 2:
            raise ValueError(f"its version {version!r} is not [major, minor]")
        major = _int(version[0], "the major version")
        minor = _int(version[1], "the minor version")
        if major > VERSION[0]:
            raise NewerVersion(
                f"was written in watch format {major}.{minor}, newer than this autograd_widget "
                f"reads ({VERSION[0]}.x): upgrade autograd_widget (pip install -U "
                "autograd_widget) to open it"
            )
        if major < VERSION[0]:
            raise ValueError(f"format version {major} is older than this reader's")
        _int(doc.get("every"), "head.every", 1)
        meta = _dict(doc.get("meta"), "head.meta")
        for k, v in meta.items():
            if not isinstance(v, str | int | float | bool | type(None)):
                raise TypeError(f"head.meta[{k!r}] must be a plain value")
        return doc
    if tag == b"STRC":
        doc = _dict(json.loads(str(payload, "utf-8")), "structure")
        _int(doc.get("id"), "structure.id", len(structures), len(structures) + 1)
        structures.append(Structure(check_graph(doc.get("graph"))))
    elif tag == b"STEP":
        steps.append(_step(payload, structures, steps[-1].step if steps else -1))
    else:
        raise ValueError(f"unknown record tag {tag!r}")
    return head
