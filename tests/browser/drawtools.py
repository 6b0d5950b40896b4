"""Helpers of the drawing tests (test_drawing_browser.py): six real models in plain torch, the
canvas's paint record (`canvas.agwPainted`) read back from the page, and the checks run on it in
Python: every item fully in view labelled inside its box, fonts legible, no two labels
overlapping, step marks and status line, label pixels really painted.

The kernel side (`MODELS`) is one cell of source: each builder returns `(model, loss)` with fresh
random weights; `EXPECT` prints, as JSON, what the Python side says the page must show (the
visible items in payload order, the stepper's position, what ran and what is next).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from .conftest import ARTIFACTS, CELL_TIMEOUT
from .labtools import cell, run_cell

__all__ = [
    "EXPECT",
    "LEGIBLE_PX",
    "MODELS",
    "Painted",
    "click_item",
    "expected",
    "label_problems",
    "mark_problems",
    "overlaps",
    "painted",
    "pixel_problems",
    "save_state",
    "settle",
    "widget_root",
]

#: The smallest label font the drawing may paint (js/src/camera.js LEGIBLE_PX).
LEGIBLE_PX = 11
#: Label boxes may overlap by this much (px) without counting (anti-aliasing, rounding).
OVERLAP_TOL = 0.5
#: Label placement constants (js/src/labelplace.js): an op name too long for its box keeps a
#: legible font and spills evenly into the gap beside the box, at most pad + spill units per side.
BOX_PAD_UNITS = 0.3
SPILL_UNITS = 0.4

MODELS = '''\
import json, math
import torch
import torch.nn as nn
import torch.nn.functional as F
import autograd_widget as aw
from autograd_widget.view.labels import node_title

torch.manual_seed(0)


class BasicBlock(nn.Module):
    """Conv-BN-ReLU, Conv-BN, the skip added, ReLU: the CNN's identical block."""

    def __init__(self, c):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c)
        self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c)

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(h)) + x)


def cnn():
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), *[BasicBlock(8) for _ in range(4)],
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))
    return model, model(torch.randn(2, 3, 8, 8)).pow(2).mean()


def transformer():
    layer = nn.TransformerEncoderLayer(32, nhead=2, dim_feedforward=64, dropout=0.0,
                                       batch_first=True)
    model = nn.TransformerEncoder(layer, 6, enable_nested_tensor=False)
    return model, model(torch.randn(2, 8, 32)).pow(2).mean()


