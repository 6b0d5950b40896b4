"""The three mistakes a new user makes first, each answered where it is made.

1. A leaf passed where the output was meant (`aw.explore(x)` instead of `aw.explore(loss)`):
   a `ValueError` that says it is a leaf and what to pass. A scalar leaf too: its graph would be
   one `AccumulateGrad` node with nothing to step (the gradient of x w.r.t. x is the seed
   itself), so a silent one-node widget helps no one; a leaf BESIDE a real output stays an
   output, as in `torch.autograd.grad` (tests/test_bad_inputs.py).
2. A graph that `backward()` already freed: a `UserWarning` at the user's own line with the
   reason and both fixes; the widget's state carries the same sentence as its `notice` (the
   front-end shows it and describes Step by it before any click: js/tests/view.test.js), and
   the standalone page carries it too. The check unpacks nothing.
3. `model=` a module none of whose parameters is in the graph: a warning naming its class and
   the leaves found instead; the model is then ignored (no wrong class name on the graph).
"""

from __future__ import annotations

import json
import re
import warnings

import pytest
import torch

import autograd_widget as aw


def _no_warnings():
    return warnings.catch_warnings(record=True)


# --------------------------------------------------------------------------- 1. a leaf
@pytest.mark.parametrize("leaf", [
    torch.randn(3, requires_grad=True),
    torch.tensor(2.0, requires_grad=True),  # a scalar leaf: no silent one-node graph either
    torch.nn.Parameter(torch.randn(2, 2)),
], ids=["vector", "scalar", "parameter"])
@pytest.mark.parametrize("call", [aw.explore, aw.capture, aw.record])
def test_a_leaf_says_it_is_a_leaf_and_what_to_pass(leaf, call):
    with pytest.raises(ValueError) as err:
        call(leaf)
    msg = str(err.value)
    assert msg.startswith("the output is a leaf tensor")
    assert f"shape {list(leaf.shape)}" in msg
    assert "nothing to step" in msg and "aw.explore(loss)" in msg
    # not the misleading cause it had before (the implicit-gradient rule of a non-scalar)
    assert "implicitly" not in msg and "grad_outputs" not in msg


def test_only_leaves_in_a_list_are_refused_a_leaf_beside_an_output_is_kept():
    a, b = torch.randn(2, requires_grad=True), torch.randn(2, requires_grad=True)
    with pytest.raises(ValueError, match="every output is a leaf tensor"):
        aw.capture([a, b], [torch.ones(2), torch.ones(2)])
    g = aw.capture([(a * b).sum(), a], [None, torch.ones(2)])
    assert len(g.leaves) == 2


def test_a_non_scalar_output_names_the_function_the_user_called():
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"aw\.explore\(\) / aw\.capture\(\)") as err:
        aw.explore(x * 2)
    assert "output.sum()" in str(err.value)


# --------------------------------------------------------------------------- 2. freed
def _freed_loss() -> torch.Tensor:
    x = torch.randn(3, requires_grad=True)
    loss = x.exp().sum()
    loss.backward()
    return loss


@pytest.mark.parametrize("call", [aw.capture, aw.explore])
def test_a_freed_graph_warns_at_the_users_line_with_the_reason_and_the_fixes(call):
    loss = _freed_loss()
    with pytest.warns(UserWarning) as caught:
        made = call(loss)
    (w,) = [c for c in caught if "freed" in str(c.message)]  # once, not once per layer
    msg = str(w.message)
    assert "already freed by backward()" in msg and "saved tensors are gone" in msg
    assert "Recompute the forward pass" in msg and "backward(retain_graph=True)" in msg
    assert w.filename == __file__  # the user's line, not the package's
    if isinstance(made, aw.AutogradWidget):
        made.close()


