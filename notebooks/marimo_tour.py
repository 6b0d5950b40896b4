# A marimo notebook: `marimo edit notebooks/marimo_tour.py`. A cell's last expression is its
# output, hence the file-wide B018 exemption.
# ruff: noqa: B018
import marimo

__generated_with = "0.25.2"
app = marimo.App(width="full")


@app.cell
def _(mo):
    mo.md(r"""
    # autograd_widget in marimo

    The same widget as in JupyterLab: the backward graph of a tensor, stepped one node at a
    time. Open this notebook with `marimo edit notebooks/marimo_tour.py` (or view it as an
    app with `marimo run notebooks/marimo_tour.py`).

    Wrap the widget in `mo.ui.anywidget(...)` (or just end a cell with it: marimo wraps
    anywidgets itself). Keep the `AutogradWidget` in its own variable and step it from
    other cells through that variable: marimo re-runs every cell that reads the
    `mo.ui.anywidget` element whenever the page changes one of its traits (a click on a
    node, the layout menu), which is not what a cell that steps should do.
    """)
    return


@app.cell
def _():
    import marimo as mo
    import torch

    import autograd_widget as aw

    return aw, mo, torch


@app.cell
def _(mo):
    mo.md(r"""
    ## Step through `z = x**2 + y`

    **Step** runs the next node of the backward pass; the values flowing along the edges
    appear as they are computed. Click a node to inspect it (its inputs, outputs, saved
    tensors and formula); drag to pan, scroll to zoom, double-click to fit.
    """)
    return


@app.cell
def _(aw, mo, torch):
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    z = x**2 + y
    widget = aw.explore(z, params={"x": x, "y": y}, height=440)
    view = mo.ui.anywidget(widget)
    view
    return (widget,)


@app.cell
def _(mo):
    mo.md(r"""
    The buttons drive the very `Stepper` object that `widget.stepper` is, so Python and the
    page always agree: stepping from Python moves the drawing too.
    """)
    return


@app.cell
def _(mo):
    step_button = mo.ui.run_button(label="Step from Python")
    step_button
    return (step_button,)


@app.cell
def _(mo, step_button, widget):
    if step_button.value:
        widget.stepper.step()
    mo.md(
        f"The kernel's stepper: **step {widget.stepper.position} / "
        f"{len(widget.stepper.order)}** (this cell runs `widget.stepper.step()` when the "
        "button is pressed)."
    )
    return


@app.cell
def _(mo):
    mo.md(r"""
    ## Replay a real backward pass

    `aw.record(loss)` records what the engine did during `loss.backward()`; the widget
    replays it step by step. Here the input has a row of zeros, so `sqrt` has an infinite
    derivative: **First NaN/Inf** runs ahead to the node where the first NaN or infinity
    is born and says why.
    """)
    return


@app.cell
def _(aw, mo, torch):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh())
    inputs = torch.randn(5, 4)
    inputs[2] = 0.0
    with torch.no_grad():
        model[0].bias.zero_()
    with aw.track(model):
        hidden = model(inputs)
    loss = hidden.pow(2).sum(-1).sqrt().mean()
    with aw.record(loss, model=model) as recording:
        loss.backward()
    replay = mo.ui.anywidget(aw.explore(recording, collapse="none", height=520))
    replay
    return


if __name__ == "__main__":
    app.run()
