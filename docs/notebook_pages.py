"""The notebooks under notebooks/ as documentation pages, each widget shown as its offline page.

A widget needs a kernel; a documentation site has none. So each notebook is executed (nbclient, a
real kernel, as tests/project/test_notebooks.py does: notebook 06 starts its two torch.distributed
ranks itself, on 127.0.0.1 with gloo), and after every cell each AutogradWidget that cell displayed
is written with `save_html` (the whole step-through recorded, replayable with no kernel) and shown
in the page as an iframe of that file, where the notebook showed the live widget. The page opens at
the step the notebook left the widget at (written again after a later cell moves it), as the
live notebook shows it; an `aw.side_by_side` pair is one page, its two sides stepped together.

Output, for notebooks/NN_name.ipynb, under `out`:
    notebooks/NN_name.md              the page: markdown cells as they are, code cells as Python
                                      blocks, outputs as text / images / iframes
    notebooks/NN_name/widget-K.html   the K-th widget, standalone (`save_html`)
    notebooks/NN_name/output-K.png    the K-th image output
    executed/NN_name/notebook.ipynb   the notebook as executed, without the hidden cells: the
                                      user's cells with their outputs and the widgets' state
    executed/NN_name/scratch/         the files the notebook wrote in its scratch folder

Pages are cached: a notebook is executed again only when it, this file, or the package's sources
or front-end bundle changed (a stamp per notebook, `source_stamp`). The `executed/` entry is
there so that the notebook tests (tests/helpers/notebook_outputs.py `executed`) can reuse this
run instead of executing the notebook a second time. The hidden cells leave the user's cells
as a plain run makes them: their outputs are never added to a user's cell, they write the
widget pages into `out`, never into the scratch folder, `save_html` moves no widget, and the
widgets' state is kept as nbclient's `execute` keeps it. What they do leave in the kernel is
names starting with `__agw` and a reference to each displayed widget (so a widget outlives a
user's `del`): a notebook that listed its globals or counted live objects would see them.
Run alone to (re)build them:

    python docs/notebook_pages.py [OUT_DIR]
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient

__all__ = ["NOTEBOOKS", "ROOT", "NotebookPage", "build", "build_one", "executed_entry",
           "source_stamp"]

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# Height of the standalone page's own chrome around the drawing (header, toolbar, status line).
FRAME_EXTRA_PX = 150
# The pair page's titles above its two widgets.
PAIR_TITLE_PX = 30
#: The frame of a widget made with height=None (the default): its page fills it.
AUTO_FRAME_PX = 600

# Runs once in the kernel, before the notebook: remember every widget built (weakly), so that
# after a cell the widgets it displayed can be found from the model ids in its outputs. A page is
# written when its widget is displayed, and written again after a later cell moved the widget's
# stepper (`start="current"`): the page opens where the notebook left the widget, which is what
# the live notebook shows and what the prose around it describes.
_KERNEL_SETUP = """
import weakref as __agw_weakref
import ipywidgets as __agw_ipywidgets
__agw_built = __agw_weakref.WeakSet()
__agw_ipywidgets.Widget.on_widget_constructed(__agw_built.add)
__agw_pages = []  # [widget, path, title, description, where it was saved]


def __agw_where(w):
    st = (w.left if hasattr(w, "left") else w).stepper
    return (st.position, st.last_error)


def __agw_write(entry):
    w, path, title, description, _ = entry
    try:
        w.save_html(path, title=title, description=description, start="current")
    except RuntimeError:  # released by a later cell (`w.close()`): the last page stays
        return
    entry[4] = __agw_where(w)


