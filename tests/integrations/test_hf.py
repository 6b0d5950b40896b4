"""autograd_widget.integrations.hf.WatchCallback with the REAL `transformers.Trainer` on CPU.

The series equal the gradient norms the Trainer's own events see (`on_pre_optimizer_step`, with
clipping off; the pre-clip total norm it logs, with clipping on), gradient accumulation is one
watch step per backward pass (each micro-batch's own gradient, read from `.grad` at the
Trainer's `on_step_begin` / `on_substep_end` / `on_pre_optimizer_step`), evaluation forwards are
not watched, a model that returns no loss is watched from its logits (and says so), `every`
counts backward passes, nothing stays hooked on the model. Tiny models, no downloads, every
file under tmp_path; each test a few seconds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers")

from autograd_widget.integrations.hf import NO_LOSS, WatchCallback  # noqa: E402

pytestmark = pytest.mark.filterwarnings(
    "ignore::UserWarning:transformers", "ignore::FutureWarning", "ignore::DeprecationWarning"
)


class Regressor(torch.nn.Module):
    """A plain module the Trainer accepts: `forward(x, labels) -> {"loss", "logits"}` (no
    `**kwargs`: the Trainer divides its loss by the accumulation steps itself)."""

    def __init__(self) -> None:
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(),
                                        torch.nn.Linear(8, 1))  # fmt: skip

    def forward(self, x, labels=None):
        out = self.body(x).squeeze(-1)
        if labels is None:
            return {"logits": out}
        return {"loss": (out - labels).pow(2).mean(), "logits": out}


class Boom(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("boom in backward")


class Raising(Regressor):
    """Its loss's backward raises from the second call on."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, x, labels=None):
        out = super().forward(x, labels)
        self.calls += 1
        if self.calls >= 2 and "loss" in out:
            out["loss"] = Boom.apply(out["loss"])
        return out


def regression_data(n=16):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(n, 4, generator=g)
    y = torch.randn(n, generator=g)
    return [{"x": x[i], "labels": y[i]} for i in range(n)]


def tiny_gpt2():
    cfg = transformers.GPT2Config(n_layer=2, n_embd=16, n_head=2, vocab_size=50, n_positions=16,
                                  bos_token_id=0, eos_token_id=0)  # fmt: skip
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(cfg)


def token_data(n=8):
    ids = torch.randint(0, 50, (n, 8), generator=torch.Generator().manual_seed(2))
    return [{"input_ids": ids[i], "labels": ids[i]} for i in range(n)]


def args(tmp_path, **kw):
    base = dict(output_dir=str(tmp_path / "out"), per_device_train_batch_size=2, report_to=[],
                save_strategy="no", logging_strategy="no", max_grad_norm=0.0, use_cpu=True,
                dataloader_num_workers=0, disable_tqdm=True, learning_rate=0.05,
                seed=0)  # fmt: skip
    base.update(kw)
    return transformers.TrainingArguments(**base)


def grads(model):
    return {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}


class GradsAtEvents(transformers.TrainerCallback):
    """The Trainer's own view: `.grad` at on_step_begin (before an optimizer step's first
    backward), on_substep_end (after each non-last micro-batch) and on_pre_optimizer_step
    (after the last), and the grad_norm it logs."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int, dict[str, torch.Tensor]]] = []
        self.logged: list[float] = []

    def on_step_begin(self, args, state, control, model=None, **kw):
        self.events.append(("begin", state.global_step, grads(model)))

    def on_substep_end(self, args, state, control, model=None, **kw):
        self.events.append(("substep", state.global_step, grads(model)))

    def on_pre_optimizer_step(self, args, state, control, model=None, **kw):
        self.events.append(("pre_optimizer", state.global_step, grads(model)))

    def on_log(self, args, state, control, logs=None, **kw):
        if logs and "grad_norm" in logs:
            self.logged.append(float(logs["grad_norm"]))

    def per_backward(self):
        """Each backward's own gradient: `.grad` after it minus `.grad` before it."""
        out, before = [], {}
        for kind, step, g in self.events:
            if kind == "begin":
                before = g
                continue
            out.append((step, {n: t - before.get(n, torch.zeros_like(t)) for n, t in g.items()}))
            before = g
        return out


def test_series_equal_the_grad_norms_the_trainer_sees_before_each_optimizer_step(tmp_path):
    model = tiny_gpt2()
    cb, seen = WatchCallback(path=tmp_path / "run.awwatch"), GradsAtEvents()
    data = token_data()
    trainer = transformers.Trainer(
        model=model, args=args(tmp_path, max_steps=3, eval_strategy="steps", eval_steps=2),
        train_dataset=data, eval_dataset=data[:2], callbacks=[cb, seen])  # fmt: skip
    trainer.train()
    w = cb.watch
    assert w.steps == [0, 1, 2] and cb.optimizer_steps == [0, 1, 2]  # evaluation: not watched
    at_step = [g for kind, _, g in seen.events if kind == "pre_optimizer"]
    params = w.keys()["params"]
    assert "transformer.h.0.attn.c_attn.weight" in params and len(params) == len(at_step[0])
    for name in params:
        expected = [g[name].norm().item() for g in at_step]
        np.testing.assert_allclose(w.series(name), expected, rtol=1e-6, err_msg=name)
    assert np.isfinite(w.losses()).all() and w.nonfinite_steps == []
    assert not model._forward_hooks and w.closed  # the hook removed, the file released
    back = __import__("autograd_widget").load_watch(tmp_path / "run.awwatch")
    np.testing.assert_array_equal(back.series("transformer.h.1"), w.series("transformer.h.1"))


