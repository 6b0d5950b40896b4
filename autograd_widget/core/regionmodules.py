"""Where a compiled region's ops came from when torch no longer says: the modules of an inductor
region read after its first backward, or loaded from a warm compile cache.

Under inductor, torch's AOTAutograd cache clears every node's metadata of a region's backward
graph (`nn_module_stack`, `seq_nr`, `stack_trace`) when it saves the region, at its first
backward (`serialize_graph_module` in torch/_functorch/_aot_autograd/aot_autograd_result.py); a
region loaded from a warm cache never had it in this process (its module is rebuilt from code,
under other node names: "mm_default" for "mm"). Nothing else torch keeps per op holds it: the
compiled kernels are fused, the forward's FX module is not kept.

What survives is dynamo's own graph of the region (torch-level calls, each with its
`nn_module_stack`): the function dynamo installs as `__compiled_fn_*` in the compiled frame's
globals (found through dynamo's cache entries: their code names it, their guards keep those
globals) keeps it (AOTAutograd's wrapper holds the graph module's `named_parameters`), and also
holds the region's `CompiledFunction` class, the `_forward_cls` of its backward node.
`recovered_origins` finds that graph, runs inductor's own AOTAutograd step on it again (joint
trace, inductor's decompositions and partitioner: no kernel is compiled, no cache is read or
written; ~1 s for a small model), keeps the backward graph that step produces, metadata and
all, and maps it onto the region's backward node by node: same op, same arguments, same order.
Only an exact match is used: anything else (another backend, a torch that lays this out
otherwise, a graph not found) gives a note saying why, and the region's ops stay without
modules (never wrong ones).

Guarantees: never raises; touches no user object; torch's config is patched only inside the
call (`config.patch`, restored), its compile counters are restored; dynamo's graph is copied,
not changed. Results are kept per region (its forward class, weakly), so a region is retraced
at most once per process.
"""

from __future__ import annotations

import copy
import functools
import types
import weakref
from collections.abc import Iterator
from typing import Any

import torch
import torch.fx

__all__ = ["ORIGIN_KEYS", "dynamo_graph", "match_graphs", "recovered_origins"]

#: The metadata keys of an FX node that say where it came from (what `recovered_origins` maps).
ORIGIN_KEYS = ("nn_module_stack", "fwd_nn_module_stack", "stack_trace", "seq_nr")

#: Per region (its forward class, weakly): the origins recovered, or the note saying why not.
_DONE: weakref.WeakKeyDictionary[Any, dict[str, dict[str, Any]] | str] = \
    weakref.WeakKeyDictionary()

_WALK_LIMIT = 600  # objects looked at from one compiled function (it takes ~100)


def _children(o: Any) -> Iterator[Any]:
    """What a compiled function's wrappers hold: closures, attributes, `__wrapped__`."""
    if isinstance(o, types.MethodType):
        yield o.__func__
        yield o.__self__
        return
    if isinstance(o, types.FunctionType):
        for cell in o.__closure__ or ():
            try:
                yield cell.cell_contents
            except ValueError:  # an empty cell
                pass
        yield from o.__dict__.values()
        return
    if isinstance(o, (type, torch.nn.Module)) or not type(o).__module__.startswith(
            ("torch", "functools")):  # fmt: skip
        return
    if isinstance(o, (list, tuple)):
        yield from o
    yield from getattr(o, "__dict__", {}).values()
    if isinstance(o, functools.partial):
        yield o.func


def _walk(root: Any) -> tuple[torch.fx.GraphModule | None, set[int]]:
    """(dynamo's graph module under compiled function `root` or None, ids of what was seen)."""
    todo: list[Any] = [root]
    seen: set[int] = set()
    found: torch.fx.GraphModule | None = None
    while todo and len(seen) < _WALK_LIMIT:
        o = todo.pop(0)
        if id(o) in seen:
            continue
        seen.add(id(o))
        if found is None and isinstance(o, torch.fx.GraphModule) and \
                "dynamo_compile_id" in getattr(o, "meta", {}):  # fmt: skip
            found = o
            continue
        todo.extend(_children(o))
    return found, seen


