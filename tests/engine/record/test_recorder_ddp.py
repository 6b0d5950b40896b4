"""Two ranks of a DistributedDataParallel model over gloo on 127.0.0.1, each recording its own
backward: DDP's allreduce hooks still fire (parameter gradients equal across ranks), each rank
saves `rec_{rank}.awrec`, and the parent compares them: the edges that carry rank-local
gradients differ when the ranks saw different data, nothing differs when they saw the same.

Bounded: each child process and the whole run have timeouts; children are killed on timeout."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import autograd_widget as aw

ROOT = Path(__file__).parents[3]
TIMEOUT = 45  # seconds for both ranks together

CHILD = textwrap.dedent(
    """
    import os, sys, torch, torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    import autograd_widget as aw

    rank, world, port, out, same = (int(sys.argv[1]), 2, sys.argv[2], sys.argv[3],
                                    sys.argv[4] == "same")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world, timeout=__import__("datetime").timedelta(seconds=30))
    torch.manual_seed(0)  # the same weights on both ranks
    model = DDP(torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(),
                                    torch.nn.Linear(8, 1)))
    torch.manual_seed(1 if same else 100 + rank)
    x = torch.randn(6, 4)
    loss = model(x).pow(2).mean()
    with aw.record(loss, model=model, keep="tensors") as rec:
        loss.backward()
    assert rec.failure is None and rec.warnings == [], rec.warnings
    path = rec.save(os.path.join(out, "rec_{rank}.awrec"))
    # DDP's hooks fired: every parameter gradient is the average over the ranks
    flat = torch.cat([p.grad.flatten() for p in model.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    assert torch.equal(gathered[0], gathered[1]), "DDP did not average the gradients"
    dist.destroy_process_group()
    print("ok", rank, path, flush=True)
    # skip the interpreter's teardown: gloo/DDP threads still joinable there make it abort
    # ("terminate called without an active exception") now and then on a loaded machine
    os._exit(0)
    """
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_ranks(tmp_path: Path, same: bool) -> list[aw.Recording]:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    port = str(_free_port())
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    mode = "same" if same else "diff"
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(rank), port, str(tmp_path), mode],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT,
        )
        for rank in range(2)
    ]
    outs = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=TIMEOUT)
            outs.append(out)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the DDP ranks did not finish within {TIMEOUT} s")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for rank, (p, out) in enumerate(zip(procs, outs)):
        assert p.returncode == 0, f"rank {rank} failed:\n{out}"
        assert f"ok {rank}" in out
    return [aw.load_recording(tmp_path / f"rec_{rank}.awrec") for rank in range(2)]


@pytest.mark.skipif(
    not torch.distributed.is_available() or not torch.distributed.is_gloo_available(),
    reason="torch.distributed with gloo is not available",
)
@pytest.mark.parametrize("same", [True, False])
def test_two_ddp_ranks_recorded_and_compared(tmp_path, same):
    a, b = _run_ranks(tmp_path, same)
    assert (a.meta["rank"], b.meta["rank"]) == (0, 1)
    assert a.meta["world_size"] == b.meta["world_size"] == 2
    assert a.order == b.order and a.passes == b.passes == 1
    diff = aw.compare_recordings(a, b)
    if same:
        assert diff == []
    else:
        # every edge below the loss carries rank-local values (the root's ones do not)
        assert diff and len(diff) >= len(a.graph.edges) - 2
        leaf_edges = {e.id for lid in a.graph.leaves for e in a.graph.in_edges(lid)}
        assert leaf_edges <= set(diff)  # the LOCAL gradients, before DDP averaged them
