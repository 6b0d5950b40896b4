"""Distributed programs on NCCL and a CUDA device (issue 36): FSDP2 stepped by hand, tensor parallel
on a 1-rank mesh, and that rank's watch read back as a rank group.

World size 1 with the NCCL backend on one CUDA device, in a spawned process
(tests/helpers/ranks.py: port from the OS, one timeout, nothing left behind); `.ci/gpu` runs it
with the other `cuda`-marked tests. Skipped, saying why, without a CUDA device or without NCCL.
`AW_TEST_DEVICE=cpu` (`.ci/gpu --dry-run`) runs the same program on the CPU with gloo.

One spawn serves every test (a module-scoped fixture); the rank writes its facts as JSON:
- FSDP2: `aw.explore(loss, model=m)` builds, its stepper runs to the end; every leaf's gradient
  is `torch.autograd.grad`'s on the same leaves; leaves carry the model's names; FSDP's state is
  unchanged afterwards (the real backward and an SGD step, twice, give a never-stepped twin's
  parameters);
- tensor parallel (`ColwiseParallel` + `RowwiseParallel` on the 1-rank mesh): stepping reaches
  the end, `stepper.grad(p)` of each DTensor parameter is `torch.autograd.grad`'s (placements and
  local shard), the communication nodes are in the graph;
- `aw.watch(m, path="run_{rank}.awwatch")` under FSDP2, then `aw.load_watch("run_{rank}.awwatch")`:
  a `RankWatches` of rank 0, its steps, the model's parameter names, no NaN/Inf.

The comparisons are exact on the CPU (the engine's own kernels on the same inputs); on CUDA up to
rounding (rtol 1e-5), since a CUDA kernel may sum in another order from one call to the next.
"""

from __future__ import annotations

import importlib.util
import json
import os

import pytest
import torch

from tests.helpers.ranks import TWIN_TRAINING, run_ranks

DEVICE = os.environ.get("AW_TEST_DEVICE", "cuda")
ON_CUDA = DEVICE.startswith("cuda")
BACKEND = "nccl" if ON_CUDA else "gloo"


def _why_not() -> str | None:
    """Why this torch and machine cannot run the program on `BACKEND`, else None."""
    dist = torch.distributed
    if ON_CUDA and not torch.cuda.is_available():
        return "needs a CUDA device"
    if not dist.is_available():
        return "this torch is built without torch.distributed"
    if ON_CUDA and not dist.is_nccl_available():
        return ("needs NCCL: torch.distributed.is_nccl_available() is False on this torch "
                f"{torch.__version__}")  # fmt: skip
    if not ON_CUDA and not dist.is_gloo_available():
        return "torch.distributed with gloo is not available"
    from autograd_widget.core.fsdp import fsdp_note

    if fsdp_note() is not None:
        return str(fsdp_note())
    if importlib.util.find_spec("torch.distributed.tensor") is None:
        return "this torch has no public DTensor (torch.distributed.tensor, torch >= 2.5)"
    return None


pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(_why_not() is not None, reason=str(_why_not())),
]

TIMEOUT = 240  # seconds: NCCL's start, or gloo on a loaded CPU

