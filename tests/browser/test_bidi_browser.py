"""A right-to-left override in a user's name reverses nothing after it (issue 29), measured where
the browser lays the text out: in the standalone page of a graph whose custom Function's class
name holds U+202E, the status line's "(step 1 / N)" after that name still reads left to right,
and the elements that show names are isolated (`unicode-bidi: isolate`, `<bdi>` in the header).
A control without the isolation shows the measurement does see a reversal."""

from __future__ import annotations

import pytest
import torch
from playwright.sync_api import expect

import autograd_widget as aw

from .drawtools import open_offline

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RLO = "\u202e"

#: x positions of the three characters "(st" of the first "(step" in a text node under `el`.
POSITIONS = """el => {
  const walker = el.ownerDocument.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const i = node.data.indexOf('(step');
    if (i < 0) continue;
    const x = (k) => {
      const r = el.ownerDocument.createRange();
      r.setStart(node, k); r.setEnd(node, k + 1);
      return r.getBoundingClientRect().left;
    };
    return [x(i), x(i + 1), x(i + 2)];
  }
  return null;
}"""


def _evil_loss():
    def forward(ctx, t):
        return t.sum() * 2

    def backward(ctx, g):
        return g * 2 * torch.ones(3)

    evil = type(f"Ev{RLO}il", (torch.autograd.Function,),
                {"forward": staticmethod(forward), "backward": staticmethod(backward)})
    w = torch.randn(3, requires_grad=True)
    return evil.apply(w), w


def test_an_override_in_a_name_reverses_nothing_after_it(browser, tmp_path):
    loss, w = _evil_loss()
    widget = aw.explore(loss, params={f"we{RLO}ight": w})
    path = widget.save_html(tmp_path / "evil.html", title=f"run {RLO}1 (ours)")
    widget.close()
    ctx, page, requests, errors = open_offline(browser, path)
    try:
        root = page.locator(".agw-root")
        status = root.locator(".agw-status-text")
        expect(status).to_contain_text("step 0 /", timeout=15000)
        root.get_by_role("button", name="Step", exact=True).click()
        expect(status).to_contain_text("(step 1 /")
        xs = status.evaluate(POSITIONS)
        assert xs is not None and xs[0] < xs[1] < xs[2], f"'(st' laid out reversed: {xs}"
        # the control: the same text without isolation IS reversed by the override
        page.evaluate("""() => {
          const d = document.createElement('div');
          d.id = 'control';
          d.textContent = 'ran Ev\\u202eilBackward (step 1 / 3)';
          document.body.append(d);
        }""")
        xs_raw = page.locator("#control").evaluate(POSITIONS)
        assert xs_raw is not None and xs_raw[0] > xs_raw[1] > xs_raw[2], xs_raw
        styles = page.evaluate("""() => [
          getComputedStyle(document.querySelector('.agw-root .agw-status-text')).unicodeBidi,
          getComputedStyle(document.querySelector('header h1 bdi')).unicodeBidi,
        ]""")
        assert styles == ["isolate", "isolate"]
        assert not requests and not errors, (requests, errors)
    finally:
        ctx.close()
