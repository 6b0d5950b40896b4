"""The module of the forward op that made a NaN/Inf: `Origin.forward_module` and what the cause
says where no module was recorded, in the stepper, `aw.record` and `aw.watch`.

Module paths reach a node two ways (core/capture.py): `aw.track(model)` around the forward stamps
every op with the module running it (core/track.py); without it, only an op that uses a
parameter gets a module (its owner's). So an activation's op (a log of a negative, GELU times
inf) in `h.1.mlp.act` is named in its module under `aw.track`, and without it the cause says the
module its input came out of (`h.1.mlp.c_fc`), never a module guessed for the op itself.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import autograd_widget as aw
from autograd_widget.engine.diagnose.collective import birth_evidence
from autograd_widget.engine.diagnose.forward import Locator, input_modules
from autograd_widget.engine.diagnose.origins import Origin

INF = float("inf")

#: kind -> (the activation, the forward op it makes the NaN/Inf with)
ACTS = {
    "log_neg": (torch.log, "LogBackward0"),
    "gelu_times_inf": (lambda h: F.gelu(h) * INF, "MulBackward0"),
}


class Act(nn.Module):
    def __init__(self, fn=None) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return F.gelu(h) if self.fn is None else self.fn(h)


class Mlp(nn.Module):  # GPT-2's names
    def __init__(self, fn=None) -> None:
        super().__init__()
        self.c_fc, self.act, self.c_proj = nn.Linear(4, 8), Act(fn), nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.c_proj(self.act(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, fn=None) -> None:
        super().__init__()
        self.mlp = Mlp(fn)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.mlp(x)


class Net(nn.Module):
    def __init__(self, fn=None) -> None:
        super().__init__()
        self.h = nn.ModuleList([Block(), Block(fn)])
        self.head = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for b in self.h:
            x = b(x)
        return self.head(x)


def _data():
    torch.manual_seed(0)
    return torch.randn(5, 4), torch.tensor([0, 1, 2, 0, 1])


def _loss(model, x, t, tracked):
    if not tracked:
        return F.cross_entropy(model(x), t)
    with aw.track(model):
        return F.cross_entropy(model(x), t)


def _stepper(model, tracked):
    x, t = _data()
    st = aw.Stepper(aw.capture(_loss(model, x, t, tracked), model=model))
    st.run()
    return st.first_birth()


def _record(model, tracked):
    x, t = _data()
    loss = _loss(model, x, t, tracked)
    with aw.record(loss, model=model) as rec:
        loss.backward()
    return next(o for o in rec.nonfinite_origins() if o.kind == "born")


def _watch(model, tracked):
    """Two finite steps first (the structure is captured on a finite step), then the bad one."""
    x, t = _data()
    w = aw.watch(model)
    fn = model.h[1].mlp.act.fn
    for step in range(3):
        model.h[1].mlp.act.fn = fn if step == 2 else None
        loss = _loss(model, x, t, tracked)
        with w.step(loss):
            loss.backward()
        model.zero_grad(set_to_none=True)
    model.h[1].mlp.act.fn = fn
    step, origin = w.first_nonfinite()
    assert step == 2
    return origin


PATHS = {"stepper": _stepper, "record": _record, "watch": _watch}


def _model(kind):
    torch.manual_seed(1)
    return Net(ACTS[kind][0])


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("kind", list(ACTS))
def test_under_track_the_forward_op_is_named_in_its_submodule(kind, path):
    origin = PATHS[path](_model(kind), tracked=True)
    assert (origin.where, origin.forward_op) == ("forward", ACTS[kind][1])
    assert origin.forward_module == "h.1.mlp.act"
    assert "came out of" not in origin.forward_cause  # the op's own module says it all


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("kind", list(ACTS))
def test_untracked_the_cause_names_the_module_the_input_came_out_of(kind, path):
    origin = PATHS[path](_model(kind), tracked=False)
    assert (origin.where, origin.forward_op) == ("forward", ACTS[kind][1])
    assert origin.forward_module is None  # not recorded: never guessed
    assert origin.forward_cause.endswith("; its input came out of module h.1.mlp.c_fc")


def test_the_forward_origin_with_its_input_module_survives_the_watch_file(tmp_path):
    x, t = _data()
    model = _model("log_neg")
    with aw.watch(model, path=tmp_path / "run.awwatch") as w:
        loss = _loss(model, x, t, tracked=False)
        with w.step(loss):
            loss.backward()
    _, origin = aw.load_watch(tmp_path / "run.awwatch").first_nonfinite()
    assert origin.forward_op == "LogBackward0" and origin.forward_module is None
    assert origin.forward_cause.endswith("its input came out of module h.1.mlp.c_fc")


class Cells(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell, self.out = nn.LSTMCell(3, 4), nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = c = torch.zeros(x.shape[1], 4)
        for t in range(x.shape[0]):
            h, c = self.cell(x[t], (h, c))
        return self.out(h)


def test_an_lstm_cells_pointwise_ops_carry_its_module_in_every_graph():
    torch.manual_seed(0)
    model, x = Cells(), torch.randn(3, 2, 3)
    pointwise = {"SigmoidBackward0", "TanhBackward0", "MulBackward0", "UnsafeSplitBackward0"}

    def modules(graph):
        return {n.module for n in graph.nodes.values() if n.name in pointwise}

    with aw.track(model):
        loss = model(x).sum()
    assert modules(aw.capture(loss, model=model)) == {"cell"}
    with aw.record(loss, model=model) as rec:
        loss.backward()
    assert modules(rec.graph) == {"cell"}
    w = aw.watch(model)
    with aw.track(model):
        loss = model(x).sum()
    with w.step(loss):
        loss.backward()
    assert modules(w.structures[w.record(0).structure].graph) == {"cell"}


def test_input_modules_reads_through_ops_without_a_module_and_stops_at_the_nearest():
    a = torch.ones(3, requires_grad=True)
    b = torch.ones(3, requires_grad=True)
    u, v = a.exp(), b.exp()
    g = u.tanh()  # no module: looked through
    z = g * v
    loc = Locator([z.grad_fn, g.grad_fn, u.grad_fn, v.grad_fn], ["n0", "n1", "n2", "n3"],
                  [None, None, "enc.fc", "dec.fc"])  # fmt: skip
    assert input_modules(z.grad_fn, loc) == ["dec.fc"]  # v's producer is one edge back
    assert input_modules(g.grad_fn, loc) == ["enc.fc"]
    assert input_modules(z.grad_fn, Locator([z.grad_fn], ["n0"], [None])) == []


def test_the_backward_cause_names_the_saved_values_source_not_a_maker():
    """The node where the gradient went bad saved a value another op output: the cause says
    whose output it is, not "produced by" it, next to the forward op that made the NaN."""
    x, _ = _data()
    model = _model("log_neg")
    with aw.track(model):
        loss = F.mse_loss(model(x), torch.zeros(5, 3))
    st = aw.Stepper(aw.capture(loss, model=model))
    st.run()
    o = st.first_birth()
    assert st.graph.nodes[o.node].name == "MseLossBackward0"
    assert o.cause == "saved `self` has 15 NaNs (the output of AddmmBackward0's forward)"
    assert (o.forward_op, o.forward_module) == ("LogBackward0", "h.1.mlp.act")


@pytest.mark.parametrize(("cause", "evidence"), [
    ("saved `self` has 6 NaNs (the output of AddmmBackward0's forward)", 1),
    ("saved `self` has 1 NaN (the output of LogBackward0's forward: log of 1 negative input)", 2),
    ("saved `self` has 2 NaNs: produced in the forward", 1),
    ("saved `result` has 1 NaN: produced in the forward (sqrt of a negative input)", 2),
    ("saved `self` has 1 NaN: produced in the forward by AddmmBackward0", 1),  # older files
    ("saved `result` has 3 zeros: the derivative of sqrt at 0 is infinite", 3),
])  # fmt: skip
def test_birth_evidence_reads_the_saved_values_source(cause, evidence):
    assert birth_evidence(Origin("n0", "born", cause, 0), "MulBackward0") == evidence