BODY = TWIN_TRAINING + """
import json
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
import autograd_widget as aw

if backend == "nccl":
    dev = torch.device("cuda", torch.cuda.current_device())
else:
    dev = torch.device("cpu")
mesh = init_device_mesh(dev.type, (world,))
facts = {"backend": str(dist.get_backend()), "device": dev.type}

def same(a, b):  # exact on the CPU; on CUDA up to a kernel's summation order
    if a is None or b is None or a.dtype != b.dtype or a.shape != b.shape:
        return False
    return torch.equal(a, b) if dev.type == "cpu" else torch.allclose(a, b, rtol=1e-5, atol=1e-6)

def local(t):
    return t.to_local() if isinstance(t, DTensor) else t

def layout(t):
    return [str(p) for p in t.placements] if isinstance(t, DTensor) else None

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(8, 16)
        self.down = nn.Linear(16, 8)
    def forward(self, h):
        return h + self.down(self.up(h).relu())

def fsdp_model():
    torch.manual_seed(0)
    m = nn.Sequential(Block(), Block()).to(dev)
    for block in m:
        fully_shard(block, mesh=mesh)
    fully_shard(m, mesh=mesh)
    return m

def batch(it=0):
    torch.manual_seed(100 + it)
    return torch.randn(4, 8, device=dev)

# ---- FSDP2 stepped by hand
m = fsdp_model()
loss = m(batch()).pow(2).sum()
w = aw.explore(loss, model=m)
st, g = w.stepper, w.stepper.graph
leaves = [g.fn(i).variable for i in g.leaves]
freed = sorted(g.nodes[i].leaf_name for i, v in zip(g.leaves, leaves)
               if local(v).untyped_storage().size() == 0)
rec = st.run()
want = torch.autograd.grad(loss, leaves, retain_graph=True)
by_name = {g.nodes[i].leaf_name: st.grad(v) for i, v in zip(g.leaves, leaves)}
facts["fsdp"] = {
    "done": st.done, "error": None if rec.error is None else str(rec.error),
    "names": sorted(by_name), "freed": freed,
    "nodes": sorted({n.name for n in g.nodes.values()}),
    "grads": {g.nodes[i].leaf_name: same(st.grad(v), r) for i, v, r in zip(g.leaves, leaves, want)},
    "params": {n: same(st.grad(p), by_name[n]) and st.grad(p).shape == p.shape
               for n, p in m.named_parameters()},
}
w.close()


a, b = (train_twin(fsdp_model, batch, local, stepped) for stepped in (True, False))
facts["fsdp"]["twin"] = {n: same(a[n], b[n]) for n in b}

# ---- tensor parallel on the 1-rank mesh
torch.manual_seed(0)
t = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8)).to(dev)
t = parallelize_module(t, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
params = dict(t.named_parameters())
loss = t(batch()).pow(2).mean()
ref = dict(zip(params, torch.autograd.grad(loss, list(params.values()), retain_graph=True)))
w = aw.explore(loss, model=t)
rec = w.stepper.run()
facts["tp"] = {
    "done": w.stepper.done, "error": None if rec.error is None else str(rec.error),
    "nodes": sorted({n.name for n in w.stepper.graph.nodes.values()}),
    "params": {n: [layout(w.stepper.grad(p)), layout(ref[n]),
                   same(local(w.stepper.grad(p)), local(ref[n]))] for n, p in params.items()},
}
w.close()

# ---- this rank's watch under FSDP2, read back as a rank group
m = fsdp_model()
opt = torch.optim.SGD(m.parameters(), lr=0.1)
pattern = os.path.join(out, "run_{rank}.awwatch")
watch = aw.watch(m, path=pattern)
for it in range(2):
    loss = m(batch(it)).pow(2).sum()
    with watch.step(loss):
        loss.backward()
    opt.step()
    opt.zero_grad()
watch.close()
group = aw.load_watch(pattern)
facts["watch"] = {
    "warnings": [str(x) for x in watch.warnings],
    "type": type(group).__name__, "ranks": list(group.ranks),
    "steps": list(group.watch(0).steps),
    "first_nonfinite": None if group.first_nonfinite() is None else str(group.first_nonfinite()),
    "series": [float(v) for v in group.watch(0).series("0.up.weight")],
}
with open(f"{out}/facts_{rank}.json", "w") as f:
    json.dump(facts, f)
print("ok", rank, flush=True)
"""

NAMES = sorted(f"{b}.{lin}.{p}" for b in (0, 1) for lin in ("up", "down")
               for p in ("weight", "bias"))  # fmt: skip


@pytest.fixture(scope="module")
def facts(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("dist_cuda")
    (out,) = run_ranks(tmp, BODY, world=1, timeout=TIMEOUT, name="dist_cuda.py", backend=BACKEND)
    assert "ok 0" in out, out
    return json.loads((tmp / "facts_0.json").read_text())


def test_runs_on_the_backend_and_device_asked_for(facts):
    assert facts["backend"] == BACKEND and facts["device"] == ("cuda" if ON_CUDA else "cpu")


def test_fsdp2_stepped_by_hand_gives_the_engines_gradients_and_names(facts):
    f = facts["fsdp"]
    assert f["done"] and f["error"] is None, f["error"]
    assert f["names"] == NAMES
    # the blocks were resharded after the forward: stepping had to gather them (on NCCL there)
    assert f["freed"] == NAMES, f["freed"]
    assert "RegisterPostBackwardFunctionBackward" in f["nodes"]
    assert sorted(f["grads"]) == NAMES and all(f["grads"].values()), f["grads"]
    assert sorted(f["params"]) == NAMES and all(f["params"].values()), f["params"]


def test_fsdp2_state_is_unchanged_after_stepping(facts):
    twin = facts["fsdp"]["twin"]
    assert sorted(twin) == NAMES and all(twin.values()), twin


def test_tensor_parallel_stepping_gives_torchs_dtensor_gradients(facts):
    f = facts["tp"]
    assert f["done"] and f["error"] is None, f["error"]
    assert {"RedistributeBackward", "_FromTorchTensorBackward"} <= set(f["nodes"])
    assert sorted(f["params"]) == ["0.bias", "0.weight", "2.bias", "2.weight"]
    for name, (got, want, equal) in f["params"].items():
        assert got == want and got is not None and equal, (name, got, want)
    assert f["params"]["0.weight"][0] == ["S(0)"] and f["params"]["2.weight"][0] == ["S(1)"]


def test_the_ranks_watch_loads_as_a_rank_group(facts):
    f = facts["watch"]
    assert f["warnings"] == []
    assert f["type"] == "RankWatches" and f["ranks"] == [0]
    assert f["steps"] == [0, 1] and f["first_nonfinite"] is None
    assert len(f["series"]) == 2 and all(v > 0 for v in f["series"]), f["series"]
