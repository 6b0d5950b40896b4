"""aw.explore(watch) keeps one truth on screen in a real JupyterLab (issue 40, part 3): a click on
the timeline shows that step's graph drawn as run to the end (every node done, as the status
says), not as pending; the inspector open on a node follows the same op onto a step whose graph
differs (not the node that has its id there), or closes with a notice when that step has no such
op.

Same harness as tests/browser/test_watch_browser.py; screenshots under tests/artifacts/.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from .labtools import open_notebook, run_cell, save, status, widget_in

pytestmark = [pytest.mark.browser, pytest.mark.slow]

expect.set_options(timeout=20_000)

# Two graphs, alternating: even steps a(x); odd steps sqrt(b(a(x))**2 + 1), where every node id
# after n1 names another op (n2: a's Addmm on even steps, the Sqrt on odd ones).
WATCH_CELL = """\
import torch
import autograd_widget as aw
torch.manual_seed(0)
a, b = torch.nn.Linear(3, 3), torch.nn.Linear(3, 3)
model = torch.nn.ModuleDict({"a": a, "b": b})
watch = aw.watch(model)
for step in range(4):
    x = torch.randn(2, 3)
    h = a(x) if step % 2 == 0 else (b(a(x)) ** 2 + 1).sqrt()
    loss = h.pow(2).sum()
    with watch.step(loss):
        loss.backward()
w = aw.explore(watch, height=420)
w"""

STATE_CELL = """\
n = w.graph.nodes.get(w.selected)
print(w.watch_step, w.selected, n and n.name, n and n.module, repr(w._state['notice']))"""
SELECT_ADDMM = (
    "w.selected = next(n.id for n in w.graph.nodes.values()"
    " if n.name == 'AddmmBackward0' and n.module == 'a'); print(w.selected)"
)
SELECT_SQRT = (
    "w.selected = next(n.id for n in w.graph.nodes.values() if n.name == 'SqrtBackward0');"
    " print(w.selected)"
)
N_STEPS = 4


def click_step(page, tl, step: int) -> None:
    """A click on the heat map's column of `step` (scrolled into view first: a cell run below
    may have scrolled the notebook)."""
    canvas = tl.locator(".agw-tl-canvas")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    canvas.click(position={"x": box["width"] * ((step + 0.5) / N_STEPS), "y": 70})
    expect(tl.locator(".agw-tl-step")).to_contain_text(f"step {step} ({step + 1} of 4 watched")


def drawn_states(page, root) -> list[str]:
    """Each item of the drawing as the view describes it (the offscreen list a11y.js keeps)."""
    return page.evaluate(
        "root => [...root.querySelectorAll('.agw-sr-list .agw-sr-item')].map((b) => b.textContent)",
        root.element_handle(),
    )


def wait_all_done(page, root) -> None:
    page.wait_for_function(
        "root => { const t = [...root.querySelectorAll('.agw-sr-list .agw-sr-item')]"
        ".map((b) => b.textContent);"
        " return t.length > 0 && t.every((s) => s.includes(', done')); }",
        arg=root.element_handle(),
    )


def test_a_timeline_click_draws_the_step_run_to_the_end(page, lab_server):
    open_notebook(page, lab_server, "watch_sync_drawn.ipynb", [WATCH_CELL, STATE_CELL])
    run_cell(page, 0)
    root = widget_in(page, 0)
    out = root.locator("xpath=..")
    tl = out.locator(".agw-timeline")
    expect(tl.locator(".agw-tl-step")).to_contain_text("step 3 (4 of 4 watched")
    expect(status(root)).to_contain_text("done")
    wait_all_done(page, root)
    for step in (2, 1, 0):  # another graph, back, another graph again
        click_step(page, tl, step)
        assert run_cell(page, 1).strip().startswith(f"{step} ")
        expect(status(root)).to_contain_text("done")
        expect(root.locator(".agw-progress")).to_have_attribute(
            "aria-valuenow", root.locator(".agw-progress").get_attribute("aria-valuemax") or "")
        wait_all_done(page, root)
        states = drawn_states(page, root)
        assert not any("pending" in s for s in states), states
    save(out, "watch_sync_drawn.png")
    page.page_log.assert_clean()


def test_the_inspector_follows_its_op_to_another_step_or_says_it_is_not_there(page, lab_server):
    cells = [WATCH_CELL, STATE_CELL, SELECT_ADDMM, SELECT_SQRT]
    open_notebook(page, lab_server, "watch_sync_inspector.ipynb", cells)
    run_cell(page, 0)
    root = widget_in(page, 0)
    out = root.locator("xpath=..")
    tl = out.locator(".agw-timeline")
    panel = root.get_by_role("region", name="Inspector")
    click_step(page, tl, 2)  # the small graph: a's Addmm is n2
    assert run_cell(page, 2).strip().splitlines()[-1] == "n2"
    expect(panel.locator("h3")).to_have_text("AddmmBackward0")
    expect(panel).to_contain_text(re.compile(r"id\s*n2(?!\d)"))
    click_step(page, tl, 3)  # the big graph: n2 is the Sqrt there; a's Addmm is n7
    expect(panel).to_contain_text(re.compile(r"id\s*n7(?!\d)"))  # the inspector asked anew
    expect(panel.locator("h3")).to_have_text("AddmmBackward0")
    state = run_cell(page, 1).strip()
    assert state.startswith("3 n7 AddmmBackward0 a "), state  # the kernel's selection too
    save(out, "watch_sync_followed.png")

    assert run_cell(page, 3).strip().splitlines()[-1] == "n2"  # the Sqrt, only on odd steps
    expect(panel.locator("h3")).to_have_text("SqrtBackward0")
    click_step(page, tl, 0)  # no Sqrt there: the inspector closes, the notice says why
    expect(panel).to_be_hidden()
    notice = root.locator(".agw-notice")
    expect(notice).to_contain_text("SqrtBackward0")
    expect(notice).to_contain_text("not in step 0's graph")
    assert run_cell(page, 1).strip().startswith('0 None None None "SqrtBackward0, selected on')
    save(out, "watch_sync_not_here.png")
    page.page_log.assert_clean()
