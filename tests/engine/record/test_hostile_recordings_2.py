"""More hostile `.awrec` files (issue 38): a graph of many tiny nodes that the manifest's byte
limit does not bound is refused by the node limit before any field is read, saying how to raise
it; a watched step's sub-recording (NaN loss, "present, not counted" NaN/Inf counts) saves to a
file `load_recording` accepts. Every file is crafted here."""

from __future__ import annotations

import json
import tracemalloc

import pytest
import torch

import autograd_widget as aw
from autograd_widget.engine.record import awrec
from tests.helpers.awrec_craft import good_parts, pack

MIB = 1 << 20


def tiny_nodes(n: int) -> dict:
    """A manifest document of `n` minimal nodes in a chain (~110 bytes of JSON a node)."""
    doc, _ = good_parts()
    nodes = [{"id": f"n{i}", "name": "M", "kind": "function", "sequence_nr": i,
              "inputs": [[[], "float32", "cpu"]], "num_outputs": 1} for i in range(n)]
    g = doc["recording"]["graph"]
    g.update(nodes=nodes, edges=[[f"n{i}", 0, f"n{i + 1}", 0] for i in range(n - 1)],
             roots=[["n0", 0]])  # fmt: skip
    g.pop("regions", None)
    doc["recording"].update(all_runs=[], failure=None, births={})
    doc["tensors"] = {}
    return doc


def test_95000_tiny_nodes_pass_the_byte_limit_but_not_the_node_limit(tmp_path):
    doc = tiny_nodes(95_000)
    text = json.dumps(doc)
    assert len(text) < awrec.Limits().manifest_bytes  # the byte limit alone admits it
    path = tmp_path / "many.awrec"
    path.write_bytes(pack(text, {}))
    assert path.stat().st_size < 2 * MIB
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"many\.awrec: its graph has 95000 nodes \(compiled "
                           r"regions' ops counted\), more than max_nodes=20000; if you trust "
                           r"this file, raise the limit: aw\.load_recording\(path, "
                           r"max_nodes=95000\)"):
            aw.load_recording(path)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < 40 * len(text)  # the JSON parsed, nothing built from it
    small = tmp_path / "small.awrec"
    small.write_bytes(pack(tiny_nodes(50), {}))
    assert len(aw.load_recording(small).graph.nodes) == 50
    with pytest.raises(ValueError, match=r"max_nodes=49\b.*max_nodes=50\)"):
        aw.load_recording(small, max_nodes=49)


def test_the_node_limit_counts_region_ops(tmp_path):
    doc = tiny_nodes(3)
    doc["recording"]["graph"]["regions"] = [{"node": "n1", "ops": [{}] * 30}]
    path = tmp_path / "ops.awrec"
    path.write_bytes(pack(doc, {}))
    with pytest.raises(ValueError, match=r"its graph has 33 nodes .* max_nodes=32"):
        aw.load_recording(path, max_nodes=32)
    with pytest.raises(ValueError, match=r"regions\[0\]\.index: missing"):
        aw.load_recording(path, max_nodes=33)  # then every field is checked


def test_a_limit_must_be_a_count():
    with pytest.raises(ValueError, match=r"max_nodes must be an int >= 0, got True"):
        awrec.Limits(nodes=True)


def test_a_nan_loss_step_saves_a_recording_that_loads(tmp_path):
    """`watch.recording(k).save()` of a step whose loss is NaN wrote strict JSON only by failing
    (allow_nan=False); the loss is now spelled "nan" and read back as NaN."""
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    with aw.watch(params={"w": w}) as watch:
        loss = (w * float("nan")).sum()
        with watch.step(loss):
            loss.backward()
    r = watch.recording(0)
    back = aw.load_recording(r.save(tmp_path / "nan.awrec"))
    assert back.meta["loss"] != back.meta["loss"] and back.order == r.order


def test_a_dtensor_summary_keeps_its_shard_note_through_a_file(tmp_path):
    """A tensor-parallel recording's summaries say they describe this rank's local shard
    (`Summary.shard`); the note is saved, so a loaded recording says it too, and a note longer
    than any core/dtensor.py writes is refused."""
    note = "local shard [3] of a DTensor [6], S(0) on mesh (2,) cpu"
    doc, tensors = good_parts()
    doc["recording"]["all_runs"][0][7][0]["shard"] = note
    path = tmp_path / "tp.awrec"
    path.write_bytes(pack(json.dumps(doc), tensors))
    rec = aw.load_recording(path)
    assert [s.shard for s in rec.all_executions[0].outputs] == [note]  # pass 0, n0
    doc["recording"]["all_runs"][0][7][0]["shard"] = "x" * 401
    path.write_bytes(pack(json.dumps(doc), tensors))
    with pytest.raises(ValueError, match=r"shard.*longer than 400"):
        aw.load_recording(path)
