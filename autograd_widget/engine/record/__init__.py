"""engine/record: the engine's OWN backward, recorded, saved, compared and replayed.

- recorder.py: `aw.record(...)`, the context manager that hooks every node while the user's
  backward runs (their code, their hooks, DDP's) and removes every hook on exit;
- recording.py: `Recording` (the graph as records, the order the engine ran the nodes,
  a `NodeExecution` per node, the `Failure`), `load_recording`;
- awrec.py: the `.awrec` file format (a zip of JSON and raw tensor bytes: loading runs no code,
  and reads nothing it has not bounded first);
- manifest.py: a recording's manifest read strictly (every field's type, every node id checked)
  before recording.py builds the records;
- recdiff.py: `aw.compare_recordings`, the edges whose gradients differ between two recordings;
- replay.py: `Replay`, which steps through a recording as a `Stepper` steps a live graph (both
  implement `engine.interface.Stepping`);
- watch.py: `aw.watch(...)`, `Watch`, `aw.load_watch`: gradient flow across training steps, one
  `watch.step(loss)` block per step; stepblock.py: that block (`StepBlock`) and the warnings of
  its misuse; watchseries.py: the norms behind `Watch.series` (edges, parameters, modules);
  watchfirst.py: `Watch.first_nonfinite`'s search (healed steps too);
- lean.py: the lean recording path a watched step runs (one post-hook per node, norms only,
  read once per step; AccumulateGrad nodes inferred), and the parameter check of the others;
- structure.py: a graph structure's index tables (`Structure`) and the walk that recognises a
  structure seen before;
- trainstep.py: `TrainingStep`, what a watch keeps per step, and a watched step as a `Recording`;
- awwatch.py: the `.awwatch` file format (appended step by step; a strict, bounded reader);
  awwatch_write.py: its writer (never replaces a special file, never truncates, one writer per
  file);
- ranks.py: every rank's files of one distributed run read together and checked (`{rank}` in
  the path), `RankRecordings` (the rank whose own node raised); rankwatch.py: `RankWatches`
  (the rank where a NaN/Inf was born, where ranks diverge).
"""

__all__: list[str] = []
