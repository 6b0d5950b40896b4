"""The widget in a real JupyterLab (and Notebook 7), driven like a user: clicks, keys, the mouse.

One server per session (conftest), a fresh page and kernel per test. Every test also asserts
that the page logged no console error and made no request outside 127.0.0.1 (the `page`
fixture), and leaves a screenshot under tests/artifacts/.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.helpers.screenshots import keep_readme_image

from .conftest import ARTIFACTS, NOTEBOOK7_KNOWN_ERRORS
from .labtools import (
    PIXELS,
    RANGES,
    background,
    button,
    edge_labels,
    item_fills,
    item_index,
    label_problems,
    open_notebook,
    painted,
    pixels,
    point,
    position_of,
    run_cell,
    save,
    status,
    wait_edge_labels,
    wait_left_to_right,
    widget_in,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

expect.set_options(timeout=20_000)


Z_CELL = """\
import torch
import autograd_widget as aw
x = torch.tensor(2.0, requires_grad=True)
y = torch.tensor(3.0, requires_grad=True)
z = x**2 + y
w = aw.explore(z, params={"x": x, "y": y}, height=440)
w"""

MLP_CELL = """\
import torch, torch.nn as nn, torch.nn.functional as F
import autograd_widget as aw
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 3))
inputs, target = torch.randn(5, 4), torch.tensor([0, 2, 1, 0, 1])
loss = F.cross_entropy(model(inputs), target)
w = aw.explore(loss, model=model, height=560)
w"""

# The engine's order for z = x**2 + y (API.md): the status line says what ran and what runs next.
Z_STATUS = [
    "step 0 / 4 → next AddBackward0",
    "ran AddBackward0 (step 1 / 4) → next AccumulateGrad (y)",
    "ran AccumulateGrad (y) (step 2 / 4) → next PowBackward0",
    "ran PowBackward0 (step 3 / 4) → next AccumulateGrad (x)",
    "ran AccumulateGrad (x) (step 4 / 4) — done",
]


def test_step_back_values_and_python_side(page, lab_server):
    open_notebook(
        page,
        lab_server,
        "z_steps.ipynb",
        [
            Z_CELL,
            'print("position", w.stepper.position)',
            'w.stepper.step()\nprint("position", w.stepper.position)',
        ],
    )
    run_cell(page, 0)
    root = widget_in(page, 0)
    expect(status(root)).to_have_text(Z_STATUS[0])
    assert edge_labels(root) == [], "nothing has flowed yet"
    expect(button(root, "Back")).to_be_disabled()
    expect(button(root, "Run to node")).to_be_disabled()
    for k in range(1, 5):
        button(root, "Step").click()
        expect(status(root)).to_have_text(Z_STATUS[k])
    # dx = 2x = 4 into x, dy = 1 into y (and 1 from Add into Pow), written in the page.
    assert edge_labels(root) == ["1", "1", "4"]
    expect(button(root, "Step")).to_be_disabled()
    save(root, "widget_z_done.png")

    button(root, "Back").click()
    expect(status(root)).to_have_text(Z_STATUS[3])
    assert edge_labels(root) == ["1", "1", "4"], "x's gradient came from Pow, still done"
    button(root, "Back").click()
    expect(status(root)).to_have_text(Z_STATUS[2])
    wait_edge_labels(root, 2)
    assert edge_labels(root) == ["1", "1"], "undoing Pow takes its gradient off the edge"
    expect(root.locator(".agw-waiting")).to_contain_text("Next: PowBackward0")

    # The kernel agrees with the clicks: 4 steps, 2 backs.
    assert "position 2" in run_cell(page, 1)
    # Stepping from Python updates the drawing.
    assert "position 3" in run_cell(page, 2)
    expect(status(root)).to_have_text(Z_STATUS[3])
    wait_edge_labels(root, 3)
    assert edge_labels(root) == ["1", "1", "4"]
    page.page_log.assert_clean()


def test_second_view_and_reload_show_the_current_step(page, lab_server):
    """The state lives in the kernel's traits: a second view and a reloaded page agree."""
    open_notebook(page, lab_server, "z_views.ipynb", [Z_CELL, "w"])
    run_cell(page, 0)
    first = widget_in(page, 0)
    button(first, "Step").click()
    expect(status(first)).to_have_text(Z_STATUS[1])
    run_cell(page, 1)
    second = widget_in(page, 1)
    expect(status(second)).to_have_text(Z_STATUS[1])
    button(second, "Step").click()
    expect(status(first)).to_have_text(Z_STATUS[2])
    expect(status(second)).to_have_text(Z_STATUS[2])
    button(first, "Step").click()
    expect(status(second)).to_have_text(Z_STATUS[3])
    for view in (first, second):  # labels are painted a frame after the status line
        wait_edge_labels(view, 3)
    assert edge_labels(first) == edge_labels(second) == ["1", "1", "4"]

    page.keyboard.press("Control+s")
    page.wait_for_function(
        "() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=20_000
    )
    page.reload()
    for i in (0, 1):
        root = widget_in(page, i)
        expect(status(root)).to_have_text(Z_STATUS[3])
    assert edge_labels(widget_in(page, 0)) == ["1", "1", "4"]
    page.page_log.assert_clean()


