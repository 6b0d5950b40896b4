"""Running the project's pieces leaves a clone as git had it: the tour's page (`make tour
HTML=...`, and the tour notebook run where JupyterLab runs it, in notebooks/) lands where git
ignores it, no test rewrites the README's screenshot (only `make screenshots` does), and the tour
closes none of its widgets (they stay visible after Run All).

The pieces run in a throwaway git repository holding a copy of this checkout (what git tracks,
and what it would track), so that what other work changes here meanwhile cannot count.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.screenshots import README_IMAGE, UPDATE_SCREENSHOTS, keep_readme_image
from tests.helpers.wheelenv import BUNDLE

ROOT = Path(__file__).resolve().parents[2]
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=cwd, capture_output=True, text=True, timeout=60,
                          check=True).stdout


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A git repository with a copy of this checkout, committed (the bundle too, untracked and
    ignored there as here)."""
    out = tmp_path / "clone"
    listed = git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    for rel in [*filter(None, listed.split("\0")), *BUNDLE]:
        src = ROOT / rel
        if src.is_file():
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            (out / rel).write_bytes(src.read_bytes())
    git(out, "init", "-q")
    git(out, "add", "-A")
    git(out, "commit", "-q", "-m", "base")
    assert git(out, "status", "--porcelain", "--untracked-files=all") == ""
    return out


def test_the_tests_keep_the_readme_screenshot_unless_asked(tmp_path, monkeypatch):
    shot = tmp_path / "shot.png"
    shot.write_bytes(b"new")
    target = tmp_path / "widget.png"
    target.write_bytes(b"committed")
    monkeypatch.delenv(UPDATE_SCREENSHOTS, raising=False)
    assert not keep_readme_image(shot, target) and target.read_bytes() == b"committed"
    monkeypatch.setenv(UPDATE_SCREENSHOTS, "1")
    assert keep_readme_image(shot, target) and target.read_bytes() == b"new"
    assert README_IMAGE == ROOT / "notebooks" / "img" / "widget.png"
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert f"{UPDATE_SCREENSHOTS}=1 " in makefile.split("\nscreenshots:", 1)[1].split("\n\n")[0]


def test_the_tour_closes_none_of_its_widgets():
    nb = json.loads((ROOT / "notebooks" / "01_tour.ipynb").read_text(encoding="utf-8"))
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    assert not [c for c in code if ".close()" in c], "a closed widget is hidden after Run All"


@pytest.mark.slow
def test_the_tour_writes_no_tracked_file(clone):
    """What `make tour HTML=build/tour.html` (the README's example) runs after the set-up, in the
    clone, then the tour notebook run in notebooks/ as JupyterLab runs it: git sees no change."""
    import nbformat
    from nbclient import NotebookClient

    env = {**os.environ}
    env.pop("PYTHONPATH", None)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make tour HTML=build/tour.html" in readme
    page = clone / "build" / "tour.html"
    page.parent.mkdir()  # .ci/tour's `mkdir -p`
    subprocess.run([sys.executable, "-m", "autograd_widget", "demo", "--html", "build/tour.html"],
                   cwd=clone, env=env, capture_output=True, text=True, timeout=300, check=True)
    assert page.read_text(encoding="utf-8").startswith("<!doctype html>")
    notebooks = clone / "notebooks"
    nb = nbformat.read(notebooks / "01_tour.ipynb", as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(notebooks)}}).execute()
    assert (notebooks / "tour_mlp.html").is_file()  # written, where git ignores it
    assert git(clone, "status", "--porcelain", "--untracked-files=all") == ""
