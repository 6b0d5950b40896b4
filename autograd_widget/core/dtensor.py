"""DTensor facts: is a tensor a DTensor, this rank's local shard of it, and how it is laid out.

Tensor parallel programs (`torch.distributed.tensor.parallel.parallelize_module`) run the backward
on DTensors: gradients, saved values and parameters are `torch.distributed.tensor.DTensor`
objects, each holding this rank's local shard (`to_local()`) and its layout (a device mesh and one
placement per mesh dimension: `Shard(d)`, `Replicate()`, `Partial(op)`). A DTensor cannot meet a
plain tensor in one op ("got mixed torch.Tensor and DTensor"), and its global statistics would
need a collective (every rank at once), so what this package shows of one is its LOCAL shard,
always saying so (`describe`): a summary's numbers are those of `to_local()`, the note gives
the global shape and the placements (a `Partial` shard is one rank's addend, not the value).

The communication nodes of such a graph (`RedistributeBackward`, `_ToTorchTensorBackward`,
`_FromTorchTensorBackward`: the autograd Functions behind `redistribute`, `to_local` and
`from_local`) keep the layouts they move between on the node object (ctx attributes);
`communication` reads them, without unpacking anything. `RedistributeBackward` keeps only the
forward input's layout (where the gradient goes back to), not the output's: the gradient that
arrives says that one (its summary's note). The backward nodes of torch.distributed's functional
collectives are communication nodes too (`communication_op` names the collective).

What follows for the numbers shown per rank: an edge's or a saved value's summary, a stepper's
`grad(p)` statistics and a watch's series of a DTensor parameter are those of THIS rank's local
shard (a `Replicate` parameter's local gradient is the whole gradient; a `Shard` one's is this
rank's part, so the global norm is the root of the sum over ranks of the squares).

Nothing here imports `torch.distributed`: `is_dtensor` tells a DTensor by where torch defines its
class (the class's module and name, cached per type), so a torch built without distributed, or a
program that never touched DTensor, works the same and pays one type check per tensor.

Example:
    >>> is_dtensor(torch.ones(2)), local_tensor(torch.ones(2)).shape
    (False, torch.Size([2]))
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

import torch

__all__ = [
    "COMMUNICATION",
    "Communication",
    "Layout",
    "communication",
    "communication_op",
    "describe",
    "describe_layout",
    "is_communication",
    "is_dtensor",
    "is_wrapped",
    "layout",
    "local_tensor",
]

#: Backward node types that move a gradient between DTensor layouts (or in and out of DTensor):
#: node name -> the forward call it undoes.
COMMUNICATION = {
    "RedistributeBackward": "redistribute",
    "NestedRedistributeBackward": "redistribute (double backward)",
    "_ToTorchTensorBackward": "to_local",
    "_FromTorchTensorBackward": "from_local",
}
#: The backward nodes of torch.distributed's functional collectives (`_functional_collectives`:
#: all_gather_tensor_autograd, reduce_scatter_tensor_autograd, all_to_all_single_autograd, ...):
#: custom ops whose autograd torch generates ("GeneratedBackwardFor__c10d_functional_
#: all_gather_into_tensor_defaultBackward" on 2.13), or C++ autograd Functions on older torch
#: ("...CppNode<...AllGatherIntoTensor>"). The group names the collective.
_COLLECTIVE = re.compile(
    r"c10d_functional_+(?P<op>[a-z][a-z_]*?)_default|(?P<cpp>AllGatherIntoTensor|ReduceScatterTensor"
    r"|AllToAllSingle|AllReduce)\b"
)


@functools.lru_cache(maxsize=4096)  # a drawing asks once per node; names repeat
def communication_op(name: str) -> str | None:
    """The call a communication node's forward made ("redistribute", "to_local", "from_local",
    a functional collective's op such as "all_gather_into_tensor"), or None for any other node
    type.

    Example:
        >>> communication_op("_ToTorchTensorBackward"), communication_op("MulBackward0")
        ('to_local', None)
        >>> communication_op("GeneratedBackwardFor__c10d_functional_all_reduce_defaultBackward")
        'all_reduce'
    """
    op = COMMUNICATION.get(name)
    if op is not None:
        return op
    m = _COLLECTIVE.search(name)
    if m is None:
        return None
    return m.group("op") or m.group("cpp")


#: The wrapper classes by name, told apart from a user's class of the same name by living in
#: torch.distributed (its module moved between versions: "torch.distributed.tensor",
#: "torch.distributed._tensor.api", ...); no import of torch.distributed needed.
_WRAPPERS = {"DTensor": "dtensor", "AsyncCollectiveTensor": "async"}
_kinds: dict[type, str | None] = {}


def _wrapper_kind(cls: type) -> str | None:
    """"dtensor", "async" or None for a tensor class (its MRO searched once, then cached)."""
    try:
        return _kinds[cls]
    except KeyError:
        pass
    kind = None
    for c in cls.__mro__:
        kind = _WRAPPERS.get(c.__name__)
        if kind is not None and str(c.__module__).startswith("torch.distributed."):
            break
        kind = None
    _kinds[cls] = kind
    return kind


def is_dtensor(t: Any) -> bool:
    """True when `t` is a `torch.distributed.tensor.DTensor` (False on a torch without it).

    Example:
        >>> is_dtensor(torch.ones(2)), is_dtensor(3)
        (False, False)
    """
    cls = type(t)
    return cls is not torch.Tensor and _wrapper_kind(cls) == "dtensor"


def is_wrapped(t: Any) -> bool:
    """True for a DTensor or a functional collective's `AsyncCollectiveTensor` (what an
    asynchronous `redistribute` leaves as a local shard): wrappers without a storage of their own,
    which `local_tensor` unwraps.

    Example:
        >>> is_wrapped(torch.ones(2))
        False
    """
    cls = type(t)
    return cls is not torch.Tensor and _wrapper_kind(cls) is not None


def local_tensor(t: torch.Tensor) -> torch.Tensor:
    """This rank's local shard of a DTensor (`to_local()`, outside autograd: no node is made and
    no gradient is tracked), detached; an `AsyncCollectiveTensor` (the local shard an async
    redistribute left) as the plain tensor it completes to (`wait()`: this rank's part of a
    collective every rank already issued, nothing new is sent); any other tensor as it is.

    Example:
        >>> x = torch.ones(2); local_tensor(x) is x
        True
    """
    if type(t) is torch.Tensor:
        return t
    if is_dtensor(t):
        with torch.no_grad():
            t = t.to_local().detach()
    if type(t) is not torch.Tensor and _wrapper_kind(type(t)) == "async":
        t = t.wait()
    return t


def _placement(p: Any) -> str:
    return str(p)  # torch's short form: "S(0)", "R", "P(sum)"


@dataclass(frozen=True)
class Layout:
    """How one DTensor is laid out: its global shape, this rank's local shape, one placement
    per mesh dimension (torch's short forms: "S(0)" sharded along dim 0, "R" replicated, "P(sum)"
    a partial sum) and the mesh.

    Example:
        >>> lay = Layout((32, 16), (16, 16), ("S(0)",), (2,), None, "cpu")
        >>> lay.text()
        'S(0) on mesh (2,) cpu'
    """

    global_shape: tuple[int, ...] | None
    local_shape: tuple[int, ...] | None
    placements: tuple[str, ...]
    mesh_shape: tuple[int, ...]
    mesh_dim_names: tuple[str, ...] | None
    device_type: str

    @property
    def partial(self) -> bool:
        """True when some placement is `Partial`: the local shard is an addend, not a value."""
        return any(p.startswith("P") for p in self.placements)

    def text(self) -> str:
        """The placements and the mesh, in a few words ("S(0) on mesh (2,) cpu").

        Example:
            >>> Layout((4,), (4,), ("R", "S(0)"), (2, 2), ("dp", "tp"), "cpu").text()
            'R, S(0) on mesh dp=2, tp=2 cpu'
        """
        if self.mesh_dim_names:
            mesh = ", ".join(f"{n}={s}" for n, s in zip(self.mesh_dim_names, self.mesh_shape))
        else:
            mesh = str(tuple(self.mesh_shape))
        return f"{', '.join(self.placements)} on mesh {mesh} {self.device_type}"

    def as_dict(self) -> dict[str, Any]:
        """JSON-safe fields.

        Example:
            >>> Layout((4,), (2,), ("S(0)",), (2,), None, "cpu").as_dict()["placements"]
            ['S(0)']
        """
        return {
            "global_shape": None if self.global_shape is None else list(self.global_shape),
            "local_shape": None if self.local_shape is None else list(self.local_shape),
            "placements": list(self.placements),
            "mesh_shape": list(self.mesh_shape),
            "mesh_dim_names": None if self.mesh_dim_names is None else list(self.mesh_dim_names),
            "device_type": self.device_type,
            "text": self.text(),
        }


def _layout_of_spec(spec: Any, local_shape: tuple[int, ...] | None) -> Layout | None:
    """A `Layout` from a `DTensorSpec` (what DTensors and DTensor autograd contexts hold)."""
    try:
        mesh = spec.mesh
        meta = spec.tensor_meta
        shape = tuple(meta.shape) if meta is not None else None
        names = getattr(mesh, "mesh_dim_names", None)
        return Layout(shape, local_shape, tuple(_placement(p) for p in spec.placements),
                      tuple(mesh.shape), tuple(names) if names else None,
                      str(mesh.device_type))  # fmt: skip
    except Exception:  # a torch laying specs out otherwise: no layout rather than a wrong one
        return None


def _layout_of_mesh(mesh: Any, placements: Any, shape: tuple[int, ...] | None) -> Layout | None:
    try:
        names = getattr(mesh, "mesh_dim_names", None)
        return Layout(shape, None, tuple(_placement(p) for p in placements), tuple(mesh.shape),
                      tuple(names) if names else None, str(mesh.device_type))  # fmt: skip
    except Exception:
        return None


def layout(t: Any) -> Layout | None:
    """The layout of a DTensor; None for anything else.

    Example:
        >>> layout(torch.ones(2)) is None
        True
    """
    if not is_dtensor(t):
        return None
    spec = getattr(t, "_spec", None)
    local = tuple(local_tensor(t).shape)
    if spec is None:
        return _layout_of_mesh(t.device_mesh, t.placements, tuple(t.shape))
    return _layout_of_spec(spec, local)


def describe(t: Any) -> str | None:
    """What a summary of `t` is a summary of, when `t` is a DTensor: "local shard [16, 16] of a
    DTensor [32, 16], S(0) on mesh (2,) cpu" (a `Partial` one says its numbers are one rank's
    addend); None for any other tensor.

    Example:
        >>> describe(torch.ones(2)) is None
        True
    """
    lay = layout(t)
    if lay is None:
        return None if not is_dtensor(t) else "local shard of a DTensor (layout unreadable)"
    return describe_layout(lay)


def describe_layout(lay: Layout) -> str:
    """The note of `describe` from a `Layout`.

    Example:
        >>> describe_layout(Layout((32, 16), (16, 16), ("S(0)",), (2,), None, "cpu"))
        'local shard [16, 16] of a DTensor [32, 16], S(0) on mesh (2,) cpu'
    """
    local = "?" if lay.local_shape is None else str(list(lay.local_shape))
    whole = "?" if lay.global_shape is None else str(list(lay.global_shape))
    text = f"local shard {local} of a DTensor {whole}, {lay.text()}"
    if lay.partial:
        text += " (partial: this rank's addend, the value is the reduction over ranks)"
    return text


def is_communication(name: str) -> bool:
    """True for a backward node type that moves gradients between DTensor layouts or ranks
    (`COMMUNICATION`, functional collectives' backward nodes: `communication_op`).

    Example:
        >>> is_communication("RedistributeBackward"), is_communication("AddmmBackward0")
        (True, False)
    """
    return communication_op(name) is not None


@dataclass(frozen=True)
class Communication:
    """What a communication node moves, read from the node object (its autograd context).

    `op`: the forward call it undoes ("redistribute", "to_local", "from_local", or the
    collective's node name). `forward_from` / `forward_to`: the layouts of the forward's input
    and output where the node keeps them (None where it does not: `RedistributeBackward` keeps
    only its input's); the backward moves the gradient the other way, from the output's layout
    back to `grad_to` (what the gradient it returns is laid out as, where known). `note`: one
    sentence for the inspector.

    Example:
        >>> Communication("to_local", None, None, None, "a plain tensor's gradient").op
        'to_local'
    """

    op: str
    forward_from: Layout | None
    forward_to: Layout | None
    grad_to: Layout | None
    note: str

    def as_dict(self) -> dict[str, Any]:
        """JSON-safe fields.

        Example:
            >>> Communication("to_local", None, None, None, "n").as_dict()["op"]
            'to_local'
        """
        def lay(x: Layout | None) -> dict[str, Any] | None:
            return None if x is None else x.as_dict()

        return {"op": self.op, "forward_from": lay(self.forward_from),
                "forward_to": lay(self.forward_to), "grad_to": lay(self.grad_to),
                "note": self.note}  # fmt: skip


def communication(fn: Any) -> Communication | None:
    """What communication node `fn` (a live autograd node) moves; None when `fn` is not one.
    Reads only attributes the node's context set in the forward (never a saved tensor).

    Example:
        >>> communication(torch.ones(1, requires_grad=True).exp().grad_fn) is None
        True
    """
    name = type(fn).__name__ if not hasattr(fn, "name") else fn.name()
    op = communication_op(name)
    if op is None:
        return None
    if name in ("RedistributeBackward", "NestedRedistributeBackward"):
        src = _layout_of_spec(getattr(fn, "current_spec", None), None)
        grad = _replicate_partial(src)
        note = (f"redistribute: the forward moved a DTensor from {_or_unknown(src)} to another "
                f"layout (the node does not keep which: the incoming gradient's summary says); "
                f"the backward redistributes the gradient back to {_or_unknown(grad)} (a "
                "collective when the placements differ: every rank runs it; torch keeps a "
                "gradient Replicate where the forward's input was Partial)")  # fmt: skip
        return Communication(op, src, None, grad, note)
    if name == "_ToTorchTensorBackward":
        src = _layout_of_spec(getattr(fn, "dtensor_spec", None), None)
        grad = _grad_layout(fn, src)
        note = (f"to_local: the forward took this rank's local shard of a DTensor laid out as "
                f"{_or_unknown(src)}; the backward wraps the plain local gradient back into a "
                f"DTensor laid out as {_or_unknown(grad)} (no data moves between ranks)")
        return Communication(op, src, None, grad, note)
    if name == "_FromTorchTensorBackward":
        mesh = getattr(fn, "forward_input_device_mesh", None)
        places = getattr(fn, "forward_input_placements", None)
        dst = None if mesh is None or places is None else _layout_of_mesh(mesh, places, None)
        grad_p = getattr(fn, "grad_placements", None)
        want = dst if grad_p is None or mesh is None else _layout_of_mesh(mesh, grad_p, None)
        note = (f"from_local: the forward wrapped a plain local tensor as a DTensor laid out as "
                f"{_or_unknown(dst)}; the backward redistributes the gradient to "
                f"{_or_unknown(want)} when it arrives laid out otherwise (a collective), then "
                "hands back its local shard")  # fmt: skip
        return Communication(op, None, dst, None, note)
    if op == "wrap_tensor_autograd":
        note = ("wrap: the forward wrapped a functional collective's output to wait for it "
                "lazily (AsyncCollectiveTensor); the backward passes the gradient through")
    else:
        note = (f"{op}: the backward of a functional collective (torch.distributed."
                "_functional_collectives), itself a collective: every rank runs it")
    return Communication(op, None, None, None, note)


def _replicate_partial(lay: Layout | None) -> Layout | None:
    """`lay` with each `Partial` placement made `Replicate`: what torch gives a gradient whose
    forward input was Partial (it never turns a gradient back into a partial sum)."""
    if lay is None or not lay.partial:
        return lay
    places = tuple("R" if p.startswith("P") else p for p in lay.placements)
    return Layout(lay.global_shape, None, places, lay.mesh_shape, lay.mesh_dim_names,
                  lay.device_type)  # fmt: skip


def _grad_layout(fn: Any, src: Layout | None) -> Layout | None:
    """The layout `_ToTorchTensorBackward` gives the gradient: its `grad_placements`, else the
    forward input's placements with `Partial` made `Replicate` (as torch does)."""
    grad_p = getattr(fn, "grad_placements", None)
    if src is None:
        return None
    if grad_p is None:
        return _replicate_partial(src)
    spec = getattr(fn, "dtensor_spec", None)
    mesh = getattr(spec, "mesh", None)
    return src if mesh is None else _layout_of_mesh(mesh, grad_p, src.global_shape)


def _or_unknown(lay: Layout | None) -> str:
    return "an unreadable layout" if lay is None else lay.text()
