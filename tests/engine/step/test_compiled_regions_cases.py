"""Compiled regions (issue 32) beyond the plain run, on small aot_eager models: where a NaN is
born inside a region, donated buffers (a clear refusal and how to avoid it, never a crash), the
opaque fallback when the private attributes are not there (monkeypatched away), what-if edits,
breakpoints and `aw.record` (each region one node, replayed opaque with its note)."""

from __future__ import annotations

import copy

import pytest
import torch

import autograd_widget as aw
from autograd_widget.engine.diagnose.failure import explain_failure
from autograd_widget.util import compat

BACKEND = "aot_eager"


def _compiled_node(t: torch.Tensor):
    fn = t.grad_fn
    seen = [fn]
    while seen:
        fn = seen.pop()
        if fn is not None and fn.name() == "CompiledFunctionBackward":
            return fn
        seen.extend(f for f, _ in (fn.next_functions if fn is not None else ()))
    raise AssertionError("no compiled region")


class SqrtNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sqrt(torch.relu(self.lin(x))).sum(dim=1)  # relu -> zeros -> sqrt'(0) = inf


@pytest.fixture(scope="module")
def mlp():
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.GELU(), torch.nn.Linear(6, 2))
    cm = torch.compile(m, backend=BACKEND, dynamic=False)
    x = torch.randn(3, 4)
    torch.autograd.grad(cm(x).sum(), list(m.parameters()), retain_graph=True)  # lazy bw, kept
    yield m, cm, x
    torch._dynamo.reset()


@pytest.fixture(scope="module")
def sqrt_net():
    torch.manual_seed(0)
    m = SqrtNet()
    with torch.no_grad():
        m.lin.bias.fill_(-10.0)  # every pre-activation negative: relu gives zeros
    cm = torch.compile(m, backend=BACKEND, dynamic=False)
    x = torch.randn(2, 3)
    torch.autograd.grad(cm(x).sum(), list(m.parameters()), retain_graph=True)
    return m, cm, x


@pytest.mark.usefixtures("open_regions")
def test_nan_born_inside_a_region_is_found_there(sqrt_net):
    m, cm, x = sqrt_net
    loss = cm(x).sum()
    g = aw.capture(loss, model=m)
    nid = next(iter(g.regions))
    st = aw.Stepper(g)
    st.run()
    edge, summary = st.first_nonfinite()
    assert edge.src.startswith(nid + "/") and isinstance(edge, aw.Edge)
    assert edge.id in {e.id for e in g.regions[nid].edges}
    assert summary.nan or summary.inf
    origins = st.nonfinite_origins()
    born = [o for o in origins if o.kind == "born"]
    assert born and born[0].node.startswith(nid + "/")
    assert g.node(born[0].node).name in born[0].cause
    assert st.first_birth().node == born[0].node
    # what leaves the region is the compiled node's own output: the engine's NaNs exactly
    ref = torch.autograd.grad(loss, list(m.parameters()), retain_graph=True)
    got = [st.grad(p) for p in m.parameters()]
    assert all(torch.equal(a.nan_to_num(), b.nan_to_num()) and
               torch.equal(a.isnan(), b.isnan()) for a, b in zip(got, ref))  # fmt: skip
    g.close()


