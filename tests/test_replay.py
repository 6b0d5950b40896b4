"""A recorded engine run in the widget: `aw.explore(recording)` steps through what the engine did,
in its order, with the widget's own protocol; nothing live is needed or touched."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import autograd_widget as aw
from autograd_widget.engine.replay import Replay
from autograd_widget.view.state import DIFFERS, FLOWED, NONFINITE
from autograd_widget.wire.protocol import dispatch


def _mlp_recording(seed: int = 0, corrupt: bool = False):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    torch.manual_seed(seed)
    x = torch.randn(5, 4)
    if corrupt:
        x[0, 0] = 1e3
    with aw.track(model):
        out = model(x)
    loss = out.pow(2).mean()
    with aw.record(loss, model=model) as rec:
        loss.backward()
    return rec, model


def test_replay_steps_in_the_engines_order_and_shows_what_it_recorded():
    rec, _model = _mlp_recording()
    w = aw.explore(rec)
    st = w.stepper
    assert isinstance(st, Replay)
    assert list(st.order) == list(rec.order)
    assert w._graph["source"] == "recording"
    assert dispatch(w._session, {"type": "step"}) == []
    assert st.position == 1
    dispatch(w._session, {"type": "run", "chunk_ms": 500})
    assert st.done
    for e in rec.graph.edges:
        assert st.edge_summary(e.id) == rec.edge_summary(e.id)
    # the state shows every edge flowed, coloured on the recording's own norms
    assert w._state["done"] and w._state["norm_scale"] == "run"
    dispatch(w._session, {"type": "back"})
    assert st.position == len(st.order) - 1
    dispatch(w._session, {"type": "reset"})
    assert st.position == 0 and st.edge_summaries() == {}
    # Python drives the same replay: the view follows
    st.run(until=st.order[3])
    assert w._state["position"] == 4
    w.close()


def test_replay_inspector_says_what_a_recording_has_and_refuses_live_only_actions():
    rec, _ = _mlp_recording()
    w = aw.explore(rec)
    w.stepper.run()
    nid = w.stepper.order[1]
    reply = dispatch(w._session, {"type": "inspect", "request": 1, "what": "node", "id": nid})
    data = reply[0]["data"]
    assert data["saved"] == [] and "recording keeps no saved values" in data["saved_error"]
    assert data["run"]["step"] == 1 and data["run"]["ms"] >= 0
    assert data["hooks"] == []
    out = dispatch(w._session, {"type": "probe", "request": 2, "samples": 4})
    assert out[0]["type"] == "warning" and "needs the live graph" in out[0]["message"]
    with pytest.raises(RuntimeError, match="needs the live graph"):
        w.stepper.set_edge_grad(rec.graph.edges[0].id, torch.zeros(1))
    with pytest.raises(TypeError, match="recording was captured already"):
        aw.explore(rec, model=torch.nn.Linear(1, 1))
    w.close()


def test_replay_of_a_failing_backward_stops_on_the_failing_node():
    class Boom(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom in backward")

    x = torch.randn(3, requires_grad=True)
    loss = Boom.apply(x.exp()).sum()
    with pytest.raises(ValueError, match="boom in backward"), aw.record(loss) as rec:
        loss.backward()
    assert rec.failure is not None
    w = aw.explore(rec)
    st = w.stepper
    assert st.order[-1] == rec.failure.node
    st.run()
    assert st.last_error == (rec.failure.node, rec.failure.error)
    assert not st.done and st.position == len(st.order) - 1
    assert w._state["error"] is not None
    out = dispatch(w._session, {"type": "step"})
    assert out and "Back or Reset" in out[0]["message"]
    w.close()


def test_compare_to_flags_the_edges_that_differ():
    a, _ = _mlp_recording(seed=1)
    b, _ = _mlp_recording(seed=1, corrupt=True)
    same, _ = _mlp_recording(seed=1)
    assert aw.compare_recordings(a, same) == []
    diff = aw.compare_recordings(a, b)
    assert diff
    w = aw.explore(a, compare_to=b)
    assert w.differences == diff
    assert w._graph["compared"] == "the compared recording"
    w.stepper.run()
    sv = w._session.scene.state
    flags = {e.id: int(sv.edge_flag[sv.edge_index[e.id]]) for e in a.graph.edges}
    assert {e for e, f in flags.items() if f == DIFFERS} == set(diff)
    assert all(f in (FLOWED, NONFINITE, DIFFERS) for f in flags.values())
    w.close()


def test_replay_survives_a_file_round_trip_and_exports_without_jupyter(tmp_path):
    rec, _ = _mlp_recording()
    path = rec.save(tmp_path / "run_{rank}.awrec")
    assert path.name == "run_0.awrec"
    out = tmp_path / "page.html"
    code = (
        "import sys; from autograd_widget.__main__ import main; "
        f"sys.exit(main([{str(path)!r}, '--html', {str(out)!r}]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "wrote" in done.stdout
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>")
    assert '"total":' in page and str(len(rec.order)) in page
    bad = subprocess.run(
        [sys.executable, "-m", "autograd_widget", str(tmp_path / "missing.awrec"), "--html",
         str(out)], capture_output=True, text=True, timeout=120,
    )
    assert bad.returncode == 2 and "error:" in bad.stderr


def test_side_by_side_steps_both_and_flags_both():
    a, _ = _mlp_recording(seed=2)
    b, _ = _mlp_recording(seed=2, corrupt=True)
    pair = aw.side_by_side(a, b, names=("rank 0", "rank 1"))
    assert pair.differences == aw.compare_recordings(a, b) != []
    assert pair.right.differences == aw.compare_recordings(b, a)
    assert "rank 0" in pair.children[0].children[0].value
    pair.left.stepper.run(until=pair.left.stepper.order[4])
    assert pair.right.stepper.position == 5
    pair.right.stepper.back()
    assert pair.left.stepper.position == 4
    pair.left.stepper.reset()
    assert pair.right.stepper.position == 0
    dispatch(pair.right._session, {"type": "run", "chunk_ms": 500})
    assert pair.left.stepper.done and pair.right.stepper.done
    assert pair.left._graph["compared"] and pair.right._graph["compared"]
    pair.close()
    other = torch.ones(3, requires_grad=True)
    loss = other.exp().sum()
    with aw.record(loss) as c:
        loss.backward()
    with pytest.raises(ValueError):
        aw.side_by_side(a, c)
