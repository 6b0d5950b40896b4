"""The timeline reads itself (issue 40, part 6): the "moved" list ranked and cut to the modules that
stand out (view/timeline.py `moved`, its rule in words), a recurrent cell's calls through time
and a fused nn.LSTM node (view/timecalls.py, `op_rows`), and the first NaN/Inf's origin: a NaN
made in the forward names the forward op and module, a NaN born and healed within a step is
listed (`origin`, `healed`, the HEALED step flag) and reaches the payload (wire/trainpayload.py).
"""

from __future__ import annotations

import json
import math

import numpy as np
import torch

import autograd_widget as aw
from autograd_widget.view import timecalls as tc
from autograd_widget.view import timeline as tl
from autograd_widget.wire.trainpayload import rows_payload, timeline_payload


def _watch_of(n_layers: int, steps: int = 4) -> aw.Watch:
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(3, 3) for _ in range(n_layers)])
    w = aw.watch(model)
    for _ in range(steps):
        loss = model(torch.randn(2, 3)).pow(2).sum()
        with w.step(loss):
            loss.backward()
    return w


def _table(w: aw.Watch, factors: dict[str, float]) -> np.ndarray:
    """Norms per (watched step, module): 1 at the first step, `factors[m]` (default 30) at the
    last, in between geometric: every module drifts, some more. Columns in the model's order
    (named_modules), as `moved` reads them."""
    have = set(w.keys()["modules"])
    modules = [m for m, _ in w.model.named_modules() if m in have]
    n = len(w.steps)
    table = np.ones((n, len(modules)))
    for c, m in enumerate(modules):
        f = factors.get(m, 30.0)
        table[:, c] = f ** (np.arange(n) / (n - 1))
    return table


def test_moved_keeps_only_the_modules_that_stand_out_when_all_drift():
    w = _watch_of(12)
    modules = [m for m, _ in w.model.named_modules()]
    assert len(modules) == 13 and modules[0] == ""
    # every module drifts 30x (the old rule listed all 13); layer 7 went 10,000x
    table = _table(w, {"7": 1e4})
    out = tl.moved(w, table=table)
    assert [m["module"] for m in out] == ["7"]
    assert out[0]["factor"] == np.float64(1e4)
    assert (out[0]["low_step"], out[0]["high_step"]) == (0, 3)
    assert out[0]["z"] > tl.MOVED_Z
    # spread changes: ranked largest first, capped
    table = _table(w, {m: 10 ** (1.1 + 0.2 * k) for k, m in enumerate(modules)})
    table[:, 3] = 1e9 ** (np.arange(4) / 3)
    table[:, 5] = 1e12 ** (np.arange(4) / 3)
    out = tl.moved(w, table=table)
    assert [m["module"] for m in out] == ["4", "2"]  # columns 5 and 3
    assert len(tl.moved(w, table=table, z=-100.0)) == tl.MOVED_CAP  # the cap holds


def test_a_small_model_lists_every_module_past_ten_times_with_the_rule_said():
    w = _watch_of(3)
    table = _table(w, {"": 20.0, "0": 5.0, "1": 300.0, "2": 40.0})
    out = tl.moved(w, table=table)
    assert [m["module"] for m in out] == ["1", "2", ""] and "z" not in out[0]
    rule = tl.moved_rule(3, 3, 4, False)
    assert "fewer than 8 modules" in rule and "at most 8" in rule
    assert "robust z-score" in tl.moved_rule(1, 13, 13, True)
    p = timeline_payload(w)
    assert p["moved"] == [] and p["moved_rule"].startswith("No module's gradient norm moved")
    json.dumps(p["moved"], allow_nan=False)


def _recurrent(steps: int = 2):
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = torch.nn.LSTMCell(3, 4)
            self.lstm = torch.nn.LSTM(3, 4)
            self.head = torch.nn.Linear(4, 1)

        def forward(self, x):
            h = c = torch.zeros(2, 4)
            for t in range(x.shape[0]):
                h, c = self.cell(x[t], (h, c))
            o, _ = self.lstm(x)
            return self.head(h + o[-1]).sum()

    model = Net()
    w = aw.watch(model)
    for _ in range(steps):
        loss = model(torch.randn(5, 2, 3))
        with w.step(loss):
            loss.backward()
    return w


