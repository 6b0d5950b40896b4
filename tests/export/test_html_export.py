"""Standalone export: the walkthrough plays exactly what a live stepper shows, offline."""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest
import torch

import autograd_widget as aw
from autograd_widget.export import html as export
from autograd_widget.view import stateview as view_state
from autograd_widget.wire import payload as view
from autograd_widget.wire import protocol
from tests.helpers.models import make_mlp


def decode(obj):
    if isinstance(obj, dict) and set(obj) == {"dtype", "bdata"}:
        return np.frombuffer(base64.b64decode(obj["bdata"]), dtype=obj["dtype"]).copy()
    if isinstance(obj, dict):
        return {k: decode(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [decode(v) for v in obj]
    return obj


def play(walk, position):
    """Apply the walked deltas up to `position`, as the front-end does."""
    state = decode(walk["state"])
    arrays = {k: state[k].copy() for k in protocol.STATE_ARRAYS}
    values = dict(state["edge_values"])
    scalars = {k: state[k] for k in protocol.STEP_SCALARS}
    for delta in decode(walk["steps"])[:position]:
        for k in protocol.STATE_ARRAYS:
            if k in delta:
                arrays[k][delta[k]["index"]] = delta[k]["new"]
        ev = delta.get("edge_values")
        if ev:
            for key in ev["unset"]:
                values.pop(key)
            values.update(ev["set"])
        scalars = delta["scalars"]
    return arrays, values, scalars


def same(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return a.shape == b.shape and bool(((a == b) | (np.isnan(a) & np.isnan(b))).all())


def check_against_live(w):
    walk = json.loads(json.dumps(export.walkthrough(w)))  # it must be JSON as written
    assert walk["format"] == export.WALKTHROUGH_FORMAT
    live = aw.Stepper(w.graph)
    sv = view_state.StateView(w.graph, live, w._session.scene.visible)
    for pos in range(len(walk["steps"]) + 1):
        if pos:
            live.step()
        state = sv.update()
        want = sv.visible_arrays()
        arrays, values, scalars = play(walk, pos)
        for k in protocol.STATE_ARRAYS:
            assert same(arrays[k], want[k]), (pos, k)
        assert values == json.loads(json.dumps(want["edge_values"]))
        assert scalars["status"] == state["status"] and scalars["position"] == pos
    live.close()
    return walk


def test_walkthrough_plays_every_position_of_z():
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    w = aw.explore(x**2 + y, params={"x": x, "y": y})
    walk = check_against_live(w)
    assert len(walk["steps"]) == 4
    assert w.stepper.position == 0, "the live stepper is not moved"
    _, values, scalars = play(walk, 4)
    assert sorted(v[0] for v in values.values()) == [1.0, 1.0, 4.0]
    assert scalars["status"] == "ran AccumulateGrad (x) (step 4 / 4) — done"
    edges = walk["inspect"]["edges"]
    assert any(e["summary"]["values"] == [4.0] for e in edges.values())
    w.close()


def test_walkthrough_of_a_folded_mlp():
    model = make_mlp((4, 8, 8, 3))
    with aw.track(model):
        out = model(torch.randn(5, 4))
    w = aw.explore(out.pow(2).mean(), model=model, collapse="modules")
    walk = check_against_live(w)
    assert view.decode_graph(decode(walk["graph"]))["nodes"]["kind"].count("group") == 5
    assert decode(walk["graph"])["nodes"]["x"].dtype == np.float32
    w.close()


def test_walkthrough_stops_at_a_failing_node():
    x = torch.randn(3, requires_grad=True)
    y = (x * 2).exp()
    y.add_(1)
    w = aw.explore(y.sum())
    walk = export.walkthrough(w)
    assert walk["failed"] is not None and "inplace" in walk["failed"]["message"]
    assert walk["steps"][-1]["scalars"]["error"] is not None
    w.close()


def test_save_html_is_self_contained(tmp_path):
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    w = aw.explore(x**2 + y, params={"x": x, "y": y})
    path = w.save_html(tmp_path / "z.html")
    text = path.read_text()
    assert text.startswith("<!doctype html>")
    # Everything inline: no external script, stylesheet, image or font.
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", text)
    assert "autograd-widget-walkthrough" in text and "mod.mountWalkthrough(" in text
    walk = re.search(
        r'<script type="application/json" id="autograd-widget-walkthrough">(.*?)</script>',
        text, re.S,
    ).group(1)
    assert json.loads(walk)["format"] == export.WALKTHROUGH_FORMAT
    with pytest.raises(ValueError, match="html"):
        w.save_html(tmp_path / "z.png")
    w.close()


def test_headless_demo_writes_the_tour_graph(tmp_path):
    """`make tour HTML=...` runs `python -m autograd_widget demo --html PATH`."""
    import subprocess
    import sys

    out = tmp_path / "tour.html"
    r = subprocess.run(
        [sys.executable, "-m", "autograd_widget", "demo", "--html", str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"wrote {out}" in r.stdout
    text = out.read_text()
    walk = json.loads(re.search(
        r'<script type="application/json" id="autograd-widget-walkthrough">(.*?)</script>',
        text, re.S,
    ).group(1))
    assert walk["title"].startswith("autograd_widget — backward of Sequential")
    assert len(walk["steps"]) == walk["state"]["total"] > 10
    bad = subprocess.run(
        [sys.executable, "-m", "autograd_widget", "demo", "--html", str(tmp_path / "x.png")],
        capture_output=True, text=True, timeout=300,
    )
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and "html" in bad.stderr
    assert "Traceback" not in bad.stderr