def _compiled_functions() -> Iterator[Any]:
    """Every `__compiled_fn_*` dynamo's live cache entries call: per code object dynamo
    compiled (`convert_frame.input_codes`), per cache entry, the names its transformed code
    loads, looked up in the frame's globals its guards keep."""
    from torch._dynamo import convert_frame
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list

    for ref in list(convert_frame.input_codes.seen):
        code = ref()
        if code is None:
            continue
        for entry in _debug_get_cache_entry_list(code):
            scope = (getattr(entry.guard_manager, "global_scope", None) or {}).get("G") or {}
            for name in entry.code.co_names:
                if name.startswith("__compiled_fn") and name in scope:
                    yield scope[name]


def dynamo_graph(forward_cls: Any) -> torch.fx.GraphModule | str:
    """Dynamo's graph module of the compiled region whose `CompiledFunction` is `forward_cls`
    (a `CompiledFunctionBackward` node's `_forward_cls`), or a note saying why not found.

    Looks at every `__compiled_fn_*` of dynamo's live cache entries, following its wrappers'
    closures to `forward_cls` itself: the graph returned is the one compiled into exactly this
    region. After `torch._dynamo.reset()` (which drops the cache entries) a region compiled
    before it is not found.

    Example:
        >>> dynamo_graph(object).startswith("dynamo's graph of this region was not found")
        True
    """
    try:
        for compiled in _compiled_functions():
            graph, seen = _walk(compiled)
            if graph is not None and id(forward_cls) in seen:
                return graph
    except Exception as exc:  # another torch keeps its cache entries otherwise
        return (f"dynamo's cache entries could not be read ({type(exc).__name__}: {exc})")
    return ("dynamo's graph of this region was not found among its cache entries (dropped by "
            "torch._dynamo.reset(), or never there)")