@pytest.mark.usefixtures("open_regions")
def test_donated_buffers_refuse_clearly_and_the_hint_avoids_it():
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 1))
    cm = torch.compile(m, backend=BACKEND, dynamic=False)
    x = torch.randn(3, 4)
    cm(x).sum().backward()  # an ordinary training step: the backward compiles, donating
    loss = cm(x).sum()
    g = aw.capture(loss, model=m)
    nid = next(iter(g.regions))
    assert g.regions[nid].available  # the inside is readable; only calling the node is refused
    st = aw.Stepper(g)
    rec = st.run()
    assert rec.error is not None and rec.node.id == nid and st.position == st.step_index(nid)
    assert compat.DONATED_BUFFER_ERROR in rec.error
    why = st.explain_failure()
    assert why.kind == "donated"
    assert "donated_buffer = False" in why.hint and "retain_graph=True" in why.hint
    # the setting lives in a module `import torch` does not import: the hint says so
    assert "import torch._functorch.config" in why.hint
    assert explain_failure(g, nid, rec.error).kind == "donated"
    st.back()  # the stepper stays usable
    assert st.position == st.step_index(nid) - 1
    g.close()
    # The hint's way out: donated buffers off before the first compile.
    torch._dynamo.reset()
    old = torch._functorch.config.donated_buffer
    torch._functorch.config.donated_buffer = False
    try:
        assert compat.donated_buffer_config() is False
        cm = torch.compile(m, backend=BACKEND, dynamic=False)
        cm(x).sum().backward()
        loss = cm(x).sum()
        g = aw.capture(loss, model=m)
        st = aw.Stepper(g)
        assert st.run().error is None
        ref = torch.autograd.grad(loss, list(m.parameters()), retain_graph=True)
        assert all(torch.equal(st.grad(p), r) for p, r in zip(m.parameters(), ref))
        g.close()
    finally:
        torch._functorch.config.donated_buffer = old
        torch._dynamo.reset()


def _opaque(g: aw.BackwardGraph, note_part: str) -> str:
    nid = next(iter(g.regions))
    r = g.regions[nid]
    assert not r.available and r.ops == [] and r.edges == [], r
    assert note_part in r.note
    return nid


def test_opaque_fallback_without_the_private_attribute(mlp, monkeypatch):
    m, cm, x = mlp
    loss = cm(x).sum()
    cls = _compiled_node(loss)._forward_cls
    monkeypatch.delattr(cls, "_lazy_backward_info")
    g = aw.capture(loss, model=m)
    nid = _opaque(g, "keeps no `_lazy_backward_info`")
    assert torch.__version__ in g.regions[nid].note
    st = aw.Stepper(g)  # the region is one ordinary step: no op steps
    assert nid in st.order and not any("/" in s for s in st.order)
    st.run()
    ref = torch.autograd.grad(loss, list(m.parameters()), retain_graph=True)
    assert all(torch.equal(st.grad(p), r) for p, r in zip(m.parameters(), ref))
    # drawn as an ordinary node, the note in its inspector
    w = aw.explore(g)
    assert nid in w.visible
    from autograd_widget.view.compiledframes import region_note

    assert "not available" in region_note(w._session.scene.graph, nid)
    w.close()
    g.close()


@pytest.mark.parametrize(
    "what, patch, note",
    [
        ("no backward module", lambda cls: setattr(cls, "_lazy_backward_info", None),
         "kept no backward module"),
        ("a module of another kind",
         lambda cls: setattr(cls, "_lazy_backward_info", type("Info", (), {"bw_module": 3})()),
         "not an FX GraphModule"),
        ("a cache entry that cannot be rebuilt",
         lambda cls: setattr(cls, "_lazy_backward_info", type("Info", (), {
             "bw_module_fn": staticmethod(lambda: 1 / 0)})()),
         "could not be rebuilt"),
        ("no prologue", None, "lays out the compiled backward's arguments otherwise"),
    ],
)  # fmt: skip
@pytest.mark.usefixtures("open_regions")
def test_opaque_fallback_names_why(mlp, monkeypatch, what, patch, note):
    m, cm, x = mlp
    loss = cm(x).sum()
    cls = _compiled_node(loss)._forward_cls
    monkeypatch.setattr(cls, "_lazy_backward_info", cls._lazy_backward_info)  # restored after
    if what == "no prologue":  # none of the prologues util.compat knows (2.6, 2.10, 2.13)
        def no_prologue(fn):
            raise AttributeError("no prologue")

        monkeypatch.setattr(compat, "_bw_prologue", no_prologue)
    else:
        patch(cls)
    g = aw.capture(loss, model=m)
    _opaque(g, note)
    st = aw.Stepper(g)  # one ordinary step, whatever torch then does with it
    rec = st.run()
    assert rec.error is None or what == "no prologue"  # torch itself calls the prologue
    g.close()


