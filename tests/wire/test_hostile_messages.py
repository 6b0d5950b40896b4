"""The dispatch never lets an exception out (issue 29): malformed messages of every shape are
answered with a warning, a handler that fails AND a state that cannot be shown afterwards are
logged and warned about, and after each the next valid message works; for a live graph and for
a recording (a replay), through `dispatch` and through the widget's own message handler."""

from __future__ import annotations

import logging
import math

import pytest
import torch

import autograd_widget as aw
from autograd_widget.engine.record.recording import Failure, Recording
from autograd_widget.wire.protocol import MESSAGES, WARNING, dispatch
from tests.helpers.wire import send


class _Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    __str__ = __repr__


def _deep(n: int) -> list:
    v: list = []
    for _ in range(n):
        v = [v]
    return v


#: Messages no front-end sends: wrong types, wrong shapes, out-of-range values, huge and deep.
MALFORMED = [
    None, "step", 3, 2.5, math.nan, b"step", [], ["step"], {}, {"type": None}, {"type": 3},
    {"type": ["step"]}, {"type": "explode"}, {"type": "x" * 100_000}, _deep(5000),
    list(range(100_000)), {"type": _deep(3000)}, _Unprintable(), {_Unprintable(): 1},
    {"type": "run_to", "node": 10**30}, {"type": "run_to", "node": -1},
    {"type": "run_to", "node": True}, {"type": "run_to", "node": "n0"},
    {"type": "run", "chunk_ms": math.nan}, {"type": "run", "chunk_ms": -5},
    {"type": "run", "chunk_ms": True}, {"type": "run", "chunk_ms": "fast"},
    {"type": "select", "node": 10**9}, {"type": "select", "id": ["n0"]},
    {"type": "select", "id": "n99"}, {"type": "select_edge", "edge": -3},
    {"type": "select_edge", "edge": 2.0}, {"type": "expand", "group": {"a": 1}},
    {"type": "collapse", "group": None}, {"type": "collapse", "node": 10**6},
    {"type": "plumbing", "show": "yes"}, {"type": "search"}, {"type": "search", "request": 1},
    {"type": "search", "request": 1, "query": 5}, {"type": "probe", "request": 1, "samples": 10**9},
    {"type": "probe", "request": True}, {"type": "edit_edge", "edge": 0, "op": "explode"},
    {"type": "edit_edge", "edge": 0, "op": "scale", "factor": "2"},
    {"type": "memory", "request": 1, "exclude_leaves": "no"},
    {"type": "saved_values", "request": 1, "id": "n99", "name": "self"},
    {"type": "saved_values", "request": 1, "id": "n0", "name": 7},
    {"type": "inspect"}, {"type": "inspect", "request": "1"},
    {"type": "inspect", "request": 1, "edge": 10**6}, {"type": "inspect", "request": 1, "id": 5},
    {"type": "inspect", "request": 1, "edge_id": ["n0:0"]},
    {"type": "first_nonfinite", "request": 1, "chunk_ms": -1},
    {"type": "leaf_diff"}, {"type": "back"},
    # a training watch's messages, sent to widgets that show none (and malformed anyway)
    {"type": "watch_step", "step": 10**12}, {"type": "watch_step", "step": "3"},
    {"type": "watch_step", "step": 0, "node": 5}, {"type": "timeline_rows"},
    {"type": "timeline_rows", "request": 1, "module": ["layers"]},
    {"type": "timeline_range"}, {"type": "timeline_range", "request": 1, "start": 0, "stop": 5,
                                 "bins": 10**9},
    {"type": "gain", "request": "1"}, {"type": "gain"},
    # a rank group's message, sent to widgets that show none (and malformed anyway)
    {"type": "select_rank", "rank": "1"}, {"type": "select_rank"},
    # the drawing's size and semantic zoom
    {"type": "viewport", "request": 1, "width": math.nan, "height": 400},
    {"type": "viewport", "request": 1, "width": 10**9, "height": 400},
    {"type": "viewport", "request": 1, "width": True, "height": 400}, {"type": "viewport"},
    {"type": "fold_level", "anchor": 5}, {"type": "fold_level", "anchor": ["0"]},
]


