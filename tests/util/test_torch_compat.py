"""Issue 28: what each supported torch can show, through util/compat.py, the one reader of the
private torch APIs that only some versions have.

Each version-dependent path is tested twice: on the torch that lacks the API (the compat runs:
`make compat TORCH=2.6.0` and up, where `old_torch` below patches nothing) and on the pinned torch
with the API switched off (`compat.SAVED_DATA = False`, or the attributes deleted in a fresh
interpreter), which is honest because the older path reads nothing the newer torch adds.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from torch.utils.checkpoint import checkpoint

import autograd_widget as aw
from autograd_widget.core.formulas.api import node_formula
from autograd_widget.core.validity import first_saved_state, node_validity
from autograd_widget.engine.diagnose.failure import explain_failure
from autograd_widget.util import compat
from tests.helpers.torch_versions import needs_torch, torch_at_least

ROOT = Path(__file__).resolve().parents[2]
HAS_SAVED_DATA = hasattr(torch._C._autograd.SavedTensor, "data")


@pytest.fixture(params=["as installed", "without SavedTensor.data"])
def old_torch(request, monkeypatch):
    """Run a test on the older torch's path: for real where the torch lacks the API (the compat
    runs), simulated on the pinned one; the "as installed" run checks the same claims hold
    (or, where the torch can say more, that they are no weaker)."""
    if request.param == "without SavedTensor.data":
        monkeypatch.setattr(compat, "SAVED_DATA", False)
    return not compat.SAVED_DATA


class Hooks:
    """saved_tensors_hooks whose unpack hook counts its calls (it must never run when looking)."""

    def __init__(self):
        self.unpacked = 0

    def pack(self, t):
        return t.clone()

    def unpack(self, t):
        self.unpacked += 1
        return t


def by_name(recs):
    return {r.name: r for r in recs}


# ------------------------------------------------------------------------------ what compat knows
def test_feature_flags_match_the_installed_torch():
    assert compat.SAVED_DATA == HAS_SAVED_DATA
    has_group = hasattr(torch.utils.checkpoint, "GraphExecGroup")
    assert (compat.exec_group_class() is not None) == has_group
    assert (compat.node_creation_hook() is not None) == hasattr(
        torch.autograd.graph, "node_creation_hook"
    )
    # The versions the notes name are the versions that added them (the compat runs check each
    # flag on a torch on either side of its version).
    assert compat.SAVED_DATA == torch_at_least(compat.SAVED_DATA_TORCH)
    assert has_group == torch_at_least("2.10")
    assert (compat.node_creation_hook() is not None) == torch_at_least(
        compat.NODE_CREATION_HOOK_TORCH
    )


def test_supported_range_is_pyproject_s():
    text = (ROOT / "pyproject.toml").read_text()
    assert f'"torch{compat.SUPPORTED_TORCH}"' in text
    assert torch_at_least(compat.SUPPORTED_TORCH.lstrip(">="))


def test_guard_runs_no_python_and_restores_the_tracer():
    # (The function is named by its qualified name from Python 3.11 on, "Hooks.unpack"; 3.10's
    # code objects have no co_qualname: "unpack".)
    hooks = Hooks()
    x = torch.randn(3, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(hooks.pack, hooks.unpack):
        y = x.exp()
    calls = []

    def outer(frame, event, arg):
        calls.append(event)

    sys.settrace(outer)
    try:
        with pytest.raises(compat.UnpackRefused, match=r"run (Hooks\.)?unpack ") as info:
            compat.guarded_getattr(y.grad_fn, "_saved_result")
        assert sys.gettrace() is outer
    finally:
        sys.settrace(None)
    assert hooks.unpacked == 0 and not info.value.checkpoint
    assert info.value.module == __name__
    # Nothing was left on the saved value: the engine still unpacks it through the hook.
    (g,) = torch.autograd.grad(y.sum(), x)
    assert hooks.unpacked == 1 and torch.equal(g, x.exp().detach())
    # A plain value comes back as torch gives it (no Python frame).
    z = x.exp()
    assert torch.equal(compat.guarded_getattr(z.grad_fn, "_saved_result"), z)


def test_guard_recognises_a_checkpoint_without_recomputing():
    x = torch.randn(3, requires_grad=True)
    runs = []

    def region(t):
        runs.append(1)
        return t.sin() * t.cos()

    out = checkpoint(region, x, use_reentrant=False)
    with pytest.raises(compat.UnpackRefused) as info:
        compat.guarded_getattr(out.grad_fn, "_saved_self")
    assert info.value.checkpoint and runs == [1]


# ------------------------------------------------------------------------------ saved values
def test_saved_states_on_the_older_path(old_torch):
    hooks = Hooks()
    x = torch.randn(4, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(hooks.pack, hooks.unpack):
        packed = x.exp()  # ExpBackward0 saves `result` through the hooks
    plain = packed * x  # MulBackward0 saves self (packed, not hooked) and other (x, a leaf)
    ck = checkpoint(lambda t: t.sin() * 2, plain, use_reentrant=False)
    loss = ck.sum()
    g = aw.capture(loss, params={"x": x})
    ids = {g.nodes[n].name: n for n in g.nodes}
    recs = {n: by_name(g.saved(ids[n])) for n in ("ExpBackward0", "MulBackward0", "SinBackward0")}
    mul = recs["MulBackward0"]
    assert mul["self"].state == mul["other"].state == "ok"
    assert mul["other"].shape == (4,) and "parameter x (the very object)" in mul["other"].aliases
    sin = recs["SinBackward0"]["self"]
    assert sin.recomputed and sin.state == "packed"
    exp = recs["ExpBackward0"]["result"]
    if old_torch:
        assert exp.state == "unknown" and exp.shape is None and exp.nbytes is None
        assert f"torch >= {compat.SAVED_DATA_TORCH}" in exp.note
        assert "run unpack" in exp.note.replace("Hooks.", "")
        assert f"unknown on torch {compat.torch_version()}" in exp.note
        assert "shape unknown on torch" in sin.note
    else:
        assert exp.state == "packed" and exp.shape == (4,)
    assert hooks.unpacked == (0 if old_torch else 1)  # the newer torch shows the unpacked stats
    mem = g.saved_memory()
    if old_torch:
        # Never a wrong number: what cannot be seen is named in the notes, not guessed.
        notes = " ".join(mem.notes.values())
        assert "not counted" in notes and "checkpoint region's inputs cannot be found" in notes
        assert mem[ids["ExpBackward0"]] == 0
    assert mem[ids["MulBackward0"]] == 2 * 16  # the product's input `packed`, and x
    assert node_validity(g) == {} and first_saved_state(g) == "ok"
    st = aw.Stepper(g)
    st.run()
    (want,) = torch.autograd.grad(loss, x, retain_graph=True)
    torch.testing.assert_close(st.grad(x), want, rtol=0, atol=0)
    g.close()


def test_a_stale_value_on_the_older_path(old_torch):
    x = torch.randn(3, requires_grad=True)
    h = x * 1
    y = h.sigmoid()  # saves its result
    loss = y.sum()
    with torch.no_grad():
        y.add_(1)
    g = aw.capture(loss)
    sid = next(n for n in g.nodes if g.nodes[n].name == "SigmoidBackward0")
    (rec,) = g.saved(sid)
    assert rec.state == "stale" and rec.versions == (0, 1)
    if old_torch:
        assert rec.shape is None and f"unknown on torch {compat.torch_version()}" in rec.note
        assert "not counted" in g.saved_memory().notes[sid]
    else:
        assert rec.shape == (3,)
    assert node_validity(g) == {sid: "stale"}
    failed = aw.Stepper(g).run()
    assert failed.error is not None and failed.node.id == sid
    err = explain_failure(g, sid, failed.error)
    assert err.kind == "inplace" and err.saved_name == "result"
    assert (err.saved_version, err.current_version) == (0, 1)
    if old_torch:
        assert err.culprit is None and "unknown on torch" in err.sentence
    g.close()


def test_asking_for_a_hooked_value_unpacks_it_and_a_checkpointed_one_refuses(old_torch):
    hooks = Hooks()
    x = torch.randn(3, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(hooks.pack, hooks.unpack):
        y = x.exp()
    ck = checkpoint(torch.sin, y, use_reentrant=False)
    g = aw.capture(ck.sum())
    ids = {g.nodes[n].name: n for n in g.nodes}
    t = g.saved_tensor(ids["ExpBackward0"], "result")  # asked for: the hook runs, as always
    assert torch.equal(t, y.detach()) and hooks.unpacked == 1
    with pytest.raises(RuntimeError, match="recomputed during backward"):
        g.saved_tensor(ids["SinBackward0"], "self")
    g.close()


def test_formula_shapes_on_the_older_path(old_torch):
    hooks = Hooks()
    x = torch.randn(3, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(hooks.pack, hooks.unpack):
        y = x.exp()
    g = aw.capture(y.sum())
    nid = next(n for n in g.nodes if g.nodes[n].name == "ExpBackward0")
    nf = node_formula(g, nid)
    assert nf.known
    if old_torch:  # the shapes would need the hooked value: unknown, said, and the hook not run
        assert hooks.unpacked == 0 and "run unpack" in nf.shape_note.replace("Hooks.", "")
    else:
        assert nf.lines[0].shapes is not None
    g.close()


def test_checkpoint_stepping_back_and_forth_on_the_older_path(old_torch):
    lin = torch.nn.Linear(8, 8)
    x = torch.randn(4, 8, requires_grad=True)
    out = checkpoint(lambda t: lin(t).tanh() * 2, x, use_reentrant=False)
    loss = out.pow(2).sum()
    want = torch.autograd.grad(loss, [x, *lin.parameters()], retain_graph=True)
    st = aw.Stepper(aw.capture(loss))
    for _ in range(3):
        st.step()
    st.back()
    st.back()
    st.run()
    st.back()
    st.run()
    for t, w in zip([x, *lin.parameters()], want):
        torch.testing.assert_close(st.grad(t), w)
    assert all(p.grad is None for p in lin.parameters())


# ------------------------------------------------------------------------------ a fresh interpreter
def test_import_and_quick_start_with_the_attributes_absent():
    # The older torch's API surface for real: SavedTensor.data and .unpack_hook deleted before
    # the package is imported, so compat decides from what it finds, as on torch 2.6 - 2.12.
    code = textwrap.dedent(
        """
        import torch
        S = torch._C._autograd.SavedTensor
        for name in ("data", "unpack_hook", "unpack"):
            if hasattr(S, name):
                delattr(S, name)
        import autograd_widget as aw
        from autograd_widget.util import compat
        assert not compat.SAVED_DATA
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
        x = torch.randn(5, 4)
        with aw.track(model):
            loss = model(x).logsumexp(1).sum()
        g = aw.capture(loss, model=model)
        st = aw.Stepper(g)
        st.run()
        want = torch.autograd.grad(loss, list(model.parameters()), retain_graph=True)
        for p, w in zip(model.parameters(), want):
            assert torch.equal(st.grad(p), w)
        states = {v.state for n in g.nodes for v in g.saved(n)}
        assert states <= {"ok"}, states
        assert sum(g.saved_memory().values()) > 0 and not g.saved_memory().notes
        print("ok", torch.__version__)
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stdout + r.stderr


