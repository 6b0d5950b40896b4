"""The teaching notebooks (02-05) run top to bottom and show what they claim.

Each notebook is executed once with nbclient (a real kernel) and its key outputs are checked
against values computed HERE, independently: with the real engine (`torch.autograd.grad`,
node hooks), closed forms, or `torch.func`. For the widgets, the test reads the state the widget
synced to the front-end, which nbclient stores in the notebook's metadata: the gradient values
drawn on the edges are the engine's.
"""

from __future__ import annotations

import base64
import copy
import functools
import json
import re

import nbformat
import pytest
import torch

import autograd_widget as aw
from autograd_widget.wire import payload as view
from tests.helpers.notebook_outputs import NOTEBOOKS, executed
from tests.helpers.torch_versions import WHY_PACKED, needs_torch

TEACHING = (
    "02_step_through_backward.ipynb",
    "03_saved_tensors.ipynb",
    "04_debugging_backward.ipynb",
    "05_double_backward.ipynb",
)
FLOAT = r"-?\d+(?:\.\d+)?(?:e-?\d+)?"


# --------------------------------------------------------------------------- helpers
@functools.cache
def run(name: str) -> tuple[nbformat.NotebookNode, str]:
    """Execute a notebook once per test session; (executed notebook, all its text output)."""
    nb = executed(name)[0]
    return nb, output_text(nb)


def output_text(nb: nbformat.NotebookNode) -> str:
    """All text output, in order. Unlike `test_notebooks.text_of`, consecutive stream chunks of
    a cell are joined as they are: the kernel flushes stdout at arbitrary points, so one printed
    line can arrive as two chunks, and a separator would break it."""
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            if o.get("output_type") == "stream":
                out.append(o["text"])
            elif "data" in o and "text/plain" in o["data"]:
                out.append(o["data"]["text/plain"] + "\n")
        out.append("\n")
    return "".join(out)


def floats(s: str) -> list[float]:
    return [float(v) for v in re.findall(FLOAT, s)]


def line_after(text: str, prefix: str) -> str:
    """The rest of the first output line that starts with `prefix` (after stripping)."""
    for line in text.splitlines():
        if line.strip().startswith(prefix):
            return line.strip()[len(prefix) :]
    raise AssertionError(f"no output line starts with {prefix!r}")


def widget_states(nb: nbformat.NotebookNode) -> list[dict]:
    """The synced state of every AutogradWidget of an executed notebook (buffers as bytes)."""
    saved = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    out = []
    for model in saved.values():
        state = model["state"]
        if state.get("_anywidget_id") != "autograd_widget.widget.AutogradWidget":
            continue
        state = copy.deepcopy(state)
        for buf in model.get("buffers", []):
            target = state
            for key in buf["path"][:-1]:
                target = target[key]
            target[buf["path"][-1]] = base64.b64decode(buf["data"])
        out.append(state)
    return out


def widget_edge_values(state: dict) -> dict[str, list[float]]:
    """Edge id -> the values the widget writes on that edge (small gradients only)."""
    ids = view.decode_graph(state["_graph"])["edges"]["id"]
    return {ids[int(k)]: v for k, v in state["_state"]["edge_values"].items()}


def engine_edge_grads(root: torch.Tensor, graph: aw.BackwardGraph) -> dict[str, torch.Tensor]:
    """Edge id -> the gradient the REAL engine sends along it (node post-hooks during one
    `torch.autograd.grad`), reduced to the destination slot's shape as the engine does."""
    got: dict[str, torch.Tensor] = {}
    handles = []
    for nid, node in graph.nodes.items():
        if node.kind == "accumulate_grad":
            continue
        fn = graph.fn(nid)

        def hook(grad_inputs, grad_outputs, nid=nid, fn=fn):
            for onr, ((nxt, slot), g) in enumerate(zip(fn.next_functions, grad_inputs)):
                if nxt is not None and g is not None:
                    shape = nxt._input_metadata[slot].shape
                    got[f"{nid}:{onr}"] = g.detach().sum_to_size(shape).clone()

        handles.append(fn.register_hook(hook))
    leaves = [graph.fn(lid).variable for lid in graph.leaves]
    try:
        torch.autograd.grad(root, leaves, retain_graph=True)
    finally:
        for h in handles:
            h.remove()
    return got


