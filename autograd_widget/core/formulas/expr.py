"""Expression trees for what a backward node computes: one tree gives LaTeX AND a torch value.

A formula is written once, as a tree of `Expr` nodes: `Grad(i)` (the incoming gradient of
forward output i), `Saved("self")` (the node's `_saved_self`), `Param("alpha", ...)` (a non-tensor
saved field shown as a symbol), `Const`, and `Op` (an operation with a LaTeX template and a torch
function). `expr.tex()` renders math notation (`\\odot` for elementwise products, juxtaposition
for matrix products, `\\frac`, `\\mathbb{1}[\\ldots]` for masks); `expr.ev(env)` computes the same
tree with torch from a live node's saved values and the incoming gradients. Because both come
from the same tree, a test that checks the value against the node's own output also checks
what the LaTeX claims.

Guarantees: rendering reads no torch object; evaluation reads saved values only through the
node's `_saved_<name>` attributes (as core/saved.py does), each at most once per `Env`, and never
unpacks a value of a non-reentrant checkpoint region when the `Env` is in shape mode
(`meta=True`: every tensor is a `meta` tensor of the recorded shape, so shapes are computed
without data).

Example:
    >>> e = Grad(0) * Saved("other", "y")
    >>> e.tex()
    'G \\\\odot y'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from ...util.compat import UnpackRefused, saved_value
from ..checkpoint import is_checkpointed, value_meta

__all__ = [
    "ATOM",
    "CMP",
    "FRAC",
    "FUNC",
    "NEG",
    "POW",
    "PROD",
    "SUM",
    "Cond",
    "Const",
    "Env",
    "Expr",
    "Grad",
    "Index",
    "Op",
    "Param",
    "Ref",
    "Saved",
    "ShapeUnknown",
    "fix_int",
    "fn_op",
    "mul",
    "op",
]

# Precedences: an argument whose precedence is below what its slot needs gets parentheses.
CMP, SUM, NEG, PROD, POW, FRAC, FUNC, ATOM = 5, 10, 20, 30, 40, 90, 90, 100

_U64 = 2**64


class ShapeUnknown(Exception):
    """A value's shape cannot be known without unpacking it (freed graph, unrecorded shape)."""


def fix_int(v: Any) -> Any:
    """Undo torch's uint64 reading of negative int64 saved fields (-1 reads 2**64-1).

    Example:
        >>> fix_int(2**64 - 1), fix_int((1, 2**64 - 2)), fix_int(2.5)
        (-1, (1, -2), 2.5)
    """
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v - _U64 if v >= 2**63 else v
    if isinstance(v, tuple | list) and not any(isinstance(x, torch.Tensor) for x in v):
        return type(v)(fix_int(x) for x in v)
    return v


