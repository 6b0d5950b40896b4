"""The view model: what the front-end draws, as arrays, and what changes after each step.

Two payloads (see the widget protocol in `widget.py`):
- the graph payload, built once per layout: node/edge arrays, labels, coordinates and edge
  polylines as float32 buffers;
- the state payload, rebuilt after every step: node states, edge gradient norms/flags, the small
  gradients' values, the slots waiting at the next node, the status line. It is built
  incrementally: only the nodes of steps done or undone since the last update are revisited.

Also the plotly `go.Figure` of the current state (`to_figure`), for static export. Knows nothing of
traitlets or anywidget; everything autograd comes from the graph and the stepper.
"""

from __future__ import annotations

import itertools
import math
import re
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..util.gcpause import gc_paused
from ..util.jsonsafe import encode, encode_number
from ..view.layout import Layout, layered_layout
from ..view.visible import VisibleGraph, edge_arrays, module_paths, visible_graph

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    import plotly.graph_objects as go

    from ..core.graph import BackwardGraph
    from ..core.summary import Summary
    from ..engine.stepper import Stepper
    from ..view.repeats import Repeat

PENDING, NEXT, DONE, FAILED, NO_GRADIENT = 0, 1, 2, 3, 4
NOT_FLOWED, FLOWED, NONFINITE, FLOWED_NONE = 0, 1, 2, 3
#: Gradients with at most this many elements get their values written on the edge.
LABEL_MAX_NUMEL = 4

_BACKWARD_SUFFIX = re.compile(r"Backward\d*$")


def short_label(node: Any) -> str:
    """What the box says: the op without its "Backward0" suffix, or the leaf's name."""
    if node.kind == "accumulate_grad":
        return node.leaf_name or "leaf"
    name = node.name.rpartition("::")[2]
    return _BACKWARD_SUFFIX.sub("", name) or name


def display_kind(node: Any) -> str:
    if node.kind == "accumulate_grad":
        return "parameter" if node.leaf_kind == "parameter" else "input"
    return node.kind


def _buf(a: np.ndarray) -> memoryview:
    """A binary buffer ipywidgets sends as-is (it arrives in JS as a DataView)."""
    return memoryview(np.ascontiguousarray(a).tobytes())


def compute_layout(
    graph: BackwardGraph, orientation: str = "TB", visible: VisibleGraph | None = None
) -> Layout:
    """Layered layout of the visible items, roots on top (TB) or left (LR)."""
    vis = visible if visible is not None else visible_graph(graph)
    index = {nid: i for i, nid in enumerate(graph.nodes)}
    roots = sorted({int(vis.real_item[index[r]]) for r, _ in graph.roots} - {-1})
    return layered_layout(
        vis.n_items, vis.edge_src, vis.edge_dst, roots=roots, orientation=orientation
    )


def group_label(path: str, model_name: str | None) -> str:
    return path if path else (model_name or "model")


SAVED_OK, SAVED_STALE, SAVED_FREED = 0, 1, 2
_SAVED_CODES = {"stale": SAVED_STALE, "freed": SAVED_FREED}


#: Version of the graph payload's format (`graph_payload`); the front-end also reads version 1.
PAYLOAD_VERSION = 2


class _Table:
    """Unique values in first-seen order, and each one's index: a payload's string tables."""

    __slots__ = ("index", "items")

    def __init__(self) -> None:
        self.index: dict[Any, int] = {}
        self.items: list[Any] = []

    def add(self, value: Any) -> int:
        i = self.index.get(value)
        if i is None:
            i = self.index[value] = len(self.items)
            self.items.append(value)
        return i


def _factorize(keys: Iterable[Any], count: int) -> tuple[np.ndarray, list[Any]]:
    """Codes of `keys` (hashable) into the list of their distinct values, first-seen order."""
    table: dict[Any, int] = {}
    # Each key's first position, at C speed; then the positions renumbered 0, 1, 2...
    first = np.fromiter(map(table.setdefault, keys, itertools.count()), np.int64, count)
    _, codes = np.unique(first, return_inverse=True)
    return codes.reshape(-1), list(table)


def _small_uint(a: np.ndarray) -> np.ndarray:
    """`a` (non-negative integers) in the narrowest of uint8 / uint16 / uint32."""
    top = int(a.max()) if len(a) else 0
    return a.astype(np.uint8 if top < 1 << 8 else np.uint16 if top < 1 << 16 else np.uint32)


class _NodeKey(NamedTuple):
    """What a node's label, name, kind and module depend on (`_NODE_KEY` reads it off a Node)."""

    name: str
    kind: str
    leaf_name: str | None
    leaf_kind: str | None
    module: str | None


