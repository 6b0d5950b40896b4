"""The package as a user installs it: `python -m build`'s wheel, in a fresh venv, in JupyterLab.

Everything else in the suite runs from the source tree. Here (with tests/helpers/wheelenv.py, shared
with the other tests that install the wheel):
1. `python -m build` makes an sdist and, from it, a wheel; both carry the front-end bundle
   (built from js/ and gitignored), and the wheel build runs with no Node on PATH;
2. a fresh venv (no repo on its path) gets torch 2.13.0 from the LOCAL CPU wheel only (never an
   index, so never a CUDA build), then the wheel and JupyterLab, torch pinned to what is there
   (the session's `user_venv`, tests/conftest.py: made once by this run and shared with the quick
   start's test, tests/project/test_wheel_quickstart.py; neither installs more into it);
3. `autograd_widget.__file__` is inside that venv, and JupyterLab runs from that venv with a
   PATH that has no `node`, started in a directory outside the repo: the widget draws, Step
   steps, stepping from Python updates the view.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.helpers.wheelenv import TORCH, run

from .conftest import SERVER_TIMEOUT
from .labserver import LabServer, start_lab
from .labtools import button, open_notebook, run_cell, status, widget_in

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def installed(user_venv) -> dict:
    py, env, venv = user_venv.python, user_venv.env, user_venv.venv
    # the package is the wheel's, in the venv; torch is the CPU build
    out = run([py, "-c", "import autograd_widget, torch; print(autograd_widget.__file__); "
               "print(torch.__version__, torch.version.cuda)"], env=env, cwd=user_venv.base).stdout
    file, versions = out.strip().splitlines()
    assert Path(file).resolve().is_relative_to(venv.resolve()), file
    assert versions == f"{TORCH}+cpu None", versions
    return {"venv": venv, "python": py, "path": env["PATH"], "file": file}


@pytest.fixture(scope="module")
def wheel_lab(installed, tmp_path_factory) -> Iterator[LabServer]:
    lab = tmp_path_factory.mktemp("wheel-lab")  # outside the repo
    server = start_lab(lab, timeout=SERVER_TIMEOUT, python=installed["python"],
                       checkout_on_path=False, path=installed["path"])
    yield server
    server.stop()
    shutil.rmtree(lab, ignore_errors=True)


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
