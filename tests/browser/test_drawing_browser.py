"""The canvas drawing on six real models in a real JupyterLab (issue 17, "Tests"): a CNN of
identical blocks, a 6-layer TransformerEncoder, a GPT-2-like decoder in plain torch, an unrolled
RNN, a NaN case and an in-place failure, each opened with `aw.explore(loss, model=model)`
(collapse="auto").

For each model: the first render (Fit), three clicks on Step, a click on a folded box (unfold),
left-to-right layout, memory colours. After every action the paint record the canvas keeps
(`canvas.agwPainted`) is read back and checked in Python (drawtools.py): every item fully in
view has a name label inside its box (op names may spill a little), every label is at least
11 px, no two labels overlap, the step marks and the status line name what ran and what is
next, and a few labels' pixels show painted text. Problems of one model are collected over all
its states and reported together; a screenshot of every state is saved as
tests/artifacts/drawing_<model>_<state>.png.
"""

from __future__ import annotations

import re

import pytest

from .drawtools import (
    EXPECT,
    LEGIBLE_PX,
    MODELS,
    Painted,
    canvas,
    click_item,
    describe,
    expected,
    label_problems,
    mark_problems,
    painted,
    pixel_problems,
    save_state,
    settle,
    wait_status,
    widget_root,
)
from .labtools import button, open_notebook, run_cell

pytestmark = [pytest.mark.browser, pytest.mark.slow]

STEPS = 3
#: Labels sampled per state for painted pixels.
PIXEL_SAMPLES = 4
#: BADGE_MIN_PX of js/src/style.js: a stale/freed mark is at least this big at Fit.
BADGE_MIN_PX = 18
#: One wheel notch (CSS px of deltaY): zooms by exp(300 * 0.0015) = 1.57.
WHEEL = 300


