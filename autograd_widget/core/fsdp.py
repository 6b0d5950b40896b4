"""FSDP2 facts: which modules are sharded, and which graph leaf is which parameter.

`torch.distributed.fsdp.fully_shard` (FSDP2, public from torch 2.6) replaces a module's
parameters by sharded DTensors (what `model.named_parameters()` returns) and, for its forward,
all-gathers them into UNSHARDED parameters: other tensor objects, which the forward's ops save and
which are therefore the leaves of the backward graph (DESIGN.md, "Distributed programs").
After the forward FSDP frees their storage (resized to 0, the tensor objects stay); its
pre-backward hooks gather them again. Nothing in a graph leaf points back at its sharded
parameter, so this module reads FSDP's own parameter groups once (`sharding_of`):

- every FSDP module of a model, with its path, and per parameter its name (as
  `named_parameters()` names it: module path + attribute), the sharded DTensor and the unsharded
  tensor (`ShardedParam`);
- `Sharding.names()`: unsharded tensor id -> name (what `aw.capture(model=...)`, `aw.record`
  and `aw.watch` name leaves with); `Sharding.unsharded_for(p)`: the graph leaf of a sharded
  parameter (what `Stepper.grad(p)` looks up).

FSDP keeps those groups in attributes that are not public API (`FSDPModule._get_fsdp_state()`,
`_fsdp_param_groups`, `FSDPParam.sharded_param` / `_unsharded_param`). Where a torch lays them
out otherwise, `Sharding.note` says so and the leaves keep their default names ("param 3
[32, 16]"): never a wrong name. Nothing here unshards, reshards or runs a collective.

A graph captured with `model=` remembers the model's sharding (`remember` / `graph_sharding`);
one captured without it is still understood when it holds FSDP's bookkeeping nodes
(`RegisterPostBackwardFunctionBackward`, whose context holds its parameter group).

Example:
    >>> sharding_of(torch.nn.Linear(2, 2)) is None  # no FSDP module: nothing to map
    True
"""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass, field
from typing import Any

import torch

from ..util.compat import torch_version

__all__ = [
    "FSDP2_TORCH",
    "POST_BACKWARD_NODE",
    "ShardedModule",
    "ShardedParam",
    "Sharding",
    "fsdp_leaf_names",
    "fsdp_module_class",
    "fsdp_note",
    "graph_sharding",
    "is_post_backward",
    "remember",
    "sharding_of",
]

#: The name of FSDP's bookkeeping node: it passes gradients through unchanged and, in the engine,
#: reduce-scatters the module's gradients (`post_backward`).
POST_BACKWARD_NODE = "RegisterPostBackwardFunctionBackward"


#: The torch whose `torch.distributed.fsdp` exports `fully_shard` / `FSDPModule` (FSDP2 before
#: it lived in `torch.distributed._composable.fsdp`, not supported here).
FSDP2_TORCH = "2.6"


def fsdp_module_class() -> type | None:
    """`torch.distributed.fsdp.FSDPModule` when FSDP2 is loaded, else None.

    Looked up as an attribute of `torch.distributed` (set when `torch.distributed.fsdp` is
    imported), never imported here: an FSDP module can only exist once the user's program
    imported FSDP, and importing it here would cost every user of the package.

    Example:
        >>> fsdp_module_class() is None or fsdp_module_class().__name__ == "FSDPModule"
        True
    """
    mod = getattr(torch.distributed, "fsdp", None)
    return getattr(mod, "FSDPModule", None) if mod is not None else None


def fsdp_note() -> str | None:
    """Why FSDP2 is not available on this torch (the version that has it), None where it is.

    Example:
        >>> fsdp_note() is None or "needs torch >= 2.6" in fsdp_note()
        True
    """
    have = tuple(int(x) for x in re.findall(r"\d+", torch_version())[:2])
    dist = torch.distributed.is_available()
    if have >= (2, 6) and dist:
        return None
    return (f"FSDP2 (torch.distributed.fsdp.fully_shard) needs torch >= {FSDP2_TORCH} built with "
            f"torch.distributed; this is torch {torch_version()}"
            f"{'' if dist else ' without torch.distributed'}")  # fmt: skip


