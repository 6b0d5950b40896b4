"""Helpers for the browser tests: open a notebook, run a cell like a user, find the widget."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

from .conftest import ARTIFACTS, CELL_TIMEOUT, SERVER_TIMEOUT, LabServer

# ---------------------------------------------------------------------------------- page helpers
# The notebook we opened is the current widget, and its kernel is idle.
KERNEL_IDLE = """(name) => {
  const w = window.jupyterapp?.shell?.currentWidget;
  return w?.context?.path === name && w?.sessionContext?.session?.kernel?.status === 'idle';
}"""


def open_notebook(page, server: LabServer, name: str, cells: Sequence[str], app: str = "lab"):
    """Write a notebook, open it in JupyterLab (`app="lab"`) or Notebook 7 (`app="notebook"`),
    and wait for its kernel to be idle. `?reset` starts Lab from an empty workspace, so tabs of
    earlier tests do not come back."""
    server.write_notebook(name, cells)
    path = f"/lab/tree/{name}?reset" if app == "lab" else f"/notebooks/{name}"
    page.goto(server.url + path)
    page.wait_for_selector(".jp-Notebook .jp-Cell .cm-content", timeout=SERVER_TIMEOUT * 1000)
    page.wait_for_function(KERNEL_IDLE, arg=name, timeout=SERVER_TIMEOUT * 1000)
    return page


def cell(page, i: int):
    return page.locator(".jp-Notebook .jp-Cell").nth(i)


# Did cell i end with an exception? (read from the notebook model, not from the colours)
CELL_RAISED = """(i) => {
  const nb = window.jupyterapp?.shell?.currentWidget?.content;
  const outputs = nb?.widgets?.[i]?.model?.outputs?.toJSON?.() ?? [];
  return outputs.some((o) => o.output_type === 'error');
}"""


def run_cell(page, i: int, timeout: float = CELL_TIMEOUT) -> str:
    """Run cell `i` as a user does (click its editor, Shift+Enter); wait until it has finished and
    return the text of its output area. A cell that raises fails the test at once, with its
    traceback."""
    c = cell(page, i)
    prompt = c.locator(".jp-InputPrompt")
    before = prompt.inner_text().strip()
    deadline = time.monotonic() + timeout
    for _attempt in range(3):
        c.locator(".cm-content").click()
        c.locator(".cm-content:focus").wait_for()
        page.keyboard.press("Shift+Enter")
        # Queued ("[*]") or done ("[n]"); a keypress the page did not take leaves "[ ]" as it was.
        start = time.monotonic()
        while prompt.inner_text().strip() == before and time.monotonic() - start < 5:
            time.sleep(0.05)
        if prompt.inner_text().strip() != before:
            break
    while True:
        now = prompt.inner_text().strip()
        if re.search(r"\[\d+\]", now) and now != before:
            break
        if time.monotonic() > deadline:
            raise AssertionError(f"cell {i} did not finish in {timeout} s (prompt {now!r})")
        time.sleep(0.05)
    text = c.locator(".jp-OutputArea").inner_text()
    if page.evaluate(CELL_RAISED, i):
        raise AssertionError(f"cell {i} raised:\n{text}")
    return text


def widget_in(page, i: int):
    """The widget's root element in cell `i`'s output, once drawn."""
    root = cell(page, i).locator(".agw-root")
    root.locator(".agw-plot .main-svg").first.wait_for(state="attached")
    return root


# ------------------------------------------------------------------------- widget helpers
# JS run in the page: the plotly div of the widget, and trace data by uid (see js/src/figure.js).
PLOT = "root => root.querySelector('.agw-plot')"
RANGES = """root => {
  const gd = root.querySelector('.agw-plot');
  return [gd.layout.xaxis.range.map(Number), gd.layout.yaxis.range.map(Number)];
}"""
# Page coordinates of the point of trace `uid` whose text (or index) matches.
POINT_AT = """([root, uid, text, index]) => {
  const gd = root.querySelector('.agw-plot');
  const trace = gd.data.find((t) => t.uid === uid);
  let i = index;
  const first = (t) => t.replace(/<[^>]*>/g, ' ').trim().split(/\\s+/)[0];
  if (text !== null) i = Array.from(trace.text).findIndex((t) => first(t) === text);
  if (i < 0) return null;
  const fl = gd._fullLayout;
  const box = gd.getBoundingClientRect();
  return {
    x: box.left + fl._size.l + fl.xaxis.l2p(Number(trace.x[i])),
    y: box.top + fl._size.t + fl.yaxis.l2p(Number(trace.y[i])),
  };
}"""

# The colour the overlay canvas shows at the centre of every node (edges, node markers and their
# step state are painted there, under plotly's transparent SVG).
NODE_PIXELS = """root => {
  const gd = root.querySelector('.agw-plot');
  const canvas = root.querySelector('canvas.agw-overlay');
  const ctx = canvas.getContext('2d');
  const trace = gd.data.find((t) => t.uid === 'agw-nodes');
  const fl = gd._fullLayout;
  const dpr = canvas.width / canvas.clientWidth;
  return Array.from(trace.x, (x, i) => {
    const px = fl._size.l + fl.xaxis.l2p(Number(x));
    const py = fl._size.t + fl.yaxis.l2p(Number(trace.y[i]));
    const d = ctx.getImageData(Math.round(px * dpr), Math.round(py * dpr), 1, 1).data;
    return `rgb(${d[0]}, ${d[1]}, ${d[2]})`;
  });
}"""


def node_pixels(page, root) -> list[str]:
    """The colour painted at each node's centre, "rgb(r, g, b)", in node order."""
    return page.evaluate(NODE_PIXELS, root.element_handle())


def button(root, name: str):
    return root.get_by_role("button", name=name, exact=True)


def status(root):
    return root.locator(".agw-status")


def after_paint(root) -> None:
    """Wait until the page has painted twice: the view draws a state change in the next
    animation frame, after the status line (set at once) already shows it."""
    root.page.evaluate(
        "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r())))"
    )


def edge_labels(root, settle_s: float = 3.0) -> list[str]:
    """The gradient values written on the edges, as the page shows them once painting settled
    (the same labels across two paints; at most `settle_s` seconds of waiting)."""
    labels = root.locator(".traceagw-edge-labels text")
    deadline = time.monotonic() + settle_s
    after_paint(root)
    seen = sorted(labels.all_text_contents())
    while time.monotonic() < deadline:
        after_paint(root)
        now = sorted(labels.all_text_contents())
        if now == seen:
            break
        seen = now
    return seen


def position_of(root) -> int:
    m = re.search(r"step (\d+) /", status(root).inner_text())
    assert m, status(root).inner_text()
    return int(m.group(1))


def point(page, root, uid: str, text: str | None = None, index: int = -1) -> dict:
    """Where (page pixels) the point of trace `uid` with that label (or index) is drawn."""
    root.scroll_into_view_if_needed()
    p = page.evaluate(POINT_AT, [root.element_handle(), uid, text, index])
    assert p is not None, f"no point {text!r} in {uid}"
    return p


def save(root, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    root.screenshot(path=str(ARTIFACTS / name))
