"""The step state as arrays: what every node and edge looks like at the stepper's position.

`StateView` keeps one array entry per REAL node and edge, updated incrementally (only the steps
done or undone since the last update are revisited, so a step on a 10k-node graph costs a few
entries), and maps them onto the visible items (a box aggregates its members: counts of their
states, kept as they change) on demand. The `_state` payload the widget syncs is
`StateView.update()`; its keys are `wire.protocol.STATE_KEYS`. What changed since it was last
asked (`take_changes`) lets a walkthrough store each step in time linear in what the step
changed, not in the size of the graph. Everything autograd comes from the stepper's public API;
no torch.

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

from ..core.regions import value_edges
from ..util.jsonsafe import encode, encode_number
from .compiledframes import region_status
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
    "SAVED_VALUE",
    "StateView",
    "as_buffer",
]

#: Node states (`node_state`): the colours of the drawing.
PENDING, NEXT, DONE, FAILED, NO_GRADIENT = 0, 1, 2, 3, 4
#: Edge flags (`edge_flag`); DIFFERS: finite, and different in the compared recording;
#: SAVED_VALUE: a compiled region's edge that carries no gradient (a recomputed activation, an
#: index, a mask: core/regions.py `Region.values`), never on the gradient-norm scale.
NOT_FLOWED, FLOWED, NONFINITE, FLOWED_NONE, DIFFERS, SAVED_VALUE = 0, 1, 2, 3, 4, 5
#: Gradients with at most this many elements get their values written on the edge.
LABEL_MAX_NUMEL = 4
#: The node states a box counts among its members: its look is read from these counts.
_COUNTED = {"finished": (DONE, NO_GRADIENT), "failed": (FAILED,), "next": (NEXT,)}


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
        self._saved_values = value_edges(graph.regions)
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
        boxes = np.flatnonzero(visible.item_real < 0)
        self._boxes = boxes
        # Each box's members counted by state, kept up to date as nodes change (`_set_state`),
        # so a box's look costs O(1) however many nodes it holds.
        self._box_of = np.full(len(self.node_state), -1, np.int64)
        for b, j in enumerate(boxes.tolist()):
            self._box_of[np.asarray(visible.item_members[j], np.int64)] = b
        self._box_len = np.bincount(self._box_of[self._box_of >= 0], minlength=len(boxes))
        self._box_count: dict[str, np.ndarray] = {}
        for kind, states in _COUNTED.items():
            inside = (self._box_of >= 0) & np.isin(self.node_state, states)
            self._box_count[kind] = np.bincount(self._box_of[inside], minlength=len(boxes))
        self._item_changed: set[int] = set(range(visible.n_items))
        self._edge_changed: set[int] = set(range(len(visible.edge_real)))
        # The visible edges' values, kept in step with `edge_values` (no pass over all values
        # per payload); `_values_changed` collects the keys touched since `take_changes`.
        old_keys = set(getattr(self, "_vis_values", {}))
        self._vis_values: dict[str, list] = {}
        self._values_changed: set[str] = set()
        for k, vals in self.edge_values.items():
            self._show_values(int(k), vals)
        self._values_changed |= old_keys

    def _show_values(self, e: int, vals: list | None) -> None:
        """Real edge `e`'s values (None: gone) onto the visible edges showing it."""
        for j in self._vis_edges_of_real.get(e, ()):
            key = str(j)
            if vals is None:
                self._vis_values.pop(key, None)
            else:
                self._vis_values[key] = vals
            self._values_changed.add(key)

    def _set_state(self, i: int, state: int) -> None:
        """Real node `i`'s state, its box's counts and the changed items kept in step."""
        was = int(self.node_state[i])
        if was == state:
            return
        self.node_state[i] = state
        b = int(self._box_of[i])
        if b >= 0:
            for kind, states in _COUNTED.items():
                self._box_count[kind][b] += (state in states) - (was in states)
            self._item_changed.add(int(self._boxes[b]))
        else:
            j = int(self.visible.real_item[i])
            if j >= 0:
                self._item_changed.add(j)

    def _touch_edge(self, e: int) -> None:
        self._edge_changed.update(self._vis_edges_of_real.get(e, ()))

    def take_changes(self) -> dict[str, Any]:
        """What changed since the previous call (or since the visible items were set), and
        forget it: `items` and `edges` (sorted visible indices whose state may differ) and
        `edge_values` (visible edge key -> its values now, None: none shown, in edge order).
        With `visible_arrays(items=..., edges=...)` a walkthrough stores each step's change
        without a pass over every item, edge or value.

        Example:
            >>> sv = StateView(g, st); _ = sv.take_changes(); _ = st.step(); sv.advance()
            >>> c = sv.take_changes(); c["items"].tolist(), c["edges"].tolist(), c["edge_values"]
            ([0, 2], [0, 1], {'0': [1.0], '1': [1.0]})
        """
        items = np.asarray(sorted(self._item_changed), np.int64)
        edges = np.asarray(sorted(self._edge_changed), np.int64)
        keys = self._values_changed
        self._item_changed, self._edge_changed, self._values_changed = set(), set(), set()
        return {"items": items, "edges": edges,
                "edge_values": {k: self._vis_values.get(k) for k in sorted(keys, key=int)}}

    def _clear_step(self, k: int) -> None:
        i = self.node_index[self.stepper.order[k]]
        self._set_state(i, PENDING)
        for e in self.out_edges[i]:
            self._touch_edge(e)
            self.edge_norm[e] = np.nan
            self.edge_flag[e] = NOT_FLOWED
            if self.edge_values.pop(str(e), None) is not None:
                self._show_values(e, None)

    def _apply_step(self, k: int) -> None:
        st = self.stepper
        nid = st.order[k]
        i = self.node_index[nid]
        info = st.step_info(k)
        self._set_state(i, NO_GRADIENT if info.no_gradient else DONE)
        edges = self.graph.edges
        for e in self.out_edges[i]:
            self._touch_edge(e)
            s = st.edge_summary(edges[e].id)
            if s is None:
                self.edge_flag[e] = FLOWED_NONE
                continue
            self.edge_norm[e] = s.norm
            nonfinite = bool(s.nan or s.inf)
            self.edge_flag[e] = (
                NONFINITE if nonfinite else SAVED_VALUE if edges[e].id in self._saved_values
                else DIFFERS if e in self.differs else FLOWED
            )
            if _numel(s.shape) <= LABEL_MAX_NUMEL:
                vals = self.edge_values[str(e)] = encode(s.values)
                self._show_values(e, vals)

    def update(self) -> dict[str, Any]:
        """The `_state` payload for the stepper's current position (revisits only the steps
        done or undone since the previous call).

        Example:
            >>> sv = StateView(g, st); _ = st.step()
            >>> sv.update()["position"]
            1
        """
        self.advance()
        return self.payload()

    def advance(self) -> None:
        """Bring the state to the stepper's current position (revisiting only the steps done
        or undone since the previous call) without building a payload: `update()` less its
        payload, for a caller that reads only part of it (`scalars`, `visible_arrays`).

        Example:
            >>> sv = StateView(g, st); _ = st.step(); sv.advance(); sv.scalars()["position"]
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
            self._set_state(self._next, PENDING)
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
            self._set_state(self._next, FAILED if failed else NEXT)
        self._error = (
            {"node": self.node_index[err[0]], "message": err[1]} if err is not None else None
        )
        self.seq += 1

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

    def visible_arrays(self, values: bool = True, *, items: np.ndarray | None = None,
                       edges: np.ndarray | None = None) -> dict[str, Any]:
        """Node and edge state per VISIBLE item/edge, as numpy arrays (boxes aggregated):
        node_state, progress, edge_norm, edge_flag and, unless `values` is False, edge_values
        (visible edge index -> values). `items` / `edges`: only those visible indices (the
        arrays then follow their order), e.g. what `take_changes` names.

        Cost: a few numpy passes over the items and edges asked for (a box's look comes from
        counts of its members' states kept as they change, not from its members) and a copy of
        the values shown, so a walkthrough of every step of a large graph stays linear.

        Example:
            >>> sv = StateView(g, st); _ = st.step(); _ = sv.update()
            >>> sv.visible_arrays()["node_state"]  # n0 DONE, n2 (y) NEXT, the rest PENDING
            array([2, 0, 1, 0], dtype=uint8)
            >>> sv.visible_arrays(False, items=np.array([2]), edges=np.array([0]))["node_state"]
            array([1], dtype=uint8)
        """
        vis = self.visible
        items = np.arange(vis.n_items) if items is None else np.asarray(items, np.int64)
        real = vis.item_real[items]
        node_state = np.zeros(len(items), np.uint8)
        progress = np.zeros(len(items), np.float32)
        is_real = real >= 0
        st = self.node_state[real[is_real]]
        node_state[is_real] = st
        progress[is_real] = (st == DONE) | (st == NO_GRADIENT)
        box_at = np.flatnonzero(~is_real)
        if box_at.size:
            b = np.searchsorted(self._boxes, items[box_at])
            size, count = self._box_len[b], {k: v[b] for k, v in self._box_count.items()}
            done = count["finished"]
            progress[box_at] = np.where(size > 0, done / np.maximum(size, 1), 1.0)
            node_state[box_at] = np.where(
                count["failed"] > 0, FAILED,
                np.where(count["next"] > 0, NEXT, np.where(done == size, DONE, PENDING)))
        edge_real = vis.edge_real if edges is None else vis.edge_real[np.asarray(edges, np.int64)]
        out = {
            "node_state": node_state,
            "progress": progress,
            "edge_norm": self.edge_norm[edge_real],
            "edge_flag": self.edge_flag[edge_real],
        }
        if values:
            out["edge_values"] = dict(self._vis_values)
        return out

    def payload(self, running: bool = False) -> dict[str, Any]:
        """The `_state` payload as of the last `update()` (keys: `wire.protocol.STATE_KEYS`
        less "notice"), mapped onto the current visible items; arrays as binary buffers.

        Example:
            >>> sv = StateView(g, st)
            >>> p = sv.payload(running=True); p["running"], p["position"], p["total"]
            (True, 0, 4)
        """
        sc = self.scalars(running)
        arrays = self.visible_arrays()
        edits: dict[str, Any] = {}
        for eid, info in self.stepper.edits.items():
            k = self.edge_index.get(eid)
            for j in self._vis_edges_of_real.get(k, ()) if k is not None else ():
                edits[str(j)] = {"id": eid, **info.as_dict()}
        head = ("seq", "position", "total", "done", "running", "next", "next_id", "last")
        tail = ("norm_range", "norm_scale", "waiting", "status", "announce", "error")
        return {
            **{k: sc[k] for k in head},
            "node_state": as_buffer(arrays["node_state"]),
            "progress": as_buffer(arrays["progress"]),
            "edge_norm": as_buffer(arrays["edge_norm"]),
            "edge_flag": as_buffer(arrays["edge_flag"]),
            "edge_values": arrays["edge_values"],
            "edits": edits,
            **{k: sc[k] for k in tail},
        }

    def scalars(self, running: bool = False) -> dict[str, Any]:
        """The payload's keys that are not per item or edge (seq, position, total, done,
        running, next, next_id, last, norm_range, norm_scale, waiting, status, announce, error),
        as of the last `update()` or `advance()`: what a walkthrough stores per step, without
        the cost of the arrays and values.

        Example:
            >>> sv = StateView(g, st); sv.advance(); sv.scalars()["next_id"]
            'n0'
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
            "norm_range": norm_range,
            "norm_scale": scale.kind if scale is not None else None,
            "waiting": waiting,
            "status": status_line(self.graph, st) + (  # an opaque region next or just ran: why
                region_status(self.graph, st.order[pos] if pos < total else None)
                or region_status(self.graph, st.order[pos - 1] if pos else None)),
            "announce": step_announcement(self.graph, st),
            "error": error,
        }


def _numel(shape: Any) -> int:
    return math.prod(shape)