class Attention(nn.Module):
    """Causal self-attention by explicit matmuls, a mask and softmax."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.qkv, self.proj = heads, nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        causal = torch.tril(torch.ones(t, t, dtype=torch.bool))
        att = att.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1, self.attn = nn.LayerNorm(d), Attention(d, heads)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """GPT-2-like: token + position embedding, pre-LN blocks, tied LM head."""

    def __init__(self, vocab=50, d=32, heads=2, layers=3, ctx=16):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, idx, targets):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for blk in self.blocks:
            x = blk(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def gpt2():
    model = GPT()
    return model, model(torch.randint(0, 50, (2, 8)), torch.randint(0, 50, (2, 8)))


class Unrolled(nn.Module):
    """One RNNCell applied over 12 time steps."""

    def __init__(self):
        super().__init__()
        self.cell, self.head = nn.RNNCell(8, 16), nn.Linear(16, 1)

    def forward(self, xs):
        h = torch.zeros(xs.shape[1], 16)
        for x in xs:
            h = self.cell(x, h)
        return self.head(h).pow(2).mean()


def rnn():
    model = Unrolled()
    return model, model(torch.randn(12, 3, 8))


def mlp_blocks():
    return nn.Sequential(nn.Sequential(*[nn.Sequential(nn.Linear(8, 8), nn.Tanh())
                                         for _ in range(12)]), nn.Linear(8, 2))


def nan():
    model = mlp_blocks()
    h = model(torch.randn(2, 8))
    return model, torch.sqrt(h - 10.0).sum()  # every value negative: NaN gradients


def inplace():
    model = mlp_blocks()
    s = torch.sigmoid(model(torch.randn(2, 8)))
    s.mul_(2.0)  # SigmoidBackward0 saved its output: stepping it raises
    return model, s.sum()


def expect(w):
    """What the page must show, as JSON."""
    st = w.stepper
    pos, order, graph = st.position, st.order, w.graph
    title = lambda i: node_title(graph.nodes[order[i]]) if 0 <= i < len(order) else None
    print(json.dumps({
        "visible": list(w.visible), "pos": pos, "total": len(order),
        "ran_id": order[pos - 1] if pos > 0 else None,
        "next_id": order[pos] if pos < len(order) else None,
        "ran": title(pos - 1), "next": title(pos), "status": w._state.get("status"),
        "last_item": w._state.get("last"), "next_item": w._state.get("next"),
    }))
'''

#: The readout cell: `expect(w)` prints what the page must show.
EXPECT = "expect(w)"

# ------------------------------------------------------------------------------- the paint record
READ = """canvas => {
  const p = canvas.agwPainted;
  if (!p) return null;
  const r = canvas.getBoundingClientRect();
  return { count: Number(canvas.dataset.painted), ppu: p.ppu, font: p.font, range: p.range,
           area: p.area, labels: p.labels, items: p.items, marks: p.marks,
           page: { left: r.left, top: r.top, width: r.width, height: r.height } };
}"""

# Resolve once `canvas.dataset.painted` has not moved for `quiet` animation frames 40 ms apart.
SETTLE = """async ([canvas, quiet]) => {
  const frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 40)));
  // Python is fitting the drawing to a new size (sizing.js): its answer may redraw it
  const root = canvas.closest('.agw-root');
  for (let k = 0; k < 300 && root?.dataset.fitting; k++) await frame();
  let last = canvas.dataset.painted;
  for (let q = 0; q < quiet; ) {
    await frame();
    if (canvas.dataset.painted === last) q++;
    else { last = canvas.dataset.painted; q = 0; }
  }
  return Number(last);
}"""

# The pixels under a box (CSS px of the canvas), as [r, g, b] triples, read at device resolution.
PIXELS = """([canvas, x, y, w, h]) => {
  const dpr = canvas.width / canvas.clientWidth;
  const ctx = canvas.getContext('2d');
  const X = Math.round(x * dpr), Y = Math.round(y * dpr);
  const W = Math.max(1, Math.round(w * dpr)), H = Math.max(1, Math.round(h * dpr));
  const d = ctx.getImageData(X, Y, W, H).data;
  const out = [];
  for (let k = 0; k < d.length; k += 4) out.push([d[k], d[k + 1], d[k + 2]]);
  return out;
}"""


@dataclass
class Painted:
    """One paint record as the page kept it (`canvas.agwPainted`, CSS px of the canvas)."""

    count: int
    ppu: float
    font: float
    range: dict
    area: dict
    labels: list[dict]
    items: list[dict]
    marks: dict
    page: dict

    def names(self) -> dict[tuple[str, int, int], dict]:
        """Line-0 labels of items, by (kind, index, rounded centre x) (copies share an index)."""
        return {(lb["kind"], lb["index"], 0): lb for lb in self.labels if lb["line"] == 0}

    def fully_in(self, it: dict) -> bool:
        a = self.area
        return (it["x"] >= a["l"] - 0.5 and it["y"] >= a["t"] - 0.5
                and it["x"] + it["w"] <= a["l"] + a["w"] + 0.5
                and it["y"] + it["h"] <= a["t"] + a["h"] + 0.5)

    def item(self, index: int, kind: str | None = None) -> dict | None:
        for it in self.items:
            if it["index"] == index and (kind is None or it["kind"] == kind):
                return it
        return None


def widget_root(page, i: int = 0):
    """The widget's root in cell `i`'s output, once its canvas has painted."""
    root = cell(page, i).locator(".agw-root")
    root.locator("canvas.agw-canvas").wait_for(state="attached", timeout=CELL_TIMEOUT * 1000)
    page.wait_for_function(
        "c => Number(c.dataset.painted || 0) > 0 && c.agwPainted",
        arg=canvas(root).element_handle(),
        timeout=CELL_TIMEOUT * 1000,
    )
    # Python answered the drawing's size (the folds and direction fitted to it)
    root.scroll_into_view_if_needed()
    page.wait_for_function("r => r.dataset.fitted", arg=root.element_handle(),
                           timeout=CELL_TIMEOUT * 1000)
    return root


def canvas(root):
    return root.locator("canvas.agw-canvas")


def settle(root, quiet: int = 4) -> int:
    """Wait until the canvas has stopped repainting; return its paint count."""
    return root.page.evaluate(SETTLE, [canvas(root).element_handle(), quiet])


def painted(root) -> Painted:
    """The last paint record, once painting settled."""
    settle(root)
    rec = root.page.evaluate(READ, canvas(root).element_handle())
    assert rec is not None, "the canvas kept no paint record"
    return Painted(**rec)


def expected(page, readout_cell: int) -> dict:
    """Run the readout cell and return what the kernel says the page must show."""
    out = run_cell(page, readout_cell)
    line = [ln for ln in out.splitlines() if ln.startswith("{")][-1]
    return json.loads(line)


def click_item(root, it: dict, shift: bool = False) -> None:
    """A real mouse click at the centre of a painted item (page coordinates)."""
    box = canvas(root).bounding_box()
    assert box is not None
    x, y = box["x"] + it["x"] + it["w"] / 2, box["y"] + it["y"] + it["h"] / 2
    page = root.page
    if shift:
        page.keyboard.down("Shift")
    page.mouse.click(x, y)
    if shift:
        page.keyboard.up("Shift")


def save_state(root, model: str, state: str) -> None:
    """Screenshot of the widget: tests/artifacts/drawing_<model>_<state>.png."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    root.screenshot(path=str(ARTIFACTS / f"drawing_{model}_{state}.png"))


