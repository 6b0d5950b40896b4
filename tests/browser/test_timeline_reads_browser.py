"""The timeline reads itself (issue 40, part 6), in a real JupyterLab: a colour bar that says which
colour is which gradient norm, a step axis under the grid, each cell's reading (step, module,
norm, change against the previous step) on hover and by keyboard, the tree open to the depth
that fits, and a recurrent cell shown through time (one row per call).

A model of a recurrent cell (nn.GRUCell run 5 times per step) and a few blocks, trained 30 steps;
screenshots under tests/artifacts/: the timeline with its colour bar and a hover tip, and with
the keyboard's cell read out.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .labtools import ARTIFACTS, open_notebook, run_cell, widget_in

pytestmark = [pytest.mark.browser, pytest.mark.slow]

expect.set_options(timeout=20_000)

CELL = """\
import torch
import autograd_widget as aw
torch.manual_seed(0)
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Linear(3, 8)
        self.cell = torch.nn.GRUCell(8, 8)
        self.block = torch.nn.Sequential(
            torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 8))
        self.head = torch.nn.Linear(8, 1)
    def forward(self, x):
        h = torch.zeros(x.shape[1], 8)
        for t in range(x.shape[0]):
            h = self.cell(torch.tanh(self.embed(x[t])), h)
        return self.head(self.block(h))
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
watch = aw.watch(model)
for step in range(30):
    x = torch.randn(5, 4, 3)
    loss = model(x).pow(2).mean() * (50.0 if step == 20 else 1.0)
    opt.zero_grad()
    with watch.step(loss):
        loss.backward()
    opt.step()
w = aw.explore(watch, height=360)
w"""

TL = "root => root.parentElement.querySelector('.agw-tl-canvas').agwTimeline"


def shot(page, el, name: str) -> None:
    """A screenshot of `el`'s box on the page as it is (an element screenshot may scroll, and so
    move the pointer off the hovered cell)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), clip=el.bounding_box())


def test_the_timeline_has_a_colour_bar_an_axis_and_reads_its_cells(page, lab_server):
    open_notebook(page, lab_server, "timeline_reads.ipynb", [CELL])
    run_cell(page, 0)
    root = widget_in(page, 0)
    out = root.locator("xpath=..")
    tl = out.locator(".agw-timeline")
    expect(tl).to_be_visible()
    page.wait_for_function(f"root => !!({TL})(root)", arg=root.element_handle())
    t = page.evaluate(TL, root.element_handle())

    # the tree opens as deep as fits: the blocks' children are rows, not one collapsed model
    assert t["rows"][:3] == ["", "embed", "cell"] and "block.0" in t["rows"]
    # a recurrent cell: called 5 times per step, said on its row
    expect(tl.locator(".agw-tl-row[data-id='cell'] .agw-tl-calls")).to_have_text("×5")

    # the colour bar: a visible ramp, its ticks as norms, and the zero / NaN swatches
    bar = tl.locator(".agw-tl-cbar")
    expect(bar).to_be_visible()
    assert bar.bounding_box()["width"] >= 150
    ticks = tl.locator(".agw-tl-cbar-tick").all_inner_texts()
    assert ticks and all(x[0].isdigit() for x in ticks)
    expect(tl.locator(".agw-tl-colorbar")).to_contain_text("NaN/Inf")

    # the step axis: step numbers under the grid, in order, inside the width
    steps = [k["step"] for k in t["ticks"]]
    assert steps[0] == 0 and steps == sorted(steps) and steps[-1] <= 29 and len(steps) >= 4
    assert all(0 <= k["x"] <= t["width"] for k in t["ticks"])
    assert t["height"] == t["axisTop"] + 18

    # hover: a cell's reading (step, module, norm, change against the previous step)
    canvas = tl.locator(".agw-tl-canvas")
    out.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    row = t["rows"].index("cell")
    x = box["x"] + box["width"] * (21.5 / 30)
    y = box["y"] + t["top"] + (row + 0.5) * t["rowPx"]
    page.mouse.move(x, y)
    tip = tl.locator(".agw-tl-tip")
    expect(tip).to_be_visible()
    expect(tip).to_contain_text("step 21 · cell · gradient norm")
    expect(tip).to_contain_text("against step 20")
    shot(page, tl, "timeline_colorbar_hover.png")  # the page as it is: the pointer stays put

    # the same reading by keyboard, in a live region
    page.mouse.move(box["x"] - 50, box["y"] - 50)
    expect(tip).to_be_hidden()
    canvas.focus()
    page.keyboard.press("Home")
    for _ in range(row):
        page.keyboard.press("ArrowDown")
    readout = tl.locator(".agw-tl-readout")
    expect(readout).to_contain_text("step 0 · cell · gradient norm")
    expect(readout).to_contain_text("the first watched step")
    page.keyboard.press("ArrowRight")
    expect(readout).to_contain_text("step 1 · cell")
    expect(readout).to_contain_text("against step 0")
    assert readout.get_attribute("aria-live") == "polite"
    page.keyboard.press("Enter")
    page.wait_for_function(f"root => ({TL})(root).selected === 1", arg=root.element_handle())

    # the cell opens to one row per call through time
    tl.get_by_role("button", name="Expand cell").click()
    expect(tl.locator(".agw-tl-op", has_text="t=0")).to_be_visible()
    expect(tl.locator(".agw-tl-op", has_text="t=4")).to_be_visible()
    expect(tl.locator(".agw-tl-notes")).to_contain_text("called 5 times per step")
    shot(page, tl, "timeline_keyboard_calls.png")


