"""The `.awrec` file: a recorded backward on disk, portable and safe to open.

Format (version 1.0): a zip archive holding
- `manifest.json`: `{"format": "autograd_widget.recording", "version": [major, minor],
  "recording": {...}, "tensors": {edge_id: {"file", "dtype", "shape"}}}` where "recording" is
  `Recording.to_manifest()`: the graph as `BackwardGraph.to_dict()`, every node run, the
  failure and meta, with summaries in util/jsonsafe.py's encoding (NaN/Inf as "nan", "inf",
  "-inf"), so the JSON is strict (no NaN tokens);
- `tensors/<i>.bin`: each kept gradient as raw little-endian bytes in C order, described by
  its dtype name and shape in the manifest.

Why: loading must never execute code, so no pickle (`torch.load` even with `weights_only` is
a pickle reader); JSON plus raw bytes is read by any language, diffable after unzip, and the
tensors need no torch serializer. The dtype of a tensor is looked up in a fixed table, never
through `getattr(torch, name)`.

Versioning: a reader accepts every file of its major version (minor versions only add
fields, which readers ignore); a file of a newer major version, a zip that is not a
recording, or a corrupt file raise ValueError saying what to do.

Reading a file from anyone (`read`): nothing is read that was not bounded first.
- Only a regular file is opened (never a device such as /dev/zero, a pipe, a socket or a folder;
  a pipe is opened without waiting for a writer).
- Before a member is read, its declared size, compression method (stored or deflated only) and
  encryption flag are checked; a stored member must store what it declares, a deflated one may
  not inflate more than `Limits.inflation` times (a zip bomb does ~1000x; a real manifest ~6-40x),
  and the members read may not overlap (their compressed sizes fit in the file). Members are read
  in chunks and never past their declared size, so a size that lies costs nothing more.
- The manifest is capped (`Limits.manifest_bytes`), as is the sum of the tensors' bytes
  (`Limits.tensor_bytes`) and the graph's nodes (`Limits.nodes`, checked before any field is);
  each can be raised for a legitimately large recording
  (`aw.load_recording(path, max_manifest_bytes=..., max_tensor_bytes=..., max_nodes=...)`).
- The JSON must be strict: no NaN/Infinity tokens, no key twice in one object, no nesting deeper
  than Python's recursion limit. A tensor entry names a `tensors/<i>.bin` member that no other
  entry names, a dtype of the fixed table and a shape of non-negative ints whose byte count is the
  member's declared size; the total is checked before any tensor byte is read.
- What the recording itself says (every field's type, every node id) is checked by the caller
  (`check`, recording.py), also before any tensor byte is read.
Every problem is a ValueError naming the file and what is wrong where; the file's own size
bounds the work (see tests/engine/record/test_hostile_recordings.py for the measured costs).
"""

from __future__ import annotations

import json
import os
import re
import struct
import sys
import zipfile
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ...core.graphdict import parse_shape
from ...util.atomic import atomic_write
from ...util.dtypes import dtype_name
from ...util.fields import FieldError, NotStrict, at, need_dict, need_str, short, strict_loads
from ...util.gcpause import gc_paused
from ...util.regular import open_regular

__all__ = ["EXTENSION", "FORMAT", "VERSION", "Limits", "TensorSpec", "read", "write"]

FORMAT = "autograd_widget.recording"
#: (major, minor): a reader reads every file of its major version.
VERSION = (1, 0)
EXTENSION = ".awrec"
_MANIFEST = "manifest.json"
_TENSOR_FILE = re.compile(r"tensors/[0-9]{1,12}\.bin")
#: Read members in pieces of this size (a deflated member never inflates more at once).
_CHUNK = 1 << 20
#: A deflated member this small may inflate any amount (the ratio check starts above it).
_INFLATION_FLOOR = 1 << 20

_DTYPES: dict[str, torch.dtype] = {
    dtype_name(d): d
    for d in (
        torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64,
        torch.complex128, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8,
        torch.bool,
    )
}  # fmt: skip
_ITEMSIZE = {name: torch.empty((), dtype=d).element_size() for name, d in _DTYPES.items()}


