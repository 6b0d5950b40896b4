"""Writing a file so that it is complete or absent: a temporary file beside it, then a rename.

Every file the package writes (a recording's `.awrec`, a standalone HTML page) goes through
`atomic_write`: the bytes go to a new temporary file in the target's own folder (so the rename
never crosses a file system), are flushed to disk, and the temporary file then replaces the
target in one `os.replace`. Whatever goes wrong before that (a title that cannot be encoded, a
full disk, Ctrl-C), the previous file stays as it was and the temporary file is removed.

Permissions are what a plain `open(path, "w")` gives: a new file gets 0o666 less the umask, a
file that is replaced keeps its own mode.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = ["atomic_write", "write_bytes", "write_text"]

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)


def _temporary(target: Path) -> tuple[Path, int]:
    """A new temporary file beside `target` (a name nobody else holds), opened for writing."""
    for _ in range(100):
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        try:
            return tmp, os.open(tmp, _FLAGS, 0o666)
        except FileExistsError:
            continue
    raise FileExistsError(f"could not create a temporary file beside {target}")


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """A binary file object whose content replaces `path` when the block ends without error.

    Guarantees: `path` holds either its old content or the complete new one, never a part;
    on any exception (KeyboardInterrupt included) the temporary file is removed and the
    exception propagates. The folder must exist.

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
    """
    target = Path(os.fspath(path))
    tmp, fd = _temporary(target)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        with contextlib.suppress(OSError):  # keep the mode of the file we replace
            old = os.stat(target)
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