_NODE_KEY = attrgetter("name", "kind", "leaf_name", "leaf_kind", "module")
_INPUTS = attrgetter("inputs")
_CANONICAL_IDS: list[str] = []


def _canonical_ids(graph: BackwardGraph) -> bool:
    """True when node i is named "n{i}" (every captured graph): the front-end derives the ids."""
    n = len(graph.nodes)
    if len(_CANONICAL_IDS) < n:
        _CANONICAL_IDS.extend(f"n{i}" for i in range(len(_CANONICAL_IDS), n))
    return list(graph.nodes) == _CANONICAL_IDS[:n]


def graph_payload(
    graph: BackwardGraph,
    layout: Layout,
    visible: VisibleGraph | None = None,
    validity: dict[str, str] | None = None,
    *,
    folds: Mapping[str, Repeat] | None = None,
) -> dict[str, Any]:
    """The `_graph` trait: everything static about the drawing of the visible graph, once.

    `validity` (from `saved.node_validity`) marks nodes whose saved tensors are stale or freed,
    so the drawing shows which nodes will fail before any step. `folds` (fold key -> run, as
    given to `visible_graph`) names the fold boxes: a box whose module is a fold key is labelled
    with the run ("layers.0–47 ×48"), and the top-level `folds` list describes every folded run
    (key, label, count, period, nodes_per_unit, members, and `item`: its box, -1 when hidden).

    Format (version 2), compact for big graphs (about 25 bytes a node for a 50k-node chain, 50
    for a 48-layer Transformer); buffers are binary, each one's element type in `dtypes`
    ("nodes.label" -> "uint8"), and `decode_graph` (or the front-end's `decodeGraph`) expands it
    to one record per item and edge:
    - `nodes.strings`: the distinct strings; `label`, `name`, `module` (null: no module) and
      `shape` (a leaf's shape, else "") are index buffers into it. `nodes.kind` indexes
      `nodes.kinds`; `nodes.inputs` indexes `nodes.input_sigs`, the distinct lists of input slot
      metadata `[shape, dtype, device]`. `nodes.roots`: the items holding a root.
    - left out when they carry nothing: `nodes.id` (node i is "n{i}", a box "group:{module}"),
      `nodes.real` and `edges.real` (every node an item, every edge kept), `nodes.members` (no
      box), `nodes.saved_state` (all usable).
    - edge ids: "{src}:{output_nr}" with src the id of the edge's source item; `edges.src_id`
      (`index`, `id`) names the real source where that is not the item (a box, hidden plumbing).
    - polylines: an edge runs from its source's (x, y) through its bends to its target's; only
      edges that bend are listed (`bent`), their points in `bend_x`/`bend_y` from `bend_ptr`.
    """
    vis = visible if visible is not None else visible_graph(graph)
    with gc_paused():
        return _graph_payload(graph, layout, vis, validity or {}, folds)


