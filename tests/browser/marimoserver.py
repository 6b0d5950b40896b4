"""THE marimo launcher of the browser tests: `marimo edit` on 127.0.0.1, headless, no token.

Everything lives in one temporary directory: the notebooks, HOME and every XDG directory (so
marimo's user config, state, cache and logs never touch the user's), and a marimo.toml written
there that makes an opened notebook run its cells at once (`auto_instantiate`, off by default in
marimo 0.25), never autosaves, and turns the AI and copilot features off. The server's own
update check is off (`--skip-update-check`, MARIMO_SKIP_UPDATE_CHECK=1); the page's requests are
checked by the `page` fixture (tests/browser/conftest.py). The kernels see this checkout first
on PYTHONPATH. Like labserver.py, this file imports nothing from pytest.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from .labserver import ROOT, free_port, stop_process, wait_until_up

__all__ = ["MARIMO_CONFIG", "MarimoServer", "start_marimo"]

#: The user config of the test server (marimo.toml): run cells when a notebook opens, show
#: tracebacks, never write the notebook back, no AI.
MARIMO_CONFIG = """\
[runtime]
auto_instantiate = true
show_tracebacks = true

[save]
autosave = "off"
format_on_save = false

[ai]
enabled = false

[completion]
copilot = false

[server]
browser = "default"
"""


@dataclass
class MarimoServer:
    """A running `marimo edit` server over a directory of notebooks."""

    url: str
    root: Path
    proc: subprocess.Popen
    log: Path

    def write_notebook(self, name: str, source: str) -> str:
        """Write a marimo notebook (a .py file) under the root; return its name.

        Example:
            server.write_notebook("z.py", "import marimo\\napp = marimo.App()\\n")
            'z.py'
        """
        (self.root / name).write_text(source, encoding="utf-8")
        return name

    def notebook_url(self, name: str) -> str:
        """The editor's URL of notebook `name` (relative to the root).

        Example:
            server.notebook_url("z.py")
            'http://127.0.0.1:8123/?file=z.py'
        """
        return f"{self.url}/?file={quote(name)}"

    def stop(self) -> None:
        """Terminate the server and its kernels (killed after 10 s).

        Example:
            server.stop()
        """
        stop_process(self.proc)


def start_marimo(base: Path, timeout: float = 60) -> MarimoServer:
    """Start `marimo edit` over `base`/root (an empty directory `base` is filled with root,
    home, the XDG directories and server.log) on a free port of 127.0.0.1 and wait until it
    answers `/health`; raise RuntimeError (with the log's tail) when it exits or does not answer
    within `timeout` seconds.

    Example:
        server = start_marimo(Path(tempfile.mkdtemp()))
    """
    dirs = {k: base / k for k in ("root", "home", "config", "cache", "state", "data")}
    for d in dirs.values():
        d.mkdir()
    (dirs["config"] / "marimo").mkdir()
    (dirs["config"] / "marimo" / "marimo.toml").write_text(MARIMO_CONFIG)
    env = dict(os.environ)
    env.update(
        HOME=str(dirs["home"]),
        XDG_CONFIG_HOME=str(dirs["config"]),
        XDG_CACHE_HOME=str(dirs["cache"]),
        XDG_STATE_HOME=str(dirs["state"]),
        XDG_DATA_HOME=str(dirs["data"]),
        MARIMO_SKIP_UPDATE_CHECK="1",
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
        PYTHONWARNINGS="ignore::DeprecationWarning",
    )
    port = free_port()
    log = base / "server.log"
    cmd = [
        sys.executable,
        "-m",
        "marimo",
        "edit",
        str(dirs["root"]),
        "--headless",
        "--no-token",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--skip-update-check",
        "--no-sandbox",
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            cmd, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            cwd=dirs["root"],
        )
    url = f"http://127.0.0.1:{port}"
    wait_until_up(proc, f"{url}/health", log, timeout, "marimo")
    return MarimoServer(url=url, root=dirs["root"], proc=proc, log=log)
