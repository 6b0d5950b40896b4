"""What a widget costs its notebook: the bundle is not in any widget's state.

Each widget's `_esm` is the loader (static/loader.js, a few KB); the bundle (static/widget.js +
widget.css, ~400 KB) is sent on request, once per page (tests/browser/test_ten_widgets_browser.py
counts it on the wire). So a notebook saved with its widget state holds no copy of the bundle:
ten widgets cost ten small states, not ten bundles.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
import torch
from nbclient import NotebookClient

import autograd_widget as aw
from autograd_widget.wire.protocol import BUNDLE, REPLY

STATIC = Path(aw.__file__).parent / "static"
TEN = [
    "import torch, autograd_widget as aw\ntorch.manual_seed(0)\n"
    "model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))\n"
    "x = torch.randn(5, 8)",
    *[f"w{i} = aw.explore(model(x).pow(2).mean(), model=model)\nw{i}" for i in range(10)],
]


def test_the_esm_is_the_loader_and_the_bundle_comes_on_request():
    x = torch.tensor(2.0, requires_grad=True)
    w = aw.explore(x * 3, params={"x": x})
    code = (STATIC / "widget.js").read_text(encoding="utf-8")
    css = (STATIC / "widget.css").read_text(encoding="utf-8")
    assert w._esm == (STATIC / "loader.js").read_text(encoding="utf-8")
    assert len(w._esm) < 16_000 and code[-200:] not in w._esm
    assert w._bundle["bytes"] == len(code) + len(css)
    sent: list[dict] = []
    w.send = sent.append
    w._handle_message(w, {"type": BUNDLE, "request": 41}, [])
    (reply,) = sent
    assert reply["type"] == REPLY and reply["request"] == 41
    assert reply["data"]["code"] == code and reply["data"]["css"] == css
    assert reply["data"]["hash"] == w._bundle["hash"]
    # the session's protocol is untouched: a step still steps
    w._handle_message(w, {"type": "step"}, [])
    assert w.stepper.position == 1
    w.close()


@pytest.mark.slow
def test_ten_widgets_save_no_copy_of_the_bundle(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in TEN])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    NotebookClient(nb, timeout=120, store_widget_state=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    text = nbformat.writes(nb)
    states = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    ours = [m["state"] for m in states.values() if "_bundle" in m["state"]]
    assert len(ours) == 10
    code = (STATIC / "widget.js").read_text(encoding="utf-8")
    probe = json.dumps(code[len(code) // 2 : len(code) // 2 + 200])[1:-1]
    assert probe not in text, "a widget's state carries the bundle"
    per_widget = max(len(json.dumps(s)) for s in ours)
    assert per_widget < 12_000, per_widget  # the loader (~3 KB) + this graph's drawing
    # the whole notebook: far under ONE copy of the bundle
    assert len(text.encode()) < len(code), len(text.encode())