# --------------------------------------------------------------------------- storage (fast)
@pytest.mark.parametrize("name", TEACHING)
def test_teaching_notebook_is_stored_clean(name):
    path = NOTEBOOKS / name
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    raw = json.loads(path.read_text())
    ids = [c.get("id") for c in raw["cells"]]
    assert all(ids) and len(set(ids)) == len(ids), "every cell has a unique id"
    code = [c for c in raw["cells"] if c["cell_type"] == "code"]
    source = "\n".join("".join(c["source"]) for c in code)
    assert "aw.explore(" in source, "every teaching notebook shows the widget"
    assert "torch.manual_seed(" in source
    assert max(len(line) for line in source.splitlines()) <= 100
    markdown = [c for c in raw["cells"] if c["cell_type"] == "markdown"]
    assert len(markdown) >= len(code) // 2, "prose between the cells"


# --------------------------------------------------------------------------- 02
F_VALUES = {"A": 0.5, "B": 2.0, "E": 3.0}


def _f_graph():
    A, B, E = (torch.tensor(v, requires_grad=True) for v in F_VALUES.values())
    F = torch.exp(A * B) + E
    return F, (A, B, E), aw.capture(F, params={"A": A, "B": B, "E": E})


@pytest.mark.slow
def test_02_chain_rule_values_are_the_engines_and_the_widgets():
    nb, text = run("02_step_through_backward.ipynb")
    F, leaves, graph = _f_graph()
    engine = dict(zip("ABE", torch.autograd.grad(F, leaves, retain_graph=True)))
    a, b = F_VALUES["A"], F_VALUES["B"]
    assert engine["A"].item() == pytest.approx(b * torch.e ** (a * b))  # the formula, too
    for name, g in engine.items():
        stepper, eng, formula = floats(line_after(text, f"dF/d{name}: stepper"))
        assert stepper == eng == formula == pytest.approx(g.item(), abs=1e-6)
        assert floats(line_after(text, f"widget dF/d{name} ="))[0] == pytest.approx(g.item())
        by_hand = line_after(text, f"dF/d{name}: by hand")
        assert floats(by_hand)[0] == pytest.approx(g.item(), abs=1e-6)

    # What the widget drew: the state synced to the front-end, read from the notebook.
    (state,) = widget_states(nb)
    assert state["_state"]["done"] and state["_state"]["position"] == len(graph.nodes)
    drawn = widget_edge_values(state)
    want = engine_edge_grads(F, graph)
    assert set(drawn) == set(want) == {e.id for e in graph.edges}
    for eid, g in want.items():
        assert drawn[eid] == pytest.approx([g.item()], rel=1e-6), eid
        printed = line_after(text, f"widget edge {eid} ")
        assert floats(printed.split(":")[-1])[0] == pytest.approx(g.item(), abs=1e-6)
        assert floats(line_after(text, f"edge {eid} (").split("==")[0])[-1] == pytest.approx(
            g.item(), abs=1e-6
        ), "the by-hand call sent the same gradient along this edge"


