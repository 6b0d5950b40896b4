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
- ranks.py: every rank's files of one distributed run read together and checked (`{rank}` in
  the path), `RankRecordings` (the rank whose own node raised). A watch's files are read the
  same way (engine/watch/rankwatch.py).

`aw.watch`, which records only norms on step after step of a training run, is its own room:
engine/watch/.
"""

__all__: list[str] = []