def test_play_pause_and_keyboard(page, lab_server):
    open_notebook(
        page,
        lab_server,
        "mlp_play.ipynb",
        [MLP_CELL, 'print("position", w.stepper.position)'],
    )
    run_cell(page, 0)
    root = widget_in(page, 0)
    total = int(re.search(r"/ (\d+)", status(root).inner_text()).group(1))
    assert total > 8
    # Slow enough to pause half way.
    root.locator("input[type=range]").evaluate(
        "(el) => { el.value = '6'; el.dispatchEvent(new Event('input', { bubbles: true })); }"
    )
    expect(root.locator(".agw-speed-value")).to_have_text("6/s")
    button(root, "Play").click()
    expect(button(root, "Pause")).to_be_visible()
    expect(button(root, "Step")).to_be_disabled()
    page.wait_for_function(
        "root => /step ([3-9]|\\d\\d+) \\//.test(root.querySelector('.agw-status').textContent)",
        arg=root.element_handle(),
    )
    button(root, "Pause").click()
    expect(button(root, "Play")).to_be_visible()
    page.wait_for_timeout(200)  # a step already on its way may still land
    paused_at = position_of(root)
    page.wait_for_timeout(800)
    assert position_of(root) == paused_at, "Pause stopped the stepping"
    assert 3 <= paused_at < total
    assert f"position {paused_at}" in run_cell(page, 1)

    # Keyboard, with the widget focused: right steps, left goes back, space plays/pauses.
    root.locator(".agw-main").click(position={"x": 5, "y": 5})
    page.keyboard.press("ArrowRight")
    expect(status(root)).to_contain_text(f"step {paused_at + 1} /")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    expect(status(root)).to_contain_text(f"step {paused_at - 1} /")
    page.keyboard.press("Space")
    expect(button(root, "Pause")).to_be_visible()
    page.keyboard.press("Space")
    expect(button(root, "Play")).to_be_visible()
    # Run to end goes in chunks and finishes.
    button(root, "Run to end").click()
    expect(status(root)).to_have_text(re.compile(rf"\(step {total} / {total}\) — done$"))
    expect(button(root, "Play")).to_be_disabled()
    page.page_log.assert_clean()


