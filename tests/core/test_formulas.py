"""Every formula's torch evaluation equals the node's own output; LaTeX sanity; coverage.

For each covered type a small float64 forward program builds the node (its name is checked),
random incoming gradients go through both `fn(*grads)` (under no_grad) and `evaluate(fn, grads)`;
the node's raw outputs are reduced to their inputs' shapes as the engine's validate_outputs does.
"""

from __future__ import annotations

import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import autograd_widget as aw
from autograd_widget.core.formulas.api import (
    NOT_COVERABLE,
    covered_types,
    evaluate,
    formula,
    formula_record,
)
from tests.helpers.formula_programs import (
    BINARY,
    EXTRA,
    OTHER,
    POSITIVE,
    UNARY,
    UNIT,
    S,
    engine_reduce,
    find,
    pos,
    r,
)
from tests.helpers.formula_programs import unit as unit_t
from tests.helpers.torch_versions import needs_torch

_ALL_PROGRAMS: dict[str, object] = {**UNARY, **POSITIVE, **UNIT, **BINARY, **OTHER}


def _build(name: str, shape=S, other_shape=None) -> torch.Tensor:
    if name in UNARY:
        return UNARY[name](r(*shape))
    if name in POSITIVE:
        return POSITIVE[name](pos(*shape))
    if name in UNIT:
        return UNIT[name](unit_t(*shape))
    if name in BINARY:
        return BINARY[name](r(*shape), r(*(other_shape or shape)))
    return OTHER[name]()



def check_node(fn, name: str, *, none_slot: int | None = None) -> None:
    assert fn.name() == name
    grads = [torch.randn(tuple(m.shape), dtype=m.dtype) for m in fn._input_metadata]
    if none_slot is not None:
        grads[none_slot] = None
    with torch.no_grad():
        ref = fn(*grads)
    ref = ref if isinstance(ref, tuple) else (ref,)
    got = evaluate(fn, tuple(grads))
    assert len(got) == len(fn.next_functions) == len(ref)
    for i, (a, b) in enumerate(zip(got, ref, strict=True)):
        b = engine_reduce(b, fn, i)
        if fn.next_functions[i][0] is None:
            assert a is None, f"{name} output {i}: not needed, yet computed"
            continue
        assert (a is None) == (b is None), f"{name} output {i}: {a!r} vs {b!r}"
        assert a.shape == b.shape, f"{name} output {i}: shape {a.shape} vs {b.shape}"
        tol = {"rtol": 1e-7, "atol": 1e-9} if b.dtype == torch.float64 else {}
        torch.testing.assert_close(a, b, **tol, equal_nan=True,
                                   msg=lambda m, i=i: f"{name} output {i}: {m}")


@pytest.mark.parametrize("name", sorted(_ALL_PROGRAMS))
def test_evaluation_equals_the_node_itself(name):
    torch.manual_seed(0)
    out = _build(name)
    check_node(find(out, name), name)


#: EXTRA programs whose node an older torch does not make: index -> (torch, why).
EXTRA_NEEDS = {
    6: ("2.10", "its CPU flash-attention kernel takes grouped-query attention (enable_gqa: "
                "2.10.0 does, 2.8.0 does not); an older one runs the math path, so there is no "
                "ScaledDotProductFlashAttentionForCpuBackward0 node to check"),
}  # fmt: skip


@pytest.mark.parametrize(
    "k",
    [pytest.param(k, marks=[needs_torch(*EXTRA_NEEDS[k])] if k in EXTRA_NEEDS else [])
     for k in range(len(EXTRA))],
)  # fmt: skip
def test_other_branches_of_the_same_formulas(k):
    torch.manual_seed(k)
    name, program = EXTRA[k]
    check_node(find(program(), name), name)


def test_every_covered_type_has_a_program_and_every_program_a_formula():
    assert set(covered_types()) == set(_ALL_PROGRAMS)
    assert len(covered_types()) >= 100


def test_a_missing_incoming_gradient_counts_as_zeros():
    torch.manual_seed(1)
    out = r(5, 3).split(2, 0)[1]
    check_node(find(out, "SplitBackward0"), "SplitBackward0", none_slot=0)
    out = r(3, 4).unbind(1)[0]
    check_node(find(out, "UnbindBackward0"), "UnbindBackward0", none_slot=1)


def test_outputs_nobody_needs_are_none():
    a = torch.randn(3, 4, dtype=torch.float64)  # no grad: addmm's mat1 output is not needed
    out = torch.addmm(r(4), a, r(4, 4))
    got = evaluate(out.grad_fn, (torch.ones(3, 4, dtype=torch.float64),))
    assert got[1] is None and got[0] is not None and got[2] is not None
    check_node(out.grad_fn, "AddmmBackward0")


