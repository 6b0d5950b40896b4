"""Where a NaN/Inf gradient is born, and why (engine/diagnose/origins.py, causes.py;
engine/step/nonfinite.py).

Every cause is checked on a real program stepped by a real `Stepper`, with summaries only (the
birth's tensors then come back by one replay) and with every tensor kept: both must say the same.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch.utils.checkpoint import checkpoint

import autograd_widget as aw
from autograd_widget.engine.diagnose.origins import birth_cause, classify, loss_scale

NAN, INF = float("nan"), float("inf")


def leaf(*values, dtype=torch.float32):
    return torch.tensor(values, dtype=dtype, requires_grad=True)


def births(out, grad_outputs=None, keep="summaries"):
    st = aw.Stepper(aw.capture(out, grad_outputs), keep=keep)
    rec = st.run()
    assert rec is None or rec.error is None
    return [o for o in st.nonfinite_origins() if o.kind == "born"], st


def birth(out, grad_outputs=None):
    """The single birth of `out`'s backward, the same with summaries and with tensors kept."""
    found, st = births(out, grad_outputs)
    kept, _ = births(out, grad_outputs, keep="tensors")
    budget, _ = births(out, grad_outputs, keep=64)
    assert found == kept == budget
    assert len(found) == 1, found
    o = found[0]
    assert st.first_birth() == o
    return st.graph.nodes[o.node].name, o


# ------------------------------------------------------------------------------ causes
def test_sqrt_at_zero():
    name, o = birth(leaf(0.0, 0.0, 0.0, 4.0).sqrt().sum())
    assert name == "SqrtBackward0"
    assert o.cause == "saved `result` has 3 zeros: the derivative of sqrt at 0 is infinite"
    assert not o.expected


def test_rsqrt_at_zero():
    name, o = birth(leaf(0.0, 1.0).rsqrt().sum())
    assert name == "RsqrtBackward0" and o.cause.startswith("rsqrt of 1 zero")


@pytest.mark.parametrize("op", ["log", "log2", "log10"])
def test_log_of_zero_and_negatives(op):
    name, o = birth(getattr(leaf(-1.0, -2.0, 0.0, 3.0), op)().sum())
    assert name.lower().startswith(op)
    assert f"{op} of 1 zero" in o.cause and f"{op} of 2 negative inputs" in o.cause


def test_log1p_at_minus_one():
    name, o = birth(leaf(-1.0, 0.5).log1p().sum())
    assert name == "Log1PBackward0" and "log1p of 1 input equal to -1" in o.cause


def test_nan_made_in_the_forward_by_log_is_named_where_it_is_used():
    a, w = leaf(-1.0, -2.0, 3.0), leaf(1.0, 1.0, 1.0)
    name, o = birth((a.log() * w).sum())
    assert name == "MulBackward0"
    assert o.cause == (
        "saved `self` has 2 NaNs (the output of LogBackward0's forward: log of 2 negative inputs)"
    )


def test_saved_value_nonfinite_from_the_forward():
    a = torch.tensor([NAN, 1.0, NAN])
    name, o = birth((a * leaf(1.0, 2.0, 3.0)).sum())
    assert name == "MulBackward0" and o.cause == "saved `self` has 2 NaNs: produced in the forward"


def test_division_by_a_saved_zero():
    name, o = birth((leaf(1.0, 2.0, 3.0, 4.0) / torch.tensor([0.0, 0.0, 0.0, 1.0])).sum())
    assert name == "DivBackward0"
    assert o.cause == "division by a saved zero (3 elements of `other` are 0)"


def test_reciprocal_of_zero():
    name, o = birth(leaf(0.0, 2.0).reciprocal().sum())
    assert name == "ReciprocalBackward0" and o.cause.startswith("reciprocal of 1 zero")


def test_pow_negative_base_fractional_exponent():
    name, o = birth((leaf(-1.0, -3.0, 4.0) ** 0.5).sum())
    assert name == "PowBackward0"
    assert "pow of 2 negative bases with the exponent 0.5: NaN" in o.cause


def test_pow_zero_to_a_negative_power():
    name, o = birth((leaf(0.0, 2.0) ** -1.0).sum())
    assert name == "PowBackward0"
    assert "1 zero base with exponent -1 < 1" in o.cause


def test_pow_tensor_exponent():
    name, o = birth(leaf(-2.0, 0.0, 3.0).pow(torch.tensor([0.5, -1.0, 2.0])).sum())
    assert name == "PowBackward1"
    assert "1 negative base" in o.cause and "1 zero base" in o.cause


@pytest.mark.parametrize(
    ("op", "values", "want"),
    [
        ("acos", (1.0, 0.5), "acos at 1 input with |x| = 1"),
        ("asin", (-1.0, 1.0, 2.0, 0.0), "asin at 2 inputs with |x| = 1"),
        ("asin", (2.0, 0.0), "asin of 1 input with |x| > 1 (NaN)"),
        ("atanh", (1.0, 0.0), "atanh at 1 input with |x| = 1"),
    ],
)
def test_inverse_trig_at_the_edge_of_the_domain(op, values, want):
    name, o = birth(getattr(leaf(*values), op)().sum())
    assert name.lower().startswith(op) and want in o.cause