def _graph_payload(
    graph: BackwardGraph,
    layout: Layout,
    vis: VisibleGraph,
    validity: dict[str, str],
    folds: Mapping[str, Repeat] | None,
) -> dict[str, Any]:
    nodes = list(graph.nodes.values())
    n_items = vis.n_items
    item_real = vis.item_real
    x, y = np.asarray(layout.x, np.float32), np.asarray(layout.y, np.float32)
    bounds = [0.0, 0.0, 0.0, 0.0]
    if n_items:
        bounds = [float(x.min()), float(x.max()), float(y.min()), float(y.max())]
    identity = vis.is_identity
    strings, kinds, sigs = _Table(), _Table(), _Table()
    label = np.zeros(n_items, np.int64)
    name = np.zeros(n_items, np.int64)
    kind = np.zeros(n_items, np.int64)
    module = np.zeros(n_items, np.int64)
    shape = np.zeros(n_items, np.int64)
    inputs = np.zeros(n_items, np.int64)
    no_shape = strings.add("")

    # Real nodes: one Python step per node (its key), the rest per distinct key, vectorised.
    real_j = np.flatnonzero(item_real >= 0)
    sel = nodes if identity else [nodes[r] for r in item_real[real_j].tolist()]
    if sel:
        row_of, rows = _factorize(map(_NODE_KEY, sel), len(sel))
        sig_of, sig_list = _factorize(map(tuple, map(_INPUTS, sel)), len(sel))
        row_cols = np.zeros((len(rows), 4), np.int64)
        row_leaf = np.zeros(len(rows), bool)
        for r, key in enumerate(rows):
            node = _NodeKey._make(key)
            row_cols[r] = (strings.add(short_label(node)), strings.add(node.name),
                           kinds.add(display_kind(node)), strings.add(node.module))
            row_leaf[r] = node.kind == "accumulate_grad"
        sig_index = np.array([sigs.add(sig) for sig in sig_list], np.int64)
        # A leaf's box shows its shape: the first input slot's.
        leaf = row_leaf[row_of]
        sig_shape = np.full(len(sig_list), no_shape, np.int64)
        for s in np.unique(sig_of[leaf]).tolist():
            if sig_list[s]:
                sig_shape[s] = strings.add(str(list(sig_list[s][0].shape)))
        label[real_j], name[real_j], kind[real_j], module[real_j] = row_cols[row_of].T
        inputs[real_j] = sig_index[sig_of]
        shape[real_j] = np.where(leaf, sig_shape[sig_of], no_shape)

    # Boxes: a handful of items.
    members = np.zeros(n_items, np.int32)
    fold_item: dict[str, int] = {}
    labels: list[str] = []
    names: list[str] = []
    box_j = np.flatnonzero(item_real < 0).tolist()
    for j in box_j:
        path = vis.item_group[j] or ""
        mem = vis.item_members[j]
        members[j] = 0 if mem is None else len(mem)
        run = folds.get(path) if folds and path in vis.folds else None
        if run is not None:
            fold_item[path] = j
            labels.append(run.label)
            names.append(f"{run.label}: {run.count} blocks × {run.nodes_per_unit} nodes "
                         f"({members[j]} nodes)")
        else:
            labels.append(group_label(path, graph.model_name))
            names.append(f"{group_label(path, graph.model_name)} ({members[j]} nodes)")
        module[j] = strings.add(path)
    if box_j:
        label[box_j] = [strings.add(s) for s in labels]
        name[box_j] = [strings.add(s) for s in names]
        kind[box_j] = kinds.add("group")
        shape[box_j] = no_shape
        inputs[box_j] = sigs.add(())

    # Roots and saved-tensor marks, through each real node's item (a box takes its members').
    real_item = vis.real_item
    canonical = _canonical_ids(graph)
    pos: dict[str, int] | None = None
    if validity or not canonical:
        pos = {nid: i for i, nid in enumerate(graph.nodes)}
    at = pos.__getitem__ if pos is not None else (lambda nid: int(nid[1:]))
    roots = sorted({int(real_item[at(r)]) for r, _ in graph.roots} - {-1})
    saved_state = np.zeros(n_items, np.uint8)
    for nid, st in validity.items():
        code = _SAVED_CODES.get(st, SAVED_OK)
        i = pos.get(nid) if pos is not None else None
        if code and i is not None and real_item[i] >= 0:
            saved_state[real_item[i]] = max(saved_state[real_item[i]], code)

    # Edges.
    e_real = vis.edge_real
    e_count = len(e_real)
    src_all, out_all, _, in_all = edge_arrays(graph)
    edges_identity = e_count == len(src_all) and bool((e_real == np.arange(e_count)).all())
    real_src = src_all[e_real]
    odd = np.flatnonzero(real_src != item_real[vis.edge_src]) if e_count else real_src
    ptr = np.asarray(layout.edge_ptr, np.int64)
    bends = ptr[1:] - ptr[:-1] - 3  # points less the two ends and the NaN separator
    bent = np.flatnonzero(bends > 0)
    count = bends[bent]
    bend_ptr = np.concatenate(([0], np.cumsum(count))).astype(np.int64)
    pick = np.arange(int(bend_ptr[-1])) - np.repeat(bend_ptr[:-1] - ptr[bent] - 1, count)

    dtypes: dict[str, str] = {}
    out: dict[str, Any] = {
        "version": PAYLOAD_VERSION,
        "orientation": layout.orientation,
        "bounds": bounds,
        "collapsed": sorted(vis.collapsed),
        "show_plumbing": vis.show_plumbing,
        "real_count": len(nodes),
        "hidden": int((real_item < 0).sum()),
        "groups": module_paths(graph),
        "folds": [
            {"key": key, "label": run.label, "count": run.count, "period": run.period,
             "nodes_per_unit": run.nodes_per_unit, "members": list(run.members),
             "item": fold_item.get(key, -1)}
            for key, run in (folds or {}).items() if key in vis.folds
        ],
        "dtypes": dtypes,
        "nodes": {
            "count": n_items,
            "strings": strings.items,
            "kinds": kinds.items,
            "input_sigs": [[[list(m.shape), m.dtype, m.device] for m in s] for s in sigs.items],
            "roots": roots,
        },
        "edges": {"count": e_count},
    }
    nodes_out, edges_out = out["nodes"], out["edges"]

    def put(part: str, key: str, a: np.ndarray) -> None:
        out[part][key] = _buf(a)
        dtypes[f"{part}.{key}"] = str(a.dtype)

    for key, a in (("label", label), ("name", name), ("kind", kind), ("module", module),
                   ("shape", shape), ("inputs", inputs)):
        put("nodes", key, _small_uint(a))
    put("nodes", "x", x)
    put("nodes", "y", y)
    if not identity:
        put("nodes", "real", item_real.astype(np.int32))
    if box_j:
        put("nodes", "members", members)
    if saved_state.any():
        put("nodes", "saved_state", saved_state)
    if not canonical:
        nodes_out["id"] = [
            nodes[r].id if r >= 0 else f"group:{vis.item_group[j] or ''}"
            for j, r in enumerate(item_real.tolist())
        ]
    put("edges", "src", vis.edge_src.astype(np.int32))
    put("edges", "dst", vis.edge_dst.astype(np.int32))
    put("edges", "output_nr", _small_uint(out_all[e_real]))
    put("edges", "input_nr", _small_uint(in_all[e_real]))
    if not edges_identity:
        put("edges", "real", e_real.astype(np.int32))
    if len(odd):
        edges_out["src_id"] = {"index": odd.tolist(),
                               "id": [nodes[int(i)].id for i in real_src[odd]]}
    if len(bent):
        put("edges", "bent", bent.astype(np.int32))
        put("edges", "bend_ptr", bend_ptr.astype(np.int32))
        put("edges", "bend_x", np.asarray(layout.edge_x, np.float32)[pick])
        put("edges", "bend_y", np.asarray(layout.edge_y, np.float32)[pick])
    return out


