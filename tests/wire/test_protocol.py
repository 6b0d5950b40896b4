"""The widget protocol has ONE table per side: wire/protocol.py and js/src/protocol.js agree.

The JS module is read as text (no node needed): the values of `MSG`, `REPLY` and `TRAIT`, the
string lists `STATE_KEYS`, `STATE_ARRAYS` and `STEP_SCALARS`, and the standalone page's
`WALKTHROUGH_FORMAT`. The front-end spells a trait name only through `TRAIT`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autograd_widget.wire import protocol

JS_SRC = Path(__file__).resolve().parents[2] / "js" / "src"
PROTOCOL_JS = JS_SRC / "protocol.js"


def js_block(name: str) -> str:
    """The frozen object or array `name` of protocol.js, its comments left out."""
    text = PROTOCOL_JS.read_text(encoding="utf-8")
    m = re.search(rf"export const {name} = Object\.freeze\(([\[{{].*?[\]}}])\);", text, re.S)
    assert m, f"protocol.js has no `export const {name} = Object.freeze(...)`"
    return re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)


def js_string(name: str) -> str:
    """The string constant `name` of protocol.js (`export const NAME = '...';`)."""
    text = PROTOCOL_JS.read_text(encoding="utf-8")
    m = re.search(rf"export const {name} = '([^']*)';", text)
    assert m, f"protocol.js has no `export const {name} = '...';`"
    return m.group(1)


def js_values(name: str) -> list[str]:
    """The string values of an object (`KEY: 'value'`) or the items of an array."""
    block = js_block(name)
    if block.startswith("{"):
        return re.findall(r"\w+\s*:\s*'([^']*)'", block)
    return re.findall(r"'([^']*)'", block)


def test_message_names_agree():
    assert sorted(js_values("MSG")) == sorted(protocol.MESSAGES)


def test_host_messages_agree():
    assert js_values("HOST") == list(protocol.HOST_MESSAGES)
    assert not set(protocol.HOST_MESSAGES) & set(protocol.MESSAGES)


def test_reply_types_agree():
    assert sorted(js_values("REPLY")) == sorted(protocol.REPLY_TYPES)


@pytest.mark.parametrize("name", ["STATE_KEYS", "STATE_ARRAYS", "STEP_SCALARS"])
def test_state_keys_agree(name):
    assert js_values(name) == list(getattr(protocol, name))


def test_trait_names_agree():
    assert js_values("TRAIT") == list(protocol.TRAITS)


def test_traits_are_the_widgets_synced_traits():
    import anywidget

    from autograd_widget.widget import AutogradWidget

    base = set(anywidget.AnyWidget.class_traits(sync=True))
    own = set(AutogradWidget.class_traits(sync=True)) - base
    assert own == set(protocol.TRAITS)


def test_js_spells_trait_names_only_through_the_table():
    """`model.get('selected')` anywhere but protocol.js would be a second place for the name."""
    spelled = re.compile(r"""\.(?:get|set)\(\s*['"`]|['"`]change:""")
    for path in sorted(JS_SRC.glob("*.js")):
        if path.name == "protocol.js":
            continue
        hits = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()
                if spelled.search(line) and "model." in line]
        assert not hits, f"{path.name} spells a trait name: {hits[:3]}; use protocol.js TRAIT"


def test_walkthrough_format_agrees():
    assert js_string("WALKTHROUGH_FORMAT") == protocol.WALKTHROUGH_FORMAT
    from autograd_widget.export import html

    assert html.WALKTHROUGH_FORMAT is protocol.WALKTHROUGH_FORMAT


def test_state_keys_are_what_the_widget_syncs():
    import torch

    import autograd_widget as aw

    x = torch.tensor(2.0, requires_grad=True)
    w = aw.explore(x * 3, params={"x": x})
    assert set(w._state) == set(protocol.STATE_KEYS)
    assert set(protocol.STATE_ARRAYS) <= set(protocol.STATE_KEYS)
    assert set(protocol.STEP_SCALARS) <= set(protocol.STATE_KEYS)
    w.close()


def test_every_message_has_a_table_entry_with_a_known_reply_shape():
    for name, spec in protocol.MESSAGES.items():
        assert spec.name == name and spec.reply in ("reply", "none")
