"""Writes payload_v2.json beside it, the fixture of model_v2.test.js: version-2 graph payloads
made by Python (buffers base64, as in a recording) and what `view.decode_graph` makes of each
(version 1's shape). Regenerate after a format change: `python js/tests/payload_v2.py`.
"""

import json
import sys
from pathlib import Path

import numpy as np
import torch

import autograd_widget as aw
from autograd_widget import export, groups, view

torch.manual_seed(0)


def lists(d):
    out = {}
    for k, v in d.items():
        if isinstance(v, np.ndarray):
            out[k] = [None if (isinstance(x, float) and x != x) else x for x in v.tolist()]
        else:
            out[k] = v
    return out


cases = {}
# z = x**2 + y: identity, every id derived.
x = torch.tensor(2.0, requires_grad=True)
y = torch.tensor(3.0, requires_grad=True)
g = aw.capture(x**2 + y, params={"x": x, "y": y})
vis = groups.visible_graph(g)
lay = view.compute_layout(g, "TB", vis)
cases["z"] = view.graph_payload(g, lay, vis)
# A tracked 2-layer MLP with a view: module 0 folded (a box), plumbing hidden (contracted edges),
# a stale node, and a long edge that bends.
model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
inp = torch.randn(5, 3, requires_grad=True)
with aw.track(model):
    h = model[0](inp)
    out = model[2](model[1](h).t().t()) + h.sum()
g = aw.capture(out.pow(2).mean(), model=model, params={"inp": inp})
vis = groups.visible_graph(g, {"0"}, show_plumbing=False)
lay = view.compute_layout(g, "LR", vis)
nid = next(n.id for n in g.nodes.values() if n.name == "TanhBackward0")
cases["mlp"] = view.graph_payload(g, lay, vis, {nid: "stale"})
# Ids that are not n{i} (a graph from a dict): sent explicitly.
d = g.to_dict()
ren = {n["id"]: f"node-{i}" for i, n in enumerate(d["nodes"])}
for n in d["nodes"]:
    n["id"] = ren[n["id"]]
d["edges"] = [[ren[a], o, ren[c], i] for a, o, c, i in d["edges"]]
d["roots"] = [[ren[a], o] for a, o in d["roots"]]
g2 = aw.BackwardGraph.from_dict(d)
vis = groups.visible_graph(g2, {"2"})
lay = view.compute_layout(g2, "TB", vis)
cases["renamed"] = view.graph_payload(g2, lay, vis)

fixture = {}
for name, p in cases.items():
    dec = view.decode_graph(p)
    assert p["version"] == 2
    fixture[name] = {
        "raw": export._encode(export._typed_graph(p)),
        "expect": {"nodes": lists(dec["nodes"]), "edges": lists(dec["edges"])},
    }
out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_suffix(".json")
out.write_text(json.dumps(fixture, separators=(",", ":"), allow_nan=False))