def test_a_cell_run_through_time_gets_a_row_per_call_and_a_fused_lstm_stays_one_node():
    w = _recurrent()
    t = tl.timeline(w)
    calls = dict(zip(t["rows"]["id"], t["rows"]["calls"]))
    fused = dict(zip(t["rows"]["id"], t["rows"]["fused"]))
    assert calls["cell"] == 5 and calls["head"] == 1 and calls["lstm"] == 1
    assert fused["lstm"] and not fused["cell"]
    r = tl.op_rows(w, "cell")
    assert r["label"][:5] == ["t=0", "t=1", "t=2", "t=3", "t=4"]
    assert set(r["label"][5:]) == {"AccumulateGrad"} and "called 5 times" in r["note"]
    assert np.isfinite(r["values"]).all() and r["values"].shape == (len(r["label"]), 2)
    # each call's row is the norm of all its ops sent: its two matmuls' and transposes' edges
    s = w.structures[0]
    n, per_call = tc.calls_of(s, "cell")
    assert n == 5 and sorted(set(per_call.values())) == [0, 1, 2, 3, 4]
    assert sum(1 for v in per_call.values() if v == 0) == 4  # AddmmBackward0 x2, TBackward0 x2
    fr = tl.op_rows(w, "lstm")
    assert [x for x in fr["label"] if x != "AccumulateGrad"] and "fused recurrent" in fr["note"]
    assert tc.is_fused(next(x for x in fr["label"] if x != "AccumulateGrad"))
    rep = rows_payload(w, "cell")
    json.dumps(rep)
    assert rep["note"] == r["note"]


def test_a_module_called_once_keeps_one_row_per_op():
    w = _watch_of(2, steps=1)
    assert tc.calls_of(w.structures[0], "0") == (1, {})
    assert tl.op_rows(w, "0")["note"] is None


def test_a_nan_made_in_the_forward_names_the_forward_op_and_module():
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = torch.nn.Linear(4, 8)
            self.act = Log()
            self.head = torch.nn.Linear(8, 1)

        def forward(self, x):
            return self.head(self.act(self.enc(x)))

    class Log(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.ones(8))

        def forward(self, h):
            return torch.log(h * self.scale)  # a log of negatives: NaN in the forward

    model = Net()
    w = aw.watch(model)
    loss = model(torch.randn(6, 4)).pow(2).mean()
    with w.step(loss):
        loss.backward()
    o = tl.origin(w)
    assert o["kind"] == "born" and o["where"] == "forward"
    assert o["forward_op"] == "LogBackward0" and o["forward_node"] is not None
    assert "negative" in o["forward_cause"]
    found = w.first_nonfinite()[1]
    assert o["forward_module"] == found.forward_module  # the engine's answer, passed on
    p = timeline_payload(w)
    assert p["origin"]["forward_op"] == "LogBackward0" and p["first"]["step"] == 0
    assert p["healed"] is None


def test_a_nan_born_and_healed_is_listed_and_flagged_even_before_a_real_one():
    v = torch.tensor([-1.0, 4.0], requires_grad=True)
    w = aw.watch(params={"v": v})
    for step in range(3):
        loss = v.relu().sqrt().sum() if step == 1 else (v * (math.inf if step == 2 else 1)).sum()
        with w.step(loss):
            loss.backward()
    t = tl.timeline(w)
    assert t["flags"].tolist()[1] & tl.HEALED and not t["flags"].tolist()[0] & tl.HEALED
    assert t["first"]["step"] == 2  # the NaN that reached the parameters comes first ...
    hd = t["healed"]  # ... and the healed birth is still listed
    assert hd["steps"] == [1] and hd["count"] == 1
    assert hd["first"]["born_name"] == "SqrtBackward0" and "zero" in hd["first"]["born_cause"]
    assert hd["first"]["name"] is not None
    json.dumps(timeline_payload(w)["healed"], allow_nan=False)


def test_only_a_healed_step_makes_first_say_healed():
    v = torch.tensor([-1.0, 4.0], requires_grad=True)
    w = aw.watch(params={"v": v})
    loss = v.relu().sqrt().sum()
    with w.step(loss):
        loss.backward()
    assert tl.first_nonfinite(w)["step"] == 0 and tl.origin(w)["kind"] == "healed"
    assert tl.healed(w)["steps"] == [0]
