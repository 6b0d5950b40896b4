"""engine/diagnose: why a backward step failed, and where a NaN/Inf gradient is born.

- failure.py: `FailureExplanation` (the saved value modified in place, its versions, the node
  whose in-place op bumped it);
- origins.py: `Origin` (born / propagated / healed) and `birth_cause`, the sentence that says why;
- causes.py: the per-op rules behind `birth_cause` (saved values, inputs, dtype overflows);
- forward.py: `trace_forward`, the forward op that made a NaN/Inf a backward node saved;
- collective.py: what crosses ranks (nodes that communicate, a collective's errors, how surely
  a birth is a rank's own).

Depends only on core/ and util/: the step and record rooms both use it.
"""

__all__: list[str] = []
