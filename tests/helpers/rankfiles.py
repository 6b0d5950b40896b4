"""Every rank's files of one distributed run, crafted in this process: a rank's meta set as
`Watch.save` / `Recording.save` write it under torch.distributed
(tests/engine/watch/test_rank_groups.py, tests/widget/test_explore_ranks.py,
tests/browser/test_ranks_browser.py).

- `train(bad_step, poisoned_from)`: a watch where a NaN is born at `bad_step` (a sqrt at 0), or
  comes in through poisoned weights from `poisoned_from` on (what DDP's all-reduce does to a peer);
- `save_watches(folder, watches)`: saved as ranks 0, 1, ...; returns the `{rank}` pattern;
- `failing(message)`: a recording whose custom backward (`Boom`) raises `message` (None: runs);
  `GLOO_CLOSED` is what a rank waiting on a failed peer gets from gloo.
"""

from __future__ import annotations

import torch

import autograd_widget as aw

GLOO_CLOSED = ("[/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by "
               "peer [127.0.0.1]:41234. This is typically caused by a remote worker crashing.")


def as_rank(obj, rank, world, path):
    """Save `obj` (a Watch or a Recording) as rank `rank` of `world` at `path`."""
    obj.meta["rank"], obj.meta["world_size"] = rank, world
    return obj.save(path)


def train(bad_step=None, poisoned_from=None, steps=4, name="w"):
    """A watch of `steps` steps of loss = sqrt((w * d)^2 summed) + (w * w).sum(): `d` is 0 at
    `bad_step` (a sqrt at 0: born here); from `poisoned_from` on, w holds a NaN (weights a
    collective poisoned: the NaN comes in through the forward)."""
    w = torch.ones(3, requires_grad=True)
    watch = aw.watch(params={name: w})
    for k in range(steps):
        if poisoned_from is not None and k >= poisoned_from:
            with torch.no_grad():
                w[0] = float("nan")
        d = torch.zeros(3) if k == bad_step else torch.ones(3)
        loss = (w * d).pow(2).sum().sqrt() + (w * w).sum()
        with watch.step(loss):
            loss.backward()
    watch.close()
    return watch


def save_watches(folder, watches, world=None):
    """Save `watches` as ranks 0, 1, ... in `folder`; the `{rank}` pattern that loads them."""
    for r, w in enumerate(watches):
        as_rank(w, r, world or len(watches), folder / f"run_{r}.awwatch")
    return str(folder / "run_{rank}.awwatch")


class Boom(torch.autograd.Function):
    """x * 2 whose backward raises `message` (none: it runs)."""

    @staticmethod
    def forward(ctx, x, message):
        ctx.message = message
        return x * 2

    @staticmethod
    def backward(ctx, g):
        if ctx.message:
            raise RuntimeError(ctx.message)
        return g * 2, None


def failing(message):
    """A recording of a backward whose BoomBackward raises `message` (None: it runs through)."""
    x = torch.ones(3, requires_grad=True)
    loss = Boom.apply(x.exp(), message).sum()
    rec = aw.record(loss)
    try:
        with rec:
            loss.backward()
    except RuntimeError as e:
        assert str(e) == message
    return rec


def save_failures(folder, recs):
    """Save `recs` as ranks 0, 1, ... in `folder`; the `{rank}` pattern that loads them."""
    for r, rec in enumerate(recs):
        as_rank(rec, r, len(recs), folder / f"fail_{r}.awrec")
    return str(folder / "fail_{rank}.awrec")
