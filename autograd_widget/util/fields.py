"""Reading decoded JSON strictly: each field's type checked, every error saying where it is.

A file from anyone (a saved recording, a graph dict) is read through these: a field of the wrong
type, an integer out of range or a list longer than the format allows raises `FieldError`, a
ValueError whose text is `"<where>: <what>"` with `where` a path into the document
(`all_runs[3][6][0].shape[1]`), never a KeyError, TypeError or OverflowError from deep inside.
Booleans are not integers here (JSON keeps them apart), and a float is never an integer.

Example:
    >>> need_int(-1, "nodes[2].num_outputs")
    Traceback (most recent call last):
    autograd_widget.util.fields.FieldError: nodes[2].num_outputs: expected an int in 0..., got -1
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .jsonsafe import decode_float

__all__ = [
    "U64",
    "FieldError",
    "NotStrict",
    "at",
    "need_bool",
    "need_choice",
    "need_dict",
    "need_float",
    "need_int",
    "need_list",
    "need_str",
    "opt_float",
    "opt_int",
    "opt_str",
    "short",
    "strict_loads",
]

#: The largest unsigned 64-bit integer: no count, id or size in a file is larger.
U64 = 2**64 - 1


class FieldError(ValueError):
    """A field that is missing, of the wrong type or out of range: `where` (a path into the
    document) and `what` (what is wrong); `str()` is "where: what"."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(f"{where}: {what}")
        self.where = where
        self.what = what


def short(v: Any, n: int = 40) -> str:
    """A short, safe description of a value for an error message (never a huge repr).

    Example:
        >>> short("x" * 100, 8)
        "'xxxxxxxx'..."
        >>> short([1, 2]), short(None), short({"a": 1})
        ('a list', 'null', 'an object')
    """
    if v is None:
        return "null"
    if isinstance(v, bool | int | float):
        text = repr(v)
        return text if len(text) <= n else text[:n] + "..."
    if isinstance(v, str):
        return repr(v) if len(v) <= n else repr(v[:n]) + "..."
    if isinstance(v, list | tuple):
        return "a list"
    if isinstance(v, Mapping):
        return "an object"
    return f"a {type(v).__name__}"


def at(where: str, key: str | int) -> str:
    """The path of `key` inside `where`: `at("nodes", 3)` -> "nodes[3]", `at("x", "id")` ->
    "x.id".

    Example:
        >>> at(at("recording", "all_runs"), 2)
        'recording.all_runs[2]'
    """
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else key


def need_dict(v: Any, where: str) -> Mapping[str, Any]:
    """`v` when it is a JSON object.

    Example:
        >>> need_dict([], "tensors")
        Traceback (most recent call last):
        autograd_widget.util.fields.FieldError: tensors: expected an object, got a list
    """
    if not isinstance(v, Mapping):
        raise FieldError(where, f"expected an object, got {short(v)}")
    return v


def need_list(v: Any, where: str, *, length: int | None = None, max_len: int | None = None
              ) -> list[Any]:
    """`v` when it is a JSON array (of exactly `length`, or at most `max_len`, items).

    Example:
        >>> need_list([1, 2], "edges[0]", length=4)
        Traceback (most recent call last):
        autograd_widget.util.fields.FieldError: edges[0]: expected a list of 4 items, got 2
    """
    if not isinstance(v, list | tuple):
        raise FieldError(where, f"expected a list, got {short(v)}")
    if length is not None and len(v) != length:
        raise FieldError(where, f"expected a list of {length} items, got {len(v)}")
    if max_len is not None and len(v) > max_len:
        raise FieldError(where, f"expected at most {max_len} items, got {len(v)}")
    return list(v)


def need_str(v: Any, where: str) -> str:
    """`v` when it is a string.

    Example:
        >>> need_str(None, "nodes[0].name")
        Traceback (most recent call last):
        autograd_widget.util.fields.FieldError: nodes[0].name: expected a string, got null
    """
    if not isinstance(v, str):
        raise FieldError(where, f"expected a string, got {short(v)}")
    return v


def opt_str(v: Any, where: str) -> str | None:
    """`v` when it is a string or null.

    Example:
        >>> opt_str(None, "module") is None
        True
    """
    return None if v is None else need_str(v, where)