def __agw_save(model_ids, folder, start, title, description):
    \"\"\"Save each AutogradWidget (or aw.side_by_side pair: one page) in the displayed widgets,
    boxes searched; print what was written, one JSON line:
    [[model_id, [[file, stepper type, height, label, sides], ...]], ...].\"\"\"
    import json, pathlib, re
    import autograd_widget as __aw
    found, k = [], start
    by_id = {w.comm.comm_id: w for w in list(__agw_built) if w.comm is not None}
    for mid in model_ids:
        top = by_id.get(mid)
        pages, todo = [], [(top, None)] if top is not None else []
        while todo:
            w, label = todo.pop(0)
            if isinstance(w, (__aw.AutogradWidget, __aw.RecordingPair)):
                k += 1
                path = pathlib.Path(folder) / f"widget-{k}.html"
                entry = [w, path, title if label is None else f"{title} — {label}",
                         description, None]
                __agw_write(entry)
                __agw_pages.append(entry)
                pair = isinstance(w, __aw.RecordingPair)
                one = w.left if pair else w
                pages.append([path.name, type(one.stepper).__name__, one.height, label,
                              list(w.names) if pair else None])
            else:
                kids = list(getattr(w, "children", ()))
                text = [c.value for c in kids if isinstance(c, __agw_ipywidgets.HTML)]
                label = re.sub("<[^>]*>", "", text[0]).strip() if len(text) == 1 else label
                todo.extend((c, label) for c in kids)
        found.append([mid, pages])
    print(json.dumps(found))


def __agw_follow():
    \"\"\"After a cell: write again the pages of the widgets it moved.\"\"\"
    for entry in __agw_pages:
        try:
            moved = __agw_where(entry[0]) != entry[4]
        except Exception:  # a released widget's stepper
            continue
        if moved:
            __agw_write(entry)
