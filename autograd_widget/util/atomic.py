"""Writing a file so that it is complete or absent: a temporary file beside it, then a rename.

Every file the package writes whole (a recording's `.awrec`, a watch's `.awwatch` by
`watch.save`, a standalone HTML page) goes through `atomic_write`: the bytes go to a new
temporary file in the target's own folder (so the rename never crosses a file system), are
flushed to disk, and the temporary file then replaces the target in one `os.replace`. Whatever
goes wrong before that (a title that cannot be encoded, a full disk, Ctrl-C), the previous file
stays as it was and the temporary file is removed.

What may be replaced: only a regular file (util/regular.py's `check_write_target`, the rule
reading follows too). A folder, a named pipe, a device (`/dev/full`), a socket or a symbolic link
at the target is refused with a ValueError before anything is written, and so is a regular file
another writer holds locked (a watch appending to it: replacing it would cut that writer off).

The temporary file's name: `.<target name>.aw-<host>-<pid>-<random>.tmp` (host: 4 hex digits of
this machine's name), or `.<hash of the name>.aw-...` where the target's name is so long that the
suffix would pass the file system's limit (so every name the system accepts can be saved). A
process killed while saving (SIGKILL, a power cut: nothing can remove its file then) leaves one
behind; the next save into the same folder removes such leftovers when they are stale: written
by a process of this machine that no longer runs and untouched for `STALE_DEAD_S` seconds, or by
another machine (a shared folder) and untouched for `STALE_OTHER_HOST_S`. A live process's
temporary file is never touched.

Permissions are what a plain `open(path, "w")` gives: a new file gets 0o666 less the umask, a
file that is replaced keeps its own mode.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import socket
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from .regular import check_write_target, held_by_writer, name_max

__all__ = ["STALE_DEAD_S", "STALE_OTHER_HOST_S", "atomic_write", "clean_stale_temporaries",
           "temporary_name", "write_bytes", "write_text"]  # fmt: skip

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
#: A leftover of a dead process of this machine is removed once untouched this long (a writer
#: in another PID namespace sharing the host name keeps writing, so its file stays fresh).
STALE_DEAD_S = 10.0
#: A leftover of another machine (a shared folder: its processes cannot be seen) after this long.
STALE_OTHER_HOST_S = 3600.0
_TEMP = re.compile(r"\..*\.aw-(?P<host>[0-9a-f]{4})-(?P<pid>[0-9]{1,10})-[0-9a-f]{8}\.tmp",
                   re.DOTALL)  # fmt: skip
# the longest suffix: ".aw-" host "-" pid (10 digits at most) "-" random ".tmp", and the "."
_SUFFIX_MAX = 1 + len(".aw-") + 4 + 1 + 10 + 1 + 8 + len(".tmp")


def _host() -> str:
    return hashlib.blake2s(socket.gethostname().encode("utf-8", "replace"),
                           digest_size=2).hexdigest()  # fmt: skip


def temporary_name(target: Path, token: str = "00000000") -> str:
    """The name of the temporary file `atomic_write` writes beside `target` (`token`: its 8 random
    hex digits). Never longer than the longest name the target's file system takes when the
    target's own name fits.

    Example:
        >>> import re
        >>> re.sub(r"aw-\\w+-\\d+-", "aw-H-PID-", temporary_name(Path("/tmp/r.awrec")))
        '.r.awrec.aw-H-PID-00000000.tmp'
        >>> len(temporary_name(Path("/tmp") / ("x" * 255)).encode()) <= 255
        True
    """
    base = target.name
    if len(os.fsencode(base)) + _SUFFIX_MAX > name_max(target.parent):
        base = hashlib.blake2s(os.fsencode(base), digest_size=6).hexdigest()
    return f".{base}.aw-{_host()}-{os.getpid()}-{token}.tmp"


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True  # another thread of this process may be saving right now
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # exists under another user (or cannot be asked): treat as alive
    return True


def clean_stale_temporaries(folder: Path) -> list[str]:
    """Remove the stale temporary files earlier saves into `folder` left (see the module
    docstring for what is stale); return their names. Only this package's temporary names, only
    regular files, never a live process's; a file that cannot be removed is left (the save goes
    on).

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     dead = Path(d) / ".a.awrec.aw-0000-999999999-0123abcd.tmp"
        ...     _ = dead.write_bytes(b"half"); os.utime(dead, (0, 0))
        ...     _ = (Path(d) / "a.awrec.tmp").write_bytes(b"someone else's")
        ...     clean_stale_temporaries(Path(d)), sorted(p.name for p in Path(d).iterdir())
        (['.a.awrec.aw-0000-999999999-0123abcd.tmp'], ['a.awrec.tmp'])
    """
    removed: list[str] = []
    host, now = _host(), time.time()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        m = _TEMP.fullmatch(entry.name)
        if m is None:
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode):
                continue
            idle = now - st.st_mtime
            if m["host"] == host:
                stale = idle >= STALE_DEAD_S and not _alive(int(m["pid"]))
            else:
                stale = idle >= STALE_OTHER_HOST_S
            if stale:
                os.unlink(entry.path)
                removed.append(entry.name)
        except OSError:
            continue
    return removed


def _temporary(target: Path) -> tuple[Path, int]:
    """A new temporary file beside `target` (a name nobody else holds), opened for writing."""
    for _ in range(100):
        tmp = target.with_name(temporary_name(target, secrets.token_hex(4)))
        try:
            return tmp, os.open(tmp, _FLAGS, 0o666)
        except FileExistsError:
            continue
    raise FileExistsError(f"could not create a temporary file beside {target}")


def _check(target: Path) -> None:
    """Refuse a target that is not a regular file (or absent), or that a writer holds."""
    if check_write_target(target, what="a file") is not None and held_by_writer(target):
        raise ValueError(
            f"{target} is being written right now by another writer (a watch appending to it, "
            "aw.watch(path=...), in this process or another): replacing it would lose what "
            "that writer appends next; save to another path, or close that watch first"
        )


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """A binary file object whose content replaces `path` when the block ends without error.

    Guarantees: `path` holds either its old content or the complete new one, never a part;
    on any exception (KeyboardInterrupt included) the temporary file is removed and the
    exception propagates. The folder must exist. A target that is not a regular file (a folder,
    a named pipe, a device, a socket) or is a symbolic link raises ValueError naming it, before
    anything is written and again just before the rename; so does a name too long for the file
    system. Stale temporary files of killed saves in the folder are removed first
    (`clean_stale_temporaries`).

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     p = Path(d) / "a.txt"; _ = p.write_text("old")
        ...     try:
        ...         with atomic_write(p) as f:
        ...             _ = f.write(b"half of the new")
        ...             raise RuntimeError("disk full")
        ...     except RuntimeError:
        ...         pass
        ...     p.read_text(), sorted(q.name for q in Path(d).iterdir())
        ('old', ['a.txt'])
        >>> with atomic_write("/dev/full") as f:
        ...     _ = f.write(b"x")
        Traceback (most recent call last):
        ValueError: /dev/full is a character device, not a regular file: writing a file ther...
    """
    target = Path(os.fspath(path))
    _check(target)
    clean_stale_temporaries(target.parent)
    tmp, fd = _temporary(target)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        _check(target)  # what is there may have changed while we wrote
        with contextlib.suppress(OSError):  # keep the mode of the file we replace
            old = os.lstat(target)
            if stat.S_ISREG(old.st_mode):
                os.chmod(tmp, stat.S_IMODE(old.st_mode))
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write `data` to `path` atomically (`atomic_write`); return the path.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     write_bytes(Path(d) / "b.bin", b"\\x00\\x01").read_bytes()
        b'\\x00\\x01'
    """
    with atomic_write(path) as f:
        f.write(data)
    return Path(os.fspath(path))


def write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """Write `text` to `path` atomically; the text is encoded before anything is written, so
    a string that cannot be encoded raises (UnicodeEncodeError) and leaves `path` untouched.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     p = write_text(Path(d) / "t.html", "ok")
        ...     try:
        ...         write_text(p, "lone surrogate \\udcff")
        ...     except UnicodeEncodeError as e:
        ...         print(e.reason)
        ...     p.read_text()
        surrogates not allowed
        'ok'
    """
    return write_bytes(path, text.encode(encoding))