def need_int(v: Any, where: str, lo: int = 0, hi: int = U64) -> int:
    """`v` when it is an integer (not a bool, not a float) in `lo..hi`.

    Example:
        >>> need_int(3.9, "shape[0]")
        Traceback (most recent call last):
        autograd_widget.util.fields.FieldError: shape[0]: expected an int in 0..2**64-1, got 3.9
    """
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        span = "2**64-1" if hi == U64 else str(hi)
        low = "-2**63" if lo == -(2**63) else str(lo)
        raise FieldError(where, f"expected an int in {low}..{span}, got {short(v)}")
    return v


def opt_int(v: Any, where: str, lo: int = 0, hi: int = U64) -> int | None:
    """`v` when it is null or an integer in `lo..hi`.

    Example:
        >>> opt_int(None, "saved_version") is None
        True
    """
    return None if v is None else need_int(v, where, lo, hi)


def need_bool(v: Any, where: str) -> bool:
    """`v` when it is true or false.

    Example:
        >>> need_bool(1, "is_root")
        Traceback (most recent call last):
        autograd_widget.util.fields.FieldError: is_root: expected true or false, got 1
    """
    if not isinstance(v, bool):
        raise FieldError(where, f"expected true or false, got {short(v)}")
    return v


def need_float(v: Any, where: str) -> float:
    """A number: an int or float, or "nan", "inf", "-inf" (util/jsonsafe.py's spelling).

    Example:
        >>> need_float("inf", "norm"), need_float(2, "norm")
        (inf, 2.0)
        >>> need_float("big", "norm")
        Traceback (most recent call last):
        autograd_widget.util.fields.FieldError: norm: expected a number, ... got 'big'
    """
    if isinstance(v, bool) or not isinstance(v, int | float | str):
        raise FieldError(where, f"expected a number, 'nan', 'inf' or '-inf', got {short(v)}")
    try:
        return decode_float(v)  # type: ignore[return-value]
    except (ValueError, OverflowError):
        raise FieldError(
            where, f"expected a number, 'nan', 'inf' or '-inf', got {short(v)}"
        ) from None


def opt_float(v: Any, where: str) -> float | None:
    """`need_float`, or None for null.

    Example:
        >>> opt_float(None, "std") is None
        True
    """
    return None if v is None else need_float(v, where)


def need_choice(v: Any, where: str, choices: tuple[Any, ...]) -> Any:
    """`v` when it is one of `choices`.

    Example:
        >>> need_choice("leaf", "kind", ("function", "accumulate_grad"))
        Traceback (most recent call last):
        autograd_widget.util.fields.FieldError: kind: expected one of 'function', ... got 'leaf'
    """
    if not isinstance(v, str | type(None)) or v not in choices:
        names = ", ".join(repr(c) if c is not None else "null" for c in choices)
        raise FieldError(where, f"expected one of {names}, got {short(v)}")
    return v


class NotStrict(ValueError):
    """What strict JSON refuses and `json.loads` lets through: a NaN/Infinity token, a key twice
    in one object (the second would silently replace the first)."""


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise NotStrict(f"the key {short(dup)} appears twice in one object")
    return d


def _constant(name: str) -> Any:
    raise NotStrict(f"{name} is not a JSON number (write 'nan', 'inf' or '-inf')")


def strict_loads(raw: str | bytes | bytearray | memoryview) -> Any:
    """JSON as the package's files write it (UTF-8, `allow_nan=False`), read strictly: a NaN or
    Infinity token or a key twice in one object raise `NotStrict`; invalid JSON, bad UTF-8 or an
    integer past Python's digit limit a ValueError; nesting deeper than the recursion limit a
    RecursionError (the caller words it). A number too large for a float (`1e400`) reads as
    inf, which a typed field then refuses (`need_int`).

    Example:
        >>> strict_loads(b'{"a": [1, "nan"]}')
        {'a': [1, 'nan']}
        >>> strict_loads('{"a": 1, "a": 2}')
        Traceback (most recent call last):
        autograd_widget.util.fields.NotStrict: the key 'a' appears twice in one object
    """
    text = str(raw, "utf-8") if isinstance(raw, bytes | bytearray | memoryview) else raw
    return json.loads(text, object_pairs_hook=_object, parse_constant=_constant)
