"""`AutogradWidget` / `explore()`: the backward graph in the notebook cell, stepped from the UI.

The widget is traits and dispatch; everything else lives below it:
- `_graph` trait: the static drawing (`wire.payload.graph_payload` of the Scene), set once per
  layout; `_state` trait: the current step state (`view.stateview.StateView`, keys
  `wire.protocol.STATE_KEYS`), replaced after every change, so a second view, a reloaded page
  and the saved notebook all show the current step; `selected` / `selected_edge`: both ways.
- Commands from the front-end are custom messages `{"type": ...}` run by
  `wire.protocol.dispatch` over its one table, against this widget's `wire.session.Session`
  (graph, stepper, `view.scene.Scene`); replies and warnings go back as custom messages.
- Stepping from Python (`widget.stepper.step()`) notifies the widget, which refreshes `_state`.
- What `explore()` was given is resolved into the run shown (graph, stepper, a watch's step, a
  rank group's rank) by `wire.opening.open_run`; the loader, the `_bundle` trait and the reply
  to its BUNDLE request come from `wire.hostmessages`; a rank group's selector is
  `wire.rankswitch.RankSelection`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import anywidget
import torch
import traitlets

from .core.graph import BackwardGraph
from .engine.interface import Stepping
from .engine.record.recdiff import compare_recordings
from .engine.record.recording import Recording
from .engine.record.replay import recording_name
from .engine.step.stepper import Keep
from .engine.watch.watch import Watch
from .export.figure import to_figure
from .export.html import save_html, start_step
from .view import inspect
from .view.fitrule import default_viewport
from .view.folding import RepeatedSubgraph
from .view.labels import status_line
from .view.repeats import Repeat
from .view.scene import ORIENTATIONS, Scene
from .wire.hostmessages import bundle_reply, bundle_trait, loader_esm
from .wire.opening import check_options, open_run
from .wire.protocol import BUNDLE, WARNING, dispatch
from .wire.rankswitch import RankSelection, attach, show_rank
from .wire.session import Session
from .wire.trainpayload import timeline_payload

__all__ = ["AutogradWidget", "explore"]

log = logging.getLogger("autograd_widget")


class _Traits:
    """The widget as its Session's `Front`: payloads into the synced traits.

    The Session decides what to show; this class only writes it into the traits, under one
    `hold_sync` when several change together, so the front-end never sees a new graph with the
    old state (or the reverse).
    """

    def __init__(self, widget: AutogradWidget) -> None:
        self.widget = widget

    def show_step(self, step: int, stepper: Stepping) -> tuple[str | None, str | None]:
        """A watch's other step is shown: the cursor trait moves (without showing the step a
        second time: `_showing`), and the widget follows the new stepper (stepping it from
        Python updates the view). Returns what was selected (node id, edge id), for the
        selection to follow the same op onto that step's graph (`Session.show_step`)."""
        w = self.widget
        stepper.add_listener(w._on_stepper_change)
        w._showing = True
        try:
            w.watch_step = step
        finally:
            w._showing = False
        return w.selected, w.selected_edge

    def draw(self, graph: dict[str, Any] | None, state: dict[str, Any]) -> None:
        """A new drawing (None: unchanged) and step state, together; plumbing shown when the
        scene revealed some (its toggle follows the scene)."""
        w = self.widget
        show = w._built.scene.show_plumbing
        if graph is None and w.show_plumbing == show:  # a step: only the state moved
            w._state = state
            return
        with w.hold_sync():
            if graph is not None:
                w._graph = graph
            w._state = state
            if w.show_plumbing != show:  # reveal() showed plumbing
                w.show_plumbing = show

    def select(self, node_id: str | None) -> None:
        """The `selected` trait (validated: an unknown node is ignored)."""
        self.widget.selected = node_id

    def select_edge(self, edge_id: str | None) -> None:
        """The `selected_edge` trait (validated: an unknown edge is ignored)."""
        self.widget.selected_edge = edge_id

    def show_rank(self, rank: int, stepper: Stepping | None,
                  timeline: dict[str, Any] | None) -> None:
        """Another rank is shown (wire/rankswitch.py): the widget follows its stepper."""
        w = self.widget
        if stepper is not None:
            stepper.add_listener(w._on_stepper_change)
        with w.hold_sync():
            w.rank, w._timeline = rank, (w._timeline if timeline is None else timeline)


