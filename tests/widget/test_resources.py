"""Resources (issue 9): what the widget and the stepper hold, and that they let go.

- closing/deleting a widget releases the graph; `release()` drops every torch reference while the
  drawing stays (a widget kept alive by the notebook's `Out[n]` must not pin activations);
- no hook is left registered anywhere (tensors, nodes, modules, global module hooks);
- the stepper's kept tensors respect the memory budget, a budget smaller than one gradient keeps
  none, and freed gradients really are freed;
- two widgets on one graph are independent; one widget shown twice is one state.
"""

from __future__ import annotations

import gc
import weakref

import pytest
import torch
import torch.nn.modules.module as module_hooks

import autograd_widget as aw
from autograd_widget import Stepper
from autograd_widget.util import compat
from tests.helpers.models import make_mlp


class Marker:
    """Weakref-able; a custom Function keeps it on its ctx, so it lives exactly as long as the
    C++ graph (and its saved activations) does."""


class KeepOnCtx(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, marker):
        ctx.marker = marker
        ctx.save_for_backward(a)
        return a * 2

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * 2 + 0 * a, None


#: weakrefs to the gradients `Spy` received during backward (to see what the stepper frees).
SEEN: list[weakref.ref] = []


class Spy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a.clone()

    @staticmethod
    def backward(ctx, g):
        out = g * 1.0  # a fresh tensor nobody else holds, flowing on down the graph
        SEEN.append(weakref.ref(out))
        return out


def build(width=32):
    """A small graph with an activation we can watch: returns (loss, refs, leaves)."""
    torch.manual_seed(0)
    x = torch.randn(8, width, requires_grad=True)
    w = torch.randn(width, width, requires_grad=True)
    marker = Marker()
    h = (x @ w).tanh()  # saved by TanhBackward0 (its result) and by the MulBackward below
    out = KeepOnCtx.apply(h * h, marker)
    loss = out.sum()
    refs = {
        "marker": weakref.ref(marker),
        "activation": weakref.ref(h),
        "root": weakref.ref(loss),
    }
    return loss, refs, [x, w]


def alive(refs):
    gc.collect()
    return sorted(k for k, r in refs.items() if r() is not None)


def tensors_in(obj, depth=0) -> int:
    """Count torch.Tensors reachable through plain containers (dict/list/tuple)."""
    if isinstance(obj, torch.Tensor):
        return 1
    if depth > 8:
        return 0
    if isinstance(obj, dict):
        return sum(tensors_in(v, depth + 1) for v in obj.values())
    if isinstance(obj, list | tuple):
        return sum(tensors_in(v, depth + 1) for v in obj)
    return 0


# --------------------------------------------------------------------------- widget lifetime
@pytest.mark.parametrize("keep", ["summaries", "tensors", 1 << 20])
def test_close_and_del_release_the_graph(keep):
    loss, refs, leaves = build()
    w = aw.explore(loss, keep=keep)
    w.stepper.run()
    w.stepper.back()
    w.stepper.grad(leaves[1])
    assert w.stepper.compare_with_engine() == []
    del loss
    assert alive(refs) == ["activation", "marker", "root"], "the widget holds the graph"
    w.close()
    del w
    assert alive(refs) == []
    assert all(t.grad is None for t in leaves)


def test_a_failed_step_does_not_pin_the_graph_after_close():
    loss, refs, _ = build()
    refs["activation"]().add_(1.0)  # TanhBackward0's saved result is now stale
    w = aw.explore(loss)
    w.stepper.run()
    assert w.stepper.failure is not None  # the failure record holds the slot tensors
    del loss
    w.close()
    del w
    assert alive(refs) == []


def test_release_drops_every_torch_reference_and_keeps_the_drawing():
    loss, refs, leaves = build()
    w = aw.explore(loss, keep="tensors")
    out_cells = [w]  # the notebook's Out[n] keeps the widget alive
    w.stepper.run()
    kept = next(
        w.stepper.edge_grad(e.id)
        for e in w.graph.edges
        if w.stepper.edge_grad(e.id) is not None and e.dst not in w.graph.leaves
    )
    refs["kept gradient"] = weakref.ref(kept)
    refs["leaf gradient"] = weakref.ref(w.stepper.grad(leaves[1]))
    del kept, loss
    drawing = w._graph
    state_before = w._state
    assert alive(refs) == ["activation", "kept gradient", "leaf gradient", "marker", "root"]
    w.release()
    assert alive(refs) == [], "released: nothing torch is pinned by a widget kept in Out[n]"
    assert out_cells[0] is w and w._graph is drawing  # the drawing stays, untouched
    assert w._state["position"] == state_before["position"]
    assert tensors_in(w._graph) == 0 and tensors_in(w._state) == 0
    assert not w.graph.is_live
    w.release()  # idempotent
    w.close()


