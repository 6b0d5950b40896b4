"""Helpers for the browser tests: open a notebook, run a cell like a user, find the widget."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

from .conftest import ARTIFACTS, CELL_TIMEOUT, SERVER_TIMEOUT, LabServer

# ---------------------------------------------------------------------------------- page helpers
# The notebook we opened is the current widget, and its kernel is idle.
KERNEL_IDLE = """(name) => {
  const w = window.jupyterapp?.shell?.currentWidget;
  return w?.context?.path === name && w?.sessionContext?.session?.kernel?.status === 'idle';
}"""


def open_notebook(page, server: LabServer, name: str, cells: Sequence[str], app: str = "lab"):
    """Write a notebook, open it in JupyterLab (`app="lab"`) or Notebook 7 (`app="notebook"`),
    and wait for its kernel to be idle. `?reset` starts Lab from an empty workspace, so tabs of
    earlier tests do not come back."""
    server.write_notebook(name, cells)
    path = f"/lab/tree/{name}?reset" if app == "lab" else f"/notebooks/{name}"
    page.goto(server.url + path)
    page.wait_for_selector(".jp-Notebook .jp-Cell .cm-content", timeout=SERVER_TIMEOUT * 1000)
    page.wait_for_function(KERNEL_IDLE, arg=name, timeout=SERVER_TIMEOUT * 1000)
    return page


def cell(page, i: int):
    return page.locator(".jp-Notebook .jp-Cell").nth(i)


# Did cell i end with an exception? (read from the notebook model, not from the colours)
CELL_RAISED = """(i) => {
  const nb = window.jupyterapp?.shell?.currentWidget?.content;
  const outputs = nb?.widgets?.[i]?.model?.outputs?.toJSON?.() ?? [];
  return outputs.some((o) => o.output_type === 'error');
}"""


def run_cell(page, i: int, timeout: float = CELL_TIMEOUT) -> str:
    """Run cell `i` as a user does (click its editor, Shift+Enter); wait until it has finished and
    return the text of its output area. A cell that raises fails the test at once, with its
    traceback."""
    c = cell(page, i)
    prompt = c.locator(".jp-InputPrompt")
    before = prompt.inner_text().strip()
    deadline = time.monotonic() + timeout
    for _attempt in range(3):
        c.locator(".cm-content").click()
        c.locator(".cm-content:focus").wait_for()
        page.keyboard.press("Shift+Enter")
        # Queued ("[*]") or done ("[n]"); a keypress the page did not take leaves "[ ]" as it was.
        start = time.monotonic()
        while prompt.inner_text().strip() == before and time.monotonic() - start < 5:
            time.sleep(0.05)
        if prompt.inner_text().strip() != before:
            break
    while True:
        now = prompt.inner_text().strip()
        if re.search(r"\[\d+\]", now) and now != before:
            break
        if time.monotonic() > deadline:
            raise AssertionError(f"cell {i} did not finish in {timeout} s (prompt {now!r})")
        time.sleep(0.05)
    text = c.locator(".jp-OutputArea").inner_text()
    if page.evaluate(CELL_RAISED, i):
        raise AssertionError(f"cell {i} raised:\n{text}")
    return text


def widget_in(page, i: int):
    """The widget's root element in cell `i`'s output, once its canvas has painted and Python
    answered its size (the folds and direction fitted to it: `data-fitted`)."""
    root = cell(page, i).locator(".agw-root")
    root.locator(".agw-plot canvas.agw-canvas[data-painted]").first.wait_for(state="attached")
    root.first.scroll_into_view_if_needed()
    page.wait_for_function("r => r.dataset.fitted", arg=root.first.element_handle())
    return root


# ------------------------------------------------------------------------- widget helpers
# JS run in the page. The drawing is one canvas (js/src/canvas.js); after every paint it keeps
# what it painted on `canvas.agwPainted` (CSS px relative to the canvas's top-left) and counts
# paints in `canvas.dataset.painted`. PAINTED returns a JSON copy (no functions) with the
# canvas's page position, so a test turns canvas px into page px for the mouse.
CANVAS = "root => root.querySelector('.agw-plot canvas.agw-canvas')"
PAINTED = f"""root => {{
  const c = ({CANVAS})(root);
  const p = c && c.agwPainted;
  if (!p) return null;
  const r = c.getBoundingClientRect();
  return {{
    count: Number(c.dataset.painted), left: r.left, top: r.top, width: r.width, height: r.height,
    ppu: p.ppu, font: p.font, range: p.range, area: p.area, labels: p.labels, items: p.items,
    marks: p.marks,
    selectedEdgeMid: p.marks.selectedEdge >= 0 ? p.edgeMid(p.marks.selectedEdge) : null,
  }};
}}"""
# Resolves once no paint happened for `quiet` animation frames in a row (a resize, a state patch
# or an opening inspector paints on a later frame), at most ~`max` frames.
SETTLE = f"""async ([root, quiet, max]) => {{
  const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
  const count = () => Number(({CANVAS})(root)?.dataset.painted ?? 0);
  // Python is fitting the drawing to a new size (sizing.js): its answer may redraw it
  for (let k = 0; k < 600 && root.dataset.fitting; k++) await frame();
  let n = count(), still = 0;
  for (let k = 0; k < max && still < quiet; k++) {{
    await frame();
    const m = count();
    still = m === n ? still + 1 : 0;
    n = m;
  }}
  return n;
}}"""
RANGES = f"""root => {{
  const p = ({CANVAS})(root).agwPainted;
  return [p.range.x.map(Number), p.range.y.map(Number)];
}}"""
# What a pixel of the canvas shows, "rgb(r, g, b)", at canvas CSS px (x, y) (device pixels read
# back from the 2D context, so it is what the user sees, not what a test thinks was painted).
PIXELS = f"""([root, points]) => {{
  const c = ({CANVAS})(root);
  const ctx = c.getContext('2d');
  const dpr = c.width / c.clientWidth;
  return points.map(([x, y]) => {{
    const d = ctx.getImageData(Math.round(x * dpr), Math.round(y * dpr), 1, 1).data;
    return `rgb(${{d[0]}}, ${{d[1]}}, ${{d[2]}})`;
  }});
}}"""


def settle(root, quiet: int = 3, max_frames: int = 240) -> None:
    """Wait until the canvas stopped repainting (`quiet` frames without a paint)."""
    root.page.evaluate(SETTLE, [root.element_handle(), quiet, max_frames])


def painted(page, root, settled: bool = True) -> dict:
    """What the canvas painted last (see js/src/canvas.js `Painted`), plus `left`/`top` (its
    page position) and `count` (paints so far); by default once painting has settled."""
    if settled:
        settle(root)
    p = page.evaluate(PAINTED, root.element_handle())
    assert p is not None, "the canvas has not painted"
    return p


def item_labels(p: dict) -> dict[int, list[str]]:
    """Item index -> its painted label lines (name first) of the items labelled in `p`."""
    out: dict[int, list[str]] = {}
    for lab in sorted(p["labels"], key=lambda lab: lab["line"]):
        if lab["kind"] in ("node", "box"):
            out.setdefault(lab["index"], []).append(lab["text"])
    return out


def labels(page, root) -> list[str]:
    """Every labelled item's text as one string: the name, then its second line when painted
    ("Addmm", "2.weight [8, 8]", "layers.3 4 ops · 0%")."""
    return [" ".join(t) for t in item_labels(painted(page, root)).values()]


# Resolves once some labelled item's text ("name" or "name second-line") matches the regex.
LABEL_MATCHES = f"""([root, pattern]) => {{
  const p = ({CANVAS})(root)?.agwPainted;
  if (!p) return false;
  const rx = new RegExp(pattern);
  const byItem = new Map();
  for (const l of [...p.labels].sort((a, b) => a.line - b.line)) {{
    if (l.kind !== 'node' && l.kind !== 'box') continue;
    byItem.set(l.index, [...(byItem.get(l.index) ?? []), l.text]);
  }}
  return [...byItem.values()].some((t) => rx.test(t.join(' ')));
}}"""


def wait_label(root, pattern: str) -> None:
    """Wait until an item's painted label ("name" or "name second-line") matches the JS regex
    `pattern`."""
    root.page.wait_for_function(LABEL_MATCHES, arg=[root.element_handle(), pattern])


# Are the items labelled with these names painted left to right, in this order (box centres)?
LEFT_TO_RIGHT = f"""([root, names]) => {{
  const p = ({CANVAS})(root)?.agwPainted;
  if (!p) return false;
  const cx = (t) => {{
    const l = p.labels.find((l) => l.kind !== 'edge' && l.line === 0 && l.text === t);
    const b = l && p.items.find((b) => b.index === l.index && b.kind !== 'copy');
    return b ? b.x + b.w / 2 : NaN;
  }};
  const xs = names.map(cx);
  return xs.every((x, k) => k === 0 || x > xs[k - 1] + 1);
}}"""


def wait_left_to_right(root, names: Sequence[str]) -> None:
    """Wait until the items labelled `names` are painted left to right in that order (e.g.
    after switching the layout to "LR")."""
    root.page.wait_for_function(LEFT_TO_RIGHT, arg=[root.element_handle(), list(names)])


def label_problems(p: dict) -> list[str]:
    """What breaks "every item labelled, legibly" in painted `p` (issue 17): items fully in
    the plotting area without a name label, labels under 11 px, overlapping labels."""
    a = p["area"]
    inside = [
        b for b in p["items"]
        if b["x"] >= a["l"] - 0.5 and b["y"] >= a["t"] - 0.5
        and b["x"] + b["w"] <= a["l"] + a["w"] + 0.5 and b["y"] + b["h"] <= a["t"] + a["h"] + 0.5
    ]
    named = {(lab["kind"], lab["index"]) for lab in p["labels"] if lab["line"] == 0}
    out = [f"unlabelled {b['kind']} {b['index']}" for b in inside
           if (b["kind"], b["index"]) not in named]
    out += [f"{lab['text']!r} at {lab['font']:.1f} px" for lab in p["labels"]
            if lab["font"] < 11 - 1e-6]
    labs = p["labels"]
    for i, u in enumerate(labs):
        for v in labs[i + 1:]:
            if (u["x"] < v["x"] + v["w"] - 0.5 and v["x"] < u["x"] + u["w"] - 0.5
                    and u["y"] < v["y"] + v["h"] - 0.5 and v["y"] < u["y"] + u["h"] - 0.5):
                out.append(f"{u['text']!r} overlaps {v['text']!r}")
    return out


def item_index(p: dict, text: str, nth: int = 0) -> int:
    """The item whose name label reads `text` (exactly, or as its first word; the `nth` such
    item in painting order, -1 the last)."""
    found = [
        lab["index"]
        for lab in p["labels"]
        if lab["kind"] in ("node", "box") and lab["line"] == 0
        and (lab["text"] == text or lab["text"].split()[0] == text)
    ]
    assert found, f"no item labelled {text!r}: " + repr(list(item_labels(p).values()))
    return found[nth]


def item_box(p: dict, index: int) -> dict:
    """The painted box (canvas px) of item `index` (the item itself, not a leaf copy)."""
    boxes = [b for b in p["items"] if b["index"] == index and b["kind"] != "copy"]
    assert boxes, f"item {index} is not in view"
    return boxes[0]


def to_page(p: dict, x: float, y: float) -> dict:
    """Canvas px -> page px (for page.mouse)."""
    return {"x": p["left"] + x, "y": p["top"] + y}


def point(page, root, text: str, nth: int = 0) -> dict:
    """Where (page px) the centre of the item labelled `text` is, once the drawing is still
    (opening or closing the inspector resizes the canvas on a later frame, which moves every
    item)."""
    root.scroll_into_view_if_needed()
    p = painted(page, root)
    b = item_box(p, item_index(p, text, nth))
    return to_page(p, b["x"] + b["w"] / 2, b["y"] + b["h"] / 2)


def drag(page, root, dx: float, dy: float) -> None:
    """Drag the drawing by (dx, dy) px with the mouse, from a spot near the plotting area's left
    edge (a press that moves is a pan, never a click), and wait until it is painted there."""
    root.locator("canvas.agw-canvas").scroll_into_view_if_needed()
    p = painted(page, root)
    a = p["area"]
    x = p["left"] + a["l"] + 0.1 * a["w"]
    y = p["top"] + a["t"] + (0.85 if dy < 0 else 0.15) * a["h"]
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + dx / 2, y + dy / 2, steps=4)
    page.mouse.move(x + dx, y + dy, steps=4)
    page.mouse.up()
    page.wait_for_function(
        f"([root, n]) => Number(({CANVAS})(root).dataset.painted) > n",
        arg=[root.element_handle(), p["count"]],
    )


def reveal(
    page, root, text: str | None = None, count: int = 1, index: int | None = None,
    down: bool = True, tries: int = 12,
) -> dict:
    """Pan the drawing as a user does (drags of 40 % of the view, the drawing moving up: in
    "TB" backward runs down the page; `down=False`: left, for "LR") until `count` items labelled
    `text` (or item `index`, brought to the centre once partly in view) are in view and
    labelled; returns what was then painted."""
    for _ in range(tries):
        p = painted(page, root)
        labelled = item_labels(p)
        if index is not None:
            named = [index] if index in labelled else []
        else:
            named = [i for i, t in labelled.items() if t[0] == text or t[0].split()[0] == text]
        if len(named) >= count:
            return p
        a = p["area"]
        part = [b for b in p["items"] if b["index"] == index and b["kind"] != "copy"]
        if part:  # partly in view: bring its centre to the view's centre
            b = part[0]
            cx, cy = a["l"] + a["w"] / 2, a["t"] + a["h"] / 2
            drag(page, root, cx - b["x"] - b["w"] / 2, cy - b["y"] - b["h"] / 2)
        elif down:
            drag(page, root, 0, -0.4 * a["h"])
        else:
            drag(page, root, -0.4 * a["w"], 0)
    raise AssertionError(f"{count} x {text or index!r} not found by panning: {item_labels(p)}")


def click_item(page, root, text: str, nth: int = 0, shift: bool = False) -> None:
    """Click the item (node or folded box) labelled `text` with the mouse (shift: inspect a
    box instead of unfolding it)."""
    q = point(page, root, text, nth)
    if shift:
        page.keyboard.down("Shift")
    page.mouse.click(q["x"], q["y"])
    if shift:
        page.keyboard.up("Shift")


def pixels(page, root, points: Sequence[Sequence[float]]) -> list[str]:
    """The colours the canvas shows at canvas px `points`, as "rgb(r, g, b)"."""
    return page.evaluate(PIXELS, [root.element_handle(), [list(q) for q in points]])


def item_fills(page, root) -> dict[int, str]:
    """The fill each item in view is painted with: the pixel just inside its box's left edge,
    half way down (the label is centred, the outline is at most 3 px wide)."""
    p = painted(page, root)
    boxes = [b for b in p["items"] if b["kind"] != "copy" and b["w"] > 12]
    spots = [(b["x"] + 5, b["y"] + b["h"] / 2) for b in boxes]
    return dict(zip((b["index"] for b in boxes), pixels(page, root, spots), strict=True))


def background(page, root) -> str:
    """The colour the canvas paints its background with (its top-left pixel, in the margin)."""
    settle(root)
    return pixels(page, root, [(2, 2)])[0]


def button(root, name: str):
    return root.get_by_role("button", name=name, exact=True)


def status(root):
    return root.locator(".agw-status")


def after_paint(root) -> None:
    """Wait until the page has painted twice: the view draws a state change in the next
    animation frame, after the status line (set at once) already shows it."""
    root.page.evaluate(
        "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r())))"
    )


def edge_labels(root, settle_s: float = 3.0) -> list[str]:
    """The gradient values written on the edges, as the canvas painted them once painting
    settled (the same labels across two settled reads; at most `settle_s` seconds)."""
    page = root.page

    def read() -> list[str]:
        p = painted(page, root)
        return sorted(lab["text"] for lab in p["labels"] if lab["kind"] == "edge")

    deadline = time.monotonic() + settle_s
    seen = read()
    while time.monotonic() < deadline:
        now = read()
        if now == seen:
            break
        seen = now
    return seen


def wait_edge_labels(root, count: int) -> None:
    """Wait until the canvas paints exactly `count` edge value labels."""
    root.page.wait_for_function(
        f"root => ({CANVAS})(root)?.agwPainted?.labels"
        f".filter((l) => l.kind === 'edge').length === {count}",
        arg=root.element_handle(),
    )


def shown_count(root) -> int:
    """How many items (nodes and folded boxes) the drawing has, in or out of view: the
    "N shown" of the counts line."""
    m = re.search(r"(\d+) shown", root.locator(".agw-counts").inner_text())
    assert m, root.locator(".agw-counts").inner_text()
    return int(m.group(1))


def position_of(root) -> int:
    m = re.search(r"step (\d+) /", status(root).inner_text())
    assert m, status(root).inner_text()
    return int(m.group(1))


def save(root, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    root.screenshot(path=str(ARTIFACTS / name))


def items_in_view(root) -> list[str]:
    """What the drawing's accessible layer says of each item in view, in reading order
    ("AddmmBackward0, in fc1, done, gradient in ‖g‖ 0.42"): the offscreen list a screen
    reader and browser find read (js/src/a11y.js)."""
    settle(root)
    return root.locator(".agw-sr-list .agw-sr-item").all_text_contents()


def node_count(page, root) -> int:
    """How many items (nodes and folded boxes) the drawing shows, at least partly: read
    through its accessible layer."""
    return len(items_in_view(root))


def click_label(page, root, text: str, shift: bool = False) -> None:
    """Click the node (or module box) drawn with that label, once the drawing is still: opening
    or closing the inspector resizes the canvas on a later frame, which moves every item."""
    click_item(page, root, text, shift=shift)
