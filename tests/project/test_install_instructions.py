"""What the project tells people to install exists: autograd_widget is on no package index, so no
instruction may say `pip install autograd_widget` by its bare name (an unclaimed name that a
project tells people to install invites squatting); the README installs from a clone
(`pip install .`) or from the wheel `make dist` builds, at its real path. The README keeps its
two commands, and CI runs exactly the test one."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VERSION = re.search(r'^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(
    encoding="utf-8"), re.M).group(1)
WHEEL = f"dist/autograd_widget-{VERSION}-py3-none-any.whl"
_PIP_INSTALL = re.compile(r"pip3?\s+install\s+([^\n]*)")
_NAME = re.compile(r"^autograd[_-]widget(?:$|[\[<>=!~])", re.I)  # the name, alone or with
# extras or a version: not a file (autograd_widget-0.1.0-...whl) or a folder


def instruction_files() -> list[Path]:
    """Everything that speaks to a user or a contributor: the top-level docs, docs/, the
    scripts under .ci/ and the Makefile, the notebooks, the package's and front-end's sources."""
    files = [ROOT / n for n in ("README.md", "CONTRIBUTING.md", "DESIGN.md", "Makefile")]
    files += sorted((ROOT / "docs").rglob("*.md")) + sorted((ROOT / "docs").rglob("*.py"))
    files += sorted(p for p in (ROOT / ".ci").iterdir() if p.is_file())
    files += sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted(
        (ROOT / "notebooks").glob("*.py"))
    # the package's own messages (an error that says how to upgrade) and the front-end's
    files += sorted((ROOT / "autograd_widget").rglob("*.py")) + sorted(
        (ROOT / "js" / "src").glob("*.js"))
    return [p for p in files if p.is_file()]


def bare_name_installs(text: str) -> list[str]:
    """The `pip install ...` commands in `text` that name autograd_widget by its bare name
    (with or without extras or a version), not a path, a wheel file or `.`."""
    bad = []
    for m in _PIP_INSTALL.finditer(text):
        words = [w.strip("'\"`()[],.;:!?\\") for w in m.group(1).split()]
        if any(_NAME.match(w) for w in words if not w.startswith("-")):
            bad.append(m.group(0).strip())
    return bad


@pytest.mark.parametrize("text, bad", [
    ("run `pip install autograd_widget` first", True),
    ("'pip install -U autograd-widget' to upgrade", True),
    ('pip install "autograd_widget[notebooks]>=0.1"', True),
    ('pip install "autograd_widget[notebooks]"', True),
    ("pip install autograd-widget==0.1.0", True),
    ("pip install .", False),
    (f"pip install {WHEEL}", False),
    (f'pip install "{WHEEL}[notebooks]"', False),
    ("!pip install -q autograd_widget-0.1.0-py3-none-any.whl", False),
    ('pip install ".[bench]"', False),
    ("\"Only using the widget? 'pip install autograd_widget' gets a wheel\"", True),
    ('"(pip install -U autograd_widget) to open it"', True),
])
def test_the_check_tells_a_bare_name_from_a_path(text, bad):
    assert bool(bare_name_installs(text)) is bad, bare_name_installs(text)


def test_no_instruction_installs_an_unpublished_name():
    found = {}
    for path in instruction_files():
        hits = bare_name_installs(path.read_text(encoding="utf-8"))
        if hits:
            found[str(path.relative_to(ROOT))] = hits
    assert not found, f"instructions to install a name on no index: {found}"


def test_readme_installs_from_a_clone_and_from_the_wheel_at_its_real_path():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    install = readme.split("## Install", 1)[1].split("\n## ", 1)[0]
    assert "\npip install .\n" in install
    assert f"\npip install {WHEEL}\n" in install
    assert "make dist" in install and "not published on any package index" in install


def test_readme_keeps_its_two_commands_and_ci_runs_the_test_one():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    clone = readme.split("## From a clone", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    assert [line.split("#")[0].strip() for line in clone.strip().splitlines()] == [
        "make tour", "make test"]
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert run[-1] == "make test"
