"""DESIGN.md is a map that names every room, and the code cites only the project's own files.

Issue 37, item 3: a newcomer starting from README.md and DESIGN.md finds any module, so

- every Python module under autograd_widget/ (`__init__.py` files aside: each package's
  `__init__` docstring is its own map, test_house.py checks it; `__main__.py` included: it is
  the CLI) and every JS module under js/src/ is named in DESIGN.md by its file name;
- every `name.py` / `name.js` DESIGN.md names exists (a renamed or removed module is not left
  on the map);
- DESIGN.md keeps its feature table (stepping, recording, watching, compiled regions,
  distributed, drawing, the page, the CLI);
- no docstring or comment under autograd_widget/ or js/src/ cites a document a person who
  clones the project does not have (the design notes the project was built from): a contract a
  docstring needs is restated in the project's own docs (DESIGN.md, docs/);
- every path of ours they cite (`wire/trainpayload.py`, `docs/compiled.md`) exists.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "autograd_widget"
JS_SRC = ROOT / "js" / "src"
DESIGN = ROOT / "DESIGN.md"

#: Names of documents outside the project: citing them sends a reader to a file they lack.
FOREIGN_DOCS = ("API.md", "AUTOGRAD_FACTS", "WIDGET_STACK", "STYLE.md", "shared/docs")

#: The features DESIGN.md's table must have a row for (issue 37).
FEATURES = ("stepping", "recording", "watching", "compiled regions", "distributed", "drawing",
            "the page", "the CLI")

#: First folders of a cited path that are ours (a path under torch/ is torch's, not checked).
OUR_FOLDERS = {"autograd_widget", "core", "engine", "view", "wire", "export", "util", "step",
               "watch", "record", "diagnose", "formulas", "js", "src", "docs", "tests", "notebooks"}

_CITED_PATH = re.compile(r"(?<![\w./])((?:[A-Za-z_][\w.-]*/)+[\w.-]+\.(?:py|js|md|ipynb|css))\b")
_NAMED = re.compile(r"(?<![\w.])([A-Za-z_][\w/]*\.(?:py|js))\b")


def python_modules() -> list[Path]:
    """Every .py file of the package but `__init__.py` (the built static/ holds none)."""
    return sorted(p for p in PKG.rglob("*.py")
                  if p.name != "__init__.py" and "static" not in p.relative_to(PKG).parts
                  and "__pycache__" not in p.parts)


def js_modules() -> list[Path]:
    return sorted(JS_SRC.rglob("*.js"))


def unnamed(text: str, files: list[Path]) -> list[str]:
    """The files of `files` whose file name `text` never mentions as a whole word."""
    missing = []
    for p in files:
        if not re.search(rf"(?<![\w.]){re.escape(p.name)}\b", text):
            missing.append(str(p.relative_to(ROOT)))
    return missing


def named_but_absent(text: str) -> list[str]:
    """The `x.py` / `x.js` / `dir/x.py` names in `text` that name no file: a path is looked up
    from the repository root, the package and js/src; a bare name among the package's modules,
    js/src's modules and the repository's files."""
    bare = {p.name for p in PKG.rglob("*.py")} | {p.name for p in js_modules()}
    bare |= {p.name for p in ROOT.glob("*") if p.is_file()}
    absent = []
    for name in sorted(set(_NAMED.findall(text))):
        if "/" in name:
            if not any((base / name).is_file() for base in (ROOT, PKG, JS_SRC, ROOT / "js")):
                absent.append(name)
        elif name not in bare:
            absent.append(name)
    return absent


def foreign_citations() -> list[str]:
    """`path:line: text` of every line under autograd_widget/ (static/ aside: it is built) and
    js/src/ that names a document outside the project."""
    files = [p for p in PKG.rglob("*") if p.is_file() and p.suffix in {".py", ".js", ".css", ".md"}
             and "static" not in p.relative_to(PKG).parts]
    files += [p for p in JS_SRC.rglob("*") if p.is_file()]
    hits = []
    for p in sorted(files):
        for k, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
            if any(name in line for name in FOREIGN_DOCS):
                hits.append(f"{p.relative_to(ROOT)}:{k}: {line.strip()}")
    return hits


def source_files() -> list[Path]:
    """The package's Python modules (static/ aside) and js/src's modules."""
    return sorted([p for p in PKG.rglob("*.py") if "static" not in p.relative_to(PKG).parts]
                  + js_modules())


def cited_but_absent(path: Path, text: str) -> list[str]:
    """`line: path` of every path of ours `text` (the file `path`) cites that does not exist,
    looked up from the repository root, the package, js/, engine/ and the citing file's own
    folder and its parent (docstrings say `watch/watch.py` inside engine/)."""
    bases = [ROOT, PKG, ROOT / "js", PKG / "engine", path.parent, path.parent.parent]
    out = []
    for k, line in enumerate(text.splitlines(), 1):
        for cited in _CITED_PATH.findall(line):
            if cited.split("/")[0] in OUR_FOLDERS and not any((b / cited).exists() for b in bases):
                out.append(f"{k}: {cited}")
    return out


def test_design_names_every_python_module():
    missing = unnamed(DESIGN.read_text(), python_modules())
    assert not missing, ("DESIGN.md's map ('The layered house') does not name these modules; add "
                         "each, with a few words on its job, under its layer:\n  "
                         + "\n  ".join(missing))


def test_design_names_every_js_module():
    missing = unnamed(DESIGN.read_text(), js_modules())
    assert not missing, ("DESIGN.md's map (js/src/) does not name these modules; add each, with "
                         "a few words on its job:\n  " + "\n  ".join(missing))


def test_design_names_no_module_that_is_gone():
    absent = named_but_absent(DESIGN.read_text())
    assert not absent, ("DESIGN.md names files that do not exist (renamed or removed: update "
                        "the map):\n  " + "\n  ".join(absent))


def test_design_has_a_row_and_a_data_flow_per_feature():
    text = DESIGN.read_text()
    assert "## Where each feature lives" in text
    rows = {line.split("|")[1].strip() for line in text.splitlines()
            if line.startswith("| ") and line.count("|") >= 4}
    missing = [f for f in FEATURES if not any(r == f or r.startswith(f + " ") for r in rows)]
    assert not missing, f"DESIGN.md's feature table lacks a row for: {missing}"
    flows = re.findall(r"^- \*\*([^*]+)\*\*: ", text, flags=re.M)
    assert len(flows) >= len(FEATURES), f"one data-flow line per feature, found {flows}"
    for answer in ("watched step's norms", "compiled region stepped", "path of a Step click"):
        assert answer in text, f"DESIGN.md no longer answers {answer!r}"


def test_code_cites_only_the_projects_own_documents():
    hits = foreign_citations()
    assert not hits, ("these docstrings/comments cite documents a clone does not have; restate "
                      "the contract in DESIGN.md or docs/ and cite that (or state the fact "
                      "there):\n  " + "\n  ".join(hits))


def test_every_path_the_code_cites_exists():
    stale = [f"{p.relative_to(ROOT)}:{hit}" for p in source_files()
             for hit in cited_but_absent(p, p.read_text(errors="replace"))]
    assert not stale, ("these docstrings/comments cite a file of ours that does not exist "
                       "(renamed or moved: cite the new one):\n  " + "\n  ".join(stale))


def test_the_checks_can_fail():
    """The helpers above see what they are meant to: a missing name, a stale name."""
    files = [PKG / "engine" / "step" / "stepper.py", JS_SRC / "view.js"]
    assert unnamed("stepper.py and view.js", files) == []
    assert unnamed("stepper.pyc, myview.js", files) == [
        "autograd_widget/engine/step/stepper.py", "js/src/view.js"]
    assert named_but_absent("stepper.py, engine/step/stepper.py, js/src/view.js") == []
    assert named_but_absent("nowhere.py and view/gone.py") == ["nowhere.py", "view/gone.py"]
    here = PKG / "widget.py"
    assert cited_but_absent(here, "see wire/trainpayload.py and docs/compiled.md") == []
    stale = cited_but_absent(here, "a\nsee wire/timeline.py, torch/_x/y.py")
    assert stale == ["2: wire/timeline.py"]