def test_gradient_accumulation_is_one_watch_step_per_backward(tmp_path):
    model = Regressor()
    cb, seen = WatchCallback(), GradsAtEvents()
    losses: list[float] = []
    model.register_forward_hook(lambda m, i, o: losses.append(o["loss"].item())
                                if m.training and torch.is_grad_enabled() else None)  # fmt: skip
    trainer = transformers.Trainer(
        model=model, args=args(tmp_path, max_steps=2, gradient_accumulation_steps=3),
        train_dataset=regression_data(), callbacks=[cb, seen])  # fmt: skip
    trainer.train()
    w = cb.watch
    per = seen.per_backward()
    assert len(per) == 6 and w.steps == list(range(6))
    assert cb.optimizer_steps == [0, 0, 0, 1, 1, 1] == [s for s, _ in per]
    for name in ("body.0.weight", "body.2.bias"):
        expected = [g[name].norm().item() for _, g in per]  # the Trainer divides by 3
        np.testing.assert_allclose(w.series(name), expected, rtol=1e-5, err_msg=name)
    whole = [math.sqrt(sum(t.pow(2).sum().item() for t in g.values())) for _, g in per]
    np.testing.assert_allclose(w.series(""), whole, rtol=1e-5)
    np.testing.assert_allclose(w.losses(), losses, rtol=1e-6)  # the model's own losses
    assert not [h for h in model._forward_hooks.values() if getattr(h, "__self__", None) is cb]


def test_series_are_before_clipping_equal_to_the_grad_norm_the_trainer_logs(tmp_path):
    model = Regressor()
    cb, seen = WatchCallback(), GradsAtEvents()
    trainer = transformers.Trainer(
        model=model, args=args(tmp_path, max_steps=3, max_grad_norm=1e-3,
                               logging_strategy="steps", logging_steps=1),
        train_dataset=regression_data(), callbacks=[cb, seen])  # fmt: skip
    trainer.train()
    total = cb.watch.series("")
    assert len(seen.logged) == 3 and (total > 1e-2).all()
    np.testing.assert_allclose(total, seen.logged, rtol=1e-5)  # the Trainer's pre-clip norm
    clipped = [math.sqrt(sum(t.pow(2).sum().item() for t in g.values()))
               for kind, _, g in seen.events if kind == "pre_optimizer"]  # fmt: skip
    np.testing.assert_allclose(clipped, 1e-3, rtol=1e-3)  # what the optimizer got


def test_a_model_without_a_loss_is_watched_from_its_logits_and_says_so(tmp_path):
    model = tiny_gpt2()
    cb, seen = WatchCallback(), GradsAtEvents()
    trainer = transformers.Trainer(
        model=model, args=args(tmp_path, max_steps=2, label_smoothing_factor=0.1),
        train_dataset=token_data(), callbacks=[cb, seen])  # fmt: skip
    with pytest.warns(UserWarning, match="holds no loss") as caught:
        trainer.train()
    assert sum(NO_LOSS == str(c.message) for c in caught) == 1  # once per run
    w = cb.watch
    assert w.steps == [0, 1] and np.isnan(w.losses()).all()
    at_step = [g for kind, _, g in seen.events if kind == "pre_optimizer"]
    name = "transformer.h.0.mlp.c_fc.weight"
    np.testing.assert_allclose(w.series(name), [g[name].norm().item() for g in at_step],
                               rtol=1e-6)  # fmt: skip


def test_every_counts_backward_passes_and_unwatched_steps_still_count(tmp_path):
    model = Regressor()
    cb = WatchCallback(every=2)
    trainer = transformers.Trainer(model=model, args=args(tmp_path, max_steps=5),
                                   train_dataset=regression_data())  # fmt: skip
    trainer.add_callback(cb)
    trainer.train()
    assert cb.watch.steps == [0, 2, 4] and len(cb.watch.records) == 5
    assert cb.optimizer_steps == [0, 1, 2, 3, 4]


def test_a_run_that_raises_keeps_the_hook_until_close_and_records_the_step(tmp_path):
    model = Raising()
    cb = WatchCallback()
    trainer = transformers.Trainer(model=model, args=args(tmp_path, max_steps=3),
                                   train_dataset=regression_data(), callbacks=[cb])  # fmt: skip
    with pytest.raises(RuntimeError, match="boom in backward") as raised:
        trainer.train()
    assert len(model._forward_hooks) == 1 and not cb.watch.closed  # no event after the error
    cb.close(raised.value)
    assert not model._forward_hooks and cb.watch.closed
    assert [s.step for s in cb.watch.records] == [0, 1] and cb.optimizer_steps == [0, 1]
    assert cb.watch.records[0].failure is None
    assert cb.watch.records[1].failure[:2] == ("RuntimeError", "boom in backward")
    cb.close()  # idempotent


def test_bad_every_is_refused_when_the_callback_is_made():
    with pytest.raises(ValueError, match="every must be an int >= 1"):
        WatchCallback(every=0)
    with pytest.raises(ValueError, match="every must be an int >= 1"):
        WatchCallback(every=True)
    with pytest.raises(TypeError, match=r"unknown aw.watch argument\(s\) \['evry'\]"):
        WatchCallback(evry=2)