@dataclass(frozen=True)
class ShardedParam:
    """One FSDP-managed parameter: its name, the sharded DTensor and the unsharded tensor.

    Example:
        >>> p = ShardedParam("0.weight", torch.ones(2), None)
        >>> p.name, p.unsharded is None
        ('0.weight', True)
    """

    name: str
    #: What `named_parameters()` returns between forward passes (a DTensor, this rank's shard).
    sharded: torch.Tensor
    #: The tensor the forward's ops saw (a graph leaf); None before the first forward.
    unsharded: torch.Tensor | None


@dataclass(frozen=True)
class ShardedModule:
    """One FSDP module (`fully_shard(module)`): its path in the model and its own parameters
    (not those of FSDP modules nested in it).

    Example:
        >>> ShardedModule("0", torch.nn.Linear(2, 2), ()).path
        '0'
    """

    path: str
    module: Any
    params: tuple[ShardedParam, ...]


@dataclass
class Sharding:
    """The FSDP modules of a model and the map from graph leaves back to parameters.

    Example:
        >>> a, b = torch.zeros(1), torch.zeros(2)  # a sharded parameter, its unsharded leaf
        >>> s = Sharding((ShardedModule("", None, (ShardedParam("w", a, b),)),))
        >>> s.names() == {id(b): "w"}, s.unsharded_for(a) is b
        (True, True)
    """

    modules: tuple[ShardedModule, ...]
    #: Why FSDP's groups could not be read (this torch lays them out otherwise), else None.
    note: str | None = None
    _by_id: dict[int, ShardedParam] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for m in self.modules:
            for p in m.params:
                self._by_id[id(p.sharded)] = p
                if p.unsharded is not None:
                    self._by_id[id(p.unsharded)] = p

    def names(self) -> dict[int, str]:
        """Unsharded tensor id -> parameter name, for naming graph leaves.

        Example:
            >>> Sharding(()).names()
            {}
        """
        return {id(p.unsharded): p.name for m in self.modules for p in m.params
                if p.unsharded is not None}  # fmt: skip

    def param(self, t: Any) -> ShardedParam | None:
        """The `ShardedParam` that `t` (sharded or unsharded, by identity) belongs to, else None.

        Example:
            >>> Sharding(()).param(torch.ones(1)) is None
            True
        """
        p = self._by_id.get(id(t))
        if p is None or (p.sharded is not t and p.unsharded is not t):
            return None  # an id reused by another object
        return p

    def unsharded_for(self, t: Any) -> torch.Tensor | None:
        """The graph leaf of parameter `t` (its sharded DTensor or the leaf itself), else None.

        Example:
            >>> Sharding(()).unsharded_for(torch.ones(1)) is None
            True
        """
        p = self.param(t)
        return None if p is None else p.unsharded


def _fsdp_params(module: Any) -> list[Any]:
    """FSDP's `FSDPParam`s of one FSDP module (private layout: AttributeError when it moved)."""
    state = module._get_fsdp_state()
    return [fp for group in state._fsdp_param_groups for fp in group.fsdp_params]


def _unsharded(fp: Any) -> torch.Tensor | None:
    t = getattr(fp, "_unsharded_param", None)
    return t if isinstance(t, torch.Tensor) else None


