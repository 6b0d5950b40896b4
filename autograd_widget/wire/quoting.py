"""How a refused front-end message is quoted in its warning (wire/protocol.py's `dispatch`).

A message comes from the front-end, or from anyone who can send on the widget's comm: its values
may be huge (10 MB strings), deep (10,000 nested lists), or have a `__repr__` that raises. A
warning that refuses one quotes at most `QUOTE_CHARS` characters of the value (`quote`), and a
whole refusal is at most `MAX_WARNING` characters, so a 10 MB value in gives a short warning out,
at the cost of the value's first characters only.

Example:
    >>> len(quote("x" * 10_000_000)) <= QUOTE_CHARS
    True
"""

from __future__ import annotations

import reprlib
from typing import Any

__all__ = ["MAX_WARNING", "QUOTE_CHARS", "quote", "shown"]

#: The most characters of a message's value a warning quotes (`quote`).
QUOTE_CHARS = 200
#: The longest warning a refused message gets (its text and the quoted value).
MAX_WARNING = 400

_QUOTE = reprlib.Repr()
_QUOTE.maxstring = _QUOTE.maxother = 80
_QUOTE.maxlong = 40
_QUOTE.maxlevel = 3


def quote(value: Any) -> str:
    """`value` as a refused message's warning quotes it: a short repr, at most `QUOTE_CHARS`
    characters, built without ever building the whole (a 10 MB string or a 10,000-deep list
    costs what its first characters cost), whatever it holds.

    Example:
        >>> quote("n1"), len(quote("x" * 10_000_000)) <= QUOTE_CHARS, quote(10**400)[:5]
        ("'n1'", True, '10000')
    """
    try:
        return _QUOTE.repr(value)[:QUOTE_CHARS]
    except Exception:  # a repr that raises
        return f"a {type(value).__name__}"


def shown(msg: Any) -> str:
    """A malformed message as a warning quotes it: its first 80 characters, whatever it holds
    (a repr of a deeply nested or huge message is never built whole); a dict by its keys.

    Example:
        >>> shown({"kind": "step"}), shown(["x" * 1000])[:12]
        ("a message with keys ['kind']", "['xxxxxxxxxx")
    """
    try:
        if isinstance(msg, dict):
            return f"a message with keys {sorted(map(str, msg))[:8]}"[:80]
        return reprlib.repr(msg)[:80]
    except Exception:  # a repr that raises
        return f"a {type(msg).__name__}"
