"""The set-up's torch (.ci/setup step 1, decided by .ci/torch_choice.py) works wherever pip
reaches PyPI: the CPU build where pip finds it, the default (CUDA) build otherwise, with its size
said, never a failure for being a CUDA build; only "no torch at all" fails, saying what to check.

pip's answers are FAKED here (nothing is downloaded or installed): `choose` is driven with a
dict of answers, and the whole of .ci/setup runs in a throwaway copy of the checkout whose venv
python is a stand-in that answers pip's dry-run questions from the test's table, records each
real install it is asked for instead of doing it, and gives the set-up's own check a stub torch
of the build that was asked for (a CUDA one when the default build was chosen).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.wheelenv import path_without_node

ROOT = Path(__file__).resolve().parents[2]
CPU_INDEX = "https://cpu-index.invalid/whl/cpu"

_spec = importlib.util.spec_from_file_location("torch_choice", ROOT / ".ci" / "torch_choice.py")
torch_choice = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("torch_choice", torch_choice)  # dataclasses look their module up there
_spec.loader.exec_module(torch_choice)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason=".ci/ is for Linux")


def asker(answers: dict[tuple[str, str | None], str]):
    """`ask` answering from `answers` ((requirement, extra index) -> version), and the list of
    questions it was asked."""
    asked: list[tuple[str, str | None]] = []

    def ask(requirement: str, index: str | None) -> str | None:
        asked.append((requirement, index))
        return answers.get((requirement, index))

    return ask, asked


def test_cpu_build_in_pips_indexes_is_taken_without_asking_further():
    ask, asked = asker({("torch==2.13.0", None): "2.13.0+cpu"})
    got = torch_choice.choose("2.13.0", ask, CPU_INDEX)
    assert got.kind == "cpu" and got.pip_args == ("torch==2.13.0+cpu",)
    assert asked == [("torch==2.13.0", None)]


def test_cpu_build_from_pytorchs_cpu_index_when_pypi_has_only_the_default():
    ask, asked = asker({("torch==2.13.0", None): "2.13.0",
                        ("torch==2.13.0+cpu", CPU_INDEX): "2.13.0+cpu"})
    got = torch_choice.choose("2.13.0", ask, CPU_INDEX)
    assert got.kind == "cpu"
    assert got.pip_args == ("--extra-index-url", CPU_INDEX, "torch==2.13.0+cpu")
    assert asked == [("torch==2.13.0", None), ("torch==2.13.0+cpu", CPU_INDEX)]


@pytest.mark.parametrize("cpu_index", [CPU_INDEX, None])
def test_only_the_default_build_is_installed_saying_its_size(cpu_index):
    ask, asked = asker({("torch==2.13.0", None): "2.13.0"})
    got = torch_choice.choose("2.13.0", ask, cpu_index)
    assert got.kind == "default" and got.pip_args == ("torch==2.13.0",)
    notes = " ".join(got.notes)
    assert "CUDA build: ~4.7 GB" in notes and "runs fine on a machine" in notes
    assert "without a GPU" in notes
    assert len(asked) == (2 if cpu_index else 1)


def test_a_cuda_local_label_is_not_taken_for_a_cpu_build():
    ask, _ = asker({("torch==2.13.0", None): "2.13.0+cu126",
                    ("torch==2.13.0+cpu", CPU_INDEX): "2.13.0+cu126"})
    got = torch_choice.choose("2.13.0", ask, CPU_INDEX)
    assert got.kind == "default" and got.pip_args == ("torch==2.13.0",)


def test_nothing_found_is_the_only_failure_and_says_what_to_check():
    ask, _ = asker({})
    with pytest.raises(torch_choice.NoTorch, match=r"pip finds no build of torch==2\.13\.0"):
        torch_choice.choose("2.13.0", ask, CPU_INDEX)


# --- the whole .ci/setup, pip faked -------------------------------------------------------------

FAKE_PYTHON = '''#!{python}
"""A venv python for the set-up test: pip's answers come from $FAKE_PIP_ANSWERS."""
import json, os, sys
from pathlib import Path

VENV = Path(__file__).resolve().parent.parent
args = sys.argv[1:]
if args[:3] == ["-m", "pip", "install"]:
    rest = args[3:]
    with open(VENV / "pip-calls.jsonl", "a") as log:
        log.write(json.dumps(rest) + "\\n")
    if "--dry-run" in rest:
        index = rest[rest.index("--extra-index-url") + 1] if "--extra-index-url" in rest else ""
        got = json.loads(os.environ["FAKE_PIP_ANSWERS"]).get(f"{{rest[-1]}} {{index}}".strip())
        if got is None:
            sys.exit("ERROR: No matching distribution found for " + rest[-1])
        report = Path(rest[rest.index("--report") + 1])
        report.write_text(json.dumps(
            {{"install": [{{"metadata": {{"name": "torch", "version": got}}}}]}}))
        sys.exit(0)
    for arg in rest:
        if arg.startswith("torch=="):
            version = arg[len("torch=="):]
            stub = VENV / "stub"
            (stub / "torch").mkdir(parents=True, exist_ok=True)
            cuda = None if "+cpu" in version else "12.6"
            (stub / "torch" / "__init__.py").write_text(
                f"import types\\n__version__ = {{version!r}}\\n"
                f"version = types.SimpleNamespace(cuda={{cuda!r}})\\n")
            info = stub / "torch-0.dist-info"
            info.mkdir(exist_ok=True)
            (info / "METADATA").write_text(f"Metadata-Version: 2.1\\nName: torch\\n"
                                           f"Version: {{version}}\\n")
    sys.exit(0)
