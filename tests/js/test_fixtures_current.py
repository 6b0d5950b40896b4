"""The JS unit tests' fixtures (js/tests/fixtures/*.json) are what Python sends today.

`tests/js/js_fixtures.py` writes them from real widgets; this test runs it again into a temporary
folder and fails when a committed file differs (or one is missing or left over), so a protocol
change cannot leave the front-end's tests reading a format Python no longer sends. Numbers are
compared to 1e-5 relative (or 1e-8 absolute; float32 arrays inside `$base64` blobs too): the models'
forward math differs in the last bits between CPUs (MKL picks kernels by instruction set), the
format does not. Fix: `python tests/js/js_fixtures.py`, then commit. The generator runs in a fresh
interpreter, as it does from the command line: the replies hold autograd's `sequence_nr`, a
per-process counter.
"""

from __future__ import annotations

import base64
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.torch_versions import needs_torch

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "js" / "tests" / "fixtures"

pytestmark = pytest.mark.skipif(
    not (ROOT / "autograd_widget" / "static" / "widget.js").exists(),
    reason="the z fixture embeds a save_html walkthrough, which needs the built bundle",
)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("js_fixtures")
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    subprocess.run([sys.executable, str(ROOT / "tests" / "js" / "js_fixtures.py"), str(out)],
                   check=True, cwd=ROOT, env=env, capture_output=True, timeout=300)
    return out


def _close(a: float, b: float) -> bool:
    """Floats from float32 math: 1e-5 relative, or 1e-8 absolute (a mean that cancels to ~0)."""
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-8)


def _blob_close(a: str, b: str) -> bool:
    """Two `$base64` arrays: equal bytes, or float32 values within 1e-5 relative (no absolute
    slack: an int array read as float32 gives denormals, whose relative change stays large)."""
    x, y = base64.b64decode(a), base64.b64decode(b)
    if x == y:
        return True
    if len(x) != len(y) or len(x) % 4:
        return False
    import numpy as np

    u, v = np.frombuffer(x, np.float32), np.frombuffer(y, np.float32)
    both_nan = np.isnan(u) & np.isnan(v)
    with np.errstate(invalid="ignore"):
        ok = both_nan | (u == v) | (np.abs(u - v) <= 1e-5 * np.maximum(np.abs(u), np.abs(v)))
    return bool(ok.all())


def _same(a: object, b: object) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return False
        if set(a) == {"$base64"}:
            return _blob_close(a["$base64"], b["$base64"])
        return all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return _close(a, b)
    return a == b


@needs_torch(
    "2.13",
    "the fixtures are snapshots of what the pinned torch's CPU kernels send; an older torch "
    "words its errors differently",
)
def test_committed_js_fixtures_are_what_python_sends_today(generated: Path):
    want = {p.name: json.loads(p.read_text(encoding="utf-8")) for p in generated.glob("*.json")}
    have = {p.name: json.loads(p.read_text(encoding="utf-8")) for p in FIXTURES.glob("*.json")}
    assert want, "the generator wrote nothing"
    stale = sorted(name for name in want if name not in have or not _same(have[name], want[name]))
    extra = sorted(set(have) - set(want))
    assert not stale and not extra, (
        f"js/tests/fixtures is out of date (stale or missing: {stale}, not generated: {extra}): "
        "run `python tests/js/js_fixtures.py` and commit the result"
    )


def test_fixtures_hold_only_strict_json(generated: Path):
    """No NaN/Infinity token: Python sends non-finite numbers as "nan", "inf", "-inf"."""

    def no_constants(token: str) -> None:
        pytest.fail(f"a fixture holds the JSON token {token}: Python must send it as a string")

    for path in generated.glob("*.json"):
        json.loads(path.read_text(encoding="utf-8"), parse_constant=no_constants)
