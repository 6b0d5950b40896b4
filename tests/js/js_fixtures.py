"""The front-end's test fixtures, made by Python in the format Python sends today.

Every JS unit test reads payloads from `js/tests/fixtures/*.json`, written by this script from
real widgets (`aw.explore`), so the front-end is tested against what the widget really sends and
never against a hand-made format. Each file holds one widget:

- `graph`: its `_graph` trait; `states`: its `_state` trait after 0, 1, 2... steps (every
  position, or up to the first failing step);
- `inspect`: the inspector's replies (`{"type": "inspect"}` answered by the widget's handler, the
  reply's `data`) for every visible node and edge, at position `inspect_at`;
- `decoded` (some files): `decode_graph`'s view of the graph payload, the Python side of the
  cross-check in `model.test.js`;
- `walkthrough` (z, nonfinite, broken): the walkthrough a standalone page (`widget.save_html`)
  embeds (z: no NaN/Inf, the run ends; nonfinite: the first NaN/Inf flows at step 4; broken: a
  step fails).

Binary buffers (memoryviews; they reach the front-end as DataViews) are written as
`{"$base64": "..."}`; `js/tests/fixtures.js` turns them back into DataViews at odd byte offsets, as
ipywidgets delivers them. Everything else is the JSON Python sends, non-finite numbers included
("nan", "inf", "-inf"). Regenerate after a protocol change (`tests/js/test_fixtures_current.py` fails
while the committed files are stale):

    python tests/js/js_fixtures.py [OUT_DIR]        # default: js/tests/fixtures

Example:
    write_fixtures(Path("/tmp/fx"))
    ['boxes.json', ...]
"""

from __future__ import annotations

import base64
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

import autograd_widget as aw
from autograd_widget.wire.payload import decode_graph

__all__ = ["FIXTURES", "build", "fixture_texts", "write_fixtures"]

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "js" / "tests" / "fixtures"


def _json(obj: Any) -> Any:
    """A JSON-ready copy: memoryviews as {"$base64": ...}, numpy arrays as lists (NaN: "nan")."""
    if isinstance(obj, memoryview):
        return {"$base64": base64.b64encode(obj.tobytes()).decode("ascii")}
    if isinstance(obj, np.ndarray):
        return [_json(v) for v in obj.tolist()]
    if isinstance(obj, float) and obj != obj:
        return "nan"
    if isinstance(obj, dict):
        return {k: _json(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_json(v) for v in obj]
    return obj


def _ask(w: aw.AutogradWidget, msg: dict[str, Any]) -> Any:
    """Deliver a front-end request to the widget's handler, as the kernel does; the reply's data."""
    sent: list[Any] = []
    orig = w.send
    w.send = lambda content, buffers=None: sent.append(content)
    try:
        w._handle_message(w, {**msg, "request": 1}, [])
    finally:
        w.send = orig
    replies = [m for m in sent if m.get("type") == "reply"]
    assert len(replies) == 1, sent
    return replies[0]["data"]


def _states(w: aw.AutogradWidget) -> list[Any]:
    """`_state` at every position from 0, stopping after a failing step."""
    w.stepper.reset()
    states = [_json(w._state)]
    while not w.stepper.done:
        rec = w.stepper.step()
        states.append(_json(w._state))
        if rec is not None and rec.error is not None:
            break
    return states


def _inspect(w: aw.AutogradWidget, position: int) -> dict[str, Any]:
    w.stepper.reset()
    while w.stepper.position < position and not w.stepper.done:
        w.stepper.step()
    n, m = w._graph["nodes"]["count"], w._graph["edges"]["count"]
    return {
        "nodes": [_ask(w, {"type": "inspect", "node": j}) for j in range(n)],
        "edges": [_ask(w, {"type": "inspect", "edge": k}) for k in range(m)],
    }


def _widget_fixture(w: aw.AutogradWidget, *, inspect_at: int | None = None,
                    decoded: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"graph": _json(w._graph), "states": _states(w)}
    if inspect_at is not None:
        out["inspect_at"] = inspect_at
        out["inspect"] = _inspect(w, inspect_at)
    if decoded:
        dec = decode_graph(w._graph)
        out["decoded"] = {"nodes": _json(dec["nodes"]), "edges": _json(dec["edges"])}
    w.stepper.reset()
    return out


def _walkthrough(w: aw.AutogradWidget) -> Any:
    """The walkthrough `save_html` embeds in its page."""
    with tempfile.TemporaryDirectory() as tmp:
        page = w.save_html(Path(tmp) / "z.html").read_text(encoding="utf-8")
    m = re.search(r'id="autograd-widget-walkthrough">(.*?)</script>', page, re.S)
    assert m is not None
    return json.loads(m.group(1).replace("<\\/", "</"))


def _z() -> dict[str, Any]:
    """z = x**2 + y at x=2, y=3, x named (a parameter), y not (an input, "input 0 []"):
    gradients 1 into y, 1 into Pow, 4 into x."""
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    w = aw.explore(x**2 + y, params={"x": x})
    out = _widget_fixture(w, inspect_at=2, decoded=True)
    out["walkthrough"] = _walkthrough(w)
    return out


class _Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.linear(h))


