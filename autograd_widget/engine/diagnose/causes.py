"""The per-op rules behind `birth_cause` (origins.py): why a backward node makes a NaN or an Inf.

Each rule reads the node's saved values (what the forward kept: `result`, `self`, `other`,
`exponent`, ...) and returns one sentence with counts, or None when its op-specific reasons do not
apply (then origins.py goes on: a saved value that is itself non-finite, a dtype overflow, the
generic sentence). The derivatives the sentences name are the ones torch's formulas compute
(tools/autograd/derivatives.yaml): sqrt's `grad / (2 * result)`, log's `grad / self`, div's
`grad / other`, pow's `exponent * self ** (exponent - 1)`, and so on.

Guarantees: saved values are read with `read_saved_values`, which never unpacks one packed by a
non-reentrant checkpoint (core/checkpoint.py) and swallows a freed or stale value's error; rules
only read tensors (no in-place op, no version bump). A rule may raise on an odd value: its caller
(`birth_cause`) catches everything.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import torch

from ...core.checkpoint import is_checkpointed
from ...core.saved import saved_names
from ...core.summary import Summary
from ...util.compat import UnpackRefused, saved_value
from ...util.dtypes import dtype_from_name, dtype_name

__all__ = [
    "Rule",
    "counts_of",
    "describe_counts",
    "dtype_max",
    "nonfinite_saved",
    "op_of",
    "overflow_sentence",
    "plausible_overflow",
    "plural",
    "read_saved_values",
    "rule_for",
]

_CUSTOM = torch._C._FunctionBase  # custom autograd.Function nodes (core/capture.py's test)

#: A rule: (the node, its saved values by name, incoming gradients, outgoing gradients) ->
#: sentence or None.
Rule = Callable[[Any, dict[str, Any], Sequence[Any], Sequence[Any]], str | None]


def plural(n: int, word: str, many: str | None = None) -> str:
    """A count with its noun: "1 zero", "3 zeros", "2 negative inputs".

    Example:
        >>> plural(1, "zero"), plural(3, "zero"), plural(2, "Inf")
        ('1 zero', '3 zeros', '2 Infs')
    """
    return f"{n} {word if n == 1 else (many or word + 's')}"


_plural = plural


def _n(mask: torch.Tensor) -> int:
    return int(mask.sum().item())


def describe_counts(nan: int, inf: int) -> str:
    """Counts in words: "2 NaNs and 1 Inf", "1 NaN", "3 Infs" (or "no NaN or Inf").

    Example:
        >>> describe_counts(2, 1), describe_counts(0, 3), describe_counts(0, 0)
        ('2 NaNs and 1 Inf', '3 Infs', 'no NaN or Inf')
    """
    parts = [_plural(nan, "NaN")] if nan else []
    if inf:
        parts.append(_plural(inf, "Inf"))
    return " and ".join(parts) or "no NaN or Inf"


def counts_of(g: Any) -> tuple[int, int]:
    """(NaN count, Inf count) of a gradient: a tensor, a `Summary` or None (0, 0).

    Guarantees: works for ZeroTensors (no storage), sparse tensors and integer tensors.

    Example:
        >>> counts_of(torch.tensor([float("nan"), float("inf"), 1.0])), counts_of(None)
        ((1, 1), (0, 0))
    """
    if g is None:
        return 0, 0
    if isinstance(g, Summary):
        return int(g.nan), int(g.inf)
    if not isinstance(g, torch.Tensor) or not (g.is_floating_point() or g.is_complex()):
        return 0, 0
    if g._is_zerotensor():
        return 0, 0
    if g.layout is not torch.strided:
        g = g.coalesce().values() if g.is_sparse else g.to_dense()
    return _n(torch.isnan(g)), _n(torch.isinf(g))


def dtype_max(dtype: torch.dtype | str) -> float:
    """The largest finite value of a floating dtype (a `torch.dtype` or its short name).

    Example:
        >>> dtype_max(torch.float16), dtype_max("bfloat16")
        (65504.0, 3.3895313892515355e+38)
    """
    dt = dtype_from_name(dtype) if isinstance(dtype, str) else dtype
    if dt.is_complex:
        dt = dt.to_real()
    return float(torch.finfo(dt).max)


def read_saved_values(fn: Any, names: Sequence[str] | None = None) -> tuple[dict[str, Any], bool]:
    """The saved values of node `fn` by name, and whether any sits in a checkpointed region.

    Args:
        fn: a live torch backward node (built-in: its `_saved_<name>`s; a custom Function:
            `saved_tensors[i]`; a C++ custom Function: nothing).
        names: only these `<name>`s (default: all).

    Guarantees: when a value is packed by a non-reentrant checkpoint nothing is read (returns
    `({}, True)`); a value whose read raises (freed, modified in place) is left out; tensors
    come as torch gives them (a saved input keeps its `grad_fn`: the forward op that made it).

    Example:
        >>> saved, ckpt = read_saved_values(g.fn("n1"))
        >>> saved, ckpt
        ({'exponent': 2, 'self': tensor(2., requires_grad=True)}, False)
    """
    out: dict[str, Any] = {}
    if isinstance(fn, _CUSTOM) and not names:
        raws = getattr(fn, "_raw_saved_tensors", ()) or ()
        if any(is_checkpointed(r) for r in raws):
            return {}, True
        try:
            values = saved_value(fn, "saved_tensors")
        except UnpackRefused as refused:  # a torch that cannot look first: nothing ran
            return {}, refused.checkpoint
        except Exception:
            return {}, False
        for i, v in enumerate(values):
            out[f"saved_tensors[{i}]"] = v
        return out, False
    for name in names or saved_names(fn):
        raw = getattr(fn, "_raw_saved_" + name, None)
        if is_checkpointed(raw):
            return {}, True
        try:
            v = saved_value(fn, "_saved_" + name)
        except UnpackRefused as refused:
            if refused.checkpoint:
                return {}, True
            continue
        except Exception:
            continue
        out[name] = v
    return out, False


def _tensor(v: Any) -> torch.Tensor | None:
    ok = isinstance(v, torch.Tensor) and v.layout is torch.strided and not v._is_zerotensor()
    return v if ok else None


def _numel(g: Any) -> int | None:
    if isinstance(g, torch.Tensor):
        return g.numel()
    if isinstance(g, Summary):
        return g.numel
    return None


# ------------------------------------------------------------------------------ the rules
def _sqrt(fn: Any, s: dict, gin: Sequence, gout: Sequence) -> str | None:
    r = _tensor(s.get("result"))
    n = 0 if r is None else _n(r == 0)
    if not n:
        return None
    return (
        f"saved `result` has {_plural(n, 'zero')}: the derivative of sqrt at 0 is infinite"
        + _norm_note(fn)
    )


def _norm_note(fn: Any) -> str:
    """A note when sqrt's input is a sum of squares: a hand-written norm of a zero vector."""
    summed = fn.next_functions[0][0] if fn.next_functions else None
    if summed is None or not summed.name().startswith("Sum") or not summed.next_functions:
        return ""
    sq = summed.next_functions[0][0]
    name = "" if sq is None else sq.name()
    squared = (name == "PowBackward0" and getattr(sq, "_saved_exponent", None) == 2) or (
        name == "MulBackward0" and sq.next_functions[0] == sq.next_functions[1]
    )
    if not squared:
        return ""
    return (
        " (a norm written as sqrt(sum(x²)) of a zero vector; torch.linalg.vector_norm's "
        "gradient is 0 there)"
    )