@dataclass(frozen=True)
class Limits:
    """What `read` accepts: the manifest's size, the sum of the kept tensors' sizes (bytes),
    and how many times a deflated member may inflate. Raise one for a recording you trust.

    Example:
        >>> Limits().manifest_bytes // 2**20, Limits().tensor_bytes // 2**30
        (16, 1)
        >>> Limits(tensor_bytes=-1)
        Traceback (most recent call last):
        ValueError: max_tensor_bytes must be an int >= 0, got -1
    """

    #: 16 MiB: ~10,000 nodes (a manifest holds ~1.1-1.6 KB per node and its run).
    manifest_bytes: int = 16 << 20
    #: 1 GiB of kept gradients (`keep="tensors"`); a big model's may need more.
    tensor_bytes: int = 1 << 30
    #: A real manifest deflates 6-40x; a zip bomb ~1000x.
    inflation: int = 200
    #: 20,000 nodes (compiled regions' ops counted): what opens in seconds. A manifest's bytes
    #: do not bound it (a node can take ~100 bytes: 16 MiB could hold 95,000 of them).
    nodes: int = 20_000

    def __post_init__(self) -> None:
        for name, v in (("max_manifest_bytes", self.manifest_bytes),
                        ("max_tensor_bytes", self.tensor_bytes),
                        ("max_inflation", self.inflation), ("max_nodes", self.nodes)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{name} must be an int >= 0, got {v!r}")


@dataclass(frozen=True)
class TensorSpec:
    """One entry of the manifest's tensor index, checked: the member `file`, the dtype (its
    name and torch dtype), the shape and the byte count it implies.

    Example:
        >>> TensorSpec("n0:0", "tensors/0.bin", "float32", torch.float32, (2, 3), 24).nbytes
        24
    """

    edge: str
    file: str
    dtype_name: str
    dtype: torch.dtype
    shape: tuple[int, ...]
    nbytes: int


def _little_endian() -> None:
    if sys.byteorder != "little":
        raise RuntimeError(
            ".awrec files store tensors little-endian; this machine is big-endian and is not "
            "supported (save with keep='summaries' instead)"
        )


def write(path: Path, recording: Mapping[str, Any], tensors: Mapping[str, torch.Tensor]) -> None:
    """Write one recording's manifest and kept tensors (by edge id) to `path`.

    Guarantees: the file is complete or absent (written beside, then renamed); JSON is strict.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     write(Path(d) / "r.awrec", {"k": 1.5}, {"n0:0": torch.ones(2)})
        ...     m, t = read(Path(d) / "r.awrec")
        >>> m, t["n0:0"]
        ({'k': 1.5}, tensor([1., 1.]))
    """
    index: dict[str, dict[str, Any]] = {}
    blobs: list[tuple[str, bytes]] = []
    if tensors:
        _little_endian()
    for i, (eid, t) in enumerate(tensors.items()):
        name = dtype_name(t.dtype)
        if name not in _DTYPES:
            continue  # a dtype the format does not carry: its summary still is
        c = t.detach().cpu().contiguous()
        data = c.view(-1).view(torch.uint8).numpy().tobytes() if c.numel() else b""
        file = f"tensors/{i}.bin"
        index[str(eid)] = {"file": file, "dtype": name, "shape": list(c.shape)}
        blobs.append((file, data))
    doc = {"format": FORMAT, "version": list(VERSION), "recording": recording, "tensors": index}
    text = json.dumps(doc, allow_nan=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as f, zipfile.ZipFile(f, "w") as z:
        z.writestr(_MANIFEST, text, compress_type=zipfile.ZIP_DEFLATED)
        for file, data in blobs:
            z.writestr(file, data, compress_type=zipfile.ZIP_STORED)


#: What the zip and zlib modules raise on a corrupt or crafted archive.
_CORRUPT = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError, struct.error,
            ValueError, OverflowError, NotImplementedError)


def _bad(path: Path, why: str) -> ValueError:
    return ValueError(
        f"{path} is not a readable autograd_widget recording: {why}. Record it again with "
        f"aw.record(...) and rec.save('{path.stem}{EXTENSION}')"
    )


def _corrupt(path: Path, e: BaseException) -> ValueError:
    return _bad(path, f"the archive is corrupt ({type(e).__name__}: {str(e)[:200]})")


def _too_big(path: Path, why: str, keyword: str, needed: int) -> ValueError:
    return ValueError(
        f"{path}: {why}; if you trust this file, raise the limit: "
        f"aw.load_recording(path, {keyword}={needed})"
    )


def read(
    path: Path, limits: Limits | None = None,
    check: Callable[[dict[str, Any], dict[str, TensorSpec]], None] | None = None,
) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """(recording manifest, kept tensors by edge id) from a file `write` made.

    Args:
        path: the file.
        limits: what to accept (`Limits()`: 16 MiB of manifest, 1 GiB of tensors).
        check: called with the recording and the checked tensor index once the manifest is
            read and before any tensor byte is; a ValueError it raises is reported as a
            malformed manifest of this file.

    Guarantees: no code from the file runs; the work is bounded as the module docstring says;
    ValueError on anything but a well-formed recording within `limits`, naming the file, the
    problem and the fix; FileNotFoundError when there is no file.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     _ = (Path(d) / "x.awrec").write_text("hello")
        ...     read(Path(d) / "x.awrec")
        Traceback (most recent call last):
        ValueError: ...x.awrec is not a readable autograd_widget recording: not a zip archive...
    """
    limits = Limits() if limits is None else limits
    with open_regular(path, what="a recording",
                      hint=f"pass the path of an {EXTENSION} file (rec.save(...) writes one)") as f:
        size = os.fstat(f.fileno()).st_size
        if not zipfile.is_zipfile(f):
            raise _bad(path, "not a zip archive (truncated, or not an .awrec file)")
        try:
            f.seek(0)
            z = zipfile.ZipFile(f)
        except _CORRUPT as e:
            raise _corrupt(path, e) from None
        with z:
            return _read_archive(z, path, size, limits, check)


def _read_archive(
    z: zipfile.ZipFile, path: Path, size: int, limits: Limits,
    check: Callable[[dict[str, Any], dict[str, TensorSpec]], None] | None,
) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    members: dict[str, zipfile.ZipInfo] = {}
    for info in z.infolist():
        if info.filename in members:
            raise _bad(path, f"the archive holds two members named {short(info.filename)}")
        members[info.filename] = info
    manifest = members.get(_MANIFEST)
    if manifest is None:
        raise _bad(path, f"the archive has no {_MANIFEST}")
    if manifest.file_size > limits.manifest_bytes:
        raise _too_big(path, f"its {_MANIFEST} holds {manifest.file_size} bytes, more than "
                             f"max_manifest_bytes={limits.manifest_bytes}",
                       "max_manifest_bytes", manifest.file_size)
    _check_member(path, manifest, size, limits)
    doc = _parse(path, _read_exact(z, path, manifest, manifest.file_size))
    if doc.get("format") != FORMAT:
        raise _bad(path, f"its format is {short(doc.get('format'))}, not {FORMAT!r}")
    version = doc.get("version")
    if (
        not isinstance(version, list)
        or len(version) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**31
                   for v in version)
    ):
        raise _bad(path, f"its version is not [major, minor] (got {short(version)})")
    if version[0] > VERSION[0]:
        raise ValueError(
            f"{path} was written in recording format {version[0]}.{version[1]}, newer "
            f"than this autograd_widget reads ({VERSION[0]}.x): upgrade autograd_widget "
            "(install it again from a newer clone or wheel) to open it"
        )
    if version[0] < VERSION[0]:
        raise _bad(path, f"format version {version[0]} is older than this reader's")
    rec = doc.get("recording")
    if not isinstance(rec, dict):
        raise _bad(path, "the manifest holds no recording")
    n = _node_count(rec)
    if n > limits.nodes:
        raise _too_big(path, f"its graph has {n} nodes (compiled regions' ops counted), more "
                             f"than max_nodes={limits.nodes}", "max_nodes", n)
    specs = _index(path, doc.get("tensors"), members, manifest, size, limits)
    if check is not None:
        try:
            check(rec, {s.edge: s for s in specs})
        except ValueError as e:
            raise _bad(path, f"malformed recording manifest: {e}") from None
    return rec, {s.edge: _tensor(z, path, members[s.file], s) for s in specs}


