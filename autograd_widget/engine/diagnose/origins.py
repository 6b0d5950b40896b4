"""Where a NaN or an Inf gradient is born, and why: the classification and the causes.

Three functions any backward run can use (the stepper's `nonfinite_origins()`, a recording of the
engine's own run):

- `classify(steps)` labels each node that produced or received a non-finite gradient: "born"
  (every incoming gradient finite, some outgoing one not), "propagated" (non-finite in and out)
  or "healed" (non-finite in, every outgoing gradient finite). It reads only `Summary` counts.
- `birth_cause(fn, grads_in, grads_out)` says, in one sentence with counts, what made a "born"
  node produce it, from the live node's saved values and its incoming gradients: a zero under a
  square root, a log of zeros, a division by a saved zero, a half-precision overflow, a saved
  value that was already non-finite in the forward... The per-op rules live in causes.py.
- `birth_cause(..., locator=...)` also walks back, when the node's saved values were already
  non-finite in the forward, to the forward op that made them (forward.py's `trace_forward`):
  the `Origin` then says `where="forward"` and names that op (`forward_node`, `forward_op`,
  `forward_module`, `forward_cause`). The forward part travels inside the cause text that
  births are stored as (`encode_birth`, after `FORWARD_MARK`), so a recording or a watch file
  keeps it without a new field; `classify` splits it off again (`split_birth`).
- `loss_scale(graph)` recognises a `torch.amp.GradScaler`'s `scale(loss)` at the root: then an
  overflow is the scaler's expected one (it skips that optimizer step and lowers the scale).

Guarantees: `birth_cause` never raises (anything unexpected gives the generic sentence with the
counts of NaN/Inf in and out) and never unpacks a saved value of a node inside a non-reentrant
checkpoint region (core/checkpoint.py: that would recompute the region, or make the engine raise
`CheckpointError` when called from a hook); nothing here changes a tensor, a node or a version.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import torch

from ...core.summary import Summary
from .causes import (
    counts_of,
    describe_counts,
    nonfinite_saved,
    overflow_sentence,
    plausible_overflow,
    read_saved_values,
    rule_for,
)
from .forward import ForwardOrigin, Locator, trace_forward

if TYPE_CHECKING:
    from ...core.graph import BackwardGraph

__all__ = [
    "FORWARD_MARK",
    "Locator",
    "Origin",
    "OriginKind",
    "OriginWhere",
    "birth_cause",
    "classify",
    "encode_birth",
    "loss_scale",
    "root_loss_scale",
    "split_birth",
]

OriginKind = Literal["born", "propagated", "healed"]
OriginWhere = Literal["forward", "backward"]

#: What separates a birth's backward sentence from its forward origin in a stored cause text:
#: then tab-separated: "exact"/"unsure", forward node id, module, op name, forward sentence.
FORWARD_MARK = "\n[forward]\t"

#: What `birth_cause` says of a node whose saved values are recomputed by a checkpoint.
CHECKPOINTED = "saved values are recomputed inside a checkpointed region: not read"


@dataclass(frozen=True)
class Origin:
    """One node's part in a non-finite gradient (see `classify`).

    `kind`: "born" (finite in, non-finite out: the NaN/Inf starts here), "propagated" (non-finite
    in and out; a node with no outgoing gradient at all, such as a leaf's AccumulateGrad, that
    receives one is "propagated" too: it ends in that gradient) or "healed" (non-finite in, every
    outgoing gradient finite: a mask or a multiplication by zero removed it). `cause`: one plain
    sentence (for "born": what makes it, with counts). `step`: the index in the run order.
    `expected`: True for the overflow a mixed-precision loss scaler causes on purpose.

    `where` (a "born" node's): "backward" when this node's own derivative made the NaN/Inf from
    finite values (a sqrt at 0), "forward" when the values it saved were already non-finite in
    the forward: then `forward_op` ("LogBackward0"), `forward_node` (its node id) and
    `forward_module` (its module path) name the forward op that made them, first in forward
    order, and `forward_cause` says why ("log of 2 negative inputs (NaN)"), or, where nothing
    readable tells, "the forward value was already non-finite at ..." (`forward_exact` False).
    The module is the one `aw.track` around the forward recorded (core/track.py), or, without
    it, the owner of a parameter the op uses; an op with neither (an activation's log) has None,
    and `forward_cause` then ends with the module its input came out of ("; its input came out
    of module h.1.mlp.c_fc"), said as that, never as the op's own.
    `node` and `cause` keep their meaning: where the gradient went non-finite, and why there.

    Example:
        >>> o = Origin("n1", "born", "saved `result` has 1 zero: ...", 2)
        >>> o.kind, o.expected, o.where
        ('born', False, 'backward')
    """

    node: str
    kind: OriginKind
    cause: str
    step: int
    expected: bool = False
    where: OriginWhere = "backward"
    forward_node: str | None = None
    forward_op: str | None = None
    forward_module: str | None = None
    forward_cause: str | None = None
    forward_exact: bool = True


def encode_birth(cause: str, forward: ForwardOrigin | None) -> str:
    """The cause text a birth is stored as: `cause`, then the forward origin after
    `FORWARD_MARK` (what `split_birth` reads back); `cause` alone without one.

    Example:
        >>> f = ForwardOrigin(None, "LogBackward0", "n2", "enc", "log of 1 negative input", True)
        >>> split_birth(encode_birth("saved `self` has 1 NaN", f))[1]["forward_module"]
        'enc'
    """
    if forward is None:
        return cause
    fields = ("exact" if forward.exact else "unsure", forward.node or "", forward.module or "",
              forward.op, forward.cause)  # fmt: skip
    return cause + FORWARD_MARK + "\t".join(f.replace("\t", " ") for f in fields)


def split_birth(text: str) -> tuple[str, dict[str, Any]]:
    """(the backward sentence, the `Origin` fields of its forward origin: {} when none) of a
    stored cause text (`encode_birth`'s).

    Example:
        >>> split_birth("saved `result` has 3 zeros")
        ('saved `result` has 3 zeros', {})
    """
    cause, mark, rest = text.partition(FORWARD_MARK)
    parts = rest.split("\t", 4) if mark else []
    if len(parts) != 5:
        return (cause if mark else text), {}
    exact, node, module, op, why = parts
    return cause, {"where": "forward", "forward_node": node or None, "forward_op": op,
                   "forward_module": module or None, "forward_cause": why,
                   "forward_exact": exact == "exact"}  # fmt: skip


def _finite(s: Summary | None) -> bool:
    return s is None or (s.nan == 0 and s.inf == 0)


def _slots_text(summaries: Sequence[Summary | None], what: str) -> str:
    parts = [
        f"{describe_counts(s.nan, s.inf)} in {what} {i}"
        for i, s in enumerate(summaries)
        if s is not None and not _finite(s)
    ]
    return ", ".join(parts)


def classify(
    steps: Iterable[tuple[int, str, Sequence[Summary | None], Sequence[Summary | None]]],
    causes: Mapping[str, str] | None = None,
    *,
    expected: Mapping[str, bool] | None = None,
) -> list[Origin]:
    """Label each step whose gradients are not all finite: born, propagated or healed.

    Args:
        steps: (step index, node id, incoming gradient summaries per slot, outgoing summaries
            per output), in run order; None stands for "no gradient" (finite).
        causes: node id -> the sentence for a "born" node (`birth_cause`'s); a born node without
            one gets a generic sentence with the counts.
        expected: node id -> True where the birth is a loss scaler's expected overflow.

    Guarantees: one `Origin` per listed step, in the order given; steps with nothing non-finite
    are left out; only `nan`/`inf` counts are read (summaries of any kind work).

    Example:
        >>> S = aw.Summary.of
        >>> one, bad = S(torch.ones(2)), S(torch.tensor([float("nan"), 1.0]))
        >>> [(o.node, o.kind) for o in classify([(0, "n0", [one], [bad]), (1, "n1", [bad], [one]),
        ...                                        (2, "n2", [one], [one])])]
        [('n0', 'born'), ('n1', 'healed')]
    """
    causes = causes or {}
    expected = expected or {}
    out: list[Origin] = []
    for k, nid, gin, gout in steps:
        bad_in = not all(_finite(s) for s in gin)
        bad_out = not all(_finite(s) for s in gout)
        if not bad_in and not bad_out:
            continue
        if not bad_in:
            cause, fwd = split_birth(causes.get(nid) or (
                f"finite incoming gradients, but it produced {_slots_text(gout, 'output')}"
            ))  # fmt: skip
            out.append(Origin(nid, "born", cause, k, bool(expected.get(nid, False)), **fwd))
        elif bad_out:
            cause = f"received {_slots_text(gin, 'slot')}; sent {_slots_text(gout, 'output')}"
            out.append(Origin(nid, "propagated", cause, k))
        elif all(s is None for s in gout):
            cause = f"received {_slots_text(gin, 'slot')}; it ends here (nothing flows on)"
            out.append(Origin(nid, "propagated", cause, k))
        else:
            cause = f"received {_slots_text(gin, 'slot')}; every gradient it sent is finite"
            out.append(Origin(nid, "healed", cause, k))
    return out


def _generic(name: str, grads_in: Sequence[Any], grads_out: Sequence[Any]) -> str:
    n_in = [counts_of(g) for g in grads_in]
    n_out = [counts_of(g) for g in grads_out]
    nan_out, inf_out = sum(c[0] for c in n_out), sum(c[1] for c in n_out)
    nan_in, inf_in = sum(c[0] for c in n_in), sum(c[1] for c in n_in)
    if nan_in or inf_in:
        return (
            f"{name} received {describe_counts(nan_in, inf_in)} and produced "
            f"{describe_counts(nan_out, inf_out)}"
        )
    return f"{name} produced {describe_counts(nan_out, inf_out)} from finite incoming gradients"


def birth_cause(
    fn: Any,
    grads_in: Sequence[torch.Tensor | Summary | None],
    grads_out: Sequence[torch.Tensor | Summary | None],
    *,
    loss_scale: float | None = None,
    locator: Locator | None = None,
) -> tuple[str, bool]:
    """Why node `fn` turned finite gradients into NaN/Inf: (one sentence with counts, expected).

    Args:
        fn: the live torch backward node (`tensor.grad_fn`, `graph.fn(node_id)`).
        grads_in: the gradients it received, per slot (None: none). A `Summary` is accepted
            where the tensor is gone (the sentence then has counts but fewer specifics).
        grads_out: what it produced, per output (tensors or summaries, None: none).
        loss_scale: the loss scaler's factor (`loss_scale(graph)`): an overflow is then said to
            be the scaler's expected one and `expected` is True.
        locator: the live graph's nodes, ids and modules (forward.py's `Locator`). Given, and
            a saved value of `fn` non-finite, the forward op that made it is found and appended
            (`encode_birth`: `classify` turns it into the `Origin`'s forward fields). Call it
            while the saved values exist (during the backward, or on a retained graph).

    Guarantees: never raises (falls back to the generic sentence with the counts of NaN/Inf in
    `grads_in`/`grads_out`); never unpacks a saved value inside a non-reentrant checkpoint
    region (the sentence then says "saved values are recomputed inside a checkpointed region:
    not read"); reads saved values without changing them. What is checked, in order: the op's
    own rule (sqrt/rsqrt at 0, log of zeros or negatives, division by a saved zero, reciprocal,
    pow, acos/asin/atanh at |x| >= 1, std/var of too few elements, exp/softmax overflow;
    a sqrt of a sum of squares is named a hand-written norm of a zero vector), then a saved
    value that is itself non-finite ("produced in the forward"), then an overflow of the dtype
    (finite inputs and saved values whose magnitudes multiply to within 1000x of the dtype's
    largest value, or a float16/bfloat16 output where they are unknown), then the generic
    sentence.

    Example:
        >>> a = torch.tensor([0.0, 0.0, 0.0, 4.0], requires_grad=True)
        >>> r = a.sqrt()
        >>> g = torch.ones(4)
        >>> birth_cause(r.grad_fn, [g], [r.grad_fn(g)])
        ('saved `result` has 3 zeros: the derivative of sqrt at 0 is infinite', False)
    """
    name = "this node"
    try:
        name = fn.name() if hasattr(fn, "name") else "this node"
        sentence, expected = _cause(fn, name, grads_in, grads_out, loss_scale)
        if locator is not None and not expected:
            sentence = encode_birth(sentence, trace_forward(fn, locator))
        return sentence, expected
    except Exception:
        try:
            return _generic(name, grads_in, grads_out), False
        except Exception:
            return f"{name} produced a NaN or an Inf from finite incoming gradients", False


def _cause(
    fn: Any, name: str, grads_in: Sequence[Any], grads_out: Sequence[Any], scale: float | None
) -> tuple[str, bool]:
    saved, checkpointed = read_saved_values(fn)
    if checkpointed:
        return f"{_generic(name, grads_in, grads_out)}; {CHECKPOINTED}", False
    rule = rule_for(name)
    if rule is not None:
        sentence = rule(fn, saved, grads_in, grads_out)
        if sentence:
            return sentence, False
    sentence = nonfinite_saved(saved, name)
    if sentence:
        return sentence, False
    nan_out = sum(counts_of(g)[0] for g in grads_out)
    inf_out = sum(counts_of(g)[1] for g in grads_out)
    if inf_out and plausible_overflow(grads_in, grads_out, saved):
        over = overflow_sentence(grads_in, grads_out, saved, inf_out, nan_out)
        if scale is not None:
            return (
                f"the expected overflow of the mixed-precision loss scaler (scale {scale:g}), "
                f"not a bug: {over}; GradScaler skips this step and lowers the scale"
            ), True
        return over, False
    return _generic(name, grads_in, grads_out), False


def loss_scale(graph: BackwardGraph) -> float | None:
    """The factor a `torch.amp.GradScaler` applied to the loss, else None.

    `scaler.scale(loss)` is `loss * scale` with a one-element float tensor `scale` (a power of
    two: 65536 at first, halved on each overflow, doubled after 2000 clean steps): a root that is
    a `MulBackward0` whose saved `other` has one element, >= 2 and a power of two, and does not
    require grad. (So `loss * 1024.0` reads as a scale of 1024 too: the graph cannot tell.)

    Args:
        graph: a captured `BackwardGraph` (a graph without live nodes gives None).

    Guarantees: never raises; reads only the roots' saved `other` (not inside a checkpoint).

    Example:
        >>> w = torch.ones(3, requires_grad=True)
        >>> scaled = (w * 2).sum() * torch.tensor(65536.0)
        >>> loss_scale(aw.capture(scaled)), loss_scale(aw.capture((w * 2).sum()))
        (65536.0, None)
    """
    try:
        if not graph.is_live:
            return None
        for nid, _ in graph.roots:
            if graph.nodes[nid].name == "MulBackward0":
                v = root_loss_scale(graph.fn(nid))
                if v is not None:
                    return v
    except Exception:
        return None
    return None


def root_loss_scale(fn: Any) -> float | None:
    """The loss scaler's factor when the live root node `fn` is `scaler.scale(loss)`'s
    multiplication (`loss_scale`'s test on one node), else None.

    Guarantees: never raises; reads only the node's saved `other` (not inside a checkpoint);
    one value read (a device synchronisation on CUDA).

    Example:
        >>> w = torch.ones(3, requires_grad=True)
        >>> root_loss_scale(((w * 2).sum() * torch.tensor(1024.0)).grad_fn)
        1024.0
    """
    try:
        if fn is None or fn.name() != "MulBackward0":
            return None
        saved, checkpointed = read_saved_values(fn, ("other",))
        other = saved.get("other")
        if (
            checkpointed
            or not isinstance(other, torch.Tensor)
            or other.numel() != 1
            or other.requires_grad
        ):
            return None
        v = float(other.reshape(()).item())
        if v >= 2 and v == 2.0 ** round(torch.tensor(v).log2().item()):
            return v
    except Exception:
        return None
    return None