def _as_array(v: Any, dtype: Any) -> np.ndarray:
    """A payload buffer (memoryview, bytes, numpy array or list) as a numpy array."""
    if isinstance(v, np.ndarray):
        return v.astype(dtype, copy=False)
    if isinstance(v, memoryview | bytes | bytearray):
        return np.frombuffer(v, dtype=dtype)
    return np.asarray(v if v is not None else [], dtype=dtype)


def decode_graph(payload: dict[str, Any]) -> dict[str, Any]:
    """A graph payload (version 1 or 2) as version 1's one-record-per-item shape, in Python.

    `nodes`: count, id, label, name, kind, module, shape, inputs (lists), root, members,
    saved_state, real, x, y (numpy); `edges`: count, id (list), src, dst, output_nr, input_nr,
    real, path_x, path_y, path_ptr (polylines, each ending with a NaN slot), mid_x, mid_y (label
    anchors) (numpy). The other keys are copied. What the front-end's `decodeGraph` computes.
    """
    nodes, edges = payload["nodes"], payload["edges"]
    out = {k: v for k, v in payload.items() if k not in ("nodes", "edges")}
    if int(payload.get("version", 1)) < 2:
        nd, ed = dict(nodes), dict(edges)
        for k, dt in (("root", np.uint8), ("members", np.int32), ("saved_state", np.uint8),
                      ("real", np.int32), ("x", np.float32), ("y", np.float32)):
            nd[k] = _as_array(nodes.get(k), dt)
        for k, dt in (("src", np.int32), ("dst", np.int32), ("output_nr", np.int32),
                      ("input_nr", np.int32), ("real", np.int32), ("path_x", np.float32),
                      ("path_y", np.float32), ("path_ptr", np.int32), ("mid_x", np.float32),
                      ("mid_y", np.float32)):
            ed[k] = _as_array(edges.get(k), dt)
        return {**out, "nodes": nd, "edges": ed}
    n, m = int(nodes["count"]), int(edges["count"])
    dtypes = payload.get("dtypes", {})

    def buf(part: dict, key: str, default: Any, fill: Any, length: int) -> np.ndarray:
        part_name = "nodes" if part is nodes else "edges"
        v = part.get(key)
        if v is None:
            return np.full(length, fill, default)
        return _as_array(v, dtypes.get(f"{part_name}.{key}", default))

    strings = list(nodes.get("strings", []))

    def texts(key: str) -> list:
        return [strings[i] for i in buf(nodes, key, np.int64, 0, n).tolist()]

    kind_names = list(nodes.get("kinds", []))
    kind = [kind_names[i] for i in buf(nodes, "kind", np.int64, 0, n).tolist()]
    module = texts("module")
    real = buf(nodes, "real", np.int32, -2, n).astype(np.int32)
    if "real" not in nodes:
        real = np.where(np.asarray(kind, object) == "group", -1, np.arange(n)).astype(np.int32)
    if "id" in nodes:
        ids = [str(s) for s in nodes["id"]]
    else:
        ids = [f"n{r}" if r >= 0 else f"group:{module[j] or ''}"
               for j, r in enumerate(real.tolist())]
    sig_list = nodes.get("input_sigs", [])
    root = np.zeros(n, np.uint8)
    root[[int(j) for j in nodes.get("roots", [])]] = 1
    x = buf(nodes, "x", np.float32, 0, n).astype(np.float32)
    y = buf(nodes, "y", np.float32, 0, n).astype(np.float32)
    nd = {
        "count": n,
        "id": ids,
        "label": texts("label"),
        "name": texts("name"),
        "kind": kind,
        "module": module,
        "shape": texts("shape"),
        "inputs": [[list(s) for s in sig_list[i]] for i in buf(nodes, "inputs", np.int64, 0, n)],
        "root": root,
        "members": buf(nodes, "members", np.int32, 0, n).astype(np.int32),
        "saved_state": buf(nodes, "saved_state", np.uint8, 0, n).astype(np.uint8),
        "real": real,
        "x": x,
        "y": y,
    }
    src = buf(edges, "src", np.int32, 0, m).astype(np.int32)
    dst = buf(edges, "dst", np.int32, 0, m).astype(np.int32)
    output_nr = buf(edges, "output_nr", np.int32, 0, m).astype(np.int32)
    src_ids = [ids[s] for s in src.tolist()]
    odd = edges.get("src_id") or {"index": [], "id": []}
    for k, sid in zip(odd["index"], odd["id"]):
        src_ids[int(k)] = str(sid)
    # Polylines: source, bends, target, NaN.
    nb = np.zeros(m, np.int64)
    bent = buf(edges, "bent", np.int32, 0, 0).astype(np.int64)
    bend_ptr = buf(edges, "bend_ptr", np.int32, 0, 1).astype(np.int64)
    nb[bent] = np.diff(bend_ptr)
    ptr = np.concatenate(([0], np.cumsum(nb + 3))).astype(np.int64)
    px = np.full(int(ptr[-1]), np.nan, np.float32)
    py = np.full(int(ptr[-1]), np.nan, np.float32)
    px[ptr[:-1]], py[ptr[:-1]] = x[src], y[src]
    px[ptr[1:] - 2], py[ptr[1:] - 2] = x[dst], y[dst]
    if len(bent):
        inner = np.arange(int(bend_ptr[-1])) - np.repeat(bend_ptr[:-1] - ptr[bent] - 1, nb[bent])
        px[inner] = buf(edges, "bend_x", np.float32, 0, 0)
        py[inner] = buf(edges, "bend_y", np.float32, 0, 0)
    npts = nb + 2
    a = ptr[:-1] + (npts - 1) // 2
    b = np.minimum(a + 1, ptr[:-1] + npts - 1)
    ed = {
        "count": m,
        "id": [f"{s}:{o}" for s, o in zip(src_ids, output_nr.tolist())],
        "src": src,
        "dst": dst,
        "output_nr": output_nr,
        "input_nr": buf(edges, "input_nr", np.int32, 0, m).astype(np.int32),
        "real": (buf(edges, "real", np.int32, 0, m) if "real" in edges
                 else np.arange(m)).astype(np.int32),
        "path_x": px,
        "path_y": py,
        "path_ptr": ptr.astype(np.int32),
        "mid_x": ((px[a] + px[b]) / 2).astype(np.float32),
        "mid_y": ((py[a] + py[b]) / 2).astype(np.float32),
    }
    return {**out, "nodes": nd, "edges": ed}


