"""Saves never destroy (issue 38): util/atomic.py replaces only a regular file (never a device, a
named pipe, a folder, a socket, a symbolic link, nor a file a watch is appending to), cleans the
temporary files a killed save left, and saves every name the file system accepts; the same for
every save built on it (`Recording.save`, `watch.save`, `save_html`)."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
import torch

import autograd_widget as aw
from autograd_widget.util import atomic
from autograd_widget.util.atomic import (
    atomic_write,
    clean_stale_temporaries,
    temporary_name,
    write_bytes,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pipes, devices, sockets: POSIX")

ROOT = Path(__file__).parents[2]


def _fingerprint(path: Path) -> tuple:
    """What is at `path` itself (not following a link): kind, device number, inode, size."""
    st = os.lstat(path)
    return stat.S_IFMT(st.st_mode), st.st_rdev, st.st_ino, st.st_size


def _device(folder: Path, name: str) -> Path:
    """A character device of our own (the numbers of /dev/full) where we may make one (root),
    else /dev/full itself (which a non-root process cannot replace). A test checks a device of
    its own first, so that a writer that replaces devices never reaches the system's."""
    path = folder / f"full{name}"
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    except (PermissionError, AttributeError):
        return Path("/dev/full")
    return path


def _specials(folder: Path, name: str) -> list[tuple[Path, str]]:
    """A named pipe, a folder, a socket, a symbolic link to a regular file and a character
    device, all at names ending in `name`, with the word the refusal uses for each."""
    fifo = folder / f"fifo{name}"
    os.mkfifo(fifo)
    sub = folder / f"dir{name}"
    (sub / "inside").mkdir(parents=True)
    target = folder / "real.bin"
    target.write_bytes(b"the link's target")
    link = folder / f"link{name}"
    link.symlink_to(target)
    sock_path = folder / f"s{name}"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))  # the socket file stays after close
    sock.close()
    return [(fifo, "a named pipe"), (sub, "a folder"), (sock_path, "a socket"),
            (link, "a symbolic link"), (_device(folder, name), "a character device")]


@pytest.fixture
def short_tmp():
    """A folder with a short path (a UNIX socket's path is limited to ~100 bytes)."""
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="agw") as d:
        yield Path(d)


def test_a_save_never_replaces_what_is_not_a_regular_file(short_tmp):
    for path, kind in _specials(short_tmp, ".bin"):
        before = _fingerprint(path)
        with pytest.raises(ValueError, match=f"^{path} is {kind}"):
            write_bytes(path, b"new")
        assert _fingerprint(path) == before, f"{path} was changed"
    assert (short_tmp / "real.bin").read_bytes() == b"the link's target"
    assert not [p for p in short_tmp.iterdir() if p.name.endswith(".tmp")]


def test_every_save_of_the_package_refuses_them_and_dev_full_stays_a_device(short_tmp):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()
    with aw.record(loss, params={"x": x}) as rec:
        loss.backward(retain_graph=True)
    watch = aw.watch(params={"x": x})
    with watch.step(loss):
        loss.backward()
    widget = aw.explore((x * x).sum(), params={"x": x})
    for path, kind in _specials(short_tmp, ".html"):
        before = _fingerprint(path)
        for save in (watch.save, rec.save, widget.save_html):
            with pytest.raises(ValueError, match=f"is {kind}"):
                save(path)
            assert _fingerprint(path) == before
    widget.close()
    dev_full = os.stat("/dev/full")  # the system's own, now that ours was refused
    for save in (watch.save, rec.save):
        with pytest.raises(ValueError, match=r"^/dev/full is a character device, not a regular"):
            save("/dev/full")
    after = os.stat("/dev/full")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == dev_full.st_rdev
    assert after.st_ino == dev_full.st_ino


def test_a_special_file_put_in_place_during_a_save_is_not_replaced(tmp_path):
    p = tmp_path / "page.html"
    p.write_bytes(b"old")
    with pytest.raises(ValueError, match="is a named pipe"):
        with atomic_write(p) as f:
            f.write(b"new")
            p.unlink()
            os.mkfifo(p)  # swapped while the new content was being written
    assert stat.S_ISFIFO(os.lstat(p).st_mode)
    assert sorted(q.name for q in tmp_path.iterdir()) == ["page.html"]


