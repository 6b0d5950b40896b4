"""FSDP2 (`fully_shard`) on 2 gloo ranks: stepping by hand, names, gradients, FSDP's state.

Each test spawns 2 ranks (tests/helpers/ranks.py: OS port, one timeout, nothing left behind); each
rank asserts on its own and prints "ok". The gradients are checked bit for bit against
`torch.autograd.grad` on the same graph and the same unsharded leaves: the engine's own run of the
same nodes with the same inputs, hence exact (a plain twin's gradients would differ in the last
bit wherever FSDP's bf16 cast or the all-gather changes an input's layout).
"""

from __future__ import annotations

import pytest

from tests.helpers.ranks import gloo_only, run_ranks

pytestmark = [gloo_only]

try:
    from autograd_widget.core.fsdp import fsdp_note
    _NOTE = fsdp_note()
except ImportError:  # pragma: no cover
    _NOTE = "autograd_widget.core.fsdp is missing"

needs_fsdp2 = pytest.mark.skipif(_NOTE is not None, reason=str(_NOTE))

#: A 4-layer MLP, each Linear its own FSDP module, the whole the root; `make(**kw)` builds one
#: with the same weights on every rank (seed 0) and passes `kw` to every `fully_shard`.
MODEL = """
import torch.nn as nn
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
import autograd_widget as aw

def make(checkpointed=False, **kw):
    torch.manual_seed(0)
    class Block(nn.Module):
        def __init__(self, n_in, n_out):
            super().__init__()
            self.lin = nn.Linear(n_in, n_out)
        def forward(self, h):
            if checkpointed:
                from torch.utils.checkpoint import checkpoint
                return checkpoint(self.lin, h, use_reentrant=False).tanh()
            return self.lin(h).tanh()
    m = nn.Sequential(Block(8, 16), Block(16, 16), Block(16, 16), Block(16, 4))
    for block in m:
        fully_shard(block, **kw)
    fully_shard(m, **kw)
    return m

def batch():
    torch.manual_seed(100 + rank)
    return torch.randn(6, 8)

def leaves(g):
    return [g.fn(i).variable for i in g.leaves]

def check_grads(g, st, loss):
    want = torch.autograd.grad(loss, leaves(g), retain_graph=True)
    for lid, w in zip(g.leaves, want):
        got = st.grad(leaves(g)[g.leaves.index(lid)])
        assert got is not None and got.dtype == w.dtype and torch.equal(got, w), (
            g.nodes[lid].leaf_name)

def unsharded_now(g):
    # FSDP modules whose unsharded weight (a leaf of g) holds its storage right now
    return sum(1 for i in g.leaves if g.nodes[i].leaf_name.endswith("lin.weight")
               and g.fn(i).variable.untyped_storage().size() > 0)

NAMES = {"0.lin.weight", "0.lin.bias", "1.lin.weight", "1.lin.bias", "2.lin.weight",
         "2.lin.bias", "3.lin.weight", "3.lin.bias"}
"""


def _ok(outs: list[str]) -> None:
    for rank, out in enumerate(outs):
        assert out.rstrip().endswith("ok"), f"rank {rank}:\n{out}"


@needs_fsdp2
def test_fsdp2_stepped_by_hand_reaches_the_end_with_the_engines_gradients(tmp_path):
    body = MODEL + """
m = make()
x = batch()
loss = m(x).pow(2).sum()
g = aw.capture(loss, model=m)
assert {g.nodes[i].leaf_name for i in g.leaves} == NAMES, [g.nodes[i].leaf_name for i in g.leaves]
assert any(n.name == "RegisterPostBackwardFunctionBackward" for n in g.nodes.values())
st = aw.Stepper(g, keep="summaries")
seen = []
st.add_listener(lambda s: seen.append(unsharded_now(g)))
while not st.done:
    rec = st.step()
    assert rec is not None and rec.error is None, rec and rec.error
# the engine unshards one module at a time here (each read by one node): so does the stepper
assert max(seen) <= 1, seen
assert unsharded_now(g) == 0  # all resharded once run to the end
check_grads(g, st, loss)
# stepper.grad of a sharded parameter: this rank's local gradient of the whole parameter
named = dict(m.named_parameters())
for name in NAMES:
    p = named[name]
    assert type(p).__name__ == "DTensor"
    gp = st.grad(p)
    assert type(gp) is torch.Tensor and gp.shape == p.shape, (name, type(gp), gp.shape)
# the inspector shows how a parameter is sharded
from autograd_widget.view.inspect import sharding_payload
lid = next(i for i in g.leaves if g.nodes[i].leaf_name == "1.lin.weight")
shard = sharding_payload(g, lid)
assert shard["param"] == "1.lin.weight" and shard["placements"] == ["S(0)"], shard
assert shard["global_shape"] == [16, 16] and shard["local_shape"] == [8, 16], shard
assert shard["mesh_shape"] == [2], shard
st.close()
print("ok")
"""
    _ok(run_ranks(tmp_path, body, timeout=180))


