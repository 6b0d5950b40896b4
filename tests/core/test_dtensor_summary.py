"""DTensor facts (core/dtensor.py) and what summaries, the summary store and saved values make of
a DTensor: this rank's local shard, saying so.

The first tests need no process group (names, layouts, notes, the `shard` field's encoding); the
last one runs on one spawned gloo rank (a DTensor needs a device mesh), bounded in time, and checks
the defect a tensor-parallel program hit: a summary batch mixing plain tensors and DTensors raised
"aten.cat.default got mixed torch.Tensor and DTensor".
"""

from __future__ import annotations

import importlib.util
import json
import pickle
from pathlib import Path

import pytest
import torch

from autograd_widget.core.dtensor import (
    Communication,
    Layout,
    communication,
    communication_op,
    describe,
    describe_layout,
    is_communication,
    is_dtensor,
    is_wrapped,
    layout,
    local_tensor,
)
from autograd_widget.core.store import SummaryStore
from autograd_widget.core.summary import Summary, summarize_one
from tests.helpers.ranks import gloo_only, run_ranks

HAS_DTENSOR = importlib.util.find_spec("torch.distributed.tensor") is not None


def test_plain_tensors_are_not_dtensors_and_stay_as_they_are():
    x = torch.ones(3, requires_grad=True)
    assert not is_dtensor(x) and not is_wrapped(x) and not is_dtensor(torch.nn.Parameter(x))
    assert local_tensor(x) is x
    assert layout(x) is None and describe(x) is None
    assert communication(x.exp().grad_fn) is None

    class DTensor(torch.Tensor):  # a user's class of the same name is not torch's DTensor
        pass

    mine = torch.ones(2).as_subclass(DTensor)
    assert not is_dtensor(mine) and local_tensor(mine) is mine


def test_communication_node_names():
    assert [communication_op(n) for n in ("RedistributeBackward", "_ToTorchTensorBackward",
                                          "_FromTorchTensorBackward")] == [
        "redistribute", "to_local", "from_local"]  # fmt: skip
    # torch 2.13's generated backward nodes of the functional collectives, and older C++ ones
    gen = "GeneratedBackwardFor__c10d_functional_{}_defaultBackward"
    for op in ("all_gather_into_tensor", "reduce_scatter_tensor", "all_to_all_single"):
        assert communication_op(gen.format(op)) == op
    assert communication_op("torch::autograd::CppNode<c10d::AllToAllSingle>") == "AllToAllSingle"
    for other in ("AddmmBackward0", "AllReduceBackward0", "MyRedistribute", "CppNode<Mine>"):
        assert not is_communication(other)


def test_layout_text_and_partial_note():
    shard = Layout((32, 16), (16, 16), ("S(0)",), (2,), None, "cpu")
    want = "local shard [16, 16] of a DTensor [32, 16], S(0) on mesh (2,) cpu"
    assert describe_layout(shard) == want
    part = Layout((4, 8), (4, 8), ("P(sum)",), (2,), None, "cpu")
    assert part.partial and "partial" in describe_layout(part) and "addend" in describe_layout(part)
    named = Layout((4,), None, ("R", "S(0)"), (2, 2), ("dp", "tp"), "cpu")
    assert named.text() == "R, S(0) on mesh dp=2, tp=2 cpu"
    assert describe_layout(named).startswith("local shard ? of a DTensor [4]")
    d = Communication("redistribute", part, None, shard, "n").as_dict()
    assert json.loads(json.dumps(d))["forward_from"]["placements"] == ["P(sum)"]


def test_summary_shard_field_encodes_only_when_set_and_round_trips():
    plain = Summary.of(torch.ones(3))
    assert plain.shard is None and "shard" not in plain.as_dict()
    note = "local shard [3] of a DTensor [6], S(0) on mesh (2,) cpu"
    s = Summary(*summarize_one(torch.ones(3)), note)
    assert s.as_dict()["shard"] == note
    back = pickle.loads(pickle.dumps(s))
    assert back == s and back.shard == note and back != plain
    # printed only where it says something: a plain tensor's summary reads as it always has
    assert "shard" not in repr(plain) and repr(plain).endswith("numel=3)")
    assert repr(s).endswith(f"numel=3, shard={note!r})")


