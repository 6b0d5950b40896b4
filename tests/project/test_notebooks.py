"""The notebooks run top to bottom (nbclient, a real kernel) and show what they claim; they are
committed with their outputs, and those outputs are what they print today
(tests/notebook_outputs.py says what "up to date" means)."""

from __future__ import annotations

import json

import pytest
import torch

from tests.helpers.notebook_outputs import (
    NOTEBOOKS,
    differences,
    execute,
    executed,
    same_text,
    text_of,
)
from tests.helpers.torch_versions import WHY_CULPRIT, needs_torch

NAMES = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))


@pytest.mark.parametrize("committed, fresh", [
    ("loss at steps 0, 50: [2.598, 2.427]", "loss at steps 0, 50: [2.598, 2.427]"),
    ("step 149: loss 0.01889", "step 149: loss 0.0189"),  # the last digit, another CPU
    ("step 151: loss 86.44", "step 151: loss 86.45"),
    ("tensor(0.60840005)", "tensor(0.60840011)"),  # many digits: within 1e-4
    ("153  1.16e+04  5.39e+03", "153  1.17e+04  5.39e+03"),
    ("grew: [('embed', 'x3.4e+05')]", "grew: [('embed', 'x3.5e+05')]"),
    ("-0.000 and 0.000", "0.000 and -0.000"),
])
def test_outputs_compare_equal_when_only_the_last_digits_moved(committed, fresh):
    assert same_text(committed, fresh)


@pytest.mark.parametrize("committed, fresh", [
    ("step 149: loss 0.01889", "step 149: loss 0.01912"),  # a real change in a number
    ("step 151: loss 86.44", "step 151: loss 86.47"),
    ("1.16e+04", "1.16e+05"),
    ("first non-finite step: 157", "first non-finite step: 158"),  # integers: exactly
    ("18 non-finite", "19 non-finite"),
    ("torch 2.13.0+cpu", "torch 2.14.0+cpu"),  # a version is text, not a number
    ("encoder.layers.0.self_attn", "encoder.layers.1.self_attn"),
    ("step 157: loss nan", "step 157: loss 1.0"),
    ("born at: LogSoftmaxBackward0", "born at: SoftmaxBackward0"),  # text: exactly
    ("[2.598, 2.427]", "[2.598, 2.427, 2.1]"),
    ("loss 2.598\n", "loss 2.598"),
])
def test_outputs_compare_different_on_a_real_change(committed, fresh):
    assert not same_text(committed, fresh)


@pytest.mark.parametrize("name", NAMES)
def test_notebooks_are_stored_with_their_outputs_in_order(name):
    nb = json.loads((NOTEBOOKS / name).read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert [c["execution_count"] for c in code] == list(range(1, len(code) + 1)), (
        f"{name}: run it top to bottom before committing (make notebooks)")
    assert sum(bool(c["outputs"]) for c in code) >= len(code) // 2, f"{name}: outputs stripped?"
    assert nb["metadata"]["autograd_widget"]["torch"], "the torch the outputs were made with"
    for cell in code:
        assert "execution" not in cell["metadata"], "no per-cell timestamps (make notebooks)"


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_committed_outputs_are_up_to_date(name):
    made_with = json.loads((NOTEBOOKS / name).read_text())["metadata"]["autograd_widget"]["torch"]
    if made_with != torch.__version__:
        pytest.skip(f"{name}'s outputs were made with torch {made_with}, this is "
                    f"{torch.__version__}: printed values may differ in the last digit")
    stale = differences(name)
    assert not stale, "\n".join(["stale outputs (run `make notebooks`):", *stale])


@pytest.mark.slow
def test_tour_runs_and_shows_the_graph():
    nb, folder = executed("01_tour.ipynb")
    text = text_of(nb)
    assert "['AddBackward0', 'AccumulateGrad', 'PowBackward0', 'AccumulateGrad']" in text
    assert "dz/dx = 4.0 | dz/dy = 1.0" in text
    assert "edge n1:0: PowBackward0 -> AccumulateGrad: [4.0]" in text
    assert "folded modules: ['0', '1', '2', '3', '4']" in text
    assert "AddmmBackward0" in text and "4.weight" in text
    assert "(outside the model)" in text
    assert "mat1  [16, 8] float32 512 B" in text
    assert "wrote tour_mlp.html" in text and (folder / "tour_mlp.html").exists()
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
    assert ("rank 1, born in MseLossBackward0 -> saved `self` has 1 NaN (the output of "
            "AddmmBackward0's forward)" in text)
    assert "grad of mat1  [16\\times 4]\\cdot[4\\times 8] \\to [16\\times 8]" in text
    # graph.formula(...) displayed: typeset (text/latex), the formula with its shapes
    (latex,) = [o["data"]["text/latex"] for c in nb.cells for o in c.get("outputs", [])
                if "text/latex" in o.get("data", {})]
    assert latex.startswith("$$ \\begin{aligned}") and r"\mathrm{mat2}^{\top}" in latex
    assert r"[8\times 16]\cdot[16\times 4] \to [8\times 4]" in latex
    assert "wrote rank1.html" in text
    widgets = [o for c in nb.cells for o in c.get("outputs", [])
               if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert len(widgets) >= 3  # the NaN run, the failing run, the two ranks side by side
