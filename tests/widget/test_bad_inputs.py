"""Bad and awkward inputs across capture / Stepper / explore / saved (issue 9, "Reliability").

Each case ends in a clear error that names the fix (TypeError / ValueError / RuntimeError, or the
engine's own message in a failed StepRecord), or in a graceful result whose numbers equal the
engine's. Never a crash, never a wrong number, never a write to the user's `.grad`.
"""

from __future__ import annotations

import gc
import logging
import math
import re
import time

import pytest
import torch
from torch.utils.checkpoint import checkpoint

import autograd_widget as aw
from autograd_widget import Stepper
from autograd_widget.util.compat import UnsupportedTorchError, check_torch
from tests.helpers.programs import raising

TORCH_VERSION = re.escape(torch.__version__)


# --------------------------------------------------------------------------- helpers
def engine(roots, inputs, grad_outputs=None):
    return torch.autograd.grad(roots, inputs, grad_outputs, retain_graph=True, allow_unused=True)


def assert_same(got, want, what=""):
    assert got is not None, f"{what}: no gradient"
    if got.layout is not torch.strided or want.layout is not torch.strided:
        assert got.layout == want.layout, what
        got, want = got.to_dense(), want.to_dense()
    assert got.dtype == want.dtype and got.shape == want.shape, what
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True, msg=what)


def run_and_check(graph, leaves, want, keep="summaries"):
    s = Stepper(graph, keep=keep)
    rec = s.run()
    assert rec is not None and rec.error is None, rec and rec.error
    assert s.done
    for i, (t, w) in enumerate(zip(leaves, want)):
        assert_same(s.grad(t), w, f"leaf {i}")
    return s


def no_hooks_left(graph):
    for fn in graph.require_live("count hooks").fns:
        probe = fn.register_prehook(lambda _g: None)
        try:
            assert len(probe.hooks_dict_ref()) == 1, f"a pre-hook was left on {fn.name()}"
        finally:
            probe.remove()


# --------------------------------------------------------------------------- capture: types
@pytest.mark.parametrize(
    ("outputs", "match"),
    [
        (3.0, r"torch\.Tensor"),
        ("loss", r"torch\.Tensor"),
        ({"loss": 1}, r"torch\.Tensor"),
        (None, r"torch\.Tensor"),
        (iter([1]), r"torch\.Tensor"),
    ],
)
def test_capture_wrong_types_name_what_to_pass(outputs, match):
    with pytest.raises(TypeError, match=match):
        aw.capture(outputs)


def test_capture_list_with_a_non_tensor_names_its_position():
    x = torch.randn(2, requires_grad=True)
    with pytest.raises(TypeError, match=r"outputs\[1\] is a float.*pass only tensors"):
        aw.capture([x.sum(), 1.0])


def test_tensor_without_grad_and_integer_outputs_name_requires_grad():
    with pytest.raises(ValueError, match=r"requires_grad_\(\)"):
        aw.capture(torch.randn(3))
    with pytest.raises(ValueError, match=r"requires_grad_\(\)"):
        aw.capture(torch.tensor([1, 2]))
    x = torch.randn(3, requires_grad=True)
    with torch.no_grad():
        y = x * 2
    with pytest.raises(ValueError, match=r"outputs\[1\].*no_grad"):
        aw.capture([x.sum(), y])


def test_inference_mode_tensor_names_inference_mode():
    x = torch.randn(3, requires_grad=True)
    with torch.inference_mode():
        y = x * 2
    with pytest.raises(ValueError, match=r"inference_mode.*outside inference_mode"):
        aw.capture(y)
    with pytest.raises(ValueError, match="inference_mode"):
        aw.explore(y)
    # An inference tensor used as a plain (not saved, not differentiated) input is fine.
    with torch.inference_mode():
        c = torch.ones(3)
    loss = (x * 2 + c).sum()
    run_and_check(aw.capture(loss), [x], engine(loss, [x]))


def test_a_view_whose_base_changed_in_place_names_the_fix():
    x = torch.randn(6, requires_grad=True)
    h = x * 2
    _, b = h.split(3)
    with torch.no_grad():
        h.add_(1.0)  # b's grad_fn can no longer be rebuilt, in the engine either
    with pytest.raises(RuntimeError) as eng:
        torch.autograd.grad(b, x, torch.ones(3))
    with pytest.raises(RuntimeError, match=r"the output has no usable grad_fn.*out-of-place") as e:
        aw.capture(b, torch.ones(3))
    assert str(eng.value) in str(e.value) and "recompute the output" in str(e.value)


