"""A compiled region in a real JupyterLab (issue 32): an MLP compiled with torch.compile
(backend="aot_eager") opens with its region folded into one box "compiled region 1 · N aten ops";
a click unfolds it (its modules' boxes inside), stepping goes into the region op by op (the status
names the aten op), and the kernel agrees on where the stepper is.

Same harness as test_folds_browser.py: one server per session, a fresh page and kernel per test,
no console error and no request leaving 127.0.0.1, screenshots under tests/artifacts/.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from .labtools import (
    button,
    click_label,
    item_labels,
    label_problems,
    open_notebook,
    painted,
    run_cell,
    save,
    status,
    wait_label,
    widget_in,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

expect.set_options(timeout=30_000)

CELL = """\
import torch, torch.nn as nn
import autograd_widget as aw
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 2))
compiled = torch.compile(model, backend="aot_eager", dynamic=False)
x = torch.randn(3, 4)
w = aw.explore(compiled(x).square().mean(), model=model, height=640)
region = next(iter(w.graph.regions.values()))
print(w.collapsed, len(region.ops), "ops")
w"""


def test_a_compiled_region_unfolds_and_steps_op_by_op(page, lab_server):
    cells = [CELL, "st = w.stepper; print('at', st.position, st.order[st.position - 1])"]
    open_notebook(page, lab_server, "compiled.ipynb", cells)
    out = run_cell(page, 0, timeout=180)
    m = re.search(r"\['(compiled region 1 · (\d+) aten ops)'\] (\d+) ops", out)
    assert m, out
    title, n_ops = m.group(1), int(m.group(2))
    assert n_ops == int(m.group(3)) > 10
    root = widget_in(page, 0)
    p = painted(page, root)
    shown = list(item_labels(p).values())
    box = [t for t in shown if t and t[0] == title]
    assert box and re.fullmatch(r"\d+ ops · 0%", box[0][1]), shown
    assert not label_problems(p), label_problems(p)
    save(root, "compiled_region_folded.png")

    # A click unfolds it: the region's frame holds its node and its modules' boxes.
    click_label(page, root, title)
    wait_label(root, r"^\d · Linear \d+ ops")  # its modules' boxes (the nearest ones are drawn)
    wait_label(root, r"^CompiledFunction")
    # Step: the loss's two nodes, the region's node, then its first aten ops.
    for k in range(5):
        button(root, "Step").click()
        expect(status(root)).to_contain_text(f"step {k + 1} /")
    expect(status(root)).to_contain_text("aten::")
    out = run_cell(page, 1)
    m = re.search(r"at 5 (n\d+/\d+)", out)
    assert m, out
    save(root, "compiled_region_stepping.png")
    page.page_log.assert_clean()
