"""Probes (issue 10): per-node Jacobian norms and what-if gradient edits.

Every expected Jacobian norm is computed HERE, independently of the package: from a closed form,
from `torch.autograd.functional.jacobian` of the forward op, or from the jacobian of the node's
backward map built with plain torch calls (`backward_map`; ||J_backward||_F = ||J_forward||_F
since the backward map is J^T). Every expected what-if gradient comes from the real engine with
a node post-hook that makes the same edit, or from a closed form.
"""

from __future__ import annotations

import json
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autograd_widget as aw
from autograd_widget.engine.step import probes
from autograd_widget.engine.step.probes import JacobianNorm
from autograd_widget.engine.step.results import LeafDiff
from autograd_widget.engine.step.stepper import EditInfo, Stepper
from tests.helpers.models import make_mlp
from tests.helpers.programs import HalfNone, Scale, build, specs

KEEPS = ["tensors", "summaries", 1]
SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]
ALL_EXACT = 10**6  # exact_max above any node in these tests: every norm exact


# --------------------------------------------------------------------------- references
def node_of(graph: aw.BackwardGraph, name: str) -> str:
    (nid,) = [n.id for n in graph.nodes.values() if n.name == name]
    return nid


def backward_map(graph: aw.BackwardGraph, nid: str):
    """(f, n): the node's gradient map as a function of its flattened, concatenated incoming
    gradients -> its outgoing gradients (reduced to each destination's shape, as the engine
    does), flattened and concatenated; n = the input length. Plain torch only."""
    fn = graph.fn(nid)
    metas = fn._input_metadata
    shapes = [tuple(m.shape) for m in metas]
    sizes = [math.prod(s) for s in shapes]

    def f(flat: torch.Tensor) -> torch.Tensor:
        parts = flat.split(sizes)
        gs = [p.reshape(s).to(m.dtype) for p, s, m in zip(parts, shapes, metas)]
        out = fn(*gs)
        out = out if isinstance(out, tuple) else (out,)
        parts = []
        for (nxt, slot), o in zip(fn.next_functions, out):
            if nxt is None or o is None:
                continue
            target = nxt._input_metadata[slot].shape
            o = o.sum_to_size(target) if len(target) else o.sum()
            parts.append(o.reshape(-1))
        return torch.cat(parts)

    return f, sum(sizes)


def jacobian_sqnorm_of_backward(graph: aw.BackwardGraph, nid: str, dtype) -> float:
    f, n = backward_map(graph, nid)
    jac = torch.autograd.functional.jacobian(f, torch.zeros(n, dtype=dtype))
    return float(jac.double().pow(2).sum())


def sqnorm_forward(fun, *inputs) -> float:
    """||J||_F^2 of `fun` w.r.t. all `inputs` (forward op, jacobian() from torch)."""
    jac = torch.autograd.functional.jacobian(fun, inputs)
    return float(sum(j.double().pow(2).sum() for j in jac))


def assert_within(got: JacobianNorm, want: float, k: float = 4.0) -> None:
    """The estimate within k standard errors (plus float rounding: an estimate on a diagonal
    Jacobian has stderr 0 and differs from the closed form only by rounding)."""
    assert not got.exact
    assert abs(got.estimate - want) <= k * got.stderr + 1e-5 * abs(want), (got, want)


def assert_exact(got: JacobianNorm, want: float) -> None:
    assert got.exact and got.stderr == 0.0, got
    assert got.estimate == pytest.approx(want, rel=1e-5), (got, want)


# --------------------------------------------------------------------------- elementwise
@pytest.mark.parametrize("n", [10, 300])
def test_exp_has_a_diagonal_jacobian_sum_of_exp_2x(n):
    x = torch.randn(n, requires_grad=True)
    y = x.exp()
    graph = aw.capture(y.sum())
    st_ = Stepper(graph)
    nid = node_of(graph, "ExpBackward0")
    got = st_.jacobian_norms([nid], seed=0)[nid]
    closed = float(torch.exp(2 * x.detach().double()).sum())
    assert sqnorm_forward(torch.exp, x.detach()) == pytest.approx(closed, rel=1e-5)
    if n <= probes.EXACT_MAX:
        assert_exact(got, closed)
    else:
        assert_within(got, closed)
        # Rademacher vectors on a diagonal Jacobian: every sample is exact, so no spread
        assert got.stderr < 1e-6 * closed


