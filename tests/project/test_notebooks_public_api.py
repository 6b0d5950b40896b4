"""The notebooks teach the public API only: what a reader copies from them keeps working.

No notebook reaches a private name (`w._state`, `graph._saved`, ...) nor a module path below the
top-level package (`autograd_widget.core.formulas.api`, `aw.engine.stepper`): those may change
without notice (README, DESIGN.md). The exceptions are torch's own autograd internals that the
teaching notebooks are ABOUT (a node's `_saved_<name>` fields, a tensor's `_version`, ...), each
listed below with where it is taught. Also: every import a notebook makes is a dependency of the
package or of its `[notebooks]` extra, and no notebook reads a helper file it did not write.
"""

from __future__ import annotations

import ast
import io
import itertools
import json
import re
import tokenize
from importlib.metadata import requires
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
NAMES = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
LAYERS = ("util", "core", "engine", "view", "wire", "export", "widget", "pair", "static")

#: torch's autograd internals the notebooks teach (not this package's): name -> where.
TORCH_INTERNALS = {
    "_saved_": "03: a backward node's saved values, `_saved_<name>`",
    "_raw_saved_": "03: the raw SavedTensor behind `_saved_<name>`",
    "_version": "03: a tensor's version counter, bumped by in-place ops",
    "_sequence_nr": "02: the engine's creation order of nodes, its priority key",
    "_input_metadata": "02: the shape each input slot of a node expects",
    "_backward_hooks": "04: the hooks registered on a tensor (torch has no public listing)",
}


def code_of(name: str) -> str:
    nb = json.loads((NOTEBOOKS / name).read_text())
    return "\n\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")


def private_attributes(source: str) -> list[str]:
    """Every `._name` attribute access (dunders aside) in Python source, as written."""
    toks = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
            if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT)]
    found = []
    for a, b in itertools.pairwise(toks):
        if a.type == tokenize.OP and a.string == "." and b.type == tokenize.NAME:
            if b.string.startswith("_") and not b.string.startswith("__"):
                found.append(b.string)
    return found


def test_the_checks_catch_what_they_look_for():
    sample = 'w._state["status"]; x.grad_fn._saved_self; y.__class__\nfrom a.b import c'
    assert private_attributes(sample) == ["_state", "_saved_self"]


@pytest.mark.parametrize("name", NAMES)
def test_no_private_name_of_the_package(name):
    source = code_of(name)
    bad = [a for a in private_attributes(source)
           if not any(a.startswith(prefix) for prefix in TORCH_INTERNALS)]
    assert not bad, f"{name} reaches private names: {sorted(set(bad))} (use the public API)"


@pytest.mark.parametrize("name", NAMES)
def test_no_module_path_below_the_package(name):
    source = code_of(name)
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            assert not node.module.startswith("autograd_widget."), (name, node.module)
        if isinstance(node, ast.Import):
            for alias in node.names:
                assert not alias.name.startswith("autograd_widget."), (name, alias.name)
    pattern = rf"\b(?:aw|autograd_widget)\.(?:{'|'.join(LAYERS)})\b"
    assert not re.search(pattern, source), f"{name}: {re.search(pattern, source)[0]}"


def _declared() -> set[str]:
    """Distribution names the package needs, with its [notebooks] extra (lowercase)."""
    out = {"autograd_widget", "torch"}
    for req in requires("autograd_widget") or []:
        extra = re.search(r'extra\s*==\s*"([^"]+)"', req)
        if extra is None or extra.group(1) == "notebooks":
            out.add(re.split(r"[\s<>=!~\[;]", req, maxsplit=1)[0].lower().replace("-", "_"))
    return out


@pytest.mark.parametrize("name", NAMES)
def test_every_import_is_the_standard_library_or_a_declared_dependency(name):
    import sys

    declared = _declared()
    for node in ast.walk(ast.parse(code_of(name))):
        mods = ([a.name for a in node.names] if isinstance(node, ast.Import)
                else [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
        for mod in mods:
            top = mod.split(".")[0]
            assert top in sys.stdlib_module_names or top in declared, (
                f"{name} imports {top}: declare it (the [notebooks] extra) or drop it")


@pytest.mark.parametrize("name", NAMES)
def test_no_helper_file_beside_the_notebook(name):
    """A helper a notebook runs is written by the notebook itself (06 writes ddp_record.py
    into its scratch folder), so the notebook works when opened alone."""
    source = code_of(name)
    for helper in re.findall(r'["\'](\w+\.py)["\']', source):
        assert not (NOTEBOOKS / helper).exists(), f"{name} relies on notebooks/{helper}"
        assert re.search(rf"{re.escape(helper)}.*\n.*write_text", source), (name, helper)
    assert sorted(p.name for p in NOTEBOOKS.glob("*.py")) == ["marimo_tour.py"]