@pytest.mark.usefixtures("open_regions")
def test_a_warm_cache_module_is_read_and_its_shapes_worked_out(mlp, monkeypatch):
    """A warm compile cache gives `CachedAutogradLazyBackwardCompileInfo(bw_module_fn)`, whose
    module has no node metadata: the shapes come from fake-tensor propagation (the real
    cache path, in fresh processes: test_compiled_cache.py)."""
    m, cm, x = mlp
    loss = cm(x).sum()
    cls = _compiled_node(loss)._forward_cls
    fresh = aw.capture(loss, model=m)
    module = cls._lazy_backward_info.bw_module

    def rebuilt():  # as the cache's deserialiser: a new module, no node metadata
        gm = copy.deepcopy(module)
        for n in gm.graph.nodes:
            n.meta = {}
        return gm

    info = type("CachedAutogradLazyBackwardCompileInfo", (),
                {"bw_module_fn": staticmethod(rebuilt)})  # fmt: skip
    monkeypatch.setattr(cls, "_lazy_backward_info", info())
    g = aw.capture(loss, model=m)
    nid = next(iter(g.regions))
    r, f = g.regions[nid], fresh.regions[nid]
    assert r.available and r.source == "cache" and f.source == "module"
    assert [(op.name, op.inputs) for op in r.ops] == [(op.name, op.inputs) for op in f.ops]
    assert r.edges == f.edges
    st = aw.Stepper(g)
    st.run()
    ref = torch.autograd.grad(loss, list(m.parameters()), retain_graph=True)
    assert all(torch.equal(st.grad(p), v) for p, v in zip(m.parameters(), ref))
    g.close()
    fresh.close()


@pytest.mark.usefixtures("open_regions")
def test_edits_inside_a_region_are_refused_and_around_it_work(mlp):
    m, cm, x = mlp
    loss = cm(x).sum()
    g = aw.capture(loss, model=m)
    nid = next(iter(g.regions))
    r = g.regions[nid]
    st = aw.Stepper(g, keep="tensors")
    inner = next(e for e in r.edges if e.src != nid)
    st.run(until=inner.src)
    with pytest.raises(ValueError, match="inside compiled region"):
        st.scale_edge_grad(inner.id, 2.0)
    st.reset()
    into = g.in_edges(nid)[0]
    st.run(until=into.src)
    st.scale_edge_grad(into.id, 2.0)  # into the region: the compiled node gets twice the grad
    st.run()
    ref = torch.autograd.grad(loss, list(m.parameters()), retain_graph=True)
    assert all(torch.allclose(st.grad(p), 2 * v) for p, v in zip(m.parameters(), ref))
    g.close()


@pytest.mark.usefixtures("open_regions")
def test_breakpoints_waiting_and_records_inside_a_region(mlp):
    m, cm, x = mlp
    loss = cm(x).sum()
    g = aw.capture(loss, model=m)
    nid = next(iter(g.regions))
    r = g.regions[nid]
    st = aw.Stepper(g)
    gelu = next(op for op in r.ops if "gelu_backward" in op.name)
    assert st.break_at(lambda n: "gelu_backward" in n.name) == [gelu.id]
    rec = st.run()
    assert st.next_node == gelu.id and rec.node.id == st.order[st.position - 1]
    assert len(st.waiting(gelu.id)) == len(gelu.inputs)
    assert all(s is not None for s in st.waiting(gelu.id))
    step = st.step()
    assert step.node == gelu and step.called and set(step.outputs) == {
        e.id for e in r.edges if e.src == gelu.id}
    assert st.step_info(st.position - 1).node == gelu.id
    probes = st.jacobian_norms([gelu.id])
    assert probes == {} and "compiled region" in st.probe_errors[gelu.id]
    g.close()


