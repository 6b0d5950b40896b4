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

from . import view
from .capture import capture
from .graph import BackwardGraph
from .stepper import Stepper

log = logging.getLogger("autograd_widget")

_STATIC = Path(__file__).parent / "static"
_COLLAPSE = ("auto", "modules", "none")
_ORIENTATIONS = ("TB", "LR")
#: Longest a single "run" chunk may take, whatever the front-end asks: the kernel handler blocks
#: every other message (Pause included) while it runs.
MAX_CHUNK_MS = 1000


def _esm() -> Path | str:
    path = _STATIC / "widget.js"
    if path.exists():
        return path
    return (
        "export default { render({ el }) { el.textContent = 'autograd_widget: the front-end "
        "bundle is missing (autograd_widget/static/widget.js). Build it: cd js && npm ci && "
        "npm run build'; } };"
    )


def _css() -> Path | str:
    path = _STATIC / "widget.css"
    return path if path.exists() else ""


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

    _graph = traitlets.Dict().tag(sync=True)
    _state = traitlets.Dict().tag(sync=True)
    selected = traitlets.Unicode(None, allow_none=True).tag(sync=True)
    height = traitlets.Int(600).tag(sync=True)
    orientation = traitlets.Unicode("TB").tag(sync=True)

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
        else:
            graph = capture(graph_or_outputs, grad_outputs, model=model, params=params)
        super().__init__(height=height, orientation=orientation)
        self.graph = graph
        self.collapse = collapse
        self.stepper = Stepper(graph, create_graph=create_graph, keep=keep)
        self._released = False
        self._running = False
        self._layout = view.compute_layout(graph, orientation)
        self._view = view.StateView(graph, self.stepper)
        self._graph = view.graph_payload(graph, self._layout)
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

    @traitlets.validate("orientation")
    def _check_orientation(self, proposal: dict) -> str:
        if proposal["value"] not in _ORIENTATIONS:
            raise traitlets.TraitError("orientation must be 'TB' or 'LR'")
        return proposal["value"]

    @traitlets.observe("orientation")
    def _relayout(self, change: dict) -> None:
        if not hasattr(self, "_layout") or change["old"] == change["new"]:
            return
        self._layout = view.compute_layout(self.graph, change["new"])
        self._graph = view.graph_payload(self.graph, self._layout)

    # ------------------------------------------------------------------ messages
    def _warn(self, message: str) -> None:
        log.warning("autograd_widget: %s", message)
        self.send({"type": "warning", "message": message})

    def _node_arg(self, msg: dict, key: str = "node") -> str | None:
        idx = msg.get(key)
        if isinstance(idx, bool) or not isinstance(idx, int):
            return None
        ids = self._view.node_ids
        return ids[idx] if 0 <= idx < len(ids) else None

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
        node = self._node_arg(msg)
        if node is None:
            self._warn(f"run_to needs a node index in 0..{len(self.graph.nodes) - 1}")
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
        with st.batch():
            while not st.done:
                rec = st.step()
                if rec is None or rec.error is not None or st.at_breakpoint:
                    self._running = False
                    break
                if time.perf_counter() >= deadline:
                    break
        if st.done:
            self._running = False
        else:
            self._running = self._running or (st.last_error is None and not st.at_breakpoint)
        self._refresh()

    def _msg_pause(self, msg: dict) -> None:
        self._refresh(running=False)

    def _msg_select(self, msg: dict) -> None:
        if msg.get("node") is None:
            self.selected = None
            return
        node = self._node_arg(msg)
        if node is None:
            self._warn("select needs a node index or null")
            return
        self.selected = node

    def _msg_inspect(self, msg: dict) -> None:
        req = msg.get("request")
        if isinstance(req, bool) or not isinstance(req, int):
            self._warn("inspect needs an integer request id")
            return
        if "edge" in msg:
            idx = msg.get("edge")
            edges = self.graph.edges
            if isinstance(idx, bool) or not isinstance(idx, int) or not 0 <= idx < len(edges):
                self._warn(f"inspect: no edge index {idx!r}")
                return
            data = self._inspect_edge(edges[idx].id)
        else:
            node = self._node_arg(msg)
            if node is None:
                self._warn(f"inspect: no node index {msg.get('node')!r}")
                return
            data = self._inspect_node(node)
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

    def _inspect_node(self, node_id: str) -> dict[str, Any]:
        n = self.graph.nodes[node_id]
        st = self.stepper
        err = st.last_error
        incoming = [] if self._released else st.waiting(node_id)
        return {
            "id": n.id,
            "name": n.name,
            "label": view.short_label(n),
            "kind": view.display_kind(n),
            "module": n.module,
            "sequence_nr": n.sequence_nr,
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
        return view.to_figure(self.graph, self._layout, self._view)

    def release(self) -> None:
        """Drop every torch reference (graph, stepper, kept tensors); the drawing stays."""
        if self._released:
            return
        self._released = True
        self._running = False
        self.stepper.remove_listener(self._on_stepper_change)
        self.stepper.close()
        self.graph.close()
        state = dict(self._state)
        state["running"] = False
        state["notice"] = "released: the drawing stays, stepping needs explore() again"
        self._state = state

    def close(self) -> None:
        self.release()
        super().close()


_HANDLERS = {
    "step": AutogradWidget._msg_step,
    "back": AutogradWidget._msg_back,
    "reset": AutogradWidget._msg_reset,
    "run_to": AutogradWidget._msg_run_to,
    "run": AutogradWidget._msg_run,
    "pause": AutogradWidget._msg_pause,
    "select": AutogradWidget._msg_select,
    "inspect": AutogradWidget._msg_inspect,
}


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
    """Capture `outputs`' backward graph and show it as an interactive, steppable widget."""
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
