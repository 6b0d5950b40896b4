"""The standalone export: opened from file:// with every network request blocked, it replays the
recorded step-through and shows the same gradients as the kernel-backed widget."""

from __future__ import annotations

import itertools
import re

import pytest
import torch
from playwright.sync_api import expect

import autograd_widget as aw

from .conftest import ARTIFACTS
from .drawtools import open_offline

Z_STATUS = [
    "step 0 / 4 → next AddBackward0",
    "ran AddBackward0 (step 1 / 4) → next AccumulateGrad (y)",
    "ran AccumulateGrad (y) (step 2 / 4) → next PowBackward0",
    "ran PowBackward0 (step 3 / 4) → next AccumulateGrad (x)",
    "ran AccumulateGrad (x) (step 4 / 4) — done",
]
pytestmark = [pytest.mark.browser, pytest.mark.slow]


def kernel_edge_labels(w) -> list[str]:
    """What the live widget writes on its edges at the end of the run (its synced state)."""
    w.stepper.run()
    values = w._state["edge_values"]
    return sorted(f"{v[0]:g}" for v in values.values())


# The edge value labels the canvas painted (its `agwPainted` record; js/src/canvas.js).
EDGE_TEXTS = """root => root.querySelector('canvas.agw-canvas').agwPainted.labels
  .filter((l) => l.kind === 'edge').map((l) => l.text).sort()"""


def wait_edge_count(root, count: int) -> None:
    """Wait until the canvas shows `count` edge value labels."""
    root.page.wait_for_function(
        f"root => ({EDGE_TEXTS})(root).length === {count}", arg=root.element_handle()
    )


def edge_texts(root) -> list[str]:
    return root.page.evaluate(EDGE_TEXTS, root.element_handle())


def test_exported_html_replays_offline_with_the_kernels_values(browser, tmp_path):
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    w = aw.explore(x**2 + y, params={"x": x, "y": y})
    path = w.save_html(tmp_path / "z.html")
    assert w.stepper.position == 0, "exporting does not move the live stepper"
    want = kernel_edge_labels(w)
    assert want == ["1", "1", "4"]
    w.close()

    ctx, page, requests, errors = open_offline(browser, path)
    try:
        root = page.locator(".agw-root")
        status = root.locator(".agw-status")
        expect(status).to_have_text(Z_STATUS[0], timeout=15000)
        step = root.get_by_role("button", name="Step", exact=True)
        for k in range(1, 5):
            step.click()
            expect(status).to_have_text(Z_STATUS[k])
        root.locator("canvas.agw-canvas[data-painted]").wait_for(state="attached")
        wait_edge_count(root, 3)
        assert edge_texts(root) == want
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        root.screenshot(path=str(ARTIFACTS / "export_z_done.png"))
        back = root.get_by_role("button", name="Back", exact=True)
        back.click()
        expect(status).to_have_text(Z_STATUS[3])
        wait_edge_count(root, 3)  # x's gradient came from Pow, which is still done
        back.click()
        expect(status).to_have_text(Z_STATUS[2])
        wait_edge_count(root, 2)  # undoing Pow takes its gradient off the edge
        root.get_by_role("button", name="Reset", exact=True).click()
        expect(status).to_have_text(Z_STATUS[0])
        root.get_by_role("button", name="Run to end", exact=True).click()
        expect(status).to_have_text(Z_STATUS[4])
        root.get_by_role("button", name="Reset", exact=True).click()
        root.get_by_role("button", name="Play", exact=True).click()
        expect(status).to_have_text(Z_STATUS[4], timeout=10000)
        assert re.match(r"autograd_widget", page.title())
    finally:
        ctx.close()
    assert requests == [], f"the export made requests: {requests}"
    assert errors == [], f"console errors: {errors}"