os.environ["PYTHONPATH"] = str(VENV / "stub")
os.execv({python!r}, [{python!r}, *args])
'''


def fake_clone(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of what .ci/setup reads (itself, the decision, pyproject.toml, a built bundle),
    and a venv whose python is the stand-in above."""
    clone = tmp_path / "clone"
    (clone / ".ci").mkdir(parents=True)
    for name in ("setup", "torch_choice.py"):
        shutil.copy2(ROOT / ".ci" / name, clone / ".ci" / name)
    shutil.copy2(ROOT / "pyproject.toml", clone / "pyproject.toml")
    static = clone / "autograd_widget" / "static"
    static.mkdir(parents=True)
    for name in ("widget.js", "loader.js"):
        (static / name).write_text("// built\n")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(FAKE_PYTHON.format(python=sys.executable))
    python.chmod(0o755)
    return clone, venv


def run_setup(clone: Path, venv: Path, answers: dict[str, str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": path_without_node(clone.parent / "shim"), "VENV": str(venv),
           "TORCH_VERSION": "2.13.0", "TORCH_CPU_INDEX": CPU_INDEX,
           "AUTOGRAD_WIDGET_CHROMIUM": "/nonexistent/chromium",
           "FAKE_PIP_ANSWERS": json.dumps(answers)}
    env.pop("PYTHONPATH", None)
    return subprocess.run(["bash", str(clone / ".ci" / "setup"), "--without-browser"],
                          capture_output=True, text=True, timeout=120, env=env)


def installs(venv: Path) -> list[list[str]]:
    """The pip installs the set-up asked for (dry runs left out)."""
    calls = [json.loads(line) for line in (venv / "pip-calls.jsonl").read_text().splitlines()]
    return [c for c in calls if "--dry-run" not in c]


@pytest.mark.slow
def test_setup_on_a_machine_whose_pip_reaches_only_pypi_installs_the_default_build(tmp_path):
    clone, venv = fake_clone(tmp_path)
    r = run_setup(clone, venv, {"torch==2.13.0": "2.13.0"})
    log = r.stdout + r.stderr
    assert r.returncode == 0, log
    assert "FAILED" not in log
    assert "installing the default build (2.13.0) from PyPI" in log
    assert "CUDA build: ~4.7 GB" in log and "runs fine on a machine" in log
    assert "torch 2.13.0 (CUDA 12.6 build) imports; it runs on this CPU" in log
    assert [c for c in installs(venv) if any(a.startswith("torch") for a in c)] == [
        ["--quiet", "--disable-pip-version-check", "torch==2.13.0", "numpy>=1.24"]]
    # the stamp: a second run does not ask pip about torch again
    (venv / "pip-calls.jsonl").unlink()
    again = run_setup(clone, venv, {"torch==2.13.0": "2.13.0"})
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Python venv with torch 2.13.0: in place, skipped" in again.stdout
    calls = (venv / "pip-calls.jsonl").read_text() if (venv / "pip-calls.jsonl").exists() else ""
    assert "torch==" not in calls


@pytest.mark.slow
def test_setup_takes_the_cpu_build_where_pip_finds_it(tmp_path):
    clone, venv = fake_clone(tmp_path)
    r = run_setup(clone, venv, {"torch==2.13.0": "2.13.0",
                                f"torch==2.13.0+cpu {CPU_INDEX}": "2.13.0+cpu"})
    log = r.stdout + r.stderr
    assert r.returncode == 0, log
    assert "torch 2.13.0+cpu (CPU build) imports" in log
    assert "installing the default build" not in log
    assert [c for c in installs(venv) if any(a.startswith("torch") for a in c)] == [
        ["--quiet", "--disable-pip-version-check", "--extra-index-url", CPU_INDEX,
         "torch==2.13.0+cpu", "numpy>=1.24"]]


@pytest.mark.slow
def test_setup_fails_only_when_pip_finds_no_torch_and_says_what_to_check(tmp_path):
    clone, venv = fake_clone(tmp_path)
    r = run_setup(clone, venv, {})
    assert r.returncode == 1, r.stdout + r.stderr
    assert "[setup] FAILED: pip finds no build of torch==2.13.0" in r.stderr
    assert "is PyPI reachable?" in r.stderr
    assert not installs(venv)[1:], "nothing but pip itself may be installed"
    assert not (venv / ".setup-torch").exists()