def test_every_torch_submodule_the_package_uses_is_imported():
    # `import torch` loads different submodules on different versions (torch.utils.checkpoint
    # only from about 2.8): every dotted torch module the package names must be imported by the
    # package itself or by `import torch` on this torch. Run on every compat torch.
    code = textwrap.dedent(
        """
        import ast, importlib.util, pathlib, sys
        import torch
        loaded = set(sys.modules)
        missing = []
        for path in sorted(pathlib.Path("autograd_widget").rglob("*.py")):
            tree = ast.parse(path.read_text())
            imported = set()
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    imported |= {a.name for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    imported.add(node.module)
                    imported |= {f"{node.module}.{a.name}" for a in node.names}
            for node in ast.walk(tree):
                if not isinstance(node, ast.Attribute):
                    continue
                parts, n = [], node
                while isinstance(n, ast.Attribute):
                    parts.append(n.attr)
                    n = n.value
                if not (isinstance(n, ast.Name) and n.id == "torch"):
                    continue
                dotted = "torch." + ".".join(reversed(parts))
                for k in range(2, dotted.count(".") + 2):
                    mod = ".".join(dotted.split(".")[:k])
                    if mod in loaded or mod in imported:
                        continue
                    try:
                        spec = importlib.util.find_spec(mod)
                    except (ImportError, ValueError):
                        spec = None
                    if spec is not None:
                        missing.append(f"{path}: {mod}")
        print("\\n".join(sorted(set(missing))))
        """
    )
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "", "used without importing it:\n" + r.stdout


