"""docs/compiled.md's remedies for donated buffers, tried as written on every case they name
(issue 40, part 7: the `retain_graph` remedy failed under dynamic=True, and
`torch._functorch.config` needs an import first).

- `torch._functorch.config.donated_buffer = False`, with the import the page writes, run as
  written in a fresh process (where `import torch` has not imported `torch._functorch.config`):
  a model trained with an ordinary `backward()` first stays steppable, static and dynamic shapes;
- a first `backward(retain_graph=True)`: steppable with static shapes; with dynamic shapes torch
  refuses that very backward, as the page says.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch._functorch.config

import autograd_widget as aw
from autograd_widget.util import compat

pytestmark = pytest.mark.usefixtures("open_regions")

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "compiled.md"


def _block(containing: str) -> str:
    """The page's Python block under "## Donated buffers" that contains `containing`."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Donated buffers"):]
    section = section[: section.index("\n## ", 4)]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    found = [b for b in blocks if containing in b]
    assert len(found) == 1, blocks
    return found[0]


SCRIPT = r"""
import json, sys, torch
import autograd_widget as aw
try:
    torch._functorch.config
    imported = True
except AttributeError:
    imported = False
exec(sys.argv[1])  # the page's block, as written
out = {"imported_before": imported}
for dynamic in (False, True):
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))
    cm = torch.compile(m, backend="aot_eager", dynamic=dynamic)
    cm(torch.randn(3, 4)).sum().backward()  # an ordinary training step first
    loss = cm(torch.randn(6, 4)).sum()
    g = aw.capture(loss, model=m)
    r = next(iter(g.regions.values()))
    ref = torch.autograd.grad(loss, list(m.parameters()), retain_graph=True)
    st = aw.Stepper(g)
    rec = st.run()
    out[str(dynamic)] = {"available": r.available, "error": rec.error,
                         "equal": all(torch.equal(st.grad(p), v)
                                      for p, v in zip(m.parameters(), ref))}
print("RESULT", json.dumps(out))
"""


def test_the_donated_buffer_setting_as_written_keeps_static_and_dynamic_regions_steppable():
    block = _block("donated_buffer = False")
    assert block.lstrip().startswith("import torch._functorch.config")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", SCRIPT, block], capture_output=True, text=True,
                       env=env, cwd=ROOT, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr[-4000:]
    out = json.loads(next(ln for ln in r.stdout.splitlines()
                          if ln.startswith("RESULT "))[len("RESULT "):])  # fmt: skip
    assert out["imported_before"] is False  # why the page writes the import
    for dynamic in ("False", "True"):
        assert out[dynamic] == {"available": True, "error": None, "equal": True}, (dynamic, out)


def _mlp_compiled(dynamic: bool):
    torch._dynamo.reset()
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))
    return m, torch.compile(m, backend="aot_eager", dynamic=dynamic)


def test_a_first_retain_graph_backward_keeps_a_static_region_steppable():
    assert compat.donated_buffer_config() is True  # torch's default: the case the page names
    m, cm = _mlp_compiled(False)
    try:
        cm(torch.randn(3, 4)).sum().backward(retain_graph=True)  # the page's first backward
        cm(torch.randn(3, 4)).sum().backward()  # then training as usual
        loss = cm(torch.randn(3, 4)).sum()
        g = aw.capture(loss, model=m)
        ref = torch.autograd.grad(loss, list(m.parameters()), retain_graph=True)
        st = aw.Stepper(g)
        assert st.run().error is None
        assert all(torch.equal(st.grad(p), v) for p, v in zip(m.parameters(), ref))
        g.close()
    finally:
        torch._dynamo.reset()


def test_a_first_retain_graph_backward_is_refused_under_dynamic_shapes():
    """What the page says of dynamic=True: the backward compiled, donating, with the forward,
    so torch refuses the very first `backward(retain_graph=True)`."""
    assert compat.donated_buffer_config() is True
    _m, cm = _mlp_compiled(True)
    try:
        with pytest.raises(RuntimeError, match=compat.DONATED_BUFFER_ERROR):
            cm(torch.randn(3, 4)).sum().backward(retain_graph=True)
        assert compat.DONATED_BUFFER_ERROR in DOC.read_text(encoding="utf-8")
    finally:
        torch._dynamo.reset()
