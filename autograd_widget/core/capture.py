"""Turn output tensors into a `BackwardGraph`: an iterative walk over `grad_fn.next_functions`.

The walk is breadth-first from the roots and never recurses (torchviz dies with RecursionError
on a 10k-node chain). It reads only cheap per-node facts (name, sequence number, input metadata,
next functions); saved values are read later, on request, by `saved.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from ..util.compat import COMPILED_NODE_NAME, check_node_api, gradient_edge
from ..util.dtypes import dtype_name
from ..util.gcpause import gc_paused
from ..util.warn import warn_user
from . import track as track_module
from .freed import FREED_WARNING, freed_by_backward
from .fsdp import remember, sharding_of
from .graph import BackwardGraph
from .live import LiveRefs, drain_parked
from .records import Edge, Node, TensorMeta
from .regions import Region, RegionProgram, read_region
from .track import MODULE_KEY, module_classes_of

__all__ = ["capture"]

_CustomFunctionBase = torch._C._FunctionBase


_kinds: dict[type, str] = {}


def _kind_of_type(fn: Any) -> str:
    tname = type(fn).__name__
    if tname == "AccumulateGrad":
        return "accumulate_grad"
    if isinstance(fn, _CustomFunctionBase):
        return "custom_function"
    if tname == "CppFunction" or fn.name().startswith("CppNode"):
        return "cpp_function"
    return "function"


def _kind(fn: Any) -> str:
    k = _kinds.get(type(fn))
    if k is None:
        k = _kinds[type(fn)] = _kind_of_type(fn)
    return k


def _as_tensor_list(outputs: Any, what: str) -> list[torch.Tensor]:
    if isinstance(outputs, torch.Tensor):
        return [outputs]
    if isinstance(outputs, (str, bytes)) or not isinstance(outputs, Sequence):
        raise TypeError(
            f"{what} must be a torch.Tensor or a list/tuple of tensors, got "
            f"{type(outputs).__name__}"
        )
    items = list(outputs)
    for i, t in enumerate(items):
        if not isinstance(t, torch.Tensor):
            raise TypeError(
                f"{what}[{i}] is a {type(t).__name__}, not a torch.Tensor; pass only tensors "
                f"(e.g. the loss, or a model output)"
            )
    return items


def _check_root(t: torch.Tensor, i: int) -> None:
    where = "the output" if i < 0 else f"outputs[{i}]"
    if t.is_inference():
        raise ValueError(
            f"{where} was created under torch.inference_mode(), so it has no autograd graph. "
            "Run the forward pass outside inference_mode (torch.no_grad() has the same problem; "
            "use a plain context) to capture its backward graph."
        )
    try:
        grad_fn = t.grad_fn
    except RuntimeError as err:
        # A view of a multi-output op (split, unbind, ...) whose base was modified in place
        # afterwards: torch refuses to rebuild its grad_fn, and so does the engine.
        raise RuntimeError(
            f"{where} has no usable grad_fn: {err} Or recompute the output after the in-place "
            "change, then capture it."
        ) from None
    if grad_fn is None and not t.requires_grad:
        raise ValueError(
            f"{where} has no grad_fn and does not require grad, so there is no backward graph "
            "to capture. Make the inputs require grad (x.requires_grad_() or "
            "torch.tensor(..., requires_grad=True)) and compute the output outside "
            "torch.no_grad() / inference_mode."
        )
    if t.is_meta:
        raise ValueError(
            f"{where} is a meta tensor (no data); its graph can be walked but never stepped. "
            "Run the forward pass on a real device (cpu or cuda)."
        )


def _check_not_only_leaves(roots: list[torch.Tensor], single: bool) -> None:
    """A lone leaf (or only leaves) as the output is a mistake: its backward graph is one
    AccumulateGrad node per leaf, with nothing to step (x's gradient w.r.t. x is the seed itself).
    Almost always the input was passed where the output was meant; say so and what to pass."""
    if any(t.grad_fn is not None for t in roots):
        return
    t = roots[0]
    what = "the output is a leaf tensor" if single else "every output is a leaf tensor"
    raise ValueError(
        f"{what} (shape {list(t.shape)}, requires_grad=True, made by no op), so its backward "
        "graph is a single AccumulateGrad node: there is nothing to step. Pass a tensor "
        "computed FROM it instead, e.g. the loss or the model's output: "
        "aw.explore(loss) with loss = model(x).sum(), or aw.explore((x**2).sum())."
    )


def _normalise_grad_outputs(
    grad_outputs: Any, roots: list[torch.Tensor]
) -> tuple[torch.Tensor | None, ...]:
    if grad_outputs is None:
        return tuple(None for _ in roots)
    if isinstance(grad_outputs, torch.Tensor):
        gos: list = [grad_outputs]
    elif isinstance(grad_outputs, Sequence) and not isinstance(grad_outputs, (str, bytes)):
        gos = list(grad_outputs)
    else:
        raise TypeError(
            "grad_outputs must be a tensor, a sequence of tensors/None, or None, got "
            f"{type(grad_outputs).__name__}"
        )
    if len(gos) != len(roots):
        raise ValueError(
            f"grad_outputs has {len(gos)} entries but there are {len(roots)} outputs; give one "
            "per output (None for an implicit 1.0 on a real scalar output)"
        )
    for i, (g, t) in enumerate(zip(gos, roots)):
        if g is None:
            continue
        if not isinstance(g, torch.Tensor):
            raise TypeError(f"grad_outputs[{i}] is a {type(g).__name__}, not a tensor or None")
        if g.shape != t.shape:
            raise ValueError(
                f"grad_outputs[{i}] has shape {list(g.shape)} but outputs[{i}] has shape "
                f"{list(t.shape)}; each grad_output must match its output's shape"
            )
        if g.is_meta and not t.is_meta:
            raise ValueError(
                f"grad_outputs[{i}] is a meta tensor (no data); give a real tensor on "
                f"{t.device}, e.g. torch.ones_like(outputs[{i}])"
            )
        if g.device != t.device and g.dim() != 0:
            # The engine moves only 0-d grad_outputs across devices ("invalid gradient at
            # index 0 - expected device cuda:0 but got cpu").
            raise ValueError(
                f"grad_outputs[{i}] is on {g.device} but outputs[{i}] is on {t.device}; move it "
                f"there first (grad_outputs[{i}].to(outputs[{i}].device))"
            )
        if g.is_complex() != t.is_complex():
            raise ValueError(
                f"grad_outputs[{i}] is {dtype_name(g.dtype)} but outputs[{i}] is "
                f"{dtype_name(t.dtype)}; give a grad_output of the output's kind (real/complex)"
            )
    return tuple(gos)


def _leaf_names(model: Any, params: Any) -> dict[int, str]:
    names: dict[int, str] = {}
    if model is not None:
        if not isinstance(model, torch.nn.Module):
            raise TypeError(
                f"model= must be a torch.nn.Module (for parameter names), got "
                f"{type(model).__name__}; use params={{name: tensor}} for plain tensors"
            )
        for name, p in model.named_parameters(remove_duplicate=False):
            names.setdefault(id(p), name)
    if params is not None:
        if not isinstance(params, Mapping):
            raise TypeError(
                f"params= must be a mapping of name -> tensor (e.g. dict(model.named_parameters()"
                f")), got {type(params).__name__}"
            )
        for name, p in params.items():
            if not isinstance(p, torch.Tensor):
                raise TypeError(f"params[{name!r}] is a {type(p).__name__}, not a tensor")
            names[id(p)] = str(name)
    return names


_dtype_names: dict = {}
_device_names: dict = {}


def _tensor_meta(key: tuple, metas: dict) -> TensorMeta:
    """The `TensorMeta` of `(shape, torch dtype, torch device)`, made once per capture."""
    shape, dt, dev = key
    dts = _dtype_names.get(dt)
    if dts is None:
        dts = _dtype_names[dt] = dtype_name(dt)
    devs = _device_names.get(dev)
    if devs is None:
        devs = _device_names[dev] = str(dev)
    tm = metas[key] = TensorMeta(shape, dts, devs)
    return tm


def _walk(
    fns: list, index: dict, names: dict[int, str], has_model: bool
) -> tuple[dict[str, Node], list[Edge], dict[int, str]]:
    """Breadth-first over `next_functions`; `fns` doubles as the queue, so no recursion.

    The hot loop of a capture (a few microseconds per node, most of it in torch's accessors):
    node ids are made once when a node is discovered and shared by its edges, edges are built
    with `tuple.__new__` (a NamedTuple's own constructor is Python code), and equal input
    metadata share one `TensorMeta` (a dict hit instead of a new record).
    """
    # `node.metadata` allocates a dict on first access (a third of the walk's cost): read it only
    # when something can have written to it: track() in this process, or anomaly mode (which
    # stamps every node of the forward, so the root tells).
    read_md = track_module.ever_used or bool(fns[0].metadata)
    nodes: dict[str, Node] = {}
    edges: list[Edge] = []
    add_edge = edges.append
    new_edge = tuple.__new__
    param_module: dict[int, str] = {}
    metas: dict[tuple, TensorMeta] = {}
    meta_of = metas.get
    kinds = _kinds
    ids = [f"n{i}" for i in range(len(fns))]
    unnamed = 0
    head = 0
    while head < len(fns):
        fn = fns[head]
        nid = ids[head]
        nexts = fn.next_functions
        out_nr = 0
        for nxt, in_nr in nexts:
            if nxt is not None:
                j = index.get(nxt)
                if j is None:
                    j = index[nxt] = len(fns)
                    fns.append(nxt)
                    ids.append(f"n{j}")
                add_edge(new_edge(Edge, (nid, out_nr, ids[j], in_nr)))
            out_nr += 1
        inputs = []
        for m in fn._input_metadata:
            key = (tuple(m.shape), m.dtype, m.device)
            try:
                inputs.append(meta_of(key) or _tensor_meta(key, metas))
            except TypeError:  # a symbolic size is not hashable: a record of its own
                inputs.append(_tensor_meta(key, {}))
        md = fn.metadata if read_md else None
        tb = md.get("traceback_") if md else None
        kind = kinds.get(type(fn)) or _kind(fn)
        node = Node(
            nid,
            "AccumulateGrad" if kind == "accumulate_grad" else fn.name(),
            kind,  # type: ignore[arg-type]
            fn._sequence_nr(),
            inputs,
            md.get(MODULE_KEY) if md else None,
            None,
            list(tb) if tb else None,
            None,
            out_nr,
        )
        if kind == "accumulate_grad":
            var = fn.variable
            leaf_name = names.get(id(var))
            if leaf_name is not None:
                node.leaf_name = leaf_name
                node.leaf_kind = "parameter"
                owner = leaf_name.rpartition(".")[0] if has_model else None
                if owner is not None and node.module is None:
                    node.module = owner
                    param_module[head] = owner
            else:
                node.leaf_kind = "parameter" if isinstance(var, torch.nn.Parameter) else "input"
                label = "param" if node.leaf_kind == "parameter" else "input"
                node.leaf_name = f"{label} {unnamed} {list(var.shape)}"
                unnamed += 1
        nodes[nid] = node
        head += 1
    return nodes, edges, param_module


def capture(
    outputs: torch.Tensor | Sequence[torch.Tensor],
    grad_outputs: torch.Tensor | Sequence[torch.Tensor | None] | None = None,
    *,
    model: torch.nn.Module | None = None,
    params: Mapping[str, torch.Tensor] | None = None,
) -> BackwardGraph:
    """Capture the backward graph behind `outputs` as a `BackwardGraph`, without running it.

    The graph holds the output tensors (a custom Function's node object alone does not keep the
    C++ graph alive) and touches nothing of the user's: no hooks, no `.grad`, no version bumps,
    no saved value unpacked. A graph already freed by `backward()` is captured too (its structure
    and non-tensor saved values stay readable, saved tensors report "freed"), with a warning.

    Args:
        outputs: a tensor with a `grad_fn` (the loss, a model's output) or a sequence of them.
            A leaf tensor alone raises `ValueError`: its graph is one `AccumulateGrad` node;
            pass what was computed from it. A leaf among other outputs is kept (as in
            `torch.autograd.grad`).
        grad_outputs: the seed of each output, as `torch.autograd.grad`'s: a tensor, one per
            output (None for an implicit 1 on a real scalar output), or None. Stored as
            `graph.grad_outputs` for the stepper.
        model: the `nn.Module` that computed `outputs`: names parameter leaves
            (`named_parameters()`, "0.weight") and gives nodes module paths; its class names the
            graph (`graph.model_name`). A model none of whose parameters is a leaf of the graph
            (and no custom Function could hide them) is ignored, with a warning naming it and
            the leaves found instead.
        params: names for leaves that are not parameters of `model`, `{"x": x}`.

    Returns:
        The `BackwardGraph`: `nodes`, `edges`, `roots`, `leaves`, saved values on request.

    Raises:
        ValueError: an output that has no graph (no `grad_fn`, created under `no_grad` or
            `inference_mode`), a leaf alone, an empty list, a `grad_outputs` that does not fit.
        TypeError: arguments of the wrong kind.

    Warns:
        UserWarning: the graph was already freed by `backward()` (why, and the fixes:
            recompute the forward pass, or `backward(retain_graph=True)`); `model=` names
            nothing in the graph.

    Example:
        >>> g = aw.capture(x**2 + y, params={"x": x, "y": y})
        >>> [g.nodes[i].leaf_name for i in g.leaves]
        ['y', 'x']
        >>> aw.capture(torch.ones(2))
        Traceback (most recent call last):
        ValueError: the output has no grad_fn and does not require grad, ...
        >>> aw.capture(x)
        Traceback (most recent call last):
        ValueError: the output is a leaf tensor (shape [], requires_grad=True, made by no op), ...
    """
    drain_parked()
    roots = _as_tensor_list(outputs, "outputs")
    if not roots:
        raise ValueError(
            "outputs is empty: pass the tensor whose backward you want to see (e.g. the loss)"
        )
    for i, t in enumerate(roots):
        _check_root(t, -1 if isinstance(outputs, torch.Tensor) else i)
    _check_not_only_leaves(roots, isinstance(outputs, torch.Tensor) or len(roots) == 1)
    gos = _normalise_grad_outputs(grad_outputs, roots)
    names = _leaf_names(model, params)
    sharding = sharding_of(model) if model is not None else None
    if sharding is not None:  # FSDP2: the leaves are the unsharded parameters (core/fsdp.py)
        for key, name in sharding.names().items():
            names.setdefault(key, name)
        if sharding.note:
            warn_user(sharding.note)

    fns: list = []
    index: dict = {}
    root_edges: list[tuple[int, int]] = []
    for t in roots:
        fn, output_nr = gradient_edge(t)
        if fn not in index:
            index[fn] = len(fns)
            fns.append(fn)
        root_edges.append((index[fn], output_nr))

    check_node_api(fns[0])
    # Every node visited gets a fresh Python wrapper; letting the cycle collector scan them all
    # while we allocate costs 2-3x the walk itself.
    try:
        with gc_paused():
            nodes, edges, param_module = _walk(fns, index, names, model is not None)
    except AttributeError:
        # A node lacking an attribute every node had: a torch whose private API moved. Name the
        # torch version (UnsupportedTorchError) instead of an AttributeError from inside the walk.
        for fn in fns:
            check_node_api(fn)
        raise

    for i, _ in root_edges:
        nodes[f"n{i}"].is_root = True

    # Without track(), a node takes the module of the parameters it consumes, when unambiguous.
    if param_module:
        owners: dict[str, set[str]] = {}
        for e in edges:
            m = param_module.get(int(e.dst[1:]))
            if m is not None:
                owners.setdefault(e.src, set()).add(m)
        for a, ms in owners.items():
            node = nodes[a]
            if node.module is None and len(ms) == 1:
                node.module = next(iter(ms))

    unsharded = set(sharding.names()) if sharding is not None else set()
    if model is not None and not _model_in_graph(model, nodes, fns, unsharded):
        model = None  # it names nothing here: no class name, no module classes from it
    live = LiveRefs(fns, list(roots), gos, by_fn=index)
    model_name = type(model).__name__ if model is not None else None
    regions, programs = _regions(fns, nodes)
    graph = BackwardGraph(
        nodes, edges, [(f"n{i}", nr) for i, nr in root_edges], live=live, model_name=model_name,
        module_classes=_module_classes(nodes, model), regions=regions, programs=programs,
    )
    remember(graph, sharding)
    if freed_by_backward(graph):
        warn_user(FREED_WARNING)
    return graph


def _model_in_graph(
    model: torch.nn.Module, nodes: dict[str, Node], fns: list, unsharded: set[int]
) -> bool:
    """True when some parameter of `model` (or an unsharded FSDP2 parameter of it: the ids in
    `unsharded`) is a leaf of the graph, or when that cannot be told (`model` has no parameters; a
    custom Function may hold them inside, out of sight, as a reentrant checkpoint does); else
    warn, naming the model's class and what the graph's leaves are instead."""
    own = {id(p) for p in model.parameters()} | unsharded
    if not own:
        return True  # a parameterless model (an activation, a functional wrapper): nothing to match
    leaves = [n for n in nodes.values() if n.kind == "accumulate_grad"]
    if any(id(fns[int(n.id[1:])].variable) in own for n in leaves):
        return True
    if any(n.kind in ("custom_function", "cpp_function") for n in nodes.values()):
        return True
    shown = ", ".join(str(n.leaf_name) for n in leaves[:4]) + (", ..." if len(leaves) > 4 else "")
    tracked = {getattr(n.module, "classes", {}).get("") for n in nodes.values()} - {None}
    where = (f"; the graph's ops were tracked in a {', '.join(sorted(tracked))}" if tracked
             else "")
    found = f"its {len(leaves)} leaves are {shown}" if leaves else "it has no leaves"
    warn_user(
        f"model={type(model).__name__} names nothing in this graph: none of its "
        f"{len(own)} parameters is a leaf of it ({found}{where}). Pass the model whose "
        "forward made these outputs (model=...), or name the leaves with params={name: tensor}; "
        f"the {type(model).__name__} is ignored."
    )
    return False


def _regions(
    fns: list, nodes: dict[str, Node]
) -> tuple[dict[str, Region], dict[str, RegionProgram]]:
    """The inside of every compiled region's node (core/regions.py), numbered in capture order;
    a program for each one that is available."""
    regions: dict[str, Region] = {}
    programs: dict[str, RegionProgram] = {}
    for i, node in enumerate(nodes.values()):
        if node.name == COMPILED_NODE_NAME:
            region, program = read_region(fns[i], node, len(regions) + 1)
            regions[node.id] = region
            if program is not None:
                programs[node.id] = program
    return regions, programs


def _module_classes(nodes: dict[str, Node], model: Any) -> dict[str, str]:
    """Module path -> class name, from the `track()` stamps and from `model`.

    A stamp is a `track.ModulePath` carrying its tracked model's classes: each node's module
    becomes a plain str again here, and the classes of every tracked model seen are merged (the
    stamps win over `model=` where both name a path: the nodes' paths came from the stamps).
    """
    out: dict[str, str] = module_classes_of(model) if model is not None else {}
    if not track_module.ever_used:
        return out
    seen: set[int] = set()
    for node in nodes.values():
        m = node.module
        if m is not None and type(m) is not str:
            classes = getattr(m, "classes", None)
            if isinstance(classes, dict) and id(classes) not in seen:
                seen.add(id(classes))
                out.update(classes)
            node.module = str(m)
    return out
