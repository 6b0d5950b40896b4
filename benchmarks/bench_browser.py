"""Benchmark: the widget's canvas drawing in a real JupyterLab, driven by Playwright in Debian's
chromium (issue 17, "Speed").

Run `python benchmarks/bench_browser.py` (full size, writes benchmarks/RESULTS.md) or with
`--tiny` (a 2-layer Transformer and a 300-node chain, under a minute). `--results PATH` writes
the section into another file. Every time is measured IN THE PAGE with performance.now(), from
the input event's timestamp to the first animation frame after the canvas repainted
(`canvas.dataset.painted` went up) with what the action asked for:

- painted: a setup cell builds a fresh forward (untimed) and counts the graph's nodes; then the
  cell `w = aw.explore(loss, collapse=...); w` is run with Shift+Enter: from the keydown to the
  first frame after the NEW widget's `canvas.agw-canvas` painted (capture, layout, payload,
  comm transfer, decode and the canvas paint).
- step round trip: real mouse clicks on "Step"; each from the click event to the first frame
  after the status line shows the next position and the canvas repainted. Per repeat the median
  of the clicks.
- unfold round trip (collapse="auto"): a real mouse click on the folded box's centre on the
  canvas; from the pointerup event to the first frame after the canvas painted the new graph
  (another item count), Python's unfold and relayout included.
- a watched training run (issue 31): a setup cell writes a synthetic `.awwatch` file (10,000
  steps over a real ~700-node graph, random norms; untimed); then `aw.load_watch(path)` is timed
  in the kernel ("load", `time.perf_counter()`), and the cell `watch = aw.load_watch(path);
  w = aw.explore(watch); w` from the Shift+Enter keydown to the first frame after the
  timeline's canvas painted ("load + explore -> timeline painted": the load, Python's timeline
  and the selected step's graph, transfer, decode, paint), and from the moment the front-end
  built the timeline to that frame ("timeline built -> painted").
- a long run (issue 39, `--long-run`): synthetic watches of 1,000 and 100,000 steps over a real
  GPT-2-config graph (`--long-nodes`, 2,000 nodes by default), written by bench_watch.py's
  `synthetic_watch` and loaded in a cell before (untimed in the page; the load is timed in the
  kernel); then `w = aw.explore(watch); w` from the Shift+Enter keydown to the first frame after
  the timeline's canvas painted ("explore -> timeline painted": Python's timeline from the
  stored summaries and the selected step's graph, transfer, decode, paint), from the front-end
  building the timeline to that frame ("timeline built -> painted", target <= 500 ms), and
  real mouse clicks on timeline columns (4 places across the grid), each from the click
  event to the first frame after the graph below repainted with the clicked step ("click ->
  step's graph", target <= 300 ms: the step's record read on demand, its graph laid out, sent
  and painted); per repeat the median of the clicks. Its own section (browser_long_run).
- semantic zoom (issue 30): on a graph drawn with every frame (collapse="none"), whose Fit
  stops at the legible scale, one wheel notch out at the view's centre folds the deepest
  frames; then wheel notches in (one every 400 ms) on a folded box until it opens. Each from
  the wheel event that asked for the change to the first frame after the canvas painted the
  new graph (another item count in the accessible list), the round trip to Python included.

Reported: the median over repeats (each repeat a fresh forward and widget).
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
#: The section `--watch-only` writes (the watched run alone).
WATCH_SECTION = "browser_watch"
#: The section `--long-run` writes (issue 39: a watch of 100,000 steps beside one of 1,000).
LONG_SECTION = "browser_long_run"
TIMEOUT = 120  # seconds, for the server, a kernel, a cell

PRELUDE = """\
import torch
import autograd_widget as aw
torch.manual_seed(0)

def transformer(layers):
    global model  # explore(..., model=model): module boxes and folds
    layer = torch.nn.TransformerEncoderLayer(
        32, nhead=2, dim_feedforward=64, dropout=0.0, batch_first=True
    )
    model = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
    return model(torch.randn(2, 8, 32)).pow(2).mean()