def nan_widget():
    """A tracked MLP whose loss takes sqrt at 0: the first Inf is born in SqrtBackward0."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    with aw.track(model):
        out = model(torch.randn(6, 4))
    loss = (out.abs() - out.abs()).sqrt().sum()
    return aw.explore(loss, model=model, collapse="none")


PAINTED = "() => +document.querySelector('canvas.agw-canvas').dataset.painted"
# the item index of the first node whose name label reads `text`
# (any line: a module of one op is titled by its module, the op's name under it)
ITEM_NAMED = """text => document.querySelector('canvas.agw-canvas').agwPainted.labels
  .find((l) => l.kind === 'node' && l.text === text)?.index ?? -1"""
SELECTED = "() => document.querySelector('canvas.agw-canvas').agwPainted.marks.selected"


def click_item(page, index: int) -> None:
    x, y = page.evaluate(
        """i => { const c = document.querySelector('canvas.agw-canvas');
          const it = c.agwPainted.items.find((t) => t.index === i);
          const r = c.getBoundingClientRect();
          return [r.left + it.x + it.w / 2, r.top + it.y + it.h / 2]; }""",
        index,
    )
    page.mouse.click(x, y)


def wait_repaint(page, before: int) -> None:
    page.wait_for_function(f"n => ({PAINTED})() > n", arg=before)


def test_standalone_page_works_offline_with_every_recorded_mode(browser, tmp_path):
    w = nan_widget()
    desc = "A zero under a square root: <b>sqrt(|y| - |y|)</b>."
    path = w.save_html(tmp_path / "nan.html", title="Where the Inf is born", description=desc)
    w.close()
    ctx, page, requests, errors = open_offline(browser, path)
    try:
        root = page.locator(".agw-root")
        status = root.locator(".agw-status")
        expect(status).to_have_text(re.compile(r"^step 0 / 14"), timeout=15000)
        # the header: title, the description as plain text (escaped), the how-to
        expect(page.locator("header h1")).to_have_text("Where the Inf is born")
        expect(page.locator(".agw-page-desc")).to_have_text(desc)
        expect(page.locator(".agw-page-howto")).to_contain_text("? for all keys")
        assert page.title() == "Where the Inf is born"
        # the widget fills the window's height, and follows it
        box = root.bounding_box()
        assert box["y"] + box["height"] >= 700 - 16, box
        canvas = page.locator("canvas.agw-canvas")
        assert canvas.bounding_box()["height"] > 350
        page.set_viewport_size({"width": 1100, "height": 900})
        page.wait_for_function(
            "() => document.querySelector('.agw-root').getBoundingClientRect().bottom >= 900 - 16"
        )
        # no kernel-only control, no empty separator
        for name in ("Collapse module", "Expand"):
            assert root.get_by_role("button", name=name, exact=True).count() == 0
        assert root.locator(".agw-direction").count() == 0
        assert not root.locator(".agw-plumbing-input").is_visible()
        seps = page.evaluate("""() => [...document.querySelectorAll('.agw-toolbar')].map((bar) =>
            [...bar.children].filter((c) => c.offsetParent !== null)
              .map((c) => c.classList.contains('agw-sep')))""")
        for bar in seps:
            assert bar and not bar[0] and not bar[-1], seps
            assert not any(a and b for a, b in itertools.pairwise(bar)), seps
        # Step and Back
        root.get_by_role("button", name="Step", exact=True).click()
        expect(status).to_have_text(re.compile(r"^ran SumBackward0 \(step 1 / 14\)"))
        root.get_by_role("button", name="Back", exact=True).click()
        expect(status).to_have_text(re.compile(r"^step 0 / 14"))
        # ? shows the keyboard help (a key pressed on the page, not inside a control)
        page.locator("header h1").click()
        page.keyboard.press("?")
        expect(root.locator(".agw-help")).to_be_visible()
        page.keyboard.press("Escape")
        expect(root.locator(".agw-help")).to_be_hidden()
        # memory and sensitivity colour the nodes from the recorded replies
        mode = root.get_by_label("Colour mode")
        before = page.evaluate(PAINTED)
        mode.select_option("memory")
        expect(root.locator(".agw-legend")).to_contain_text("bytes saved for backward")
        expect(root.locator(".agw-side")).to_contain_text("Total")
        wait_repaint(page, before)
        assert root.locator(".agw-legend-loading").count() == 0
        before = page.evaluate(PAINTED)
        mode.select_option("sensitivity")
        expect(root.locator(".agw-legend")).to_contain_text("gradient map")
        wait_repaint(page, before)
        assert root.locator(".agw-legend-loading").count() == 0
        mode.select_option("gradient")
        # First NaN/Inf runs to where the Inf is born and selects that node
        root.get_by_role("button", name="First NaN/Inf", exact=True).click()
        expect(root.locator(".agw-alert")).to_contain_text("born in SqrtBackward0")
        expect(status).to_have_text(re.compile(r"^ran SqrtBackward0 \(step 2 / 14\)"))
        sqrt = page.evaluate(ITEM_NAMED, "Sqrt")
        assert sqrt >= 0
        page.wait_for_function(f"() => ({SELECTED})() === {sqrt}")
        # the inspector: a node's Formula tab, typeset offline (KaTeX's MathML)
        addmm = page.evaluate(ITEM_NAMED, "Addmm")
        assert addmm >= 0
        click_item(page, addmm)
        insp = root.locator("section[aria-label='Inspector']")
        expect(insp).to_contain_text("AddmmBackward0")
        assert insp.get_by_role("button", name="Collapse module", exact=True).count() == 0
        insp.get_by_role("tab", name="Formula").click()
        expect(insp.locator(".katex math").first).to_be_visible()
        expect(insp).to_contain_text("With this node's shapes")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "export_page_formula.png"))
        assert "needs the live widget" not in root.locator(".agw-alert").inner_text()
    finally:
        ctx.close()
    assert requests == [], f"the page made requests: {requests}"
    assert errors == [], f"console errors: {errors}"
