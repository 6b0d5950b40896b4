"""Running a compiled region op by op: the calls the stepper's loop makes for its steps.

An open region (docs/compiled.md) is stepped as its node's own step, the ENTRY, then
one step per aten op. The entry (`EntryCall`) receives the node's incoming gradients like any
node, calls the compiled node once (exactly as the engine calls it: `calls.apply_custom`) and
builds the argument list the compiled backward gets (its saved tensors, the gradients as its
prologue coerces them); it hands the gradients to the ops that read them, and keeps the rest in
the pass's `RegionEnv`. Each op step (`OpCall`) runs its aten op, as an FX interpreter would,
on its input slots and the kept arguments; where its output is one of the node's gradient
outputs, what it sends downstream is the COMPILED node's value for that output (so every
gradient leaving the region, every leaf's included, is the engine's bit for bit), and the
interpreter's own value is kept aside for `compare_with_engine` (a fused kernel may round
otherwise: `region_differences`).

Guarantees: a call reads and writes only its step's slots (through the loop) and the pass's own
`RegionEnv` (one per `StepState`: a comparison pass or a what-if reference run never sees the
stepper's); the entry is re-run by any replay that passes it, so the environment is never stale.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.fx

from ...core.regions import OpProgram, RegionProgram, Source
from ...util.compat import compiled_backward_args
from .calls import CustomInfo, apply_custom

__all__ = ["EntryCall", "OpCall", "RegionEnv"]


class RegionEnv:
    """What one pass keeps of one region between its steps: the compiled backward's arguments
    (`args`), the compiled node's gradient outputs per slot (`compiled`), the ops' non-tensor
    results (`values`, keyed (op, output)) and the interpreter's value of each gradient output
    (`interp`, keyed by the node's output slot)."""

    __slots__ = ("args", "compiled", "interp", "values")

    def __init__(self, args: list, compiled: tuple) -> None:
        self.args = args
        self.compiled = compiled
        self.values: dict[tuple[int, int], Any] = {}
        self.interp: dict[int, Any] = {}


class EntryCall:
    """The entry step of region `r` (node `fns[node]`): call the compiled node, prepare the ops.

    Args:
        r: the region's number in the plan (the `renv` key).
        node: the graph index of the region's node.
        info: its `CustomInfo` (how the engine calls it).
        grads: (node input slot, backward argument position) of every incoming gradient the
            backward reads.
        arity: the node's number of input slots.

    Guarantees: returns `(*gradient per input slot as the ops read it, *compiled outputs per
    output slot)`; the plan routes the first part to the ops and the passed-through outputs of
    the second downstream. Example: see `OpCall`.
    """

    __slots__ = ("arity", "grads", "info", "node", "r")

    def __init__(
        self, r: int, node: int, info: CustomInfo, grads: list[tuple[int, int]], arity: int
    ) -> None:
        self.r, self.node, self.info, self.grads, self.arity = r, node, info, grads, arity

    def __call__(self, fns: list, args: list, renv: dict) -> tuple:
        """Run the entry (see the class docstring)."""
        fn = fns[self.node]
        info = self.info
        filled = list(args)
        if info.materialize is not False:
            filled = [torch.zeros(z[0], dtype=z[1], device=z[2]) if a is None else a
                      for a, z in zip(args, info.zeros)]  # fmt: skip
        bw_args = compiled_backward_args(fn, filled)
        compiled = apply_custom(info, fn, list(args))
        renv[self.r] = RegionEnv(bw_args, compiled)
        out: list = [None] * self.arity
        for slot, pos in self.grads:
            out[slot] = bw_args[pos]
        return (*out, *compiled)


class OpCall:
    """Step of op `k` of region `r`: run its aten op on its slots and the kept arguments.

    Args:
        r: the region's number in the plan (the `renv` key).
        k: the op's index in the region.
        op: its `OpProgram` (target, arguments, where each FX value comes from).
        program: the region's program (its module holds the "const" values).
        emit: the node's output slots this op's outputs become, in the order the plan routes
            them (after the op's own outputs).

    Guarantees: returns `(*the op's outputs, *the compiled node's value for each slot of
    emit)`; the op's non-tensor outputs and its values for region outputs are kept in the
    pass's `RegionEnv`.

    Example:
        >>> import torch
        >>> m = torch.compile(torch.nn.Linear(2, 1), backend="aot_eager", dynamic=False)
        >>> gc = aw.capture(m(torch.ones(3, 2)).sum())
        >>> s = aw.Stepper(gc); _ = s.run()
        >>> s.order[1:4], len(s.order) == 4 + len(gc.regions["n1"].ops)  # entry, then its ops
        (['n1', 'n1/0', 'n1/1'], True)
    """

    __slots__ = ("emit", "k", "module", "op", "outs", "r")

    def __init__(
        self, r: int, k: int, op: OpProgram, program: RegionProgram, emit: list[int]
    ) -> None:
        self.r, self.k, self.op, self.module, self.emit = r, k, op, program.module, emit
        self.outs = [(nr, slot) for nr, slots in enumerate(op.region_out) for slot in slots]

    def __call__(self, fns: list, args: list, renv: dict) -> tuple:
        """Run the op (see the class docstring)."""
        env: RegionEnv = renv[self.r]
        op = self.op
        sources = op.sources

        def value(n: torch.fx.Node) -> Any:
            s: Source = sources[n.name]
            if s.kind == "slot":
                return args[s.index]
            if s.kind == "arg":
                return env.args[s.index]
            if s.kind == "value":
                return env.values[(s.index, s.output_nr)]
            return getattr(self.module, s.name)

        a = torch.fx.node.map_arg(op.args, value)
        kw = torch.fx.node.map_arg(op.kwargs, value)
        res = op.target(*a, **kw)
        outs = tuple(res) if isinstance(res, (tuple, list)) else (res,)
        for nr, is_tensor in enumerate(op.tensor_out):
            if not is_tensor:
                env.values[(self.k, nr)] = outs[nr]
        for nr, slot in self.outs:
            env.interp[slot] = outs[nr]
        compiled = env.compiled
        return (*outs, *(compiled[s] for s in self.emit))
