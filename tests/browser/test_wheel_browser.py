"""The package as a user installs it: `python -m build`'s wheel, in a fresh venv, in JupyterLab.

Everything else in the suite runs from the source tree. Here:
1. `python -m build` makes an sdist and, from it, a wheel; both carry the front-end bundle
   (built from js/ and gitignored), and the wheel build runs with no Node on PATH;
2. a fresh venv (no repo on its path) gets torch 2.13.0 from the LOCAL CPU wheel only (pip's
   configured find-links with `--no-index`: never an index, so never a CUDA build), then the
   wheel and JupyterLab;
3. `autograd_widget.__file__` is inside that venv, and JupyterLab runs from that venv with a
   PATH that has no `node`, started in a directory outside the repo: the widget draws, Step
   steps, stepping from Python updates the view.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect
from wheeltools import build_dists, path_without_node
from wheeltools import run as _run

from .conftest import SERVER_TIMEOUT
from .labserver import LabServer, start_lab
from .labtools import button, open_notebook, run_cell, status, widget_in

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TORCH = "2.13.0"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Iterator[dict]:
    base = tmp_path_factory.mktemp("wheel")
    path = path_without_node(base / "bin")
    assert shutil.which("node", path=path) is None and shutil.which("npm", path=path) is None
    env = {**os.environ, "PATH": path}
    env.pop("PYTHONPATH", None)

    # 1. sdist + wheel (the wheel built from the sdist), no Node on PATH, both with the bundle
    build_dists(base / "dist", env)

    # 2. a fresh venv: torch from the local CPU wheel only, then the wheel and JupyterLab
    venv = base / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], env=env)
    py = str(venv / "bin" / "python")
    local = base / "local"
    got = subprocess.run(
        [py, "-m", "pip", "download", "--quiet", "--no-index", "--no-deps", "-d", str(local),
         f"torch=={TORCH}"], capture_output=True, text=True, timeout=600, env=env)
    assert got.returncode == 0, (
        f"no local CPU wheel of torch {TORCH} in pip's find-links (this machine's pip config "
        f"or PIP_FIND_LINKS); the test never resolves torch from an index:\n{got.stderr[-2000:]}")
    (torch_wheel,) = local.glob("torch-*.whl")
    assert "+cpu" in torch_wheel.name, torch_wheel.name
    _run([py, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", str(torch_wheel)],
         env=env)
    constraints = base / "constraints.txt"
    constraints.write_text(f"torch=={TORCH}\n")
    (wheel,) = (base / "dist").glob("autograd_widget-*.whl")
    _run([py, "-m", "pip", "install", "--quiet", "-c", str(constraints), str(wheel),
          "jupyterlab>=4.2", "ipykernel>=6.29"], env=env, cwd=base)
    _run([py, "-m", "pip", "check"], env=env, cwd=base)

    # 3. the package is the wheel's, in the venv; torch is the CPU build
    out = _run([py, "-c", "import autograd_widget, torch; print(autograd_widget.__file__); "
                "print(torch.__version__, torch.version.cuda)"], env=env, cwd=base).stdout
    file, versions = out.strip().splitlines()
    assert Path(file).resolve().is_relative_to(venv.resolve()), file
    assert versions == f"{TORCH}+cpu None", versions
    yield {"venv": venv, "python": py, "path": path, "file": file, "base": base}
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def wheel_lab(installed) -> Iterator[LabServer]:
    lab = installed["base"] / "lab"
    lab.mkdir()
    server = start_lab(lab, timeout=SERVER_TIMEOUT, python=installed["python"],
                       checkout_on_path=False, path=installed["path"])
    yield server
    server.stop()


CELL = """\
import torch, autograd_widget as aw, shutil
print("FILE", aw.__file__, "NODE", shutil.which("node"))
x = torch.tensor(2.0, requires_grad=True)
y = torch.tensor(3.0, requires_grad=True)
w = aw.explore(x**2 + y, params={"x": x, "y": y}, height=400)
w"""


def test_the_wheel_works_in_jupyterlab_without_the_repo_or_node(page, installed, wheel_lab):
    open_notebook(page, wheel_lab, "wheel.ipynb", [CELL, "w.stepper.run()"])
    out = run_cell(page, 0)
    m = re.search(r"FILE (\S+) NODE (\S+)", out)
    assert m, out
    assert m.group(1) == installed["file"] and m.group(2) == "None"
    root = widget_in(page, 0)
    expect(status(root)).to_contain_text(re.compile(r"step 0 / 4"))
    button(root, "Step").click()
    expect(status(root)).to_contain_text(re.compile(r"step 1 / 4"))
    run_cell(page, 1)  # stepping from Python updates the view
    expect(status(root)).to_contain_text(re.compile(r"step 4 / 4"))
