"""Overview and help in a real JupyterLab (issue 17): on a graph too big to be legible whole, Fit
stops at the smallest legible scale and the minimap shows the whole drawing; zoomed in further,
a click on the minimap moves the view there; `?` opens the keyboard help listing
the shortcuts, Escape closes it. Screenshots under tests/artifacts/.

Same harness as test_inspector_browser.py: one server per session, a fresh page and kernel per
test, no console error and no request leaving 127.0.0.1.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .labtools import (
    RANGES,
    label_problems,
    open_notebook,
    painted,
    run_cell,
    save,
    wait_edge_labels,
    widget_in,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

expect.set_options(timeout=20_000)

CELL = """\
import torch, torch.nn as nn
import autograd_widget as aw
torch.manual_seed(0)
model = nn.Sequential(*[m for _ in range(12) for m in (nn.Linear(8, 8), nn.Tanh())])
x = torch.randn(4, 8, requires_grad=True)
with aw.track(model):
    out = model(x)
w = aw.explore(out.pow(2).mean(), model=model, collapse="none", height=560)
print(len(w.graph), "nodes")
w"""

def view_range(page, root) -> dict:
    x, y = page.evaluate(RANGES, root.element_handle())
    return {"x": x, "y": y}


def test_minimap_jumps_and_question_mark_opens_help(page, lab_server):
    open_notebook(page, lab_server, "overview.ipynb", [CELL])
    out = run_cell(page, 0, timeout=120)
    assert "nodes" in out, out
    root = widget_in(page, 0)
    mini = root.locator(".agw-minimap")
    plot = root.locator(".agw-plot")
    expect(plot.locator("canvas.agw-canvas")).to_be_visible()
    # 63 nodes in 560 px: not legible whole, so Fit stops at the smallest legible scale, every
    # item in view labelled, and the minimap shows where the view is.
    fit = painted(page, root)
    assert fit["font"] >= 11 and not label_problems(fit), label_problems(fit)
    expect(mini).to_be_visible()
    at_fit = root.locator(".agw-minimap-view").bounding_box()
    assert at_fit and at_fit["height"] < mini.bounding_box()["height"]
    save(root, "overview_minimap_fit.png")

    # Zoom in on the plot's centre: the view rectangle shrinks.
    box = plot.bounding_box()
    assert box
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    for _ in range(2):  # each 250 px of wheel zooms in by e^(250 * 0.0015) = 1.45
        page.mouse.wheel(0, -250)
    page.wait_for_function(
        f"([root, w]) => {{ const [x] = ({RANGES})(root); return x[1] - x[0] < w; }}",
        arg=[root.element_handle(), 0.6 * (fit["range"]["x"][1] - fit["range"]["x"][0])],
    )
    painted(page, root)
    save(root, "overview_minimap_zoomed.png")
    before = view_range(page, root)
    rect = root.locator(".agw-minimap-view").bounding_box()
    mbox = mini.bounding_box()
    assert rect and mbox
    assert rect["width"] < mbox["width"] and rect["height"] <= mbox["height"] + 1
    assert rect["height"] < at_fit["height"], (at_fit, rect)

    # A click near the minimap's bottom-left corner centres the view there, same zoom.
    page.mouse.click(mbox["x"] + 10, mbox["y"] + mbox["height"] - 10)
    page.wait_for_function(
        f"([root, b]) => {{ const [x, y] = ({RANGES})(root);"
        " return Math.abs(x[0] - b.x[0]) > 1e-6 || Math.abs(y[0] - b.y[0]) > 1e-6; }",
        arg=[root.element_handle(), before],
    )
    after = view_range(page, root)
    width = lambda r: r["x"][1] - r["x"][0]  # noqa: E731
    assert abs(width(after) - width(before)) < 1e-6 * max(1.0, abs(width(before))), (before, after)
    moved = root.locator(".agw-minimap-view").bounding_box()
    assert moved
    # the view rectangle followed the click to the lower left
    assert moved["y"] + moved["height"] / 2 > rect["y"] + rect["height"] / 2, (rect, moved)
    assert moved["x"] < rect["x"], (rect, moved)
    painted(page, root)
    save(root, "overview_minimap_jumped.png")

    # `?` opens the keyboard help, Escape closes it; the "?" button does too.
    root.focus()
    page.keyboard.press("?")
    dialog = root.get_by_role("dialog", name="Keyboard help")
    expect(dialog).to_be_visible()
    for text in ("Step: run the next node", "Back: undo the last step", "Play / pause",
                 "Search nodes"):
        expect(dialog).to_contain_text(text)
    save(root, "overview_help.png")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    root.get_by_role("button", name="Keyboard help").click()
    expect(dialog).to_be_visible()
    page.mouse.click(box["x"] + 5, box["y"] + box["height"] - 5)  # outside the panel
    expect(dialog).to_be_hidden()

    # Memory mode after a few steps: its own legend (bytes), the edges neutral grey.
    root.focus()
    for k in range(1, 6):
        page.keyboard.press("ArrowRight")
        expect(root.locator(".agw-status")).to_contain_text(f"step {k} /")
    root.get_by_role("combobox", name="Colour mode").select_option("memory")
    legend = root.locator(".agw-legend")
    expect(legend).to_contain_text("bytes saved for backward")
    expect(legend).to_contain_text("edges: not coloured in this mode")
    expect(legend).not_to_contain_text("not flowed")
    root.get_by_role("button", name="Fit").click()
    wait_edge_labels(root, 0)  # no gradient values written on the neutral edges
    painted(page, root)
    save(root, "overview_memory_legend.png")
    page.page_log.assert_clean()
