"""What each node saved for backward, read lazily and without disturbing anything.

Built-in nodes expose `_saved_<name>` (and `_raw_saved_<name>` for tensors); custom Functions
expose `saved_tensors` plus whatever the user put on `ctx`; C++ custom Functions expose nothing.
Reading must never raise into the user's face: a freed graph, an in-place-modified (stale) tensor
or a packing hook each become a `state` with a note that says what happened and what to do.

Aliasing and memory look at storages (`untyped_storage().data_ptr()`): `_saved_self` can be the very
input object and `_saved_result` a different object over the output's storage, so object identity
alone would double-count and miss sharing.

A saved DTensor (tensor parallel) has no storage of its own: what this rank holds is its local
shard (core/dtensor.py), so its record describes that shard (shape, stride, bytes, storage) and
its `note` says so, with the global shape and the placements.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import torch

from ..util import compat
from ..util.dtypes import dtype_name
from ..util.jsonsafe import encode_number
from .checkpoint import CHECKPOINT_NOTE, frame_of, is_checkpointed, region_inputs, value_meta
from .dtensor import describe, is_wrapped, local_tensor
from .summary import Summary
from .unbacked import UNBACKED_NOTE, unbacked

if TYPE_CHECKING:
    from .graph import BackwardGraph

__all__ = [
    "COPYSLICES_NOTE",
    "CPP_NOTE",
    "FREED_NOTE",
    "AliasIndex",
    "SavedIndex",
    "SavedKind",
    "SavedState",
    "SavedValue",
    "error_state",
    "read_saved",
    "read_saved_tensor",
    "safe_repr",
    "saved_names",
    "storage_key",
    "storage_owners",
]

SavedKind = Literal["tensor", "scalar", "tuple", "none"]
#: "unknown": this torch cannot tell without unpacking it (`note` names the torch that can).
SavedState = Literal["ok", "freed", "stale", "packed", "unknown"]

FREED_NOTE = (
    "freed: backward() already ran on this graph without retain_graph=True, which frees saved "
    "tensors. Capture before calling backward(), or call backward(retain_graph=True)."
)
CPP_NOTE = "C++ custom Functions (CppNode) do not expose their saved values to Python"
COPYSLICES_NOTE = (
    "hidden by torch: a CopySlices node (an in-place op on a view) wraps the op's own backward "
    "node and exposes none of what that op saved (dropout's noise, a multiplier) to Python, so "
    "those bytes cannot be counted here"
)
_U64 = 2**64
_VERSION_RE = re.compile(r"is at version (\d+); expected version (\d+)")

# Attributes of custom-Function node objects that are torch's, not the user's ctx attributes.
_CTX_INTERNAL = frozenset(
    {"to_save", "non_differentiable", "dirty_tensors", "saved_for_forward", "materialize_grads"}
)


@dataclass(slots=True)
class SavedValue:
    """One value a node holds for its backward. Tensor fields are None for non-tensors.

    Example:
        >>> v = g.saved("n1")[1]
        >>> v.name, v.kind, v.state, v.aliases
        ('self', 'tensor', 'ok', ['parameter x (the very object)'])
    """

    name: str
    kind: SavedKind
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    device: str | None = None
    stride: tuple[int, ...] | None = None
    nbytes: int | None = None
    state: SavedState = "ok"
    #: What else holds this storage: "parameter 0.weight (the very object)", "n4.result", ...
    aliases: list[str] = field(default_factory=list)
    #: Ids of the nodes behind `aliases` (leaves' AccumulateGrad, other savers), for highlighting.
    alias_ids: list[str] = field(default_factory=list)
    summary: Summary | None = None
    #: Non-tensors: the value (quirks fixed: -100, "unset"); tensors: the values (all of them up
    #: to 64 elements, else the first 8), as in `Summary.values`.
    value: Any = None
    note: str | None = None
    #: For stale tensors: (version when saved, version now).
    versions: tuple[int, int] | None = None
    #: Size of the whole storage this tensor views (what it keeps alive), and its identity key.
    storage_nbytes: int | None = None
    storage_key: tuple[str, int] | None = field(default=None, repr=False)
    #: True for a value of a non-reentrant checkpoint region: nothing is held, backward
    #: recomputes it (never read here; `note` says what is known).
    recomputed: bool = False
    #: Further storages this value keeps alive, as ((device, data_ptr), storage bytes): each
    #: tensor of a saved tensor list, or a checkpoint region's inputs (what it recomputes from).
    storages: list[tuple[tuple[str, int], int]] = field(default_factory=list, repr=False)

    def as_dict(self) -> dict[str, Any]:
        """The record as a JSON-safe dict (numbers in the one encoding, exotic values as repr).

        Example:
            >>> g.saved("n1")[0].as_dict()["value"]
            2
        """
        d = {k: getattr(self, k) for k in self.__slots__ if k not in ("storage_key", "storages")}
        d["summary"] = self.summary.as_dict() if self.summary is not None else None
        d["value"] = _json_safe(self.value)
        return d


def _json_safe(v: Any) -> Any:
    """A saved value's display form in the one JSON encoding (anything exotic as its repr)."""
    if isinstance(v, tuple | list):
        return [_json_safe(x) for x in v]
    if isinstance(v, bool | int | float | complex | str) or v is None:
        return encode_number(v) if isinstance(v, float | complex) else v
    return safe_repr(v)


