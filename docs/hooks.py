"""mkdocs hooks (mkdocs.yml `hooks:`): what the site needs beyond the markdown under docs/.

- The notebook pages: docs/notebook_pages.py executes each notebook (cached under
  build/docs-notebooks, or $AGW_DOCS_CACHE) and each page, widget page and image it wrote is added
  to the site as a generated file.
- KaTeX (script, stylesheet, woff2 fonts) from js/node_modules/katex, the copy the front-end
  bundles: the site loads nothing from the network.
- The home page reuses the README: a line `<!-- readme: Heading -->` in a page is replaced by
  that README section (down to the next heading of the same or a higher level), its links
  pointed at the site's own pages and images, so the home page never drifts from the README.
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
_MARKER = re.compile(r"^<!-- readme: (.+?) -->$", re.M)


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


def readme_section(heading: str, readme: str | None = None) -> str:
    """The README's section under `heading` (e.g. "## In a notebook"), down to the next heading
    of the same or a higher level (for the title, "# name": its introduction, down to the next
    heading), with its links
    rewritten for the site. Raises PluginError when the heading is gone (the home page must
    not silently lose a section)."""
    text = readme if readme is not None else (ROOT / "README.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    level = len(heading) - len(heading.lstrip("#"))
    try:
        start = lines.index(heading)
    except ValueError:
        msg = f"README.md has no heading {heading!r} (docs/index.md includes it)"
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
        if href == "docs/formulas.md":
            return f"{text}(formulas.md)"
        nb = re.fullmatch(r"notebooks/(\w+)\.ipynb", href)
        if nb:
            return f"{text}(notebooks/{nb.group(1)}.md)"
        if re.match(r"https?://", href):
            return m.group(0)
        return text[1:-1]  # a repository file the site does not carry: its name, unlinked

    return re.sub(r"(\[[^\]]*\])\(([^)\s]+)\)", target, markdown)


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Replace each `<!-- readme: Heading -->` line with that README section."""
    return _MARKER.sub(lambda m: readme_section(m.group(1)), markdown)
