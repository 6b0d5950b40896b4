"""aw.explore(group) of every rank's files (wire/rankswitch.py, view/ranklines.py): the rank it
opens on, one line per rank, switching rank from Python, from the trait and by the `select_rank`
message (refused ones answered with a warning, nothing changed), and the widget following the new
run."""

from __future__ import annotations

import json

import numpy as np
import pytest

import autograd_widget as aw
from autograd_widget.wire.protocol import MESSAGES, dispatch
from autograd_widget.wire.trainpayload import timeline_payload
from tests.helpers.rankfiles import GLOO_CLOSED, failing, save_failures, save_watches, train


@pytest.fixture
def watches(tmp_path):
    """Rank 1 makes a NaN at step 2 (a sqrt at 0); rank 0's weights are poisoned from step 3."""
    return aw.load_watch(save_watches(tmp_path, [train(poisoned_from=3),
                                                 train(bad_step=2, poisoned_from=3)]))


@pytest.fixture
def recordings(tmp_path):
    """Rank 1's own BoomBackward raises; rank 0 fails in gloo, waiting on it."""
    return aw.load_recording(save_failures(tmp_path, [failing(GLOO_CLOSED),
                                                      failing("my backward is wrong")]))


def test_a_watch_group_opens_on_the_birth_rank_with_a_line_per_rank(watches):
    w = aw.explore(watches)
    assert w.rank_group is watches and w.rank == 1 and w.watch is watches.watch(1)
    assert w.watch_step == 2 and w.stepper.done  # rank 1's own first non-finite step
    assert [r["rank"] for r in w.ranks] == [0, 1]
    assert w.ranks[1]["label"] == "rank 1: NaN/Inf born at step 2 in SqrtBackward0"
    assert w.ranks[1]["role"] == "born" and "sqrt at 0" in w.ranks[1]["detail"]
    assert w.ranks[0]["role"] == "received"
    assert "through a collective" in w.ranks[0]["label"] and "step 3" in w.ranks[0]["label"]
    assert w._timeline["first"]["step"] == 2
    # each rank's row of the timeline: the model's norm per step, red from where it went bad
    s0, s1 = (r["strip"] for r in w.ranks)
    assert s0["n_steps"] == s1["n_steps"] == 4 and s0["range"] == s1["range"]
    assert s1["alarm"] == [2, 3] and s0["alarm"] == [3]
    assert s0["values"][0] == pytest.approx(np.log10(watches.watch(0).series("")[0]), abs=1e-4)
    json.dumps(w.ranks, allow_nan=False)
    w.close()


def test_select_rank_swaps_the_watch_its_timeline_and_the_graph_below(watches):
    w = aw.explore(watches)
    w.select_rank(0)
    assert w.rank == 0 and w.watch is watches.watch(0) and w.watch_step == 3
    assert w._timeline == timeline_payload(watches.watch(0), 3)
    assert w._timeline["first"]["name"] == "MulBackward0"  # rank 0's view of its own step 3
    assert w.stepper.recording.meta["watch_step"] == 3 and w.stepper.done
    assert np.isinf(np.frombuffer(w._state["edge_norm"], np.float32)).any() or \
        np.isnan(np.frombuffer(w._state["edge_norm"], np.float32)).any()
    w.stepper.reset()  # the new stepper is followed: stepping from Python updates the view
    assert w._state["position"] == 0
    w.rank = 1  # setting the trait does the same
    assert w.watch is watches.watch(1) and w.watch_step == 2 and w.stepper.done
    w.close()


def test_the_select_rank_message_and_its_refusals(watches):
    w = aw.explore(watches)
    s = w._session
    assert "select_rank" in MESSAGES
    assert dispatch(s, {"type": "select_rank", "rank": 0}) == [] and w.rank == 0
    stepper, timeline = w.stepper, w._timeline
    for bad in (5, -1, "1", True, None, 1.0):
        (out,) = dispatch(s, {"type": "select_rank", "rank": bad})
        assert out["type"] == "warning" and "not a rank of this run (ranks 0..1)" in out["message"]
        assert w.rank == 0 and w.stepper is stepper and w._timeline is timeline
    assert dispatch(s, {"type": "select_rank"})[0]["type"] == "warning"
    with pytest.raises(ValueError, match="not a rank of this run"):
        w.select_rank(2)
    assert w.rank == 0 and w.stepper is stepper
    assert dispatch(s, {"type": "select_rank", "rank": 0}) == []  # the same rank: nothing moves
    assert w.stepper is stepper
    w.release()
    with pytest.raises(ValueError, match="released"):
        w.select_rank(1)
    assert w.rank == 0 and not w.graph.is_live
    w.close()


def test_a_widget_without_a_group_refuses_a_rank():
    import torch

    x = torch.tensor(2.0, requires_grad=True)
    w = aw.explore(x * 3, params={"x": x})
    assert w.rank is None and w.ranks == [] and w.rank_group is None
    (out,) = dispatch(w._session, {"type": "select_rank", "rank": 0})
    assert out["type"] == "warning" and "no rank group" in out["message"]
    with pytest.raises(ValueError, match="no rank group"):
        w.select_rank(0)
    assert w.rank is None
    w.close()


def test_a_recording_group_opens_on_the_rank_whose_own_node_raised(recordings):
    w = aw.explore(recordings)
    assert w.rank == 1 and w.stepper.recording is recordings.recording(1)
    assert [r["label"] for r in w.ranks] == ["rank 0: waiting on rank 1 (collective)",
                                             "rank 1: BoomBackward raised"]
    assert [r["role"] for r in w.ranks] == ["collective", "raised"]
    assert "my backward is wrong" in w.ranks[1]["detail"]
    old = w.stepper
    assert dispatch(w._session, {"type": "select_rank", "rank": 0}) == []
    assert w.rank == 0 and w.stepper.recording is recordings.recording(0)
    assert w.graph is recordings.recording(0).graph and w.stepper.position == 0
    with pytest.raises(RuntimeError):  # the old replay was closed
        old.step()
    w.stepper.run()  # the new replay is followed: the view shows where rank 0 failed
    assert w._state["error"]["id"] == "n1" and "Connection closed by peer" in w.status
    w.close()


def test_a_group_with_compare_to_is_refused(recordings):
    with pytest.raises(TypeError, match="a rank group already shows every rank"):
        aw.explore(recordings, compare_to=recordings.recording(0))
