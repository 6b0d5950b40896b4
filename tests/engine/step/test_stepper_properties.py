"""Property tests: on random programs, manual stepping IS the engine.

For every generated program (tests/helpers/programs.py: 46 ops, 1-3 leaves of mixed float32/float64,
1-3 roots with explicit grad_outputs) we check after `run()`: every leaf gradient and a sample of
non-leaf gradients equal `torch.autograd.grad` (shape, dtype, values); the executed order equals the
order the engine really ran (recorded with pre-hooks during `backward()` on a second build of the
same program; ties among AccumulateGrad nodes aside); `compare_with_engine()` finds nothing; nothing
of the user's changed (no `.grad`, no version bump, no hook left); and the user's own
`backward()` afterwards gives the reference gradients.
"""

from __future__ import annotations

import math

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autograd_widget as aw
from autograd_widget.engine.step.stepper import Stepper
from tests.helpers.programs import Program, Spec, build, specs

SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]
KEEPS = st.sampled_from(["tensors", "summaries", 512])


def _reachable(graph: aw.BackwardGraph, t: torch.Tensor) -> bool:
    node = torch.autograd.graph.get_gradient_edge(t).node
    return graph.id_of(node) is not None


def _canonical(order: list[str], graph: aw.BackwardGraph) -> list:
    """Runs of consecutive AccumulateGrad steps as sorted tuples: the engine's tie order among
    them is unspecified (they are all ready at once and can make nothing else ready)."""
    out: list = []
    run: list[str] = []
    for nid in order:
        if graph.nodes[nid].kind == "accumulate_grad":
            run.append(nid)
            continue
        if run:
            out.append(tuple(sorted(run)))
            run = []
        out.append(nid)
    if run:
        out.append(tuple(sorted(run)))
    return out


def engine_order(spec: Spec) -> list:
    """The engine's real execution order (canonical, see `_canonical`), on a second build of the
    program: backward() writes .grad there, never on the copy under test. Both builds have the
    same structure, so the same node ids."""
    prog = build(spec)
    graph = aw.capture(prog.roots, prog.grad_outputs)
    seen: list[str] = []
    fns = graph._live.fns
    handles = [
        fn.register_prehook(lambda grads, nid=f"n{i}": seen.append(nid)) for i, fn in enumerate(fns)
    ]
    try:
        torch.autograd.backward(prog.roots, prog.grad_outputs)
    finally:
        for h in handles:
            h.remove()
    canonical = _canonical(seen, graph)
    graph.close()
    return canonical


def assert_same_grad(got: torch.Tensor | None, want: torch.Tensor | None, what: str) -> None:
    if want is None:
        assert got is None, f"{what}: engine has no gradient, stepper has one"
        return
    assert got is not None, f"{what}: stepper has no gradient, engine has one"
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    torch.testing.assert_close(got, want, msg=what, equal_nan=True)


def _untouched(prog: Program, versions: list[int], tensors: list[torch.Tensor]) -> None:
    for leaf in prog.leaves:
        assert leaf.grad is None, "a leaf's .grad was written"
    assert [t._version for t in tensors] == versions, "a version counter moved"
    for t in tensors:
        assert not t._backward_hooks, "a tensor hook was left behind"


def _no_node_hooks(graph: aw.BackwardGraph) -> None:
    """Every node's pre-hook dict holds nothing but a probe we add and remove here."""
    for fn in graph._live.fns:
        h = fn.register_prehook(lambda grads: None)
        try:
            assert len(h.hooks_dict_ref()) == 1, f"a pre-hook was left on {fn.name()}"
        finally:
            h.remove()


