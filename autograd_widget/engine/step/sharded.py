"""Stepping an FSDP2 model by hand: unshard what the next nodes read, in the engine's order.

After its forward, FSDP2 (`fully_shard`) frees the storage of every unsharded parameter it will
gather again (resized to 0; the saved tensors of the backward still alias it). The engine gets the
values back through FSDP's pre-backward hooks, which a node called by hand never runs: without
this module the first matmul fails ("setStorage: ... storage of size 0"). `ShardedSteps` does what
those hooks do, through FSDP's public API (`FSDPModule.unshard()` / `reshard()`), module by module:

- the plan is read once: a step NEEDS an FSDP module when its node saved a tensor over one of the
  module's unsharded storages (storage identity, read without unpacking), or unpacks checkpointed
  values whose region's recomputation reads the module's parameters (the modules found in the
  region's function; where none is found, every module whose leaves the node reaches);
- the module is unsharded right before the first step that needs it and resharded right after the
  last one: like the engine (pre-backward hook, post-backward reshard), not every module is
  unsharded at once. A module found unsharded (`reshard_after_forward=False`, the root) is used
  as it is and never resharded here;
- `close()` reshards what is still unsharded here; a stepper run to the end has resharded all.
  FSDP's state is then what it was: a `loss.backward()` afterwards runs exactly as without the
  stepping (tests/engine/step/test_fsdp.py checks the parameters after an optimizer step, bit
  for bit).

Unsharding is a collective (an all-gather): EVERY rank must step the same graph in the same order,
as every rank runs its backward. A replay (`back()` without kept tensors, a what-if edit, `grad()`
of a freed non-leaf gradient) steps again from the start and may gather again: every rank does
it too. Where one rank steps alone, the gather waits at most `wait_seconds()` (the environment
variable AUTOGRAD_WIDGET_COLLECTIVE_TIMEOUT, default 60 s), then `CollectiveTimeout` says what it
waits for; the gather stays pending in FSDP and completes when the other ranks step: step again
then.

FSDP's bookkeeping node (`RegisterPostBackwardFunctionBackward`) passes its gradients through;
its Python backward also reduce-scatters and reshards (FSDP's post-backward), which would change
FSDP's state: calls.py calls it as the pass-through it is (`CustomInfo.passthrough`).

Example:
    >>> sharded_steps(g, st.plan) is None  # no FSDP module in this graph
    True
"""

from __future__ import annotations

import datetime
import functools
import inspect
import os
from typing import TYPE_CHECKING, Any

import torch

from ...core.checkpoint import is_checkpointed
from ...core.dtensor import local_tensor
from ...core.fsdp import ShardedModule, Sharding, graph_sharding
from ...core.graph import BackwardGraph
from ...core.saved import saved_names
from ...util import compat
from .plan import ACCUMULATE, Plan
from .recompute import node_frames

if TYPE_CHECKING:
    from .results import StepRecord
    from .stepstate import StepState

__all__ = ["TIMEOUT_ENV", "CollectiveTimeout", "ShardedSteps", "sharded_steps", "wait_seconds"]

#: The environment variable that bounds the wait for the other ranks' all-gather, in seconds.
TIMEOUT_ENV = "AUTOGRAD_WIDGET_COLLECTIVE_TIMEOUT"


class CollectiveTimeout(RuntimeError):
    """An unshard's all-gather did not complete in time: the other ranks are not stepping."""


def wait_seconds() -> float:
    """How long an unshard waits for the other ranks (AUTOGRAD_WIDGET_COLLECTIVE_TIMEOUT, 60 s).

    Example:
        >>> wait_seconds() > 0
        True
    """
    raw = os.environ.get(TIMEOUT_ENV, "")
    try:
        value = float(raw) if raw else 60.0
    except ValueError:
        value = 60.0
    return value if value > 0 else 60.0


def _storage_id(t: Any) -> int | None:
    if not isinstance(t, torch.Tensor):
        return None
    try:
        return local_tensor(t).untyped_storage()._cdata
    except (RuntimeError, NotImplementedError, AttributeError):
        return None


def _holds_values(t: torch.Tensor) -> bool:
    """Whether an unsharded parameter holds its values now (FSDP frees them by resizing the
    storage to 0). Read on this rank's local tensor: under tensor parallelism (a 2-D mesh) the
    unsharded parameter is a DTensor, whose own wrapper storage never shrinks."""
    local = local_tensor(t)
    return local.untyped_storage().size() > 0 or local.numel() == 0