class Env:
    """What a tree is evaluated against: one live node, its incoming gradients, named values.

    `meta=True` is shape mode: saved tensors and gradients become `meta` tensors (no data), read
    from the recorded shape of a checkpointed value instead of unpacking it.

    Example:
        >>> w = x * y
        >>> env = Env(w.grad_fn, (torch.tensor(1.0),))
        >>> env.saved("other")
        tensor(3.)
    """

    def __init__(self, fn: Any, grads: Sequence[torch.Tensor | None], *, meta: bool = False):
        self.fn = fn
        self.meta = meta
        metas = list(getattr(fn, "_input_metadata", ()))
        self.grads: list[torch.Tensor | None] = list(grads) + [None] * (len(metas) - len(grads))
        self.metas = metas
        self.defs: dict[str, Any] = {}
        #: key -> tree of each named intermediate, evaluated on first use (see `Ref`).
        self.def_exprs: dict[str, Expr] = {}
        self.index: int | None = None
        self._saved: dict[str, Any] = {}
        #: id(expr) -> shape of its value, filled while evaluating (shape reporting).
        self.shapes: dict[int, tuple[int, ...]] = {}

    def grad(self, i: int) -> torch.Tensor:
        """Incoming gradient `i`; a missing one (None) reads as zeros of its slot's shape.

        Example:
            >>> Env(z.grad_fn, (None,)).grad(0)
            tensor(0.)
        """
        g = self.grads[i] if i < len(self.grads) else None
        if g is not None and not self.meta and g._is_zerotensor():
            g = None
        if g is None or self.meta:
            m = self.metas[i]
            device = "meta" if self.meta else m.device
            return torch.zeros(tuple(m.shape), dtype=m.dtype, device=device)
        return g

    def saved(self, name: str) -> Any:
        """`_saved_<name>` of the node (negative ints fixed), read once; meta tensors in shape mode.

        Example:
            >>> Env(x.pow(3).grad_fn, ()).saved("exponent")
            3
        """
        if name in self._saved:
            return self._saved[name]
        fn = self.fn
        if self.meta:
            raw = getattr(fn, "_raw_saved_" + name, None)
            if raw is not None and is_checkpointed(raw):
                v = _checkpointed_meta(raw)
            else:
                try:
                    v = saved_value(fn, "_saved_" + name)
                except UnpackRefused as refused:  # an older torch: nothing ran
                    raise ShapeUnknown(str(refused)) from None
                except RuntimeError as err:
                    raise ShapeUnknown(str(err).splitlines()[0]) from None
            v = _to_meta(v)
        else:
            v = getattr(fn, "_saved_" + name)
            if isinstance(v, torch.Tensor):
                v = v.detach()
            elif isinstance(v, tuple | list):
                v = type(v)(t.detach() if isinstance(t, torch.Tensor) else t for t in v)
        v = fix_int(v)
        self._saved[name] = v
        return v

    def out_meta(self, i: int) -> tuple[tuple[int, ...], torch.dtype, Any] | None:
        """(shape, dtype, device) of the forward input that output `i` flows to, or None when
        no gradient is needed there (the engine reduces output i to this shape).

        Example:
            >>> Env(z.grad_fn, ()).out_meta(1)
            ((), torch.float32, device(type='cpu'))
        """
        nf = self.fn.next_functions
        if i >= len(nf) or nf[i][0] is None:
            return None
        m = nf[i][0]._input_metadata[nf[i][1]]
        return tuple(m.shape), m.dtype, m.device


def _checkpointed_meta(raw: Any) -> Any:
    if isinstance(raw, tuple | list):
        return type(raw)(_checkpointed_meta(r) for r in raw)
    meta = value_meta(raw)
    if meta is None:
        raise ShapeUnknown("recomputed during backward (shape not recorded)")
    shape, dtype, _ = meta
    return torch.empty(shape, dtype=dtype, device="meta")


def _to_meta(v: Any) -> Any:
    if isinstance(v, torch.Tensor):
        return v if v.is_meta else torch.empty(v.shape, dtype=v.dtype, device="meta")
    if isinstance(v, tuple | list):
        return type(v)(_to_meta(x) for x in v)
    return v


