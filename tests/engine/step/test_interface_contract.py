"""The stepping interface held by behaviour: a `Stepper` (a live graph) and a `Replay` (a
recording of the engine's own run of the SAME program) answer the same calls alike.

Each program is built twice from the same seed: one copy is captured and stepped by hand, the
other is recorded with `aw.record` while the engine runs its backward, then replayed. Both runs
then go through the same sequence of calls (breakpoints set, cleared by id and by predicate,
`run`, `run(until)`, `step`, `back`, `reset`, the summaries, the origins of a NaN, the failure of
a backward that raises, the errors of bad arguments) and every answer is compared, together with
the number of notifications each call sent. What the two may answer differently is what
engine/interface.py says differs by `capabilities` (times, tensors, what needs a live graph).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autograd_widget as aw
from autograd_widget.core.summary import Summary
from autograd_widget.engine.interface import LIVE, RECORDED, Stepping
from autograd_widget.engine.record.replay import Replay
from autograd_widget.engine.step.stepper import Stepper
from tests.helpers.programs import OPS, Spec, build, raising

Program = Callable[[], tuple[torch.Tensor, dict[str, torch.Tensor]]]


def _pair(program: Program) -> tuple[Stepper, Replay, BaseException | None]:
    """A stepper over one build of `program` and a replay of the engine's run of another."""
    torch.manual_seed(0)
    loss, params = program()
    stepper = Stepper(aw.capture(loss, params=params))
    torch.manual_seed(0)
    loss, params = program()
    raised = None
    try:
        with aw.record(loss, params=params) as rec:
            loss.backward()
    except Exception as err:  # a backward that raises: the recording names the failing node
        raised = err
    return stepper, Replay(rec), raised


class Both:
    """Calls a method on both runs, counts each one's notifications, compares the answers."""

    def __init__(self, stepper: Stepper, replay: Replay) -> None:
        self.runs: tuple[Stepping, Stepping] = (stepper, replay)
        self.heard = [0, 0]
        for k, run in enumerate(self.runs):
            run.add_listener(lambda _run, k=k: self._hear(k))

    def _hear(self, k: int) -> None:
        self.heard[k] += 1

    def call(self, name: str, *args: Any) -> tuple[Any, Any]:
        """Both answers (or both exceptions' types), after checking they agree."""
        before = list(self.heard)
        out = []
        for run in self.runs:
            try:
                out.append(getattr(run, name)(*args))
            except Exception as err:  # the same kind of error from both
                out.append(type(err))
        assert self.heard[0] - before[0] == self.heard[1] - before[1], (name, args, self.heard)
        a, b = out
        assert _view(a) == _view(b), (name, args, a, b)
        self.check_state()
        return a, b

    def check_state(self) -> None:
        """Everything a view reads without moving, equal on both runs."""
        s, r = self.runs
        for field in ("position", "done", "next_node", "at_breakpoint", "breakpoints",
                      "edits", "edit_seq"):  # fmt: skip
            assert _view(getattr(s, field)) == _view(getattr(r, field)), field
        # the message: the exception's own text in both (a live run prefixes type and node)
        s_err, r_err = s.last_error, r.last_error
        assert (s_err is None) == (r_err is None)
        if s_err is not None and r_err is not None:
            assert s_err[0] == r_err[0] and r_err[1].splitlines()[0] in s_err[1]
        assert _view(s.failure) == _view(r.failure)
        assert [_view(x) for x in s.history] == [_view(x) for x in r.history]
        assert [_info(s.step_info(k)) for k in range(s.position)] == [
            _info(r.step_info(k)) for k in range(r.position)
        ]
        summaries = s.edge_summaries()
        assert {k: _summary(v) for k, v in summaries.items()} == {
            k: _summary(v) for k, v in r.edge_summaries().items()
        }
        for e in s.graph.edges:
            assert _summary(s.edge_summary(e.id)) == _summary(r.edge_summary(e.id)), e.id
        assert _view(s.first_nonfinite()) == _view(r.first_nonfinite())
        assert s.nonfinite_origins() == r.nonfinite_origins()
        assert s.first_birth() == r.first_birth()


