"""The Scene: what is drawn now, and the gestures that change it (fold, unfold, reveal).

A Scene owns, for one graph under one stepper:
- the fold options: collapsed modules, folded runs of repeated blocks, the plumbing toggle and
  the orientation;
- what follows from them, rebuilt together by `rebuild()` (never one without the others): the
  visible graph (`visible`), its layout (`layout`) and the step-state arrays mapped onto it
  (`state`, a `StateView`);
- the item of a node and the node of an item (`item_of`, `node_of_item`).

Every change bumps `version`, so whoever encodes the drawing (wire's Session) knows when to
re-encode. Torch-free: it reads graph records and the stepper's public API only. The widget and
the standalone export each drive their own Scene.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from ..util.gcpause import gc_paused
from . import modules
from . import visible as vis_mod
from .autofold import FoldPlan, Pins, choose_folds, node_fold_positions
from .clusters import ClusterLayout, ClusterLayouter
from .compiledframes import drawn_graph, opened_regions, region_frame
from .fitrule import Viewport, default_viewport
from .folding import RepeatedSubgraph
from .placement import scene_layout
from .repeats import Repeat, find_repeats
from .stateview import StateView
from .visible import VisibleGraph, visible_graph

if TYPE_CHECKING:
    from ..core.graph import BackwardGraph
    from ..engine.interface import Stepping

__all__ = ["BOX_PREFIX", "COLLAPSE_MODES", "ORIENTATIONS", "Scene", "compute_layout"]

#: What `collapse=` accepts.
COLLAPSE_MODES = ("auto", "modules", "repeats", "none")
#: What `orientation=` accepts ("auto": the direction that shows the whole graph larger).
ORIENTATIONS = ("auto", "TB", "LR")
#: Prefix of a box's item id in `Scene.visible_ids` (a folded module or a folded run).
BOX_PREFIX = "box:"


def compute_layout(
    graph: BackwardGraph,
    orientation: str = "TB",
    visible: VisibleGraph | None = None,
    folds: Mapping[str, Repeat] | None = None,
) -> ClusterLayout:
    """The layout of the visible items (`placement.scene_layout`): roots on top (TB) or left
    (LR), every unfolded module in a titled frame, leaves beside their consumers.

    Args:
        graph: the graph `visible` was built from (its roots are laid out first).
        orientation: "TB" or "LR".
        visible: the visible graph (every node by default).
        folds: fold key -> run of the folded runs in `visible`.

    Example:
        >>> layout = compute_layout(g, "LR", visible_graph(g)); layout.orientation, layout.n_nodes
        ('LR', 4)
    """
    vis = visible if visible is not None else visible_graph(graph)
    return scene_layout(graph, vis, orientation, folds=folds)


class Scene:
    """The drawing of `graph` under `stepper`: folds, visible graph, layout, step state.

    Args:
        graph: the graph (records suffice).
        stepper: the stepper whose state is drawn (read through its public API).
        collapse: the starting folds, one of `COLLAPSE_MODES` ("auto": the whole graph
            legible in `viewport`, `autofold.choose_folds`: runs of repeated blocks and of
            repeated subgraphs fold first, then modules from the deepest level; chosen again
            by `fit_to` when the drawing's size changes, the user's own folds kept). Ignored
            when `collapsed` or `folds` is given.
        orientation: "TB", "LR" or "auto" (the one that shows the drawing larger in
            `viewport`; `direction` says which).
        show_plumbing: show views/reshapes/transposes (False contracts them).
        collapsed, folds: explicit starting folds (module paths; fold key -> run), e.g. another
            scene's `collapsed` and `folds`, to draw the same thing.
        viewport: the drawing's size in px (default: `fitrule.default_viewport()`).

    Example:
        >>> gm = aw.capture(model(torch.randn(5, 4)).sum(), model=model)
        >>> scene = Scene(gm, aw.Stepper(gm), collapse="modules"); scene.visible_ids()
        ['n0', 'box:2', 'n3', 'box:0']
        >>> scene.expand("0"); scene.visible_ids()
        ['n0', 'box:2', 'n3', 'n5', 'n7', 'n8', 'n9']
    """

    def __init__(
        self,
        graph: BackwardGraph,
        stepper: Stepping,
        *,
        collapse: str = "auto",
        orientation: str = "TB",
        show_plumbing: bool = True,
        collapsed: Iterable[str] | None = None,
        folds: Mapping[str, Repeat | RepeatedSubgraph] | None = None,
        viewport: Viewport | None = None,
    ) -> None:
        if collapse not in COLLAPSE_MODES:
            raise ValueError(f"collapse must be one of {COLLAPSE_MODES}, got {collapse!r}")
        if orientation not in ORIENTATIONS:
            raise ValueError(f"orientation must be 'auto', 'TB' or 'LR', got {orientation!r}")
        # What is drawn: the graph, with the compiled regions the stepper opens as frames of ops.
        regions = opened_regions(graph, stepper)
        graph = drawn_graph(graph, regions)
        self.graph = graph
        self.stepper = stepper
        #: The direction asked for: "auto", "TB" or "LR" (`direction` is the one drawn).
        self.orientation = orientation
        self.show_plumbing = bool(show_plumbing)
        #: The drawing's size in px the folds and direction were chosen for.
        self.viewport = viewport or default_viewport()
        #: Bumped by every rebuild: the drawing changed.
        self.version = 0
        self._runs: dict[str, Repeat] | None = None  # fold key -> run, found on first need
        # collapse="auto": the folds follow the drawing's size (`fit_to`), but not the user's
        # own: what they opened stays open, what they folded stays folded.
        self._auto = collapse == "auto" and collapsed is None and folds is None
        self._opened: set[str] = set()
        self._closed: set[str] = set()
        # An opened compiled region starts folded into one box, like a module: a fold of the
        # user's own as far as refitting goes (a click opens it, and it stays open).
        region_frames = {region_frame(graph, graph.regions[nid]) for nid in regions}
        if collapsed is None and folds is None and collapse in ("auto", "modules"):
            self._closed |= region_frames
        # The view model allocates an object or two per node: let the cycle collector rescan
        # the world once afterwards rather than many times during (halves a 50k-node build).
        self._layouter = ClusterLayouter()
        self._direction = orientation if orientation != "auto" else "TB"
        plan: FoldPlan | None = None
        if collapsed is not None or folds is not None:
            self._folds: dict[str, Repeat | RepeatedSubgraph] = dict(folds or {})
            self._collapsed: set[str] = set(collapsed or ())
        elif collapse == "auto":
            plan = self._plan()
            self._folds, self._collapsed = dict(plan.folds), set(plan.collapsed)
        else:
            self._folds = dict(self.fold_index()) if collapse == "repeats" else {}
            self._collapsed = vis_mod.default_collapsed(
                graph, collapse, vis_mod.fold_members(self._folds)
            )
        if collapse == "modules" and collapsed is None and folds is None:
            self._collapsed |= {f for f in region_frames if not any(
                modules.in_group(f, c) for c in self._collapsed)}
        if plan is None and orientation == "auto":
            plan = self._plan()
        #: The runs of repeated subgraphs outside modules this scene knows (they can refold).
        self._subgraph_runs = {k: r for k, r in self._folds.items()
                               if isinstance(r, RepeatedSubgraph)}
        with gc_paused():
            if plan is not None:
                self._direction = plan.orientation
                self.visible, self.layout = plan.visible, plan.layout
            else:
                self.visible = self._visible_graph()
                self.layout = self._layout()
            self.state = StateView(graph, stepper, self.visible)

    # ------------------------------------------------------------------ fitting
    def _plan(self) -> FoldPlan:
        """What collapse="auto" (or only orientation="auto") draws in `viewport` now."""
        def runs() -> dict[str, Repeat | RepeatedSubgraph]:
            return {**self.fold_index(), **getattr(self, "_subgraph_runs", {})}

        fixed = None if self._auto else (self._folds, frozenset(self._collapsed))
        return choose_folds(
            self.graph, runs, self.viewport, orientation=self.orientation,
            show_plumbing=self.show_plumbing, layouter=self._layouter,
            pins=Pins(frozenset(self._opened), frozenset(self._closed)), fixed=fixed,
        )

    @property
    def direction(self) -> str:
        """The direction drawn now, "TB" or "LR" (orientation="auto" chose it)."""
        return self._direction

    @property
    def fitting(self) -> bool:
        """Whether the drawing follows its size (collapse="auto" or orientation="auto")."""
        return self._auto or self.orientation == "auto"

    def fit_to(self, viewport: Viewport) -> bool:
        """The drawing is `viewport` px now: choose the folds (collapse="auto") and the
        direction (orientation="auto") again for it, keeping the user's own folds and
        unfolds; True when the drawing changed (rebuilt, `version` bumped).

        Example:
            >>> blocks = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(30)])
            >>> gb = aw.capture(blocks(torch.randn(2, 4, requires_grad=True)).sum(),
            ...                 model=blocks)
            >>> scene = Scene(gb, aw.Stepper(gb), viewport=Viewport(800, 450))
            >>> scene.folds != {}, scene.fit_to(Viewport(20000, 20000)), scene.folds
            (True, True, {})
        """
        self.viewport = viewport
        if not self.fitting:
            return False
        plan = self._plan()
        if (plan.folds.keys() == self._folds.keys() and plan.collapsed == self._collapsed
                and plan.orientation == self._direction):
            return False
        self._folds, self._collapsed = dict(plan.folds), set(plan.collapsed)
        self._subgraph_runs.update({k: r for k, r in self._folds.items()
                                    if isinstance(r, RepeatedSubgraph)})
        self._direction = plan.orientation
        self.visible, self.layout = plan.visible, plan.layout
        self.state.set_visible(self.visible)
        self.version += 1
        return True

    def fold_level(self, anchor: str | None = None) -> list[str]:
        """Fold the deepest level of unfolded modules (their frames) into boxes: zooming out
        past legible. `anchor`, a module path drawn (one of them, or a frame holding one: the
        frame under the pointer), keeps its place. Returns the modules folded; raises
        ValueError when no module is unfolded.

        Example:
            >>> inner = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Tanh())
            >>> net = torch.nn.Sequential(inner, torch.nn.Linear(4, 2))
            >>> gn = aw.capture(net(torch.randn(5, 4)).sum(), model=net)
            >>> scene = Scene(gn, aw.Stepper(gn), collapse="none")
            >>> scene.fold_level(), scene.collapsed
            (['0'], ['0'])
        """
        frames = self.layout.frames
        if not frames:
            raise ValueError("no unfolded module to fold")
        deepest = max(f.depth for f in frames)
        paths = sorted(f.path for f in frames if f.depth == deepest)
        self._collapsed.update(paths)
        self._closed.update(paths)
        self._opened.difference_update(paths)
        key = "m:" + anchor if anchor is not None else None
        self.rebuild(keep=(key, key) if key else None)  # (no anchor drawn: nothing moves)
        return paths

    # ------------------------------------------------------------------ the drawing
    def _visible_graph(self) -> VisibleGraph:
        return visible_graph(
            self.graph, self._collapsed, self.show_plumbing,
            folds=vis_mod.fold_members(self._folds),
            node_folds=node_fold_positions(self.graph, self._folds),
        )

    def _layout(self) -> ClusterLayout:
        return scene_layout(self.graph, self.visible, self._direction, folds=self._folds,
                            layouter=self._layouter)

    def rebuild(self, *, keep: tuple[str, str] | None = None) -> None:
        """New visible graph (folds, plumbing), layout and state mapping; bumps `version`.

        `keep` = (key before, key after), each ``"m:<path>"`` (a module's box or frame) or a
        node id: the new drawing is translated so the second's top-left corner lands where the
        first's was (an unfolded module opens where its box was; every other cluster keeps its
        inner layout, so the drawing around it only moves).

        Example:
            >>> scene = Scene(g, st)
            >>> scene.rebuild(); scene.version
            1
        """
        before = self._anchor(keep[0]) if keep else None
        with gc_paused():
            self.visible = self._visible_graph()
            self.layout = self._layout()
            self.state.set_visible(self.visible)
        after = self._anchor(keep[1]) if keep else None
        if before is not None and after is not None:
            self.layout = self.layout.translated(before[0] - after[0], before[1] - after[1])
        self.version += 1

    def _anchor(self, key: str) -> tuple[float, float] | None:
        """Top-left corner of a module's box or frame (``"m:<path>"``), None when not drawn."""
        path = key[2:]
        for j, grp in enumerate(self.visible.item_group):
            if grp == path and self.visible.item_real[j] < 0:
                return self.layout.anchor(item=j)
        if any(f.path == path for f in self.layout.frames):
            return self.layout.anchor(path=path)
        return None

    def set_graph(self, graph: BackwardGraph) -> None:
        """Swap in a graph with the same records (e.g. its `from_dict` copy on release): the
        drawing is unchanged.

        Example:
            >>> scene = Scene(g, st)
            >>> scene.set_graph(aw.BackwardGraph.from_dict(g.to_dict()))  # records only
            >>> scene.graph.is_live, scene.version
            (False, 0)
        """
        graph = drawn_graph(graph, opened_regions(graph, self.stepper))
        self.graph = graph
        self.state.graph = graph

    def set_stepper(self, stepper: Stepping) -> None:
        """Show another stepper of the same graph (a watch's other step: the same structure,
        other gradients): the drawing is unchanged, the state is the new stepper's.

        Example:
            >>> scene = Scene(g, st)
            >>> scene.set_stepper(aw.Stepper(g)); scene.state.stepper is scene.stepper
            True
        """
        self.stepper = stepper
        with gc_paused():
            self.state = StateView(self.graph, stepper, self.visible)

    def set_orientation(self, orientation: str) -> None:
        """Lay out top-to-bottom ("TB"), left-to-right ("LR"), or whichever shows the drawing
        larger ("auto"); rebuilds when the direction drawn changes.

        Example:
            >>> scene = Scene(g, st)
            >>> scene.set_orientation("LR"); scene.layout.orientation, scene.version
            ('LR', 1)
        """
        if orientation not in ORIENTATIONS:
            raise ValueError(f"orientation must be 'auto', 'TB' or 'LR', got {orientation!r}")
        self.orientation = orientation
        if orientation == "auto":
            want = choose_folds(
                self.graph, dict, self.viewport, orientation="auto",
                show_plumbing=self.show_plumbing, layouter=self._layouter,
                fixed=(self._folds, frozenset(self._collapsed))).orientation
        else:
            want = orientation
        if want != self._direction:
            self._direction = want
            self.rebuild()

    def set_plumbing(self, show: bool) -> None:
        """Show (True) or contract (False) plumbing nodes; rebuilds when it changes.

        Example:
            >>> scene = Scene(g, st); scene.set_plumbing(False); scene.show_plumbing
            False
        """
        if bool(show) != self.show_plumbing:
            self.show_plumbing = bool(show)
            self.rebuild()

    # ------------------------------------------------------------------ items
    @property
    def node_ids(self) -> list[str]:
        """Real node ids in graph order (real node index -> id)."""
        return self.state.node_ids

    @property
    def node_index(self) -> dict[str, int]:
        """Real node id -> its index in graph order."""
        return self.state.node_index

    def item_of(self, node_id: str) -> int:
        """The visible item showing `node_id` (its box when folded), -1 when hidden.

        Example:
            >>> scene = Scene(g, st)
            >>> scene.item_of("n0"), scene.item_of("n3")
            (0, 3)
        """
        return int(self.visible.real_item[self.state.node_index[node_id]])

    def item_index(self, value: object) -> int | None:
        """`value` when it is a visible item index (an int, not a bool, in range), else None.

        Example:
            >>> scene = Scene(g, st)
            >>> scene.item_index(0), scene.item_index(True), scene.item_index(4)
            (0, None, None)
        """
        if isinstance(value, bool) or not isinstance(value, int):
            return None
        return value if 0 <= value < self.visible.n_items else None

    def node_of_item(self, item: int) -> str | None:
        """The real node id item `item` shows; None for a box.

        Example:
            >>> scene = Scene(g, st)
            >>> scene.node_of_item(0)
            'n0'
        """
        r = int(self.visible.item_real[item])
        return self.state.node_ids[r] if r >= 0 else None

    def box_members(self, item: int) -> list[str]:
        """Real node ids inside box `item` (empty for a real node's item).

        Example:
            >>> gm = aw.capture(model(torch.randn(5, 4)).sum(), model=model)
            >>> scene = Scene(gm, aw.Stepper(gm), collapse="modules")
            >>> scene.box_members(scene.item_of("n5")), scene.box_members(scene.item_of("n0"))
            (['n5', 'n7', 'n8', 'n9'], [])
        """
        members = self.visible.item_members[item]
        ids = self.state.node_ids
        return [] if members is None else [ids[int(i)] for i in members]

    def box_fold(self, item: int) -> Repeat | RepeatedSubgraph | None:
        """The run of repeated blocks (or of repeated subgraphs outside modules) box `item`
        stands for; None for a module box or a node.

        Example:
            >>> blocks = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(3)])
            >>> gb = aw.capture(blocks(torch.randn(2, 4, requires_grad=True)).sum(), model=blocks)
            >>> scene = Scene(gb, aw.Stepper(gb), collapse="repeats")
            >>> scene.box_fold(scene.item_of("n1")).label
            '0–2 ×3'
        """
        path = self.visible.item_group[item] or ""
        return self._folds.get(path) if path in self.visible.folds else None

    def edge_id(self, visible_edge: int) -> str:
        """The real edge id visible edge `visible_edge` shows.

        Example:
            >>> scene = Scene(g, st)
            >>> scene.edge_id(0)
            'n0:0'
        """
        return self.graph.edges[int(self.visible.edge_real[visible_edge])].id

    def visible_ids(self) -> list[str]:
        """The items drawn now: a node id per node drawn on its own, `BOX_PREFIX` + key per
        folded module or folded run.

        Example:
            >>> gm = aw.capture(model(torch.randn(5, 4)).sum(), model=model)
            >>> Scene(gm, aw.Stepper(gm), collapse="modules").visible_ids()
            ['n0', 'box:2', 'n3', 'box:0']
        """
        ids = self.state.node_ids
        groups = self.visible.item_group
        return [ids[r] if r >= 0 else BOX_PREFIX + (groups[j] or "")
                for j, r in enumerate(self.visible.item_real.tolist())]

    # ------------------------------------------------------------------ modules
    @property
    def modules(self) -> list[str]:
        """Every module path that can be folded."""
        return modules.module_paths(self.graph)

    @property
    def collapsed(self) -> list[str]:
        """Module paths currently folded into boxes, sorted."""
        return sorted(self._collapsed)

    def is_collapsed(self, path: object) -> bool:
        """True when `path` is a collapsed module path.

        Example:
            >>> gm = aw.capture(model(torch.randn(5, 4)).sum(), model=model)
            >>> scene = Scene(gm, aw.Stepper(gm), collapse="modules")
            >>> scene.is_collapsed("0"), scene.is_collapsed("")
            (True, False)
        """
        return isinstance(path, str) and path in self._collapsed

    def collapse(self, module: str) -> None:
        """Fold every node of `module` (and its submodules) into one box.

        Raises ValueError when `module` is not a module path of the graph.

        Example:
            >>> gm = aw.capture(model(torch.randn(5, 4)).sum(), model=model)
            >>> scene = Scene(gm, aw.Stepper(gm), collapse="none")
            >>> scene.collapse("0"); scene.collapsed
            ['0']
        """
        if module not in modules.module_paths(self.graph):
            raise ValueError(
                f"no module {module!r} in this graph; modules: {', '.join(self.modules) or 'none'} "
                "(capture under aw.track(model) or with model= to get module paths)"
            )
        self._collapsed = {c for c in self._collapsed if not modules.in_group(c, module)}
        self._collapsed.add(module)
        self._pin(closed=[module])
        self.rebuild(keep=("m:" + module, "m:" + module))

    def expand(self, module: str | None = None) -> None:
        """Unfold `module` into its children (its submodules stay folded), or everything (folded
        runs included). A fold key unfolds that run into one box per block (`unfold`).

        Example:
            >>> gm = aw.capture(model(torch.randn(5, 4)).sum(), model=model)
            >>> scene = Scene(gm, aw.Stepper(gm), collapse="modules")
            >>> scene.expand("0"); scene.collapsed
            ['2']
        """
        if module is None:
            self._pin(opened=[*self._collapsed, *self._folds, *self.modules])
            self._collapsed = set()
            self._folds = {}
        elif module in self._folds:
            self.unfold(module)
            return
        else:
            if module not in self._collapsed:
                raise ValueError(f"{module!r} is not collapsed; collapsed: {self.collapsed}")
            self._collapsed.discard(module)
            self._collapsed.update(modules.children(module, modules.module_paths(self.graph)))
            self._pin(opened=[module])
            self.rebuild(keep=("m:" + module, "m:" + module))
            return
        self.rebuild()

    def reveal(self, node_id: str) -> None:
        """Make `node_id` visible: unfold the boxes and folded runs holding it (a run's other
        blocks stay boxes), show plumbing if it is some.

        Example:
            >>> gm = aw.capture(model(torch.randn(5, 4)).sum(), model=model)
            >>> scene = Scene(gm, aw.Stepper(gm), collapse="modules")
            >>> scene.reveal("n7"); scene.node_of_item(scene.item_of("n7")), scene.collapsed
            ('n7', ['2'])
        """
        self.graph.check_id(node_id)
        node = self.graph.nodes[node_id]
        changed = False
        for key, run in list(self._folds.items()):
            if any(modules.in_group(node.module, m) for m in run.members):
                # Unfold locally: the other blocks stay boxes, the node's own block opens below.
                del self._folds[key]
                self._collapsed.update(run.members)
                self._pin(opened=[key])
                changed = True
        for c in sorted(self._collapsed):
            if modules.in_group(node.module, c):
                self._collapsed.discard(c)
                self._pin(opened=[c])
                changed = True
        if not self.show_plumbing and vis_mod.is_plumbing(node.name):
            self.show_plumbing = True
            changed = True
        if changed:
            self.rebuild()
        # A node outside every member module can still sit in a box: one took it in to keep the
        # drawing a DAG (the ReLU a parent runs between two folded layers). Open that box.
        i = self.state.node_index[node_id]
        while True:
            j = int(self.visible.real_item[i])
            if j < 0 or self.visible.item_real[j] >= 0:
                break
            key = self.visible.item_group[j]
            if key in self._folds:
                self._collapsed.update(self._folds.pop(key).members)
            elif key in self._collapsed:
                self._collapsed.discard(key)
            else:
                break
            self._pin(opened=[key])
            self.rebuild()

    # ------------------------------------------------------------------ repeated blocks
    def fold_index(self) -> dict[str, Repeat]:
        """Fold key -> run, for every run of repeated blocks in the graph (`visible.fold_keys`).

        `repeats.find_repeats` walks the whole graph (~13 ms for 48 Transformer layers): done
        once per scene, on first need.

        Example:
            >>> blocks = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(3)])
            >>> gb = aw.capture(blocks(torch.randn(2, 4, requires_grad=True)).sum(), model=blocks)
            >>> list(Scene(gb, aw.Stepper(gb), collapse="none").fold_index())
            ['0–2 ×3']
        """
        if self._runs is None:
            with gc_paused():
                found = find_repeats(self.graph)
                self._runs = vis_mod.fold_keys(found, modules.module_paths(self.graph))
        return self._runs

    @property
    def folds(self) -> dict[str, Repeat | RepeatedSubgraph]:
        """The runs folded now: fold key -> `Repeat` or `RepeatedSubgraph` (a copy)."""
        return dict(self._folds)

    def is_folded(self, key: object) -> bool:
        """True when `key` is the fold key of a folded run.

        Example:
            >>> blocks = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(3)])
            >>> gb = aw.capture(blocks(torch.randn(2, 4, requires_grad=True)).sum(), model=blocks)
            >>> Scene(gb, aw.Stepper(gb), collapse="repeats").is_folded("0–2 ×3")
            True
        """
        return isinstance(key, str) and key in self._folds

    def repeat_key(self, repeat: str | Repeat) -> str:
        """The fold key of a repeat given by key, label, `Repeat` or one of its member paths.

        Example:
            >>> blocks = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(3)])
            >>> gb = aw.capture(blocks(torch.randn(2, 4, requires_grad=True)).sum(), model=blocks)
            >>> Scene(gb, aw.Stepper(gb)).repeat_key("1")  # a member path names its repeat
            '0–2 ×3'
        """
        if isinstance(repeat, str) and repeat in self._subgraph_runs:
            return repeat  # a run of repeated subgraphs outside modules (collapse="auto" only)
        index = self.fold_index()
        if isinstance(repeat, str) and repeat in index:
            return repeat
        for key, r in index.items():
            named = isinstance(repeat, str) and (r.label == repeat or repeat in r.members)
            if r == repeat or named:
                return key
        runs = ", ".join(repr(k) for k in index) or "none"
        raise ValueError(f"no run of repeated blocks {repeat!r} in this graph; runs: {runs}")

    def fold(self, repeat: str | Repeat | None = None) -> None:
        """Fold a run of repeated blocks into one box "layers.0–47 ×48", or every repeat found.

        Collapsed modules inside the repeat are absorbed by its box.

        Example:
            >>> blocks = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(3)])
            >>> gb = aw.capture(blocks(torch.randn(2, 4, requires_grad=True)).sum(), model=blocks)
            >>> scene = Scene(gb, aw.Stepper(gb), collapse="none")
            >>> scene.fold("1"); scene.visible_ids()
            ['n0', 'box:0–2 ×3', 'n10']
        """
        known = {**self._subgraph_runs, **self.fold_index()}
        keys = set(known) if repeat is None else {self.repeat_key(repeat)}
        if not keys:
            return
        self._folds = {k: r for k, r in known.items() if k in keys or k in self._folds}
        members = vis_mod.fold_members({k: known[k] for k in keys})
        self._collapsed = {
            c for c in self._collapsed if not any(modules.in_group(c, m) for m in members)
        }
        self._pin(closed=keys)
        self.rebuild()

    def unfold(self, repeat: str | Repeat | None = None, *, blocks: bool = True) -> None:
        """Unfold a folded repeat (or every one), locally: with `blocks` each block becomes its own
        module box; `blocks=False` only drops the fold.

        Example:
            >>> blocks = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(3)])
            >>> gb = aw.capture(blocks(torch.randn(2, 4, requires_grad=True)).sum(), model=blocks)
            >>> scene = Scene(gb, aw.Stepper(gb), collapse="repeats")
            >>> scene.unfold("0–2 ×3"); scene.visible_ids()
            ['n0', 'box:2', 'box:1', 'box:0', 'n10']
        """
        if repeat is None:
            keys = list(self._folds)
        else:
            key = self.repeat_key(repeat)
            if key not in self._folds:
                folded = ", ".join(repr(k) for k in self._folds) or "none"
                raise ValueError(f"{repeat!r} is not folded; folded: {folded}")
            keys = [key]
        for key in keys:
            r = self._folds.pop(key)
            if blocks:
                self._collapsed.update(r.members)
        self._pin(opened=keys)
        self.rebuild()

    def _pin(self, opened: Iterable[str] = (), closed: Iterable[str] = ()) -> None:
        """The user opened / folded these modules or runs: a new fit keeps them so."""
        for k in opened:
            self._opened.add(k)
            self._closed.discard(k)
        for k in closed:
            self._closed.add(k)
            self._opened.discard(k)
