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
    from ..engine.interface import Stepping
    from ..engine.record.ranks import RankRecordings
    from ..engine.record.rankwatch import RankWatches
    from ..engine.record.watch import Watch

__all__ = ["RELEASED_NOTICE", "Front", "Session", "freed_notice"]

RELEASED_NOTICE = "released: the drawing stays, stepping needs explore() again"


def _validity(graph: BackwardGraph) -> dict[str, str]:
    """Stale/freed saved tensors per node; none for a graph of records (a recording's)."""
    return node_validity(graph) if graph.is_live else {}


class Front(Protocol):
    """Where a Session shows its payloads (the widget's synced traits)."""

    def draw(self, graph: dict[str, Any] | None, state: dict[str, Any]) -> None:
        """Show a new graph payload (None: unchanged) and step state, together."""

    def select(self, node_id: str | None) -> None:
        """Select a real node (None: nothing)."""

    def select_edge(self, edge_id: str | None) -> None:
        """Select a real edge (None: nothing)."""


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
            # what is stepped: the front-end offers no saved values, edits or probes on a replay
            self._payload["source"] = "recording" if self.recorded else "live"
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
        state["notice"] = self._stalled[1] if self._stalled is not None else self.notice
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
        old = self.stepper
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
        old.close()
        self.watch_step = step
        show = getattr(self.front, "show_step", None)
        if show is not None:
            show(step, stepper)
        if node is not None and node in self.graph.nodes:
            self.scene.reveal(node)
            self.redraw()
            self.select(node)
        elif same and self._payload is not None:
            self.refresh()
        else:
            self.redraw()

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
            self.stepper.graph = records  # the closed stepper must not pin the live graph
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
