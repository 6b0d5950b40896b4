"""Benchmark: issue 39's long run in a real JupyterLab, a part of bench_browser.py
(`python benchmarks/bench_browser.py --long-run`, its own RESULTS.md section browser_long_run):
synthetic watches of 1,000 and 100,000 steps over the same real graph, written through the
project's writer (bench_watch.py `synthetic_watch`); the kernel's load, explore -> timeline
painted, the timeline's own first paint (from the front-end building it to the first frame
after it painted: target <= 500 ms) and a click on a timeline column -> that step's graph below
(target <= 300 ms), measured in the page as bench_browser.py measures (see its docstring).
"""

from __future__ import annotations

import os
import platform
import statistics
from pathlib import Path

from _results import commit
from bench_browser import (
    ARM_TIMELINE,
    TIMEOUT,
    WATCH_SETUP,
    Case,
    Row,
    cell,
    row_table,
    run_cell,
    versions,
    wait_ms,
)


def long_cases(nodes: int) -> list[Case]:
    """Issue 39's long run: the same graph watched 1,000 and 100,000 steps."""
    return [Case(f"watch {steps:,} steps", f"{steps}, {nodes}", "auto",
                 {"load": None, "explore_painted": None, "paint": 500.0, "click_graph": 300.0})
            for steps in (1_000, 100_000)]  # fmt: skip


LONG_SETUP = """\
t0 = time.perf_counter()
watch = aw.load_watch(watch_path)
print("load", (time.perf_counter() - t0) * 1000)"""
LONG_SHOW = "w = aw.explore(watch)\nw"
# Arm the click watcher for cell i: t0 = the click on the timeline's canvas; done = the first
# frame after the graph's canvas below painted (its paint count went up) and the timeline's step
# line names another step (the clicked one).
ARM_CLICK = """([i]) => {
  const st = (window.__agwClick = { t0: null, ms: null });
  const cellEl = document.querySelectorAll('.jp-Notebook .jp-Cell')[i];
  const tl = cellEl.querySelector('canvas.agw-tl-canvas');
  const graph = cellEl.querySelector('canvas.agw-canvas');
  const line = cellEl.querySelector('.agw-tl-step');
  const before = Number(graph.dataset.painted || 0);
  const was = line.textContent;
  tl.addEventListener('click', (e) => { st.t0 = e.timeStamp; }, { once: true, capture: true });
  const tick = () => {
    if (st.t0 !== null && Number(graph.dataset.painted || 0) > before && line.textContent !== was) {
      requestAnimationFrame(() => { st.ms = performance.now() - st.t0; });
      return;
    }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}"""


def measure_long(page, case: Case, repeats: int, clicks: int) -> list[Row]:
    """A long run (issue 39): the kernel's load, explore -> timeline painted, the timeline's
    own paint and click -> a step's graph (see the module docstring)."""
    setup = WATCH_SETUP.format(bench=str(Path(__file__).parent), build=case.build)
    cells = [setup, LONG_SETUP, LONG_SHOW]
    page.evaluate(
        """(cells) => {
      const nb = window.jupyterapp.shell.currentWidget.content;
      cells.forEach((c, k) => nb.widgets[k + 1].model.sharedModel.setSource(c));
    }""",
        cells,
    )
    runs: dict[str, list[float]] = {m: [] for m in case.targets}
    run_cell(page, 1)
    n = int(cell(page, 1).locator(".jp-OutputArea").inner_text().strip().split()[-1])
    for _ in range(repeats):
        run_cell(page, 2)
        out = cell(page, 2).locator(".jp-OutputArea").inner_text()
        runs["load"].append(float(next(ln.split()[1] for ln in out.splitlines()
                                       if ln.startswith("load"))))  # fmt: skip
        run_cell(page, 3, arm=lambda: page.evaluate(ARM_TIMELINE, [3]))
        page.wait_for_function("() => window.__agwTl.ms !== null", timeout=TIMEOUT * 1000)
        st = page.evaluate("() => window.__agwTl")
        runs["explore_painted"].append(float(st["ms"]))
        runs["paint"].append(float(st["paint"]))
        tl = cell(page, 3).locator("canvas.agw-tl-canvas")
        tl.scroll_into_view_if_needed()
        cell(page, 3).locator("canvas.agw-canvas[data-painted]").wait_for()
        page.wait_for_timeout(500)  # let the first paints settle before timing
        box = tl.bounding_box()
        rt = []
        for k in range(clicks):
            page.evaluate(ARM_CLICK, [3])
            page.mouse.click(box["x"] + box["width"] * (0.2 + 0.6 * (k % 4) / 3 + 0.01 * (k // 4)),
                             box["y"] + box["height"] * 0.6)  # fmt: skip
            rt.append(wait_ms(page, "__agwClick"))
            page.wait_for_timeout(200)
        runs["click_graph"].append(statistics.median(rt))
        print(f"  {case.name}: load {runs['load'][-1]:.0f} ms; explore -> timeline painted "
              f"{st['ms']:.0f} ms (timeline paint {st['paint']:.0f} ms); click -> step's graph "
              f"median {runs['click_graph'][-1]:.0f} ms ({', '.join(f'{x:.0f}' for x in rt)})",
              flush=True)  # fmt: skip
    return [Row(case, m, n, statistics.median(v), v) for m, v in runs.items()]


def long_section(rows: list[Row], repeats: int, clicks: int, argv: list[str], load: str) -> str:
    """The `--long-run` section: a watch of 100,000 steps beside one of 1,000 (issue 39)."""
    lines = [
        "## Browser: a long run's timeline and a clicked step's graph, 1,000 vs 100,000 steps "
        "(JupyterLab + headless chromium)",
        "",
        f"- commit: {commit()}",
        f"- machine: {platform.platform()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, {versions()}; headless chromium with "
        "`--disable-gpu` (software 2D canvas)",
        f"- load average (1 min) before/after: {load} (kernel, server and browser share the CPUs)",
        f"- rerun: `{' '.join(['python benchmarks/bench_browser.py', *argv])}`",
        "- method: per run length, a setup cell writes a synthetic `.awwatch` file through the "
        "project's writer (benchmarks/bench_watch.py `synthetic_watch`: random norms over a real "
        "GPT-2-config graph; untimed), a cell loads it (`aw.load_watch`, timed in the kernel), "
        "then the cell `w = aw.explore(watch); w` is run with Shift+Enter: in the page, with "
        "`performance.now()`, from the keydown to the first animation frame after the "
        "timeline's canvas painted (Python's timeline and the selected step's graph, transfer, "
        "decode, paint), and from the moment the front-end built the timeline to that frame. "
        f"Then {clicks} real mouse clicks on timeline columns across the grid, each from the "
        "click event to the first frame after the graph below repainted and the timeline names "
        f"the clicked step (its record read on demand); per repeat their median. {repeats} "
        "repeats, each a fresh widget; reported: the median (every repeat listed).",
        "",
        *row_table(rows),
    ]
    return "\n".join(lines) + "\n"