"""


@dataclass(frozen=True)
class NotebookPage:
    """One built notebook page: its markdown file, its widget pages, the seconds it took
    (0.0 when it came from the cache)."""

    stem: str
    markdown: Path
    widgets: tuple[Path, ...]
    seconds: float


def source_stamp(notebook: Path) -> str:
    """A hash of everything a notebook's page depends on: the notebook, the other files next to
    it, this script, the package's Python sources and its front-end bundle."""
    h = hashlib.sha256()
    paths = [notebook, Path(__file__).resolve()]
    paths += sorted(p for p in NOTEBOOKS.iterdir() if p.is_file() and p.suffix == ".py")
    paths += sorted((ROOT / "autograd_widget").rglob("*.py"))
    paths += sorted((ROOT / "autograd_widget" / "static").glob("*"))
    for p in paths:
        h.update(str(p.relative_to(ROOT)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def executed_entry(out: Path, stem: str) -> Path:
    """Where `build` keeps the executed notebook `stem` under the cache `out` (module docstring):
    a folder with notebook.ipynb and scratch/, valid while the stamp of `stem` under `out` is
    the notebook's `source_stamp`; outside out/notebooks, so it is never part of the site.

    Example:
        >>> executed_entry(Path("/c"), "01_tour").as_posix()
        '/c/executed/01_tour'
    """
    return out / "executed" / stem


def _fence(text: str, lang: str = "") -> str:
    """A fenced code block that survives backticks inside `text`."""
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}\n"


def _iframe(stem: str, page: list, name: str | None) -> str:
    file, kind, height, label, sides = page
    if height is None:  # height=None: what the graph needs in a notebook; a page fills its frame
        height = AUTO_FRAME_PX
    name = label or name
    what = ("the engine's recorded run" if kind == "Replay"
            else "its whole step-through, recorded when this cell ran,")
    if sides:
        what = (f"both recorded runs ({html.escape(sides[0])} and {html.escape(sides[1])}), "
                "side by side and stepped together: a step in either moves both,")
    title = f"{name}: " if name else ""
    src = f"{stem}/{file}"
    extra = FRAME_EXTRA_PX + (PAIR_TITLE_PX if sides else 0)
    opens = "where the notebook left it; Reset goes back to step 0"
    return (
        f'<figure class="agw-frame">\n'
        f'<iframe src="{src}" height="{int(height) + extra}" loading="lazy" '
        f'title="{html.escape(title)}the widget, as its standalone page"></iframe>\n'
        f"<figcaption>{html.escape(title + 'the widget' if name else 'The widget')} "
        f"as its standalone page: {what} replays here without a kernel, opened {opens} "
        f'(<a href="{src}" target="_blank">open it alone</a>).'
        "</figcaption>\n"
        "</figure>\n"
    )


def _text_output(text: str) -> str:
    return _fence(text, "text")


def _to_markdown(nb: nbformat.NotebookNode, stem: str, frames: dict, folder: Path) -> str:
    """The executed notebook as one markdown page (iframes in place of widget views)."""
    parts: list[str] = []
    images = 0
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            parts.append(cell.source.rstrip() + "\n")
            continue
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        parts.append(_fence(cell.source, "python"))
        stream: list[str] = []
        for out in cell.get("outputs", []):
            kind = out.get("output_type")
            if kind == "stream":
                stream.append(out["text"])
                continue
            if stream:
                parts.append(_text_output("".join(stream)))
                stream = []
            if kind == "error":
                parts.append(_text_output("\n".join(out.get("traceback", []))))
                continue
            data = out.get("data", {})
            if WIDGET_VIEW in data:
                pages = frames.get(data[WIDGET_VIEW]["model_id"], [])
                if not pages:
                    raise RuntimeError(f"{stem}: a widget view with no AutogradWidget inside")
                names = [None] * len(pages)
                if len(pages) > 1:
                    names = [f"widget {i + 1} of {len(pages)}" for i in range(len(pages))]
                row = "".join(_iframe(stem, p, n) for p, n in zip(pages, names))
                cls = "agw-frames agw-frames--row" if len(pages) > 1 else "agw-frames"
                parts.append(f'<div class="{cls}">\n{row}</div>\n')
            elif "text/latex" in data:  # typeset on the page (arithmatex + the bundled KaTeX)
                tex = data["text/latex"].strip()
                tex = tex[2:-2].strip() if tex.startswith("$$") and tex.endswith("$$") else tex
                parts.append(f"$$\n{tex}\n$$\n")
            elif "image/png" in data:
                images += 1
                name = f"output-{images}.png"
                (folder / name).write_bytes(base64.b64decode(data["image/png"]))
                parts.append(f"![output {images}]({stem}/{name})\n")
            elif "text/plain" in data:
                parts.append(_text_output(data["text/plain"]))
        if stream:
            parts.append(_text_output("".join(stream)))
    return "\n".join(parts)


def build_one(notebook: Path, out: Path, *, timeout: int = 600) -> NotebookPage:
    """Execute `notebook` in a fresh kernel (in a scratch copy of notebooks/, so nothing is
    written next to the sources) and write its page and widget pages under `out`/notebooks.

    The executed notebook (the user's cells only) and what it wrote in its scratch folder are
    kept in `executed_entry(out, stem)` (module docstring). Raises whatever the notebook raises
    (nbclient's CellExecutionError): a page is never built from a notebook that fails."""
    t0 = time.perf_counter()
    stem = notebook.stem
    folder = out / "notebooks" / stem
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    entry = executed_entry(out, stem)
    if entry.exists():
        shutil.rmtree(entry)
    nb = nbformat.read(notebook, as_version=4)
    # The kernel imports this checkout's package (the one the API reference documents).
    path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), path) if p)
    try:
        frames = _execute(nb, folder, timeout, entry / "scratch")
    finally:
        os.environ["PYTHONPATH"] = path
        if not path:
            del os.environ["PYTHONPATH"]
    page = out / "notebooks" / f"{stem}.md"
    page.write_text(_to_markdown(nb, stem, frames, folder), encoding="utf-8")
    nbformat.write(nb, entry / "notebook.ipynb")
    widgets = tuple(sorted(folder.glob("widget-*.html")))
    return NotebookPage(stem, page, widgets, time.perf_counter() - t0)


