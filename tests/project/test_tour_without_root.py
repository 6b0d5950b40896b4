"""`make tour` and `make docs` need neither root nor chromium: only the browser tests do.

As a user who cannot install anything system-wide (as root, the test makes a throwaway user with
`useradd` and runs the commands through `runuser`; as anyone else, as that user), in a clone that
user owns (this checkout's files, with what Node.js built or fetched: the bundle and KaTeX; the
user's PATH has no Node.js, so the set-up keeps the bundle and nothing reaches npm's registry),
with chromium hidden (`AUTOGRAD_WIDGET_CHROMIUM` pointing at nothing) and no sudo:
- `make tour HTML=...` (the tour's headless mode) runs the whole set-up from nothing (the venv
  with torch, the package and its dev extras), says the chromium step is skipped and why, goes
  on, and writes the tour's standalone page;
- `make docs` in the same clone says the same and serves the site (the notebooks' pages from a
  copy of the cache this session's docs build filled, so that nothing runs twice).

Slow (the first set-up installs ~2 GB into the clone's .venv, from pip's configured indexes).
The tour's set-up runs with PIP_COMPILE=0 in the user's environment (pip's own setting, read by
every pip the set-up starts): byte-compiling those ~2 GB at install was most of its time on 2
cores; Python compiles what it imports on first use instead, so what is installed, and how it
runs, are the same.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HIDDEN = "/nonexistent/chromium"
SYSTEM_BIN = ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin")
NODE = {"node", "nodejs", "npm", "npx", "corepack"}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="make tour is for Linux"),
]


@dataclass
class User:
    """Who runs the commands (None: the current, non-root user), the home and the clone it
    owns, and the PATH it has (the system's programs, no Node)."""

    name: str | None
    home: Path
    clone: Path
    path: str

    def command(self, args: list[str]) -> list[str]:
        return ["runuser", "-u", self.name, "--", *args] if self.name else args

    def env(self, **extra: str) -> dict[str, str]:
        keep = ("LANG", "TERM", "TMPDIR")
        env = {k: v for k, v in os.environ.items() if k.startswith("PIP_") or k in keep}
        env.update(HOME=str(self.home), PATH=self.path, AUTOGRAD_WIDGET_CHROMIUM=HIDDEN, **extra)
        return env


def _system_path(shim: Path) -> str:
    """A PATH of links to the system's programs (not a user's own tools, not Node.js)."""
    shim.mkdir()
    for d in SYSTEM_BIN:
        if Path(d).is_dir():
            for exe in sorted(Path(d).iterdir()):
                if exe.name not in NODE and not (shim / exe.name).exists() and exe.is_file() \
                        and os.access(exe, os.X_OK):
                    (shim / exe.name).symlink_to(exe)
    return str(shim)


def _copy_checkout(dest: Path) -> None:
    """This checkout's files (tracked and new, not ignored) and its built front-end."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    shutil.copytree(ROOT / "autograd_widget" / "static", dest / "autograd_widget" / "static")
    # what `npm ci` put there for the docs: KaTeX (the site typesets with it, offline)
    katex = ROOT / "js" / "node_modules" / "katex"
    if katex.is_dir():
        shutil.copytree(katex, dest / "js" / "node_modules" / "katex")


@pytest.fixture(scope="module")
def user() -> Iterator[User]:
    if not (ROOT / "autograd_widget" / "static" / "widget.js").exists():
        pytest.skip("the front-end bundle is not built (cd js && npm run build)")
    home = Path(tempfile.mkdtemp(prefix="agw-user-"))
    os.chmod(home, 0o755)
    clone = home / "autograd_widget"
    _copy_checkout(clone)
    path = _system_path(home / "bin")
    name = None
    if os.geteuid() == 0:
        if not (shutil.which("useradd") and shutil.which("runuser")):
            shutil.rmtree(home, ignore_errors=True)
            pytest.skip("root without useradd/runuser: cannot act as a non-root user")
        name = f"agw{uuid.uuid4().hex[:8]}"
        subprocess.run(["useradd", "--no-create-home", "--home-dir", str(home), "--shell",
                        "/bin/sh", name], check=True, capture_output=True)
        subprocess.run(["chown", "-R", f"{name}:", str(home)], check=True)
    try:
        yield User(name, home, clone, path)
    finally:
        if name:
            subprocess.run(["userdel", name], capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


def test_the_user_is_not_root_and_has_no_chromium_sudo_or_node(user):
    def sh(cmd: str) -> subprocess.CompletedProcess:
        return subprocess.run(user.command(["sh", "-c", cmd]), env=user.env(),
                              capture_output=True, text=True)

    assert sh("id -u").stdout.strip() != "0"
    assert sh("command -v node npm").stdout.strip() == ""
    assert sh("sudo -n true").returncode != 0
    assert not Path(HIDDEN).exists()


def test_make_tour_html_sets_up_from_nothing_without_root_or_chromium(user):
    out = user.home / "tour.html"
    r = subprocess.run(user.command(["make", "-s", "tour", f"HTML={out}"]), cwd=user.clone,
                       env=user.env(PIP_COMPILE="0"), capture_output=True, text=True,
                       timeout=1800)
    log = r.stdout + r.stderr
    assert r.returncode == 0, log[-4000:]
    assert "Python venv (.venv) with torch" in log  # the set-up ran, not skipped
    assert "Node.js is not on PATH; keeping the bundle" in log
    assert "chromium for the browser tests: not found at /nonexistent/chromium; skipped" in log
    assert "only the browser tests of 'make test' do" in log
    assert "FAILED" not in log
    assert out.read_text(encoding="utf-8").startswith("<!doctype html>")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_make_docs_without_root_or_chromium(user, docs_site, docs_cache):
    if not (user.clone / ".venv" / "bin" / "python").exists():
        pytest.skip("the tour's set-up did not run (see the test above)")
    cache = user.home / "docs-cache"
    shutil.copytree(docs_cache, cache)  # filled by this session's build: nothing re-executed
    if user.name:
        subprocess.run(["chown", "-R", f"{user.name}:", str(cache)], check=True)
    port = _free_port()
    proc = subprocess.Popen(
        user.command(["make", "-s", "docs", f"PORT={port}"]), cwd=user.clone,
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
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            log = proc.communicate(timeout=60)[0]
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            log = proc.communicate()[0]
    assert page is not None, f"make docs did not serve:\n{log[-4000:]}"
    assert "See PyTorch's backward pass" in page
    assert "chromium for the browser tests: not found at /nonexistent/chromium; skipped" in log
    assert "docs: executed" not in log, "the session's notebook cache was not reused"
