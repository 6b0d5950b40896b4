"""Which build of torch the set-up installs (.ci/setup, step 1): decided from pip's own answers.

Any build of the pinned version works: the tests and the notebooks run on a CPU with either.
Only the size differs: the CPU build is ~1.1 GB in the venv, the default build that PyPI serves
for Linux x86_64 carries the CUDA libraries (~4.7 GB in the venv, several minutes to download).
So the CPU build is preferred wherever pip can find it, and the default build is installed
otherwise, saying its size; a CUDA build is never a failure. Only "nothing at all" is.

The order of the questions put to pip (`pip install --dry-run --report`: pip resolves, reads
the wheels' metadata, downloads and installs nothing):
1. `torch==VERSION` from pip's configured indexes and find-links. A `+cpu` answer (a local CPU
   wheel, or an index that serves CPU builds) is taken: `torch==VERSION+cpu`.
2. Otherwise `torch==VERSION+cpu` with PyTorch's CPU wheel index added (`TORCH_CPU_INDEX`; empty
   skips this question), asked with a short network timeout: a machine that reaches only PyPI
   gets "not found" in seconds.
3. Otherwise the default build that question 1 found: `torch==VERSION`, with a note on its size.
4. Nothing found: exit 1, saying what to check.

Run by .ci/setup with the venv's python (pip answers for that interpreter's tags):

    python .ci/torch_choice.py VERSION [--python PY] [--cpu-index URL]

stdout: the kind ("cpu" or "default") on the first line, then the arguments for
`pip install`, one per line; stderr: what was found and why this build (for the log).
tests/project/test_setup_torch.py drives `choose` and this command with pip's answers faked.

Example:
    >>> answers = {("torch==2.13.0", None): "2.13.0"}
    >>> choose("2.13.0", lambda spec, index: answers.get((spec, index)), None).kind
    'default'
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: PyTorch's index of CPU-only wheels (question 2); TORCH_CPU_INDEX overrides it, "" skips it.
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
#: The default build's size, as measured on Linux x86_64 (CUDA libraries included).
DEFAULT_BUILD_SIZE = "~4.7 GB in the venv, several minutes to download"

#: pip's answer to "which torch would you install for this requirement?": its version
#: ("2.13.0+cpu", "2.13.0") or None when pip found none.
Ask = Callable[[str, str | None], str | None]


@dataclass(frozen=True)
class Choice:
    """The build to install: `kind` "cpu" or "default", the arguments for `pip install`, and
    the lines that say why (for the set-up's log)."""

    kind: str
    pip_args: tuple[str, ...]
    notes: tuple[str, ...]


class NoTorch(Exception):
    """pip found no build of the pinned version at all; the message says what to check."""


def is_cpu_build(version: str) -> bool:
    """Whether a torch version names a CPU-only build (its local label, PEP 440: `+cpu`, also
    `+cpu.cxx11.abi` and the like).

    Example:
        >>> is_cpu_build("2.13.0+cpu"), is_cpu_build("2.13.0"), is_cpu_build("2.13.0+cu126")
        (True, False, False)
    """
    _, _, local = version.partition("+")
    return local.split(".")[0] == "cpu"


def choose(version: str, ask: Ask, cpu_index: str | None) -> Choice:
    """The build of torch `version` to install, from pip's answers (`ask(requirement, extra
    index or None)` -> the version pip would install, or None); `cpu_index`: PyTorch's CPU
    index to try when pip's own indexes have only the default build (None: do not try).
    Raises NoTorch when no build is found.

    Example:
        >>> answers = {("torch==2.13.0", None): "2.13.0+cpu"}
        >>> choose("2.13.0", lambda spec, index: answers.get((spec, index)), None).pip_args
        ('torch==2.13.0+cpu',)
    """
    found = ask(f"torch=={version}", None)
    if found is not None and is_cpu_build(found):
        return Choice("cpu", (f"torch=={found}",),
                      (f"pip's indexes have the CPU build ({found}): ~1.1 GB",))
    if cpu_index:
        cpu = ask(f"torch=={version}+cpu", cpu_index)
        if cpu is not None and is_cpu_build(cpu):
            return Choice("cpu", ("--extra-index-url", cpu_index, f"torch=={cpu}"),
                          (f"the CPU build ({cpu}) from {cpu_index}: ~1.1 GB",))
    if found is None:
        raise NoTorch(
            f"pip finds no build of torch=={version} (is PyPI reachable? `pip download "
            f"--no-deps torch=={version}` says why; a proxy goes in pip's config or "
            f"PIP_INDEX_URL). Another pinned version: TORCH_VERSION=x.y.z")
    where = f"nor at {cpu_index}" if cpu_index else "(PyTorch's CPU index not asked)"
    return Choice("default", (f"torch=={version}",), (
        f"no CPU build of torch {version} in pip's indexes {where}: installing the default "
        f"build ({found}) from PyPI;",
        f"on Linux that is the CUDA build: {DEFAULT_BUILD_SIZE}. It runs fine on a machine",
        "without a GPU (the CUDA libraries stay unused); only its size differs. To have the",
        "CPU build instead, make it findable by pip (its CPU index, or a local wheel in",
        "find-links) and remove .venv.",
    ))


def ask_pip(python: str, requirement: str, extra_index: str | None) -> str | None:
    """The version of torch pip (run by `python`) would install for `requirement` (with
    `extra_index` added), or None when it finds none: `pip install --dry-run --report`, which
    reads metadata only and installs nothing. A question to an extra index gets a short network
    timeout (an unreachable host is "not found" in seconds, not after pip's retries)."""
    with tempfile.TemporaryDirectory(prefix="agw-torch-choice-") as tmp:
        report = Path(tmp) / "report.json"
        cmd = [python, "-m", "pip", "install", "--dry-run", "--quiet", "--no-deps",
               "--ignore-installed", "--disable-pip-version-check", "--report", str(report)]
        if extra_index:
            cmd += ["--extra-index-url", extra_index, "--timeout", "10", "--retries", "1"]
        cmd.append(requirement)
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            return None
        if done.returncode != 0 or not report.is_file():
            return None
        try:
            install = json.loads(report.read_text(encoding="utf-8")).get("install", [])
        except (ValueError, AttributeError):
            return None
        versions = [item.get("metadata", {}).get("version") for item in install
                    if item.get("metadata", {}).get("name", "").lower() == "torch"]
        return versions[0] if versions and isinstance(versions[0], str) else None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("version")
    parser.add_argument("--python", default=sys.executable, help="the venv's python")
    parser.add_argument("--cpu-index", default=os.environ.get("TORCH_CPU_INDEX", CPU_INDEX),
                        help="PyTorch's CPU wheel index ('' skips it)")
    args = parser.parse_args(argv)
    if args.cpu_index:
        print(f"[setup]    (asking pip for torch {args.version}: its indexes first, then "
              f"{args.cpu_index}; a few seconds)", file=sys.stderr)
    try:
        choice = choose(args.version, lambda spec, index: ask_pip(args.python, spec, index),
                        args.cpu_index or None)
    except NoTorch as err:
        print(f"[setup] FAILED: {err}", file=sys.stderr)
        return 1
    for line in choice.notes:
        print(f"[setup]    {line}", file=sys.stderr)
    print("\n".join((choice.kind, *choice.pip_args)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
