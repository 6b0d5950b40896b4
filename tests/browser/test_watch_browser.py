"""aw.explore(watch) in a real JupyterLab (issue 31): the timeline above the selected step's graph.
A small model trained with a NaN injected at a known step: the timeline shows every step; "First
NaN/Inf" moves the cursor to that step and rings the birth node below, with its cause; a module
expands to its ops; a click on the heat map shows another step's graph; Play moves the cursor;
the gain colour mode shades the nodes; the standalone page shows the same timeline offline.

Same harness as the other browser tests: one Lab per session, a fresh page and kernel per test,
no console error and no request leaving 127.0.0.1; screenshots under tests/artifacts/.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .labtools import open_notebook, painted, run_cell, save, widget_in

pytestmark = [pytest.mark.browser, pytest.mark.slow]

expect.set_options(timeout=20_000)

WATCH_CELL = """\
import torch
import autograd_widget as aw
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
watch = aw.watch(model)
for step in range(12):
    x = torch.randn(6, 4)
    h = model[0](x)
    if step == 7:
        h = h * torch.tensor([0.0, 1, 1, 1, 1, 1, 1, 1])  # a zero under the square root
    loss = (model[2](torch.tanh(h)) ** 2).mean() + h.pow(2).sqrt().mean() * 0.01
    opt.zero_grad()
    with watch.step(loss):
        loss.backward()
    if step != 7:
        opt.step()
w = aw.explore(watch, height=420)
w"""

STATE_CELL = "print(w.watch_step, w.selected)"

PAGE_CELL = """\
import tempfile, pathlib
page_path = pathlib.Path(tempfile.mkdtemp()) / "watch.html"
w.save_html(page_path)
print(page_path)"""

TIMELINE = "root => root.parentElement.querySelector('.agw-tl-canvas')"
TL_PAINTED = (
    f"root => {{ const c = ({TIMELINE})(root); "
    "return c && c.agwTimeline ? {...c.agwTimeline, count: Number(c.dataset.painted)} : null; }"
)


def timeline_of(page, root) -> dict:
    page.wait_for_function(f"root => !!(({TIMELINE})(root)?.agwTimeline)",
                           arg=root.element_handle())
    return page.evaluate(TL_PAINTED, root.element_handle())


def kernel_print(page, i: int) -> str:
    return run_cell(page, i).strip()


def test_the_timeline_finds_the_nan_moves_the_graph_and_plays(page, lab_server):
    open_notebook(page, lab_server, "watch.ipynb", [WATCH_CELL, STATE_CELL, PAGE_CELL])
    run_cell(page, 0)
    root = widget_in(page, 0)
    out = root.locator("xpath=..")
    tl = out.locator(".agw-timeline")
    expect(tl).to_be_visible()
    t = timeline_of(page, root)
    assert t["watched"] == list(range(12)) and t["rows"] == ["", "0", "2"]
    assert t["selected"] == 7  # it opens on the first non-finite step
    expect(tl.locator(".agw-tl-step")).to_contain_text("step 7 (8 of 12 watched, 12 steps)")
    expect(tl.locator(".agw-tl-row").first).to_contain_text("Sequential")

    # First NaN/Inf: the step, and the birth node ringed below, with its cause
    tl.get_by_role("button", name="First NaN/Inf").click()
    expect(tl.locator(".agw-tl-cause")).to_contain_text("Step 7: born at SqrtBackward0")
    expect(tl.locator(".agw-tl-cause")).to_contain_text("the derivative of sqrt at 0 is infinite")
    page.wait_for_function(
        "root => root.querySelector('canvas.agw-canvas').agwPainted.marks.selected >= 0",
        arg=root.element_handle(),
    )
    assert "7 n" in kernel_print(page, 1)  # the kernel's widget: step 7, a node selected
    save(out, "watch_first_nonfinite.png")

    # a module expands to its ops (asked of the kernel)
    tl.get_by_role("button", name="Expand 0").click()
    expect(tl.locator(".agw-tl-op").first).to_be_visible()
    assert "AddmmBackward0" in tl.locator(".agw-tl-labels").inner_text()
    assert len(timeline_of(page, root)["rows"]) > 3

    # a click on the heat map at step 2 shows that step's graph below
    box = tl.locator(".agw-tl-canvas").bounding_box()
    before = painted(page, root)["count"]
    page.mouse.click(box["x"] + box["width"] * (2.5 / 12), box["y"] + 70)
    expect(tl.locator(".agw-tl-step")).to_contain_text("step 2 (3 of 12 watched")
    page.wait_for_function(
        f"root => Number(root.querySelector('canvas.agw-canvas').dataset.painted) > {before}",
        arg=root.element_handle(),
    )
    assert kernel_print(page, 1).startswith("2 ")
    assert timeline_of(page, root)["selected"] == 2

    # Play moves the cursor through the steps (to the last, then stops)
    tl.get_by_role("button", name="▶ Play").click()
    page.wait_for_function(f"root => ({TIMELINE})(root).agwTimeline.selected === 11",
                           arg=root.element_handle(), timeout=30_000)  # fmt: skip
    expect(tl.get_by_role("button", name="▶ Play")).to_be_visible()
    assert kernel_print(page, 1).startswith("11 ")

    # the gain colour mode: a watched step's graph offers it; the legend says what it shows
    root.get_by_label("Colour mode").select_option("gain")
    expect(root.locator(".agw-gain-legend")).to_be_visible()
    expect(root.locator(".agw-legend")).not_to_contain_text("reading")
    save(out, "watch_gain.png")

    # the standalone page: the same timeline, offline, above the step it holds
    path = kernel_print(page, 2).splitlines()[-1]
    ctx = page.context.browser.new_context(viewport={"width": 1100, "height": 800})
    ctx.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file:", "blob:", "data:", "about:")) else r.abort())  # noqa: E501
    offline = ctx.new_page()
    errors = []
    offline.on("pageerror", lambda e: errors.append(e.message))
    offline.goto("file://" + path)
    ptl = offline.locator(".agw-timeline")
    expect(ptl).to_be_visible()
    expect(ptl.locator(".agw-tl-step")).to_contain_text("step 11 (12 of 12 watched")
    ptl.get_by_role("button", name="First NaN/Inf").click()
    expect(ptl.locator(".agw-tl-cause")).to_contain_text("Step 7: born at SqrtBackward0")
    expect(ptl.locator(".agw-tl-cause")).to_contain_text("This page holds the graph of step 11")
    expect(offline.locator(".agw-root canvas.agw-canvas")).to_be_visible()
    assert errors == []
    ctx.close()
