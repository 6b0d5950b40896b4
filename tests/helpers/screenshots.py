"""The README's screenshot: where it lives and the one rule for writing it (`make test` writes
no tracked file; only `make screenshots`, which sets AW_UPDATE_SCREENSHOTS=1, copies a fresh
screenshot over it). Used by tests/browser/test_widget_browser.py (which takes the screenshot)
and tests/project/test_no_tracked_changes.py (which checks the rule)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["README_IMAGE", "UPDATE_SCREENSHOTS", "keep_readme_image"]

#: The README's screenshot (README.md shows it; `make screenshots` rewrites it from this test).
README_IMAGE = Path(__file__).resolve().parents[2] / "notebooks" / "img" / "widget.png"
#: Set to 1 by `make screenshots`: only then does the test copy its screenshot over the README's
#: (`make test` writes no tracked file: its screenshots stay under tests/artifacts/, ignored).
UPDATE_SCREENSHOTS = "AW_UPDATE_SCREENSHOTS"


def keep_readme_image(shot: Path, target: Path = README_IMAGE) -> bool:
    """Copy the fresh screenshot `shot` over the README's `target` when AW_UPDATE_SCREENSHOTS=1
    (`make screenshots`), and say whether it did; otherwise leave the tracked image alone."""
    if os.environ.get(UPDATE_SCREENSHOTS) != "1":
        return False
    target.write_bytes(shot.read_bytes())
    return True