@needs_fsdp2
def test_fsdp2_state_is_unchanged_after_stepping(tmp_path):
    # Stepped by hand (then closed), then the real backward and an optimizer step: the same
    # parameters and sharded .grad, bit for bit, as a twin that never stepped.
    body = MODEL + """
def train(step_first):
    m = make()
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for it in range(2):
        loss = m(batch()).pow(2).sum()
        if step_first:
            st = aw.Stepper(aw.capture(loss, model=m))
            st.run(); assert st.done
            st.close()
        loss.backward()
        opt.step(); opt.zero_grad(set_to_none=False)
    return {n: p.to_local().clone() for n, p in m.named_parameters()}

a, b = train(True), train(False)
assert a.keys() == b.keys() == NAMES
for n in NAMES:
    assert torch.equal(a[n], b[n]), n
print("ok")
"""
    _ok(run_ranks(tmp_path, body, timeout=180))


@needs_fsdp2
def test_fsdp2_mixed_precision_and_no_reshard_after_forward(tmp_path):
    body = MODEL + """
mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
for kw in (dict(mp_policy=mp), dict(reshard_after_forward=False)):
    m = make(**kw)
    loss = m(batch()).float().pow(2).sum()
    g = aw.capture(loss, model=m)
    assert {g.nodes[i].leaf_name for i in g.leaves} == NAMES, kw
    before = unsharded_now(g)
    st = aw.Stepper(g)
    rec = st.run()
    assert st.done and rec.error is None, (kw, rec)
    assert unsharded_now(g) == before, kw  # reshard_after_forward=False: left unsharded
    check_grads(g, st, loss)  # (the engine's run: FSDP's hooks reshard after it)
    if "mp_policy" in kw:
        assert st.grad(m[0].lin.weight).dtype == torch.bfloat16
    st.close()
    loss.backward()  # FSDP's own backward still runs after stepping
    assert all(type(p.grad).__name__ == "DTensor" for p in m.parameters()), kw
print("ok")
"""
    _ok(run_ranks(tmp_path, body, timeout=180))


@needs_fsdp2
def test_fsdp2_with_activation_checkpointing(tmp_path):
    body = MODEL + """
m = make(checkpointed=True)
loss = m(batch()).pow(2).sum()
g = aw.capture(loss, model=m)
assert {g.nodes[i].leaf_name for i in g.leaves} == NAMES
st = aw.Stepper(g, keep="tensors")
rec = st.run()
assert st.done and rec.error is None, rec
got = [st.grad(t).clone() for t in leaves(g)]
st.close()
want = torch.autograd.grad(loss, leaves(g))
for lid, a, b in zip(g.leaves, got, want):
    assert torch.equal(a, b), g.nodes[lid].leaf_name
print("ok")
"""
    _ok(run_ranks(tmp_path, body, timeout=180))


@needs_fsdp2
def test_fsdp2_one_rank_stepping_alone_gets_a_bounded_clear_message(tmp_path):
    # Rank 1 never steps: rank 0's unshard waits 3 s, then says what it waits for.
    body = MODEL + """
import time
from autograd_widget.engine.step.sharded import CollectiveTimeout
m = make()
loss = m(batch()).pow(2).sum()
g = aw.capture(loss, model=m)
if rank == 0:
    st = aw.Stepper(g)
    t0 = time.monotonic()
    try:
        st.run()
    except CollectiveTimeout as exc:
        waited = time.monotonic() - t0
        msg = str(exc)
    else:
        raise AssertionError("stepping alone did not stop")
    assert waited < 30, waited
    assert "every rank must step" in msg.lower() and "3 s" in msg, msg
    assert "AUTOGRAD_WIDGET_COLLECTIVE_TIMEOUT" in msg, msg
    assert st.position < len(st.order)
print("ok")
"""
    import os

    old = os.environ.get("AUTOGRAD_WIDGET_COLLECTIVE_TIMEOUT")
    os.environ["AUTOGRAD_WIDGET_COLLECTIVE_TIMEOUT"] = "3"
    try:
        _ok(run_ranks(tmp_path, body, timeout=150))
    finally:
        if old is None:
            del os.environ["AUTOGRAD_WIDGET_COLLECTIVE_TIMEOUT"]
        else:
            os.environ["AUTOGRAD_WIDGET_COLLECTIVE_TIMEOUT"] = old


@needs_fsdp2
def test_fsdp2_names_in_recordings_and_watches(tmp_path):
    body = MODEL + """
m = make()
opt = torch.optim.SGD(m.parameters(), lr=0.1)
w = aw.watch(m)
for it in range(2):
    loss = m(batch()).pow(2).sum()
    if it == 0:
        with aw.record(loss, model=m) as rec:
            loss.backward()
        names = {rec.graph.nodes[i].leaf_name for i in rec.graph.leaves}
        assert names == NAMES, names
    else:
        with w.step(loss):
            loss.backward()
    opt.step(); opt.zero_grad()
series = w.series("0.lin.weight")
assert len(series) == 1 and series[0] > 0, series
print("ok")
"""
    _ok(run_ranks(tmp_path, body, timeout=180))
