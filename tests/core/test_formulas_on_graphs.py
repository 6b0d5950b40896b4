"""Formulas on captured graphs: every zoo node type is covered (and evaluates like the node),
the inspector record shows shapes (also inside a non-reentrant checkpoint region, without
recomputing it), unknown types say so, and docs/formulas.md is in sync with the table."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

import autograd_widget as aw
from autograd_widget.core.formulas.api import covered_types, evaluate, node_formula
from autograd_widget.core.formulas.doc import formulas_markdown
from tests.helpers.formula_programs import engine_reduce
from tests.helpers.torch_versions import WHY_META, needs_checkpoint_frames, needs_torch
from tests.zoo import models as zoo

ROOT = Path(__file__).resolve().parents[2]


def _zoo_graph(name: str):
    if name in zoo.TRANSFORMERS:
        pytest.importorskip("transformers")
    torch.manual_seed(0)
    loss = zoo.forward(zoo.MODELS[name]("small"))
    return loss, aw.capture(loss)


@pytest.mark.zoo
@pytest.mark.parametrize("name", list(zoo.MODELS))
def test_every_zoo_node_type_has_a_formula_that_evaluates_like_the_node(name):
    loss, g = _zoo_graph(name)
    types = {n.name for n in g.nodes.values()} - {"AccumulateGrad"}
    missing = sorted(types - set(covered_types()))
    assert missing == [], f"{name}: no formula for {missing}"
    assert aw.formula("AccumulateGrad") == r"x.\mathrm{grad} \mathrel{+}= G"
    seen: set[str] = set()
    for nid, node in g.nodes.items():
        if node.name in seen or node.kind != "function":
            continue
        seen.add(node.name)
        fn = g.fn(nid)
        torch.manual_seed(1)
        grads = [torch.randn(tuple(m.shape), dtype=m.dtype) for m in fn._input_metadata]
        with torch.no_grad():
            ref = fn(*grads)
        ref = ref if isinstance(ref, tuple) else (ref,)
        got = evaluate(fn, grads)
        for i, (a, b) in enumerate(zip(got, ref, strict=True)):
            b = engine_reduce(b, fn, i)
            if fn.next_functions[i][0] is None:
                assert a is None
                continue
            assert a is not None and a.shape == b.shape, (name, node.name, i)
            tol = {"rtol": 2e-2, "atol": 2e-2} if b.dtype == torch.bfloat16 else {
                "rtol": 1e-4, "atol": 1e-5}
            torch.testing.assert_close(a, b, **tol, msg=lambda m, n=node.name, i=i:
                                       f"{name} {n} output {i}: {m}")
        nf = node_formula(g, nid)
        assert nf.known and nf.latex and nf.lines
    del loss


def test_node_formula_shows_the_actual_shapes():
    a = torch.randn(16, 4, requires_grad=True)
    lin = torch.nn.Linear(4, 8)
    out = lin(a)
    g = aw.capture(out.sum())
    nid = next(k for k, n in g.nodes.items() if n.name == "AddmmBackward0")
    nf = node_formula(g, nid)
    assert nf.known and nf.name == "AddmmBackward0"
    by = {ln.label: ln for ln in nf.lines}
    assert by["mat1"].shapes == r"[16\times 8]\cdot[8\times 4] \to [16\times 4]"
    assert by["mat2"].shapes == r"[4\times 16]\cdot[16\times 8] \to [4\times 8]"
    assert by["self"].needed and by["mat1"].needed
    assert r"\quad [16\times 8]\cdot[8\times 4]" in nf.latex_shapes
    assert nf.latex == aw.formula("AddmmBackward0")


def test_node_formula_for_unknown_and_accumulate_grad():
    class Twice(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, gr):
            return gr * 2

    x = torch.randn(3, requires_grad=True)
    g = aw.capture(Twice.apply(x).sum())
    nid = next(k for k, n in g.nodes.items() if n.name == "TwiceBackward")
    nf = node_formula(g, nid)
    assert not nf.known and nf.latex is None
    assert nf.text == ("No formula for TwiceBackward yet: its gradients are computed by "
                       "torch's C++ code.")
    leaf = node_formula(g, g.leaves[0])
    assert leaf.known and "accumulates into" in leaf.text and r"\mathrel{+}=" in leaf.latex


@needs_torch("2.10", WHY_META)
@needs_checkpoint_frames()
def test_shapes_inside_a_checkpoint_region_are_read_without_recomputing():
    calls = []

    def region(t, w):
        calls.append(1)
        return torch.sin(t @ w)

    a = torch.randn(5, 3, requires_grad=True)
    w = torch.randn(3, 2, requires_grad=True)
    out = checkpoint(region, a, w, use_reentrant=False)
    g = aw.capture(out.sum())
    assert len(calls) == 1
    mm = next(k for k, n in g.nodes.items() if n.name == "MmBackward0")
    nf = node_formula(g, mm)
    assert len(calls) == 1, "reading shapes recomputed the region"
    assert nf.lines[0].shapes == r"[5\times 2]\cdot[2\times 3] \to [5\times 3]"
    sin = next(k for k, n in g.nodes.items() if n.name == "SinBackward0")
    assert node_formula(g, sin).lines[0].shapes is not None
    assert len(calls) == 1


def test_shapes_of_a_freed_graph_are_explained_not_raised():
    x = torch.randn(3, requires_grad=True)
    y = torch.sin(x).sum()
    g = aw.capture(y)
    y.backward()
    sin = next(k for k, n in g.nodes.items() if n.name == "SinBackward0")
    nf = node_formula(g, sin)
    assert nf.known and nf.lines[0].shapes is None and "shapes unknown" in nf.shape_note


def test_every_line_of_every_zoo_free_program_renders_shapes():
    x = torch.randn(2, 3, 8, requires_grad=True)
    ln = F.layer_norm(x, (8,), torch.randn(8, requires_grad=True),
                      torch.randn(8, requires_grad=True))
    g = aw.capture(ln.sum())
    nid = next(k for k, n in g.nodes.items() if n.name == "NativeLayerNormBackward0")
    nf = node_formula(g, nid)
    assert [ln.label for ln in nf.lines] == ["input", "weight", "bias"]
    assert all(ln.shapes for ln in nf.lines), nf


def test_the_doc_lists_every_type_and_is_in_sync():
    doc = (ROOT / "docs" / "formulas.md").read_text()
    assert doc == formulas_markdown(), "regenerate docs/formulas.md (see its first lines)"
    for name in covered_types():
        assert f"`{name}`" in doc
