"""Small models the tests build (random weights, no downloads)."""

from __future__ import annotations

import itertools

import torch


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
