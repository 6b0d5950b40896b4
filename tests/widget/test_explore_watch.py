"""aw.explore(watch): the timeline payload (view/timeline.py, wire/trainpayload.py) and its messages
(watch_step, timeline_rows, gain), the graph below following the selected step (the same drawing
while the structure stays, a new one when it changes), and a loaded watch."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import autograd_widget as aw
from autograd_widget.view import timeline as tl
from autograd_widget.wire.protocol import dispatch


def trained(steps=6, every=2, bad=4, seed=0):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    w = aw.watch(model, every=every)
    for step in range(steps):
        x = torch.randn(5, 4)
        if step == bad:
            x[0, 0] = float("nan")
        model.zero_grad()
        loss = model(x).pow(2).mean()
        with w.step(loss):
            loss.backward()
    return model, w


def test_explore_opens_on_the_first_nonfinite_step_with_the_timeline():
    _, w = trained()
    wid = aw.explore(w)
    t = wid._timeline
    assert wid.watch is w and wid.watch_step == 4 and wid.stepper.done
    assert t["format"] == tl.FORMAT and t["n_steps"] == 6 and t["every"] == 2
    assert np.frombuffer(t["watched"], np.int32).tolist() == [0, 2, 4]
    flags = np.frombuffer(t["flags"], np.uint8)
    assert flags.tolist() == [1, 0, 1, 0, 3, 0]  # watched (1); step 4 non-finite (2) too
    assert t["rows"]["id"] == ["", "0", "2"] and t["rows"]["label"][0] == "Sequential"
    values = np.frombuffer(t["values"], np.float32).reshape(3, 3)
    assert np.isinf(values[:, 2]).all() and np.isfinite(values[:, :2]).all()
    assert values[0, 0] == pytest.approx(math.log10(w.series("")[0]), rel=1e-6)
    assert t["first"] == {"step": 4, "watched": True, "node": "n1", "name": "PowBackward0",
                          "cause": t["first"]["cause"], "expected": False}  # fmt: skip
    assert "NaN" in t["first"]["cause"]
    loss = np.frombuffer(t["loss"], np.float32)
    assert loss[0] == pytest.approx(w.records[0].loss) and math.isnan(loss[4])
    wid.close()


def test_watch_step_messages_move_the_graph_below():
    _, w = trained()
    wid = aw.explore(w)
    s = wid._session
    payload = dict(wid._graph)
    assert dispatch(s, {"type": "watch_step", "step": 0}) == []
    assert wid.watch_step == 0 and s.watch_step == 0
    assert wid.stepper.recording.meta["watch_step"] == 0 and wid.stepper.done
    assert wid._graph == payload  # the same structure: the same drawing, other gradients
    st = wid._state
    assert st["done"] and np.isfinite(np.frombuffer(st["edge_norm"], np.float32)).any()
    bad = dispatch(s, {"type": "watch_step", "step": 3})
    assert bad[0]["type"] == "warning" and "not a watched step" in bad[0]["message"]
    assert dispatch(s, {"type": "watch_step", "step": 4, "node": "n1"}) == []
    assert wid.selected == "n1"
    wid.watch_step = 2  # from Python
    assert s.watch_step == 2 and wid.stepper.recording.meta["watch_step"] == 2
    wid.stepper.reset()  # the new stepper is followed: stepping it from Python updates the view
    assert wid._state["position"] == 0
    wid.close()


def test_timeline_rows_and_gain_replies():
    _, w = trained()
    wid = aw.explore(w)
    s = wid._session
    (rep,) = dispatch(s, {"type": "timeline_rows", "module": "0", "request": 3})
    data = rep["data"]
    assert rep["request"] == 3 and data["label"] == ["AddmmBackward0", "AccumulateGrad",
                                                     "TBackward0", "AccumulateGrad"]  # fmt: skip
    import base64
    import json

    json.dumps(data)  # a reply is JSON only
    vals = np.frombuffer(base64.b64decode(data["values"]), "<f4").reshape(4, 3)
    assert np.isfinite(vals[:, 0]).all() and np.isinf(vals[0, 2])
    (g,) = dispatch(s, {"type": "gain", "request": 4})
    json.dumps(g, allow_nan=False)
    rec = wid.stepper.recording
    gains = tl.gain(rec)
    for j, v in enumerate(g["data"]["items"]):
        nid = s.scene.node_of_item(j)
        if v is not None:
            assert v == pytest.approx(math.log10(gains[nid]))
    assert dispatch(s, {"type": "timeline_rows", "request": 1})[0]["type"] == "warning"
    plain = aw.explore((torch.ones(2, requires_grad=True) * 2).sum())
    assert dispatch(plain._session, {"type": "gain", "request": 1})[0]["type"] == "warning"
    assert dispatch(plain._session, {"type": "watch_step", "step": 0})[0]["type"] == "warning"
    plain.close()
    wid.close()


def test_gain_is_out_over_in():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    loss = (w * 3).sum()
    with aw.record(loss) as rec:
        loss.backward()
    g = tl.gain(rec)
    assert g["n1"] == pytest.approx(3.0) and g["n0"] == pytest.approx(math.sqrt(2) / 1.0)


def test_a_new_structure_gets_its_own_drawing_and_moved_modules_are_listed():
    torch.manual_seed(0)
    a = torch.nn.Linear(3, 3)
    b = torch.nn.Linear(3, 3)
    model = torch.nn.ModuleDict({"a": a, "b": b})
    w = aw.watch(model)
    for step in range(4):
        x = torch.randn(2, 3) * (100.0 if step == 3 else 1.0)
        h = a(x) if step % 2 == 0 else b(a(x))  # two structures, alternating
        loss = h.pow(2).sum()
        with w.step(loss):
            loss.backward()
    assert len(w.structures) == 2
    wid = aw.explore(w)
    assert wid.watch_step == 3
    g3 = dict(wid._graph)
    wid.watch_step = 2
    assert wid._graph != g3 and len(wid.graph.nodes) < len(w.structures[1].graph.nodes)
    moved = tl.moved(w)
    assert moved and moved[0]["factor"] > 10 and moved[0]["high_step"] == 3
    assert {m["module"] for m in moved} >= {"a"}
    rows = tl.op_rows(w, "b")
    vals = rows["values"]
    assert np.isnan(vals[:, [0, 2]]).all() and np.isfinite(vals[:, [1, 3]]).all()  # b's steps
    # a's ops are in both structures (other node ids): one row each, a value at every step
    rows = tl.op_rows(w, "a")
    assert rows["label"] == ["AddmmBackward0", "AccumulateGrad", "TBackward0", "AccumulateGrad"]
    assert np.isfinite(rows["values"]).all()
    wid.close()


def test_explore_a_loaded_watch_and_bad_inputs(tmp_path):
    _, w = trained(bad=None)
    back = aw.load_watch(w.save(tmp_path / "w.awwatch"))
    wid = aw.explore(back)
    assert wid.watch_step == 4 and wid._timeline["first"] is None
    assert wid._timeline["rows"]["label"][0] == "Sequential"  # the model's class, from meta
    wid.close()
    with pytest.raises(ValueError, match="no watched step"):
        aw.explore(aw.watch())
    with pytest.raises(TypeError, match=r"model/params apply to aw\.watch"):
        aw.explore(w, model=torch.nn.Linear(1, 1))


def test_the_standalone_page_holds_the_timeline_and_the_shown_steps_graph(tmp_path):
    from autograd_widget.export.html import walkthrough

    _, w = trained()
    wid = aw.explore(w)
    wid.watch_step = 2
    walk = walkthrough(wid)
    assert walk["watch_step"] == 2 and walk["timeline"]["format"] == tl.FORMAT
    assert walk["timeline"]["values"]["dtype"] == "float32" and walk["timeline"]["selected"] == 2
    assert walk["timeline"]["first"]["step"] == 4
    page = wid.save_html(tmp_path / "watch.html").read_text(encoding="utf-8")
    assert "autograd_widget.timeline/1" in page
    wid.close()
