"""The graph payload carries what the stepped run can do (issue 37): `capabilities`, one bool per
`engine.interface.Capabilities` field, next to `source` (kept for labels), so the front-end
offers saved values, edits and probes by what the run can do instead of re-deriving it from
the kind of run.
"""

from __future__ import annotations

import dataclasses
import json

import torch

import autograd_widget as aw
from autograd_widget.engine.interface import LIVE, RECORDED, Capabilities
from autograd_widget.view.scene import Scene
from autograd_widget.wire.session import CAPABILITY_KEYS, Session, capabilities_payload

SIX = ["live", "edit", "probe", "compare", "grad_of_tensor", "saved_values"]


def _program():
    x = torch.tensor([1.5, -2.0], requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    return x, y, (x.pow(2) * y).sum()


def _recording():
    """The engine's own run of `_program`, recorded (the user's `.grad` is written by their
    backward, as in a real recording)."""
    x, y, loss = _program()
    with aw.record(loss, params={"x": x, "y": y}) as rec:
        loss.backward()
    return rec


def test_the_keys_are_exactly_the_interface_fields():
    assert list(CAPABILITY_KEYS) == SIX
    assert list(CAPABILITY_KEYS) == [f.name for f in dataclasses.fields(Capabilities)]


def test_each_capability_is_sent_as_itself():
    # one capability on at a time: each key carries its own field, none is derived from another
    for i, key in enumerate(SIX):
        caps = Capabilities(*[j == i for j in range(len(SIX))])
        sent = capabilities_payload(caps)
        assert sent == {k: k == key for k in SIX}
        assert all(type(v) is bool for v in sent.values())


def test_a_stepper_session_sends_live_capabilities():
    x, y, loss = _program()
    g = aw.capture(loss, params={"x": x, "y": y})
    st = aw.Stepper(g)
    payload = Session(g, st, Scene(g, st)).graph_payload()
    assert payload["capabilities"] == dataclasses.asdict(LIVE)
    assert all(payload["capabilities"].values())
    assert payload["source"] == "live"
    json.dumps(payload["capabilities"])  # plain JSON on the wire
    st.close()


def test_a_replay_session_sends_recorded_capabilities():
    rec = _recording()
    rp = aw.Replay(rec)
    payload = Session(rec.graph, rp, Scene(rec.graph, rp)).graph_payload()
    assert payload["capabilities"] == dataclasses.asdict(RECORDED)
    assert not any(payload["capabilities"].values())
    assert payload["source"] == "recording"
    rp.close()


def test_the_widget_trait_carries_them_and_a_redraw_keeps_them():
    x, y, loss = _program()
    live = aw.explore(loss, params={"x": x, "y": y})
    replay = aw.explore(_recording())
    try:
        assert live._graph["capabilities"] == capabilities_payload(live.stepper.capabilities)
        assert replay._graph["capabilities"] == capabilities_payload(replay.stepper.capabilities)
        assert live._graph["capabilities"]["edit"] and not replay._graph["capabilities"]["edit"]
        live.orientation = "LR" if live.drawn_orientation == "TB" else "TB"  # a new payload
        assert live._graph["capabilities"] == dataclasses.asdict(LIVE)
    finally:
        live.close()
        replay.close()