def _info(info: Any) -> tuple[Any, ...]:
    return info.index, info.node, info.called, info.no_gradient  # not the time


def _view(x: Any) -> Any:
    """What must agree: a record without its time and tensors (their summaries instead)."""
    if isinstance(x, type):
        return x
    if hasattr(x, "node") and hasattr(x, "outputs"):  # a StepRecord
        return (x.index, x.node.id, x.called, x.no_gradient, x.error is None,
                {k: _summary(v) for k, v in x.outputs.items()})  # fmt: skip
    if isinstance(x, tuple) and len(x) == 2 and hasattr(x[0], "src"):  # (Edge, Summary)
        return x[0].id, _summary(x[1])
    return x


def _summary(v: Any) -> Any:
    """A summary as its JSON-safe dict (NaN written "NaN", so equal to itself)."""
    if isinstance(v, torch.Tensor):
        v = Summary.of(v)
    return v.as_dict() if isinstance(v, Summary) else v


# --------------------------------------------------------------------------- the programs
def _chain() -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    x = torch.randn(3, requires_grad=True)
    w = torch.randn(3, requires_grad=True)
    h = (x * w).tanh()
    return (h.exp() + h.sin()).sum(), {"x": x, "w": w}


def _nan() -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    a = torch.tensor([0.0, 1.0, 4.0], requires_grad=True)
    return (a.sqrt() * 2).sum(), {"a": a}


def _raises() -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    x = torch.randn(3, requires_grad=True)
    boom = raising(RuntimeError, "boom: the backward of a custom Function raised")
    return boom.apply(x.exp()).sin().sum(), {"x": x}


def _stale_saved() -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    a = torch.ones(2, requires_grad=True)
    b = a.sigmoid()
    b.mul_(2)  # the saved result is modified in place: the engine refuses SigmoidBackward0
    return b.sum(), {"a": a}


