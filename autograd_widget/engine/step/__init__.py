"""engine/step: backward by hand, node by node, exactly as the autograd engine would run it.

A `Stepper` turns a live `BackwardGraph` into a plan once, then steps a tight loop over it that
calls each node as the engine does (DESIGN.md, "Calling a node by hand"): one slot per
`_input_metadata` entry, `None` for empty slots, outputs reduced with `sum_to_size` and cast to
the destination's metadata, AccumulateGrad never called, grad mode off unless
`create_graph=True`. Fan-in is summed out of place, except into a partial sum the stepper made
itself and nobody else references, which gets `add_` like the engine's own input buffers:
bitwise the same.

The modules, one job each (imports one way: stepper -> the rest; nothing imports stepper.py at
run time):
- stepper.py: `Stepper`, the public face: validation, the guard, listeners, delegation;
- runbase.py: `RunBase`, what a `Stepper` and a `Replay` (engine/record/) share, written once:
  breakpoints, the failed step, listeners, `history` (one meaning, engine/interface.py);
- stepstate.py: `StepState`, one pass's position, slot buffers, edge values, undo log and step
  records, with the hot loop (`advance`) and the records it hands out;
- plan.py: the engine's order and the routing tables, as flat lists; resolve.py: checking the
  graph and `keep`, and finding a tensor's slot or edge (for `grad`);
- calls.py: calling one node as the engine does; fanin.py: undoing an in-place fan-in add;
- regionplan.py: the steps of an open compiled region (its node, then one per aten op);
  regioncalls.py: running them (the compiled node called once, the ops as an FX interpreter);
- recompute.py: one `torch.utils.checkpoint` group per pass (each checkpointed region
  recomputed once per run, as the engine does);
- sharded.py: FSDP2 models, stepped by hand: each FSDP module unsharded before the first step
  that reads its parameters and resharded after the last (FSDP's own unshard/reshard);
- edits.py: the set of what-if edits; whatif.py: applying them (a replay as a transaction) and
  the unedited reference run a `LeafDiff` compares with;
- compare.py: running the real engine once and listing where it disagrees; bitequal.py: the
  bit-for-bit comparison it uses;
- probes.py: Jacobian norms (calling nodes with probe gradients, apart from stepping);
- nonfinite.py: the stepper's incremental NaN/Inf origins (classification: diagnose/);
- breakpoints.py, listeners.py (`ListenerHandle`), guard.py (Ctrl-C at step boundaries);
- results.py: the plain records handed out (`StepRecord`, `StepInfo`, `EditInfo`,
  `Difference`, `LeafDiff`, `History`, `ReadOnlyList`).
"""

__all__: list[str] = []