def _node_count(rec: Mapping[str, Any]) -> int:
    """How many nodes the recording's graph lists, its regions' ops included (0 for what is
    not a list: the manifest's own check words that)."""
    graph = rec.get("graph")
    if not isinstance(graph, dict):
        return 0
    nodes = graph.get("nodes")
    n = len(nodes) if isinstance(nodes, list) else 0
    regions = graph.get("regions")
    for r in regions if isinstance(regions, list) else ():
        ops = r.get("ops") if isinstance(r, dict) else None
        n += len(ops) if isinstance(ops, list) else 0
    return n


def _check_member(path: Path, info: zipfile.ZipInfo, size: int, limits: Limits) -> None:
    """What a member declares, checked before a byte of it is read."""
    name = short(info.filename)
    if info.flag_bits & 0x1:
        raise _bad(path, f"member {name} is encrypted")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise _bad(path, f"member {name} uses compression method {info.compress_type}; "
                         ".awrec members are stored or deflated")
    if info.compress_size > size:
        raise _bad(path, f"member {name} declares {info.compress_size} compressed bytes, more "
                         f"than the file's {size}")
    if info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size:
        raise _bad(path, f"stored member {name} declares {info.file_size} bytes but stores "
                         f"{info.compress_size}")
    if info.file_size > max(_INFLATION_FLOOR, limits.inflation * info.compress_size):
        ratio = info.file_size // max(info.compress_size, 1)
        raise _too_big(path, f"member {name} inflates {ratio}x ({info.compress_size} -> "
                             f"{info.file_size} bytes), more than max_inflation="
                             f"{limits.inflation} (a zip bomb?)", "max_inflation", ratio + 1)