def test_empty_outputs():
    with pytest.raises(ValueError, match=r"empty.*loss"):
        aw.capture([])
    with pytest.raises(ValueError, match="empty"):
        aw.capture(())


# --------------------------------------------------------------------------- grad_outputs
def test_non_scalar_output_without_grad_outputs_gives_the_engines_error_and_the_fix():
    x = torch.randn(3, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError) as eng:
        torch.autograd.grad(y, x)
    g = aw.capture(y)  # capturing is fine: the graph can be drawn
    for make in (lambda: Stepper(g), lambda: aw.explore(y)):
        with pytest.raises(RuntimeError) as ours:
            make()
        assert str(eng.value) in str(ours.value)  # the engine's words ...
        assert "grad_outputs=" in str(ours.value)  # ... and the fix
    s = run_and_check(aw.capture(y, torch.ones(3)), [x], engine(y, [x], torch.ones(3)))
    assert s.compare_with_engine() == []


def test_mismatched_grad_outputs_are_refused_at_capture():
    x = torch.randn(3, requires_grad=True)
    y = x * 2
    with pytest.raises(ValueError, match=r"shape \[4\].*shape \[3\].*match"):
        aw.capture(y, torch.ones(4))
    with pytest.raises(ValueError, match=r"shape \[1, 3\]"):
        aw.capture(y, torch.ones(1, 3))  # broadcastable is not enough, as in the engine
    with pytest.raises(ValueError, match="2 entries but there are 1 outputs"):
        aw.capture(y, [torch.ones(3), torch.ones(3)])
    with pytest.raises(TypeError, match="grad_outputs must be a tensor"):
        aw.capture(y, 1.0)
    with pytest.raises(TypeError, match=r"grad_outputs\[0\] is a list"):
        aw.capture(y, [[1.0, 1.0, 1.0]])
    with pytest.raises(ValueError, match="real/complex"):
        aw.capture(y, torch.ones(3, dtype=torch.complex64))


def test_grad_outputs_on_another_device_names_the_move():
    x = torch.randn(3, requires_grad=True)
    y = x * 2
    with pytest.raises(ValueError, match=r"meta tensor.*ones_like"):
        aw.capture(y, torch.ones(3, device="meta"))
    with pytest.raises(ValueError, match="meta tensor"):
        aw.explore(y, torch.ones(3, device="meta"))


def test_awkward_but_valid_grad_outputs_are_cast_like_the_engine():
    x = torch.randn(3, requires_grad=True)
    y = x * 2
    for go in (
        torch.ones(3, dtype=torch.int64),  # cast to float32 by the engine
        torch.ones(3, dtype=torch.float64),
        torch.randn(3, requires_grad=True),
        torch.randn(3).to_sparse(),  # a sparse seed
    ):
        want = engine(y, [x], go)
        s = run_and_check(aw.capture(y, go), [x], want)
        assert s.compare_with_engine() == []
    assert x.grad is None


def test_complex_root_needs_grad_outputs():
    z = torch.randn(3, dtype=torch.complex64, requires_grad=True)
    loss = (z * z).sum()
    with pytest.raises(RuntimeError) as eng:
        torch.autograd.grad(loss, z)
    with pytest.raises(RuntimeError, match="grad_outputs=") as ours:
        Stepper(aw.capture(loss))
    assert str(eng.value) in str(ours.value)
    go = torch.tensor(1 + 0.5j, dtype=torch.complex64)
    s = run_and_check(aw.capture(loss, go), [z], engine(loss, [z], go))
    assert s.compare_with_engine() == []


def test_nan_grad_outputs_are_flagged_not_hidden():
    x = torch.randn(3, requires_grad=True)
    y = x * 2
    go = torch.tensor([1.0, float("nan"), 1.0])
    s = run_and_check(aw.capture(y, go), [x], engine(y, [x], go))
    edge, summary = s.first_nonfinite()
    assert summary.nan == 1 and math.isnan(summary.norm)
    assert edge.src == s.order[0]


def test_the_same_output_twice_counts_twice():
    x = torch.randn(3, requires_grad=True)
    y = (x * 2).sum()
    want = engine([y, y], [x])
    s = run_and_check(aw.capture([y, y]), [x], want)
    assert_same(s.grad(x), torch.full((3,), 4.0))
    assert s.compare_with_engine() == []


