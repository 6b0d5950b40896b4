"""`aw.watch(path=...)` never destroys and never loses a watch silently (issue 38;
engine/watch/awwatch_write.py): a path it cannot write is refused when the watch is made (or
at the first step, for a `{rank}` path), with the reason, never waiting on a named pipe; a full
disk raises at the step it hits (or warns once with `best_effort=True`); an existing file is
never truncated (continued only by the same run); two writers on one file (two DDP ranks
without `{rank}`) are told apart by a lock and the second is refused."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
import torch

import autograd_widget as aw
from autograd_widget.engine.watch import awwatch
from autograd_widget.engine.watch.trainstep import TrainingStep
from tests.helpers.ranks import gloo_only, run_ranks

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pipes, devices, flock: POSIX")

ROOT = Path(__file__).parents[3]


@contextlib.contextmanager
def bounded(seconds: int = 30):
    """Fail instead of hanging (a writer that opens a named pipe blocking would wait forever)."""
    def stop(*_):
        raise TimeoutError(f"still blocked after {seconds} s")

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def train(w: aw.Watch, steps: int = 1) -> None:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    for k in range(steps):
        loss = (x * (k + 1)).sum()
        with w.step(loss):
            loss.backward()


def fingerprint(path: Path) -> tuple:
    st = os.lstat(path)
    data = path.read_bytes() if stat.S_ISREG(st.st_mode) else b""
    return stat.S_IFMT(st.st_mode), st.st_rdev, st.st_ino, data


def device(folder: Path) -> Path:
    """A character device of our own (/dev/full's numbers) when we may make one, else
    /dev/full (which a non-root process cannot touch): the system's is tried only after ours
    was refused."""
    path = folder / "full.awwatch"
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    except (PermissionError, AttributeError):
        return Path("/dev/full")
    return path


def bad_paths(tmp_path: Path) -> list[tuple[Path, str]]:
    """Paths a watch cannot write, each with the reason its refusal gives."""
    folder = tmp_path / "folder.awwatch"
    folder.mkdir()
    fifo = tmp_path / "fifo.awwatch"
    os.mkfifo(fifo)
    real = tmp_path / "real.txt"
    real.write_bytes(b"what the link points at")
    link = tmp_path / "link.awwatch"
    link.symlink_to(real)
    kept = tmp_path / "kept.awwatch"
    kept.write_bytes(b"someone's data")
    cases = [(folder, "is a folder"), (fifo, "is a named pipe"), (link, "is a symbolic link"),
             (device(tmp_path), "is a character device"), (kept, "already exists"),
             (tmp_path / ("n" * 256 + ".awwatch"), "bytes long, longer than its file system"),
             (real / "w.awwatch", "is not a folder")]  # fmt: skip
    if not os.access("/proc/sys", os.W_OK):  # read-only, even for root
        cases.append((Path("/proc/sys/w.awwatch"), "is not writable"))
    return cases


def test_a_path_a_watch_cannot_write_is_refused_when_it_is_made(tmp_path):
    for path, reason in bad_paths(tmp_path):
        before = fingerprint(path) if os.path.lexists(path) else None
        with bounded(), pytest.raises(ValueError, match=reason) as e:
            aw.watch(path=path)
        assert str(path) in str(e.value) and "best_effort=True" in str(e.value)
        assert (fingerprint(path) if os.path.lexists(path) else None) == before, path
    assert (tmp_path / "real.txt").read_bytes() == b"what the link points at"
    dev_full = os.stat("/dev/full")
    with pytest.raises(ValueError, match="/dev/full is a character device"):
        aw.watch(path="/dev/full")
    assert os.stat("/dev/full")[:3] == dev_full[:3]  # mode, inode, device: still the device


def test_best_effort_warns_once_with_the_reason_and_trains_on(tmp_path):
    for path, reason in bad_paths(tmp_path):
        with bounded(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            w = aw.watch(path=path, best_effort=True)
            train(w, steps=3)
            w.close()
        said = [c for c in caught if issubclass(c.category, RuntimeWarning)]
        assert len(said) == 1 and reason in str(said[0].message), (path, caught)
        assert w.path is None and len(w.records) == 3 and str(said[0].message) in w.warnings


def test_a_rank_path_is_checked_at_its_first_step_and_a_pipe_never_waited_on(tmp_path):
    os.mkfifo(tmp_path / "run_0.awwatch")
    w = aw.watch(path=tmp_path / "run_{rank}.awwatch")  # the rank is known only at the step
    with bounded(), pytest.raises(ValueError, match=r"run_0\.awwatch is a named pipe"):
        train(w)
    assert stat.S_ISFIFO(os.lstat(tmp_path / "run_0.awwatch").st_mode)
    assert w.path is None and len(w.records) == 1  # kept in memory: watch.save can write it


class Boom(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("boom in backward")


def test_the_steps_own_error_is_not_masked_by_a_file_error(tmp_path):
    os.mkfifo(tmp_path / "run_0.awwatch")
    w = aw.watch(path=tmp_path / "run_{rank}.awwatch")
    x = torch.ones(2, requires_grad=True)
    loss = Boom.apply(x).sum()
    with bounded(), pytest.warns(RuntimeWarning, match="is a named pipe"):
        with pytest.raises(RuntimeError, match="boom in backward"):
            with w.step(loss):
                loss.backward()


FULL_DISK = textwrap.dedent(
    """
    import json, resource, signal, sys, warnings
    import torch, autograd_widget as aw
    path, limit, best = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    out = {"done": 0, "error": None}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        w = aw.watch(params={"x": x}, path=path, best_effort=best)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
        try:
            for k in range(6):
                loss = (x * (k + 1)).sum()
                with w.step(loss):
                    loss.backward()
                out["done"] += 1
        except Exception as e:
            out["error"] = [type(e).__name__, getattr(e, "errno", None), str(e)]
        resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY,) * 2)
        w.close()
    out["warnings"] = [str(c.message) for c in caught if c.category is RuntimeWarning]
    out["records"] = len(w.records)
    print(json.dumps(out), flush=True)
    """
)


def _sizes_per_step(tmp_path: Path) -> list[int]:
    """The file's size after each step of the child's run (the same run here)."""
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    path = tmp_path / "measure.awwatch"
    sizes = []
    with aw.watch(params={"x": x}, path=path) as w:
        for k in range(3):
            loss = (x * (k + 1)).sum()
            with w.step(loss):
                loss.backward()
            sizes.append(path.stat().st_size)
    return sizes


@pytest.mark.parametrize("best", [False, True], ids=["raises", "best-effort"])
def test_a_full_disk_is_never_silent_and_the_file_keeps_every_step_before_it(tmp_path, best):
    sizes = _sizes_per_step(tmp_path)
    script = tmp_path / "full.py"
    script.write_text(FULL_DISK)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    for limit, fits in ((40, 0), (sizes[1] + 10, 2)):  # the head already; the third step
        path = tmp_path / f"full_{limit}.awwatch"
        run = subprocess.run([sys.executable, str(script), str(path), str(limit), str(int(best))],
                             capture_output=True, text=True, env=env, cwd=ROOT, timeout=180)
        assert run.returncode == 0, run.stderr
        out = json.loads(run.stdout.splitlines()[-1])
        if best:
            assert out["error"] is None and out["done"] == out["records"] == 6
            assert len(out["warnings"]) == 1 and "File too large" in out["warnings"][0]
        else:
            assert out["done"] == fits and out["warnings"] == []
            kind, errno, message = out["error"]
            assert kind == "OSError" and errno == 27 and str(path) in message
            assert "best_effort=True" in message
        if fits:  # the failed record was taken back: the file loads clean
            back = aw.load_watch(path)
            assert [s.step for s in back.records] == list(range(fits)) and back.warnings == []
        else:
            assert path.stat().st_size == 0  # the head did not fit: nothing half-written


def test_an_existing_file_is_never_truncated_nor_followed(tmp_path):
    old = aw.watch(path=tmp_path / "run_0.awwatch")
    train(old, steps=2)
    old.close()
    before = (tmp_path / "run_0.awwatch").read_bytes()
    (tmp_path / "notes.txt").write_bytes(b"precious")
    (tmp_path / "other_0.awwatch").write_bytes(b"not a watch at all")
    (tmp_path / "link_0.awwatch").symlink_to(tmp_path / "notes.txt")
    for name, reason in (("run", "already holds another watch \\(run "),
                         ("other", "is not a watch file"), ("link", "is a symbolic link")):
        w = aw.watch(path=tmp_path / f"{name}_{{rank}}.awwatch")
        with pytest.raises(ValueError, match=reason) as e:
            train(w)
        assert "pass a new path" in str(e.value) or "real path" in str(e.value)
    assert (tmp_path / "run_0.awwatch").read_bytes() == before
    assert [s.step for s in aw.load_watch(tmp_path / "run_0.awwatch").records] == [0, 1]
    assert (tmp_path / "notes.txt").read_bytes() == b"precious"
    assert (tmp_path / "other_0.awwatch").read_bytes() == b"not a watch at all"


def test_only_the_same_run_continues_a_file(tmp_path):
    p = tmp_path / "w.awwatch"
    first = awwatch.Writer(p, 2, {"run": "r1"})
    first.step(TrainingStep(0, False, 1.0))
    first.close()
    again = awwatch.Writer(p, 2, {"run": "r1"})
    assert again.resumed
    again.step(TrainingStep(1, False, 2.0))
    again.close()
    assert [s.loss for s in aw.load_watch(p).records] == [1.0, 2.0]
    data = p.read_bytes()
    for every, meta, reason in ((2, {"run": "r2"}, "another watch \\(run r1"),
                                (3, {"run": "r1"}, "another watch"),
                                (2, {}, "another watch")):  # fmt: skip
        with pytest.raises(ValueError, match=reason):
            awwatch.Writer(p, every, meta)
        assert p.read_bytes() == data
    p.write_bytes(data + awwatch.step_record(TrainingStep(2, False, 3.0))[:-3])  # killed midway
    with pytest.raises(ValueError, match="ends inside a record"):
        awwatch.Writer(p, 2, {"run": "r1"})


def test_two_writers_on_one_file_the_second_is_refused(tmp_path):
    path = tmp_path / "shared.awwatch"
    a, b = aw.watch(path=path), aw.watch(path=path)  # both made before the file exists
    train(a)
    with pytest.raises(ValueError, match=r"being written by another watch.*\{rank\}"):
        train(b)
    train(a, steps=2)
    a.close()
    b.close()
    assert [s.step for s in aw.load_watch(path).records] == [0, 1, 2]


@gloo_only
def test_two_ddp_ranks_given_one_path_without_rank(tmp_path):
    outs = run_ranks(tmp_path, """
        import autograd_widget as aw
        x = torch.ones(3, requires_grad=True)
        w = aw.watch(params={"x": x}, path=os.path.join(out, "shared.awwatch"))
        dist.barrier()
        said = "wrote"
        for turn in range(2):
            if turn == rank:
                try:
                    loss = (x * 2).sum()
                    with w.step(loss):
                        loss.backward()
                except ValueError as e:
                    said = "refused " + str(e).replace("\\n", " ")
            dist.barrier()
        w.close()
        dist.barrier()
        print("result", said, flush=True)
    """)
    said = [next(ln for ln in o.splitlines() if ln.startswith("result")) for o in outs]
    assert said[0] == "result wrote"
    assert said[1].startswith("result refused") and "{rank}" in said[1], said[1]
    assert [s.step for s in aw.load_watch(tmp_path / "shared.awwatch").records] == [0]
