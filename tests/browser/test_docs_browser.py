"""The documentation site as a reader sees it, in Chromium: the formulas typeset by the bundled
KaTeX (offline: nothing is loaded from the network), tables and code blocks that fit the column, and
a notebook page whose side-by-side widgets step together. The site is the one
tests/project/test_docs.py checks (`docs_site`, built once per session); screenshots of the pages
land in tests/artifacts/docs/ for a person to look at.
"""

from __future__ import annotations

import functools
import http.server
import re
import threading
from collections.abc import Iterator

import pytest
from playwright.sync_api import expect

from .conftest import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SHOTS = ARTIFACTS / "docs"
PAGES = {
    "home": "index.html",
    "guide": "guide.html",
    "api_explore": "api/explore.html",
    "api_formula": "api/formula.html",
    "formulas": "formulas.html",
    "notebook_02": "notebooks/02_step_through_backward.html",
    "notebook_06": "notebooks/06_debugging_a_real_run.html",
}
# What a page shows once its scripts ran: typeset formulas (KaTeX), and what does not fit.
MEASURE = """() => ({
  katex: document.querySelectorAll('.katex').length,
  displays: document.querySelectorAll('div.arithmatex .katex-display').length,
  blocks: document.querySelectorAll('div.arithmatex').length,
  errors: document.querySelectorAll('.katex-error').length,
  wideCode: [...document.querySelectorAll('.md-content pre > code')]
    .filter((c) => c.scrollWidth > c.clientWidth + 1).map((c) => c.textContent.slice(0, 50)),
  wideTables: [...document.querySelectorAll('.md-content table')]
    .filter((t) => t.getBoundingClientRect().width > t.closest('.md-content__inner')
      .getBoundingClientRect().width + 1).length,
  pastColumn: [...document.querySelectorAll('.md-content__inner > *')]
    .filter((e) => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX === 'visible')
    .map((e) => e.tagName + (e.tagName === 'P' ? ':' + e.textContent.slice(0, 80) : '')),
})"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # no line per request in the test output
        pass


@pytest.fixture(scope="module")
def site(docs_site) -> Iterator[str]:
    """The built site served on 127.0.0.1 (as `make docs` serves it; the page fixture counts
    any other host as a request that left the machine)."""
    handler = functools.partial(_Quiet, directory=str(docs_site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def measure(page, site: str, rel: str) -> dict:
    page.goto(f"{site}/{rel}")
    page.wait_for_load_state("load")
    page.wait_for_function("() => typeof renderMathInElement === 'function'")
    page.wait_for_timeout(300)  # the typesetting runs on load
    return page.evaluate(MEASURE)


def test_formulas_are_typeset_offline(page, site):
    got = measure(page, site, "formulas.html")
    assert got["errors"] == 0
    assert got["blocks"] >= 163 and got["displays"] == got["blocks"], got
    assert got["katex"] >= got["blocks"] + 5  # and the inline math of the introduction
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "formulas.png"))
    page.goto(f"{site}/formulas.html#AddmmBackward0")
    page.wait_for_timeout(500)
    page.screenshot(path=str(SHOTS / "formulas_addmm.png"))
    api = measure(page, site, "api/formula.html")
    assert api["errors"] == 0 and api["displays"] == api["blocks"] == 2, api
    page.locator("div.arithmatex").first.evaluate("e => e.scrollIntoView({block: 'center'})")
    page.screenshot(path=str(SHOTS / "api_formula.png"))
    nb = measure(page, site, "notebooks/06_debugging_a_real_run.html")
    assert nb["errors"] == 0 and nb["displays"] >= 1, nb  # graph.formula(...) displayed


@pytest.mark.parametrize("name", sorted(PAGES))
def test_every_page_fits_its_column(page, site, name):
    got = measure(page, site, PAGES[name])
    assert got["errors"] == 0, got
    assert got["wideCode"] == [], f"code blocks run past the column: {got['wideCode']}"
    assert got["wideTables"] == 0, "a table wider than the column"
    assert got["pastColumn"] == [], got["pastColumn"]
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def _frame(page, index: int):
    """The index-th widget frame of the page, scrolled to (the frames load lazily)."""
    page.locator("iframe[src*='widget-']").nth(index).scroll_into_view_if_needed()
    return page.frame_locator("iframe[src*='widget-']").nth(index)


def test_side_by_side_steps_together_on_the_notebook_page(page, site):
    page.goto(f"{site}/{PAGES['notebook_06']}")
    frame = _frame(page, 2)
    left = frame.locator("#autograd-widget-left .agw-root")
    right = frame.locator("#autograd-widget-right .agw-root")
    for side in (left, right):
        expect(side.locator(".agw-status")).to_contain_text(re.compile(r"step 0 / \d+"))
    left.get_by_role("button", name="Step", exact=True).click()
    expect(right.locator(".agw-status")).to_contain_text(re.compile(r"step 1 / \d+"))
    right.get_by_role("button", name="Run to end").click()
    expect(left.locator(".agw-status")).to_contain_text("done")
    right.get_by_role("button", name="Reset").click()
    expect(left.locator(".agw-status")).to_contain_text(re.compile(r"step 0 / \d+"))
    page.screenshot(path=str(SHOTS / "notebook_06_pair.png"))


def test_the_first_widget_opens_where_the_notebook_left_it(page, site):
    page.goto(f"{site}/{PAGES['notebook_06']}")
    frame = _frame(page, 0)
    status = frame.locator(".agw-status")
    expect(status).to_contain_text("ran SqrtBackward0")  # run to the NaN's birth in the notebook
    frame.get_by_role("button", name="Reset").click()
    expect(status).to_contain_text(re.compile(r"step 0 / \d+"))
