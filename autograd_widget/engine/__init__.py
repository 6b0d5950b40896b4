"""engine: running backward by hand (the `Stepper`) and everything it delegates to.

One job per module, imports one way (stepper -> state -> edits/guard/plan/calls/records; probes,
compare, breakpoints and listeners below stepper; nothing here imports stepper.py at run time):
plan.py (routing tables), calls.py (calling a node as the engine does), state.py (position, slots,
undo log, the hot loop), edits.py (what-if), compare.py (vs the real engine), probes.py (Jacobian
norms), breakpoints.py, listeners.py, guard.py (Ctrl-C), records.py (the results handed out).
Nothing is re-exported here: import from the module that owns a name.
"""

__all__: list[str] = []
