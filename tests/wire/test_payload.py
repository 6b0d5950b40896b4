"""The graph payload (`view.graph_payload`, version 2): compact, and exactly what it stands for.

Version 2 sends string tables and index buffers and leaves out what the front-end can derive
(ids, straight polylines, label anchors, identity maps). `view.decode_graph` expands it back to
one record per item and edge; here that is checked against a straightforward per-item rebuild
from the graph, the visible graph and the layout (version 1's construction), over folded,
plumbing-hidden, renamed and marked graphs. js/tests/model.test.js checks the front-end's
`decodeGraph` against `decode_graph` on payloads of real widgets (tests/js/js_fixtures.py).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import autograd_widget as aw
from autograd_widget.export.figure import to_figure
from autograd_widget.view import labels, modules, visible
from autograd_widget.view.scene import compute_layout
from autograd_widget.wire import payload as view
from tests.helpers.models import make_mlp, make_transformer


def expected(graph, layout, vis, validity=None):
    """Every item's and edge's fields, one by one from the records (no tables, nothing left
    out): what `decode_graph` must give back."""
    validity = validity or {}
    nodes = list(graph.nodes.values())
    root_ids = {r for r, _ in graph.roots}
    codes = {"stale": view.SAVED_STALE, "freed": view.SAVED_FREED}
    items = []
    for j in range(vis.n_items):
        r = int(vis.item_real[j])
        if r < 0:
            path = vis.item_group[j] or ""
            mem = [nodes[int(i)] for i in vis.item_members[j]]
            label = labels.group_label(path, graph.model_name)
            items.append({
                "id": f"group:{path}", "label": label,
                "name": f"{labels.module_title(graph, path)} ({len(mem)} nodes)",
                "kind": "group", "module": path, "shape": "", "inputs": [],
                "root": int(any(n.id in root_ids for n in mem)), "members": len(mem),
                "saved_state": max((codes.get(validity.get(n.id), 0) for n in mem), default=0),
                "real": -1,
            })
            continue
        n = nodes[r]
        leaf_shape = n.kind == "accumulate_grad" and n.inputs
        items.append({
            "id": n.id, "label": labels.short_label(n), "name": n.name,
            "kind": labels.display_kind(n), "module": n.module,
            "shape": str(list(n.inputs[0].shape)) if leaf_shape else "",
            "inputs": [[list(m.shape), m.dtype, m.device] for m in n.inputs],
            "root": int(n.id in root_ids), "members": 0,
            "saved_state": codes.get(validity.get(n.id), 0), "real": r,
        })
    edges = [graph.edges[int(k)] for k in vis.edge_real]
    return items, {
        "id": [e.id for e in edges],
        "output_nr": [e.output_nr for e in edges],
        "input_nr": [e.input_nr for e in edges],
        "real": vis.edge_real.tolist(),
        "src": vis.edge_src.tolist(),
        "dst": vis.edge_dst.tolist(),
    }


def same_floats(a, b):
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return a.shape == b.shape and bool(((a == b) | (np.isnan(a) & np.isnan(b))).all())


def check(graph, vis, layout, validity=None):
    payload = view.graph_payload(graph, layout, vis, validity)
    assert payload["version"] == view.PAYLOAD_VERSION == 2
    got = view.decode_graph(payload)
    items, edges = expected(graph, layout, vis, validity)
    nd, ed = got["nodes"], got["edges"]
    assert nd["count"] == len(items) and ed["count"] == len(edges["id"])
    for key in ("id", "label", "name", "kind", "module", "shape", "inputs"):
        assert nd[key] == [it[key] for it in items], key
    for key in ("root", "members", "saved_state", "real"):
        assert nd[key].tolist() == [it[key] for it in items], key
    for key, value in edges.items():
        got_value = ed[key] if key == "id" else ed[key].tolist()
        assert got_value == value, key
    # Polylines exactly as laid out (ends from the node coordinates, bends sent), and the label
    # anchor in the middle of each.
    assert same_floats(nd["x"], layout.x) and same_floats(nd["y"], layout.y)
    assert ed["path_ptr"].tolist() == np.asarray(layout.edge_ptr).tolist()
    assert same_floats(ed["path_x"], layout.edge_x) and same_floats(ed["path_y"], layout.edge_y)
    ptr = np.asarray(layout.edge_ptr)
    for k in range(ed["count"]):
        pts = ptr[k + 1] - ptr[k] - 1
        a = ptr[k] + (pts - 1) // 2
        b = min(a + 1, ptr[k] + pts - 1)
        assert ed["mid_x"][k] == np.float32((layout.edge_x[a] + layout.edge_x[b]) / 2)
        assert ed["mid_y"][k] == np.float32((layout.edge_y[a] + layout.edge_y[b]) / 2)
    # JSON plus buffers, as the widget sends it.
    json.dumps({k: v for k, v in payload.items() if k not in ("nodes", "edges", "copies")})
    return payload


def tracked_transformer(layers=2):
    model = make_transformer(layers, 16)
    with aw.track(model):
        out = model(torch.randn(2, 3, 16))
    return aw.capture(out.pow(2).mean(), model=model)


@pytest.fixture(scope="module")
def graphs():
    mlp = make_mlp((4, 8, 8, 3))
    with aw.track(mlp):
        out = mlp(torch.randn(5, 4))
    x = torch.randn(3, requires_grad=True)
    return {
        "transformer": tracked_transformer(),
        "mlp": aw.capture(out.sum(), model=mlp),
        "untracked": aw.capture((x.exp() * x.view(3, 1).t().reshape(3)).sum()),
    }


@pytest.mark.parametrize("name", ["transformer", "mlp", "untracked"])
@pytest.mark.parametrize("fold", ["none", "top", "nested"])
@pytest.mark.parametrize("show_plumbing", [True, False])
@pytest.mark.parametrize("orientation", ["TB", "LR"])
def test_decoded_payload_is_every_item_and_edge(graphs, name, fold, show_plumbing, orientation):
    g = graphs[name]
    paths = modules.module_paths(g)
    collapsed = {
        "none": (),
        "top": modules.top_level_groups(g),
        "nested": [p for p in paths if p.count(".") >= 2][:3],
    }[fold]
    vis = visible.visible_graph(g, collapsed, show_plumbing)
    check(g, vis, compute_layout(g, orientation, vis))


def test_boxes_contracted_edges_bends_and_marks_are_sent(graphs):
    g = graphs["transformer"]
    ids = list(g.nodes)
    validity = {ids[3]: "stale", ids[-2]: "freed"}
    vis = visible.visible_graph(g, ["layers.0"], show_plumbing=False)
    p = check(g, vis, compute_layout(g, "TB", vis), validity)
    assert p["edges"]["src_id"]["index"], "edges leaving the box or plumbing name their source"
    assert "bent" in p["edges"], "long edges bend"
    assert "saved_state" in p["nodes"] and "members" in p["nodes"] and "real" in p["nodes"]


def test_renamed_ids_are_sent(graphs):
    d = graphs["mlp"].to_dict()
    ren = {n["id"]: f"op{i}" for i, n in enumerate(reversed(d["nodes"]))}
    for n in d["nodes"]:
        n["id"] = ren[n["id"]]
    d["edges"] = [[ren[a], o, ren[c], i] for a, o, c, i in d["edges"]]
    d["roots"] = [[ren[a], o] for a, o in d["roots"]]
    g = aw.BackwardGraph.from_dict(d)
    for collapsed in ((), ("2",)):
        vis = visible.visible_graph(g, collapsed)
        p = check(g, vis, compute_layout(g, "TB", vis))
        assert p["nodes"]["id"][0] == "op" + str(len(g) - 1)


def test_nothing_derivable_is_sent_for_a_plain_graph():
    x = torch.randn(4, requires_grad=True)
    y = x
    for _ in range(2000):
        y = y * 1.0001
    g = aw.capture(y.sum())
    vis = visible.visible_graph(g)
    p = check(g, vis, compute_layout(g, "TB", vis))
    nodes, edges = p["nodes"], p["edges"]
    for key in ("id", "real", "members", "saved_state"):
        assert key not in nodes, key
    for key in ("id", "real", "src_id", "bent", "path_x", "mid_x"):
        assert key not in edges, key
    assert nodes["strings"] == ["", "Sum", "SumBackward0", None, "Mul", "MulBackward0",
                                "input 0 [4]", "AccumulateGrad", "[4]"]
    assert p["dtypes"]["nodes.label"] == "uint8" and nodes["roots"] == [0]
    # Per node: x, y (float32), seven one-byte indices (the box size is one); per edge: src,
    # dst (int32), two bytes.
    buffers = sum(v.nbytes for part in (nodes, edges) for v in part.values()
                  if isinstance(v, memoryview))
    assert buffers == len(g) * (8 + 7) + len(g.edges) * (8 + 2)


def test_to_figure_reads_the_compact_payload(graphs):
    g = graphs["mlp"]
    vis = visible.visible_graph(g, ["0"])
    fig = to_figure(view.graph_payload(g, compute_layout(g, "TB", vis), vis), None)
    texts = [t for tr in fig.data for t in (tr.text or ()) if isinstance(t, str)]
    assert any(t.startswith("0 (") for t in texts)  # the box and its progress
