"""The timeline at the resolution of the pixels (issue 39, part 2), in a real JupyterLab: a
watch of 100,000 steps written through the project's own writer (benchmarks/bench_watch.py's
`synthetic_step` over a small real graph; a spike of x10,000 at one step) opens at full width
in min/max bands, the wheel zooms into ~200 steps (one column per step, asked of Python as
"timeline_range"), a click on a zoomed column loads that step's graph, and the spike shows at
both zooms. Screenshots under tests/artifacts/: timeline_100k_full.png, timeline_100k_zoom200.png.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from .conftest import ARTIFACTS
from .labtools import open_notebook, painted, run_cell, widget_in

pytestmark = [pytest.mark.browser, pytest.mark.slow]

expect.set_options(timeout=30_000)

STEPS = 100_000
SPIKE = 61_234

WATCH_CELL = f"""\
import sys, pathlib, tempfile
import numpy as np, torch
import autograd_widget as aw
sys.path.insert(0, {str(ARTIFACTS.parents[1] / "benchmarks")!r})
import bench_watch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 8),
                            torch.nn.Tanh(), torch.nn.Linear(8, 1))
w0 = aw.watch(model)
loss = model(torch.randn(6, 4)).pow(2).mean()
with w0.step(loss):
    loss.backward()
first, s = w0.records[0], w0.structures[0]
rng = np.random.default_rng(0)
records = [bench_watch.synthetic_step(k, s, first.order, rng) for k in range({STEPS})]
for a in (records[{SPIKE}].edge_norms, records[{SPIKE}].param_norms):
    a *= 1e4  # one step's gradients 10,000 times larger
