"""Compiled regions (issue 32, API.md "Compiled regions"): the five models of the issue, each
compiled with backend="aot_eager" and "inductor" (CPU).

For each: the regions are captured with their aten ops (ids, edges, inputs, outputs, round trip
through to_dict); stepping inside (regions="open", the default) gives every leaf gradient
bit-equal to `torch.autograd.grad` of the compiled model, summarises every internal edge, and
agrees with `compare_with_engine` (per output slot: the ops' own results against the compiled
kernels'; measured under inductor, see `test_ops_results_against_the_compiled_kernels`);
back()/reset()/keep= replay inside a region exactly; regions="closed" keeps one step per region.

Each model compiles once per backend for the whole module (module-scoped cache); every test runs
a fresh forward of its own.
"""

from __future__ import annotations

import pytest
import torch

import autograd_widget as aw
from autograd_widget.core.records import RegionEdge
from tests.helpers.compiled import (
    MODELS,
    Compiled,
    compile_model,
    leaf_grads,
    reference_grads,
)

BACKENDS = ["aot_eager", pytest.param("inductor", marks=pytest.mark.slow)]


@pytest.fixture(scope="module")
def models():
    """(backend, name) -> Compiled, compiled on first use, for this module only."""
    torch._dynamo.reset()  # other modules' compiled code must not count against the limits
    cache: dict[tuple[str, str], Compiled] = {}

    def get(backend: str, name: str) -> Compiled:
        if (backend, name) not in cache:
            cache[(backend, name)] = compile_model(name, backend)
        return cache[(backend, name)]

    yield get
    cache.clear()
    torch._dynamo.reset()


def _bit_equal(got, ref):
    assert len(got) == len(ref)
    for a, b in zip(got, ref):
        assert a is not None
        assert a.dtype == b.dtype and a.shape == b.shape
        assert torch.equal(a, b), (a - b).abs().max()


@pytest.mark.usefixtures("open_regions")
@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_regions_are_captured_with_their_ops(models, backend, name):
    c = models(backend, name)
    loss, _x = c.fresh()
    g = aw.capture(loss, model=c.model)
    compiled = [n for n in g.nodes.values() if n.name == "CompiledFunctionBackward"]
    assert len(compiled) == c.regions == len(g.regions)
    for k, (nid, r) in enumerate(g.regions.items()):
        assert r.available, r.note
        assert r.note == "" and r.index == k + 1 and r.node == nid
        assert r.ops and all(op.kind == "aten" for op in r.ops)
        assert [op.id for op in r.ops] == [f"{nid}/{i}" for i in range(len(r.ops))]
        assert all(op.name.startswith(("aten::", "prims::")) for op in r.ops)
        ids = [e.id for e in r.edges]
        assert len(set(ids)) == len(ids)
        assert all(isinstance(e, RegionEdge) and e.id == f"{e.src}:{e.output_nr}>{e.dst}:"
                   f"{e.input_nr}" for e in r.edges)  # fmt: skip
        # every input slot of every op is fed by exactly one edge
        fed = sorted((e.dst, e.input_nr) for e in r.edges)
        want = sorted((op.id, s) for op in r.ops for s in range(len(op.inputs)))
        assert fed == want
        # inputs: the saved activations and the incoming gradients, named; gradients come from
        # the node's input slots
        kinds = {i.kind for i in r.inputs}
        assert "saved" in kinds and "gradient" in kinds
        node = g.nodes[nid]
        for i in r.inputs:
            assert i.name and (i.kind != "gradient" or 0 <= i.index < len(node.inputs))
        # outputs: one per node output slot that leads somewhere, each from an op
        slots = sorted(e.output_nr for e in g.out_edges(nid))
        assert sorted(o.slot for o in r.outputs if o.src is not None) == slots
    d = g.to_dict()
    back = aw.BackwardGraph.from_dict(d)
    assert back.regions == g.regions
    assert back.node(next(iter(g.regions)) + "/0") == g.node(next(iter(g.regions)) + "/0")
    g.close()


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_stepping_inside_gives_the_engines_leaf_gradients(models, backend, name):
    c = models(backend, name)
    loss, x = c.fresh()
    g = aw.capture(loss, model=c.model)
    ref = reference_grads(c, loss, x)
    st = aw.Stepper(g)
    order = list(st.order)
    for nid, r in g.regions.items():
        k = order.index(nid)
        assert order[k + 1 : k + 1 + len(r.ops)] == [op.id for op in r.ops]
    rec = st.run()
    assert rec is not None and rec.error is None and st.done
    _bit_equal(leaf_grads(st, c, x), ref)
    sums = st.edge_summaries()
    for r in g.regions.values():
        for e in r.edges:
            assert e.id in sums, e.id
            assert st.edge_summary(e.id) is not None
    assert all(e.id in sums for e in g.edges)
    assert st.compare_with_engine() == []
    g.close()


