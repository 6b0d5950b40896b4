"""The JS unit tests' fixtures (js/tests/fixtures/*.json) are what Python sends today.

`tests/js_fixtures.py` writes them from real widgets; this test runs it again into a temporary
folder and fails when a committed file differs (or one is missing or left over), so a protocol
change cannot leave the front-end's tests reading a format Python no longer sends. Fix:
`python tests/js_fixtures.py`, then commit. The generator runs in a fresh interpreter, as it does
from the command line: the replies hold autograd's `sequence_nr`, a per-process counter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from torch_versions import needs_torch

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "js" / "tests" / "fixtures"

pytestmark = pytest.mark.skipif(
    not (ROOT / "autograd_widget" / "static" / "widget.js").exists(),
    reason="the z fixture embeds a save_html recording, which needs the built bundle",
)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("js_fixtures")
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    subprocess.run([sys.executable, str(ROOT / "tests" / "js_fixtures.py"), str(out)],
                   check=True, cwd=ROOT, env=env, capture_output=True, timeout=300)
    return out


@needs_torch(
    "2.13",
    "the fixtures are byte-exact snapshots of what the pinned torch's CPU kernels send; an "
    "older torch rounds some last bits differently and words its errors differently",
)
def test_committed_js_fixtures_are_what_python_sends_today(generated: Path):
    want = {p.name: p.read_text(encoding="utf-8") for p in generated.glob("*.json")}
    have = {p.name: p.read_text(encoding="utf-8") for p in FIXTURES.glob("*.json")}
    assert want, "the generator wrote nothing"
    stale = sorted(name for name in want if have.get(name) != want[name])
    extra = sorted(set(have) - set(want))
    assert not stale and not extra, (
        f"js/tests/fixtures is out of date (stale or missing: {stale}, not generated: {extra}): "
        "run `python tests/js_fixtures.py` and commit the result"
    )


def test_fixtures_hold_only_strict_json(generated: Path):
    """No NaN/Infinity token: Python sends non-finite numbers as "nan", "inf", "-inf"."""

    def no_constants(token: str) -> None:
        pytest.fail(f"a fixture holds the JSON token {token}: Python must send it as a string")

    for path in generated.glob("*.json"):
        json.loads(path.read_text(encoding="utf-8"), parse_constant=no_constants)
