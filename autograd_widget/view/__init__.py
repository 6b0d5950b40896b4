"""view: what is drawn. Torch-free; imports only engine/core/util.

- `modules` (module paths), `repeats` (runs of repeated blocks), `folding` (repeated subgraphs
  outside modules), `autofold` (THE owner of what collapse="auto" and orientation="auto" draw:
  the whole graph legible in the drawing's pixels, by `fitrule`, the fit rule the front-end's
  Fit shares), `visible` (the visible graph: folds, frames, the plumbing filter),
  `compiledframes` (a compiled region's aten ops as a frame of nodes: the drawn graph);
- the layout: `placement` (item sizes, clusters) -> `clusters` (a layout per module frame,
  cached) -> `layout` (sized layered layout, lanes) on `layers` (layering) and `ordering`
  (crossing reduction); `drawn` (crossings as drawn);
- `scene` (the `Scene`: folds + visible graph + layout + step state), `stateview` (the step state
  as arrays), `scale` (the gradient colour scale, fixed per run), `labels` (labels and the status
  line), `inspect` (inspector data as functions of scene and stepper);
- `timeline` (`aw.explore(watch)`'s timeline: module rows per watched step, op rows, the
  first NaN/Inf, moved modules, the gain of each node); `timecalls` (a module's calls within
  one step: a recurrent cell through time, a fused RNN node); `ranklines` (one line per rank of a
  distributed run's files, and the rank `aw.explore(group)` opens on).
"""

__all__: list[str] = []
