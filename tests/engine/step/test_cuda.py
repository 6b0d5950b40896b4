"""CUDA (issue 9): stepping, saved-tensor reads and the parity check on CUDA tensors.

Skipped without a GPU. `AW_TEST_DEVICE=cpu` runs the same tests on the CPU (a dry run of the
test logic on machines without one); the CUDA-only checks (memory, cross-device) are then skipped.
"""

from __future__ import annotations

import gc
import os

import pytest
import torch

import autograd_widget as aw
from autograd_widget import Stepper

DEVICE = os.environ.get("AW_TEST_DEVICE", "cuda")
ON_CUDA = DEVICE.startswith("cuda")

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(ON_CUDA and not torch.cuda.is_available(), reason="needs a CUDA device"),
]
cuda_only = pytest.mark.skipif(not ON_CUDA, reason="CUDA-specific check")


def engine(loss, inputs, grad_outputs=None):
    return torch.autograd.grad(loss, inputs, grad_outputs, retain_graph=True, allow_unused=True)


def assert_grads(s: Stepper, tensors, want, rtol=1e-5, atol=1e-6):
    for i, (t, w) in enumerate(zip(tensors, want)):
        got = s.grad(t)
        assert got is not None, f"tensor {i}: no gradient"
        assert got.device == w.device and got.dtype == w.dtype and got.shape == w.shape
        # CUDA reductions may use atomics: equal up to summation order, not always bitwise.
        torch.testing.assert_close(got, w, rtol=rtol, atol=atol, msg=f"tensor {i}")


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(16, 64),
        torch.nn.GELU(),
        torch.nn.LayerNorm(64),
        torch.nn.Linear(64, 10),
    ).to(DEVICE)


@pytest.mark.parametrize("keep", ["summaries", "tensors", 1 << 14])
def test_mlp_stepping_and_parity(keep):
    model = mlp()
    x = torch.randn(32, 16, device=DEVICE, requires_grad=True)
    target = torch.randint(0, 10, (32,), device=DEVICE)
    with aw.track(model):
        logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits, target)
    params = [x, *model.parameters()]
    want = engine(loss, params)
    g = aw.capture(loss, model=model)
    assert {m.device for n in g.nodes.values() for m in n.inputs} == {str(torch.device(DEVICE))}
    s = Stepper(g, keep=keep)
    first = s.step()
    assert first.ok and all(v.device.type == torch.device(DEVICE).type for v in first.inputs)
    rec = s.run()
    assert rec.error is None and s.done
    assert_grads(s, params, want)
    summaries = s.edge_summaries()
    assert summaries and all(v.finite for v in summaries.values())
    for _ in range(3):
        s.back()
    s.run()
    assert_grads(s, params, want)
    assert s.compare_with_engine() == []
    assert all(p.grad is None for p in params)


def test_saved_tensor_reads():
    model = mlp()
    x = torch.randn(8, 16, device=DEVICE, requires_grad=True)
    loss = model(x).pow(2).mean()
    g = aw.capture(loss, model=model)
    seen = 0
    for nid, node in g.nodes.items():
        for v in g.saved(nid):
            if v.kind != "tensor":
                continue
            seen += 1
            assert v.state == "ok" and v.device.startswith(torch.device(DEVICE).type)
            assert v.summary is not None and v.nbytes and v.storage_nbytes
            t = g.saved_tensor(nid, v.name)
            assert t.device.type == torch.device(DEVICE).type
            assert list(t.shape) == list(v.shape)
            assert float(t.double().norm()) == pytest.approx(v.summary.norm, rel=1e-4, abs=1e-6)
        if node.name == "AddmmBackward0" and node.module == "0":
            mat1 = g.saved_tensor(nid, "mat1")
            assert torch.equal(mat1, x.detach())  # the first Linear saved its very input
    assert seen >= 5
    memory = g.saved_memory(by="module", exclude_leaves=True)
    assert sum(memory.values()) > 0


def test_small_transformer_parity_and_replay():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).to(DEVICE)
    x = torch.randn(2, 7, 32, device=DEVICE, requires_grad=True)
    with aw.track(model):
        out = model(x)
    loss = out.pow(2).mean()
    params = [x, *model.parameters()]
    want = engine(loss, params)
    g = aw.capture(loss, model=model)
    for keep in ("summaries", "tensors"):
        s = Stepper(g, keep=keep)
        s.run(until=s.order[len(s.order) // 2])
        s.back()
        assert s.run().error is None and s.done
        assert_grads(s, params, want, rtol=1e-4, atol=1e-6)
    assert s.compare_with_engine() == []
    widget = aw.explore(loss, model=model)
    widget.stepper.run()
    assert widget._state["done"] and widget._state["error"] is None
    widget.close()


def test_mixed_precision_autocast():
    model = mlp()
    x = torch.randn(16, 16, device=DEVICE, requires_grad=True)
    dtype = torch.float16 if ON_CUDA else torch.bfloat16
    with torch.autocast(torch.device(DEVICE).type, dtype=dtype):
        out = model(x)
    loss = out.float().pow(2).mean()
    params = [x, *model.parameters()]
    want = engine(loss, params)
    g = aw.capture(loss, model=model)
    assert {m.dtype for n in g.nodes.values() for m in n.inputs} >= {"float32", str(dtype)[6:]}
    s = Stepper(g)
    assert s.run().error is None
    assert_grads(s, params, want, rtol=1e-3, atol=1e-5)
    assert s.compare_with_engine() == []


@cuda_only
def test_cross_device_graph_and_grad_outputs():
    w = torch.randn(5, 3, requires_grad=True)  # a CPU leaf used on the GPU
    x = torch.randn(4, 5, device=DEVICE, requires_grad=True)
    out = (x @ w.to(DEVICE)).tanh()
    go = torch.randn(4, 3, device=DEVICE)
    want = engine(out, [x, w], go)
    s = Stepper(aw.capture(out, go))
    assert s.run().error is None
    assert_grads(s, [x, w], want)
    assert s.grad(w).device.type == "cpu"
    assert s.compare_with_engine() == []
    with pytest.raises(ValueError, match=r"is on cpu but outputs\[0\] is on cuda.*\.to\("):
        aw.capture(out, go.cpu())
    scalar = out.sum()
    go0 = torch.tensor(2.0)  # a 0-d CPU grad_output: the engine moves it to the GPU
    want0 = engine(scalar, [x, w], go0)
    s0 = Stepper(aw.capture(scalar, go0))
    assert s0.run().error is None
    assert_grads(s0, [x, w], want0)


@cuda_only
def test_release_frees_gpu_memory():
    model = mlp()
    x = torch.randn(512, 16, device=DEVICE)
    # Warm up first: cuBLAS workspaces and the like are allocated once and stay.
    torch.autograd.grad(model(x).pow(2).mean(), list(model.parameters()))
    gc.collect()
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    loss = model(x).pow(2).mean()
    w = aw.explore(loss, keep="tensors")
    del loss
    w.stepper.run()
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() > base + 512 * 64 * 4  # activations + kept gradients
    w.release()
    gc.collect()
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() <= base + (1 << 16), "released: nothing pinned"
    w.close()