@pytest.mark.parametrize("name", ["mlp_gelu", "transformer_block", "conv_bn_relu"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_ops_results_against_the_compiled_kernels(models, backend, name):
    """aot_eager runs the very aten ops: bit-equal. inductor fuses them into C++ kernels that
    sum and round in another order: a few ulp apart (measured on these models: at most ~1e-6
    absolute), inside torch.testing's float32 tolerance, and reported per output slot when the
    tolerance is zero."""
    c = models(backend, name)
    loss, _x = c.fresh()
    g = aw.capture(loss, model=c.model)
    st = aw.Stepper(g)
    exact = st.compare_with_engine(rtol=0.0, atol=0.0)
    assert all(d.kind == "region_output" for d in exact)
    if backend == "aot_eager":
        assert exact == []
    else:
        nid = next(iter(g.regions))
        slots = {o.slot for o in g.regions[nid].outputs}
        assert all(d.node == nid and d.slot in slots for d in exact)
        assert all(d.max_abs_diff is not None and d.max_abs_diff < 1e-5 for d in exact), exact
        assert "compiled kernels" in (exact[0].note if exact else "compiled kernels")
    assert st.compare_with_engine() == []  # default tolerances
    g.close()


@pytest.mark.usefixtures("open_regions")
@pytest.mark.parametrize("keep", ["summaries", "tensors", 2_000])
@pytest.mark.parametrize("backend", BACKENDS)
def test_back_reset_and_keep_inside_a_region(models, backend, keep):
    c = models(backend, "transformer_block")
    loss, x = c.fresh()
    g = aw.capture(loss, model=c.model)
    ref = reference_grads(c, loss, x)
    st = aw.Stepper(g, keep=keep)
    nid = next(iter(g.regions))
    first, last = st.step_index(nid + "/0"), st.step_index(f"{nid}/{len(g.regions[nid].ops) - 1}")
    mid = (first + last) // 2
    st.run(until=st.order[mid])
    rec = st.record(mid)
    assert rec.node.id == st.order[mid] and rec.node.kind == "aten"
    sums = {eid: s.norm for eid, s in st.edge_summaries().items()}
    for _ in range(3):
        st.back()
    st.run(until=st.order[mid])
    assert {eid: s.norm for eid, s in st.edge_summaries().items()} == sums
    st.back()
    assert st.position == mid
    st.run()
    _bit_equal(leaf_grads(st, c, x), ref)
    st.reset()
    assert st.position == 0 and st.edge_summaries() == {}
    st.run(until=nid)  # a region's node: its ops too
    assert st.position == last + 1
    st.run()
    _bit_equal(leaf_grads(st, c, x), ref)
    g.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_closed_regions_are_one_step(models, backend):
    c = models(backend, "graph_break")
    loss, x = c.fresh()
    g = aw.capture(loss, model=c.model)
    ref = reference_grads(c, loss, x)
    st = aw.Stepper(g, regions="closed")
    assert list(st.order) == list(aw.Stepper(g, create_graph=True).order)
    assert not any("/" in nid for nid in st.order) and len(st.order) == len(g.nodes)
    st.run()
    _bit_equal(leaf_grads(st, c, x), ref)
    assert st.compare_with_engine() == []
    with pytest.raises(ValueError, match="regions must be 'open' or 'closed'"):
        aw.Stepper(g, regions="ajar")
    g.close()
