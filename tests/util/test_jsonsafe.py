"""One JSON-safe encoding of NaN/Inf/complex, used by every producer (issue 14).

Every reply, the synced state, the graph payload and the standalone page's walkthrough of a
widget whose gradients hold NaN, Inf and complex values must pass
`json.dumps(..., allow_nan=False)` and spell non-finite numbers only as "nan", "inf", "-inf" (the
only spellings js/src/jsonsafe.js reads).
"""

from __future__ import annotations

import json
import math

import pytest
import torch

import autograd_widget as aw
from autograd_widget.export.html import walkthrough
from autograd_widget.util.jsonsafe import decode_float, encode, encode_float, encode_number
from tests.helpers.wire import send

# Quoted: a number spelled another way. (Bare NaN/Infinity tokens are what allow_nan=False
# refuses; the words themselves may appear in prose, e.g. "The first NaN/Inf is born in ...".)
OTHER_SPELLINGS = ('"NaN"', '"Infinity"', '"-Infinity"', '"+inf"')


def strict_json(obj) -> str:
    text = json.dumps(obj, allow_nan=False, default=lambda o: f"<{type(o).__name__}>")
    for bad in OTHER_SPELLINGS:
        assert bad not in text.replace('"nan"', "").replace('"inf"', ""), (bad, text[:300])
    return text


def test_encoding_round_trips_and_spells_nonfinite_one_way():
    for x in (0.0, -1.5, 1e300, math.inf, -math.inf):
        assert decode_float(encode_float(x)) == x
    assert math.isnan(decode_float(encode_float(math.nan)))
    assert encode([math.nan, (math.inf, -math.inf), {"c": 1 - 2j}, None, True, 3]) == [
        "nan", ["inf", "-inf"], {"c": [1.0, -2.0]}, None, True, 3,
    ]
    assert encode_number(complex(math.nan, math.inf)) == ["nan", "inf"]
    with pytest.raises(ValueError, match="not an encoded number"):
        decode_float("NaN")


def _nonfinite_program():
    x = torch.tensor([0.0, 1.0, 4.0], requires_grad=True)
    c = torch.tensor([1 + 1j, 2 - 1j], requires_grad=True)
    y = torch.sqrt(x) * torch.tensor([1.0, float("inf"), 2.0])  # d sqrt at 0: inf -> nan, inf
    z = (c * c.conj()).real.sum() + y.sum()
    return z, {"x": x, "c": c}


@pytest.mark.parametrize("keep", ["summaries", "tensors"])
def test_every_message_reply_state_and_walkthrough_is_strict_json(keep):
    z, params = _nonfinite_program()
    w = aw.explore(z, params=params, keep=keep, collapse="none")
    strict_json(w.graph.to_dict())
    texts = []
    while not w.stepper.done:
        w.stepper.step()
        texts.append(strict_json(w._state))
    assert any('"nan"' in t or '"inf"' in t for t in texts), "the program made no NaN/Inf"
    for j in range(len(w.visible)):
        for reply in send(w, {"type": "inspect", "node": j, "request": j}):
            strict_json(reply)
    for k in range(len(w.graph.edges)):
        for reply in send(w, {"type": "inspect", "edge": k, "request": k}):
            strict_json(reply)
    for msg in (
        {"type": "first_nonfinite", "request": 1},
        {"type": "memory", "request": 2},
        {"type": "probe", "request": 3, "samples": 4},
        {"type": "leaf_diff", "request": 4},
    ):
        for reply in send(w, msg):
            strict_json(reply)
    for sv in w.graph.saved("n1") if "n1" in w.graph.nodes else []:
        strict_json(sv.as_dict())
    for s in w.stepper.edge_summaries().values():
        strict_json(s.as_dict())
    walk = walkthrough(w)  # what save_html embeds in the page
    strict_json(walk)
