"""A warm compile cache, the everyday second kernel start (issue 32): two fresh processes compile
the same model with inductor and the same cache directory. The first compiles everything and
saves it (torch's defaults: the FX graph cache, `torch._inductor.config.fx_graph_cache`, and the
AOTAutograd cache, `torch._functorch.config.enable_autograd_cache`, both on; the entry is saved
when the backward compiles, on its first call). The second hits the AOTAutograd cache (its
counter says so), so the region's node carries a `CachedAutogradLazyBackwardCompileInfo` with no
`bw_module`, only `bw_module_fn()`: the region must still be available (read from the rebuilt
module, shapes worked out by fake-tensor propagation) and stepping it gives the engine's
gradients bit for bit."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.compiled import run_with_cache
from tests.helpers.torch_versions import needs_torch

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("open_regions")]

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = r"""
import json, sys, torch
import autograd_widget as aw
from torch._dynamo.utils import counters

torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.Linear(8, 2))
cm = torch.compile(m, backend="inductor", dynamic=False)
x = torch.randn(3, 4)
loss = cm(x).square().mean()
fn = loss.grad_fn
while fn.name() != "CompiledFunctionBackward":
    fn = fn.next_functions[0][0]
info = type(fn._forward_cls._lazy_backward_info).__name__
g = aw.capture(loss, model=m)
nid, region = next(iter(g.regions.items()))
out = {"info": info, "available": region.available, "note": region.note,
       "source": region.source, "ops": len(region.ops), "edges": len(region.edges),
       "hits": counters["aot_autograd"]["autograd_cache_hit"],
       "misses": counters["aot_autograd"]["autograd_cache_miss"]}
ref = torch.autograd.grad(loss, list(m.parameters()), retain_graph=True)
if sys.argv[1] == "second":
    st = aw.Stepper(g)
    rec = st.run()
    out["error"] = rec.error
    out["equal"] = all(torch.equal(st.grad(p), r) for p, r in zip(m.parameters(), ref))
    out["steps"] = len(st.order)
    out["diffs"] = len(st.compare_with_engine())
print("RESULT", json.dumps(out))
"""


def _run(which: str, cache: Path) -> dict:
    return run_with_cache(SCRIPT, which, cache)


@needs_torch("2.8", "AOTAutograd's compile cache hits on a warm run (seen on 2.8.0, none on "
                    "2.6.0)")
def test_a_warm_compile_cache_gives_available_regions(tmp_path):
    first = _run("first", tmp_path)
    assert first["info"] == "AutogradLazyBackwardCompileInfo"
    assert first["available"] and first["source"] == "module" and first["hits"] == 0
    second = _run("second", tmp_path)
    # the second process really took the cached path
    assert second["hits"] >= 1 and second["misses"] == 0, second
    assert second["info"] == "CachedAutogradLazyBackwardCompileInfo"
    assert second["available"], second["note"]
    assert second["source"] == "cache" and second["ops"] > 0 and second["edges"] > 0
    assert second["error"] is None and second["equal"] and second["diffs"] == 0, second
    assert second["steps"] > second["ops"]