def safe_repr(v: Any, limit: int = 200) -> str:
    """repr() that never raises: a user's ctx attribute can have a broken __repr__.

    Example:
        >>> safe_repr("x" * 300, limit=10)
        "'xxxxxxxxx"
    """
    try:
        r = repr(v)
    except Exception:
        r = f"<{type(v).__name__}: repr failed>"
    return r[:limit]


def _display(v: Any) -> Any:
    """Fix the known display quirks of non-tensor saved fields."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, int):
        # Optional/negative int64 fields come back through uint64: -100 reads 18446744073709551516.
        return v - _U64 if v >= 2**63 else v
    if isinstance(v, tuple) and not v:
        return "unset"
    if isinstance(v, tuple):
        return tuple(_display(x) for x in v)
    return v


def storage_key(t: torch.Tensor) -> tuple[str, int] | None:
    """Identity of the memory a tensor views: (device, storage data pointer); a DTensor's is its
    local shard's.

    Example:
        >>> t = torch.ones(4)
        >>> storage_key(t[1:]) == storage_key(t)
        True
    """
    if type(t) is not torch.Tensor and is_wrapped(t):
        t = local_tensor(t)
    try:
        st = t.untyped_storage()
    except (RuntimeError, NotImplementedError):  # sparse, meta, nested...
        return None
    return (str(t.device), st.data_ptr())


def _storage_nbytes(t: torch.Tensor) -> int | None:
    if type(t) is not torch.Tensor and is_wrapped(t):
        t = local_tensor(t)
    try:
        return int(t.untyped_storage().nbytes())
    except (RuntimeError, NotImplementedError):
        return None


def _storages(tensors: Any) -> list[tuple[tuple[str, int], int]]:
    """(storage key, storage bytes) of each tensor, each storage once."""
    out: dict[tuple[str, int], int] = {}
    for t in tensors:
        key, nb = storage_key(t), _storage_nbytes(t)
        if key is not None and nb is not None:
            out.setdefault(key, nb)
    return list(out.items())


def _checkpoint_record(name: str, raw: Any) -> SavedValue:
    """A checkpointed value, described without unpacking it (that would recompute its region):
    the shape/dtype/device torch recorded at save time and the region's inputs (what it keeps)."""
    rec = SavedValue(name=name, kind="tensor", state="packed", recomputed=True)
    meta = value_meta(raw)
    known = "shape unknown (determinism_check='none')"
    if not compat.SAVED_DATA:
        known = f"shape unknown on torch {compat.torch_version()}"
    if meta is not None:
        shape, dtype, device = meta
        rec.shape, rec.dtype, rec.device = shape, dtype_name(dtype), str(device)
        numel = 1
        for d in shape:
            numel *= d
        rec.nbytes = numel * dtype.itemsize
        known = f"{list(shape)} {dtype_name(dtype)} on {device}, {rec.nbytes} bytes when recomputed"
    frame = frame_of(raw)
    rec.value = f"recomputed during backward ({known})"
    if frame is None:  # this torch keeps the checkpoint's bookkeeping where it is not read
        rec.note = (
            f"{CHECKPOINT_NOTE}. Recomputed value: {known}. The tensors its region holds to "
            f"recompute from are unknown on torch {compat.torch_version()} (not counted)."
        )
        return rec
    inputs = region_inputs(frame)
    rec.storages = _storages(inputs)
    held = sum(nb for _, nb in rec.storages)
    rec.note = (
        f"{CHECKPOINT_NOTE}. Recomputed value: {known}. The region holds its "
        f"{len(inputs)} input tensor(s) ({held} bytes) to recompute from."
    )
    return rec


