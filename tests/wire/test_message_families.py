"""The protocol's handlers live by family (issue 37), behind ONE table: every `Handler` a family
module exports is named in `protocol.MESSAGES` exactly once, and the table holds nothing else.
"""

from __future__ import annotations

from autograd_widget.wire import (
    drawmessages,
    editmessages,
    inspectmessages,
    protocol,
    rankswitch,
    stepmessages,
    watchmessages,
)
from autograd_widget.wire.message import Handler

FAMILIES = (stepmessages, drawmessages, inspectmessages, editmessages, watchmessages, rankswitch)


def _exported_handlers():
    out = []
    for module in FAMILIES:
        for name in module.__all__:
            value = getattr(module, name)
            if isinstance(value, Handler):
                out.append((f"{module.__name__}.{name}", value))
    return out


def test_every_family_handler_is_in_the_one_table_once_and_nothing_else_is():
    table = {(m.validate, m.handle): name for name, m in protocol.MESSAGES.items()}
    assert len(table) == len(protocol.MESSAGES), "two names share one handler"
    exported = _exported_handlers()
    named = {}
    for where, h in exported:
        key = (h.validate, h.handle)
        assert key in table, f"{where} is named nowhere in protocol.MESSAGES"
        assert key not in named, f"{where} and {named[key]} are the same handler"
        named[key] = where
    assert set(named) == set(table), "the table holds a handler no family exports"


def test_the_table_keeps_each_handlers_reply_shape_and_release_rule():
    by_handle = {(h.validate, h.handle): h for _, h in _exported_handlers()}
    for name, m in protocol.MESSAGES.items():
        h = by_handle[(m.validate, m.handle)]
        assert (m.name, m.reply, m.after_release) == (name, h.reply, h.after_release)


def test_the_families_are_the_issues_five_plus_the_rank_switch():
    # stepping, drawing, inspection, editing, a watch: each message in the family it belongs to
    families = {
        "stepping": {"step", "back", "reset", "run_to", "run", "pause", "first_nonfinite"},
        "drawing": {"expand", "collapse", "plumbing", "viewport", "fold_level"},
        "inspection": {"select", "select_edge", "inspect", "search", "memory", "saved_values",
                       "probe"},
        "editing": {"edit_edge", "leaf_diff"},
        "watch": {"watch_step", "timeline_rows", "timeline_range", "gain"},
        "ranks": {"select_rank"},
    }
    modules = dict(zip(families, FAMILIES, strict=True))
    for family, names in families.items():
        handlers = {(h.validate, h.handle) for n in modules[family].__all__
                    if isinstance(h := getattr(modules[family], n), Handler)}
        got = {name for name, m in protocol.MESSAGES.items() if (m.validate, m.handle) in handlers}
        assert got == names, family
    assert set().union(*families.values()) == set(protocol.MESSAGES)
