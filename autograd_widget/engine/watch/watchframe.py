"""A watch's series as a DataFrame: `to_pandas(watch, kind)` and `to_arrow(watch, kind)`, for the
people who analyse runs in pandas, polars or Arrow.

Why: the series are numbers per watched step and key; a table of them (index = the watched
steps, one column per key) is what a notebook's analysis starts from. pandas and pyarrow stay
optional extras: importing this module needs neither; calling it without one raises
ImportError naming `pip install pandas pyarrow`.

Guarantees: the values are exactly `watch.series(key)` (float64, NaN where a step's graph lacks
the key or nothing flowed there, divided by the loss scale where a scaler scaled the loss); the
index is `watch.steps` (named "step"); the columns are `watch.keys()`'s, in its order, for the
`kind` asked: "parameter" (parameter names), "module" (module paths, "" the whole model) or
"edge" (edge ids "n12:0"). The watch is read through `watch.table` only (a watch read from a
file of format 2.0 reads the columns, never every step's record).

Example:
    >>> w = aw.watch(params={"x": x}); loss = (x * 3).sum()
    >>> with w.step(loss):
    ...     loss.backward()
    >>> df = to_pandas(w, "parameter"); list(df.columns), df.index.tolist(), df["x"].tolist()
    (['x'], [0], [3.0])
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["KINDS", "frame_columns", "to_arrow", "to_pandas"]

#: What `kind` names, and the `watch.keys()` entry it takes its columns from.
KINDS = {"parameter": "params", "module": "modules", "edge": "edges"}
_EXTRA = "pip install pandas pyarrow"


def frame_columns(watch: Any, kind: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(column keys, watched steps as int64, the (steps x keys) float64 values) of `kind`:
    what `to_pandas` and `to_arrow` lay out. ValueError naming the kinds for another `kind`.

    Example:
        >>> frame_columns(aw.watch(), "module")[0]
        []
        >>> frame_columns(aw.watch(), "modules")
        Traceback (most recent call last):
        ValueError: kind must be one of 'parameter', 'module', 'edge', got 'modules'
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(map(repr, KINDS))}, got {kind!r}")
    keys = list(watch.keys()[KINDS[kind]])
    steps = np.asarray(watch.steps, dtype=np.int64)
    if keys and len(steps):
        values = np.asarray(watch.table(keys), dtype=np.float64)
    else:
        values = np.zeros((len(steps), len(keys)), dtype=np.float64)
    return keys, steps, values


def _missing(what: str, module: str, e: ImportError) -> ImportError:
    del e  # chained by the caller
    return ImportError(f"watch.{what}() needs {module}, an optional extra: {_EXTRA}")


def to_pandas(watch: Any, kind: str = "parameter") -> Any:
    """`watch`'s series of `kind` as a `pandas.DataFrame` (see the module docstring): index =
    `watch.steps` (named "step"), one float64 column per key, values = `watch.series(key)`.

    Example:
        >>> w = aw.watch(params={"x": x}); loss = (x * 3).sum()
        >>> with w.step(loss):
        ...     loss.backward()
        >>> to_pandas(w, "edge")
              n0:0  n1:0
        step
        0      1.0   3.0
    """
    try:
        import pandas as pd  # type: ignore[import-untyped,unused-ignore]
    except ImportError as e:
        raise _missing("to_pandas", "pandas", e) from e
    keys, steps, values = frame_columns(watch, kind)
    index = pd.Index(steps, name="step")
    return pd.DataFrame(values, index=index, columns=pd.Index(keys, dtype=object))


def to_arrow(watch: Any, kind: str = "parameter") -> Any:
    """`watch`'s series of `kind` as a `pyarrow.Table`: a "step" column (int64, the watched
    steps), then one float64 column per key (values = `watch.series(key)`; NaN kept as NaN,
    not null). Polars reads it without a copy (`polars.from_arrow`).

    Example:
        >>> w = aw.watch(params={"x": x}); loss = (x * 3).sum()
        >>> with w.step(loss):
        ...     loss.backward()
        >>> to_arrow(w, "parameter").to_pydict()
        {'step': [0], 'x': [3.0]}
    """
    try:
        import pyarrow as pa  # type: ignore[import-untyped,unused-ignore]
    except ImportError as e:
        raise _missing("to_arrow", "pyarrow", e) from e
    keys, steps, values = frame_columns(watch, kind)
    if "step" in keys:
        raise ValueError("a key is named 'step', the name of the steps' column: use to_pandas "
                         "(its index holds the steps)")  # fmt: skip
    columns = [pa.array(steps, type=pa.int64())]
    columns += [pa.array(values[:, j], type=pa.float64()) for j in range(len(keys))]
    return pa.Table.from_arrays(columns, names=["step", *keys])