ORIGIN_CELL = """\
import torch
import autograd_widget as aw
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
watch = aw.watch(model)
for step in range(8):
    x = torch.randn(6, 4)
    h = model[0](x)
    extra = 0.0
    if step == 2:  # a NaN/Inf born and healed: sqrt at 0 behind a relu's mask
        extra = h.relu().sqrt().sum() * 1e-3
    if step == 5:  # a NaN made in the forward: a log of negatives
        h = torch.log(h)
    loss = model[2](model[1](h)).pow(2).mean() + extra
    with watch.step(loss):
        loss.backward()
w = aw.explore(watch, height=360)
w"""


def test_first_names_the_forward_op_and_a_healed_birth_is_listed(page, lab_server):
    open_notebook(page, lab_server, "timeline_origins.ipynb", [ORIGIN_CELL])
    run_cell(page, 0)
    root = widget_in(page, 0)
    out = root.locator("xpath=..")
    tl = out.locator(".agw-timeline")
    expect(tl).to_be_visible()
    page.wait_for_function(f"root => !!({TL})(root)", arg=root.element_handle())

    # First NaN/Inf: made in the forward by the log (outside the model's modules), not the loss's
    tl.get_by_role("button", name="First NaN/Inf").click()
    cause = tl.locator(".agw-tl-cause")
    expect(cause).to_contain_text("Step 5: made in the forward by LogBackward0")
    expect(cause).to_contain_text("(no module recorded)")
    expect(cause).to_contain_text("log of")
    expect(cause).to_contain_text("the gradient went non-finite at")
    page.wait_for_function(f"root => ({TL})(root).selected === 5", arg=root.element_handle())

    # the healed birth at step 2 is listed, marked healed
    healed = tl.get_by_role("button", name="Healed NaN/Inf (1)")
    expect(healed).to_be_visible()
    healed.click()
    expect(cause).to_contain_text("Step 2 (healed): a NaN/Inf born at SqrtBackward0")
    expect(cause).to_contain_text("1 step had a NaN/Inf that healed: 2")
    page.wait_for_function(f"root => ({TL})(root).selected === 2", arg=root.element_handle())
    shot(page, tl, "timeline_healed_origin.png")
