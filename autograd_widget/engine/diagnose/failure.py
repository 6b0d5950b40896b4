"""Why a backward node failed, in words a user can act on.

The three failures a real backward meets most, told apart from the engine's own message:

- "inplace": "one of the variables needed for gradient computation has been modified by an
  inplace operation: [torch.FloatTensor [3]], which is output 0 of Sigmoid, is at version 1;
  expected version 0 instead". `explain_failure` names WHICH saved value of the failing node is
  stale (reading each `_saved_<name>` raises for that one; `_raw_saved_<name>.data` then gives the
  mutated tensor without raising, and its `_version`), its saved and current versions, and the
  node whose in-place op bumped it. That culprit is found from the mutated tensor: a saved INPUT
  keeps its tensor, whose `grad_fn` is now the last in-place op (walked back to the first one
  after the save by sequence number); a saved OUTPUT (sigmoid's `result`) does not, so the nodes
  of the graph whose saved values share its storage give its current `grad_fn`, and failing that
  the graph's consumers of that output created after the save (one: it; several: all named). The
  culprit's forward traceback is shown when the forward ran under
  `torch.autograd.set_detect_anomaly(True)` (`node.metadata["traceback_"]`), else the hint says
  how to get it. A bump with no node (under `torch.no_grad()`, through `.data`, a leaf) says so.
  On a torch without `SavedTensor.data` (< 2.10) the mutated tensor cannot be looked at, so the
  culprit is unknown and the sentence says so (`util.compat`).
- "freed": "Trying to backward through the graph a second time": the saved values were freed
  by an earlier `backward()` without `retain_graph=True`.
- "donated": "This backward function was compiled with non-empty donated buffers ...": a region
  compiled by torch.compile whose backward was compiled during an ordinary backward() (no
  retain_graph) with `torch._functorch.config.donated_buffer` on refuses every further call, a
  manual step included; the hint says how to avoid it.
- "collective": the node failed inside a collective (gloo's "Connection closed by peer", an
  NCCL error, a collective's timeout): another rank stopped, and the bug is on that rank. One
  process cannot tell which peer; `explain_peer_wait` says it once the ranks' recordings are read
  together (record/ranks.py), naming the `peer` rank and its failing node.
- "other": anything else (a custom Function's backward raising): the node and the error's first
  line.

Guarantees: `explain_failure` never unpacks a value packed by a non-reentrant checkpoint, changes
no tensor, version or node, and raises nothing for a well-formed call (a graph without live nodes,
from `from_dict` or closed, gets the explanation the message alone allows).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import torch

from ...core.checkpoint import is_checkpointed
from ...core.saved import saved_names, storage_key
from ...util import compat
from ...util.compat import DONATED_BUFFER_ERROR
from .collective import is_collective_error

if TYPE_CHECKING:
    from ...core.graph import BackwardGraph

__all__ = [
    "ANOMALY_HINT",
    "COLLECTIVE_HINT",
    "FailureExplanation",
    "FailureKind",
    "explain_failure",
    "explain_peer_wait",
]

FailureKind = Literal["inplace", "freed", "donated", "collective", "other"]

#: How to see where an in-place op was, when the graph has no forward traceback.
ANOMALY_HINT = (
    "run the forward under `torch.autograd.set_detect_anomaly(True)` to see where the in-place "
    "op was"
)
#: What to do when a node failed inside a collective and the failing peer is not known yet.
COLLECTIVE_HINT = (
    "another rank stopped: load every rank's recording together (aw.load_recording with "
    "'{rank}' in the path) and first_failure() names the rank whose own node raised"
)
_VERSIONS = re.compile(r"is at version (\d+); expected version (\d+)")
_PREFIX = re.compile(r"^\w+ in n\d+(?:/\d+)? \([^)]*\): ")  # what a stepper's failure record adds
#: Nodes whose saved values are scanned for the mutated storage (a bound on a huge graph).
SCAN_LIMIT = 20_000


@dataclass(frozen=True)
class FailureExplanation:
    """Why node `node` failed (see the module doc for the kinds).

    `sentence`: one sentence a user reads. For "inplace": `saved_name` (the stale `_saved_<name>`,
    or `saved_tensors[i]` of a custom Function), `saved_version` / `current_version`, `culprit`
    (the id of the node whose in-place op bumped it, when it is in the graph) and `culprit_name`
    (its type, also when it is not), `candidates` (node ids, when several could be it),
    `traceback` (the culprit's forward stack under anomaly mode, else None). For "collective":
    `peer` (the rank whose own failure made this one wait, when known), `culprit` /
    `culprit_name` (that rank's failing node). `hint`: what to do. `error`: the error's first
    line.

    Example:
        >>> e = FailureExplanation("n2", "other", "n2 (MyBackward) raised: boom")
        >>> e.kind, e.culprit, e.traceback
        ('other', None, None)
    """

    node: str
    kind: FailureKind
    sentence: str
    saved_name: str | None = None
    saved_version: int | None = None
    current_version: int | None = None
    culprit: str | None = None
    culprit_name: str | None = None
    candidates: tuple[str, ...] = ()
    traceback: list[str] | None = None
    hint: str = ""
    error: str = ""
    peer: int | None = None


def explain_failure(graph: BackwardGraph, node_id: str, error: str) -> FailureExplanation | None:
    """Explain why node `node_id` of `graph` failed with `error`.

    Args:
        graph: the captured graph (live: saved values and nodes are examined; else the message
            alone is used).
        node_id: the failing node.
        error: the error text (the engine's message, or a stepper's failure record's `error`,
            whose "RuntimeError in n2 (SigmoidBackward0): " prefix is dropped).

    Guarantees: None when `error` is empty or `node_id` is not in the graph; otherwise an
    explanation, never an exception (anything unexpected degrades to the message's facts).

    Example:
        >>> a = torch.ones(3, requires_grad=True)
        >>> s = a.sigmoid(); _ = s.mul_(2)
        >>> graph = aw.capture(s.sum())
        >>> e = explain_failure(graph, "n2", str(aw.Stepper(graph).run().error))
        >>> e.kind, e.saved_name, e.saved_version, e.current_version, e.culprit, e.culprit_name
        ('inplace', 'result', 0, 1, 'n1', 'MulBackward0')
        >>> e.hint.startswith("run the forward under")
        True
    """
    if not error or not isinstance(node_id, str):
        return None
    try:
        node = graph.node(node_id)  # a node, or an op of a compiled region ("n1/3")
    except KeyError:
        return None
    msg = _PREFIX.sub("", error, count=1)
    first = msg.strip().splitlines()[0] if msg.strip() else ""
    who = f"{node_id} ({node.name})"
    fn = None
    try:
        fn = graph.fn(node_id) if graph.is_live and node_id in graph.nodes else None
    except Exception:
        fn = None
    if DONATED_BUFFER_ERROR in msg:
        return FailureExplanation(
            node_id, "donated",
            f"{who} cannot run again: torch compiled this region's backward during an ordinary "
            "backward() with donated buffers (it may reuse the saved activations' memory), and "
            "then refuses every further call of it, a manual step included",
            error=first,
            hint="import torch._functorch.config (`import torch` alone does not) and set "
            "torch._functorch.config.donated_buffer = False before the model first compiles "
            "(or make its first backward() a backward(retain_graph=True); not enough for a "
            "region with dynamic shapes, whose backward compiles at once), then "
            "torch._dynamo.reset() or restart, run the forward again and capture",
        )  # fmt: skip
    if "modified by an inplace operation" in msg:
        return _inplace(graph, node_id, who, fn, msg, first)
    if "backward through the graph a second time" in msg or "already been freed" in msg:
        name = _stale_name(fn, "freed")[0] if fn is not None else None
        what = f"its saved `{name}` was" if name else "its saved values were"
        return FailureExplanation(
            node_id, "freed",
            f"{who} cannot run: {what} freed by an earlier backward() through this graph "
            "(backward frees saved values unless retain_graph=True)",
            saved_name=name, error=first,
            hint="pass retain_graph=True to the first backward() (or capture and step before "
            "calling backward())",
        )  # fmt: skip
    if is_collective_error(msg):
        return FailureExplanation(
            node_id, "collective",
            f"{who} failed inside a collective: another rank stopped or never came "
            f"({_short(first)})",
            error=first, hint=COLLECTIVE_HINT,
        )  # fmt: skip
    hint = ""
    if node.kind == "custom_function":
        hint = "the backward() of this custom autograd.Function raised: the error is in its code"
    return FailureExplanation(
        node_id, "other", f"{who} raised: {first}", traceback=node.traceback or _tb(fn),
        hint=hint, error=first,
    )  # fmt: skip


def explain_peer_wait(
    node: str, node_name: str, error: str, peer: int | None, peer_node: str | None = None,
    peer_node_name: str | None = None, peer_error: str = "",
) -> FailureExplanation:
    """The "collective" explanation of a rank that failed waiting in a collective on `peer`.

    Args:
        node: this rank's failing node id ("" when the error came after every node had run:
            DDP's all-reduce waits at the end of the backward).
        node_name: its type ("" when `node` is "").
        error: this rank's error (a collective's: gloo's "Connection closed by peer", ...).
        peer: the rank whose own node raised (None: no rank's own node raised in the files
            read; the stop came from elsewhere, a crash or a failure outside the recordings).
        peer_node, peer_node_name, peer_error: that rank's failing node, its type, its error.

    Guarantees: never raises; `culprit` / `culprit_name` are the peer's node (that rank's
    graph's id, not this one's).

    Example:
        >>> e = explain_peer_wait("n4", "_AllReduceBackward", "Connection closed by peer", 1,
        ...                       "n2", "BoomBackward", "boom")
        >>> e.kind, e.peer, e.culprit
        ('collective', 1, 'n2')
        >>> print(e.sentence)
        n4 (_AllReduceBackward) failed inside a collective, waiting on rank 1, whose own node
        n2 (BoomBackward) raised: boom
    """
    first = _first_line(error)
    where = f"{node} ({node_name})" if node else "the backward (after its last node)"
    if peer is None:
        return FailureExplanation(
            node, "collective",
            f"{where} failed inside a collective ({_short(first)}); no rank's own node raised in "
            "the files read: a rank stopped outside them (a crash, the forward, a missing file)",
            error=first, hint="look at every rank's log for the one that stopped first",
        )  # fmt: skip
    what = ""
    if peer_node:
        what = f", whose own node {peer_node} ({peer_node_name or '?'}) raised"
        if peer_error:
            what += f": {_first_line(peer_error)}"
    return FailureExplanation(
        node, "collective",
        f"{where} failed inside a collective, waiting on rank {peer}{what}",
        culprit=peer_node or None, culprit_name=peer_node_name or None, error=first, peer=peer,
        hint=f"the bug is on rank {peer}: look at rank {peer}'s recording",
    )  # fmt: skip


def _first_line(text: str) -> str:
    text = _PREFIX.sub("", text or "", count=1).strip()
    return text.splitlines()[0] if text else ""


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _tb(fn: Any) -> list[str] | None:
    """The forward traceback anomaly mode stored on a live node, else None."""
    try:
        md = fn.metadata if fn is not None else None
        tb = md.get("traceback_") if md else None
        return [str(line) for line in tb] if tb else None
    except Exception:
        return None


def _stale_name(fn: Any, want: str) -> tuple[str | None, Any]:
    """(name, raw saved value) of the first saved tensor of `fn` whose read fails with a
    `want` ("inplace" or "freed") error; checkpointed values are skipped (never unpacked)."""
    marker = "modified by an inplace" if want == "inplace" else "freed"
    if isinstance(fn, torch._C._FunctionBase):  # a custom Function: `saved_tensors`
        raws = getattr(fn, "_raw_saved_tensors", ()) or ()
        try:
            _ = compat.peek_value(fn, "saved_tensors")
        except RuntimeError as err:
            if marker in str(err):
                for i, raw in enumerate(raws):
                    if not is_checkpointed(raw) and want == "freed":
                        return f"saved_tensors[{i}]", raw
                return "saved_tensors", None
        return None, None
    for name in saved_names(fn):
        raw = getattr(fn, "_raw_saved_" + name, None)
        if raw is None or is_checkpointed(raw):
            continue
        try:
            compat.peek_value(fn, "_saved_" + name)
        except RuntimeError as err:
            if marker in str(err):
                return name, raw
        except Exception:
            continue
    return None, None


def _custom_stale(fn: Any, current: int | None) -> tuple[str | None, Any]:
    """For a custom Function: the first `saved_tensors[i]` at the message's current version."""
    raws = getattr(fn, "_raw_saved_tensors", ()) or ()
    for i, raw in enumerate(raws):
        if is_checkpointed(raw):
            continue
        data = compat.saved_data(raw)
        if current is None or getattr(data, "_version", None) == current:
            return f"saved_tensors[{i}]", raw
        if data is None and len(raws) == 1:  # a torch that cannot look: the only one it saved
            return "saved_tensors[0]", raw
    return None, None


def _inplace(
    graph: BackwardGraph, node_id: str, who: str, fn: Any, msg: str, first: str
) -> FailureExplanation:
    m = _VERSIONS.search(msg)
    current, saved = (int(m.group(1)), int(m.group(2))) if m else (None, None)
    name, raw = (None, None)
    if fn is not None:
        name, raw = _stale_name(fn, "inplace")
        if name == "saved_tensors":
            name, raw = _custom_stale(fn, current)
    culprit = culprit_name = None
    candidates: tuple[str, ...] = ()
    tb = None
    outside = False
    data = compat.saved_data(raw)
    unknown = raw is not None and data is None  # a torch that cannot look at a stale value
    if data is not None:
        if current is None:
            current = getattr(data, "_version", None)
        head = _current_grad_fn(graph, fn, data)
        chain = _inplace_chain(head, fn) if head is not None else []
        if chain:
            cfn = chain[-1]
            culprit_name = cfn.name()
            culprit = graph.id_of(cfn)
            tb = (graph.nodes[culprit].traceback if culprit else None) or _tb(cfn)
        elif head is not None:  # its grad_fn is still the op that made it: no node bumped it
            outside = True
        elif data.requires_grad and data.is_leaf:  # a leaf: only no_grad / .data can change it
            outside = True
        else:  # a saved output whose current grad_fn is nowhere in sight
            candidates = _consumers(graph, node_id)
            if len(candidates) == 1:
                culprit = candidates[0]
                culprit_name = graph.nodes[culprit].name
                tb = graph.nodes[culprit].traceback or _tb(graph.fn(culprit))
                candidates = ()
    what = f"its saved `{name}`" if name else "one of its saved tensors"
    vers = (
        f" (saved at version {saved}, now at version {current})"
        if saved is not None and current is not None
        else ""
    )
    if culprit_name:
        where = f"{culprit} ({culprit_name})" if culprit else f"{culprit_name} (not in this graph)"
        by = f"; the in-place op is {where}"
    elif candidates:
        by = "; the in-place op is one of " + ", ".join(
            f"{c} ({graph.nodes[c].name})" for c in candidates
        )
    elif outside:
        by = "; no autograd node did it: it was changed under torch.no_grad() or through .data"
    elif unknown:
        since = compat.SAVED_DATA_TORCH
        by = "; which op did it is " + compat.unknown_note("the modified tensor", since)
    else:
        by = ""
    hint = (
        "the in-place op's forward traceback is in `traceback`" if tb else ANOMALY_HINT
    ) + "; use the out-of-place op (`y = y * 2`, not `y.mul_(2)`) or clone() before it"
    return FailureExplanation(
        node_id, "inplace",
        f"{who} cannot run: {what} was modified by an in-place operation after it was "
        f"saved{vers}{by}",
        saved_name=name, saved_version=saved, current_version=current, culprit=culprit,
        culprit_name=culprit_name, candidates=candidates, traceback=tb, hint=hint, error=first,
    )  # fmt: skip


def _current_grad_fn(graph: BackwardGraph, fn: Any, data: Any) -> Any:
    """The mutated tensor's current `grad_fn`: its own (a saved input keeps its tensor), else
    that of a saved value elsewhere in the graph (or a root) over the same storage."""
    gf = getattr(data, "grad_fn", None)
    if gf is not None:
        return gf
    key = storage_key(data)
    if key is None:
        return None
    try:
        for t in graph.root_tensors:
            if storage_key(t) == key and t.grad_fn is not None and t.grad_fn is not fn:
                return t.grad_fn
        fns = graph.require_live("scan saved values").fns
    except Exception:
        return None
    for other in fns[:SCAN_LIMIT]:
        if other is fn:
            continue
        for nm in saved_names(other) if not hasattr(other, "variable") else ():
            r = getattr(other, "_raw_saved_" + nm, None)
            if r is None or isinstance(r, tuple | list) or is_checkpointed(r):
                continue
            d = compat.saved_data(r)
            g = getattr(d, "grad_fn", None)
            if g is not None and g is not fn and storage_key(d) == key:
                return g
    return None


def _inplace_chain(head: Any, fn: Any) -> list[Any]:
    """The in-place nodes from `head` back to the first one after `fn` saved (latest first):
    each in-place op's node takes the previous version through its first input."""
    chain = []
    seq = fn._sequence_nr()
    node = head
    while node is not None and node is not fn and node._sequence_nr() > seq and len(chain) < 64:
        chain.append(node)
        nxt = node.next_functions
        node = nxt[0][0] if nxt else None
    return chain


def _consumers(graph: BackwardGraph, node_id: str) -> tuple[str, ...]:
    """Nodes of the graph that take an output of `node_id` and were created after it."""
    seq = graph.nodes[node_id].sequence_nr
    found = [e.src for e in graph.in_edges(node_id) if graph.nodes[e.src].sequence_nr > seq]
    return tuple(dict.fromkeys(found))
