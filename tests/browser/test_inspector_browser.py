"""Part 2 in a real JupyterLab: module boxes, the inspector and its tabs, search, the plumbing
toggle, "First NaN/Inf", the memory colour mode and stale/freed marks, driven like a user.

Same harness as test_widget_browser.py: one server per session, a fresh page and kernel per test,
no console error and no request leaving 127.0.0.1 (the `page` fixture), screenshots under
tests/artifacts/.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from .labtools import (
    button,
    click_label,
    drag,
    item_box,
    item_fills,
    item_index,
    item_labels,
    label_problems,
    labels,
    node_count,
    open_notebook,
    painted,
    reveal,
    run_cell,
    save,
    shown_count,
    status,
    wait_label,
    wait_left_to_right,
    widget_in,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

expect.set_options(timeout=20_000)

MLP_CELL = """\
import torch, torch.nn as nn, torch.nn.functional as F
import autograd_widget as aw
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 3))
with aw.track(model):
    out = model(torch.randn(5, 4))
loss = F.cross_entropy(out, torch.tensor([0, 2, 1, 0, 1]))
w = aw.explore(loss, model=model, collapse="{collapse}", height=620)
w"""

TRANSFORMER_CELL = """\
import torch, torch.nn as nn
import autograd_widget as aw
torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(16, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True)
model = nn.TransformerEncoder(layer, 12, enable_nested_tensor=False)
with aw.track(model):
    out = model(torch.randn(2, 4, 16))