def _drive(both: Both) -> None:
    """The same calls on both runs: breakpoints, every way of moving, bad arguments."""
    s, r = both.runs
    order = list(s.order)
    assert list(r.order) == order
    both.check_state()
    both.call("break_at", order[-1])
    both.call("break_at", order[len(order) // 2])  # the set grows: both ids come back
    both.call("break_at", lambda n: n.kind == "accumulate_grad")
    assert both.call("break_at", "n999") == (KeyError, KeyError)  # nothing changes
    assert both.call("break_at", lambda n: n.nmae) == (TypeError, TypeError)  # a typo: idem
    assert both.call("break_at", 3) == (TypeError, TypeError)  # neither an id nor a Node
    while not s.done:
        a, _ = both.call("run")
        assert a is not None
    both.call("run")  # done: None, nobody notified
    both.call("back")
    both.call("clear_breakpoints", order[-1])  # by id, though a predicate set it too
    assert order[-1] not in s.breakpoints
    both.call("clear_breakpoints", lambda n: n.kind == "accumulate_grad")  # a fresh predicate
    assert not any(s.graph.nodes[n].kind == "accumulate_grad" for n in s.breakpoints)
    both.call("reset")
    both.call("run", order[len(order) // 2])
    assert both.call("run", order[0]) == (ValueError, ValueError)  # already ran
    assert both.call("run", "n999") == (KeyError, KeyError)
    both.call("step")
    both.call("back")
    both.call("back")
    both.call("clear_breakpoints")
    both.call("run")
    for k in range(len(order)):
        both.call("record", k)
    assert both.call("record", len(order)) == (IndexError, IndexError)
    both.call("step_index", order[-1])
    assert both.call("step_index", "n999") == (KeyError, KeyError)
    both.call("reset")
    for _ in range(len(order) + 1):
        both.call("step")
    both.call("back")
    both.call("reset")
    both.call("back")  # at 0, nothing to undo: nobody notified


@pytest.mark.parametrize("program", [_chain, _nan], ids=["chain", "nan"])
def test_a_stepper_and_a_replay_of_the_same_program_answer_alike(program):
    stepper, replay, raised = _pair(program)
    assert raised is None
    assert stepper.capabilities == LIVE and replay.capabilities == RECORDED
    _drive(Both(stepper, replay))
    stepper.close()
    replay.close()
    for run in (stepper, replay):
        assert run.closed
        with pytest.raises(RuntimeError, match="closed"):
            run.step()


def test_the_nan_program_has_a_birth_both_runs_name_alike():
    stepper, replay, _ = _pair(_nan)
    both = Both(stepper, replay)
    both.call("run")
    birth = stepper.first_birth()
    assert birth is not None and birth.kind == "born" and "sqrt" in birth.cause
    assert replay.first_birth() == birth


@pytest.mark.parametrize("program", [_raises, _stale_saved], ids=["raising", "stale-saved"])
def test_a_backward_that_raises_fails_alike(program):
    stepper, replay, raised = _pair(program)
    assert raised is not None
    both = Both(stepper, replay)
    fail_at = len(replay.order) - 1  # a replay's order ends with the node that raised
    assert list(replay.order) == list(stepper.order)[: fail_at + 1]
    rec, rrec = both.call("run")
    assert rec.error is not None and rrec.error is not None and str(raised) in rrec.error
    assert str(raised).splitlines()[0] in rec.error
    assert stepper.position == fail_at and stepper.failure is rec
    assert stepper.last_error[0] == replay.last_error[0] == replay.order[fail_at]
    s_why, r_why = stepper.explain_failure(), replay.explain_failure()
    assert (s_why is None) == (r_why is None)
    if s_why is not None:
        assert (s_why.kind, s_why.culprit) == (r_why.kind, r_why.culprit)
    both.call("step")  # steps onto the failing node again: fails again, position kept
    both.call("back")  # the failure cleared and the step before it undone
    assert stepper.failure is None and stepper.position == fail_at - 1
    both.call("break_at", replay.order[fail_at])
    both.call("reset")
    both.call("run")  # stops before the breakpoint on the failing node
    assert stepper.position == fail_at and stepper.failure is None
    both.call("run")  # starts on it: runs it, fails
    assert stepper.failure is not None
    both.call("run", replay.order[fail_at])  # until the failing node: fails again
    both.call("reset")
    assert stepper.failure is None


# --------------------------------------------------------------------------- random programs
_OPS = sorted(OPS)  # every op of the property tests' programs


@st.composite
def _one_leaf_specs(draw: st.DrawFn) -> Spec:
    """Small random programs with one leaf: one AccumulateGrad, so the engine's order has no
    ties to break (tests/engine/step/test_stepper_properties.py: the tie order is unspecified)."""
    shape = draw(st.sampled_from([(3, 4), (4,), (2, 3, 4)]))
    steps = tuple(
        (
            draw(st.sampled_from(_OPS)),
            draw(st.integers(0, 30)),
            draw(st.integers(0, 30)),
            draw(st.integers(0, 15)),
        )
        for _ in range(draw(st.integers(2, 6)))
    )
    return Spec(draw(st.integers(0, 2**31 - 1)), ((shape, "float64"),), steps, ())


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
@given(spec=_one_leaf_specs())
def test_random_programs_answer_alike(spec):
    def program() -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        prog = build(spec)
        return prog.roots[0], {f"leaf{k}": t for k, t in enumerate(prog.leaves)}

    stepper, replay, raised = _pair(program)
    if raised is not None:  # a custom Function that raises, drawn at random: fails alike
        assert replay.recording.failure is not None
        rec, rrec = Both(stepper, replay).call("run")
        assert rec.error is not None and rrec.error is not None
        return
    _drive(Both(stepper, replay))
