"""The README's install and quick start, as a new user runs them: the wheel `make dist` builds
(with no Node on PATH) installed into a fresh venv that already has torch, then the README's
quick start cell run in a notebook kernel of that venv, outside the checkout.

What it holds: the wheel installs beside an existing torch without changing it; the quick start
as the README prints it runs and displays the widget; the widget steps (the numbers the README
promises); the package imported is the installed one, with no Node anywhere.

The venv is the session's `user_venv` (tests/conftest.py, tests/helpers/wheelenv.py): made fresh
by this run, torch from the local CPU wheel, then the wheel, ipykernel and JupyterLab with torch
checked unchanged; shared with tests/browser/test_wheel_browser.py, which installs nothing more.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.helpers.wheelenv import ROOT, build_dist, run

pytestmark = pytest.mark.slow

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def readme_block(heading: str) -> str:
    """The first ```python block under `heading` in README.md."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_quick_start_is_five_lines_that_end_with_the_widget():
    code = readme_block("## Quick start")
    lines = code.strip().splitlines()
    assert len(lines) == 5, lines
    assert lines[-1].split("#")[0].strip() == "w"
    assert "make dist" in (ROOT / "README.md").read_text()
    assert "make dist" in (ROOT / "Makefile").read_text()


@pytest.fixture(scope="module")
def user_env(user_venv, tmp_path_factory) -> dict:
    """A user's environment: torch already there, then the wheel and a Jupyter kernel (the
    session's `user_venv`: installing the wheel there left torch as it was)."""
    base = tmp_path_factory.mktemp("user")
    py, env = user_venv.python, user_venv.env
    dist = build_dist()
    # the README's optional extra resolves with the wheel's file name (not installed: a dry run)
    run([py, "-m", "pip", "install", "--dry-run", "--quiet", "-c",
         user_venv.venv / "constraints.txt", f"{dist.wheel}[notebooks]"],
        env=env, cwd=base)
    # a kernel of that venv, as Jupyter finds one: a kernelspec, its env without the checkout
    spec = base / "jupyter" / "kernels" / "wheel"
    spec.mkdir(parents=True)
    spec.joinpath("kernel.json").write_text(json.dumps({
        "argv": [py, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "wheel", "language": "python",
        "env": {"PYTHONPATH": "", "PATH": env["PATH"]},
    }))
    return {"python": py, "base": base, "env": env, "jupyter": base / "jupyter",
            "venv": user_venv.venv}


def test_the_readme_quick_start_runs_from_the_wheel_in_a_notebook(user_env, monkeypatch):
    work = user_env["base"] / "work"
    work.mkdir()
    monkeypatch.setenv("JUPYTER_PATH", str(user_env["jupyter"]))
    check = (
        "import shutil, sys\n"
        "print('FILE', aw.__file__, 'NODE', shutil.which('node'))\n"
        "print('STATUS', w.status)\n"
        "w.stepper.run()\n"
        "print('GRAD', w.stepper.grad(x).item(), w.stepper.grad(y).item())\n"
        "print('STATUS', w.status)\n"
    )
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(readme_block("## Quick start")),
                nbformat.v4.new_code_cell(check)]
    NotebookClient(nb, timeout=300, kernel_name="wheel",
                   resources={"metadata": {"path": str(work)}}).execute()
    shown = [o for o in nb.cells[0].outputs if WIDGET_VIEW in o.get("data", {})]
    assert len(shown) == 1, nb.cells[0].outputs  # the last line displayed the widget
    assert "AutogradWidget" in shown[0]["data"]["text/plain"]
    text = "".join(o.get("text", "") for o in nb.cells[1].outputs)
    file = re.search(r"FILE (\S+) NODE (\S+)", text)
    assert Path(file.group(1)).resolve().is_relative_to(user_env["venv"].resolve()), text
    assert file.group(2) == "None", "no Node anywhere"
    statuses = re.findall(r"STATUS (.*)", text)
    assert statuses == ["step 0 / 4 → next AddBackward0",
                        "ran AccumulateGrad (x) (step 4 / 4) — done"], text
    assert "GRAD 4.0 1.0" in text  # the edges into x and y read 4 and 1, as the README says