def test_release_then_messages_and_inspection_stay_safe():
    loss, refs, _ = build()
    w = aw.explore(loss)
    w.stepper.step()
    sent: list = []
    w.send = lambda content, buffers=None: sent.append(content)
    w.release()
    for msg in ({"type": "step"}, {"type": "run", "chunk_ms": 50}, {"type": "reset"}):
        w._handle_message(w, msg, [])
    assert [m["type"] for m in sent] == ["warning"] * 3
    w._handle_message(w, {"type": "select", "node": 0}, [])
    w._handle_message(w, {"type": "inspect", "request": 1, "node": 0}, [])
    assert sent[-1]["type"] == "reply" and sent[-1]["data"]["id"] == w.graph.roots[0][0]
    del loss
    assert alive(refs) == []
    w.close()


# --------------------------------------------------------------------------- hooks
def _node_hook_counts(fns) -> list[tuple[int, int]]:
    """Per node: (pre-hooks, post-hooks) registered besides a probe we add and remove."""
    counts = []
    for fn in fns:
        pre = fn.register_prehook(lambda grads: None)
        post = fn.register_hook(lambda gi, go: None)
        try:
            counts.append((len(pre.hooks_dict_ref()) - 1, len(post.hooks_dict_ref()) - 1))
        finally:
            pre.remove()
            post.remove()
    return counts


def _module_hooks(model: torch.nn.Module) -> int:
    n = 0
    for m in model.modules():
        for d in (
            m._forward_hooks,
            m._forward_pre_hooks,
            m._backward_hooks,
            m._backward_pre_hooks,
            m._forward_hooks_with_kwargs,
            m._forward_hooks_always_called,
            m._forward_pre_hooks_with_kwargs,
        ):
            n += len(d)
    return n


def _global_module_hooks() -> int:
    return sum(
        len(getattr(module_hooks, name))
        for name in (
            "_global_forward_hooks",
            "_global_forward_pre_hooks",
            "_global_backward_hooks",
            "_global_backward_pre_hooks",
        )
    )


def test_no_hook_is_left_anywhere():
    torch.manual_seed(0)
    model = make_mlp((4, 8, 8, 3))
    x = torch.randn(5, 4, requires_grad=True)
    globals_before = _global_module_hooks()
    with aw.track(model):
        h = model(x)
    out = Spy.apply(h)
    loss = out.pow(2).mean()
    h.retain_grad()
    tensors = [x, h, out, loss, *model.parameters()]
    probe_graph = aw.capture(loss)  # kept alive: its node list is what the hook counts read
    fns = list(probe_graph.require_live("count hooks").fns)
    assert _module_hooks(model) == 0 and _global_module_hooks() == globals_before

    w = aw.explore(loss, model=model, keep=256)
    s = w.stepper
    s.break_at(lambda n: n.name == "AddmmBackward0")
    s.run()
    s.run()
    s.back()
    s.run()
    s.grad(h)
    s.first_nonfinite()
    assert s.compare_with_engine(tensors=[h]) == []
    assert _node_hook_counts(fns) == [(0, 0)] * len(fns)
    w.stepper.reset()
    w.release()
    w.close()

    # the engine path that raises must also remove its hooks
    h2 = model[0](x).relu()
    loss2 = (h2 * h2).sum()
    g2 = aw.capture(loss2)
    with torch.no_grad():
        h2.add_(1.0)
    s2 = Stepper(g2)
    with pytest.raises(RuntimeError, match="inplace operation"):
        s2.compare_with_engine()
    assert _node_hook_counts(g2._live.fns) == [(0, 0)] * len(g2._live.fns)

    for t in tensors:
        assert not t._backward_hooks, "a tensor hook was left behind"
        assert not getattr(t, "_post_accumulate_grad_hooks", None)
    assert h.retains_grad and h.grad is None
    assert all(t.grad is None for t in tensors if t.is_leaf)
    assert _module_hooks(model) == 0 and _global_module_hooks() == globals_before
    # No saved_tensors_hooks left pushed: a value saved now is plain, so reading it runs no
    # Python (compat's guard would raise UnpackRefused at a hook's first frame). Any torch.
    probe = torch.ones(2, requires_grad=True).exp()
    compat.guarded_getattr(probe.grad_fn, "_saved_result")


def test_track_removes_its_hooks_when_the_forward_raises():
    model = make_mlp((4, 8, 3))
    with pytest.raises(RuntimeError), aw.track(model):
        model(torch.randn(5, 7))  # wrong width
    assert _module_hooks(model) == 0


# --------------------------------------------------------------------------- memory budget
def _kept_edge_bytes(s: Stepper) -> int:
    total = 0
    for e in s.graph.edges:
        g = s.edge_grad(e.id)
        if g is not None:
            total += g.nbytes
    return total


