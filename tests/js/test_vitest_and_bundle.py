"""The front-end's own checks, from pytest (CI reads only pytest's closing line):
the vitest suite passes, js/src type-checks (`tsc --noEmit -p js`: checkJs + strict) and so do
js/tests (js/tsconfig.tests.json), js/ lints clean (ESLint's recommended rules,
js/eslint.config.mjs), and the
shipped bundle is not older than its sources (the module size limit is a house rule:
tests/project/test_house.py)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
JS = ROOT / "js"
BUNDLE = ROOT / "autograd_widget" / "static" / "widget.js"
BUNDLE_CSS = ROOT / "autograd_widget" / "static" / "widget.css"
#: Every byte of the bundle is stored in each saved notebook's widget state.
MAX_BUNDLE_BYTES = 1024 * 1024  # issue 17: <= 1 MB per widget, KaTeX included

# Sources the bundle is built from: js/src (all files), plus what decides how it is built.
BUILD_INPUTS = ["build.mjs", "package.json", "package-lock.json"]


def _sources() -> list[Path]:
    files = [p for p in (JS / "src").rglob("*") if p.is_file()]
    files += [JS / name for name in BUILD_INPUTS if (JS / name).exists()]
    return files


def test_bundle_is_built_and_not_older_than_its_sources():
    assert BUNDLE.exists(), "no front-end bundle: cd js && npm ci && npm run build"
    built = BUNDLE.stat().st_mtime
    stale = sorted(str(p.relative_to(ROOT)) for p in _sources() if p.stat().st_mtime > built)
    assert not stale, (
        f"{BUNDLE.relative_to(ROOT)} is older than {', '.join(stale)}: "
        "rebuild it (cd js && npm run build)"
    )


def test_bundle_has_its_stylesheet_and_stays_small():
    assert BUNDLE_CSS.exists(), "js/src/widget.css is imported by index.js: esbuild emits it"
    size = BUNDLE.stat().st_size
    assert size < MAX_BUNDLE_BYTES, f"widget.js is {size / 1e6:.2f} MB (limit 1 MiB)"


def test_bundle_imports_nothing_from_the_network():
    """No CDN imports: nothing outside the machine is reachable, and notebooks are often offline.
    (plotly's code mentions URLs it never fetches with only scatter traces registered, e.g. the
    geo traces' topojson CDN; the browser tests assert that no request leaves 127.0.0.1.)"""
    text = BUNDLE.read_text(encoding="utf-8", errors="replace")
    pattern = r"""(?:\bimport\s*\(?|\bfrom)\s*["'`](?:https?:)?//[^"'`]+"""
    found = [m.group(0) for m in re.finditer(pattern, text)]
    assert not found, f"the bundle imports from the network: {found[:3]}"


def _npm() -> str:
    npm = shutil.which("npm")
    assert npm, "npm is needed for the front-end tests (Node >= 20)"
    if not (JS / "node_modules").exists():
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=JS, check=True)
    return npm


@pytest.mark.slow
@pytest.mark.parametrize("project", ["tsconfig.json", "tsconfig.tests.json"])
def test_front_end_type_checks(project):
    """js/tsconfig.json: every module of js/src under `checkJs` and `strict`, zero errors (the
    JSDoc types are checked, not only written); js/tsconfig.tests.json: the tests against those
    types (strict but for implicit any and null checks: see that file)."""
    _npm()
    tsc = JS / "node_modules" / ".bin" / "tsc"
    assert tsc.exists(), "typescript is pinned in js/package.json: cd js && npm ci"
    proc = subprocess.run(
        [str(tsc), "--noEmit", "-p", str(JS / project)], cwd=ROOT, capture_output=True,
        text=True, timeout=300,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]


def test_every_js_test_file_opts_in_to_the_type_check():
    """js/tsconfig.tests.json checks only the files that say `// @ts-check` (checkJs is off there
    so that js/src is checked once, under tsconfig.json): a test file without it would silently
    go unchecked."""
    files = sorted((JS / "tests").rglob("*.js"))
    assert files, "no js/tests/**/*.js found"
    missing = [
        str(p.relative_to(ROOT)) for p in files
        if "// @ts-check" not in p.read_text(encoding="utf-8").splitlines()[:3]
    ]
    assert not missing, (
        f"add `// @ts-check` as the first line (after any @vitest-environment): {missing}"
    )


@pytest.mark.slow
def test_front_end_lints_clean():
    """js/eslint.config.mjs: ESLint's recommended rules over js/src, js/tests and the build
    scripts, zero errors and zero warnings (unused variables, undefined names, unreachable code:
    bugs, not style)."""
    _npm()
    eslint = JS / "node_modules" / ".bin" / "eslint"
    assert eslint.exists(), "eslint is pinned in js/package.json: cd js && npm ci"
    proc = subprocess.run(
        [str(eslint), "--max-warnings", "0", "--no-color", "."], cwd=JS, capture_output=True,
        text=True, timeout=300,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]


@pytest.mark.slow
def test_vitest_suite_passes():
    npm = _npm()
    env = dict(os.environ, CI="1", FORCE_COLOR="0", NO_COLOR="1")
    proc = subprocess.run(
        [npm, "test", "--silent"], cwd=JS, env=env, capture_output=True, text=True, timeout=300
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    assert "failed" not in out.split("Tests")[-1].lower(), out[-3000:]