@pytest.mark.slow
def test_02_fan_in_broadcasting_and_non_scalar_outputs():
    _, text = run("02_step_through_backward.ipynb")
    # fan-in: x * x at x = 3 -> two edges into one AccumulateGrad, each carrying 3, sum 6
    assert "edge n0:0: MulBackward0 -> AccumulateGrad(x) slot 0" in text
    assert "edge n0:1: MulBackward0 -> AccumulateGrad(x) slot 0" in text
    x = torch.tensor(3.0, requires_grad=True)
    (gx,) = torch.autograd.grad(x * x, x)
    assert floats(line_after(text, "x.grad by the stepper:"))[0] == gx.item() == 6.0
    # sin(x) + 2x: the partial sum grows in the AccumulateGrad's slot
    assert floats(line_after(text, "after MulBackward0"))[-1] == 2.0
    (gz,) = torch.autograd.grad(torch.sin(x) + x * 2, x)
    assert floats(line_after(text, "after SinBackward0"))[-1] == pytest.approx(gz.item(), 1e-3)
    # broadcasting: raw [4, 3] reduced to the bias's [3]
    assert "raw output for b: (4, 3) | slot of AccumulateGrad(b) expects: (3,)" in text
    X = torch.arange(12.0).reshape(4, 3) / 10
    bias = torch.tensor([0.1, -0.2, 0.3], requires_grad=True)
    (gb,) = torch.autograd.grad(((X + bias) ** 2).sum(), bias)
    shown = floats(line_after(text, "b.grad:").split("(engine")[0])
    assert shown == pytest.approx(gb.tolist(), abs=1e-4)
    # AccumulateGrad is never called by the stepper; calling it by hand writes .grad
    assert "A.grad after all that stepping: None" in text
    assert "after calling it twice: tensor([2., 2.]) (accumulated)" in text
    # non-leaf gradient: stepper.grad(h) == h.grad after retain_grad() == e
    assert floats(line_after(text, "stepper.grad(h):"))[0] == pytest.approx(torch.e, abs=1e-6)
    assert floats(line_after(text, "after retain_grad() and backward(): h.grad ="))[0] == (
        pytest.approx(torch.e, abs=1e-6)
    )
    # non-scalar outputs: both refuse without grad_outputs, all ways agree with one
    assert "engine:  grad can be implicitly created only for scalar outputs" in text
    assert "stepper: grad can be implicitly created only for scalar outputs" in text
    xv = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = torch.tensor([1.0, 0.1, 0.01])
    (vjp,) = torch.autograd.grad(xv**2, xv, grad_outputs=v)
    for prefix in ("autograd.grad:", "stepper:   ", "v @ J (explicit J):", "backward(v):"):
        shown = floats(line_after(text, prefix).split("|")[0])
        assert shown == pytest.approx(vjp.tolist(), abs=1e-4), prefix
    assert floats(line_after(text, "backward(v) again:")) == pytest.approx(
        (2 * vjp).tolist(), abs=1e-4
    )


@pytest.mark.slow
def test_02_probes_jacobian_norms_and_what_if():
    _, text = run("02_step_through_backward.ipynb")
    # Section 9's tensors, rebuilt here from the same generator seed
    gen = torch.Generator().manual_seed(10)
    X = torch.randn(16, 5, generator=gen)
    W = torch.randn(5, 6, generator=gen)
    u = torch.randn(200, generator=gen)
    h = X @ W
    jac_soft = torch.autograd.functional.jacobian(lambda t: t.softmax(-1), h)
    closed = {  # ||J||_F^2 of each node, by closed form or jacobian() of the forward op
        "MmBackward0": 6 * float(X.double().pow(2).sum()),
        "ExpBackward0": float(torch.exp(2 * u.double()).sum()),
        "MulBackward0": 0.25 * 200,
        "SoftmaxBackward0": float(jac_soft.double().pow(2).sum()),
    }
    for name, want in closed.items():
        row = line_after(text, f"probe {name}")
        est, err = floats(row)[:2]
        assert row.endswith("estimated"), name
        assert abs(est - want) <= 4 * err + 1e-3 * want, (name, est, err, want)
        assert floats(line_after(text, f"check {name}:"))[-1] == pytest.approx(want, rel=1e-3)
    # elementwise ops: Rademacher samples on a diagonal Jacobian have no spread
    assert floats(line_after(text, "probe ExpBackward0"))[1] == 0.0
    # small nodes and leaves: exact (the identity on W has 5 * 6 = 30 entries)
    for name, want in (("SelectBackward0", 16.0), ("AccumulateGrad(W)", 30.0)):
        row = line_after(text, f"probe {name}")
        assert floats(row)[:2] == [want, 0.0] and row.endswith("exact"), name
    assert "position after probing: 0 | W.grad: None" in text

    # what-if on z = x**2 + y at x = 2, y = 3, against the engine
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    gx, gy = torch.autograd.grad(x**2 + y, (x, y))
    assert floats(line_after(text, "edge n1:0 -> AccumulateGrad(x) carries")) == [gx.item()]
    assert "edits: {'n1:0': 'zero'}" in text
    dx = floats(line_after(text, "what-if dz/dx:"))
    assert dx == [0.0, gx.item()] and line_after(text, "what-if dz/dx:").endswith("True")
    dy = floats(line_after(text, "what-if dz/dy:"))
    assert dy == [gy.item(), gy.item()] and line_after(text, "what-if dz/dy:").endswith("False")
    assert floats(line_after(text, "after reset():")) == [gx.item(), gy.item()]
    assert floats(line_after(text, "scaled by 10:")) == [10 * gx.item(), gy.item()]
    assert "x.grad: None | y.grad: None" in text


