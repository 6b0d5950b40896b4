"""A saved tensor whose storage was freed (as FSDP2 frees its unsharded parameters between the
forward and the backward) is never read: its record says why there are no values, the Saved tab,
the memory report and a value request answer without touching freed memory (torch itself does
not check: reading it crashed the process before core/unbacked.py)."""

from __future__ import annotations

import pytest
import torch

import autograd_widget as aw
from autograd_widget.core.unbacked import UNBACKED_NOTE, unbacked
from autograd_widget.view.inspect import saved_values_reply


def _freed_weight_graph():
    """x @ w.T with w's storage then resized to 0, the way FSDP2 reshards after the forward."""
    torch.manual_seed(0)
    w = torch.randn(4, 8, requires_grad=True)
    x = torch.randn(3, 8, requires_grad=True)
    loss = (x @ w.t()).sum()
    g = aw.capture(loss, params={"w": w, "x": x})
    with torch.no_grad():
        w.untyped_storage().resize_(0)
    return g, w


def test_unbacked_reads_only_metadata():
    t = torch.ones(4, 8)
    assert not unbacked(t) and not unbacked(t[1:, 2:]) and not unbacked(torch.ones(0))
    assert not unbacked(torch.ones(3, device="meta"))
    v = t[2:]
    t.untyped_storage().resize_(0)
    assert unbacked(t) and unbacked(v)


def test_a_saved_tensor_fsdp_freed_is_described_not_read():
    g, _weight = _freed_weight_graph()  # kept alive: the graph views its storage
    mm = next(i for i, n in g.nodes.items() if n.name == "MmBackward0")
    saved = {v.name: v for v in g.saved(mm)}
    freed = [v for v in saved.values() if v.kind == "tensor" and v.shape == (8, 4)]
    assert freed, saved
    for v in freed:  # w.t(): a view of the freed storage
        assert v.state == "freed" and v.note == UNBACKED_NOTE and v.summary is None
        assert v.dtype == "float32"
    with pytest.raises(RuntimeError, match="storage is empty"):
        g.saved_tensor(mm, freed[0].name)
    assert "storage is empty" in saved_values_reply(g, mm, freed[0].name, 16)["error"]
    assert g.saved_memory() is not None  # counted without reading values
    # the widget's inspector and its standalone page neither
    w = aw.explore(g)
    for nid in g.nodes:
        w._handle_message(w, {"type": "inspect", "request": 1, "id": nid}, [])
    w.close()
