"""Which forward op made a NaN or an Inf that a backward node then met in its saved values.

When a gradient goes non-finite because a value saved for the backward was already non-finite
(the loss's `LogSoftmaxBackward0` saving a NaN result), the node where the gradient went bad is
the END of the story: the op that made the NaN sits earlier in the model. `trace_forward(fn)`
walks back from that node's non-finite saved values, through the forward values that were
non-finite, to the FIRST op whose output is non-finite while its inputs are not (of the same
kind: a NaN made from Infs, as `inf - inf` or a softmax over a row of -Inf, is born where the
NaN appears), and says why: a log of a negative, a division by zero, an overflow of exp, a
multiplication by a saved Inf...

What is read: the graph's saved values (a node's saved `result` is its output; a saved input
carries its `grad_fn` and `output_nr`, so it tells a producer's output), and a leaf's own value
(its `AccumulateGrad.variable`). An output no node saved is unknown; it is inferred bad only
behind an op that cannot make a NaN/Inf from finite inputs (a view, relu, tanh, softmax...)
whose one unknown input must then be the bad one. Where nothing readable tells, the answer says
so: "the forward value was already non-finite at <node>" with the evidence, never a guess.

Cost: nothing unless the birth node saved a non-finite value; then, once per `Locator` (one
per backward pass in a watch), every saved value of the graph is counted once (NaN, Inf).

Guarantees: never raises (None when nothing can be told); reads saved values with
`read_saved_values` (never unpacks one packed by a non-reentrant checkpoint, nor changes a
tensor, a node or a version counter); visits each node at most once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ...util.dtypes import dtype_name
from .causes import counts_of, describe_counts, dtype_max, op_of, plural, read_saved_values

__all__ = ["ForwardOrigin", "Locator", "input_modules", "trace_forward"]

#: Ops that cannot make a NaN or an Inf from finite inputs: behind one whose output is
#: non-finite, its single unread input must be non-finite.
SAFE = frozenset({
    "View", "Unsafe", "Reshape", "ReshapeAlias", "Transpose", "T", "Permute", "Expand",
    "Squeeze", "Unsqueeze", "Select", "Slice", "Split", "SplitWithSizes", "Unbind", "Clone",
    "Alias", "AsStrided", "Cat", "Stack", "Index", "Gather", "Relu", "Threshold", "Gelu",
    "Silu", "Tanh", "Sigmoid", "Neg", "Abs", "Clamp", "ClampMin", "ClampMax", "Softmax",
    "LogSoftmax", "NativeDropout", "Dropout", "Hardtanh", "LeakyRelu", "Elu", "Mish",
    "Contiguous", "Flip", "Roll", "Repeat", "Narrow", "Maximum", "Minimum", "Max", "Min",
})  # fmt: skip

#: Looks up a live node: (its node id, its module path or None), or None when unknown.
Where = Callable[[Any], "tuple[str, str | None] | None"]


@dataclass(frozen=True)
class ForwardOrigin:
    """The forward op behind a non-finite saved value (`trace_forward`'s answer).

    `fn`: its live backward node; `op`: that node's name ("LogBackward0"); `node` and `module`:
    its id and module path where the caller's `Locator` knows them; `cause`: one sentence;
    `exact`: True when its inputs were read finite (or it holds the non-finite constant itself),
    False where an input was not readable ("the forward value was already non-finite at ...",
    or a rule's sentence with that caveat). The values between it and the node that met them
    may be unread: they are followed through the graph's edges, not guessed.

    Example:
        >>> ForwardOrigin(None, "LogBackward0", "n3", None, "log of 1 negative input", True).op
        'LogBackward0'
    """

    fn: Any
    op: str
    node: str | None
    module: str | None
    cause: str
    exact: bool


class Locator:
    """The caller's graph, for `trace_forward`: its live nodes, and their ids and modules.

    Args:
        fns: the live nodes (None where a node has none, e.g. a compiled region's op).
        ids: their node ids, in the same order.
        modules: their module paths (None: not in a module), in the same order.

    Example:
        >>> a = torch.ones(2, requires_grad=True); y = a.exp()
        >>> Locator([y.grad_fn], ["n0"], ["enc"]).where(y.grad_fn)
        ('n0', 'enc')
    """

    def __init__(self, fns: Sequence[Any], ids: Sequence[str],
                 modules: Sequence[str | None]) -> None:  # fmt: skip
        self.fns = [f for f in fns if f is not None]
        self._index: _Index | None = None
        self._at: dict[Any, tuple[str, str | None]] = {}
        for fn, nid, mod in zip(fns, ids, modules):
            if fn is not None:
                self._at[fn] = (nid, mod)

    def _read_index(self) -> _Index:
        """What every node's saved values tell of the outputs (read once, on first use: keep
        one `Locator` per backward pass while its saved values do not change)."""
        if self._index is None:
            self._index = _Index(self.fns)
        return self._index

    def where(self, fn: Any) -> tuple[str, str | None] | None:
        """(node id, module) of live node `fn`, or None.

        Example:
            >>> a = torch.ones(2, requires_grad=True); y = a.exp()
            >>> Locator([y.grad_fn], ["n0"], [None]).where(a.grad_fn) is None
            True
        """
        try:
            return self._at.get(fn)
        except TypeError:
            return None


Counts = tuple[int, int]


def _plain(v: Any) -> bool:
    """A local float tensor: what is counted. A tensor subclass (a DTensor, a sharded
    parameter) is not: counting it could start a collective on this rank alone."""
    return (type(v) in (torch.Tensor, torch.nn.Parameter) and v.layout is torch.strided
            and v.is_floating_point())  # fmt: skip


class _Index:
    """What the saved values tell of each node's outputs: (node, output_nr) -> (NaN, Inf)."""

    def __init__(self, fns: Sequence[Any]) -> None:
        self.out: dict[tuple[Any, int], Counts] = {}
        self.done: set[Any] = set()  # nodes read (no saved tensor is kept: only counts)
        for fn in fns:
            self.read(fn)

    def read(self, fn: Any) -> dict[str, Any]:
        try:
            saved, ckpt = read_saved_values(fn)
        except Exception:
            saved, ckpt = {}, True
        if ckpt:
            saved = {}
        if fn in self.done:
            return saved
        self.done.add(fn)
        for key, v in saved.items():
            for t in v if isinstance(v, tuple | list) else (v,):
                if not _plain(t):
                    continue
                producer = getattr(t, "grad_fn", None)
                if producer is None and key.startswith("result"):
                    producer = fn
                if producer is not None:
                    self.out.setdefault((producer, int(getattr(t, "output_nr", 0))), counts_of(t))
        return saved

    def output(self, fn: Any, nr: int) -> Counts | None:
        if fn is None:
            return (0, 0)
        if fn.name() == "torch::autograd::AccumulateGrad":
            var = getattr(fn, "variable", None)
            return counts_of(var) if _plain(var) else None
        if fn not in self.done:
            self.read(fn)
        return self.out.get((fn, nr))


def _walk(fn: Any, limit: int = 100_000) -> list[Any]:
    seen: set[Any] = set()
    out, todo = [], [fn]
    while todo and len(out) < limit:
        f = todo.pop()
        if f is None or f in seen:
            continue
        seen.add(f)
        out.append(f)
        todo.extend(nf for nf, _ in getattr(f, "next_functions", ()) or ())
    return out


def _constants(saved: dict[str, Any]) -> list[tuple[str, Counts]]:
    """The saved values that are not outputs of a node (inputs not computed in the graph,
    constants, scalars) and hold a NaN/Inf."""
    out = []
    for key, v in saved.items():
        if key.startswith("result"):
            continue
        if isinstance(v, torch.Tensor):
            if getattr(v, "grad_fn", None) is not None or v.requires_grad or not _plain(v):
                continue
            c = counts_of(v)
        elif isinstance(v, float):
            c = (int(math.isnan(v)), int(math.isinf(v)))
        else:
            continue
        if c != (0, 0):
            out.append((key, c))
    return out


def _bad(c: Counts | None, nan: bool) -> bool:
    return c is not None and (c[0] > 0 if nan else (c[0] > 0 or c[1] > 0))


def trace_forward(fn: Any, locator: Locator | None = None) -> ForwardOrigin | None:
    """The forward op that made the NaN/Inf in live node `fn`'s saved values (see the module
    docstring), or None when none of them is non-finite (the NaN/Inf is born in the backward)
    or nothing can be read.

    Args:
        fn: the backward node where a gradient first went non-finite.
        locator: the graph's nodes, ids and modules (an index of every saved value, and the
            names the answer gives); without it, the nodes behind `fn` are read.

    Example:
        >>> a = torch.tensor([-1.0, 4.0], requires_grad=True)
        >>> w = torch.ones(2, requires_grad=True)
        >>> f = trace_forward((a.log() * w).sum().grad_fn.next_functions[0][0])
        >>> f.op, f.cause, f.exact
        ('LogBackward0', 'log of 1 negative input (NaN)', True)
    """
    try:
        return _trace(fn, locator)
    except Exception:
        return None


def _trace(fn: Any, locator: Locator | None) -> ForwardOrigin | None:
    if fn is None or not hasattr(fn, "next_functions"):
        return None
    own, ckpt = read_saved_values(fn)
    if ckpt or not any(_plain(v) and counts_of(v) != (0, 0) for v in own.values()):
        return None  # nothing it saved is non-finite: the NaN/Inf is born in the backward
    index = locator._read_index() if locator is not None else _Index(_walk(fn))
    # the evidence: the birth node's non-finite saved values
    start: list[tuple[Any, int, bool]] = []
    for key, v in own.items():
        if not _plain(v):
            continue
        c = counts_of(v)
        if c == (0, 0):
            continue
        producer = getattr(v, "grad_fn", None)
        if producer is None and key.startswith("result"):
            producer = fn
        if producer is None:
            return _found(fn, locator, _constant_cause(key, c), True)
        start.append((producer, int(getattr(v, "output_nr", 0)), c[0] > 0))
    if not start:
        return None
    answers = [_up(p, nr, nan, index, locator) for p, nr, nan in start]
    exact = [a for a in answers if a is not None and a.exact]
    pool = exact or [a for a in answers if a is not None]
    if not pool:
        return None
    return min(pool, key=lambda a: _seq(a.fn))


def _seq(fn: Any) -> int:
    """Forward order: a leaf (AccumulateGrad, numbered 2**64-1) before every op."""
    try:
        if fn.name() == "torch::autograd::AccumulateGrad":
            return -1
        return int(fn._sequence_nr())
    except Exception:
        return 2**64


def _up(p: Any, nr: int, nan: bool, index: _Index, locator: Locator | None,
        seen: set[Any] | None = None, then: str = "") -> ForwardOrigin | None:  # fmt: skip
    """From node p, whose output nr is non-finite (a NaN when `nan`), up to where it is made.
    A NaN made from Infs (inf - inf, a softmax over a row of -Inf) is followed on to where the
    Infs were made, the NaN's maker named in the sentence. Behind an op whose inputs were not
    all read, each unread input is followed: the earliest op found making it from inputs read
    finite is the answer, else "already non-finite" at that op."""
    seen = set() if seen is None else seen
    while p is not None and p not in seen:
        seen.add(p)
        name = p.name()
        if name == "torch::autograd::AccumulateGrad":
            var = getattr(p, "variable", None)
            c = counts_of(var) if _plain(var) else (0, 0)
            return _found(p, locator, f"the leaf tensor already held {describe_counts(*c)} "
                                      f"before this forward{then}", True)  # fmt: skip
        saved = index.read(p)
        out = index.output(p, nr) or ((1, 0) if nan else (0, 1))
        ins = [(q, qn, index.output(q, qn)) for q, qn in (p.next_functions or ()) if q is not None]
        bad = [(q, qn) for q, qn, c in ins if _bad(c, nan)]
        if bad:
            p, nr = min(bad, key=lambda b: _seq(b[0]))  # made earlier: go up to where
            continue
        op = op_of(name)
        consts = [(k, c) for k, c in _constants(saved) if _bad(c, nan)]
        if consts:
            why = _made(op, saved, out, ins) or _constant_cause(*consts[0])
            return _found(p, locator, why + then, True)
        unknown = [(q, qn) for q, qn, c in ins if c is None]
        if unknown and op in SAFE and len(unknown) == 1:
            p, nr = unknown[0]  # it cannot make one: its one unread input was non-finite
            continue
        infs = [(q, qn) for q, qn, c in ins if c is not None and c[1] > 0]
        if nan and infs and not unknown:  # a NaN made of Infs: where were the Infs made?
            why = _made(op, saved, out, ins) or "inf - inf, 0 * inf or inf / inf"
            then = f"; {name} then turned them into {describe_counts(out[0], 0)} ({why}){then}"
            p, nr = min(infs, key=lambda b: _seq(b[0]))
            nan = False
            continue
        why = _made(op, saved, out, ins)
        if not unknown:
            return _found(p, locator, (why or _generic(out, ins)) + then, True)
        if why is None:  # follow each unread input: an op found making it is the answer
            found = [_up(q, qn, nan, index, locator, seen, then) for q, qn in unknown]
            exact = [f for f in found if f is not None and f.exact]
            if exact:
                return min(exact, key=lambda f: _seq(f.fn))
        names = ", ".join(sorted({q.name() for q, _ in unknown}))
        note = f"its input from {names} was not saved: whether it was already non-finite is unknown"
        if why is not None:
            return _found(p, locator, f"{why} ({note}){then}", False)
        return _already(p, locator, out, note + then)
    return None


def _found(fn: Any, locator: Locator | None, cause: str, exact: bool) -> ForwardOrigin:
    at = locator.where(fn) if locator is not None else None
    nid, mod = at if at is not None else (None, None)
    if mod is None and locator is not None:
        came = input_modules(fn, locator)
        if came:
            which = "module" if len(came) == 1 else "modules"
            cause += f"; its input came out of {which} {', '.join(came)}"
    return ForwardOrigin(fn, fn.name(), nid, mod, cause, exact)


def input_modules(fn: Any, locator: Locator, depth: int = 8) -> list[str]:
    """The modules the inputs of live node `fn` came out of: the nearest nodes behind it, along
    its edges, whose module the `locator` knows (at most `depth` edges back), sorted.

    Why: without `aw.track` around the forward (core/track.py) only the ops that use a
    parameter have a module (its owner's); an activation's op has none. The module its input
    came out of is then a fact the graph does hold, said as that, never as the op's own module.

    Example:
        >>> a = torch.ones(2, requires_grad=True); y = a.exp(); z = y.log()
        >>> input_modules(z.grad_fn, Locator([z.grad_fn, y.grad_fn], ["n0", "n1"], [None, "enc"]))
        ['enc']
    """
    found: set[str] = set()
    seen: set[Any] = {fn}
    level = [fn]
    for _ in range(depth):
        nxt = []
        for f in level:
            for q, _nr in getattr(f, "next_functions", ()) or ():
                if q is None or q in seen:
                    continue
                seen.add(q)
                at = locator.where(q)
                if at is not None and at[1] is not None:
                    found.add(at[1])
                else:
                    nxt.append(q)
        if found or not nxt:
            break
        level = nxt
    return sorted(found)


def _already(fn: Any, locator: Locator | None, out: Counts, note: str) -> ForwardOrigin:
    found = _found(fn, locator, "", False)
    return ForwardOrigin(
        fn, found.op, found.node, found.module,
        f"the forward value was already non-finite at {found.op} (its output holds "
        f"{describe_counts(*out)}); {note}", False,
    )  # fmt: skip


def _constant_cause(key: str, c: Counts) -> str:
    return (f"its saved `{key}` (an input not computed in the graph, or a constant) already "
            f"holds {describe_counts(*c)}")  # fmt: skip


def _generic(out: Counts, ins: list) -> str:
    had_inf = any(c is not None and c[1] > 0 for _, _, c in ins)
    if out[0] and had_inf:
        return (f"made {describe_counts(out[0], 0)} from inputs holding Infs (inf - inf, "
                "0 * inf or inf / inf)")  # fmt: skip
    return f"made {describe_counts(*out)} from finite inputs (an overflow of its dtype?)"


def _t(v: Any) -> torch.Tensor | None:
    ok = isinstance(v, torch.Tensor) and v.layout is torch.strided and v.is_floating_point()
    return v if ok else None


def _n(mask: torch.Tensor) -> int:
    return int(mask.sum().item())


def _made(op: str, s: dict[str, Any], out: Counts, ins: list) -> str | None:
    """Why op made a NaN/Inf from its saved values, or None when no rule of this op applies."""
    if op in ("Log", "Log2", "Log10", "Log1P"):
        x, at = _t(s.get("self")), (-1.0 if op == "Log1P" else 0.0)
        if x is None:
            return None
        neg, zero = _n(x < at), _n(x == at)
        fname = op.lower()
        below = "negative input" if at == 0 else "input below -1"
        parts = [f"{fname} of {plural(neg, below)} (NaN)"] if neg else []
        if zero:
            parts.append(f"{fname} of {plural(zero, 'zero' if at == 0 else 'input equal to -1')}"
                         " (-Inf)")  # fmt: skip
        return "; ".join(parts) or None
    if op == "Sqrt":
        r = _t(s.get("result"))
        n = 0 if r is None else _n(torch.isnan(r))
        return f"sqrt of {plural(n, 'negative input')} (NaN)" if n else None
    if op in ("Rsqrt", "Reciprocal"):
        r = _t(s.get("result"))
        if r is None:
            return None
        nan, inf = _n(torch.isnan(r)), _n(torch.isinf(r))
        parts = [f"{op.lower()} of {plural(inf, 'zero')} (Inf)"] if inf else []
        if nan and op == "Rsqrt":
            parts.append(f"rsqrt of {plural(nan, 'negative input')} (NaN)")
        return "; ".join(parts) or None
    if op == "Exp":
        r = _t(s.get("result"))
        n = 0 if r is None else _n(torch.isposinf(r))
        if not n:
            return None
        limit = math.log(dtype_max(r.dtype))
        return (f"exp overflowed {dtype_name(r.dtype)}: {plural(n, 'Inf')} (inputs above "
                f"{limit:.4g})")  # fmt: skip
    if op == "Div":
        other = s.get("other")
        o = _t(other) if isinstance(other, torch.Tensor) else None
        if o is None and isinstance(other, torch.Tensor) and not other.is_floating_point():
            o = other.double()
        if o is None and isinstance(other, int | float):
            o = torch.tensor(float(other))
        n = 0 if o is None else _n(o == 0)
        if not n:
            return None
        return (f"division by zero ({plural(n, 'element')} of `other` 0): x / 0 is ±Inf and "
                f"0 / 0 is NaN; it made {describe_counts(*out)}")  # fmt: skip
    if op == "Mul":
        for key in ("other", "self"):
            v = s.get(key)
            t = _t(v) if isinstance(v, torch.Tensor) and getattr(v, "grad_fn", None) is None \
                and not v.requires_grad else None  # fmt: skip
            if t is not None and _n(torch.isinf(t)):
                return (f"multiplication by a saved `{key}` holding "
                        f"{plural(_n(torch.isinf(t)), 'Inf')}: Inf times a finite value is ±Inf, "
                        f"Inf times 0 is NaN; it made {describe_counts(*out)}")  # fmt: skip
        return None
    if op == "Pow":
        b, e = _t(s.get("self")), s.get("exponent")
        if b is None or not isinstance(e, int | float):
            return None
        neg = _n(b < 0) if e != round(e) else 0
        zero = _n(b == 0) if e < 0 else 0
        parts = [f"pow of {plural(neg, 'negative base')} with the exponent {e:g} (NaN)"] if neg \
            else []  # fmt: skip
        if zero:
            parts.append(f"0 ** {e:g} at {plural(zero, 'zero base')} (Inf)")
        return "; ".join(parts) or None
    if op in ("Acos", "Asin"):
        x = _t(s.get("self"))
        n = 0 if x is None else _n(x.abs() > 1)
        return f"{op.lower()} of {plural(n, 'input')} with |x| > 1 (NaN)" if n else None
    if op in ("Softmax", "LogSoftmax") and out[0]:
        return "a softmax over a row holding +Inf, or whose inputs are all -Inf, is NaN"
    return None
