"""Every rank's files of one distributed run read together (`{rank}` in the path): the rank where
a NaN/Inf was born, the rank whose own node raised, where ranks diverge, and bad sets of files.

The files here are made in this process (a rank's meta set as `Watch.save` / `Recording.save`
write it under torch.distributed); test_rank_programs.py runs the same on real gloo ranks."""

from __future__ import annotations

import pytest
import torch

import autograd_widget as aw
from autograd_widget.engine.diagnose.collective import is_collective_error, is_collective_node
from tests.helpers.rankfiles import GLOO_CLOSED
from tests.helpers.rankfiles import as_rank as _as_rank
from tests.helpers.rankfiles import failing as _failing
from tests.helpers.rankfiles import save_watches as _save_watches
from tests.helpers.rankfiles import train as _train


# --------------------------------------------------------------------------- NaN across ranks
def test_the_rank_where_the_nan_was_born_not_the_one_it_reached_later(tmp_path):
    # rank 1 makes it at step 2; rank 0's weights are poisoned from step 3 (DDP's all-reduce)
    pattern = _save_watches(tmp_path, [_train(poisoned_from=3), _train(bad_step=2,
                                                                       poisoned_from=3)])
    group = aw.load_watch(pattern)
    assert isinstance(group, aw.RankWatches) and group.ranks == [0, 1]
    assert group.watch(0).first_nonfinite()[0] == 3  # alone, rank 0 points at a later step
    step, rank, origin = group.first_nonfinite()
    assert (step, rank) == (2, 1)
    assert group.watch(1).recording(2).graph.nodes[origin.node].name == "SqrtBackward0"
    assert "sqrt at 0" in origin.cause
    r0, r1 = group.nonfinite_ranks()
    assert (r1.role, r1.step, r1.node_name) == ("born", 2, "SqrtBackward0")
    assert (r0.role, r0.step) == ("received", 3)
    assert "through a collective" in r0.sentence and "rank 1" in r0.sentence
    assert "first NaN/Inf at step 2 on rank 1" in repr(group)


def test_at_the_same_step_a_local_cause_beats_a_nan_that_came_in_through_the_forward(tmp_path):
    # rank 0's saved values are already NaN in the forward; rank 1's own sqrt makes it
    pattern = _save_watches(tmp_path, [_train(poisoned_from=1), _train(bad_step=1)])
    group = aw.load_watch(pattern)
    step, rank, _ = group.first_nonfinite()
    assert (step, rank) == (1, 1)
    r0 = group.nonfinite_ranks()[0]
    assert r0.role == "received" and r0.step == 1 and "produced in the forward" in r0.sentence


def test_both_ranks_born_the_lowest_is_named_the_other_marked_born_too(tmp_path):
    group = aw.load_watch(_save_watches(tmp_path, [_train(bad_step=1), _train(bad_step=1)]))
    assert group.first_nonfinite()[:2] == (1, 0)
    assert [r.role for r in group.nonfinite_ranks()] == ["born", "born"]
    assert "too" in group.nonfinite_ranks()[1].sentence


def test_all_finite_and_a_rank_that_stays_finite(tmp_path):
    group = aw.load_watch(_save_watches(tmp_path, [_train(), _train()]))
    assert group.first_nonfinite() is None
    assert [r.role for r in group.nonfinite_ranks()] == ["finite", "finite"]
    group = aw.load_watch(_save_watches(tmp_path, [_train(), _train(bad_step=2)]))
    assert group.first_nonfinite()[:2] == (2, 1)
    assert group.nonfinite_ranks()[0].role == "finite"


def test_an_unwatched_first_step_gives_no_origin(tmp_path):
    def every2(bad):
        w = torch.ones(2, requires_grad=True)
        watch = aw.watch(params={"w": w}, every=2)
        for k in range(3):
            loss = (w * (0.0 if k == bad else 1.0)).pow(2).sum().sqrt()
            with watch.step(loss):
                loss.backward()
        return watch

    group = aw.load_watch(_save_watches(tmp_path, [every2(None), every2(1)]))
    assert group.first_nonfinite() == (1, 1, None)
    assert group.nonfinite_ranks()[1].role == "unknown"