def _read_exact(z: zipfile.ZipFile, path: Path, info: zipfile.ZipInfo, n: int) -> bytearray:
    """The `n` bytes of member `info`, read in chunks, never past its declared size; its
    CRC is checked by zipfile at the end."""
    buf = bytearray(n)
    view = memoryview(buf)
    pos = 0
    try:
        with z.open(info) as m:
            while pos < n:
                chunk = m.read(min(_CHUNK, n - pos))
                if not chunk:
                    break
                view[pos : pos + len(chunk)] = chunk
                pos += len(chunk)
            extra = m.read(1)
    except _CORRUPT as e:
        raise _corrupt(path, e) from None
    if pos != n or extra:
        raise _bad(path, f"member {short(info.filename)} does not hold the {n} bytes it "
                         "declares")
    return buf


def _parse(path: Path, raw: bytearray) -> dict[str, Any]:
    try:
        with gc_paused():  # millions of new objects: no collection passes over them meanwhile
            doc = strict_loads(raw)
    except RecursionError:
        raise _bad(path, "its manifest is nested too deeply") from None
    except NotStrict as e:
        raise _bad(path, f"its manifest is not strict JSON: {e}") from None
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError, an int of 5000 digits
        raise _bad(path, f"its manifest is not valid JSON ({str(e)[:200]})") from None
    if not isinstance(doc, dict):
        raise _bad(path, f"its format is {short(None)}, not {FORMAT!r}")
    return doc


def _index(path: Path, doc: Any, members: Mapping[str, zipfile.ZipInfo],
           manifest: zipfile.ZipInfo, size: int, limits: Limits) -> list[TensorSpec]:
    """The tensor index checked against the archive, before any tensor byte is read."""
    specs: list[TensorSpec] = []
    by_file: dict[str, str] = {}
    try:
        for eid, spec in need_dict({} if doc is None else doc, "tensors").items():
            w = at("tensors", eid)
            spec = need_dict(spec, w)
            file = need_str(spec.get("file"), at(w, "file"))
            name = need_str(spec.get("dtype"), at(w, "dtype"))
            shape = parse_shape(spec.get("shape"), at(w, "shape"))
            if not _TENSOR_FILE.fullmatch(file):
                raise FieldError(at(w, "file"), f"{short(file)} is not a tensors/<i>.bin member")
            if file in by_file:
                raise FieldError(at(w, "file"), f"{short(file)} is named by edge "
                                 f"{short(by_file[file])} too (a member holds one tensor)")
            by_file[file] = eid
            if name not in _DTYPES:
                raise FieldError(at(w, "dtype"), f"{short(name)}, which the format does not "
                                 f"carry ({', '.join(_DTYPES)})")
            numel = 1
            for n in shape:
                numel *= n
            specs.append(TensorSpec(eid, file, name, _DTYPES[name], shape,
                                    numel * _ITEMSIZE[name]))
    except FieldError as e:
        raise _bad(path, f"its tensor index is malformed: {e}") from None
    total = sum(s.nbytes for s in specs)
    if total > limits.tensor_bytes:
        raise _too_big(path, f"its tensors hold {total} bytes, more than max_tensor_bytes="
                             f"{limits.tensor_bytes}", "max_tensor_bytes", total)
    compressed = manifest.compress_size
    for s in specs:
        info = members.get(s.file)
        if info is None:
            raise _bad(path, f"the tensor file {s.file} is missing")
        if info.file_size != s.nbytes:
            raise _bad(path, f"{s.file} holds {info.file_size} bytes, not {s.nbytes} "
                             f"({s.dtype_name} of shape {list(s.shape)})")
        _check_member(path, info, size, limits)
        compressed += info.compress_size
    if compressed > size:
        raise _bad(path, f"its members overlap: they declare {compressed} compressed bytes, "
                         f"more than the file's {size}")
    return specs


def _tensor(z: zipfile.ZipFile, path: Path, info: zipfile.ZipInfo,
            spec: TensorSpec) -> torch.Tensor:
    try:
        if not spec.nbytes:
            return torch.empty(spec.shape, dtype=spec.dtype)
        _little_endian()
        raw = torch.frombuffer(_read_exact(z, path, info, spec.nbytes), dtype=torch.uint8)
        if spec.dtype is torch.bool and bool((raw > 1).any()):
            raise _bad(path, f"{spec.file} holds bool values other than 0 and 1")
        return raw.view(spec.dtype).reshape(spec.shape)
    except (RuntimeError, TypeError) as e:  # a shape torch cannot allocate, even empty
        raise _bad(path, f"the tensor of edge {short(spec.edge)} cannot be built "
                         f"({type(e).__name__}: {str(e)[:200]})") from None
