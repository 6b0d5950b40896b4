"""A sample of torch's own OpInfo database through capture + the default stepper, checked
against `torch.autograd.grad`: float64 samples, and complex128 ones for every op with complex
autograd, every differentiable output a root with a random cotangent (multi-output ops, complex
outputs and index outputs included), every input that requires grad a leaf; an input the engine
gives no gradient (None) gets None from the stepper too.

The sample is a fixed, hand-picked list spread over torch's op families (pointwise, binary with
broadcasting, reductions, scans and sorts, linear algebra, views and shape ops, indexing and
scatter, nn.functional, complex outputs), the first `SAMPLES` OpInfo samples of each; it runs in a
couple of seconds. `AW_OPINFO_ALL=1 pytest tests/engine/step/test_opinfo.py` runs every op in
op_db that supports autograd and float64 on CPU instead (about 540 ops, also quick). Public API
only.

`test_istft_window_is_a_leaf_view`: OpInfo istft's complex128 samples 8 and 9, whose `window` is
a leaf that is also a view (taken under no_grad: no gradient edge), where the stepper refused.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
import torch

import autograd_widget as aw

pytest.importorskip("expecttest", reason="torch.testing._internal needs expecttest (dev extra)")
from torch.testing._internal.common_methods_invocations import op_db

#: OpInfo samples per op (the first ones with a differentiable output).
SAMPLES = 3

#: name[.variant] of the ops in the sample.
SAMPLE = [
    # pointwise
    "abs", "exp", "log1p", "rsqrt", "tanh", "erf", "lgamma", "sgn", "clamp",
    "nn.functional.gelu", "nn.functional.silu", "nn.functional.softplus",
    # binary / ternary, broadcasting
    "add", "mul", "div.no_rounding_mode", "pow", "atan2", "maximum", "lerp", "where",
    # reductions (incl. multi-output with indices)
    "sum", "prod", "amax", "std", "var_mean", "logsumexp", "linalg.vector_norm",
    "max.reduction_with_dim", "median",
    # scans and sorts
    "cumsum", "cumprod", "sort", "topk",
    # linear algebra
    "addmm", "bmm", "einsum", "linalg.det", "linalg.solve", "linalg.inv", "linalg.cholesky",
    "linalg.svd", "linalg.eigh", "linalg.qr",
    # views and shape ops (multi-output views: split, unbind)
    "cat", "stack", "split", "unbind", "permute", "expand", "flip", "roll", "diagonal",
    "as_strided", "unfold",
    # indexing and scatter
    "gather", "scatter_add", "index_put", "index_add", "masked_fill", "masked_select",
    # nn.functional
    "nn.functional.conv2d", "nn.functional.conv_transpose1d", "nn.functional.layer_norm",
    "nn.functional.group_norm", "nn.functional.batch_norm", "log_softmax",
    "nn.functional.cross_entropy", "nn.functional.embedding", "nn.functional.max_pool2d",
    "nn.functional.interpolate.bilinear", "nn.functional.grid_sample",
    "nn.functional.scaled_dot_product_attention", "nn.functional.multi_head_attention_forward",
    "nn.functional.ctc_loss", "nn.functional.pad.reflect",
    # complex outputs from real inputs
    "fft.rfft", "linalg.eig",
]  # fmt: skip

#: Known failures: name -> reason (strict xfail: an unexpected pass fails, so we notice a fix).
#: Ops expected to fail, with why (none today: sgn's ZeroTensor gradient, once here, is fixed).
XFAIL: dict[str, str] = {}

OPS = {op.name + (f".{op.variant_test_name}" if op.variant_test_name else ""): op for op in op_db}


def _eligible(op: Any) -> bool:
    return op.supports_autograd and op.supports_dtype(torch.float64, "cpu")


def _complex(op: Any) -> bool:
    return torch.complex128 in op.supported_backward_dtypes("cpu")


def _params() -> list:
    names = sorted(k for k, op in OPS.items() if _eligible(op))
    if not os.environ.get("AW_OPINFO_ALL"):
        names = SAMPLE
    out = []
    for name in names:
        marks = []
        if name in XFAIL:
            marks.append(pytest.mark.xfail(strict=True, raises=RuntimeError, reason=XFAIL[name]))
        out.append(pytest.param(name, torch.float64, id=name, marks=marks))
        if _complex(OPS[name]):
            out.append(pytest.param(name, torch.complex128, id=f"{name}-complex128", marks=marks))
    return out


def _tensors(x: Any) -> Iterator[torch.Tensor]:
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for y in x:
            yield from _tensors(y)
    elif isinstance(x, dict):
        for y in x.values():
            yield from _tensors(y)


def test_sample_is_valid():
    assert len(SAMPLE) == len(set(SAMPLE)) >= 36
    for name in SAMPLE:
        assert name in OPS, f"{name} is not in op_db"
        assert _eligible(OPS[name]), f"{name}: no autograd or no float64 on CPU"


def _check_sample(name: str, sample: Any, op: Any, label: str) -> bool:
    """Capture, step and compare one OpInfo sample; False when it has nothing to check."""
    leaves = [t for t in _tensors([sample.input, sample.args, sample.kwargs]) if t.requires_grad]
    out = sample.output_process_fn_grad(op(sample.input, *sample.args, **sample.kwargs))
    roots = [t for t in _tensors(out) if t.requires_grad]
    if not leaves or not roots:
        return False
    cotangents = [torch.randn_like(r) for r in roots]
    want = torch.autograd.grad(roots, leaves, cotangents, retain_graph=True, allow_unused=True)
    stepper = aw.Stepper(aw.capture(roots, cotangents))
    stepper.run()
    assert stepper.done
    for i, (leaf, w) in enumerate(zip(leaves, want)):
        if w is None:
            if leaf.grad_fn is None and leaf._is_view():  # no gradient edge: the engine's None
                assert stepper.grad(leaf) is None, f"{label} input {i}: the engine gives None"
            continue
        # Same kernels in the same order: equal to the last bit (NaN where the engine has NaN).
        torch.testing.assert_close(
            stepper.grad(leaf), w, rtol=0, atol=0, equal_nan=True,
            msg=lambda m, i=i: f"{label} input {i}: {m}",
        )  # fmt: skip
    assert stepper.compare_with_engine() == [], label
    stepper.close()
    return True


@pytest.mark.parametrize(("name", "dtype"), _params())
def test_op_matches_engine(name: str, dtype: torch.dtype) -> None:
    op = OPS[name]
    checked = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecation chatter of old ops (torch.lu, ...)
        for sample in op.sample_inputs("cpu", dtype, requires_grad=True):
            if checked == SAMPLES:
                break
            if _check_sample(name, sample, op, f"{name} {dtype} sample {checked}"):
                checked += 1
    if checked == 0:
        pytest.skip(f"{name} {dtype}: no OpInfo sample with a differentiable output")


def test_istft_window_is_a_leaf_view() -> None:
    # OpInfo istft, complex128, samples 8 and 9: `window` is a leaf AND a view (is_leaf,
    # _is_view(), no grad_fn, requires_grad): autograd gives it no gradient edge and the engine
    # answers None for it; the stepper used to refuse ("a view of a leaf taken under no_grad").
    op = OPS["istft"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        samples = list(op.sample_inputs("cpu", torch.complex128, requires_grad=True))
        for k in (8, 9):
            window = samples[k].kwargs["window"]
            assert window.is_leaf and window._is_view() and window.grad_fn is None
            assert window.requires_grad
            assert _check_sample("istft", samples[k], op, f"istft complex128 sample {k}")
