"""Comparison with the engine: run the real engine once and list where manual stepping differs.

`compare_with_engine` is the test oracle of the whole package. The engine side
(`run_engine`) is one `torch.autograd.grad(roots, leaves, grad_outputs, retain_graph=True)` with a
temporary pre-hook on every node seeing what it receives per input slot (the sum per slot, after
tensor hooks), removed afterwards, also on error. The manual side is a separate full pass
(`manual_pass`: a state of its own), so the stepper being compared keeps its position (and its
what-if edits play no part: the comparison is always of the faithful run). Slots and leaves are
paired with torch.testing's tolerances for the dtype.

`compare` (what the stepper calls) runs the manual pass FIRST and checks each node's inputs inside
its engine pre-hook, as the engine reaches it: the engine's gradients are never held (the engine
reuses their memory as it does without us), and equal slots are recognised by one `memcmp`
(bitequal.py) instead of `torch.equal`'s element-wise kernel. `run_engine` + `differences` (engine
first, every input held) give the same list and stay for callers that want the engine's tensors.

Hooks that change gradients (a x10 tensor hook on a non-leaf shows in that slot and downstream; one
on a leaf shows in the leaf's gradient) are exactly what this finds. `.grad` of leaves is never
written; a non-leaf with `retain_grad()` gets its `.grad` restored if it is an output or listed in
`tensors`. If the engine itself raises (e.g. a saved tensor was modified in place), its error
propagates, hooks removed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch

from ...core.graph import BackwardGraph
from ...core.summary import Summary
from ...util.gcpause import gc_paused
from .bitequal import same_bits
from .calls import IN_STEP_CODES
from .edits import Edits
from .guard import Guard
from .plan import ACCUMULATE, CUSTOM, Plan
from .regioncalls import EntryCall
from .results import Difference, StepRecord
from .stepstate import ADVANCE_CODE, StepState

__all__ = [
    "EngineResult",
    "compare",
    "differences",
    "manual_pass",
    "region_differences",
    "run_engine",
    "tolerances",
]


class EngineResult(NamedTuple):
    """What the engine computed: per node index, the gradients each input slot received; per
    leaf (in `graph.leaves` order), its gradient.

    Example:
        >>> run = run_engine(g, st.plan)
        >>> run.inputs[1], run.leaf_ids, run.leaf_grads  # n1 (PowBackward0) received 1
        ((tensor(1.),), ['n2', 'n3'], (tensor(1.), tensor(4.)))
    """

    inputs: dict[int, tuple]
    leaf_ids: list[str]
    leaf_grads: tuple


def check_comparable(plan: Plan) -> None:
    """Raise RuntimeError when running the real engine over this plan is refused (a reentrant
    checkpoint: the engine would run through it).

    Args:
        plan: a stepper's plan.

    Example:
        >>> check_comparable(st.plan)  # nothing refused: no error
    """
    for info in plan.custom.values():
        if info.refuse is not None:
            raise RuntimeError(
                f"compare_with_engine() would run the real engine through it: {info.refuse}"
            )


def run_engine(
    graph: BackwardGraph,
    plan: Plan,
    tensors: Sequence[torch.Tensor] = (),
    check: Callable[[int, tuple], None] | None = None,
) -> EngineResult:
    """Run the real engine once over `graph`, recording every node's incoming gradients.

    Args:
        graph: a live captured graph.
        plan: its plan (which nodes are AccumulateGrad; custom Functions' refusals).
        tensors: extra non-leaf tensors whose `.grad` (retain_grad) must be restored.
        check: if given, called as `check(i, grads)` in node `n<i>`'s pre-hook (before the node
            runs) INSTEAD of recording: `inputs` is then empty and no gradient is held.

    Guarantees: every hook is removed and every watched `.grad` restored, also on error; a
    reentrant checkpoint raises RuntimeError before the engine runs.

    Example:
        >>> run = run_engine(g, st.plan)
        >>> sorted(run.inputs), run.leaf_grads  # no entry for AccumulateGrad nodes
        ([0, 1], (tensor(1.), tensor(4.)))
        >>> x.grad is None  # .grad of leaves is never written
        True
    """
    live = graph.require_live("compare with the engine")
    fns = live.fns
    check_comparable(plan)
    got: dict[int, tuple] = {}
    handles = []

    def hook_for(i: int) -> Callable:
        if check is not None:  # before the node runs: a custom backward has not modified them
            return lambda grads: check(i, grads)

        def hook(grads: tuple) -> None:
            got[i] = grads  # held: the engine then never accumulates into them in place

        def copying_hook(grads: tuple) -> None:  # a custom backward may modify its input
            got[i] = tuple(None if g is None else g.detach().clone() for g in grads)

        return copying_hook if plan.kind[plan.step_of[f"n{i}"]] == CUSTOM else hook

    roots = graph.root_tensors
    watch = [t for t in [*roots, *tensors] if t.retains_grad]
    saved_grads = [t.grad for t in watch]
    leaf_ids = list(graph.leaves)
    leaves = [fns[int(nid[1:])].variable for nid in leaf_ids]
    try:
        for i, fn in enumerate(fns):
            if plan.kind[plan.step_of[f"n{i}"]] != ACCUMULATE:
                handles.append(fn.register_prehook(hook_for(i)))
        engine = torch.autograd.grad(
            roots,
            leaves,
            grad_outputs=list(graph.grad_outputs or [None] * len(roots)),
            retain_graph=True,
            allow_unused=True,
        )
    finally:
        for h in handles:
            h.remove()
        for t, g in zip(watch, saved_grads):
            t.grad = g
    del leaves
    return EngineResult(got, leaf_ids, engine)


def differences(
    graph: BackwardGraph,
    plan: Plan,
    engine: EngineResult,
    manual_slots: Sequence[torch.Tensor | None],
    position: int,
    failed: StepRecord | None,
    rtol: float | None = None,
    atol: float | None = None,
) -> list[Difference]:
    """Where the manual pass (`manual_slots` after `position` steps) and `engine` disagree.

    Args:
        graph, plan: the graph and its plan.
        engine: `run_engine`'s result.
        manual_slots: the slot buffers of a stepper that kept every tensor (`keep="tensors"`).
        position: how far that stepper got.
        failed: its failure record, if it stopped at a failing node (a "manual_error").
        rtol, atol: tolerances; default torch.testing's for the dtype (`tolerances`).

    Guarantees: sorted by the step of the node; a slot or leaf the manual pass did not reach is
    not compared.

    Example:
        >>> run = run_engine(g, st.plan)
        >>> slots = [torch.tensor(v) for v in (1.0, 1.0, 1.0, 5.0)]  # slot i: n{i}'s input 0
        >>> diffs = differences(g, st.plan, run, slots, 4, None)
        >>> [(d.kind, d.node, d.max_abs_diff) for d in diffs]  # the engine gave x 4.0
        [('leaf', 'n3', 1.0)]
    """
    check = _SlotCheck(graph, plan, manual_slots, position, rtol, atol)
    for i, grads in engine.inputs.items():
        check(i, grads)
    return check.finish(engine.leaf_ids, engine.leaf_grads, failed)


class _SlotCheck:
    """Compares the engine's inputs of node `n<i>` with the manual pass's slots as they come
    (`__call__`, also from inside an engine pre-hook), then the leaves (`finish`)."""

    def __init__(
        self,
        graph: BackwardGraph,
        plan: Plan,
        slots: Sequence[torch.Tensor | None],
        position: int,
        rtol: float | None,
        atol: float | None,
    ) -> None:
        self.graph, self.plan, self.slots, self.position = graph, plan, slots, position
        self.rtol, self.atol = rtol, atol
        self.diffs: list[Difference] = []
        step = [0] * len(plan.node_of)
        for k, i in enumerate(plan.node_of):
            step[i] = k
        self.step = step

    def __call__(self, i: int, grads: tuple) -> None:
        k = self.step[i]
        plan = self.plan
        if k >= self.position or plan.kind[k] == ACCUMULATE:
            return
        a, slots = plan.start[k], self.slots
        for slot, ev in enumerate(grads):
            m = slots[a + slot]
            if ev is m or (ev is not None and m is not None and same_bits(ev, m)):
                continue
            d = _differ(ev, m, self.rtol, self.atol)
            if d is not None:
                nid = plan.order[k]
                self.diffs.append(
                    Difference("slot", nid, self.graph.nodes[nid].name, slot, *d)
                )

    def finish(
        self, leaf_ids: list[str], leaf_grads: tuple, failed: StepRecord | None
    ) -> list[Difference]:
        plan, diffs = self.plan, self.diffs
        if failed is not None and failed.error:
            nid = failed.node.id
            diffs.insert(
                0,
                Difference(
                    "manual_error", nid, failed.node.name, None, None, None, None, failed.error
                ),
            )
        for nid, ev in zip(leaf_ids, leaf_grads):
            k = plan.step_of[nid]
            if k >= self.position:
                continue
            m = self.slots[plan.start[k]]
            if ev is not None and m is not None and same_bits(ev, m):
                continue
            d = _differ(ev, m, self.rtol, self.atol)
            if d is not None:
                name = self.graph.nodes[nid].leaf_name or "leaf"
                diffs.append(Difference("leaf", nid, name, 0, *d))
        diffs.sort(key=lambda d: plan.step_of[d.node])  # stable: slot order within a node
        return diffs


def compare(
    graph: BackwardGraph,
    plan: Plan,
    seeds: list[tuple[int, torch.Tensor]],
    tensors: Sequence[torch.Tensor] = (),
    rtol: float | None = None,
    atol: float | None = None,
) -> list[Difference]:
    """Where manual stepping and the real engine disagree: the manual pass first, then the
    engine, each node's inputs checked in its pre-hook as the engine reaches it (module doc).

    Args:
        graph, plan: the graph and the plan of the stepper being compared.
        seeds: its root gradients.
        tensors: non-leaf tensors whose `.grad` (retain_grad) must be restored.
        rtol, atol: tolerances; default torch.testing's for the dtype (`tolerances`).

    Guarantees: the list `differences(run_engine(...), *manual_pass(...))` gives, sorted by
    step; no engine gradient held past its node's pre-hook; hooks removed, also on error; a
    refused plan raises before anything runs, the engine's own error propagates.

    Example:
        >>> compare(g, st.plan, st._state.seeds)
        []
    """
    check_comparable(plan)
    env: dict = {}
    slots, position, failed = manual_pass(graph, plan, seeds, env)
    check = _SlotCheck(graph, plan, slots, position, rtol, atol)
    engine = run_engine(graph, plan, tensors, check=check)
    diffs = check.finish(engine.leaf_ids, engine.leaf_grads, failed)
    if env:
        diffs += region_differences(plan, env, rtol, atol)
        diffs.sort(key=lambda d: plan.step_of[d.node])
    return diffs


def region_differences(
    plan: Plan, env: dict, rtol: float | None = None, atol: float | None = None
) -> list[Difference]:
    """Per gradient output of each open compiled region a pass ran: where the aten ops' own
    result (an FX interpreter's) differs from the compiled node's, beyond the tolerances.

    The compiled node's values are what flowed on (so the leaves are the engine's); this says
    how far its kernels are from the plain aten ops (none under backend="aot_eager": the same
    ops; last bits under "inductor", whose fused kernels sum and round in another order).

    Args:
        plan: the pass's plan.
        env: the pass's region environments (`StepState.renv`: region -> `RegionEnv`).
        rtol, atol: tolerances; default torch.testing's for the dtype (`tolerances`).

    Example:
        >>> region_differences(st.plan, {})
        []
    """
    out: list[Difference] = []
    for k, call in plan.calls.items():
        if not isinstance(call, EntryCall):
            continue
        renv = env.get(call.r)
        if renv is None:
            continue
        for slot in sorted(renv.interp):
            mine, theirs = renv.interp[slot], renv.compiled[slot]
            if isinstance(mine, torch.Tensor) and isinstance(theirs, torch.Tensor) and (
                    mine.shape == theirs.shape and mine.dtype == theirs.dtype
                    and same_bits(theirs, mine)):  # fmt: skip
                continue
            d = _differ(theirs, mine, rtol, atol)
            if d is not None:
                note = d[3] or ("the aten ops' result differs from the compiled kernels' (engine: "
                                "the compiled node's value, which flowed on; manual: the ops')")
                out.append(Difference("region_output", plan.order[k], plan.names[k], slot,
                                      d[0], d[1], d[2], note))  # fmt: skip
    return out


def manual_pass(
    graph: BackwardGraph, plan: Plan, seeds: list[tuple[int, torch.Tensor]],
    env: dict | None = None,
) -> tuple[list, int, StepRecord | None]:  # fmt: skip
    """A full manual pass over `plan` keeping every slot: (slots, position, failure record).

    Args:
        graph, plan: the graph and the plan of the stepper being compared (the plan is shared:
            not rebuilt).
        seeds: its root gradients.
        env: if given, receives the pass's compiled-region environments (`region_differences`).

    Guarantees: the faithful run (no edits), a state of its own (the caller's is untouched).

    Example:
        >>> slots, position, failed = manual_pass(g, st.plan, st._state.seeds)
        >>> slots, position, failed
        ([tensor(1.), tensor(1.), tensor(1.), tensor(4.)], 4, None)
    """
    # Not kept, so fan-in sums are accumulated in place as the engine does, but every slot
    # retained; a replay records neither times nor summaries.
    state = StepState(
        graph, plan, seeds, create_graph=False, keep="summaries", edits=Edits(plan),
        guard=Guard(ADVANCE_CODE, IN_STEP_CODES),
    )  # fmt: skip
    with gc_paused():
        failed = state.advance(
            len(plan.order), replay=True, retain=frozenset(range(plan.n_slots))
        )
    slots, position = state.slots, state.pos
    if env is not None:
        env.update(state.renv)
    state.close()
    return slots, position, failed


def tolerances(dtype: torch.dtype) -> tuple[float, float]:
    """(rtol, atol) torch.testing uses for `dtype`.

    Args:
        dtype: the engine gradient's dtype.

    Example:
        >>> tolerances(torch.float64)
        (1e-07, 1e-07)
    """
    if dtype in (torch.float64, torch.complex128):
        return 1e-7, 1e-7
    if dtype in (torch.float16, torch.bfloat16):
        return 1e-3, 1e-5
    return 1.3e-6, 1e-5


def _differ(
    engine: torch.Tensor | None, manual: torch.Tensor | None, rtol: float | None, atol: float | None
) -> tuple[float | None, Summary | None, Summary | None, str] | None:
    if engine is None and manual is None:
        return None
    if engine is None or manual is None:
        note = (
            "the engine had no gradient here"
            if engine is None
            else "manual stepping had no gradient here"
        )
        return (
            None,
            None if engine is None else Summary.of(engine),
            None if manual is None else Summary.of(manual),
            note,
        )
    if engine is manual:
        return None
    manual = manual.detach()
    if (
        engine.dtype == manual.dtype
        and engine.layout is torch.strided
        and manual.layout is torch.strided
        and torch.equal(engine, manual)  # the usual case: much cheaper than allclose
    ):
        return None
    if engine.shape != manual.shape:
        return (
            None,
            Summary.of(engine),
            Summary.of(manual),
            f"shapes differ: engine {list(engine.shape)}, manual {list(manual.shape)}",
        )
    r, a = tolerances(engine.dtype)
    r = r if rtol is None else rtol
    a = a if atol is None else atol
    e, m = engine, manual.to(engine.dtype)
    if e.layout is not torch.strided:  # sparse gradients (Embedding(sparse=True), sparse.mm)
        e = e.to_dense()
    if m.layout is not torch.strided:
        m = m.to_dense()
    if torch.allclose(e, m, rtol=r, atol=a, equal_nan=True):
        return None
    diff = (e - m).abs()
    worst = float(diff.nan_to_num(nan=math.inf).max()) if diff.numel() else 0.0
    return worst, Summary.of(engine), Summary.of(manual), ""