@settings(deadline=None, max_examples=150, suppress_health_check=SLOW_OK)
@given(spec=specs(max_steps=24), keep=KEEPS)
def test_random_programs_match_the_engine(spec: Spec, keep: str | int) -> None:
    prog = build(spec)
    graph = aw.capture(prog.roots, prog.grad_outputs)
    reachable = [t for t in prog.nonleaves if _reachable(graph, t)]
    sample = reachable[:: max(1, len(reachable) // 4)][:4]
    watched = [*prog.leaves, *prog.nonleaves]
    versions = [t._version for t in watched]
    want_leaves = torch.autograd.grad(
        prog.roots, prog.leaves, prog.grad_outputs, retain_graph=True, allow_unused=True
    )
    want_sample = (
        torch.autograd.grad(
            prog.roots, sample, prog.grad_outputs, retain_graph=True, allow_unused=True
        )
        if sample
        else ()
    )

    stepper = Stepper(graph, keep=keep)
    last = stepper.run()
    assert last is not None and last.error is None, last
    assert stepper.done and stepper.position == len(stepper.order) == len(graph)

    for i, (leaf, want) in enumerate(zip(prog.leaves, want_leaves)):
        if not _reachable(graph, leaf):
            assert want is None
            continue
        assert_same_grad(stepper.grad(leaf), want, f"leaf {i}")
    for i, (t, want) in enumerate(zip(sample, want_sample)):
        assert_same_grad(stepper.grad(t), want, f"non-leaf {i} ({t.grad_fn.name()})")

    assert _canonical(stepper.order, graph) == engine_order(spec)

    assert stepper.compare_with_engine() == []
    _untouched(prog, versions, watched)
    _no_node_hooks(graph)

    # The user's own backward afterwards: works, and gives the reference gradients.
    torch.autograd.backward(prog.roots, prog.grad_outputs)
    for leaf, want in zip(prog.leaves, want_leaves):
        if want is not None:
            torch.testing.assert_close(leaf.grad, want, equal_nan=True)
    stepper.close()
    graph.close()


def assert_same_state(a: object, b: object, path: str = "state") -> None:
    """Equal, except summary statistics may differ in the last bits: a small tensor's statistics
    are reduced in a batch with others of its shape, and a batch of another size can round
    differently (a float64 std was seen 2e-12 apart, relative: a reduction's rounding grows with
    cancellation). Gradients (the tensors) must match bit for bit."""
    if isinstance(a, tuple) and a[:1] == ("tensor",):
        assert isinstance(b, tuple) and b[:3] == a[:3], (path, a[:3], b[:3])
        same = all(x == y or (x != x and y != y) for x, y in zip(a[3], b[3]))
        assert same and len(a[3]) == len(b[3]), (path, "tensor values differ")
        return
    if isinstance(a, float) and isinstance(b, float):
        assert a == b or (a != a and b != b) or math.isclose(a, b, rel_tol=1e-9), (path, a, b)
        return
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        assert len(a) == len(b), (path, a, b)
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_state(x, y, f"{path}[{i}]")
        return
    assert a == b, (path, a, b)


def _state(stepper: Stepper) -> tuple:
    """Everything stepping can change, comparable with ==."""

    def tensor_key(t: torch.Tensor | None) -> object:
        if t is None:
            return None
        return ("tensor", tuple(t.shape), t.dtype, t.detach().flatten().tolist())

    def summary_key(s: object) -> object:
        if s is None:
            return None
        d = s.as_dict()  # type: ignore[attr-defined]
        return tuple((k, v) for k, v in d.items())

    plan = stepper.plan
    return (
        stepper.position,
        tuple(tensor_key(v) for v in stepper._state.slots),
        tuple(summary_key(stepper.edge_summary(e)) for e in plan.edge_ids),
        tuple(tensor_key(stepper.edge_grad(e)) for e in plan.edge_ids),
        tuple(r.called for r in stepper.history),
    )


@settings(deadline=None, max_examples=80, suppress_health_check=SLOW_OK)
@given(
    spec=specs(max_steps=10),
    keep=st.sampled_from(["tensors", "summaries", 64, 4096]),
    data=st.data(),
)
def test_back_restores_the_exact_state(spec: Spec, keep: str | int, data: st.DataObject) -> None:
    prog = build(spec)
    graph = aw.capture(prog.roots, prog.grad_outputs)
    stepper = Stepper(graph, keep=keep)
    n = len(stepper.order)
    k = data.draw(st.integers(0, n), label="steps")
    for _ in range(k):
        assert stepper.step().error is None
    before = _state(stepper)
    j = data.draw(st.integers(0, k), label="backs")
    for _ in range(j):
        stepper.back()
    fresh = Stepper(graph, keep=keep)
    for _ in range(k - j):
        fresh.step()
    assert_same_state(_state(stepper), _state(fresh))
    for _ in range(j):
        stepper.step()
    assert_same_state(_state(stepper), before)
    stepper.run()
    for leaf in prog.leaves:
        if _reachable(graph, leaf):
            # allow_unused: a reachable leaf can still get no gradient (a custom backward
            # returning None for it); the engine then gives None, and so must the stepper.
            want = torch.autograd.grad(
                prog.roots, leaf, prog.grad_outputs, retain_graph=True, allow_unused=True
            )[0]
            assert_same_grad(stepper.grad(leaf), want, "leaf after back/forward")
    graph.close()


@settings(deadline=None, max_examples=50, suppress_health_check=SLOW_OK)
@given(spec=specs(max_steps=10))
def test_summaries_match_the_tensors(spec: Spec) -> None:
    """keep="summaries" records the same statistics keep="tensors" computes from kept tensors."""
    prog = build(spec)
    graph = aw.capture(prog.roots, prog.grad_outputs)
    kept, summ = Stepper(graph, keep="tensors"), Stepper(graph, keep="summaries")
    kept.run()
    summ.run()
    for eid in kept.plan.edge_ids:
        t = kept.edge_grad(eid)
        s = summ.edge_summary(eid)
        assert summ.edge_grad(eid) is None
        if t is None:
            assert s is None
            continue
        assert s is not None and s.shape == tuple(t.shape) and s.numel == t.numel()
        x = t.detach().abs() if t.is_complex() else t.detach()
        x = x.double()
        assert math.isclose(
            s.norm, float(torch.linalg.vector_norm(x)), rel_tol=1e-4, abs_tol=1e-6
        ) or math.isnan(s.norm)
        if t.numel():
            assert s.min == float(x.min()) or math.isnan(s.min)
            assert s.max == float(x.max()) or math.isnan(s.max)
            assert math.isclose(s.mean, float(x.mean()), rel_tol=1e-4, abs_tol=1e-6) or math.isnan(
                s.mean
            )
    graph.close()
