"""Each notebook is executed once per test session: the notebook tests
(tests/helpers/notebook_outputs.py `executed`) reuse the run of the docs build
(docs/notebook_pages.py) when its stamp is today's, and execute the notebook themselves otherwise.

What makes the reuse sound is checked here on a small notebook of our own (a widget, printed
output, a file written): the docs build's kept notebook has the same cells, outputs and widget
state as a plain nbclient run (its hidden cells leave no trace), and its kept scratch folder has
the files the notebook wrote. The tests of the real notebooks then read whichever run they get.
"""

from __future__ import annotations

import json

import nbformat
import pytest
from nbclient import NotebookClient

from tests.helpers import notebook_outputs
from tests.helpers.notebook_outputs import NOTEBOOKS, ROOT, cell_outputs

pages = notebook_outputs.notebook_pages()

CELLS = [
    "import torch\nimport autograd_widget as aw\n"
    "x = torch.tensor(2.0, requires_grad=True)\n"
    "w = aw.explore(x**2 + x, params={'x': x})\nw",
    "w.stepper.step()\nprint('position', w.stepper.position)",
    "import pathlib\nprint(pathlib.Path('note.txt').write_text('written by the notebook'))",
]


def _notebook(path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nbformat.write(nb, path)
    return path


def _widget_states(nb) -> list[str]:
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    return sorted(json.dumps(m["state"].get("_state"), sort_keys=True) for m in state.values()
                  if m["state"].get("_anywidget_id") == "autograd_widget.widget.AutogradWidget")


@pytest.mark.slow
def test_the_docs_run_kept_for_the_tests_is_a_plain_run(tmp_path, monkeypatch):
    source = _notebook(tmp_path / "tiny.ipynb")
    out = tmp_path / "cache"
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pages.build_one(source, out, timeout=300)
    entry = pages.executed_entry(out, "tiny")
    kept = nbformat.read(entry / "notebook.ipynb", as_version=4)

    plain = nbformat.read(source, as_version=4)
    scratch = tmp_path / "plain"
    scratch.mkdir()
    NotebookClient(plain, timeout=300, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(scratch)}}).execute()

    assert [c.source for c in kept.cells] == CELLS  # no hidden cell left behind
    assert [cell_outputs(c) for c in kept.cells] == [cell_outputs(c) for c in plain.cells]
    assert "[stdout] position 1\n" in cell_outputs(kept.cells[1])
    assert "[stdout] 23\n" in cell_outputs(kept.cells[2])
    assert [c.execution_count for c in kept.cells] == [1, 2, 3]
    assert all("execution" not in c.metadata for c in kept.cells)
    assert _widget_states(kept) == _widget_states(plain) and len(_widget_states(kept)) == 1
    # the files the notebook wrote, not the helpers the docs build copies in from notebooks/
    assert (entry / "scratch" / "note.txt").read_text() == "written by the notebook"
    assert sorted(p.name for p in (entry / "scratch").iterdir()) == ["note.txt"]


def _fake_entry(cache, name, stamp):
    """A docs cache entry for notebooks/`name` whose outputs say where they come from."""
    stem = name.removesuffix(".ipynb")
    (cache / "notebooks").mkdir(parents=True, exist_ok=True)
    (cache / "notebooks" / f".{stem}.stamp").write_text(stamp)
    entry = pages.executed_entry(cache, stem)
    (entry / "scratch").mkdir(parents=True)
    (entry / "scratch" / "made.txt").write_text("by the docs build")
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="from the cache\n")]
    nbformat.write(nb, entry / "notebook.ipynb")


def test_executed_takes_the_docs_run_when_its_stamp_is_todays(tmp_path, monkeypatch):
    name = "01_tour.ipynb"
    _fake_entry(tmp_path, name, pages.source_stamp(NOTEBOOKS / name))
    monkeypatch.setattr(notebook_outputs, "_docs_cache", tmp_path)
    nb, scratch = notebook_outputs.executed.__wrapped__(name)  # not the session's cached run
    assert "from the cache" in notebook_outputs.text_of(nb)
    assert (scratch / "made.txt").read_text() == "by the docs build"
    assert scratch != pages.executed_entry(tmp_path, "01_tour") / "scratch"  # a copy
    assert nb.metadata["autograd_widget"]["torch"]


def test_a_stale_or_missing_entry_is_not_taken(tmp_path):
    name = "01_tour.ipynb"
    _fake_entry(tmp_path, name, "0" * 64)  # made from other sources
    assert notebook_outputs.from_docs_cache(name, tmp_path) is None
    assert notebook_outputs.from_docs_cache("02_step_through_backward.ipynb", tmp_path) is None
    (tmp_path / "notebooks" / ".01_tour.stamp").write_text(pages.source_stamp(NOTEBOOKS / name))
    assert notebook_outputs.from_docs_cache(name, tmp_path) is not None

