"""The child process of the hostile-file tests: opens each case's file under a memory cap and a
CPU cap, and measures what it cost.

Run as `python -m tests.helpers.hostile_child SPEC.json RESULTS.json`. SPEC holds the caps and
the cases (`path`, `kwargs` for `aw.load_recording`, `then`: what to do with a recording that
loads). After the imports, the address space is capped (RLIMIT_AS: the size now plus
`as_margin` bytes) and the CPU time (RLIMIT_CPU), so a regression fails the test instead of the
machine. Per case: the peak resident memory above what was resident before (VmHWM, reset
through /proc/self/clear_refs before each case) and the CPU seconds (`time.process_time`), with
the error's type and text.
"""

from __future__ import annotations

import gc
import json
import re
import resource
import sys
import time
from typing import Any


def _status(key: str) -> int:
    """A /proc/self/status field in bytes (VmRSS, VmHWM, VmSize)."""
    with open("/proc/self/status") as f:
        m = re.search(rf"^{key}:\s+(\d+) kB", f.read(), re.M)
    assert m is not None, key
    return int(m.group(1)) * 1024


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _then(rec: Any, what: str | None) -> None:
    if what == "formulas":  # every node's formula (the num_outputs hang lived here)
        from autograd_widget.core.formulas.api import node_formula

        for nid in rec.graph.nodes:
            node_formula(rec.graph, nid)
    elif what == "explore":  # the widget: the first steps and an inspector reply
        import autograd_widget as aw
        from autograd_widget.wire.protocol import dispatch

        w = aw.explore(rec)
        for msg in ({"type": "step"}, {"type": "inspect", "request": 1, "id": rec.order[0]}):
            dispatch(w._session, msg)
        w.close()


def main(spec_path: str, out_path: str) -> None:
    with open(spec_path) as f:
        spec = json.load(f)
    import autograd_widget as aw
    from autograd_widget.core.formulas import api  # noqa: F401  (imported before the caps)
    from autograd_widget.wire import protocol  # noqa: F401

    gc.collect()
    cap = _status("VmSize") + int(spec["as_margin"])
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    used = int(time.process_time()) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (used + int(spec["cpu_cap"]),) * 2)
    results = []
    for case in spec["cases"]:
        gc.collect()
        _reset_peak()
        before = _status("VmRSS")
        t0 = time.process_time()
        error = kind = None
        try:
            rec = aw.load_recording(case["path"], **case.get("kwargs", {}))
            _then(rec, case.get("then"))
            del rec
        except BaseException as e:  # reported: the parent asserts
            kind, error = type(e).__name__, str(e)
        cpu = time.process_time() - t0
        peak = _status("VmHWM") - before
        results.append({"name": case["name"], "error": error, "type": kind, "cpu": cpu,
                        "peak": max(peak, 0)})
    with open(out_path, "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
