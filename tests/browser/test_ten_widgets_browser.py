"""Ten widgets in one notebook: the front-end bundle crosses the wire ONCE per page.

Each widget's `_esm` is the small loader (js/src/loader.js); the first view asks the kernel
for the bundle and every other view reuses it. The test counts, on the kernel's websocket, the
frames that carry the bundle's code, and the bytes received per widget; every widget still
draws and steps on its own.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from .labtools import button, open_notebook, run_cell, status, widget_in

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
N = 10

SETUP = f"""\
import torch, autograd_widget as aw
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
x = torch.randn(5, 8)
ws = [aw.explore(model(x).pow(2).mean(), model=model, height=300) for _ in range({N})]"""

SHOW = "for w in ws:\n    display(w)"


def _marker(code: bytes) -> bytes:
    """A piece of the bundle's code that no other message carries and that JSON does not
    escape (no quote, backslash, control or non-ASCII byte)."""
    for m in re.finditer(rb"[ -!#-\[\]-~]{80}", code[len(code) // 3 :]):
        return m.group(0)
    raise AssertionError("no plain 80-byte run in the bundle")


def test_ten_widgets_load_the_bundle_once(page, lab_server):
    code = (ROOT / "autograd_widget" / "static" / "widget.js").read_bytes()
    marker = _marker(code)
    frames: list[int] = []  # sizes of the frames received on kernel websockets
    carrying: list[int] = []  # sizes of those that carry the bundle

    def on_ws(ws) -> None:
        if "/api/kernels/" not in ws.url:
            return

        def on_frame(payload) -> None:
            data = payload.encode() if isinstance(payload, str) else payload
            frames.append(len(data))
            if marker in data:
                carrying.append(len(data))

        ws.on("framereceived", on_frame)

    page.on("websocket", on_ws)
    open_notebook(page, lab_server, "ten.ipynb", [SETUP, SHOW])
    before = sum(frames)  # the widgets' state crosses when they are made (cell 0)
    run_cell(page, 0)
    run_cell(page, 1)
    roots = [widget_in(page, 1).nth(k) for k in range(N)]
    for r in roots:
        r.locator(".agw-plot canvas.agw-canvas[data-painted]").wait_for(state="attached")
    expect(page.locator(".agw-root")).to_have_count(N)
    assert len(carrying) == 1, f"the bundle crossed the wire {len(carrying)} times"
    assert carrying[0] > len(code)
    per_widget = (sum(frames) - before - carrying[0]) / N
    # A widget's own share (its state: graph + step state, and the loader) is a few KB,
    # two orders of magnitude under the ~400 KB bundle each widget carried before.
    assert per_widget < 24_000, per_widget
    print(f"\n[ten widgets] bundle once: {carrying[0]} B; per widget: {per_widget:.0f} B")

    # Each view is its own: stepping the seventh moves only the seventh.
    button(roots[6], "Step").click()
    expect(status(roots[6])).to_contain_text(re.compile(r"step 1 /"))
    expect(status(roots[2])).to_contain_text(re.compile(r"step 0 /"))
