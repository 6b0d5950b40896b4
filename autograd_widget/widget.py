"""`AutogradWidget` / `explore()`: the backward graph in the notebook cell, stepped from the UI.

Protocol (Python is the source of truth; the front-end draws and sends gestures):
- `_graph` trait: the static drawing (node/edge arrays, labels, coordinates as float32 buffers),
  set once per layout (`view.graph_payload`).
- `_state` trait: the current step state (node states, edge norms/flags, small gradients' values,
  waiting slots, status line), replaced after every change (`view.StateView`), so a second view,
  a reloaded page and the saved notebook all show the current step.
- `selected` trait: the selected node id, both ways.
- Commands from the front-end are custom messages `{"type": ...}`: step, back, reset, run_to,
  run (one time-boxed chunk; the front-end asks for the next chunk, so Pause works while a
  long run is in progress), pause, select, inspect (answered with `{"type": "reply"}`). Every
  message is validated; a bad one is ignored with a logged warning and a `{"type": "warning"}`
  reply, never half-applied.
Stepping from Python (`widget.stepper.step()`) notifies the widget, which refreshes `_state`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from .core.capture import capture
from .core.graph import BackwardGraph
from .core.saved import node_validity
from .engine.stepper import Stepper
from .util.gcpause import gc_paused
from .util.jsonsafe import encode_number
from .view import visible as groups
from .view.repeats import Repeat, find_repeats
from .wire import payload as view

log = logging.getLogger("autograd_widget")

_STATIC = Path(__file__).parent / "static"
_COLLAPSE = ("auto", "modules", "repeats", "none")
_ORIENTATIONS = ("TB", "LR")
#: Longest a single "run" chunk may take, whatever the front-end asks: the kernel handler blocks
#: every other message (Pause included) while it runs.
MAX_CHUNK_MS = 1000


# The bundle's TEXT, not its path: anywidget turns a path into a watched FileContents whose
# class-level `changed` signal keeps a strong reference to every widget ever made (so no widget,
# graph or activation could be freed). The text costs the same: anywidget syncs it anyway.
def _esm() -> str:
    path = _STATIC / "widget.js"
    if path.exists():
        return path.read_text(encoding="utf-8")
    return (
        "export default { render({ el }) { el.textContent = 'autograd_widget: the front-end "
        "bundle is missing (autograd_widget/static/widget.js). Build it: cd js && npm ci && "
        "npm run build'; } };"
    )


def _css() -> str:
    path = _STATIC / "widget.css"
    return path.read_text(encoding="utf-8") if path.exists() else ""


class AutogradWidget(anywidget.AnyWidget):
    """The interactive backward graph of one set of outputs.

    `widget.graph` and `widget.stepper` are the very objects the buttons drive; stepping either
    way keeps the view and the kernel in agreement.
    """

    _esm = _esm()
    _css = _css()
    # True until __init__ has built the stepper, so a widget whose construction failed closes
    # cleanly when garbage-collected.
    _released = True
    _owns_graph = True

    _graph = traitlets.Dict().tag(sync=True)
    _state = traitlets.Dict().tag(sync=True)
    selected = traitlets.Unicode(None, allow_none=True).tag(sync=True)
    #: The selected edge id ("src:output_nr"), e.g. after "First NaN/Inf".
    selected_edge = traitlets.Unicode(None, allow_none=True).tag(sync=True)
    height = traitlets.Int(600).tag(sync=True)
    orientation = traitlets.Unicode("TB").tag(sync=True)
    #: Show pure plumbing nodes (views, reshapes, transposes, expands); False contracts them.
    show_plumbing = traitlets.Bool(True).tag(sync=True)

    def __init__(
        self,
        graph_or_outputs: BackwardGraph | Any,
        grad_outputs: Any = None,
        *,
        model: Any = None,
        params: Mapping[str, Any] | None = None,
        collapse: str = "auto",
        orientation: str = "TB",
        keep: str | int = "summaries",
        create_graph: bool = False,
        height: int = 600,
    ) -> None:
        if collapse not in _COLLAPSE:
            raise ValueError(f"collapse must be one of {_COLLAPSE}, got {collapse!r}")
        if orientation not in _ORIENTATIONS:
            raise ValueError(f"orientation must be 'TB' or 'LR', got {orientation!r}")
        if not isinstance(height, int) or isinstance(height, bool) or height < 100:
            raise ValueError(f"height must be an int number of pixels >= 100, got {height!r}")
        if isinstance(graph_or_outputs, BackwardGraph):
            if grad_outputs is not None or model is not None or params is not None:
                raise TypeError(
                    "grad_outputs/model/params apply when capturing; pass them to "
                    "aw.capture() or give the widget the tensors instead of a graph"
                )
            graph = graph_or_outputs
            self._owns_graph = False
        else:
            graph = capture(graph_or_outputs, grad_outputs, model=model, params=params)
            self._owns_graph = True
        super().__init__(height=height, orientation=orientation)
        self.graph = graph
        self.collapse_mode = collapse
        self.stepper = Stepper(graph, create_graph=create_graph, keep=keep)
        self._released = False
        self._running = False
        self._runs: dict[str, Repeat] | None = None  # fold key -> run, found on first need
        #: Folded runs of repeated blocks: fold key -> run ("repeats" folds them all, and "auto"
        #: on a big graph, before collapsing the remaining top-level modules).
        self._folds: dict[str, Repeat] = {}
        if collapse == "repeats" or (
            collapse == "auto" and len(graph.nodes) > groups.AUTO_COLLAPSE_NODES
        ):
            self._folds = dict(self._fold_index())
        self._collapsed: set[str] = groups.default_collapsed(
            graph, collapse, groups.fold_members(self._folds)
        )
        # The view model allocates an object or two per node: let the cycle collector rescan
        # the world once afterwards rather than many times during (halves a 50k-node build).
        with gc_paused():
            self._visible = groups.visible_graph(
                graph, self._collapsed, self.show_plumbing,
                folds=groups.fold_members(self._folds),
            )
            self._layout = view.compute_layout(graph, orientation, self._visible)
            self._view = view.StateView(graph, self.stepper, self._visible)
        self._validity = node_validity(graph)
        self._seen_error: tuple[str, str] | None = None
        with gc_paused():
            self._graph = view.graph_payload(
                graph, self._layout, self._visible, self._validity, folds=self._folds
            )
        self._notice = _freed_notice(graph)
        self._refresh()
        self.stepper.add_listener(self._on_stepper_change)
        self.on_msg(self._handle_message)

    # ------------------------------------------------------------------ state
    def _on_stepper_change(self, _stepper: Stepper) -> None:
        self._refresh()

    def _refresh(self, running: bool | None = None) -> None:
        if running is not None:
            self._running = running
        err = self.stepper.last_error
        if err is not None and err != self._seen_error:
            # A step failed: saved tensors may have been modified since explore(); mark anew.
            self._seen_error = err
            self._validity = node_validity(self.graph)
            self._graph = view.graph_payload(
                self.graph, self._layout, self._visible, self._validity, folds=self._folds
            )
        state = self._view.update()
        state["running"] = self._running and not state["done"]
        state["notice"] = self._notice
        self._state = state

    @traitlets.validate("selected")
    def _check_selected(self, proposal: dict) -> str | None:
        value = proposal["value"]
        if value is not None and value not in self.graph.nodes:
            log.warning("autograd_widget: ignoring selection of unknown node %r", value)
            return self.selected if self.selected in self.graph.nodes else None
        return value

    @traitlets.validate("selected_edge")
    def _check_selected_edge(self, proposal: dict) -> str | None:
        value = proposal["value"]
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
    def _check_orientation(self, proposal: dict) -> str:
        if proposal["value"] not in _ORIENTATIONS:
            raise traitlets.TraitError("orientation must be 'TB' or 'LR'")
        return proposal["value"]

    @traitlets.observe("orientation", "show_plumbing")
    def _relayout(self, change: dict) -> None:
        if not hasattr(self, "_layout") or change["old"] == change["new"]:
            return
        self._rebuild_view()

    def _rebuild_view(self) -> None:
        """New visible graph (folds, plumbing) and layout; the step state is mapped onto it."""
        if not self._released:
            self._validity = node_validity(self.graph)
        with gc_paused():
            self._visible = groups.visible_graph(
                self.graph, self._collapsed, self.show_plumbing,
                folds=groups.fold_members(self._folds),
            )
            self._layout = view.compute_layout(self.graph, self.orientation, self._visible)
            self._view.set_visible(self._visible)
            payload = view.graph_payload(
                self.graph, self._layout, self._visible, self._validity, folds=self._folds
            )
        with self.hold_sync():
            self._graph = payload
            state = dict(self._state)
            state.update(self._view.payload(running=self._running))
            state["running"] = self._running and not state["done"]
            state["notice"] = self._notice
            self._state = state

    # ------------------------------------------------------------------ folds
    @property
    def collapsed(self) -> list[str]:
        """Module paths currently folded into boxes."""
        return sorted(self._collapsed)

    @property
    def modules(self) -> list[str]:
        """Every module path that can be folded."""
        return groups.module_paths(self.graph)

    def collapse(self, module: str) -> None:
        """Fold every node of `module` (and its submodules) into one box."""
        if module not in groups.module_paths(self.graph):
            raise ValueError(
                f"no module {module!r} in this graph; modules: {', '.join(self.modules) or 'none'} "
                "(capture under aw.track(model) or with model= to get module paths)"
            )
        self._collapsed = {c for c in self._collapsed if not groups.in_group(c, module)}
        self._collapsed.add(module)
        self._rebuild_view()

    def expand(self, module: str | None = None) -> None:
        """Unfold `module` into its children (its submodules stay folded), or everything (folded
        runs included). A fold key unfolds that run into one box per block (`unfold`)."""
        if module is None:
            self._collapsed = set()
            self._folds = {}
        elif module in self._folds:
            self.unfold(module)
            return
        else:
            if module not in self._collapsed:
                raise ValueError(f"{module!r} is not collapsed; collapsed: {self.collapsed}")
            self._collapsed.discard(module)
            prefix = f"{module}." if module else ""
            for path in groups.module_paths(self.graph):
                rest = path[len(prefix):] if path.startswith(prefix) else None
                if path != module and rest is not None and "." not in rest:
                    self._collapsed.add(path)
        self._rebuild_view()

    def reveal(self, node_id: str) -> None:
        """Make `node_id` visible: unfold the boxes and folded runs holding it (a run's other
        blocks stay boxes), show plumbing if it is some."""
        self.graph.check_id(node_id)
        node = self.graph.nodes[node_id]
        changed = False
        for key, run in list(self._folds.items()):
            if any(groups.in_group(node.module, m) for m in run.members):
                # Unfold locally: the other blocks stay boxes, the node's own block opens below.
                del self._folds[key]
                self._collapsed.update(run.members)
                changed = True
        for c in sorted(self._collapsed):
            if groups.in_group(node.module, c):
                self._collapsed.discard(c)
                changed = True
        if not self.show_plumbing and groups.is_plumbing(node.name):
            self.show_plumbing = True  # rebuilds
        if changed:
            self._rebuild_view()
        # A node outside every member module can still sit in a box: one took it in to keep the
        # drawing a DAG (the ReLU a parent runs between two folded layers). Open that box.
        i = self._view.node_index[node_id]
        while True:
            j = int(self._visible.real_item[i])
            if j < 0 or self._visible.item_real[j] >= 0:
                break
            key = self._visible.item_group[j]
            if key in self._folds:
                self._collapsed.update(self._folds.pop(key).members)
            elif key in self._collapsed:
                self._collapsed.discard(key)
            else:
                break
            self._rebuild_view()

    # ------------------------------------------------------------------ repeated blocks
    def _fold_index(self) -> dict[str, Repeat]:
        """Fold key -> run, for every run of repeated blocks in the graph (`groups.fold_keys`).

        `repeats.find_repeats` walks the whole graph (~13 ms for 48 Transformer layers): done
        once per graph, on first need.
        """
        if self._runs is None:
            # release() may swap the graph for its records: same structure, same runs.
            with gc_paused():
                found = find_repeats(self.graph)
                self._runs = groups.fold_keys(found, groups.module_paths(self.graph))
        return self._runs

    def _run_key(self, run: str | Repeat) -> str:
        """The fold key of a run given by key, label, `Repeat` or one of its member paths."""
        index = self._fold_index()
        if isinstance(run, str) and run in index:
            return run
        for key, r in index.items():
            if r == run or (isinstance(run, str) and (r.label == run or run in r.members)):
                return key
        runs = ", ".join(repr(k) for k in index) or "none"
        raise ValueError(f"no run of repeated blocks {run!r} in this graph; runs: {runs}")

    @property
    def repeats(self) -> list[Repeat]:
        """Every run of identical blocks that can fold (`repeats.find_repeats`), outermost
        first; nested runs (inside a repeated block) included."""
        return list(self._fold_index().values())

    @property
    def folds(self) -> dict[str, Repeat]:
        """The runs folded now: fold key (the run's label, "layers.0–47 ×48") -> `Repeat`."""
        return dict(self._folds)

    def fold(self, run: str | Repeat | None = None) -> None:
        """Fold a run of repeated blocks into one box "layers.0–47 ×48", or every run found.

        `run`: a fold key or label, a `Repeat` from `widget.repeats`, or one member's module
        path ("layers.3"). Collapsed modules inside the run are absorbed by its box; a collapsed
        module holding the whole run still shows as that module's box.
        """
        index = self._fold_index()
        keys = set(index) if run is None else {self._run_key(run)}
        if not keys:
            return
        self._folds = {k: r for k, r in index.items() if k in keys or k in self._folds}
        members = groups.fold_members({k: index[k] for k in keys})
        self._collapsed = {
            c for c in self._collapsed if not any(groups.in_group(c, m) for m in members)
        }
        self._rebuild_view()

    def unfold(self, run: str | Repeat | None = None, *, blocks: bool = True) -> None:
        """Unfold a folded run (or every one), locally: with `blocks` (default) each block of the
        run becomes its own module box (48 boxes, not 2,700 nodes); other folds and collapsed
        modules are unchanged. `blocks=False` only drops the fold."""
        if run is None:
            keys = list(self._folds)
        else:
            key = self._run_key(run)
            if key not in self._folds:
                folded = ", ".join(repr(k) for k in self._folds) or "none"
                raise ValueError(f"{run!r} is not folded; folded: {folded}")
            keys = [key]
        for key in keys:
            r = self._folds.pop(key)
            if blocks:
                self._collapsed.update(r.members)
        self._rebuild_view()

    # ------------------------------------------------------------------ messages
    def _warn(self, message: str) -> None:
        log.warning("autograd_widget: %s", message)
        self.send({"type": "warning", "message": message})

    def _item_arg(self, msg: dict, key: str = "node") -> int | None:
        idx = msg.get(key)
        if isinstance(idx, bool) or not isinstance(idx, int):
            return None
        return idx if 0 <= idx < self._visible.n_items else None

    def _node_arg(self, msg: dict, key: str = "node") -> str | None:
        """The real node id behind a visible item index (None for a box or a bad index)."""
        j = self._item_arg(msg, key)
        if j is None:
            return None
        r = int(self._visible.item_real[j])
        return self._view.node_ids[r] if r >= 0 else None

    def _handle_message(self, _widget: Any, msg: Any, buffers: Sequence[Any]) -> None:
        if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
            self._warn(f"ignored a malformed message: {str(msg)[:80]!r}")
            return
        kind = msg["type"]
        handler = _HANDLERS.get(kind)
        if handler is None:
            self._warn(f"ignored an unknown message type {kind[:40]!r}")
            return
        if self._released and kind not in ("select", "inspect", "pause"):
            self._warn("this widget was released (widget.release()): explore() the tensors again")
            return
        try:
            handler(self, msg)
        except Exception as err:  # a UI command must never take the kernel or the widget down
            log.exception("autograd_widget: %s failed", kind)
            self._warn(f"{kind} failed: {type(err).__name__}: {err}")
            self._refresh(running=False)

    def _msg_step(self, msg: dict) -> None:
        if self.stepper.done:
            self._warn("already at the end of backward: nothing left to step")
            return
        self.stepper.step()

    def _msg_back(self, msg: dict) -> None:
        if self.stepper.position == 0:
            self._warn("already at the start: nothing to undo")
            return
        self.stepper.back()

    def _msg_reset(self, msg: dict) -> None:
        self._running = False
        self.stepper.reset()

    def _msg_run_to(self, msg: dict) -> None:
        j = self._item_arg(msg)
        if j is not None and self._visible.item_real[j] < 0:
            # A module box: run until every node inside it has run.
            members = self._visible.item_members[j]
            ids = {self._view.node_ids[int(i)] for i in members}
            steps = [k for k, nid in enumerate(self.stepper.order) if nid in ids]
            if not steps or steps[-1] < self.stepper.position:
                self._warn("every node of this module has already run")
                return
            self.stepper.run(until=self.stepper.order[steps[-1]])
            return
        node = self._node_arg(msg)
        if node is None:
            self._warn(f"run_to needs a node index in 0..{self._visible.n_items - 1}")
            return
        if node not in self.stepper.order[self.stepper.position :]:
            self._warn(f"{node} has already run or never runs: nothing to run to")
            return
        self.stepper.run(until=node)

    def _msg_run(self, msg: dict) -> None:
        chunk = msg.get("chunk_ms", 100)
        if isinstance(chunk, bool) or not isinstance(chunk, int | float) or not chunk > 0:
            self._warn("run needs a positive chunk_ms")
            return
        deadline = time.perf_counter() + min(float(chunk), MAX_CHUNK_MS) / 1000.0
        st = self.stepper
        try:
            with st.batch():
                while not st.done:
                    rec = st.step()
                    if rec is None or rec.error is not None or st.at_breakpoint:
                        self._running = False
                        break
                    if time.perf_counter() >= deadline:
                        break
        except BaseException:  # e.g. a kernel interrupt: stop the run, show where it stopped
            self._running = False
            self._refresh()
            raise
        if st.done:
            self._running = False
        else:
            self._running = self._running or (st.last_error is None and not st.at_breakpoint)
        self._refresh()

    def _msg_pause(self, msg: dict) -> None:
        self._refresh(running=False)

    def _msg_select(self, msg: dict) -> None:
        if "id" in msg:  # a real node id, e.g. from search: reveal it first
            nid = msg.get("id")
            if not isinstance(nid, str) or nid not in self.graph.nodes:
                self._warn(f"select: no node {str(nid)[:40]!r}")
                return
            self.reveal(nid)
            self.selected = nid
            return
        if msg.get("node") is None:
            self.selected = None
            return
        node = self._node_arg(msg)
        if node is None:
            self._warn("select needs a node index (not a module box) or null")
            return
        self.selected = node

    def _msg_select_edge(self, msg: dict) -> None:
        eid = msg.get("edge")
        if eid is None:
            self.selected_edge = None
            return
        if isinstance(eid, bool) or not isinstance(eid, int) or not (
            0 <= eid < len(self._visible.edge_real)
        ):
            self._warn("select_edge needs a visible edge index or null")
            return
        self.selected_edge = self.graph.edges[int(self._visible.edge_real[eid])].id

    def _msg_expand(self, msg: dict) -> None:
        group = msg.get("group")
        known = isinstance(group, str) and (group in self._collapsed or group in self._folds)
        if not known:
            self._warn(f"expand: {str(group)[:60]!r} is not a collapsed module or a folded run")
            return
        self.expand(group)  # a folded run unfolds locally, one box per block

    def _msg_collapse(self, msg: dict) -> None:
        group = msg.get("group")
        if group is None and "node" in msg:
            node = self._node_arg(msg)
            group = self.graph.nodes[node].module if node is not None else None
        if not isinstance(group, str) or group not in groups.module_paths(self.graph):
            self._warn(f"collapse: {str(group)[:60]!r} is not a module of this graph")
            return
        self.collapse(group)

    def _msg_plumbing(self, msg: dict) -> None:
        show = msg.get("show")
        if not isinstance(show, bool):
            self._warn("plumbing needs show: true or false")
            return
        self.show_plumbing = show

    def _msg_search(self, msg: dict) -> None:
        req, query = msg.get("request"), msg.get("query")
        if isinstance(req, bool) or not isinstance(req, int) or not isinstance(query, str):
            self._warn("search needs an integer request id and a query string")
            return
        matches = []
        for nid in groups.search(self.graph, query[:200]):
            n = self.graph.nodes[nid]
            r = self._view.node_index[nid]
            matches.append({
                "id": nid, "name": n.name, "label": view.short_label(n), "module": n.module,
                "leaf_name": n.leaf_name, "item": int(self._visible.real_item[r]),
            })
        self.send({"type": "reply", "request": req, "data": {"matches": matches}})

    def _msg_probe(self, msg: dict) -> None:
        req = msg.get("request")
        samples, seed = msg.get("samples", 16), msg.get("seed", 0)
        if isinstance(req, bool) or not isinstance(req, int):
            self._warn("probe needs an integer request id")
            return
        if isinstance(samples, bool) or not isinstance(samples, int) or not 2 <= samples <= 1024:
            self._warn("probe: samples must be an int in 2..1024")
            return
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            self._warn("probe: seed must be an int or null")
            return
        self.send({"type": "reply", "request": req, "data": self.sensitivity(samples, seed)})

    def sensitivity(self, samples: int = 16, seed: int | None = 0) -> dict[str, Any]:
        """Per visible item: log10 of the squared Frobenius norm of the node's gradient map
        (`Stepper.jacobian_norms`; a box shows the largest of its members), for colouring."""
        norms = self.stepper.jacobian_norms(samples=samples, seed=seed)
        vis = self._visible
        items: list[Any] = [None] * vis.n_items
        stderr: list[Any] = [None] * vis.n_items
        exact: list[Any] = [None] * vis.n_items
        for nid, jn in norms.items():
            j = int(vis.real_item[self._view.node_index[nid]])
            d = jn.as_dict()
            if j < 0 or d["log10"] is None:
                continue
            if items[j] is None or d["log10"] > items[j]:
                items[j], stderr[j], exact[j] = d["log10"], d["stderr"], d["exact"]
        logs = [v for v in items if v is not None]
        return {
            "items": items,
            "stderr": [encode_number(v) if isinstance(v, float) else v for v in stderr],
            "exact": exact,
            "nodes": {nid: jn.as_dict() for nid, jn in norms.items()},
            "range": [min(logs), max(logs)] if logs else None,
            "errors": dict(getattr(self.stepper, "probe_errors", {}) or {}),
            "samples": samples,
        }

    def _msg_edit_edge(self, msg: dict) -> None:
        op = msg.get("op")
        idx = msg.get("edge")
        vis_edges = self._visible.edge_real
        if isinstance(idx, bool) or not isinstance(idx, int) or not 0 <= idx < len(vis_edges):
            self._warn("edit_edge needs a visible edge index")
            return
        eid = self.graph.edges[int(vis_edges[idx])].id
        try:
            if op == "zero":
                self.stepper.zero_edge_grad(eid)
            elif op == "scale":
                factor = msg.get("factor")
                if isinstance(factor, bool) or not isinstance(factor, int | float):
                    self._warn("edit_edge scale needs a numeric factor")
                    return
                self.stepper.scale_edge_grad(eid, float(factor))
            elif op == "clear":
                self.stepper.clear_edits(eid)
            else:
                self._warn("edit_edge op must be 'zero', 'scale' or 'clear'")
                return
        except (ValueError, TypeError, KeyError) as e:
            self._warn(str(e))

    def _msg_leaf_diff(self, msg: dict) -> None:
        req = msg.get("request")
        if isinstance(req, bool) or not isinstance(req, int):
            self._warn("leaf_diff needs an integer request id")
            return
        diffs = self.stepper.leaf_grad_diff()
        data = {}
        for nid, d in diffs.items():
            item = int(self._visible.real_item[self._view.node_index[nid]])
            data[nid] = {**d.as_dict(), "item": item}
        self.send({"type": "reply", "request": req, "data": {"leaves": data}})

    def _msg_saved_values(self, msg: dict) -> None:
        req, nid, name = msg.get("request"), msg.get("id"), msg.get("name")
        if isinstance(req, bool) or not isinstance(req, int):
            self._warn("saved_values needs an integer request id")
            return
        if not isinstance(nid, str) or nid not in self.graph.nodes or not isinstance(name, str):
            self._warn("saved_values needs a node id and a saved value's name")
            return
        limit = msg.get("limit", 4096)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            limit = 4096
        try:
            t = self.graph.saved_tensor(nid, name)
        except (KeyError, TypeError, RuntimeError) as e:
            self.send({"type": "reply", "request": req, "data": {"error": str(e)}})
            return
        flat = t.detach().reshape(-1)
        shown = flat[: min(limit, 100_000)]
        if shown.is_complex():
            values = [encode_number(complex(v)) for v in shown.tolist()]
        else:
            values = [encode_number(float(v)) for v in shown.double().tolist()]
        self.send({"type": "reply", "request": req, "data": {
            "id": nid, "name": name, "shape": list(t.shape), "dtype": str(t.dtype),
            "numel": flat.numel(), "values": values, "truncated": flat.numel() > len(values),
        }})

    def _msg_memory(self, msg: dict) -> None:
        req = msg.get("request")
        exclude = msg.get("exclude_leaves", False)
        if isinstance(req, bool) or not isinstance(req, int) or not isinstance(exclude, bool):
            self._warn("memory needs an integer request id (and exclude_leaves: bool)")
            return
        self.send({"type": "reply", "request": req, "data": self.memory(exclude_leaves=exclude)})

    def memory(self, *, exclude_leaves: bool = False, top: int = 10) -> dict[str, Any]:
        """Saved bytes per visible item (boxes sum their members), the total and top holders."""
        per_node = self.graph.saved_memory(exclude_leaves=exclude_leaves)
        items = [0] * self._visible.n_items
        for nid, nbytes in per_node.items():
            j = int(self._visible.real_item[self._view.node_index[nid]])
            if j >= 0:
                items[j] += nbytes
        holders = sorted(per_node.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        return {
            "total": sum(per_node.values()),
            "exclude_leaves": exclude_leaves,
            "items": items,
            "top": [
                {
                    "id": nid,
                    "name": self.graph.nodes[nid].name,
                    "module": self.graph.nodes[nid].module,
                    "bytes": nbytes,
                    "item": int(self._visible.real_item[self._view.node_index[nid]]),
                }
                for nid, nbytes in holders
            ],
            "by_module": self.graph.saved_memory(by="module", exclude_leaves=exclude_leaves),
        }

    def _msg_first_nonfinite(self, msg: dict) -> None:
        req = msg.get("request")
        if isinstance(req, bool) or not isinstance(req, int):
            self._warn("first_nonfinite needs an integer request id")
            return
        found = self.stepper.first_nonfinite()
        if found is None:
            data: dict[str, Any] = {
                "edge": None,
                "message": "no NaN/Inf gradient so far"
                + ("" if self.stepper.done else " (run further: only flowed edges count)"),
            }
        else:
            edge, summary = found
            self.reveal(edge.src)
            self.reveal(edge.dst)
            real = self.graph.edges.index(edge)
            vis_edges = [int(j) for j in (self._visible.edge_real == real).nonzero()[0]]
            self.selected_edge = edge.id
            self.selected = edge.dst
            data = {
                "edge": vis_edges[0] if vis_edges else None,
                "id": edge.id,
                "src": self.graph.nodes[edge.src].name,
                "dst": self.graph.nodes[edge.dst].name,
                "summary": view.summary_payload(summary),
            }
        self.send({"type": "reply", "request": req, "data": data})

    def _msg_inspect(self, msg: dict) -> None:
        req = msg.get("request")
        if isinstance(req, bool) or not isinstance(req, int):
            self._warn("inspect needs an integer request id")
            return
        if "edge_id" in msg:
            eid = msg.get("edge_id")
            if not isinstance(eid, str) or eid not in self._view.edge_index:
                self._warn(f"inspect: no edge {str(eid)[:40]!r}")
                return
            data = self._inspect_edge(eid)
        elif "edge" in msg:
            idx = msg.get("edge")
            vis_edges = self._visible.edge_real
            if isinstance(idx, bool) or not isinstance(idx, int) or not 0 <= idx < len(vis_edges):
                self._warn(f"inspect: no edge index {idx!r}")
                return
            data = self._inspect_edge(self.graph.edges[int(vis_edges[idx])].id)
        elif "id" in msg:
            nid = msg.get("id")
            if not isinstance(nid, str) or nid not in self.graph.nodes:
                self._warn(f"inspect: no node {str(nid)[:40]!r}")
                return
            data = self._inspect_node(nid)
        else:
            j = self._item_arg(msg)
            if j is None:
                self._warn(f"inspect: no node index {msg.get('node')!r}")
                return
            r = int(self._visible.item_real[j])
            if r < 0:
                data = self._inspect_group(j)
            else:
                data = self._inspect_node(self._view.node_ids[r])
        self.send({"type": "reply", "request": req, "data": data})

    # ------------------------------------------------------------------ inspection
    def _inspect_edge(self, edge_id: str) -> dict[str, Any]:
        e = self.graph.edge(edge_id)
        src, dst = self.graph.nodes[e.src], self.graph.nodes[e.dst]
        summary = None if self._released else self.stepper.edge_summary(edge_id)
        return {
            "id": edge_id,
            "src": {"id": src.id, "name": src.name, "output_nr": e.output_nr},
            "dst": {"id": dst.id, "name": dst.name, "input_nr": e.input_nr,
                    "label": view.short_label(dst)},
            "summary": view.summary_payload(summary),
        }

    def _inspect_group(self, item: int) -> dict[str, Any]:
        path = self._visible.item_group[item] or ""
        members = [self._view.node_ids[int(i)] for i in self._visible.item_members[item]]
        arrays = self._view.visible_arrays()
        names: dict[str, int] = {}
        for nid in members:
            nm = self.graph.nodes[nid].name
            names[nm] = names.get(nm, 0) + 1
        run = self._folds.get(path) if path in self._visible.folds else None
        fold = None
        if run is not None:
            fold = {"count": run.count, "period": run.period,
                    "nodes_per_unit": run.nodes_per_unit, "members": list(run.members)}
        return {
            "group": path,
            "label": view.group_label(path, self.graph.model_name) if run is None else run.label,
            "fold": fold,
            "kind": "group",
            "members": len(members),
            "progress": float(arrays["progress"][item]),
            "ops": sorted(names.items(), key=lambda kv: (-kv[1], kv[0]))[:12],
            "leaves": [
                self.graph.nodes[nid].leaf_name
                for nid in members if self.graph.nodes[nid].kind == "accumulate_grad"
            ][:50],
        }

    def _inspect_node(self, node_id: str) -> dict[str, Any]:
        n = self.graph.nodes[node_id]
        st = self.stepper
        err = st.last_error
        incoming = [] if self._released else st.waiting(node_id)
        saved: list[dict[str, Any]] = []
        saved_error = None
        if not self._released:
            try:
                saved = [v.as_dict() for v in self.graph.saved(node_id)]
            except Exception as e:  # introspection must never break the inspector
                saved_error = f"{type(e).__name__}: {e}"
        return {
            "traceback": n.traceback,
            "saved": saved,
            "saved_error": saved_error,
            "hooks": [] if self._released else _hooks(self.graph, node_id),
            "in_edges": [
                {"id": e.id, "src": e.src, "name": self.graph.nodes[e.src].name,
                 "input_nr": e.input_nr}
                for e in self.graph.in_edges(node_id)
            ],
            "id": n.id,
            "name": n.name,
            "label": view.short_label(n),
            "kind": view.display_kind(n),
            "module": n.module,
            # AccumulateGrad's UINT64_MAX ("run as soon as ready") is not a useful number.
            "sequence_nr": None if n.kind == "accumulate_grad" else n.sequence_nr,
            "leaf_name": n.leaf_name,
            "inputs": [[list(m.shape), m.dtype, m.device] for m in n.inputs],
            "incoming": [view.summary_payload(s) for s in incoming],
            "outgoing": {
                e.id: view.summary_payload(None if self._released else st.edge_summary(e.id))
                for e in self.graph.out_edges(node_id)
            },
            "error": err[1] if err is not None and err[0] == node_id else None,
        }

    # ------------------------------------------------------------------ public
    def to_figure(self) -> Any:
        """A plotly `go.Figure` of the current state (for `fig.show()`, `write_html`, ...)."""
        return view.to_figure(
            self._graph, self._view.visible_arrays(), view.status_line(self.graph, self.stepper)
        )

    def save_html(self, path: Any) -> Any:
        """Write the whole step-through (recorded by a separate stepper from step 0 to the end;
        this widget's stepper is not moved) as one self-contained, offline HTML file."""
        from .export.html import save_html

        if self._released:
            raise RuntimeError("this widget was released: explore() the tensors again to export")
        return save_html(self, path)

    def release(self) -> None:
        """Drop every torch reference (graph, stepper, kept tensors); the drawing stays."""
        if self._released:
            return
        self._released = True
        self._running = False
        self.stepper.remove_listener(self._on_stepper_change)
        self.stepper.close()
        if self._owns_graph:
            self.graph.close()
        else:
            # A graph we were given may serve other widgets and steppers: leave it live, and keep
            # only its records here so this widget pins no torch object.
            records = BackwardGraph.from_dict(self.graph.to_dict())
            self.graph = records
            self._view.graph = records
            self.stepper.graph = records  # the closed stepper must not pin the live graph
        state = dict(self._state)
        state["running"] = False
        state["notice"] = "released: the drawing stays, stepping needs explore() again"
        self._state = state

    def close(self) -> None:
        self.release()
        super().close()


_HANDLERS = {
    "expand": AutogradWidget._msg_expand,
    "collapse": AutogradWidget._msg_collapse,
    "plumbing": AutogradWidget._msg_plumbing,
    "search": AutogradWidget._msg_search,
    "first_nonfinite": AutogradWidget._msg_first_nonfinite,
    "memory": AutogradWidget._msg_memory,
    "saved_values": AutogradWidget._msg_saved_values,
    "probe": AutogradWidget._msg_probe,
    "edit_edge": AutogradWidget._msg_edit_edge,
    "leaf_diff": AutogradWidget._msg_leaf_diff,
    "select_edge": AutogradWidget._msg_select_edge,
    "step": AutogradWidget._msg_step,
    "back": AutogradWidget._msg_back,
    "reset": AutogradWidget._msg_reset,
    "run_to": AutogradWidget._msg_run_to,
    "run": AutogradWidget._msg_run,
    "pause": AutogradWidget._msg_pause,
    "select": AutogradWidget._msg_select,
    "inspect": AutogradWidget._msg_inspect,
}


NODE_HOOKS_NOTE = (
    "Hooks registered on this node (node.register_hook / register_prehook) or on the non-leaf "
    "tensors it produced cannot be listed from the graph; compare_with_engine() reveals any "
    "that change gradients."
)


def _hook_names(d: Any) -> list[str]:
    out = []
    for h in (d or {}).values():
        name = getattr(h, "__qualname__", None) or type(h).__name__
        out.append(str(name))
    return out


def _hooks(graph: BackwardGraph, node_id: str) -> list[dict[str, Any]]:
    """Listable hooks: tensor hooks of the leaf behind an AccumulateGrad, and of root tensors."""
    out: list[dict[str, Any]] = []
    node = graph.nodes[node_id]
    if node.kind == "accumulate_grad":
        var = graph.fn(node_id).variable
        for name in _hook_names(getattr(var, "_backward_hooks", None)):
            out.append({"on": node.leaf_name, "kind": "tensor hook", "fn": name})
        for name in _hook_names(getattr(var, "_post_accumulate_grad_hooks", None)):
            out.append({"on": node.leaf_name, "kind": "post-accumulate-grad hook", "fn": name})
    for (rid, _), t in zip(graph.roots, graph.root_tensors):
        if rid != node_id:
            continue
        for name in _hook_names(getattr(t, "_backward_hooks", None)):
            out.append({"on": "output", "kind": "tensor hook", "fn": name})
        if getattr(t, "retains_grad", False):
            out.append({"on": "output", "kind": "retain_grad", "fn": "retain_grad"})
    if node.kind != "accumulate_grad":
        out.append({"on": node.name, "kind": "note", "fn": NODE_HOOKS_NOTE})
    return out


def _freed_notice(graph: BackwardGraph) -> str | None:
    """A banner when backward() already freed the graph: every step would fail."""
    for nid in list(graph.nodes)[:64]:
        for s in graph.saved(nid):
            if s.state == "freed":
                return (
                    "This graph was freed by backward() (saved tensors are gone), so its nodes "
                    "cannot be called. Capture before calling backward(), or call "
                    "backward(retain_graph=True)."
                )
            if s.kind == "tensor":
                return None
    return None


def explore(
    outputs: Any,
    grad_outputs: Any = None,
    *,
    model: Any = None,
    params: Mapping[str, Any] | None = None,
    collapse: str = "auto",
    orientation: str = "TB",
    keep: str | int = "summaries",
    create_graph: bool = False,
    height: int = 600,
) -> AutogradWidget:
    """Capture `outputs`' backward graph and show it as an interactive, steppable widget.

    `collapse`: "auto" (above `groups.AUTO_COLLAPSE_NODES` nodes: fold runs of identical blocks
    into one box each, "layers.0–47 ×48", and collapse the remaining top-level modules),
    "modules" (collapse the top-level modules), "repeats" (fold the runs only) or "none".
    A click on a box unfolds it locally (`widget.expand`, `fold`, `unfold`, `reveal`).
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
    )
