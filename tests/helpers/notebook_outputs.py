"""The notebooks are committed WITH their outputs, so a reader on a code host sees every result
without running anything; this module executes them and says whether the committed outputs are
still what the notebooks print today.

"Up to date" means: executing the committed notebook in a fresh kernel (nbclient, in a scratch
folder) gives, cell by cell, the same outputs as the committed ones, compared as normalised text:
- streams (stdout/stderr) as one text per cell and stream, errors as "ename: evalue",
  `text/latex` and `text/plain` as they are;
- images and widget views by kind only ("<image/png>", "<widget>"): a PNG's bytes change with
  matplotlib's version and the fonts, a widget's model id with every run, and what the widget
  shows is checked by the tests that read its state (tests/project/test_notebooks*.py);
- in the text, what changes from run to run without meaning anything is replaced: memory
  addresses (`0x7f...`), the scratch folder a notebook works in (`/tmp/aw-debug-...`), the time
  a step took (`0.113 ms`) and file sizes printed in MB (the standalone page carries the
  front-end bundle, whose size changes with any front-end edit).
Then the texts are compared as text and numbers (`same_text`): every character outside a number
counts (a reworded message, a new line, `nan` for a number), and so do integers (a step, a count)
and how many numbers there are; a decimal number (`0.6084`, `1.16e+04`) may differ by what another
CPU's rounding makes of it: a relative 1e-4 (RTOL), or one unit in its last printed digit (the
same value a hair away from a rounding boundary prints one digit apart). Anything more makes the
committed notebook stale. The outputs are made and compared on the torch the notebooks record
(`metadata.autograd_widget.torch`); on another torch (`make compat`) the comparison is skipped
(another torch may compute, not only round, differently).

Each notebook is executed once per test session. The documentation build of the same session
(tests/conftest.py `docs_site`) executes every notebook too (docs/notebook_pages.py), also in a
fresh kernel per notebook, and keeps the executed notebook and its scratch folder in its cache
under the notebook's `source_stamp`; once the session shares that cache (`share_docs_cache`),
`executed` takes a notebook from it when the stamp is today's, else executes it itself. The
script below never reads a cache: it rewrites the committed outputs from a run of its own.

Regenerate after changing a notebook or what it prints (`make notebooks`):

    python tests/helpers/notebook_outputs.py [NAME ...]            # rewrite the notebooks' outputs
    python tests/helpers/notebook_outputs.py --check [NAME ...]    # exit 1 and list what is stale

Example:
    normalize("at 0x7f3a2c1d90 in /tmp/aw-debug-k2j3/run.html (1.3 MB), 0.113 ms")
    'at 0x… in <scratch>/run.html (… MB), … ms'
    same_text("loss 0.01889 at step 157", "loss 0.0189 at step 157")
    True
"""

from __future__ import annotations

import atexit
import copy
import functools
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

__all__ = ["NOTEBOOKS", "RTOL", "cell_outputs", "differences", "executed", "from_docs_cache",
           "normalize", "notebook_pages", "same_text", "share_docs_cache", "write"]

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
_VOLATILE = [
    (re.compile(r"0x[0-9a-fA-F]{6,}"), "0x…"),
    (re.compile(r"/tmp/aw-[\w-]+"), "<scratch>"),
    (re.compile(r"\b\d+(?:\.\d+)? MB\b"), "… MB"),
    (re.compile(r"\b\d+\.\d+ ms\b"), "… ms"),
]


#: How far a decimal number may move and still be the same output (module docstring).
RTOL = 1e-4
# A number on its own: not a piece of a version (2.13.0), of a dotted name (layers.0.attn) or of
# a longer number. Integers are compared exactly, decimals (a point or an exponent) loosely.
_NUMBER = re.compile(r"(?<![\d.])[-+]?(?:\d+\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\d+)(?!\.?\d)")


def _last_digit(token: str) -> float:
    """One unit in the last printed digit of a decimal number ("86.44": 0.01, "1.3e+06": 1e5)."""
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def _same_number(a: str, b: str) -> bool:
    if a == b:
        return True
    decimal = ("." in a or "e" in a.lower()) and ("." in b or "e" in b.lower())
    if not decimal:
        return False  # integers, or an integer against a decimal: exactly, or not the same
    x, y = float(a), float(b)
    slack = max(RTOL * max(abs(x), abs(y)), _last_digit(a), _last_digit(b))
    return abs(x - y) <= slack * (1 + 1e-9)


def same_text(committed: str, fresh: str) -> bool:
    """Whether two normalised outputs are the same, as the module docstring says: the text
    around the numbers and every integer exactly, each decimal number within RTOL or one unit
    of its last printed digit."""
    if committed == fresh:
        return True
    a, b = _NUMBER.split(committed), _NUMBER.split(fresh)
    nums_a, nums_b = _NUMBER.findall(committed), _NUMBER.findall(fresh)
    return (a == b and len(nums_a) == len(nums_b)
            and all(_same_number(x, y) for x, y in zip(nums_a, nums_b, strict=True)))


def normalize(text: str) -> str:
    """`text` with the run-to-run noise replaced (see the module docstring)."""
    for pattern, repl in _VOLATILE:
        text = pattern.sub(repl, text)
    return text


def cell_outputs(cell: nbformat.NotebookNode) -> list[str]:
    """One code cell's outputs as the normalised texts that are compared."""
    out: list[str] = []
    streams: dict[str, str] = {}
    for o in cell.get("outputs", []):
        kind = o.get("output_type")
        if kind == "stream":
            streams[o["name"]] = streams.get(o["name"], "") + o["text"]
        elif kind == "error":
            out.append(f"{o['ename']}: {o['evalue']}")
        else:
            data = o.get("data", {})
            if WIDGET_VIEW in data:
                out.append("<widget>")
            elif "image/png" in data:
                out.append("<image/png>")
            elif "text/latex" in data:
                out.append(data["text/latex"])
            elif "text/plain" in data:
                out.append(data["text/plain"])
    out[:0] = [f"[{name}] {text}" for name, text in sorted(streams.items())]
    return [normalize(t) for t in out]


