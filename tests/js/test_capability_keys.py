"""The graph payload's `capabilities` keys agree on both sides (issue 37): js/src/protocol.js
`CAPABILITIES` (read by js/src/model.js `decodeCapabilities`) lists exactly the keys
wire/session.py sends (`CAPABILITY_KEYS`, one per `engine.interface.Capabilities` field), so a
capability added on one side and not the other fails here instead of reading as its fallback.
The JS module is read as text (no node needed).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from autograd_widget.engine.interface import Capabilities
from autograd_widget.wire.session import CAPABILITY_KEYS

PROTOCOL_JS = Path(__file__).resolve().parents[2] / "js" / "src" / "protocol.js"


def _js_capabilities() -> list[str]:
    text = PROTOCOL_JS.read_text(encoding="utf-8")
    m = re.search(r"export const CAPABILITIES = Object\.freeze\(\[(.*?)\]\);", text, re.S)
    assert m, "protocol.js has no `export const CAPABILITIES = Object.freeze([...]);`"
    return re.findall(r"'([^']*)'", m.group(1))


def test_js_capabilities_are_the_wire_keys_in_order():
    assert _js_capabilities() == list(CAPABILITY_KEYS)


def test_wire_keys_are_the_interface_fields():
    assert list(CAPABILITY_KEYS) == [f.name for f in dataclasses.fields(Capabilities)]


def test_the_js_capability_typedef_names_each_key():
    text = PROTOCOL_JS.read_text(encoding="utf-8")
    m = re.search(r"@typedef \{([^}]*)\} Capability\b", text)
    assert m, "protocol.js has no `Capability` typedef"
    assert sorted(re.findall(r"'([^']*)'", m.group(1))) == sorted(CAPABILITY_KEYS)