def _inf_result_rule(fname: str, derivative: str) -> Rule:
    """Rsqrt and Reciprocal: an infinite saved `result` means a zero input, where `derivative`
    is infinite."""

    def rule(fn: Any, s: dict, gin: Sequence, gout: Sequence) -> str | None:
        r = _tensor(s.get("result"))
        n = 0 if r is None else _n(torch.isinf(r))
        if not n:
            return None
        return (
            f"{fname} of {_plural(n, 'zero')}: saved `result` has {_plural(n, 'Inf')}, and the "
            f"derivative {derivative} is infinite there"
        )

    return rule


def _log_rule(at: float, fname: str) -> Rule:
    def rule(fn: Any, s: dict, gin: Sequence, gout: Sequence) -> str | None:
        x = _tensor(s.get("self"))
        if x is None:
            return None
        zeros, neg = _n(x == at), _n(x < at)
        below = "negative input" if at == 0 else f"input below {at:g}"
        parts = []
        if zeros:
            where = "zero" if at == 0 else f"input equal to {at:g}"
            parts.append(
                f"{fname} of {_plural(zeros, where)}: the derivative 1/(x{'' if at == 0 else '+1'})"
                " is infinite there"
            )
        if neg:
            parts.append(f"{fname} of {_plural(neg, below)} (NaN in the forward)")
        return "; ".join(parts) or None

    return rule


