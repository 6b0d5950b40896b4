"""`.ci/gpu --dry-run` (issue 28): the GPU script's own steps on the CPU, in every `make test`.

On a machine with a CUDA GPU `.ci/gpu` runs the `cuda`-marked tests and benchmarks/bench_gpu.py
on the device; here the same script runs with `--dry-run`: the cuda tests with
`AW_TEST_DEVICE=cpu` (only the CUDA-specific checks skip) and the benchmark on the zoo's small
sizes on the CPU, so a broken script, test or benchmark is caught without a GPU.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_script_dry_run(tmp_path):
    env = {**os.environ, "PYTHON": sys.executable, "AW_GPU_LOGS": str(tmp_path)}
    env.pop("AW_TEST_DEVICE", None)
    r = subprocess.run(["bash", str(ROOT / ".ci" / "gpu"), "--dry-run"], capture_output=True,
                       text=True, timeout=900, env=env, cwd=ROOT)  # fmt: skip
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    summary = out[out.index("GPU summary (DRY RUN, CPU)"):]
    tests = re.search(r"tests:\s+(\d+) passed(?:, (\d+) skipped)?", summary)
    assert tests and int(tests.group(1)) > 0, summary
    assert "failed" not in summary.split("benchmark:")[0], summary
    # Only what needs the device skipped, each saying so.
    log = (tmp_path / "cuda-tests.log").read_text()
    skips = re.findall(r"^SKIPPED \[\d+\] \S+: (.*)$", log, re.M)
    assert skips and all(s == "CUDA-specific check" for s in skips), skips
    for model in ("gpt2", "llama"):
        assert re.search(rf"^\s+\| {model} \| \d+ \|", summary, re.M), summary
    assert "card:      none: dry run on the CPU" in summary


def test_gpu_script_refuses_without_a_device_unless_dry_run():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: the script runs for real here")
    env = {**os.environ, "PYTHON": sys.executable}
    r = subprocess.run(["bash", str(ROOT / ".ci" / "gpu")], capture_output=True, text=True,
                       timeout=120, env=env, cwd=ROOT)  # fmt: skip
    assert r.returncode == 2 and "--dry-run" in r.stderr, r.stderr
