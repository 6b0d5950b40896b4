"""The package as a user installs it: its wheel, built with no Node.js, in a fresh venv that
already has torch. Shared by the tests that install it that way (the quick start in a notebook
kernel, tests/project/test_wheel_quickstart.py; JupyterLab, tests/browser/test_wheel_browser.py).

- `build_dist()`: `python -m build` (an sdist, then the wheel built FROM the sdist) with no Node on
  PATH, once per test session; both must carry the front-end bundle (gitignored, built from js/).
- `venv_with_torch(base)`: a fresh venv whose torch is the pinned CPU build, from the LOCAL wheel
  only (pip's configured find-links, `--no-index`: never an index, so never a CUDA build): the
  "existing environment with torch" a user installs into.
- `pip_install(py, ...)`: installs into such a venv with torch constrained to what is there, so a
  test fails if installing the package would change the user's torch.
- `install_for_a_user(base)`: the two together, as the tests that use the wheel need it: a venv
  with torch, then the wheel, JupyterLab and ipykernel, torch unchanged by them. Made once per
  test session (the `user_venv` fixture, tests/conftest.py) and shared by both tests (a venv
  with torch took ~80 s on a busy 2-core machine), neither of which installs more into it.

pip runs with `--no-compile`: the ~1 GB of torch, sympy and JupyterLab is not byte-compiled at
install (installing torch took 65 s with it, 21 s without, on that machine); Python compiles what
it imports on first use, as it does for any module without a .pyc, so what is installed and how
it runs are the same.

Example:
    py = venv_with_torch(tmp_path)
    pip_install(py, build_dist().wheel, "ipykernel>=6.29", env=clean_env(tmp_path))
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TORCH = "2.13.0"
BUNDLE = ("autograd_widget/static/widget.js", "autograd_widget/static/widget.css",
          "autograd_widget/static/loader.js")
NODE_NAMES = {"node", "nodejs", "npm", "npx", "corepack"}

__all__ = ["BUNDLE", "TORCH", "Dist", "UserVenv", "build_dist", "clean_env", "install_for_a_user",
           "path_without_node", "pip_install", "run", "torch_version", "venv_with_torch"]


def run(cmd: list, timeout: float = 600, **kw) -> subprocess.CompletedProcess:
    """Run `cmd`; fail with its output when it fails."""
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout,
                       **kw)
    what = " ".join(map(str, cmd))
    assert r.returncode == 0, f"{what} failed:\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}"
    return r


def path_without_node(shim: Path) -> str:
    """A PATH with every program of the current PATH except Node's (links in `shim`): Debian's
    merged /usr makes /bin and /usr/bin one directory, so dropping a directory is no option."""
    shim.mkdir(parents=True, exist_ok=True)
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if not d or not Path(d).is_dir():
            continue
        for exe in Path(d).iterdir():
            if exe.name in NODE_NAMES or (shim / exe.name).exists():
                continue
            if exe.is_file() and os.access(exe, os.X_OK):
                (shim / exe.name).symlink_to(exe)
    assert shutil.which("node", path=str(shim)) is None
    return str(shim)


def clean_env(base: Path) -> dict[str, str]:
    """The environment of a user's shell: no Node on PATH, no checkout on PYTHONPATH."""
    env = {**os.environ, "PATH": path_without_node(base / "bin")}
    env.pop("PYTHONPATH", None)
    return env


@dataclass(frozen=True)
class Dist:
    """The built distributions, and what each holds (paths inside the archive)."""

    wheel: Path
    sdist: Path
    in_wheel: frozenset[str]
    in_sdist: frozenset[str]


@functools.cache
def build_dist() -> Dist:
    """`python -m build` of this checkout, with no Node on PATH, once per process (the folder
    is removed at exit). Fails unless both archives carry the bundle, byte for byte."""
    base = Path(tempfile.mkdtemp(prefix="agw-dist-"))
    atexit.register(shutil.rmtree, base, True)
    out = base / "dist"
    run([sys.executable, "-m", "build", "--outdir", out, ROOT], env=clean_env(base))
    (sdist,) = out.glob("autograd_widget-*.tar.gz")
    (wheel,) = out.glob("autograd_widget-*.whl")
    with tarfile.open(sdist) as t:
        in_sdist = frozenset(n.split("/", 1)[1] for n in t.getnames() if "/" in n)
    in_wheel = frozenset(zipfile.ZipFile(wheel).namelist())
    for name in BUNDLE:
        assert name in in_sdist, f"the sdist lacks {name}"
        assert name in in_wheel, f"the wheel lacks {name}"
    assert zipfile.ZipFile(wheel).read(BUNDLE[0]) == (ROOT / BUNDLE[0]).read_bytes()
    return Dist(wheel, sdist, in_wheel, in_sdist)


