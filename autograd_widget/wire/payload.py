"""The graph payload codec: the drawing of the visible graph, encoded once per layout.

`graph_payload` turns a visible graph and its layout (the Scene's) into the `_graph` trait:
node/edge arrays, labels as string tables, coordinates and edge bends as binary buffers (format
version 2, the only one: nothing ever emitted another). `decode_graph` expands it back to one
record per item and edge, as the front-end's `decodeGraph` does; tests and the static figure use
it. The step state is another payload (`view.stateview.StateView`); the messages are `protocol`.
Knows nothing of traitlets or anywidget.
"""

from __future__ import annotations

import itertools
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..util.gcpause import gc_paused
from ..view.clusters import ClusterLayout
from ..view.labels import display_kind, group_label, module_title, run_title, short_label
from ..view.modules import module_paths
from ..view.placement import item_titles
from ..view.stateview import as_buffer
from ..view.visible import VisibleGraph, edge_arrays, visible_graph

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from ..core.graph import BackwardGraph
    from ..view.folding import RepeatedSubgraph
    from ..view.repeats import Repeat

__all__ = [
    "PAYLOAD_VERSION",
    "SAVED_FREED",
    "SAVED_OK",
    "SAVED_STALE",
    "decode_graph",
    "graph_payload",
]

SAVED_OK, SAVED_STALE, SAVED_FREED = 0, 1, 2
_SAVED_CODES = {"stale": SAVED_STALE, "freed": SAVED_FREED}