@needs_torch("2.10", "SavedTensor.data shows a packed value's packed form without unpacking it")
def test_the_packed_form_is_read_without_unpacking_on_a_newer_torch():
    hooks = Hooks()
    x = torch.randn(4, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(hooks.pack, hooks.unpack):
        y = x.exp()
    g = aw.capture(y.sum())
    nid = next(n for n in g.nodes if g.nodes[n].name == "ExpBackward0")
    (rec,) = g.saved(nid)
    assert rec.state == "packed"
    assert "packed by torch.autograd.graph.saved_tensors_hooks" in rec.note
    assert g.saved_memory()[nid] == 16  # the packed clone, found without unpacking
    g.close()


def test_the_inspector_says_unknown_in_one_line(old_torch):
    # What the Saved tab shows (view/inspect.py builds it; js/src/inspect.js gives the state its
    # badge and panel.js prints the note on one line under the value).
    from autograd_widget.view.inspect import inspect_node, memory_report
    from autograd_widget.view.scene import Scene

    hooks = Hooks()
    x = torch.randn(4, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(hooks.pack, hooks.unpack):
        y = x.exp()
    g = aw.capture((y * 2).sum())
    st = aw.Stepper(g)
    nid = next(n for n in g.nodes if g.nodes[n].name == "ExpBackward0")
    (saved,) = inspect_node(Scene(g, st), st, nid)["saved"]
    assert saved["state"] == ("unknown" if old_torch else "packed")
    assert "\n" not in saved["note"]
    if old_torch:
        assert f"torch >= {compat.SAVED_DATA_TORCH}" in saved["note"] and hooks.unpacked == 0
        assert "not counted" in json.dumps(memory_report(Scene(g, st)))
    st.close()
    g.close()


@pytest.fixture(params=["as installed", "without GraphExecGroup"])
def no_groups(request, monkeypatch):
    """torch < 2.10 has no `torch.utils.checkpoint.GraphExecGroup` (compat.exec_group_class()
    is None there): for real in the compat runs, switched off on a newer torch."""
    import autograd_widget.engine.step.recompute as engine_checkpoint

    if request.param == "without GraphExecGroup":
        monkeypatch.setattr(engine_checkpoint, "GraphExecGroup", None)
    return engine_checkpoint.GraphExecGroup is None


def test_checkpointed_stepping_without_groups(no_groups):
    # Without groups every saved-value read of a checkpointed node recomputes its region (more
    # recomputes than the engine's one per region), but the gradients are the engine's.
    lin = torch.nn.Linear(8, 8)
    calls = []
    lin.register_forward_pre_hook(lambda *_: calls.append(1))
    x = torch.randn(4, 8, requires_grad=True)
    out = checkpoint(lambda t: lin(t).tanh(), x, use_reentrant=False)
    loss = out.pow(2).sum()
    want = torch.autograd.grad(loss, [x, *lin.parameters()], retain_graph=True)
    engine = len(calls) - 1  # the forward, then the engine's recomputes
    calls.clear()
    st = aw.Stepper(aw.capture(loss))
    st.run()
    for t, w in zip([x, *lin.parameters()], want):
        torch.testing.assert_close(st.grad(t), w, rtol=0, atol=0)
    assert engine == 1 and len(calls) >= engine
    if not no_groups:
        assert len(calls) == engine  # one recompute per region per pass, as the engine