def test_a_leaf_as_the_output_is_refused_but_a_leaf_beside_an_output_is_kept():
    # a lone leaf: a one-node graph with nothing to step (tests/widget/test_common_mistakes.py);
    # beside a real output it is an output like any other, as in torch.autograd.grad
    x = torch.tensor(2.0, requires_grad=True)
    with pytest.raises(ValueError, match="is a leaf tensor"):
        aw.capture(x)
    out = x * 3
    g = aw.capture([out, x])
    assert len(g) == 2 and len(g.edges) == 1
    run_and_check(g, [x], engine([out, x], [x]))
    w = aw.explore([out, x])
    w.stepper.run()
    assert w._state["done"] and "done" in w._state["status"]
    w.close()


# --------------------------------------------------------------------------- layouts, devices
def test_sparse_leaf_steps_and_summarises():
    xs = torch.randn(3, 3).to_sparse().requires_grad_()
    w = torch.randn(3, 3, requires_grad=True)
    loss = torch.sparse.mm(xs, w).sum() + torch.sparse.sum(xs * 2.0)
    want = engine(loss, [xs, w])
    for keep in ("summaries", "tensors", 0, 10**9):  # budget: sparse tensors have no nbytes
        s = run_and_check(aw.capture(loss), [xs, w], want, keep=keep)
        s.back()
        s.run()
        summaries = s.edge_summaries()
        assert summaries and all(v.numel == math.prod(v.shape) for v in summaries.values())
        assert s.compare_with_engine() == []
    widget = aw.explore(loss)
    widget.stepper.run()
    assert widget._state["error"] is None and widget._state["done"]
    widget.close()
    # a sparse leaf among the outputs: torch's get_gradient_edge needs `view`
    g = aw.capture([loss, xs])
    assert [n.name for n in g.nodes.values()].count("AccumulateGrad") == 2


def test_graph_gradient_edge_of_a_sparse_leaf():
    xs = torch.randn(3, 3).to_sparse().requires_grad_()
    g = aw.capture(torch.sparse.sum(xs * 2.0))
    assert g.gradient_edge(xs) == (g.leaves[0], 0)


def test_sparse_embedding_gradient():
    emb = torch.nn.Embedding(10, 4, sparse=True)
    loss = emb(torch.tensor([1, 2, 1])).pow(2).sum()
    (want,) = engine(loss, [emb.weight])
    s = run_and_check(aw.capture(loss, model=emb), [emb.weight], [want])
    got = s.grad(emb.weight)
    assert got.layout == torch.sparse_coo
    leaf_edge = next(e for e in s.graph.edges if e.dst == s.graph.leaves[0])
    summary = s.edge_summary(leaf_edge.id)
    dense = want.to_dense()
    assert summary.shape == (10, 4) and summary.numel == 40
    assert summary.norm == pytest.approx(float(dense.norm()), rel=1e-6)
    assert summary.values == dense.reshape(-1).tolist()  # 40 <= 64: every value, row-major
    assert s.compare_with_engine() == []
    assert emb.weight.grad is None


def test_large_sparse_summary_is_exact_without_densifying():
    from autograd_widget.core.summary import SPARSE_DENSE_NUMEL

    n = SPARSE_DENSE_NUMEL + 8
    idx = torch.tensor([[0, 3, 3, 5, n - 1]])
    vals = torch.tensor([2.0, -1.0, 0.5, 4.0, -3.0])
    t = torch.sparse_coo_tensor(idx, vals, (n,), check_invariants=True)  # index 3 twice
    s = aw.Summary.of(t)
    dense = t.to_dense().double()
    assert s.numel == n and s.shape == (n,)
    assert s.min == -3.0 and s.max == 4.0
    assert s.norm == pytest.approx(float(dense.norm()), rel=1e-12)
    assert s.mean == pytest.approx(float(dense.mean()), rel=1e-9)
    assert s.std == pytest.approx(float(dense.std()), rel=1e-6)
    assert s.values == [2.0, 0.0, 0.0, -0.5, 0.0, 4.0, 0.0, 0.0]
    assert s.nan == 0 and s.inf == 0


def test_meta_tensor_output_is_refused_with_the_fix():
    m = torch.randn(3, device="meta", requires_grad=True)
    with pytest.raises(ValueError, match=r"meta tensor.*real device"):
        aw.capture((m * 2).sum())
    with pytest.raises(ValueError, match="meta tensor"):
        aw.explore((m * 2).sum())
    s = aw.Summary.of(torch.empty(2, 3, device="meta"))  # degraded, not a crash
    assert s.shape == (2, 3) and s.numel == 6 and s.values == [] and math.isnan(s.norm)