def _live():
    x = torch.randn(3, requires_grad=True)
    return aw.explore(x.exp().sin().sum())


def _replay():
    w = torch.randn(3, requires_grad=True)
    loss = (w.exp() * 2).sum()
    with aw.record(loss) as rec:
        loss.backward()
    return aw.explore(rec)


@pytest.mark.parametrize("make", [_live, _replay], ids=["live", "recording"])
def test_malformed_messages_are_answered_and_the_next_message_works(make, caplog):
    w = make()
    session = w._session
    with caplog.at_level(logging.WARNING, logger="autograd_widget"):
        for msg in MALFORMED:
            before = w.stepper.position
            out = dispatch(session, msg)  # never raises
            assert out and all(o["type"] == WARNING for o in out), (msg, out)
            assert all(len(o["message"]) < 1000 for o in out)
            assert w.stepper.position == before
            # the next valid message works: a step, and back again
            assert dispatch(session, {"type": "step"}) == []
            assert w.stepper.position == before + 1
            assert dispatch(session, {"type": "back"}) == []
    # and through the widget's own handler (what the kernel calls)
    for msg in MALFORMED:
        sent = send(w, msg)
        assert sent and sent[-1]["type"] == WARNING
    assert send(w, {"type": "step"}) == [] and w._state["position"] == 1
    w.close()


def test_every_message_type_is_covered_by_a_malformed_case():
    kinds = {m["type"] for m in MALFORMED if isinstance(m, dict) and isinstance(m.get("type"), str)}
    missing = set(MESSAGES) - kinds - {"reset", "pause", "step"}  # these take no arguments
    assert not missing, missing


@pytest.mark.parametrize("make", [_live, _replay], ids=["live", "recording"])
def test_a_failing_handler_whose_state_cannot_be_shown_raises_nothing(make, monkeypatch, caplog):
    """The dispatch's own error path: the handler raises, and so does the refresh after it."""
    w = make()
    session = w._session
    real_refresh = session.refresh

    def broken(*a, **k):
        raise KeyError("n42")

    monkeypatch.setattr(session.stepper, "step", broken)
    monkeypatch.setattr(session, "refresh", broken)
    with caplog.at_level(logging.ERROR, logger="autograd_widget"):
        out = dispatch(session, {"type": "step"})
        sent = send(w, {"type": "step"})
    assert out[0]["type"] == WARNING and "step failed: KeyError" in out[0]["message"]
    assert sent[-1]["type"] == WARNING
    assert "showing the state after step failed" in caplog.text
    assert not session.running
    monkeypatch.undo()
    assert session.refresh == real_refresh
    assert dispatch(session, {"type": "step"}) == [] and w.stepper.position == 1
    assert dispatch(session, {"type": "inspect", "request": 3, "id": w.stepper.order[0]})[0][
        "type"] == "reply"
    w.close()


def test_the_bundle_request_raises_nothing_when_the_build_is_missing(monkeypatch):
    w = _live()
    from autograd_widget.util import static

    def missing():
        raise FileNotFoundError("the front-end bundle was not built (cd js && npm run build)")

    monkeypatch.setattr(static, "bundle", missing)
    sent = send(w, {"type": "bundle", "request": 1})
    assert sent[-1]["type"] == WARNING and "not built" in sent[-1]["message"]
    monkeypatch.undo()
    assert send(w, {"type": "step"}) == [] and w.stepper.position == 1
    w.close()


def test_a_recording_built_by_hand_that_names_no_node_is_refused_when_explored():
    """The issue's escape: a failure naming no node loaded, opened, and the first step raised
    out of the handler. load_recording refuses such files now; a Recording built by hand in
    Python is refused by the replay, before any widget exists."""
    w = torch.randn(3, requires_grad=True)
    loss = (w * 2).sum()
    with aw.record(loss) as rec:
        loss.backward()
    broken = Recording(rec.graph, rec.all_executions, failure=Failure("n42", (), "boom"))
    with pytest.raises(ValueError, match=r"names node 'n42', which is not in its graph"):
        aw.explore(broken)
    with pytest.raises(ValueError, match=r"failure\.node: no node 'n42' in the graph"):
        Recording.from_manifest(broken.to_manifest())
