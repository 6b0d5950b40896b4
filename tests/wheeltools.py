"""Building and installing the package as a user gets it: the wheel, a fresh venv, a PATH
without Node. Shared by tests/browser/test_wheel_browser.py (the wheel in JupyterLab) and
tests/test_wheel_beside_torch.py (the wheel installed beside a torch it must not touch).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

__all__ = [
    "BUNDLE",
    "ROOT",
    "build_dists",
    "path_without_node",
    "run",
]

ROOT = Path(__file__).resolve().parents[1]
#: The front-end bundle (built from js/, gitignored) that both dists must carry.
BUNDLE = ("autograd_widget/static/widget.js", "autograd_widget/static/widget.css",
          "autograd_widget/static/loader.js")  # fmt: skip
NODE_NAMES = {"node", "nodejs", "npm", "npx", "corepack"}


def run(cmd: list, timeout: float = 600, **kw) -> subprocess.CompletedProcess:
    """Run `cmd`, failing the test with its output's tail when it exits non-zero."""
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kw)
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
    return str(shim)


def build_dists(outdir: Path, env: dict, *, sdist: bool = True) -> tuple[Path | None, Path]:
    """`python -m build` of the repo: (sdist, wheel built from it), or with `sdist=False` the
    wheel alone (from the tree). Checks that each carries the front-end bundle, the wheel's
    byte for byte the one in the tree."""
    args = [] if sdist else ["--wheel"]
    run([sys.executable, "-m", "build", *args, "--outdir", outdir, ROOT], env=env)
    (wheel,) = outdir.glob("autograd_widget-*.whl")
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    tar = None
    if sdist:
        (tar,) = outdir.glob("autograd_widget-*.tar.gz")
        with tarfile.open(tar) as t:
            in_sdist = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
        for name in BUNDLE:
            assert name in in_sdist, f"the sdist lacks {name}"
    for name in BUNDLE:
        assert name in in_wheel, f"the wheel lacks {name}"
    assert zipfile.ZipFile(wheel).read(BUNDLE[0]) == (ROOT / BUNDLE[0]).read_bytes()
    return tar, wheel