def _tensor_record(name: str, t: torch.Tensor, *, stats: bool = True) -> SavedValue:
    shard = None
    if type(t) is not torch.Tensor and is_wrapped(t):  # what this rank holds: its local shard
        shard = describe(t)
        t = local_tensor(t)
    rec = SavedValue(
        name=name,
        kind="tensor",
        shape=tuple(t.shape),
        dtype=dtype_name(t.dtype),
        device=str(t.device),
        stride=tuple(t.stride()) if t.layout == torch.strided else None,
        nbytes=t.numel() * t.element_size(),
        storage_nbytes=_storage_nbytes(t),
        storage_key=storage_key(t),
        note=shard,
    )
    if stats and unbacked(t):  # FSDP2 freed it until the backward: reading it would crash
        rec.state = "freed"
        rec.note = UNBACKED_NOTE if shard is None else f"{shard}; {UNBACKED_NOTE}"
    elif stats and t.layout == torch.strided and not t.is_meta:
        rec.summary = Summary.of(t.detach())
        if shard is not None:
            rec.summary = replace(rec.summary, shard=shard)
        rec.value = rec.summary.values
    return rec


def _value_record(name: str, v: Any) -> SavedValue:
    if isinstance(v, torch.Tensor):
        return _tensor_record(name, v)
    if v is None:
        return SavedValue(name=name, kind="none", value=None)
    if isinstance(v, tuple | list):
        if any(isinstance(x, torch.Tensor) for x in v):
            rec = SavedValue(name=name, kind="tuple")
            rec.storages = _storages(x for x in v if isinstance(x, torch.Tensor))
            rec.note = f"{len(v)} tensors: " + ", ".join(
                f"{list(x.shape)} {dtype_name(x.dtype)}" if isinstance(x, torch.Tensor)
                else safe_repr(x)
                for x in v
            )
            return rec
        return SavedValue(name=name, kind="tuple", value=_display(tuple(v)))
    if isinstance(v, bool | int | float | complex | str):
        return SavedValue(name=name, kind="scalar", value=_display(v))
    return SavedValue(name=name, kind="scalar", value=safe_repr(v))


def error_state(err: RuntimeError) -> tuple[SavedState, str, tuple[int, int] | None]:
    """(state, note, (saved version, current version) or None) of a saved value whose read
    raised `err`: "freed" or "stale" from torch's own message (any other: "freed", its text).

    Example:
        >>> msg = "modified by an inplace operation: ... is at version 2; expected version 1"
        >>> error_state(RuntimeError(msg))[0::2]
        ('stale', (1, 2))
    """
    msg = str(err)
    first = msg.splitlines()[0] if msg else type(err).__name__
    if "backward through the graph a second time" in msg or "already been freed" in msg:
        return "freed", FREED_NOTE, None
    if "modified by an inplace operation" in msg:
        m = _VERSION_RE.search(msg)
        versions = (int(m.group(2)), int(m.group(1))) if m else None
        when = f" (saved at version {versions[0]}, now {versions[1]})" if versions else ""
        note = (
            f"stale: modified in place after it was saved{when}; stepping this node raises the "
            f"engine's error: {first.split('. Hint')[0]}"
        )
        return "stale", note, versions
    return "freed", first, None


