"""util/regular.py: the package's file readers open only regular files and never wait on one."""

from __future__ import annotations

import os
import sys

import pytest

import autograd_widget as aw
from autograd_widget.util.regular import open_regular

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="named pipes and /dev are POSIX")


@pytest.mark.parametrize("load", [aw.load_watch, aw.load_recording], ids=["watch", "recording"])
def test_a_folder_a_device_and_a_named_pipe_are_refused_without_waiting(tmp_path, load):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)  # opening it for reading would block until a writer came
    for path, kind in ((tmp_path, "a folder"), ("/dev/zero", "a character device"),
                       (fifo, "a named pipe")):
        with pytest.raises(ValueError, match=f"is {kind}, not a"):
            load(path)
    with pytest.raises(FileNotFoundError, match=r"no (watch|recording) at"):
        load(tmp_path / "missing")


def test_a_regular_file_opens_for_binary_reading(tmp_path):
    p = tmp_path / "f.bin"
    p.write_bytes(b"\x00\x01")
    with open_regular(p, what="a file", hint="-") as f:
        assert f.read() == b"\x00\x01"