@pytest.mark.parametrize("n", [7, 200])
@pytest.mark.parametrize("c", [torch.tensor(-1.7), 2.5], ids=["tensor", "number"])
def test_multiplication_by_a_constant_is_c_squared_times_n(n, c):
    x = torch.randn(n, requires_grad=True)
    graph = aw.capture((x * c).sum())
    nid = node_of(graph, "MulBackward0")
    assert len(graph.out_edges(nid)) == 1, "the constant needs no gradient"
    got = Stepper(graph).jacobian_norms(seed=3)[nid]
    want = float(c) ** 2 * n
    assert sqnorm_forward(lambda t: t * c, x.detach()) == pytest.approx(want, rel=1e-5)
    (assert_exact if n <= probes.EXACT_MAX else assert_within)(got, want)


def test_accumulate_grad_is_the_identity_norm_numel():
    w = torch.randn(6, 5, requires_grad=True)
    graph = aw.capture((w * 2).sum(), params={"w": w})
    leaf = graph.leaves[0]
    assert Stepper(graph).jacobian_norms([leaf])[leaf] == (30.0, 0.0, True)


# --------------------------------------------------------------------------- matmul, mv
@pytest.mark.parametrize(("b", "m", "n"), [(12, 5, 9), (3, 4, 2)])
def test_matmul_with_only_w_requiring_grad_is_n_times_x_squared(b, m, n):
    X = torch.randn(b, m)
    W = torch.randn(m, n, requires_grad=True)
    graph = aw.capture((X @ W).sum())
    st_ = Stepper(graph)
    nid = node_of(graph, "MmBackward0")
    assert len(graph.out_edges(nid)) == 1, "only W's gradient leaves the node"
    closed = n * float(X.double().pow(2).sum())
    assert sqnorm_forward(lambda w: X @ w, W.detach()) == pytest.approx(closed, rel=1e-5)
    assert jacobian_sqnorm_of_backward(graph, nid, torch.float32) == pytest.approx(closed, 1e-5)
    exact = st_.jacobian_norms([nid], exact_max=ALL_EXACT)[nid]
    assert_exact(exact, closed)
    if b * n > probes.EXACT_MAX:
        est = st_.jacobian_norms([nid], samples=64, seed=1)[nid]
        assert_within(est, closed)
        assert est.stderr > 0, "not a diagonal Jacobian: samples spread"


@pytest.mark.parametrize("p", [6, 150])
def test_matrix_vector_product_with_only_the_vector_requiring_grad_is_w_squared(p):
    W = torch.randn(p, 4)
    v = torch.randn(4, requires_grad=True)
    graph = aw.capture((W @ v).sum())
    nid = node_of(graph, "MvBackward0")
    closed = float(W.double().pow(2).sum())
    assert sqnorm_forward(lambda t: W @ t, v.detach()) == pytest.approx(closed, rel=1e-5)
    got = Stepper(graph).jacobian_norms(samples=64, seed=2)[nid]
    (assert_exact if p <= probes.EXACT_MAX else assert_within)(got, closed)


# --------------------------------------------------------------------------- softmax
def test_softmax_against_jacobian_of_the_forward_op():
    x = torch.randn(4, 20, requires_grad=True)
    graph = aw.capture((x.softmax(-1) * torch.randn(4, 20)).sum())
    nid = node_of(graph, "SoftmaxBackward0")
    want = sqnorm_forward(lambda t: t.softmax(-1), x.detach())
    assert jacobian_sqnorm_of_backward(graph, nid, torch.float32) == pytest.approx(want, 1e-4)
    st_ = Stepper(graph)
    assert_exact(st_.jacobian_norms([nid], exact_max=ALL_EXACT)[nid], want)
    est = st_.jacobian_norms([nid], samples=128, seed=5)[nid]
    assert_within(est, want)