def _div(fn: Any, s: dict, gin: Sequence, gout: Sequence) -> str | None:
    other = s.get("other")
    if isinstance(other, int | float) and other == 0:
        return "division by zero (`other` is 0)"
    o = _tensor(other)
    n = 0 if o is None else _n(o == 0)
    if not n:
        return None
    verb = "is" if n == 1 else "are"
    return f"division by a saved zero ({_plural(n, 'element')} of `other` {verb} 0)"


def _pow(fn: Any, s: dict, gin: Sequence, gout: Sequence) -> str | None:
    base, e = s.get("self"), s.get("exponent")
    b = _tensor(base)
    if b is None or not (b.is_floating_point() or b.is_complex()) or b.is_complex():
        return None
    et = _tensor(e)
    if et is None and not isinstance(e, int | float):
        return None
    ev = torch.as_tensor(e if et is None else et, dtype=b.dtype)
    frac = ev != ev.round()
    neg = _n((b < 0) & frac)
    zero = _n((b == 0) & (ev < 1) & (ev != 0))
    shown = f"the exponent {float(e):g}" if et is None else "fractional exponents"
    parts = []
    if neg:
        parts.append(f"pow of {_plural(neg, 'negative base')} with {shown}: NaN")
    if zero:
        what = f"exponent {float(e):g} < 1" if et is None else "an exponent < 1"
        parts.append(
            f"0 ** (exponent - 1) in the derivative: {_plural(zero, 'zero base')} with {what} "
            "make it infinite"
        )
    if et is not None and s.get("result") is not None:
        logneg = _n(b < 0)
        if logneg and not neg:
            parts.append(
                f"the exponent's gradient needs log(base): {_plural(logneg, 'negative base')}"
            )
    return "; ".join(parts) or None


def _arc_rule(fname: str) -> Rule:
    def rule(fn: Any, s: dict, gin: Sequence, gout: Sequence) -> str | None:
        x = _tensor(s.get("self"))
        if x is None:
            return None
        ax = x.abs()
        at, beyond = _n(ax == 1), _n(ax > 1)
        parts = []
        if at:
            parts.append(
                f"{fname} at {_plural(at, 'input')} with |x| = 1: the derivative "
                f"{'1/(1-x²)' if fname == 'atanh' else '1/sqrt(1-x²)'} is infinite there"
            )
        if beyond and fname != "atanh":
            parts.append(f"{fname} of {_plural(beyond, 'input')} with |x| > 1 (NaN)")
        return "; ".join(parts) or None

    return rule


def _spread_rule(fname: str) -> Rule:
    def rule(fn: Any, s: dict, gin: Sequence, gout: Sequence) -> str | None:
        x = _tensor(s.get("self"))
        r = _tensor(s.get("result"))
        out_n = r.numel() if r is not None else _numel(gin[0] if gin else None)
        if x is None or not out_n:
            return None
        n = x.numel() // out_n
        c = s.get("correction")
        c = 1.0 if c is None else float(c)
        if n - c <= 0:
            return (
                f"{fname} of {_plural(n, 'element')} with correction {c:g}: the divisor "
                f"n - correction is {n - c:g}"
            )
        return None

    return rule


