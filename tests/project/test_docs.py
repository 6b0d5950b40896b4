"""The documentation site (mkdocs.yml, docs/) builds with --strict (every warning fails) and
carries what it promises: an API reference with real content for every public name, each
notebook executed into a page whose widgets are working standalone pages in iframes, the
formulas table, the README's essentials on the home page, and nothing loaded from the network.

The build runs once per session (`docs_site`, tests/conftest.py) into a temporary folder, with a
fresh notebook cache, so every notebook is executed by this very run (notebook 06 starts its two
gloo ranks on 127.0.0.1 itself, as in tests/project/test_notebooks.py). What only a browser sees
(the formulas typeset by KaTeX, what fits the column) is checked in
tests/browser/test_docs_browser.py.
"""

from __future__ import annotations

import ast
import html
import json
import re
from pathlib import Path
from urllib.parse import urljoin

import pytest

import autograd_widget as aw
from autograd_widget.wire.protocol import WALKTHROUGH_FORMAT

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(docs_site) -> Path:
    return docs_site  # tests/conftest.py: built once per session, shared with the browser test


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
    assert re.search(r"explore\( outputs: Tensor \| Sequence\[Tensor\] \| Recording, "
                     r"grad_outputs: Tensor \| Sequence\[Tensor \| None\] \| None = None, \*, "
                     r"model: Module \| None = None", text), "explore's signature, real types"
    assert "Capture outputs' backward graph and show it as an interactive, steppable widget" in text
    # the doctest example, as a highlighted Python console block (not a quote)
    raw = (site / "api" / "explore.html").read_text(encoding="utf-8")
    assert '<span class="gp">&gt;&gt;&gt; </span><span class="n">w</span>' in raw
    assert '>>> w = aw.explore(x**2 + y, params={"x": x, "y": y})' in text
    assert ">>> w.stepper.grad(x) tensor(4.)" in text
    # the widget's methods are documented with it, save_html included
    assert 'id="autograd_widget.AutogradWidget.save_html"' in raw


def _entry(page: Path, name: str) -> str:
    """The text of one documented object: from its heading to the next object's heading."""
    raw = page.read_text(encoding="utf-8")
    start = raw.index(f'id="autograd_widget.{name}"')
    nxt = re.search(r'<h2 id="autograd_widget\.', raw[start + 10:])
    return text_of_html(raw[start: start + 10 + nxt.start()] if nxt else raw[start:])


def text_of_html(raw: str) -> str:
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", raw, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", body)))


@pytest.mark.parametrize(("page", "name", "params"), [
    ("explore", "explore", ["outputs", "grad_outputs", "model", "params", "collapse",
                            "orientation", "keep", "create_graph", "height", "compare_to"]),
    ("capture", "capture", ["outputs", "grad_outputs", "model", "params"]),
    ("recording", "record", ["outputs", "grad_outputs", "model", "params", "keep"]),
    ("watch", "watch", ["model", "every", "path", "params"]),
])
def test_the_entry_points_have_full_parameters_sections_and_real_types(site, page, name, params):
    text = _entry(site / "api" / f"{page}.html", name)
    section = text[text.index("Parameters:"):]
    for param in params:
        assert re.search(rf"\b{param} \(", section), f"{name}: parameter {param} undocumented"
    assert "Returns:" in text
    signature = text[:text.index("Parameters:")]
    assert not re.search(r"\bAny\b", signature), f"{name}: `Any` in its signature"


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


def _walkthroughs(doc: str) -> list[dict]:
    found = re.findall(r'<script type="application/json" id="autograd-widget-walkthrough[^"]*">'
                       r"(.*?)</script>", doc, re.S)
    return [json.loads(r) for r in found]


