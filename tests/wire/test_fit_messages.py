"""The messages of issue 30: "viewport" (the drawing's size: collapse="auto" and
orientation="auto" choose again for it, the user's own folds kept) and "fold_level" (zooming out
past legible folds the deepest frames); the step said as a sentence in the state."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import autograd_widget as aw
from autograd_widget.wire.protocol import STATE_KEYS, dispatch


def encoder_widget(**kw):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, nhead=2, dim_feedforward=32, dropout=0.0,
                                       batch_first=True)
    model = nn.TransformerEncoder(layer, 3, enable_nested_tensor=False)
    with aw.track(model):
        loss = model(torch.randn(2, 4, 16, requires_grad=True)).pow(2).mean()
    return aw.explore(loss, model=model, **kw)


@pytest.mark.parametrize("msg", [
    {"type": "viewport", "width": 800, "height": 400},  # no request id
    {"type": "viewport", "request": 1, "width": "800", "height": 400},
    {"type": "viewport", "request": 1, "width": 10, "height": 400},
    {"type": "viewport", "request": 1, "width": 800, "height": True},
    {"type": "fold_level", "anchor": 3},
])
def test_bad_fit_messages_are_refused_and_change_nothing(msg):
    w = encoder_widget()
    before = (w.visible, w._session.scene.viewport)
    (out,) = dispatch(w._session, msg)
    assert out["type"] == "warning"
    assert (w.visible, w._session.scene.viewport) == before
    w.close()


def test_viewport_refits_and_replies_whether_the_drawing_changed():
    w = encoder_widget()
    assert w.folds  # the default drawing folds the layers
    sent = []
    w._session.front.draw = lambda graph, state: sent.append(graph)
    (out,) = dispatch(w._session, {"type": "viewport", "request": 7, "width": 30000,
                                   "height": 30000})
    assert out == {"type": "reply", "request": 7, "data": {"changed": True}}
    assert w.folds == {} and w.collapsed == [] and sent and sent[-1] is not None
    (out,) = dispatch(w._session, {"type": "viewport", "request": 8, "width": 30001,
                                   "height": 30000})
    assert out["data"] == {"changed": False}
    w.close()


def test_fold_level_folds_the_deepest_frames_and_needs_one():
    w = encoder_widget(collapse="none")
    deep = max(f.depth for f in w._session.scene.layout.frames)
    assert dispatch(w._session, {"type": "fold_level", "anchor": "layers.1"}) == []
    assert w.collapsed == ["layers.0.self_attn", "layers.1.self_attn", "layers.2.self_attn"]
    assert deep == 3
    while w._session.scene.layout.frames:
        assert dispatch(w._session, {"type": "fold_level", "anchor": None}) == []
    (out,) = dispatch(w._session, {"type": "fold_level", "anchor": None})
    assert out["type"] == "warning" and "no unfolded module" in out["message"]
    w.close()


def test_the_state_says_each_step_as_a_sentence():
    assert "announce" in STATE_KEYS
    w = encoder_widget()
    assert w._state["announce"] == "step 0 of 171; next MeanBackward0"
    w.stepper.step()
    assert w._state["announce"] == "ran MeanBackward0, step 1 of 171; next PowBackward0"
    w.close()
