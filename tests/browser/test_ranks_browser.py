"""aw.explore(group) of every rank's watch in a real JupyterLab (issue 36): a 2-rank DDP-like run
where the NaN is born on rank 1 at step 2 (a sqrt at 0) and reaches rank 0's weights at step 3. The
widget opens on rank 1 with a labelled rank selector above the timeline; picking rank 0 with the
keyboard swaps the timeline (rank 0's own first non-finite step, 3) and the graph below, and the
kernel's widget agrees; the standalone page carries both ranks and switches offline.

Same harness as the other browser tests (one Lab per session, a fresh page and kernel per test, no
console error, no request leaving 127.0.0.1); screenshots under tests/artifacts/ and
/tmp/coord/shots/ (looked at by whoever changes the selector).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from .labtools import open_notebook, painted, run_cell, save, widget_in

pytestmark = [pytest.mark.browser, pytest.mark.slow]

expect.set_options(timeout=20_000)

SHOTS = Path("/tmp/coord/shots")

# The same crafted files as tests/helpers/rankfiles.py (the kernel does not import the tests).
GROUP_CELL = """\
import tempfile, pathlib, torch
import autograd_widget as aw

def train(bad_step=None, poisoned_from=None, steps=4):
    w = torch.ones(3, requires_grad=True)
    watch = aw.watch(params={"w": w})
    for k in range(steps):
        if poisoned_from is not None and k >= poisoned_from:
            with torch.no_grad():
                w[0] = float("nan")
        d = torch.zeros(3) if k == bad_step else torch.ones(3)
        loss = (w * d).pow(2).sum().sqrt() + (w * w).sum()
        with watch.step(loss):
            loss.backward()
    watch.close()
    return watch

folder = pathlib.Path(tempfile.mkdtemp())
for r, wt in enumerate([train(poisoned_from=3), train(bad_step=2, poisoned_from=3)]):
    wt.meta["rank"], wt.meta["world_size"] = r, 2
    wt.save(folder / f"run_{r}.awwatch")
w = aw.explore(aw.load_watch(str(folder / "run_{rank}.awwatch")), height=420)
w"""

STATE_CELL = "print(w.rank, w.watch_step)"

PAGE_CELL = """\
page_path = folder / "ranks.html"
w.save_html(page_path)
print(page_path)"""


def shot(locator, name: str) -> None:
    save(locator, name)
    SHOTS.mkdir(parents=True, exist_ok=True)
    locator.screenshot(path=str(SHOTS / name))


def test_the_rank_selector_switches_the_timeline_and_the_graph(page, lab_server):
    open_notebook(page, lab_server, "ranks.ipynb", [GROUP_CELL, STATE_CELL, PAGE_CELL])
    run_cell(page, 0)
    root = widget_in(page, 0)
    out = root.locator("xpath=..")
    bar = out.locator(".agw-ranks")
    expect(bar).to_be_visible()
    select = bar.get_by_label("Rank", exact=True)  # a labelled native <select>
    expect(select).to_have_value("1")  # it opens on the rank where the NaN was born
    options = select.locator("option")
    expect(options).to_have_count(2)
    assert options.nth(0).inner_text().startswith("rank 0: NaN/Inf received through a collective")
    assert options.nth(1).inner_text() == "rank 1: NaN/Inf born at step 2 in SqrtBackward0"
    detail = bar.locator(".agw-rank-detail")
    expect(detail).to_contain_text("the derivative of sqrt at 0 is infinite")
    tl = out.locator(".agw-timeline")
    expect(tl.locator(".agw-tl-step")).to_contain_text("step 2 (3 of 4 watched")
    # the selector and the ranks' rows sit above the timeline, the timeline above the drawing
    b, t, r = bar.bounding_box(), tl.bounding_box(), root.bounding_box()
    assert b["y"] + b["height"] <= t["y"] + 1 and t["y"] + t["height"] <= r["y"] + 1
    shot(out, "ranks_rank1.png")

    # the keyboard: focus the selector, one step up picks rank 0; Python shows rank 0's run
    before = painted(page, root)["count"]
    select.focus()
    page.keyboard.press("ArrowUp")
    expect(select).to_have_value("0")
    expect(tl.locator(".agw-tl-step")).to_contain_text("step 3 (4 of 4 watched")
    expect(bar.locator(".agw-rank-detail")).to_contain_text("received it through a collective")
    page.wait_for_function(
        f"root => Number(root.querySelector('canvas.agw-canvas').dataset.painted) > {before}",
        arg=root.element_handle(),
    )
    assert run_cell(page, 1).strip() == "0 3"  # the kernel's widget: rank 0, its step 3
    tl.get_by_role("button", name="First NaN/Inf").click()
    # the NaN came in through a constant: the forward op that met it is the birth's own node
    expect(tl.locator(".agw-tl-cause")).to_contain_text(
        "Step 3: made in the forward by MulBackward0")
    shot(out, "ranks_rank0.png")

    # each rank's row of the timeline (the model's norm across the steps): a click on rank 1's
    rows = bar.locator("button.agw-rank-strip")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_have_attribute("aria-pressed", "true")
    rows.nth(1).click()
    expect(select).to_have_value("1")
    expect(rows.nth(1)).to_have_attribute("aria-pressed", "true")
    expect(tl.locator(".agw-tl-step")).to_contain_text("step 2 (3 of 4 watched")
    assert run_cell(page, 1).strip() == "1 2"

    # the standalone page carries both ranks and switches offline
    path = run_cell(page, 2).strip().splitlines()[-1]
    ctx = page.context.browser.new_context(viewport={"width": 1100, "height": 800})
    ctx.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file:", "blob:", "data:", "about:")) else r.abort())  # noqa: E501
    offline = ctx.new_page()
    errors = []
    offline.on("pageerror", lambda e: errors.append(e.message))
    offline.goto("file://" + path)
    psel = offline.get_by_label("Rank", exact=True)
    expect(psel).to_have_value("1")
    expect(offline.locator(".agw-tl-step")).to_contain_text("step 2 (3 of 4 watched")
    expect(offline.locator(".agw-root canvas.agw-canvas")).to_be_visible()
    psel.select_option("0")
    expect(offline.locator(".agw-tl-step")).to_contain_text("step 3 (4 of 4 watched")
    expect(offline.locator(".agw-timeline")).to_have_count(1)
    expect(offline.locator(".agw-root")).to_have_count(1)
    expect(offline.locator(".agw-root canvas.agw-canvas")).to_be_visible()
    offline.wait_for_timeout(300)
    SHOTS.mkdir(parents=True, exist_ok=True)
    offline.screenshot(path=str(SHOTS / "ranks_page_rank0.png"))
    assert errors == []
    ctx.close()
