"""A missing extra is a clear ImportError naming its pip command (`pip install transformers
accelerate`, `pip install lightning`, `pip install tensorboard`), and `import autograd_widget`
never imports an integration.
Run in a fresh interpreter in which the extras' packages are made unimportable."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import sys
for name in ("transformers", "lightning", "lightning.pytorch", "pytorch_lightning",
             "torch.utils.tensorboard", "tensorboard"):
    sys.modules[name] = None  # `import name` now raises ImportError
import autograd_widget
assert not [m for m in sys.modules if m.startswith("autograd_widget.integrations.")], "imported"
for module in ("hf", "lightning", "tensorboard"):
    try:
        __import__(f"autograd_widget.integrations.{module}")
    except ImportError as e:
        print(module, "->", e)
    else:
        print(module, "-> imported")
"""


def test_a_missing_extra_names_its_pip_command():
    run = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr
    lines = dict(line.split(" -> ", 1) for line in run.stdout.strip().splitlines())
    assert "pip install transformers accelerate" in lines["hf"]
    assert "pip install lightning" in lines["lightning"]
    assert "pip install tensorboard" in lines["tensorboard"]
