"""Real-browser fixtures: one JupyterLab server on 127.0.0.1 per session, Debian's chromium
driven by Playwright, a fresh page per test that records console errors and any request leaving
127.0.0.1.

Everything lives in a temporary directory (config, data, runtime, settings, workspaces, notebooks),
so a test run never reads or writes the user's Jupyter set-up. Recipe and flags: WIDGET_STACK.md.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import pytest

from .labserver import CHROMIUM, CHROMIUM_ARGS, ROOT, LabServer, start_lab

ARTIFACTS = ROOT / "tests" / "artifacts"
#: How long to wait for JupyterLab, a kernel, a cell (seconds).
SERVER_TIMEOUT = 60
CELL_TIMEOUT = 60
LOCAL_HOSTS = {"127.0.0.1", "localhost"}

# Imported, not importorskip'd: these tests must run in CI (playwright is a dev extra).
from playwright import sync_api as playwright_sync  # noqa: E402

__all__ = ["ARTIFACTS", "CELL_TIMEOUT", "NOTEBOOK7_KNOWN_ERRORS", "SERVER_TIMEOUT", "LabServer"]


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} not found: apt-get install chromium (see WIDGET_STACK.md)")
    if not (ROOT / "autograd_widget" / "static" / "widget.js").exists():
        pytest.fail("the front-end bundle is missing: cd js && npm ci && npm run build")
    base = tmp_path_factory.mktemp("lab")
    try:
        server = start_lab(base, timeout=SERVER_TIMEOUT)
    except RuntimeError as e:
        pytest.fail(str(e))
    yield server
    server.stop()
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(autouse=True)
def _kernels_shut_down_after_each_test(request) -> Iterator[None]:
    """A test that used the shared JupyterLab leaves no kernel running behind it."""
    yield
    if "lab_server" in request.fixturenames:
        request.getfixturevalue("lab_server").shutdown_kernels()


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    with playwright_sync.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@dataclass
class PageLog:
    """What a page did that a test must not tolerate."""

    console_errors: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)
    #: (message regex, script URL part): errors of the host app itself, tolerated by a test
    #: that names them (see NOTEBOOK7_KNOWN_ERRORS). Never our bundle's.
    allowed: list[tuple[str, str]] = field(default_factory=list)

    def unexpected_errors(self) -> list[str]:
        def allowed(err: str) -> bool:
            return any(re.search(rx, err) and where in err for rx, where in self.allowed)

        return [e for e in self.console_errors if not allowed(e)]

    def assert_clean(self) -> None:
        assert not self.external_requests, f"requests left 127.0.0.1: {self.external_requests}"
        errors = self.unexpected_errors()
        assert not errors, "console errors:\n" + "\n".join(errors)


#: Notebook 7.6.5's own page errors when it opens a notebook, with or without any widget (seen
#: with a plain `1+1` notebook served by `jupyter notebook` itself): its shortcuts settings
#: handler reads `plugins[id].schema` of a plugin it has not loaded, and the file browser command
#: is sometimes invoked before it is registered. Tolerated only from Notebook's own bundle.
NOTEBOOK7_KNOWN_ERRORS = [
    (r"Cannot read properties of undefined \(reading 'schema'\)", "/static/notebook/"),
    (r"Command 'filebrowser:open-path' not registered", "/static/notebook/"),
]


def _is_local(url: str) -> bool:
    u = urlparse(url)
    if u.scheme in ("data", "blob", "about", "chrome-extension"):
        return True
    return (u.hostname or "") in LOCAL_HOSTS


@pytest.fixture
def page(browser, request) -> Iterator[object]:
    """A fresh page (1280x900) whose console errors and non-local requests are recorded, and
    checked when the test ends; a screenshot of the page is saved under tests/artifacts/."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = ctx.new_page()
    pg.set_default_timeout(CELL_TIMEOUT * 1000)
    log = PageLog()

    def on_console(msg) -> None:
        if msg.type == "error":
            loc = msg.location or {}
            where = f"{loc.get('url', '')}:{loc.get('lineNumber', '')}"
            log.console_errors.append(f"{msg.text} ({where})")

    pg.on("console", on_console)

    def on_page_error(err) -> None:
        stack = (err.stack or "").splitlines()
        where = next((ln.strip() for ln in stack[1:] if "http" in ln), "")
        log.console_errors.append(f"page error: {err.message} ({where})")

    pg.on("pageerror", on_page_error)

    def on_request(req) -> None:
        if not _is_local(req.url):
            log.external_requests.append(req.url)

    pg.on("request", on_request)
    pg.page_log = log
    yield pg
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    name = re.sub(r"[^\w.-]+", "_", request.node.name)
    try:
        pg.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)
    except Exception:  # the page may be gone after a failure; the test's own error matters more
        pass
    ctx.close()
    log.assert_clean()