# --------------------------------------------------------------------------- a small MLP
def _mlp_loss(dtype=torch.float64):
    torch.manual_seed(0)
    model = make_mlp((6, 16, 12, 3)).to(dtype)
    x = torch.randn(10, 6, dtype=dtype)
    target = torch.tensor([0, 1, 2, 1, 0, 2, 2, 1, 0, 0])
    loss = F.cross_entropy(model(x), target)
    return model, x, loss


def test_mlp_every_node_against_the_jacobian_of_its_backward_map():
    model, _, loss = _mlp_loss()
    graph = aw.capture(loss, model=model)
    st_ = Stepper(graph)
    exact = st_.jacobian_norms(exact_max=ALL_EXACT)
    est = st_.jacobian_norms(samples=256, seed=11)
    assert st_.probe_errors == {}
    assert set(exact) == set(est) == set(graph.nodes)
    estimated = 0
    for nid, node in graph.nodes.items():
        if node.kind == "accumulate_grad":
            want = float(math.prod(node.inputs[0].shape))
        else:
            want = jacobian_sqnorm_of_backward(graph, nid, torch.float64)
        assert_exact(exact[nid], want)
        if est[nid].exact:
            assert est[nid].estimate == pytest.approx(want, rel=1e-9)
        else:
            estimated += 1
            assert_within(est[nid], want)
    assert estimated >= 3, "the MLP has nodes above the exact threshold"


def test_samples_are_batched_with_vmap_and_a_loop_gives_the_same(monkeypatch):
    model, _, loss = _mlp_loss(torch.float32)
    graph = aw.capture(loss, model=model)
    st_ = Stepper(graph)
    batched = st_.jacobian_norms(seed=4)
    names = {graph.nodes[n].name for n in batched if graph.nodes[n].kind == "function"}
    assert names <= set(probes._vmap_ok) and all(probes._vmap_ok[n] for n in names)
    monkeypatch.setattr(probes, "_vmap_ok", dict.fromkeys(names, False))
    calls = []
    loop = probes._NodeMap._loop
    monkeypatch.setattr(
        probes._NodeMap, "_loop", lambda self, vs, n: calls.append(n) or loop(self, vs, n)
    )
    looped = st_.jacobian_norms(seed=4)
    assert calls, "with vmap marked unusable the samples are looped"
    for nid, a in batched.items():
        b = looped[nid]
        assert a.exact == b.exact and a.estimate == pytest.approx(b.estimate, rel=1e-5), nid


def test_a_node_whose_vmap_fails_falls_back_to_a_loop(monkeypatch):
    w = torch.randn(10, 3, requires_grad=True)
    out = F.embedding(torch.tensor([1, 2, 2, 5]), w, sparse=True).pow(2).sum()
    graph = aw.capture(out)
    nid = node_of(graph, "EmbeddingBackward0")
    monkeypatch.setattr(probes, "_vmap_ok", {})
    got = Stepper(graph).jacobian_norms([nid])[nid]
    # rows 1, 2, 2, 5 of the (4, 3) gradient land in W: J is 0/1 with 12 ones
    assert_exact(got, 12.0)
    assert probes._vmap_ok == {"EmbeddingBackward0": False}  # sparse results do not vmap


def test_custom_functions_are_probed_by_calling_apply():
    x = torch.randn(100, requires_grad=True)
    graph = aw.capture(Scale.apply(x, 3.0, "tag").sum())
    nid = node_of(graph, "ScaleBackward")
    assert_within(Stepper(graph).jacobian_norms([nid], seed=0)[nid], 9.0 * 100)