def _saved(fn: Any, kind: str) -> tuple[list[Any], bool]:
    """The tensors node `fn` saved (not unpacked; checkpointed ones left out) and whether it
    holds checkpointed values."""
    if kind == "custom_function":
        raws = list(getattr(fn, "_raw_saved_tensors", ()) or ())
        pairs = [("saved_tensors", raws)]
    else:
        pairs = [("_saved_" + s, [getattr(fn, "_raw_saved_" + s, None)]) for s in saved_names(fn)]
    out: list[Any] = []
    checkpointed = False
    for attr, raws in pairs:
        if any(is_checkpointed(r) for r in raws):
            checkpointed = True
            continue
        for v in compat.held_values(fn, attr, raws):
            out.extend(v if isinstance(v, (list, tuple)) else [v])
    return out, checkpointed


def _modules_in(obj: Any, depth: int = 0) -> list[torch.nn.Module]:
    """The modules a checkpointed region's function reaches: itself, a bound method's owner, a
    partial's function and arguments, a closure's cells (a few levels deep)."""
    if isinstance(obj, torch.nn.Module):
        return [obj]
    if depth > 3:
        return []
    found: list[torch.nn.Module] = []
    if inspect.ismethod(obj):
        found += _modules_in(obj.__self__, depth + 1)
    elif isinstance(obj, functools.partial):
        for x in (obj.func, *obj.args, *obj.keywords.values()):
            found += _modules_in(x, depth + 1)
    elif inspect.isfunction(obj):
        for cell in obj.__closure__ or ():
            try:
                found += _modules_in(cell.cell_contents, depth + 1)
            except ValueError:  # an empty cell
                continue
    return found


