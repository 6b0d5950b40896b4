"""The watch's payloads: the timeline, a module's op rows, the gain of each visible item.

`aw.explore(watch)` (widget.py) syncs `timeline_payload(watch)` as the `_timeline` trait and the
selected step as `watch_step`; the front-end (js/src/timeline.js) draws them and sends:
- "watch_step" {step, node?}: show that watched step's graph below (its recording, replayed to
  the end: every edge coloured by that step's gradients), the node selected when given;
- "timeline_rows" {module, request}: the rows of a module's own ops, or of its calls through
  time (a reply);
- "timeline_range" {request, start, stop, bins}: the module rows over steps start..stop in at
  most `bins` columns (a zoom or a pan: view/timeline.py's `bands`; a reply);
- "gain" {request}: per visible item of the graph below, log10 of |grad out| / |grad in| (a
  reply; the "gain" colour mode).

Their validators and handlers are watchmessages.py's (named in protocol.py's one table,
`MESSAGES`); this module turns view/timeline.py's numbers into payloads (numpy arrays as binary
buffers, JSON-safe floats).

Example:
    >>> w = aw.watch(); loss = (x * 3).sum()
    >>> with w.step(loss):
    ...     loss.backward()
    >>> p = timeline_payload(w); p["format"], bytes(p["watched"])
    ('autograd_widget.timeline/1', b'\\x00\\x00\\x00\\x00')
"""

from __future__ import annotations

import base64
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..view import timeline as tl
from ..view.stateview import as_buffer

if TYPE_CHECKING:
    from ..engine.record.recording import Recording
    from ..engine.watch.watch import Watch
    from ..view.scene import Scene

__all__ = ["gain_payload", "range_payload", "rows_payload", "timeline_payload"]


def _encode(d: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, np.ndarray):
            out[k] = as_buffer(v)
        elif isinstance(v, dict):
            out[k] = _encode(v)
        elif isinstance(v, float) and not math.isfinite(v):
            out[k] = None
        else:
            out[k] = v
    return out


def timeline_payload(w: Watch, selected: int | None = None) -> dict[str, Any]:
    """`view.timeline.timeline(w)` with its arrays as binary buffers (the `_timeline` trait).

    Example:
        >>> timeline_payload(aw.watch())["n_steps"]
        0
    """
    t = tl.timeline(w, selected)
    t["moved"] = [_encode({**m, "factor": float(m["factor"])}) for m in t["moved"]]
    return _encode(t)


def rows_payload(w: Watch, module: str) -> dict[str, Any]:
    """The rows of `module`'s own ops (`view.timeline.op_rows`): a REPLY, so JSON only (a
    custom message carries no buffer): `values` is the base64 of the little-endian float32
    matrix (rows x watched steps; NaN, +inf and -inf kept); `note` what the rows are when not
    one per op (a module called once per time step, a fused recurrent node), else None.

    Example:
        >>> rows_payload(aw.watch(), "")
        {'id': [], 'label': [], 'note': None, 'values': ''}
    """
    r = tl.op_rows(w, module)
    raw = np.ascontiguousarray(r["values"], dtype="<f4").tobytes()
    return {"id": r["id"], "label": r["label"], "note": r["note"],
            "values": base64.b64encode(raw).decode("ascii")}  # fmt: skip


def _b64(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype="<f4").tobytes()).decode("ascii")


def range_payload(w: Watch, start: int, stop: int, bins: int) -> dict[str, Any]:
    """The module rows over watched steps `start <= step < stop` in at most `bins` columns
    (`view.timeline.bands`: a zoom or a pan): a REPLY, so JSON only: {"start", "stop", "rows"
    (the module paths, the timeline's rows), "columns" (the first step of each column: one
    per watched step where the range holds no more than `bins`), "values" and "values_min"
    (base64 of the little-endian float32 rows x columns log10 of each column's largest and
    smallest norm; NaN, +inf and -inf kept)}. ValueError for an empty range or bins < 1.

    Example:
        >>> w = aw.watch(); loss = (x * 3).sum()
        >>> with w.step(loss):
        ...     loss.backward()
        >>> p = range_payload(w, 0, 1, 8); p["rows"], p["columns"]
        ([''], [0])
    """
    b = tl.bands(w, start, stop, bins)
    return {"start": start, "stop": stop, "rows": b["rows"],
            "columns": b["columns"].astype(int).tolist(), "values": _b64(b["values"]),
            "values_min": _b64(b["values_min"])}  # fmt: skip


def gain_payload(scene: Scene, rec: Recording) -> dict[str, Any]:
    """Per visible item of `scene`, log10 of its node's |grad out| / |grad in| in recording
    `rec` (None for boxes and nodes without both sides or with a zero or non-finite one), the
    range of those values, and the gains by node id.

    Example:
        >>> from autograd_widget.view.scene import Scene
        >>> loss = (x * 3).sum()
        >>> with aw.record(loss) as rec:
        ...     loss.backward()
        >>> gain_payload(Scene(rec.graph, aw.Replay(rec)), rec)["items"]
        [0.0, 0.47712125471966244, None]
    """
    g = tl.gain(rec)
    items: list[float | None] = []
    for j in range(len(scene.visible.item_real)):
        nid = scene.node_of_item(j)
        v = g.get(nid) if nid is not None else None
        items.append(None if v is None or not v > 0 or math.isinf(v) else math.log10(v))
    fin = [v for v in items if v is not None]
    rng = None if not fin else [min(fin), max(fin)]
    nodes = {k: (v if math.isfinite(v) else None) for k, v in g.items()}
    return {"items": items, "range": rng, "nodes": nodes}