def test_complex_gradients_count_real_and_imaginary_parts():
    # multiplication by c is a rotation-scaling of each element seen as a real pair: |c|^2 * 2n
    for n in (20, 100):
        x = torch.randn(n, dtype=torch.complex64, requires_grad=True)
        c = torch.tensor(0.6 - 0.8j, dtype=torch.complex64) * 1.5
        graph = aw.capture((x * c).abs().sum())
        nid = node_of(graph, "MulBackward0")
        got = Stepper(graph).jacobian_norms([nid], seed=0)[nid]
        want = 2 * n * abs(c.item()) ** 2
        (assert_exact if 2 * n <= probes.EXACT_MAX else assert_within)(got, want)


@settings(deadline=None, max_examples=25, suppress_health_check=SLOW_OK)
@given(spec=specs(max_steps=16))
def test_random_programs_exact_norms_match_basis_calls_made_here(spec):
    """Every built-in node type the programs make (46 ops): the package's batched exact norm
    equals the sum of squares of plain calls with each basis vector, made here."""
    prog = build(spec)
    graph = aw.capture(prog.roots, prog.grad_outputs)
    st_ = Stepper(graph)
    got = st_.jacobian_norms(exact_max=ALL_EXACT)
    assert st_.probe_errors == {}
    for nid, node in graph.nodes.items():
        if node.kind != "function":
            continue
        f, n = backward_map(graph, nid)
        meta = graph.fn(nid)._input_metadata
        with torch.no_grad():
            eye = torch.eye(n, dtype=meta[0].dtype)
            want = sum(float(f(eye[i]).double().pow(2).sum()) for i in range(n)) if n else 0.0
        assert got[nid].exact
        assert got[nid].estimate == pytest.approx(want, rel=1e-5, abs=1e-9), node.name


# --------------------------------------------------------------------------- contract
def test_determinism_per_node_and_the_global_rng_untouched():
    model, _, loss = _mlp_loss(torch.float32)
    graph = aw.capture(loss, model=model)
    st_ = Stepper(graph)
    rng = torch.get_rng_state()
    a = st_.jacobian_norms(seed=7)
    b = st_.jacobian_norms(seed=7)
    assert a == b
    assert torch.equal(torch.get_rng_state(), rng), "torch's global RNG was used"
    estimated = [nid for nid, v in a.items() if not v.exact]
    subset = st_.jacobian_norms(estimated[:2], seed=7)
    assert subset == {nid: a[nid] for nid in estimated[:2]}, "a node's samples are its own"
    other = st_.jacobian_norms(estimated, seed=8)
    assert any(other[n].estimate != a[n].estimate for n in estimated)
    # Node records are accepted too, a single one as well
    rec = graph.nodes[estimated[0]]
    assert st_.jacobian_norms(rec, seed=7) == {rec.id: a[rec.id]}


def _state(s: Stepper) -> tuple:
    def t(v):
        return None if v is None else (id(v), v.detach().flatten().tolist())

    return (
        s.position,
        [t(v) for v in s._state.slots],
        [t(v) if isinstance(v, torch.Tensor) else v for v in s._state.edge_val],
        {e: s.edge_summary(e) for e in s.plan.edge_ids},
        [(r.index, r.called) for r in s.history],
        s.edits,
    )


@pytest.mark.parametrize("keep", KEEPS)
def test_probing_disturbs_nothing(keep):
    model, _x, loss = _mlp_loss(torch.float32)
    graph = aw.capture(loss, model=model)
    s = Stepper(graph, keep=keep)
    for _ in range(5):
        s.step()
    params = list(model.parameters())
    versions = [p._version for p in params]
    saved = [(nid, sv.name) for nid in graph.nodes for sv in graph.saved(nid) if sv.shape]
    saved_versions = [graph.saved_tensor(nid, name)._version for nid, name in saved]
    notified = []
    s.add_listener(notified.append)
    before = _state(s)
    s.jacobian_norms(seed=0)
    s.jacobian_norms(exact_max=ALL_EXACT)
    assert _state(s) == before
    assert notified == []
    assert all(p.grad is None for p in params)
    assert [p._version for p in params] == versions
    assert [graph.saved_tensor(nid, name)._version for nid, name in saved] == saved_versions
    # stepping on gives the engine's gradients
    s.run()
    want = torch.autograd.grad(loss, params, retain_graph=True)
    for p, w in zip(params, want):
        torch.testing.assert_close(s.grad(p), w)