def _mark_packed(rec: SavedValue, raw: Any) -> None:
    """Mark a value held packed by `saved_tensors_hooks`: what is held is the packed form.

    The record's shape/dtype/statistics describe the unpacked tensor (what backward will see);
    memory and aliasing follow the packed form, which is what the node keeps alive. The unpacked
    tensor is a temporary: its storage is freed (and its address reused) right away.
    """
    if compat.unpack_hook(raw) is None:
        return
    data = compat.saved_data(raw)
    rec.state = "packed"
    if isinstance(data, torch.Tensor):
        rec.storage_key = storage_key(data)
        rec.storage_nbytes = _storage_nbytes(data)
        rec.note = (
            "packed by torch.autograd.graph.saved_tensors_hooks into a tensor "
            f"{list(data.shape)} {dtype_name(data.dtype)} on {data.device}; the fields "
            "describe the unpacked tensor, memory counts the packed one"
        )
    else:
        rec.storage_key = None
        rec.storage_nbytes = None
        rec.value = safe_repr(data)
        rec.note = (
            f"packed by torch.autograd.graph.saved_tensors_hooks: the pack hook returned a "
            f"{type(data).__name__}, shown as value; the fields describe the unpacked tensor"
        )


def _read_one(fn: Any, short: str, objects: dict[str, Any]) -> SavedValue:
    raw = getattr(fn, "_raw_saved_" + short, None)
    if is_checkpointed(raw):
        return _checkpoint_record(short, raw)
    try:
        v = compat.saved_value(fn, "_saved_" + short)
    except compat.UnpackRefused as refused:
        return _refused_record(short, raw, refused)
    except RuntimeError as err:
        return _unreadable_record(short, raw, err)
    rec = _value_record(short, v)
    if rec.kind == "tensor":
        objects[short] = v  # for identity checks, without unpacking (a hook call) again
        _mark_packed(rec, raw)
    return rec


def _unreadable_record(name: str, raw: Any, err: RuntimeError) -> SavedValue:
    """A value whose read raised (freed, stale): what the node holds now, where torch can say."""
    state, note, versions = error_state(err)
    data = compat.saved_data(raw)
    if isinstance(data, torch.Tensor):
        # Metadata of what is there now; statistics of mutated data would mislead.
        rec = _tensor_record(name, data, stats=False)
    else:
        rec = SavedValue(name=name, kind="tensor")
        if state == "stale" and not compat.SAVED_DATA:
            since = compat.SAVED_DATA_TORCH
            note += ". Its shape and bytes: " + compat.unknown_note("the stale tensor", since)
    rec.state, rec.note, rec.versions = state, note, versions
    return rec


def _refused_record(name: str, raw: Any, refused: compat.UnpackRefused) -> SavedValue:
    """A value this torch cannot look at without running Python code first (compat.py)."""
    if refused.checkpoint:
        return _checkpoint_record(name, raw)
    what = (f"whether it is packed, its shape and what it holds (reading it would first run "
            f"{refused.code} from {refused.module}, most likely an unpack hook)")
    return SavedValue(name=name, kind="tensor", state="unknown",
                      note=compat.unknown_note(what, compat.SAVED_DATA_TORCH))  # fmt: skip


_NAMES: dict[type, list[str]] = {}


def _names_for(fn: Any) -> list[str]:
    names = _NAMES.get(type(fn))
    if names is None:  # built-in node types declare their saved fields on the type
        names = _NAMES[type(fn)] = [a[7:] for a in dir(type(fn)) if a.startswith("_saved_")]
    return names


