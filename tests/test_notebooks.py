"""The notebooks run top to bottom (nbclient, a real kernel) and show what they claim."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

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
def test_tour_runs_and_shows_the_graph():
    nb = execute("01_tour.ipynb")
    text = text_of(nb)
    assert "<BackwardGraph 4 nodes, 3 edges, 1 root(s), 2 leaves, live>" in text
    assert "edge n0:1: AddBackward0 -> AccumulateGrad (slot 0)" in text
    assert "AddmmBackward0" in text and "4.weight" in text
    assert "(outside the model)" in text
    images = [
        o for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})
    ]
    assert len(images) == 1, "the networkx drawing is shown"
    assert "grad norm of the first weight:" in text