def test_all_incoming_gradients_none_gives_all_none():
    out = r(3) * r(3)
    assert evaluate(out.grad_fn, (None,)) == (None, None)


@settings(max_examples=25, deadline=None)
@given(
    name=st.sampled_from(sorted({**UNARY, **POSITIVE, **UNIT})),
    shape=st.lists(st.integers(1, 4), min_size=0, max_size=3),
)
def test_unary_formulas_on_random_shapes(name, shape):
    if name in ("SafeSoftmaxBackward0", "LogSoftmaxBackward0") and not shape:
        shape = [2]
    out = _build(name, tuple(shape))
    check_node(find(out, name), name)


@settings(max_examples=25, deadline=None)
@given(
    name=st.sampled_from(sorted(k for k in BINARY if k != "PreluKernelBackward0")),
    shape=st.lists(st.integers(1, 3), min_size=1, max_size=3),
    ones=st.lists(st.booleans(), min_size=3, max_size=3),
)
def test_binary_formulas_broadcast(name, shape, ones):
    other = tuple(1 if o else s for s, o in zip(shape, ones, strict=False))[1:]
    out = _build(name, tuple(shape), other)
    check_node(find(out, name), name)


# ------------------------------------------------------------------------------ LaTeX
_CODE = re.compile(r"torch\.|\*\*|\bdef\b|lambda|\.shape|\bNone\b|#\d")


def _balanced(s: str) -> bool:
    depth = 0
    for ch, prev in zip(s, " " + s, strict=False):
        if prev == "\\":
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0 and s.count(r"\left") == s.count(r"\right")


@pytest.mark.parametrize("name", covered_types())
def test_latex_is_math_not_code(name):
    tex = formula(name)
    assert tex and tex.startswith(r"\begin{aligned}") and tex.endswith(r"\end{aligned}")
    assert _balanced(tex), tex
    assert not _CODE.search(tex), tex
    assert r"\mathrm{grad}_{" in tex
    rec = formula_record(name)
    assert rec.name == name and (rec.outputs or rec.each is not None)


def test_named_examples():
    assert r"\mathrm{mat2}^{\top}" in formula("AddmmBackward0")
    assert r"\mathrm{mat1}^{\top}" in formula("AddmmBackward0")
    assert r"\alpha" in formula("AddmmBackward0") and r"\beta" in formula("AddmmBackward0")
    assert r"\odot" in formula("MulBackward0")
    assert r"\operatorname{sum}" in formula("AddBackward0")
    assert r"\mathbb{1}" in formula("ReluBackward0")
    assert formula("FooBackward0") is None
    assert formula("CopySlices") is None and "CopySlices" in NOT_COVERABLE
    assert formula("AccumulateGrad") == r"x.\mathrm{grad} \mathrel{+}= G"
    assert formula("torch::autograd::AccumulateGrad") == formula("AccumulateGrad")
    assert aw.formula is formula


def test_evaluate_refuses_an_unknown_type_in_a_sentence():
    class Fn(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    out = Fn.apply(r(2))
    with pytest.raises(KeyError, match="No formula for FnBackward yet"):
        evaluate(out.grad_fn, (torch.ones(2, dtype=torch.float64),))


@pytest.mark.parametrize(("mode", "cls"), [(0, "RNN_RELU"), (1, "RNN_TANH"), (2, "LSTM"),
                                           (3, "GRU")])
def test_the_rnn_recompute_matches_torch_layers(mode, cls):
    """The RNN tree recomputes a layer's forward (only LSTM reaches the mkldnn node on CPU):
    each mode's recompute equals torch's own layer, so its VJP is that layer's gradient."""
    from autograd_widget.core.formulas.recurrent import rnn_layer

    torch.manual_seed(mode)
    net = {"RNN_RELU": lambda: torch.nn.RNN(5, 4, nonlinearity="relu"),
           "RNN_TANH": lambda: torch.nn.RNN(5, 4), "LSTM": lambda: torch.nn.LSTM(5, 4),
           "GRU": lambda: torch.nn.GRU(5, 4)}[cls]().double()
    x, h0, c0 = r(3, 2, 5), r(1, 2, 4), r(1, 2, 4)
    ws = [net.weight_ih_l0, net.weight_hh_l0, net.bias_ih_l0, net.bias_hh_l0]
    out, hn = net(x, (h0, c0) if mode == 2 else h0)
    mine = rnn_layer(mode, x, ws, h0[0], c0[0] if mode == 2 else None, False)
    torch.testing.assert_close(mine[0], out)
    torch.testing.assert_close(mine[1], (hn[0] if mode == 2 else hn)[0])