class ShardedSteps:
    """Which FSDP module each step needs, and the unshard / reshard around the steps (module
    doc). Made by `sharded_steps` for a graph with FSDP modules; `StepState.advance` defers to
    `advance` here, which runs the plan in segments between those boundaries.

    Args:
        graph: the live graph.
        plan: its plan.
        sharding: its FSDP modules (`core.fsdp.graph_sharding`).

    Example:
        >>> from autograd_widget.core.fsdp import Sharding
        >>> ShardedSteps(g, st.plan, Sharding(())).spans
        {}
    """

    def __init__(self, graph: BackwardGraph, plan: Plan, sharding: Sharding) -> None:
        self.modules: list[ShardedModule] = [
            m for m in sharding.modules if any(p.unsharded is not None for p in m.params)
        ]
        owner: dict[int, int] = {}
        leaf_owner: dict[int, int] = {}
        for j, m in enumerate(self.modules):
            for p in m.params:
                sid = _storage_id(p.unsharded)
                if sid is not None:
                    owner[sid] = j
                leaf_owner[id(p.unsharded)] = j
        fns = graph.require_live("step this graph").fns
        n = len(graph.nodes)
        needs: dict[int, set[int]] = {}
        for k, i in enumerate(plan.node_of):
            if i >= n or plan.kind[k] == ACCUMULATE:
                continue  # an op of an open compiled region (its node's step reads its saves)
            fn, kind = fns[i], graph.nodes[f"n{i}"].kind
            if kind == "cpp_function":
                continue
            tensors, checkpointed = _saved(fn, kind)
            mods = {owner[s] for s in map(_storage_id, tensors) if s in owner}
            if checkpointed:
                mods |= self._region_modules(fn, kind, i, graph, fns, leaf_owner)
            if mods:
                needs[k] = mods
        #: Module index -> (first step needing it, last step needing it).
        self.spans: dict[int, tuple[int, int]] = {}
        for k in sorted(needs):
            for j in needs[k]:
                first = self.spans.get(j, (k, k))[0]
                self.spans[j] = (first, k)
        self.bounds = sorted({b for f, last in self.spans.values() for b in (f, last + 1)})
        self.held: set[int] = set()  # modules this stepper unsharded and has not resharded
        self.inside = False
        self.names = plan.names

    def _region_modules(self, fn: Any, kind: str, i: int, graph: BackwardGraph, fns: list,
                        leaf_owner: dict[int, int]) -> set[int]:  # fmt: skip
        """The FSDP modules a checkpointed region's recomputation reads (see the module doc)."""
        found: set[int] = set()
        for frame in node_frames(fn, kind):
            region = _modules_in(getattr(frame, "recompute_fn", None))
            own = {id(p) for r in region for p in r.parameters()}
            for j, m in enumerate(self.modules):
                if any(id(p.sharded) in own or id(p.unsharded) in own for p in m.params):
                    found.add(j)
            if not region:  # the function names no module: every module whose leaves it reaches
                found |= self._reached(i, graph, fns, leaf_owner)
        return found

    @staticmethod
    def _reached(i: int, graph: BackwardGraph, fns: list, leaf_owner: dict[int, int]) -> set[int]:
        nexts: dict[int, list[int]] = {}
        for e in graph.edges:
            nexts.setdefault(int(e.src[1:]), []).append(int(e.dst[1:]))
        seen, todo, out = {i}, [i], set()
        while todo:
            a = todo.pop()
            var = getattr(fns[a], "variable", None) if graph.nodes[f"n{a}"].kind == (
                "accumulate_grad") else None  # fmt: skip
            if var is not None and id(var) in leaf_owner:
                out.add(leaf_owner[id(var)])
            for b in nexts.get(a, ()):
                if b not in seen:
                    seen.add(b)
                    todo.append(b)
        return out

    # ----------------------------------------------------------------- moving
    def advance(self, state: StepState, stop: int, **kw: Any) -> StepRecord | None:
        """`state.advance(stop, **kw)` in segments: before each step the modules it (and the
        steps up to a module's last) needs are unsharded; after a module's last step it is
        resharded.

        Guarantees: the same records and result as one `state.advance`; it stops where that
        would (a failure, a deferred Ctrl-C); a `CollectiveTimeout` leaves the state at the step
        boundary before the step that needed the module.

        Example:
            >>> from autograd_widget.core.fsdp import Sharding
            >>> sh = ShardedSteps(g, st.plan, Sharding(()))
            >>> sh.advance(st._state, 4) is None, st._state.pos
            (True, 4)
        """
        if state.pos >= stop:
            return state.advance(stop, **kw)
        self.inside = True
        try:
            while True:
                k = state.pos
                for j, (first, last) in self.spans.items():
                    if first <= k <= last:
                        self.unshard(j, k)
                nxt = next((b for b in self.bounds if b > k), stop)
                result = state.advance(min(nxt, stop), **kw)
                self.release(state.pos)
                if state.pos < min(nxt, stop) or state.pos >= stop or state.guard.sigint:
                    return result
        finally:
            self.inside = False

    def unshard(self, j: int, k: int) -> None:
        """Unshard module `j` for step `k` (a no-op when its parameters are there already),
        waiting at most `wait_seconds()` for the other ranks.

        Example:
            >>> from autograd_widget.core.fsdp import Sharding
            >>> ShardedSteps(g, st.plan, Sharding(())).modules  # nothing to unshard here
            []
        """
        m = self.modules[j]
        if all(p.unsharded is None or _holds_values(p.unsharded) for p in m.params):
            return  # unsharded already: by FSDP (not resharded after forward), or by us
        handle = m.module.unshard(async_op=True)
        seconds = wait_seconds()
        for work in _pending_works(m.module):
            try:
                work.wait(datetime.timedelta(seconds=seconds))
            except RuntimeError as exc:
                where = f"FSDP module {m.path!r}" if m.path else "the root FSDP module"
                raise CollectiveTimeout(
                    f"step {k} ({self.names[k]}) reads the parameters of {where} "
                    f"({', '.join(p.name for p in m.params)}), which FSDP gathers from every rank "
                    f"(an all-gather: a collective). It did not complete within {seconds:g} s "
                    f"({exc}): the other ranks are not stepping. Every rank must step the same "
                    "backward by hand (a Stepper on each rank, moved the same way); the gather "
                    "stays pending and completes when they do: step again then. The wait is "
                    f"set by the environment variable {TIMEOUT_ENV} (seconds)."
                ) from None
        if handle is not None:
            handle.wait()
        self.held.add(j)

    def release(self, pos: int) -> None:
        """Reshard the modules unsharded here whose last step is before `pos`.

        Example:
            >>> from autograd_widget.core.fsdp import Sharding
            >>> ShardedSteps(g, st.plan, Sharding(())).release(4)
        """
        for j in sorted(self.held):
            if self.spans[j][1] < pos:
                self.modules[j].module.reshard()
                self.held.discard(j)

    def close(self) -> None:
        """Reshard every module still unsharded here (the stepper is closing).

        Example:
            >>> from autograd_widget.core.fsdp import Sharding
            >>> sh = ShardedSteps(g, st.plan, Sharding(())); sh.close(); sh.held
            set()
        """
        for j in sorted(self.held):
            self.modules[j].module.reshard()
        self.held.clear()


def _pending_works(module: Any) -> list[Any]:
    """The pending all-gather works of an FSDP module's groups (FSDP's private state: none
    found means the wait falls back to FSDP's own, bounded by the process group's timeout)."""
    try:
        groups = module._get_fsdp_state()._fsdp_param_groups
    except AttributeError:
        return []
    works = []
    for group in groups:
        result = getattr(group, "_all_gather_result", None)
        work = getattr(result, "all_gather_work", None)
        if work is not None and hasattr(work, "wait"):
            works.append(work)
    return works


def sharded_steps(graph: BackwardGraph, plan: Plan) -> ShardedSteps | None:
    """The `ShardedSteps` of a graph with FSDP modules whose parameters its nodes read, else
    None (the stepper then runs as for any graph).

    Example:
        >>> sharded_steps(g, st.plan) is None
        True
    """
    sharding = graph_sharding(graph)
    if sharding is None or not sharding.modules:
        return None
    steps = ShardedSteps(graph, plan, sharding)
    return steps if steps.spans else None