def summary_payload(s: Summary | None) -> dict[str, Any] | None:
    """A Summary as JSON-safe numbers (NaN/Inf as strings)."""
    if s is None:
        return None
    d = s.as_dict() if hasattr(s, "as_dict") else dict(vars(s))
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, float | complex):
            out[k] = encode_number(v)
        elif isinstance(v, list):
            out[k] = encode(v)
        elif isinstance(v, tuple):
            out[k] = list(v)
        else:
            out[k] = v
    return out


class StateView:
    """Incrementally maintained step state of one graph under one stepper.

    Node and edge arrays are indexed like the graph payload. `update()` revisits only the steps
    done or undone since the previous call, so a step on a 10k-node graph costs a few entries.
    """

    def __init__(
        self, graph: BackwardGraph, stepper: Stepper, visible: VisibleGraph | None = None
    ) -> None:
        self.graph = graph
        self.stepper = stepper
        self.node_ids = list(graph.nodes)
        self.node_index = {nid: i for i, nid in enumerate(graph.nodes)}
        self.edge_index = {e.id: i for i, e in enumerate(graph.edges)}
        self.out_edges = [
            [self.edge_index[e.id] for e in graph.out_edges(nid)] for nid in graph.nodes
        ]
        n, m = len(graph.nodes), len(graph.edges)
        self.node_state = np.zeros(n, np.uint8)
        self.edge_norm = np.full(m, np.nan, np.float32)
        self.edge_flag = np.zeros(m, np.uint8)
        self.edge_values: dict[str, list] = {}
        self._applied = 0  # steps reflected in the arrays
        self._edit_seq = getattr(stepper, "edit_seq", 0)
        self._next = -1
        self._error: dict[str, Any] | None = None
        self.seq = 0
        self.set_visible(visible if visible is not None else visible_graph(graph))

    def set_visible(self, visible: VisibleGraph) -> None:
        """Map state onto a new set of visible items (after a fold, unfold or plumbing toggle)."""
        self.visible = visible
        by_real: dict[int, list[int]] = {}
        for j, k in enumerate(visible.edge_real.tolist()):
            by_real.setdefault(k, []).append(j)
        self._vis_edges_of_real = by_real
        boxes = [j for j in range(visible.n_items) if visible.item_real[j] < 0]
        self._boxes = boxes
        self._box_members = [visible.item_members[j] for j in boxes]

    def _clear_step(self, k: int) -> None:
        i = self.node_index[self.stepper.order[k]]
        self.node_state[i] = PENDING
        for e in self.out_edges[i]:
            self.edge_norm[e] = np.nan
            self.edge_flag[e] = NOT_FLOWED
            self.edge_values.pop(str(e), None)

    def _apply_step(self, k: int) -> None:
        st = self.stepper
        nid = st.order[k]
        i = self.node_index[nid]
        info = st.step_info(k)
        self.node_state[i] = NO_GRADIENT if info.no_gradient else DONE
        edges = self.graph.edges
        for e in self.out_edges[i]:
            s = st.edge_summary(edges[e].id)
            if s is None:
                self.edge_flag[e] = FLOWED_NONE
                continue
            self.edge_norm[e] = s.norm
            nonfinite = bool(s.nan or s.inf)
            self.edge_flag[e] = NONFINITE if nonfinite else FLOWED
            if _numel(s.shape) <= LABEL_MAX_NUMEL:
                self.edge_values[str(e)] = encode(s.values)

    def update(self) -> dict[str, Any]:
        """The `_state` payload for the stepper's current position."""
        st = self.stepper
        pos = st.position
        edit_seq = getattr(st, "edit_seq", 0)
        if edit_seq != self._edit_seq:
            # A what-if edit changed gradients without moving the position: redo every step.
            self._edit_seq = edit_seq
            for k in range(self._applied):
                self._clear_step(k)
            self._applied = 0
        if self._next >= 0 and self.node_state[self._next] in (NEXT, FAILED):
            self.node_state[self._next] = PENDING
        if pos < self._applied:
            for k in range(pos, self._applied):
                self._clear_step(k)
        else:
            for k in range(self._applied, pos):
                self._apply_step(k)
        self._applied = pos
        err = st.last_error
        self._next = self.node_index[st.order[pos]] if pos < len(st.order) else -1
        if self._next >= 0:
            failed = err is not None and err[0] == st.order[pos]
            self.node_state[self._next] = FAILED if failed else NEXT
        self._error = (
            {"node": self.node_index[err[0]], "message": err[1]} if err is not None else None
        )
        self.seq += 1
        return self.payload()

    def _item(self, real: int) -> int:
        return -1 if real < 0 else int(self.visible.real_item[real])

    def visible_arrays(self) -> dict[str, Any]:
        """Node and edge state per VISIBLE item/edge, as numpy arrays (boxes aggregated)."""
        vis = self.visible
        real = vis.item_real
        node_state = np.zeros(vis.n_items, np.uint8)
        progress = np.zeros(vis.n_items, np.float32)
        is_real = real >= 0
        node_state[is_real] = self.node_state[real[is_real]]
        finished = (self.node_state == DONE) | (self.node_state == NO_GRADIENT)
        progress[is_real] = finished[real[is_real]]
        for j, mem in zip(self._boxes, self._box_members):
            st_m = self.node_state[mem]
            done = int(finished[mem].sum())
            progress[j] = done / len(mem) if len(mem) else 1.0
            if (st_m == FAILED).any():
                node_state[j] = FAILED
            elif (st_m == NEXT).any():
                node_state[j] = NEXT
            elif done == len(mem):
                node_state[j] = DONE
        edge_values: dict[str, list] = {}
        for k, vals in self.edge_values.items():
            for j in self._vis_edges_of_real.get(int(k), ()):
                edge_values[str(j)] = vals
        return {
            "node_state": node_state,
            "progress": progress,
            "edge_norm": self.edge_norm[vis.edge_real],
            "edge_flag": self.edge_flag[vis.edge_real],
            "edge_values": edge_values,
        }

    def payload(self, running: bool = False) -> dict[str, Any]:
        st = self.stepper
        pos, total = st.position, len(st.order)
        finite = self.edge_norm[(self.edge_flag == FLOWED) & (self.edge_norm > 0)]
        norm_range = None
        if finite.size:
            norm_range = [float(np.log10(finite.min())), float(np.log10(finite.max()))]
        waiting: list[Any] = []
        if self._next >= 0:
            for slot, s in enumerate(st.waiting(st.order[pos])):
                if s is None:
                    waiting.append(None)
                    continue
                small = _numel(s.shape) <= LABEL_MAX_NUMEL
                waiting.append(
                    {
                        "slot": slot,
                        "shape": list(s.shape),
                        "dtype": s.dtype,
                        "norm": encode_number(s.norm),
                        "values": encode(s.values) if small else None,
                    }
                )
        arrays = self.visible_arrays()
        edits: dict[str, Any] = {}
        for eid, info in getattr(st, "edits", {}).items():
            k = self.edge_index.get(eid)
            for j in self._vis_edges_of_real.get(k, ()) if k is not None else ():
                edits[str(j)] = {"id": eid, **info.as_dict()}
        error = None
        if self._error is not None:
            error = dict(self._error)
            error["node"] = self._item(self._error["node"])
            error["id"] = self.node_ids[self._error["node"]]
        last = self.node_index[st.order[pos - 1]] if pos > 0 else -1
        return {
            "seq": self.seq,
            "position": pos,
            "total": total,
            "done": pos >= total,
            "running": running,
            "next": self._item(self._next),
            "next_id": self.node_ids[self._next] if self._next >= 0 else None,
            "last": self._item(last),
            "node_state": _buf(arrays["node_state"]),
            "progress": _buf(arrays["progress"]),
            "edge_norm": _buf(arrays["edge_norm"]),
            "edge_flag": _buf(arrays["edge_flag"]),
            "edge_values": arrays["edge_values"],
            "edits": edits,
            "norm_range": norm_range,
            "waiting": waiting,
            "status": status_line(self.graph, st),
            "error": error,
        }


