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


@pytest.fixture(scope="session")
def docs_cache(tmp_path_factory):
    """A notebook cache of the docs (docs/notebook_pages.py), fresh for this session: filled
    by `docs_site`, reused by the test of `make docs` as a non-root user."""
    return tmp_path_factory.mktemp("docs-cache")


@pytest.fixture(scope="session")
def docs_site(tmp_path_factory, docs_cache):
    """The documentation site built once per session with `mkdocs build --strict` into a
    temporary folder, with a fresh notebook cache (every notebook executed by this very run);
    shared by tests/project/test_docs.py and the browser test that looks at it."""
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "AGW_DOCS_CACHE": str(docs_cache),
           "NO_MKDOCS_2_WARNING": "1",
           "PYTHONPATH": os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH"))
                                         if p)}
    t0 = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(root / "mkdocs.yml"),
         "-d", str(out)],
        cwd=root, env=env, capture_output=True, text=True, timeout=900,
    )
    assert run.returncode == 0, f"mkdocs build --strict failed:\n{run.stdout}\n{run.stderr}"
    print(f"docs built in {time.perf_counter() - t0:.1f} s")
    return out


@pytest.fixture(scope="session")
def user_venv(tmp_path_factory):
    """A user's venv made fresh by this session (tests/helpers/wheelenv.py `install_for_a_user`):
    the pinned CPU torch from the local wheel, then this checkout's wheel (built with no Node),
    JupyterLab and ipykernel, torch checked unchanged. Made once, read by the tests of the
    installed wheel (tests/project/test_wheel_quickstart.py, tests/browser/test_wheel_browser.py);
    removed when the session ends."""
    import shutil

    from tests.helpers.wheelenv import install_for_a_user

    base = tmp_path_factory.mktemp("user-venv")
    try:
        yield install_for_a_user(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


#: Tests meant to run in one pytest-xdist worker, in one group, when the suite runs on several
#: (`AW_TEST_WORKERS=2 make test`, .ci/test): the browser tests sharing one JupyterLab server and
#: one Chromium, the documentation site (`docs_site`) built once. Seen on xdist 3.8.0: the
#: marker is on the items but the workers' node ids do not get the group, so the group is not
#: kept together yet (why not is open); without xdist the marker is inert.
ONE_WORKER = "browser-and-docs"


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = str(item.nodeid).split("::")[0]
        names = getattr(item, "fixturenames", ())
        if ("/browser/" in path or "browser" in item.keywords or "docs_site" in names
                or "docs_cache" in names):
            item.add_marker(pytest.mark.xdist_group(ONE_WORKER))
