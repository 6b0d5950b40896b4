"""integrations: `aw.watch` inside the trainers people don't write themselves, and out to the
tools they read runs with. The top layer: it imports the engine, nothing imports it (except
`Watch.to_tensorboard`, a thin door to tensorboard.py).

- trainerblock.py: `TrainerSteps`, one watched step opened and closed around each backward
  pass a trainer runs itself (gradient accumulation: one step per backward pass), and
  `loss_of`, the loss found in a model's output;
- hf.py: `WatchCallback`, a `transformers.TrainerCallback` (the loss through a forward hook of
  the model; needs `pip install transformers accelerate`);
- lightning.py: `WatchCallback`, a Lightning `Callback` (`on_before_backward` /
  `on_after_backward`; needs `pip install lightning`);
- tensorboard.py: `to_tensorboard`, a watch's per-module gradient norms (and its loss) as
  TensorBoard scalars (needs `pip install tensorboard`).

Each extra is imported when its module is: a missing one is an ImportError naming the pip
command. Nothing here is imported by `import autograd_widget`.
"""

__all__: list[str] = []