def _numel(shape: Any) -> int:
    return math.prod(shape)


def status_line(graph: BackwardGraph, stepper: Stepper) -> str:
    """ "step 7 / 23 — MulBackward0": steps done, total, and the node about to run (or done)."""
    pos, total = stepper.position, len(stepper.order)
    err = stepper.last_error
    if err is not None and pos < total and err[0] == stepper.order[pos]:
        return f"step {pos} / {total} — {node_title(graph.nodes[err[0]])} failed: {err[1]}"
    if pos >= total:
        return f"step {pos} / {total} — done"
    return f"step {pos} / {total} — {node_title(graph.nodes[stepper.order[pos]])}"


def node_title(node: Any) -> str:
    """A node's name, with the leaf's name for AccumulateGrad ("AccumulateGrad (x)")."""
    if node.kind == "accumulate_grad" and node.leaf_name:
        return f"{node.name} ({node.leaf_name})"
    return node.name


# ------------------------------------------------------------------------------- static figure
# The widget's palette (js/src/style.js), so a static export looks like the live view.
KIND_COLORS = {
    "function": "#4e79a7",
    "parameter": "#59a14f",
    "input": "#f28e2b",
    "custom_function": "#b07aa1",
    "cpp_function": "#9c755f",
}
ROOT_COLOR = "#76b7b2"
NORM_BINS = ["#0d0887", "#46039f", "#7201a8", "#9c179e", "#bd3786", "#d8576b", "#ed7953", "#fb9f3a"]
NONFINITE_COLOR = "#ff1f1f"
GROUP_COLOR = "#6c757d"


