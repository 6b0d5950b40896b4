"""The standalone page opening at a step (`save_html(start=...)`), and two recordings as one page
stepped together (`RecordingPair.save_html`). What the page does with them in a browser is in
js/tests/replay_pair.test.js and tests/browser/test_docs_browser.py."""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pytest
import torch

import autograd_widget as aw
from autograd_widget.view.stateview import DIFFERS


def walkthroughs(path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    found = re.findall(r'id="autograd-widget-walkthrough[^"]*">(.*?)</script>', text, re.S)
    return [json.loads(r) for r in found]


def z_widget():
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    return aw.explore(x**2 + y, params={"x": x, "y": y})


def test_start_opens_the_page_at_a_step_and_current_where_the_widget_is(tmp_path):
    w = z_widget()
    (rec,) = walkthroughs(w.save_html(tmp_path / "a.html"))
    assert rec["start"] == 0 and len(rec["steps"]) == 4  # the default, as before
    (rec,) = walkthroughs(w.save_html(tmp_path / "b.html", start=2))
    assert rec["start"] == 2
    (rec,) = walkthroughs(w.save_html(tmp_path / "c.html", start=99))
    assert rec["start"] == 4  # clamped to what was recorded
    w.stepper.step()
    w.stepper.step()
    w.stepper.step()
    (rec,) = walkthroughs(w.save_html(tmp_path / "d.html", start="current"))
    assert rec["start"] == 3 and w.stepper.position == 3  # the widget did not move
    assert rec["steps"][2]["scalars"]["status"] == w.status
    for bad in (-1, "end", True, 1.5):
        with pytest.raises(ValueError, match="start must be a step number"):
            w.save_html(tmp_path / "e.html", start=bad)
    w.close()


def test_current_at_a_failed_step_opens_on_the_failure(tmp_path):
    p = torch.randn(5, requires_grad=True)
    s = p.sigmoid()
    s.mul_(2)  # sigmoid saved its output: stepping it fails
    w = aw.explore(s.sum())
    w.stepper.run()
    assert w.stepper.last_error is not None
    (rec,) = walkthroughs(w.save_html(tmp_path / "f.html", start="current"))
    assert rec["failed"] and rec["start"] == len(rec["steps"]) == w.stepper.position + 1
    assert rec["steps"][-1]["scalars"]["error"]
    w.close()


def test_a_pair_is_one_page_with_both_sides_their_names_and_their_differences(tmp_path):
    model = torch.nn.Linear(3, 1)
    x = torch.randn(4, 3)
    recs = []
    for scale in (1.0, 2.0):
        loss = (model(x) * scale).sum()
        with aw.record(loss, model=model) as rec:
            loss.backward()
        recs.append(rec)
    pair = aw.side_by_side(*recs, names=("run 1", "run <2>"))
    assert pair.differences
    path = pair.save_html(tmp_path / "pair.html", title="two runs")
    text = path.read_text(encoding="utf-8")
    assert "mod.mountWalkthroughPair(" in text and "run &lt;2&gt;" in text
    assert "<title>two runs</title>" in text
    left, right = walkthroughs(path)
    # each side's legend names what it is compared with, as the live widget's does
    assert left["graph"]["compared"] == pair.left.compared == "the compared recording"
    assert right["graph"]["compared"] == pair.right.compared
    flags = [np.frombuffer(base64.b64decode(d["edge_flag"]["new"]["bdata"]),
                           dtype=d["edge_flag"]["new"]["dtype"])
             for d in left["steps"] if "edge_flag" in d]
    assert any((f == DIFFERS).any() for f in flags)  # the differing edges, in their own colour
    pair.left.stepper.step()
    left, right = walkthroughs(pair.save_html(tmp_path / "pair2.html", start="current"))
    assert left["start"] == right["start"] == 1
    pair.close()