def test_nodes_that_cannot_be_called_are_listed_in_probe_errors():
    x = torch.randn(100, requires_grad=True)
    loss = (-x.exp()).sum()
    graph = aw.capture(loss)
    st_ = Stepper(graph)
    loss.backward()  # frees the saved tensors (no retain_graph)
    norms = st_.jacobian_norms(seed=0)
    exp_id = node_of(graph, "ExpBackward0")
    assert exp_id not in norms
    assert "Trying to backward through the graph a second time" in st_.probe_errors[exp_id]
    assert "ExpBackward0" in st_.probe_errors[exp_id]
    # the others need no saved tensor: still measured
    assert norms[node_of(graph, "SumBackward0")] == (100.0, 0.0, True)
    assert norms[node_of(graph, "NegBackward0")] == (100.0, 0.0, False)
    assert norms[graph.leaves[0]] == (100.0, 0.0, True)
    # each call replaces the list
    st_.jacobian_norms([node_of(graph, "SumBackward0")])
    assert st_.probe_errors == {}


def test_bad_arguments():
    x = torch.randn(3, requires_grad=True)
    st_ = Stepper(aw.capture(x.exp().sum()))
    with pytest.raises(ValueError, match="samples must be an int >= 2"):
        st_.jacobian_norms(samples=1)
    with pytest.raises(KeyError, match="no node 'n99'"):
        st_.jacobian_norms(["n99"])
    with pytest.raises(TypeError, match="seed must be an int"):
        st_.jacobian_norms(seed=1.5)
    with pytest.raises(ValueError, match="exact_max"):
        st_.jacobian_norms(exact_max=-1)


def test_jacobian_norm_as_dict_is_json_ready():
    v = JacobianNorm(100.0, 2.0, False)
    assert v.norm == 10.0
    assert json.loads(json.dumps(v.as_dict())) == {
        "estimate": 100.0,
        "stderr": 2.0,
        "exact": False,
        "log10": 2.0,
    }
    assert JacobianNorm(0.0, 0.0, True).as_dict()["log10"] is None


# --------------------------------------------------------------------------- what-if
def _zxy():
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    z = x**2 + y
    return x, y, z, aw.capture(z, params={"x": x, "y": y})


def _edge_into(graph: aw.BackwardGraph, src_name: str, leaf_name: str) -> str:
    (edge,) = [
        e
        for e in graph.edges
        if graph.nodes[e.src].name == src_name and graph.nodes[e.dst].leaf_name == leaf_name
    ]
    return edge.id


@pytest.mark.parametrize("keep", KEEPS)
def test_zeroing_the_edge_into_x_gives_x_grad_zero_and_leaves_y_alone(keep):
    x, y, z, graph = _zxy()
    s = Stepper(graph, keep=keep)
    eid = _edge_into(graph, "PowBackward0", "x")
    s.run(until=graph.edge(eid).src)  # Pow has run, AccumulateGrad(x) has not
    assert float(s.edge_summary(eid).values[0]) == 2 * x.item()
    s.zero_edge_grad(eid)
    assert s.edge_summary(eid).values == [0.0]
    assert list(s.edits) == [eid] and s.edits[eid].kind == "zero"
    assert s.edits[eid].before.values == [2 * x.item()]
    s.run()
    assert s.grad(x).item() == 0.0
    assert s.grad(y).item() == torch.autograd.grad(z, y, retain_graph=True)[0].item() == 1.0
    diff = s.leaf_grad_diff()
    x_id, y_id = graph.gradient_edge(x)[0], graph.gradient_edge(y)[0]
    assert diff[x_id].changed and diff[x_id].diff.item() == -2 * x.item()
    assert not diff[y_id].changed and diff[y_id].diff.item() == 0.0
    assert diff[x_id].name == "x" and diff[x_id].faithful.item() == 2 * x.item()
    assert json.loads(json.dumps(diff[x_id].as_dict()))["max_abs_diff"] == 4.0
    assert x.grad is None and y.grad is None


