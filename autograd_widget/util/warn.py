"""Warnings about the user's input, attributed to the user's own line.

`warnings.warn(..., stacklevel=2)` names the caller, which is often another module of this
package (`explore()` calls `capture()`, `record()` calls it too): the warning would then point at
our code and, under `-W error::UserWarning:autograd_widget`, become an error in the package's own
tests. `warn_user` walks up to the first frame outside the package, so the warning points at the
line the user wrote, whichever public function it went through.
"""

from __future__ import annotations

import sys

__all__ = ["warn_user"]

_PACKAGE = __name__.split(".", 1)[0]


def _outside_level() -> int:
    """The `stacklevel` of the first frame outside this package, seen from `warn_user`'s
    caller (1 = that caller itself)."""
    frame = sys._getframe(2)  # warn_user's caller
    level = 1
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module != _PACKAGE and not module.startswith(_PACKAGE + "."):
            return level
        frame = frame.f_back
        level += 1
    return level


def warn_user(message: str, category: type[Warning] = UserWarning) -> None:
    """Warn about the user's input, attributed to the first line outside this package.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     warn_user("check this")
        >>> str(caught[0].message), caught[0].category.__name__
        ('check this', 'UserWarning')
    """
    import warnings

    warnings.warn(message, category, stacklevel=_outside_level() + 1)
