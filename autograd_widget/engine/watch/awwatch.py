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

Why: a training process may be killed at any moment. `Writer` (awwatch_write.py, the writing
half: re-exported here with `save` and the record builders) appends each completed step with
one `os.write` of one whole record, so a killed process leaves every completed step intact and
at most one truncated record at the end, which `read` drops (saying so in its warnings). No zip
(its directory sits at the end of the file), no pickle: JSON and raw numbers, read by any
language; loading runs no code.

Reading is strict and bounded: every length is checked against what is left of the file and
a fixed limit before anything is read, every checksum, every JSON field's type and range, every
index against its structure, steps strictly increasing; anything else raises ValueError saying
what is wrong and what to do. `save` writes a whole file beside the target and renames it
(complete or absent); neither it nor `Writer` ever replaces or truncates what is at the path
(awwatch_write.py says what they refuse).
"""

from __future__ import annotations

import mmap
import os
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from ...core.graph import BackwardGraph
from ...core.graphdict import MAX_DIMS
from ...util.fields import FieldError, need_float, short, strict_loads
from ...util.regular import open_regular
from ...util.warn import warn_user
from .awwatch_write import (
    CRC,
    EXTENSION,
    FORMAT,
    MAGIC,
    READS,
    RECORD,
    U32,
    VERSION,
    Writer,
    head_record,
    save,
    step_record,
    structure_record,
)
from .structure import Structure
from .trainstep import TrainingStep

__all__ = ["EXTENSION", "FORMAT", "MAGIC", "MAX_HEAD", "MAX_STEP", "MAX_STEP_JSON", "MAX_STRUCTURE",
           "SLOTS_FLOOR", "SLOTS_PER_BYTE", "STEP_JSON_BASE", "STEP_JSON_PER_ITEM", "TRUNCATED",
           "U32", "VERSION", "NewerVersion", "Writer", "check_dict", "check_graph", "check_head",
           "check_int", "head_record", "major_of", "read", "read_step", "save", "step_record",
           "structure_record", "unreadable"]

_HEADER, _CRC, _U32 = RECORD, CRC, U32  # the layout awwatch_write.py writes
#: The largest record read (a structure of ~1M nodes is ~300 MB of JSON).
MAX_RECORD = 1 << 30
#: The largest JSON part of a step record.
MAX_STEP_JSON = 1 << 26
_NODE_KINDS = {"function", "accumulate_grad", "custom_function", "cpp_function"}
_LEAF_KINDS = {None, "parameter", "input"}


# ------------------------------------------------------------------------------ reading
#: The largest `STRC` record `read` accepts by default: 16 MiB of graph JSON (~50,000 nodes; a
#: node is ~300 bytes), which reads in about a second and a few hundred MB of Python objects
#: (JSON costs up to ~25x its text). `read(path, max_structure_bytes=...)` raises it.
MAX_STRUCTURE = 16 << 20
#: The largest `HEAD` record (its meta holds plain values only).
MAX_HEAD = 1 << 20
#: Step numbers are below this (a signed 32-bit int, as the widget's and the page's step
#: indices are).
MAX_STEP = 2**31 - 1
#: A step's JSON may hold this much whatever its structure (loss, failure message, warnings) ...
STEP_JSON_BASE = 1 << 20
#: ... and this much per node, edge, parameter and recorded slot of the largest structure read
#: (a NaN count, a birth and its cause, a parameter's name).
STEP_JSON_PER_ITEM = 256
#: A structure declares at most this many output slots per byte of its record, beyond the
#: floor: indexing a structure costs a list entry per slot (`Structure.out_edge`), so a node
#: claiming 10**12 outputs in a few bytes is refused before anything is allocated.
SLOTS_PER_BYTE = 16
SLOTS_FLOOR = 1 << 20
#: What the search for the next whole record after a damaged one may checksum, per byte of the
#: file (beyond the floor): a file of fake tags cannot make it quadratic.
_RESYNC_PER_BYTE = 2
_RESYNC_FLOOR = 64 << 20
_TAGS = (b"HEAD", b"STRC", b"STEP")
#: An int64, the most a NaN/Inf count or an element count can be.
_I63 = 2**63 - 1


def unreadable(path: Path, why: str) -> ValueError:
    """The ValueError for a watch file that cannot be read: `why`, and how to get a good one
    (also awstore.py's, for format 2.0).

    Example:
        >>> str(unreadable(Path("w.awwatch"), "it is empty"))[:52]
        'w.awwatch is not a readable autograd_widget watch: i'
    """
    return ValueError(
        f"{path} is not a readable autograd_widget watch: {why}. Watch the run again with "
        f"aw.watch(..., path='{path.stem}{EXTENSION}') or save it with watch.save(...)"
    )


def check_int(v: Any, what: str, lo: int = 0, hi: int | None = None) -> int:
    """`v` when it is an int (not a bool) in `lo <= v < hi`, else TypeError naming `what`.

    Example:
        >>> check_int(3, "step.col", 0, 4)
        3
    """
    if isinstance(v, bool) or not isinstance(v, int) or v < lo or (hi is not None and v >= hi):
        rng = f">= {lo}" if hi is None else f">= {lo} and < {hi}"
        raise TypeError(f"{what} must be an int {rng}, got {short(v)}")
    return v


def _str(v: Any, what: str) -> str:
    if not isinstance(v, str):
        raise TypeError(f"{what} must be a string, got {type(v).__name__}")
    return v


def _opt_str(v: Any, what: str) -> str | None:
    return None if v is None else _str(v, what)


def _list(v: Any, what: str, max_len: int | None = None) -> list:
    if not isinstance(v, list):
        raise TypeError(f"{what} must be a list, got {type(v).__name__}")
    if max_len is not None and len(v) > max_len:
        raise ValueError(f"{what} holds {len(v)} items, more than its structure has ({max_len})")
    return v


def _float(v: Any, what: str) -> float:
    try:
        return need_float(v, what)
    except FieldError as e:  # an int of 400 digits is a ValueError here, never an OverflowError
        raise TypeError(str(e)) from None


def check_dict(v: Any, what: str) -> dict:
    """`v` when it is a JSON object, else TypeError naming `what`.

    Example:
        >>> check_dict([], "step")
        Traceback (most recent call last):
        TypeError: step must be an object, got list
    """
    if not isinstance(v, dict):
        raise TypeError(f"{what} must be an object, got {type(v).__name__}")
    return v


_NODE_FIELDS = {"id", "name", "kind", "sequence_nr", "inputs", "module", "leaf_name", "traceback",
                "leaf_kind", "num_outputs", "is_root"}  # fmt: skip


def check_graph(d: Any, max_slots: int | None = None) -> BackwardGraph:
    """A `BackwardGraph` from `to_dict()` output, every field checked first (ids `n0, n1, ...`
    in order, kinds, sequence numbers, shapes of at most `MAX_DIMS` dimensions and at most
    2**63-1 elements, edges within their nodes' slots, each output slot used once, at most
    `max_slots` output slots in all, compiled regions as core/graphdict.py reads them).
    TypeError or ValueError naming the field otherwise.

    Example:
        >>> check_graph(g.to_dict())
        <BackwardGraph 4 nodes, 3 edges, 1 root(s), 2 leaves, not live>
        >>> d = g.to_dict(); d["nodes"][1]["num_outputs"] = 10**12
        >>> check_graph(d, max_slots=1000)
        Traceback (most recent call last):
        ValueError: graph.nodes[1].num_outputs: 1000000000000 output slots, more than ...
    """
    d = check_dict(d, "graph")
    _opt_str(d.get("model_name"), "graph.model_name")
    nodes = _list(d.get("nodes"), "graph.nodes")
    n_out, n_in = [], []
    slots = 0
    for i, nd in enumerate(nodes):
        where = f"graph.nodes[{i}]"
        nd = check_dict(nd, where)
        if set(nd) != _NODE_FIELDS:
            raise ValueError(f"{where} has fields {sorted(nd)}, not {sorted(_NODE_FIELDS)}")
        if nd["id"] != f"n{i}":
            raise ValueError(f"{where}.id is {short(nd['id'])}, not 'n{i}'")
        _str(nd["name"], f"{where}.name")
        if nd["kind"] not in _NODE_KINDS:
            raise ValueError(f"{where}.kind {short(nd['kind'])} is not one of "
                             f"{sorted(_NODE_KINDS)}")  # fmt: skip
        check_int(nd["sequence_nr"], f"{where}.sequence_nr", 0, 2**64)
        for k, m in enumerate(_list(nd["inputs"], f"{where}.inputs")):
            m = _list(m, f"{where}.inputs[{k}]")
            if len(m) != 3:
                raise ValueError(f"{where}.inputs[{k}] must be [shape, dtype, device]")
            numel = 1
            for n in _list(m[0], f"{where}.inputs[{k}] shape", MAX_DIMS):
                numel *= check_int(n, f"{where}.inputs[{k}] shape entry", 0, _I63 + 1)
            if numel > _I63:
                raise ValueError(f"{where}.inputs[{k}] shape holds more than 2**63-1 elements")
            _str(m[1], f"{where}.inputs[{k}] dtype")
            _str(m[2], f"{where}.inputs[{k}] device")
        _opt_str(nd["module"], f"{where}.module")
        _opt_str(nd["leaf_name"], f"{where}.leaf_name")
        if nd["traceback"] is not None:
            for line in _list(nd["traceback"], f"{where}.traceback"):
                _str(line, f"{where}.traceback line")
        if nd["leaf_kind"] not in _LEAF_KINDS:
            raise ValueError(f"{where}.leaf_kind {short(nd['leaf_kind'])} is not a leaf kind")
        n_out.append(check_int(nd["num_outputs"], f"{where}.num_outputs", 0, 2**63))
        slots += n_out[-1]
        if max_slots is not None and slots > max_slots:
            raise ValueError(f"{where}.num_outputs: {n_out[-1]} output slots, more than a "
                             f"structure of this size declares ({max_slots} in all)")
        n_in.append(len(nd["inputs"]))
        if not isinstance(nd["is_root"], bool):
            raise TypeError(f"{where}.is_root must be true or false")
    ids = {f"n{i}": i for i in range(len(nodes))}
    used: set[tuple[int, int]] = set()
    for k, e in enumerate(_list(d.get("edges"), "graph.edges")):
        e = _list(e, f"graph.edges[{k}]")
        if len(e) != 4 or not isinstance(e[0], str) or not isinstance(e[2], str) or (
                e[0] not in ids or e[2] not in ids):  # fmt: skip
            raise ValueError(f"graph.edges[{k}] must be [src node id, output_nr, dst id, slot]")
        src, dst = ids[e[0]], ids[e[2]]
        nr = check_int(e[1], f"graph.edges[{k}] output_nr", 0, max(n_out[src], 1))
        check_int(e[3], f"graph.edges[{k}] input slot", 0, max(n_in[dst], 1))
        if (src, nr) in used:
            raise ValueError(f"graph.edges[{k}]: output {nr} of {e[0]} is used twice")
        used.add((src, nr))
    for k, r in enumerate(_list(d.get("roots"), "graph.roots")):
        r = _list(r, f"graph.roots[{k}]")
        if len(r) != 2 or not isinstance(r[0], str) or r[0] not in ids:
            raise ValueError(f"graph.roots[{k}] must be [node id, slot]")
        check_int(r[1], f"graph.roots[{k}] slot", 0, 2**63)
    for key, value in check_dict(d.get("module_classes") or {}, "graph.module_classes").items():
        _str(value, f"graph.module_classes[{short(key)}]")
    return BackwardGraph.from_dict(d)


def _counts(v: Any, what: str, n: int) -> dict[int, tuple[int, int]]:
    """index -> (NaN count, Inf count), each index once, counts in -1..2**63-1 (-1: present,
    not counted)."""
    out = {}
    for k, item in enumerate(_list(v, what, n)):
        item = _list(item, f"{what}[{k}]")
        if len(item) != 3:
            raise ValueError(f"{what}[{k}] must be [index, NaN count, Inf count]")
        i = check_int(item[0], f"{what}[{k}] index", 0, n)
        if i in out:
            raise ValueError(f"{what}[{k}]: index {i} is listed twice")
        out[i] = (check_int(item[1], f"{what}[{k}] NaN count", -1, _I63 + 1),
                  check_int(item[2], f"{what}[{k}] Inf count", -1, _I63 + 1))  # fmt: skip
    return out


def read_step(payload: bytes | memoryview, structures: list[Structure], previous: int,
              json_cap: int = MAX_STEP_JSON) -> TrainingStep:  # fmt: skip
    """The `TrainingStep` of a format 1.0 `STEP` payload (JSON, then its arrays), every field
    checked against `structures` and the step before it (`previous`); TypeError or ValueError
    naming the field otherwise. awstore.py reads a 2.0 step through it too.

    Example:
        >>> import json; doc = json.dumps({"step": 0, "watched": False, "loss": 2.0,
        ...     "scale": None, "nonfinite_params": [], "failure": None}).encode()
        >>> read_step(U32.pack(len(doc)) + doc, [], -1).loss
        2.0
    """
    if len(payload) < _U32.size:
        raise ValueError("a step record is shorter than its JSON length")
    (n,) = _U32.unpack_from(payload)
    if n > min(json_cap, MAX_STEP_JSON) or _U32.size + n > len(payload):
        raise ValueError(f"a step's JSON length {n} exceeds its record or what its structures "
                         f"need ({min(json_cap, MAX_STEP_JSON)} bytes)")  # fmt: skip
    doc = check_dict(strict_loads(payload[_U32.size : _U32.size + n]), "step")
    step = check_int(doc.get("step"), "step.step", previous + 1, MAX_STEP)
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
    sid = check_int(doc.get("structure"), "step.structure", 0, len(structures))
    s = structures[sid]
    n_nodes, n_e, n_p, n_x = len(s.names), len(s.edge_ids), len(s.params), len(s.extra)
    n_order = check_int(doc.get("n_order"), "step.n_order", 0, n_nodes + 1)
    need = 4 * (n_order + n_e + n_p + n_x)
    if len(rest) != need:
        raise ValueError(f"step {step} holds {len(rest)} bytes of arrays, its structure needs "
                         f"{need}")  # fmt: skip
    # read-only views of the record's bytes (little-endian, as numpy reads them): no copy
    order = np.frombuffer(rest, dtype="<i4", count=n_order)
    if n_order and (order.min() < 0 or order.max() >= n_nodes):
        raise ValueError(f"step {step}'s order names a node outside its structure")
    if n_order and np.unique(order).size != n_order:  # the engine runs a node once per backward
        raise ValueError(f"step {step}'s order names a node twice")
    arr = np.frombuffer(rest, dtype="<f4", offset=4 * n_order)
    st.structure, st.order = sid, order
    st.edge_norms, st.param_norms = arr[:n_e], arr[n_e : n_e + n_p]
    st.slot_norms = arr[n_e + n_p :]
    st.nonfinite = _counts(doc.get("nonfinite"), "step.nonfinite", n_e)
    st.slot_nonfinite = _counts(doc.get("slot_nonfinite"), "step.slot_nonfinite", n_x)
    births = {}
    for k, b in enumerate(_list(doc.get("births"), "step.births", n_nodes)):
        b = _list(b, f"step.births[{k}]")
        if len(b) != 3 or not isinstance(b[2], bool):
            raise ValueError(f"step.births[{k}] must be [node index, cause, expected]")
        i = check_int(b[0], f"step.births[{k}] node", 0, n_nodes)
        if i in births:
            raise ValueError(f"step.births[{k}]: node {i} is listed twice")
        births[i] = (_str(b[1], "a cause"), b[2])
    st.births = births
    st.warnings = tuple(_str(w, "a warning") for w in _list(doc.get("warnings"), "warnings"))
    if failure is not None:
        node = failure[2]
        st.failure = (
            _str(failure[0], "failure type"),
            _str(failure[1], "failure message"),
            None if node is None else check_int(node, "failure node", 0, n_nodes),
        )
    return st


class _Reader:
    """One pass over a watch file: each record's header checked against what its kind may
    hold (`_cap`) and what is left of the file before its payload is read; a damaged record
    followed by whole ones skipped up to the next whole record (`_resync`)."""

    def __init__(self, path: Path, f: Any, size: int, max_structure: int) -> None:
        self.path, self.f, self.size, self.max_structure = path, f, size, max_structure
        self.warnings: list[str] = []
        self.structures: list[Structure] = []
        self.steps: list[TrainingStep] = []
        self.head: dict[str, Any] | None = None
        self.items = 0  # nodes + edges + parameters + slots of the largest structure
        #: (byte of the damaged record, its tag, why, where reading went on, steps read before)
        self.damage: list[tuple[int, bytes, str, int, int]] = []
        self.resync_budget = _RESYNC_FLOOR + _RESYNC_PER_BYTE * size

    def cap(self, tag: bytes) -> int:
        """The most bytes a record of kind `tag` may hold, from what was read before it."""
        if tag == b"HEAD":
            return MAX_HEAD
        if tag == b"STRC":
            return self.max_structure
        if tag == b"STEP":
            return _U32.size + self.json_cap() + 4 * self.items
        return 0

    def json_cap(self) -> int:
        return min(MAX_STEP_JSON, STEP_JSON_BASE + STEP_JSON_PER_ITEM * self.items)

    def run(self) -> None:
        f, size, path = self.f, self.size, self.path
        if f.read(len(MAGIC)) != MAGIC:
            raise unreadable(path, f"it does not start with {MAGIC!r}")
        pos = len(MAGIC)
        while pos < size:
            f.seek(pos)
            raw = f.read(_HEADER.size)
            if len(raw) < _HEADER.size:
                self.warnings.append(TRUNCATED.format(path=path))
                return
            tag, length = _HEADER.unpack(raw)
            left = size - pos - _HEADER.size - _CRC.size
            body = None
            if tag not in _TAGS:
                why = f"its tag {tag!r} is not a record's"
            elif length > self.cap(tag):
                if tag == b"STRC" and length <= left and self.framed(pos, length):
                    raise self.too_big(pos, length)  # whole, just larger than the limit
                why = f"it claims {length} bytes, more than a {tag.decode()} record holds here"
            elif length > left:
                why = f"it claims {length} bytes, past the end of the file"
            else:
                body = f.read(length + _CRC.size)  # the payload and its checksum, one read
                ok = _CRC.unpack_from(body, length)[0] == zlib.crc32(memoryview(body)[:length])
                why = "" if ok else "its checksum does not match"
            if why:
                nxt = self.resync(pos)
                if nxt is None:
                    self.last(pos, tag, length, left, why)
                    return
                self.damage.append((pos, tag, why, nxt, len(self.steps)))
                pos = nxt
                continue
            assert body is not None
            self.apply(tag, memoryview(body)[:length], pos)
            pos += _HEADER.size + length + _CRC.size

    def last(self, pos: int, tag: bytes, length: int, left: int, why: str) -> None:
        """A damaged record with no whole record after it: the last one. Cut short (a killed
        writer) is a warning; anything else an error."""
        cap = self.cap(tag)
        if tag in _TAGS and length <= cap and length > left:
            self.warnings.append(TRUNCATED.format(path=self.path))
            return
        if tag == b"STRC" and self.max_structure < length <= left:
            raise self.too_big(pos, length)
        if tag in _TAGS and length > cap:
            hint = " (max_structure_bytes)" if tag == b"STRC" else ""
            raise unreadable(self.path, f"a record claims {length} bytes at byte {pos} (the "
                             f"limit for a {tag.decode()} record here is {cap}{hint})")
        if tag in _TAGS:
            raise unreadable(self.path, f"the checksum of the {tag!r} record at byte {pos} does "
                             "not match (the file was damaged)")  # fmt: skip
        raise unreadable(self.path, f"the record at byte {pos} is damaged ({why})")

    def framed(self, pos: int, length: int) -> bool:
        """Whether a record of `length` bytes at `pos` ends where the file or a record begins."""
        end = pos + _HEADER.size + length + _CRC.size
        if end == self.size:
            return True
        self.f.seek(end)
        return self.f.read(4) in _TAGS

    def too_big(self, pos: int, length: int) -> ValueError:
        return ValueError(
            f"{self.path}: its structure record at byte {pos} holds {length} bytes, more than "
            f"max_structure_bytes={self.max_structure} (a graph of ~{length // 300:,} nodes); "
            "if you trust this file, raise the limit: "
            f"aw.load_watch(path, max_structure_bytes={length})"
        )

    def resync(self, pos: int) -> int | None:
        """The byte where the next whole record after `pos` starts (a known tag, a length within
        its cap and the file, a matching checksum), None when there is none. The checksums
        tried are bounded by `resync_budget` (a file made of fake tags costs linear time)."""
        with mmap.mmap(self.f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            found = {t: mm.find(t, pos + 1) for t in (b"STRC", b"STEP")}
            while True:
                live = [q for q in found.values() if q >= 0]
                if not live:
                    return None
                q = min(live)
                tag = mm[q : q + 4]
                found[tag] = mm.find(tag, q + 1)
                if q + _HEADER.size + _CRC.size > self.size:
                    continue
                (length,) = struct.unpack_from("<Q", mm, q + 4)
                end = q + _HEADER.size + length
                if length > self.cap(tag) or end + _CRC.size > self.size:
                    continue
                self.resync_budget -= length
                if self.resync_budget < 0:
                    raise unreadable(self.path, f"the record at byte {pos} is damaged and no whole "
                                          "record was found after it within the search's "
                                          "budget")  # fmt: skip
                if zlib.crc32(mm[q + _HEADER.size : end]) == _CRC.unpack_from(mm, end)[0]:
                    return q

    def apply(self, tag: bytes, payload: memoryview, pos: int) -> None:
        try:
            self.head = _apply(tag, payload, self.head, self.structures, self.steps, self)
        except NewerVersion as e:
            raise ValueError(f"{self.path} {e}") from None
        except RecursionError:
            raise unreadable(self.path, f"its {tag.decode('ascii', 'replace')} record at byte "
                             f"{pos} is nested too deeply") from None  # fmt: skip
        except (TypeError, ValueError, KeyError, OverflowError) as e:
            after = ""
            if self.damage:
                after = f", after the damaged record at byte {self.damage[-1][0]}"
            raise unreadable(self.path, f"its {tag.decode('ascii', 'replace')} record at byte "
                             f"{pos} is malformed ({type(e).__name__}: {str(e)[:300]}){after}"
                             ) from e  # fmt: skip

    def structure(self, payload: memoryview) -> None:
        """Read a `STRC` record: its output slots bounded by its size, ids in order."""
        max_slots = max(SLOTS_FLOOR, SLOTS_PER_BYTE * len(payload))
        doc = check_dict(strict_loads(payload), "structure")
        check_int(doc.get("id"), "structure.id", len(self.structures), len(self.structures) + 1)
        s = Structure(check_graph(doc.get("graph"), max_slots))
        self.structures.append(s)
        self.items = max(self.items, len(s.names) + len(s.edge_ids) + len(s.params)
                         + len(s.extra))  # fmt: skip

    def damage_warnings(self) -> list[str]:
        """One sentence per damaged record: where, why, what was skipped, which steps."""
        out = []
        for pos, tag, why, nxt, before in self.damage:
            kind = f"{tag.decode()} record" if tag in _TAGS else "record"
            prev = self.steps[before - 1].step if before else None
            after = self.steps[before].step if before < len(self.steps) else None
            lost = (f"the steps between step {prev} and step {after} are left out"
                    if prev is not None and after is not None else
                    f"the steps before step {after} are left out" if after is not None else
                    f"the steps after step {prev} are left out" if prev is not None else
                    "no step was read around it")  # fmt: skip
            out.append(f"{self.path}: the {kind} at byte {pos} is damaged ({why}): bytes "
                       f"{pos}..{nxt - 1} were skipped and reading went on at the next whole "
                       f"record (byte {nxt}); {lost}")
        return out


def read(path: Path, *, max_structure_bytes: int = MAX_STRUCTURE
         ) -> tuple[dict[str, Any], list[Structure], list[TrainingStep], list[str]]:  # fmt: skip
    """(head, structures, steps, warnings) of a file `Writer` or `save` made.

    Guarantees: no code from the file runs; every length is checked before its record is read,
    against what is left of the file and what a record of its kind may hold (a `HEAD`
    `MAX_HEAD`, a structure `max_structure_bytes`, a step what the largest structure before it
    needs), and every count in a record against what the record holds, so the work and memory
    are bounded by the file's size; JSON is strict (no NaN token, no key twice); steps strictly
    increase below `MAX_STEP`, a step's order names each node once, counts are -1 (present,
    not counted) or more. A truncated LAST record (a process killed while appending) is dropped
    with a warning; a damaged record with whole records after it (a flipped bit in its length
    or payload) is skipped up to the next whole record, with a warning naming its byte and the
    steps left out, also issued as a Python warning; a damaged structure, a wrong format, a
    newer major version or any malformed field raise ValueError naming the file and the
    record's byte; FileNotFoundError when there is no file.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     _ = (Path(d) / "x.awwatch").write_bytes(b"PK\\x03\\x04")
        ...     read(Path(d) / "x.awwatch")
        Traceback (most recent call last):
        ValueError: ...x.awwatch is not a readable autograd_widget watch: it does not start...
    """
    if isinstance(max_structure_bytes, bool) or not isinstance(max_structure_bytes, int) or (
            max_structure_bytes < 0):  # fmt: skip
        raise ValueError(f"max_structure_bytes must be an int >= 0, got {max_structure_bytes!r}")
    f = open_regular(path, what="a watch", hint="pass the path of an .awwatch file "
                     "(watch.save(...) or aw.watch(path=...) writes one)")
    with f:
        size = os.fstat(f.fileno()).st_size
        if _major(f, size) == 2:
            raise ValueError(f"{path} is a watch of format 2.0 (engine/watch/awtile.py): read it "
                             "with aw.load_watch(path), or awstore.read(path)")  # fmt: skip
        f.seek(0)
        r = _Reader(path, f, size, max_structure_bytes)
        r.run()
    if r.head is None:
        raise unreadable(path, "it ends before its HEAD record is complete (no step was saved)")
    damaged = r.damage_warnings()
    for message in damaged:
        warn_user(message)
    return r.head, r.structures, r.steps, damaged + r.warnings


def major_of(path: Path) -> int | None:
    """The major format version of the watch file at `path` when its HEAD record is whole and
    well-formed, else None (also for no file: the reader then says what is wrong).

    Example:
        >>> major_of(Path("missing.awwatch")) is None
        True
    """
    try:
        f = open_regular(path, what="a watch", hint="")
    except (OSError, ValueError):
        return None
    with f:
        return _major(f, os.fstat(f.fileno()).st_size)


def _major(f: Any, size: int) -> int | None:
    """The major version a whole, well-formed HEAD record says, else None (the 1.0 reader then
    says what is wrong)."""
    raw = f.read(len(MAGIC) + _HEADER.size)
    if len(raw) < len(MAGIC) + _HEADER.size or raw[: len(MAGIC)] != MAGIC:
        return None
    tag, length = _HEADER.unpack_from(raw, len(MAGIC))
    if tag != b"HEAD" or length > min(MAX_HEAD, size):
        return None
    body = f.read(length)
    try:
        doc = strict_loads(body)
        major = doc["version"][0]
    except (ValueError, TypeError, KeyError, IndexError, RecursionError):
        return None
    return major if isinstance(major, int) and not isinstance(major, bool) else None


TRUNCATED = (
    "{path}: the last record is incomplete (the process was stopped while writing it): that "
    "step is left out, every completed step before it was read"
)


class NewerVersion(ValueError):
    """A file of a newer major format version than this reader's."""


