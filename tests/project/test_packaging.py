"""The wheel ships the front-end bundle (it is gitignored and built from js/)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_wheel_contains_the_bundle(tmp_path):
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    (wheel,) = tmp_path.glob("autograd_widget-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "autograd_widget/static/widget.js" in names
    assert "autograd_widget/static/widget.css" in names
    assert "autograd_widget/static/loader.js" in names
    assert "autograd_widget/widget.py" in names
    assert "autograd_widget/engine/step/stepper.py" in names
    assert not any(n.startswith(("js/", "tests/")) for n in names)
    bundle = zipfile.ZipFile(wheel).read("autograd_widget/static/widget.js")
    assert bundle == (ROOT / "autograd_widget/static/widget.js").read_bytes()


def _make_recipe(target: str) -> list[str]:
    """The recipe lines of `target` in the Makefile."""
    lines = (ROOT / "Makefile").read_text(encoding="utf-8").splitlines()
    start = lines.index(f"{target}:")
    recipe = []
    for line in lines[start + 1:]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip())
    return recipe


def test_make_dist_needs_no_developer_setup():
    """`make dist` builds with Node.js and `build` in a throwaway venv, not through .ci/setup's
    torch venv (~2 GB installed for a 0.6 MB wheel)."""
    recipe = _make_recipe("dist")
    assert recipe == ["bash .ci/dist"], recipe
    script = (ROOT / ".ci" / "dist").read_text(encoding="utf-8")
    code = "\n".join(line for line in script.splitlines() if not line.lstrip().startswith("#"))
    assert ".ci/setup" not in code and ".venv" not in code and "VENV" not in code


@pytest.mark.slow
def test_make_dist_in_a_clone_without_the_developer_venv(tmp_path):
    """`make dist` in a copy of the checkout that has no .venv and no Node.js on PATH (the bundle
    built): the wheel and the sdist land in DIST, carry the bundle, and no .venv appears."""
    from tests.helpers.wheelenv import BUNDLE, path_without_node

    clone = tmp_path / "clone"
    listed = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    tracked = subprocess.run(listed, cwd=ROOT, capture_output=True, timeout=60,
                             check=True).stdout.decode().split("\0")
    for rel in [*filter(None, tracked), *BUNDLE]:
        src = ROOT / rel
        if src.is_file():
            (clone / rel).parent.mkdir(parents=True, exist_ok=True)
            (clone / rel).write_bytes(src.read_bytes())
    (clone / ".ci" / "dist").chmod(0o755)
    out = tmp_path / "out"
    env = {**os.environ, "PATH": path_without_node(tmp_path / "shim"), "DIST": str(out)}
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    r = subprocess.run(["make", "dist"], cwd=clone, capture_output=True, text=True,
                       timeout=600, env=env)
    log = r.stdout + r.stderr
    assert r.returncode == 0, log[-4000:]
    assert "Node.js is not on PATH; packaging the bundle already in" in log
    assert "[setup]" not in log, "make dist ran the developer set-up"
    assert not (clone / ".venv").exists()
    (wheel,) = out.glob("autograd_widget-0.1.0-py3-none-any.whl")
    (sdist,) = out.glob("autograd_widget-0.1.0.tar.gz")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert set(BUNDLE) <= names, sorted(names)[:20]
    assert sdist.stat().st_size > 0