def test_zoom_fit_hover_select(page, lab_server):
    open_notebook(page, lab_server, "z_view.ipynb", [Z_CELL, "print('selected', w.selected)"])
    run_cell(page, 0)
    root = widget_in(page, 0)
    button(root, "Run to end").click()
    expect(status(root)).to_have_text(Z_STATUS[4])

    # No plotly any more: one canvas, no modebar, nothing that uploads or downloads the figure.
    plot = root.locator(".agw-plot")
    expect(plot.locator("canvas.agw-canvas")).to_have_count(1)
    expect(root.locator(".modebar, .main-svg, .js-plotly-plot")).to_have_count(0)
    names = root.get_by_role("button").evaluate_all(
        "els => els.map((e) => (e.getAttribute('aria-label') || e.textContent || '').trim())"
    )
    assert not [n for n in names if re.search(r"share|cloud|upload|download|png", n, re.I)], names
    fit = page.evaluate(RANGES, root.element_handle())
    fitted = painted(page, root)
    assert not label_problems(fitted), label_problems(fitted)
    mini = root.locator(".agw-minimap")
    expect(mini).to_be_hidden()  # four nodes: the whole graph is in view, legibly

    # The wheel zooms about the pointer: the point under it stays put.
    pow_at = point(page, root, "Pow")
    page.mouse.move(pow_at["x"], pow_at["y"])
    for _ in range(5):
        page.mouse.wheel(0, -100)
    narrower = 0.6 * (fit[0][1] - fit[0][0])
    page.wait_for_function(
        f"root => {{ const [x] = ({RANGES})(root); return x[1] - x[0] < {narrower}; }}",
        arg=root.element_handle(),
    )
    zoomed = painted(page, root)
    assert zoomed["ppu"] > 1.6 * fitted["ppu"], (fitted["ppu"], zoomed["ppu"])
    still = point(page, root, "Pow")
    assert abs(still["x"] - pow_at["x"]) < 1.5 and abs(still["y"] - pow_at["y"]) < 1.5, still
    expect(mini).to_be_visible()  # the drawing now exceeds the view
    # Fit brings the whole graph back.
    button(root, "Fit").click()
    page.wait_for_function(
        f"([root, x]) => Math.abs(({RANGES})(root)[0][0] - x) < 1e-6",
        arg=[root.element_handle(), fit[0][0]],
    )
    xr, yr = page.evaluate(RANGES, root.element_handle())
    assert xr == pytest.approx(fit[0]) and yr == pytest.approx(fit[1])
    expect(mini).to_be_hidden()
    # Dragging pans by the distance dragged (one scale on both axes).
    box = plot.bounding_box()
    empty_spot = (box["x"] + 40, box["y"] + box["height"] - 40)
    page.mouse.move(*empty_spot)
    page.mouse.down()
    page.mouse.move(empty_spot[0] + 30, empty_spot[1] - 20, steps=5)
    page.mouse.move(empty_spot[0] + 60, empty_spot[1] - 40, steps=5)
    page.mouse.up()
    page.wait_for_function(
        f"([root, x]) => Math.abs(({RANGES})(root)[0][0] - x) > 1e-6",
        arg=[root.element_handle(), fit[0][0]],
    )
    panned = painted(page, root)
    assert panned["range"]["x"][0] == pytest.approx(fit[0][0] - 60 / fitted["ppu"], abs=0.05)
    assert panned["range"]["y"][1] == pytest.approx(fit[1][1] - 40 / fitted["ppu"], abs=0.05)
    # A double-click on the drawing fits, as the Fit button does.
    page.mouse.dblclick(*empty_spot)
    page.wait_for_function(
        f"([root, x]) => Math.abs(({RANGES})(root)[0][0] - x) < 1e-6",
        arg=[root.element_handle(), fit[0][0]],
    )
    assert page.evaluate(RANGES, root.element_handle())[1] == pytest.approx(fit[1])

    # Hover a node: a card with its name and slots, then the kernel's gradient summary.
    p = point(page, root, "Pow")
    page.mouse.move(p["x"], p["y"])
    card = root.locator(".agw-card")
    expect(card).to_be_visible()
    expect(card).to_contain_text("PowBackward0")
    expect(card).to_contain_text("[] float32 cpu")
    expect(card).to_contain_text("out → x")
    expect(card).to_contain_text("‖g‖ 4")
    save(root, "widget_hover.png")
    page.mouse.move(box["x"] + 2, box["y"] + box["height"] - 2)
    expect(card).to_be_hidden()

    # Click selects (the kernel sees it); "Run to node" needs a selection.
    expect(button(root, "Run to node")).to_be_disabled()
    p = point(page, root, "x")
    page.mouse.click(p["x"], p["y"])
    expect(button(root, "Run to node")).to_be_enabled()
    chosen = painted(page, root)
    assert chosen["marks"]["selected"] == item_index(chosen, "x"), chosen["marks"]
    out = run_cell(page, 1)
    assert re.search(r"selected \S+", out) and "None" not in out, out
    button(root, "Reset").click()
    expect(status(root)).to_have_text(Z_STATUS[0])
    button(root, "Run to node").click()
    expect(status(root)).to_have_text(Z_STATUS[4])  # x's AccumulateGrad is the last step

    # Left to right: Python lays the graph out again, the step stays.
    root.get_by_label("Layout direction").select_option("LR")
    wait_left_to_right(root, ["Add", "Pow", "x"])
    expect(status(root)).to_have_text(Z_STATUS[4])
    assert edge_labels(root) == ["1", "1", "4"]
    save(root, "widget_lr.png")
    page.page_log.assert_clean()


def badges_seen(page, root) -> list[dict]:
    """The stale/freed badges painted on the canvas, each with the colour the canvas shows at
    its centre (`seen`: of the 3x3 px there, the badge's colour when one shows it, so a thin
    symbol whose centre falls between device pixels still counts): painted, not merely
    recorded."""
    p = painted(page, root)
    badges = p["marks"]["badges"]
    out = []
    for b in badges:
        spots = [(b["x"] + dx, b["y"] + 1 + dy) for dy in (-1, 0, 1) for dx in (-1, 0, 1)]
        seen = pixels(page, root, spots)
        want = rgb(b["color"])
        out.append({**b, "seen": want if want in seen else seen[4]})
    return out


