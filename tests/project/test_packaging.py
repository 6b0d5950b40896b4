"""The wheel ships the front-end bundle (it is gitignored and built from js/)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_wheel_contains_the_bundle(tmp_path):
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    (wheel,) = tmp_path.glob("autograd_widget-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "autograd_widget/static/widget.js" in names
    assert "autograd_widget/static/widget.css" in names
    assert "autograd_widget/static/loader.js" in names
    assert "autograd_widget/widget.py" in names
    assert "autograd_widget/engine/step/stepper.py" in names
    assert not any(n.startswith(("js/", "tests/")) for n in names)
    bundle = zipfile.ZipFile(wheel).read("autograd_widget/static/widget.js")
    assert bundle == (ROOT / "autograd_widget/static/widget.js").read_bytes()