#: Version of the graph payload's format (`graph_payload`).
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
    layout: ClusterLayout,
    visible: VisibleGraph | None = None,
    validity: dict[str, str] | None = None,
    *,
    folds: Mapping[str, Repeat | RepeatedSubgraph] | None = None,
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

    Example:
        >>> from autograd_widget.view.scene import compute_layout
        >>> from autograd_widget.view.visible import visible_graph
        >>> vis = visible_graph(g)
        >>> p = graph_payload(g, compute_layout(g, "TB", vis), vis)
        >>> p["version"], p["nodes"]["count"], p["edges"]["count"]
        (2, 4, 3)
    """
    vis = visible if visible is not None else visible_graph(graph)
    with gc_paused():
        return _graph_payload(graph, layout, vis, validity or {}, folds)


def _graph_payload(
    graph: BackwardGraph,
    layout: ClusterLayout,
    vis: VisibleGraph,
    validity: dict[str, str],
    folds: Mapping[str, Repeat | RepeatedSubgraph] | None,
) -> dict[str, Any]:
    nodes = list(graph.nodes.values())
    n_items = vis.n_items
    item_real = vis.item_real
    x, y = np.asarray(layout.x, np.float32), np.asarray(layout.y, np.float32)
    # boxes, lanes and frames included
    bounds = [float(v) for v in layout.bounds] if n_items else [0.0, 0.0, 0.0, 0.0]
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
    titles: list[str] = []
    box_j = np.flatnonzero(item_real < 0).tolist()
    for j in box_j:
        path = vis.item_group[j] or ""
        mem = vis.item_members[j]
        members[j] = 0 if mem is None else len(mem)
        run = folds.get(path) if folds and path in vis.folds else None
        if run is not None:
            fold_item[path] = j
            labels.append(run.label)
            titles.append(run_title(graph, run))
            names.append(f"{run_title(graph, run)}: {run.count} blocks × "
                         f"{run.nodes_per_unit} nodes ({members[j]} nodes)")
        else:
            labels.append(group_label(path, graph.model_name))
            titles.append(module_title(graph, path))
            names.append(f"{module_title(graph, path)} ({members[j]} nodes)")
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
        # What each box says on its first line (its width was laid out for it), in item order.
        "box_titles": titles,
        # A node drawn as its whole (compact) module: [item, the module's title] (the op's
        # name is its second line).
        "item_titles": [[j, t] for j, t in sorted(item_titles(graph, vis).items())],
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
        out[part][key] = as_buffer(a)
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
    # Leaf copies (a parameter drawn beside each consumer) and module frames.
    if len(layout.copy_item):
        out["copies"] = {"count": len(layout.copy_item)}
        put("copies", "item", np.asarray(layout.copy_item, np.int32))
        put("copies", "x", np.asarray(layout.copy_x, np.float32))
        put("copies", "y", np.asarray(layout.copy_y, np.float32))
        put("edges", "copy", np.asarray(layout.edge_copy, np.int32))
    out["frames"] = [
        {"path": f.path, "title": f.title, "depth": f.depth,
         "x0": f.x0, "x1": f.x1, "y0": f.y0, "y1": f.y1}
        for f in layout.frames
    ]
    if n_items:
        # Box sizes: a handful of distinct ones (they follow the label's length): a table and
        # a one-byte index per item.
        wh = np.stack([np.asarray(layout.width, np.float32),
                       np.asarray(layout.height, np.float32)], 1)
        table, which = np.unique(wh, axis=0, return_inverse=True)
        nodes_out["sizes"] = [[float(a), float(b)] for a, b in table.tolist()]
        put("nodes", "size", _small_uint(which.reshape(-1).astype(np.int64)))
    return out


def _as_array(v: Any, dtype: Any) -> np.ndarray:
    """A payload buffer (memoryview, bytes, numpy array or list) as a numpy array."""
    if isinstance(v, np.ndarray):
        return v.astype(dtype, copy=False)
    if isinstance(v, memoryview | bytes | bytearray):
        return np.frombuffer(v, dtype=dtype)
    return np.asarray(v if v is not None else [], dtype=dtype)


def decode_graph(payload: dict[str, Any]) -> dict[str, Any]:
    """A graph payload as one record per item and edge (what the front-end's `decodeGraph`
    computes), in Python.

    `nodes`: count, id, label, name, kind, module, shape, inputs (lists), root, members,
    saved_state, real, x, y (numpy); `edges`: count, id (list), src, dst, output_nr, input_nr,
    real, path_x, path_y, path_ptr (polylines, each ending with a NaN slot), mid_x, mid_y (label
    anchors) (numpy). The other keys are copied.

    Example:
        >>> from autograd_widget.view.scene import compute_layout
        >>> from autograd_widget.view.visible import visible_graph
        >>> vis = visible_graph(g)
        >>> d = decode_graph(graph_payload(g, compute_layout(g, "TB", vis), vis))
        >>> d["nodes"]["label"]
        ['Add', 'Pow', 'y', 'x']
    """
    nodes, edges = payload["nodes"], payload["edges"]
    out = {k: v for k, v in payload.items() if k not in ("nodes", "edges", "copies")}
    if payload.get("copies"):
        cp = payload["copies"]
        out["copies"] = {"count": int(cp["count"]),
                         "item": _as_array(cp["item"], np.int32).astype(np.int32),
                         "x": _as_array(cp["x"], np.float32).astype(np.float32),
                         "y": _as_array(cp["y"], np.float32).astype(np.float32)}
    n, m = int(nodes["count"]), int(edges["count"])
    dtypes = payload.get("dtypes", {})

    def buf(part: dict[str, Any], key: str, default: Any, fill: Any, length: int) -> np.ndarray:
        part_name = "nodes" if part is nodes else "edges"
        v = part.get(key)
        if v is None:
            return np.full(length, fill, default)
        return _as_array(v, dtypes.get(f"{part_name}.{key}", default))

    strings = list(nodes.get("strings", []))

    def texts(key: str) -> list[Any]:
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
    end_x, end_y = x[dst], y[dst]
    copies = payload.get("copies")
    if copies and "copy" in edges:
        ecopy = buf(edges, "copy", np.int32, -1, m).astype(np.int64)
        cx = _as_array(copies["x"], np.float32)
        cy = _as_array(copies["y"], np.float32)
        has = ecopy >= 0
        end_x = np.where(has, cx[np.maximum(ecopy, 0)], end_x)
        end_y = np.where(has, cy[np.maximum(ecopy, 0)], end_y)
    px[ptr[1:] - 2], py[ptr[1:] - 2] = end_x, end_y
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
