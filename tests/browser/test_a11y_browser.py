"""The drawing for keyboard and screen-reader users, semantic zoom, resize and auto direction
(issue 30), in a real JupyterLab and on the standalone page.

- The keyboard path: Tab reaches the drawing (the offscreen list of the items in view), arrows
  move the focus along edges and between siblings (the canvas paints the ring), Enter inspects,
  Escape leaves; a polite live region says each step.
- axe-core (npm, injected into the page only here, never shipped) finds no serious or critical
  violation in the widget nor on the standalone page.
- Semantic zoom: zooming out past legible folds the deepest frames, zooming into a box opens it.
- Resize: a narrower drawing is fitted again by Python, the user's own unfold kept.
- Auto direction: a chain in a wide, short drawing is laid out left to right.
Screenshots under tests/artifacts/a11y_*.png.
"""

from __future__ import annotations

import json

import pytest
import torch
from playwright.sync_api import expect

import autograd_widget as aw

from .conftest import ARTIFACTS
from .drawtools import open_offline, painted, widget_root
from .labserver import ROOT
from .labtools import button, open_notebook, run_cell, status

pytestmark = [pytest.mark.browser, pytest.mark.slow]

expect.set_options(timeout=20_000)

AXE = ROOT / "js" / "node_modules" / "axe-core" / "axe.min.js"

Z_CELL = """\
import torch
import autograd_widget as aw
x = torch.tensor(2.0, requires_grad=True)
y = torch.tensor(3.0, requires_grad=True)
w = aw.explore(x**2 + y, params={"x": x, "y": y})
w"""


def encoder_cell(layers: int, options: str = "") -> str:
    """A notebook cell: a tracked TransformerEncoder of `layers` layers explored with `options`."""
    return f"""\
import torch, torch.nn as nn
import autograd_widget as aw
torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(16, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True)
model = nn.TransformerEncoder(layer, {layers}, enable_nested_tensor=False)
with aw.track(model):
    loss = model(torch.randn(2, 4, 16, requires_grad=True)).pow(2).mean()
w = aw.explore(loss, model=model{options})
w"""


# A model whose frames do not fit at a legible scale: collapse="none" keeps every frame.
DEEP_CELL = encoder_cell(3, ', collapse="none", height=560')
ENCODER_CELL = encoder_cell(6)

CHAIN_CELL = """\
import torch, torch.nn as nn
import autograd_widget as aw
torch.manual_seed(0)
model = nn.Sequential(*[nn.Sequential(nn.Linear(4, 4), nn.Tanh()) for _ in range(3)])
with aw.track(model):
    loss = model(torch.randn(2, 4)).sum()
w = aw.explore(loss, model=model, height=300)
w"""

FACTS = ("import json; print(json.dumps({'collapsed': w.collapsed, 'folds': list(w.folds), "
         "'items': len(w.visible), 'direction': w.drawn_orientation, "
         "'width': w._session.scene.viewport.width, 'selected': w.selected}))")


def facts(page, i: int) -> dict:
    out = run_cell(page, i)
    return json.loads([ln for ln in out.splitlines() if ln.startswith("{")][-1])


def facts_until(page, i: int, ok, tries: int = 20) -> dict:
    """`facts` once `ok(facts)` holds (the kernel may still be answering an earlier message;
    a shared machine can be slow), at most `tries` reads half a second apart."""
    for _ in range(tries):
        f = facts(page, i)
        if ok(f):
            return f
        page.wait_for_timeout(500)
    return f


