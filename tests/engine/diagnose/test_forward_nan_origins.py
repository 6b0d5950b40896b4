"""A NaN/Inf made in the forward is traced to the op that made it (engine/diagnose/forward.py),
in the stepper, `aw.record` and `aw.watch`; one born in the backward still says "backward".

Each case is a small model in named modules (`h.1.mlp.c_fc` does the damage), its loss a
cross-entropy: the gradient first goes non-finite at the loss's `LogSoftmaxBackward0`, and the
`Origin` must name the forward op inside `c_fc` instead, with its cause.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import autograd_widget as aw
from autograd_widget.engine.diagnose.forward import trace_forward

INF = float("inf")

#: kind -> (what c_fc does to its linear output, the forward op, a phrase of its cause, exact)
CASES = {
    "mul_inf": (lambda y: y * INF, "MulBackward0", "multiplication by a saved `other`", True),
    "log_neg": (lambda y: torch.log(y), "LogBackward0", "negative input", True),
    "exp_overflow": (lambda y: torch.exp(torch.relu(y * 1000.0)), "ExpBackward0",
                     "exp overflowed float32", True),
    "div_zero": (lambda y: torch.relu(-y.abs()) / 0.0, "DivBackward0", "division by zero", True),
}  # fmt: skip


class Fc(nn.Linear):
    def __init__(self, n_in: int, n_out: int, op=None) -> None:
        super().__init__(n_in, n_out)
        self.op = op

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = super().forward(x)
        return y if self.op is None else self.op(y)


class Mlp(nn.Module):
    def __init__(self, op=None) -> None:
        super().__init__()
        self.c_fc = Fc(4, 8, op)
        self.c_proj = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.c_proj(F.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, op=None) -> None:
        super().__init__()
        self.mlp = Mlp(op)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mlp(x)


class Net(nn.Module):
    def __init__(self, op=None) -> None:
        super().__init__()
        self.h = nn.ModuleList([Block(), Block(op)])
        self.head = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for b in self.h:
            x = b(x)
        return self.head(x)


def _model(op):
    torch.manual_seed(0)
    return Net(op), torch.randn(5, 4), torch.tensor([0, 1, 2, 0, 1])


def _loss(model, x, target):
    with aw.track(model):  # stamps each op with its module (core/track.py)
        return F.cross_entropy(model(x), target)


def _stepper(op):
    model, x, t = _model(op)
    st = aw.Stepper(aw.capture(_loss(model, x, t), model=model))
    st.run()
    return st.first_birth(), st.graph


def _record(op):
    model, x, t = _model(op)
    loss = _loss(model, x, t)
    with aw.record(loss, model=model) as rec:
        loss.backward()
    born = [o for o in rec.nonfinite_origins() if o.kind == "born"]
    return born[0] if born else None, rec.graph


def _watch(op):
    model, x, t = _model(op)
    w = aw.watch(model)
    loss = _loss(model, x, t)
    with w.step(loss):
        loss.backward()
    found = w.first_nonfinite()
    assert found is not None and found[0] == 0
    return found[1], w.structures[w.record(0).structure].graph


PATHS = {"stepper": _stepper, "record": _record, "watch": _watch}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("kind", list(CASES))
def test_a_forward_nan_names_the_forward_op_in_its_module(kind, path):
    op, want_op, phrase, exact = CASES[kind]
    origin, graph = PATHS[path](op)
    assert origin is not None and origin.kind == "born"
    # where the gradient went bad is still said (the loss's log_softmax): the meaning of `node`
    assert graph.nodes[origin.node].name == "LogSoftmaxBackward0"
    assert origin.where == "forward", origin
    assert origin.forward_op == want_op, origin.forward_cause
    assert graph.nodes[origin.forward_node].name == want_op
    assert origin.forward_module == "h.1.mlp.c_fc"
    assert phrase in origin.forward_cause
    assert origin.forward_exact is exact


@pytest.mark.parametrize("path", list(PATHS))
def test_a_nan_born_in_the_backward_still_says_backward(path):
    origin, graph = PATHS[path](lambda y: torch.sqrt(y - y.detach()))  # sqrt at 0: finite forward
    assert origin is not None and graph.nodes[origin.node].name == "SqrtBackward0"
    assert origin.where == "backward" and origin.forward_op is None
    assert origin.cause.startswith("saved `result` has 40 zeros: the derivative of sqrt at 0")


def test_a_nan_made_of_infs_is_followed_to_where_the_infs_were_made():
    x = torch.full((1, 3), -INF, requires_grad=True)
    w = torch.ones(3, requires_grad=True)
    st = aw.Stepper(aw.capture((x.softmax(-1) * w).sum()))
    st.run()
    o = st.first_birth()
    assert o.where == "forward" and o.forward_op == "torch::autograd::AccumulateGrad"
    assert o.forward_cause.startswith("the leaf tensor already held 3 Infs before this forward")
    assert "SoftmaxBackward0 then turned them into 3 NaNs" in o.forward_cause


def test_an_unsaved_input_is_said_not_guessed():
    a = torch.ones(3, requires_grad=True)
    y = ((a * 1e30) * 1e30).exp()  # the products' outputs are saved nowhere
    fwd = trace_forward((y * torch.ones(3, requires_grad=True)).sum().grad_fn.next_functions[0][0])
    assert fwd is not None and fwd.op == "ExpBackward0" and not fwd.exact
    assert "was not saved: whether it was already non-finite is unknown" in fwd.cause


def test_the_forward_walk_disturbs_nothing():
    model, x, t = _model(CASES["log_neg"][0])
    loss = _loss(model, x, t)
    fn = loss.grad_fn
    while fn.name() != "LogSoftmaxBackward0":
        fn = fn.next_functions[0][0]
    versions = [p._version for p in model.parameters()]
    assert trace_forward(fn).op == "LogBackward0"
    assert [p._version for p in model.parameters()] == versions
    assert all(p.grad is None for p in model.parameters())
    loss.backward()  # the graph is intact


def test_the_forward_origin_survives_the_watch_file_and_a_saved_recording(tmp_path):
    model, x, t = _model(CASES["log_neg"][0])
    with aw.watch(model, path=tmp_path / "run.awwatch") as w:
        loss = _loss(model, x, t)
        with w.step(loss):
            loss.backward()
    _, origin = aw.load_watch(tmp_path / "run.awwatch").first_nonfinite()
    assert (origin.where, origin.forward_op, origin.forward_module) == (
        "forward", "LogBackward0", "h.1.mlp.c_fc")
    assert origin.cause.startswith("saved `result` has ")  # the backward sentence alone
    model, x, t = _model(CASES["log_neg"][0])
    loss = _loss(model, x, t)
    with aw.record(loss, model=model) as rec:
        loss.backward()
    back = aw.load_recording(rec.save(tmp_path / "rec.json"))
    assert back.nonfinite_origins() == rec.nonfinite_origins()
    born = [o for o in back.nonfinite_origins() if o.kind == "born"]
    assert born[0].forward_op == "LogBackward0" and born[0].forward_module == "h.1.mlp.c_fc"

