"""The widget in marimo (issue 20): `marimo edit` in headless chromium, driven like a user.

One `marimo edit` server per session over a temporary directory (tests/browser/marimoserver.py),
a fresh page, notebook and kernel per test. As in JupyterLab: the graph draws, the widget's Step
and Back work, stepping from Python (a marimo button whose cell calls `widget.stepper.step()`)
moves the drawing, the inspector opens on a click, a recording replays. Also what is marimo's
own: the front-end bundle is fetched once per page however many widgets it shows (marimo
imports one `_esm` per hash), `aw.side_by_side`'s ipywidgets HBox is refused by marimo (its two
widgets work in `mo.hstack`), and a page write to a trait re-runs the cells that read the
`mo.ui.anywidget` element. Every test also asserts no console error and no request leaving
127.0.0.1 (the `page` fixture), and leaves a screenshot under tests/artifacts/.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from autograd_widget.wire.protocol import BUNDLE

from .conftest import SERVER_TIMEOUT
from .labserver import ROOT
from .labtools import button, click_item, edge_labels, painted, save, status, wait_edge_labels
from .marimoserver import MarimoServer, start_marimo

# Known marimo flake, not this widget's: on a loaded machine (other suites beside it), about one
# run in four loses the first interaction after the notebook opened, even after marimo says it is
# idle: a click on the widget's Step (its custom message is dropped by marimo's front-end, whose
# model was closed: marimo suppresses sends on a closed model) or on marimo's OWN run_button.
# Never seen on a quiet machine (0 in 24). One re-run, only for a UI expectation that timed out.
pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.flaky(reruns=1, only_rerun=["Locator expected"]),
]

expect.set_options(timeout=20_000)

TOUR = ROOT / "notebooks" / "marimo_tour.py"

# The engine's order for z = x**2 + y (API.md), as the status line says it.
Z_STATUS = [
    "step 0 / 4 → next AddBackward0",
    "ran AddBackward0 (step 1 / 4) → next AccumulateGrad (y)",
    "ran AccumulateGrad (y) (step 2 / 4) → next PowBackward0",
    "ran PowBackward0 (step 3 / 4) → next AccumulateGrad (x)",
    "ran AccumulateGrad (x) (step 4 / 4) — done",
]


@pytest.fixture(scope="session")
def marimo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MarimoServer]:
    base = tmp_path_factory.mktemp("marimo")
    try:
        server = start_marimo(base, timeout=SERVER_TIMEOUT)
    except RuntimeError as e:
        pytest.fail(str(e))
    yield server
    server.stop()
    shutil.rmtree(base, ignore_errors=True)


# Every widget of the page has painted its canvas (marimo renders each in the shadow root of a
# <marimo-anywidget>; Playwright's CSS locators pierce open shadow roots, querySelector does not).
ALL_PAINTED = """(n) => {
  const hosts = [...document.querySelectorAll('marimo-anywidget')];
  const done = (h) => h.shadowRoot?.querySelector('canvas.agw-canvas[data-painted]');
  return hosts.filter(done).length >= n;
}"""


# marimo has connected to its kernel and no cell is running or queued (each cell's status
# element carries data-status; the connection indicator data-connection-state).
NOTEBOOK_IDLE = """() => {
  const open = document.querySelector('[data-connection-state="OPEN"]');
  const busy = document.querySelector('[data-status="running"], [data-status="queued"]');
  return !!open && !busy;
}"""


def open_marimo(page, server: MarimoServer, name: str, widgets: int) -> None:
    """Open notebook `name` in marimo's editor (its cells run on open: marimoserver's config)
    and wait until `widgets` widgets have painted. The page's requests are kept on
    `page.agw_requests`."""
    if not hasattr(page, "agw_requests"):
        page.agw_requests = []
        page.agw_posts = []
        page.on("request", lambda r: page.agw_requests.append(r.url))
        page.on("request", lambda r: r.method == "POST" and page.agw_posts.append(r.post_data))
    page.goto(server.notebook_url(name))
    page.wait_for_function(ALL_PAINTED, arg=widgets, timeout=SERVER_TIMEOUT * 1000)
    # Interact only once the notebook has finished running, as a user would see it: a click
    # made while marimo still runs the cells it opened with can be dropped by marimo's front-end
    # (its own run_button's too), under load.
    page.wait_for_function(NOTEBOOK_IDLE, timeout=SERVER_TIMEOUT * 1000)


def widget(page, i: int):
    """The i-th widget's root element on the page, in notebook order."""
    return page.locator(".agw-root").nth(i)


