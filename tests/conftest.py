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


# --------------------------------------------------------------------------- per-part times
_PART_SECONDS: dict[str, float] = {}


def _part_of(item_or_report) -> str:
    keywords = getattr(item_or_report, "keywords", {})
    path = str(getattr(item_or_report, "nodeid", "")).split("::")[0]
    if "browser" in keywords or "/browser/" in path:
        return "browser"
    if "test_bench" in path:
        return "benchmarks (tiny)"
    if "zoo" in keywords or "/zoo/" in path:
        return "model zoo"
    if "notebooks" in path:
        return "notebooks"
    if path.endswith(".py") and not path.startswith("tests/"):
        return "doctests"
    return "unit + property"


def pytest_runtest_logreport(report):
    _PART_SECONDS[_part_of(report)] = _PART_SECONDS.get(_part_of(report), 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    if _PART_SECONDS:
        parts = ", ".join(f"{k} {v:.0f} s" for k, v in sorted(_PART_SECONDS.items()))
        terminalreporter.write_line(f"[time] per test part: {parts}")
