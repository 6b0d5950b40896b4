"""The standalone export: opened from file:// with every network request blocked, it replays the
recorded step-through and shows the same gradients as the kernel-backed widget."""

from __future__ import annotations

import re

import pytest
import torch
from playwright.sync_api import expect

import autograd_widget as aw

from .conftest import ARTIFACTS

Z_STATUS = [
    "step 0 / 4 → next AddBackward0",
    "ran AddBackward0 (step 1 / 4) → next AccumulateGrad (y)",
    "ran AccumulateGrad (y) (step 2 / 4) → next PowBackward0",
    "ran PowBackward0 (step 3 / 4) → next AccumulateGrad (x)",
    "ran AccumulateGrad (x) (step 4 / 4) — done",
]
ALLOWED = ("file:", "blob:", "data:", "about:")

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


def open_offline(browser, path):
    ctx = browser.new_context(viewport={"width": 1100, "height": 700})
    requests, errors = [], []

    def route(r):
        if r.request.url.startswith(ALLOWED):
            r.continue_()
        else:
            requests.append(r.request.url)
            r.abort()

    ctx.route("**/*", route)
    page = ctx.new_page()
    page.on(
        "request", lambda req: None if req.url.startswith(ALLOWED) else requests.append(req.url)
    )
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(e.message))
    page.goto(path.as_uri())
    return ctx, page, requests, errors


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
