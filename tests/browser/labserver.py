"""THE JupyterLab launcher of the browser tests and of benchmarks/bench_browser.py (no pytest).

A JupyterLab server on 127.0.0.1 with everything in one temporary directory (config, data,
runtime, settings, workspaces, notebooks), so a run never reads or writes the user's Jupyter
set-up, and the flags that keep Debian's chromium off the network. Recipe: WIDGET_STACK.md.
tests/browser/conftest.py wraps `start_lab` in a session fixture; the benchmark imports this file
by path (`sys.path`), so it imports nothing from the tests.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CHROMIUM",
    "CHROMIUM_ARGS",
    "ROOT",
    "LabServer",
    "free_port",
    "notebook_json",
    "start_lab",
    "stop_process",
    "wait_until_up",
]

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("AUTOGRAD_WIDGET_CHROMIUM", "/usr/bin/chromium")
#: Headless, and without the background services that flood a closed network with requests.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now.

    Example:
        >>> 0 < free_port() < 65536
        True
    """
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def notebook_json(cells: Sequence[str]) -> str:
    """A notebook of code cells (no outputs) as JSON text: nbformat's validation costs ~3 s.

    Example:
        >>> json.loads(notebook_json(["1 + 1"]))["cells"][0]["source"]
        '1 + 1'
    """
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "id": f"c{i}",
                "metadata": {},
                "outputs": [],
                "source": src,
            }
            for i, src in enumerate(cells)
        ],
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(nb)


@dataclass
class LabServer:
    """A running JupyterLab: its URL, notebook root, process and log file."""

    url: str
    root: Path
    proc: subprocess.Popen
    log: Path

    def write_notebook(self, name: str, cells: Sequence[str]) -> str:
        """Write a notebook of code cells under the root; return its path relative to the root.

        Example:
            server.write_notebook("z.ipynb", ["import autograd_widget"])
            'z.ipynb'
        """
        (self.root / name).write_text(notebook_json(cells))
        return name

    def shutdown_kernels(self) -> int:
        """Shut down every kernel the server runs (each notebook a test opened started one: a
        session of browser tests would otherwise hold dozens, ~300 MB each); returns how many.

        Example:
            server.shutdown_kernels()
            3
        """
        import http.cookiejar
        import urllib.request

        jar = http.cookiejar.CookieJar()  # the server's _xsrf cookie, echoed as a header
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        with opener.open(f"{self.url}/api/kernels", timeout=10) as r:
            kernels = json.loads(r.read())
        if not kernels:
            return 0
        opener.open(f"{self.url}/lab", timeout=30).close()
        xsrf = next((c.value for c in jar if c.name == "_xsrf"), "")
        for k in kernels:
            req = urllib.request.Request(f"{self.url}/api/kernels/{k['id']}", method="DELETE",
                                         headers={"X-XSRFToken": xsrf})
            opener.open(req, timeout=30).close()
        return len(kernels)

    def stop(self) -> None:
        """Terminate the server (killed after 10 s).

        Example:
            server.stop()
        """
        stop_process(self.proc)


def start_lab(
    base: Path,
    timeout: float = 60,
    *,
    python: str = sys.executable,
    checkout_on_path: bool = True,
    path: str | None = None,
) -> LabServer:
    """Start JupyterLab with every Jupyter directory under `base` (an empty directory) and wait
    until it answers `/api/status`; raise RuntimeError (with the log's tail) when it exits or
    does not answer within `timeout` seconds. By default the server and kernel run on this
    interpreter with this checkout first on PYTHONPATH; the wheel test passes another venv's
    `python`, `checkout_on_path=False` (the package comes from that venv) and its own `path`
    (PATH, e.g. without Node).

    Example:
        server = start_lab(Path(tempfile.mkdtemp()))
    """
    dirs = {k: base / k for k in ("root", "config", "data", "runtime", "ipython", "settings", "ws")}
    for d in dirs.values():
        d.mkdir()
    notif = dirs["settings"] / "@jupyterlab" / "apputils-extension"
    notif.mkdir(parents=True)
    (notif / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    env = dict(os.environ)
    env.update(
        JUPYTER_CONFIG_DIR=str(dirs["config"]),
        JUPYTER_DATA_DIR=str(dirs["data"]),
        JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
        IPYTHONDIR=str(dirs["ipython"]),
        JUPYTER_PLATFORM_DIRS="1",
        PYTHONWARNINGS="ignore::DeprecationWarning",
    )
    if checkout_on_path:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    else:
        env.pop("PYTHONPATH", None)
        env.pop("VIRTUAL_ENV", None)
    if path is not None:
        env["PATH"] = path
    port = free_port()
    log = base / "server.log"
    cmd = [
        python,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--allow-root",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        "--IdentityProvider.token=",
        "--ServerApp.password=",
        f"--ServerApp.root_dir={dirs['root']}",
        "--LabApp.expose_app_in_browser=True",
        "--JupyterNotebookApp.expose_app_in_browser=True",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
        f"--LabServerApp.user_settings_dir={dirs['settings']}",
        f"--LabServerApp.workspaces_dir={dirs['ws']}",
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            cmd, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=dirs["root"]
        )
    url = f"http://127.0.0.1:{port}"
    wait_until_up(proc, f"{url}/api/status", log, timeout, "JupyterLab")
    return LabServer(url=url, root=dirs["root"], proc=proc, log=log)


def stop_process(proc: subprocess.Popen) -> None:
    """Terminate a server process; kill it when it has not exited after 10 s.

    Example:
        stop_process(server.proc)
    """
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def wait_until_up(
    proc: subprocess.Popen, probe: str, log: Path, timeout: float, what: str
) -> None:
    """Wait until `probe` (a URL on 127.0.0.1) answers 200; raise RuntimeError with the log's
    tail when `proc` exits first or `timeout` seconds pass (the process is killed then).

    Example:
        wait_until_up(proc, "http://127.0.0.1:8888/api/status", log, 60, "JupyterLab")
    """
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(probe, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait(10)
            raise RuntimeError(f"{what} did not start in {timeout} s:\n{log.read_text()[-3000:]}")
        time.sleep(0.25)
