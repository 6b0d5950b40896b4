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
"""

from __future__ import annotations

import json
import sys
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from ...util.dtypes import dtype_name

__all__ = ["EXTENSION", "FORMAT", "VERSION", "read", "write"]

FORMAT = "autograd_widget.recording"
#: (major, minor): a reader reads every file of its major version.
VERSION = (1, 0)
EXTENSION = ".awrec"
_MANIFEST = "manifest.json"

_DTYPES: dict[str, torch.dtype] = {
    dtype_name(d): d
    for d in (
        torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64,
        torch.complex128, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8,
        torch.bool,
    )
}  # fmt: skip


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
    tmp = path.with_name(path.name + ".partial")
    with zipfile.ZipFile(tmp, "w") as z:
        z.writestr(_MANIFEST, text, compress_type=zipfile.ZIP_DEFLATED)
        for file, data in blobs:
            z.writestr(file, data, compress_type=zipfile.ZIP_STORED)
    tmp.replace(path)


def _bad(path: Path, why: str) -> ValueError:
    return ValueError(
        f"{path} is not a readable autograd_widget recording: {why}. Record it again with "
        f"aw.record(...) and rec.save('{path.stem}{EXTENSION}')"
    )


def read(path: Path) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """(recording manifest, kept tensors by edge id) from a file `write` made.

    Guarantees: no code from the file runs; ValueError on a wrong format, a newer major
    version or corruption, naming the fix; FileNotFoundError when there is no file.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     _ = (Path(d) / "x.awrec").write_text("hello")
        ...     read(Path(d) / "x.awrec")
        Traceback (most recent call last):
        ValueError: ...x.awrec is not a readable autograd_widget recording: not a zip archive...
    """
    if not path.exists():
        raise FileNotFoundError(f"no recording at {path}")
    if not zipfile.is_zipfile(path):
        raise _bad(path, "not a zip archive (truncated, or not an .awrec file)")
    try:
        with zipfile.ZipFile(path) as z:
            try:
                doc = json.loads(z.read(_MANIFEST).decode("utf-8"))
            except KeyError:
                raise _bad(path, f"the archive has no {_MANIFEST}") from None
            if not isinstance(doc, dict) or doc.get("format") != FORMAT:
                got = doc.get("format") if isinstance(doc, dict) else None
                raise _bad(path, f"its format is {got!r}, not {FORMAT!r}")
            version = doc.get("version")
            if (
                not isinstance(version, list)
                or len(version) != 2
                or not all(isinstance(v, int) for v in version)
            ):
                raise _bad(path, f"its version {version!r} is not [major, minor]")
            if version[0] > VERSION[0]:
                raise ValueError(
                    f"{path} was written in recording format {version[0]}.{version[1]}, newer "
                    f"than this autograd_widget reads ({VERSION[0]}.x): upgrade autograd_widget "
                    "(pip install -U autograd_widget) to open it"
                )
            if version[0] < VERSION[0]:
                raise _bad(path, f"format version {version[0]} is older than this reader's")
            tensors = {
                str(eid): _tensor(z, path, spec) for eid, spec in (doc.get("tensors") or {}).items()
            }
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError) as e:
        raise _bad(path, f"the archive is corrupt ({type(e).__name__}: {e})") from e
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _bad(path, f"its manifest is not valid JSON ({e})") from e
    rec = doc.get("recording")
    if not isinstance(rec, dict):
        raise _bad(path, "the manifest holds no recording")
    return rec, tensors


def _tensor(z: zipfile.ZipFile, path: Path, spec: Any) -> torch.Tensor:
    try:
        file, name, shape = spec["file"], spec["dtype"], [int(n) for n in spec["shape"]]
    except (KeyError, TypeError, ValueError) as e:
        raise _bad(path, f"a tensor entry is malformed ({e})") from None
    dtype = _DTYPES.get(name)
    if dtype is None:
        raise _bad(path, f"a tensor has dtype {name!r}, which the format does not carry")
    try:
        data = z.read(file)
    except KeyError:
        raise _bad(path, f"the tensor file {file} is missing") from None
    numel = 1
    for n in shape:
        numel *= n
    itemsize = torch.empty((), dtype=dtype).element_size()
    if len(data) != numel * itemsize:
        raise _bad(path, f"{file} holds {len(data)} bytes, not {numel * itemsize}")
    if not numel:
        return torch.empty(shape, dtype=dtype)
    _little_endian()
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).view(dtype).reshape(shape)
