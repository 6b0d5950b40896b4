"""Benchmark: the widget in a real JupyterLab, driven by Playwright in Debian's chromium.

Run `python benchmarks/bench_browser.py` (full ladder, writes benchmarks/RESULTS.md) or with
`--tiny` (a 2-layer Transformer and a 300-node chain, under a minute). `--results PATH` writes
the section into another file. For each graph and repeat:

- painted: a setup cell builds a fresh forward (untimed) and counts the graph's nodes; then the
  cell `w = aw.explore(loss, collapse="none"); w` is run with Shift+Enter. Measured IN THE PAGE
  with performance.now(): from the Shift+Enter keydown event's timestamp to the first animation
  frame after the widget's `.agw-plot` holds its node trace (`agw-nodes`) with every node and
  the overlay canvas (edges, node states) has been painted.
- step round trip: ~10 real mouse clicks on "Step"; each from the click event's timestamp to the
  first animation frame after the status line shows the next position AND the overlay canvas
  has been repainted (page performance.now()).
  Per repeat the median of the clicks; reported: the median over repeats.

Server and browser set-up copied from tests/browser/conftest.py (all Jupyter dirs temporary).
RESULTS.md may hold sections from several scripts: this one writes only between
`<!-- browser:start -->` and `<!-- browser:end -->` and keeps the rest of the file.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))  # run as a script or loaded by path (tests)
from _results import RESULTS, commit, write_section  # noqa: E402

# THE JupyterLab launcher, shared with the browser tests (pytest-free).
sys.path.insert(0, str(ROOT / "tests" / "browser"))
from labserver import CHROMIUM, CHROMIUM_ARGS, start_lab  # noqa: E402

SECTION = "browser"
TIMEOUT = 120  # seconds, for the server, a kernel, a cell

PRELUDE = """\
import torch
import autograd_widget as aw
torch.manual_seed(0)

def transformer(layers):
    layer = torch.nn.TransformerEncoderLayer(
        32, nhead=2, dim_feedforward=64, dropout=0.0, batch_first=True
    )
    model = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
    return model(torch.randn(2, 8, 32)).pow(2).mean()

def chain(n):
    x = torch.randn(16, requires_grad=True)
    y = x
    for _ in range(n):
        y = y * 1.0001
    return y.sum()

def fan(n):
    x = torch.randn(16, requires_grad=True)
    return torch.stack([x * (1.0 + 1e-4 * i) for i in range(n)]).sum()

