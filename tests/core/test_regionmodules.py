"""core/regionmodules.py without compiling anything: the node-by-node match that decides
whether a retraced backward's modules may be given to a region's ops (only an exact match may),
and the notes when there is nothing to recover. The recovery itself, on inductor regions, is
tested in tests/engine/step/test_compiled_modules_recovered.py."""

from __future__ import annotations

import operator

import torch
import torch.fx

from autograd_widget.core.regionmodules import dynamo_graph, match_graphs, recovered_origins

aten = torch.ops.aten


def _graph(*, renamed: bool = False, constant: bool = False, target=aten.mul.Tensor,
           scale: float = 2.0) -> torch.fx.Graph:  # fmt: skip
    """grad * where(mask, 0, saved) * scale, as an AOTAutograd backward is laid out; `renamed`:
    as a cache's rebuilt module names it; `constant`: the zero as a rebuilt module holds it (a
    get_attr for the value `aten.full` made)."""
    g = torch.fx.Graph()
    saved = g.placeholder("primals_1")
    mask = g.placeholder("le")
    grad = g.placeholder("tangents_1")
    suffix = "_default" if renamed else ""
    if constant:
        zero = g.get_attr("_tensor_constant0")
    else:
        zero = g.call_function(aten.full.default, ([], 0.0), {"dtype": torch.float32})
        zero.name = f"full{suffix}"
    where = g.call_function(aten.where.self, (mask, zero, saved))
    where.name = f"where{suffix}"
    mul = g.call_function(target, (grad, where))
    mul.name = f"mul{suffix}"
    out = g.call_function(aten.mul.Tensor, (mul, scale))
    pair = g.call_function(operator.getitem, ((out, out), 0))
    g.output((pair, None))
    return g


def test_the_same_program_under_other_names_is_matched_node_by_node():
    traced = _graph()
    names = match_graphs(_graph(renamed=True), traced)
    assert isinstance(names, dict)
    assert names["where_default"] == "where" and names["mul_default"] == "mul"
    assert names["primals_1"] == "primals_1" and names["tangents_1"] == "tangents_1"
    assert len(names) == len(traced.nodes)


def test_a_constant_op_held_as_its_value_by_a_rebuilt_module_still_matches():
    names = match_graphs(_graph(renamed=True, constant=True), _graph())
    assert isinstance(names, dict) and names["_tensor_constant0"] == "full"


def test_any_other_difference_is_no_match_and_says_where():
    base = _graph()
    other_op = match_graphs(_graph(target=aten.div.Tensor), base)
    assert other_op == "mul calls aten.div.Tensor, the retraced mul aten.mul.Tensor"
    other_arg = match_graphs(_graph(scale=3.0), base)
    assert isinstance(other_arg, str) and "take other arguments" in other_arg
    shorter = torch.fx.Graph()
    shorter.output(shorter.placeholder("x"))
    assert match_graphs(shorter, base) == "the retraced backward has 9 nodes, the region's 2"
    # a get_attr stands for an op on constants only, never for one that reads another node
    held, computed = torch.fx.Graph(), torch.fx.Graph()
    held.placeholder("x")
    held.output(held.get_attr("_tensor_constant0"))
    computed.output(computed.call_function(aten.neg.default, (computed.placeholder("x"),)))
    why = match_graphs(held, computed)
    assert why == "_tensor_constant0 is a get_attr, the retraced neg_default a call_function"
    # and the other way round: an op of the region is never matched with a constant
    assert isinstance(match_graphs(_graph(), _graph(constant=True)), str)


def test_nothing_to_recover_gives_a_note():
    assert recovered_origins(None, None) == "not a compiled region: no forward class"

    class NotCompiled:  # a forward class no `__compiled_fn_*` leads to
        pass

    note = dynamo_graph(NotCompiled)
    assert isinstance(note, str) and "was not found" in note


def test_modules_note_survives_a_saved_graph():
    """A graph saved and loaded again keeps why a region's modules are unknown (graphdict)."""
    import torch

    from autograd_widget.core.capture import capture
    from autograd_widget.core.graphdict import parse_regions
    from autograd_widget.core.regions import Region

    g = capture((torch.ones(2, requires_grad=True) * 2).sum())
    nid = next(iter(g.nodes))
    r = Region(nid, 0, [], [], [], [], False, "not readable", modules_note="dynamo was reset")
    back = parse_regions({"regions": [r.to_dict()]}, g.nodes)
    assert back[nid].modules_note == "dynamo was reset"
    # an older file without the field reads as "no note"
    d = r.to_dict()
    del d["modules_note"]
    assert parse_regions({"regions": [d]}, g.nodes)[nid].modules_note == ""
