"""Shared test set-up: hypothesis profiles and small model factories."""

from __future__ import annotations

import itertools
import os

import pytest
import torch
from hypothesis import HealthCheck, settings

# Torch calls are slow on first use (kernel registration, lazy init): no per-example deadline.
settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev", deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture(autouse=True)
def _seed_and_threads():
    torch.manual_seed(0)
    yield


def make_transformer(layers: int = 12, d_model: int = 64) -> torch.nn.TransformerEncoder:
    layer = torch.nn.TransformerEncoderLayer(
        d_model, nhead=4, dim_feedforward=2 * d_model, dropout=0.0, batch_first=True
    )
    return torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)


def make_mlp(widths=(4, 8, 8, 3)) -> torch.nn.Sequential:
    mods: list[torch.nn.Module] = []
    for a, b in itertools.pairwise(widths):
        mods += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    return torch.nn.Sequential(*mods[:-1])


def arr(buf, dtype):
    """A binary buffer of a widget payload as a numpy array."""
    import numpy as np

    return np.frombuffer(bytes(buf), dtype=dtype)


def send(w, msg):
    """Deliver a front-end message to a widget's handler; return what it sent back."""
    sent = []
    orig = w.send
    w.send = lambda content, buffers=None: sent.append(content)
    try:
        w._handle_message(w, msg, [])
    finally:
        w.send = orig
    return sent