w = None
"""


@dataclass
class Case:
    name: str
    build: str  # Python expression, evaluated in the kernel
    painted_target_ms: float | None
    step_target_ms: float | None


@dataclass
class Row:
    case: Case
    nodes: int
    painted_ms: float
    step_ms: float

    def met(self) -> str:
        parts = []
        if self.case.painted_target_ms is not None:
            ok = self.painted_ms < self.case.painted_target_ms
            parts.append(f"painted {'yes' if ok else 'NO'}")
        if self.case.step_target_ms is not None:
            ok = self.step_ms < self.case.step_target_ms
            parts.append(f"step {'yes' if ok else 'NO'}")
        return "; ".join(parts) or "-"

    def target(self) -> str:
        parts = []
        if self.case.painted_target_ms is not None:
            parts.append(f"painted < {self.case.painted_target_ms / 1000:g} s")
        if self.case.step_target_ms is not None:
            parts.append(f"step < {self.case.step_target_ms:g} ms")
        return "; ".join(parts) or "-"


def cases(tiny: bool) -> list[Case]:
    if tiny:
        return [
            Case("TransformerEncoder 2 layers d32", "transformer(2)", None, None),
            Case("chain 300 nodes", "chain(298)", None, None),
        ]
    return [
        # The targets: 12-layer painted < 1.5 s; ~1k nodes step < 100 ms (the 12-layer
        # graph, 676 nodes, is the closest rung); 10k nodes painted < 3 s, step < 250 ms.
        Case("TransformerEncoder 12 layers d32", "transformer(12)", 1500, 100),
        Case("TransformerEncoder 48 layers d32", "transformer(48)", None, None),
        Case("chain 10k nodes", "chain(9998)", 3000, 250),
        Case("fan 10k nodes", "fan(9997)", 3000, 250),
    ]


# ---------------------------------------------------------------------------------- page helpers
KERNEL_IDLE = """(name) => {
  const w = window.jupyterapp?.shell?.currentWidget;
  return w?.context?.path === name && w?.sessionContext?.session?.kernel?.status === 'idle';
}"""
CELL_RAISED = """(i) => {
  const nb = window.jupyterapp?.shell?.currentWidget?.content;
  const outputs = nb?.widgets?.[i]?.model?.outputs?.toJSON?.() ?? [];
  return outputs.some((o) => o.output_type === 'error');
}"""
CELL_COUNT = """(i) => {
  const nb = window.jupyterapp?.shell?.currentWidget?.content;
  return nb?.widgets?.[i]?.model?.executionCount ?? null;
}"""
# Arm the paint watcher for cell i: t0 = the Shift+Enter keydown's timestamp; done = the first
# animation frame after the plot's node trace holds n points.
ARM_PAINT = """([i, n]) => {
  const st = (window.__agwPaint = { t0: null, ms: null });
  const cellEl = document.querySelectorAll('.jp-Notebook .jp-Cell')[i];
  const onKey = (e) => {
    if (e.key === 'Enter' && e.shiftKey && st.t0 === null) st.t0 = e.timeStamp;
  };
  document.addEventListener('keydown', onKey, true);
  const full = () => {
    const gd = cellEl.querySelector('.agw-root .agw-plot');
    const t = gd?.data?.find?.((d) => d.uid === 'agw-nodes');
    const canvas = gd?.querySelector('canvas.agw-overlay');
    const drawn = canvas && Number(canvas.dataset.painted) > 0;
    return !!(t && t.x && t.x.length === n && gd.querySelector('.main-svg') && drawn);
  };
  const tick = () => {
    if (st.t0 !== null && full()) {
      requestAnimationFrame(() => {
        st.ms = performance.now() - st.t0;
        document.removeEventListener('keydown', onKey, true);
      });
      return;
    }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}"""
# Arm the step watcher: t0 = the click on Step; done = first frame after "step k+1 /".
ARM_STEP = """([i, k]) => {
  const st = (window.__agwStep = { t0: null, ms: null });
  const root = document.querySelectorAll('.jp-Notebook .jp-Cell')[i].querySelector('.agw-root');
  const status = root.querySelector('.agw-status');
  const canvas = root.querySelector('canvas.agw-overlay');
  const painted = Number(canvas.dataset.painted);
  const want = `step ${k} /`;
  const onClick = (e) => { if (st.t0 === null) st.t0 = e.timeStamp; };
  root.addEventListener('click', onClick, true);
  const tick = () => {
    const repainted = Number(canvas.dataset.painted) > painted;
    if (st.t0 !== null && status.textContent.includes(want) && repainted) {
      requestAnimationFrame(() => {
        st.ms = performance.now() - st.t0;
        root.removeEventListener('click', onClick, true);
      });
      return;
    }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}"""


def cell(page, i: int):
    return page.locator(".jp-Notebook .jp-Cell").nth(i)


def run_cell(page, i: int, arm=None) -> None:
    """Shift+Enter in cell i (optionally arming a watcher first); wait until it has finished."""
    before = page.evaluate(CELL_COUNT, i)
    c = cell(page, i)
    c.locator(".cm-content").click()
    c.locator(".cm-content:focus").wait_for()
    if arm is not None:
        arm()
    page.keyboard.press("Shift+Enter")
    page.wait_for_function(
        "([i, b]) => { const nb = window.jupyterapp?.shell?.currentWidget?.content;"
        " const c = nb?.widgets?.[i]?.model?.executionCount; return c != null && c !== b; }",
        arg=[i, before],
        timeout=TIMEOUT * 1000,
    )
    if page.evaluate(CELL_RAISED, i):
        raise RuntimeError(f"cell {i} raised:\n{c.locator('.jp-OutputArea').inner_text()}")


def measure(page, case: Case, repeats: int, clicks: int) -> Row:
    # cell 0: prelude; cell 1: setup; cell 2: explore; cell 3: readout
    setup = (
        "if w is not None:\n    w.close()\n"
        f"loss = {case.build}\nN = len(aw.capture(loss).nodes)\nprint(N)"
    )
    page.evaluate(
        """([src]) => {
      const nb = window.jupyterapp.shell.currentWidget.content;
      nb.widgets[1].model.sharedModel.setSource(src);
    }""",
        [setup],
    )
    painted, steps = [], []
    n = 0
    for _ in range(repeats):
        run_cell(page, 1)
        n = int(cell(page, 1).locator(".jp-OutputArea").inner_text().strip().split()[-1])
        run_cell(page, 2, arm=lambda n=n: page.evaluate(ARM_PAINT, [2, n]))
        page.wait_for_function("() => window.__agwPaint.ms !== null", timeout=TIMEOUT * 1000)
        painted.append(page.evaluate("() => window.__agwPaint.ms"))
        root = cell(page, 2).locator(".agw-root")
        step_btn = root.get_by_role("button", name="Step", exact=True)
        step_btn.scroll_into_view_if_needed()
        page.wait_for_timeout(300)  # let the first paint settle before timing steps
        rt = []
        for k in range(1, clicks + 1):
            page.evaluate(ARM_STEP, [2, k])
            step_btn.click()
            page.wait_for_function("() => window.__agwStep.ms !== null", timeout=TIMEOUT * 1000)
            rt.append(page.evaluate("() => window.__agwStep.ms"))
        steps.append(statistics.median(rt))
        print(
            f"  {case.name}: painted {painted[-1]:.0f} ms, step median {steps[-1]:.1f} ms "
            f"(clicks {', '.join(f'{x:.0f}' for x in rt)})",
            flush=True,
        )
    return Row(case, n, statistics.median(painted), statistics.median(steps))


# ------------------------------------------------------------------------------------- results
def versions() -> str:
    out = []
    try:
        import jupyterlab

        out.append(f"JupyterLab {jupyterlab.__version__}")
    except ImportError:
        pass
    try:
        v = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True, timeout=20)
        out.append(v.stdout.strip())
    except (OSError, subprocess.TimeoutExpired):
        pass
    try:
        import torch

        out.append(f"torch {torch.__version__}")
    except ImportError:
        pass
    return ", ".join(out)


def section(rows: list[Row], repeats: int, clicks: int, argv: list[str], load: str) -> str:
    lines = [
        "## Browser: explore -> painted, step round trip (JupyterLab + headless chromium)",
        "",
        f"- commit: {commit()}",
        f"- machine: {platform.platform()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, {versions()}; headless chromium with "
        "`--disable-gpu` (software rendering; plotly switches to WebGL above its node threshold)",
        f"- load average (1 min) before/after: {load} (kernel, server and browser share the CPUs)",
        f"- rerun: `{' '.join(['python benchmarks/bench_browser.py', *argv])}`",
        "- method: one JupyterLab on 127.0.0.1 (temporary config), Playwright driving Debian "
        "chromium, viewport 1280x900. All times are measured in the page with "
        "`performance.now()` against the input event's timestamp. painted = Shift+Enter "
        'keydown on `w = aw.explore(loss, collapse="none"); w` (a fresh forward built '
        "untimed in the cell before) to the first animation frame after the widget's "
        "`.agw-plot` holds its `agw-nodes` trace with every node and the overlay canvas is "
        "painted; includes capture, layout, payload, comm transfer, plotly's draw and the "
        "canvas. step = a real mouse click on Step to the first animation frame after the "
        "status line shows the next position and the canvas was repainted (kernel round trip + "
        f"redraw). {repeats} repeats per graph (each a fresh forward and widget); painted = "
        f"median over repeats; step = median over repeats of the median of {clicks} clicks.",
        "",
        "| graph | nodes | painted ms | step round trip median ms | target | met? |",
        "|---|---:|---:|---:|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.case.name} | {r.nodes} | {r.painted_ms:.0f} | {r.step_ms:.1f} | "
            f"{r.target()} | {r.met()} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="tiny graphs, under a minute")
    parser.add_argument("--repeats", type=int, default=None, help="repeats per graph")
    parser.add_argument("--clicks", type=int, default=10, help="Step clicks per repeat")
    parser.add_argument("--results", type=Path, default=RESULTS, help="file to write the section")
    args = parser.parse_args(argv)
    repeats = args.repeats or (2 if args.tiny else 3)
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} not found: apt-get install chromium")
    load0 = os.getloadavg()[0]
    base = Path(tempfile.mkdtemp(prefix="agw-bench-browser-"))
    server = None
    rows: list[Row] = []
    try:
        server = start_lab(base, timeout=TIMEOUT)
        url = server.url
        server.write_notebook(
            "bench.ipynb", [PRELUDE, "pass", 'w = aw.explore(loss, collapse="none")\nw']
        )
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            page.set_default_timeout(TIMEOUT * 1000)
            page.goto(f"{url}/lab/tree/bench.ipynb?reset")
            page.wait_for_selector(".jp-Notebook .jp-Cell .cm-content")
            page.wait_for_function(KERNEL_IDLE, arg="bench.ipynb")
            run_cell(page, 0)
            for case in cases(args.tiny):
                row = measure(page, case, repeats, args.clicks)
                rows.append(row)
                print(
                    f"{case.name:36s} {row.nodes:6d} nodes  painted {row.painted_ms:7.0f} ms  "
                    f"step {row.step_ms:6.1f} ms  {row.target()}  {row.met()}",
                    flush=True,
                )
            browser.close()
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(base, ignore_errors=True)
    load1 = os.getloadavg()[0]
    body = section(rows, repeats, args.clicks, argv, f"{load0:.2f} / {load1:.2f}")
    write_section(SECTION, body, args.results)
    print(f"wrote {args.results}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
