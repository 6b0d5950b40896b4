"""Saved-value introspection: kinds, quirks, aliasing, validity, memory."""

from __future__ import annotations

import pytest
import torch

import autograd_widget as aw
from tests.helpers.models import make_mlp, make_transformer
from tests.helpers.torch_versions import WHY_PACKED, WHY_STALE, needs_torch


def node(g, name):
    (n,) = [n for n in g.nodes.values() if n.name == name]
    return n


def saved(g, name):
    return {s.name: s for s in g.saved(node(g, name).id)}


def test_pow_saves_the_very_input_object():
    x = torch.randn(3, requires_grad=True)
    g = aw.capture((x**2).sum(), params={"x": x})
    rec = saved(g, "PowBackward0")["self"]
    assert rec.state == "ok" and rec.shape == (3,) and rec.stride == (1,)
    assert "parameter x (the very object)" in rec.aliases
    assert g.saved_tensor(node(g, "PowBackward0").id, "self") is not None
    assert saved(g, "PowBackward0")["exponent"].value == 2


def test_exp_result_is_another_object_on_the_same_storage():
    x = torch.randn(4, requires_grad=True)
    y = x.exp()
    g = aw.capture(y * 3, torch.ones(4))
    exp = node(g, "ExpBackward0")
    rec = saved(g, "ExpBackward0")["result"]
    assert "the forward op's output" in rec.aliases
    t = g.saved_tensor(exp.id, "result")
    assert t is not y
    assert t.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()
    assert rec.summary is not None and rec.summary.norm == pytest.approx(y.norm().item())
    assert rec.value == pytest.approx(y.tolist())


def test_mlp_saves_and_shared_activations():
    model = make_mlp((4, 8, 3))
    out = model(torch.randn(5, 4))
    g = aw.capture(out.sum(), model=model)
    addmms = [n for n in g.nodes.values() if n.name == "AddmmBackward0"]
    by_shape = {}
    for n in addmms:
        recs = {s.name: s for s in g.saved(n.id)}
        assert {"mat1", "mat2"} <= set(recs)
        by_shape[recs["mat1"].shape] = recs
    relu = saved(g, "ReluBackward0")["result"]
    assert relu.shape == (5, 8) and relu.nbytes == 5 * 8 * 4
    # The second Linear saved ReLU's output as mat1: one storage, named from both sides.
    relu_id = node(g, "ReluBackward0").id
    assert any(a.startswith(f"{relu_id}.result") for a in by_shape[(5, 8)]["mat1"].aliases)
    # mat2 is the transposed weight: same storage as the parameter.
    assert any("parameter 2.weight" in a for a in by_shape[(5, 8)]["mat2"].aliases)


def test_layer_norm():
    ln = torch.nn.LayerNorm(6)
    x = torch.randn(2, 6, requires_grad=True)
    g = aw.capture(ln(x).sum(), model=ln)
    recs = saved(g, "NativeLayerNormBackward0")
    # The forward's extra outputs (mean, 1/std) are saved as result1/result2.
    assert {"input", "result1", "result2", "weight", "bias", "normalized_shape"} <= set(recs)
    assert recs["result1"].shape == (2, 1) and recs["result2"].shape == (2, 1)
    assert recs["result2"].summary.min > 0
    assert recs["normalized_shape"].value == (6,)
    assert any("parameter weight" in a for a in recs["weight"].aliases)


def test_nll_negative_ignore_index():
    logits = torch.randn(4, 3, requires_grad=True)
    loss = torch.nn.functional.nll_loss(logits.log_softmax(1), torch.tensor([0, 1, 2, 0]))
    recs = saved(aw.capture(loss), "NllLossBackward0")
    assert recs["ignore_index"].value == -100
    assert recs["weight"].kind == "none"


class WithCtx(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, scale):
        ctx.scale = scale
        ctx.tag = "hello"
        ctx.save_for_backward(a)
        return a * scale

    @staticmethod
    def backward(ctx, g):
        return g * ctx.scale, None


def test_custom_function_ctx_attributes():
    x = torch.randn(3, requires_grad=True)
    g = aw.capture(WithCtx.apply(x, 2.5).sum(), params={"x": x})
    recs = saved(g, "WithCtxBackward")
    assert recs["ctx.scale"].value == 2.5 and recs["ctx.tag"].value == "hello"
    assert recs["saved_tensors[0]"].shape == (3,)
    assert any("parameter x" in a for a in recs["saved_tensors[0]"].aliases)
    t = g.saved_tensor(node(g, "WithCtxBackward").id, "saved_tensors[0]")
    assert torch.equal(t, x)


@needs_torch("2.10", WHY_STALE)
def test_stale_after_in_place_detected_before_any_step():
    x = torch.randn(3, requires_grad=True)
    h = x * 2
    y = h.exp()
    y.add_(1)
    g = aw.capture(y.sum())
    rec = saved(g, "ExpBackward0")["result"]
    assert rec.state == "stale"
    assert rec.versions == (0, 1)
    assert "stepping this node raises" in rec.note and "inplace" in rec.note
    assert rec.shape == (3,), "metadata still read from the raw saved tensor"
    with pytest.raises(RuntimeError, match="stale"):
        g.saved_tensor(node(g, "ExpBackward0").id, "result")


