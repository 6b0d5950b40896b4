"""Run a script on several gloo ranks, torchrun-style, bounded in time, leaving no process behind.

Every distributed test spawns its ranks through `run_ranks`: each rank is a fresh Python process
(`python script RANK WORLD PORT OUT *args`), the port comes from the OS, every rank and the whole
run have one timeout, and a rank still alive at the end is killed (its process group too). A
rank's script starts with `RANK_PRELUDE`, which parses those arguments and joins the process
group: gloo, or NCCL with `backend="nccl"` (rank r then on CUDA device r modulo the devices there).

Example (not run here: it spawns processes):
    outs = run_ranks(tmp_path, CHILD, world=2)   # CHILD: text that uses rank, world, out
    assert all(o.endswith("ok\\n") for o in outs)
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).parents[2]

#: Prepended to every rank's script: `rank`, `world`, `out` (a folder, str), `argv` (the extra
#: arguments), `backend` ("gloo" unless `run_ranks(backend=...)`), one process group joined with
#: a bounded timeout (NCCL: on CUDA device `rank` modulo the devices, set first), torch on one
#: thread.
RANK_PRELUDE = textwrap.dedent(
    """
    import datetime, os, sys
    import torch, torch.distributed as dist
    rank, world, port, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    argv = sys.argv[5:]
    backend = os.environ.get("AW_RANK_BACKEND", "gloo")
    torch.set_num_threads(1)
    if backend == "nccl":
        torch.cuda.set_device(rank % torch.cuda.device_count())
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=60))
    """
)

#: For a rank's script (append it to the body's text): `train_twin(make, batch, local, stepped)`,
#: two SGD steps of a fresh model `make()` on `batch(0)`, `batch(1)`, stepped by hand through the
#: widget's stepper before each real backward or not; returns every parameter's local values.
#: Equal results with and without stepping: stepping by hand left FSDP's state as it found it.
TWIN_TRAINING = textwrap.dedent(
    """
    def train_twin(make, batch, local, stepped):
        import autograd_widget as aw
        m = make()
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        for it in range(2):
            loss = m(batch(it)).pow(2).sum()
            if stepped:
                w = aw.explore(loss, model=m)
                assert w.stepper.run().error is None and w.stepper.done
                w.stepper.close()
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=False)
        return {n: local(p).clone() for n, p in m.named_parameters()}
    """
)

#: Ends a rank's script: skips the interpreter's teardown (gloo threads still joinable there make
#: it abort now and then on a loaded machine) after flushing what was printed.
RANK_EXIT = "\nsys.stdout.flush(); sys.stderr.flush(); os._exit(0)\n"

gloo_only = pytest.mark.skipif(
    not torch.distributed.is_available() or not torch.distributed.is_gloo_available(),
    reason="torch.distributed with gloo is not available",
)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that the OS says is free now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(tmp_path: Path, body: str, *, world: int = 2, args: tuple[str, ...] = (),
              timeout: float = 120.0, expect_ok: bool = True, name: str = "rank.py",
              backend: str = "gloo") -> list[str]:  # fmt: skip
    """Run `RANK_PRELUDE + body + RANK_EXIT` on `world` ranks; return each rank's output.

    `expect_ok`: fail the test (with every rank's output) when a rank exits non-zero. On timeout
    every rank is killed and the test fails saying so, with what the ranks printed. `backend`:
    the process group's ("gloo", or "nccl" where CUDA and NCCL are there)."""
    script = tmp_path / name
    script.write_text(RANK_PRELUDE + textwrap.dedent(body) + RANK_EXIT)
    port = str(free_port())
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
           "AW_RANK_BACKEND": backend}  # fmt: skip
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(rank), str(world), port, str(tmp_path), *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT,
            start_new_session=True,
        )
        for rank in range(world)
    ]
    outs: list[str] = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=timeout)
            outs.append(out)
    except subprocess.TimeoutExpired:
        _kill(procs)
        printed = [p.communicate()[0] for p in procs]
        pytest.fail(f"the {world} ranks did not finish within {timeout} s:\n" + "\n".join(
            f"--- rank {r}:\n{o}" for r, o in enumerate(printed)))
    finally:
        _kill(procs)
    if expect_ok:
        for rank, (p, out) in enumerate(zip(procs, outs)):
            assert p.returncode == 0, f"rank {rank} exited {p.returncode}:\n{out}"
    return outs


def _kill(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
