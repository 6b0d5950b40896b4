"""Installing the package never touches the torch already there (issue 28).

The built wheel goes into a fresh venv that already has a torch: the RUNNING interpreter's own
(the pinned 2.13.0 in CI; 2.6.0, 2.8.0, ... in the compat runs), made visible to the new venv
without copying it: a `.pth` file points at a folder of links to the running interpreter's
installed distributions (torch and everything else installed there, this checkout's own
editable install left out). pip sees those as installed, exactly as it sees a
`--system-site-packages` venv's. The install runs with `--no-index`: whatever the wheel's
requirements ask for must be satisfied by what is there, so a bound that excluded this torch
fails here instead of downloading another one. Then: torch's version, location and files
(every file its RECORD lists in site-packages: size and modification time) are unchanged,
nothing named torch landed in the venv, and the quick start works there (capture,
Stepper.run, grad, the widget object) with the package imported from the wheel, not from this
checkout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers.wheelenv import ROOT, build_dist, run

pytestmark = pytest.mark.slow

#: This checkout's own install in the running interpreter (editable): never shared.
OWN = ("autograd_widget", "_autograd_widget", "_editable_impl_autograd_widget", "__editable__")

TORCH_STATE = textwrap.dedent(
    """
    import hashlib, importlib.metadata as md, json, os, sys
    d = md.distribution("torch")
    h = hashlib.sha256()
    n = 0
    for f in d.files or ():
        if str(f).startswith(".."):  # scripts in bin/: not torch's own files
            continue
        p = f.locate()
        if os.path.exists(p):
            st = os.stat(p)
            h.update(f"{f}:{st.st_size}:{st.st_mtime_ns}\\n".encode())
            n += 1
    import torch
    print(json.dumps({"version": torch.__version__, "dist": d.version,
                      "file": os.path.realpath(torch.__file__), "files": n,
                      "digest": h.hexdigest()}))
    """
)

QUICK_START = textwrap.dedent(
    """
    import os, sys, torch
    import autograd_widget as aw
    assert not os.path.realpath(aw.__file__).startswith(sys.argv[1]), aw.__file__
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    z = x**2 + y
    g = aw.capture(z, params={"x": x, "y": y})
    st = aw.Stepper(g)
    st.run()
    assert st.done and st.grad(x).item() == 4.0 and st.grad(y).item() == 1.0, st.grad(x)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    with aw.track(model):
        loss = model(torch.randn(16, 4)).logsumexp(1).mean()
    st2 = aw.Stepper(aw.capture(loss, model=model))
    st2.run()
    want = torch.autograd.grad(loss, list(model.parameters()))
    assert all(torch.equal(st2.grad(p), w) for p, w in zip(model.parameters(), want))
    w = aw.explore(z, params={"x": x, "y": y})
    assert type(w).__name__ == "AutogradWidget" and w.stepper is not None
    print("quick start ok", aw.__file__, torch.__version__)
    """
)


def _site_packages(python: str) -> Path:
    out = run([python, "-c", "import torch, os; print(os.path.dirname(os.path.dirname("
               "os.path.realpath(torch.__file__))))"]).stdout  # fmt: skip
    return Path(out.strip())


def _share(site: Path, into: Path) -> None:
    """Links to everything installed in `site` but this checkout's own install."""
    into.mkdir()
    for entry in site.iterdir():
        if entry.name.startswith(OWN) or entry.suffix == ".pth" or entry.name == "__pycache__":
            continue
        (into / entry.name).symlink_to(entry)


def test_the_wheel_installs_beside_the_torch_there_and_works(tmp_path):
    env = {**os.environ}
    env.pop("PYTHONPATH", None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    before = json.loads(run([sys.executable, "-c", TORCH_STATE], env=env).stdout)

    wheel = build_dist().wheel  # built once per process, shared with the other wheel tests

    venv = tmp_path / "venv"
    # Without its own pip and setuptools: those of the running interpreter are shared too (the
    # venv's bundled setuptools would shadow the newer one a torch may require).
    run([sys.executable, "-m", "venv", "--without-pip", venv], env=env)
    py = str(venv / "bin" / "python")
    shared = tmp_path / "shared"
    _share(_site_packages(sys.executable), shared)
    venv_site = _site_packages_of_venv(py)
    (venv_site / "zz_shared_torch.pth").write_text(f"{shared}\n")
    seen = json.loads(run([py, "-c", TORCH_STATE], env=env, cwd=tmp_path).stdout)
    assert seen == before, "the fresh venv does not see the running interpreter's torch"

    # The wheel and whatever it requires, from what is installed only: never an index.
    r = run([py, "-m", "pip", "install", "--no-index", wheel], env=env, cwd=tmp_path)
    assert "torch" not in _installed_names(r.stdout), r.stdout[-2000:]
    assert not list(venv_site.glob("torch*")), "pip put a torch into the venv"

    after = json.loads(run([py, "-c", TORCH_STATE], env=env, cwd=tmp_path).stdout)
    assert after == before, f"torch changed: {before} -> {after}"

    out = run([py, "-c", QUICK_START, str(ROOT)], env=env, cwd=tmp_path).stdout
    assert out.startswith("quick start ok"), out
    assert str(venv) in out and before["version"] in out, out


def _site_packages_of_venv(python: str) -> Path:
    out = subprocess.run([python, "-c", "import site; print(site.getsitepackages()[0])"],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    return Path(out.strip())


def _installed_names(pip_output: str) -> set[str]:
    """Names in pip's "Successfully installed a-1.0 b-2.0" line (lower case, no version)."""
    for line in pip_output.splitlines():
        if line.startswith("Successfully installed"):
            return {w.rsplit("-", 1)[0].lower() for w in line.split()[2:]}
    return set()
