"""engine: running backward, by hand or by watching the engine run it, in four rooms by job.

- `interface` (interface.py): `Stepping`, the one declared stepping interface that a live
  `Stepper` and a recorded `Replay` both implement, and `Capabilities` (what a run can do). Every
  layer above types against it; nothing outside engine/ tests which class it holds.
- `step/`: stepping a live graph by hand (`Stepper` and everything it delegates to).
- `record/`: recording the engine's OWN backward (`aw.record`), its `.awrec` file, comparing two
  recordings, and `Replay`, which steps through a recording.
- `watch/`: `aw.watch`, gradient norms across training steps (lean hooks, structures, the
  `.awwatch` file); a watched step is drawn as a `Recording` of record/.
- `diagnose/`: why a step failed and where a NaN/Inf is born (used by the other rooms).

Imports go one way inside engine/: watch -> record -> step -> diagnose -> (core, util);
`interface` is imported by all and imports none of them at run time. Nothing is re-exported
here: import from the module that owns a name.
"""

__all__: list[str] = []
