"""A recorded engine run in the widget: `aw.explore(recording)` steps through what the engine did,
in its order, with the widget's own protocol; nothing live is needed or touched."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import autograd_widget as aw
from autograd_widget.engine.record.replay import Replay
from autograd_widget.view.stateview import DIFFERS, FLOWED, NONFINITE
from autograd_widget.wire.protocol import dispatch
from tests.helpers.programs import raising
from tests.helpers.torch_versions import WHY_CULPRIT, needs_torch


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
    Boom = raising(ValueError, "boom in backward")

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


def _nan_step():
    """A step that goes NaN: the norm of a row that is exactly zero (sqrt at 0)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh())
    x = torch.randn(5, 4)
    x[2] = 0.0
    with torch.no_grad():
        model[0].bias.zero_()
    with aw.track(model):
        h = model(x)
    loss = h.pow(2).sum(-1).sqrt().mean()
    return model, loss


@pytest.mark.parametrize("via_file", [False, True])
def test_a_recorded_nan_birth_is_found_and_explained(tmp_path, via_file):
    model, loss = _nan_step()
    with aw.record(loss, model=model) as rec:
        loss.backward()
    assert model[0].weight.grad.isnan().any()  # the user's backward really went NaN
    if via_file:
        rec = aw.load_recording(rec.save(tmp_path / "nan.awrec"))
    origins = rec.nonfinite_origins()
    born = [o for o in origins if o.kind == "born"]
    assert [rec.graph.nodes[o.node].name for o in born] == ["SqrtBackward0"]
    assert "saved `result` has 1 zero" in born[0].cause
    assert {o.kind for o in origins} <= {"born", "propagated", "healed"}
    w = aw.explore(rec)
    session = w._session
    out = dispatch(session, {"type": "first_nonfinite", "request": 1, "chunk_ms": 1000})
    data = out[0]["data"]
    assert data["src"] == "SqrtBackward0"
    assert "born in" in data["sentence"] and "1 zero" in data["sentence"]
    assert w.stepper.position == w.stepper.step_index(born[0].node) + 1  # stopped right there
    assert w.selected == born[0].node
    w.close()


def test_first_nonfinite_runs_ahead_in_chunks_on_a_live_graph():
    model, loss = _nan_step()
    w = aw.explore(loss, model=model)
    session = w._session
    replies = []
    for k in range(200):
        out = dispatch(session, {"type": "first_nonfinite", "request": k, "chunk_ms": 1e-6})
        replies.append(out[0]["data"])
        if not replies[-1].get("searching"):
            break
    assert len(replies) > 1 and replies[0]["searching"]  # one step per tiny chunk
    assert replies[-1]["src"] == "SqrtBackward0"
    assert "the derivative of sqrt at 0 is infinite" in replies[-1]["sentence"]
    # without a NaN: the whole backward, then a plain answer
    x = torch.randn(3, requires_grad=True)
    w2 = aw.explore((x * 2).sum())
    out = dispatch(w2._session, {"type": "first_nonfinite", "request": 1, "chunk_ms": 1000})
    assert out[0]["data"]["message"] == "no NaN/Inf gradient in the whole backward"
    assert w2.stepper.done
    w.close()
    w2.close()


@needs_torch("2.10", WHY_CULPRIT)
def test_a_recorded_inplace_failure_is_explained_even_from_a_file(tmp_path):
    a = torch.randn(4, requires_grad=True)
    b = a.sigmoid()
    b.mul_(2)  # overwrites the output sigmoid saved
    loss = b.sum()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"), \
            aw.record(loss) as rec:
        loss.backward()
    rec = aw.load_recording(rec.save(tmp_path / "inplace.awrec"))
    why = rec.failure.explanation
    assert why is not None and why.kind == "inplace"
    assert why.saved_name == "result" and why.current_version > why.saved_version
    assert rec.graph.nodes[why.culprit].name == "MulBackward0"
    assert "set_detect_anomaly" in why.hint
    w = aw.explore(rec)
    w.stepper.run()
    reply = dispatch(w._session, {"type": "inspect", "request": 1, "what": "node",
                                  "id": rec.failure.node})
    data = reply[0]["data"]
    assert data["explanation"]["sentence"] == why.sentence
    assert data["formula"]["known"] and data["formula"]["latex"]  # SigmoidBackward0's formula
    assert aw.formula("SigmoidBackward0") == data["formula"]["latex"]
    w.close()
