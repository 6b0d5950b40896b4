"""Bytes a graph holds for backward: each storage once, tensors inside lists and checkpoint
regions included, and an explicit note wherever torch hides bytes from Python.

The ground truth is what a `torch.autograd.graph.saved_tensors_hooks` pack hook sees during the
forward (one unique storage per saved tensor; a checkpoint region's inputs, which torch saves
through the same hooks). `saved_memory` reproduces it from the graph after the fact, reading
saved values through `SavedIndex` (core/saved.py), which never unpacks a checkpointed value:

- a plain saved tensor: its whole storage;
- a saved tensor list (an index op's `indices`): each element's storage;
- a value inside a non-reentrant checkpoint region: nothing (it is recomputed), but the region
  keeps its inputs to recompute from: those storages;
- a `CopySlices` node (an in-place op on a view): torch exposes none of the wrapped op's saved
  values, so the bytes are unknown: the owner gets a note in `SavedMemory.notes` (never a
  silent 0);
- on a torch that cannot look at a saved value without unpacking it (< 2.10, `util.compat`):
  plain saved tensors count as above (read through a guard that runs no Python code); a value
  whose read would run an unpack hook, a stale value and a checkpoint region's inputs cannot be
  seen: not counted, and each says so in `notes` (a count that is too low says why).

Under tensor parallelism a saved DTensor counts as what THIS rank holds: its local shard's storage
(core/saved.py reads it through core/dtensor.py), so the bytes are per rank, never the global
tensor's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .graph import BackwardGraph
    from .saved import SavedIndex

__all__ = ["SavedMemory", "saved_memory"]


class SavedMemory(dict[str, int]):
    """Bytes per owner (node id or module path), as a plain dict of ints, plus `notes`: owner
    -> what the count cannot include or how it was made (bytes torch hides from Python; the
    inputs a checkpoint region holds). An owner with only hidden bytes appears with 0 and a note.

    Example:
        >>> m = g.saved_memory(); dict(m), m.notes
        ({'n1': 4}, {})
    """

    def __init__(self, *args: object, **kwargs: int) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        #: owner -> note (hidden bytes, checkpoint inputs counted)
        self.notes: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"SavedMemory({dict.__repr__(self)}, notes={self.notes!r})"


def _add_note(notes: dict[str, str], owner: str, text: str) -> None:
    old = notes.get(owner)
    if old is None:
        notes[owner] = text
    elif text not in old:
        notes[owner] = f"{old}; {text}"


def saved_memory(
    graph: BackwardGraph,
    saved: SavedIndex,
    order: list[str],
    by: str = "node",
    *,
    exclude_leaves: bool = False,
) -> SavedMemory:
    """Bytes held for backward: each storage once, at its full size, charged to its first holder.

    `order` is the engine's execution order (the first node in it that holds a storage pays
    for it). `exclude_leaves` leaves out storages owned by leaf tensors (parameters, inputs),
    leaving activation memory alone. Tensors inside saved lists and the inputs of checkpoint
    regions count; CopySlices nodes get a note (torch hides their bytes).

    Example:
        >>> from autograd_widget.core.saved import SavedIndex
        >>> saved_memory(g, SavedIndex(), ["n0", "n2", "n1", "n3"])
        SavedMemory({'n1': 4}, notes={})
    """
    if by not in ("node", "module"):
        raise ValueError(f"by must be 'node' or 'module', got {by!r}")
    index = saved.aliases(graph)
    seen: set[tuple[str, int]] = set()
    out = SavedMemory()
    notes = out.notes
    for nid in order:
        node = graph.nodes[nid]
        if node.kind in ("accumulate_grad", "cpp_function"):
            continue
        if by == "node":
            owner = nid
        else:
            owner = node.module if node.module is not None else "<outside any module>"
        for rec in saved.read(graph, nid):
            parts = list(rec.storages)
            if rec.storage_key is not None and rec.storage_nbytes is not None:
                parts.insert(0, (rec.storage_key, rec.storage_nbytes))
            added = 0
            for key, nb in parts:
                if key in seen:
                    continue
                seen.add(key)
                if exclude_leaves and key in index.leaf_storages:
                    continue
                out[owner] = out.get(owner, 0) + nb
                added += nb
            if rec.recomputed and added:
                _add_note(
                    notes, owner,
                    f"{added} bytes of checkpoint region inputs (held to recompute "
                    f"{nid}.{rec.name} and the rest of its region during backward)",
                )  # fmt: skip
            elif rec.note is not None and rec.name == "(hidden by CopySlices)":
                out.setdefault(owner, 0)
                _add_note(notes, owner, f"{nid} ({node.name}): {rec.note}")
            elif rec.recomputed and not rec.storages:
                out.setdefault(owner, 0)
                _add_note(notes, owner, f"{nid}.{rec.name}: its checkpoint region's inputs "
                                        f"cannot be found, so they are not counted")  # fmt: skip
            elif rec.state == "unknown" or (rec.state == "stale" and rec.storage_key is None):
                # A torch that cannot look at a saved value without unpacking (util.compat).
                out.setdefault(owner, 0)
                _add_note(notes, owner, f"{nid}.{rec.name} not counted: {rec.note}")
    return out