def _execute(nb: nbformat.NotebookNode, folder: Path, timeout: int,
             keep: Path) -> dict[str, list]:
    """Run every cell; after each, save the AutogradWidgets it displayed into `folder` (and
    save again those it moved). `nb` ends with the user's cells' outputs and, as nbclient's
    `execute` leaves it, the widgets' state in its metadata; the files the notebook wrote in
    its scratch folder are copied to `keep` (not those copied there from notebooks/). Returns
    {model id of a displayed widget: its pages, [file, stepper type, height, label, the pair's
    side names or None]}."""
    frames: dict[str, list] = {}
    count = 0
    with tempfile.TemporaryDirectory(prefix="agw-docs-") as scratch:
        copied = set()
        for p in NOTEBOOKS.iterdir():
            if p.is_file() and p.suffix != ".ipynb":
                shutil.copy(p, scratch)
                copied.add(p.name)
        client = NotebookClient(
            nb, timeout=timeout, kernel_name="python3", record_timing=False,
            resources={"metadata": {"path": scratch}},
        )
        notebook_title = section = _heading(nb.cells[0]) if nb.cells else None
        with client.setup_kernel():
            _run_hidden(client, _KERNEL_SETUP)
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    section = _heading(cell) or section
                    continue
                client.execute_cell(cell, index)
                _run_hidden(client, "__agw_follow()")
                ids = [o["data"][WIDGET_VIEW]["model_id"] for o in cell.get("outputs", [])
                       if WIDGET_VIEW in o.get("data", {})]
                if ids:
                    title = section or notebook_title or "autograd_widget"
                    # the docs page around the frame already says where it comes from
                    description = None
                    printed = _run_hidden(client, f"__agw_save({ids!r}, {str(folder)!r}, "
                                                  f"{count}, {title!r}, {description!r})")
                    for mid, pages in json.loads(printed):
                        frames[mid] = pages
                        count += len(pages)
            client.set_widgets_metadata()
        shutil.copytree(scratch, keep, ignore=lambda d, names: [
            n for n in names if d == scratch and n in copied])
    return frames


def _heading(cell: nbformat.NotebookNode) -> str | None:
    """The text of a markdown cell's first heading ("## 3. Saved tensors" -> "3. Saved
    tensors"), or None."""
    if cell.cell_type != "markdown":
        return None
    for line in cell.source.splitlines():
        if line.startswith("#"):
            return line.lstrip("#").replace("`", "").strip() or None
    return None


def _run_hidden(client: NotebookClient, source: str) -> str:
    """Run `source` in the notebook's kernel without adding it to the notebook or its history;
    return what it printed. Raises if it raised."""
    cell = nbformat.v4.new_code_cell(source)
    client.nb.cells.append(cell)  # nbclient writes the cell back at its index
    try:
        client.execute_cell(cell, len(client.nb.cells) - 1, store_history=False)
    finally:
        client.nb.cells.pop()
    return "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")


def build(out: Path, *, notebooks: list[Path] | None = None, log=print) -> list[NotebookPage]:
    """Every notebook's page under `out` (cached: see the module docstring), in name order."""
    pages = []
    for nb in notebooks or sorted(NOTEBOOKS.glob("*.ipynb")):
        stamp_file = out / "notebooks" / f".{nb.stem}.stamp"
        stamp = source_stamp(nb)
        page = out / "notebooks" / f"{nb.stem}.md"
        if page.exists() and stamp_file.exists() and stamp_file.read_text() == stamp:
            folder = out / "notebooks" / nb.stem
            pages.append(NotebookPage(nb.stem, page, tuple(sorted(folder.glob("widget-*.html"))),
                                      0.0))
            continue
        stamp_file.unlink(missing_ok=True)
        built = build_one(nb, out)
        stamp_file.write_text(stamp)
        log(f"docs: executed {nb.name} in {built.seconds:.1f} s "
            f"({len(built.widgets)} widget page(s))")
        pages.append(built)
    return pages


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "docs-notebooks"
    t0 = time.perf_counter()
    done = build(target)
    print(f"{len(done)} notebook pages in {target} ({time.perf_counter() - t0:.1f} s)")
