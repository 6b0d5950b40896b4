"""Opening a file someone gave us: only a regular file, never waiting on it, never through a link
when we write.

A path may name a folder, a named pipe (opening it blocks until the other end comes), a device
(`/dev/zero` reads forever, `/dev/full` refuses every write) or a socket. The package's readers of
its own file formats (`.awrec`, `.awwatch`) open through `open_regular`, which refuses all of
those with a message naming what the path is, and opens non-blocking so a path swapped for a pipe
in between never hangs the kernel.

Writing is stricter: a save never replaces anything but a regular file (run as root, replacing
`/dev/full` would remove the system's device node) and never writes through a symbolic link (it
could point anywhere). `check_write_target` is the check every save makes first (util/atomic.py
and the watch's appender); `open_append` opens a file to append to under the same rule, without
truncating it, and `try_lock` takes the advisory lock that tells two writers of one file apart.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

try:  # POSIX; elsewhere two writers of one file are not detected
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["check_name", "check_write_target", "held_by_writer", "name_max", "open_append",
           "open_regular", "try_lock"]

#: NAME_MAX where the file system does not say (POSIX's usual value).
_NAME_MAX = 255


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: Path, *, what: str, hint: str) -> BinaryIO:
    """`path` opened for binary reading when it is a regular file (a symlink to one is one).

    Args:
        path: the path given.
        what: what the file should be, for messages ("a recording").
        hint: how to get one ("pass the path of an .awrec file (rec.save(...) writes one)").

    Guarantees: FileNotFoundError when nothing is there; a ValueError naming what the path is
    otherwise (a folder, a named pipe, a device, a socket), without ever waiting on it.

    Example:
        >>> open_regular(Path("/dev/null"), what="a recording", hint="pass an .awrec file")
        Traceback (most recent call last):
        ValueError: /dev/null is a character device, not a recording: pass an .awrec file
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        noun = what.removeprefix("an ").removeprefix("a ")
        raise FileNotFoundError(f"no {noun} at {path}") from None

    def refuse(mode: int) -> ValueError:
        return ValueError(f"{path} is {_kind(mode)}, not {what}: {hint}")

    if not stat.S_ISREG(st.st_mode):
        raise refuse(st.st_mode)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)  # non-blocking: if it became a pipe meanwhile, never wait
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise refuse(st.st_mode)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def name_max(folder: Path) -> int:
    """The longest file name, in bytes, the file system of `folder` accepts (255 where it does
    not say, or where `folder` does not exist yet).

    Example:
        >>> name_max(Path("/tmp")) >= 14
        True
    """
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        return _NAME_MAX


def check_name(path: Path, *, what: str) -> None:
    """Refuse (ValueError, saying the limit) a file name longer than the file system of its
    folder takes, before anything is written under it.

    Example:
        >>> check_name(Path("/tmp") / ("x" * 300), what="a watch")
        Traceback (most recent call last):
        ValueError: the file name 'xxxx...' is 300 bytes long, longer than its file system ...
    """
    limit = name_max(path.parent)
    size = len(os.fsencode(path.name))
    if size > limit:
        raise ValueError(
            f"the file name {path.name[:24] + '...'!r} is {size} bytes long, longer than its "
            f"file system allows ({limit}): {what} cannot be saved under it; pass a shorter name"
        )


def _refusal(path: Path, mode: int, what: str) -> ValueError:
    if stat.S_ISLNK(mode):
        return ValueError(
            f"{path} is a symbolic link: {what} is never written through a link (it could point "
            "at anything, a device or another file); pass the real path of a regular file, or "
            "remove the link"
        )
    return ValueError(
        f"{path} is {_kind(mode)}, not a regular file: writing {what} there would destroy it; "
        "pass the path of a new or regular file"
    )


def check_write_target(path: Path, *, what: str) -> os.stat_result | None:
    """Check that writing `what` to `path` can only create or replace a regular file: None when
    nothing is there, the target's `lstat` when it is a regular file.

    Guarantees: a ValueError naming the path and what is there when it is a symbolic link, a
    folder, a named pipe, a device or a socket (nothing is opened, so nothing waits), or when
    its name is longer than its file system allows (`check_name`); other OSErrors (a parent
    that is a regular file, ...) propagate with the path.

    Example:
        >>> check_write_target(Path("/dev/full"), what="a watch")
        Traceback (most recent call last):
        ValueError: /dev/full is a character device, not a regular file: writing a watch ...
    """
    path = Path(os.fspath(path))
    check_name(path, what=what)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        raise _refusal(path, st.st_mode, what)
    return st


def open_append(path: Path, *, what: str) -> int:
    """A file descriptor appending to `path` (created 0o666 less the umask when absent; an
    existing file is never truncated), which must be a regular file.

    Guarantees: `check_write_target`'s refusals; the open never follows a symbolic link
    (O_NOFOLLOW) and never waits (O_NONBLOCK: a named pipe swapped in meanwhile is refused, not
    waited on); the descriptor is blocking again once checked, and not inherited by children.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     p = Path(d) / "log"; _ = p.write_bytes(b"kept ")
        ...     fd = open_append(p, what="a log"); _ = os.write(fd, b"added"); os.close(fd)
        ...     p.read_bytes()
        b'kept added'
    """
    path = Path(os.fspath(path))
    check_write_target(path, what=what)
    flags = (os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
             | getattr(os, "O_BINARY", 0))  # fmt: skip
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as e:
        try:
            st = os.lstat(path)
        except OSError:
            raise e from None
        if not stat.S_ISREG(st.st_mode):  # became a link (ELOOP) or a pipe (ENXIO) meanwhile
            raise _refusal(path, st.st_mode, what) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refusal(path, st.st_mode, what)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise


def try_lock(fd: int) -> bool:
    """Take an exclusive advisory lock (`flock`) on `fd` without waiting: True when taken (held
    until the descriptor is closed), False when another open of the file holds it (another
    process, or another writer in this one). True where the platform has no `flock`.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     a = open_append(Path(d) / "f", what="f"); b = open_append(Path(d) / "f", what="f")
        ...     print(try_lock(a), try_lock(b)); os.close(a); os.close(b)
        True False
    """
    if fcntl is None:  # pragma: no cover - Windows
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def held_by_writer(path: Path) -> bool:
    """Whether another open of the regular file `path` holds an exclusive `flock` (`try_lock`):
    a writer appending to it right now, which replacing the file would cut off (its next writes
    would go to a file nobody can open). False when nothing is there or nobody holds it.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     fd = open_append(Path(d) / "f", what="f"); before = held_by_writer(Path(d) / "f")
        ...     _ = try_lock(fd); print(before, held_by_writer(Path(d) / "f")); os.close(fd)
        False True
    """
    if fcntl is None:  # pragma: no cover - Windows
        return False
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
