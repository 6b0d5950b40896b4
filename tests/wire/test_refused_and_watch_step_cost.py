"""Refused messages quote little, and `watch_step` costs no scan of the steps (issue 38 part 6).

- A refused message's warning quotes at most `QUOTE_CHARS` characters of the value it refuses
  (a 10 MB value in, a short warning out), for every validator that names the value, also for
  a deep or unprintable one.
- A `watch_step` message (and the `watch_step` trait) finds its step with a dict look-up: no
  pass over the watch's records, counted on a watch of 100,000 steps, so its cost does not grow
  with the number of steps.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

import autograd_widget as aw
from autograd_widget.wire.protocol import WARNING, dispatch
from autograd_widget.wire.quoting import MAX_WARNING, QUOTE_CHARS, quote

HUGE = "x" * 10_000_000


def _deep(n: int) -> list:
    v: list = []
    for _ in range(n):
        v = [v]
    return v


def _watch(steps: int = 3) -> aw.Watch:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    w = aw.watch(net, every=2)
    for _ in range(steps):
        loss = net(torch.randn(2, 3)).sum()
        with w.step(loss):
            loss.backward()
    return w


@pytest.fixture(scope="module")
def widget():
    w = aw.explore(_watch())
    yield w
    w.close()


@pytest.mark.parametrize("value", [HUGE, [HUGE] * 3, {"k": HUGE}, _deep(10_000), 10**300,
                                   b"\x00" * 10_000_000], ids=["str", "list", "dict", "deep",
                                                               "int", "bytes"])
@pytest.mark.parametrize("field", [
    {"type": "watch_step", "step": None}, {"type": "inspect", "request": 1, "node": None},
    {"type": "inspect", "request": 1, "edge": None}, {"type": "inspect", "request": 1, "id": None},
    {"type": "inspect", "request": 1, "edge_id": None}, {"type": "select", "id": None},
    {"type": "expand", "group": None}, {"type": "collapse", "group": None},
    {"type": None},
], ids=lambda m: f"{m['type']}-{next((k for k, v in m.items() if v is None), 'type')}")
def test_a_refused_message_quotes_at_most_200_characters(widget, field, value):
    msg = {k: (value if v is None else v) for k, v in field.items()}
    out = dispatch(widget._session, msg)
    assert len(out) == 1 and out[0]["type"] == WARNING
    text = out[0]["message"]
    assert len(text) <= MAX_WARNING, (len(text), text[:300])
    assert "x" * (QUOTE_CHARS + 1) not in text


def test_quote_is_short_for_anything():
    class Unprintable:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    for v in (HUGE, _deep(100_000), Unprintable(), 10**5000, {i: HUGE for i in range(100)}):
        assert len(quote(v)) <= QUOTE_CHARS


class CountingList(list):
    """A list that counts how often it is iterated (a scan of the steps)."""

    scans = 0

    def __iter__(self):
        CountingList.scans += 1
        return super().__iter__()


def _big_watch(n: int) -> aw.Watch:
    """A watch of `n` steps: two real ones, copied (every other step watched)."""
    w = _watch(2)
    first, second = w.records
    records = [dataclasses.replace(first if k % 2 == 0 else second, step=k) for k in range(n)]
    w.records = CountingList(records)
    w._index = {k: k for k in range(n)}
    w._count = n
    return w


def test_watch_step_finds_its_step_without_scanning_the_steps():
    w = _big_watch(100_000)
    widget = aw.explore(w)  # opening it may read every step (the timeline); stepping may not
    session = widget._session
    try:
        CountingList.scans = 0
        for step in (99_998, 4, 50_000):
            assert dispatch(session, {"type": "watch_step", "step": step}) == []
            assert session.watch_step == step
        refused = [dispatch(session, {"type": "watch_step", "step": s})
                   for s in (99_999, 3, 100_000, -1, 10**12)]
        assert all(r and r[0]["type"] == WARNING for r in refused)
        widget.watch_step = 10  # through the synced trait, as the front-end's cursor does
        assert session.watch_step == 10
        widget.watch_step = 11  # unwatched: refused, the cursor goes back
        assert widget.watch_step == 10
        assert CountingList.scans == 0
    finally:
        widget.close()