def rgb(hex_colour: str) -> str:
    """A "#rrggbb" colour as the canvas pixels read it: "#ff1f1f" -> "rgb(255, 31, 31)"."""
    h = hex_colour.lstrip("#")
    return "rgb({}, {}, {})".format(*(int(h[k:k + 2], 16) for k in (0, 2, 4)))


def test_failing_node_is_shown_once_and_the_widget_stays_usable(page, lab_server):
    cell = """\
import torch
import autograd_widget as aw
x = torch.randn(3, requires_grad=True)
y = x.exp()   # exp saves its result...
y.add_(1)     # ...which this modifies in place: backward through exp must fail
w = aw.explore(y.sum(), height=420)
w"""
    cells = [cell, "print('position', w.stepper.position)"]
    open_notebook(page, lab_server, "failing.ipynb", cells)
    run_cell(page, 0)
    root = widget_in(page, 0)
    # the stale saved tensor is marked before anything ran, visibly at Fit, and in the legend
    badges = badges_seen(page, root)
    assert len(badges) == 1 and badges[0]["size"] >= 18, badges
    assert badges[0]["seen"] == rgb(badges[0]["color"]), badges  # on top, not painted over
    assert badges[0]["item"] == item_index(painted(page, root), "Exp"), badges
    expect(root.locator(".agw-legend")).to_contain_text("stale saved tensor")
    plot_top = root.locator(".agw-plot").bounding_box()["y"]
    button(root, "Run to end").click()
    expect(status(root)).to_contain_text("ExpBackward0 failed")
    expect(status(root)).to_contain_text("inplace")
    hint = root.locator(".agw-status-hint")
    expect(hint).to_have_text(" — Back or Reset to go on")
    # said once, on one line: no banner, the graph is not pushed down
    expect(root.locator(".agw-alert")).to_be_hidden()
    assert root.locator(".agw-status").bounding_box()["height"] < 32
    assert abs(root.locator(".agw-plot").bounding_box()["y"] - plot_top) < 1
    assert root.inner_text().count("expected version 0 instead") == 1
    expect(button(root, "Play")).to_be_visible()
    # the failed node is painted red (the canvas, read back pixel by pixel, once settled)
    fill = item_fills(page, root)
    assert fill[item_index(painted(page, root), "Exp")] == "rgb(225, 87, 89)", fill
    save(root, "widget_failed.png")
    stuck = position_of(root)
    # Step and Run to end say why they can't go on, and send nothing to the kernel
    # (aria-disabled: assistive tech and Playwright see them unavailable, so the clicks are
    # forced; a mouse still clicks them and is told why)
    expect(button(root, "Step")).to_have_attribute("aria-disabled", "true")
    expect(button(root, "Step")).to_be_disabled()
    button(root, "Step").click(force=True)
    expect(hint).to_have_text(" — can't step: Back or Reset to go on")
    button(root, "Run to end").click(force=True)
    expect(hint).to_have_text(" — can't run to the end: Back or Reset to go on")
    assert f"position {stuck}" in run_cell(page, 1)
    # Still usable: back, then reset.
    button(root, "Back").click()
    expect(status(root)).to_contain_text(f"step {stuck - 1} /")
    expect(hint).to_be_hidden()
    expect(button(root, "Step")).not_to_have_attribute("aria-disabled", "true")
    button(root, "Reset").click()
    expect(status(root)).to_contain_text("step 0 /")
    page.page_log.assert_clean()


def test_graph_freed_by_backward_says_so(page, lab_server):
    cell = """\
import torch
import autograd_widget as aw
x = torch.randn(3, requires_grad=True)
loss = x.exp().sum()
loss.backward()   # frees the saved tensors
w = aw.explore(loss, height=380)
w"""
    open_notebook(page, lab_server, "freed.ipynb", [cell])
    run_cell(page, 0)
    root = widget_in(page, 0)
    notice = root.locator(".agw-notice")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text("freed by backward()")
    badges = badges_seen(page, root)
    assert badges and all(b["size"] >= 18 and b["seen"] == rgb(b["color"]) for b in badges), badges
    expect(root.locator(".agw-legend")).to_contain_text("saved tensors freed")
    button(root, "Run to end").click()
    expect(status(root)).to_contain_text("failed")
    expect(root.locator(".agw-status-hint")).to_contain_text("Reset to go on")
    expect(root.locator(".agw-alert")).to_be_hidden()
    save(root, "widget_freed.png")
    page.page_log.assert_clean()