# --------------------------------------------------------------------------- divergence
def test_divergence_names_the_first_step_and_key_where_a_rank_differs(tmp_path):
    def run(k_bad):
        w, v = torch.ones(2, requires_grad=True), torch.ones(1, requires_grad=True)
        watch = aw.watch(params={"w": w, "v": v})
        for k in range(3):
            loss = (w * (2.0 if k == k_bad else 1.0)).sum() + v.sum()
            with watch.step(loss):
                loss.backward()
        return watch

    group = aw.load_watch(_save_watches(tmp_path, [run(None), run(2)]))
    d = group.divergence(["v", "w", "loss"])
    assert (d.step, d.key, d.ranks) == (2, "w", (1,))
    assert d.values[0] == pytest.approx(2**0.5) and d.values[1] == pytest.approx(2 * 2**0.5)
    assert group.divergence("loss").step == 2
    assert group.divergence(["w"], rtol=1.0) is None  # within the tolerance
    assert group.divergence("scale") is None  # no scaler: NaN on both, equal
    with pytest.raises(KeyError, match="nope"):
        group.divergence("nope")
    with pytest.raises(ValueError, match="at least one key"):
        group.divergence([])


# --------------------------------------------------------------------------- failures
def test_the_rank_whose_own_node_raised_and_the_one_that_waited_on_it(tmp_path):
    own, waited = _failing("my backward is wrong"), _failing(GLOO_CLOSED)
    assert waited.failure.explanation.kind == "collective"  # told apart in one process too
    for r, rec in enumerate([waited, own]):
        _as_rank(rec, r, 2, tmp_path / f"fail_{r}.awrec")
    group = aw.load_recording(tmp_path / "fail_{rank}.awrec")
    assert isinstance(group, aw.RankRecordings) and group.ranks == [0, 1]
    rank, failure = group.first_failure()
    assert rank == 1 and group.recording(1).graph.nodes[failure.node].name == "BoomBackward"
    f0, f1 = group.failures()
    assert f1.own and "my backward is wrong" in f1.sentence
    e = f0.explanation
    assert not f0.own and e.kind == "collective" and e.peer == 1 and e.culprit == failure.node
    assert "waiting on rank 1" in e.sentence and "BoomBackward" in e.sentence
    assert "rank 1 failed at" in repr(group)


def test_a_block_that_raised_after_its_last_node_is_read_from_its_meta(tmp_path):
    # DDP waits for its all-reduce after the last node: no node was running when it raised
    rec0 = _failing(None)  # every node ran
    assert rec0.failure is None
    rec0.meta["error"], rec0.meta["error_type"] = GLOO_CLOSED, "RuntimeError"
    _as_rank(rec0, 0, 2, tmp_path / "fail_0.awrec")
    _as_rank(_failing("boom"), 1, 2, tmp_path / "fail_1.awrec")
    group = aw.load_recording(tmp_path / "fail_{rank}.awrec")
    assert group.first_failure()[0] == 1
    f0 = group.failures()[0]
    assert f0.failure is None and f0.explanation.kind == "collective"
    assert f0.explanation.peer == 1 and f0.explanation.node == ""
    assert "the backward (after its last node)" in f0.explanation.sentence


def test_no_rank_raised_on_its_own(tmp_path):
    for r in range(2):
        _as_rank(_failing(GLOO_CLOSED), r, 2, tmp_path / f"fail_{r}.awrec")
    group = aw.load_recording(tmp_path / "fail_{rank}.awrec")
    assert group.first_failure()[0] == 0  # the lowest failing rank, explained as such
    e = group.failures()[0].explanation
    assert e.kind == "collective" and e.peer is None and "no rank's own node" in e.sentence


def test_collective_names_and_errors():
    assert is_collective_node("_AllReduceBackward") and is_collective_node("RedistributeBackward")
    assert not is_collective_node("ScatterBackward0") and not is_collective_node("SqrtBackward0")
    assert is_collective_error(GLOO_CLOSED) and is_collective_error("NCCL error: remote")
    assert is_collective_error("Watchdog caught collective operation timeout: WorkNCCL(...)")
    assert not is_collective_error("shapes cannot be multiplied")


def test_a_watch_made_before_init_process_group_saves_as_its_rank(tmp_path, monkeypatch):
    """`aw.watch()` is often made before the process group exists (its meta then says rank 0 of
    1); `Watch.save` under torch.distributed writes the rank it runs on, so the group loads."""
    from autograd_widget.engine.watch import watch as watch_module

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    for rank in (0, 1):
        w = aw.watch(params={"x": x})
        loss = (x * 3).sum()
        with w.step(loss):
            loss.backward()
        assert (w.meta["rank"], w.meta["world_size"]) == (0, 1)
        monkeypatch.setattr(watch_module, "rank_info", lambda r=rank: (r, 2))
        w.save(tmp_path / "run_{rank}.awwatch")
    group = aw.load_watch(tmp_path / "run_{rank}.awwatch")
    assert group.ranks == [0, 1]
    assert [group.watch(r).meta["rank"] for r in group.ranks] == [0, 1]
