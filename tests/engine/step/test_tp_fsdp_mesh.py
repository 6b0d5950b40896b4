"""Tensor parallel + FSDP2 on a 2-D mesh (dp x tp = 2 x 2) on 4 gloo ranks: stepping by hand.

The program large models train with: each transformer-ish block's MLP is parallelised over the
"tp" sub-mesh (`ColwiseParallel` up-projection, `RowwiseParallel` down-projection), then every
block and the root are `fully_shard`-ed over the "dp" sub-mesh. A parameter is then a DTensor
on the 2-D mesh (dp shard x tp layout); FSDP all-gathers it over "dp" for the forward into an
unsharded DTensor on the "tp" mesh, which is the graph's leaf; after the forward the blocks'
unsharded storages are freed (the root's, `reshard_after_forward` off for the root, stay).

One spawn of the 4 ranks serves every test (a module-scoped fixture; tests/helpers/ranks.py:
ports from the OS, one timeout, no process left behind). Each rank writes its facts as JSON;
the tests below check them, per rank:
- `aw.explore(loss, model=m)` builds, its stepper runs to the end, unsharding one block at a
  time and resharding all by the end (as the engine does);
- every leaf's gradient is what `torch.autograd.grad` returns for the same leaves (same type,
  same placements, the same local shard bit for bit), and `stepper.grad(p)` of the model's
  2-D parameter is its leaf's (this rank's local gradient of the whole parameter, before the
  reduce-scatter);
- leaves carry the model's parameter names;
- FSDP's state is unchanged afterwards: stepped by hand, then the real backward and an SGD step,
  twice, gives the parameters of a twin that never stepped, bit for bit.
"""

from __future__ import annotations

import importlib.util
import json
import re

import pytest

from tests.helpers.ranks import TWIN_TRAINING, gloo_only, run_ranks

try:
    from autograd_widget.core.fsdp import fsdp_note

    _NOTE = fsdp_note()
except ImportError:  # pragma: no cover
    _NOTE = "autograd_widget.core.fsdp is missing"

pytestmark = [
    gloo_only,
    pytest.mark.skipif(_NOTE is not None, reason=str(_NOTE)),
    pytest.mark.skipif(
        importlib.util.find_spec("torch.distributed.tensor") is None,
        reason="this torch has no public DTensor (torch.distributed.tensor, torch >= 2.5)",
    ),
]

WORLD = 4
TIMEOUT = 240  # seconds for the 4 ranks together, on a loaded 2-core machine

BODY = TWIN_TRAINING + """
import json
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
import autograd_widget as aw

mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))

class Block(nn.Module):  # a transformer block's MLP: up (column-parallel), down (row-parallel)
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(8, 16)
        self.down = nn.Linear(16, 8)
    def forward(self, h):
        return h + self.down(self.up(h).relu())

def make():
    torch.manual_seed(0)
    m = nn.Sequential(Block(), Block(), nn.LayerNorm(8))
    for block in (m[0], m[1]):
        parallelize_module(block, mesh["tp"], {"up": ColwiseParallel(), "down": RowwiseParallel()})
        fully_shard(block, mesh=mesh["dp"])
    fully_shard(m, mesh=mesh["dp"])  # the root: the LayerNorm, replicated over tp
    return m

def batch(it=0):  # the same data within a tp group, different data across dp
    torch.manual_seed(100 + 10 * it + mesh["dp"].get_local_rank())
    return torch.randn(4, 8)

def local(t):
    return t.to_local() if isinstance(t, DTensor) else t

def layout(t):
    return [str(p) for p in t.placements] if isinstance(t, DTensor) else None

def unsharded_now(g):  # blocks whose unsharded up-projection weight holds its storage now
    return sum(1 for i in g.leaves if g.nodes[i].leaf_name.endswith("up.weight")
               and local(g.fn(i).variable).untyped_storage().size() > 0)

facts = {}
m = make()
loss = m(batch()).pow(2).sum()
w = aw.explore(loss, model=m)
st = w.stepper
g = st.graph
leaves = [g.fn(i).variable for i in g.leaves]
facts["leaf_names"] = sorted(g.nodes[i].leaf_name for i in g.leaves)
facts["node_names"] = sorted({n.name for n in g.nodes.values()})
facts["unsharded_before"] = unsharded_now(g)
rec = st.run()
facts["done"] = st.done
facts["error"] = None if rec is None or rec.error is None else str(rec.error)
facts["unsharded_after"] = unsharded_now(g)
one = aw.Stepper(g)  # again, a step at a time: how many blocks are unsharded after each
seen = []
while not one.done:
    r = one.step()
    assert r is not None and r.error is None, r and r.error
    seen.append(unsharded_now(g))
one.close()
facts["unsharded_seen"] = sorted(set(seen))
want = torch.autograd.grad(loss, leaves, retain_graph=True)
facts["leaves"] = {}
for lid, leaf, ref in zip(g.leaves, leaves, want):
    got = st.grad(leaf)
    facts["leaves"][g.nodes[lid].leaf_name] = {
        "type": [type(got).__name__, type(ref).__name__],
        "placements": [layout(got), layout(ref)],
        "equal": got is not None and got.dtype == ref.dtype and torch.equal(local(got), local(ref)),
    }
by_name = {g.nodes[i].leaf_name: st.grad(v) for i, v in zip(g.leaves, leaves)}
facts["params"] = {}
for name, p in m.named_parameters():
    gp = st.grad(p)
    facts["params"][name] = {
        "param": [list(p.device_mesh.shape), layout(p)],
        "grad": [type(gp).__name__, layout(gp), list(gp.shape) == list(p.shape)],
        "same_as_leaf": torch.equal(local(gp), local(by_name[name])),
    }
w.close()


a, b = (train_twin(make, batch, local, stepped) for stepped in (True, False))
facts["twin"] = {n: torch.equal(a[n], b[n]) for n in b}
with open(f"{out}/facts_{rank}.json", "w") as f:
    json.dump(facts, f)
print("ok", rank, flush=True)
"""