class Expr:
    """A node of a formula tree: `tex()` for LaTeX, `ev(env)` for its torch value.

    Operators build trees: `a * b` (elementwise; a scalar factor is written in front),
    `a @ b` (matrix product), `a + b`, `a - b`, `-a`, `a / b`, `a ** b`; `.T` transposes the
    last two dimensions.

    Example:
        >>> (Grad(0) @ Saved("mat2", r"\\mathrm{mat2}").T).tex()
        'G\\\\,\\\\mathrm{mat2}^{\\\\top}'
    """

    prec: int = ATOM
    scalar: bool = False

    def tex(self) -> str:
        """The LaTeX of this subtree (math notation).

        Example:
            >>> Const(2).tex()
            '2'
        """
        raise NotImplementedError

    def ev(self, env: Env) -> Any:
        """The value of this subtree for `env` (a tensor, or a Python value for parameters).

        Example:
            >>> Const(2).ev(None)
            2
        """
        raise NotImplementedError

    def children(self) -> tuple[Expr, ...]:
        """The direct subtrees, in argument order.

        Example:
            >>> len((Grad(0) * Const(2)).children())
            2
        """
        return ()

    def value(self, env: Env) -> Any:
        """`ev(env)`, recording the value's shape in `env.shapes` (shape reporting).

        Example:
            >>> Const(2).value(Env(z.grad_fn, ()))
            2
        """
        v = self.ev(env)
        if isinstance(v, torch.Tensor):
            env.shapes[id(self)] = tuple(v.shape)
        return v

    # -------------------------------------------------------------- building trees
    def __mul__(self, other: Any) -> Expr:
        return mul(self, _wrap(other))

    def __rmul__(self, other: Any) -> Expr:
        return mul(_wrap(other), self)

    def __matmul__(self, other: Any) -> Expr:
        return op(r"#0\,#1", torch.matmul, self, _wrap(other), prec=PROD, need=(PROD + 1, PROD + 1),
                  join=r"\cdot")

    def __add__(self, other: Any) -> Expr:
        return op("#0 + #1", lambda a, b: a + b, self, _wrap(other), prec=SUM, need=(SUM, SUM),
                  join="+")

    def __radd__(self, other: Any) -> Expr:
        return _wrap(other) + self

    def __sub__(self, other: Any) -> Expr:
        return op("#0 - #1", lambda a, b: a - b, self, _wrap(other), prec=SUM, need=(SUM, PROD),
                  join="-")

    def __rsub__(self, other: Any) -> Expr:
        return _wrap(other) - self

    def __neg__(self) -> Expr:
        return op("-#0", lambda a: -a, self, prec=NEG, need=(PROD,))

    def __truediv__(self, other: Any) -> Expr:
        return op(r"\frac{#0}{#1}", lambda a, b: a / b, self, _wrap(other), prec=FRAC, need=(0, 0),
                  join="/")

    def __rtruediv__(self, other: Any) -> Expr:
        return _wrap(other) / self

    def __pow__(self, other: Any) -> Expr:
        return op("#0^{#1}", lambda a, b: a**b, self, _wrap(other), prec=POW, need=(ATOM, 0))

    @property
    def T(self) -> Expr:
        """The transpose of the last two dimensions (`^{\\top}`)."""
        return op(r"#0^{\top}", lambda a: a.transpose(-2, -1) if a.dim() >= 2 else a, self,
                  prec=POW, need=(ATOM,))


def _wrap(v: Any) -> Expr:
    return v if isinstance(v, Expr) else Const(v)


def _paren(e: Expr, need: int) -> str:
    t = e.tex()
    return rf"\left({t}\right)" if e.prec < need else t


@dataclass(frozen=True, eq=False)
class Grad(Expr):
    """The incoming gradient of forward output `i` (`G`, or `G_{i}` for multi-output nodes).

    Example:
        >>> Grad(0).tex(), Grad(2, many=True).tex()
        ('G', 'G_{2}')
    """

    i: int
    many: bool = False

    def tex(self) -> str:
        """`G` or `G_{i}`.

        Example:
            >>> Grad(1, many=True).tex()
            'G_{1}'
        """
        return f"G_{{{self.i}}}" if self.many else "G"

    def ev(self, env: Env) -> Any:
        """The gradient (zeros for a missing one).

        Example:
            >>> Grad(0).ev(Env(z.grad_fn, (torch.tensor(2.0),)))
            tensor(2.)
        """
        return env.grad(self.i)


@dataclass(frozen=True, eq=False)
class Saved(Expr):
    """A tensor the node saved (`_saved_<name>`), written as `symbol`.

    Example:
        >>> Saved("self", "x").tex()
        'x'
    """

    name: str
    symbol: str = ""

    def tex(self) -> str:
        """The symbol (default `\\mathrm{name}`).

        Example:
            >>> Saved("mat2").tex()
            '\\\\mathrm{mat2}'
        """
        return self.symbol or rf"\mathrm{{{self.name}}}"

    def ev(self, env: Env) -> Any:
        """The saved value.

        Example:
            >>> Saved("self").ev(Env(x.pow(2).grad_fn, ()))
            tensor(2.)
        """
        return env.saved(self.name)


