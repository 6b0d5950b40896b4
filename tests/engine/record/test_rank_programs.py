"""Real programs on 2 gloo ranks, every rank's files read together: a NaN born on rank 1 found from
all ranks' watches, the rank whose own backward raised found from all ranks' recordings.

Bounded: tests/helpers/ranks.py (OS ports, one timeout, no process left); the ranks that wait on a
dead peer use a process group with a 20 s timeout (gloo also notices the closed connection)."""

from __future__ import annotations

import pytest

import autograd_widget as aw
from tests.helpers.ranks import gloo_only, run_ranks

pytestmark = [gloo_only, pytest.mark.slow]

NAN_BODY = """
from torch.nn.parallel import DistributedDataParallel as DDP
import autograd_widget as aw
torch.manual_seed(0)
model = DDP(torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
torch.manual_seed(100 + rank)
watch = aw.watch(model, path=os.path.join(out, "run_{rank}.awwatch"))
for step in range(6):
    opt.zero_grad()
    x = torch.randn(6, 4)
    d = torch.zeros(6, 1) if (rank == 1 and step == 3) else torch.ones(6, 1)  # rank 1's data
    out_ = model(x)
    loss = out_.pow(2).mean() + (out_ * d).pow(2).sum().sqrt()  # sqrt at 0 on rank 1, step 3
    with watch.step(loss):
        loss.backward()
    opt.step()
watch.close()
assert watch.warnings == [], watch.warnings
print("ok", rank, flush=True)
"""

FAIL_BODY = """
from torch.nn.parallel import DistributedDataParallel as DDP
import torch.distributed.nn.functional as dfn
import autograd_widget as aw
pg = dist.new_group(backend="gloo", timeout=datetime.timedelta(seconds=20))
in_graph = argv[0] == "allreduce"

class Boom(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, fail):
        ctx.fail = fail
        return x * 2
    @staticmethod
    def backward(ctx, g):
        if ctx.fail:
            raise RuntimeError("Boom's backward is wrong on this rank")
        return g * 2, None

torch.manual_seed(0)
model = DDP(torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)),
            process_group=pg)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
torch.manual_seed(100 + rank)
for step in range(4):
    opt.zero_grad()
    h = model(torch.randn(6, 4))
    if in_graph:  # a differentiable all-reduce: its backward is a collective inside a node
        h = dfn.all_reduce(h, group=pg)
    loss = Boom.apply(h, rank == 1 and step == 2).pow(2).mean()
    rec = aw.record(loss, model=model)
    try:
        with rec:
            loss.backward()
    except RuntimeError as e:
        rec.save(os.path.join(out, "fail_{rank}.awrec"))
        print("raised", rank, step, str(e)[:80], flush=True)
        break
    opt.step()
print("ok", rank, flush=True)
"""


def test_a_nan_born_on_rank_1_is_found_from_all_ranks_watches(tmp_path):
    outs = run_ranks(tmp_path, NAN_BODY, world=2, timeout=120)
    assert all("ok" in o for o in outs), outs
    group = aw.load_watch(tmp_path / "run_{rank}.awwatch")
    assert isinstance(group, aw.RankWatches) and group.ranks == [0, 1]
    # alone, rank 0's watch points at a later step: the NaN reached it through the all-reduce
    assert group.watch(0).first_nonfinite()[0] == 4
    assert group.watch(1).first_nonfinite()[0] == 3
    step, rank, origin = group.first_nonfinite()
    assert (step, rank) == (3, 1)
    assert group.watch(1).recording(3).graph.nodes[origin.node].name == "SqrtBackward0"
    assert origin.kind == "born" and "sqrt" in origin.cause
    r0, r1 = group.nonfinite_ranks()
    assert (r1.role, r1.node_name) == ("born", "SqrtBackward0")
    assert (r0.role, r0.step) == ("received", 4) and "rank 1" in r0.sentence
    # the local gradients differ between ranks (different data): a divergence at step 0
    assert group.divergence("module.0.weight").step == 0


@pytest.mark.parametrize("mode", ["allreduce", "ddp"])
def test_the_rank_whose_own_backward_raised_is_found_from_all_ranks_recordings(tmp_path, mode):
    outs = run_ranks(tmp_path, FAIL_BODY, world=2, args=(mode,), timeout=120)
    assert "raised 1 2 Boom's backward" in outs[1], outs
    assert "raised 0 2" in outs[0], outs  # rank 0 failed in the collective, waiting on rank 1
    group = aw.load_recording(tmp_path / "fail_{rank}.awrec")
    assert isinstance(group, aw.RankRecordings)
    rank, failure = group.first_failure()
    assert rank == 1 and group.recording(1).graph.nodes[failure.node].name == "BoomBackward"
    f0, f1 = group.failures()
    assert f1.own and not f0.own
    if mode == "allreduce":  # rank 0 failed inside its _AllReduceBackward node
        e = f0.explanation
        assert group.recording(0).graph.nodes[f0.failure.node].name == "_AllReduceBackward"
        assert e.kind == "collective" and e.peer == 1 and e.culprit == failure.node
        assert "waiting on rank 1" in e.sentence and "BoomBackward" in e.sentence
    else:  # DDP: rank 0's nodes all ran; its all-reduce at the end of backward failed
        assert group.recording(0).meta["error_type"] == "RuntimeError"
        e = f0.explanation
        assert e.kind == "collective" and e.peer == 1 and e.culprit == failure.node
        assert "waiting on rank 1" in e.sentence and "BoomBackward" in e.sentence
