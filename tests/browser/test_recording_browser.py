"""A recorded engine run in a real JupyterLab (issue 19): `aw.explore(recording)` draws and steps
like a live graph, First NaN/Inf runs ahead to the birth and says why, the inspector shows how
the engine ran the node and its formula typeset by KaTeX (MathML, no fonts, no network), a
recorded failure is drawn failed with why, and two recordings sit side by side.

Same harness as the other browser tests: one Lab per session, a fresh page and kernel per test,
no console error and no request leaving 127.0.0.1; screenshots under tests/artifacts/.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from .labtools import button, click_item, open_notebook, painted, run_cell, save, status, widget_in

pytestmark = [pytest.mark.browser, pytest.mark.slow]

expect.set_options(timeout=20_000)

RECORD_CELL = """\
import torch
import autograd_widget as aw
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh())
x = torch.randn(5, 4); x[2] = 0.0
with torch.no_grad():
    model[0].bias.zero_()
with aw.track(model):
    h = model(x)
loss = h.pow(2).sum(-1).sqrt().mean()
with aw.record(loss, model=model) as rec:
    loss.backward()
w = aw.explore(rec, collapse="none", height=560)
w"""

FAIL_CELL = """\
a = torch.ones(3, requires_grad=True)
b = a.sigmoid(); _ = b.mul_(2)
loss2 = b.sum()
try:
    with aw.record(loss2) as rec2:
        loss2.backward()
except RuntimeError:
    pass
w2 = aw.explore(rec2, height=420)
w2"""

PAIR_CELL = """\
torch.manual_seed(1)
x2 = torch.randn(5, 4)
with aw.track(model):
    h2 = model(x2)
loss3 = h2.pow(2).sum(-1).sqrt().mean()
with aw.record(loss3, model=model) as other:
    loss3.backward()
pair = aw.side_by_side(rec, other, names=("run A", "run B"), height=420)
pair"""


def inspector(root):
    return root.get_by_role("region", name="Inspector")


def test_a_recording_replays_finds_the_birth_and_shows_the_formula(page, lab_server):
    open_notebook(page, lab_server, "recording.ipynb", [RECORD_CELL, FAIL_CELL, PAIR_CELL])
    run_cell(page, 0)
    root = widget_in(page, 0)
    expect(root.locator(".agw-canvas")).to_be_visible()
    expect(root.get_by_label("Colour mode")).to_be_hidden()  # no saved values, no probes
    button(root, "Step").click()
    expect(status(root)).to_contain_text("step 1 /")
    button(root, "First NaN/Inf").click()
    alert = root.locator(".agw-alert")
    expect(alert).to_contain_text("The first NaN/Inf is born in Sqrt")
    expect(alert).to_contain_text("`result` has 1 zero: the derivative of sqrt at 0 is infinite")
    p = painted(page, root)
    assert p["marks"]["selectedEdge"] >= 0, p["marks"]

    # The born node: how the engine ran it, and what it computes (KaTeX MathML).
    click_item(page, root, "Sqrt")
    panel = inspector(root)
    expect(panel.locator("h3")).to_have_text("SqrtBackward0")
    expect(panel).to_contain_text("engine ran it")
    panel.get_by_role("tab", name=re.compile("Saved")).click()
    expect(panel).to_contain_text("a recording keeps no saved values")
    panel.get_by_role("tab", name=re.compile("Formula")).click()
    math = panel.locator(".agw-math-formula math")
    expect(math).to_be_visible()
    box = math.bounding_box()
    assert box and box["width"] > 40 and box["height"] > 10, box  # laid out by the browser
    # a recording holds no torch nodes: the shapes are not computed, and the tab says so
    expect(panel).to_contain_text("shapes unknown: this graph holds no torch nodes")
    expect(panel).not_to_contain_text("With this node's shapes")
    save(root, "recording_formula.png")

    # A recorded failure: drawn failed, Step refused, and the inspector says why.
    run_cell(page, 1)
    root2 = widget_in(page, 1)
    button(root2, "Run to end").click()
    expect(status(root2)).to_have_class(re.compile("agw-status-failed"))
    expect(status(root2)).to_contain_text("Back or Reset to go on")
    click_item(page, root2, "Sigmoid")
    panel2 = inspector(root2)
    why = panel2.locator(".agw-insp-why")
    expect(why).to_contain_text("saved `result` was modified by an in-place operation")
    expect(why.get_by_role("button", name="show the in-place op")).to_be_visible()
    save(root2, "recording_failure.png")

    # Two recordings side by side, stepped together, differing edges in their own colour.
    run_cell(page, 2)
    out = page.locator(".jp-Cell").nth(2)
    canvases = out.locator(".agw-canvas")
    expect(canvases).to_have_count(2)
    expect(out).to_contain_text("run A")
    left = out.locator(".agw-root").first
    expect(left.locator(".agw-legend")).to_contain_text("differs from")
    left.get_by_role("button", name="Step", exact=True).click()
    right = out.locator(".agw-root").nth(1)
    expect(right.locator(".agw-status")).to_contain_text("step 1 /")
    save(out, "recording_side_by_side.png")
    page.page_log.assert_clean()
