"""Doctest namespace: the names every docstring example may use without building them.

`torch`, `aw` (autograd_widget), `x` and `y` (scalar leaves 2.0 and 3.0), `z = x**2 + y`,
`g = aw.capture(z, params={"x": x, "y": y})` (nodes n0 AddBackward0, n1 PowBackward0,
n2 AccumulateGrad(y), n3 AccumulateGrad(x)), `st = aw.Stepper(g)`, and `model` (a small MLP
`Linear(4, 8) -> ReLU -> Linear(8, 3)`). Each example gets fresh objects.

Also the time per test part printed at the end of every run (here, at the root, so that the
doctests of the package are counted too: a hook in tests/conftest.py sees only tests/).
"""

from __future__ import annotations

import pytest

#: Doctests that show what only a newer torch can (issue 28): name prefix -> (the torch that
#: shows it, why). On an older torch they are skipped with that reason, as the tests are by
#: tests/helpers/torch_versions.py's `needs_torch`; nothing else skips.
NEEDS_TORCH = {
    "autograd_widget.core.checkpoint.ExecGroup": (
        "2.10", "torch.utils.checkpoint.GraphExecGroup (one recompute per pass)"),
    "autograd_widget.core.checkpoint.": (
        "2.10", "SavedTensor.unpack_hook finds a checkpointed value's region without unpacking"),
    "autograd_widget.engine.step.recompute.RecomputeGroups.scope": (
        "2.10", "torch.utils.checkpoint.GraphExecGroup (one recompute per pass)"),
    "autograd_widget.engine.diagnose.failure.explain_failure": (
        "2.10", "SavedTensor.data shows the modified tensor, whose grad_fn names the in-place op"),
    "autograd_widget.engine.step.stepper.Stepper.explain_failure": (
        "2.10", "SavedTensor.data shows the modified tensor, whose grad_fn names the in-place op"),
    "autograd_widget.engine.record.replay.Replay.explain_failure": (
        "2.10", "SavedTensor.data shows the modified tensor, whose grad_fn names the in-place op"),
}  # fmt: skip


#: The integrations import their optional extra when imported: without it, their doctests are
#: not collected (tests/integrations/ skips likewise, by importorskip).
def _missing(*packages: str) -> bool:
    import importlib.util

    return all(importlib.util.find_spec(p) is None for p in packages)


collect_ignore = [f"autograd_widget/integrations/{m}.py" for m, pkgs in (
    ("hf", ("transformers",)), ("lightning", ("lightning", "pytorch_lightning")),
    ("tensorboard", ("tensorboard",))) if _missing(*pkgs)]


#: Doctests that step inside a compiled region: skipped, with the note users see, where this
#: torch keeps regions opaque (tests/helpers/compiled.py `regions_opaque_here`).
OPEN_REGIONS = ("autograd_widget.engine.step.regioncalls.",)
#: Doctests that read non-reentrant checkpoint's per-region frame: skipped before torch 2.10 (no
#: `SavedTensor.unpack_hook` to reach it) and where a torch keeps it elsewhere
#: (tests/helpers/torch_versions.py `checkpoint_frames_skip`).
READS_CHECKPOINT_FRAMES = ("autograd_widget.core.checkpoint.",)


def _needed_torch(name: str) -> tuple[str, str] | None:
    import torch

    for prefix in sorted(NEEDS_TORCH, key=len, reverse=True):  # the most specific first
        if name == prefix or (prefix.endswith(".") and name.startswith(prefix)):
            version, why = NEEDS_TORCH[prefix]
            have = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
            return None if have >= tuple(int(p) for p in version.split(".")) else (version, why)
    return None


@pytest.fixture
def open_regions():
    """Skip where this torch's compiled regions stay opaque (`regions_opaque_here`: an older
    torch lays the compiled backward's arguments out otherwise), with the note the user sees."""
    import torch

    from tests.helpers.compiled import regions_opaque_here

    why = regions_opaque_here()
    if why is not None:
        pytest.skip(f"compiled regions are one opaque node on torch {torch.__version__}: {why}")


@pytest.fixture(autouse=True)
def _doctest_names(request):
    from _pytest.doctest import DoctestItem

    if not isinstance(request.node, DoctestItem):  # the tests build their own objects
        yield
        return
    if request.node.name.endswith(".to_tensorboard") and _missing("tensorboard"):
        pytest.skip("needs the tensorboard extra: pip install tensorboard")
    needed = _needed_torch(request.node.name)
    if needed is not None:
        from tests.helpers.torch_versions import needs_torch_reason

        pytest.skip(needs_torch_reason(*needed))
    if request.node.name.startswith(OPEN_REGIONS):
        request.getfixturevalue("open_regions")
    if request.node.name.startswith(READS_CHECKPOINT_FRAMES):
        from tests.helpers.torch_versions import checkpoint_frames_skip

        why = checkpoint_frames_skip()
        if why is not None:
            pytest.skip(why)
    import torch

    import autograd_widget as aw

    torch.manual_seed(0)
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    z = x**2 + y
    g = aw.capture(z, params={"x": x, "y": y})
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    namespace = request.getfixturevalue("doctest_namespace")
    namespace.update(torch=torch, aw=aw, x=x, y=y, z=z, g=g, st=aw.Stepper(g), model=model)
    yield
    g.close()


def pytest_configure(config):
    """A run started as a background job (`cmd &` in a shell without job control) inherits
    SIGINT ignored, and Python then installs no handler of its own: the Ctrl-C guard (which
    stands aside when SIGINT is not Python's) would be tested as absent. Give the run Python's
    default handler, as an interactive or CI run has."""
    import signal
    import threading

    if (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.SIG_IGN):
        signal.signal(signal.SIGINT, signal.default_int_handler)


# --------------------------------------------------------------------------- per-part times
_PART_SECONDS: dict[str, float] = {}


def _part_of(item_or_report) -> str:
    path = str(getattr(item_or_report, "nodeid", "")).split("::")[0]
    if not path.startswith("tests/"):
        return "doctests"
    keywords = getattr(item_or_report, "keywords", {})
    if "browser" in keywords or "/browser/" in path:
        return "browser"
    if "test_bench" in path:
        return "benchmarks (tiny)"
    if "/zoo/" in path or "test_opinfo" in path:
        return "model zoo + OpInfo"
    if "notebooks" in path:
        return "notebooks"
    return "unit + property"


def pytest_runtest_logreport(report):
    _PART_SECONDS[_part_of(report)] = _PART_SECONDS.get(_part_of(report), 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    if _PART_SECONDS:
        parts = ", ".join(f"{k} {v:.0f} s" for k, v in sorted(_PART_SECONDS.items()))
        terminalreporter.write_line(f"[time] per test part: {parts}")
