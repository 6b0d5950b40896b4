"""Writing the `.awwatch` file (its layout: awwatch.py): appended step by step as training runs,
or saved whole; never destroying what was at the path, never losing steps silently.

Why: a training process may be killed at any moment. `Writer` appends each completed step with
one `os.write` of one whole record, so a killed process leaves every completed step intact and
at most one truncated record at the end, which the reader drops (saying so). A write that fails
(a full disk) is taken back to the last complete record, so the file stays clean.

What `Writer` refuses, each with a ValueError naming the path and what to do:
- anything but a regular file at the path (a folder, a named pipe, a device such as `/dev/full`,
  a socket) and a symbolic link (util/regular.py's `open_append`: no truncation, no link
  followed, no wait on a pipe);
- a file another writer is appending to (an exclusive `flock` taken without waiting: two DDP
  ranks given one path without `{rank}`, or two watches on one path);
- an existing non-empty file that is not this run's: a watch file whose `HEAD` does not name
  the same run id (`meta["run"]`, each `aw.watch` draws one) and `every`, or any other file. An
  existing file is never truncated: it is appended to only when it is the same run, ends at a
  complete record, and is the same format version.

`check_target` makes the checks that need no file (the kind of what is there, the name's length,
a folder that can hold it) so that `aw.watch(path=...)` says what is wrong at once, before the
first step. `save` writes a whole watch through util/atomic.py (complete or absent, same rules).
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...util.atomic import atomic_write
from ...util.jsonsafe import encode_float
from ...util.regular import check_name, check_write_target, open_append, try_lock
from ...util.warn import warn_user
from .awtile import TileSink, fd_patch, file_sink
from .structure import Structure
from .trainstep import TrainingStep

__all__ = ["CRC", "EXTENSION", "FORMAT", "MAGIC", "RECORD", "U32", "VERSION", "Writer",
           "check_target", "head_record", "save", "step_record", "structure_record",
           "write_failed"]  # fmt: skip

FORMAT = "autograd_widget.watch"
#: (major, minor) written: 2.0, the tiles of awtile.py. A reader reads every file of the major
#: versions it knows (awwatch.py: 1 and 2; minors only add JSON fields).
VERSION = (2, 0)
#: The major versions read (and continued by a resumed `Writer`: only its own).
READS = (1, 2)
EXTENSION = ".awwatch"
MAGIC = b"AWWATCH\n"
#: A record's header: its tag (4 ASCII bytes) and payload length (u64, little-endian).
RECORD = struct.Struct("<4sQ")
#: The crc32 of a payload, after it (u32, little-endian).
CRC = struct.Struct("<I")
#: The u32 little-endian length of a step record's JSON.
U32 = struct.Struct("<I")
#: The largest HEAD record read back to check an existing file's run (a HEAD is ~300 bytes).
_MAX_HEAD = 1 << 20
_WHAT = "a watch"


def _record(tag: bytes, payload: bytes) -> bytes:
    return RECORD.pack(tag, len(payload)) + payload + CRC.pack(zlib.crc32(payload))


def _json(obj: Any) -> bytes:
    return json.dumps(obj, allow_nan=False, separators=(",", ":")).encode("utf-8")


def head_record(every: int, meta: Mapping[str, Any]) -> bytes:
    """The `HEAD` record (magic not included).

    Example:
        >>> head_record(2, {"run": "ab"})[:4]
        b'HEAD'
    """
    return _record(b"HEAD", _json({"format": FORMAT, "version": list(VERSION), "every": every,
                                   "meta": dict(meta)}))  # fmt: skip


def structure_record(sid: int, structure: Structure) -> bytes:
    """The `STRC` record of structure number `sid`.

    Example:
        >>> structure_record(0, Structure(g))[:4]
        b'STRC'
    """
    return _record(b"STRC", _json({"id": sid, "graph": structure.graph.to_dict()}))


def step_record(st: TrainingStep) -> bytes:
    """The format 1.0 `STEP` record of one training step (its arrays inside it).

    Example:
        >>> step_record(TrainingStep(0, False, 1.0))[:4]
        b'STEP'
    """
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
    return _record(b"STEP", U32.pack(len(text)) + text + arrays)


def check_target(template: str | os.PathLike) -> None:
    """Refuse, before anything is created, a path a watch could not append to: something other
    than a regular file or nothing (a folder, a named pipe, a device, a socket, a symbolic
    link), a name longer than its file system takes, a non-empty file (a new watch never writes
    into an existing file: see the module docstring), a folder that cannot hold it (its nearest
    existing ancestor is a file, or read-only). ValueError naming the path and the fix; a
    missing folder is fine (`Writer` creates it). In a `{rank}` path (the rank is not known
    yet) only the name's length and the folder are checked.

    Example:
        >>> check_target("/dev/full")
        Traceback (most recent call last):
        ValueError: /dev/full is a character device, not a regular file: writing a watch there ...
    """
    text = str(os.fspath(template))
    path = Path(text.replace("{rank}", "0"))
    check_name(path, what=_WHAT)
    folder = path.parent
    while not os.path.lexists(folder) and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise ValueError(f"{path} cannot be created: {folder} is not a folder; pass a path in a "
                         "folder")  # fmt: skip
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{path} cannot be created: {folder} is not writable (a read-only file "
                         "system or folder); pass a path in a writable folder")  # fmt: skip
    if "{rank}" in text:
        return
    st = check_write_target(path, what=_WHAT)
    if st is not None and st.st_size > 0:
        raise ValueError(
            f"{path} already exists ({st.st_size} bytes): a new watch never overwrites a file "
            "nor mixes its steps into another run's; pass a new path (under DDP put {rank} in "
            f"it: path='run_{{rank}}{EXTENSION}'), or delete {path} first if you no longer "
            "need it"
        )


def write_failed(error: Exception, *, path: object, step: int, first: bool, warn: bool) -> str:
    """Say that a watch could not write its file, never silently: raised (the error's type,
    OSError keeping its errno, with the reason and the fix) or, when `warn` (the user asked for
    best effort, or the step's own backward raised and must not be masked), a `RuntimeWarning` at
    the user's line; return the message (for `Watch.warnings`).

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     _ = write_failed(OSError(28, "No space left on device"), path="w.awwatch",
        ...                      step=3, first=False, warn=True)
        >>> str(caught[0].message)[:75]
        'the watch stopped writing w.awwatch at step 3: No space left on device. The'
        >>> write_failed(ValueError("w.awwatch is a folder"), path="w.awwatch", step=0,
        ...              first=True, warn=False)
        Traceback (most recent call last):
        ValueError: aw.watch(path=...) cannot write w.awwatch: w.awwatch is a folder. ...
    """
    if isinstance(error, OSError) and error.strerror:
        reason = error.strerror  # the errno goes with the OSError raised
    else:
        reason = str(error) if isinstance(error, ValueError) else f"{type(error).__name__}: {error}"
    if first:
        msg = f"aw.watch(path=...) cannot write {path}: {reason}. No step is saved to a file"
    else:
        msg = (f"the watch stopped writing {path} at step {step}: {reason}. The file keeps the "
               "steps before it")  # fmt: skip
    msg += "; the watch keeps every step in memory (watch.save(another_path) writes them all)"
    if warn:
        warn_user(msg, RuntimeWarning)
        return msg
    msg += ". Fix the path, or pass aw.watch(..., best_effort=True) to train on with a warning"
    if isinstance(error, OSError) and error.errno is not None:
        raise OSError(error.errno, msg) from error
    if isinstance(error, ValueError):
        raise ValueError(msg) from error
    raise RuntimeError(msg) from error


class Writer:
    """Appends a watch to `path` as it runs: the head at once, then each structure and step
    with one `os.write` of one whole record (see the module docstring for what it refuses).

    An existing file of the same run (its `HEAD` names `meta["run"]` and `every`) is continued:
    the caller then appends only what the file does not hold yet (`resumed` says so).

    Example:
        >>> import tempfile
        >>> from autograd_widget.engine.watch import awstore
        >>> with tempfile.TemporaryDirectory() as d:
        ...     w = Writer(Path(d) / "w.awwatch", 1, {}); w.step(TrainingStep(0, False, 2.0))
        ...     w.close(); head, graphs, steps, warnings = awstore.read(Path(d) / "w.awwatch")
        >>> head["every"], [s.loss for s in steps], warnings
        (1, [2.0], [])
    """

    def __init__(self, path: Path, every: int, meta: Mapping[str, Any]) -> None:
        self.path = path
        self.fd: int | None = None
        #: bytes of complete records in the file (where a failed write is taken back to)
        self.size = 0
        self.resumed = False
        self._patch_fd: int | None = None
        #: a write failed (the caller says so): closing then adds nothing to the file
        self.failed = False
        check_write_target(path, what=_WHAT)  # before creating any folder
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = open_append(path, what=_WHAT)
        try:
            if not try_lock(fd):
                raise ValueError(
                    f"{path} is being written by another watch right now (another process, e.g. "
                    "another DDP rank, or another aw.watch(path=...) in this one): two writers "
                    "would interleave their steps and the file would no longer load. Under DDP "
                    f"put {{rank}} in the path (path='run_{{rank}}{EXTENSION}': one file per "
                    "rank); otherwise give each watch its own path"
                )
            size = os.fstat(fd).st_size
            if size:
                _check_same_run(path, fd, size, every, meta)
                self.resumed = True
            self.fd, self.size = fd, size
            self._patch_fd = _patch_fd(path, fd)
            if not size:
                self._write(MAGIC + head_record(every, meta))
            self._sink = TileSink(self._write, fd_patch(self._patch_fd))
        except BaseException:
            self.fd = None
            if self._patch_fd is not None:
                os.close(self._patch_fd)
                self._patch_fd = None
            os.close(fd)
            raise

    def _write(self, data: bytes) -> int:
        """Append `data` as one write; return the byte where it starts."""
        if self.fd is None:
            raise RuntimeError(f"the watch file {self.path} is closed")
        view = memoryview(data)
        try:
            while view:
                n = os.write(self.fd, view)
                view = view[n:]
        except BaseException:
            self.failed = True
            with contextlib.suppress(OSError):  # our own torn record only: the file stays clean
                os.ftruncate(self.fd, self.size)
            raise
        self.size += len(data)
        return self.size - len(data)

    def structure(self, sid: int, structure: Structure) -> None:
        """Append structure number `sid` (before the first step that uses it).

        Example:
            >>> import tempfile
            >>> from autograd_widget.engine.watch import awstore
            >>> with tempfile.TemporaryDirectory() as d:
            ...     w = Writer(Path(d) / "w.awwatch", 1, {}); w.structure(0, Structure(g))
            ...     w.close(); awstore.read(Path(d) / "w.awwatch")[1]
            [<Structure 4 nodes, 3 edges, 2 parameters>]
        """
        self._sink.structure(sid, structure, structure_record(sid, structure))

    def step(self, st: TrainingStep) -> None:
        """Append one completed step.

        Example:
            >>> import tempfile
            >>> from autograd_widget.engine.watch import awstore
            >>> with tempfile.TemporaryDirectory() as d:
            ...     w = Writer(Path(d) / "w.awwatch", 1, {}); w.step(TrainingStep(0, False, 1.0))
            ...     w.close(); [s.step for s in awstore.read(Path(d) / "w.awwatch")[2]]
            [0]
        """
        self._sink.step(st)

    def close(self) -> None:
        """Close the file (a second call does nothing); its lock goes with it.

        Example:
            >>> import tempfile
            >>> with tempfile.TemporaryDirectory() as d:
            ...     w = Writer(Path(d) / "w.awwatch", 1, {}); w.close(); w.close(); w.fd
        """
        if self.fd is not None:
            try:
                if not self.failed:
                    self._sink.close()  # seal the open tile: its summaries, its index
            except OSError as e:  # every step stays readable: the reader walks an open tile
                warn_user(f"{self.path}: the index of its last steps could not be written "
                          f"({e.strerror or e}); every step is in the file, read one by one",
                          RuntimeWarning)  # fmt: skip
            finally:
                fd, self.fd = self.fd, None
                pfd, self._patch_fd = self._patch_fd, None
                os.close(fd)
                if pfd is not None:
                    os.close(pfd)


def _check_same_run(path: Path, fd: int, size: int, every: int, meta: Mapping[str, Any]
                    ) -> None:  # fmt: skip
    """Refuse `path` (non-empty, locked by us through `fd`) unless it is this run's watch file,
    ending at a complete record."""
    fix = (f"pass a new path (under DDP put {{rank}} in it: path='run_{{rank}}{EXTENSION}'), or "
           f"delete {path} first if you no longer need it")  # fmt: skip
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    with os.fdopen(os.open(path, flags | getattr(os, "O_BINARY", 0)), "rb", buffering=0) as f:
        if os.fstat(f.fileno())[1:3] != os.fstat(fd)[1:3]:  # (inode, device)
            raise ValueError(f"{path} changed while it was opened; {fix}")
        head = _head(f, size)
        if head is None:
            raise ValueError(f"{path} already exists and is not a watch file of this version "
                             f"({size} bytes): a watch never writes into another file; {fix}")
        theirs = head.get("meta") if isinstance(head.get("meta"), dict) else {}
        run = theirs.get("run")
        if run is None or run != meta.get("run") or head.get("every") != every:
            who = ", ".join(f"{k} {theirs[k]}" for k in ("run", "created", "rank")
                            if k in theirs)  # fmt: skip
            raise ValueError(
                f"{path} already holds another watch ({who or 'no run id'}): a watch never "
                f"overwrites a file nor mixes its steps into another run's; {fix}"
            )
        pos = len(MAGIC)
        while pos < size:  # the records' lengths only: one short read per record
            f.seek(pos)
            raw = f.read(RECORD.size)
            if len(raw) < RECORD.size:
                break
            pos += RECORD.size + RECORD.unpack(raw)[1] + CRC.size
        if pos != size:
            raise ValueError(f"{path} holds this run's steps but ends inside a record (a writer "
                             f"was stopped while appending): appending after it would leave a "
                             f"file that no longer loads; pass a new path")  # fmt: skip


def _head(f: Any, size: int) -> dict[str, Any] | None:
    """The HEAD document of a watch file open in `f`, None when it is not one this writes."""
    if f.read(len(MAGIC)) != MAGIC:
        return None
    raw = f.read(RECORD.size)
    if len(raw) < RECORD.size:
        return None
    tag, length = RECORD.unpack(raw)
    if tag != b"HEAD" or length > min(_MAX_HEAD, size):
        return None
    body = f.read(length + CRC.size)
    if len(body) != length + CRC.size or CRC.unpack(body[length:])[0] != zlib.crc32(body[:length]):
        return None
    try:
        doc = json.loads(body[:length])
    except (ValueError, RecursionError):
        return None
    ok = (isinstance(doc, dict) and doc.get("format") == FORMAT
          and isinstance(doc.get("version"), list) and doc["version"][:1] == [VERSION[0]])
    return doc if ok else None


def save(path: Path, every: int, meta: Mapping[str, Any], structures: Sequence[Structure],
         steps: Iterable[TrainingStep]) -> None:  # fmt: skip
    """Write a whole watch to `path`: beside it first, then renamed (complete or absent; only
    a regular file is replaced, see util/atomic.py).

    Example:
        >>> import tempfile
        >>> from autograd_widget.engine.watch import awstore
        >>> with tempfile.TemporaryDirectory() as d:
        ...     save(Path(d) / "w.awwatch", 2, {"rank": 0}, [], [TrainingStep(0, False, 1.0)])
        ...     awstore.read(Path(d) / "w.awwatch")[0]["meta"]
        {'rank': 0}
    """
    check_write_target(path, what=_WHAT)  # before creating any folder
    path.parent.mkdir(parents=True, exist_ok=True)
    written: set[int] = set()
    with atomic_write(path) as f:  # util/atomic.py: the one way the package writes a whole file
        start = MAGIC + head_record(every, meta)
        f.write(start)
        sink = TileSink(*file_sink(f, len(start)))
        for st in steps:
            if st.structure is not None and st.structure not in written:
                for sid in range(len(written), st.structure + 1):
                    sink.structure(sid, structures[sid], structure_record(sid, structures[sid]))
                    written.add(sid)
            sink.step(st)
        sink.close()


def _patch_fd(path: Path, fd: int) -> int:
    """A second descriptor of the file `fd` appends to, without O_APPEND, for the in-place
    writes of a tile's columns (`pwrite` on an O_APPEND descriptor appends on Linux): opened
    without following a link, checked to be the very same file."""
    flags = os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    pfd = os.open(path, flags | getattr(os, "O_BINARY", 0))
    if os.fstat(pfd)[1:3] != os.fstat(fd)[1:3]:  # (inode, device)
        os.close(pfd)
        raise ValueError(f"{path} changed while it was opened; pass a new path")
    return pfd
