"""The values inside a compiled region for THIS call: shapes, dtypes and strides of every FX
node of its backward, worked out from the call's own saved values (core/regions.py reads them).

A region's backward graph does not always describe the call at hand:

- compiled with dynamic shapes (`dynamic=True`, or a recompilation for a new input shape), its
  nodes' metadata holds symbolic sizes (`s0`, `2*s1`), which no drawing or step can use;
- saved by torch's compile cache (the AOTAutograd cache, on by default under inductor), its
  nodes carry no metadata at all: torch clears it when it saves the entry, and a module rebuilt
  from a warm cache has none either;
- under inductor's layout optimisation (a model with convolutions), the forward saves its
  activations in another memory layout (channels-last) than the graph was traced with, so an
  `aten.view` of a saved value that was valid at tracing time fails on the real tensor ("Cannot
  view a tensor with shape ... and strides ...": resnet18's max-pool backward does it).

`call_values` answers all three the same way: it runs the graph on fake tensors (no data, no
kernel) built from the call's real inputs (the node's saved values looked at without unpacking,
its incoming gradients' metadata, its real symbolic ints), with `aten.view` run as
`aten.reshape` (`EAGER_TARGETS`: the same values, a copy where the layout cannot be viewed,
which is what inductor's own lowering does). The stepper runs the ops with the same targets
(core/regions.py `OpProgram`), so what is drawn is what is stepped.

Guarantees: never writes to the graph module (its metadata belongs to torch and to every other
call of the region); no saved tensor is unpacked where torch can look at it (torch >= 2.10),
and on an older torch only through `saved_value`'s guard (which refuses, having run nothing, a
read that would run a `saved_tensors_hooks` unpack hook).
"""

from __future__ import annotations

import weakref
from typing import Any

import torch
import torch.fx

from ..util import compat
from .regionmodules import ORIGIN_KEYS, recovered_origins

__all__ = ["EAGER_TARGETS", "call_values", "eager_target", "needs_call_values", "origin_metas"]

_aten = torch.ops.aten

#: FX targets run as another op with the same values: a view of a tensor whose layout the
#: compiler changed (channels-last saved activations) is not always possible eagerly; a reshape
#: gives the same values, as a view where it can.
EAGER_TARGETS: dict[Any, Any] = {
    _aten.view.default: _aten.reshape.default,
    _aten._unsafe_view.default: _aten.reshape.default,
}


def eager_target(target: Any) -> Any:
    """The op that runs FX target `target` eagerly (`EAGER_TARGETS`, else itself).

    Example:
        >>> import torch
        >>> eager_target(torch.ops.aten.view.default) is torch.ops.aten.reshape.default
        True
        >>> eager_target(torch.ops.aten.mm.default) is torch.ops.aten.mm.default
        True
    """
    try:
        return EAGER_TARGETS.get(target, target)
    except TypeError:  # an unhashable target
        return target


def _symbolic(val: Any) -> bool:
    if isinstance(val, torch.Tensor):
        return any(isinstance(s, torch.SymInt) for s in val.shape)
    return isinstance(val, (torch.SymInt, torch.SymFloat, torch.SymBool))


def needs_call_values(module: Any) -> bool:
    """True when the graph's own metadata cannot describe a call: a node without a value (a
    compile cache cleared it) or with symbolic sizes (dynamic shapes).

    Example:
        >>> import torch
        >>> gm = torch.fx.symbolic_trace(torch.nn.ReLU())  # traced: no "val" metadata
        >>> needs_call_values(gm)
        True
    """
    for n in module.graph.nodes:
        if n.op not in ("placeholder", "call_function"):
            continue
        if "val" not in n.meta:
            return True
        vals = n.meta["val"] if isinstance(n.meta["val"], (tuple, list)) else [n.meta["val"]]
        if any(_symbolic(v) for v in vals):
            return True
    return False


