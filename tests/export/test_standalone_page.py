"""The standalone page (its walkthrough): the replies its offline modes need are walked
through the protocol (what the live widget would answer), and the page shows a header."""

from __future__ import annotations

import json
import re

import torch
from torch import nn

import autograd_widget as aw
from autograd_widget.__main__ import main
from autograd_widget.export import html as export
from autograd_widget.util.jsonsafe import encode
from autograd_widget.view.scene import Scene
from autograd_widget.wire.protocol import dispatch
from autograd_widget.wire.session import Session


def ask(session, msg):
    (out,) = dispatch(session, {**msg, "request": 1})
    assert out["type"] == "reply", out
    return json.loads(json.dumps(encode(out["data"])))


def z_widget():
    x = torch.tensor(2.0, requires_grad=True)
    y = torch.tensor(3.0, requires_grad=True)
    return aw.explore(x**2 + y, params={"x": x, "y": y})


def nan_widget(collapse="none"):
    """sqrt at 0 inside module "1" of a tracked model: an Inf is born in SqrtBackward0."""

    class Root(nn.Module):
        def forward(self, h):
            return (h - h).sqrt()

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), Root())
    with aw.track(model):
        out = model(torch.randn(5, 3))
    return aw.explore(out.sum(), model=model, collapse=collapse)


def test_colour_modes_are_the_protocols_replies_at_step_0():
    w = nan_widget()
    walk = json.loads(json.dumps(export.walkthrough(w)))
    assert walk["format"] == "autograd_widget.walkthrough/3"
    st = aw.Stepper(w.graph)
    session = Session(w.graph, st, Scene(w.graph, st, collapsed=w.collapsed, folds=w.folds))
    assert walk["modes"]["memory"]["false"] == ask(session, {"type": "memory"})
    assert walk["modes"]["memory"]["true"] == ask(
        session, {"type": "memory", "exclude_leaves": True}
    )
    assert walk["modes"]["memory"]["false"]["total"] > 0
    probe = ask(session, {"type": "probe", "samples": export.PROBE_SAMPLES, "seed": 0})
    assert walk["modes"]["probe"] == probe
    assert len(probe["items"]) == len(walk["inspect"]["nodes"])  # one per drawn item
    st.close()
    w.close()


def test_first_nonfinite_is_walked_where_the_live_search_stops():
    w = nan_widget()
    walk = export.walkthrough(w)
    f = walk["first_nonfinite"]
    # the live widget's own search, from step 0
    live = aw.explore(w.graph)
    (out,) = dispatch(live._session, {"type": "first_nonfinite", "chunk_ms": 1000, "request": 1})
    assert f["step"] == live.stepper.position
    assert f["reply"]["sentence"] == out["data"]["sentence"]
    assert "born in SqrtBackward0" in f["reply"]["sentence"]
    src = f["reply"]["id"].split(":")[0]
    assert f["select"] == src and w.graph.nodes[src].name == "SqrtBackward0"
    # `edge` indexes the drawn edges (nothing was folded, so the live reply's index is the same)
    assert f["reply"]["edge"] == out["data"]["edge"]
    assert f["seek"] is None
    live.close()
    w.close()


def test_first_nonfinite_inside_a_folded_module_says_so():
    w = nan_widget(collapse="modules")
    f = export.walkthrough(w)["first_nonfinite"]
    assert f["reply"]["edge"] is None and f["select"] is None
    assert "folded module" in f["reply"]["message"]
    w.close()


def test_first_nonfinite_with_none_and_with_a_failure():
    w = z_widget()
    f = export.walkthrough(w)["first_nonfinite"]
    assert f["step"] is None
    assert f["reply"]["message"] == "no NaN/Inf gradient so far"
    assert f["seek"]["message"] == "no NaN/Inf gradient in the whole backward"
    w.close()
    x = torch.randn(3, requires_grad=True)
    y = (x * 2).exp()
    y.add_(1)
    w = aw.explore(y.sum())
    walk = export.walkthrough(w)
    f = walk["first_nonfinite"]
    assert walk["failed"] is not None and f["step"] is None
    assert f["seek"]["message"] == "stopped looking: ExpBackward0 failed before any NaN/Inf"
    # Sum, Add, then the failing Exp: the search asked afterwards adds no step
    assert len(walk["steps"]) == 3 and walk["steps"][-1]["scalars"]["error"] is not None
    w.close()


def test_the_walkthrough_of_a_replayed_engine_run_has_no_colour_modes():
    a = torch.tensor([0.0, 1.0], requires_grad=True)
    loss = a.sqrt().sum()
    with aw.record(loss) as r:
        loss.backward()
    w = aw.explore(r)
    walk = export.walkthrough(w)
    assert walk["modes"] is None
    assert "born in SqrtBackward0" in walk["first_nonfinite"]["reply"]["sentence"]
    w.close()


def test_the_page_has_a_header_with_escaped_text(tmp_path):
    w = z_widget()
    path = w.save_html(tmp_path / "z.html", title="z <is> x² + y", description="a & <b>\nb")
    text = path.read_text(encoding="utf-8")
    assert "<title>z &lt;is&gt; x² + y</title>" in text
    assert "<h1>z &lt;is&gt; x² + y</h1>" in text
    assert '<p class="agw-page-desc">a &amp; &lt;b&gt;\nb</p>' in text
    assert "? for all keys" not in text and "<kbd>?</kbd> for all keys" in text
    assert "{ fill: true }" in text
    # the old call forms still work; no description, no paragraph; the default title
    page = export.save_html(w, tmp_path / "plain.html").read_text(encoding="utf-8")
    assert 'class="agw-page-desc"' not in page
    assert re.search(r"<h1>autograd_widget — backward of AddBackward0 \(4 nodes\)</h1>", page)
    w.close()


def test_cli_title_and_description(tmp_path, capsys):
    out = tmp_path / "demo.html"
    assert main(["demo", "--html", str(out), "--title", "My course: backprop"]) == 0
    text = out.read_text(encoding="utf-8")
    assert "<h1>My course: backprop</h1>" in text
    assert "The tour&#x27;s model" in text or "The tour's model" in text
    assert main(["demo", "--html", str(out), "--description", "Only this."]) == 0
    assert '<p class="agw-page-desc">Only this.</p>' in out.read_text(encoding="utf-8")
    assert "wrote" in capsys.readouterr().out
