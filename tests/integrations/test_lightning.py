"""autograd_widget.integrations.lightning.WatchCallback with the REAL Lightning `Trainer` on CPU.

The series equal the gradient norms Lightning's own events see (`.grad` at
`on_before_optimizer_step`, which comes before clipping), gradient accumulation is one watch
step per backward pass (each micro-batch's own gradient: `.grad` at `on_after_backward` minus
`.grad` at `on_before_backward`), clipping leaves the series alone, manual optimization works
through `manual_backward`, a backward that raises is recorded with its failure and nothing stays
attached, `every` counts backward passes. A tiny module, no logger, no checkpoint, every file
under tmp_path; each test a few seconds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

L = pytest.importorskip("lightning.pytorch")

from autograd_widget.integrations.lightning import WatchCallback  # noqa: E402

pytestmark = pytest.mark.filterwarnings(
    "ignore::UserWarning:lightning", "ignore::UserWarning:pytorch_lightning",
    "ignore:.*does not have many workers.*", "ignore::DeprecationWarning",
    "ignore::FutureWarning",
)


def loader(n=12, batch=2):
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(n, 4, generator=g), torch.randn(n, 1, generator=g)
    ds = torch.utils.data.TensorDataset(x, y)
    return torch.utils.data.DataLoader(ds, batch_size=batch, shuffle=False, num_workers=0)


def module_class(base):
    class Regressor(base):
        """Linear -> Tanh -> Linear, MSE, SGD; `poison_at`: the global step whose loss is
        multiplied by NaN; `manual`: manual optimization through `manual_backward`."""

        def __init__(self, manual=False, poison_at=-1, raise_at=-1):
            super().__init__()
            torch.manual_seed(0)
            self.body = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(),
                                            torch.nn.Linear(8, 1))  # fmt: skip
            self.automatic_optimization = not manual
            self.poison_at, self.raise_at = poison_at, raise_at

        def training_step(self, batch, batch_idx):
            x, y = batch
            loss = (self.body(x) - y).pow(2).mean()
            if self.global_step == self.poison_at:
                loss = loss * torch.tensor(float("nan"))
            if self.global_step == self.raise_at:
                loss = Boom.apply(loss)
            if self.automatic_optimization:
                return loss
            opt = self.optimizers()
            opt.zero_grad()
            self.manual_backward(loss)
            opt.step()
            return None

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.05)

    return Regressor


class Boom(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("boom in backward")


Regressor = module_class(L.LightningModule)


def grads(module):
    return {n: p.grad.detach().clone() for n, p in module.named_parameters() if p.grad is not None}


def callback_class(base):
    class GradsAtEvents(base):
        """Lightning's own view: `.grad` before and after each backward, and before each
        optimizer step (before clipping)."""

        def __init__(self):
            self.per_backward, self.before_step, self.losses = [], [], []
            self._before = {}

        def on_before_backward(self, trainer, pl_module, loss):
            self._before = grads(pl_module)
            self.losses.append(loss.item())

        def on_after_backward(self, trainer, pl_module):
            after = grads(pl_module)
            self.per_backward.append(
                {n: t - self._before.get(n, torch.zeros_like(t)) for n, t in after.items()})

        def on_before_optimizer_step(self, trainer, pl_module, optimizer):
            self.before_step.append(grads(pl_module))

    return GradsAtEvents


GradsAtEvents = callback_class(L.Callback)


def trainer(tmp_path, callbacks, lib=L, **kw):
    return lib.Trainer(accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                       enable_progress_bar=False, enable_model_summary=False,
                       default_root_dir=str(tmp_path), callbacks=callbacks, **kw)  # fmt: skip


def test_series_equal_the_grad_norms_lightning_sees_before_each_optimizer_step(tmp_path):
    module, cb, seen = Regressor(), WatchCallback(), GradsAtEvents()
    trainer(tmp_path, [cb, seen], max_steps=4).fit(module, loader())
    w = cb.watch
    assert w.steps == [0, 1, 2, 3] and cb.optimizer_steps == [0, 1, 2, 3] and w.closed
    assert sorted(w.keys()["params"]) == sorted(n for n, _ in module.named_parameters())
    for name in w.keys()["params"]:
        expected = [g[name].norm().item() for g in seen.before_step]
        np.testing.assert_allclose(w.series(name), expected, rtol=1e-6, err_msg=name)
    whole = [math.sqrt(sum(t.pow(2).sum().item() for t in g.values())) for g in seen.before_step]
    np.testing.assert_allclose(w.series(""), whole, rtol=1e-5)
    assert np.isfinite(w.losses()).all() and w.nonfinite_steps == []


def test_gradient_accumulation_is_one_watch_step_per_backward(tmp_path):
    module, cb, seen = Regressor(), WatchCallback(), GradsAtEvents()
    trainer(tmp_path, [cb, seen], max_steps=2, accumulate_grad_batches=3).fit(module, loader())
    w = cb.watch
    assert w.steps == list(range(6)) and cb.optimizer_steps == [0, 0, 0, 1, 1, 1]
    for name in ("body.0.weight", "body.2.bias"):
        expected = [g[name].norm().item() for g in seen.per_backward]
        np.testing.assert_allclose(w.series(name), expected, rtol=1e-5, err_msg=name)
    np.testing.assert_allclose(w.losses(), seen.losses, rtol=1e-6)  # as Lightning backwards it
    # the micro-batches' gradients add up to what the optimizer step sees
    total = [sum(g["body.0.weight"] for g in seen.per_backward[k:k + 3]) for k in (0, 3)]
    for t, g in zip(total, seen.before_step):
        torch.testing.assert_close(t, g["body.0.weight"])


def test_series_are_before_clipping(tmp_path):
    module, cb, seen = Regressor(), WatchCallback(), GradsAtEvents()
    trainer(tmp_path, [cb, seen], max_steps=3, gradient_clip_val=1e-3).fit(module, loader())
    whole = [math.sqrt(sum(t.pow(2).sum().item() for t in g.values())) for g in seen.before_step]
    np.testing.assert_allclose(cb.watch.series(""), whole, rtol=1e-5)
    assert (cb.watch.series("") > 1e-2).all()  # not the clipped 1e-3
    assert all(p.grad.norm() <= 1e-3 * 1.01 for p in module.parameters())  # clipping ran after


def test_manual_optimization_and_a_nan_born_in_a_step(tmp_path):
    module, cb, seen = Regressor(manual=True, poison_at=2), WatchCallback(), GradsAtEvents()
    trainer(tmp_path, [cb, seen], max_steps=3).fit(module, loader())
    w = cb.watch
    assert w.steps == [0, 1, 2] and w.nonfinite_steps == [2]
    np.testing.assert_allclose(w.series("body.2.weight")[:2],
                               [g["body.2.weight"].norm().item() for g in seen.per_backward[:2]],
                               rtol=1e-6)  # fmt: skip
    step, origin = w.first_nonfinite()
    assert step == 2 and origin is not None and origin.kind == "born"


def test_a_backward_that_raises_is_recorded_and_nothing_stays_attached(tmp_path):
    module, cb = Regressor(raise_at=1), WatchCallback()
    with pytest.raises(RuntimeError, match="boom in backward"):
        trainer(tmp_path, [cb], max_steps=3).fit(module, loader())
    w = cb.watch
    assert w.closed and [s.step for s in w.records] == [0, 1]
    assert w.records[0].failure is None and w.records[1].failure[0] == "RuntimeError"
    loss = module.body(torch.ones(1, 4)).sum()  # the module trains on, unwatched, as before
    loss.backward()
    assert len(w.records) == 2


def test_every_counts_backward_passes(tmp_path):
    module = Regressor()
    cb = WatchCallback(every=2, path=tmp_path / "run.awwatch", best_effort=True)
    trainer(tmp_path, [cb], max_steps=5).fit(module, loader())
    assert cb.watch.steps == [0, 2, 4] and len(cb.watch.records) == 5
    assert cb.watch.best_effort and cb.watch.path == tmp_path / "run.awwatch"
    assert (tmp_path / "run.awwatch").stat().st_size > 0


def test_pytorch_lightning_package_too(tmp_path):
    pl = pytest.importorskip("pytorch_lightning")
    module, cb = module_class(pl.LightningModule)(), WatchCallback()
    seen = callback_class(pl.Callback)()
    trainer(tmp_path, [cb, seen], lib=pl, max_steps=2).fit(module, loader())
    expected = [g["body.0.weight"].norm().item() for g in seen.before_step]
    np.testing.assert_allclose(cb.watch.series("body.0.weight"), expected, rtol=1e-6)


def test_bad_every_is_refused_when_the_callback_is_made():
    with pytest.raises(ValueError, match="every must be an int >= 1"):
        WatchCallback(every=-1)
    with pytest.raises(TypeError, match=r"unknown aw\.watch argument"):
        WatchCallback(model=torch.nn.Linear(1, 1))  # the trainer's module is the model