def saved_names(fn: Any) -> list[str]:
    """The `<name>`s of a built-in node's `_saved_<name>` fields (read from its type, cached).

    Example:
        >>> saved_names(g.fn("n1"))
        ['exponent', 'self']
    """
    return list(_names_for(fn))


def _read_custom(fn: Any) -> list[SavedValue]:
    out: list[SavedValue] = []
    raws = getattr(fn, "_raw_saved_tensors", ())
    if any(is_checkpointed(r) for r in raws):
        # `saved_tensors` would unpack them all (a recompute): describe each from its raw form.
        for i, raw in enumerate(raws):
            name = f"saved_tensors[{i}]"
            data = None if is_checkpointed(raw) else compat.saved_data(raw)
            if isinstance(data, torch.Tensor):
                out.append(_tensor_record(name, data))
            else:
                out.append(_checkpoint_record(name, raw))
        _ctx_records(fn, out)
        return out
    try:
        tensors = compat.saved_value(fn, "saved_tensors")
    except compat.UnpackRefused as refused:  # an older torch: which of them is hooked is unknown
        out.extend(_refused_record(f"saved_tensors[{i}]", r, refused) for i, r in enumerate(raws))
    except RuntimeError as err:
        out.extend(_unreadable_record(f"saved_tensors[{i}]", r, err) for i, r in enumerate(raws))
        if not raws:
            state, note, _ = error_state(err)
            out.append(SavedValue(name="saved_tensors", kind="tuple", state=state, note=note))
    else:
        for i, t in enumerate(tensors):
            rec = _value_record(f"saved_tensors[{i}]", t)
            if rec.kind == "tensor" and i < len(raws):
                _mark_packed(rec, raws[i])
            out.append(rec)
    _ctx_records(fn, out)
    return out


def _ctx_records(fn: Any, out: list[SavedValue]) -> None:
    """Append the user's own ctx attributes of a custom Function node."""
    attrs = getattr(fn, "__dict__", {})
    for k, v in attrs.items():
        if k.startswith("_") or k in _CTX_INTERNAL:
            continue
        out.append(_value_record(f"ctx.{k}", v))


def _copyslices_record(fn: Any) -> SavedValue:
    """What can be told of a CopySlices node's hidden saved values: the base tensor's size
    (each value the wrapped in-place op saved is at most a view of that size, or a scalar)."""
    metas = getattr(fn, "_input_metadata", ())
    base = ""
    if metas:
        m = metas[0]
        numel = 1
        for d in m.shape:
            numel *= d
        base = (
            f"; the view's base is {list(m.shape)} {dtype_name(m.dtype)} "
            f"({numel * m.dtype.itemsize} bytes): each hidden value is typically at most the "
            f"size of the view, which is at most that"
        )
    return SavedValue(name="(hidden by CopySlices)", kind="none", note=COPYSLICES_NOTE + base)


def read_saved(graph: BackwardGraph, node_id: str, index: SavedIndex) -> list[SavedValue]:
    """Records for every value `node_id` saved (see `BackwardGraph.saved`).

    Example:
        >>> [v.name for v in read_saved(g, "n1", SavedIndex())]
        ['exponent', 'self']
    """
    node = graph.nodes[node_id]
    if node.kind == "accumulate_grad":
        return []
    if node.kind == "cpp_function":
        return [SavedValue(name="(not exposed)", kind="none", note=CPP_NOTE)]
    fn = graph.fn(node_id)
    if node.name.endswith("CopySlices"):
        return [_copyslices_record(fn)]
    objects: dict[str, Any] = {}
    recs = _read_custom(fn) if node.kind == "custom_function" else [
        _read_one(fn, short, objects) for short in _names_for(fn)
    ]
    _fill_aliases(graph, index, node_id, objects, recs)
    return recs