def bundle_requests(page) -> list[str]:
    """The URLs of the scripts marimo served from `_esm` (its virtual files, /@file/...)."""
    return [u for u in page.agw_requests if "/@file/" in u and u.endswith(".js")]


def bundle_messages(page) -> int:
    """How many times the page asked a kernel for the front-end bundle (the loader's custom
    message, posted to marimo's /api/kernel/set_model_value)."""
    want = json.dumps({"type": BUNDLE}, separators=(",", ":"))[1:-1]
    return sum(1 for body in page.agw_posts if body and want in body)


def test_tour_steps_from_the_page_and_from_python(page, marimo_server):
    """notebooks/marimo_tour.py as a user runs it: Step, Back, the Python button, the
    inspector, and the recording's replay with First NaN/Inf."""
    shutil.copy(TOUR, marimo_server.root / TOUR.name)
    open_marimo(page, marimo_server, TOUR.name, widgets=2)
    root = widget(page, 0)
    expect(status(root)).to_have_text(Z_STATUS[0])
    readout = page.get_by_text(re.compile(r"The kernel's stepper: step \d+ / 4"))
    expect(readout).to_contain_text("step 0 / 4")
    assert edge_labels(root) == [], "nothing has flowed yet"
    expect(button(root, "Back")).to_be_disabled()
    for k in range(1, 5):
        button(root, "Step").click()
        expect(status(root)).to_have_text(Z_STATUS[k])
    # dx = 2x = 4 into x, dy = 1 into y (and 1 from Add into Pow), painted on the edges.
    wait_edge_labels(root, 3)
    assert edge_labels(root) == ["1", "1", "4"]
    expect(button(root, "Step")).to_be_disabled()
    button(root, "Back").click()
    expect(status(root)).to_have_text(Z_STATUS[3])
    button(root, "Back").click()
    expect(status(root)).to_have_text(Z_STATUS[2])
    wait_edge_labels(root, 2)

    # Python steps the very stepper the clicks moved (from 2, not from 0), and the page follows.
    page.get_by_role("button", name="Step from Python").click()
    expect(readout).to_contain_text("step 3 / 4")
    expect(status(root)).to_have_text(Z_STATUS[3])
    wait_edge_labels(root, 3)
    assert edge_labels(root) == ["1", "1", "4"]

    # The inspector opens on a click (a `selected` trait write and a custom-message request).
    click_item(page, root, "Pow")
    panel = root.get_by_role("region", name="Inspector")
    expect(panel.locator("h3")).to_have_text("PowBackward0")
    assert painted(page, root)["marks"]["selected"] >= 0
    save(root, "marimo_tour_z.png")

    # The recording replays, and First NaN/Inf finds where the infinity is born.
    replay = widget(page, 1)
    replay.scroll_into_view_if_needed()
    expect(status(replay)).to_contain_text("step 0 /")
    button(replay, "Step").click()
    expect(status(replay)).to_contain_text("step 1 /")
    button(replay, "First NaN/Inf").click()
    expect(replay.locator(".agw-alert")).to_contain_text("The first NaN/Inf is born in Sqrt")
    assert painted(page, replay)["marks"]["selectedEdge"] >= 0
    save(replay, "marimo_tour_replay.png")

    # marimo imports the widget's `_esm` (the loader) once per page, however many widgets show
    # it, and the loader asks the kernel for the bundle once.
    assert len(bundle_requests(page)) == 1, bundle_requests(page)
    assert bundle_messages(page) == 1
    page.page_log.assert_clean()


