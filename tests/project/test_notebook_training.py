"""notebooks/07_training_over_time.ipynb runs top to bottom (nbclient, a real kernel) and shows
what it claims: a broken learning-rate schedule (20 at step 150, inf at 151) blows the run up, the
watch names the first non-finite step (152, where the loss turns NaN: fixed by the program, since
the update at rate inf makes the weights infinite, whatever the CPU's rounding) and the node where
the NaN was born with its cause, the file appended during training reads back the same, and the
timeline widget opens on that step; and a NaN made in the forward (a log of a negative in the
activation of `h.1.mlp`) is named by its forward op and module, not by the loss where the
gradient first went non-finite."""

from __future__ import annotations

import json
import re

import pytest

from tests.helpers.notebook_outputs import NOTEBOOKS, ROOT, execute, text_of


@pytest.mark.slow
def test_training_over_time_finds_when_and_where():
    nb = execute("07_training_over_time.ipynb")
    text = text_of(nb)
    step = int(re.search(r"first non-finite step: (\d+)", text).group(1))
    assert step == 152  # the first forward after the update at rate inf (step 151)
    assert "step 150: loss 0.01517  <- lr 20" in text
    assert re.search(r"step 151: loss [0-9.]+  <- lr inf", text)  # a jump, still finite
    assert f"step {step}: loss nan" in text and f"step {step - 1}: loss nan" not in text
    assert "born at: LogSoftmaxBackward0" in text
    assert "a softmax over a row holding +Inf" in text and "is NaN in the forward" in text
    assert re.search(r"non-finite steps: \[" + str(step), text)
    assert "born       LogSoftmaxBackward0" in text and "propagated" in text
    assert f"showing step {step}" in text
    assert "same first non-finite step: True" in text and "same norms: True" in text
    assert "loss at steps 0, 50, 100, 149: [2.5" in text  # it learned before the spike
    grew = re.search(r"grew the most after the spike: (.*)", text).group(1)
    assert all(float(f) > 10 for f in re.findall(r"'x([0-9.e+]+)'", grew)), grew
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    widgets = [m["state"] for m in state.values() if m["model_name"] == "AnyModel"]
    assert [w["watch_step"] for w in widgets] == [step]
    assert widgets[0]["_timeline"]["format"] == "autograd_widget.timeline/1"


@pytest.mark.slow
def test_a_nan_made_in_the_forward_is_named_by_its_op_and_module():
    text = text_of(execute("07_training_over_time.ipynb"))
    assert "first NaN/Inf at step 4" in text  # the step the bug was switched on
    assert "the gradient went non-finite at: LogSoftmaxBackward0" in text
    assert "where it was made: forward" in text
    assert re.search(r"made by: LogBackward0 \(n\d+\) in module h\.1\.mlp\.act", text)
    assert re.search(r"why: log of \d+ negative inputs \(NaN\)", text)

def test_the_docs_page_names_the_step_and_node_the_notebook_shows():
    """docs/watch.md tells the notebook's story with its numbers: the committed outputs' first
    non-finite step and birth node (the notebook makes both exact: see its schedule)."""
    nb = json.loads((NOTEBOOKS / "07_training_over_time.ipynb").read_text(encoding="utf-8"))
    text = "".join(o.get("text", "") for c in nb["cells"] for o in c.get("outputs", []))
    step = re.search(r"first non-finite step: (\d+)", text).group(1)
    node = re.search(r"born at: (\w+)", text).group(1)
    page = " ".join((ROOT / "docs" / "watch.md").read_text(encoding="utf-8").split())
    assert f"the step where it broke ({step}," in page, step
    assert f"where the NaN was born (`{node}`)" in page, node