class AutogradWidget(RankSelection, anywidget.AnyWidget):
    """The interactive backward graph of one set of outputs.

    `widget.graph` and `widget.stepper` are the very objects the buttons drive; stepping either
    way keeps the view and the kernel in agreement.
    """

    # The loader's TEXT, not a path (wire/hostmessages.py says why): it asks for the bundle
    # once per page.
    _esm = loader_esm()
    # None until __init__ has built the session, so a widget whose construction failed closes
    # cleanly when garbage-collected.
    _session: Session | None = None
    _owns_graph = True
    #: The compared recording's name ("rank 1") with `compare_to=`, else "".
    compared: str = ""

    _graph = traitlets.Dict().tag(sync=True)
    _state = traitlets.Dict().tag(sync=True)
    #: The front-end bundle's hash and size; the loader fetches it once per page by this hash.
    _bundle = traitlets.Dict(bundle_trait()).tag(sync=True)
    selected = traitlets.Unicode(None, allow_none=True).tag(sync=True)
    #: The selected edge id ("src:output_nr"), e.g. after "First NaN/Inf".
    selected_edge = traitlets.Unicode(None, allow_none=True).tag(sync=True)
    #: The widget's height in px; None: what the graph needs, within about 70% of the window.
    height = traitlets.Int(None, allow_none=True).tag(sync=True)
    #: The layout direction asked for: "auto" (whichever shows the whole graph larger), "TB"
    #: or "LR"; `drawn_orientation` is the one drawn.
    orientation = traitlets.Unicode("auto").tag(sync=True)
    #: Show pure plumbing nodes (views, reshapes, transposes, expands); False contracts them.
    show_plumbing = traitlets.Bool(True).tag(sync=True)
    #: The timeline of `aw.explore(watch)` (wire/trainpayload.py), {} for anything else.
    _timeline = traitlets.Dict().tag(sync=True)
    #: The watched step whose graph is shown (`aw.explore(watch)`; set it to show another).
    watch_step = traitlets.Int(None, allow_none=True).tag(sync=True)
    #: A rank group's rank shown (set it, or `select_rank`) and its lines (wire/rankswitch.py).
    rank = traitlets.Int(None, allow_none=True).tag(sync=True)
    ranks: traitlets.List[dict[str, Any]] = traitlets.List().tag(sync=True)
    _showing = False

    def __init__(
        self,
        graph_or_outputs: BackwardGraph | Recording | torch.Tensor | Sequence[torch.Tensor],
        grad_outputs: torch.Tensor | Sequence[torch.Tensor | None] | None = None,
        *,
        model: torch.nn.Module | None = None,
        params: Mapping[str, torch.Tensor] | None = None,
        collapse: str = "auto",
        orientation: str = "auto",
        keep: Keep = "summaries",
        create_graph: bool = False,
        height: int | None = None,
        compare_to: Recording | None = None,
    ) -> None:
        check_options(collapse, orientation, height)
        # What was given, resolved (wire/opening.py): the graph, the stepper that drives it, a
        # watch's opening step, a rank group's rank; every refusal comes before anything is built.
        run = open_run(graph_or_outputs, grad_outputs, model=model, params=params, keep=keep,
                       create_graph=create_graph, compare_to=compare_to)
        graph, stepper, watch, group = run.graph, run.stepper, run.watch, run.group
        self._owns_graph = run.owns_graph
        super().__init__(height=height, orientation=orientation)
        self.collapse_mode = collapse
        scene = Scene(graph, stepper, collapse=collapse, orientation=orientation,
                      show_plumbing=self.show_plumbing, viewport=default_viewport(height))
        session = Session(graph, stepper, scene, _Traits(self), notice=run.notice)
        if compare_to is not None and run.recording is not None:
            #: The edges whose gradients differ from `compare_to` (`compare_recordings`).
            self.differences = compare_recordings(run.recording, compare_to)
            scene.state.mark_differences(self.differences)
            session.compared = self.compared = recording_name(compare_to)
        if watch is not None and run.step is not None:
            session.watch, session.collapse = watch, collapse
            session.watch_step = run.step
            stepper.run()  # the step's graph coloured by all its gradients
            self._timeline = timeline_payload(watch, run.step)
            self.watch_step = run.step
        self._graph = session.graph_payload()
        if group is not None:
            session.collapse, self.rank_group = collapse, group
            self.ranks, self.rank = attach(session, group), session.rank
        self._session = session
        session.refresh()
        stepper.add_listener(self._on_stepper_change)
        self.on_msg(self._handle_message)

    # ------------------------------------------------------------------ state
    @property
    def _built(self) -> Session:
        """The session `__init__` built (None only on a widget whose construction failed, which
        is never handed out: `_session` is None then, and `close()` has nothing to release)."""
        session = self._session
        if session is None:
            raise RuntimeError("this widget's construction failed: explore() the tensors again")
        return session

    @property
    def graph(self) -> BackwardGraph:
        """The captured graph the widget draws (its records only, after `release()`)."""
        return self._built.graph

    @property
    def stepper(self) -> Stepping:
        """The stepper the buttons drive (a `Replay` for a recording); stepping it from Python
        updates the view."""
        return self._built.stepper

    @property
    def status(self) -> str:
        """The status line the widget shows now: what ran and what runs next, "— done" at the
        end, the engine's message after a failed step.

        Example:
            >>> w = aw.explore(z, params={"x": x, "y": y})
            >>> w.status
            'step 0 / 4 → next AddBackward0'
            >>> _ = w.stepper.step(); w.status
            'ran AddBackward0 (step 1 / 4) → next AccumulateGrad (y)'
        """
        return str(self._state.get("status", ""))

    def _on_stepper_change(self, _stepper: Stepping) -> None:
        """The stepper's listener: it moved (from Python or a button), show its new state."""
        self._built.refresh()

    # ------------------------------------------------------------------ messages
    def _handle_message(self, _widget: Any, msg: Any, buffers: Sequence[Any]) -> None:
        """One custom message from the front-end: the loader's BUNDLE request is answered
        here (the host), every other one by `wire.protocol.dispatch` on the session."""
        # Nothing a message does may raise into the kernel: the dispatch answers every
        # malformed message itself; what is left (the bundle missing, a reply that cannot be
        # sent) is logged and warned about.
        try:
            if isinstance(msg, dict) and msg.get("type") == BUNDLE:
                self.send(bundle_reply(msg))
                return
            for out in dispatch(self._built, msg):
                self.send(out)
        except Exception as err:
            log.exception("autograd_widget: a front-end message failed")
            try:
                self.send({"type": WARNING, "message": f"{type(err).__name__}: {str(err)[:300]}"})
            except Exception:
                log.exception("autograd_widget: the warning could not be sent either")

    # ------------------------------------------------------------------ a watch, a rank group
    @traitlets.observe("watch_step")
    def _show_watch_step(self, change: dict[str, Any]) -> None:
        """`widget.watch_step = k` (or the timeline's cursor) shows watched step k; a step that
        was not watched is refused with a warning and the trait goes back."""
        session = self._session
        step = change["new"]
        if self._showing or session is None or session.watch is None or step is None:
            return
        if step != session.watch_step:
            if not session.is_watched(step):
                log.warning("autograd_widget: step %r was not watched", step)
                self.watch_step = session.watch_step
                return
            session.show_step(step)

    @traitlets.validate("rank")
    def _check_rank(self, proposal: dict[str, Any]) -> int | None:
        """Setting `rank` shows that rank's run (`select_rank`); a ValueError when it can't."""
        session = self._session
        rank: int | None = proposal["value"]
        if session is not None and rank != session.rank:
            show_rank(session, rank)
        return rank

    @property
    def watch(self) -> Watch | None:
        """The `aw.watch` this widget shows (`aw.explore(watch)`), else None."""
        return None if self._session is None else self._session.watch

    # ------------------------------------------------------------------ selection and layout
    @traitlets.validate("selected")
    def _check_selected(self, proposal: dict[str, Any]) -> str | None:
        """A node of the drawn graph or None; an unknown id is ignored with a warning (the
        selection stays, if it still names a drawn node)."""
        value: str | None = proposal["value"]
        # the drawn graph's nodes: a compiled region's ops too
        drawn = self.graph.nodes if self._session is None else self._session.scene.graph.nodes
        if value is not None and value not in drawn:
            log.warning("autograd_widget: ignoring selection of unknown node %r", value)
            return self.selected if self.selected in drawn else None
        return value

    @traitlets.validate("selected_edge")
    def _check_selected_edge(self, proposal: dict[str, Any]) -> str | None:
        """An edge id of the graph or None; an unknown id is ignored with a warning."""
        value: str | None = proposal["value"]
        if value is None:
            return None
        try:
            self.graph.edge(value)
        except KeyError:
            log.warning("autograd_widget: ignoring selection of unknown edge %r", value)
            cur = self.selected_edge
            return cur if cur is not None and cur in {e.id for e in self.graph.edges} else None
        return value

    @traitlets.validate("orientation")
    def _check_orientation(self, proposal: dict[str, Any]) -> str:
        """The layout direction: "auto", "TB" or "LR"; anything else is a TraitError."""
        value: str = proposal["value"]
        if value not in ORIENTATIONS:
            raise traitlets.TraitError("orientation must be 'auto', 'TB' or 'LR'")
        return value

    @traitlets.validate("height")
    def _check_height(self, proposal: dict[str, Any]) -> int | None:
        """None (what the graph needs) or at least 100 px; anything else is a TraitError."""
        v: int | None = proposal["value"]
        if v is not None and v < 100:
            raise traitlets.TraitError("height must be None or a number of pixels >= 100")
        return v

    @property
    def drawn_orientation(self) -> str:
        """The direction drawn now, "TB" or "LR" (what orientation="auto" chose).

        Example:
            >>> w = aw.explore(z, params={"x": x, "y": y}, orientation="LR")
            >>> w.drawn_orientation
            'LR'
        """
        return self._built.scene.direction

    @traitlets.observe("orientation", "show_plumbing")
    def _relayout(self, change: dict[str, Any]) -> None:
        """The user changed `orientation` or `show_plumbing`: a new drawing when the layout
        changed (the step state is mapped onto it, not recomputed)."""
        session = self._session
        if session is None or change["old"] == change["new"]:
            return
        scene = session.scene
        before = scene.version
        scene.set_orientation(self.orientation)
        scene.set_plumbing(self.show_plumbing)
        if scene.version != before:
            session.redraw()

    def _change_scene(self, action: Any, *args: Any, **kwargs: Any) -> None:
        """Run a Scene gesture, then show the new drawing."""
        action(*args, **kwargs)
        self._built.redraw()

    # ------------------------------------------------------------------ folds
    @property
    def collapsed(self) -> list[str]:
        """Module paths currently folded into boxes."""
        return self._built.scene.collapsed

    @property
    def modules(self) -> list[str]:
        """Every module path that can be folded."""
        return self._built.scene.modules

    @property
    def visible(self) -> list[str]:
        """The items drawn now: a node id for each node drawn on its own, "box:<key>" for each
        folded module or folded run (the frame of an unfolded module is not an item).

        Example:
            >>> w = aw.explore(model(torch.randn(5, 4)).sum(), model=model, collapse="modules")
            >>> w.visible
            ['n0', 'box:2', 'n3', 'box:0']
        """
        return self._built.scene.visible_ids()

    def collapse(self, module: str) -> None:
        """Fold every node of `module` (and its submodules) into one box.

        Example:
            >>> w = aw.explore(model(torch.randn(5, 4)).sum(), model=model, collapse="none")
            >>> w.collapse("0"); w.collapsed
            ['0']
        """
        self._change_scene(self._built.scene.collapse, module)

    def expand(self, module: str | None = None) -> None:
        """Unfold `module` into its children (its submodules stay folded), or everything (folded
        runs included). A fold key unfolds that run into one box per block (`unfold`).

        Example:
            >>> w = aw.explore(model(torch.randn(5, 4)).sum(), model=model, collapse="modules")
            >>> w.expand("0"); w.collapsed
            ['2']
            >>> w.expand(); w.collapsed
            []
        """
        self._change_scene(self._built.scene.expand, module)

    def reveal(self, node_id: str) -> None:
        """Make `node_id` visible: unfold the boxes and folded runs holding it (a run's other
        blocks stay boxes), show plumbing if it is some.

        Example:
            >>> w = aw.explore(model(torch.randn(5, 4)).sum(), model=model, collapse="modules")
            >>> w.reveal("n7"); "n7" in w.visible, w.collapsed
            (True, ['2'])
        """
        self._change_scene(self._built.scene.reveal, node_id)

    @property
    def repeats(self) -> list[Repeat]:
        """Every run of identical blocks that can fold (`repeats.find_repeats`), outermost
        first; nested runs (inside a repeated block) included."""
        return list(self._built.scene.fold_index().values())

    @property
    def folds(self) -> dict[str, Repeat | RepeatedSubgraph]:
        """The runs folded now: fold key (the run's label, "layers.0–47 ×48") -> `Repeat`, or
        `RepeatedSubgraph` for a run of repeated subgraphs outside modules (collapse="auto")."""
        return self._built.scene.folds

    def fold(self, repeat: str | Repeat | None = None) -> None:
        """Fold a run of repeated blocks into one box "layers.0–47 ×48", or every run found.

        `repeat`: a fold key or label, a `Repeat` from `widget.repeats`, or one member's module
        path ("layers.3"). Collapsed modules inside the run are absorbed by its box; a collapsed
        module holding the whole run still shows as that module's box.

        Example:
            >>> blocks = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(3)])
            >>> out = blocks(torch.randn(2, 4, requires_grad=True)).sum()
            >>> w = aw.explore(out, model=blocks, collapse="none")
            >>> w.fold("1"); list(w.folds)
            ['0–2 ×3']
        """
        self._change_scene(self._built.scene.fold, repeat)

    def unfold(self, repeat: str | Repeat | None = None, *, blocks: bool = True) -> None:
        """Unfold a folded run (or every one), locally: with `blocks` (default) each block of the
        run becomes its own module box (48 boxes, not 2,700 nodes); other folds and collapsed
        modules are unchanged. `blocks=False` only drops the fold.

        Example:
            >>> blocks = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(3)])
            >>> out = blocks(torch.randn(2, 4, requires_grad=True)).sum()
            >>> w = aw.explore(out, model=blocks, collapse="repeats")
            >>> w.unfold(); w.folds, w.collapsed
            ({}, ['0', '1', '2'])
        """
        self._change_scene(self._built.scene.unfold, repeat, blocks=blocks)

    # ------------------------------------------------------------------ reports
    def memory(self, *, exclude_leaves: bool = False, top: int = 10) -> dict[str, Any]:
        """Saved bytes per visible item (boxes sum their members), the total and top holders.

        Example:
            >>> w = aw.explore(z, params={"x": x, "y": y})
            >>> w.memory()["total"]  # PowBackward0 saved x: one float32
            4
        """
        return inspect.memory_report(self._built.scene, exclude_leaves=exclude_leaves, top=top)

    def sensitivity(self, samples: int = 16, seed: int | None = 0) -> dict[str, Any]:
        """Per visible item: log10 of the squared Frobenius norm of the node's gradient map
        (`Stepper.jacobian_norms`; a box shows the largest of its members), for colouring.

        Example:
            >>> w = aw.explore(z, params={"x": x, "y": y})
            >>> s = w.sensitivity(samples=8); s["samples"], s["nodes"]["n1"]["estimate"]
            (8, 16.0)
        """
        s = self._built
        return inspect.sensitivity_report(s.scene, s.stepper, samples, seed)

    # ------------------------------------------------------------------ public
    def to_figure(self) -> Any:
        """A plotly `go.Figure` of the current state (for `fig.show()`, `write_html`, ...).

        Example:
            >>> w = aw.explore(z, params={"x": x, "y": y})
            >>> w.to_figure().layout.title.text
            'step 0 / 4 → next AddBackward0'
        """
        s = self._built
        return to_figure(
            self._graph, s.scene.state.visible_arrays(), status_line(s.scene.graph, s.stepper)
        )

    def save_html(
        self, path: str | os.PathLike[str], title: str | None = None,
        description: str | None = None, *, start: int | Literal["current"] = 0,
    ) -> Path:
        """Write the whole step-through (recorded by a separate stepper from step 0 to the end;
        this widget's stepper is not moved) as one self-contained, offline HTML file: a header
        with the title, the description and how to use it, then the widget filling the window.

        Args:
            path: the .html file to write (its folder is created).
            title: the page's title (None: "autograd_widget — backward of MODEL (N nodes)").
            description: a paragraph under the title, plain text (None: none).
            start: the step the page opens at: 0 (before the first step), a step number, or
                "current" (where this widget is now, a failed step included); the page's
                Reset still goes back to step 0.

        Returns:
            The path written.

        Example:
            >>> import tempfile, pathlib
            >>> w = aw.explore(z, params={"x": x, "y": y})
            >>> with tempfile.TemporaryDirectory() as d:
            ...     w.save_html(pathlib.Path(d) / "run.html", title="z = x² + y").name
            'run.html'
        """
        if self._built.released:
            raise RuntimeError("this widget was released: explore() the tensors again to export")
        return save_html(self, Path(path), title=title, description=description,
                         start=start_step(self.stepper, start))

    def release(self) -> None:
        """Drop every torch reference (graph, stepper, kept tensors); the drawing stays.

        Example:
            >>> w = aw.explore(z, params={"x": x, "y": y})
            >>> w.release(); w.graph.is_live, w.visible
            (False, ['n0', 'n1', 'n2', 'n3'])
        """
        session = self._session
        if session is None or session.released:
            return
        session.stepper.remove_listener(self._on_stepper_change)
        session.release(owns_graph=self._owns_graph)

    def close(self) -> None:
        """Release (see `release`) and close the widget's comm.

        Example:
            >>> w = aw.explore(z, params={"x": x, "y": y})
            >>> w.close(); w.graph.is_live
            False
        """
        self.release()
        super().close()


