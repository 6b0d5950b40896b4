"""Keeping a user's string from reordering the text around it (Unicode bidirectional isolation).

Names and messages come from the user or from a file (module paths, parameter names, a custom
Function's class name, an exception's message, a page title). A U+202E RIGHT-TO-LEFT OVERRIDE in
one of them would make the text after it read backwards ("AccumulateGrad (x\u202e)" reverses
whatever follows), and a right-to-left name can pull neighbouring punctuation to its side.
`isolate(s)` wraps such a string in FIRST STRONG ISOLATE ... POP DIRECTIONAL ISOLATE, after closing
every embedding, override or isolate the string opens and dropping the closers it has no opener
for, so nothing inside can leak out and nothing outside can be closed from inside. Plain
left-to-right text (nearly every name) is returned unchanged.

The page and the widget also isolate the elements that show such strings (CSS
`unicode-bidi: isolate` in js/src/widget.css, `<bdi>` in the page header); `isolate` is for text
composed in Python, where a name sits inside a longer string.
"""

from __future__ import annotations

import re

__all__ = ["FSI", "PDI", "isolate"]

#: FIRST STRONG ISOLATE and POP DIRECTIONAL ISOLATE.
FSI, PDI = "\u2068", "\u2069"
_EMBED = "\u202a\u202b\u202d\u202e"  # LRE, RLE, LRO, RLO: closed by PDF
_PDF = "\u202c"
_ISOLATE = "\u2066\u2067\u2068"  # LRI, RLI, FSI: closed by PDI
#: Explicit directional formatting characters, and the right-to-left scripts' blocks.
_NEEDS = re.compile(
    "[\u202a-\u202e\u2066-\u2069\u200f\u061c\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefe"
    "\U00010800-\U00010fff\U0001e800-\U0001efff]"
)
_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")


def _balanced(s: str) -> str:
    """`s` with every opener closed at its end and every closer without an opener dropped."""
    out: list[str] = []
    stack: list[str] = []  # "E" (embedding/override) or "I" (isolate), innermost last
    pos = 0
    for m in _CONTROLS.finditer(s):
        c = m.group()
        out.append(s[pos : m.start()])
        pos = m.end()
        if c in _EMBED:
            stack.append("E")
        elif c in _ISOLATE:
            stack.append("I")
        elif c == _PDF:
            if not stack or stack[-1] != "E":
                continue  # a PDF closes an embedding opened inside the same isolate only
            stack.pop()
        elif "I" in stack:  # a PDI closes its isolate and every embedding opened inside it
            while stack.pop() != "I":
                pass
        else:
            continue
        out.append(c)
    out.append(s[pos:])
    out.extend(_PDF if k == "E" else PDI for k in reversed(stack))
    return "".join(out)


def isolate(s: str) -> str:
    """`s` unchanged when it is plain left-to-right text; else `s` isolated: its own openers
    closed, its stray closers dropped, and the whole wrapped in FSI ... PDI.

    Guarantees: the text before and after the result is laid out as if the result were one
    neutral character; isolating twice adds nothing inside the outer pair.

    Example:
        >>> isolate("fc1.weight")
        'fc1.weight'
        >>> [f"U+{ord(c):04X}" if not c.isalnum() else c for c in isolate("x\u202ey")]
        ['U+2068', 'x', 'U+202E', 'y', 'U+202C', 'U+2069']
        >>> isolate("\u2069\u202c") == FSI + PDI  # closers with nothing to close are dropped
        True
    """
    if not _NEEDS.search(s):
        return s
    if s.startswith(FSI) and s.endswith(PDI) and _balanced(s) == s:
        return s
    return FSI + _balanced(s) + PDI