NAMES = sorted([*(f"{b}.{lin}.{p}" for b in (0, 1) for lin in ("up", "down")
                  for p in ("weight", "bias")), "2.bias", "2.weight"])  # fmt: skip


@pytest.fixture(scope="module")
def facts(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    tmp = tmp_path_factory.mktemp("tp_fsdp")
    outs = run_ranks(tmp, BODY, world=WORLD, timeout=TIMEOUT, name="tp_fsdp.py")
    assert all(f"ok {r}" in o for r, o in enumerate(outs)), outs
    return [json.loads((tmp / f"facts_{r}.json").read_text()) for r in range(WORLD)]


def test_explore_builds_and_stepping_reaches_the_end_on_every_rank(facts):
    for rank, f in enumerate(facts):
        assert f["done"] and f["error"] is None, (rank, f["error"])
        # FSDP's bookkeeping nodes and TP's communication nodes are both in the graph
        assert {
            "RegisterPostBackwardFunctionBackward",
            "RedistributeBackward",
            "_ToTorchTensorBackward",
            "_FromTorchTensorBackward",
        } <= set(f["node_names"])


def test_stepping_unshards_one_block_at_a_time_and_reshards_all(facts):
    for rank, f in enumerate(facts):
        assert f["unsharded_before"] == 0, rank  # resharded after the forward
        assert f["unsharded_seen"] == [0, 1], (rank, f["unsharded_seen"])
        assert f["unsharded_after"] == 0, rank


def test_leaf_names_are_the_models(facts):
    for f in facts:
        assert f["leaf_names"] == NAMES


def test_gradients_are_torchs_on_every_leaf(facts):
    for rank, f in enumerate(facts):
        assert sorted(f["leaves"]) == NAMES
        for name, leaf in f["leaves"].items():
            got, ref = leaf["placements"]
            assert leaf["type"][0] == leaf["type"][1], (rank, name, leaf["type"])
            assert got == ref and leaf["equal"], (rank, name, leaf)
        # the blocks' unsharded leaves are DTensors on the tp mesh; the root's are plain
        assert f["leaves"]["0.up.weight"]["placements"][0] == ["S(0)"]
        assert f["leaves"]["1.down.weight"]["placements"][0] == ["S(1)"]
        assert f["leaves"]["0.down.bias"]["placements"][0] == ["R"]
        assert f["leaves"]["2.weight"]["type"][0] == "Tensor"


def test_stepper_grad_of_a_2d_parameter_is_its_leafs(facts):
    for rank, f in enumerate(facts):
        assert sorted(f["params"]) == NAMES
        for name, p in f["params"].items():
            assert p["same_as_leaf"] and p["grad"][2], (rank, name, p)
        # the model's parameter lives on the 2-D mesh (dp: dim 0 sharded, FSDP's strided shard
        # "_S(0, 2)" over a tp shard of dim 0; tp: TP's layout); its gradient here is the whole
        # (dp-unsharded) parameter's, laid out over tp only
        for name, tp in (("0.up.weight", "S(0)"), ("1.down.weight", "S(1)"),
                         ("0.down.bias", "R")):  # fmt: skip
            (mesh, (dp_layout, tp_layout)), grad = f["params"][name]["param"], f["params"][name]
            assert mesh == [2, 2], (name, mesh)
            assert re.fullmatch(r"_?S\(0(, \d+)?\)", dp_layout), (name, dp_layout)
            assert tp_layout == tp and grad["grad"][:2] == ["DTensor", [tp]], (name, grad)
        assert f["params"]["2.weight"]["param"] == [[2], ["S(0)"]]
        assert f["params"]["2.weight"]["grad"][:2] == ["Tensor", None]


def test_fsdp_state_is_unchanged_after_stepping(facts):
    for rank, f in enumerate(facts):
        assert sorted(f["twin"]) == NAMES
        assert all(f["twin"].values()), (rank, f["twin"])
