"""The gradient colour scale, fixed for a whole run: colours never change meaning mid-run.

The drawing colours each flowed edge by the log10 of its gradient norm. Rescaling to the norms
seen so far would recolour edges that already ran at every step, so the scale is taken, once,
from a THROWAWAY run: a separate `engine.step.stepper.Stepper` over the same graph
(keep="summaries"), run to the end, reading its edge summaries' norms, then closed.

Guarantees:
- never torch's engine (it would fire the user's hooks); the throwaway Stepper writes no
  `.grad`, registers no hook on the user's tensors and bumps no version counter, and `close()`
  drops every tensor it held (checkpointed regions included: the stepper's own group is retired,
  so nothing it recomputed stays alive);
- the user's stepper is not moved nor read;
- when the throwaway run fails (a node raises, the graph was already freed by a backward) or
  yields no finite nonzero norm, the scale is "so far": the range of the norms flowed up to the
  current step, widened as the run goes (`NormScale.fixed` is False and the legend says so).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, NamedTuple

from ..core.regions import value_edges
from ..engine.step.stepper import Stepper
from .compiledframes import DrawnGraph

if TYPE_CHECKING:
    from ..core.graph import BackwardGraph

__all__ = ["SCALE_FIXED", "SCALE_SO_FAR", "NormScale", "norm_scale_of", "run_norm_scale"]

#: `NormScale.kind` of a scale fixed from the throwaway run.
SCALE_FIXED = "run"
#: `NormScale.kind` of the fallback: the norms flowed so far.
SCALE_SO_FAR = "so far"


class NormScale(NamedTuple):
    """The colour scale of gradient norms: log10 of the smallest and largest finite nonzero
    norm of the whole run (`kind` "run"), or None and None with `kind` "so far" and `reason`
    saying why the run could not give one."""

    lo: float | None
    hi: float | None
    kind: str
    reason: str = ""

    @property
    def fixed(self) -> bool:
        """Whether the scale holds for the whole run (from the throwaway run).

        Example:
            >>> NormScale(0.0, 1.0, SCALE_FIXED).fixed, NormScale(None, None, SCALE_SO_FAR).fixed
            (True, False)
        """
        return self.kind == SCALE_FIXED


def norm_scale_of(norms: Iterable[float], source: str = "the run") -> NormScale:
    """The colour scale of a whole run whose edge norms are known already (a recording holds
    them all): fixed from the finite nonzero ones, "so far" when there is none.

    Example:
        >>> s = norm_scale_of([1.0, 100.0, float("nan"), 0.0])
        >>> s.kind, s.lo, s.hi
        ('run', 0.0, 2.0)
        >>> norm_scale_of([]).reason
        'no finite nonzero gradient norm in the run'
    """
    finite = [n for n in norms if math.isfinite(n) and n > 0]
    if not finite:
        return NormScale(None, None, SCALE_SO_FAR, f"no finite nonzero gradient norm in {source}")
    return NormScale(math.log10(min(finite)), math.log10(max(finite)), SCALE_FIXED)


def run_norm_scale(graph: BackwardGraph) -> NormScale:
    """The colour scale of `graph`'s whole backward, from a throwaway stepper run.

    Args:
        graph: a live captured graph (records only, or freed by a backward: the run fails and
            the fallback "so far" scale is returned).

    Guarantees: runs a separate `Stepper(graph, keep="summaries")` to the end and closes it,
    whatever happens; the user's tensors, hooks, `.grad` and stepper are untouched. Never
    raises for a failing run (the fallback says why in `reason`). Costs one run of the graph.

    Example:
        >>> s = run_norm_scale(g)  # z = x**2 + y: gradient norms 1, 1 and |2x| = 4
        >>> s.kind, round(s.lo, 3), round(s.hi, 3)
        ('run', 0.0, 0.602)
        >>> x.grad is None and st.position == 0
        True
    """
    if not graph.is_live:
        return NormScale(None, None, SCALE_SO_FAR, "the graph holds records only")
    if isinstance(graph, DrawnGraph):  # compiled regions drawn op by op: run the captured graph
        graph = graph.base
    try:
        stepper = Stepper(graph, keep="summaries")
    except Exception as err:  # any refusal means "no fixed scale"
        return NormScale(None, None, SCALE_SO_FAR, f"{type(err).__name__}: {err}")
    try:
        rec = stepper.run()
        if rec is not None and rec.error:
            return NormScale(None, None, SCALE_SO_FAR, f"the run fails at {rec.node.name}")
        # Norms only, and no summary kept past this line: a lazy summary still held at
        # close() would be completed by replaying the whole run (core/store.py settle).
        saved = value_edges(graph.regions)  # a region's saved values: not gradients
        norms = [float(s.norm) for e, s in stepper.edge_summaries().items() if e not in saved]
        finite = [n for n in norms if math.isfinite(n) and n > 0]
        if not finite:
            return NormScale(None, None, SCALE_SO_FAR, "no finite nonzero gradient norm")
        return NormScale(math.log10(min(finite)), math.log10(max(finite)), SCALE_FIXED)
    except Exception as err:  # a throwaway run must never break the widget
        return NormScale(None, None, SCALE_SO_FAR, f"{type(err).__name__}: {err}")
    finally:
        stepper.close()
