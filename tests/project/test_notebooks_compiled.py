"""notebooks/08_compiled.ipynb (issue 32) runs top to bottom and shows what it claims: a compiled
region's ops, stepping into them, the engine's leaf gradients, inductor's ulps, a NaN born inside,
donated buffers explained, a recorded region."""

from __future__ import annotations

import re

import pytest

from tests.helpers.notebook_outputs import execute, text_of

# Regions that open (conftest.py `open_regions`): an older torch keeps them opaque.
pytestmark = pytest.mark.usefixtures("open_regions")


@pytest.mark.slow
def test_compiled_notebook_opens_a_region_and_steps_inside():
    nb = execute("08_compiled.ipynb")
    text = text_of(nb)
    assert "['MeanBackward0', 'PowBackward0', 'CompiledFunctionBackward']" in text
    assert re.search(r"n2: \d+ aten ops, available: True", text)
    assert "saved: ['primals_" in text and "gradients in: ['tangents_1']" in text
    assert re.search(r"folded: \['compiled region 1 · \d+ aten ops'\]", text)
    assert re.search(r"ran aten::\S+ \(step 7 / \d+\)", text)
    assert "leaf gradients equal: True" in text
    assert "inner edges summarised: True" in text and "compare_with_engine: []" in text
    assert "inductor, leaf gradients equal: True" in text and "within tolerance: True" in text
    assert "largest |ops - kernels| below 1e-6: True" in text  # a bound: the value is the CPU's
    assert re.search(r"first NaN/Inf on n\d+/\d+:\d+>n\d+/\d+:\d+ \| born in n\d+/\d+ aten::", text)
    assert "failed at CompiledFunctionBackward | donated" in text
    assert "donated_buffer = False" in text
    assert "region available: False" in text and "aw.record keeps a compiled region" in text
