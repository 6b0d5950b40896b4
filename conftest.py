"""Doctest namespace: the names every docstring example may use without building them.

`torch`, `aw` (autograd_widget), `x` and `y` (scalar leaves 2.0 and 3.0), `z = x**2 + y`,
`g = aw.capture(z, params={"x": x, "y": y})` (nodes n0 AddBackward0, n1 PowBackward0,
n2 AccumulateGrad(y), n3 AccumulateGrad(x)), `st = aw.Stepper(g)`, and `model` (a small MLP
`Linear(4, 8) -> ReLU -> Linear(8, 3)`). Each example gets fresh objects.
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _doctest_names(doctest_namespace):
    import torch

    import autograd_widget as aw

    torch.manual_seed(0)
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    z = x**2 + y
    g = aw.capture(z, params={"x": x, "y": y})
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    doctest_namespace.update(
        torch=torch, aw=aw, x=x, y=y, z=z, g=g, st=aw.Stepper(g), model=model
    )
    yield
    g.close()