def explore(
    outputs: torch.Tensor | Sequence[torch.Tensor] | Recording,
    grad_outputs: torch.Tensor | Sequence[torch.Tensor | None] | None = None,
    *,
    model: torch.nn.Module | None = None,
    params: Mapping[str, torch.Tensor] | None = None,
    collapse: Literal["auto", "modules", "repeats", "none"] = "auto",
    orientation: Literal["auto", "TB", "LR"] = "auto",
    keep: Literal["summaries", "tensors"] | int = "summaries",
    create_graph: bool = False,
    height: int | None = None,
    compare_to: Recording | None = None,
) -> AutogradWidget:
    """Capture `outputs`' backward graph and show it as an interactive, steppable widget.

    Display the returned widget (the last line of a notebook cell): the graph, roots on top;
    **Step** calls the next node as the engine would and writes the gradients it produced on
    its edges. `widget.stepper` is the same stepper from Python (stepping it moves the drawing);
    `widget.graph` the captured `BackwardGraph`. Nothing of yours is touched: no `.grad` is
    written, no hook stays, no version counter moves.

    `outputs` may also be a `Watch` (`aw.watch`, `aw.load_watch`): a timeline of the training
    run (steps across, modules down, expandable to ops, coloured by log gradient norm; the loss
    above; a step cursor with Play; "First NaN/Inf"; the modules whose norm moved more than 10x)
    above the selected step's graph, coloured by that step's gradients (`widget.watch_step`
    selects another; the "gain" colour mode shows |grad out| / |grad in| per node). It opens on
    the first non-finite watched step, else the last one. Or every rank's files
    (`aw.load_watch("run_{rank}.awwatch")`, `aw.load_recording("x_{rank}.awrec")`): that view of
    one rank, with a rank selector (`widget.rank`, `ranks`, `select_rank`), opening where it broke.

    Args:
        outputs: what to differentiate: a tensor with a `grad_fn` (the loss, a model's output)
            or a list of them; or a `Recording` (`aw.record`, `aw.load_recording`) to replay
            the engine's own run, in the order it ran the nodes, the node that raised drawn
            failed (saved values, edits and probes need a live graph and are not offered). A
            leaf tensor (`x` itself) raises `ValueError`: pass what was computed from it.
        grad_outputs: the gradient each output is seeded with, as in `torch.autograd.grad`: a
            tensor or one per output (None: 1 for a real scalar output). Required for an output
            with more than one element.
        model: the `nn.Module` that computed `outputs`: its parameters name the leaves
            ("0.weight") and place nodes in modules. With `with aw.track(model):` around the
            forward every node gets its module. A model none of whose parameters is in the
            graph is ignored, with a warning saying what the graph's leaves are.
        params: names for other leaves, `{"x": x}` (they win over `model`'s names).
        collapse: how the drawing is folded: "auto" (the first render shows the WHOLE graph
            with legible labels in the pixels the drawing has: a graph that fits shows every
            node; else runs of identical blocks fold first into one box each, "layers.0–47
            ×48", and runs of repeated subgraphs, "×1000 · repeated block (MulBackward0 →
            SinBackward0)", then modules collapse from the deepest level; chosen again when
            the drawing's size changes, the user's own folds and unfolds kept), "modules"
            (one box per top-level module), "repeats" (the runs only) or "none". A click on a
            box unfolds it (`widget.expand`, `fold`, `unfold`, `reveal`).
        orientation: "auto" (top-to-bottom or left-to-right, whichever shows the whole graph
            larger in the drawing's aspect), "TB" (roots on top) or "LR" (roots on the left).
        keep: what the stepper keeps of each edge's gradient: "summaries" (statistics and
            small values), "tensors" (every gradient), or a budget in bytes for tensors (leaf
            gradients are always kept).
        create_graph: step with grad mode on, as `torch.autograd.grad(..., create_graph=True)`:
            the gradients have a graph of their own (second derivatives).
        height: the drawing's height in pixels (at least 100), or None: what the graph
            needs, within about 70% of the window, at least 420 px (the drawing has a drag
            handle to resize it).
        compare_to: another `Recording` of the same program (another rank, another run): the
            edges whose gradients differ (`aw.compare_recordings`) are drawn in their own
            colour once they flowed (`widget.differences`; `aw.side_by_side(a, b)` shows both).

    Returns:
        The widget (`AutogradWidget`).

    Raises:
        ValueError: a leaf or a tensor without a graph as `outputs` (the message says what to
            pass), a bad option.
        RuntimeError: an output with more than one element and no `grad_outputs` (as
            `backward()` refuses it).
        TypeError: arguments of the wrong kind (e.g. `model=` that is not an `nn.Module`; the
            module itself as `outputs`: pass what it computed, `aw.explore(model(x).sum(),
            model=model)`).

    Warns:
        UserWarning: the graph was already freed by `backward()` (it is drawn, and the widget
            says stepping fails); `model=` names nothing in the graph.

    Example:
        >>> w = aw.explore(x**2 + y, params={"x": x, "y": y})
        >>> _ = w.stepper.run()
        >>> w.stepper.grad(x)
        tensor(4.)
        >>> len(w.visible)
        4
    """
    return AutogradWidget(
        outputs,
        grad_outputs,
        model=model,
        params=params,
        collapse=collapse,
        orientation=orientation,
        keep=keep,
        create_graph=create_graph,
        height=height,
        compare_to=compare_to,
    )
