"""The one JSON-safe encoding of numbers, used by every producer the front-end reads.

JSON has no NaN or Infinity, and browsers reject Python's `NaN` token, so every summary,
payload, saved-value record, inspector reply and standalone export spells non-finite and
complex numbers the same way (and `js/src/jsonsafe.js` reads only these spellings):

- a finite float: the number itself; an int, bool, str or None: itself;
- NaN: ``"nan"``; +Infinity: ``"inf"``; -Infinity: ``"-inf"``;
- a complex number: the pair ``[re, im]``, both parts encoded as above (as `Summary.values` holds
  complex values; the record's `dtype` says the values are complex).

Guaranteed: `encode` returns a structure `json.dumps(..., allow_nan=False)` accepts whenever its
input holds only dicts, lists, tuples, numbers, str and None; `decode_float` inverts
`encode_float` exactly.

Example:
    >>> encode({"norm": float("inf"), "values": [1.0, float("nan"), 2j]})
    {'norm': 'inf', 'values': [1.0, 'nan', [0.0, 2.0]]}
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["NAN", "NEG_INF", "POS_INF", "decode_float", "encode", "encode_float", "encode_number"]

NAN = "nan"
POS_INF = "inf"
NEG_INF = "-inf"
_DECODED = {NAN: math.nan, POS_INF: math.inf, NEG_INF: -math.inf}


def encode_float(x: float | None) -> float | str | None:
    """A float (or None) as JSON can carry it: non-finite values become "nan", "inf", "-inf".

    Example:
        >>> encode_float(float("-inf")), encode_float(0.5), encode_float(None)
        ('-inf', 0.5, None)
    """
    if x is None or math.isfinite(x):
        return x
    if math.isnan(x):
        return NAN
    return POS_INF if x > 0 else NEG_INF


def encode_number(x: complex | float | int | None) -> Any:
    """Any Python number (or None) in the one encoding; complex becomes the pair [re, im].

    Example:
        >>> encode_number(1 - 2j)
        [1.0, -2.0]
    """
    if isinstance(x, bool) or x is None or isinstance(x, int):
        return x
    if isinstance(x, complex):
        return [encode_float(x.real), encode_float(x.imag)]
    return encode_float(float(x))


def encode(obj: Any) -> Any:
    """A copy of `obj` with every float and complex number encoded (dicts, lists, tuples walked).

    Tuples become lists (JSON has no tuples); anything else is returned as it is.

    Example:
        >>> encode([(1, float("nan")), {"a": None}])
        [[1, 'nan'], {'a': None}]
    """
    if isinstance(obj, float | complex):
        return encode_number(obj)
    if isinstance(obj, dict):
        return {k: encode(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [encode(v) for v in obj]
    return obj


def decode_float(v: Any) -> float | None:
    """The float behind an encoded value (the inverse of `encode_float`; None stays None).

    Example:
        >>> decode_float("inf"), decode_float(3)
        (inf, 3.0)
    """
    if v is None:
        return None
    if isinstance(v, str):
        try:
            return _DECODED[v]
        except KeyError:
            raise ValueError(
                f"not an encoded number: {v!r} (expected a number, 'nan', 'inf' or '-inf')"
            ) from None
    return float(v)
