"""aw.watch under DistributedDataParallel: two ranks over gloo on 127.0.0.1, each watching its own
training into `watch_{rank}.awwatch`. DDP's allreduce hooks still fire (the parameters' `.grad`
equal across ranks), each file names its rank, and the watched parameter norms are the LOCAL
gradients each rank's backward produced (they differ where the ranks saw different data).

Bounded: each child and the whole run have timeouts; children are killed on timeout."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

import autograd_widget as aw

ROOT = Path(__file__).parents[3]
TIMEOUT = 60

CHILD = textwrap.dedent(
    """
    import os, sys, torch, torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    import autograd_widget as aw

    rank, port, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=2, timeout=__import__("datetime").timedelta(seconds=30))
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(),
                                    torch.nn.Linear(8, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(100 + rank)  # different data per rank
    w = aw.watch(model, path=os.path.join(out, "watch_{rank}.awwatch"))
    for step in range(3):
        opt.zero_grad()
        loss = model(torch.randn(6, 4)).pow(2).mean()
        with w.step(loss):
            loss.backward()
        flat = torch.cat([p.grad.flatten() for p in model.parameters()])
        gathered = [torch.zeros_like(flat) for _ in range(2)]
        dist.all_gather(gathered, flat)
        assert torch.equal(gathered[0], gathered[1]), "DDP did not average the gradients"
        opt.step()
    w.close()
    assert w.warnings == [], w.warnings
    dist.destroy_process_group()
    print("ok", rank, w.path, flush=True)
    os._exit(0)  # skip the interpreter's teardown (gloo threads; see test_recorder_ddp.py)
    """
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(
    not torch.distributed.is_available() or not torch.distributed.is_gloo_available(),
    reason="torch.distributed with gloo is not available",
)
def test_two_ddp_ranks_watch_their_own_local_gradients(tmp_path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    port = str(_free_port())
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    procs = [
        subprocess.Popen([sys.executable, str(script), str(rank), port, str(tmp_path)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                         cwd=ROOT)
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
    a, b = (aw.load_watch(tmp_path / f"watch_{rank}.awwatch") for rank in range(2))
    assert (a.meta["rank"], b.meta["rank"]) == (0, 1)
    assert a.meta["world_size"] == b.meta["world_size"] == 2
    assert a.steps == b.steps == [0, 1, 2]
    params = a.keys()["params"]
    assert "module.0.weight" in params  # DDP's own naming
    assert a.structures[0].graph.to_dict()["edges"] == b.structures[0].graph.to_dict()["edges"]
    for name in params:  # the local gradients, before DDP averaged them: rank-specific
        assert not np.array_equal(a.series(name), b.series(name))
    assert np.isfinite(a.series("")).all() and np.isfinite(b.series("")).all()
