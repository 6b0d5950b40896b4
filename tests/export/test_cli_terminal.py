"""The command line prints nothing a terminal would act on, and a strict stdout cannot crash it
(issue 38 part 6): file names and manifest keys with escape codes, other control characters and
bidirectional overrides are printed escaped (`\\x1b`, `\\u202e`); a page written under an
ASCII-only strict stdout is reported with its name escaped, exit status 0, no traceback."""

from __future__ import annotations

import doctest
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

import autograd_widget as aw
import autograd_widget.__main__ as cli
from autograd_widget.__main__ import main

ROOT = Path(__file__).resolve().parents[2]
#: Every character that must never reach a terminal raw: ESC (colours, clearing the screen, OSC
#: titles), BEL, CR, DEL, a C1 CSI, the bidirectional overrides and isolates, a line separator.
RAW = ["\x1b", "\x07", "\r", "\x7f", "\x9b", "\u202e", "\u2066", "\u200f", "\u2028"]


def _recording(path: Path) -> Path:
    w = torch.randn(3, requires_grad=True)
    loss = (w * 2).sum()
    with aw.record(loss) as rec:
        loss.backward()
    return rec.save(path)


def _clean(text: str) -> None:
    for c in RAW:
        assert c not in text, (ascii(c), ascii(text))


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "autograd_widget", *args], capture_output=True, timeout=300,
        cwd=ROOT, env={**os.environ, **(env or {})},
    )  # fmt: skip


def test_the_helpers_doctests_run():  # pytest collects no doctest from a __main__.py
    assert doctest.testmod(cli).failed == 0


def test_terminal_text_escapes_every_control_and_keeps_plain_text():
    hostile = "a" + "".join(RAW) + "\ud800" + "b"
    out = cli.terminal_text(hostile)
    _clean(out)
    assert "\ud800" not in out and out.startswith("a\\x1b\\x07\\x0d\\x7f\\x9b\\u202e")
    for plain in ("run_0.awrec", "café/模型 1.html", "a b"):
        assert cli.terminal_text(plain) == plain


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="control characters in names")
def test_a_file_name_and_a_manifest_key_are_printed_escaped(tmp_path, capsys):
    good = _recording(tmp_path / "ok.awrec")
    # a manifest key with escape codes, echoed by the reader's error
    manifest = json.loads(zipfile.ZipFile(good).read("manifest.json"))
    manifest["recording"]["meta"]["\x1b[2J\x1b]0;owned\x07key\u202e"] = [1]
    bad = tmp_path / "bad\x1b[31m\u202e.awrec"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("manifest.json", json.dumps(manifest))
    assert main([str(bad), "--html", str(tmp_path / "out.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert "bad\\x1b[31m\\u202e.awrec" in err and "\\x1b[2J\\x1b]0;owned\\x07key\\u202e" in err
    _clean(err)
    # the page's own name, on stdout
    out = tmp_path / "page\x1b[2K\r\u2066.html"
    assert main([str(good), "--html", str(out)]) == 0
    said = capsys.readouterr().out
    assert out.exists() and "page\\x1b[2K\\x0d\\u2066.html" in said
    _clean(said)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bytes in names: POSIX")
def test_a_strict_ascii_stdout_cannot_crash_the_cli_after_the_page_is_written(tmp_path):
    good = _recording(tmp_path / "ok.awrec")
    out = tmp_path / "café\x1b.html"
    r = _run(str(good), "--html", str(out), env={"PYTHONIOENCODING": "ascii:strict"})
    assert r.returncode == 0, r.stderr.decode("ascii", "replace")[-2000:]
    assert r.stderr == b""  # no traceback
    assert out.exists() and out.read_text(encoding="utf-8").startswith("<!doctype html>")
    said = r.stdout.decode("ascii")  # all of it ASCII, nothing raw
    assert said.startswith("wrote ") and "caf\\xe9\\x1b.html" in said and said.count("\n") == 1
    # and an error under the same strict stdout: one escaped line, exit status 2
    r = _run(str(tmp_path / "nowhere\x1b]0;x\x07.awrec"), "--html", str(out),
             env={"PYTHONIOENCODING": "ascii:strict"})
    assert r.returncode == 2
    err = r.stderr.decode("ascii")
    assert err.startswith("error: ") and err.count("\n") == 1 and "\\x1b]0;x\\x07" in err
    assert "Traceback" not in err


def test_say_reports_a_broken_stream_instead_of_raising():
    class Broken:
        encoding = "utf-8"

        def write(self, text: str) -> int:
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self) -> None:
            pass

    assert cli.say("wrote x.html", Broken()) is False  # type: ignore[arg-type]
