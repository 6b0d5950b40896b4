"""Tensor parallel (DTensor) on 2 gloo ranks: capture, stepping, summaries, the inspector, the
widget, recording and watching, each rank against plain torch.

The model is the one a user hit "aten.cat.default got mixed torch.Tensor and DTensor" with:
`Sequential(Linear(16, 32), ReLU, Linear(32, 8))` parallelised with `ColwiseParallel` +
`RowwiseParallel`. Both ranks run one script once (a module-scoped fixture: one spawn, bounded in
time, ports from the OS, no process left behind: tests/helpers/ranks.py); each rank asserts what
needs its live objects and prints its facts as JSON, which the tests below check.

What holds on every rank:
- stepping reaches the end; `stepper.grad(p)` of each DTensor parameter is what
  `torch.autograd.grad` returns (same local shard bit for bit, same placements);
  `compare_with_engine()` finds no difference;
- an edge's summary (kept or not) describes the local shard of its DTensor gradient and says so
  (`Summary.shard`); plain-tensor edges have no such note;
- the communication nodes (redistribute, to_local, from_local) are drawn as "communication" with
  the layouts they move between in the inspector (and the Formula tab's note);
- `aw.record` changes no gradient and its edge summaries are the stepper's; `aw.watch`'s series of
  a TP parameter is the norm of this rank's local gradient of that step.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from tests.helpers.ranks import gloo_only, run_ranks

pytestmark = [
    gloo_only,
    pytest.mark.skipif(importlib.util.find_spec("torch.distributed.tensor") is None,
                       reason="this torch has no public DTensor (torch.distributed.tensor, "
                              "torch >= 2.5)"),
]

TIMEOUT = 150  # seconds for both ranks together, on a loaded 2-core machine

BODY = """
import json, math
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
import autograd_widget as aw
from autograd_widget.core.summary import Summary
from autograd_widget.view.inspect import formula_payload, inspect_edge, inspect_node
from autograd_widget.view.labels import display_kind, short_label
from autograd_widget.view.scene import Scene

