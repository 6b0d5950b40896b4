"""A griffe extension for the API reference: this project's docstrings title their doctests
`Example:` (the house style); Google style renders only `Examples:` as an examples section (code
blocks, highlighted), `Example:` as a generic admonition whose `>>>` lines read as quotes. Rename
the title when griffe loads a docstring; the sources are untouched."""

from __future__ import annotations

import re

import griffe

__all__ = ["ExampleSections"]

_EXAMPLE = re.compile(r"^(\s*)Example:\s*$", re.M)


class ExampleSections(griffe.Extension):
    """`Example:` section titles read as `Examples:`."""

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        """Retitle the object's docstring sections before it is parsed."""
        if obj.docstring is not None:
            obj.docstring.value = _EXAMPLE.sub(r"\1Examples:", obj.docstring.value)