@pytest.mark.parametrize("square", [lambda v: v**2, lambda v: v * v])
def test_hand_written_norm_of_a_zero_vector(square):
    name, o = birth(square(torch.zeros(3, requires_grad=True)).sum().sqrt())
    assert name == "SqrtBackward0"
    assert o.cause == (
        "saved `result` has 1 zero: the derivative of sqrt at 0 is infinite (a norm written as "
        "sqrt(sum(x²)) of a zero vector; torch.linalg.vector_norm's gradient is 0 there)"
    )


@pytest.mark.parametrize("norm", [torch.norm, torch.linalg.vector_norm, torch.linalg.norm])
def test_torch_norms_of_a_zero_vector_give_no_nan(norm):  # torch 2.13 masks 0/0 there
    found, _ = births(norm(torch.zeros(3, requires_grad=True)))
    assert found == []


@pytest.mark.filterwarnings("ignore:std\\(\\)|var\\(\\)")
@pytest.mark.parametrize("op", ["std", "var"])
def test_std_var_of_one_element(op):
    name, o = birth(getattr(torch.ones(1, requires_grad=True), op)())
    assert name.lower().startswith(op)
    assert o.cause.startswith(
        f"{op} of 1 element with correction 1: the divisor n - correction is 0"
    )


def test_std_of_equal_elements_gives_no_nan():  # torch 2.13 masks 0/0 there
    assert births(torch.ones(4, requires_grad=True).std())[0] == []


def test_exp_overflow_in_the_forward():
    name, o = birth(leaf(100.0, 1.0).exp().sum())
    assert name == "ExpBackward0"
    limit = math.log(torch.finfo(torch.float32).max)
    assert o.cause == (
        f"exp overflowed in the forward: saved `result` has 1 Inf (inputs above {limit:.4g} "
        "overflow float32)"
    )


def test_softmax_of_an_all_minus_inf_row():
    x = torch.full((1, 3), -INF, requires_grad=True)
    found, st = births((x.softmax(-1) * leaf(1.0, 2.0, 3.0)).sum())
    by_name = {st.graph.nodes[o.node].name: o for o in found}
    assert "a softmax over a row holding +Inf, or whose inputs are all -Inf" in (
        by_name["SoftmaxBackward0"].cause
    )
    # the saved value's source, not its maker: the NaNs were made from the leaf's -Infs
    assert by_name["MulBackward0"].cause.startswith(
        "saved `self` has 3 NaNs (the output of SoftmaxBackward0's forward)"
    )
    assert " by SoftmaxBackward0" not in by_name["MulBackward0"].cause


@pytest.mark.parametrize(("dtype", "big"), [(torch.float16, 1000.0), (torch.bfloat16, 1e37)])
def test_half_precision_overflow_names_the_dtype_max(dtype, big):
    w = torch.ones(2, dtype=dtype, requires_grad=True)
    out = w * 100
    name, o = birth(out, torch.full((2,), big, dtype=dtype))
    mx = torch.finfo(dtype).max
    assert name == "MulBackward0"
    assert o.cause.startswith(f"{str(dtype)[6:]} overflow: finite incoming gradients")
    assert f"largest value {mx:.6g}: 2 Infs in the output" in o.cause
    assert not o.expected


def test_grad_scaler_overflow_is_expected_not_a_bug():
    w = torch.ones(3, dtype=torch.float16, requires_grad=True)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16)
    scaled = scaler.scale((w * 2).float().sum())
    graph = aw.capture(scaled)
    assert loss_scale(graph) == 65536.0
    st = aw.Stepper(graph)
    st.run()
    (o,) = [o for o in st.nonfinite_origins() if o.kind == "born"]
    assert graph.nodes[o.node].name == "ToCopyBackward0"
    assert o.expected
    assert "float16 overflow" in o.cause
    assert o.cause.startswith(
        "the expected overflow of the mixed-precision loss scaler (scale 65536), not a bug: "
        "float16 overflow: finite incoming gradients (largest |g| 6.55e+04) exceed float16's "
        "largest value 65504: 3 Infs in the output"
    )
    assert o.cause.endswith("; GradScaler skips this step and lowers the scale")


def test_loss_scale_only_for_a_power_of_two_root_multiplier():
    w = torch.ones(3, requires_grad=True)
    assert loss_scale(aw.capture(w.sum() * torch.tensor(10.0))) is None
    assert loss_scale(aw.capture(w.sum() * torch.tensor([1024.0]))) == 1024.0
    assert loss_scale(aw.capture(w.sum() * 1024.0)) == 1024.0  # a power of two: taken as one
    assert loss_scale(aw.capture(w.sum() * 3.0)) is None
    t = torch.tensor(4.0, requires_grad=True)  # a learnt factor is no loss scale
    assert loss_scale(aw.capture(w.sum() * t)) is None
    assert loss_scale(aw.BackwardGraph.from_dict(aw.capture(w.sum()).to_dict())) is None