def test_freed_graph():
    x = torch.randn(3, requires_grad=True)
    loss = (x.exp() ** 2).sum()
    loss.backward()
    with pytest.warns(UserWarning, match="already freed by backward"):
        g = aw.capture(loss)
    recs = saved(g, "PowBackward0")
    assert recs["self"].state == "freed" and "retain_graph=True" in recs["self"].note
    assert recs["exponent"].value == 2
    with pytest.raises(RuntimeError, match="freed"):
        g.saved_tensor(node(g, "PowBackward0").id, "self")


@needs_torch("2.10", WHY_PACKED)
def test_saved_tensors_hooks_packing_to_a_non_tensor():
    store = {}

    def pack(t):
        key = f"slot{len(store)}"
        store[key] = t.clone()
        return key

    def unpack(key):
        return store[key]

    x = torch.randn(3, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x.sin()
    g = aw.capture(y.sum())
    rec = saved(g, "SinBackward0")["self"]
    assert rec.state == "packed"
    assert rec.value == "'slot0'"
    assert "saved_tensors_hooks" in rec.note
    assert rec.shape == (3,)


def test_saved_tensor_errors():
    x = torch.randn(3, requires_grad=True)
    g = aw.capture((x**2).sum())
    pid = node(g, "PowBackward0").id
    with pytest.raises(KeyError, match="it saved: exponent, self"):
        g.saved_tensor(pid, "other")
    with pytest.raises(TypeError, match="not a tensor"):
        g.saved_tensor(pid, "exponent")


def _independent_count(g, exclude_leaves):
    leaf_ptrs = set()
    for lid in g.leaves:
        v = g.fn(lid).variable
        leaf_ptrs.add(v.untyped_storage().data_ptr())
    sizes = {}
    for nid, _n in g.nodes.items():
        fn = g.fn(nid)
        for a in dir(fn):
            if a.startswith("_raw_saved_"):
                # No hooks in these graphs: where a SavedTensor has no `.data` (torch < 2.13),
                # unpacking it gives the same storage.
                raw = getattr(fn, a)
                d = raw.data if hasattr(raw, "data") else getattr(fn, "_saved_" + a[11:])
                if isinstance(d, torch.Tensor):
                    st = d.untyped_storage()
                    sizes[st.data_ptr()] = st.nbytes()
    return sum(v for k, v in sizes.items() if not (exclude_leaves and k in leaf_ptrs))


@pytest.mark.parametrize("exclude_leaves", [False, True])
def test_transformer_memory_totals_match_an_independent_count(exclude_leaves):
    model = make_transformer(12, 32)
    x = torch.randn(2, 7, 32, requires_grad=True)
    with aw.track(model):
        out = model(x)
    g = aw.capture(out.pow(2).mean(), model=model)
    per_node = g.saved_memory(exclude_leaves=exclude_leaves)
    per_module = g.saved_memory(by="module", exclude_leaves=exclude_leaves)
    expected = _independent_count(g, exclude_leaves)
    assert sum(per_node.values()) == expected
    assert sum(per_module.values()) == expected
    assert all(k == "<outside any module>" or k.startswith("layers.") for k in per_module)
    assert "layers.0.self_attn" in per_module
    if exclude_leaves:
        assert expected < _independent_count(g, False)


def test_memory_counts_shared_storage_once():
    x = torch.randn(1000, requires_grad=True)
    h = x.sin()  # saves x (a leaf)
    out = (h.exp() * h).sum()  # exp's result saved by two nodes
    g = aw.capture(out)
    # h (4000 B) and exp's result (4000 B), each once; x (4000 B) only with the leaves.
    assert sum(g.saved_memory(exclude_leaves=True).values()) == 8000
    per_node = g.saved_memory()
    assert sum(per_node.values()) == 12000
    mul = next(n.id for n in g.nodes.values() if n.name == "MulBackward0")
    assert per_node[mul] == 8000, "Mul runs first in engine order: it pays for both"


@needs_torch("2.10", WHY_PACKED)
def test_pack_hook_returning_a_tensor_counts_the_packed_storage_and_unpacks_once():
    unpacks = []

    def pack(t):
        return t.to(torch.float16)

    def unpack(t):
        unpacks.append(t.shape)
        return t.to(torch.float32)

    x = torch.randn(1000, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        q = (x.sin().cos().tanh().exp() * x).sum()
    g = aw.capture(q, params={"x": x})
    recs = [s for n in g.nodes for s in g.saved(n) if s.kind == "tensor"]
    assert len(recs) == 6 and all(s.state == "packed" for s in recs)
    assert all("float16" in s.note for s in recs)
    assert len(unpacks) == 6, "each packed value is unpacked once, not again for aliasing"
    # Six distinct half-precision copies held: 6 x 2000 bytes (the float32 temporaries are gone).
    assert sum(g.saved_memory().values()) == 6 * 2000
