"""Issue 10 in a real JupyterLab: a what-if edit from an edge's card ("Zero this gradient")
changes what the rest of backward computes, and the "sensitivity" colour mode shows a node's
Jacobian norm in the inspector.

Same harness as test_widget_browser.py: one server per session, a fresh page and kernel per test,
no console error and no request leaving 127.0.0.1 (the `page` fixture), screenshots under
tests/artifacts/.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from .labtools import button, open_notebook, run_cell, save, status, widget_in

pytestmark = [pytest.mark.browser, pytest.mark.slow]

expect.set_options(timeout=20_000)

Z_CELL = """\
import torch
import autograd_widget as aw
x = torch.tensor(2.0, requires_grad=True)
y = torch.tensor(3.0, requires_grad=True)
w = aw.explore(x**2 + y, params={"x": x, "y": y}, height=560)
w"""

SELECT_EDGE = """\
from autograd_widget.wire import payload as view
e = next(eid for eid in view.decode_graph(w._graph)["edges"]["id"]
         if w.graph.nodes[w.graph.edge(eid).dst].leaf_name == "x")
w.selected_edge = e
print("edge", e)"""

GRADS = "print('gx', float(w.stepper.grad(x)), 'gy', float(w.stepper.grad(y)))"

SELECT_POW = """\
w.selected_edge = None
w.selected = next(n.id for n in w.graph.nodes.values() if n.name == "PowBackward0")
print("pow", w.selected)"""


def test_zero_an_edge_then_sensitivity_of_pow(page, lab_server):
    open_notebook(page, lab_server, "probes.ipynb", [Z_CELL, SELECT_EDGE, GRADS, SELECT_POW])
    run_cell(page, 0)
    root = widget_in(page, 0)
    for _ in range(3):
        button(root, "Step").click()
    expect(status(root)).to_contain_text("step 3 /")

    # The edge Pow -> x: its card offers the what-if edits.
    run_cell(page, 1)
    panel = root.get_by_role("region", name="Inspector")
    expect(panel).to_be_visible()
    expect(panel).to_contain_text("PowBackward0")
    zero = panel.get_by_role("button", name="Zero this gradient", exact=True)
    expect(zero).to_be_visible()
    expect(panel.get_by_role("button", name="Scale by…", exact=True)).to_be_visible()
    expect(panel.get_by_role("button", name="Undo edit", exact=True)).to_have_count(0)
    zero.click()
    expect(panel).to_contain_text("✎ edited: zeroed")
    expect(panel.get_by_role("button", name="Undo edit", exact=True)).to_be_visible()
    page.wait_for_function(  # the edited edge's value label on the canvas carries the mark
        "root => root.querySelector('canvas.agw-canvas').agwPainted.labels"
        ".filter((l) => l.kind === 'edge' && l.text.includes('✎')).length === 1",
        arg=root.element_handle(),
    )

    button(root, "Run to end").click()
    expect(root).to_have_class(re.compile(r"\bagw-done\b"))
    out = run_cell(page, 2)
    assert "gx 0.0 gy 1.0" in out, out

    # The leaves against the faithful run: x changed, y did not.
    panel.get_by_role("button", name="Compare with faithful run", exact=True).click()
    changed = panel.get_by_role("list", name="Changed leaves")
    expect(changed).to_contain_text("max |Δ| = 4")
    # The edge is in the past now: Python refuses to edit it, the card says why.
    panel.get_by_role("button", name="Scale by…", exact=True).click()
    expect(panel.get_by_role("alert")).to_contain_text("past")
    save(root, "probes_edit.png")

    # Sensitivity: PowBackward0 at x = 2 has d(x²)/dx = 4, so ‖J‖²_F = 16, exactly.
    root.get_by_role("combobox", name="Colour mode").select_option("sensitivity")
    expect(root.get_by_role("region", name="Sensitivity")).to_contain_text("samples per estimate")
    run_cell(page, 3)
    panel = root.get_by_role("region", name="Inspector")
    expect(panel).to_contain_text("PowBackward0")
    expect(panel).to_contain_text("‖J‖²_F = 16 (exact)")
    save(root, "probes_sensitivity.png")
    page.page_log.assert_clean()