def sharding_of(model: Any) -> Sharding | None:
    """The FSDP modules of `model` (an `nn.Module`) and their parameters; None when `model` has
    no FSDP module (or FSDP2 is not loaded: `fsdp_note()` says where it is missing).

    Guarantees: names are `named_parameters()`'s (module path + attribute), whether the
    parameters are sharded or unsharded right now; reads only, no collective. On a torch whose
    FSDP internals moved, a `Sharding` with no modules and a `note` saying so.

    Example:
        >>> sharding_of(torch.nn.Sequential(torch.nn.Linear(2, 2))) is None
        True
    """
    cls = fsdp_module_class()
    if cls is None or not isinstance(model, torch.nn.Module):
        return None
    paths = {id(m): path for path, m in model.named_modules(remove_duplicate=False)}
    found = [(path, m) for path, m in model.named_modules() if isinstance(m, cls)]
    if not found:
        return None
    modules = []
    try:
        for path, m in found:
            params = []
            for fp in _fsdp_params(m):
                info = fp._module_info
                owner = paths.get(id(info.module))
                name = info.param_name if not owner else f"{owner}.{info.param_name}"
                params.append(ShardedParam(name, fp.sharded_param, _unsharded(fp)))
            modules.append(ShardedModule(path, m, tuple(params)))
    except AttributeError as exc:
        return Sharding((), note=(
            f"FSDP's parameter groups are laid out otherwise on torch {torch_version()} "
            f"({exc}): leaves of FSDP modules keep default names and stepping cannot unshard "
            "them"))  # fmt: skip
    return Sharding(tuple(modules))


def is_post_backward(fn: Any) -> bool:
    """True for FSDP's `RegisterPostBackwardFunctionBackward` node (a live node object).

    Example:
        >>> is_post_backward((torch.ones(1, requires_grad=True) * 2).grad_fn)
        False
    """
    fwd = getattr(type(fn), "_forward_cls", None)
    return (getattr(fwd, "__name__", "") == "RegisterPostBackwardFunction"
            and getattr(fwd, "__module__", "").startswith("torch.distributed"))  # fmt: skip


_remembered: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: graph -> whether it holds FSDP's bookkeeping nodes (a graph's nodes never change).
_has_bookkeeping: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def remember(graph: Any, sharding: Sharding | None) -> None:
    """Attach `sharding` (from the `model=` a graph was captured with) to `graph`.

    Example:
        >>> remember(g, None); graph_sharding(g) is None
        True
    """
    if sharding is None:
        _remembered.pop(graph, None)
    else:
        _remembered[graph] = sharding


def _from_post_backward(fns: list) -> Sharding | None:
    """The sharding reached from FSDP's bookkeeping nodes: their parameter group, its module,
    and from there every FSDP module of the same root (FSDP's private state: None if moved)."""
    for fn in fns:
        if not is_post_backward(fn):
            continue
        try:
            state = fn.param_group.modules[0]._get_fsdp_state()
            out = []
            for st in state._state_ctx.all_states:
                for m in st._modules:
                    groups = m._get_fsdp_state()._fsdp_param_groups
                    params = tuple(
                        ShardedParam(str(fp._param_fqn or fp._module_info.param_name),
                                     fp.sharded_param, _unsharded(fp))
                        for fp in _fsdp_params(m)
                    )  # fmt: skip
                    path = str(groups[0]._module_fqn or "") if groups else ""
                    out.append(ShardedModule(path, m, params))
            return Sharding(tuple(out))
        except (AttributeError, IndexError):
            return None
    return None


def graph_sharding(graph: Any) -> Sharding | None:
    """The sharding of a live graph: remembered from its capture's `model=`, else found through
    FSDP's bookkeeping nodes in it; None for a graph without FSDP.

    Example:
        >>> graph_sharding(g) is None
        True
    """
    found = _remembered.get(graph)
    if found is not None:
        return found
    if fsdp_module_class() is None:
        return None
    has = _has_bookkeeping.get(graph)
    if has is None:  # one pass over the nodes per graph, not one per leaf inspected
        has = _has_bookkeeping[graph] = any(
            n.name == POST_BACKWARD_NODE for n in graph.nodes.values())
    if not has:
        return None
    try:
        fns = [graph.fn(nid) for nid, n in graph.nodes.items() if n.name == POST_BACKWARD_NODE]
    except RuntimeError:  # a released graph: nothing live to read
        return None
    return _from_post_backward(fns)


def fsdp_leaf_names(model: Any) -> dict[int, str]:
    """Unsharded tensor id -> parameter name for the FSDP modules of `model` ({} without any):
    what a watch adds to `named_parameters()`'s names at each step.

    Example:
        >>> fsdp_leaf_names(torch.nn.Linear(2, 2))
        {}
    """
    sharding = sharding_of(model)
    return {} if sharding is None else sharding.names()
