"""Folded runs of repeated blocks in a real JupyterLab: a Transformer opens as one box
"layers.0–7 ×8" (collapse="auto"), the box reads as a fold (label "×8", hover card "click:
unfold"), steps like a module box, and a click unfolds it into one box per layer.

Same harness as test_inspector_browser.py: one server per session, a fresh page and kernel per
test, no console error and no request leaving 127.0.0.1, screenshots under tests/artifacts/.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .labtools import (
    button,
    click_label,
    item_labels,
    label_problems,
    node_count,
    open_notebook,
    painted,
    point,
    reveal,
    run_cell,
    save,
    shown_count,
    status,
    wait_label,
    widget_in,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

expect.set_options(timeout=20_000)

CELL = """\
import torch, torch.nn as nn
import autograd_widget as aw
torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(16, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True)
model = nn.TransformerEncoder(layer, 8, enable_nested_tensor=False)
x = torch.randn(2, 4, 16, requires_grad=True)
with aw.track(model):
    out = model(x)
w = aw.explore(out.pow(2).mean(), model=model, height=640)
print(len(w.graph), "nodes;", list(w.folds), "folded")
w"""

FOLD = "layers.0–7"  # the first word of the box's title, "layers.0–7 ×8 · TransformerEncoderLayer"


def test_transformer_opens_as_one_fold_box_and_unfolds_on_click(page, lab_server):
    open_notebook(page, lab_server, "folds.ipynb", [CELL, "print(w.folds, w.collapsed)"])
    out = run_cell(page, 0, timeout=120)
    assert "['layers.0–7 ×8'] folded" in out, out
    root = widget_in(page, 0)
    counts = root.locator(".agw-counts")
    expect(counts).to_contain_text("1 repeat folded")
    p = painted(page, root)
    shown = list(item_labels(p).values())
    assert ["layers.0–7 ×8 · TransformerEncoderLayer", "448 ops · 0%"] in shown, shown
    assert not label_problems(p), label_problems(p)
    assert node_count(page, root) <= 6  # Mean, Pow, the box, the input
    save(root, "folds_transformer_folded.png")

    # The hover card says what it is and what a click does.
    p = point(page, root, FOLD)
    page.mouse.move(p["x"], p["y"])
    card = root.locator(".agw-card")
    expect(card).to_be_visible()
    expect(card).to_contain_text("folded repeats")
    expect(card).to_contain_text("8 identical blocks")
    expect(card).to_contain_text("click: unfold")
    page.mouse.move(1, 1)

    # Stepping into the run moves the box's progress (Mean, Pow, then the last layer).
    for _ in range(3):
        button(root, "Step").click()
    expect(status(root)).to_contain_text("step 3 /")
    wait_label(root, r"^layers\.0–7 ×8 · TransformerEncoderLayer 448 ops · (<1|[1-9]\d?)%$")

    # A click unfolds it locally: one box per layer, not the 400-odd nodes.
    click_label(page, root, FOLD)
    expect(counts).to_contain_text("8 modules folded")
    expect(counts).not_to_contain_text("repeat")
    # the boxes open where the fold was; pan down to the fourth layer's box
    p = reveal(page, root, "layers.3")
    assert ["layers.3 · TransformerEncoderLayer", "56 ops · 0%"] in item_labels(p).values()
    assert 8 < shown_count(root) < 20
    out = run_cell(page, 1)
    assert out.startswith("{}") and "'layers.7'" in out, out
    save(root, "folds_transformer_unfolded.png")
    page.page_log.assert_clean()