#: The docs build's notebook cache this session may reuse (`share_docs_cache`); None: execute.
_docs_cache: Path | None = None


def share_docs_cache(cache: Path | None) -> None:
    """Let `executed` reuse the notebooks that the documentation build executed into `cache`
    (docs/notebook_pages.py `build`; None: execute every notebook here). Only a cache filled
    by this session should be shared: its entries were made from today's sources by the torch
    and kernel of this run, and an entry is taken only while its stamp is still today's."""
    global _docs_cache
    _docs_cache = cache


@functools.cache
def notebook_pages():
    """docs/notebook_pages.py, loaded once (docs/ is not a package): its `source_stamp` is the
    key of a cache entry, its `executed_entry` where the entry is."""
    spec = importlib.util.spec_from_file_location("agw_notebook_pages",
                                                  ROOT / "docs" / "notebook_pages.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def from_docs_cache(name: str, cache: Path) -> tuple[nbformat.NotebookNode, Path] | None:
    """`notebooks/<name>` as the docs build executed it into `cache`, with a copy of its
    scratch folder (kept until the process exits), or None when `cache` has no entry for it or
    the entry's stamp is not the notebook's `source_stamp` today."""
    pages = notebook_pages()
    stem = Path(name).stem
    stamp = cache / "notebooks" / f".{stem}.stamp"
    entry = pages.executed_entry(cache, stem)
    if not (stamp.is_file() and (entry / "notebook.ipynb").is_file()
            and (entry / "scratch").is_dir()):
        return None
    if stamp.read_text() != pages.source_stamp(NOTEBOOKS / name):
        return None
    nb = nbformat.read(entry / "notebook.ipynb", as_version=4)
    scratch = Path(tempfile.mkdtemp(prefix="agw-nb-"))
    atexit.register(shutil.rmtree, scratch, True)
    shutil.copytree(entry / "scratch", scratch, dirs_exist_ok=True)
    return nb, scratch


def _torch_version() -> str:
    import torch

    return torch.__version__


@functools.cache
def executed(name: str) -> tuple[nbformat.NotebookNode, Path]:
    """`notebooks/<name>` executed once per process in a fresh kernel, in a scratch folder (kept
    until the process exits: the files a notebook writes can be checked there); the committed
    outputs are replaced by the new ones. Raises nbclient's CellExecutionError if a cell fails.

    When this session's docs build already executed it (`share_docs_cache`, stamp still
    today's), that run is taken: its kernel was fresh too (one per notebook), and it ran in a
    scratch folder whose files are copied to a new one here."""
    cached = from_docs_cache(name, _docs_cache) if _docs_cache is not None else None
    if cached is not None:
        nb, scratch = cached
        nb.metadata["autograd_widget"] = {"torch": _torch_version()}
        return nb, scratch
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    scratch = Path(tempfile.mkdtemp(prefix="agw-nb-"))
    atexit.register(shutil.rmtree, scratch, True)
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env_path) if p)
    try:
        NotebookClient(nb, timeout=600, kernel_name="python3", record_timing=False,
                       resources={"metadata": {"path": str(scratch)}}).execute()
    finally:
        os.environ["PYTHONPATH"] = env_path
        if not env_path:
            del os.environ["PYTHONPATH"]
    nb.metadata["autograd_widget"] = {"torch": _torch_version()}
    return nb, scratch


def execute(name: str) -> nbformat.NotebookNode:
    """The notebook executed once per test session (`executed`, shared by the notebook tests)."""
    return executed(name)[0]


def text_of(nb: nbformat.NotebookNode) -> str:
    """Every stream and plain-text output of `nb`, in order, as one string."""
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            if o.get("output_type") == "stream":
                out.append(o["text"])
            elif "data" in o and "text/plain" in o["data"]:
                out.append(o["data"]["text/plain"])
    return "\n".join(out)


def differences(name: str) -> list[str]:
    """Where the committed `notebooks/<name>` differs from a fresh execution ([] when up to
    date): one line per stale cell, with the first differing output."""
    committed = nbformat.read(NOTEBOOKS / name, as_version=4)
    fresh, _ = executed(name)
    out = []
    code = [(i, c) for i, c in enumerate(committed.cells) if c.cell_type == "code"]
    new = [c for c in fresh.cells if c.cell_type == "code"]
    for (i, old), cell in zip(code, new, strict=True):
        have, want = cell_outputs(old), cell_outputs(cell)
        if len(have) != len(want) or not all(map(same_text, have, want)):
            first = next((a, b) for a, b in zip(have + [""] * len(want), want + [""] * len(have))
                         if not same_text(a, b))
            out.append(f"{name} cell {i}: committed {first[0][:120]!r}, today {first[1][:120]!r}")
    return out


def write(name: str) -> Path:
    """Execute `notebooks/<name>` and write it back with its outputs (and the widgets' state,
    as nbclient stores it); return its path."""
    nb, _ = executed(name)
    nb = copy.deepcopy(nb)
    path = NOTEBOOKS / name
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def _main(argv: list[str]) -> int:
    check = "--check" in argv
    names = [a for a in argv if not a.startswith("--")]
    names = names or sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    stale = []
    for name in names:
        if check:
            stale += differences(name)
        else:
            print("wrote", write(name).relative_to(ROOT))
    for line in stale:
        print(line)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
