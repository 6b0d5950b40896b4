"""Opening a file someone gave us: only a regular file, and never waiting on it.

A path may name a folder, a named pipe (opening it for reading blocks until a writer comes), a
device (`/dev/zero` reads forever) or a socket. The package's readers of its own file formats
(`.awrec`, `.awwatch`) open through `open_regular`, which refuses all of those with a message
naming what the path is, and opens non-blocking so a path swapped for a pipe in between never
hangs the kernel.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

__all__ = ["open_regular"]


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
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
