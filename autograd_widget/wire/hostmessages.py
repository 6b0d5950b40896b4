"""The host family of messages: what the widget's host (not its session) answers, the front-end
bundle, and the loader that asks for it.

Each widget's `_esm` is the small loader (js/src/loader.js, shipped as static/loader.js), as
TEXT, not a path: anywidget turns a path into a watched FileContents whose class-level
`changed` signal keeps a strong reference to every widget ever made (so no widget, graph or
activation could be freed). The loader asks for the bundle once per page (HOST message
`BUNDLE`, protocol.py) and reuses it by the hash the `_bundle` trait carries, so ten widgets do
not carry, sync and save ten copies of it. Without a built front-end, the loader is replaced by
a module that says how to build it (`util.static.MISSING_MESSAGE`).
"""

from __future__ import annotations

from typing import Any

from ..util import static
from ..util.static import MISSING_MESSAGE
from .protocol import REPLY

__all__ = ["MISSING_ESM", "bundle_reply", "bundle_trait", "loader_esm"]

#: The `_esm` of a widget when the front-end was not built: it says so in the cell.
MISSING_ESM = (
    "export default { render({ el }) { el.textContent = 'autograd_widget: " + MISSING_MESSAGE
    .replace("'", "\\'") + "'; } };"
)


def loader_esm() -> str:
    """Every widget's `_esm`: the loader's text (`MISSING_ESM` without a built front-end).

    Example:
        >>> from autograd_widget.util import static
        >>> loader_esm() == (static.loader() if static.has_bundle() else MISSING_ESM)
        True
        >>> "npm run build" in MISSING_ESM  # it says how to build the front-end
        True
    """
    return static.loader() if static.has_bundle() else MISSING_ESM


def bundle_trait() -> dict[str, Any]:
    """What the `_bundle` trait says of the bundle: its hash and size (not its text); {}
    without a built front-end.

    Example:
        >>> from autograd_widget.util import static
        >>> sorted(bundle_trait()) == (["bytes", "hash"] if static.has_bundle() else [])
        True
    """
    if not static.has_bundle():
        return {}
    b = static.bundle()
    return {"hash": b.hash, "bytes": len(b.code) + len(b.css)}


def bundle_reply(msg: dict[str, Any]) -> dict[str, Any]:
    """The reply to the loader's BUNDLE message `msg`: the code, the stylesheet and their hash,
    under the message's `request` id. Raises what `static.bundle()` raises when the front-end
    was not built (the widget warns about it).

    Example:
        >>> from autograd_widget.util import static
        >>> if static.has_bundle():
        ...     reply = bundle_reply({"type": "bundle", "request": 3})
        ...     assert reply["request"] == 3 and set(reply["data"]) == {"code", "css", "hash"}
    """
    b = static.bundle()
    data = {"code": b.code, "css": b.css, "hash": b.hash}
    return {"type": REPLY, "request": msg.get("request"), "data": data}
