"""The timeline of a watched training run: what `aw.explore(watch)` draws above the graph.

Python builds every number; the front-end only draws them (js/src/timeline.js):
- `timeline(watch)`: steps across (the watched ones), rows down: the model's modules as a tree
  (the model itself first), each row the log10 of the gradient norm of the module's parameters
  together at each watched step; the loss of every step (unscaled) for the curve above; per
  step whether it was watched, non-finite, the loss scaler's expected overflow, or failed; the
  colour range; the first NaN/Inf (step, birth node and cause); the modules whose norm moved
  more than `MOVED` times over the run (`moved`).
- `op_rows(watch, module)`: a module's own nodes as rows (what "expand to ops" shows): each
  row the log10 of the norm of the gradient the node sent (all its output edges together).
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

if TYPE_CHECKING:
    from ..engine.record.recording import Recording
    from ..engine.watch.structure import Structure
    from ..engine.watch.trainstep import TrainingStep
    from ..engine.watch.watch import Watch

__all__ = ["FORMAT", "MOVED", "first_nonfinite", "gain", "moved", "op_rows", "timeline"]

FORMAT = "autograd_widget.timeline/1"
#: A module is listed as "moved" when its norm's largest and smallest finite values over the
#: run differ by more than this factor.
MOVED = 10.0
#: Step flags (one byte per step).
WATCHED, NONFINITE, EXPECTED, FAILED = 1, 2, 4, 8


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
    (node, name and cause None where the step was not watched or no birth was found).

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


def moved(w: Watch, factor: float = MOVED, *, table: np.ndarray | None = None
          ) -> list[dict[str, Any]]:  # fmt: skip
    """Modules whose gradient norm's largest and smallest finite non-zero values over the
    watched steps differ more than `factor` times, the largest change first: {"module",
    "factor", "low_step", "high_step"}. `table`: `w.table` of the modules, when at hand.

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
    out = []
    for col, m in enumerate(modules):
        v = table[:, col]
        ok = np.isfinite(v) & (v > 0)
        if ok.sum() < 2:
            continue
        idx = np.flatnonzero(ok)
        lo, hi = idx[np.argmin(v[ok])], idx[np.argmax(v[ok])]
        f = float(v[hi] / v[lo])
        if f > factor:
            out.append({"module": m, "factor": f, "low_step": steps[lo], "high_step": steps[hi]})
    out.sort(key=lambda d: -d["factor"])
    return out


def timeline(w: Watch, selected: int | None = None) -> dict[str, Any]:
    """The timeline payload of watch `w` (see the module docstring); arrays are numpy (the
    wire layer turns them into binary buffers): `watched` (int32 step numbers), `loss`
    (float32, every step), `flags` (uint8 per step: 1 watched, 2 non-finite, 4 the scaler's
    expected overflow, 8 failed), `scale` (float32 per watched step, NaN without a scaler),
    `values` (float32 rows x watched steps, log10 norms).

    Example:
        >>> w = aw.watch(every=2); loss = (x * 3).sum()
        >>> for _ in range(3):
        ...     with w.step(loss):
        ...         loss.backward(retain_graph=True)
        >>> t = timeline(w); t["n_steps"], t["watched"].tolist(), t["flags"].tolist()
        (3, [0, 2], [1, 0, 1])
    """
    records = w.records
    steps = [s for s in records if s.watched]
    modules = _module_order(w)
    norms = w.table(modules).T if steps and modules else np.zeros((len(modules), len(steps)))
    table = norms.T
    values = _log10(norms, _nonfinite_mask(w, steps, modules))
    flags = np.zeros(len(records), dtype=np.uint8)
    for k, st in enumerate(records):
        flags[k] = ((WATCHED if st.watched else 0) | (0 if st.finite else NONFINITE)
                    | (EXPECTED if st.expected_overflow else 0)
                    | (FAILED if st.failure is not None else 0))  # fmt: skip
    fin = values[np.isfinite(values)]
    lo, hi = (float(fin.min()), float(fin.max())) if fin.size else (0.0, 1.0)
    if hi - lo < 1e-6:
        lo, hi = lo - 0.5, hi + 0.5
    parents = [None if m == "" else (m.rpartition(".")[0] if "." in m else "") for m in modules]
    have = set(modules)
    parents = [p if p is None or p in have else "" for p in parents]
    depth = [0 if m == "" else m.count(".") + 1 for m in modules]
    own = _modules_with_ops(w)
    label = [
        (type(w.model).__name__ if w.model is not None else (w.meta.get("model") or "model"))
        if m == "" else m.rpartition(".")[2]
        for m in modules
    ]  # fmt: skip
    first = first_nonfinite(w)
    watched_numbers = [s.step for s in steps]
    if selected is None:
        selected = first["step"] if first and first["watched"] else (
            watched_numbers[-1] if watched_numbers else None)  # fmt: skip
    return {
        "format": FORMAT,
        "n_steps": len(records),
        "watched": np.asarray(watched_numbers, dtype=np.int32),
        "loss": np.asarray([s.loss for s in records], dtype=np.float32),
        "flags": flags,
        "scale": np.asarray(
            [math.nan if s.scale is None else s.scale for s in steps], dtype=np.float32
        ),
        "rows": {
            "id": modules, "label": label, "parent": parents, "depth": depth,
            "ops": [m in own for m in modules],
        },
        "values": np.ascontiguousarray(values, dtype=np.float32),
        "range": [lo, hi],
        "first": first,
        "moved": moved(w, table=table) if steps and modules else [],
        "selected": selected,
        "every": w.every,
    }


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


def _module_ops(s: Structure, module: str) -> list[tuple[tuple[str, int], int]]:
    """The nodes of `module` itself in structure `s`, each with its key (name, k): the k-th
    node of that name in the module, in node order, so the same op of another structure (a
    step whose graph differs elsewhere) shares its row."""
    seen: dict[str, int] = {}
    out = []
    for i, node in enumerate(s.graph.nodes.values()):
        if node.module == module:
            k = seen.get(node.name, 0)
            seen[node.name] = k + 1
            out.append(((node.name, k), i))
    return out


def op_rows(w: Watch, module: str) -> dict[str, Any]:
    """The nodes of `module` itself (not of its submodules) as timeline rows: {"id" (the node
    id in the first structure having it), "label" (node names), "values" (float32 rows x watched
    steps, log10 of the norm of all the node sent; NaN on steps whose graph lacks it)}. The k-th
    node of a name in the module is one row across structures.

    Example:
        >>> w = aw.watch(model); out = model(torch.ones(2, 4)).sum()
        >>> with w.step(out):
        ...     out.backward()
        >>> r = op_rows(w, "0"); r["label"], r["values"].shape
        (['AddmmBackward0', 'AccumulateGrad', 'TBackward0', 'AccumulateGrad'], (4, 1))
    """
    steps = [s for s in w.records if s.watched and s.structure is not None]
    rows: dict[tuple[str, int], int] = {}
    first_id: list[str] = []
    per_structure = []
    for s in w.structures:
        ops = _module_ops(s, module)
        per_structure.append(ops)
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
        r = [rows[key] for key, _ in ops]
        nodes = [i for _, i in ops]
        values[np.ix_(r, cols)] = _node_norms(s, [steps[c] for c in cols], nodes)
        row_of = dict(zip(nodes, r))
        for c in cols:
            for e in steps[c].nonfinite:
                hit = row_of.get(s.edge_src[e])
                if hit is not None:
                    bad[hit, c] = True
    return {"id": first_id, "label": [k[0] for k in rows],
            "values": np.ascontiguousarray(_log10(values, bad), dtype=np.float32)}  # fmt: skip


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