def axe_violations(page, selector: str) -> list[str]:
    """axe-core's serious and critical violations inside `selector`."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    found = page.evaluate(
        """async (sel) => {
          const r = await axe.run(document.querySelector(sel), { resultTypes: ['violations'] });
          return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
            .map((v) => `${v.id} (${v.impact}): ${v.help} — ` +
                 v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join('; '));
        }""",
        selector,
    )
    return found


def focused_item(page) -> int:
    return page.evaluate(
        "() => document.activeElement?.classList.contains('agw-sr-item') ? "
        "Number(document.activeElement.dataset.item) : -1")


def test_keyboard_path_live_step_and_axe_in_the_widget(page, lab_server):
    open_notebook(page, lab_server, "a11y_keys.ipynb", [Z_CELL, FACTS])
    run_cell(page, 0)
    root = widget_root(page, 0)
    painted(root)
    assert AXE.exists(), "axe-core is missing: cd js && npm ci"
    bad = axe_violations(page, ".agw-root")
    assert not bad, "\n".join(bad)
    # Tab from the widget reaches the drawing: one Tab stop for the whole list
    root.locator(".agw-main").click(position={"x": 5, "y": 5})
    for _ in range(40):
        page.keyboard.press("Tab")
        if focused_item(page) >= 0:
            break
    start = focused_item(page)
    assert start >= 0, "Tab never reached the drawing"
    first = page.evaluate("() => document.activeElement.textContent")
    assert first.startswith("AddBackward0"), first  # the root, in reading order
    p = painted(root)
    assert p.marks["focus"] == start, p.marks  # the canvas paints the focus ring
    page.keyboard.press("ArrowDown")  # along the gradient's flow
    down = focused_item(page)
    assert down >= 0 and down != start
    assert painted(root).marks["focus"] == down
    page.keyboard.press("ArrowRight")  # a sibling in the same layer (the other way at the end)
    if focused_item(page) == down:
        page.keyboard.press("ArrowLeft")
    side = focused_item(page)
    assert side >= 0 and side != down
    assert painted(root).marks["focus"] == side
    page.keyboard.press("ArrowUp")
    assert focused_item(page) == start
    root.screenshot(path=str(ARTIFACTS / "a11y_focus_ring.png"))
    page.keyboard.press("ArrowDown")
    target = focused_item(page)
    name = page.evaluate("() => document.activeElement.textContent.split(',')[0]")
    page.keyboard.press("Enter")  # inspects: the kernel's selection follows
    expect(root.locator(".agw-side")).to_be_visible()
    assert facts(page, 1)["selected"] is not None, name
    root.locator("canvas.agw-canvas").scroll_into_view_if_needed()
    for _ in range(40):  # back to the item (the inspector took the focus)
        if focused_item(page) == target:
            break
        page.keyboard.press("Tab")
    page.keyboard.press("Escape")  # leaves the drawing
    assert focused_item(page) == -1
    assert painted(root).marks["focus"] == -1
    # Each step is said, once, by a polite live region, with the node's module when it has one
    announce = root.locator(".agw-announce")
    assert announce.get_attribute("aria-live") == "polite"
    button(root, "Step").click()
    expect(status(root)).to_contain_text("step 1 / 4")
    expect(announce).to_have_text("ran AddBackward0, step 1 of 4; next AccumulateGrad (y)")
    items = root.locator(".agw-sr-item").all_text_contents()
    assert any(t.startswith("AddBackward0, done, just ran") for t in items), items
    page.page_log.assert_clean()


def test_standalone_page_is_axe_clean(browser, tmp_path):
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    w = aw.explore(x**2 + y, params={"x": x, "y": y})
    path = w.save_html(tmp_path / "z.html")
    w.close()
    ctx, page, requests, errors = open_offline(browser, path)
    try:
        root = page.locator(".agw-root")
        root.locator("canvas.agw-canvas[data-painted]").wait_for(state="attached")
        page.wait_for_timeout(300)
        bad = axe_violations(page, "body")
        assert not bad, "\n".join(bad)
        items = root.locator(".agw-sr-item").all_text_contents()
        assert [t.split(",")[0] for t in items][:2] == ["AddBackward0", "PowBackward0"], items
        assert not requests and not errors, (requests, errors)
    finally:
        ctx.close()


def wheel(page, root, dy: float, times: int, where=(0.5, 0.5)) -> None:
    box = root.locator("canvas.agw-canvas").bounding_box()
    page.mouse.move(box["x"] + where[0] * box["width"], box["y"] + where[1] * box["height"])
    for _ in range(times):
        page.mouse.wheel(0, dy)
        page.wait_for_timeout(120)


def test_semantic_zoom_folds_out_and_opens_in(page, lab_server):
    open_notebook(page, lab_server, "a11y_semzoom.ipynb", [DEEP_CELL, FACTS])
    run_cell(page, 0, timeout=120)
    root = widget_root(page, 0)
    root.locator("canvas.agw-canvas").scroll_into_view_if_needed()
    p0 = painted(root)
    frames0 = [lb for lb in p0.labels if lb["kind"] == "frame"]
    assert frames0, "collapse='none' draws frames"
    before = facts(page, 1)
    assert before["collapsed"] == []
    # Zooming out past legible folds the deepest frames into titled boxes, legibly
    root.locator("canvas.agw-canvas").scroll_into_view_if_needed()
    wheel(page, root, 300, 1)
    after = facts_until(page, 1, lambda f: f["collapsed"])
    assert after["collapsed"], after
    page.wait_for_function(  # the new drawing reached the page: its accessible list says so
        "([r, n]) => r.querySelector('.agw-sr-list').getAttribute('aria-label')"
        ".endsWith(`of ${n} items in view`)", arg=[root.element_handle(), after["items"]])
    p1 = painted(root)
    assert after["items"] < before["items"], (before, after)
    assert p1.font >= 11 - 1e-6 and p1.labels, p1.font
    root.screenshot(path=str(ARTIFACTS / "a11y_semzoom_out.png"))
    # Zooming out again folds the next level, until boxes are in view
    for _ in range(3):
        if [it for it in p1.items if it["kind"] == "box"]:
            break
        n = len(after["collapsed"])
        wheel(page, root, 300, 1)
        after = facts_until(page, 1, lambda f, n=n: len(f["collapsed"]) != n)
        page.wait_for_function(
            "([r, n]) => r.querySelector('.agw-sr-list').getAttribute('aria-label')"
            ".endsWith(`of ${n} items in view`)", arg=[root.element_handle(), after["items"]])
        p1 = painted(root)
    # Zooming into a folded box opens it again (the pointer on its part in view)
    a = p1.area
    boxes = [it for it in p1.items if it["kind"] == "box"]
    assert boxes, "no folded box in view"
    b = boxes[0]
    x0, x1 = max(b["x"], a["l"]), min(b["x"] + b["w"], a["l"] + a["w"])
    y0, y1 = max(b["y"], a["t"]), min(b["y"] + b["h"], a["t"] + a["h"])
    box = root.locator("canvas.agw-canvas").bounding_box()
    page.mouse.move(box["x"] + (x0 + x1) / 2, box["y"] + (y0 + y1) / 2)
    listed = root.locator(".agw-sr-list")
    before_label = listed.get_attribute("aria-label")
    for _ in range(12):  # as a user: zoom in until it opens
        page.mouse.wheel(0, -200)
        page.wait_for_timeout(250)
        if not (listed.get_attribute("aria-label") or "").endswith(
                before_label.split(" of ")[-1]):
            break
    was = set(after["collapsed"])
    opened = facts_until(page, 1, lambda f: was - set(f["collapsed"]))
    assert was - set(opened["collapsed"]), "zooming into a box did not open it"
    assert opened["items"] > after["items"]
    page.wait_for_function(
        "([r, n]) => r.querySelector('.agw-sr-list').getAttribute('aria-label')"
        ".endsWith(`of ${n} items in view`)", arg=[root.element_handle(), opened["items"]])
    p2 = painted(root)
    # the module it opened fills the view, legibly
    assert p2.font >= 11 - 1e-6 and [lb for lb in p2.labels if lb["kind"] == "frame"], p2.font
    root.screenshot(path=str(ARTIFACTS / "a11y_semzoom_in.png"))
    page.page_log.assert_clean()


def test_resize_refits_keeping_the_users_unfold(page, lab_server):
    open_notebook(page, lab_server, "a11y_resize.ipynb",
                  [ENCODER_CELL, FACTS, "w.unfold(next(iter(w.folds))); print(w.folds)"])
    run_cell(page, 0, timeout=120)
    root = widget_root(page, 0)
    page.wait_for_timeout(900)
    painted(root)
    wide = facts(page, 1)
    assert wide["folds"], wide
    key = wide["folds"][0]
    run_cell(page, 2)  # the user's own unfold
    page.set_viewport_size({"width": 900, "height": 900})  # the drawing gets narrower
    narrow = facts_until(page, 1, lambda f: f["width"] < wide["width"] - 50)
    assert narrow["width"] < wide["width"] - 50, (wide, narrow)
    assert key not in narrow["folds"], narrow  # kept unfolded
    root.locator("canvas.agw-canvas").scroll_into_view_if_needed()
    p = painted(root)
    label = root.locator(".agw-sr-list").get_attribute("aria-label")
    assert label and p.labels, label
    root.screenshot(path=str(ARTIFACTS / "a11y_resized.png"))
    page.page_log.assert_clean()


def test_auto_direction_lays_a_chain_left_to_right_in_a_wide_short_drawing(page, lab_server):
    open_notebook(page, lab_server, "a11y_direction.ipynb", [CHAIN_CELL, FACTS])
    run_cell(page, 0)
    root = widget_root(page, 0)
    assert facts_until(page, 1, lambda f: f["direction"] == "LR")["direction"] == "LR"
    painted(root)
    sel = root.locator("select.agw-direction")
    expect(sel).to_have_value("auto")
    expect(sel.locator("option[value=auto]")).to_have_text("Auto →")
    # the switch still offers both
    sel.select_option("TB")
    page.wait_for_function(
        "c => c.agwPainted && c.agwPainted.range", arg=root.locator("canvas.agw-canvas")
        .element_handle())
    assert facts_until(page, 1, lambda f: f["direction"] == "TB")["direction"] == "TB"
    root.screenshot(path=str(ARTIFACTS / "a11y_direction_tb.png"))
    page.page_log.assert_clean()