def test_zero_size_tensors():
    z = torch.randn(0, 3, requires_grad=True)
    w = torch.randn(3, 2, requires_grad=True)
    loss = (z @ w).sum() + (w * 2).sum()
    want = engine(loss, [z, w])
    for keep in ("summaries", "tensors", 0):
        s = run_and_check(aw.capture(loss), [z, w], want, keep=keep)
        empty = [v for v in s.edge_summaries().values() if v.numel == 0]
        assert empty and all(v.min is None and v.norm == 0.0 for v in empty)
        assert s.compare_with_engine() == []
        s.back()
        s.run()
        assert_same(s.grad(z), want[0])
    y = z * 2  # a non-scalar empty output: like the engine, it needs grad_outputs
    with pytest.raises(RuntimeError, match="grad_outputs="):
        Stepper(aw.capture(y))
    run_and_check(aw.capture(y, torch.ones(0, 3)), [z], engine(y, [z], torch.ones(0, 3)))
    widget = aw.explore(loss)
    widget.stepper.run()
    assert widget._state["done"] and widget._state["error"] is None
    widget.close()


# --------------------------------------------------------------------------- freed / stale graphs
def test_freed_graph_fails_its_steps_with_the_engines_message():
    x = torch.randn(3, requires_grad=True)
    loss = x.exp().sin().sum()
    loss.backward()
    x.grad = None
    with pytest.raises(RuntimeError) as eng:
        torch.autograd.grad(loss, x)
    with pytest.warns(UserWarning, match="already freed by backward"):
        g = aw.capture(loss)
    s = Stepper(g)
    rec = s.run()
    assert rec.error is not None and str(eng.value) in rec.error
    assert rec.node.name in rec.error and s.next_node == rec.node.id
    s.back()
    s.reset()
    assert s.position == 0
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        s.compare_with_engine()
    no_hooks_left(g)
    states = {v.state for nid in g.nodes for v in g.saved(nid) if v.kind == "tensor"}
    assert states == {"freed"}


def test_graph_freed_while_stepping_keeps_the_done_steps():
    x = torch.randn(3, requires_grad=True)
    h = x.exp()
    loss = h.sin().cos().sum()
    g = aw.capture(loss)
    s = Stepper(g, keep="summaries")
    names = [g.nodes[n].name for n in s.order]
    assert names[:4] == ["SumBackward0", "CosBackward0", "SinBackward0", "ExpBackward0"]
    s.run(until=s.order[2])
    grad_h = s.grad(h)
    assert s.position == 3
    loss.backward()  # the user frees the graph under the stepper
    x.grad = None
    rec = s.step()
    assert rec.error is not None and "second time" in rec.error and s.position == 3
    # Undoing step 2 replays steps 0-1, and CosBackward0's saved tensor is gone: refused, with
    # the state left whole where it was.
    with pytest.raises(RuntimeError, match=r"graph changed since they ran \(position 3 kept"):
        s.back()
    assert s.position == 3 and s.failure is None
    assert [r.node.id for r in s.history] == s.order[:3]
    torch.testing.assert_close(s.grad(h), grad_h)  # cached before the graph was freed
    s.reset()
    assert s.position == 0 and s.run().error is not None


def test_in_place_invalidated_graph():
    x = torch.randn(3, requires_grad=True)
    h = x * 2
    y = h.exp()
    y.mul_(3)  # ExpBackward0 saved its result
    loss = y.sum()
    with pytest.raises(RuntimeError) as eng:
        torch.autograd.grad(loss, x, retain_graph=True)
    g = aw.capture(loss)
    exp = next(n for n in g.nodes.values() if n.name == "ExpBackward0")
    (res,) = g.saved(exp.id)
    assert res.state == "stale" and res.versions == (0, 1)
    for keep in ("summaries", "tensors"):
        s = Stepper(g, keep=keep)
        rec = s.run()
        assert rec.error is not None and str(eng.value) in rec.error
        assert s.next_node == exp.id
        s.back()
        s.run()
        assert s.failure is not None and s.position == s.step_index(exp.id)


def test_model_mutated_after_capture_is_a_failed_step():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    x = torch.randn(5, 3, requires_grad=True)
    loss = model(x).pow(2).sum()
    g = aw.capture(loss, model=model)
    with torch.no_grad():
        model[2].weight.mul_(2.0)  # e.g. an optimizer step between capture and stepping
    with pytest.raises(RuntimeError) as eng:
        torch.autograd.grad(loss, [x, *model.parameters()], retain_graph=True)
    s = Stepper(g)
    rec = s.run()
    assert rec.error is not None and str(eng.value) in rec.error
    assert "is at version" in rec.error and "modified by an inplace operation" in rec.error
    stale = [v for nid in g.nodes for v in g.saved(nid) if v.state == "stale"]
    assert stale and all("stale" in v.note for v in stale)
    s.reset()
    assert s.position == 0 and all(p.grad is None for p in model.parameters())