def _downstream_leaves(graph: aw.BackwardGraph, node_id: str) -> set[str]:
    seen, stack = {node_id}, [node_id]
    while stack:
        for e in graph.out_edges(stack.pop()):
            if e.dst not in seen:
                seen.add(e.dst)
                stack.append(e.dst)
    return seen & set(graph.leaves)


def _engine_with_post_hook(graph, roots, leaves, src, onr, edit):
    """The real engine's leaf gradients with `edit` applied to output `onr` of node `src` by a
    node post-hook (what the what-if edit does, done by torch)."""
    fn = graph.fn(src)

    def hook(grad_inputs, grad_outputs):
        return tuple(
            edit(g) if i == onr and g is not None else g for i, g in enumerate(grad_inputs)
        )

    handle = fn.register_hook(hook)
    try:
        return torch.autograd.grad(
            roots, leaves, graph.grad_outputs, retain_graph=True, allow_unused=True
        )
    finally:
        handle.remove()


@pytest.mark.parametrize("keep", KEEPS)
def test_scaling_an_inner_mlp_edge_changes_exactly_the_leaves_downstream(keep):
    model, _, loss = _mlp_loss(torch.float32)
    graph = aw.capture(loss, model=model)
    # the gradient into the first ReLU's output: sent by the second Linear's AddmmBackward0
    relu = [n.id for n in graph.nodes.values() if n.name == "ReluBackward0"]
    first_relu = min(relu, key=lambda n: graph.nodes[n].sequence_nr)
    (edge,) = graph.in_edges(first_relu)
    s = Stepper(graph, keep=keep)
    s.run(until=edge.src)
    s.scale_edge_grad(edge.id, 2.0)
    s.run()
    params = dict(model.named_parameters())
    faithful = torch.autograd.grad(loss, list(params.values()), retain_graph=True)
    hooked = _engine_with_post_hook(
        graph, [loss], list(params.values()), edge.src, edge.output_nr, lambda g: g * 2
    )
    downstream = _downstream_leaves(graph, edge.dst)
    names = {graph.nodes[lid].leaf_name for lid in downstream}
    assert names == {"0.weight", "0.bias"}
    diff = s.leaf_grad_diff()
    for (name, p), f, h in zip(params.items(), faithful, hooked):
        got = s.grad(p)
        torch.testing.assert_close(got, h, msg=name)
        lid = graph.gradient_edge(p)[0]
        if name in names:
            assert torch.equal(got, 2 * f), name  # x2 is exact in binary floating point
            assert diff[lid].changed and torch.equal(diff[lid].diff, f)
        else:
            assert torch.equal(got, f), name
            assert not diff[lid].changed
    # reset(): the faithful run, edits gone
    seq = s.edit_seq
    s.reset()
    assert s.edits == {} and s.edit_seq > seq
    s.run()
    for p, f in zip(params.values(), faithful):
        torch.testing.assert_close(s.grad(p), f)
    assert all(not d.changed for d in s.leaf_grad_diff().values())


@pytest.mark.parametrize("keep", KEEPS)
def test_an_edit_lives_on_its_edge_until_back_passes_its_source(keep):
    x, *_, graph = _zxy()
    s = Stepper(graph, keep=keep)
    eid = _edge_into(graph, "PowBackward0", "x")
    k_src = s.step_index(graph.edge(eid).src)
    s.run(until=graph.edge(eid).src)
    s.scale_edge_grad(eid, -3.0)
    want = -3.0 * 2 * x.item()
    s.run()
    assert s.grad(x).item() == want
    s.back()  # un-runs AccumulateGrad(x): the edit is still there
    assert s.position == k_src + 1 and list(s.edits) == [eid]
    assert s.grad(x).item() == want and s.edge_summary(eid).values == [want]
    s.step()
    assert s.grad(x).item() == want
    s.back()
    seq = s.edit_seq
    s.back()  # un-runs PowBackward0, which produced the edited gradient: the edit is dropped
    assert s.position == k_src and s.edits == {} and s.edit_seq == seq + 1
    assert s.edge_summary(eid) is None
    s.run()
    assert s.grad(x).item() == 2 * x.item(), "stepping again is the faithful run"