CNN_CELL = """\
import torch, torch.nn as nn, torch.nn.functional as F
import autograd_widget as aw
torch.manual_seed(0)
block = lambda: nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
model = nn.Sequential(
    nn.Conv2d(3, 8, 3, padding=1),
    *[block() for _ in range(8)],
    nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10),
)
images, labels = torch.randn(4, 3, 16, 16), torch.tensor([3, 1, 4, 1])
with aw.track(model):
    loss = F.cross_entropy(model(images), labels)
w = aw.explore(loss, model=model)
print(len(w.graph), "nodes;", list(w.folds), "folded")
w"""
#: Backward's order on CNN_CELL's graph: the loss, the head (Linear's four nodes, the flatten's
#: View, the pool's Mean), then the folded blocks.
CNN_HEAD_STEPS = 8


def test_readme_screenshot_light_and_dark(page, lab_server):
    """A small CNN (eight identical Conv-BN-ReLU blocks, folded into one box "1–8 ×8") opened
    with default options, shown whole (every item in view, legibly), stopped where backward
    enters the folded blocks: gradients coloured by norm on the edges that have flowed, the
    pool's Mean that just ran ringed, the folded box that runs next haloed, modules titled with
    their classes, the fixed colour bar. The light screenshot is the README's; the dark one
    checks the widget follows the theme. `make screenshots` copies the light one over the
    README's (notebooks/img/widget.png); `make test` leaves it under tests/artifacts/."""
    page.set_viewport_size({"width": 1600, "height": 1000})
    open_notebook(page, lab_server, "readme.ipynb", [CNN_CELL])
    out = run_cell(page, 0, timeout=120)
    assert "'1–8 ×8'" in out, out
    # more room for the drawing: the file browser closed, as a reader would
    page.evaluate("() => window.jupyterapp.commands.execute('application:toggle-left-area')")
    root = widget_in(page, 0)
    for k in range(1, CNN_HEAD_STEPS + 1):
        button(root, "Step").click()
        expect(status(root)).to_contain_text(f"step {k} /")
    expect(status(root)).to_contain_text("ran MeanBackward1")  # the pool, "9 · AdaptiveAvgPool2d"
    expect(status(root)).to_contain_text("→ next ReluBackward0")  # the last block's ReLU
    page.mouse.move(0, 0)
    root.scroll_into_view_if_needed()
    p = painted(page, root)
    assert not label_problems(p), label_problems(p)
    # the whole model at first sight: every item in view (the drawing's accessible list says)
    m = re.search(r"(\d+) of (\d+) items in view",
                  root.locator(".agw-sr-list").get_attribute("aria-label") or "")
    assert m and m.group(1) == m.group(2), m
    marks = p["marks"]
    assert marks["ran"] == item_index(p, "9"), marks  # "9 · AdaptiveAvgPool2d" over "Mean"
    assert marks["next"] == item_index(p, "1–8"), marks  # the folded blocks, first word
    save(root, "widget.png")
    keep_readme_image(ARTIFACTS / "widget.png")
    light = background(page, root)
    page.evaluate(
        "() => window.jupyterapp.commands.execute('apputils:change-theme', "
        "{ theme: 'JupyterLab Dark' })"
    )
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'false'")
    page.wait_for_function(
        f"([root, bg]) => ({PIXELS})([root, [[2, 2]]])[0] !== bg",
        arg=[root.element_handle(), light],
    )
    dark = background(page, root)
    level = [int(v) for v in re.findall(r"\d+", dark)[:3]]
    assert sum(level) < 3 * 80, f"dark theme, dark drawing: {dark} (light was {light})"
    assert not label_problems(painted(page, root))
    save(root, "widget_dark.png")
    page.evaluate(
        "() => window.jupyterapp.commands.execute('apputils:change-theme', "
        "{ theme: 'JupyterLab Light' })"
    )
    page.wait_for_function("() => document.body.dataset.jpThemeLight === 'true'")
    page.page_log.assert_clean()


def test_notebook7_shows_the_same_widget(page, lab_server):
    page.page_log.allowed += NOTEBOOK7_KNOWN_ERRORS
    open_notebook(page, lab_server, "nb7.ipynb", [Z_CELL], app="notebook")
    assert "/notebooks/" in page.url
    run_cell(page, 0)
    root = widget_in(page, 0)
    expect(status(root)).to_have_text(Z_STATUS[0])
    button(root, "Step").click()
    expect(status(root)).to_have_text(Z_STATUS[1])
    button(root, "Run to end").click()
    expect(status(root)).to_have_text(Z_STATUS[4])
    assert edge_labels(root) == ["1", "1", "4"]
    save(root, "widget_notebook7.png")
    page.page_log.assert_clean()
