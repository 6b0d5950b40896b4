"""Compiled regions: the inside of a `CompiledFunctionBackward` node, read at capture.

torch.compile turns a region of the forward into one autograd node whose backward is an FX graph
of aten ops (DESIGN.md, "Compiled regions"). `read_region` turns that graph into plain
records a view can draw and a stepper can run: `Region.ops` (one `Node` of kind "aten" per op,
ids `f"{node_id}/{k}"`, in the graph's own order), `Region.edges` (`RegionEdge`s between them, and
from the region's node itself for the incoming gradients), `Region.inputs` (every argument of the
backward: saved activations, incoming gradients, symbolic sizes; named as torch names them) and
`Region.outputs` (which op output becomes which of the node's gradient outputs). Beside the
records, a `RegionProgram` (live: it holds the FX graph) says how to run each op: where each of
its arguments comes from.

Shapes are those of the call at hand: where the graph's own metadata cannot describe it (sizes
compiled symbolic, metadata cleared by torch's compile cache) they are worked out from the call's
saved values (core/regionvalues.py, which also runs a view the compiler's memory layout forbids
as a reshape); the ops' modules come from the FX metadata, from an earlier read of the same
region, or from dynamo's graph of the region where torch's compile cache cleared them
(`origin_metas`, core/regionmodules.py); `Region.modules_note` says why when none could be had.
`Region.values` tells the edges that carry no gradient.

Guarantees: reading never raises and never gives a wrong graph. Whatever is not as expected (the
private attributes moved, a cache entry without the module, an FX construct not handled here)
gives `available=False` with a `note` saying why, and the node stays an ordinary opaque node. No
saved tensor is unpacked here (only counted), as for every node at capture.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import torch

from ..util.compat import BackwardArg, compiled_backward, compiled_backward_layout
from ..util.dtypes import dtype_name
from .records import Node, RegionEdge, TensorMeta
from .regionvalues import call_values, eager_target, needs_call_values, origin_metas

__all__ = [
    "OpProgram",
    "Region",
    "RegionInput",
    "RegionOutput",
    "RegionProgram",
    "Source",
    "module_path_of",
    "opaque_reason",
    "read_region",
    "region_title",
    "value_edges",
]

InputKind = Literal["saved", "gradient", "symint", "opaque", "other"]
_KINDS: dict[str, InputKind] = {"saved": "saved", "grad": "gradient", "symint": "symint",
                                "opaque": "opaque", "other": "other"}  # fmt: skip


@dataclass(slots=True)
class RegionInput:
    """One argument the region's backward reads.

    Attributes:
        name: the FX placeholder's name ("primals_3", "addmm", "tangents_1").
        kind: "saved" (an activation or parameter the partitioner saved), "gradient" (an
            incoming gradient), "symint", "opaque" or "other" (a token, an RNG state).
        position: its index in the backward's argument list.
        index: the saved tensor's index (`node.saved_tensors`), or the node's input slot a
            gradient comes from; -1 for "other".
        meta: shape, dtype and device when it is a tensor, else None.
        users: ids of the ops that read it.
    """

    name: str
    kind: InputKind
    position: int
    index: int
    meta: TensorMeta | None
    users: list[str] = field(default_factory=list)


@dataclass(slots=True)
class RegionOutput:
    """Which value becomes gradient output `slot` of the region's node (a `next_functions`
    index): output `output_nr` of op `src`, or the input named `input` passed straight through
    (`src` None then); both None: the backward returns no gradient there."""

    slot: int
    src: str | None
    output_nr: int
    input: str | None = None


@dataclass(slots=True)
class Region:
    """The inside of one compiled region's node (`graph.regions[node_id]`).

    Attributes:
        node: the id of its `CompiledFunctionBackward` node.
        index: 1, 2, ... in capture order (what the drawing's title counts).
        ops: one `Node` per aten op, kind "aten", ids `f"{node}/{k}"`, in the FX graph's order;
            `inputs` has one entry per gradient-carrying input (an op's output, or an incoming
            gradient), `module` is the module path from the FX metadata where there is one.
        edges: `RegionEdge`s: op output -> op input, and node -> op for incoming gradients.
        inputs: the backward's arguments (`RegionInput`).
        outputs: the node's gradient outputs (`RegionOutput`), one per slot that gets one.
        available: False when the inside could not be read; the node is then opaque.
        note: why not, when not available ("" when it is).
        source: "module" (the lazy backward's module) or "cache" (rebuilt from a warm compile
            cache), "" when not available.
        values: ids of the edges that carry no gradient: a value computed from the saved
            activations alone (a recomputed activation, an integer index, a boolean mask),
            which a drawing shows as a saved value, not on the gradient scale. Every other
            edge carries a value that depends on an incoming gradient.
        modules_note: why its ops carry no module when torch's metadata was cleared and could
            not be recovered (core/regionmodules.py); "" when they carry theirs, or when the
            compiled code has no modules. The title and the status line say it.

    Example:
        >>> r = Region("n1", 1, [], [], [], [], False, "not reachable")
        >>> region_title(r), r.available
        ('compiled region 1 · opaque: inside not reachable', False)
    """

    node: str
    index: int
    ops: list[Node]
    edges: list[RegionEdge]
    inputs: list[RegionInput]
    outputs: list[RegionOutput]
    available: bool
    note: str
    source: str = ""
    values: list[str] = field(default_factory=list)
    modules_note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict (see `from_dict`).

        Example:
            >>> Region("n1", 1, [], [], [], [], False, "why").to_dict()["note"]
            'why'
        """
        ops = []
        for op in self.ops:
            d = asdict(op)
            d["inputs"] = [[list(m.shape), m.dtype, m.device] for m in op.inputs]
            ops.append(d)
        return {
            "node": self.node, "index": self.index, "ops": ops,
            "edges": [[e.src, e.output_nr, e.dst, e.input_nr] for e in self.edges],
            "inputs": [{**asdict(i), "meta": _meta_list(i.meta)} for i in self.inputs],
            "outputs": [asdict(o) for o in self.outputs],
            "available": self.available, "note": self.note, "source": self.source,
            "values": list(self.values), "modules_note": self.modules_note,
        }  # fmt: skip

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Region:
        """Rebuild a region from `to_dict()` output (KeyError/TypeError/ValueError when
        malformed: the graph's `from_dict` turns them into its own message).

        Example:
            >>> Region.from_dict(Region("n1", 1, [], [], [], [], False, "why").to_dict()).note
            'why'
        """
        ops = []
        for od in d["ops"]:
            od = dict(od)
            od["inputs"] = [TensorMeta(tuple(s), str(t), str(v)) for s, t, v in od["inputs"]]
            ops.append(Node(**od))
        inputs = []
        for i in d["inputs"]:
            i = dict(i)
            m = i.pop("meta")
            inputs.append(RegionInput(**i, meta=None if m is None else
                                      TensorMeta(tuple(m[0]), str(m[1]), str(m[2]))))
        return cls(
            str(d["node"]), int(d["index"]), ops,
            [RegionEdge(str(a), int(b), str(c), int(e)) for a, b, c, e in d["edges"]],
            inputs, [RegionOutput(**o) for o in d["outputs"]],
            bool(d["available"]), str(d["note"]), str(d.get("source", "")),
            [str(v) for v in d.get("values", ())], str(d.get("modules_note", "")),
        )  # fmt: skip


def _meta_list(m: TensorMeta | None) -> list | None:
    return None if m is None else [list(m.shape), m.dtype, m.device]


def value_edges(regions: Mapping[str, Region]) -> frozenset[str]:
    """Ids of every edge of `regions` that carries no gradient (`Region.values`).

    Example:
        >>> value_edges({"n1": Region("n1", 1, [], [], [], [], True, "", values=["n1/0:0>n1/1:0"])})
        frozenset({'n1/0:0>n1/1:0'})
    """
    return frozenset(v for r in regions.values() for v in r.values)


def region_title(region: Region) -> str:
    """The frame's (or folded box's) title: "compiled region k · N aten ops", with
    " · modules unknown" when its ops' modules could not be had (`Region.modules_note`).

    Example:
        >>> region_title(Region("n1", 2, [], [], [], [], True, ""))
        'compiled region 2 · 0 aten ops'
        >>> region_title(Region("n1", 2, [], [], [], [], True, "", modules_note="why"))
        'compiled region 2 · 0 aten ops · modules unknown'
    """
    if not region.available:
        return f"compiled region {region.index} · opaque: {opaque_reason(region)}"
    unknown = " · modules unknown" if region.modules_note else ""
    return f"compiled region {region.index} · {len(region.ops)} aten ops{unknown}"


#: (a part of a note, what the region's title says of it), the first match wins.
_REASONS = (
    ("aw.record keeps", "recorded as one node"),
    ("dynamic shapes", "symbolic sizes"),
    ("shapes inside the region could not be worked out", "sizes not worked out"),
    ("compile cache's backward module could not be rebuilt", "cache entry unreadable"),
    ("could not be read", "backward graph unreadable"),
    ("not reachable", "inside not reachable"),
    ("cannot be fed", "arguments not understood"),
    ("not supported", "unsupported backward"),
)


def opaque_reason(region: Region) -> str:
    """Why a region stays opaque, in a few words for its title on the drawing (its `note` says
    it in full, in the inspector and on the status line); "" when it is available.

    Example:
        >>> opaque_reason(Region("n1", 1, [], [], [], [], False, "the region's backward could "
        ...                      "not be read (ValueError: x)"))
        'backward graph unreadable'
        >>> opaque_reason(Region("n1", 1, [], [], [], [], False, "why"))
        'inside not readable'
    """
    if region.available:
        return ""
    return next((short for part, short in _REASONS if part in region.note), "inside not readable")


# --------------------------------------------------------------------------- the program
@dataclass(frozen=True)
class Source:
    """Where one FX value an op reads comes from: "slot" (the op's own input slot `index`: a
    gradient-carrying tensor), "arg" (the backward's argument `index`), "value" (output
    `output_nr` of op `index`, a non-tensor kept aside) or "const" (the module's attribute
    `name`)."""

    kind: str
    index: int = -1
    output_nr: int = 0
    name: str = ""


@dataclass(frozen=True)
class OpProgram:
    """How to run op k: `target(*args, **kwargs)` with each FX node in them replaced by the
    value its `Source` (keyed by the FX node's name) says."""

    target: Any
    args: tuple
    kwargs: dict
    sources: dict[str, Source]
    #: Per output: True when a tensor (it flows to slots), else kept aside as a "value".
    tensor_out: tuple[bool, ...]
    #: Per output: the region output slots it becomes (`RegionOutput.slot`).
    region_out: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class RegionProgram:
    """Everything needed to run a region's ops, beside its records (holds the FX module).

    Attributes:
        module: the FX GraphModule (its attributes are the "const" sources).
        layout: what each backward argument is (`util.compat.compiled_backward_layout`).
        ops: one `OpProgram` per op, in order.
        passthrough: (node output slot, backward argument index) for outputs that are an
            input passed straight through.
    """

    module: Any
    layout: tuple[BackwardArg, ...]
    ops: tuple[OpProgram, ...]
    passthrough: tuple[tuple[int, int], ...]


# --------------------------------------------------------------------------- reading
class _Unavailable(Exception):
    """Raised while reading a region whose inside cannot be represented faithfully."""


_ROOT = re.compile(r"^L\['[^']*'\]")
_ITEM = re.compile(r"\[['\"]?([^'\]\"]+)['\"]?\]")


def module_path_of(meta: Mapping[str, Any]) -> str | None:
    """The module path of an FX node from its `nn_module_stack` meta (innermost module; a
    backward op's `fwd_nn_module_stack`, the forward op it differentiates), in
    `named_modules()` form ("layers.0.fc1"), relative to the compiled module; None without one.

    Dynamo writes "L['self'].layers[0]._modules['fc1']"-like sources: the root (`L['...']`)
    is dropped, indexing and `_modules[...]` become dotted names.

    Example:
        >>> module_path_of({"nn_module_stack": {"a": ("L['self']", object),
        ...                                     "b": ("L['self'].layers[0].fc1", object)}})
        'layers.0.fc1'
        >>> module_path_of({"nn_module_stack": {"a": ("L['fn']", object)}}), module_path_of({})
        ('', None)
    """
    stack = meta.get("nn_module_stack") or meta.get("fwd_nn_module_stack")
    if not stack:
        return None
    try:
        path = str(list(stack.values())[-1][0])
    except (TypeError, IndexError):
        return None
    path = _ROOT.sub("", path).replace("._modules", "")
    path = _ITEM.sub(lambda m: "." + m.group(1), path)
    return path.strip(".")


def _tensor_meta(val: Any) -> TensorMeta | None:
    if isinstance(val, torch.Tensor):
        if any(isinstance(s, torch.SymInt) for s in val.shape):
            raise _Unavailable(
                "it was compiled with dynamic shapes (symbolic sizes, e.g. after a recompilation "
                "for a new input shape): its ops are read only for static shapes; compile with "
                "torch.compile(..., dynamic=False) to see them"
            )
        return TensorMeta(tuple(int(s) for s in val.shape), dtype_name(val.dtype), str(val.device))
    return None


def _outputs_of(val: Any) -> list[Any]:
    return list(val) if isinstance(val, (tuple, list)) else [val]


def read_region(fn: Any, node: Node, index: int) -> tuple[Region, RegionProgram | None]:
    """The region behind compiled node `fn` (record `node`), numbered `index`, and its program
    (None when not available).

    Args:
        fn: the live `CompiledFunctionBackward` node.
        node: its record (id, arity).
        index: the region's number in capture order (1, 2, ...).

    Guarantees: never raises; what cannot be read gives `available=False` and a note. Op ids
    are `f"{node.id}/{k}"`; getitem nodes are not ops (they name outputs of a multi-output op).

    Example:
        >>> r, prog = read_region(z.grad_fn, g.nodes["n0"], 1)  # not a compiled node
        >>> r.available, r.note, prog
        (False, 'AddBackward0 is not a compiled region (CompiledFunctionBackward)', None)
    """
    found = compiled_backward(fn)
    if found.module is None:
        return Region(node.id, index, [], [], [], [], False, found.note, found.source), None
    layout = compiled_backward_layout(fn)
    if isinstance(layout, str):
        return Region(node.id, index, [], [], [], [], False, layout, found.source), None
    try:
        region, program = _read(fn, node, index, found.module, layout)
    except _Unavailable as why:
        return Region(node.id, index, [], [], [], [], False, str(why), found.source), None
    except Exception as exc:  # anything unexpected: opaque, never a wrong graph
        note = f"the region's backward could not be read ({type(exc).__name__}: {exc})"
        return Region(node.id, index, [], [], [], [], False, note, found.source), None
    region.source = found.source
    return region, program


def _read(
    fn: Any, node: Node, index: int, module: Any, layout: list[BackwardArg]
) -> tuple[Region, RegionProgram]:
    graph = module.graph
    nid = node.id
    # The graph's own metadata, unless it cannot describe this call (a compile cache cleared
    # it, or its sizes are symbolic): then the values of this call (core/regionvalues.py).
    if needs_call_values(module):
        found = call_values(fn, module, layout)
        if isinstance(found, str):
            raise _Unavailable(found)
        call: dict[str, Any] = found

        def val_of(n: Any) -> Any:
            return call.get(n.name)
    else:
        def val_of(n: Any) -> Any:
            return n.meta.get("val")
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(layout):
        raise _Unavailable(
            f"the backward module takes {len(placeholders)} arguments but the compiled node "
            f"passes {len(layout)}: its aten ops cannot be fed"
        )
    # value of an FX node -> where it comes from: ("arg", position) or ("op", k)
    origin: dict[str, tuple[str, int]] = {}
    inputs: list[RegionInput] = []
    for pos, (ph, arg) in enumerate(zip(placeholders, layout)):
        origin[ph.name] = ("arg", pos)
        inputs.append(RegionInput(ph.name, _KINDS.get(arg.kind, "other"), pos, arg.index,
                                  _tensor_meta(val_of(ph))))  # fmt: skip
    getitem: dict[str, tuple[str, int]] = {}  # getitem node -> (producer FX name, output nr)
    op_nodes: list[Any] = []
    out_node = None
    for n in graph.nodes:
        if n.op == "placeholder":
            continue
        if n.op == "output":
            out_node = n
        elif n.op == "get_attr":
            origin[n.name] = ("const", -1)
        elif n.op == "call_function" and n.target is operator.getitem:
            src, i = n.args
            if not isinstance(i, int) or getattr(src, "name", None) not in origin:
                raise _Unavailable(f"unsupported getitem {n.name} in the backward graph")
            if origin[src.name][0] != "op":
                raise _Unavailable(f"getitem {n.name} of a non-op value in the backward graph")
            getitem[n.name] = (src.name, i)
        elif n.op == "call_function":
            origin[n.name] = ("op", len(op_nodes))
            op_nodes.append(n)
        else:
            raise _Unavailable(f"the backward graph has a {n.op} node ({n.name}), which is not "
                               "an aten op")
    if out_node is None:
        raise _Unavailable("the backward graph has no output")
    op_index = {n.name: k for k, n in enumerate(op_nodes)}
    # the modules: where torch kept them, or an earlier read did, or dynamo's graph says
    origins, modules_note = origin_metas(fn, module)

    def resolve(v: Any) -> tuple[str, int, int]:
        """(kind, index, output_nr) of FX value `v`: ("arg", pos, 0), ("op", k, nr), ("const")."""
        name = v.name
        if name in getitem:
            src, nr = getitem[name]
            return "op", op_index[src], nr
        kind, i = origin[name]
        return kind, i, 0

    vals = [_outputs_of(val_of(n)) for n in op_nodes]
    ops: list[Node] = []
    edges: list[RegionEdge] = []
    programs: list[dict] = []
    carries: dict[tuple[int, int], bool] = {}  # (op, output) -> depends on a gradient
    values: list[str] = []  # edges that carry no gradient (`Region.values`)
    for k, n in enumerate(op_nodes):
        slot_of: dict[tuple[str, int, int], int] = {}
        from_gradient = False
        metas: list[TensorMeta] = []
        sources: dict[str, Source] = {}
        for v in n.all_input_nodes:
            kind, i, nr = resolve(v)
            key = (kind, i, nr)
            if kind == "op":
                if nr >= len(vals[i]):
                    raise _Unavailable(f"output {nr} of {op_nodes[i].name} is not described")
                meta = _tensor_meta(vals[i][nr])
                if meta is None:
                    sources[v.name] = Source("value", i, nr)
                    continue
            elif kind == "arg":
                meta = inputs[i].meta
                if inputs[i].kind != "gradient" or meta is None:
                    sources[v.name] = Source("arg", i)
                    if f"{nid}/{k}" not in inputs[i].users:
                        inputs[i].users.append(f"{nid}/{k}")
                    continue
                if f"{nid}/{k}" not in inputs[i].users:
                    inputs[i].users.append(f"{nid}/{k}")
            else:
                sources[v.name] = Source("const", name=str(v.target))
                continue
            if key not in slot_of:
                slot_of[key] = len(metas)
                metas.append(meta)  # type: ignore[arg-type]
                src_id = f"{nid}/{i}" if kind == "op" else nid
                src_nr = nr if kind == "op" else inputs[i].index
                edges.append(RegionEdge(src_id, src_nr, f"{nid}/{k}", slot_of[key]))
                if kind == "op" and not carries.get((i, nr), False):
                    values.append(edges[-1].id)
            from_gradient = from_gradient or kind == "arg" or carries.get((i, nr), False)
            sources[v.name] = Source("slot", slot_of[key])
        for j, out in enumerate(vals[k]):
            carries[(k, j)] = from_gradient and isinstance(out, torch.Tensor) and (
                out.dtype.is_floating_point or out.dtype.is_complex)
        where = origins.get(n.name, {})
        tb = where.get("stack_trace")
        ops.append(Node(
            f"{nid}/{k}", _op_name(n.target), "aten", int(where.get("seq_nr", -1)), metas,
            module_path_of(where), None,
            [line for line in str(tb).splitlines() if line.strip()] if tb else None,
            None, len(vals[k]),
        ))  # fmt: skip
        programs.append({"target": eager_target(n.target), "args": n.args,
                         "kwargs": dict(n.kwargs), "sources": sources, "tensor_out": tuple(
                             isinstance(v, torch.Tensor) for v in vals[k])})  # fmt: skip
    outputs, passthrough, region_out = _outputs(fn, node, out_node, resolve, inputs, len(ops))
    if any(op.module for op in ops):
        modules_note = ""
    elif modules_note:
        modules_note = (f"its ops' modules are unknown: torch's compile cache cleared the "
                        f"backward graph's metadata, and {modules_note}")
    region = Region(nid, index, ops, edges, inputs, outputs, True, "", values=values,
                    modules_note=modules_note)
    program = RegionProgram(
        module, tuple(layout),
        tuple(OpProgram(region_out=tuple(tuple(region_out.get((k, j), ()))
                                         for j in range(len(vals[k]))), **p)
              for k, p in enumerate(programs)),
        tuple(passthrough),
    )  # fmt: skip
    return region, program


def _op_name(target: Any) -> str:
    """"aten::mm", "aten::sum.dim_IntList" for an OpOverload; the qualified name otherwise."""
    name = getattr(target, "name", None)
    if callable(name):
        try:
            return str(name())
        except Exception:
            pass
    return getattr(target, "__qualname__", None) or str(target)


def _outputs(
    fn: Any, node: Node, out_node: Any, resolve: Any, inputs: list[RegionInput], n_ops: int
) -> tuple[list[RegionOutput], list[tuple[int, int]], dict[tuple[int, int], list[int]]]:
    """Map the backward's results (one per forward argument) onto the node's output slots, as
    the engine does for a custom Function: results where `needs_input_grad` is True go, in
    order, to the non-None `next_functions`."""
    results = out_node.args[0]
    results = list(results) if isinstance(results, (tuple, list)) else [results]
    needs = [bool(b) for b in fn.needs_input_grad]
    valid = [i for i, (f, _) in enumerate(fn.next_functions) if f is not None]
    if len(results) != len(needs):
        raise _Unavailable(
            f"the backward returns {len(results)} values for {len(needs)} forward inputs "
            "(tokens or RNG states): not supported"
        )
    if sum(needs) != len(valid):
        raise _Unavailable("the node's outgoing edges do not match the inputs needing grad")
    outputs: list[RegionOutput] = []
    passthrough: list[tuple[int, int]] = []
    region_out: dict[tuple[int, int], list[int]] = {}
    j = 0
    for pos, v in enumerate(results):
        if not needs[pos]:
            continue
        slot = valid[j]
        j += 1
        if v is None:
            outputs.append(RegionOutput(slot, None, 0))
            continue
        kind, i, nr = resolve(v)
        if kind == "op":
            outputs.append(RegionOutput(slot, f"{node.id}/{i}", nr))
            region_out.setdefault((i, nr), []).append(slot)
        elif kind == "arg":
            outputs.append(RegionOutput(slot, None, 0, inputs[i].name))
            passthrough.append((slot, i))
        else:
            raise _Unavailable(f"output {slot} of the backward is a constant")
    return outputs, passthrough, region_out