def _exp(fn: Any, s: dict, gin: Sequence, gout: Sequence) -> str | None:
    r = _tensor(s.get("result"))
    n = 0 if r is None or r.is_complex() else _n(torch.isposinf(r))
    if not n:
        return None
    limit = math.log(dtype_max(r.dtype))
    return (
        f"exp overflowed in the forward: saved `result` has {_plural(n, 'Inf')} (inputs above "
        f"{limit:.4g} overflow {dtype_name(r.dtype)})"
    )


def _softmax(fn: Any, s: dict, gin: Sequence, gout: Sequence) -> str | None:
    r = _tensor(s.get("result"))
    n = 0 if r is None else _n(torch.isnan(r))
    if not n:
        return None
    return (
        f"saved `result` has {_plural(n, 'NaN')}: a softmax over a row holding +Inf, or "
        "whose inputs are all -Inf, is NaN in the forward"
    )


_RULES: dict[str, Rule] = {
    "Sqrt": _sqrt,
    "Rsqrt": _inf_result_rule("rsqrt", "-x^(-3/2)/2"),
    "Log": _log_rule(0.0, "log"),
    "Log2": _log_rule(0.0, "log2"),
    "Log10": _log_rule(0.0, "log10"),
    "Log1P": _log_rule(-1.0, "log1p"),
    "Div": _div,
    "Reciprocal": _inf_result_rule("reciprocal", "-1/x²"),
    "Pow": _pow,
    "Acos": _arc_rule("acos"),
    "Asin": _arc_rule("asin"),
    "Atanh": _arc_rule("atanh"),
    "Std": _spread_rule("std"),
    "Var": _spread_rule("var"),
    "Exp": _exp,
    "Softmax": _softmax,
    "LogSoftmax": _softmax,
}
_OP_RE = re.compile(r"(.+?)Backward\d*")


def op_of(name: str) -> str:
    """The op of a backward node type: "LogBackward0" -> "Log" (the name itself otherwise).

    Example:
        >>> op_of("LogSoftmaxBackward0"), op_of("torch::autograd::AccumulateGrad")
        ('LogSoftmax', 'torch::autograd::AccumulateGrad')
    """
    m = _OP_RE.fullmatch(name)
    return m.group(1) if m else name


def rule_for(name: str) -> Rule | None:
    """The rule for a backward node type ("SqrtBackward0"), or None when there is none.

    Example:
        >>> rule_for("SqrtBackward0") is not None, rule_for("AddBackward0")
        (True, None)
    """
    m = _OP_RE.fullmatch(name)
    return _RULES.get(m.group(1)) if m else None


# ------------------------------------------------------------------------------ fallbacks
def _forward_note(name: str, producer: Any) -> str:
    """What the forward op that made a non-finite value did, when it can be told.

    With a `producer` (the saved value is another node's output) the note names that node as the
    value's source, "(the output of AddmmBackward0's forward)", never as its maker: the value may
    only have carried a NaN made earlier (diagnose/forward.py names the op that made it).
    """
    if producer is None:
        pname = name
        saved: dict[str, Any] = {}
    else:
        pname = producer.name()
        saved, ckpt = read_saved_values(producer)
        if ckpt:
            return f" (the output of {pname}'s forward)"
    m = _OP_RE.fullmatch(pname)
    op = m.group(1) if m else pname
    x = _tensor(saved.get("self"))
    if op in ("Log", "Log2", "Log10") and x is not None and _n(x < 0):
        why = f"{op.lower()} of {_plural(_n(x < 0), 'negative input')}"
        return f" (the output of {pname}'s forward: {why})"
    if op == "Sqrt" and producer is None:
        return ": produced in the forward (sqrt of a negative input)"
    if producer is None:
        return ": produced in the forward"
    return f" (the output of {pname}'s forward)"


