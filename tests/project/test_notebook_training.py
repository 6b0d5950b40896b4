"""notebooks/07_training_over_time.ipynb runs top to bottom (nbclient, a real kernel) and shows
what it claims: a learning-rate spike blows the run up, the watch names the first non-finite step
(after the spike, where the loss turns NaN) and the node where the NaN was born with its cause,
the file appended during training reads back the same, and the timeline widget opens on that
step."""

from __future__ import annotations

import re

import pytest

from tests.helpers.notebook_outputs import execute, text_of


@pytest.mark.slow
def test_training_over_time_finds_when_and_where():
    nb = execute("07_training_over_time.ipynb")
    text = text_of(nb)
    step = int(re.search(r"first non-finite step: (\d+)", text).group(1))
    assert 152 < step < 175  # after the spike (steps 150-152), within the run
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
