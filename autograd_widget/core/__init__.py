"""core: what a captured graph IS, read from torch once and then plain records.

`records` (Node, Edge, TensorMeta), `capture` and `track` (building them), `graph`
(BackwardGraph: records + the live torch nodes, released safely by `live`), `saved` (saved values
and memory), `summary` (what a gradient looks like in a few numbers), `order` (the engine's
execution order, computed on records). Imports only `util`; nothing from Jupyter or plotly.
"""

__all__: list[str] = []