@pytest.mark.usefixtures("open_regions")
def test_record_keeps_each_region_one_node_and_replays_it_opaque(mlp, tmp_path):
    m, cm, x = mlp
    loss = cm(x).sum()
    with aw.record(loss, model=m) as rec:
        loss.backward()
    grads = [p.grad.clone() for p in m.parameters()]
    for p in m.parameters():
        p.grad = None
    loss2 = cm(x).sum()
    loss2.backward()
    assert all(torch.equal(p.grad, v) for p, v in zip(m.parameters(), grads))  # untouched
    for p in m.parameters():
        p.grad = None
    nid = next(iter(rec.graph.regions))
    r = rec.graph.regions[nid]
    assert not r.available and "aw.record keeps a compiled region as one node" in r.note
    assert rec.order.count(nid) == 1 and not any("/" in s for s in rec.order)
    assert rec.edge_summary(rec.graph.in_edges(nid)[0].id) is not None
    assert all(rec.edge_summary(e.id) is not None for e in rec.graph.out_edges(nid))
    rec.save(tmp_path / "r.awrec")
    back = aw.load_recording(tmp_path / "r.awrec")
    assert back.graph.regions[nid].note == r.note
    w = aw.explore(back)
    assert nid in w.visible and not any("/" in v for v in w.visible)
    from autograd_widget.view.inspect import formula_payload

    assert "aw.record keeps" in formula_payload(w._session.scene.graph, nid)["note"]
    w.close()


@pytest.mark.usefixtures("open_regions")
def test_dynamic_shapes_open_with_the_sizes_of_this_call():
    """A region compiled with dynamic shapes has symbolic sizes inside (issue 40: it stayed
    opaque): it opens with the sizes of this call (the saved values' real shapes stand in for
    the symbols), one compiled region for two batch sizes, each stepped bit-equal. torch
    compiles such a backward at once, donating buffers: donated buffers off (docs/compiled.md).
    """
    torch._dynamo.reset()
    old = torch._functorch.config.donated_buffer
    torch._functorch.config.donated_buffer = False
    try:
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.GELU(), torch.nn.Linear(5, 2))
        cm = torch.compile(m, backend=BACKEND, dynamic=True)
        classes = set()
        for batch in (3, 7):
            loss = cm(torch.randn(batch, 4)).sum()
            classes.add(_compiled_node(loss)._forward_cls)
            g = aw.capture(loss, model=m)
            nid = next(iter(g.regions))
            r = g.regions[nid]
            assert r.available, r.note
            shapes = {m_.shape for op in r.ops for m_ in op.inputs}
            assert (batch, 5) in shapes and (batch, 2) in shapes, shapes
            assert all(isinstance(s, int) for sh in shapes for s in sh)
            st = aw.Stepper(g)
            assert st.run().error is None and f"{nid}/0" in st.order
            ref = torch.autograd.grad(loss, list(m.parameters()), retain_graph=True)
            assert all(torch.equal(st.grad(p), v) for p, v in zip(m.parameters(), ref))
            assert st.compare_with_engine(rtol=0, atol=0) == []
            g.close()
        assert len(classes) == 1  # one compiled region served both sizes: it was symbolic
    finally:
        torch._functorch.config.donated_buffer = old
        torch._dynamo.reset()


@pytest.mark.usefixtures("open_regions")
@pytest.mark.slow
def test_max_autotune_on_cpu_steps_like_the_default_mode():
    """mode="max-autotune" is out of scope; on CPU it compiles like inductor's default mode and
    its region opens and steps the same way (on CUDA its CUDA graphs are not looked into)."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.Linear(8, 2))
    cm = torch.compile(m, mode="max-autotune", dynamic=False)
    x = torch.randn(3, 4)
    torch.autograd.grad(cm(x).sum(), list(m.parameters()), retain_graph=True)
    loss = cm(x).sum()
    g = aw.capture(loss, model=m)
    assert all(r.available for r in g.regions.values()) and g.regions
    st = aw.Stepper(g)
    assert st.run().error is None
    ref = torch.autograd.grad(loss, list(m.parameters()), retain_graph=True)
    assert all(torch.equal(st.grad(p), v) for p, v in zip(m.parameters(), ref))
    assert st.compare_with_engine() == []
    g.close()
    torch._dynamo.reset()