def nonfinite_saved(saved: dict[str, Any], name: str = "") -> str | None:
    """The sentence "saved `self` has 2 NaNs (the output of AddmmBackward0's forward)" for the
    first saved tensor holding a NaN/Inf, else None.

    The saved value's source is named as where it came from (whose forward output it is), with
    the reason where that op itself made it (a log of a negative); one without a known source
    (an input, a leaf) says "produced in the forward". Never "by" an op that may only have
    carried the NaN on: the op that made it is `trace_forward`'s (diagnose/forward.py) to name.

    Args:
        saved: `read_saved_values(fn)[0]`.
        name: the node's own type name (a hint for its saved `result`).

    Example:
        >>> a = torch.tensor([-1.0, 4.0], requires_grad=True)
        >>> w = torch.ones(2, requires_grad=True)
        >>> nonfinite_saved(read_saved_values((a.log() * w).grad_fn)[0])
        "saved `self` has 1 NaN (the output of LogBackward0's forward: log of 1 negative input)"
    """
    for key, v in saved.items():
        t = _tensor(v)
        if t is None or not (t.is_floating_point() or t.is_complex()):
            continue
        nan, inf = counts_of(t)
        if nan or inf:
            producer = getattr(v, "grad_fn", None) if key != "result" else None
            known = producer is not None or key == "result"
            note = _forward_note(name, producer) if known else ": produced in the forward"
            return f"saved `{key}` has {describe_counts(nan, inf)}{note}"
    return None


def _largest(g: Any) -> float | None:
    t = _tensor(g)
    if t is not None and t.numel() and (t.is_floating_point() or t.is_complex()):
        return float(t.abs().max().item())
    if isinstance(g, Summary) and g.min is not None and g.max is not None:
        return max(abs(g.min), abs(g.max))
    return None


def _dtype_of(g: Any) -> str | None:
    if isinstance(g, torch.Tensor):
        return dtype_name(g.dtype)
    return g.dtype if isinstance(g, Summary) else None


def plausible_overflow(grads_in: Sequence[Any], grads_out: Sequence[Any], saved: dict) -> bool:
    """Whether an Inf in `grads_out` can be an overflow of finite values: the largest incoming
    |gradient| times the largest saved |value| (1 when none) is within 1000x of the output
    dtype's largest value; when the incoming magnitudes are unknown, whether that dtype is a
    16-bit float.

    Example:
        >>> g = torch.full((2,), 60000.0, dtype=torch.float16)
        >>> plausible_overflow([g], [g * 2], {}), plausible_overflow([torch.ones(2)], [g * 2], {})
        (True, False)
    """
    dt = next((d for d in map(_dtype_of, grads_out) if d is not None), None) or "float32"
    biggest = [v for v in map(_largest, grads_in) if v is not None]
    if not biggest:
        return dt in ("float16", "bfloat16")
    factor = max([1.0, *(v for v in map(_largest, saved.values()) if v is not None)])
    return max(biggest) * factor >= dtype_max(dt) / 1000


def overflow_sentence(
    grads_in: Sequence[Any], grads_out: Sequence[Any], saved: dict[str, Any], inf: int, nan: int
) -> str:
    """The sentence for finite gradients and saved values whose result passed the dtype's max.

    Args:
        grads_in: incoming gradients (tensors or summaries).
        grads_out: outgoing gradients; the first non-None one gives the dtype.
        saved: the node's saved values (`read_saved_values`).
        inf, nan: the counts in the outputs.

    Example:
        >>> g = torch.full((2,), 60000.0, dtype=torch.float16)
        >>> print(overflow_sentence([g], [g * 2], {"other": torch.tensor(2.0)}, 2, 0))
        float16 overflow: finite incoming gradients (largest |g| 6e+04) times saved `other`
        (largest |value| 2) exceed float16's largest value 65504: 2 Infs in the output
    """
    dt = next((d for d in map(_dtype_of, grads_out) if d is not None), None) or "float32"
    biggest = [v for v in map(_largest, grads_in) if v is not None]
    g_txt = f" (largest |g| {max(biggest):.3g})" if biggest else ""
    factors = []
    for key, v in saved.items():
        big = _largest(v)
        if big is not None and big > 1:
            factors.append((big, key))
    f_txt = ""
    if factors:
        big, key = max(factors)
        f_txt = f" times saved `{key}` (largest |value| {big:.3g})"
    return (
        f"{dt} overflow: finite incoming gradients{g_txt}{f_txt} exceed {dt}'s largest value "
        f"{dtype_max(dt):.6g}: {describe_counts(nan, inf)} in the output"
    )