# --------------------------------------------------------------------------- 03
def _transformer():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(
        d_model=32, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True
    )
    model = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    return model, torch.randn(2, 10, 32)


@pytest.mark.slow
def test_03_memory_table_sums_to_the_total_and_matches_a_pack_hook_count():
    _, text = run("03_saved_tensors.ipynb")
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split() == ["module", "bytes"])
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("total "))
    rows = {
        line.rsplit(None, 1)[0]: int(line.rsplit(None, 1)[1]) for line in lines[start + 1 : end]
    }
    total = int(lines[end].split()[-1])
    assert len(rows) >= 8 and "layers.0.self_attn" in rows and "<outside any module>" in rows
    assert sum(rows.values()) == total
    assert int(line_after(text, "total by node:")) == total

    # Independently: every storage saved during the same forward, parameters left out.
    model, tokens = _transformer()
    seen: dict[int, int] = {}

    def count(t):
        seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(count, lambda t: t):
        loss = model(tokens).pow(2).mean()
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    assert total == sum(n for ptr, n in seen.items() if ptr not in params)
    assert rows["layers.0.self_attn"] == max(rows.values())
    del loss
    # linear in the sequence length (the fused attention saves no L x L matrix)
    scaling = [floats(line_after(text, f"L = {n}:"))[0] for n in (10, 20, 40)]
    assert scaling == [total, 2 * total, 4 * total]


@needs_torch("2.10", WHY_PACKED)
@pytest.mark.slow
def test_03_aliases_stale_and_packed_states():
    _, text = run("03_saved_tensors.ipynb")
    assert "pow saved x itself:                 True" in text
    assert "exp saved e itself:                 False" in text
    assert "... but over e's storage:           True" in text
    assert "aliases=['parameter x (the very object)']" in text
    assert "\"the forward op's output\", 'n1.other (MulBackward0)'" in text
    assert "sum of every saved tensor's bytes: 48" in text
    assert "= 36 bytes" in text  # 3 storages of 12 bytes
    assert "NllLossBackward0 _saved_ignore_index = 18446744073709551516" in text
    assert "NllLossBackward0 ignore_index, as a record: -100" in text
    # stale BEFORE stepping, then the step fails with the engine's own message
    stale = text.index("ExpBackward0.result: state=stale versions=(0, 1)")
    failed = text.index("failed at: n2 ExpBackward0")
    assert stale < failed
    x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = (x * 2).exp()
    y.add_(1)
    with pytest.raises(RuntimeError) as engine:
        y.sum().backward()
    assert str(engine.value) in line_after(text, "stepper error:")
    # packed by saved_tensors_hooks into a string key; stepping through the store is exact
    assert "state=packed value='t0'" in text
    assert "capture: [] (nothing unpacked)" in text
    assert "stepping: ['unpack t1', 'unpack t2', 'unpack t0']" in text
    xs = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    (gx,) = torch.autograd.grad((xs.sin() * xs).sum(), xs)
    shown = floats(line_after(text, "x gradient, stepped through the store:").split("|")[0])
    assert shown == pytest.approx(gx.tolist(), abs=1e-4)
    assert "state=packed packed value=(device(type='cpu')" in text


