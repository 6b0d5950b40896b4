"""Pages and files written safely (issue 29): every file the package writes is complete or
untouched (a temporary file renamed), a name or title holding a right-to-left override is
isolated from the text around it, and the command line answers a hostile recording, a limit or
an undecodable title with one `error: ...` line and exit status 2, never a traceback."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

import autograd_widget as aw
from autograd_widget.__main__ import main
from autograd_widget.export import html as export
from autograd_widget.util import static
from autograd_widget.util.bidi import FSI, PDI, isolate
from autograd_widget.view.labels import node_title, short_label, status_line

ROOT = Path(__file__).parents[2]
RLO = "\u202e"


def z_widget():
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    return aw.explore(x**2 + y, params={"x": x, "y": y})


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# ----------------------------------------------------------------------------- atomic files
def test_a_title_that_cannot_be_encoded_leaves_the_good_page(tmp_path):
    w = z_widget()
    page = w.save_html(tmp_path / "run.html", title="good")
    good = page.read_bytes()
    with pytest.raises(ValueError, match=r"the page's title cannot be written as UTF-8: "
                                         r"character '\\udcff' at position 3 is a lone surrogate"):
        w.save_html(page, title="bad\udcff")
    assert page.read_bytes() == good and _files(tmp_path) == ["run.html"]
    w.close()


def test_a_page_that_fails_half_way_leaves_the_good_page(tmp_path, monkeypatch):
    w = z_widget()
    page = w.save_html(tmp_path / "run.html")
    good = page.read_bytes()

    def broken(walk):
        raise MemoryError("out of memory while building the page")

    monkeypatch.setattr(export, "html", broken)
    with pytest.raises(MemoryError):
        w.save_html(page)
    assert page.read_bytes() == good and _files(tmp_path) == ["run.html"]
    w.close()


def test_a_recording_that_fails_half_way_leaves_the_good_file(tmp_path, monkeypatch):
    a = torch.randn(3, requires_grad=True)
    loss = (a * 2).sum()
    with aw.record(loss, keep="tensors") as rec:
        loss.backward()
    path = rec.save(tmp_path / "r.awrec")
    good = path.read_bytes()

    def broken(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(zipfile.ZipFile, "writestr", broken)
    with pytest.raises(OSError, match="No space left"):
        rec.save(path)
    assert path.read_bytes() == good and _files(tmp_path) == ["r.awrec"]
    monkeypatch.undo()
    assert aw.load_recording(path).order == rec.order


# ----------------------------------------------------------------------------- bidi isolation
def _evil_graph():
    """A custom Function whose class name holds a right-to-left override, at the root (so the
    page's default title names it), whose backward raises a message holding one too."""

    def forward(ctx, t):
        return t.sum() * 2

    def backward(ctx, g):
        raise RuntimeError(f"bad {RLO}gradient")

    evil = type(f"Ev{RLO}il", (torch.autograd.Function,),
                {"forward": staticmethod(forward), "backward": staticmethod(backward)})
    w = torch.randn(3, requires_grad=True)
    return evil.apply(w), w


def test_names_from_the_user_are_isolated_in_every_label():
    loss, w = _evil_graph()
    g = aw.capture(loss, params={f"we{RLO}ight": w})
    evil = next(n for n in g.nodes.values() if n.name.startswith("Ev"))
    leaf = next(n for n in g.nodes.values() if n.kind == "accumulate_grad")
    assert node_title(evil) == isolate(evil.name) and node_title(evil).startswith(FSI)
    assert node_title(leaf) == f"AccumulateGrad ({isolate(f'we{RLO}ight')})"
    assert short_label(leaf) == isolate(f"we{RLO}ight")
    st = aw.Stepper(g)
    st.run()  # fails on Evil's backward
    line = status_line(g, st)
    assert "failed: " + FSI in line and line.endswith("\u202c" + PDI)  # the error, closed
    assert line.count(FSI) == line.count(PDI) >= 2
    g.close()


def test_the_page_isolates_its_title_and_description(tmp_path):
    loss, w = _evil_graph()
    widget = aw.explore(loss, params={"w": w})
    title, desc = f"run {RLO}1 (ours)", f"by {RLO}me"
    text = widget.save_html(tmp_path / "p.html", title=title, description=desc).read_text(
        encoding="utf-8")
    assert f"<h1><bdi>run {RLO}1 (ours)</bdi></h1>" in text
    assert f"<bdi>by {RLO}me</bdi>" in text
    assert f"<title>{isolate(title)}</title>" in text
    default = export.html(export.walkthrough(widget))  # the default title names the Function
    root = widget.graph.nodes[widget.graph.roots[0][0]].name
    assert RLO in root and f"<bdi>autograd_widget — backward of {isolate(root)} (" in default
    walk = json.loads(re.search(
        r'id="autograd-widget-walkthrough">(.*?)</script>', text, re.S).group(1))
    assert isolate(f"Ev{RLO}il") in json.dumps(walk, ensure_ascii=False)
    widget.close()


def test_the_stylesheet_isolates_the_elements_that_show_names():
    css = static.bundle().css
    rule = re.search(r"\.agw-root\s*:where\(([^)]*)\)\s*\{\s*unicode-bidi:\s*isolate", css)
    assert rule, "js/src/widget.css: the unicode-bidi rule is missing from the bundle"
    tags = {t.strip() for t in rule.group(1).split(",")}
    assert {"span", "code", "b", "button", "summary", "h3"} <= tags


# ----------------------------------------------------------------------------- the command line
def _hostile(tmp_path: Path) -> dict[str, Path]:
    a = torch.randn(3, requires_grad=True)
    loss = (a.exp() * 2).sum()
    with aw.record(loss, keep="tensors") as rec:
        loss.backward()
    good = rec.save(tmp_path / "good.awrec")
    with zipfile.ZipFile(good) as z:
        doc = json.loads(z.read("manifest.json"))
        blobs = {n: z.read(n) for n in z.namelist() if n != "manifest.json"}
    doc["recording"]["failure"] = {"node": "n42", "inputs": [], "error": "boom"}
    bad = tmp_path / "failure.awrec"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("manifest.json", json.dumps(doc))
        for n, b in blobs.items():
            z.writestr(n, b)
    return {"good": good, "failure": bad}


@pytest.mark.parametrize(("source", "pattern"), [
    ("failure", r"malformed recording manifest: failure\.node: no node 'n42' in the graph"),
    ("/dev/zero", r"/dev/zero is a character device, not a recording"),
    ("missing", r"no recording at .*missing\.awrec"),
    ("text", r"not a zip archive"),
])
def test_the_cli_answers_a_hostile_file_with_one_error_line(tmp_path, capsys, source, pattern):
    files = _hostile(tmp_path)
    (tmp_path / "text.awrec").write_text("hello")
    path = {"failure": files["failure"], "/dev/zero": Path("/dev/zero"),
            "missing": tmp_path / "missing.awrec", "text": tmp_path / "text.awrec"}[source]
    out = tmp_path / "page.html"
    out.write_text("the previous page")
    assert main([str(path), "--html", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and re.search(pattern, err), err
    assert out.read_text() == "the previous page"


def test_the_cli_limits_are_flags(tmp_path, capsys):
    good = _hostile(tmp_path)["good"]
    out = tmp_path / "page.html"
    assert main([str(good), "--html", str(out), "--max-tensor-bytes", "4"]) == 2
    err = capsys.readouterr().err
    assert re.search(r"^error: .*its tensors hold \d+ bytes, more than max_tensor_bytes=4; if "
                     r"you trust this file, raise the limit: .*max_tensor_bytes=\d+\)$", err)
    assert not out.exists()
    assert main([str(good), "--html", str(out), "--max-tensor-bytes", "1000",
                 "--max-manifest-bytes", "100000", "--max-inflation", "50"]) == 0
    assert out.exists()
    with pytest.raises(SystemExit) as exit_:
        main([str(good), "--html", str(out), "--max-inflation", "-1"])
    assert exit_.value.code == 2 and "expected a number >= 0" in capsys.readouterr().err


@pytest.mark.skipif(sys.platform.startswith("win"), reason="bytes in argv: POSIX")
def test_the_cli_refuses_an_undecodable_title_and_keeps_the_old_page(tmp_path):
    out = tmp_path / "tour.html"
    out.write_text("the previous page")
    r = subprocess.run(
        [sys.executable, "-m", "autograd_widget", "demo", "--html", str(out), "--title",
         b"caf\xe9"],  # Latin-1 bytes: not UTF-8
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stderr.startswith("error: the page's title cannot be written as UTF-8")
    assert "Traceback" not in r.stderr
    assert out.read_text() == "the previous page" and _files(tmp_path) == ["tour.html"]