class Walk:
    """One model's notebook: cell 0 builds the model and shows the widget, cell 1 prints what
    the page must show. Checks append to `problems` (reported together at the end)."""

    def __init__(self, page, lab_server, model: str) -> None:
        self.page, self.model = page, model
        cells = [f"{MODELS}\nmodel, loss = {model}()\nw = aw.explore(loss, model=model)\nw",
                 EXPECT]
        open_notebook(page, lab_server, f"drawing_{model}.ipynb", cells)
        run_cell(page, 0, timeout=120)
        self.root = widget_root(page, 0)
        self.problems: list[str] = []
        self.k = 0
        self.failed = False
        self.exp: dict = {}

    def status(self) -> str:
        # textContent: innerText reads "" while JupyterLab keeps the cell out of view
        # (content-visibility), which running the readout cell below can do
        return self.root.locator(".agw-status-text").text_content() or ""

    def view(self) -> None:
        self.root.locator("canvas.agw-canvas").scroll_into_view_if_needed()

    def check(self, state: str, *, marks: bool = True) -> Painted:
        """Read the paint back, check labels, pixels and (with `marks`) the step marks; save
        the screenshot."""
        self.view()
        p = painted(self.root)
        save_state(self.root, self.model, state)
        where = f"{self.model}/{state}"
        if not p.labels:
            self.problems.append(f"{where}: nothing labelled ({describe(p)})")
        self.problems += [f"{where}: {b}" for b in label_problems(p)]
        names = [lb for lb in p.labels if lb["line"] == 0 and lb["kind"] in ("node", "box")]
        frames = [lb for lb in p.labels if lb["kind"] == "frame"]
        sample = names[:: max(1, len(names) // PIXEL_SAMPLES)][:PIXEL_SAMPLES] + frames[:1]
        self.problems += [f"{where}: {b}" for b in pixel_problems(self.root, p, sample)]
        if marks:
            exp = self.exp = expected(self.page, 1)
            self.problems += [f"{where}: {b}" for b in mark_problems(
                p, exp, self.status(), self.k, self.failed)]
        return p

    def step(self, times: int) -> Painted:
        for _ in range(times):
            self.k += 1
            button(self.root, "Step").click()
            wait_status(self.root, f"(step {self.k} /")
        return self.check("steps")

    def change(self, act, state: str, *, marks: bool = True, check: bool = True) -> Painted:
        """Do `act`, wait until the drawing changed (another graph or range), check it."""
        # What was drawn, as a string: the items (kind, index, box) and the range. An unfold
        # that keeps the view (the module opens where its box was) may keep both the count and
        # the range: the items themselves differ.
        sig = """(c) => { const p = c.agwPainted; const r = (v) => Math.round(v);
                  return JSON.stringify([p.range.x, p.range.y,
                    p.items.map((b) => [b.kind, b.index, r(b.x), r(b.y), r(b.w), r(b.h)])]); }"""
        handle = canvas(self.root).element_handle()
        was = self.page.evaluate(sig, handle)
        act()
        self.page.wait_for_function(f"([c, was]) => ({sig})(c) !== was", arg=[handle, was])
        return self.check(state, marks=marks) if check else painted(self.root)

    def find_box(self) -> tuple[dict, int]:
        """A folded box fully in view: as drawn, else after Fit, else zoomed out about the
        canvas's centre (labels may then be too small: only the click needs the box).
        Returns the box and how many wheel notches zoomed out."""
        p = painted(self.root)
        for attempt in range(12):
            boxes = [it for it in p.items if it["kind"] == "box" and p.fully_in(it)]
            if boxes:
                return boxes[0], max(0, attempt - 1)
            self.view()
            if attempt == 0:
                button(self.root, "Fit").click()
            else:
                self.wheel(p.area["l"] + p.area["w"] / 2, p.area["t"] + p.area["h"] / 2, WHEEL)
            p = self.repainted(p.count)
        raise AssertionError(f"{self.model}: no folded box to unfold ({describe(p)})")

    def wheel(self, x: float, y: float, dy: float) -> None:
        box = canvas(self.root).bounding_box()
        self.page.mouse.move(box["x"] + x, box["y"] + y)
        self.page.mouse.wheel(0, dy)

    def repainted(self, count: int) -> Painted:
        self.page.wait_for_function("([c, n]) => Number(c.dataset.painted) > n",
                                    arg=[canvas(self.root).element_handle(), count])
        return painted(self.root)

    def unfold(self) -> Painted:
        box, notches = self.find_box()
        before = expected(self.page, 1)["visible"]
        self.view()
        if notches:
            # unfold out there, then zoom back in about the same point: the unfolded module
            # at the scale the view had, as a user would look at it
            p = self.change(lambda: click_item(self.root, box), "unfold", check=False)
            for _ in range(notches * 8):
                if p.font >= LEGIBLE_PX:
                    break
                self.wheel(box["x"] + box["w"] / 2, box["y"] + box["h"] / 2, -WHEEL / 5)
                p = self.repainted(p.count)
            p2 = self.check("unfold")
        else:
            p2 = self.change(lambda: click_item(self.root, box), "unfold")
        after = self.exp["visible"]
        if len(after) <= len(before):
            self.problems.append(f"{self.model}/unfold: the click unfolded nothing: "
                                 f"{len(before)} items before, {len(after)} after")
        return p2

    def orientation_lr(self) -> Painted:
        sel = self.root.locator("select.agw-direction")
        return self.change(lambda: sel.select_option("LR"), "lr")

    def memory(self) -> Painted:
        sel = self.root.get_by_role("combobox", name="Colour mode")
        sel.select_option("memory")
        self.page.wait_for_function(
            "r => r.querySelector('.agw-legend')?.dataset.mode === 'memory'",
            arg=self.root.element_handle())
        settle(self.root, quiet=8)
        p = self.check("memory")
        edge_labels = [lb["text"] for lb in p.labels if lb["kind"] == "edge"]
        if edge_labels:
            self.problems.append(f"{self.model}/memory: gradient values on edges {edge_labels[:3]}")
        return p

    def done(self) -> None:
        assert not self.problems, f"{len(self.problems)} problems:\n" + "\n".join(self.problems)


def walk_all(w: Walk) -> None:
    p = w.check("first")
    assert p.font >= LEGIBLE_PX - 1e-6, describe(p)
    w.step(STEPS)
    w.unfold()
    w.orientation_lr()
    w.memory()


@pytest.mark.parametrize("model", ["cnn", "transformer", "gpt2", "rnn"])
def test_model_drawing_is_labelled_legibly_through_steps_unfold_lr_memory(
    page, lab_server, model
):
    w = Walk(page, lab_server, model)
    walk_all(w)
    w.done()


def test_nan_gradients_first_nan_button_marks_the_edge(page, lab_server):
    w = Walk(page, lab_server, "nan")
    w.check("first")
    w.step(STEPS)
    w.view()
    button(w.root, "First NaN/Inf").click()
    page.wait_for_function("c => c.agwPainted.marks.selectedEdge >= 0",
                           arg=canvas(w.root).element_handle())
    p = w.check("nan", marks=False)
    e = p.marks["selectedEdge"]
    nan_labels = [lb for lb in p.labels
                  if lb["kind"] == "edge" and re.search(r"nan", lb["text"], re.I)]
    assert nan_labels, f"no NaN value label on any edge: {[lb['text'] for lb in p.labels]}"
    assert any(lb["index"] == e for lb in nan_labels), (
        f"the selected edge {e} has no NaN label; NaN labels on "
        f"{[lb['index'] for lb in nan_labels]}")
    button(w.root, "Fit").click()
    w.unfold()
    w.orientation_lr()
    w.memory()
    w.done()


def test_inplace_failure_said_once_and_refused_after(page, lab_server):
    w = Walk(page, lab_server, "inplace")
    p = w.check("first")
    badges = p.marks["badges"]
    assert badges, f"no stale badge at Fit ({describe(p)})"
    for bd in badges:
        a = p.area
        assert bd["size"] >= BADGE_MIN_PX, bd
        assert a["l"] <= bd["x"] <= a["l"] + a["w"] and a["t"] <= bd["y"] <= a["t"] + a["h"], bd
    # step until the failure: SumBackward0, MulBackward0, then SigmoidBackward0 raises
    w.step(2)
    w.view()
    button(w.root, "Step").click()
    text = wait_status(w.root, "failed")
    assert "SigmoidBackward0 failed" in text, text
    settle(w.root)
    assert "agw-status-failed" in (w.root.locator(".agw-status").get_attribute("class") or "")
    msg = re.search(r"failed: (.{30})", text).group(1)
    p = painted(w.root)
    failed = p.item(p.marks["next"])
    assert failed is not None, describe(p)
    click_item(w.root, failed)  # select it: the inspector opens on the failing node
    w.root.locator(".agw-insp-error").first.wait_for()
    shown = w.root.inner_text().count(msg)
    assert shown == 2, f"the failure is shown {shown} times, not twice (status + inspector)"
    save_state(w.root, "inplace", "failed")
    hint = w.root.locator(".agw-status-hint")
    for name, what in (("Step", "can't step"), ("Run to end", "can't run to the end")):
        button(w.root, name).click(force=True)  # aria-disabled, yet clickable: it says why
        page.wait_for_function("([h, t]) => !h.hidden && h.textContent.includes(t)",
                               arg=[hint.element_handle(), what])
        assert "Back or Reset to go on" in hint.inner_text(), hint.inner_text()
    assert w.root.inner_text().count(msg) == 2, "a refused click repeated the failure"
    w.k, w.failed = 2, True  # the failed step did not count
    p = w.check("refused", marks=False)
    w.unfold()
    w.orientation_lr()
    w.memory()
    w.done()