# -------------------------------------------------------------------------------------- checks
def overlaps(labels: list[dict], tol: float = OVERLAP_TOL) -> list[tuple[dict, dict]]:
    """Pairs of label boxes that overlap by more than `tol` px along both axes (sweep over x)."""
    order = sorted(labels, key=lambda lb: lb["x"])
    out = []
    for p, a in enumerate(order):
        for b in order[p + 1 :]:
            if b["x"] >= a["x"] + a["w"] - tol:
                break
            if b["y"] < a["y"] + a["h"] - tol and a["y"] < b["y"] + b["h"] - tol:
                out.append((a, b))
    return out


def _inside(lb: dict, it: dict, slack_x: float, slack_y: float = 1.0) -> bool:
    return (lb["x"] >= it["x"] - slack_x and lb["x"] + lb["w"] <= it["x"] + it["w"] + slack_x
            and lb["y"] >= it["y"] - slack_y and lb["y"] + lb["h"] <= it["y"] + it["h"] + slack_y)


def label_problems(p: Painted) -> list[str]:
    """What is wrong with the labels of one paint: items fully in the area without a name label,
    labels outside their item's box (op names may spill by pad + spill units per side), fonts
    under LEGIBLE_PX, overlapping labels. Empty when all is well."""
    bad: list[str] = []
    item_labels: dict[tuple[str, int], list[dict]] = {}
    for lb in p.labels:
        if lb["kind"] != "frame" and lb["kind"] != "edge":
            item_labels.setdefault((lb["kind"], lb["index"]), []).append(lb)
        if lb["font"] < LEGIBLE_PX - 1e-6:
            bad.append(f"{lb['kind']} {lb['index']} {lb['text']!r}: font {lb['font']:.1f} px")
        if not lb["text"].strip():
            bad.append(f"{lb['kind']} {lb['index']}: empty label")
    spill = (BOX_PAD_UNITS + SPILL_UNITS) * p.ppu + 1
    for it in p.items:
        if not p.fully_in(it):
            continue
        mine = [lb for lb in item_labels.get((it["kind"], it["index"]), [])
                if _inside(lb, it, spill, 2)]
        names = [lb for lb in mine if lb["line"] == 0]
        if not names:
            bad.append(f"{it['kind']} {it['index']} at ({it['x']:.0f}, {it['y']:.0f}) "
                       f"{it['w']:.0f}x{it['h']:.0f}: no name label")
            continue
        for lb in mine:
            slack = spill if (it["kind"] == "node" and lb["line"] == 0) else 1.0
            if not _inside(lb, it, slack):
                bad.append(f"{it['kind']} {it['index']} {lb['text']!r}: label "
                           f"x {lb['x']:.1f}..{lb['x'] + lb['w']:.1f} outside its box "
                           f"{it['x']:.1f}..{it['x'] + it['w']:.1f}")
    for a, b in overlaps(p.labels):
        bad.append(f"overlap: {a['kind']} {a['index']} {a['text']!r} and "
                   f"{b['kind']} {b['index']} {b['text']!r}")
    return bad


def item_of(exp: dict, node_id: str | None) -> int:
    """The visible item showing node `node_id`: its own index, -2 when it is inside a box."""
    if node_id is None:
        return -1
    vis = exp["visible"]
    return vis.index(node_id) if node_id in vis else -2