@dataclass(frozen=True, eq=False)
class Param(Saved):
    """A non-tensor saved field (alpha, dim, exponent...): a scalar factor in products.

    Example:
        >>> (Param("alpha", r"\\alpha") * Grad(0)).tex()
        '\\\\alpha\\\\,G'
    """

    scalar: bool = True


@dataclass(frozen=True, eq=False)
class Const(Expr):
    """A constant; `symbol` overrides how it is written.

    Example:
        >>> Const(0.5, r"\\tfrac{1}{2}").tex()
        '\\\\tfrac{1}{2}'
    """

    v: Any
    symbol: str = ""
    scalar: bool = True

    @property
    def prec(self) -> int:  # type: ignore[override]
        """Negative numbers bind like a negation."""
        neg = isinstance(self.v, int | float) and self.v < 0 and not self.symbol
        return NEG if neg or self.symbol.startswith("-") else ATOM

    def tex(self) -> str:
        """The symbol or the number.

        Example:
            >>> Const(2.0).tex()
            '2'
        """
        if self.symbol:
            return self.symbol
        v = self.v
        return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)

    def ev(self, env: Env) -> Any:
        """The constant.

        Example:
            >>> Const(3).ev(None)
            3
        """
        return self.v


@dataclass(frozen=True, eq=False)
class Index(Expr):
    """The index `i` of a per-input output (cat, stack: one output per forward tensor).

    Example:
        >>> Index().tex()
        'i'
    """

    def tex(self) -> str:
        """`i`.

        Example:
            >>> Index().tex()
            'i'
        """
        return "i"

    def ev(self, env: Env) -> Any:
        """The output number being computed.

        Example:
            >>> env = Env(z.grad_fn, ()); env.index = 1; Index().ev(env)
            1
        """
        return env.index


@dataclass(frozen=True, eq=False)
class Ref(Expr):
    """A named intermediate defined once in a formula's `defs` (`\\hat{x}`, `P`).

    Example:
        >>> Ref("xhat", r"\\hat{x}").tex()
        '\\\\hat{x}'
    """

    key: str
    symbol: str

    def tex(self) -> str:
        """The symbol.

        Example:
            >>> Ref("p", "P").tex()
            'P'
        """
        return self.symbol

    def ev(self, env: Env) -> Any:
        """The intermediate's value (computed before the outputs).

        Example:
            >>> env = Env(z.grad_fn, ()); env.def_exprs["p"] = Const(1); Ref("p", "P").ev(env)
            1
        """
        if self.key not in env.defs:
            env.defs[self.key] = env.def_exprs[self.key].value(env)
        return env.defs[self.key]


@dataclass(frozen=True, eq=False)
class Op(Expr):
    """An operation: LaTeX `template` with `#0`, `#1`... for the arguments, torch function `f`.

    `need[k]` is the precedence argument k must have to go without parentheses; `join` is the
    symbol written between the operands' shapes (`\\cdot` for matrix products).

    Example:
        >>> Op(r"\\exp\\left(#0\\right)", torch.exp, (Grad(0),)).tex()
        '\\\\exp\\\\left(G\\\\right)'
    """

    template: str
    f: Callable[..., Any]
    args: tuple[Expr, ...]
    prec: int = FUNC
    need: tuple[int, ...] = ()
    join: str | None = None
    scalar: bool = False
    meta_ok: bool = field(default=True)

    def tex(self) -> str:
        """The template with each argument's LaTeX in place (parenthesised when needed).

        Example:
            >>> (-(Grad(0) + Const(1))).tex()
            '-\\\\left(G + 1\\\\right)'
        """
        out = self.template
        need = self.need or (0,) * len(self.args)
        for k in range(len(self.args) - 1, -1, -1):  # #10 before #1
            out = out.replace(f"#{k}", _paren(self.args[k], need[k]))
        return out

    def ev(self, env: Env) -> Any:
        """`f` applied to the arguments' values.

        Example:
            >>> (Grad(0) * Const(3)).ev(Env(z.grad_fn, (torch.tensor(2.0),)))
            tensor(6.)
        """
        vals = [a.value(env) for a in self.args]
        if env.meta and not self.meta_ok:
            raise ShapeUnknown("this operation has no shape-only form")
        return self.f(*vals)

    def children(self) -> tuple[Expr, ...]:
        """The arguments.

        Example:
            >>> len(Op("#0", abs, (Grad(0),)).children())
            1
        """
        return self.args


