"""The step state as arrays: what every node and edge looks like at the stepper's position.

`StateView` keeps one array entry per REAL node and edge, updated incrementally (only the steps
done or undone since the last update are revisited, so a step on a 10k-node graph costs a few
entries), and maps them onto the visible items (a box aggregates its members) on demand. The
`_state` payload the widget syncs is `StateView.update()`; its keys are
`wire.protocol.STATE_KEYS`. Everything autograd comes from the stepper's public API; no torch.

The colour scale (`norm_range`, log10 of the smallest and largest finite nonzero norm) is FIXED
for the whole run: taken once, on the first payload past position 0, from a throwaway stepper
run (`view.scale.run_norm_scale`), so an edge never changes colour once it has flowed
(`norm_scale` "run"). When that run fails or yields no finite nonzero norm, the range is that of
the norms flowed so far, recomputed every step (`norm_scale` "so far").
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..util.jsonsafe import encode, encode_number
from .labels import status_line, step_announcement
from .scale import NormScale, norm_scale_of, run_norm_scale
from .visible import VisibleGraph, visible_graph

if TYPE_CHECKING:
    from ..core.graph import BackwardGraph
    from ..engine.interface import Stepping

__all__ = [
    "DIFFERS",
    "DONE",
    "FAILED",
    "FLOWED",
    "FLOWED_NONE",
    "LABEL_MAX_NUMEL",
    "NEXT",
    "NONFINITE",
    "NOT_FLOWED",
    "NO_GRADIENT",
    "PENDING",
    "StateView",
    "as_buffer",
]

#: Node states (`node_state`): the colours of the drawing.
PENDING, NEXT, DONE, FAILED, NO_GRADIENT = 0, 1, 2, 3, 4
#: Edge flags (`edge_flag`); DIFFERS: finite, and different in the compared recording.
NOT_FLOWED, FLOWED, NONFINITE, FLOWED_NONE, DIFFERS = 0, 1, 2, 3, 4
#: Gradients with at most this many elements get their values written on the edge.
LABEL_MAX_NUMEL = 4


def as_buffer(a: np.ndarray) -> memoryview:
    """A binary buffer ipywidgets sends as-is (it arrives in JS as a DataView).

    Example:
        >>> bytes(as_buffer(np.zeros(2, np.uint8)))
        b'\\x00\\x00'
    """
    return memoryview(np.ascontiguousarray(a).tobytes())


class StateView:
    """Incrementally maintained step state of one graph under one stepper.

    Node and edge arrays are indexed like the graph payload. `update()` revisits only the steps
    done or undone since the previous call, so a step on a 10k-node graph costs a few entries.
    """

    def __init__(
        self, graph: BackwardGraph, stepper: Stepping, visible: VisibleGraph | None = None
    ) -> None:
        self.graph = graph
        self.stepper = stepper
        self.node_ids = list(graph.nodes)
        self.node_index = {nid: i for i, nid in enumerate(graph.nodes)}
        self.edge_index = {e.id: i for i, e in enumerate(graph.edges)}
        self.out_edges = [
            [self.edge_index[e.id] for e in graph.out_edges(nid)] for nid in graph.nodes
        ]
        n, m = len(graph.nodes), len(graph.edges)
        self.node_state = np.zeros(n, np.uint8)
        self.edge_norm = np.full(m, np.nan, np.float32)
        self.edge_flag = np.zeros(m, np.uint8)
        self.edge_values: dict[str, list] = {}
        self._applied = 0  # steps reflected in the arrays
        self._edit_seq = stepper.edit_seq
        self._next = -1
        self._error: dict[str, Any] | None = None
        self.seq = 0
        self._scale: NormScale | None = None
        #: Real edge indices flagged DIFFERS once flowed (`mark_differences`).
        self.differs: frozenset[int] = frozenset()
        self.set_visible(visible if visible is not None else visible_graph(graph))

    def set_visible(self, visible: VisibleGraph) -> None:
        """Map state onto a new set of visible items (after a fold, unfold or plumbing toggle).

        Example:
            >>> gm = aw.capture(model(torch.randn(5, 4)).sum(), model=model)
            >>> sv = StateView(gm, aw.Stepper(gm)); sv.visible.n_items
            10
            >>> sv.set_visible(visible_graph(gm, {"0"})); sv.visible.n_items  # module 0 in one box
            7
        """
        self.visible = visible
        by_real: dict[int, list[int]] = {}
        for j, k in enumerate(visible.edge_real.tolist()):
            by_real.setdefault(k, []).append(j)
        self._vis_edges_of_real = by_real
        boxes = [j for j in range(visible.n_items) if visible.item_real[j] < 0]
        self._boxes = boxes
        self._box_members = [visible.item_members[j] for j in boxes]

    def _clear_step(self, k: int) -> None:
        i = self.node_index[self.stepper.order[k]]
        self.node_state[i] = PENDING
        for e in self.out_edges[i]:
            self.edge_norm[e] = np.nan
            self.edge_flag[e] = NOT_FLOWED
            self.edge_values.pop(str(e), None)

    def _apply_step(self, k: int) -> None:
        st = self.stepper
        nid = st.order[k]
        i = self.node_index[nid]
        info = st.step_info(k)
        self.node_state[i] = NO_GRADIENT if info.no_gradient else DONE
        edges = self.graph.edges
        for e in self.out_edges[i]:
            s = st.edge_summary(edges[e].id)
            if s is None:
                self.edge_flag[e] = FLOWED_NONE
                continue
            self.edge_norm[e] = s.norm
            nonfinite = bool(s.nan or s.inf)
            self.edge_flag[e] = (
                NONFINITE if nonfinite else DIFFERS if e in self.differs else FLOWED
            )
            if _numel(s.shape) <= LABEL_MAX_NUMEL:
                self.edge_values[str(e)] = encode(s.values)

    def update(self) -> dict[str, Any]:
        """The `_state` payload for the stepper's current position (revisits only the steps
        done or undone since the previous call).

        Example:
            >>> sv = StateView(g, st); _ = st.step()
            >>> sv.update()["position"]
            1
        """
        st = self.stepper
        pos = st.position
        edit_seq = st.edit_seq
        if edit_seq != self._edit_seq:
            # A what-if edit changed gradients without moving the position: redo every step.
            self._edit_seq = edit_seq
            for k in range(self._applied):
                self._clear_step(k)
            self._applied = 0
        if self._next >= 0 and self.node_state[self._next] in (NEXT, FAILED):
            self.node_state[self._next] = PENDING
        if pos < self._applied:
            for k in range(pos, self._applied):
                self._clear_step(k)
        else:
            for k in range(self._applied, pos):
                self._apply_step(k)
        self._applied = pos
        err = st.last_error
        self._next = self.node_index[st.order[pos]] if pos < len(st.order) else -1
        if self._next >= 0:
            failed = err is not None and err[0] == st.order[pos]
            self.node_state[self._next] = FAILED if failed else NEXT
        self._error = (
            {"node": self.node_index[err[0]], "message": err[1]} if err is not None else None
        )
        self.seq += 1
        return self.payload()

    def mark_differences(self, edge_ids: Iterable[str]) -> None:
        """Flag these edges DIFFERS (instead of FLOWED) once their gradient has flowed: the
        edges whose gradients differ in a compared recording (`compare_recordings`). The steps
        already shown are re-flagged.

        Example:
            >>> sv = StateView(g, st); sv.mark_differences(["n0:0"]); _ = st.step()
            >>> int(sv.update() and sv.edge_flag[sv.edge_index["n0:0"]])
            4
        """
        self.differs = frozenset(self.edge_index[e] for e in edge_ids)
        for k in range(self._applied):
            self._apply_step(k)
        self.seq += 1

    def norm_scale(self) -> NormScale:
        """The run's colour scale, computed on first call by a throwaway stepper run (costs
        one run of the graph; cached for the life of this view, whatever the stepper does).

        Guarantees: the user's stepper, tensors, hooks and `.grad` are untouched
        (`view.scale.run_norm_scale`); a failing run gives the "so far" fallback.

        Example:
            >>> sv = StateView(g, st); s = sv.norm_scale()
            >>> s.kind, round(s.hi, 3), st.position
            ('run', 0.602, 0)
        """
        if self._scale is None:
            known = self.stepper.known_run_norms()  # a recording holds them: no run needed
            self._scale = norm_scale_of(known) if known is not None else run_norm_scale(self.graph)
        return self._scale

    def _item(self, real: int) -> int:
        return -1 if real < 0 else int(self.visible.real_item[real])

    def visible_arrays(self) -> dict[str, Any]:
        """Node and edge state per VISIBLE item/edge, as numpy arrays (boxes aggregated):
        node_state, progress, edge_norm, edge_flag and edge_values (visible edge index -> values).

        Example:
            >>> sv = StateView(g, st); _ = st.step(); _ = sv.update()
            >>> sv.visible_arrays()["node_state"]  # n0 DONE, n2 (y) NEXT, the rest PENDING
            array([2, 0, 1, 0], dtype=uint8)
        """
        vis = self.visible
        real = vis.item_real
        node_state = np.zeros(vis.n_items, np.uint8)
        progress = np.zeros(vis.n_items, np.float32)
        is_real = real >= 0
        node_state[is_real] = self.node_state[real[is_real]]
        finished = (self.node_state == DONE) | (self.node_state == NO_GRADIENT)
        progress[is_real] = finished[real[is_real]]
        for j, mem in zip(self._boxes, self._box_members):
            st_m = self.node_state[mem]
            done = int(finished[mem].sum())
            progress[j] = done / len(mem) if len(mem) else 1.0
            if (st_m == FAILED).any():
                node_state[j] = FAILED
            elif (st_m == NEXT).any():
                node_state[j] = NEXT
            elif done == len(mem):
                node_state[j] = DONE
        edge_values: dict[str, list] = {}
        for k, vals in self.edge_values.items():
            for j in self._vis_edges_of_real.get(int(k), ()):
                edge_values[str(j)] = vals
        return {
            "node_state": node_state,
            "progress": progress,
            "edge_norm": self.edge_norm[vis.edge_real],
            "edge_flag": self.edge_flag[vis.edge_real],
            "edge_values": edge_values,
        }

    def payload(self, running: bool = False) -> dict[str, Any]:
        """The `_state` payload as of the last `update()` (keys: `wire.protocol.STATE_KEYS`
        less "notice"), mapped onto the current visible items; arrays as binary buffers.

        Example:
            >>> sv = StateView(g, st)
            >>> p = sv.payload(running=True); p["running"], p["position"], p["total"]
            (True, 0, 4)
        """
        st = self.stepper
        pos, total = st.position, len(st.order)
        # Nothing is coloured at position 0: the scale (a throwaway run) waits for a step.
        scale = self.norm_scale() if pos > 0 or self._scale is not None else None
        norm_range = None
        if scale is not None and scale.fixed:
            norm_range = [scale.lo, scale.hi]
        else:
            flowed = (self.edge_flag == FLOWED) | (self.edge_flag == DIFFERS)
            finite = self.edge_norm[flowed & (self.edge_norm > 0)]
            if finite.size:
                norm_range = [float(np.log10(finite.min())), float(np.log10(finite.max()))]
        waiting: list[Any] = []
        if self._next >= 0:
            for slot, s in enumerate(st.waiting(st.order[pos])):
                if s is None:
                    waiting.append(None)
                    continue
                small = _numel(s.shape) <= LABEL_MAX_NUMEL
                waiting.append(
                    {
                        "slot": slot,
                        "shape": list(s.shape),
                        "dtype": s.dtype,
                        "norm": encode_number(s.norm),
                        "values": encode(s.values) if small else None,
                    }
                )
        arrays = self.visible_arrays()
        edits: dict[str, Any] = {}
        for eid, info in st.edits.items():
            k = self.edge_index.get(eid)
            for j in self._vis_edges_of_real.get(k, ()) if k is not None else ():
                edits[str(j)] = {"id": eid, **info.as_dict()}
        error = None
        if self._error is not None:
            error = dict(self._error)
            error["node"] = self._item(self._error["node"])
            error["id"] = self.node_ids[self._error["node"]]
        last = self.node_index[st.order[pos - 1]] if pos > 0 else -1
        return {
            "seq": self.seq,
            "position": pos,
            "total": total,
            "done": pos >= total,
            "running": running,
            "next": self._item(self._next),
            "next_id": self.node_ids[self._next] if self._next >= 0 else None,
            "last": self._item(last),
            "node_state": as_buffer(arrays["node_state"]),
            "progress": as_buffer(arrays["progress"]),
            "edge_norm": as_buffer(arrays["edge_norm"]),
            "edge_flag": as_buffer(arrays["edge_flag"]),
            "edge_values": arrays["edge_values"],
            "edits": edits,
            "norm_range": norm_range,
            "norm_scale": scale.kind if scale is not None else None,
            "waiting": waiting,
            "status": status_line(self.graph, st),
            "announce": step_announcement(self.graph, st),
            "error": error,
        }


def _numel(shape: Any) -> int:
    return math.prod(shape)