def tracked_transformer(layers):
    # transformer(layers), every node stamped with its module (aw.track): frames to fold
    global model
    layer = torch.nn.TransformerEncoderLayer(
        32, nhead=2, dim_feedforward=64, dropout=0.0, batch_first=True
    )
    model = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
    with aw.track(model):
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

w = model = None
"""


@dataclass
class Case:
    name: str
    build: str  # Python expression, evaluated in the kernel
    collapse: str
    #: what to measure, with its target in ms (None: measured, no target)
    targets: dict[str, float | None]


@dataclass
class Row:
    case: Case
    measure: str  # "painted", "step" or "unfold"
    nodes: int
    ms: float
    runs: list[float]

    def target(self) -> float | None:
        return self.case.targets.get(self.measure)

    def target_text(self) -> str:
        t = self.target()
        return "-" if t is None else f"<= {t:g} ms"

    def met(self) -> str:
        t = self.target()
        return "-" if t is None else ("yes" if self.ms <= t else "NO")


def watch_case(tiny: bool) -> Case:
    """The watched training run: (steps, graph nodes wanted) in `build`."""
    steps, nodes = (300, 90) if tiny else (10_000, 700)
    return Case(f"watch {steps} steps", f"{steps}, {nodes}", "auto",
                {"load": None if tiny else 2000.0, "loaded_painted": None,
                 "paint": None if tiny else 1000.0})  # fmt: skip


def cases(tiny: bool) -> list[Case]:
    if tiny:
        return [
            Case("TransformerEncoder 2 layers d32", "transformer(2)", "none",
                 {"painted": None, "step": None}),
            Case("TransformerEncoder 2 layers d32", "transformer(2)", "auto", {"unfold": None}),
            Case("chain 300 nodes", "chain(298)", "none", {"painted": None}),
            Case("TransformerEncoder 3 layers d32 (tracked)", "tracked_transformer(3)", "none",
                 {"fold_out": None, "open_in": None}),
        ]
    return [
        # The targets: step round trip <= 100 ms on a ~900-node model (16 layers: 893
        # nodes, every one drawn); unfold round trip <= 150 ms (the same model folded to one
        # box "layers.0–15 ×16", unfolded into 16 layer boxes); 10k nodes painted <= 1.5 s.
        Case("TransformerEncoder 16 layers d32", "transformer(16)", "none",
             {"painted": None, "step": 100}),
        Case("TransformerEncoder 16 layers d32", "transformer(16)", "auto",
             {"painted": None, "unfold": 150}),
        # Semantic zoom: each change <= 150 ms on a ~1,000-node model (18 layers: ~1,000
        # nodes), every frame drawn (collapse="none").
        Case("TransformerEncoder 18 layers d32 (tracked)", "tracked_transformer(18)", "none",
             {"fold_out": 150, "open_in": 150}),
        Case("chain 10k nodes", "chain(9998)", "none", {"painted": 1500, "step": None}),
        Case("fan 10k nodes", "fan(9997)", "none", {"painted": 1500, "step": None}),
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
# animation frame after a canvas that was not there when armed (the new widget's) has painted.
ARM_PAINT = """([i]) => {
  const st = (window.__agwPaint = { t0: null, ms: null });
  const cellEl = document.querySelectorAll('.jp-Notebook .jp-Cell')[i];
  const old = cellEl.querySelector('.agw-root canvas.agw-canvas');
  const onKey = (e) => {
    if (e.key === 'Enter' && e.shiftKey && st.t0 === null) st.t0 = e.timeStamp;
  };
  document.addEventListener('keydown', onKey, true);
  const tick = () => {
    const c = cellEl.querySelector('.agw-root canvas.agw-canvas');
    if (st.t0 !== null && c && c !== old && Number(c.dataset.painted || 0) > 0 && c.agwPainted) {
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
# Arm the step watcher: t0 = the click on Step; done = first frame after "step k /" is shown
# and the canvas repainted.
ARM_STEP = """([i, k]) => {
  const st = (window.__agwStep = { t0: null, ms: null });
  const root = document.querySelectorAll('.jp-Notebook .jp-Cell')[i].querySelector('.agw-root');
  const status = root.querySelector('.agw-status');
  const canvas = root.querySelector('canvas.agw-canvas');
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
# Arm the unfold watcher: returns the page coordinates of a folded box fully in view (null when
# none); t0 = the pointerup on the canvas; done = first frame after a paint of another graph
# (another item count).
ARM_UNFOLD = """([i]) => {
  const st = (window.__agwUnfold = { t0: null, ms: null });
  const root = document.querySelectorAll('.jp-Notebook .jp-Cell')[i].querySelector('.agw-root');
  const canvas = root.querySelector('canvas.agw-canvas');
  const p = canvas.agwPainted;
  const a = p.area;
  const box = p.items.find((b) => b.kind === 'box' && b.x >= a.l && b.y >= a.t
    && b.x + b.w <= a.l + a.w && b.y + b.h <= a.t + a.h);
  if (!box) return null;
  const painted = Number(canvas.dataset.painted);
  const n = p.items.length;
  const onUp = (e) => { if (st.t0 === null) st.t0 = e.timeStamp; };
  canvas.addEventListener('pointerup', onUp, true);
  const tick = () => {
    const q = canvas.agwPainted;
    if (st.t0 !== null && Number(canvas.dataset.painted) > painted && q.items.length !== n) {
      requestAnimationFrame(() => {
        st.ms = performance.now() - st.t0;
        canvas.removeEventListener('pointerup', onUp, true);
      });
      return;
    }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
  const r = canvas.getBoundingClientRect();
  return { x: r.left + box.x + box.w / 2, y: r.top + box.y + box.h / 2 };
}"""


# Arm the semantic-zoom watcher: t0 = the last wheel event on the canvas; done = the first frame
# after a paint of another graph (the accessible list's "of N items" changed).
ARM_SEMZOOM = """([i]) => {
  const st = (window.__agwSem = { t0: null, ms: null });
  const root = document.querySelectorAll('.jp-Notebook .jp-Cell')[i].querySelector('.agw-root');
  const canvas = root.querySelector('canvas.agw-canvas');
  const total = () => (/of (\\d+) items/.exec(root.querySelector('.agw-sr-list')
    ?.getAttribute('aria-label') || '') || [])[1];
  const n = total();
  const painted = Number(canvas.dataset.painted);
  const onWheel = (e) => { st.t0 = e.timeStamp; };
  canvas.addEventListener('wheel', onWheel, true);
  const tick = () => {
    if (st.t0 !== null && total() !== n && Number(canvas.dataset.painted) > painted) {
      requestAnimationFrame(() => {
        st.ms = performance.now() - st.t0;
        canvas.removeEventListener('wheel', onWheel, true);
      });
      return;
    }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}"""


def semantic_zoom(page, root) -> tuple[float, float]:
    """(fold out ms, open in ms): see the module docstring."""
    canvas = root.locator("canvas.agw-canvas")
    canvas.scroll_into_view_if_needed()
    box = canvas.bounding_box()
    top, bottom = max(box["y"], 0), min(box["y"] + box["height"], page.viewport_size["height"])
    page.mouse.move(box["x"] + box["width"] / 2, (top + bottom) / 2)  # its part on screen
    page.evaluate(ARM_SEMZOOM, [2])
    page.mouse.wheel(0, 200)
    out = wait_ms(page, "__agwSem")
    page.wait_for_timeout(400)
    find_box = """(c) => { const p = c.agwPainted, a = p.area;
          const b = p.items.find((b) => b.kind === 'box');
          if (!b) return null;
          const x0 = Math.max(b.x, a.l), x1 = Math.min(b.x + b.w, a.l + a.w);
          const y0 = Math.max(b.y, a.t), y1 = Math.min(b.y + b.h, a.t + a.h);
          return [(x0 + x1) / 2, (y0 + y1) / 2]; }"""
    spot = page.evaluate(find_box, canvas.element_handle())
    for _ in range(3):  # no box in view yet: the next level folds (untimed)
        if spot is not None:
            break
        page.evaluate(ARM_SEMZOOM, [2])
        page.mouse.wheel(0, 200)
        wait_ms(page, "__agwSem")
        page.wait_for_timeout(400)
        spot = page.evaluate(find_box, canvas.element_handle())
    if spot is None:
        raise RuntimeError("no folded box in view after folding")
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + spot[0], box["y"] + spot[1])
    page.evaluate(ARM_SEMZOOM, [2])
    for _ in range(60):
        page.mouse.wheel(0, -150)
        page.wait_for_timeout(400)
        if page.evaluate("() => window.__agwSem.ms !== null"):
            break
    return out, wait_ms(page, "__agwSem")


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


def wait_ms(page, key: str) -> float:
    page.wait_for_function(f"() => window.{key}.ms !== null", timeout=TIMEOUT * 1000)
    return float(page.evaluate(f"() => window.{key}.ms"))


def measure(page, case: Case, repeats: int, clicks: int) -> list[Row]:
    # cell 0: prelude; cell 1: setup; cell 2: explore
    setup = (
        "if w is not None:\n    w.close()\n"
        f"model = None\nloss = {case.build}\nN = len(aw.capture(loss).nodes)\nprint(N)"
    )
    show = f'w = aw.explore(loss, model=model, collapse="{case.collapse}")\nw'
    page.evaluate(
        """([a, b]) => {
      const nb = window.jupyterapp.shell.currentWidget.content;
      nb.widgets[1].model.sharedModel.setSource(a);
      nb.widgets[2].model.sharedModel.setSource(b);
    }""",
        [setup, show],
    )
    runs: dict[str, list[float]] = {m: [] for m in case.targets}
    n = 0
    for _ in range(repeats):
        run_cell(page, 1)
        n = int(cell(page, 1).locator(".jp-OutputArea").inner_text().strip().split()[-1])
        run_cell(page, 2, arm=lambda: page.evaluate(ARM_PAINT, [2]))
        painted = wait_ms(page, "__agwPaint")
        if "painted" in runs:
            runs["painted"].append(painted)
        root = cell(page, 2).locator(".agw-root")
        root.locator("canvas.agw-canvas").scroll_into_view_if_needed()
        page.wait_for_timeout(300)  # let the first paint settle before timing
        note = [f"painted {painted:.0f} ms"]
        if "step" in runs:
            step_btn = root.get_by_role("button", name="Step", exact=True)
            rt = []
            for k in range(1, clicks + 1):
                page.evaluate(ARM_STEP, [2, k])
                step_btn.click()
                rt.append(wait_ms(page, "__agwStep"))
            runs["step"].append(statistics.median(rt))
            note.append(f"step median {runs['step'][-1]:.1f} ms "
                        f"(clicks {', '.join(f'{x:.0f}' for x in rt)})")
        if "unfold" in runs:
            at = page.evaluate(ARM_UNFOLD, [2])
            if at is None:
                raise RuntimeError(f"{case.name}: no folded box in view to unfold")
            page.mouse.click(at["x"], at["y"])
            runs["unfold"].append(wait_ms(page, "__agwUnfold"))
            note.append(f"unfold {runs['unfold'][-1]:.0f} ms")
        if "fold_out" in runs:
            out, into = semantic_zoom(page, root)
            runs["fold_out"].append(out)
            runs["open_in"].append(into)
            note.append(f"semantic zoom: fold out {out:.0f} ms, open in {into:.0f} ms")
        print(f"  {case.name} (collapse={case.collapse}): {'; '.join(note)}", flush=True)
    return [Row(case, m, n, statistics.median(v), v) for m, v in runs.items()]


WATCH_SETUP = """\
import sys, time, tempfile, pathlib
sys.path.insert(0, {bench!r})
import bench_watch
if w is not None:
    w.close()
steps, nodes = {build}
watch_path, N, _ = bench_watch.synthetic_watch(nodes, steps, pathlib.Path(tempfile.mkdtemp()))
print(N)"""
WATCH_SHOW = """\
t0 = time.perf_counter()
watch = aw.load_watch(watch_path)
print("load", (time.perf_counter() - t0) * 1000)
w = aw.explore(watch)
w"""
# Arm the timeline watcher for cell i: t0 = the Shift+Enter keydown; done = the first frame
# after a timeline canvas that was not there when armed has painted; `built` = when the
# front-end made that timeline (its canvas appeared).
ARM_TIMELINE = """([i]) => {
  const st = (window.__agwTl = { t0: null, built: null, ms: null, paint: null });
  const cellEl = document.querySelectorAll('.jp-Notebook .jp-Cell')[i];
  const old = cellEl.querySelector('canvas.agw-tl-canvas');
  const onKey = (e) => {
    if (e.key === 'Enter' && e.shiftKey && st.t0 === null) st.t0 = e.timeStamp;
  };
  document.addEventListener('keydown', onKey, true);
  const seen = new MutationObserver(() => {
    const c = cellEl.querySelector('canvas.agw-tl-canvas');
    if (c && c !== old && st.built === null) st.built = performance.now();
  });
  seen.observe(cellEl, { childList: true, subtree: true });
  const tick = () => {
    const c = cellEl.querySelector('canvas.agw-tl-canvas');
    if (st.t0 !== null && c && c !== old && Number(c.dataset.painted || 0) > 0) {
      requestAnimationFrame(() => {
        const now = performance.now();
        st.ms = now - st.t0;
        st.paint = now - (st.built ?? st.t0);
        seen.disconnect();
        document.removeEventListener('keydown', onKey, true);
      });
      return;
    }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}"""


def measure_watch(page, case: Case, repeats: int, clicks: int) -> list[Row]:
    """The watched run: the kernel's load, explore -> timeline painted, and the timeline's own
    paint (see the module docstring)."""
    del clicks
    setup = WATCH_SETUP.format(bench=str(Path(__file__).parent), build=case.build)
    page.evaluate(
        """([a, b]) => {
      const nb = window.jupyterapp.shell.currentWidget.content;
      nb.widgets[1].model.sharedModel.setSource(a);
      nb.widgets[2].model.sharedModel.setSource(b);
    }""",
        [setup, WATCH_SHOW],
    )
    runs: dict[str, list[float]] = {"load": [], "loaded_painted": [], "paint": []}
    run_cell(page, 1)
    n = int(cell(page, 1).locator(".jp-OutputArea").inner_text().strip().split()[-1])
    for _ in range(repeats):
        run_cell(page, 2, arm=lambda: page.evaluate(ARM_TIMELINE, [2]))
        page.wait_for_function("() => window.__agwTl.ms !== null", timeout=TIMEOUT * 1000)
        st = page.evaluate("() => window.__agwTl")
        out = cell(page, 2).locator(".jp-OutputArea").inner_text()
        load_ms = float(next(ln.split()[1] for ln in out.splitlines() if ln.startswith("load")))
        runs["load"].append(load_ms)
        runs["loaded_painted"].append(float(st["ms"]))
        runs["paint"].append(float(st["paint"]))
        print(f"  {case.name}: load {load_ms:.0f} ms; load + explore -> timeline painted "
              f"{st['ms']:.0f} ms; timeline paint {st['paint']:.0f} ms", flush=True)
    return [Row(case, m, n, statistics.median(v), v) for m, v in runs.items()]


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


WHAT = {
    "painted": "explore -> painted",
    "step": "step round trip",
    "unfold": "unfold round trip",
    "load": "aw.load_watch (kernel)",
    "loaded_painted": "load + explore -> timeline painted",
    "paint": "timeline built -> painted",
    "explore_painted": "explore -> timeline painted",
    "click_graph": "click -> step's graph",
    "fold_out": "semantic zoom out: fold",
    "open_in": "semantic zoom in: open",
}


SEMZOOM_METHOD = (
    ' semantic zoom (issue 30; a tracked model drawn with every frame, collapse="none", whose'
    " Fit stops at the legible scale): out = one wheel notch out at the view's centre to the "
    'first frame after the canvas painted the graph with its deepest frames folded; in = '
    'wheel notches in (400 ms apart) on a folded box in view, from the notch that opened it '
    'to the first frame after the opened graph painted; both include the round trip to Python'
    ' (fold or unfold, relayout, payload).'
)


def section(rows: list[Row], repeats: int, clicks: int, argv: list[str], load: str) -> str:
    if rows and any(r.measure == "click_graph" for r in rows):
        from bench_browser_long import long_section

        return long_section(rows, repeats, clicks, argv, load)
    if rows and all(r.case.name.startswith("watch") for r in rows):
        return watch_section(rows, repeats, argv, load)
    lines = [
        "## Browser: the canvas drawing, explore -> painted, step and unfold round trips "
        "(JupyterLab + headless chromium)",
        "",
        f"- commit: {commit()}",
        f"- machine: {platform.platform()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, {versions()}; headless chromium with "
        "`--disable-gpu` (software 2D canvas)",
        f"- load average (1 min) before/after: {load} (kernel, server and browser share the CPUs)",
        f"- rerun: `{' '.join(['python benchmarks/bench_browser.py', *argv])}`",
        "- method: one JupyterLab on 127.0.0.1 (temporary config), Playwright driving Debian "
        "chromium, viewport 1280x900, the widget's canvas renderer (js/src/canvas.js). Every "
        "time is measured in the page with `performance.now()` from the input event's timestamp "
        "to the first animation frame after the canvas repainted (`canvas.dataset.painted` "
        "went up) with what was asked. painted = Shift+Enter keydown on "
        "`w = aw.explore(loss, model=model, collapse=...); w` (a fresh forward built untimed "
        "in the cell before) to the first frame after the new widget's canvas painted "
        "(capture, layout, payload, comm transfer, decode, paint). step = a real mouse click "
        "on Step to the first frame after the status line shows the next position and the "
        "canvas repainted "
        f"(kernel round trip + redraw); per repeat the median of {clicks} clicks. unfold = a "
        'real mouse click on the folded box (collapse="auto") to the first frame after the '
        "canvas painted the unfolded graph (Python's unfold, relayout and payload included). "
        f"{repeats} repeats per graph, each a fresh forward and widget; reported: the median "
        "over repeats (every repeat listed)."
        + (SEMZOOM_METHOD if any(r.measure == "fold_out" for r in rows) else ""),
        "",
        "| graph | nodes | collapse | measure | median ms | repeats ms | target | met? |",
        "|---|---:|---|---|---:|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.case.name} | {r.nodes} | {r.case.collapse} | {WHAT[r.measure]} | "
            f"{r.ms:.1f} | {', '.join(f'{x:.1f}' for x in r.runs)} | {r.target_text()} | "
            f"{r.met()} |"
        )
    return "\n".join(lines) + "\n"


def watch_section(rows: list[Row], repeats: int, argv: list[str], load: str) -> str:
    """The `--watch-only` section: a watched run's load and timeline."""
    lines = [
        "## Browser: a watched training run's timeline, aw.explore(watch) (JupyterLab + headless "
        "chromium)",
        "",
        f"- commit: {commit()}",
        f"- machine: {platform.platform()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, {versions()}; headless chromium with "
        "`--disable-gpu` (software 2D canvas)",
        f"- load average (1 min) before/after: {load} (kernel, server and browser share the CPUs)",
        f"- rerun: `{' '.join(['python benchmarks/bench_browser.py', *argv])}`",
        "- method: a setup cell writes a synthetic `.awwatch` file (10,000 watched steps over a "
        "real GPT-2-config graph, random norms; untimed). Then the cell `watch = "
        "aw.load_watch(path); w = aw.explore(watch); w` is run with Shift+Enter: the load is "
        "timed in the kernel (`time.perf_counter()`); in the page, with `performance.now()`, "
        "from the keydown to the first animation frame after the timeline's canvas painted "
        "(the load, Python's timeline and the selected step's graph, transfer, decode, paint), "
        "and from the moment the front-end built the timeline (its canvas appeared) to that "
        f"frame. {repeats} repeats; reported: the median (every repeat listed).",
        "",
        *row_table(rows),
    ]
    return "\n".join(lines) + "\n"


def row_table(rows: list[Row]) -> list[str]:
    """A section's table: per run and measure, the median, every repeat, the target, met?"""
    return ["| run | graph nodes | measure | median ms | repeats ms | target | met? |",
            "|---|---:|---|---:|---|---|---|",
            *(f"| {r.case.name} | {r.nodes} | {WHAT[r.measure]} | {r.ms:.1f} | "
              f"{', '.join(f'{x:.1f}' for x in r.runs)} | {r.target_text()} | {r.met()} |"
              for r in rows)]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="tiny graphs, under a minute")
    parser.add_argument("--repeats", type=int, default=None, help="repeats per graph")
    parser.add_argument("--clicks", type=int, default=10, help="Step clicks per repeat")
    parser.add_argument("--results", type=Path, default=RESULTS, help="file to write the section")
    parser.add_argument("--watch-only", action="store_true",
                        help="only the watched run (its own section, browser_watch)")
    parser.add_argument("--long-run", action="store_true",
                        help="only issue 39's long run: watches of 1,000 and 100,000 steps "
                             "(its own section, browser_long_run)")  # fmt: skip
    parser.add_argument("--long-nodes", type=int, default=2000,
                        help="graph nodes of the long run's synthetic watch (default 2000)")
    parser.add_argument("--only", default=None, help="only the graphs whose name contains this")
    parser.add_argument("--section", default=SECTION,
                        help="the RESULTS.md section to write (default: browser)")
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
        server.write_notebook("bench.ipynb", [PRELUDE, "pass", "pass", "pass"])
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            page.set_default_timeout(TIMEOUT * 1000)
            page.goto(f"{url}/lab/tree/bench.ipynb?reset")
            page.wait_for_selector(".jp-Notebook .jp-Cell .cm-content")
            page.wait_for_function(KERNEL_IDLE, arg="bench.ipynb")
            run_cell(page, 0)
            todo = [] if args.watch_only or args.long_run else cases(args.tiny)
            todo = [c for c in todo if not args.only or args.only in c.name]
            if args.long_run:
                from bench_browser_long import long_cases, measure_long

                todo = long_cases(args.long_nodes)
            elif not args.only:
                todo.append(watch_case(args.tiny))
            for case in todo:
                run = (measure_watch if case.name.startswith("watch") else measure)
                if "click_graph" in case.targets:
                    run = measure_long
                for row in run(page, case, repeats, args.clicks):
                    rows.append(row)
                    print(
                        f"{case.name:34s} {case.collapse:5s} {row.nodes:6d} nodes  "
                        f"{WHAT[row.measure]:20s} {row.ms:8.1f} ms  {row.target_text()}  "
                        f"{row.met()}",
                        flush=True,
                    )
            browser.close()
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(base, ignore_errors=True)
    load1 = os.getloadavg()[0]
    body = section(rows, repeats, args.clicks, argv, f"{load0:.2f} / {load1:.2f}")
    name = LONG_SECTION if args.long_run else WATCH_SECTION if args.watch_only else args.section
    write_section(name, body, args.results)
    print(f"wrote {args.results}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