class _Values(torch.fx.Interpreter):
    """Runs the graph on fake tensors, keeping every node's value by name."""

    def __init__(self, module: Any, vals: dict[str, Any]) -> None:
        super().__init__(module, garbage_collect_values=True)
        self.vals = vals

    def run_node(self, n: torch.fx.Node) -> Any:
        out = super().run_node(n)
        self.vals[n.name] = out
        return out

    def call_function(self, target: Any, args: tuple, kwargs: dict) -> Any:
        return super().call_function(eager_target(target), args, kwargs)


def call_values(fn: Any, module: Any, layout: list) -> dict[str, Any] | str:
    """Fake values of every node of the compiled backward `module` of node `fn` for this call
    (by FX node name: a fake tensor, an int, a tuple for a multi-output op), or a note saying
    why they could not be worked out (never raises).

    Args:
        fn: the live `CompiledFunctionBackward` node.
        module: its backward's FX GraphModule (not written to).
        layout: what each backward argument is (`util.compat.compiled_backward_layout`).

    Example:
        >>> call_values(None, None, [])
        'no backward module to run'
    """
    if module is None:
        return "no backward module to run"
    try:
        from torch._subclasses.fake_tensor import FakeTensorMode

        mode = FakeTensorMode(allow_non_fake_inputs=True)
        args = compat.fake_backward_args(fn, layout, mode, concrete=True)
        vals: dict[str, Any] = {}
        placeholders = [n for n in module.graph.nodes if n.op == "placeholder"]
        for ph, v in zip(placeholders, args):
            vals[ph.name] = v
        with mode, torch.no_grad():
            _Values(module, vals).run(*args)
    except Exception as exc:
        return (f"the shapes inside the region could not be worked out for this call "
                f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})")
    return vals


# --------------------------------------------------------------------------- where ops came from
#: What the backward graph's nodes said of their origin (FX node name -> its `meta`'s
#: "nn_module_stack"/"fwd_nn_module_stack", "stack_trace" and "seq_nr"), per compiled region (its
#: forward class, held weakly), remembered from a read made while torch still had them.
_ORIGINS: weakref.WeakKeyDictionary[Any, dict[str, dict[str, Any]]] = weakref.WeakKeyDictionary()


def origin_metas(fn: Any, module: Any) -> tuple[dict[str, dict[str, Any]], str]:
    """Each op's origin metadata (FX node name -> {"nn_module_stack", "stack_trace", ...}) of the
    compiled region of node `fn`, and why it has none ("" when it has, or when nothing says
    otherwise): read from `module`'s nodes where torch kept it, else what an earlier read of the
    same region remembered, else recovered from dynamo's graph of the region
    (core/regionmodules.py).

    torch's compile cache (the AOTAutograd cache, on by default under inductor) clears every
    node's metadata of the backward graph when it saves the region (at its first backward; at
    once under dynamic shapes, whose backward compiles with the forward), and a region loaded
    from a warm cache never had it in this process: then the modules are recovered by mapping
    inductor's trace of dynamo's graph onto the region's backward, node by node (~1 s, once per
    region). When that cannot be done the note says why and the ops have no module.

    Example:
        >>> import torch
        >>> gm = torch.fx.symbolic_trace(torch.nn.ReLU())
        >>> metas, why = origin_metas(None, gm)
        >>> metas["relu"], why
        ({}, '')
    """
    here = {n.name: {k: n.meta[k] for k in ORIGIN_KEYS if k in n.meta}
            for n in module.graph.nodes}  # fmt: skip
    key = getattr(fn, "_forward_cls", None)
    try:
        if any("nn_module_stack" in m or "fwd_nn_module_stack" in m for m in here.values()):
            if key is not None:
                _ORIGINS[key] = here
            return here, ""
        kept = _ORIGINS.get(key) if key is not None else None
    except TypeError:  # a key that cannot be weakly referenced
        return here, ""
    cleared = not any(n.meta for n in module.graph.nodes if n.op == "call_function")
    if kept is None and key is not None and cleared:  # not a graph that simply has no modules
        found = recovered_origins(fn, module)
        if isinstance(found, str):
            return here, found
        kept = found
    if kept is None:
        return here, ""
    return {name: here[name] or kept.get(name, {}) for name in here}, ""
