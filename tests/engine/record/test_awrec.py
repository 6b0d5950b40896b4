""".awrec files and compare_recordings: a faithful round trip (NaN/Inf, kept tensors, failure),
loading in a process without the model, clear errors for foreign, newer or corrupt files, and
edge-by-edge comparison with structural checks."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

import autograd_widget as aw
from autograd_widget.engine.record import awrec
from tests.helpers.programs import raising

ROOT = Path(__file__).parents[3]


Boom = raising(RuntimeError, "boom")


def nan_recording(keep="tensors"):
    a = torch.tensor([0.0, 4.0, -1.0], requires_grad=True)
    b = torch.randn(3, dtype=torch.float64, requires_grad=True)
    loss = (a.sqrt() * b.float()).sum()  # sqrt(0): inf; sqrt(-1): nan
    with aw.record(loss, params={"a": a, "b": b}, keep=keep) as rec:
        loss.backward(retain_graph=True)
        loss.backward()
    return rec


def _plain(run):
    """A NodeExecution with its summaries as dicts (NaN spelled "nan": equal to itself)."""
    enc = [None if s is None else s.as_dict() for s in run.inputs + run.outputs]
    return (run.node, run.step, run.seq, run.thread, run.pass_index, run.seconds, enc)


def test_round_trip_is_faithful(tmp_path):
    rec = nan_recording()
    path = rec.save(tmp_path / "r_{rank}.awrec")
    assert path.name == "r_0.awrec"
    back = aw.load_recording(path)
    assert back.order == rec.order and back.passes == 2
    assert [_plain(r) for r in back.all_executions] == [_plain(r) for r in rec.all_executions]
    assert back.edge_summaries().keys() == rec.edge_summaries().keys()
    for e in rec.graph.edges:
        assert back.edge_summary(e).as_dict() == rec.edge_summary(e).as_dict()
        ta, tb = rec.edge_grad(e), back.edge_grad(e)
        assert tb.dtype == ta.dtype and torch.equal(ta.nan_to_num(), tb.nan_to_num())
        assert torch.equal(ta.isnan(), tb.isnan())
    assert back.first_nonfinite()[0] == rec.first_nonfinite()[0]
    assert back.graph.to_dict() == rec.graph.to_dict()
    assert back.meta == rec.meta
    manifest = json.loads(zipfile.ZipFile(path).read("manifest.json"))  # strict JSON
    assert manifest["format"] == awrec.FORMAT and manifest["version"] == list(awrec.VERSION)


def test_failure_round_trips(tmp_path):
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    loss = (Boom.apply(w) * 3).sum()
    with pytest.raises(RuntimeError, match="boom"):
        with aw.record(loss) as rec:
            loss.backward()
    back = aw.load_recording(rec.save(tmp_path / "f.awrec"))
    assert back.failure == rec.failure and back.failure.error == "boom"


def test_load_in_a_fresh_process_without_the_model(tmp_path):
    rec = nan_recording()
    path = rec.save(tmp_path / "r.awrec")
    edge, summary = rec.first_nonfinite()
    code = (
        "import sys, autograd_widget as aw\n"
        "rec = aw.load_recording(sys.argv[1])\n"
        "edge, s = rec.first_nonfinite()\n"
        "print(len(rec.order), rec.passes, edge.id, s.nan + s.inf, rec.graph.is_live,\n"
        "      len(rec.kept_edges))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120,
        cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    n, passes, eid, bad, live, kept = out.stdout.split()
    assert (int(n), passes, live, int(kept)) == (6, "2", "False", 5)
    assert eid == edge.id and int(bad) == summary.nan + summary.inf > 0


def test_bad_files_say_what_to_do(tmp_path):
    good = nan_recording().save(tmp_path / "good.awrec")
    (tmp_path / "text.awrec").write_text("not a zip")
    with pytest.raises(ValueError, match=r"not a zip archive.*aw\.record"):
        aw.load_recording(tmp_path / "text.awrec")
    data = good.read_bytes()
    (tmp_path / "cut.awrec").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="not a readable autograd_widget recording"):
        aw.load_recording(tmp_path / "cut.awrec")

    def rewrite(name, change):
        with zipfile.ZipFile(good) as z:
            files = {n: z.read(n) for n in z.namelist()}
        doc = json.loads(files["manifest.json"])
        change(doc)
        files["manifest.json"] = json.dumps(doc).encode()
        with zipfile.ZipFile(tmp_path / name, "w") as z:
            for n, b in files.items():
                z.writestr(n, b)
        return tmp_path / name

    newer = rewrite("newer.awrec", lambda d: d.__setitem__("version", [2, 0]))
    with pytest.raises(ValueError, match=r"newer.*upgrade autograd_widget"):
        aw.load_recording(newer)
    minor = rewrite("minor.awrec", lambda d: d.update(version=[1, 7], extra="ignored"))
    assert aw.load_recording(minor).passes == 2
    other = rewrite("other.awrec", lambda d: d.__setitem__("format", "something.else"))
    with pytest.raises(ValueError, match=r"format is 'something\.else'"):
        aw.load_recording(other)
    broken = rewrite("broken.awrec", lambda d: d["recording"].pop("all_runs"))
    with pytest.raises(ValueError, match="malformed recording manifest"):
        aw.load_recording(broken)
    with zipfile.ZipFile(tmp_path / "empty.awrec", "w") as z:
        z.writestr("other.txt", "x")
    with pytest.raises(ValueError, match=r"no manifest\.json"):
        aw.load_recording(tmp_path / "empty.awrec")
    with pytest.raises(FileNotFoundError):
        aw.load_recording(tmp_path / "missing.awrec")


def _run(data, k=2.0, keep="summaries", nan=False):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    if nan:
        with torch.no_grad():
            model[2].weight[0, 0] = float("nan")
    loss = (model(data) * k).sum()
    with aw.record(loss, model=model, keep=keep) as rec:
        loss.backward()
    return rec


def test_compare_recordings_lists_differing_edges(tmp_path):
    x = torch.randn(5, 3)
    a, same = _run(x), _run(x.clone())
    assert aw.compare_recordings(a, same) == []
    other = _run(x + 1.0)
    diff = aw.compare_recordings(a, other)
    assert diff and set(diff) <= {e.id for e in a.graph.edges}
    root_edge = a.graph.out_edges(a.graph.roots[0][0])[0].id
    assert root_edge not in diff  # d(sum)/d(out) is ones on both
    # files compare like live recordings; tensors when both kept them
    back = aw.load_recording(a.save(tmp_path / "a.awrec"))
    assert aw.compare_recordings(back, same) == []
    ta, tb = _run(x, keep="tensors"), _run(x, keep="tensors")
    assert aw.compare_recordings(ta, tb) == []
    tc = _run(x, k=2.0 + 1e-3, keep="tensors")
    assert aw.compare_recordings(ta, tc) == [e.id for e in ta.graph.edges if e.id != "n0:0"]
    assert aw.compare_recordings(ta, tc, rtol=1e-2) == []
    # NaN equals NaN
    na, nb = _run(x, nan=True), _run(x, nan=True)
    assert na.first_nonfinite() is not None and aw.compare_recordings(na, nb) == []


def test_compare_recordings_refuses_different_graphs():
    x = torch.randn(5, 3)
    a = _run(x)
    w = torch.randn(3, requires_grad=True)
    loss = (x @ w).exp().sum()
    with aw.record(loss) as other:
        loss.backward()
    with pytest.raises(ValueError, match="different graphs: node n1 is"):
        aw.compare_recordings(a, other)
    with pytest.raises(TypeError, match="two Recordings"):
        aw.compare_recordings(a, None)
