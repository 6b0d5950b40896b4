"""core: what a captured graph IS, read from torch once and then plain records.

`records` (Node, Edge, TensorMeta), `capture` and `track` (building them), `graph` (BackwardGraph:
records + the live torch nodes, released safely by `live`), `graphdict` (a graph dict from a file,
every field checked before `BackwardGraph.from_dict` builds on it), `saved` (saved values),
`validity` (stale or freed saved values, told cheaply before any step), `freed` (a graph already
freed by backward, told without unpacking), `fsdp` (FSDP2's sharded parameters and the graph leaves
they are gathered into), `checkpoint` (saved values of non-reentrant checkpoint regions, read
without unpacking), `unbacked` (a tensor whose storage FSDP2 freed: never read), `memory` (bytes
held for backward), `summary` (what a gradient looks like in a few numbers) and `store` (summaries
kept lazily), `dtensor` (a DTensor's local shard and layout, the communication nodes of tensor
parallelism), `order` (the engine's execution order, computed on records), `regions` (the inside of
a torch.compile region's node: its aten ops as records) with `regionvalues` (its shapes for the
call at hand, its ops' modules) and `regionmodules` (those modules recovered from dynamo's graph
where torch's compile cache cleared them), and the `formulas` subpackage (what each backward node
type computes). Imports only `util`; nothing from Jupyter or plotly.
"""

__all__: list[str] = []
