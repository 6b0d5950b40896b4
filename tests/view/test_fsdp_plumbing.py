"""FSDP2's bookkeeping node (`RegisterPostBackwardFunctionBackward`) is drawn as plumbing: "hide
plumbing" contracts it, and through it gradient i reaches only what input i fed (it passes each
gradient through unchanged), never every input's producer."""

from __future__ import annotations

import torch

import autograd_widget as aw
from autograd_widget.view.visible import is_plumbing, visible_graph


class RegisterPostBackwardFunction(torch.autograd.Function):
    """Stands in for FSDP's Function of that name (its node gets FSDP's node name)."""

    @staticmethod
    def forward(ctx, a, b):
        return a.view_as(a), b.view_as(b)

    @staticmethod
    def backward(ctx, ga, gb):
        return ga, gb


def test_post_backward_node_is_plumbing_and_contracts_slot_by_slot():
    assert is_plumbing("RegisterPostBackwardFunctionBackward")
    x = torch.ones(3, requires_grad=True)
    y = torch.ones(3, requires_grad=True)
    a, b = RegisterPostBackwardFunction.apply(x.exp(), y.sin())
    g = aw.capture((a * 2 + b * 3).sum(), params={"x": x, "y": y})
    names = {nid: n.name for nid, n in g.nodes.items()}
    vis = visible_graph(g, show_plumbing=False)
    shown = {names[f"n{r}"] for r in vis.item_real.tolist() if r >= 0}
    assert "RegisterPostBackwardFunctionBackward" not in shown
    pairs = {(names[f"n{vis.item_real[s]}"], names[f"n{vis.item_real[d]}"])
             for s, d in zip(vis.edge_src.tolist(), vis.edge_dst.tolist())}
    # MulBackward0 (a * 2) reaches ExpBackward0 only, the other MulBackward0 SinBackward0 only
    into = {d for s, d in pairs if s == "MulBackward0"}
    assert into == {"ExpBackward0", "SinBackward0"}
    mul_ids = [nid for nid, n in g.nodes.items() if n.name == "MulBackward0"]
    targets = []
    for nid in mul_ids:
        item = int(vis.real_item[int(nid[1:])])
        targets.append({names[f"n{vis.item_real[d]}"] for s, d in
                        zip(vis.edge_src.tolist(), vis.edge_dst.tolist()) if s == item})
    assert sorted(map(sorted, targets)) == [["ExpBackward0"], ["SinBackward0"]], targets


def test_post_backward_node_is_labelled_for_a_reader():
    """Its box says what it is ("FSDP post-backward"), not the wide raw class name."""
    from autograd_widget.view.labels import short_label

    x = torch.ones(3, requires_grad=True)
    y = torch.ones(3, requires_grad=True)
    a, b = RegisterPostBackwardFunction.apply(x.exp(), y.sin())
    g = aw.capture((a + b).sum(), params={"x": x, "y": y})
    labels = {n.name: short_label(n) for n in g.nodes.values()}
    assert labels["RegisterPostBackwardFunctionBackward"] == "FSDP post-backward"
    assert labels["ExpBackward0"] == "Exp"
