"""Why a node failed (engine/diagnose/failure.py, `Stepper.explain_failure`), on real programs."""

from __future__ import annotations

import pytest
import torch

import autograd_widget as aw
from autograd_widget.engine.diagnose.failure import ANOMALY_HINT, explain_failure
from tests.helpers.programs import raising
from tests.helpers.torch_versions import WHY_CULPRIT, needs_torch


def failed(out):
    graph = aw.capture(out)
    st = aw.Stepper(graph)
    rec = st.run()
    assert rec is not None and rec.error, "the step was expected to fail"
    e = st.explain_failure()
    assert e is not None and e.node == rec.node.id
    return graph, e


def name_of(graph, nid):
    return graph.nodes[nid].name


@needs_torch("2.10", WHY_CULPRIT)
def test_sigmoid_result_modified_in_place():
    x = torch.randn(3, requires_grad=True)
    y = x.sigmoid()
    y.mul_(2)
    graph, e = failed(y.sum())
    assert name_of(graph, e.node) == "SigmoidBackward0"
    assert e.kind == "inplace"
    assert (e.saved_name, e.saved_version, e.current_version) == ("result", 0, 1)
    assert name_of(graph, e.culprit) == "MulBackward0" and e.culprit_name == "MulBackward0"
    assert e.traceback is None and e.hint.startswith(ANOMALY_HINT)
    assert e.sentence == (
        f"{e.node} (SigmoidBackward0) cannot run: its saved `result` was modified by an in-place "
        f"operation after it was saved (saved at version 0, now at version 1); the in-place op "
        f"is {e.culprit} (MulBackward0)"
    )
    assert e.error.startswith("one of the variables needed for gradient computation")


@needs_torch("2.10", WHY_CULPRIT)
def test_two_in_place_ops_name_the_first_and_the_versions():
    x = torch.randn(3, requires_grad=True)
    y = x.sigmoid()
    y.mul_(2)
    y.add_(1)
    graph, e = failed(y.sum())
    assert (e.saved_version, e.current_version) == (0, 2)
    assert name_of(graph, e.culprit) == "MulBackward0"


@needs_torch("2.10", WHY_CULPRIT)
def test_in_place_on_a_saved_input_of_mul():
    x = torch.randn(3, requires_grad=True)
    w = torch.randn(3, requires_grad=True)
    a = x.exp()
    b = a * w
    a.add_(1)
    graph, e = failed(b.sum() + a.sum())  # a's in-place node is part of the graph
    assert name_of(graph, e.node) == "MulBackward0"
    assert e.saved_name == "self" and (e.saved_version, e.current_version) == (0, 1)
    assert name_of(graph, e.culprit) == "AddBackward0"
    assert graph.fn(e.culprit) is a.grad_fn


@needs_torch("2.10", WHY_CULPRIT)
def test_in_place_node_outside_the_graph_is_still_named():
    x = torch.randn(3, requires_grad=True)
    w = torch.randn(3, requires_grad=True)
    a = x.exp()
    b = a * w
    a.add_(1)
    _graph, e = failed(b.sum())  # a.add_ is not reached from b
    assert e.culprit is None and e.culprit_name == "AddBackward0"
    assert "the in-place op is AddBackward0 (not in this graph)" in e.sentence


@needs_torch("2.10", WHY_CULPRIT)
def test_forward_traceback_under_anomaly_mode():
    with torch.autograd.set_detect_anomaly(True):
        x = torch.randn(3, requires_grad=True)
        y = x.sigmoid()
        y.mul_(2)  # the culprit line
        out = y.sum()
    _graph, e = failed(out)
    assert e.traceback is not None
    assert "y.mul_(2)  # the culprit line" in "".join(e.traceback)
    assert e.hint.startswith("the in-place op's forward traceback is in `traceback`")


@needs_torch("2.10", WHY_CULPRIT)
def test_leaf_changed_under_no_grad_names_no_node():
    w = torch.randn(3, requires_grad=True)
    out = (w * w).sum()
    with torch.no_grad():
        w.add_(1)
    _graph, e = failed(out)
    assert e.kind == "inplace" and e.saved_name in ("self", "other")
    assert e.culprit is None and e.culprit_name is None
    assert "no autograd node did it: it was changed under torch.no_grad() or through .data" in (
        e.sentence
    )


@needs_torch("2.10", WHY_CULPRIT)
def test_the_engines_own_message_and_a_graph_without_live_nodes():
    x = torch.randn(3, requires_grad=True)
    y = x.sigmoid()
    y.mul_(2)
    out = y.sum()
    graph = aw.capture(out)
    with pytest.raises(RuntimeError) as err:
        out.backward()
    sig = next(n.id for n in graph.nodes.values() if n.name == "SigmoidBackward0")
    e = explain_failure(graph, sig, str(err.value))
    assert e.saved_name == "result" and name_of(graph, e.culprit) == "MulBackward0"
    dead = aw.BackwardGraph.from_dict(graph.to_dict())
    e2 = explain_failure(dead, sig, str(err.value))
    assert (e2.kind, e2.saved_version, e2.current_version, e2.saved_name, e2.culprit) == (
        "inplace", 0, 1, None, None,
    )  # fmt: skip
    assert explain_failure(graph, sig, "") is None and explain_failure(graph, "n99", "x") is None


def test_second_backward_without_retain_graph():
    x = torch.randn(3, requires_grad=True)
    out = x.exp().sum()
    graph = aw.capture(out)
    out.backward()
    st = aw.Stepper(graph)
    rec = st.run()
    e = st.explain_failure()
    assert rec.error and e.kind == "freed"
    assert name_of(graph, e.node) == "ExpBackward0" and e.saved_name == "result"
    assert "freed by an earlier backward()" in e.sentence
    assert "retain_graph=True" in e.hint


def test_custom_function_error_is_other_and_quoted():
    Boom = raising(ValueError, "shapes do not match\nsecond line")

    graph, e = failed(Boom.apply(torch.ones(2, requires_grad=True)).sum())
    assert e.kind == "other" and name_of(graph, e.node) == "BoomBackward"
    assert e.sentence == f"{e.node} (BoomBackward) raised: shapes do not match"
    assert "custom autograd.Function" in e.hint


def test_no_failure_no_explanation():
    st = aw.Stepper(aw.capture((torch.ones(2, requires_grad=True) * 2).sum()))
    assert st.explain_failure() is None
    st.run()
    assert st.explain_failure() is None


@needs_torch("2.10", WHY_CULPRIT)
def test_custom_function_saved_tensor_modified_in_place():
    class Keep(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * 2

        @staticmethod
        def backward(ctx, g):
            (t,) = ctx.saved_tensors
            return g * t

    x = torch.randn(3, requires_grad=True)
    a = x * 1.0
    out = Keep.apply(a)
    a.add_(1)
    graph, e = failed(out.sum() + a.sum())
    assert name_of(graph, e.node) == "KeepBackward" and e.kind == "inplace"
    assert e.saved_name == "saved_tensors[0]" and (e.saved_version, e.current_version) == (0, 1)
    assert name_of(graph, e.culprit) == "AddBackward0"