def test_a_budget_smaller_than_one_gradient_keeps_no_edge_tensor():
    torch.manual_seed(0)
    model = make_mlp((16, 32, 32, 4))
    x = torch.randn(8, 16, requires_grad=True)
    loss = model(x).pow(2).mean()
    params = [x, *model.parameters()]
    want = torch.autograd.grad(loss, params, retain_graph=True)
    smallest = min(
        math_numel(m.shape) * 4
        for n in aw.capture(loss).nodes.values()
        for m in n.inputs
        if math_numel(m.shape) > 0
    )
    g = aw.capture(loss, model=model)
    s = Stepper(g, keep=smallest - 1)
    s.run()
    assert [e.id for e in g.edges if s.edge_grad(e.id) is not None] == [], "summaries only"
    assert all(s.edge_summary(e.id) is not None for e in g.edges)
    for p, w in zip(params, want):
        torch.testing.assert_close(s.grad(p), w, rtol=0, atol=0)
    for _ in range(3):  # back() replays (nothing logged) and stays exact
        s.back()
    assert s.position == len(s.order) - 3
    s.run()
    for p, w in zip(params, want):
        torch.testing.assert_close(s.grad(p), w, rtol=0, atol=0)
    assert _kept_edge_bytes(s) == 0


def math_numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


@pytest.mark.parametrize("budget", [0, 2_000, 20_000, 200_000])
def test_kept_tensors_stay_within_the_budget(budget):
    torch.manual_seed(0)
    model = make_mlp((16, 64, 64, 4))
    x = torch.randn(32, 16, requires_grad=True)
    loss = model(x).pow(2).mean()
    g = aw.capture(loss)
    s = Stepper(g, keep=budget)
    s.run()
    assert _kept_edge_bytes(s) <= budget
    full = Stepper(g, keep="tensors")
    full.run()
    if budget >= _kept_edge_bytes(full):
        assert _kept_edge_bytes(s) == _kept_edge_bytes(full)
    for p in [x, *model.parameters()]:
        torch.testing.assert_close(s.grad(p), full.grad(p), rtol=0, atol=0)


@pytest.mark.parametrize(("keep", "freed"), [("summaries", True), (0, True), ("tensors", False)])
def test_gradients_not_kept_are_really_freed(keep, freed):
    SEEN.clear()
    x = torch.randn(64, 64, requires_grad=True)
    h = x
    for _ in range(6):
        h = Spy.apply(h.tanh())
    loss = h.sum()
    s = Stepper(aw.capture(loss), keep=keep)
    s.run()
    gc.collect()
    assert len(SEEN) == 6
    dead = [r() is None for r in SEEN]
    assert all(dead) if freed else not any(dead)
    torch.testing.assert_close(s.grad(x), torch.autograd.grad(loss, x)[0], rtol=0, atol=0)


# --------------------------------------------------------------------------- two widgets
def test_two_widgets_on_one_graph_are_independent():
    loss, refs, leaves = build()
    want = torch.autograd.grad(loss, leaves, retain_graph=True)
    g = aw.capture(loss)
    w1, w2 = aw.AutogradWidget(g), aw.AutogradWidget(g, keep="tensors")
    assert w1.graph is w2.graph and w1.stepper is not w2.stepper
    w1.stepper.run()
    assert w1._state["done"] and w2.stepper.position == 0 and w2._state["position"] == 0
    w2.stepper.step()
    w2.stepper.step()
    w1.stepper.back()
    assert w2.stepper.position == 2 and w1.stepper.position == len(w1.stepper.order) - 1
    w2.stepper.run()
    w1.stepper.run()
    for s in (w1.stepper, w2.stepper):
        for t, e in zip(leaves, want):
            torch.testing.assert_close(s.grad(t), e, rtol=0, atol=0)
    w1.close()
    w2.close()
    del loss, g, w1, w2
    assert alive(refs) == []


def test_closing_one_widget_leaves_the_other_working():
    loss, _refs, leaves = build()
    want = torch.autograd.grad(loss, leaves, retain_graph=True)
    g = aw.capture(loss)
    w1, w2 = aw.AutogradWidget(g), aw.AutogradWidget(g)
    w1.close()
    w2.stepper.run()
    for t, e in zip(leaves, want):
        torch.testing.assert_close(w2.stepper.grad(t), e, rtol=0, atol=0)
    w2.close()


def test_one_widget_shown_twice_is_one_state():
    loss, _refs, _ = build()
    w = aw.explore(loss)
    first, second = w._repr_mimebundle_(), w._repr_mimebundle_()  # two output cells
    key = "application/vnd.jupyter.widget-view+json"
    assert first[0][key]["model_id"] == second[0][key]["model_id"] == w.model_id
    # Both views send to the one model: their messages drive the one stepper, in order.
    w._handle_message(w, {"type": "step"}, [])  # from view 1
    w._handle_message(w, {"type": "step"}, [])  # from view 2
    assert w.stepper.position == 2 and w._state["position"] == 2
    w._handle_message(w, {"type": "back"}, [])
    assert w.stepper.position == 1 and w._state["position"] == 1
    w.close()
