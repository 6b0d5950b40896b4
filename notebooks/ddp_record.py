"""Record one training step's backward on every rank of a small DistributedDataParallel job.

Run by notebook 06 (and usable alone): `python -m torch.distributed.run --nproc-per-node 2
notebooks/ddp_record.py OUT_DIR`. CPU and gloo only, 127.0.0.1: each rank trains the same model
on its own batch, records its backward with `aw.record` (DDP's all-reduce hooks fire as usual) and
saves `OUT_DIR/step_rank{rank}.awrec`. Both ranks read the same batch, except that rank 1's
copy holds one corrupted sample (a NaN feature, as a broken data loader gives): where the two
recordings differ, and where rank 1's NaN is born, is what the notebook shows.
"""

from __future__ import annotations

import os
import sys
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import autograd_widget as aw


def main(out_dir: str) -> None:
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
    rank = dist.get_rank()
    torch.manual_seed(0)  # the same weights on every rank
    model = torch.nn.Sequential(
        torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 16), torch.nn.Tanh(),
        torch.nn.Linear(16, 1),
    )
    ddp = DistributedDataParallel(model)
    torch.manual_seed(100)  # the same batch on both ranks...
    x, y = torch.randn(32, 8), torch.randn(32, 1)
    if rank == 1:
        x[3, 2] = float("nan")  # ...but one corrupted sample on rank 1
    with aw.track(model):
        pred = ddp(x)
    loss = torch.nn.functional.mse_loss(pred, y)
    with aw.record(loss, model=model) as rec:
        loss.backward()
    path = rec.save(Path(out_dir) / "step_rank{rank}.awrec")
    print(f"rank {rank}: loss {loss.item():.4f}, {len(rec.order)} nodes recorded -> {path.name}")
    dist.destroy_process_group()


if __name__ == "__main__":
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
    sys.stdout.flush()
    # skip the interpreter's teardown: threads gloo/DDP leave behind can make it abort
    # ("terminate called without an active exception") on a loaded machine
    os._exit(0)