# --------------------------------------------------------------------------- 04
@pytest.mark.slow
def test_04_first_nonfinite_edge_is_where_the_engine_makes_the_first_inf():
    _, text = run("04_debugging_backward.ipynb")
    shown = re.search(
        r"first non-finite gradient: edge ([^,\s]+), from (\w+) \(module '(\w+)'\)", text
    )
    assert shown, "the notebook names the first non-finite edge"
    edge_id, src_name, module = shown.groups()

    # Independently: the same model, the real engine, the first node whose output is not finite.
    class Spread(torch.nn.Module):
        def forward(self, z):
            diff = z[:, None, :] - z[None, :, :]
            return (diff**2).sum(-1).sqrt().mean()

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Linear(2, 2)
            self.spread = Spread()

        def forward(self, x):
            return self.spread(torch.tanh(self.embed(x)))

    torch.manual_seed(0)
    model = Model()
    points = torch.randn(3, 2)
    with aw.track(model):
        loss = model(points)
    graph = aw.capture(loss, model=model)
    order: list[str] = []
    fns = {nid: graph.fn(nid) for nid, n in graph.nodes.items() if n.kind != "accumulate_grad"}
    handles = [fn.register_prehook(lambda g, nid=nid: order.append(nid)) for nid, fn in fns.items()]
    try:
        grads = engine_edge_grads(loss, graph)
    finally:
        for h in handles:
            h.remove()
    first = next(
        f"{nid}:{onr}"
        for nid in order
        for onr in range(len(fns[nid].next_functions))
        if f"{nid}:{onr}" in grads and not torch.isfinite(grads[f"{nid}:{onr}"]).all()
    )
    assert edge_id == first
    assert src_name == graph.nodes[first.split(":")[0]].name == "SqrtBackward0"
    assert module == "spread"
    assert int(re.search(r"nan=(\d+) inf=(\d+) shape", text).group(2)) == 3  # the diagonal
    assert "anomaly mode: Function 'PowBackward0' returned nan values" in text
    assert "first_nonfinite after the fix: None" in text


@pytest.mark.slow
def test_04_failing_node_and_the_x10_hook():
    _, text = run("04_debugging_backward.ipynb")
    # the in-place ReLU after a Sigmoid: the engine names an op, the stepper the node + module
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Linear(3, 4),
        torch.nn.Sigmoid(),
        torch.nn.ReLU(inplace=True),
        torch.nn.Linear(4, 1),
    )
    with aw.track(net):
        loss = net(torch.randn(5, 3)).pow(2).mean()
    with pytest.raises(RuntimeError) as engine:
        loss.backward(retain_graph=True)
    op = re.search(r"output 0 of (\w+),", str(engine.value)).group(1)
    op = re.sub(r"Backward0$", "", op)  # torch < 2.8 or so names the node, not the op
    graph = aw.capture(loss, model=net)
    node = next(n for n in graph.nodes.values() if n.name == f"{op}Backward0")
    assert f"failing node: {node.id} {node.name}, module '{node.module}' (Sigmoid)" in text
    assert "gradient it received: [[5, 4]]" in text
    assert str(engine.value) in line_after(text, "error:")
    assert f"the widget marks {node.id} as failed" in text
    assert "saved result: state=stale, versions=(0, 1)" in text

    # compare_with_engine: the hooked slot first, then exactly the parameters upstream of it
    diffs = [line for line in text.splitlines() if "engine/manual norm =" in line]
    assert diffs[0].startswith("slot n4 ReluBackward0 (module '1'), slot 0")
    assert all(floats(d.split("=")[-1])[0] == pytest.approx(10.0, abs=1e-3) for d in diffs)
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    inputs = torch.randn(6, 3)
    hidden = mlp[1](mlp[0](inputs))
    plain = torch.autograd.grad(mlp[2](hidden).pow(2).sum(), list(mlp.parameters()))
    hidden = mlp[1](mlp[0](inputs))
    hidden.register_hook(lambda g: g * 10)
    hooked = torch.autograd.grad(mlp[2](hidden).pow(2).sum(), list(mlp.parameters()))
    scaled = {
        name
        for (name, _), a, b in zip(mlp.named_parameters(), plain, hooked)
        if not torch.allclose(a, b)
    }
    assert scaled == {"0.weight", "0.bias"}
    leaves = {d.split()[1] for d in diffs if d.startswith("leaf")}
    assert leaves == scaled
    assert "its gradient edge in the graph:    ('n4', 0)" in text
    assert "first difference:                  ('n4', 0)" in text