def mark_problems(
    p: Painted, exp: dict, status_text: str, k: int, failed: bool = False
) -> list[str]:
    """After `k` steps: `marks.ran` is the item that ran, `marks.next` the next one (a box when
    the node is folded inside one), and the status line reads "ran X (step k / n) → next Y"
    (after a failed step: "step k / n — Y failed: <the error>")."""
    bad: list[str] = []
    if exp["pos"] != k:
        bad.append(f"the stepper is at {exp['pos']}, not {k}")
    for mark, key, item_key in (("ran", "ran_id", "last_item"), ("next", "next_id", "next_item")):
        want = item_of(exp, exp[key])
        got = p.marks[mark]
        if want == -2:
            # folded inside a box: the mark is the box Python names (boxes are items too)
            boxes = {it["index"] for it in p.items if it["kind"] == "box"}
            in_view = any(it["index"] == got for it in p.items)
            if got != exp[item_key] or got < 0 or (in_view and got not in boxes):
                bad.append(f"marks.{mark} = {got}: {exp[key]} is folded, expected its box "
                           f"{exp[item_key]}")
        elif got != want:
            bad.append(f"marks.{mark} = {got}, expected item {want} ({exp[key]})")
    want_text = f"ran {exp['ran']} (step {k} / {exp['total']}) → next {exp['next']}"
    if k == 0:
        want_text = f"step 0 / {exp['total']} → next {exp['next']}"
    if failed:
        want_text = exp["status"]
        if not want_text.startswith(f"step {k} / {exp['total']} — {exp['next']} failed: "):
            bad.append(f"Python's status after the failure reads {want_text!r}")
    if status_text.strip() != want_text:
        bad.append(f"status {status_text.strip()!r}, expected {want_text!r}")
    return bad


def _far(c: list[int], ref: list[int], by: int = 60) -> bool:
    return sum(abs(a - b) for a, b in zip(c, ref, strict=True)) > by


def pixel_problems(root, p: Painted, labels: list[dict]) -> list[str]:
    """For each label: the canvas pixels inside its box are not all one colour (the box's fill):
    at least 3% of them differ clearly from the commonest colour there (text was painted)."""
    bad = []
    handle = canvas(root).element_handle()
    for lb in labels:
        px = root.page.evaluate(PIXELS, [handle, lb["x"], lb["y"], lb["w"], lb["h"]])
        counts: dict[tuple[int, ...], int] = {}
        for c in px:
            counts[tuple(c)] = counts.get(tuple(c), 0) + 1
        fill = list(max(counts, key=counts.__getitem__))
        ink = sum(1 for c in px if _far(c, fill))
        if ink < 0.03 * len(px):
            bad.append(f"{lb['kind']} {lb['index']} {lb['text']!r}: {ink} of {len(px)} pixels "
                       f"differ from the fill {fill}: no text painted")
    return bad


def wait_status(root, pattern: str, timeout: float = CELL_TIMEOUT) -> str:
    """Wait until the status line contains `pattern`; return its text."""
    loc = root.locator(".agw-status-text")
    deadline = time.monotonic() + timeout
    while True:
        text = loc.inner_text()
        if pattern in text:
            return text
        if time.monotonic() > deadline:
            raise AssertionError(f"status {text!r} never showed {pattern!r}")
        time.sleep(0.03)


def describe(p: Painted) -> dict[str, Any]:
    """A short summary of a paint for assertion messages."""
    return {"count": p.count, "ppu": round(p.ppu, 2), "font": round(p.font, 1),
            "items": len(p.items), "labels": len(p.labels), "marks": p.marks}


#: The only URLs a standalone page may load: it is one offline file.
ALLOWED = ("file:", "blob:", "data:", "about:")


def open_offline(browser, path):
    """Open a standalone page from disk in a fresh context that lets only local URLs through:
    (context, page, requests tried elsewhere, console and page errors)."""
    ctx = browser.new_context(viewport={"width": 1100, "height": 700})
    requests, errors = [], []

    def route(r):
        if r.request.url.startswith(ALLOWED):
            r.continue_()
        else:
            requests.append(r.request.url)
            r.abort()

    ctx.route("**/*", route)
    page = ctx.new_page()
    page.on(
        "request", lambda req: None if req.url.startswith(ALLOWED) else requests.append(req.url)
    )
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(e.message))
    page.goto(path.as_uri())
    return ctx, page, requests, errors