def test_fanin_sum_that_overflows_is_born_where_it_is_received():
    w = torch.ones(2, dtype=torch.float16, requires_grad=True)
    y = w * 1.0
    out = y * 200.0 + y * 200.0
    found, st = births(out, torch.full((2,), 200.0, dtype=torch.float16))
    assert len(found) == 1
    o = found[0]
    assert st.graph.nodes[o.node].name == "MulBackward0" and o.node == st.graph.gradient_edge(y)[0]
    assert o.cause.startswith("the sum of 2 finite gradients arriving in slot 0 overflowed float16")


def test_custom_function_gets_the_generic_sentence_with_counts():
    class Bad(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * torch.tensor([NAN, 1.0, INF])

    name, o = birth(Bad.apply(leaf(1.0, 2.0, 3.0)).sum())
    assert name == "BadBackward"
    assert o.cause == "BadBackward produced 1 NaN and 1 Inf from finite incoming gradients"


# ------------------------------------------------------------------------------ labels
def test_propagated_and_healed():
    a = leaf(0.0, 1.0)
    st = aw.Stepper(aw.capture(a.sqrt().sum()))
    st.run()
    kinds = [(st.graph.nodes[o.node].name, o.kind) for o in st.nonfinite_origins()]
    assert kinds == [("SqrtBackward0", "born"), ("AccumulateGrad", "propagated")]
    assert "it ends here" in st.nonfinite_origins()[1].cause

    x = leaf(1.0, 2.0)
    out = torch.where(torch.tensor([False, True]), x, torch.zeros(2))
    st = aw.Stepper(aw.capture(out, torch.tensor([NAN, 1.0])))
    st.run()
    (o,) = st.nonfinite_origins()
    assert (st.graph.nodes[o.node].name, o.kind) == ("WhereBackward0", "healed")
    assert o.cause == "received 1 NaN in slot 0; every gradient it sent is finite"


SENT = "sent 1 NaN and 1 Inf in output 0"


def test_classify_from_summaries_alone():
    s = aw.Summary.of
    fine, bad = s(torch.ones(2)), s(torch.tensor([INF, NAN]))
    got = classify(
        [(0, "n0", [fine], [bad, None]), (1, "n1", [bad], [bad]), (2, "n2", [None], [None])],
        {"n0": "why"},
        expected={"n0": True},
    )
    assert got == [
        aw.Origin("n0", "born", "why", 0, True),
        aw.Origin("n1", "propagated", "received 1 NaN and 1 Inf in slot 0; " + SENT, 1),
    ]


def test_nothing_nonfinite_lists_nothing_and_moves_nothing():
    st = aw.Stepper(aw.capture((leaf(1.0, 2.0) ** 2).sum()))
    st.run()
    before = st.edge_summaries()
    assert st.nonfinite_origins() == [] and st.first_birth() is None
    assert st.edge_summaries() == before and st.done


def test_partial_run_and_back_and_the_state_is_untouched():
    a = leaf(0.0, 4.0)
    st = aw.Stepper(aw.capture((a.sqrt() * 3).sum()))
    st.run(until="n1")  # MulBackward0 done, SqrtBackward0 not yet
    assert st.nonfinite_origins() == []
    st.step()
    pos, summaries = st.position, st.edge_summaries()
    (o,) = [o for o in st.nonfinite_origins() if o.kind == "born"]
    assert o.cause.startswith("saved `result` has 1 zero")
    assert st.position == pos and st.edge_summaries() == summaries
    st.run()
    assert torch.isinf(st.grad(a)[0])  # the stepper still works after the replay
    st.back()
    assert st.first_birth() == o


def test_a_what_if_edit_is_named_as_the_cause():
    st = aw.Stepper(aw.capture((leaf(1.0, 2.0) * 3).sum()))
    st.step()
    st.set_edge_grad("n0:0", torch.tensor([NAN, 1.0]))
    st.run()
    o = st.first_birth()
    assert o.node == "n0" and o.cause == "the what-if edit (set) on edge n0:0 made it"
    st.reset()
    st.run()
    assert st.first_birth() is None


def test_checkpointed_node_is_not_read():
    calls = []

    def region(t):
        calls.append(1)
        return t.sqrt()

    a = leaf(0.0, 4.0)
    out = checkpoint(region, a, use_reentrant=False).sum()
    fn = out.grad_fn.next_functions[0][0]
    n = len(calls)
    sentence, expected = birth_cause(fn, [torch.ones(2)], [torch.tensor([INF, 0.25])])
    assert "saved values are recomputed inside a checkpointed region: not read" in sentence
    assert "1 Inf" in sentence and not expected
    assert len(calls) == n  # nothing was recomputed


def test_birth_cause_never_raises():
    assert birth_cause(object(), [torch.ones(2)], [torch.tensor([NAN])]) == (
        "this node produced 1 NaN from finite incoming gradients",
        False,
    )
    s, e = birth_cause(None, ["junk"], [42])
    assert isinstance(s, str) and e is False