def test_every_widget_is_shown_as_a_working_standalone_page(site):
    for nb in NOTEBOOKS:
        source = "\n".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"]
                           if c["cell_type"] == "code")
        # one page per widget; an aw.side_by_side pair is ONE page with both sides. Calls in
        # the notebook's own code only: a script it writes for its ranks (09) is a string
        expected = sum(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                       and isinstance(n.func.value, ast.Name) and n.func.value.id == "aw"
                       and n.func.attr in ("explore", "side_by_side")
                       for n in ast.walk(ast.parse(source)))
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
            walks = _walkthroughs(doc)
            assert walks and 'id="autograd-widget-bundle"' in doc, f"{src}: not standalone"
            for walk in walks:
                assert walk["format"] == WALKTHROUGH_FORMAT
                assert walk["graph"] and walk["steps"], f"{src}: nothing walked"


def _pages_of(site: Path, stem: str) -> list[str]:
    page = site / "notebooks" / f"{stem}.html"
    return [(site / urljoin(page.relative_to(site).as_posix(), src)).read_text(encoding="utf-8")
            for src in _frames(page)]


def test_each_widget_page_opens_where_the_notebook_left_the_widget(site):
    # 02: displayed at step 0, then stepped 3 times and run to the end by later cells
    (doc,) = _pages_of(site, "02_step_through_backward")
    (rec,) = _walkthroughs(doc)
    assert rec["start"] == len(rec["steps"]) == 6
    # 04: run to the end before it is shown; the second one stops at its failing step
    nan, failing = (_walkthroughs(d)[0] for d in _pages_of(site, "04_debugging_backward"))
    assert nan["start"] == len(nan["steps"])
    assert failing["failed"] and failing["start"] == len(failing["steps"])
    # 06: the NaN recording run up to its birth (SqrtBackward0), not to the end
    first = _walkthroughs(_pages_of(site, "06_debugging_a_real_run")[0])[0]
    assert 0 < first["start"] < len(first["steps"])
    assert first["steps"][first["start"] - 1]["scalars"]["status"].startswith(
        "ran SqrtBackward0")


def test_side_by_side_is_one_page_stepped_together(site):
    pages = _pages_of(site, "06_debugging_a_real_run")
    docs = [d for d in pages if "mod.mountWalkthroughPair(" in d]
    assert len(docs) == 1, "the two ranks: one page"
    left, right = _walkthroughs(docs[0])
    assert "rank 0" in docs[0] and "rank 1" in docs[0]
    assert left["graph"]["compared"] == "rank 1" and right["graph"]["compared"] == "rank 0"
    page = (site / "notebooks" / "06_debugging_a_real_run.html").read_text(encoding="utf-8")
    assert "side by side and stepped together" in page


def test_the_home_page_is_its_own_and_includes_the_readme_sections_it_names(site):
    home = text_of(site / "index.html")
    raw_home = (site / "index.html").read_text(encoding="utf-8")
    assert "See PyTorch's backward pass, step through it, inspect what every node holds." in home
    assert '<img alt="The widget in JupyterLab' in raw_home
    assert (site / "assets" / "widget.png").is_file()
    # every `<!-- readme: ... -->` (and contributing:) marker of every page is honest: the
    # heading exists there, and the section's text is on the built page
    sources = {"readme": ROOT / "README.md", "contributing": ROOT / "CONTRIBUTING.md"}
    seen = 0
    for md in (ROOT / "docs").rglob("*.md"):
        for kind, heading in re.findall(r"^<!-- (readme|contributing): (.+?) -->$",
                                        md.read_text(encoding="utf-8"), re.M):
            src = sources[kind].read_text(encoding="utf-8")
            assert f"\n{heading}\n" in src, f"{md.name} includes {heading!r}, gone from {kind}"
            body = src.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
            built = text_of(site / md.relative_to(ROOT / "docs").with_suffix(".html"))
            for part in body.strip().split("\n\n"):
                if part.startswith("|"):
                    continue
                if part.startswith("```"):  # a code block: its first line, as code
                    words = part.splitlines()[1]
                else:
                    words = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", part.lstrip("# "))
                    words = re.sub(r"^- ", "", words)  # a list item: its marker is not text
                    words = re.sub(r"\*\*|`", "", words)
                    words = re.sub(r"\s+", " ", words).strip()
                assert words[:60] in built, (md.name, heading, words[:60])
            seen += 1
    assert seen >= 4
    for heading in ("Install", "Quick start", "What you see"):
        assert f">{heading}<" in raw_home