@pytest.mark.parametrize("keep", KEEPS)
def test_set_on_a_fan_in_slot_keeps_the_other_contribution(keep):
    x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    z = (x * x).sum()  # two edges into AccumulateGrad(x), each carrying x
    graph = aw.capture(z, params={"x": x})
    mul = node_of(graph, "MulBackward0")
    e0, e1 = (e.id for e in graph.out_edges(mul))
    s = Stepper(graph, keep=keep)
    s.run(until=mul)
    v = torch.tensor([10.0, 20.0, 30.0])
    s.set_edge_grad(e0, v)
    v.zero_()  # the edit holds a copy
    want = torch.tensor([10.0, 20.0, 30.0]) + x.detach()
    assert s.waiting(graph.leaves[0])[0].values == pytest.approx(want.tolist())
    s.run()
    torch.testing.assert_close(s.grad(x), want)
    assert s.edge_summary(e0).values == [10.0, 20.0, 30.0]
    assert s.edge_summary(e1).values == x.detach().tolist()
    assert s.edits[e0].kind == "set" and s.edits[e0].value.tolist() == [10.0, 20.0, 30.0]


def test_clear_edits_while_the_destination_waits():
    x, *_, graph = _zxy()
    s = Stepper(graph, keep="summaries")
    eid = _edge_into(graph, "PowBackward0", "x")
    s.run(until=graph.edge(eid).src)
    s.zero_edge_grad(eid)
    s.scale_edge_grad(eid, 10.0)  # replaces the zero edit; relative to what Pow computed
    assert s.edge_summary(eid).values == [40.0] and s.edits[eid].before.values == [4.0]
    s.clear_edits(eid)
    assert s.edits == {} and s.edge_summary(eid).values == [4.0]
    s.zero_edge_grad(eid)
    s.run()
    with pytest.raises(ValueError, match="in the past"):
        s.clear_edits()
    assert s.grad(x).item() == 0.0


def test_edit_errors_say_why():
    *_, graph = _zxy()
    s = Stepper(graph)
    eid = _edge_into(graph, "PowBackward0", "x")
    with pytest.raises(ValueError, match=r"in the future.*step to position 3 or later"):
        s.zero_edge_grad(eid)
    s.run()
    with pytest.raises(ValueError, match=r"in the past.*consumed by n\d \(AccumulateGrad\)"):
        s.set_edge_grad(eid, torch.tensor(1.0))
    s.reset()
    s.run(until=graph.edge(eid).src)
    with pytest.raises(ValueError, match=r"shape \[\], dtype torch.float32.*got shape \[1\]"):
        s.set_edge_grad(eid, torch.ones(1))
    with pytest.raises(ValueError, match=r"dtype torch\.float32.*got shape .*dtype torch\.float64"):
        s.set_edge_grad(eid, torch.tensor(1.0, dtype=torch.float64))
    with pytest.raises(TypeError, match="expected a torch\\.Tensor"):
        s.set_edge_grad(eid, 1.0)
    with pytest.raises(TypeError, match="factor must be a number"):
        s.scale_edge_grad(eid, "2")
    with pytest.raises(KeyError, match="no edge"):
        s.zero_edge_grad("n9:0")
    assert s.edits == {}


