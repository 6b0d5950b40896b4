"""engine: running backward by hand, one engine step at a time, and probing it.

The `Stepper` calls each node as the autograd engine would, in the engine's order, and keeps
position, slot buffers, undo and step records; plan building, node calls, edits, comparison with
the engine, breakpoints, listeners and the Ctrl-C guard live in modules of their own; `probes`
computes per-node Jacobian norms. Imports `core` and `util`; nothing from Jupyter or plotly.
"""

__all__: list[str] = []
