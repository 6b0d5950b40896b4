"""The inspection family of front-end messages: what the user selects and reads, never moving
the stepper.

Each message is one `Handler` (message.py) that protocol.py's one table names: "select",
"select_edge" (the selection, both ways with the widget's `selected` / `selected_edge` traits),
"inspect" (the inspector's data for a node, an edge or a box), "search", "memory" (saved bytes
per item), "saved_values" (a node's saved tensor, live graphs only) and "probe" (Jacobian norm
estimates, live graphs only). The data comes from view/inspect.py; this module only checks the
message and routes it.

Guarantees: "select" and "inspect" are still answered after the session is released (the
inspector then reads the records only, `Session.live_stepper`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..view import inspect
from .message import Handler, Invalid, is_int, node_arg, request_id, visible_edge
from .quoting import quote

if TYPE_CHECKING:
    from .session import Session

__all__ = ["INSPECT", "MEMORY", "PROBE", "SAVED_VALUES", "SEARCH", "SELECT", "SELECT_EDGE"]


# ----------------------------------------------------------------------------- selection
def _v_select(s: Session, msg: dict[str, Any]) -> tuple[bool, str | None]:
    """(reveal first, node id or None)."""
    if "id" in msg:  # a real node id, e.g. from search: reveal it first
        nid = msg.get("id")
        if not isinstance(nid, str) or nid not in s.scene.graph.nodes:
            raise Invalid(f"select: no node {quote(nid)}")
        return True, nid
    if msg.get("node") is None:
        return False, None
    node = node_arg(s, msg)
    if node is None:
        raise Invalid("select needs a node index (not a module box) or null")
    return False, node


def _v_select_edge(s: Session, msg: dict[str, Any]) -> str | None:
    """The real edge behind the visible edge index `edge` (None: clear the selection)."""
    eid = msg.get("edge")
    if eid is None:
        return None
    return visible_edge(s, eid, "select_edge needs a visible edge index or null")


def _select(s: Session, args: tuple[bool, str | None]) -> None:
    reveal, node = args
    if reveal and node is not None:
        s.scene.reveal(node)
        s.redraw()
    s.select(node)


def _select_edge(s: Session, edge: str | None) -> None:
    s.select_edge(edge)


# ----------------------------------------------------------------------------- the inspector
def _v_inspect(s: Session, msg: dict[str, Any]) -> tuple[str, Any]:
    """("edge", edge id) | ("node", node id) | ("item", visible item index)."""
    request_id(msg, "inspect")
    scene = s.scene
    if "edge_id" in msg:
        eid = msg.get("edge_id")
        if not isinstance(eid, str) or eid not in scene.state.edge_index:
            raise Invalid(f"inspect: no edge {quote(eid)}")
        return "edge", eid
    if "edge" in msg:
        idx = msg.get("edge")
        return "edge", visible_edge(s, idx, f"inspect: no edge index {quote(idx)}")
    if "id" in msg:
        nid = msg.get("id")
        if not isinstance(nid, str) or nid not in s.scene.graph.nodes:
            raise Invalid(f"inspect: no node {quote(nid)}")
        return "node", nid
    j = scene.item_index(msg.get("node"))
    if j is None:
        raise Invalid(f"inspect: no node index {quote(msg.get('node'))}")
    return "item", j


def _inspect(s: Session, args: tuple[str, Any]) -> dict[str, Any]:
    what, key = args
    live = s.live_stepper
    if what == "edge":
        return inspect.inspect_edge(s.scene, live, key)
    if what == "node":
        return inspect.inspect_node(s.scene, live, key)
    return inspect.inspect_item(s.scene, live, key)


# ----------------------------------------------------------------------------- reports
def _v_search(s: Session, msg: dict[str, Any]) -> str:
    """The query string (`view.inspect.search_matches` finds the nodes)."""
    query = msg.get("query")
    if not is_int(msg.get("request")) or not isinstance(query, str):
        raise Invalid("search needs an integer request id and a query string")
    return query


def _search(s: Session, query: str) -> dict[str, Any]:
    return inspect.search_matches(s.scene, query)


def _v_memory(s: Session, msg: dict[str, Any]) -> bool:
    """Whether leaves' own tensors are left out of the saved bytes (`exclude_leaves`)."""
    exclude = msg.get("exclude_leaves", False)
    if not is_int(msg.get("request")) or not isinstance(exclude, bool):
        raise Invalid("memory needs an integer request id (and exclude_leaves: bool)")
    return exclude


def _memory(s: Session, exclude: bool) -> dict[str, Any]:
    return inspect.memory_report(s.scene, exclude_leaves=exclude)


def _v_saved_values(s: Session, msg: dict[str, Any]) -> tuple[str, str, int]:
    """(node id, saved value's name, most elements shown: `limit`, 4096 unless a positive int)."""
    request_id(msg, "saved_values")
    nid, name = msg.get("id"), msg.get("name")
    if not isinstance(nid, str) or nid not in s.scene.graph.nodes or not isinstance(name, str):
        raise Invalid("saved_values needs a node id and a saved value's name")
    limit = msg.get("limit", 4096)
    if not is_int(limit) or limit < 1:
        limit = 4096
    return nid, name, limit


def _saved_values(s: Session, args: tuple[str, str, int]) -> dict[str, Any]:
    return inspect.saved_values_reply(s.scene.graph, *args)


def _v_probe(s: Session, msg: dict[str, Any]) -> tuple[int, int | None]:
    """(samples in 2..1024, seed or None) of the Jacobian norm estimate."""
    request_id(msg, "probe")
    samples, seed = msg.get("samples", 16), msg.get("seed", 0)
    if not is_int(samples) or not 2 <= samples <= 1024:
        raise Invalid("probe: samples must be an int in 2..1024")
    if seed is not None and not is_int(seed):
        raise Invalid("probe: seed must be an int or null")
    return samples, seed


def _probe(s: Session, args: tuple[int, int | None]) -> dict[str, Any]:
    return inspect.sensitivity_report(s.scene, s.stepper, *args)


# ----------------------------------------------------------------------------- the family
#: "select" {node | id | null}: select a node (an `id` is revealed first).
SELECT = Handler(_v_select, _select, after_release=True)
#: "select_edge" {edge | null}: select an edge.
SELECT_EDGE = Handler(_v_select_edge, _select_edge)
#: "inspect" {request, edge_id | edge | id | node}: the inspector's data.
INSPECT = Handler(_v_inspect, _inspect, "reply", after_release=True)
#: "search" {request, query}: the matching nodes.
SEARCH = Handler(_v_search, _search, "reply")
#: "memory" {request, exclude_leaves?}: saved bytes per visible item.
MEMORY = Handler(_v_memory, _memory, "reply")
#: "saved_values" {request, id, name, limit?}: a node's saved tensor's values.
SAVED_VALUES = Handler(_v_saved_values, _saved_values, "reply")
#: "probe" {request, samples?, seed?}: Jacobian norm estimates per visible item.
PROBE = Handler(_v_probe, _probe, "reply")