def test_store_finite_now_still_reads_raw_summaries():
    # the store's "raw summary of every field" check now allows the optional `shard`
    store = SummaryStore()
    store.add(1, torch.full((300,), float("nan")))
    store.add(2, torch.arange(300.0))
    assert store.finite_now(1) is False and store.finite_now(2) is True


CHILD = """
import pickle
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor
import autograd_widget as aw
from autograd_widget.core.dtensor import describe, is_dtensor, layout, local_tensor
from autograd_widget.core.store import SummaryStore
from autograd_widget.core.summary import Summary, summarize, summarize_small

mesh = init_device_mesh("cpu", (world,))
torch.manual_seed(0)
big = distribute_tensor(torch.randn(40, 16), mesh, [Shard(0)])       # > SMALL_NUMEL elements
small = distribute_tensor(torch.randn(4, 8), mesh, [Replicate()])     # batched kind if plain
part = DTensor.from_local(torch.randn(2, 3), mesh, [Partial()])
plain = torch.randn(5)
res = {}
for name, t in (("big", big), ("small", small), ("part", part)):
    s = Summary.of(t)
    ref = Summary.of(t.to_local())
    assert is_dtensor(t) and local_tensor(t).shape == t.to_local().shape
    assert (s.shape, s.norm, s.min, s.max, s.mean, s.std, s.values) == (
        ref.shape, ref.norm, ref.min, ref.max, ref.mean, ref.std, ref.values), name
    res[name] = s.shard
# one batch mixing plain tensors and DTensors (what a stepper's store flushes): the defect
mixed = summarize([plain, small, torch.ones(2), big])
assert [m.shard is None for m in mixed] == [True, False, True, False]
assert mixed[0] == Summary.of(plain) and mixed[1].norm == Summary.of(small.to_local()).norm
store = SummaryStore()
store.resolver = lambda: None  # a stepper's store: eager norms for large plain tensors
for k, t in enumerate((plain, small, torch.randn(300), big, part)):
    store.add(k, t)
got = [store.get(k) for k in range(5)]
assert [g.shard is None for g in got] == [True, False, True, False, False]
assert got[3] == Summary.of(big) and got[1] == Summary.of(small)
assert pickle.loads(pickle.dumps(got[3])).shard == got[3].shard
# saved values: an op on DTensors saves DTensors; what this rank holds is the local shard
w = distribute_tensor(torch.randn(8, 6), mesh, [Replicate()]).requires_grad_()
xin = distribute_tensor(torch.randn(3, 8), mesh, [Replicate()]).requires_grad_()
h = xin * 2  # an activation: a non-leaf DTensor
out = (h @ w).sum()
g = aw.capture(out, params={"w": w})
mm = next(n for n, node in g.nodes.items() if node.name == "MmBackward0")
recs = {v.name: v for v in g.saved(mm)}
assert recs["self"].shape == (3, 8) and recs["self"].nbytes == 3 * 8 * 4
assert recs["self"].note == describe(h) and recs["self"].summary.shard == describe(h)
assert recs["mat2"].aliases == ["parameter w (the very object)"], recs["mat2"]
mem = g.saved_memory()
assert mem[mm] == 3 * 8 * 4 + 8 * 6 * 4, dict(mem)  # the local shards, each storage once
assert g.saved_memory(exclude_leaves=True)[mm] == 3 * 8 * 4
lay = layout(part)
print("RESULT", json.dumps({"notes": res, "part_partial": lay.partial}))
"""


@gloo_only
@pytest.mark.skipif(not HAS_DTENSOR, reason="this torch has no public DTensor "
                    "(torch.distributed.tensor, torch >= 2.5)")
def test_dtensor_summaries_store_and_saved_values_on_one_rank(tmp_path: Path):
    (out,) = run_ranks(tmp_path, "import json\n" + CHILD, world=1, timeout=120)
    line = next(ln for ln in out.splitlines() if ln.startswith("RESULT "))
    res = json.loads(line[len("RESULT "):])
    notes = res["notes"]
    assert notes["big"] == "local shard [40, 16] of a DTensor [40, 16], S(0) on mesh (1,) cpu"
    assert notes["small"] == "local shard [4, 8] of a DTensor [4, 8], R on mesh (1,) cpu"
    assert notes["part"].startswith("local shard [2, 3] of a DTensor [2, 3], P(sum) on mesh (1,)")
    assert "addend" in notes["part"] and res["part_partial"] is True