class _Stack(nn.Module):
    """An input layer, three identical blocks (a run to fold) and a head."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(3, 4)
        self.layers = nn.ModuleList(_Block() for _ in range(3))
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        for block in self.layers:
            h = block(h)
        return self.head(h)


def _mlp(*, broken: bool = False) -> dict[str, Any]:
    """A classifier whose two top-level modules are folded into boxes ("0", "1").

    `broken`: module "0"'s saved tensors freed by an earlier backward, and one of module "1"'s
    modified in place after it was saved (stale): stepping into it fails.
    """
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Sequential(nn.Tanh(), nn.Linear(4, 3)))
    inp = torch.randn(5, 3)
    target = torch.tensor([0, 1, 2, 0, 1])
    with aw.track(model):
        h = model[0](inp)
        if broken:
            h.sum().backward(retain_graph=False)
        out = model[1](h)
    loss = nn.functional.nll_loss(nn.functional.log_softmax(out, 1), target)
    if broken:
        with torch.no_grad():
            model[1][1].weight.mul_(1.0)
    w = aw.explore(loss, model=model, collapse="modules")
    out = _widget_fixture(w, inspect_at=None if broken else 3, decoded=True)
    if broken:
        out["walkthrough"] = _walkthrough(w)
    return out


def _folds() -> dict[str, Any]:
    """Three identical blocks folded into one box ("layers.0–2 ×3"), module "head" collapsed
    into another, the rest unfolded."""
    torch.manual_seed(0)
    model = _Stack()
    with aw.track(model):
        out = model(torch.randn(2, 3))
    w = aw.explore(out.pow(2).mean(), model=model, collapse="repeats")
    w.collapse("head")
    return _widget_fixture(w, inspect_at=0, decoded=True)


def _plumbing() -> dict[str, Any]:
    """A tracked 2-layer MLP laid out left to right: module "0" folded, plumbing hidden
    (contracted edges), a long edge that bends, a stale node."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    inp = torch.randn(5, 3, requires_grad=True)
    with aw.track(model):
        h = model[0](inp)
        t = model[1](h)
        out = model[2](t.t().t()) + h.sum()
    loss = out.pow(2).mean()
    with torch.no_grad():
        t.mul_(1.0)  # TanhBackward0 saved its result: now stale
    w = aw.explore(loss, model=model, params={"inp": inp}, collapse="none", orientation="LR")
    w.collapse("0")
    w.show_plumbing = False
    return _widget_fixture(w, inspect_at=0, decoded=True)


def _freed() -> dict[str, Any]:
    """z = x**2 + y after z.backward(): the saved tensors are gone (the state's notice says so)
    and the first step fails."""
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    z = x**2 + y
    z.backward()
    w = aw.explore(z, params={"x": x})
    return _widget_fixture(w, inspect_at=0)


def _nonfinite() -> dict[str, Any]:
    """Gradients with inf and NaN: log(x) and sqrt(x)*0 at x = [0, 1]."""
    x = torch.tensor([0.0, 1.0], requires_grad=True)
    z = x.log().sum() + (x.sqrt() * 0).sum()
    w = aw.explore(z, params={"x": x})
    out = _widget_fixture(w, inspect_at=len(w.stepper.order))
    out["walkthrough"] = _walkthrough(w)
    return out


def build() -> dict[str, Any]:
    """Every fixture: file name -> JSON-ready content.

    Example:
        sorted(build())
        ['boxes.json', 'broken.json', 'folds.json', 'nonfinite.json', 'plumbing.json', ...]
    """
    return {
        "z.json": _z(),
        "boxes.json": _mlp(),
        "broken.json": _mlp(broken=True),
        "folds.json": _folds(),
        "plumbing.json": _plumbing(),
        "freed.json": _freed(),
        "nonfinite.json": _nonfinite(),
    }


def fixture_texts() -> dict[str, str]:
    """Every fixture file's text (compact JSON, keys in order, a final newline).

    Example:
        fixture_texts()["z.json"][:11]
        '{"graph":{"'
    """
    return {name: json.dumps(obj, separators=(",", ":"), allow_nan=False) + "\n"
            for name, obj in build().items()}


def write_fixtures(out: Path = FIXTURES) -> list[str]:
    """Write every fixture into `out` (created if needed); return the file names written.

    Example:
        write_fixtures(Path("/tmp/fx"))
        ['z.json', 'boxes.json', ...]
    """
    out.mkdir(parents=True, exist_ok=True)
    texts = fixture_texts()
    for name, text in texts.items():
        (out / name).write_text(text, encoding="utf-8")
    return list(texts)


if __name__ == "__main__":
    print(", ".join(write_fixtures(Path(sys.argv[1]) if len(sys.argv) > 1 else FIXTURES)))
