"""DDP on 2 gloo ranks: leaves carry `named_parameters()`'s names (the wrapper's "module." prefix
included) in the graph, a recording and a watch, and stepping by hand gives the engine's local
gradients, bit for bit (DDP's all-reduce is the engine's business: the stepper runs none)."""

from __future__ import annotations

from tests.helpers.ranks import gloo_only, run_ranks

pytestmark = [gloo_only]

BODY = """
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
import autograd_widget as aw
torch.manual_seed(0)
ddp = DDP(nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4)))
names = {n for n, _ in ddp.named_parameters()}
assert names == {"module.0.weight", "module.0.bias", "module.2.weight", "module.2.bias"}, names
torch.manual_seed(100 + rank)
x = torch.randn(5, 8)
loss = ddp(x).pow(2).sum()
g = aw.capture(loss, model=ddp)
assert {g.nodes[i].leaf_name for i in g.leaves} == names
st = aw.Stepper(g)
assert st.run().error is None and st.done
local = {n: st.grad(p) for n, p in ddp.named_parameters()}
want = torch.autograd.grad(loss, list(ddp.parameters()), retain_graph=True)
for (n, p), w in zip(ddp.named_parameters(), want):
    assert torch.equal(local[n], w), n
st.close()
with aw.record(loss, model=ddp) as rec:
    loss.backward()
assert {rec.graph.nodes[i].leaf_name for i in rec.graph.leaves} == names
w = aw.watch(ddp)
loss = ddp(x).pow(2).sum()
with w.step(loss):
    loss.backward()
assert w.series("module.0.weight")[0] > 0
print("ok")
"""


def test_ddp_leaves_are_named_and_stepped_gradients_are_local(tmp_path):
    outs = run_ranks(tmp_path, BODY, timeout=150)
    for rank, out in enumerate(outs):
        assert out.rstrip().endswith("ok"), f"rank {rank}:\n{out}"
