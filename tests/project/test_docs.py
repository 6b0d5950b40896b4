"""The documentation site (mkdocs.yml, docs/) builds with --strict (every warning fails) and
carries what it promises: an API reference with real content for every public name, each
notebook executed into a page whose widgets are working standalone pages in iframes, the
formulas table, the README's essentials on the home page, and nothing loaded from the network.

The build runs once per session (module fixture) into a temporary folder, with a fresh notebook
cache, so every notebook is executed by this very run (notebook 06 starts its two gloo ranks on
127.0.0.1 itself, as in tests/project/test_notebooks.py)."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urljoin

import pytest

import autograd_widget as aw
from autograd_widget.wire.protocol import WALKTHROUGH_FORMAT

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "AGW_DOCS_CACHE": str(tmp_path_factory.mktemp("docs-cache")),
           "NO_MKDOCS_2_WARNING": "1",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                         if p)}
    t0 = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
         "-d", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )
    assert run.returncode == 0, f"mkdocs build --strict failed:\n{run.stdout}\n{run.stderr}"
    print(f"docs built in {time.perf_counter() - t0:.1f} s")
    return out


def text_of(page: Path) -> str:
    """The page's visible text: tags dropped, entities decoded, whitespace collapsed."""
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", page.read_text(encoding="utf-8"), flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", body)))


def test_every_public_name_has_a_documented_entry(site):
    pages = {p: p.read_text(encoding="utf-8") for p in (site / "api").glob("*.html")}
    for name in aw.__all__:
        anchor = f'id="autograd_widget.{name}"'
        where = [p for p, text in pages.items() if anchor in text]
        assert where, f"{name} is in autograd_widget.__all__ but not in the API reference"
        text = pages[where[0]]
        after = text[text.index(anchor):]
        assert 'class="doc doc-contents' in after[:20000], f"{name}: a heading with no content"


def test_explore_shows_its_signature_docstring_and_example(site):
    text = text_of(site / "api" / "explore.html")
    assert re.search(r"explore\( outputs: Any, grad_outputs: Any = None, \*, model: Any = None",
                     text), "explore's signature"
    assert "Capture outputs' backward graph and show it as an interactive, steppable widget" in text
    # the doctest example, as a highlighted Python console block (not a quote)
    raw = (site / "api" / "explore.html").read_text(encoding="utf-8")
    assert '<span class="gp">&gt;&gt;&gt; </span><span class="n">w</span>' in raw
    assert '>>> w = aw.explore(x**2 + y, params={"x": x, "y": y})' in text
    assert ">>> w.stepper.grad(x) tensor(4.)" in text
    # the widget's methods are documented with it, save_html included
    assert 'id="autograd_widget.AutogradWidget.save_html"' in raw


def test_each_notebook_has_a_page_with_its_code_and_outputs(site):
    for nb in NOTEBOOKS:
        page = site / "notebooks" / f"{nb.stem}.html"
        assert page.exists(), f"no page for {nb.name}"
        cells = json.loads(nb.read_text())["cells"]
        title = next(c for c in cells if c["cell_type"] == "markdown")["source"][0]
        text = text_of(page)
        assert title.lstrip("# ").strip() in text, f"{nb.name}: its title"
        assert "autograd_widget 0.1.0" in text or "import autograd_widget as aw" in text
    tour = text_of(site / "notebooks" / "01_tour.html")
    assert "dz/dx = 4.0 | dz/dy = 1.0" in tour  # an output of the executed notebook


def _frames(page: Path) -> list[str]:
    return re.findall(r'<iframe src="([^"]+)"', page.read_text(encoding="utf-8"))


def test_every_widget_is_shown_as_a_working_standalone_page(site):
    for nb in NOTEBOOKS:
        source = "\n".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"]
                           if c["cell_type"] == "code")
        expected = source.count("aw.explore(") + 2 * source.count("aw.side_by_side(")
        page = site / "notebooks" / f"{nb.stem}.html"
        frames = _frames(page)
        if expected:
            assert frames, f"{nb.name} shows widgets but its page has no iframe"
        assert len(frames) == expected, (nb.name, frames)
        for src in frames:
            target = site / urljoin(page.relative_to(site).as_posix(), src)
            assert target.is_file(), f"{nb.name}: iframe {src} points at nothing"
            doc = target.read_text(encoding="utf-8")
            assert doc.startswith("<!doctype html>")
            walk = re.search(r'<script type="application/json" id="autograd-widget-walkthrough">'
                            r"(.*?)</script>", doc, re.S)
            assert walk and 'id="autograd-widget-bundle"' in doc, f"{src}: not a standalone page"
            walkthrough = json.loads(walk.group(1))
            assert walkthrough["format"] == WALKTHROUGH_FORMAT
            assert walkthrough["graph"] and walkthrough["steps"], f"{src}: nothing walked"


def test_formulas_home_and_math(site):
    formulas = text_of(site / "formulas.html")
    assert "What each backward node computes" in formulas and "AddmmBackward0" in formulas
    home = text_of(site / "index.html")
    readme = (ROOT / "README.md").read_text()
    # the README's introduction and sections, included (not copied): they follow README.md
    intro = re.search(r"\*\*See PyTorch's backward pass\.\*\* (.+?)\n", readme).group(1)
    assert intro.replace("`", "") in home
    assert "Set-up: two commands" in home and "API at a glance" in home
    assert (site / "assets" / "widget.png").is_file()
    assert '<img alt="The widget in JupyterLab' in (site / "index.html").read_text()
    assert (site / "assets" / "katex" / "katex.min.js").is_file()
    math = (site / "notebooks" / "02_step_through_backward.html").read_text(encoding="utf-8")
    assert '<span class="arithmatex">' in math


def test_nothing_is_loaded_from_the_network(site):
    asset = re.compile(
        r"<(?:script|img|iframe|source|audio|video)\b[^>]*\bsrc=[\"']?(?:https?:)?//"
        r"|<link\b[^>]*\bhref=[\"']?(?:https?:)?//", re.I)
    css_url = re.compile(r"url\(\s*[\"']?(?:https?:)?//|@import\s+[\"']?(?:url\()?[\"']?https?:",
                         re.I)
    pages = list(site.rglob("*.html"))
    assert len(pages) > 10
    for page in pages:
        text = page.read_text(encoding="utf-8")
        if page.parent.parent.name == "notebooks" and page.name.startswith("widget-"):
            continue  # a standalone page: tests/test_export*.py own its offline guarantees
        assert not asset.search(text), f"{page.relative_to(site)} loads {asset.search(text)[0]}"
        assert not css_url.search(text), page
    for css in site.rglob("*.css"):
        assert not css_url.search(css.read_text(encoding="utf-8")), css
