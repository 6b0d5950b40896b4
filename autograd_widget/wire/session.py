"""The Session: one graph, one stepper, one scene, and the payloads that show them.

The protocol's handlers (`protocol.MESSAGES`) act on a Session, so the widget and the standalone
export drive the very same code. The Session encodes what is drawn (`graph_payload`, re-encoded
when the scene's `version` moves or a failed step marks saved tensors anew) and the step state
(the `_state` payload: `StateView.update()` plus "running" and "notice"), and hands both to its
`Front` (the widget's traits); without a front (the export) nothing is encoded eagerly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..core.freed import FREED_WARNING, freed_by_backward
from ..core.graph import BackwardGraph
from ..core.validity import node_validity
from ..engine.record.replay import Replay
from ..engine.step.sharded import CollectiveTimeout
from ..util.gcpause import gc_paused
from ..view.scene import Scene
from .payload import graph_payload

if TYPE_CHECKING:
    from ..engine.interface import Capabilities, Stepping
    from ..engine.record.ranks import RankRecordings
    from ..engine.watch.rankwatch import RankWatches
    from ..engine.watch.watch import Watch

__all__ = [
    "CAPABILITY_KEYS", "RELEASED_NOTICE", "Front", "Session", "capabilities_payload",
    "follow_node", "freed_notice",
]

RELEASED_NOTICE = "released: the drawing stays, stepping needs explore() again"

#: The keys of the graph payload's `capabilities`: `engine.interface.Capabilities`' fields,
#: in their order (js/src reads them by these names).
CAPABILITY_KEYS = ("live", "edit", "probe", "compare", "grad_of_tensor", "saved_values")


def capabilities_payload(caps: Capabilities) -> dict[str, bool]:
    """What the stepped run can do, as the graph payload carries it: one bool per
    `Capabilities` field (`CAPABILITY_KEYS`), so the front-end offers an action by what the
    run can do, never by guessing from its kind.

    Example:
        >>> from autograd_widget.engine.interface import RECORDED
        >>> capabilities_payload(RECORDED)
        {'live': False, 'edit': False, 'probe': False, 'compare': False, 'grad_of_tensor': False,
         'saved_values': False}
    """
    return {key: bool(getattr(caps, key)) for key in CAPABILITY_KEYS}


def _validity(graph: BackwardGraph) -> dict[str, str]:
    """Stale/freed saved tensors per node; none for a graph of records (a recording's)."""
    return node_validity(graph) if graph.is_live else {}


class Front(Protocol):
    """Where a Session shows its payloads (the widget's synced traits). A front that shows a
    watch may also have `show_step(step, stepper)`: told that another watched step is shown, it
    returns what it had selected, (node id, edge id), for the selection to follow the same op
    onto that step's graph (`Session.show_step`)."""

    def draw(self, graph: dict[str, Any] | None, state: dict[str, Any]) -> None:
        """Show a new graph payload (None: unchanged) and step state, together."""

    def select(self, node_id: str | None) -> None:
        """Select a real node (None: nothing)."""

    def select_edge(self, edge_id: str | None) -> None:
        """Select a real edge (None: nothing)."""


def _leaf_acc(node: Any) -> bool:
    return node.kind == "accumulate_grad" and bool(node.leaf_name)


def _reach(graph: BackwardGraph, targets: list[str]) -> dict[str, frozenset[str]]:
    """The named leaves each of `targets` sends gradient to (through any path): one pass over
    the edges reachable from them, leaves as bits of one int per node."""
    kids: dict[str, list[str]] = {}
    for e in graph.edges:
        kids.setdefault(e.src, []).append(e.dst)
    bits: dict[str, int] = {}
    mask: dict[str, int] = {}
    for start in targets:
        stack = [start]
        while stack:
            nid = stack[-1]
            if nid in mask:
                stack.pop()
                continue
            todo = [c for c in kids.get(nid, ()) if c not in mask]
            if todo:
                stack.extend(todo)
                continue
            leaf = graph.nodes[nid].leaf_name if nid in graph.nodes else None
            m = 1 << bits.setdefault(leaf, len(bits)) if leaf else 0
            for c in kids.get(nid, ()):
                m |= mask[c]
            mask[nid] = m
            stack.pop()
    names = list(bits)
    return {t: frozenset(n for i, n in enumerate(names) if mask[t] >> i & 1) for t in targets}


def follow_node(old: BackwardGraph, node_id: str, new: BackwardGraph) -> str | None:
    """The node of graph `new` that is node `node_id` of graph `old` (another watched step's
    graph): the same op by its identity, never merely the same id; None when `new` has no
    such node. A parameter's (named leaf's) AccumulateGrad is the one of the same leaf; any
    other node is the k-th node of its name in its module (node order: the key of
    view/timeline.py's op rows) among those sending gradient to the same leaves, else, when
    no node there reaches the same leaves (the loss's, whose graph grew), among all of them.

    Example:
        >>> a, b = torch.nn.Linear(3, 3), torch.nn.Linear(3, 3)
        >>> net = torch.nn.ModuleDict({"a": a, "b": b}); x0 = torch.ones(1, 3)
        >>> one = aw.capture(a(x0).relu().sum(), model=net)
        >>> two = aw.capture(b(a(x0).relu()).relu().sum(), model=net)
        >>> [(n.id, n.name, n.module) for n in one.nodes.values()][:3]
        [('n0', 'SumBackward0', None), ('n1', 'ReluBackward0', None), ('n2', 'AddmmBackward0', 'a')]
        >>> [(n.id, n.name, n.module) for n in two.nodes.values()][:7:2]
        [('n0', 'SumBackward0', None), ('n2', 'AddmmBackward0', 'b'), ('n4', 'ReluBackward0', None),
         ('n6', 'AddmmBackward0', 'a')]
        >>> [follow_node(one, n, two) for n in ("n0", "n1", "n2")]  # n1: a's ReLU, not b's
        ['n0', 'n4', 'n6']
        >>> follow_node(two, "n2", one) is None  # b's Addmm: not in the graph without b
        True
    """
    if old is new:
        return node_id if node_id in new.nodes else None
    node = old.nodes.get(node_id)
    if node is None:
        return None
    if _leaf_acc(node):
        return next((nid for nid, n in new.nodes.items()
                     if _leaf_acc(n) and n.leaf_name == node.leaf_name), None)  # fmt: skip

    def same_op(g: BackwardGraph) -> list[str]:
        want = (node.name, node.module)
        return [nid for nid, n in g.nodes.items()
                if (n.name, n.module) == want and not _leaf_acc(n)]  # fmt: skip

    mine, theirs = same_op(old), same_op(new)
    if not theirs:
        return None
    reach_old, reach_new = _reach(old, mine), _reach(new, theirs)
    leaves = reach_old[node_id]
    alike = [nid for nid in mine if reach_old[nid] == leaves]
    match = [nid for nid in theirs if reach_new[nid] == leaves]
    k = alike.index(node_id)
    if k < len(match):
        return match[k]
    k = mine.index(node_id)
    return theirs[k] if k < len(theirs) and not match else None


def _describe(graph: BackwardGraph, node_id: str) -> str:
    node = graph.nodes[node_id]
    if _leaf_acc(node):
        return f"{node.name} ({node.leaf_name})"
    where = f" in {node.module}" if node.module else ""
    return f"{node.name}{where}"


class Session:
    """The state protocol handlers act on.

    Args:
        graph: the graph (live, or records after release).
        stepper: the stepper that is drawn and driven.
        scene: the drawing of `graph` under `stepper`.
        front: where payloads go (None: nowhere; `graph_payload()` still answers).
        notice: a banner shown with the state (e.g. "this graph was freed").

    Example:
        >>> from autograd_widget.view.scene import Scene
        >>> from autograd_widget.wire.protocol import dispatch
        >>> session = Session(g, st, Scene(g, st))
        >>> dispatch(session, {"type": "step"}), st.position
        ([], 1)
    """

    def __init__(
        self,
        graph: BackwardGraph,
        stepper: Stepping,
        scene: Scene,
        front: Front | None = None,
        *,
        notice: str | None = None,
    ) -> None:
        self.graph = graph
        self.stepper = stepper
        self.scene = scene
        self.front = front
        self.notice = notice
        #: True while a Play run is in progress (the front-end asks for the next chunk).
        self.running = False
        #: True after `release()`: no torch object is held, only the records.
        self.released = False
        #: The last `_state` payload handed to the front.
        self.state: dict[str, Any] = {}
        self._validity = _validity(graph)
        self._seen_error: tuple[str, str] | None = None
        #: The compared recording's name when edges are flagged against one ("" when none).
        self.compared = ""
        self._payload: dict[str, Any] | None = None
        self._payload_version = -1
        #: The `aw.watch` whose steps this session shows (`aw.explore(watch)`), else None, and
        #: the watched step shown (`show_step`).
        self.watch: Watch | None = None
        self.watch_step: int | None = None
        #: The collapse mode a new structure's scene is built with (`show_step`).
        self.collapse = "auto"
        #: `aw.explore(group)` of every rank's files (rankswitch.py): the group and the rank shown.
        self.rank_group: RankWatches | RankRecordings | None = None
        self.rank: int | None = None
        #: (position, message) of a step that waited for the other ranks in vain (`stalled_on`).
        self._stalled: tuple[int, str] | None = None
        #: (position, message) when the node selected on the step shown before is not in this
        #: step's graph (`show_step`): said until the stepper moves or another step is shown.
        self._lost: tuple[int, str] | None = None

    @property
    def recorded(self) -> bool:
        """True when the stepper replays a recorded engine run (`aw.explore(recording)`)."""
        return not self.stepper.capabilities.live

    @property
    def live_stepper(self) -> Stepping | None:
        """The stepper, or None once released (the inspector then reads records only)."""
        return None if self.released else self.stepper

    def graph_payload(self) -> dict[str, Any]:
        """The graph payload of the scene as drawn now (encoded once per scene version).

        Example:
            >>> from autograd_widget.view.scene import Scene
            >>> session = Session(g, st, Scene(g, st))
            >>> session.graph_payload()["nodes"]["count"]
            4
        """
        scene = self.scene
        if self._payload is None or self._payload_version != scene.version:
            with gc_paused():
                self._payload = graph_payload(  # the drawn graph (compiled regions' ops too)
                    scene.graph, scene.layout, scene.visible, self._validity, folds=scene.folds
                )
            # What is stepped: `capabilities` says what the run can do (the front-end offers
            # saved values, edits and probes by it); `source` names the kind, for labels only.
            self._payload["source"] = "recording" if self.recorded else "live"
            self._payload["capabilities"] = capabilities_payload(self.stepper.capabilities)
            if self.compared:
                self._payload["compared"] = self.compared
            self._payload_version = scene.version
        return self._payload

    def stalled_on(self, err: BaseException) -> str | None:
        """When `err` is a collective that waited in vain (`CollectiveTimeout`: one rank of an
        FSDP2 job steps while the others do not), show its message as the standing notice until
        the stepper moves (Reset, a step that needs no gather, the other ranks stepping), stop
        Play, and return the short warning the command gets; None for any other error (nothing
        done: the caller reports it as a failure).

        Example:
            >>> from autograd_widget.view.scene import Scene
            >>> Session(g, st, Scene(g, st)).stalled_on(ValueError("x")) is None
            True
        """
        if not isinstance(err, CollectiveTimeout):
            return None
        self._stalled = (self.stepper.position, str(err))
        self.refresh(running=False)
        return ("stopped: this step waits for the other ranks, which are not stepping "
                "(every rank must step an FSDP2 model by hand); the notice says what it waits for")

    def _finish(self, state: dict[str, Any]) -> dict[str, Any]:
        state["running"] = self.running and not state["done"]
        if self._stalled is not None and self._stalled[0] != self.stepper.position:
            self._stalled = None  # the stepper moved: no longer waiting there
        if self._lost is not None and self._lost[0] != self.stepper.position:
            self._lost = None
        notice = self._stalled[1] if self._stalled is not None else self.notice
        if self._lost is not None:
            notice = self._lost[1] if not notice else f"{self._lost[1]}. {notice}"
        state["notice"] = notice
        self.state = state
        return state

    def refresh(self, running: bool | None = None) -> None:
        """After the stepper moved (or `running` changed): the new step state to the front; a
        failed step re-marks stale saved tensors (a new graph payload).

        Example:
            >>> from autograd_widget.view.scene import Scene
            >>> session = Session(g, st, Scene(g, st))
            >>> session.refresh(running=True); session.running
            True
        """
        if running is not None:
            self.running = running
        if self.front is None:
            return
        err = self.stepper.last_error
        graph = None
        if err is not None and err != self._seen_error:
            # A step failed: saved tensors may have been modified since explore(); mark anew.
            self._seen_error = err
            self._validity = _validity(self.graph)
            self._payload = None
            graph = self.graph_payload()
        self.front.draw(graph, self._finish(self.scene.state.update()))

    def redraw(self) -> None:
        """After the scene changed (folds, plumbing, orientation): the new drawing and the step
        state mapped onto it (not recomputed: `seq` stays) to the front, together.

        Example:
            >>> from autograd_widget.view.scene import Scene
            >>> session = Session(g, st, Scene(g, st))
            >>> session.scene.set_orientation("LR"); session.redraw()
            >>> session.graph_payload()["orientation"]
            'LR'
        """
        if not self.released:
            self._validity = _validity(self.graph)
        self._payload = None
        payload = self.graph_payload()
        if self.front is None:
            return
        state = dict(self.state)
        state.update(self.scene.state.payload(running=self.running))
        self.front.draw(payload, self._finish(state))

    def select(self, node_id: str | None) -> None:
        """Select a real node in the front (None: clear).

        Example:
            >>> from autograd_widget.view.scene import Scene
            >>> from types import SimpleNamespace
            >>> picked = []
            >>> session = Session(g, st, Scene(g, st), SimpleNamespace(select=picked.append))
            >>> session.select("n0"); picked
            ['n0']
        """
        if self.front is not None:
            self.front.select(node_id)

    def select_edge(self, edge_id: str | None) -> None:
        """Select a real edge in the front (None: clear).

        Example:
            >>> from autograd_widget.view.scene import Scene
            >>> from types import SimpleNamespace
            >>> picked = []
            >>> session = Session(g, st, Scene(g, st), SimpleNamespace(select_edge=picked.append))
            >>> session.select_edge("n0:0"); picked
            ['n0:0']
        """
        if self.front is not None:
            self.front.select_edge(edge_id)

    def is_watched(self, step: Any) -> bool:
        """Whether `step` is a watched step of `self.watch` (False without a watch): one dict
        look-up, whatever the number of steps (a `watch_step` message costs no scan of them).

        Example:
            >>> from autograd_widget.view.scene import Scene
            >>> w = aw.watch(every=2); loss = (x * 3).sum()
            >>> for _ in range(2):
            ...     with w.step(loss):
            ...         loss.backward(retain_graph=True)
            >>> session = Session(g, st, Scene(g, st)); session.watch = w
            >>> session.is_watched(0), session.is_watched(1), session.is_watched("0")
            (True, False, False)
        """
        w = self.watch
        if w is None or isinstance(step, bool) or not isinstance(step, int):
            return False
        try:
            st = w.record(step)
        except KeyError:
            return False
        return st.watched and st.structure is not None

    def show_step(self, step: int, node: str | None = None) -> None:
        """Show watched step `step` of `self.watch`: its recording replayed to the end (every
        edge coloured by that step's gradients); the same drawing when its graph has the
        structure drawn, else a new scene; `node` selected (and revealed) when given.

        Guarantees (one truth on screen): the state sent with the step is that step's final
        state (every node ran, as the status says), under a `seq` above every one sent before,
        so nothing the front-end cached for another step passes for this one's. Without
        `node`, the node (and edge) the front has selected follows the same op onto this
        step's graph (`follow_node`: by identity, not by id); when this graph has no such op,
        the selection is cleared and the notice says so.

        Example:
            >>> from autograd_widget.view.scene import Scene
            >>> w = aw.watch(); loss = (x * 3).sum()
            >>> for _ in range(2):
            ...     with w.step(loss):
            ...         loss.backward(retain_graph=True)
            >>> rec = w.recording(0); rp = aw.Replay(rec)
            >>> session = Session(rec.graph, rp, Scene(rec.graph, rp)); session.watch = w
            >>> session.show_step(1, "n1"); session.watch_step, session.stepper.done
            (1, True)
        """
        if self.watch is None:
            raise ValueError("this session shows no watch")
        rec = self.watch.recording(step)
        stepper = Replay(rec)
        stepper.run()
        old, old_graph, old_step = self.stepper, self.graph, self.watch_step
        seq = self.scene.state.seq
        self.stepper = stepper
        same = rec.graph is self.graph
        if same:
            self.scene.set_stepper(stepper)
        else:
            self.graph = rec.graph
            self.scene = Scene(rec.graph, stepper, collapse=self.collapse,
                               orientation=self.scene.orientation,
                               show_plumbing=self.scene.show_plumbing)  # fmt: skip
            self._validity = {}
            self._payload = None
        self.scene.state.seq = seq  # a new StateView: its seq goes on from the last one sent
        old.close()
        self.watch_step = step
        self._lost = None
        show = getattr(self.front, "show_step", None)
        held = show(step, stepper) if show is not None else None
        edge = None
        if node is None and not same and held is not None:
            node, edge = self._follow(old_graph, held, old_step, step)
        if node is not None and node in self.graph.nodes:
            self.scene.reveal(node)
        self.scene.state.advance()  # the replayed step's final state, not the new view's zeros
        if same and node is None and self._payload is not None:
            self.refresh()
        else:
            self.redraw()
        if node is not None and node in self.graph.nodes:
            self.select(node)
        if edge is not None:
            self.select_edge(edge)

    def _follow(self, old_graph: BackwardGraph, held: tuple[str | None, str | None],
                old_step: int | None, step: int) -> tuple[str | None, str | None]:
        """The (node, edge) to select on step `step` for the front's selection `held` (node,
        edge) on `old_graph`; the old selection is cleared at once (the inspector never asks the
        new graph for an old id), the edge follows its source node, and a node not in this
        step's graph leaves the selection empty with a notice."""
        sel, edge = held
        sel = sel if sel in old_graph.nodes else None
        if sel is None and edge is None:
            return None, None
        self.select(None)
        self.select_edge(None)
        new_edge = None
        if edge is not None:
            src, _, nr = edge.rpartition(":")
            new_src = follow_node(old_graph, src, self.graph) if src in old_graph.nodes else None
            if new_src is not None and any(e.id == f"{new_src}:{nr}" for e in self.graph.edges):
                new_edge = f"{new_src}:{nr}"
        if sel is None:
            return None, new_edge
        found = follow_node(old_graph, sel, self.graph)
        if found is None:
            where = f"on step {old_step}" if old_step not in (None, step) else "before"
            self._lost = (self.stepper.position,
                          f"{_describe(old_graph, sel)}, selected {where}, is not in step "
                          f"{step}'s graph: the inspector closed")  # fmt: skip
        return found, new_edge

    def replace(self, graph: BackwardGraph, stepper: Stepping, scene: Scene,
                notice: str | None) -> None:
        """Show another run instead (another rank's recording, rankswitch.py): its graph,
        stepper, scene and notice; the old stepper is closed. The caller redraws.

        Example:
            >>> from autograd_widget.view.scene import Scene
            >>> session = Session(g, st, Scene(g, st)); other = aw.Stepper(g)
            >>> session.replace(g, other, Scene(g, other), "another run")
            >>> session.stepper is other, session.notice
            (True, 'another run')
        """
        old = self.stepper
        self.graph, self.stepper, self.scene, self.notice = graph, stepper, scene, notice
        self._validity, self._payload, self._seen_error = _validity(graph), None, None
        self.running = False
        if old is not stepper:
            old.close()

    def release(self, owns_graph: bool) -> None:
        """Drop every torch reference (close the stepper; close the graph when `owns_graph`, else
        keep only its records); the drawing stays. Idempotent.

        Example:
            >>> from autograd_widget.view.scene import Scene
            >>> session = Session(g, st, Scene(g, st))
            >>> session.release(owns_graph=False)  # g stays live for others
            >>> session.live_stepper is None, session.graph.is_live, g.is_live
            (True, False, True)
        """
        if self.released:
            return
        self.released = True
        self.running = False
        self.stepper.close()
        if owns_graph:
            self.graph.close()
        else:
            # A graph we were given may serve other widgets and steppers: leave it live, and keep
            # only its records here so this session pins no torch object.
            records = BackwardGraph.from_dict(self.graph.to_dict())
            self.graph = records
            self.scene.set_graph(records)
            # The closed stepper must not pin the live graph. Both steppers' `graph` is
            # assignable; `Stepping` declares it read-only (engine/interface.py), hence the ignore.
            self.stepper.graph = records
        if self.front is not None:
            state = dict(self.state)
            state["running"] = False
            state["notice"] = RELEASED_NOTICE
            self.state = state
            self.front.draw(None, state)


def freed_notice(graph: BackwardGraph) -> str | None:
    """A banner when backward() already freed the graph (stepping fails at the first node that
    saved a tensor), else None: `capture()`'s warning, as a sentence.

    Example:
        >>> freed_notice(g) is None
        True
        >>> w = x * y
        >>> h = aw.capture(w)
        >>> w.backward()
        >>> freed_notice(h)
        'This graph was already freed by backward(): its saved tensors are gone, ...'
    """
    if graph.is_live and freed_by_backward(graph):
        return FREED_WARNING[0].upper() + FREED_WARNING[1:]
    return None
