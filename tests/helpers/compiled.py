"""Compiled models for the compiled-region tests (issue 32): tiny shapes, compiled once per test
module (torch.compile costs seconds per model on 2 cores).

The five models of the issue's "Done when": an MLP with GELU, a transformer block (LayerNorm,
scaled-dot-product attention), conv + BatchNorm + ReLU, two compiled submodules with eager code
between them, and a forward with a graph break inside (two regions from one compiled module).

`Compiled.fresh()` runs a new forward and returns its loss: every test gets a live graph of its
own. The first backward of every model is `retain_graph=True` (`prime`): torch compiles a
region's backward lazily, on its first call, and a first call from an ordinary backward()
compiles it with donated buffers, after which no manual call is allowed (the donated-buffer
tests build their own models for that).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

__all__ = [
    "MODELS",
    "Compiled",
    "compile_model",
    "leaf_grads",
    "reference_grads",
    "regions_opaque_here",
]


@functools.cache
def regions_opaque_here() -> str | None:
    """None where this torch's compiled regions open (their aten ops stepped one by one); else
    the note `graph.regions` gives for every region on it (an older torch lays the compiled
    backward's arguments out otherwise: the region is then one opaque node saying so, which
    tests/util/test_compat_compiled.py and test_compiled_regions_cases.py check). Found by compiling
    one tiny function (once per test session), not from a version number: which torch added the
    layout the reader needs is a fact of torch's, read here as it is."""
    import autograd_widget as aw

    fn = torch.compile(lambda a: (a * 2.0).sin(), backend="aot_eager", dynamic=False)
    out = fn(torch.ones(3, requires_grad=True)).sum()
    g = aw.capture(out)
    try:
        regions = list(g.regions.values())
        assert regions, "a compiled function gave no region"
        return None if regions[0].available else regions[0].note
    finally:
        g.close()
        torch._dynamo.reset()


class Block(torch.nn.Module):
    """Pre-norm attention block: LayerNorm, qkv projection, causal SDPA, output projection."""

    def __init__(self, d: int = 8, heads: int = 2) -> None:
        super().__init__()
        self.ln = torch.nn.LayerNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.out = torch.nn.Linear(d, d)
        self.heads = heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + self.out(y.transpose(1, 2).reshape(b, t, d))


class TwoRegions(torch.nn.Module):
    """Two separately compiled submodules with eager code between them."""

    def __init__(self, backend: str) -> None:
        super().__init__()
        self.first = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh())
        self.second = torch.nn.Sequential(torch.nn.Linear(6, 3), torch.nn.GELU())
        self.c_first = torch.compile(self.first, backend=backend, dynamic=False)
        self.c_second = torch.compile(self.second, backend=backend, dynamic=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.c_first(x)
        h = h * torch.sigmoid(h) + 0.5  # eager, between the regions
        return self.c_second(h)


class GraphBreak(torch.nn.Module):
    """A forward with a graph break inside: one compiled module, two regions."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(4, 5)
        self.b = torch.nn.Linear(5, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.gelu(self.a(x))
        torch._dynamo.graph_break()
        return torch.tanh(self.b(h)) * 2


@dataclass
class Compiled:
    """A model, the module that runs it (compiled, or with compiled parts) and its input."""

    name: str
    model: torch.nn.Module
    run: Callable[[torch.Tensor], torch.Tensor]
    make_input: Callable[[], torch.Tensor]
    #: How many compiled regions one backward goes through.
    regions: int

    def fresh(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(loss, input) of a new forward (its own live graph)."""
        x = self.make_input()
        return self.run(x).square().mean(), x

    def prime(self) -> None:
        """Compile the forward and the (lazy) backward, without donated buffers."""
        loss, _x = self.fresh()
        torch.autograd.grad(loss, list(self.model.parameters()), retain_graph=True)


def _input(*shape: int, requires_grad: bool = False) -> Callable[[], torch.Tensor]:
    def make() -> torch.Tensor:
        g = torch.Generator().manual_seed(1)
        return torch.randn(*shape, generator=g).requires_grad_(requires_grad)

    return make


def compile_model(name: str, backend: str) -> Compiled:
    """Model `name` of `MODELS`, compiled with `backend`, primed (see the module doc)."""
    torch.manual_seed(0)
    if name == "mlp_gelu":
        m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.Linear(8, 8),
                                torch.nn.GELU(), torch.nn.Linear(8, 2))  # fmt: skip
        c = Compiled(name, m, torch.compile(m, backend=backend, dynamic=False),
                     _input(3, 4), 1)  # fmt: skip
    elif name == "transformer_block":
        m = Block()
        c = Compiled(name, m, torch.compile(m, backend=backend, dynamic=False),
                     _input(2, 3, 8, requires_grad=True), 1)  # fmt: skip
    elif name == "conv_bn_relu":
        m = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.BatchNorm2d(3), torch.nn.ReLU())
        c = Compiled(name, m, torch.compile(m, backend=backend, dynamic=False),
                     _input(2, 2, 5, 5), 1)  # fmt: skip
    elif name == "two_regions":
        m = TwoRegions(backend)
        c = Compiled(name, m, m, _input(3, 4), 2)
    elif name == "graph_break":
        m = GraphBreak()
        c = Compiled(name, m, torch.compile(m, backend=backend, dynamic=False), _input(3, 4), 2)
    else:
        raise KeyError(name)
    c.prime()
    return c


MODELS = ["mlp_gelu", "transformer_block", "conv_bn_relu", "two_regions", "graph_break"]


def leaves_of(c: Compiled, x: torch.Tensor) -> list[torch.Tensor]:
    """The tensors whose gradients are compared: the parameters (and the input when it
    requires grad)."""
    ps = [p for _, p in c.model.named_parameters() if p.requires_grad]
    return ps + ([x] if x.requires_grad else [])


def reference_grads(c: Compiled, loss: torch.Tensor, x: torch.Tensor) -> list[torch.Tensor]:
    """torch.autograd.grad of the compiled model (retain_graph: the graph stays steppable)."""
    return list(torch.autograd.grad(loss, leaves_of(c, x), retain_graph=True))


def leaf_grads(stepper, c: Compiled, x: torch.Tensor) -> list[torch.Tensor | None]:
    """What manual stepping gave each of `leaves_of`."""
    return [stepper.grad(t) for t in leaves_of(c, x)]


def run_with_cache(script: str, which: str, cache: Path) -> dict:
    """`script` run in a fresh Python with `which` as its argument and torch's compile caches
    in `cache` (TORCHINDUCTOR_CACHE_DIR): what a second process sees of a warm cache. The script
    prints one line `RESULT <json>`; returns that JSON. Bounded (15 minutes); a failing script
    fails the test with its stderr's end."""
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache), PYTHONPATH=str(root))
    r = subprocess.run([sys.executable, "-c", script, which], capture_output=True, text=True,
                       env=env, cwd=root, timeout=900)  # fmt: skip
    assert r.returncode == 0, r.stderr[-4000:]
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])