def test_the_home_page_links_the_watch_and_compiled_pages(site):
    raw = (site / "index.html").read_text(encoding="utf-8")
    for page in ("watch.html", "compiled.html"):
        assert f'href="{page}"' in raw, f"the home page has no link to {page}"
        assert (site / page).is_file()
    # the README's own sentence, with its links as links (they were plain text)
    what = raw[raw.index(">What you see<"):]
    assert re.search(r'<a href="watch.html">docs/watch.md</a>', what)
    assert re.search(r'<a href="compiled.html">docs/compiled.md</a>', what)


def test_the_nav_lists_each_page_title_once():
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    titles: list[str] = []

    def walk(entries: list) -> None:
        for entry in entries:
            if isinstance(entry, str):  # a page titled by its first heading
                md = ROOT / "docs" / entry
                if md.is_file():
                    heading = re.search(r"^# (.+)$", md.read_text(encoding="utf-8"), re.M)
                    titles.append(heading.group(1).strip() if heading else entry)
                continue
            for title, value in entry.items():
                if isinstance(value, list):
                    walk(value)
                else:
                    titles.append(title)

    walk(config["nav"])
    assert titles.count("Watching training") == 1, titles
    assert len(titles) == len(set(titles)), sorted(t for t in titles if titles.count(t) > 1)


def test_the_formulas_page_opens_for_readers_and_ends_with_how_it_is_made(site):
    text = text_of(site / "formulas.html")
    start = text.index("What each backward node computes")
    opening = text[start:start + 600]
    assert "Every node of a backward graph" in opening
    assert "regenerate" not in opening and "Generated from" not in opening
    assert text.index("How this page is made") > text.index("Not coverable")


def test_the_guide_explains_the_moved_list(site):
    text = text_of(site / "guide.html")
    assert "Moved > 10x" in text and "largest and smallest finite, non-zero values" in text


def test_no_literal_escapes_and_no_list_run_into_a_paragraph(site):
    for page in site.rglob("*.html"):
        if page.parent not in (site, site / "api"):
            continue
        raw = page.read_text(encoding="utf-8")
        text = text_of(page)
        assert "\\|" not in text, f"{page.name}: a literal \\| shows"
        for para in re.findall(r"<p>(.*?)</p>", raw, re.S):
            assert not re.search(r"\n\s*[-*] \S", para), f"{page.name}: a list run into <p>"


def test_formulas_are_marked_for_typesetting(site):
    formulas = (site / "formulas.html").read_text(encoding="utf-8")
    assert "What each backward node computes" in text_of(site / "formulas.html")
    blocks = re.findall(r'<div class="arithmatex">\\\[(.*?)\\\]</div>', formulas, re.S)
    assert len(blocks) >= 163, len(blocks)  # one display formula per covered type
    assert all(b.strip().startswith(r"\begin{aligned}") for b in blocks)
    api = (site / "api" / "formula.html").read_text(encoding="utf-8")
    shown = re.findall(r'<div class="arithmatex">\\\[(.*?)\\\]</div>', api, re.S)
    assert len(shown) == 2 and r"[8\times 16]\cdot[16\times 4]" in shown[1]
    assert (site / "assets" / "katex" / "katex.min.js").is_file()
    math = (site / "notebooks" / "02_step_through_backward.html").read_text(encoding="utf-8")
    assert '<span class="arithmatex">' in math
    nb06 = (site / "notebooks" / "06_debugging_a_real_run.html").read_text(encoding="utf-8")
    assert r"\mathrm{mat2}^{\top}" in "".join(
        re.findall(r'<div class="arithmatex">(.*?)</div>', nb06, re.S)), "graph.formula, typeset"


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
            continue  # a standalone page: tests/export/ owns its offline guarantees
        assert not asset.search(text), f"{page.relative_to(site)} loads {asset.search(text)[0]}"
        assert not css_url.search(text), page
    for css in site.rglob("*.css"):
        assert not css_url.search(css.read_text(encoding="utf-8")), css