def _apply(tag: bytes, payload: bytes | memoryview, head: dict[str, Any] | None,
           structures: list[Structure], steps: list[TrainingStep], reader: _Reader
           ) -> dict[str, Any]:  # fmt: skip
    if head is None:
        if tag != b"HEAD":
            raise ValueError(f"the first record is {tag!r}, not b'HEAD'")
        return check_head(payload)
    if tag == b"STRC":
        reader.structure(memoryview(payload))
    elif tag == b"STEP":
        steps.append(read_step(payload, structures, steps[-1].step if steps else -1,
                           reader.json_cap()))  # fmt: skip
    else:
        raise ValueError(f"a second {tag!r} record (a file has one HEAD, first)")
    return head


def check_head(payload: bytes | memoryview) -> dict[str, Any]:
    """The `HEAD` document of a payload, checked (format, a major version this reads, `every`,
    plain meta values); `NewerVersion` for a newer major version.

    Example:
        >>> check_head(head_record(2, {})[12:-4])["every"]
        2
    """
    doc = check_dict(strict_loads(payload), "head")
    if doc.get("format") != FORMAT:
        raise ValueError(f"its format is {short(doc.get('format'))}, not {FORMAT!r}")
    version = _list(doc.get("version"), "head.version")
    if len(version) != 2:
        raise ValueError(f"its version {short(version)} is not [major, minor]")
    major = check_int(version[0], "the major version", 0, 2**31)
    minor = check_int(version[1], "the minor version", 0, 2**31)
    if major > max(READS):
        raise NewerVersion(
            f"was written in watch format {major}.{minor}, newer than this autograd_widget "
            f"reads ({max(READS)}.x): upgrade autograd_widget (install it again "
            "from a newer clone or wheel) to open it"
        )
    if major not in READS:
        raise ValueError(f"format version {major} is older than this reader's")
    check_int(doc.get("every"), "head.every", 1, MAX_STEP)
    meta = check_dict(doc.get("meta"), "head.meta")
    for k, v in meta.items():
        if not isinstance(v, str | int | float | bool | type(None)):
            raise TypeError(f"head.meta[{short(k)}] must be a plain value")
        if isinstance(v, int) and not isinstance(v, bool) and not -_I63 - 1 <= v <= _I63:
            raise ValueError(f"head.meta[{short(k)}] is an int outside the int64 range")
    for k in ("rank", "world_size"):  # what a recording's meta holds as counts
        if k in meta:
            check_int(meta[k], f"head.meta[{k!r}]", 0, 2**31)
    return doc
