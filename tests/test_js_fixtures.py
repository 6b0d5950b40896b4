"""The JS unit tests' fixtures (js/tests/fixtures/*.json) are what Python sends today.

`tests/js_fixtures.py` writes them from real widgets; this test builds them again and fails when
a committed file differs (or one is missing or left over), so a protocol change cannot leave the
front-end's tests reading a format Python no longer sends. Fix: `python tests/js_fixtures.py`.
"""

from __future__ import annotations

import json

import js_fixtures
import pytest

pytestmark = pytest.mark.skipif(
    not (js_fixtures.ROOT / "autograd_widget" / "static" / "widget.js").exists(),
    reason="the z fixture embeds a save_html recording, which needs the built bundle",
)


def test_committed_js_fixtures_are_what_python_sends_today():
    want = js_fixtures.fixture_texts()
    have = {p.name: p.read_text(encoding="utf-8") for p in js_fixtures.FIXTURES.glob("*.json")}
    stale = sorted(name for name in want if have.get(name) != want[name])
    extra = sorted(set(have) - set(want))
    assert not stale and not extra, (
        f"js/tests/fixtures is out of date (stale or missing: {stale}, not generated: {extra}): "
        "run `python tests/js_fixtures.py` and commit the result"
    )


def test_fixtures_hold_only_the_json_python_sends(tmp_path):
    """Written to a temporary folder the same way: strict JSON (no NaN/Infinity token)."""

    def no_constants(token: str) -> None:
        pytest.fail(f"a fixture holds the JSON token {token}: Python must send it as a string")

    names = js_fixtures.write_fixtures(tmp_path)
    assert sorted(names) == sorted(p.name for p in tmp_path.iterdir())
    for name in names:
        json.loads((tmp_path / name).read_text(encoding="utf-8"), parse_constant=no_constants)