def read_saved_tensor(graph: BackwardGraph, node_id: str, name: str) -> torch.Tensor:
    """The full saved tensor `name` of `node_id` (a detached view: no graph, no copy).

    Example:
        >>> read_saved_tensor(g, "n1", "self")
        tensor(2.)
    """
    node = graph.nodes[node_id]
    fn = graph.fn(node_id)
    if node.kind == "custom_function":
        m = re.fullmatch(r"saved_tensors\[(\d+)\]", name)
        if m is None:
            raise KeyError(f"{node_id} ({node.name}) has saved tensors named saved_tensors[i]")
        raws = getattr(fn, "_raw_saved_tensors", ())
        i = int(m.group(1))
        if i < len(raws) and is_checkpointed(raws[i]):
            raise RuntimeError(f"{node_id}.{name}: {CHECKPOINT_NOTE}")
        try:
            t = compat.asked_value(fn, "saved_tensors", CHECKPOINT_NOTE)[i]
        except RuntimeError as err:
            raise RuntimeError(f"{node_id}.{name}: {error_state(err)[1]}") from None
    else:
        known = _names_for(fn)  # hasattr() would read the value, and that can raise
        if name not in known:
            names = ", ".join(known) or "none"
            raise KeyError(f"{node_id} ({node.name}) saved no {name!r}; it saved: {names}")
        if is_checkpointed(getattr(fn, "_raw_saved_" + name, None)):
            raise RuntimeError(f"{node_id}.{name}: {CHECKPOINT_NOTE}")
        try:
            t = compat.asked_value(fn, "_saved_" + name, CHECKPOINT_NOTE)
        except RuntimeError as err:
            raise RuntimeError(f"{node_id}.{name}: {error_state(err)[1]}") from None
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{node_id}.{name} is a {type(t).__name__}, not a tensor: {t!r}")
    if unbacked(t):
        raise RuntimeError(f"{node_id}.{name}: {UNBACKED_NOTE}")
    return t.detach()


# ------------------------------------------------------------------------------ aliasing
class AliasIndex:
    """Who owns which storage in a graph: leaves (by name), root outputs, saved values.

    Example:
        >>> AliasIndex(g).objects[id(x)]
        ('parameter x', 'n3')
    """

    def __init__(self, graph: BackwardGraph) -> None:
        self.owners: dict[tuple[str, int], list[tuple[str, str]]] = {}
        self.objects: dict[int, tuple[str, str]] = {}
        self.leaf_storages: set[tuple[str, int]] = set()
        for lid in graph.leaves:
            var = graph.fn(lid).variable
            node = graph.nodes[lid]
            name = node.leaf_name or lid
            kind = "parameter" if node.leaf_kind == "parameter" else "input"
            # Default names already say what they are ("input 0 [3]", "param 1 [2, 2]").
            label = name if name.startswith(("input ", "param ")) else f"{kind} {name}"
            key = storage_key(var)
            if key is not None:
                self.owners.setdefault(key, []).append((label, lid))
                self.leaf_storages.add(key)
            self.objects[id(var)] = (label, lid)
        for k, t in enumerate(graph.root_tensors):
            key = storage_key(t)
            rid = graph.roots[k][0]
            if key is not None:
                label = f"output of {rid} ({graph.nodes[rid].name})"
                self.owners.setdefault(key, []).append((label, rid))


def _fill_aliases(
    graph: BackwardGraph,
    saved: SavedIndex,
    node_id: str,
    objects: dict[str, Any],
    recs: list[SavedValue],
) -> None:
    """Name what each saved tensor shares storage with (objects first, then storages)."""
    if not any(r.storage_key is not None for r in recs):
        return
    index = saved.aliases(graph)
    for r in recs:
        if r.storage_key is None:
            continue
        names: list[str] = []
        ids: list[str] = []
        if r.name.startswith("result"):
            names.append("the forward op's output")
        obj = objects.get(r.name) if r.state == "ok" else None
        very = index.objects.get(id(obj)) if obj is not None else None
        if very is not None:
            names.append(f"{very[0]} (the very object)")
            ids.append(very[1])
        for owner in index.owners.get(r.storage_key, []):
            if owner != very:
                names.append(owner[0])
                if owner[1] != node_id:
                    ids.append(owner[1])
        for other, oname in saved.storage_owners(graph).get(r.storage_key, []):
            if other == node_id and oname == r.name:
                continue
            names.append(f"{other}.{oname} ({graph.nodes[other].name})")
            if other != node_id:
                ids.append(other)
        r.aliases = names
        r.alias_ids = list(dict.fromkeys(ids))