@dataclass(frozen=True, eq=False)
class Cond(Expr):
    """`a` when the saved flag `flag` is true, else `b` (a `cases` block).

    Example:
        >>> print(Cond(Param("training"), Grad(0), Const(0), r"\\text{training}").tex())
        \\begin{cases} G & \\text{training} \\\\ 0 & \\text{otherwise} \\end{cases}
    """

    flag: Expr
    a: Expr
    b: Expr
    when: str

    def tex(self) -> str:
        """Both cases.

        Example:
            >>> Cond(Param("t"), Grad(0), Grad(0), "t").tex().startswith(r"\\begin{cases}")
            True
        """
        return (rf"\begin{{cases}} {self.a.tex()} & {self.when} \\ {self.b.tex()} & "
                r"\text{otherwise} \end{cases}")

    def ev(self, env: Env) -> Any:
        """The value of the case that holds.

        Example:
            >>> Cond(Const(False), Const(1), Const(2), "t").ev(None)
            2
        """
        return self.a.value(env) if self.flag.ev(env) else self.b.value(env)

    def children(self) -> tuple[Expr, ...]:
        """Flag and both cases.

        Example:
            >>> len(Cond(Const(1), Const(1), Const(2), "t").children())
            3
        """
        return (self.flag, self.a, self.b)


def op(template: str, f: Callable[..., Any], *args: Expr, prec: int = FUNC,
       need: tuple[int, ...] = (), join: str | None = None, scalar: bool = False,
       meta_ok: bool = True) -> Op:
    """Build an `Op` (arguments positional).

    Example:
        >>> op(r"\\lvert #0\\rvert", torch.abs, Grad(0)).tex()
        '\\\\lvert G\\\\rvert'
    """
    return Op(template, f, tuple(args), prec, need, join, scalar, meta_ok)


def fn_op(name: str, f: Callable[..., Any]) -> Callable[..., Op]:
    """A builder for a named function written `\\operatorname{name}(args)` (or `\\name` when
    `name` starts with a backslash).

    Example:
        >>> fn_op(r"\\cos", torch.cos)(Saved("self", "x")).tex()
        '\\\\cos\\\\left(x\\\\right)'
    """
    head = name if name.startswith("\\") else rf"\operatorname{{{name}}}"

    def build(*args: Expr) -> Op:
        inner = ", ".join(f"#{k}" for k in range(len(args)))
        return op(rf"{head}\left({inner}\right)", f, *args)

    return build


def _mul(a: Any, b: Any) -> Any:
    return a * b


def mul(a: Expr, b: Expr) -> Op:
    """Elementwise product `a \\odot b`; a scalar factor is written in front (`\\alpha\\,G`).

    Example:
        >>> mul(Const(2), Grad(0)).tex(), mul(Grad(0), Saved("self", "x")).tex()
        ('2\\\\,G', 'G \\\\odot x')
    """
    if b.scalar and not a.scalar:
        a, b = b, a
    if a.scalar:
        return op(r"#0\,#1", _mul, a, b, prec=PROD, need=(POW, PROD), scalar=b.scalar)
    return op(r"#0 \odot #1", _mul, a, b, prec=PROD, need=(PROD, PROD + 1), join=r"\odot")