@pytest.mark.slow
def test_04_hook_order_is_the_engines():
    _, text = run("04_debugging_backward.ipynb")
    assert "hooks fired while stepping: []" in text
    block = text[text.index("hooks fired by backward():") :]
    fired = re.findall(r"^\s+\d+\. (.+)$", block.split("differences:")[0], re.M)

    # the same registrations, here, with the real engine
    log: list[str] = []

    def note(message):
        return lambda *args: log.append(message)

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = y.sin()
    y.retain_grad()
    y.register_hook(note("tensor hook on y"))
    z.grad_fn.register_prehook(note("pre-hook  SinBackward0"))
    z.grad_fn.register_hook(note("post-hook SinBackward0"))
    y.grad_fn.register_prehook(note("pre-hook  MulBackward0"))
    y.grad_fn.register_hook(note("post-hook MulBackward0"))
    x.register_hook(note("tensor hook on x (leaf)"))
    acc = y.grad_fn.next_functions[0][0]
    acc.register_prehook(note("pre-hook  AccumulateGrad(x)"))
    acc.register_hook(note("post-hook AccumulateGrad(x)"))
    x.register_post_accumulate_grad_hook(note("post-accumulate-grad hook on x"))
    z.sum().backward()
    assert fired == log and len(log) == 9
    # compare_with_engine runs the engine (hooks fire) but accumulates nothing
    compared = re.findall(r"^\s+\d+\. (.+)$", block.split("differences: []")[1], re.M)
    assert compared == [m for m in log if "AccumulateGrad" not in m and "accumulate" not in m]
    assert floats(line_after(text, "y2.grad / true gradient:")) == [2.0, 2.0]
    assert floats(line_after(text, "x.grad / true gradient:"))[:2] == [200.0, 200.0]


# --------------------------------------------------------------------------- 05
@pytest.mark.slow
def test_05_second_derivative_and_hessian_vector_product():
    nb, text = run("05_double_backward.ipynb")
    x = torch.tensor(3.0, requires_grad=True)
    (g,) = torch.autograd.grad(x**3, x, create_graph=True)
    graph = aw.capture(g, params={"x": x})  # before the grad below frees it
    (h,) = torch.autograd.grad(g, x)
    assert "create_graph=False: tensor(27.) grad_fn: None" in text
    assert "create_graph=True:  tensor(27., grad_fn=<MulBackward0>) grad_fn: MulBackward0" in text
    assert floats(line_after(text, "d2y/dx2: stepped"))[:2] == [h.item(), h.item()] == [18, 18]
    # the widget over the gradient's graph: run to the end, 18 drawn on the edge into x
    (state,) = widget_states(nb)
    assert state["_state"]["done"]
    into_x = next(e.id for e in graph.edges if graph.nodes[e.dst].leaf_name == "x")
    assert widget_edge_values(state)[into_x] == [pytest.approx(h.item())]

    # Hv, independently: same data, torch.autograd.functional.hvp
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(8, 3, generator=gen, dtype=torch.float64)
    labels = (torch.rand(8, generator=gen, dtype=torch.float64) > 0.5).double()
    w0 = torch.randn(3, generator=gen, dtype=torch.float64)
    v = torch.tensor([1.0, -1.0, 0.5], dtype=torch.float64)

    def f(w):
        return torch.nn.functional.binary_cross_entropy_with_logits(X @ w, labels)

    _, hvp = torch.autograd.functional.hvp(f, w0, v)
    stepped = floats(line_after(text, "Hv by stepping twice:"))
    assert stepped == pytest.approx(hvp.tolist(), rel=1e-12, abs=1e-15)
    assert floats(line_after(text, "max |difference|"))[0] < 1e-12
    assert "symmetric: True" in text
    assert "w.grad: None" in text
    assert "compare_with_engine on the second backward: []" in text
