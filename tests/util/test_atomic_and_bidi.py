"""util/atomic.py (a file is complete or untouched) and util/bidi.py (a user's string cannot
reorder the text around it)."""

from __future__ import annotations

import os
import stat
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autograd_widget.util.atomic import atomic_write, write_bytes, write_text
from autograd_widget.util.bidi import FSI, PDI, isolate

# ----------------------------------------------------------------------------- atomic writes


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    p = tmp_path / "page.html"
    p.write_text("good page")
    for boom in (RuntimeError("disk full"), KeyboardInterrupt()):
        with pytest.raises(type(boom)):
            with atomic_write(p) as f:
                f.write(b"half a page")
                raise boom
        assert p.read_text() == "good page"
        assert sorted(q.name for q in tmp_path.iterdir()) == ["page.html"]
    with pytest.raises(UnicodeEncodeError):
        write_text(p, "title \udcff")  # what undecodable command-line bytes become
    assert p.read_text() == "good page"
    assert sorted(q.name for q in tmp_path.iterdir()) == ["page.html"]


def test_a_new_file_gets_the_umask_mode_and_a_replaced_file_keeps_its_mode(tmp_path):
    old = os.umask(0o022)
    try:
        new = write_bytes(tmp_path / "new.bin", b"x")
        assert stat.S_IMODE(new.stat().st_mode) == 0o644  # as open(path, "w") would
        kept = tmp_path / "kept.bin"
        kept.write_bytes(b"old")
        os.chmod(kept, 0o600)
        write_bytes(kept, b"new")
        assert kept.read_bytes() == b"new" and stat.S_IMODE(kept.stat().st_mode) == 0o600
    finally:
        os.umask(old)


def test_the_rename_replaces_in_one_step(tmp_path):
    """Until the block ends the target still holds the old content (a reader never sees half)."""
    p = tmp_path / "r.awrec"
    p.write_bytes(b"old")
    with atomic_write(p) as f:
        f.write(b"new content")
        assert p.read_bytes() == b"old"
        (tmp,) = [q for q in tmp_path.iterdir() if q.name != "r.awrec"]
        assert tmp.name.startswith(".r.awrec.") and tmp.name.endswith(".tmp")
    assert p.read_bytes() == b"new content"


# ----------------------------------------------------------------------------- bidi isolation
_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def _balanced_and_closed(s: str) -> bool:
    """Per the Unicode bidi algorithm's matching: every opener in `s` is closed inside `s`
    and no closer reaches outside it."""
    stack: list[str] = []
    for c in s:
        if c in "\u202a\u202b\u202d\u202e":
            stack.append("E")
        elif c in "\u2066\u2067\u2068":
            stack.append("I")
        elif c == "\u202c":
            if not stack or stack[-1] != "E":
                return False
            stack.pop()
        elif c == "\u2069":
            if "I" not in stack:
                return False
            while stack.pop() != "I":
                pass
    return not stack


def test_plain_names_are_unchanged():
    for s in ("fc1.weight", "AccumulateGrad", "layers.0–5 ×6", "x² + y", "", "日本語"):
        assert isolate(s) == s


def test_an_override_is_closed_inside_the_isolate():
    out = isolate("evil\u202etxt.exe")
    assert out == FSI + "evil\u202etxt.exe\u202c" + PDI
    assert isolate(out) == out  # isolating twice adds nothing
    assert isolate("\u05e9\u05dc\u05d5\u05dd") == FSI + "\u05e9\u05dc\u05d5\u05dd" + PDI  # RTL


@given(st.text(alphabet=st.sampled_from(list(_CONTROLS) + list("ab\u05d0 ")), max_size=30))
def test_any_string_of_controls_comes_out_balanced(s):
    out = isolate(s)
    if out == s:  # plain text, or a string already isolated (FSI ... PDI, balanced)
        already = s.startswith(FSI) and s.endswith(PDI) and _balanced_and_closed(s)
        assert already or not any(c in _CONTROLS or unicodedata.bidirectional(c) == "R" for c in s)
    else:
        assert out.startswith(FSI) and out.endswith(PDI) and _balanced_and_closed(out)
        # nothing but controls is added or dropped
        assert [c for c in out if c not in _CONTROLS] == [c for c in s if c not in _CONTROLS]