def _copy(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A copy of dynamo's graph module that AOTAutograd reads as dynamo's own (the module's
    `meta`, `_param_name_to_source`, each placeholder's `_dynamo_source`), sharing its
    attributes; dynamo's is left as it is."""
    graph = copy.deepcopy(gm.graph)
    out = torch.fx.GraphModule(gm, graph)
    out.meta = dict(gm.meta)
    if hasattr(gm, "_param_name_to_source"):
        out._param_name_to_source = gm._param_name_to_source
    old = [n for n in gm.graph.nodes if n.op == "placeholder"]
    new = [n for n in graph.nodes if n.op == "placeholder"]
    for a, b in zip(old, new):
        if hasattr(a, "_dynamo_source"):
            b._dynamo_source = a._dynamo_source
    return out


class _Captured(Exception):
    """Raised by the capturing compiler once it holds the backward graph: nothing more to do."""


def _retraced_backward(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """The backward graph inductor's AOTAutograd step makes of dynamo's graph `gm`, with its
    metadata: `compile_fx` with an inner compiler that keeps the graphs and compiles nothing,
    the AOTAutograd cache off (no hit, no entry written), the backward made at once."""
    from torch._dynamo.utils import counters
    from torch._functorch import config as functorch_config
    from torch._functorch._aot_autograd.utils import make_boxed_func
    from torch._inductor.compile_fx import compile_fx

    got: dict[str, torch.fx.GraphModule] = {}

    def keep(graph: torch.fx.GraphModule, example_inputs: Any, **kwargs: Any) -> Any:
        if kwargs.get("is_backward"):
            got["bw"] = graph
            raise _Captured
        return make_boxed_func(graph.forward)

    inputs = [n.meta.get("example_value") for n in gm.graph.nodes if n.op == "placeholder"]
    saved = copy.deepcopy(dict(counters))
    try:
        with functorch_config.patch(enable_autograd_cache=False,
                                    force_non_lazy_backward_lowering=True), \
                torch.enable_grad():  # fmt: skip
            compile_fx(_copy(gm), inputs, inner_compile=keep)
    except _Captured:
        pass
    except Exception as exc:
        if "bw" not in got:
            raise
        del exc
    finally:
        counters.clear()
        counters.update(saved)
    if "bw" not in got:
        raise RuntimeError("inductor's AOTAutograd step made no backward graph")
    return got["bw"]


def _same(a: Any, b: Any, pairs: dict[torch.fx.Node, torch.fx.Node]) -> bool:
    if isinstance(a, torch.fx.Node) or isinstance(b, torch.fx.Node):
        return isinstance(a, torch.fx.Node) and pairs.get(a) is b
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return (type(a) is type(b) and len(a) == len(b)
                and all(_same(x, y, pairs) for x, y in zip(a, b)))  # fmt: skip
    if isinstance(a, dict) or isinstance(b, dict):
        return (isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys()
                and all(_same(a[k], b[k], pairs) for k in a))  # fmt: skip
    return type(a) is type(b) and a == b


def match_graphs(real: torch.fx.Graph, traced: torch.fx.Graph) -> dict[str, str] | str:
    """{node name in `real`: node name in `traced`} when the two graphs are the same program
    (same placeholders in order, then the same op on the same arguments, node by node, and the
    same outputs), else a note naming the first difference. Names may differ (a graph rebuilt
    from a cache is renamed), and an op on constants alone may be its value (the rebuild, an FX
    trace of the module's code, runs it: `_tensor_constant0` for `aten.full`); nothing else may.

    Example:
        >>> import torch
        >>> relu, sigmoid = (torch.fx.symbolic_trace(m).graph
        ...                  for m in (torch.nn.ReLU(), torch.nn.Sigmoid()))
        >>> match_graphs(relu, relu)["relu"]
        'relu'
        >>> match_graphs(relu, sigmoid)
        'relu calls <function relu at ...>, the retraced sigmoid <built-in method sigmoid ...>'
    """
    a, b = list(real.nodes), list(traced.nodes)
    if len(a) != len(b):
        return f"the retraced backward has {len(b)} nodes, the region's {len(a)}"
    pairs: dict[torch.fx.Node, torch.fx.Node] = {}
    for x, y in zip(a, b):
        if x.op == "get_attr" and y.op == "call_function" and not y.all_input_nodes:
            pairs[x] = y  # a constant op (`aten.full`) run when a cache's module was rebuilt
            continue
        if x.op != y.op:
            return f"{x.name} is a {x.op}, the retraced {y.name} a {y.op}"
        if x.op in ("call_function", "call_method") and x.target != y.target:
            return f"{x.name} calls {x.target}, the retraced {y.name} {y.target}"
        if x.op != "placeholder" and not (_same(x.args, y.args, pairs)
                                           and _same(dict(x.kwargs), dict(y.kwargs), pairs)):
            return f"{x.name} and the retraced {y.name} take other arguments"
        pairs[x] = y
    return {x.name: y.name for x, y in pairs.items()}


def recovered_origins(fn: Any, module: Any) -> dict[str, dict[str, Any]] | str:
    """Origin metadata (FX node name of `module` -> its `ORIGIN_KEYS` entries) of the ops of
    compiled region node `fn`'s backward `module`, recovered from dynamo's graph of the region
    (see the module docstring), or a note saying why they could not be (never raises).

    Example:
        >>> recovered_origins(None, None)
        'not a compiled region: no forward class'
    """
    key = getattr(fn, "_forward_cls", None)
    if key is None:
        return "not a compiled region: no forward class"
    try:
        done = _DONE.get(key)
    except TypeError:
        done = None
    if done is None:
        done = _recover(key, module)
        try:
            _DONE[key] = done
        except TypeError:
            pass
    return done


def _recover(key: Any, module: Any) -> dict[str, dict[str, Any]] | str:
    try:
        graph = dynamo_graph(key)
        if isinstance(graph, str):
            return graph
        traced = _retraced_backward(graph)
        names = match_graphs(module.graph, traced.graph)
        if isinstance(names, str):
            return (f"the region's backward differs from inductor's trace of dynamo's graph "
                    f"({names})")
    except Exception as exc:
        first = str(exc).splitlines()[0] if str(exc) else ""
        return f"dynamo's graph of the region could not be retraced ({type(exc).__name__}: {first})"
    by_name = {n.name: n for n in traced.graph.nodes}
    return {mine: {k: by_name[theirs].meta[k] for k in ORIGIN_KEYS if k in by_name[theirs].meta}
            for mine, theirs in names.items()}  # fmt: skip