w0.records = records
path = w0.save(pathlib.Path(tempfile.mkdtemp()) / "run.awwatch")
watch = aw.load_watch(path)
w = aw.explore(watch, height=300)
w"""

STATE_CELL = "print(w.watch_step)"

TL = "root => root.parentElement.querySelector('.agw-tl-canvas')"
# What the timeline painted (js/src/timeline.js `TimelineProbe`), a JSON copy.
PROBE = f"root => {{ const t = ({TL})(root)?.agwTimeline; return t ? {{ ...t }} : null; }}"
# The colours painted at (x, y) CSS px of the timeline's canvas, as '#rrggbb'.
PIXELS = f"""([root, points]) => {{
  const c = ({TL})(root);
  const r = c.width / c.getBoundingClientRect().width;
  const g = c.getContext('2d');
  return points.map(([x, y]) => {{
    const d = g.getImageData(Math.floor(x * r), Math.floor(y * r), 1, 1).data;
    return '#' + [d[0], d[1], d[2]].map((v) => v.toString(16).padStart(2, '0')).join('');
  }});
}}"""
TOP = "#fde725"  # the colour bar's top (timelinecolorbar.js RAMP): the largest norm of the run


def column_x(t: dict, step: int) -> float:
    """The centre x (CSS px) of the column holding `step` (`watched`: each column's first)."""
    cols = t["watched"]
    k = max(i for i, s in enumerate(cols) if s <= step)
    return (k + 0.5) / len(cols) * t["width"]


def test_a_100k_step_run_paints_whole_zooms_to_single_steps_and_loads_a_clicked_step(
        page, lab_server):  # fmt: skip
    open_notebook(page, lab_server, "timeline_zoom.ipynb", [WATCH_CELL, STATE_CELL])
    run_cell(page, 0, timeout=180)
    root = widget_in(page, 0)
    out = root.locator("xpath=..")
    tl = out.locator(".agw-timeline")
    expect(tl).to_be_visible()
    page.wait_for_function(f"root => !!({PROBE})(root)", arg=root.element_handle())
    t = page.evaluate(PROBE, root.element_handle())
    canvas = tl.locator(".agw-tl-canvas")
    box = canvas.bounding_box()

    # the whole run at full width: min/max bands (the summary level that fits the width),
    # every pixel column painted
    assert t["span"] == [0, STEPS] and t["banded"] and t["width"] / 2 <= len(t["watched"]) <= 1024
    assert t["width"] >= 600 and abs(box["width"] - t["width"]) <= 1
    row = t["top"] + t["rowPx"] / 2  # the model's row
    xs = [2 + (t["width"] - 4) * i / 40 for i in range(41)]
    fills = page.evaluate(PIXELS, [root.element_handle(), [[x, row] for x in xs]])
    assert all(f != "#000000" for f in fills), fills  # painted edge to edge (not transparent)
    # the step axis is labelled, its numbers inside the run, not overlapping
    steps = [k["step"] for k in t["ticks"]]
    assert len(steps) >= 4 and steps[0] >= 0 and steps[-1] <= STEPS
    assert all(b["x"] - a["x"] >= 36 for a, b in zip(t["ticks"], t["ticks"][1:]))
    expect(tl.locator(".agw-tl-span")).to_have_text("all 100,000 steps")
    # the spike is the top colour at full width (a band's largest norm), and nowhere else
    sx = column_x(t, SPIKE)
    assert page.evaluate(PIXELS, [root.element_handle(), [[sx, row]]]) == [TOP]
    assert TOP not in fills
    canvas.scroll_into_view_if_needed()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    tl.screenshot(path=str(ARTIFACTS / "timeline_100k_full.png"))

    # the wheel over the spike zooms about it (one pixel holds ~150 steps: the pointer is put on
    # the spike again at ~2,000 steps): ~200 steps, one column per step (Python's reply)
    box = canvas.bounding_box()

    def wheel(x: float, notches: tuple[int, ...]) -> dict:
        page.mouse.move(box["x"] + x, box["y"] + row)
        for dy in notches:
            page.mouse.wheel(0, dy)
            page.wait_for_timeout(30)
        now = page.evaluate(PROBE, root.element_handle())["span"]
        page.wait_for_function(  # Python's columns for the span shown
            f"([root, w]) => {{ const t = ({PROBE})(root); "
            "return t.exact && t.span[1] - t.span[0] === w; }",
            arg=[root.element_handle(), now[1] - now[0]])
        return page.evaluate(PROBE, root.element_handle())

    mid = wheel(sx, (-500,) * 4)
    a, b = mid["span"]
    assert 1000 <= b - a <= 3000 and a <= SPIKE < b, mid["span"]
    wheel((SPIKE + 0.5 - a) / (b - a) * mid["width"], (-500, -500, -110))
    z = page.evaluate(PROBE, root.element_handle())
    a, b = z["span"]
    assert 150 <= b - a <= 260 and a <= SPIKE < b, z["span"]
    assert z["watched"] == list(range(a, b)) and not z["banded"]  # single steps
    expect(tl.locator(".agw-tl-span")).to_have_text(f"steps {a:,}–{b - 1:,} of 100,000")
    assert all(a <= k["step"] < b for k in z["ticks"]) and len(z["ticks"]) >= 4
    # the spike is one column, the top colour; its neighbours are not
    zx = column_x(z, SPIKE)
    cw = z["width"] / (b - a)
    near = [[zx - 2 * cw, row], [zx, row], [zx + 2 * cw, row]]
    got = page.evaluate(PIXELS, [root.element_handle(), near])
    assert got[1] == TOP and TOP not in (got[0], got[2]), got
    # the hover reads the zoomed cell: that step, its norm
    page.mouse.move(box["x"] + zx, box["y"] + row)
    tip = tl.locator(".agw-tl-tip")
    expect(tip).to_contain_text(f"step {SPIKE:,} · Sequential · gradient norm ")
    tl.screenshot(path=str(ARTIFACTS / "timeline_100k_zoom200.png"))

    # a click on a zoomed column loads that step's graph below (the kernel's watch_step moves)
    before = painted(page, root)["count"]
    target = SPIKE + 3
    page.mouse.click(box["x"] + column_x(z, target), box["y"] + row)
    line = f"step {target:,} ({target + 1:,} of {STEPS:,} watched"
    expect(tl.locator(".agw-tl-step")).to_contain_text(line)
    page.wait_for_function(
        f"root => Number(root.querySelector('canvas.agw-canvas').dataset.painted) > {before}",
        arg=root.element_handle())
    assert run_cell(page, 1).strip() == str(target)

    # back to the whole run (the button): its bands again, the cursor on the clicked step's band
    tl.get_by_role("button", name="Whole run").click()
    page.wait_for_function(f"root => ({PROBE})(root).span[0] === 0", arg=root.element_handle())
    back = page.evaluate(PROBE, root.element_handle())
    assert back["span"] == [0, STEPS] and back["watched"] == t["watched"]
    assert abs(back["cursorX"] - column_x(back, target)) < 1
    expect(tl.get_by_role("button", name="Whole run")).to_be_disabled()
