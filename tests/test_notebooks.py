"""The notebooks run top to bottom (nbclient, a real kernel) and show what they claim."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from torch_versions import WHY_CULPRIT, needs_torch

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def execute(name: str) -> nbformat.NotebookNode:
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    ).execute()
    return nb


def text_of(nb: nbformat.NotebookNode) -> str:
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            if o.get("output_type") == "stream":
                out.append(o["text"])
            elif "data" in o and "text/plain" in o["data"]:
                out.append(o["data"]["text/plain"])
    return "\n".join(out)


def test_notebooks_are_stored_without_outputs():
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [], f"{path.name}: strip outputs before committing"
                assert cell["execution_count"] is None


@pytest.mark.slow
def test_tour_runs_and_shows_the_graph(tmp_path):
    import shutil

    shutil.copy(NOTEBOOKS / "01_tour.ipynb", tmp_path / "01_tour.ipynb")
    nb = nbformat.read(tmp_path / "01_tour.ipynb", as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    text = text_of(nb)
    assert "['AddBackward0', 'AccumulateGrad', 'PowBackward0', 'AccumulateGrad']" in text
    assert "dz/dx = 4.0 | dz/dy = 1.0" in text
    assert "edge n1:0: PowBackward0 -> AccumulateGrad: [4.0]" in text
    assert "folded modules: ['0', '1', '2', '3', '4']" in text
    assert "AddmmBackward0" in text and "4.weight" in text
    assert "(outside the model)" in text
    assert "mat1  [16, 8] float32 512 B" in text
    assert "wrote tour_mlp.html" in text and (tmp_path / "tour_mlp.html").exists()
    assert "x.grad = 4.0" in text
    # The widgets were created with their state: the saved notebook carries it.
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    widgets = [m for m in state.values() if m["model_name"] == "AnyModel"]
    assert len(widgets) == 2


@needs_torch("2.10", WHY_CULPRIT)
@pytest.mark.slow
def test_debugging_a_real_run_finds_the_birth_the_failure_and_the_rank():
    nb = execute("06_debugging_a_real_run.ipynb")
    text = text_of(nb)
    assert "NaN in 0.weight.grad: True" in text
    assert "born in: SqrtBackward0 -> saved `result` has 1 zero" in text
    assert "the step just taken: SqrtBackward0" in text
    assert "backward raised: CheckedLog: 2 inputs are not positive" in text
    assert "failing node: CheckedLogBackward" in text
    assert "the in-place op is n1 (MulBackward0)" in text
    assert "rank 1: loss nan" in text and "rank 0: loss 0.6084" in text
    assert ("rank 1, born in MseLossBackward0 -> saved `self` has 1 NaN: produced in the forward"
            in text)
    assert r"\mathrm{mat2}^{\top}" in text
    assert "grad of mat1  [16\\times 4]\\cdot[4\\times 8] \\to [16\\times 8]" in text
    assert "wrote rank1.html" in text
    widgets = [o for c in nb.cells for o in c.get("outputs", [])
               if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert len(widgets) >= 3  # the NaN run, the failing run, the two ranks side by side