def _local_wheel_for_another_python(py: str, env: dict[str, str]) -> bool:
    """Whether pip's find-links hold a wheel of torch `TORCH` for some CPython 3.10-3.13."""
    with tempfile.TemporaryDirectory() as tmp:
        for minor in (10, 11, 12, 13):
            got = subprocess.run(
                [py, "-m", "pip", "download", "--quiet", "--no-index", "--no-deps",
                 "--only-binary=:all:", "--python-version", f"3.{minor}", "-d", tmp,
                 f"torch=={TORCH}"], capture_output=True, text=True, timeout=600, env=env)
            if got.returncode == 0:
                return True
    return False


def venv_with_torch(base: Path) -> str:
    """A fresh venv under `base` with the pinned CPU torch from the local wheel (with its own
    dependencies, and numpy); returns its python."""
    env = clean_env(base)
    venv = base / "venv"
    run([sys.executable, "-m", "venv", venv], env=env)
    py = str(venv / "bin" / "python")
    local = base / "local"
    got = subprocess.run(
        [py, "-m", "pip", "download", "--quiet", "--no-index", "--no-deps", "-d", str(local),
         f"torch=={TORCH}"], capture_output=True, text=True, timeout=600, env=env)
    if got.returncode != 0 and _local_wheel_for_another_python(py, env):
        pytest.skip(f"the local CPU wheel of torch {TORCH} is for another Python than "
                    f"{sys.version_info.major}.{sys.version_info.minor} (a compat run on "
                    "another Python; CI's Python has it)")
    assert got.returncode == 0, (
        f"no local CPU wheel of torch {TORCH} in pip's find-links (this machine's pip config "
        f"or PIP_FIND_LINKS); the test never resolves torch from an index:\n{got.stderr[-2000:]}")
    (torch_wheel,) = local.glob("torch-*.whl")
    assert "+cpu" in torch_wheel.name, torch_wheel.name
    # torch from that file (its own dependencies as pip finds them), as a user's env has it
    run([py, "-m", "pip", "install", "--quiet", "--no-compile", torch_wheel, "numpy>=1.24"],
        env=env)
    return py


def pip_install(py: str, *requirements: str | Path, env: dict[str, str],
                cwd: Path | None = None) -> str:
    """`pip install` into the venv of `py`, its torch pinned to the one installed (installing
    must never change the user's torch), then `pip check`; returns that torch's version."""
    constraints = Path(py).parent.parent / "constraints.txt"
    version = torch_version(py, env)
    constraints.write_text(f"torch=={version}\n")
    run([py, "-m", "pip", "install", "--quiet", "--no-compile", "-c", constraints, *requirements],
        env=env, cwd=cwd)
    run([py, "-m", "pip", "check"], env=env, cwd=cwd)
    return version


def torch_version(py: str, env: dict[str, str]) -> str:
    """`torch.__version__` as the venv of `py` imports it."""
    return run([py, "-c", "import torch; print(torch.__version__)"], env=env).stdout.strip()


@dataclass(frozen=True)
class UserVenv:
    """A user's venv with the wheel installed: its python, its folder, the folder it was made
    in (`base`), the PATH and environment of that user's shell (no Node, no checkout), and the
    torch it had before the wheel came (unchanged after: `install_for_a_user` checks)."""

    python: str
    venv: Path
    base: Path
    env: dict[str, str]
    torch: str


def install_for_a_user(base: Path) -> UserVenv:
    """A fresh venv under `base` with the pinned CPU torch (`venv_with_torch`), then this
    checkout's wheel (`build_dist`), JupyterLab and ipykernel, torch pinned to what is there;
    fails if installing them changed torch. Shared by the tests that use the installed wheel
    (the `user_venv` fixture, tests/conftest.py): they install nothing more into it."""
    env = clean_env(base)
    py = venv_with_torch(base)
    before = pip_install(py, build_dist().wheel, "jupyterlab>=4.2", "ipykernel>=6.29", env=env,
                         cwd=base)
    after = torch_version(py, env)
    assert after == before, f"installing the wheel changed torch: {before} -> {after}"
    return UserVenv(py, Path(py).parent.parent, base, env, before)