def to_figure(payload: dict[str, Any], arrays: dict[str, Any] | None, title: str = "") -> go.Figure:
    """A plotly figure of the visible graph (`graph_payload`) in a state (`visible_arrays`)."""
    import plotly.graph_objects as go

    decoded = decode_graph(payload)
    nodes, edges = decoded["nodes"], decoded["edges"]
    n_items, n_edges = nodes["count"], edges["count"]

    def arr(buf: Any, dtype: Any) -> np.ndarray:
        return np.frombuffer(bytes(buf), dtype=dtype)

    x, y = arr(nodes["x"], np.float32).astype(float), arr(nodes["y"], np.float32).astype(float)
    ex = arr(edges["path_x"], np.float32).astype(float)
    ey = arr(edges["path_y"], np.float32).astype(float)
    ptr = arr(edges["path_ptr"], np.int32)
    if arrays is None:
        arrays = {
            "node_state": np.zeros(n_items, np.uint8),
            "progress": np.zeros(n_items, np.float32),
            "edge_norm": np.full(n_edges, np.nan, np.float32),
            "edge_flag": np.zeros(n_edges, np.uint8),
            "edge_values": {},
        }
    flag, norm = arrays["edge_flag"], arrays["edge_norm"].astype(float)
    traces: list[Any] = []

    def segs(idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if len(idx) == 0:
            return np.zeros(0), np.zeros(0)
        sel = np.concatenate([np.arange(ptr[i], ptr[i + 1]) for i in idx])
        return ex[sel], ey[sel]

    gx, gy = segs(np.flatnonzero(flag != FLOWED))
    traces.append(go.Scatter(x=gx, y=gy, mode="lines", line={"color": "#bbbbbb", "width": 1},
                             hoverinfo="skip", name="no gradient yet", showlegend=False))
    bad = np.flatnonzero(flag == NONFINITE)
    if len(bad):
        bx, by = segs(bad)
        traces.append(go.Scatter(x=bx, y=by, mode="lines", name="NaN/Inf gradient",
                                 line={"color": NONFINITE_COLOR, "width": 3, "dash": "dash"}))
    flowed = np.flatnonzero(flag == FLOWED)
    if len(flowed):
        with np.errstate(divide="ignore", invalid="ignore"):
            logn = np.log10(np.where(norm[flowed] > 0, norm[flowed], np.nan))
        finite = np.isfinite(logn)
        lo = float(np.nanmin(logn)) if finite.any() else 0.0
        hi = float(np.nanmax(logn)) if finite.any() else 1.0
        bins = len(NORM_BINS)
        span = hi - lo if hi > lo else 1.0
        which = np.where(
            finite, np.clip(((logn - lo) / span * (bins - 1)).round(), 0, bins - 1), 0
        )
        for b in range(bins):
            idx = flowed[which == b]
            if len(idx):
                bx, by = segs(idx)
                traces.append(go.Scatter(x=bx, y=by, mode="lines", hoverinfo="skip",
                                         line={"color": NORM_BINS[b], "width": 2.5},
                                         showlegend=False))
        scale = [[i / (bins - 1), c] for i, c in enumerate(NORM_BINS)]
        traces.append(go.Scatter(
            x=[None], y=[None], mode="markers", hoverinfo="skip", showlegend=False,
            marker={"colorscale": scale, "cmin": lo, "cmax": hi, "color": [lo],
                    "colorbar": {"title": {"text": "log10 ‖grad‖"}}},
        ))
    line_colors = {PENDING: "#9aa5b1", NEXT: "#f5b700", DONE: "#222222", FAILED: "#e15759",
                   NO_GRADIENT: "#9aa5b1"}
    root = arr(nodes["root"], np.uint8)
    kinds = nodes["kind"]
    symbols, colors, texts = [], [], []
    for j in range(n_items):
        if kinds[j] == "group":
            symbols.append("square-open")
            colors.append(GROUP_COLOR)
        elif root[j]:
            symbols.append("diamond")
            colors.append(ROOT_COLOR)
        else:
            symbols.append("square" if kinds[j] in ("parameter", "input") else "circle")
            colors.append(KIND_COLORS[kinds[j]])
        label = nodes["label"][j]
        if kinds[j] == "group":
            label = f"{label} ({int(arrays['progress'][j] * 100)}%)"
        elif nodes["shape"][j]:
            label = f"{label} {nodes['shape'][j]}"
        texts.append(label)
    traces.append(go.Scatter(
        x=x, y=y, mode="markers+text", text=texts, textposition="middle right",
        marker={"size": [24 if k == "group" else 14 for k in kinds], "symbol": symbols,
                "color": colors,
                "line": {"width": 2,
                         "color": [line_colors[int(s)] for s in arrays["node_state"]]}},
        hovertext=[f"{nodes['name'][j]}<br>{nodes['id'][j]}" for j in range(n_items)],
        hoverinfo="text", showlegend=False,
    ))
    if arrays["edge_values"]:
        mids_x = arr(edges["mid_x"], np.float32)
        mids_y = arr(edges["mid_y"], np.float32)
        ks = [int(k) for k in arrays["edge_values"]]
        traces.append(go.Scatter(
            x=[float(mids_x[k]) for k in ks], y=[float(mids_y[k]) for k in ks], mode="text",
            text=[", ".join(_fmt(v) for v in arrays["edge_values"][str(k)]) for k in ks],
            hoverinfo="skip", textfont={"color": "#1d3557"}, showlegend=False,
        ))
    fig = go.Figure(traces)
    fig.update_layout(
        xaxis={"visible": False}, yaxis={"visible": False, "scaleanchor": "x"},
        margin={"l": 10, "r": 10, "t": 40, "b": 10}, plot_bgcolor="white",
        title={"text": title},
    )
    return fig


def _fmt(v: Any) -> str:
    if isinstance(v, str):
        return v
    return f"{v:.4g}"
