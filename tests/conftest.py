"""Shared test set-up: hypothesis profiles, a fixed seed per test (helpers: tests/helpers/)."""

from __future__ import annotations

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