def test_the_widget_carries_the_notice_before_any_step_and_the_page_shows_it(tmp_path):
    loss = _freed_loss()
    with pytest.warns(UserWarning, match="freed"):
        w = aw.explore(loss)
    assert w.stepper.position == 0 and w._state["error"] is None  # nobody clicked yet
    notice = w._state["notice"]
    assert notice.startswith("This graph was already freed by backward()")
    assert "retain_graph=True" in notice
    path = w.save_html(tmp_path / "freed.html")
    found = re.search(r'id="autograd-widget-walkthrough">(.*?)</script>', path.read_text(), re.S)
    walk = json.loads(found.group(1))
    assert walk["state"]["notice"] == notice
    assert walk["failed"]["node"] == w.stepper.order[1]  # ExpBackward0: Sum saved no tensor
    w.stepper.run()
    assert "Trying to backward through the graph a second time" in w.status
    w.close()


def test_no_freed_warning_for_live_retained_or_optional_none_graphs():
    x = torch.randn(2, 4, requires_grad=True)
    ln = torch.nn.functional.layer_norm(x, (4,)).sum()  # saves an undefined weight and bias
    retained = x.exp().sum()
    retained.backward(retain_graph=True)
    with _no_warnings() as caught:
        warnings.simplefilter("always")
        for out in (ln, retained):
            aw.capture(out)
    assert not caught, [str(c.message) for c in caught]


def test_the_freed_check_unpacks_nothing():
    unpacked = []

    def unpack(t):
        unpacked.append(1)
        return t

    x = torch.randn(3, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, unpack):
        q = (x.sin() * x).sum()
    with _no_warnings() as caught:
        warnings.simplefilter("always")
        aw.capture(q)
    assert unpacked == [] and not caught


# --------------------------------------------------------------------------- 3. model=
def test_a_model_not_in_the_graph_is_named_with_what_was_found_instead():
    used = torch.nn.Linear(3, 1)
    unused = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU())
    x = torch.randn(4, 3, requires_grad=True)
    with aw.track(used):
        loss = used(x).sum()
    with pytest.warns(UserWarning) as caught:
        g = aw.capture(loss, model=unused)
    (w,) = caught
    msg = str(w.message)
    assert msg.startswith("model=Sequential names nothing in this graph")
    assert "none of its 2 parameters is a leaf of it" in msg
    assert "its 3 leaves are" in msg and "input" in msg  # what was found instead
    assert "tracked in a Linear" in msg  # the model that did make it
    assert "params={name: tensor}" in msg and "ignored" in msg
    assert w.filename == __file__
    # ignored: the graph is not labelled with the wrong class, nor its module classes
    assert g.model_name is None and g.module_classes == {"": "Linear"}


def test_a_model_whose_parameters_a_custom_function_may_hide_gives_no_warning():
    from torch.utils.checkpoint import checkpoint

    lin = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4, requires_grad=True)
    loss = checkpoint(lambda a: lin(a).tanh(), x, use_reentrant=True).sum()
    with _no_warnings() as caught:
        warnings.simplefilter("always")
        g = aw.capture(loss, model=lin)  # the reentrant checkpoint holds lin's parameters
    assert not caught and g.model_name == "Linear"


def test_the_right_model_or_a_parameterless_one_gives_no_warning():
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Tanh())
    x = torch.randn(4, 3)
    with aw.track(model):
        loss = model(x).sum()
    act = torch.nn.Tanh()
    with aw.track(act):
        y = act(torch.randn(3, requires_grad=True)).sum()
    with _no_warnings() as caught:
        warnings.simplefilter("always")
        g = aw.capture(loss, model=model)
        h = aw.capture(y, model=act)  # no parameters to match: its class still names modules
    assert not caught, [str(c.message) for c in caught]
    assert g.model_name == "Sequential" and h.model_name == "Tanh"
    assert sorted(g.nodes[i].leaf_name for i in g.leaves) == ["0.bias", "0.weight"]


def test_explore_with_the_wrong_model_warns_once_and_titles_nothing_wrong():
    used, unused = torch.nn.Linear(2, 1), torch.nn.Linear(2, 1)
    loss = used(torch.randn(3, 2)).sum()
    with pytest.warns(UserWarning, match="model=Linear names nothing") as caught:
        w = aw.explore(loss, model=unused)
    assert len(caught) == 1
    assert w.graph.model_name is None
    w.close()
