"""`make tour` and `make docs` need neither root nor chromium: only the browser tests do.

Run as a user who cannot install anything system-wide (as root, the test makes a throwaway
user with `useradd` and runs the commands through `runuser`; as anyone else, as that user),
with chromium hidden (`AUTOGRAD_WIDGET_CHROMIUM` pointing at nothing), on this checkout whose
set-up its owner has done (the usual second run: every set-up step but chromium's is skipped by
its stamp; a first run's steps install into the clone itself, not checked here):
- `make tour HTML=...` (the tour's headless mode) says the chromium step is skipped and why,
  goes on, and writes the tour's standalone page;
- `make docs` says the same and serves the site (the notebooks' pages from a cache filled by
  this session's docs build, so that nothing runs twice).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HIDDEN = "/nonexistent/chromium"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="make tour is for Linux"),
]


@dataclass
class User:
    """Who runs the commands: a name (None: the current, non-root user) and a home it owns."""

    name: str | None
    home: Path

    def command(self, args: list[str]) -> list[str]:
        return ["runuser", "-u", self.name, "--", *args] if self.name else args

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTEST"))}
        env.update(HOME=str(self.home), AUTOGRAD_WIDGET_CHROMIUM=HIDDEN, **extra)
        env.pop("PYTHONPATH", None)
        return env


@pytest.fixture(scope="module")
def user() -> Iterator[User]:
    # the checkout's set-up, done by whoever owns it (a no-op when it is done already)
    subprocess.run(["bash", ".ci/setup", "--without-browser"], cwd=ROOT, check=True,
                   capture_output=True, timeout=900)
    home = Path(tempfile_dir())
    if os.geteuid() != 0:
        yield User(None, home)
        shutil.rmtree(home, ignore_errors=True)
        return
    if not (shutil.which("useradd") and shutil.which("runuser")):
        pytest.skip("running as root without useradd/runuser: cannot act as a non-root user")
    name = f"agw{uuid.uuid4().hex[:8]}"
    subprocess.run(["useradd", "--no-create-home", "--home-dir", str(home), "--shell",
                    "/bin/sh", name], check=True, capture_output=True)
    try:
        shutil.chown(home, name)
        yield User(name, home)
    finally:
        subprocess.run(["userdel", name], capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


def tempfile_dir() -> str:
    import tempfile

    path = tempfile.mkdtemp(prefix="agw-user-")
    os.chmod(path, 0o755)
    return path


def test_the_user_is_not_root_and_chromium_is_hidden(user):
    who = subprocess.run(user.command(["id", "-u"]), capture_output=True, text=True,
                         env=user.env(), check=True).stdout.strip()
    assert who != "0"
    assert not Path(HIDDEN).exists()


def test_make_tour_html_as_a_user_without_root_or_chromium(user):
    out = user.home / "tour.html"
    r = subprocess.run(user.command(["make", "-s", "tour", f"HTML={out}"]), cwd=ROOT,
                       env=user.env(), capture_output=True, text=True, timeout=900)
    log = r.stdout + r.stderr
    assert r.returncode == 0, log[-4000:]
    assert "chromium for the browser tests: not found at /nonexistent/chromium; skipped" in log
    assert "only the browser tests of 'make test' do" in log
    assert "FAILED" not in log
    assert out.read_text(encoding="utf-8").startswith("<!doctype html>")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_make_docs_as_a_user_without_root_or_chromium(user, docs_site, docs_cache):
    cache = user.home / "docs-cache"
    shutil.copytree(docs_cache, cache)  # filled by this session's build: nothing re-executed
    if user.name:
        subprocess.run(["chown", "-R", user.name, str(cache)], check=True)
    port = _free_port()
    proc = subprocess.Popen(
        user.command(["make", "-s", "docs", f"PORT={port}"]), cwd=ROOT,
        env=user.env(AGW_DOCS_CACHE=str(cache)), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        page = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html", timeout=5) as r:
                    page = r.read().decode()
                break
            except OSError:
                time.sleep(1)
        assert page is not None, f"make docs did not serve (exit {proc.poll()})"
        assert "See PyTorch's backward pass" in page
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            log = proc.communicate(timeout=60)[0]
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            log = proc.communicate()[0]
    assert "chromium for the browser tests: not found at /nonexistent/chromium; skipped" in log
    assert "docs: executed" not in log, "the session's notebook cache was not reused"
