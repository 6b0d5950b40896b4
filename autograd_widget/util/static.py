"""The front-end files the package ships (autograd_widget/static/, built from js/).

One reader for both users of the bundle: the widget (its `_esm` is the small loader; the bundle
goes to the page on request, named by its hash) and the standalone HTML export (which inlines
the bundle). The files are read once per process; a missing bundle raises FileNotFoundError
naming the build command, so no caller has to spell it.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MISSING_MESSAGE", "STATIC", "Bundle", "bundle", "has_bundle", "loader"]

STATIC = Path(__file__).parent.parent / "static"
#: What to do when the bundle was never built (a source checkout without `npm run build`).
MISSING_MESSAGE = (
    "the front-end bundle autograd_widget/static/ is missing; build it with "
    "`cd js && npm ci && npm run build` (or reinstall the package)"
)


@dataclass(frozen=True)
class Bundle:
    """The front-end: its JS module, its stylesheet and a hash naming both."""

    code: str
    css: str
    hash: str


def has_bundle() -> bool:
    """Whether the bundle and the loader were built.

    Example:
        >>> has_bundle()
        True
    """
    return all((STATIC / name).exists() for name in ("widget.js", "loader.js"))


@functools.lru_cache(maxsize=1)
def bundle() -> Bundle:
    """The bundle (static/widget.js + widget.css), read once; FileNotFoundError when missing.

    Example:
        >>> b = bundle()
        >>> len(b.hash), "mountWalkthrough" in b.code, b.css.count("agw-") > 10
        (16, True, True)
    """
    path = STATIC / "widget.js"
    if not path.exists():
        raise FileNotFoundError(MISSING_MESSAGE)
    code = path.read_text(encoding="utf-8")
    css_path = STATIC / "widget.css"
    css = css_path.read_text(encoding="utf-8") if css_path.exists() else ""
    digest = hashlib.sha256(code.encode() + b"\0" + css.encode()).hexdigest()[:16]
    return Bundle(code, css, digest)


def loader() -> str:
    """The loader's text (static/loader.js): every widget's `_esm`; FileNotFoundError when
    missing.

    Example:
        >>> "bundle" in loader()
        True
    """
    path = STATIC / "loader.js"
    if not path.exists():
        raise FileNotFoundError(MISSING_MESSAGE)
    return path.read_text(encoding="utf-8")