def test_edits_notify_listeners_and_are_json_ready():
    *_, graph = _zxy()
    s = Stepper(graph)
    eid = _edge_into(graph, "PowBackward0", "x")
    s.run(until=graph.edge(eid).src)
    seen = []
    s.add_listener(lambda st_: seen.append((st_.position, dict(st_.edits))))
    s.scale_edge_grad(eid, 0.5)
    assert seen == [(s.position, {eid: s.edits[eid]})]
    assert isinstance(s.edits[eid], EditInfo)
    d = json.loads(json.dumps(s.edits[eid].as_dict()))
    assert d == {
        "edge": eid,
        "kind": "scale",
        "factor": 0.5,
        "before": s.edits[eid].before.as_dict(),
    }


def test_leaf_grad_diff_without_edits_needs_no_faithful_run():
    *_, graph = _zxy()
    s = Stepper(graph)
    s.run()
    diff = s.leaf_grad_diff()
    assert all(isinstance(d, LeafDiff) and not d.changed for d in diff.values())
    assert s._whatif.reference is None


@settings(deadline=None, max_examples=40, suppress_health_check=SLOW_OK)
@given(spec=specs(max_steps=16), keep=st.sampled_from(KEEPS), data=st.data())
def test_random_programs_an_edit_is_what_the_engine_does_with_a_post_hook(spec, keep, data):
    prog = build(spec)
    graph = aw.capture(prog.roots, prog.grad_outputs)
    s = Stepper(graph, keep=keep)
    s.run()
    flowed = [e for e in graph.edges if s.edge_summary(e.id) is not None]
    edge = data.draw(st.sampled_from(flowed))
    kind = data.draw(st.sampled_from(["zero", "scale"]))
    k_src, k_dst = s.step_index(edge.src), s.step_index(edge.dst)
    pos = data.draw(st.integers(k_src + 1, k_dst))
    s.reset()
    for _ in range(pos):
        s.step()
    if kind == "zero":
        s.zero_edge_grad(edge.id)
        edit = torch.zeros_like
    else:
        s.scale_edge_grad(edge.id, 2.0)

        def edit(g):
            return g * 2

    last = s.run()
    assert last is None or last.error is None
    want = _engine_with_post_hook(graph, prog.roots, prog.leaves, edge.src, edge.output_nr, edit)
    faithful = torch.autograd.grad(
        prog.roots, prog.leaves, prog.grad_outputs, retain_graph=True, allow_unused=True
    )
    diff = s.leaf_grad_diff()
    for i, (leaf, w, f) in enumerate(zip(prog.leaves, want, faithful)):
        if graph.id_of(torch.autograd.graph.get_gradient_edge(leaf).node) is None:
            continue
        got = s.grad(leaf)
        d = diff[graph.gradient_edge(leaf)[0]]
        assert d.edited is got, f"leaf {i}"
        if f is not None:
            torch.testing.assert_close(d.faithful, f, msg=f"leaf {i}", equal_nan=True)
        if w is None:
            assert got is None or not got.any(), f"leaf {i}"
            continue
        torch.testing.assert_close(got, w, msg=f"leaf {i}", equal_nan=True)
    assert all(leaf.grad is None for leaf in prog.leaves)


def test_set_puts_a_gradient_on_an_edge_that_got_none():
    a = torch.randn(3, requires_grad=True)
    b = torch.randn(3, requires_grad=True)
    out = HalfNone.apply(a, b.exp()).sum()  # returns None for b.exp(): ExpBackward0 gets nothing
    graph = aw.capture(out)
    exp_id = node_of(graph, "ExpBackward0")
    (edge,) = graph.out_edges(exp_id)
    s = Stepper(graph)
    s.run(until=exp_id)
    assert s.record(s.step_index(exp_id)).no_gradient and s.edge_summary(edge.id) is None
    with pytest.raises(ValueError, match="sent no gradient along it"):
        s.scale_edge_grad(edge.id, 2.0)
    s.set_edge_grad(edge.id, torch.full((3,), 0.5))
    assert s.edits[edge.id].before is None
    s.run()
    assert s.grad(b).tolist() == [0.5, 0.5, 0.5]
    assert s.record(s.step_index(exp_id)).no_gradient, "the node itself was still not called"
