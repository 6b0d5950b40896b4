"""Helpers for the browser tests: open a notebook, run a cell like a user, find the widget."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

from .conftest import CELL_TIMEOUT, SERVER_TIMEOUT, LabServer

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