mesh = init_device_mesh("cpu", (world,))
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
m = parallelize_module(m, mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
params = dict(m.named_parameters())
torch.manual_seed(1)  # the same input on both ranks, as tensor parallelism expects
x = torch.randn(4, 16)
loss = m(x).pow(2).mean()
ref = dict(zip(params, torch.autograd.grad(loss, list(params.values()), retain_graph=True)))
facts = {"params": {}, "edges": {}, "comm": {}, "saved": {}, "leaves": {}}

# stepping: gradients, summaries (kept and not), the engine's own check
g = aw.capture(loss, model=m)
kept = aw.Stepper(g, keep="tensors")
kept.run()
lean = aw.Stepper(g)
lean.run()
assert kept.done and lean.done
assert kept.compare_with_engine() == [], kept.compare_with_engine()
for name, p in params.items():
    got = kept.grad(p)
    assert isinstance(got, DTensor), (name, type(got))
    assert got.placements == ref[name].placements, (name, got.placements)
    assert torch.equal(got.to_local(), ref[name].to_local()), name
    assert torch.equal(lean.grad(p).to_local(), ref[name].to_local()), name
    facts["params"][name] = [str(pl) for pl in got.placements]
for e in g.edges:
    t = kept.edge_grad(e.id)
    s, s_lean = kept.edge_summary(e.id), lean.edge_summary(e.id)
    assert s == s_lean, (e.id, s, s_lean)
    if isinstance(t, DTensor):
        loc = Summary.of(t.to_local())
        assert (s.shape, s.norm, s.min, s.max, s.mean, s.values) == (
            loc.shape, loc.norm, loc.min, loc.max, loc.mean, loc.values), e.id
    facts["edges"][e.id] = {"src": g.nodes[e.src].name, "dst": g.nodes[e.dst].name,
                            "dtensor": isinstance(t, DTensor), "shard": s.shard,
                            "local": list(s.shape)}

# the drawing and the inspector
scene = Scene(g, kept)
for nid, node in g.nodes.items():
    d = inspect_node(scene, kept, nid)
    facts["comm"][nid] = {"name": node.name, "kind": display_kind(node),
                          "label": short_label(node), "communication": d.get("communication"),
                          "formula": formula_payload(g, nid)["note"],
                          "in": [e["id"] for e in d["in_edges"]],
                          "out": list(d["outgoing"])}
    if node.kind == "accumulate_grad":
        facts["leaves"][node.leaf_name] = d.get("sharding")
    for v in d["saved"]:
        if v["note"] and v["note"].startswith("local shard"):
            facts["saved"][f"{nid}.{v['name']}"] = [v["shape"], v["note"], v["summary"]["shard"]]
    for eid in d["outgoing"]:
        inspect_edge(scene, kept, eid)
mem = g.saved_memory()
assert sum(mem.values()) > 0

# the widget: stepping from Python, its standalone page
w = aw.explore(loss, model=m)
w.stepper.run()
assert w.stepper.done, w.status
w.save_html(f"{out}/tp_{rank}.html")
w.close()

# recording the engine's own backward: the same gradients, the stepper's summaries
for p in params.values():
    p.grad = None
with aw.record(loss, model=m) as rec:
    loss.backward(retain_graph=True)
assert rec.failure is None
for name, p in params.items():
    assert torch.equal(p.grad.to_local(), ref[name].to_local()), name
    assert p.grad.placements == ref[name].placements
recorded = {}
for e in rec.graph.edges:
    s = rec.edge_summary(e.id)
    if s is not None:
        recorded[e.id] = [s.norm, s.shard]
facts["recorded"] = recorded
facts["stepped"] = {e.id: [lean.edge_summary(e.id).norm, lean.edge_summary(e.id).shard]
                    for e in g.edges}

# watching two training steps: a parameter's series is its local gradient's norm
for p in params.values():
    p.grad = None
expected = {name: [] for name in params}
with aw.watch(m) as watch:
    for i in range(2):
        torch.manual_seed(10 + i)
        xi = torch.randn(4, 16)
        li = m(xi).pow(2).mean()
        gi = torch.autograd.grad(li, list(params.values()), retain_graph=True)
        for name, gr in zip(params, gi):
            expected[name].append(torch.linalg.vector_norm(gr.to_local().double()).item())
        with watch.step(li):
            li.backward()
facts["watch"] = {name: [list(map(float, watch.series(name))), expected[name]]
                  for name in params}
with open(f"{out}/facts_{rank}.json", "w") as f:
    json.dump(facts, f)
print("ok", rank, flush=True)
"""


@pytest.fixture(scope="module")
def facts(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    tmp = tmp_path_factory.mktemp("tp")
    outs = run_ranks(tmp, BODY, world=2, timeout=TIMEOUT, name="tp.py")
    assert all("ok" in o for o in outs), outs
    return [json.loads((tmp / f"facts_{r}.json").read_text()) for r in range(2)]


def test_stepping_gives_torchs_dtensor_gradients_on_every_rank(facts):
    # (asserted on each rank against torch.autograd.grad; here: the placements TP gives)
    for f in facts:
        assert f["params"] == {"0.weight": ["S(0)"], "0.bias": ["S(0)"],
                               "2.weight": ["S(1)"], "2.bias": ["R"]}  # fmt: skip


def test_summaries_describe_the_local_shard_and_say_so(facts):
    for f in facts:
        edges = f["edges"].values()
        dt = [e for e in edges if e["dtensor"]]
        assert dt and all(e["shard"] and e["shard"].startswith("local shard ") for e in dt)
        assert all(e["shard"] is None for e in edges if not e["dtensor"])
        # a column-sharded activation's gradient: half of [4, 32] on each of the 2 ranks
        sharded = [e for e in dt if "of a DTensor [4, 32], S(1) on mesh (2,) cpu" in e["shard"]]
        assert sharded and all(e["local"] == [4, 16] for e in sharded)
        # the first layer's weight gradient (into TBackward0): S(0) rows 16 of 32
        assert any(e["shard"] == "local shard [16, 16] of a DTensor [32, 16], S(0) on mesh (2,) cpu"
                   for e in dt)
    for f in facts:  # saved DTensors (Addmm's mat1/mat2): the local shard, saying so
        assert len(f["saved"]) >= 3, f["saved"]
        for shape, note, summary_note in f["saved"].values():
            assert note == summary_note and note.startswith(f"local shard {shape} of a DTensor")


def test_communication_nodes_are_drawn_apart_with_their_layouts(facts):
    for f in facts:
        comm = {nid: c for nid, c in f["comm"].items() if c["kind"] == "communication"}
        names = sorted(c["name"] for c in comm.values())
        assert names == ["RedistributeBackward", "RedistributeBackward",
                         "_FromTorchTensorBackward", "_ToTorchTensorBackward",
                         "_ToTorchTensorBackward"], names  # fmt: skip
        assert all(c["kind"] != "communication" for c in f["comm"].values()
                   if c["name"] not in names)
        labels = {c["name"]: c["label"] for c in comm.values()}
        assert labels == {"RedistributeBackward": "redistribute", "_ToTorchTensorBackward":
                          "to_local", "_FromTorchTensorBackward": "from_local"}
        for c in comm.values():
            info = c["communication"]
            assert info is not None and info["op"] == c["label"]
            assert c["formula"] == info["note"] and c["formula"].startswith(c["label"])
        redis = [c["communication"] for c in comm.values() if c["label"] == "redistribute"]
        # RowwiseParallel's output: a partial sum all-reduced to Replicate in the forward; its
        # gradient stays Replicate (torch never makes a gradient Partial)
        partial = [r for r in redis if r["forward_from"]["placements"] == ["P(sum)"]]
        assert len(partial) == 1 and partial[0]["grad_to"]["placements"] == ["R"]
        assert partial[0]["forward_from"]["global_shape"] == [4, 8]
        colwise = [r for r in redis if r["forward_from"]["placements"] == ["S(1)"]]
        assert len(colwise) == 1 and colwise[0]["grad_to"]["placements"] == ["S(1)"]
        # the gradient that arrives at that redistribute, and the one it returns, say their layout
        nid = next(n for n, c in comm.items() if c["communication"] is partial[0])
        assert comm[nid]["in"] and comm[nid]["out"]
        for eid in comm[nid]["in"] + comm[nid]["out"]:
            assert f["edges"][eid]["shard"].endswith(", R on mesh (2,) cpu"), eid
        frm = next(c["communication"] for c in comm.values() if c["label"] == "from_local")
        assert frm["forward_to"]["placements"] in (["S(1)"], ["S(-1)"])
        assert frm["forward_to"]["mesh_shape"] == [2]


def test_inspector_shows_a_tp_parameters_layout(facts):
    for f in facts:
        w = f["leaves"]["0.weight"]
        assert w["param"] == "0.weight" and w["placements"] == ["S(0)"]
        assert w["global_shape"] == [32, 16] and w["local_shape"] == [16, 16]
        assert w["mesh_shape"] == [2] and "local shard" in w["note"]
        assert f["leaves"]["2.bias"]["placements"] == ["R"]
        assert f["leaves"]["2.bias"]["local_shape"] == [8]


def test_recording_matches_stepping(facts):
    for f in facts:
        assert f["recorded"]
        for eid, (norm, shard) in f["recorded"].items():
            assert f["stepped"][eid] == [norm, shard], eid


def test_watch_series_is_the_local_shards_gradient_norm(facts):
    for f in facts:
        for name, (series, expected) in f["watch"].items():
            assert series == pytest.approx(expected, rel=1e-5), name
    # sharded parameters' local norms differ between the ranks; the replicated bias's agree
    a, b = (f["watch"]["0.weight"][0] for f in facts)
    assert a != pytest.approx(b)
    ra, rb = (f["watch"]["2.bias"][0] for f in facts)
    assert ra == pytest.approx(rb, rel=1e-6)