@pytest.mark.parametrize("name", ["a" * 255, "é" * 127 + ".", "b" * 242, "c" * 250],
                         ids=["255", "254-utf8", "242", "250"])  # fmt: skip
def test_every_name_the_file_system_takes_saves(tmp_path, name):
    assert len(name.encode()) <= 255
    assert write_bytes(tmp_path / name, b"data").read_bytes() == b"data"
    write_bytes(tmp_path / name, b"again")  # replacing it too
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
    tmp = temporary_name(tmp_path / name, "0" * 8)
    assert len(tmp.encode()) <= 255 and tmp.endswith(".tmp")


def test_a_name_too_long_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match="256 bytes long, longer than its file system allows"):
        write_bytes(tmp_path / ("n" * 256), b"x")
    assert list(tmp_path.iterdir()) == []


KILLED_SAVE = textwrap.dedent(
    """
    import sys, time
    from autograd_widget.util.atomic import atomic_write
    with atomic_write(sys.argv[1]) as f:
        f.write(b"x" * 100_000); f.flush()
        print("writing", flush=True)
        time.sleep(120)  # killed here, in the middle of the save
    """
)


def _saver(tmp_path: Path, target: Path) -> subprocess.Popen:
    script = tmp_path / "saver.py"
    script.write_text(KILLED_SAVE)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, str(script), str(target)], stdout=subprocess.PIPE,
                            text=True, env=env, start_new_session=True)  # fmt: skip
    try:
        assert proc.stdout.readline().strip() == "writing"
    except BaseException:
        _stop(proc)
        raise
    return proc


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()


def _temporaries(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_the_temporary_file_of_a_killed_save_is_removed_by_the_next_save(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    killed = _saver(tmp_path, folder / "big.awrec")
    alive = _saver(tmp_path, folder / "other.awrec")
    try:
        killed_tmp = [p for p in _temporaries(folder) if p.name.startswith(".big.awrec.")]
        assert len(killed_tmp) == 1 and killed_tmp[0].stat().st_size == 100_000
        os.killpg(killed.pid, signal.SIGKILL)  # no cleanup can run: the file stays
        killed.wait(timeout=30)
        assert killed_tmp[0].exists()
        old = time.time() - 2 * atomic.STALE_DEAD_S  # both untouched for a while
        for p in _temporaries(folder):
            os.utime(p, (old, old))
        other_host = folder / ".x.awrec.aw-zzzz-1-00000000.tmp"  # not ours: no hex host
        other_host.write_bytes(b"not a name this package makes")
        mine = folder / "notes.tmp"
        mine.write_bytes(b"a user's file")
        write_bytes(folder / "next.awrec", b"saved")
        left = [p.name for p in _temporaries(folder)]
        assert killed_tmp[0].name not in left  # the dead process's leftover is gone
        assert any(n.startswith(".other.awrec.") for n in left)  # a live save is never touched
        assert other_host.name in left and mine.name in left
    finally:
        _stop(killed)
        _stop(alive)


def test_another_machines_temporary_file_is_removed_only_when_long_untouched(tmp_path):
    fresh = tmp_path / ".a.awrec.aw-0000-1-0123abcd.tmp"
    stale = tmp_path / ".b.awrec.aw-0000-1-0123abcd.tmp"
    for p in (fresh, stale):
        p.write_bytes(b"half")
    old = time.time() - 2 * atomic.STALE_OTHER_HOST_S
    os.utime(stale, (old, old))
    if temporary_name(tmp_path / "x").split("-")[1] == "0000":
        pytest.skip("this machine's own host tag is 0000")
    assert clean_stale_temporaries(tmp_path) == [stale.name]
    assert fresh.exists() and not stale.exists()


def test_a_file_a_watch_is_appending_to_is_never_replaced(tmp_path):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    path = tmp_path / "live.awwatch"
    with aw.watch(params={"x": x}, path=path) as w:
        for _ in range(2):
            loss = (x * x).sum()
            with w.step(loss):
                loss.backward()
        for save in (w.save, lambda p: write_bytes(p, b"other")):
            with pytest.raises(ValueError, match="being written right now by another writer"):
                save(path)
        loss = (x * x).sum()
        with w.step(loss):
            loss.backward()
    assert [s.step for s in aw.load_watch(path).records] == [0, 1, 2]
    assert w.save(path) == path  # closed: a plain regular file again