def storage_owners(graph: BackwardGraph) -> dict[tuple[str, int], list[tuple[str, str]]]:
    """Storage -> every (node id, saved name) holding it, over the whole graph (cheap reads).

    Example:
        >>> storage_owners(g)[storage_key(x)]
        [('n1', 'self')]
    """
    out: dict[tuple[str, int], list[tuple[str, str]]] = {}
    for nid, node in graph.nodes.items():
        if node.kind in ("accumulate_grad", "cpp_function"):
            continue
        fn = graph.fn(nid)
        if node.kind == "custom_function":
            raws = fn._raw_saved_tensors
            items = list(zip([f"saved_tensors[{i}]" for i in range(len(raws))],
                             compat.held_values(fn, "saved_tensors", raws)))  # fmt: skip
        else:
            items = [(s, compat.held_values(fn, "_saved_" + s, [getattr(fn, "_raw_saved_" + s,
                                                                         None)])[0])
                     for s in _names_for(fn)]  # fmt: skip
        for name, data in items:
            if isinstance(data, torch.Tensor):
                key = storage_key(data)
                if key is not None:
                    out.setdefault(key, []).append((nid, name))
    return out


class SavedIndex:
    """The saved-value caches of one graph: records per node, storage owners, aliasing.

    Owned by a `BackwardGraph` (its `saved()`, `saved_tensor()` and `saved_memory()` delegate
    here); everything is read lazily on first request and dropped by `clear()` when the graph
    closes. Holds no torch objects beyond what the records and storage keys describe.

    The graph is passed to each call rather than stored: a graph -> index -> graph cycle would
    keep the torch graph alive until the cycle collector runs.

    Example:
        >>> index = SavedIndex()
        >>> [v.name for v in index.read(g, "n1")]
        ['exponent', 'self']
    """

    def __init__(self) -> None:
        self._records: dict[str, list[SavedValue]] = {}
        self._aliases: AliasIndex | None = None
        self._owners: dict[tuple[str, int], list[tuple[str, str]]] | None = None

    def read(self, graph: BackwardGraph, node_id: str) -> list[SavedValue]:
        """The records of what `node_id` saved, read once and then cached (a fresh list).

        Example:
            >>> [v.kind for v in SavedIndex().read(g, "n1")]
            ['scalar', 'tensor']
        """
        cached = self._records.get(node_id)
        if cached is None:
            cached = self._records[node_id] = read_saved(graph, node_id, self)
        return list(cached)

    def aliases(self, graph: BackwardGraph) -> AliasIndex:
        """Who owns which storage (leaves, root outputs), built on first use.

        Example:
            >>> SavedIndex().aliases(g).leaf_storages == {storage_key(x), storage_key(y)}
            True
        """
        if self._aliases is None:
            self._aliases = AliasIndex(graph)
        return self._aliases

    def storage_owners(self, graph: BackwardGraph) -> dict[tuple[str, int], list[tuple[str, str]]]:
        """Storage -> every (node id, saved name) holding it, built on first use.

        Example:
            >>> list(SavedIndex().storage_owners(g).values())
            [[('n1', 'self')]]
        """
        if self._owners is None:
            self._owners = storage_owners(graph)
        return self._owners

    def clear(self) -> None:
        """Drop every cache (the graph is closing).

        Example:
            >>> index = SavedIndex(); _ = index.read(g, "n1"); index.clear()
        """
        self._records.clear()
        self._aliases = None
        self._owners = None