def test_model_mutated_between_steps_refuses_a_replay_and_keeps_the_position():
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 3)
    x = torch.randn(2, 3, requires_grad=True)
    h = lin(x).tanh()
    loss = (h * h).sum()
    g = aw.capture(loss, model=lin)
    s = Stepper(g, keep="summaries")
    tanh_step = next(k for k, nid in enumerate(s.order) if g.nodes[nid].name == "TanhBackward0")
    s.run(until=s.order[tanh_step])
    pos = s.position
    with torch.no_grad():
        h.add_(1.0)  # MulBackward0 (done) saved h: a replay of the done steps must fail
    with pytest.raises(RuntimeError, match=r"graph changed since they ran.*inplace"):
        s.back()
    assert s.position == pos and s.failure is None
    with pytest.raises(RuntimeError, match="graph changed"):
        s.grad(h)  # needs a replay too (summaries): refused, position unchanged
    assert s.position == pos
    s.reset()
    assert s.run().error is not None  # MulBackward0 now fails with the engine's version error


# --------------------------------------------------------------------------- checkpointing
def test_reentrant_checkpoint_is_refused_without_writing_grad():
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4, requires_grad=True)
    loss = checkpoint(lambda a: lin(a).tanh(), x, use_reentrant=True).sum()
    g = aw.capture(loss, model=lin)
    ck = next(n for n in g.nodes.values() if n.name == "CheckpointFunctionBackward")
    for keep in ("summaries", "tensors"):
        s = Stepper(g, keep=keep)
        rec = s.run()
        assert rec.error is not None and rec.node.id == ck.id
        assert "use_reentrant=False" in rec.error and ".grad" in rec.error
        assert s.position == s.step_index(ck.id)
        with pytest.raises(RuntimeError, match="use_reentrant=False"):
            s.compare_with_engine()
        s.back()
        s.reset()
    assert x.grad is None and lin.weight.grad is None and lin.bias.grad is None
    widget = aw.explore(loss, model=lin)
    widget.stepper.run()
    assert "use_reentrant=False" in widget._state["error"]["message"]
    widget.close()
    assert lin.weight.grad is None
    # The fix the message names works, with the engine's gradients.
    loss2 = checkpoint(lambda a: lin(a).tanh(), x, use_reentrant=False).sum()
    params = [x, *lin.parameters()]
    s = run_and_check(aw.capture(loss2, model=lin), params, engine(loss2, params))
    assert s.compare_with_engine() == []
    assert all(p.grad is None for p in params)


# --------------------------------------------------------------------------- custom Functions
Boom = raising(ValueError, "boom: this backward is broken")


def test_a_custom_backward_that_raises_is_a_failed_step_and_the_stepper_stays_usable():
    x = torch.randn(3, requires_grad=True)
    loss = Boom.apply(x.exp()).sum() + x.sum()
    g = aw.capture(loss)
    s = Stepper(g, keep="tensors")
    rec = s.run()
    assert rec.error == f"ValueError in {rec.node.id} (BoomBackward): boom: this backward is broken"
    assert s.position == s.step_index(rec.node.id) and s.last_error == (rec.node.id, rec.error)
    before = s.position
    s.back()
    assert s.position == before - 1 and s.failure is None
    assert s.step().ok and s.step().error == rec.error
    s.reset()
    assert s.run().error == rec.error
    with pytest.raises(ValueError, match="boom"):
        s.compare_with_engine()  # the real engine fails too: its error, hooks removed
    no_hooks_left(g)
    assert x.grad is None


