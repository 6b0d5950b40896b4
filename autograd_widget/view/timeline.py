"""The timeline of a watched training run: what `aw.explore(watch)` draws above the graph.

Python builds every number; the front-end only draws them (js/src/timeline.js):
- `timeline(watch)`: steps across (the watched ones), rows down: the model's modules as a tree
  (the model itself first), each row the log10 of the gradient norm of the module's parameters
  together at each watched step; the loss of every step (unscaled) for the curve above; per
  step whether it was watched, non-finite, the loss scaler's expected overflow, or failed; the
  colour range; the first NaN/Inf (step, birth node and cause; `origin`: born in the forward
  or the backward, or healed, with the forward op and module) and the steps where a NaN/Inf was
  born and healed within the step (`healed`); the modules whose norm moved the most, ranked and
  cut to those that stand out (`moved`, the rule in `moved_rule`: see `moved`).
- a run of more than `COLUMNS` watched steps: its module rows as min/max `bands` (a column
  per group of steps, its largest and smallest norm: a spike is never averaged away), the
  flags, losses and scales from the stored watch's index; `bands(watch, start, stop, bins)`
  refines a step range when the user zooms or pans.
- `op_rows(watch, module)`: a module's own nodes as rows (what "expand to ops" shows): each
  row the log10 of the norm of the gradient the node sent (all its output edges together). A
  module called several times per step (a cell in a loop through time) gets one row per call
  instead (view/timecalls.py); a fused recurrent node (nn.LSTM's) stays one row, with a note.
- `gain(recording)`: per node of one step, |gradient out| / |gradient in| (the norms of all it
  sent and all it received): where gradients shrink (< 1) or grow (> 1).

Log values: NaN where nothing was recorded (an unwatched or absent step), +inf where the
gradient was not finite (NaN or Inf in it), -inf where its norm was exactly 0.

Example:
    >>> w = aw.watch(model); out = model(torch.ones(2, 4)).sum()
    >>> with w.step(out):
    ...     out.backward()
    >>> t = timeline(w); t["rows"]["id"], t["values"].shape
    (['', '0', '2'], (3, 1))
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..engine.watch.watchseries import module_bands
from . import timecalls as tc

if TYPE_CHECKING:
    from ..engine.record.recording import Recording
    from ..engine.watch.structure import Structure
    from ..engine.watch.trainstep import TrainingStep
    from ..engine.watch.watch import Watch

__all__ = ["COLUMNS", "FORMAT", "HEALED_CAP", "MOVED", "MOVED_CAP", "MOVED_MIN_MODULES", "MOVED_Z",
           "bands", "first_nonfinite", "gain", "healed", "moved", "moved_rule", "op_rows",
           "origin", "timeline"]  # fmt: skip

FORMAT = "autograd_widget.timeline/1"
#: A module can be listed as "moved" only when its norm's largest and smallest finite values
#: over the run differ by more than this factor.
MOVED = 10.0
#: ... and when its log10 change stands out from the other modules': modified z-score (0.6745 x
#: distance to the median / the median absolute deviation; Iglewicz and Hoaglin's outlier rule)
#: above this.
MOVED_Z = 3.5
#: At most this many modules are listed, the largest change first.
MOVED_CAP = 8
#: With fewer modules than this a median says little: every module past `MOVED` is listed.
MOVED_MIN_MODULES = 8
#: A run with more watched steps than this is drawn in this many columns of min/max bands
#: (`bands`), refined on request (wire/watchmessages.py's "timeline_range"); fewer: one column
#: per watched step.
COLUMNS = 1024
#: At most this many healed steps are listed.
HEALED_CAP = 20
#: Step flags (one byte per step): watched, non-finite, the scaler's expected overflow, failed,
#: a NaN/Inf born and healed within the step (every parameter gradient finite).
WATCHED, NONFINITE, EXPECTED, FAILED, HEALED = 1, 2, 4, 8, 16


def _log10(a: np.ndarray, bad: np.ndarray | None = None) -> np.ndarray:
    """log10 of norms: NaN stays NaN (nothing recorded), 0 -> -inf, non-finite -> +inf."""
    out = np.full(a.shape, np.nan, dtype=np.float32)
    fin = np.isfinite(a)
    pos = fin & (a > 0)
    out[pos] = np.log10(a[pos])
    out[fin & (a <= 0)] = -np.inf
    out[np.isinf(a)] = np.inf
    if bad is not None:
        out[bad] = np.inf
    return out


def _module_order(w: Watch) -> list[str]:
    """Module paths: the model's own order (named_modules) when it is known, else sorted, the
    root first; only modules owning a watched parameter."""
    have = dict.fromkeys(w.keys()["modules"])
    if w.model is not None:
        named = dict.fromkeys(n for n, _ in w.model.named_modules())
        return [n for n in named if n in have] + [n for n in have if n not in named]
    return list(have)


def _nonfinite_mask(w: Watch, steps: list[TrainingStep], modules: list[str]) -> np.ndarray:
    """(modules x steps) True where a parameter of the module had a non-finite gradient.

    Linear in the names listed: each name marks the rows of its enclosing module paths (its
    dotted prefixes, and "" for the model), found by dict look-up, never by scanning every
    module for every name of every step; a step's tuple of names is resolved once per distinct
    tuple (a run that overflows repeatedly lists the same names)."""
    mask = np.zeros((len(modules), len(steps)), dtype=bool)
    row_of = {m: r for r, m in enumerate(modules)}
    root = row_of.get("")
    rows_of_names: dict[tuple[str, ...], np.ndarray] = {}
    for col, st in enumerate(steps):
        names = st.nonfinite_params
        if not names:
            continue
        rows = rows_of_names.get(names)
        if rows is None:
            hit: set[int] = set() if root is None else {root}
            for name in names:
                cut = name.find(".")
                while cut >= 0:  # every proper dotted prefix: the modules holding `name`
                    r = row_of.get(name[:cut])
                    if r is not None:
                        hit.add(r)
                    cut = name.find(".", cut + 1)
            rows = rows_of_names[names] = np.fromiter(hit, dtype=np.intp, count=len(hit))
        mask[rows, col] = True
    return mask


def first_nonfinite(w: Watch) -> dict[str, Any] | None:
    """The first non-finite step: {"step", "watched", "node", "name", "cause", "expected"}
    (node, name and cause None where the step was not watched or no birth was found). When no
    parameter gradient was ever non-finite, the first step where a NaN/Inf was born and healed
    (`Watch.first_nonfinite`'s default): `origin` says which.

    Example:
        >>> first_nonfinite(aw.watch()) is None
        True
    """
    found = w.first_nonfinite()
    if found is None:
        return None
    step, origin = found
    st = w.record(step)
    out: dict[str, Any] = {"step": step, "watched": st.watched, "node": None, "name": None,
                           "cause": None, "expected": st.expected_overflow}  # fmt: skip
    if origin is not None and st.structure is not None:
        out.update(node=origin.node, cause=origin.cause, expected=bool(origin.expected),
                   name=w.structures[st.structure].graph.nodes[origin.node].name)  # fmt: skip
    return out


def origin(w: Watch) -> dict[str, Any] | None:
    """What the first NaN/Inf (`first_nonfinite`) is: {"kind" ("born", "propagated", "healed"
    or None where the step was not watched), "where" ("forward": the values the node saved were
    already non-finite in the forward, "backward": its own derivative made it), "module" (the
    node's), "forward_node", "forward_op", "forward_module", "forward_cause", "forward_exact"
    (the forward op that made it, `Origin`'s fields; None for a backward birth)}; None when no
    step had a NaN/Inf. The timeline names the forward op and its module from these.

    Example:
        >>> origin(aw.watch()) is None
        True
    """
    found = w.first_nonfinite()
    if found is None:
        return None
    step, o = found
    st = w.record(step)
    out: dict[str, Any] = dict.fromkeys(("kind", "where", "module", "forward_node", "forward_op",
                                         "forward_module", "forward_cause"))  # fmt: skip
    out["forward_exact"] = True
    if o is None or st.structure is None:
        return out
    nodes = w.structures[st.structure].graph.nodes
    out.update(kind=o.kind, where=o.where, module=nodes[o.node].module if o.node in nodes else None)
    if o.where == "forward":
        out.update(forward_node=o.forward_node, forward_op=o.forward_op,
                   forward_module=o.forward_module, forward_cause=o.forward_cause,
                   forward_exact=bool(o.forward_exact))  # fmt: skip
    return out


def _healed_steps(w: Watch) -> list[int]:
    """Watched steps whose parameter gradients came out finite although some gradient in
    the step was not: a NaN/Inf born and healed within the step."""
    return [st.step for st in w.records
            if st.watched and st.finite and (st.nonfinite or st.slot_nonfinite)]  # fmt: skip


def healed(w: Watch, *, cap: int = HEALED_CAP, steps: list[int] | None = None
           ) -> dict[str, Any] | None:  # fmt: skip
    """The steps in which a NaN/Inf was born and healed within the step (a mask or a
    multiplication by zero removed it before any parameter gradient): {"steps" (the first
    `cap`), "count", "first": the first one's {"step", "node" and "name" (where it was
    removed), "born_node", "born_name", "born_cause" (where it was born, and why), "module"
    (the birth node's)}}; None when there is none. Listed even when a later step's NaN/Inf
    reached the parameters, so that a healed birth is never hidden. Reads the first one's
    recording (one step); an unwatched step checks parameters only, so is never listed.
    `steps`: those steps, when already known (a stored watch's index flags them).

    Example:
        >>> healed(aw.watch()) is None
        True
    """
    steps = _healed_steps(w) if steps is None else steps
    if not steps:
        return None
    step = steps[0]
    st = w.record(step)
    first: dict[str, Any] = dict.fromkeys(("node", "name", "born_node", "born_name",
                                           "born_cause", "module"))  # fmt: skip
    first["step"] = step
    if st.structure is not None:
        nodes = w.structures[st.structure].graph.nodes
        origins = w.recording(step).nonfinite_origins()
        cured = [o for o in origins if o.kind == "healed"]
        born = [o for o in origins if o.kind == "born"]
        if cured and cured[0].node in nodes:
            first.update(node=cured[0].node, name=nodes[cured[0].node].name)
        if born and born[0].node in nodes:
            b = born[0]
            first.update(born_node=b.node, born_name=nodes[b.node].name, born_cause=b.cause,
                         module=nodes[b.node].module)  # fmt: skip
    return {"steps": steps[:cap], "count": len(steps), "first": first}


def _changes(w: Watch, table: np.ndarray, modules: list[str]) -> list[dict[str, Any]]:
    """Per module with two finite non-zero norms: its largest / smallest ratio over the run."""
    steps = w.steps
    out = []
    for col, m in enumerate(modules):
        v = table[:, col]
        ok = np.isfinite(v) & (v > 0)
        if ok.sum() < 2:
            continue
        idx = np.flatnonzero(ok)
        lo, hi = idx[np.argmin(v[ok])], idx[np.argmax(v[ok])]
        out.append({"module": m, "factor": float(v[hi] / v[lo]), "low_step": steps[lo],
                    "high_step": steps[hi]})  # fmt: skip
    return out


def _rank_moved(changes: list[dict[str, Any]], factor: float, z: float, cap: int
                ) -> tuple[list[dict[str, Any]], int, bool]:  # fmt: skip
    """(the modules that stand out, the largest change first, capped; how many moved more
    than `factor`; whether the outlier rule applied)."""
    over = [c for c in changes if c["factor"] > factor]
    robust = len(changes) >= MOVED_MIN_MODULES
    if robust:
        s = np.log10([c["factor"] for c in changes])
        med = float(np.median(s))
        mad = float(np.median(np.abs(s - med)))
        for c in over:
            d = math.log10(c["factor"]) - med
            c["z"] = math.inf if mad == 0 and d > 0 else (0.6745 * d / mad if mad > 0 else 0.0)
        over = [c for c in over if c["z"] > z]
    over.sort(key=lambda d: -d["factor"])
    n_over = sum(c["factor"] > factor for c in changes)
    return over[:cap], n_over, robust


def moved(w: Watch, factor: float = MOVED, *, table: np.ndarray | None = None,
          z: float = MOVED_Z, cap: int = MOVED_CAP) -> list[dict[str, Any]]:  # fmt: skip
    """The modules whose gradient norm moved the most over the watched steps AND stand out,
    the largest change first, at most `cap`: {"module", "factor", "low_step", "high_step"}
    (and "z" where the outlier rule applied). `table`: `w.table` of the modules, when at hand.

    The rule (`moved_rule` says it in words): a module's change is the ratio of its norm's
    largest and smallest finite non-zero values over the watched steps (`low_step`,
    `high_step`: where). It is listed when that ratio is over `factor` and, in a model of at
    least `MOVED_MIN_MODULES` modules, when the log10 of it stands out from the other
    modules': a modified z-score (0.6745 (x - median) / MAD) over `z`. So a run in which every
    module drifts 30x (early training) lists none of them, and the one that went 10,000x is
    listed first; a small model lists every module past `factor`.

    Example:
        >>> moved(aw.watch())
        []
    """
    steps = w.steps
    if not steps:
        return []
    modules = _module_order(w)
    if table is None:
        table = w.table(modules)
    return _rank_moved(_changes(w, table, modules), factor, z, cap)[0]


def moved_rule(listed: int, over: int, scored: int, robust: bool, factor: float = MOVED,
               z: float = MOVED_Z, cap: int = MOVED_CAP) -> str:  # fmt: skip
    """The "moved" list's rule in one sentence, with its counts (the timeline's help text).

    Example:
        >>> moved_rule(2, 51, 57, True)[:44]
        '2 of the 51 modules whose gradient norm move'
        >>> "robust z-score" in moved_rule(2, 51, 57, True), "z-score" in moved_rule(3, 3, 3, False)
        (True, False)
        >>> moved_rule(0, 0, 3, False)[:40]
        "No module's gradient norm moved more tha"
    """
    if over == 0:
        return (f"No module's gradient norm moved more than {factor:g}x over the run (largest / "
                "smallest value), so none is listed.")  # fmt: skip
    head = (f"{listed} of the {over} modules whose gradient norm moved more than {factor:g}x "
            "over the run (largest / smallest value)")  # fmt: skip
    if robust:
        rule = (f" stand out from the {scored} modules: the log10 of that ratio has a robust "
                f"z-score (0.6745 x distance to the median / median absolute deviation) over "
                f"{z:g}")  # fmt: skip
    else:
        rule = (f" are listed (with fewer than {MOVED_MIN_MODULES} modules a median says "
                "little, so no outlier rule)")  # fmt: skip
    return head + rule + f"; the largest change first, at most {cap}."


def timeline(w: Watch, selected: int | None = None, columns: int = COLUMNS) -> dict[str, Any]:
    """The timeline payload of watch `w` (see the module docstring); arrays are numpy (the
    wire layer turns them into binary buffers): `watched` (int32 step numbers), `loss`
    (float32, every step), `flags` (uint8 per step: 1 watched, 2 non-finite, 4 the scaler's
    expected overflow, 8 failed, 16 a NaN/Inf born and healed within it), `scale` (float32 per
    watched step, NaN without a scaler), `values` (float32 rows x watched steps, log10 norms).

    A run of more than `columns` watched steps (a long run: a column per watched step would be
    finer than the pixels) has its module rows as `bands` of the whole run instead: `values`
    is then rows x `columns` (log10 of each column's largest norm), with `values_min` (of its
    smallest) and `columns` (int32 first step of each column) added; everything else as
    above, read from a stored watch's index (flags, losses, scales), never step by step.

    Example:
        >>> w = aw.watch(every=2); loss = (x * 3).sum()
        >>> for _ in range(3):
        ...     with w.step(loss):
        ...         loss.backward(retain_graph=True)
        >>> t = timeline(w); t["n_steps"], t["watched"].tolist(), t["flags"].tolist()
        (3, [0, 2], [1, 0, 1])
    """
    if len(w.steps) > columns:
        return _banded(w, selected, columns)
    records = w.records
    steps = [s for s in records if s.watched]
    modules = _module_order(w)
    norms = w.table(modules).T if steps and modules else np.zeros((len(modules), len(steps)))
    table = norms.T
    values = _log10(norms, _nonfinite_mask(w, steps, modules))
    flags = _flags(w)
    fin = values[np.isfinite(values)]
    lo, hi = (float(fin.min()), float(fin.max())) if fin.size else (0.0, 1.0)
    if hi - lo < 1e-6:
        lo, hi = lo - 0.5, hi + 0.5
    first = first_nonfinite(w)
    changes = _changes(w, table, modules) if steps and modules else []
    listed, n_over, robust = _rank_moved(changes, MOVED, MOVED_Z, MOVED_CAP)
    watched_numbers = [s.step for s in steps]
    if selected is None:
        selected = first["step"] if first and first["watched"] else (
            watched_numbers[-1] if watched_numbers else None)  # fmt: skip
    return {
        "format": FORMAT,
        "n_steps": len(flags),
        "watched": np.asarray(watched_numbers, dtype=np.int32),
        "loss": np.asarray([s.loss for s in records], dtype=np.float32),
        "flags": flags,
        "scale": np.asarray(
            [math.nan if s.scale is None else s.scale for s in steps], dtype=np.float32
        ),
        "rows": _rows(w, modules),
        "values": np.ascontiguousarray(values, dtype=np.float32),
        "range": [lo, hi],
        "first": first,
        "origin": origin(w) if first else None,
        "healed": healed(w),
        "moved": listed,
        "moved_rule": moved_rule(len(listed), n_over, len(changes), robust),
        "selected": selected,
        "every": w.every,
    }


def _flags(w: Watch) -> np.ndarray:
    """The step flags (uint8 per step): a stored watch's index holds them (the same bits:
    engine/watch/awtile.py's `ROW_FLAGS`), a watch in memory has them from its records."""
    store = getattr(w, "store", None)
    if store is not None:
        return np.asarray(store.rows["flags"], dtype=np.uint8)
    records = w.records
    flags = np.zeros(len(records), dtype=np.uint8)
    for k, st in enumerate(records):
        flags[k] = ((WATCHED if st.watched else 0) | (0 if st.finite else NONFINITE)
                    | (EXPECTED if st.expected_overflow else 0)
                    | (FAILED if st.failure is not None else 0)
                    | (HEALED if st.watched and st.finite and (st.nonfinite or st.slot_nonfinite)
                       else 0))  # fmt: skip
    return flags


def _all_steps(w: Watch) -> np.ndarray:
    """Every step's number, watched or not, in order (a stored watch: from its index)."""
    store = getattr(w, "store", None)
    if store is not None:
        return np.asarray(store.rows["step"], dtype=np.int64)
    return np.asarray([st.step for st in w.records], dtype=np.int64)


def bands(w: Watch, start: int | None = None, stop: int | None = None, bins: int = COLUMNS,
          modules: list[str] | None = None) -> dict[str, Any]:  # fmt: skip
    """The module rows of the timeline over watched steps `start <= step < stop` in at most
    `bins` columns (what a zoom or a pan asks for: engine/watch/watchseries.py): {"rows" (the
    module paths, the timeline's row order), "columns" (int32 first step of each column: one
    per watched step where the range holds no more than `bins`), "values" (float32 rows x
    columns, log10 of each column's LARGEST norm: a spike is never averaged away),
    "values_min" (the same of the smallest), "bands" (the `Bands`, for "moved")}. Log values
    as the timeline's; +inf in "values" for a column holding a step where a parameter of the
    module had a non-finite gradient. ValueError for bins < 1 or an empty range.

    Example:
        >>> w = aw.watch(params={"x": x}); loss = (x * 3).sum()
        >>> for _ in range(4):
        ...     with w.step(loss):
        ...         loss.backward(retain_graph=True)
        >>> b = bands(w, 0, 4, 2); b["columns"].tolist(), b["values"].shape
        ([0, 2], (1, 2))
    """
    modules = _module_order(w) if modules is None else modules
    b = module_bands(w, modules, start, stop, bins)
    hi = _log10(b.max)
    lo = _log10(b.min)
    flags = _flags(w)
    bad = (flags & NONFINITE) != 0
    bad &= (flags & WATCHED) != 0
    if bad.any() and modules and len(b.columns):
        watched = np.asarray(w.steps, dtype=np.int64)
        nf = _all_steps(w)[bad]
        pos = np.searchsorted(watched, nf)
        col = np.searchsorted(b.cut, pos, side="right") - 1
        inside = (pos >= b.cut[0]) & (pos < b.cut[-1])
        picked = [int(s) for s in nf[inside].tolist()]
        mask = _nonfinite_mask(w, [w.record(s) for s in picked], modules)
        for j, c in enumerate(col[inside].tolist()):
            hi[mask[:, j], c] = np.inf
            lo[mask[:, j] & np.isnan(lo[:, c]), c] = np.inf
    return {"rows": modules, "columns": np.asarray(b.columns, dtype=np.int32),
            "values": np.ascontiguousarray(hi, dtype=np.float32),
            "values_min": np.ascontiguousarray(lo, dtype=np.float32), "bands": b}  # fmt: skip


def _banded(w: Watch, selected: int | None, columns: int) -> dict[str, Any]:
    """`timeline` of a run with more watched steps than `columns`: its module rows as
    `bands` of the whole run (the rest as `timeline`'s, from the index where the watch is
    stored: its flags, losses, scales). Its `watched` is the first watched step of each column
    (`columns` holds each column's first step): the grid's axis, so a front-end that knows no
    bands draws one column per band (coloured by the band's largest norm: a spike is never
    averaged away) and a click on a column opens its first watched step; `values_min` holds
    each band's smallest norm."""
    watched = np.asarray(w.steps, dtype=np.int64)
    modules = _module_order(w)
    got = bands(w, None, None, columns, modules)
    b = got["bands"]
    flags = _flags(w)
    both = np.concatenate([got["values"][np.isfinite(got["values"])],
                           got["values_min"][np.isfinite(got["values_min"])]])  # fmt: skip
    lo, hi = (float(both.min()), float(both.max())) if both.size else (0.0, 1.0)
    if hi - lo < 1e-6:
        lo, hi = lo - 0.5, hi + 0.5
    changes = [{"module": m, "factor": float(b.high[r] / b.low[r]),
                "low_step": int(watched[b.low_at[r]]), "high_step": int(watched[b.high_at[r]])}
               for r, m in enumerate(modules) if b.n_ok[r] >= 2]  # fmt: skip
    listed, n_over, robust = _rank_moved(changes, MOVED, MOVED_Z, MOVED_CAP)
    first = first_nonfinite(w)
    if selected is None:
        selected = first["step"] if first and first["watched"] else int(watched[-1])
    healed_steps = _all_steps(w)[(flags & HEALED) != 0].tolist()
    return {
        "format": FORMAT,
        "n_steps": len(flags),
        "watched": watched[np.minimum(np.searchsorted(watched, got["columns"]),
                                      len(watched) - 1)].astype(np.int32),
        "loss": np.asarray(w.losses(), dtype=np.float32),
        "flags": flags,
        "scale": np.asarray(w.scales, dtype=np.float32),
        "rows": _rows(w, modules),
        "values": got["values"],
        "values_min": got["values_min"],
        "columns": got["columns"],
        "range": [lo, hi],
        "first": first,
        "origin": origin(w) if first else None,
        "healed": healed(w, steps=healed_steps),
        "moved": listed,
        "moved_rule": moved_rule(len(listed), n_over, len(changes), robust),
        "selected": selected,
        "every": w.every,
    }


def _rows(w: Watch, modules: list[str]) -> dict[str, Any]:
    """The timeline's module rows: ids, labels, parents, depths, whether they have ops, their
    calls per step and fused nodes."""
    parents = [None if m == "" else (m.rpartition(".")[0] if "." in m else "") for m in modules]
    have = set(modules)
    parents = [p if p is None or p in have else "" for p in parents]
    depth = [0 if m == "" else m.count(".") + 1 for m in modules]
    own = _modules_with_ops(w)
    calls = tc.module_calls(w.structures, modules)
    label = [
        (type(w.model).__name__ if w.model is not None else (w.meta.get("model") or "model"))
        if m == "" else m.rpartition(".")[2]
        for m in modules
    ]  # fmt: skip
    return {"id": modules, "label": label, "parent": parents, "depth": depth,
            "ops": [m in own for m in modules], "calls": [calls[m][0] for m in modules],
            "fused": [calls[m][1] for m in modules]}  # fmt: skip


def _modules_with_ops(w: Watch) -> set[str]:
    out: set[str] = set()
    for s in w.structures:
        for node in s.graph.nodes.values():
            if node.module is not None:
                out.add(node.module)
    return out


def _node_norms(s: Structure, steps: list[TrainingStep], nodes: list[int]) -> np.ndarray:
    """(nodes x steps) the norm of everything each node sent, per step of structure `s`."""
    edges = np.stack([st.edge_norms for st in steps]).astype(np.float64)  # type: ignore[misc]
    out = np.full((len(nodes), len(steps)), np.nan)
    for r, i in enumerate(nodes):
        cols = [e for e in s.out_edge[i] if e >= 0]
        if s.accumulate[i]:
            k = s.param_of[i]
            out[r] = [st.param_norms[k] for st in steps]  # type: ignore[index]
            continue
        if not cols:
            continue
        sub = edges[:, cols]
        present = ~np.isnan(sub)
        sq = np.where(present, sub * sub, 0.0).sum(axis=1)
        out[r] = np.where(present.any(axis=1), np.sqrt(sq), np.nan)
    return out


def _module_ops(s: Structure, module: str, by_call: bool
                ) -> list[tuple[tuple[str, int], int]]:  # fmt: skip
    """The nodes of `module` itself in structure `s`, each with its row key: (name, k), the
    k-th node of that name in the module, in node order, so the same op of another structure
    (a step whose graph differs elsewhere) shares its row; with `by_call` (the module is called
    several times per step), ("", t) for every node of call t (view/timecalls.py), the
    AccumulateGrad nodes (shared by the calls) keyed by name as before."""
    calls = tc.calls_of(s, module)[1] if by_call else {}
    seen: dict[str, int] = {}
    out = []
    for i, node in enumerate(s.graph.nodes.values()):
        if node.module != module:
            continue
        if i in calls:
            out.append((("", calls[i]), i))
            continue
        k = seen.get(node.name, 0)
        seen[node.name] = k + 1
        out.append(((node.name, k), i))
    return out


def op_rows(w: Watch, module: str) -> dict[str, Any]:
    """The nodes of `module` itself (not of its submodules) as timeline rows: {"id" (the node
    id in the first structure having it), "label" (node names), "values" (float32 rows x watched
    steps, log10 of the norm of all the node sent; NaN on steps whose graph lacks it), "note"
    (None, or what the rows mean when they are not one per op)}. The k-th node of a name in the
    module is one row across structures.

    A module called several times per step (a recurrent cell in a loop: view/timecalls.py) has
    one row per call instead, "t=0" the first call in the forward, each the norm of all its
    call's ops sent together: the gradient through time, which reaches t=0 last; its parameters'
    AccumulateGrad rows follow. A fused recurrent node (nn.LSTM's) stays one row and the note
    says why.

    Example:
        >>> w = aw.watch(model); out = model(torch.ones(2, 4)).sum()
        >>> with w.step(out):
        ...     out.backward()
        >>> r = op_rows(w, "0"); r["label"], r["values"].shape
        (['AddmmBackward0', 'AccumulateGrad', 'TBackward0', 'AccumulateGrad'], (4, 1))
    """
    steps = [s for s in w.records if s.watched and s.structure is not None]
    calls = max((tc.calls_of(s, module)[0] for s in w.structures), default=1)
    by_call = calls > 1
    rows: dict[tuple[str, int], int] = {}
    first_id: list[str] = []
    per_structure = []
    fused: list[str] = []
    for s in w.structures:
        ops = _module_ops(s, module, by_call)
        per_structure.append(ops)
        names = list(s.graph.nodes.values())
        fused += [names[i].name for _, i in ops if tc.is_fused(names[i].name)]
        for key, i in ops:
            if key not in rows:
                rows[key] = len(rows)
                first_id.append(f"n{i}")
    values = np.full((len(rows), len(steps)), np.nan)
    bad = np.zeros(values.shape, dtype=bool)
    by_sid: dict[int, list[int]] = {}
    for col, st in enumerate(steps):
        by_sid.setdefault(st.structure, []).append(col)  # type: ignore[arg-type]
    for sid, cols in by_sid.items():
        s, ops = w.structures[sid], per_structure[sid]
        if not ops:
            continue
        per_node = _node_norms(s, [steps[c] for c in cols], [i for _, i in ops])
        r_of = np.array([rows[key] for key, _ in ops])
        sq = np.zeros((len(rows), len(cols)))
        seen = np.zeros((len(rows), len(cols)), dtype=bool)
        np.add.at(sq, r_of, np.where(np.isnan(per_node), 0.0, per_node * per_node))
        np.logical_or.at(seen, r_of, ~np.isnan(per_node))
        used = np.unique(r_of)
        values[np.ix_(used, cols)] = np.where(seen[used], np.sqrt(sq[used]), np.nan)
        row_of = {i: rows[key] for key, i in ops}
        for c in cols:
            for e in steps[c].nonfinite:
                hit = row_of.get(s.edge_src[e])
                if hit is not None:
                    bad[hit, c] = True
    note = None
    if by_call:
        note = (f"called {calls} times per step (a loop through time): one row per call, t=0 "
                "the first in the forward, each the norm of all its ops sent together; the "
                "calls are told apart by their ops' repeating forward order")  # fmt: skip
    elif fused:
        note = tc.FUSED_NOTE.format(op=fused[0])
    keys = list(rows)  # the calls first, t=0 on top, then the other rows in node order
    order = sorted(range(len(keys)), key=lambda r: (0, keys[r][1]) if keys[r][0] == "" else (1, r))
    label = [f"t={keys[r][1]}" if keys[r][0] == "" else keys[r][0] for r in order]
    logs = _log10(values, bad)[order] if order else _log10(values, bad)
    return {"id": [first_id[r] for r in order], "label": label, "note": note,
            "values": np.ascontiguousarray(logs, dtype=np.float32)}  # fmt: skip


def gain(rec: Recording) -> dict[str, float]:
    """Per node of a recorded step: |gradient out| / |gradient in|, the norms of everything it
    sent and everything it received (each the root of the sum of its slots' squared norms).
    Nodes that sent or received nothing (or only zeros) are left out; a non-finite side gives
    NaN.

    Example:
        >>> loss = (x * 3).sum()
        >>> with aw.record(loss) as rec:
        ...     loss.backward()
        >>> gain(rec)
        {'n0': 1.0, 'n1': 3.0}
    """
    out: dict[str, float] = {}
    for r in rec.executions:
        gin = [s.norm for s in r.inputs if s is not None]
        gout = [s.norm for s in r.outputs if s is not None]
        if not gin or not gout:
            continue
        a = math.sqrt(sum(v * v for v in gin))
        b = math.sqrt(sum(v * v for v in gout))
        if a == 0 or b != b or a != a:
            if a != a or b != b or math.isinf(a) or math.isinf(b):
                out[r.node] = math.nan
            continue
        out[r.node] = b / a
    return out
