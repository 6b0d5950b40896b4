"""mkdocs hooks (mkdocs.yml `hooks:`): what the site needs beyond the markdown under docs/.

- The notebook pages: docs/notebook_pages.py executes each notebook (cached under
  build/docs-notebooks, or $AGW_DOCS_CACHE) and each page, widget page and image it wrote is added
  to the site as a generated file.
- KaTeX (script, stylesheet, woff2 fonts) from js/node_modules/katex, the copy the front-end
  bundles: the site loads nothing from the network.
- The home page reuses the README: a line `<!-- readme: Heading -->` in a page is replaced by
  that README section (down to the next heading of the same or a higher level), its links
  pointed at the site's own pages and images, so the home page never drifts from the README;
  `<!-- contributing: Heading -->` does the same with CONTRIBUTING.md.
- Typeset examples: a comment `<!-- typeset:` ... `-->` holding Python code is replaced by that
  code, as a block, and the value of its last line typeset as display math (a LaTeX string, or
  an object with `_repr_latex_`, as Jupyter shows it): the API reference shows what
  `aw.formula(...)` and `graph.formula(...)` look like, computed when the site is built.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

import notebook_pages
from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

__all__ = ["on_files", "on_page_markdown", "readme_section"]

log = logging.getLogger("mkdocs.hooks.autograd_widget")
ROOT = notebook_pages.ROOT
KATEX = ROOT / "js" / "node_modules" / "katex" / "dist"
README_IMAGES = {"notebooks/img/widget.png": "assets/widget.png"}
#: Repository links that have a page on the site (others become their plain text).
SITE_PAGES = {"docs/formulas.md": "formulas.md", "docs/watch.md": "watch.md",
              "docs/compiled.md": "compiled.md",
              "CONTRIBUTING.md#torch-versions": "guide.md#torch-versions"}
_MARKER = re.compile(r"^<!-- (readme|contributing): (.+?) -->$", re.M)
_SOURCES = {"readme": "README.md", "contributing": "CONTRIBUTING.md"}
_TYPESET = re.compile(r"^<!-- typeset:\n(.*?)\n-->$", re.M | re.S)


def _cache() -> Path:
    return Path(os.environ.get("AGW_DOCS_CACHE", ROOT / "build" / "docs-notebooks"))


# Before the other plugins' on_files (mkdocstrings, search): they see the generated pages too.
@event_priority(100)
def on_files(files: Files, config) -> Files:
    """Add the notebook pages, KaTeX and the README's images to the site's files."""
    cache = _cache()
    try:
        notebook_pages.build(cache, log=log.info)
    except Exception as err:  # a failing notebook fails the build, with its message
        raise PluginError(f"executing the notebooks for the docs failed: {err}") from err
    for path in sorted((cache / "notebooks").rglob("*")):
        if path.is_file() and not path.name.startswith("."):
            uri = path.relative_to(cache).as_posix()
            files.append(File.generated(config, uri, abs_src_path=str(path)))
    if not (KATEX / "katex.min.js").exists():
        raise PluginError(f"KaTeX is missing ({KATEX}): run `cd js && npm ci` (make setup does)")
    wanted = ["katex.min.js", "katex.min.css", "contrib/auto-render.min.js"]
    wanted += [p.relative_to(KATEX).as_posix() for p in sorted(KATEX.glob("fonts/*.woff2"))]
    for rel in wanted:
        files.append(File.generated(config, f"assets/katex/{rel}", abs_src_path=str(KATEX / rel)))
    for src, uri in README_IMAGES.items():
        files.append(File.generated(config, uri, abs_src_path=str(ROOT / src)))
    return files


def readme_section(heading: str, readme: str | None = None, *, source: str = "README.md") -> str:
    """The README's (or `source`'s) section under `heading` (e.g. "## Install"), down to the
    next heading of the same or a higher level (for the title, "# name": its introduction, down
    to the next heading), with its links rewritten for the site. Raises PluginError when the
    heading is gone (a page must not silently lose a section)."""
    text = readme if readme is not None else (ROOT / source).read_text(encoding="utf-8")
    lines = text.splitlines()
    level = len(heading) - len(heading.lstrip("#"))
    try:
        start = lines.index(heading)
    except ValueError:
        msg = f"{source} has no heading {heading!r} (a page under docs/ includes it)"
        raise PluginError(msg) from None
    end, fenced = len(lines), False
    for i in range(start + 1, len(lines)):
        if lines[i].startswith("```"):
            fenced = not fenced
        m = re.match(r"(#+) ", lines[i])
        if m and not fenced and (level == 1 or len(m.group(1)) <= level):
            end = i
            break
    body = lines[start + 1 : end] if level == 1 else lines[start:end]
    return _site_links("\n".join(body).strip("\n"))


def _site_links(markdown: str) -> str:
    def target(m: re.Match) -> str:
        text, href = m.group(1), m.group(2)
        if href in README_IMAGES:
            return f"{text}({README_IMAGES[href]})"
        if href in SITE_PAGES:
            return f"{text}({SITE_PAGES[href]})"
        nb = re.fullmatch(r"notebooks/(\w+)\.ipynb", href)
        if nb:
            return f"{text}(notebooks/{nb.group(1)}.md)"
        if re.match(r"https?://", href):
            return m.group(0)
        return text[1:-1]  # a repository file the site does not carry: its name, unlinked

    return re.sub(r"(\[[^\]]*\])\(([^)\s]+)\)", target, markdown)


def typeset(code: str) -> str:
    """`code` as a Python block, then the value of its last line as display math. The code
    runs with `torch` and `aw` imported; a failure fails the build (PluginError).

    Example: `typeset('aw.formula("MulBackward0")')` -> a block and `$$ \\begin{aligned} ...`."""
    import ast

    import torch

    import autograd_widget as aw

    tree = ast.parse(code)
    if not tree.body or not isinstance(tree.body[-1], ast.Expr):
        raise PluginError(f"a typeset example must end with an expression:\n{code}")
    scope = {"torch": torch, "aw": aw}
    try:
        exec(compile(ast.Module(tree.body[:-1], []), "<typeset>", "exec"), scope)
        value = eval(compile(ast.Expression(tree.body[-1].value), "<typeset>", "eval"), scope)
    except Exception as err:
        raise PluginError(f"a typeset example failed: {err!r}\n{code}") from err
    latex = value._repr_latex_() if hasattr(value, "_repr_latex_") else value
    if not isinstance(latex, str):
        raise PluginError(f"a typeset example gave {type(value).__name__}, not LaTeX:\n{code}")
    latex = latex.strip()
    if latex.startswith("$$") and latex.endswith("$$"):
        latex = latex[2:-2].strip()
    return f"```python\n{code}\n```\n\n$$\n{latex}\n$$"


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Replace each `<!-- readme: Heading -->` line with that README section (and
    `contributing:` with CONTRIBUTING.md's), each `<!-- typeset: ... -->` with its example."""
    markdown = _MARKER.sub(
        lambda m: readme_section(m.group(2), source=_SOURCES[m.group(1)]), markdown)
    return _TYPESET.sub(lambda m: typeset(m.group(1)), markdown)