class NoMat(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x * 3, x.sin()

    @staticmethod
    def backward(ctx, g1, g2):
        # Fails loudly on zeros-instead-of-None: the engine passes None for an unused output.
        assert g1 is None or g1.abs().sum() > 0, "got materialised zeros for g1"
        assert g2 is None or g2.abs().sum() > 0, "got materialised zeros for g2"
        out = None
        if g1 is not None:
            out = g1 * 3
        if g2 is not None:
            out = g2 if out is None else out + g2
        return out


def test_set_materialize_grads_false_gets_none_like_in_the_engine():
    x = torch.randn(4, requires_grad=True)
    for pick in (0, 1, 2):
        a, b = NoMat.apply(x)
        loss = a.sum() if pick == 0 else (b.sum() if pick == 1 else a.sum() + b.sum())
        want = engine(loss, [x])
        s = run_and_check(aw.capture(loss), [x], want)
        assert s.compare_with_engine() == []


# --------------------------------------------------------------------------- compiled / autocast
def test_torch_compiled_model_steps_to_the_engines_gradients_and_leaves_backward_usable():
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    compiled = torch.compile(model, backend="aot_eager")  # inductor needs ~20 s of C compiling
    x = torch.randn(4, 8, requires_grad=True)
    loss = compiled(x).pow(2).sum()
    params = [x, *model.parameters()]
    want = engine(loss, params)
    g = aw.capture(loss, model=model)
    (cf,) = [n for n in g.nodes.values() if n.name == "CompiledFunctionBackward"]
    assert cf.kind == "custom_function"
    for keep in ("summaries", "tensors"):
        s = run_and_check(g, params, want, keep=keep)
        assert s.record(s.step_index(cf.id)).called
        s.back()  # replays the compiled backward (keep="summaries"): still exact
        s.run()
        for p, w in zip(params, want):
            assert_same(s.grad(p), w)
    assert s.compare_with_engine() == []
    assert all(p.grad is None for p in params)
    loss.backward()  # the user's own backward still works afterwards
    for p, w in zip(params, want):
        assert_same(p.grad, w)


def test_autocast_mixed_dtypes_match_the_engine_bitwise():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    x = torch.randn(5, 8, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(x)
    assert out.dtype == torch.bfloat16
    loss = out.float().pow(2).mean()
    g = aw.capture(loss, model=model)
    dtypes = {m.dtype for n in g.nodes.values() for m in n.inputs}
    assert dtypes == {"bfloat16", "float32"}
    params = [x, *model.parameters()]
    want = engine(loss, params)
    for keep in ("summaries", "tensors", 0):
        s = run_and_check(g, params, want, keep=keep)
    assert s.compare_with_engine() == []
    bf16 = [v for v in s.edge_summaries().values() if v.dtype == "bfloat16"]
    assert bf16


# --------------------------------------------------------------------------- missing private API
class Twice(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def _gone(self):
    raise AttributeError("removed in this torch")


def test_a_node_lacking_a_private_attribute_names_the_torch_version(monkeypatch):
    x = torch.randn(3, requires_grad=True)
    loss = Twice.apply(x.exp()).sum()  # the odd node is deep inside, not the root
    node_type = type(loss.grad_fn.next_functions[0][0])
    monkeypatch.setattr(node_type, "_input_metadata", property(_gone))
    with pytest.raises(UnsupportedTorchError, match=rf"_input_metadata.*torch {TORCH_VERSION}"):
        aw.capture(loss)
    with pytest.raises(UnsupportedTorchError, match=r"pip install torch=="):
        aw.explore(loss)
    monkeypatch.undo()
    g = aw.capture(loss)
    monkeypatch.setattr(node_type, "needs_input_grad", property(_gone))
    with pytest.raises(UnsupportedTorchError, match=rf"needs_input_grad.*torch {TORCH_VERSION}"):
        Stepper(g)
    monkeypatch.undo()
    run_and_check(g, [x], engine(loss, [x]))


def test_a_torch_without_a_module_level_api_names_the_version(monkeypatch):
    monkeypatch.delattr(torch.autograd.graph, "get_gradient_edge")
    with pytest.raises(UnsupportedTorchError, match=rf"get_gradient_edge.*torch {TORCH_VERSION}"):
        check_torch()


# --------------------------------------------------------------------------- Stepper arguments
def test_stepper_arguments():
    x = torch.randn(3, requires_grad=True)
    loss = x.exp().sum()
    g = aw.capture(loss)
    for keep in (True, -1, 1.5, "all", None):
        with pytest.raises(ValueError, match="keep must be 'summaries', 'tensors' or a byte"):
            Stepper(g, keep=keep)
    with pytest.raises(TypeError, match=r"BackwardGraph from aw\.capture"):
        Stepper(loss)
    with pytest.raises(RuntimeError, match=r"from_dict\(\).*capture\(\)"):
        Stepper(aw.BackwardGraph.from_dict(g.to_dict()))
    closed = aw.capture(loss)
    closed.close()
    with pytest.raises(RuntimeError, match=r"closed.*capture\(\)"):
        Stepper(closed)


def test_node_arguments_accept_ids_and_records_and_reject_the_rest():
    x = torch.randn(3, requires_grad=True)
    loss = x.exp().sin().sum()
    g = aw.capture(loss)
    s = Stepper(g)
    sin = next(n for n in g.nodes.values() if n.name == "SinBackward0")
    assert s.step_index(sin) == s.step_index(sin.id) == 1
    assert s.break_at(sin) == [sin.id]
    s.clear_breakpoints(sin)
    assert s.breakpoints == []
    assert s.run(until=sin).node.id == sin.id
    for bad in (1, None, 2.0, ["n1"]):
        with pytest.raises(TypeError, match="expected a node id such as 'n3'"):
            s.step_index(bad)
    with pytest.raises(TypeError, match="node id"):
        s.run(until=3)
    with pytest.raises(KeyError, match="ids look like"):
        s.break_at("n99")
    with pytest.raises(TypeError, match=r"expected a torch.Tensor"):
        s.grad(3)
    with pytest.raises(ValueError, match="does not require grad"):
        s.grad(torch.randn(3))
    with pytest.raises(ValueError, match="not part of the captured graph"):
        s.grad(torch.randn(3, requires_grad=True) * 2)
    with pytest.raises(KeyError, match="edge ids read 'src:output_nr'"):
        s.edge_grad(3)
    with pytest.raises(IndexError, match="has not run"):
        s.record(-1)
    with pytest.raises(ValueError, match=r"already ran.*back\(\) or reset\(\)"):
        s.run(until=s.order[0])


def test_a_breakpoint_predicate_that_raises_is_reported_and_not_registered():
    x = torch.randn(3, requires_grad=True)
    g = aw.capture(x.exp().sin().sum())
    s = Stepper(g)

    def broken(node):
        return node.nmae == "SinBackward0"  # typo: AttributeError

    with pytest.raises(TypeError, match=r"'broken' raised AttributeError.*Node record"):
        s.break_at(broken)
    assert s.breakpoints == []
    assert s.break_at(lambda n: n.name == "ExpBackward0") == [s.order[2]]  # still usable
    s.run()
    assert s.position == 2 and s.at_breakpoint


def test_detached_segment_is_not_part_of_the_graph():
    x = torch.randn(3, requires_grad=True)
    h = x.exp()
    loss = (h.detach() * x).sum()
    s = run_and_check(aw.capture(loss), [x], engine(loss, [x]))
    with pytest.raises(ValueError, match="not part of the captured graph"):
        s.grad(h)


# --------------------------------------------------------------------------- explore / widget
def test_explore_bad_inputs(caplog):
    x = torch.randn(3, requires_grad=True)
    loss = x.exp().sum()
    with pytest.raises(TypeError, match=r"torch\.Tensor"):
        aw.explore(3.0)
    with pytest.raises(ValueError, match="keep must be"):
        aw.explore(loss, keep=-5)
    with pytest.raises(TypeError, match=r"nn\.Module"):
        aw.explore(loss, model="resnet")
    with pytest.raises(RuntimeError, match=r"from_dict\(\).*capture\(\)"):
        aw.AutogradWidget(aw.BackwardGraph.from_dict(aw.capture(loss).to_dict()))
    g = aw.capture(loss)
    g.close()
    with pytest.raises(RuntimeError, match="closed"):
        aw.AutogradWidget(g)
    gc.collect()


def test_explore_a_graph_that_fails_midway_stays_usable():
    x = torch.randn(3, requires_grad=True)
    w = aw.explore(Boom.apply(x.exp()).sum())
    w.stepper.run()
    err = w._state["error"]
    assert err is not None and "boom" in err["message"]
    assert w._state["position"] == w.stepper.position
    w.stepper.back()
    w.stepper.reset()
    assert w._state["position"] == 0 and w._state["error"] is None
    w.close()


# --------------------------------------------------------------------------- saved values
def test_saved_bad_requests():
    x = torch.randn(3, requires_grad=True)
    g = aw.capture((x**2).sum())
    pw = next(n.id for n in g.nodes.values() if n.name == "PowBackward0")
    with pytest.raises(KeyError, match="ids look like"):
        g.saved("n99")
    with pytest.raises(KeyError, match="ids look like"):
        g.saved(7)
    with pytest.raises(KeyError, match="it saved: exponent, self"):
        g.saved_tensor(pw, "result")
    with pytest.raises(TypeError, match="not a tensor"):
        g.saved_tensor(pw, "exponent")
    with pytest.raises(KeyError, match="saved no 'variable'"):
        g.saved_tensor(g.leaves[0], "variable")
    with pytest.raises(ValueError, match="by must be 'node' or 'module'"):
        g.saved_memory(by="layer")
    assert g.saved(g.leaves[0]) == []
    g.close()
    with pytest.raises(RuntimeError, match=r"closed.*capture\(\)"):
        g.saved(pw)


class _BadRepr:
    def __repr__(self):
        raise RuntimeError("no repr for you")


class KeepsObject(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, obj):
        ctx.obj = obj
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2, None


def test_a_ctx_attribute_whose_repr_raises_does_not_break_saved_or_explore():
    x = torch.randn(3, requires_grad=True)
    loss = KeepsObject.apply(x, _BadRepr()).sum()
    g = aw.capture(loss)
    node = next(n.id for n in g.nodes.values() if n.kind == "custom_function")
    rec = next(v for v in g.saved(node) if v.name == "ctx.obj")
    assert "_BadRepr" in str(rec.value)
    w = aw.explore(loss)
    w.close()


def test_from_dict_rejects_malformed_dicts_with_a_clear_error():
    x = torch.randn(3, requires_grad=True)
    d = aw.capture(x.exp().sum()).to_dict()
    with pytest.raises(ValueError, match="to_dict"):
        aw.BackwardGraph.from_dict({"format": d["format"]})
    bad = {**d, "edges": [*d["edges"], ["n0", 5, "n77", 0]]}
    with pytest.raises(ValueError, match="n77"):
        aw.BackwardGraph.from_dict(bad)


# --------------------------------------------------------------------------- widget messages
def test_hostile_messages_leave_the_widget_consistent(caplog):
    x = torch.randn(3, requires_grad=True)
    w = aw.explore(x.exp().sin().sum())
    sent = []
    w.send = lambda content, buffers=None: sent.append(content)
    msgs = [
        None,
        "step",
        {"type": 3},
        {"type": "explode"},
        {"type": "run_to", "node": 10**9},
        {"type": "run_to", "node": -1},
        {"type": "run_to", "node": True},
        {"type": "select", "node": "n0"},
        {"type": "inspect", "request": "x"},
        {"type": "inspect", "request": 1, "edge": 10**6},
        {"type": "run", "chunk_ms": float("nan")},
        {"type": "run", "chunk_ms": -1},
        {"type": "back"},  # at the start: nothing to undo
        {"type": "step", "payload": "x" * 1_000_000},  # huge but valid: one step
    ]
    with caplog.at_level(logging.WARNING, logger="autograd_widget"):
        for m in msgs:
            w._handle_message(w, m, [])
    assert w.stepper.position == 1 and w._state["position"] == 1
    warnings = [m for m in sent if m.get("type") == "warning"]
    assert len(warnings) >= len(msgs) - 3  # every malformed one is answered with a warning
    t0 = time.perf_counter()
    for _ in range(10):
        w._handle_message(w, {"type": "step"}, [])
    assert w.stepper.done and w._state["done"]
    w._handle_message(w, {"type": "step"}, [])  # step after done: warned, nothing changes
    assert w.stepper.done and sent[-1]["type"] == "warning"
    assert time.perf_counter() - t0 < 5
    w.close()


def test_order_is_read_only_and_not_copied_per_access():
    x = torch.randn(3, requires_grad=True)
    s = Stepper(aw.capture(x.exp().sin().sum()))
    order = s.order
    assert order is s.order, "one shared list: views index it once per step (a copy is O(n))"
    assert order == ["n0", "n1", "n2", "n3"] and order[1:3] == ["n1", "n2"]
    for mutate in (
        lambda o: o.append("n9"),
        lambda o: o.__setitem__(0, "n9"),
        lambda o: o.sort(),
        lambda o: o.__delitem__(0),
        lambda o: o.__iadd__(["n9"]),
    ):
        with pytest.raises(TypeError, match=r"read-only.*list\(stepper.order\)"):
            mutate(order)
    assert s.order == ["n0", "n1", "n2", "n3"]
    assert order + ["n9"] == ["n0", "n1", "n2", "n3", "n9"]  # noqa: RUF005  (+ still works)


def test_grad_of_a_view_of_a_leaf_taken_under_no_grad_is_the_engines_none():
    # Such a view requires grad and reads as a leaf, but autograd gave it no gradient edge:
    # torch's get_gradient_edge only raises an AssertionError ("Expected gradient function to be
    # set"); the engine answers None (allow_unused=True). The graph lookup says why it has none.
    x = torch.randn(4, requires_grad=True)
    with torch.no_grad():
        v = x[:2]
    loss = (x * 2).sum() + (v * 3).sum()
    want = torch.autograd.grad(loss, [x, v], allow_unused=True, retain_graph=True)
    g = aw.capture(loss)
    st = Stepper(g)
    st.run()
    assert want[1] is None and st.grad(v) is None  # the engine gives it nothing, nor do we
    with pytest.raises(ValueError, match=r"view of a leaf taken under torch.no_grad\(\)"):
        g.gradient_edge(v)
    assert torch.equal(st.grad(x), want[0])
