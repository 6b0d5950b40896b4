"""engine/watch: `aw.watch`, gradient flow across training steps, cheap enough to leave on.

Where a watched step's norms are computed and stored, in the order they happen:

- watch.py: `aw.watch(...)`, `Watch`, `aw.load_watch`: one `with watch.step(loss):` block per
  training step; every `every`-th block is watched (its graph hooked), the others get only the
  parameter check; stepblock.py: that block (`StepBlock`) and the warnings of its misuse;
- lean.py: the lean hooks a watched step runs (one post-hook per node, norms only, read once per
  step; AccumulateGrad nodes inferred);
- leafcheck.py: `LeafCheck`, the unwatched steps' exact non-finite check (a sum per parameter
  gradient on CPU);
- watchread.py: what a `Watch` answers (steps, records, recordings, series, the first NaN/Inf);
  watchkeep.py: what is kept of each step in memory and in the file (`every`, `flight=`), the
  `max_bytes=` budget; flight.py: the flight recorder (the steps around a NaN/Inf, a failure or
  a spike kept in full) and the budget's thinning;
- structure.py: a graph structure's index tables (`Structure`) and the walk that recognises a
  structure seen before, so a step keeps arrays, not graphs;
- trainstep.py: `TrainingStep`, what a watch keeps per step, and a watched step as a drawable
  `Recording` (engine/record/recording.py);
- watchseries.py: the norms behind `Watch.series` and `Watch.table` (edges, parameters,
  modules); watchfirst.py: `Watch.first_nonfinite`'s search (healed steps too);
- awwatch.py: the `.awwatch` file format (appended step by step; a strict, bounded reader);
  awwatch_write.py: its writer (never replaces a special file, never truncates, one writer per
  file);
- awtile.py / awstore.py: the file's format 2.0 (tiles of float32 columns filled in place,
  summaries and an index per tile; read lazily and strictly); storedwatch.py: the Watch read
  from it (`aw.load_watch` of a 2.0 file); watchframe.py: the series as a DataFrame
  (`to_pandas`, `to_arrow`);
- awcolumns.py: a few keys' columns of every tile read in one gather (what series() of an edge,
  a parameter or a small module reads);
- awmodules.py: the file's module records (per tile every module's summary, the large modules'
  columns): what the timeline of a long run and series() of a module read;
- rankwatch.py: `RankWatches`, every rank's watch of one distributed run read together (the rank
  where a NaN/Inf was born, where ranks diverge).

Imports go one way: watch -> record (a watched step is drawn as a `Recording`) -> step ->
diagnose; nothing in engine/record imports from here.
"""

__all__: list[str] = []