EXTRA = '''\
import marimo

app = marimo.App(width="full")


@app.cell
def _():
    import marimo as mo
    import torch

    import autograd_widget as aw
    return aw, mo, torch


@app.cell
def _(aw, torch):
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    w = aw.explore(x**2 + y, params={"x": x, "y": y}, height=380)
    w
    return (w,)


@app.cell
def _(mo, w):
    view = mo.ui.anywidget(w)
    view
    return (view,)


@app.cell
def _():
    runs = []
    return (runs,)


@app.cell
def _(mo, runs, view):
    view
    runs.append(1)
    mo.md(f"this cell read the element {len(runs)} times")
    return


@app.cell
def _(aw, torch):
    torch.manual_seed(0)
    m = torch.nn.Linear(3, 2)
    out1 = m(torch.randn(4, 3)).sum()
    with aw.record(out1, model=m) as r1:
        out1.backward()
    out2 = m(torch.randn(4, 3)).sum()
    with aw.record(out2, model=m) as r2:
        out2.backward()
    pair = aw.side_by_side(r1, r2, height=380)
    pair
    return (pair,)


@app.cell
def _(mo, pair):
    mo.hstack([pair.left, pair.right], widths="equal")
    return
'''


def test_views_reload_trait_reruns_and_side_by_side(page, marimo_server):
    """A widget shown as is and again through `mo.ui.anywidget` (two views of one model),
    the page reloaded, a trait write re-running the cells that read the element, and
    `aw.side_by_side`: marimo refuses its ipywidgets HBox, its two widgets step together."""
    marimo_server.write_notebook("extra.py", EXTRA)
    open_marimo(page, marimo_server, "extra.py", widgets=4)
    first, second = widget(page, 0), widget(page, 1)
    expect(status(first)).to_have_text(Z_STATUS[0])
    button(first, "Step").click()
    expect(status(second)).to_have_text(Z_STATUS[1])
    button(second, "Step").click()
    expect(status(first)).to_have_text(Z_STATUS[2])
    reads = page.get_by_text(re.compile(r"this cell read the element \d+ times"))
    expect(reads).to_have_text("this cell read the element 1 times")

    # Steps are custom messages: no cell re-ran. A click writes `selected` from the page:
    # marimo re-runs the cell that reads `view`.
    click_item(page, second, "Pow")
    expect(second.get_by_role("region", name="Inspector").locator("h3")).to_have_text(
        "PowBackward0"
    )
    expect(reads).to_have_text("this cell read the element 2 times")

    # The state lives in the kernel's traits: a reloaded page (marimo reconnects to the same
    # session) shows the current step in every view.
    assert len(bundle_requests(page)) == 1, bundle_requests(page)
    page.agw_requests.clear()
    page.reload()
    page.wait_for_function(ALL_PAINTED, arg=4, timeout=SERVER_TIMEOUT * 1000)
    for i in (0, 1):
        expect(status(widget(page, i))).to_have_text(Z_STATUS[2])
    wait_edge_labels(widget(page, 0), 2)

    # side_by_side is an ipywidgets HBox: marimo shows its notice instead; the two replay
    # widgets in mo.hstack step together (the link is in Python).
    expect(page.get_by_text("Jupyter widgets are not supported in marimo")).to_be_visible()
    left, right = widget(page, 2), widget(page, 3)
    left.scroll_into_view_if_needed()
    expect(left.locator(".agw-legend")).to_contain_text("differs from")
    button(left, "Step").click()
    expect(status(right)).to_contain_text("step 1 /")
    button(right, "Run to end").click()
    expect(status(left)).to_contain_text("— done")
    save(left, "marimo_side_by_side.png")
    assert len(bundle_requests(page)) == 1, f"one bundle per page load: {bundle_requests(page)}"
    page.page_log.assert_clean()