w = aw.explore(out.pow(2).mean(), model=model, collapse="modules", height=640)
print(len(w.graph), "nodes;", len(w.collapsed), "folded")
w"""

def inspector(root):
    return root.get_by_role("region", name="Inspector")


def test_mlp_opens_collapsed_and_expands_on_click(page, lab_server):
    cells = [MLP_CELL.format(collapse="modules"), "print('collapsed', w.collapsed)"]
    open_notebook(page, lab_server, "mlp_boxes.ipynb", cells)
    run_cell(page, 0)
    root = widget_in(page, 0)
    counts = root.locator(".agw-counts")
    expect(counts).to_contain_text("5 modules folded")
    assert node_count(page, root) == 7  # five boxes + NllLoss + LogSoftmax
    shown = labels(page, root)
    assert {"0 · Linear 4 ops · 0%", "2 · Linear 4 ops · 0%", "4 · Linear 4 ops · 0%"} <= set(
        shown
    ), shown
    assert not label_problems(painted(page, root))
    save(root, "inspector_mlp_collapsed.png")

    # Stepping into module 4 moves its progress; "Run to node" on a box runs it through.
    for _ in range(3):
        button(root, "Step").click()
    expect(status(root)).to_contain_text("step 3 /")
    wait_label(root, r"^4 · Linear 4 ops · [1-9]\d?%$")
    # Shift+click inspects a box instead of expanding it.
    click_label(page, root, "4", shift=True)
    panel = inspector(root)
    expect(panel).to_be_visible()
    expect(panel).to_contain_text("folded module · 4 nodes")
    expect(panel).to_contain_text("AddmmBackward0")
    expect(panel.get_by_role("button", name="Expand")).to_be_visible()
    panel.get_by_role("button", name="Run through module").click()
    wait_label(root, r"^4 · Linear 4 ops · 100%$")
    save(root, "inspector_box.png")

    # A plain click on a box expands it: its four nodes replace it.
    click_label(page, root, "2")
    expect(counts).to_contain_text("4 modules folded")
    expect(root.locator(".agw-counts")).to_contain_text("10 shown")
    # the module opens where its box was; its leaves are further down: pan to them
    reveal(page, root, "2.weight")
    assert "2.weight [8, 8]" in labels(page, root)
    assert "'2'" not in run_cell(page, 1)

    # A node inside a module has "Collapse module": the box comes back.
    click_label(page, root, "2.weight")
    panel = inspector(root)
    expect(panel).to_contain_text("AccumulateGrad")
    panel.get_by_role("button", name="Collapse module").click()
    expect(counts).to_contain_text("5 modules folded")
    assert "'2'" in run_cell(page, 1)
    page.page_log.assert_clean()


def test_transformer_opens_collapsed_and_node_inspector_shows_shapes(page, lab_server):
    open_notebook(page, lab_server, "transformer.ipynb", [TRANSFORMER_CELL, "print(w.collapsed)"])
    out = run_cell(page, 0, timeout=120)
    assert "12 folded" in out, out
    root = widget_in(page, 0)
    expect(root.locator(".agw-counts")).to_contain_text("12 modules folded")
    # Twelve boxes do not fit at a legible scale: Fit shows the top of the drawing (the loss and
    # the last layers, where backward starts), every box in view labelled, the minimap on.
    p = painted(page, root)
    assert not label_problems(p), label_problems(p)
    boxes = [t for i, t in item_labels(p).items() if item_box(p, i)["kind"] == "box"]
    title = re.compile(r"layers\.(\d+) · TransformerEncoderLayer")
    layers = sorted((int(title.fullmatch(t[0]).group(1)) for t in boxes), reverse=True)
    assert len(layers) >= 3 and layers == list(range(11, 11 - len(layers), -1)), boxes
    # (a box cut by the view's edge keeps its title; the "56 ops · 0%" line needs the room)
    assert all(re.fullmatch(r"\d+ ops · 0%", t[1]) for t in boxes if len(t) > 1), boxes
    assert len([t for t in boxes if len(t) > 1]) >= 3, boxes
    expect(root.locator(".agw-minimap")).to_be_visible()
    assert shown_count(root) < 30
    save(root, "inspector_transformer_collapsed.png")

    # Click the loss's Mean node: the inspector names it and shows its slot's shape.
    click_label(page, root, "Mean")
    panel = inspector(root)
    expect(panel).to_be_visible()
    expect(panel).to_contain_text("MeanBackward0")
    expect(panel.get_by_role("tab", name="Gradients")).to_have_attribute("aria-selected", "true")
    expect(panel).to_contain_text("[] float32 cpu")  # its input slot: the scalar loss
    click_label(page, root, "Pow")
    expect(panel).to_contain_text("PowBackward0")
    expect(panel).to_contain_text("[2, 4, 16] float32 cpu")
    save(root, "inspector_transformer_node.png")

    # Expanding the last layer shows its submodules as boxes and its own ops as nodes. Close the
    # inspector first: it narrows the plot, and a box label that no longer fits is shortened.
    panel.get_by_role("button", name="Close inspector").click()
    expect(panel).to_be_hidden()
    wait_label(root, r"^layers\.11 · TransformerEncoderLayer \d+ ops · 0%$")
    click_label(page, root, "layers.11")
    expect(root.locator(".agw-counts")).to_contain_text("16 modules folded")
    out = run_cell(page, 1)
    assert "'layers.11.self_attn'" in out and "'layers.11'" not in out, out
    save(root, "inspector_transformer_expanded.png")
    root.get_by_label("Layout direction").select_option("LR")
    wait_left_to_right(root, ["Mean", "Pow"])
    p = painted(page, root)
    assert not label_problems(p), label_problems(p)
    save(root, "inspector_transformer_lr.png")
    page.page_log.assert_clean()


def test_search_selects_a_hidden_leaf_and_plumbing_toggle(page, lab_server):
    cells = [
        MLP_CELL.format(collapse="modules"),
        "print('selected', w.graph.nodes[w.selected].leaf_name, 'collapsed', w.collapsed)",
    ]
    open_notebook(page, lab_server, "mlp_search.ipynb", cells)
    run_cell(page, 0)
    root = widget_in(page, 0)
    box = root.get_by_role("combobox", name="Search nodes")
    box.fill("2.weight")
    listbox = root.get_by_role("listbox", name="Matching nodes")
    expect(listbox).to_be_visible()
    option = listbox.get_by_role("option").first
    expect(option).to_contain_text("2.weight")
    expect(option).to_contain_text("in folded 2")
    save(root, "inspector_search.png")
    box.press("Enter")
    # Python unfolds module 2, selects the leaf; the view zooms to it and inspects it.
    expect(root.locator(".agw-counts")).to_contain_text("4 modules folded")
    panel = inspector(root)
    expect(panel).to_contain_text("AccumulateGrad")
    expect(panel).to_contain_text("2.weight")
    expect(panel).to_contain_text("[8, 8] float32 cpu")
    out = run_cell(page, 1)
    assert "selected 2.weight" in out and "'2'" not in out, out
    p = painted(page, root)
    assert p["marks"]["selected"] == item_index(p, "2.weight"), p["marks"]  # ringed
    save(root, "inspector_search_selected.png")

    # Hide plumbing: module 2's TBackward0 goes, the count of drawn nodes drops by one.
    before = shown_count(root)
    root.get_by_label("Hide plumbing").check()
    expect(root.locator(".agw-counts")).to_contain_text("1 plumbing hidden")
    expect(root.locator(".agw-counts")).to_contain_text(f"{before - 1} shown")
    root.get_by_label("Hide plumbing").uncheck()
    expect(root.locator(".agw-counts")).not_to_contain_text("plumbing hidden")
    expect(root.locator(".agw-counts")).to_contain_text(f"{before} shown")
    page.page_log.assert_clean()


NAN_CELL = """\
import torch
import autograd_widget as aw
x = torch.tensor([0.0, 4.0], requires_grad=True)
scale = torch.tensor([1.0, 1.0], requires_grad=True)
loss = torch.sqrt(x * scale).sum()   # d sqrt/du at u = 0 is inf; times 0 in Mul gives NaN
w = aw.explore(loss, params={"x": x, "scale": scale}, height=480)
w"""

STALE_CELL = """\
import torch
import autograd_widget as aw
a = torch.randn(3, requires_grad=True)
y = a.exp()   # exp saves its result...
y.add_(1)     # ...which this modifies in place: ExpBackward0 will fail
w2 = aw.explore(y.sum(), params={"a": a}, height=380)
w2"""


def test_first_nonfinite_jumps_to_the_edge_and_stale_marks(page, lab_server):
    check = (
        "e, s = w.stepper.first_nonfinite()\nprint('first', e.id, 'selected_edge', w.selected_edge)"
    )
    from_python = (
        "w.selected_edge = None\n"
        "w.selected = next(n.id for n in w.graph.nodes.values() if n.name == 'SqrtBackward0')"
    )
    open_notebook(page, lab_server, "nan.ipynb", [NAN_CELL, check, STALE_CELL, from_python])
    run_cell(page, 0)
    root = widget_in(page, 0)
    nan = button(root, "First NaN/Inf")
    nan.click()  # nothing has flowed yet: it runs ahead to the birth and says why
    alert = root.locator(".agw-alert")
    expect(alert).to_contain_text("The first NaN/Inf is born in Sqrt")
    expect(alert).to_contain_text("the derivative of sqrt at 0 is infinite")
    expect(status(root)).not_to_contain_text("done")  # it stopped right after the birth
    button(root, "Run to end").click()
    expect(status(root)).to_contain_text("done")
    nan.click()
    panel = inspector(root)
    expect(panel).to_contain_text("SqrtBackward0 → Mul")
    expect(panel).to_contain_text("contains 1 inf")
    alarm = panel.locator(".agw-nonfinite")
    expect(alarm).to_be_visible()
    # retried: the panel may be drawn again (the selection's inspect reply) between two reads
    expect(alarm).to_have_css("border-left-color", "rgb(255, 31, 31)")
    out = run_cell(page, 1)
    m = re.search(r"first (\S+) selected_edge (\S+)", out)
    assert m and m.group(1) == m.group(2), out
    # The edge is marked on the graph and the view zoomed in on it.
    p = painted(page, root)
    assert p["marks"]["selectedEdge"] >= 0, p["marks"]
    mx, my = p["selectedEdgeMid"]
    a = p["area"]
    assert a["l"] <= mx <= a["l"] + a["w"] and a["t"] <= my <= a["t"] + a["h"], (mx, my, a)
    save(root, "inspector_first_nan.png")
    # Selection set from Python: the inspector follows.
    run_cell(page, 3)
    expect(panel.locator("h3")).to_have_text("SqrtBackward0")
    expect(panel).to_contain_text("[2] float32 cpu")

    # Stale saved tensor: ExpBackward0 carries a badge before any step, with a legend entry.
    run_cell(page, 2)
    root2 = widget_in(page, 2)
    badges = painted(page, root2)["marks"]["badges"]
    assert [b["item"] for b in badges] == [item_index(painted(page, root2), "Exp")], badges
    expect(root2.locator(".agw-legend")).to_contain_text("stale saved tensor")
    click_label(page, root2, "Exp")
    panel2 = inspector(root2)
    panel2.get_by_role("tab", name=re.compile("Saved")).click()
    expect(panel2.locator(".agw-badge-stale")).to_be_visible()
    expect(panel2).to_contain_text("modified in place")
    save(root2, "inspector_stale.png")
    page.page_log.assert_clean()


def test_saved_tab_and_memory_mode(page, lab_server):
    cells = [MLP_CELL.format(collapse="none"), "print('selected', w.graph.nodes[w.selected].name)"]
    open_notebook(page, lab_server, "mlp_saved.ipynb", cells)
    run_cell(page, 0)
    root = widget_in(page, 0)
    # The middle Addmm (module 2) saves mat1 [5, 8] (Tanh's output) and mat2 [8, 8].
    # Fit shows the top of the graph: pan down to module 2 (its bias leaf hangs under its Addmm)
    drawn = reveal(page, root, "2.bias")
    bias = item_box(drawn, item_index(drawn, "2.bias"))
    above = [
        item_box(drawn, i)
        for i, t in item_labels(drawn).items()
        if "Addmm" in t and item_box(drawn, i)["y"] < bias["y"]  # ("2 · Linear" over "Addmm")
    ]
    assert above, item_labels(drawn)
    b = max(above, key=lambda b: b["y"])  # the nearest Addmm above module 2's bias
    p = {"x": drawn["left"] + b["x"] + b["w"] / 2, "y": drawn["top"] + b["y"] + b["h"] / 2}
    page.mouse.click(p["x"], p["y"])
    panel = inspector(root)
    expect(panel).to_contain_text("AddmmBackward0")
    panel.get_by_role("tab", name=re.compile("Saved")).click()
    saved = panel.get_by_role("list", name="Saved values")
    expect(saved).to_contain_text("mat1")
    expect(saved.locator("li[data-name='mat1']")).to_contain_text("[5, 8]")
    expect(saved.locator("li[data-name='mat2']")).to_contain_text("[8, 8]")
    expect(saved.locator("li[data-name='alpha']")).to_contain_text("= 1")
    saved.get_by_role("button", name="mat1").click()
    detail = saved.locator(".agw-saved-detail")
    expect(detail).to_contain_text("stride")
    expect(detail).to_contain_text("values (40 values)")
    # mat1 is Tanh's result: that node is marked on the graph.
    marked = painted(page, root)["marks"]["highlight"]
    assert len(marked) == 1, marked
    p = reveal(page, root, index=marked[0])  # it hangs under module 2: pan to it, if need be
    assert item_labels(p)[marked[0]][-1] == "Tanh", item_labels(p)  # ("1 · Tanh" over "Tanh")
    assert p["marks"]["highlight"] == marked
    save(root, "inspector_saved_tab.png")
    assert "selected AddmmBackward0" in run_cell(page, 1)

    # Memory colour mode: the total and the top holders; clicking one selects it.
    root.get_by_label("Colour mode").select_option("memory")
    mem = root.get_by_role("region", name="Memory")
    expect(mem).to_contain_text("Total")
    expect(mem.locator(".agw-mem-total")).to_contain_text(re.compile(r"\d+ B"))
    holders = mem.locator(".agw-mem-top li")
    expect(holders.first).to_be_visible()
    page.wait_for_function(  # the memory reply came and was painted
        "root => root.querySelector('.agw-legend').dataset.mode === 'memory'",
        arg=root.element_handle(),
    )
    # The boxes' fills, read off the canvas over the whole graph (Fit shows its top; pan down).
    colours: dict[int, str] = {}
    for _ in range(6):
        colours.update(item_fills(page, root))
        if len(set(colours.values())) >= 3:
            break
        drag(page, root, 0, -0.4 * painted(page, root)["area"]["h"])
    assert len(set(colours.values())) >= 3, colours
    save(root, "inspector_memory.png")
    name = holders.first.get_by_role("button").inner_text()
    holders.first.get_by_role("button").click()
    expect(panel).to_contain_text(name)
    page.wait_for_timeout(300)
    assert f"selected {name}" in run_cell(page, 1)
    mem.get_by_label("Activations only").check()
    expect(mem.locator(".agw-mem-total")).to_be_visible()
    page.page_log.assert_clean()
