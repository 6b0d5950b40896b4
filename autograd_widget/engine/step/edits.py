"""What-if edits: replace the gradient that flowed on an edge, and continue from there.

`Stepper.set_edge_grad()` (and `scale_edge_grad`/`zero_edge_grad`) replaces what flowed on an edge
whose source has run and whose destination has not. An edit lives ON ITS EDGE: every replay applies
it when the source runs again (`Edits.outputs`, called by the stepper's loop for the steps in
`Edits.steps` only), so back()/forward over later steps keeps it, back() past the edge's source (the
step that produced the gradient) drops it, and reset() drops all of them. Applying an edit replays
the plan from the start to the current position, which rebuilds the slot buffers and the undo log
under the edit (exact and simple; an edit is a user action, not a hot path): `WhatIf.apply`
(whatif.py) runs that replay as a transaction (all or nothing) around `Edits.replace` and
`Edits.restore`.

An edit is applied after the engine's reduction (`calls.validate`), so it is in the destination's
shape and dtype; "scale" multiplies what the source computed (not compounding: a second scale
replaces the first), "zero" replaces it with zeros, "set" with a given tensor.

`Edits` is only the set; the unedited reference run a `LeafDiff` compares with is the stepper's
(whatif.py).
"""

from __future__ import annotations

from typing import Any, Literal

import torch

from ...core.graph import BackwardGraph
from ...core.records import RegionEdge
from ...core.summary import Summary
from ...util.dtypes import dtype_from_name
from .calls import validate
from .plan import Plan
from .results import EditInfo

__all__ = ["EditKind", "Edits"]

EditKind = Literal["set", "scale", "zero"]


class Edits:
    """The what-if edits of one stepper: edge index -> `EditInfo`, and the steps they touch.

    Args:
        plan: the stepper's plan (edge ids, the step of each edge's source, routes).

    Guarantees: `steps` is always the set of steps whose outputs an edit replaces (the loop's
    one membership test per step); `seq` grows whenever the set of edits changes.

    Example:
        >>> edits = Edits(st.plan)
        >>> edits.by_edge(), edits.steps, edits.seq
        ({}, frozenset(), 0)
        >>> _ = edits.replace({0: edits.make(0, "set", None, torch.tensor(0.5), None)}, [])
        >>> edits.steps  # edge 0 (n0:0) leaves step 0
        frozenset({0})
    """

    def __init__(self, plan: Plan) -> None:
        self._plan = plan
        #: Edge index -> its edit.
        self.active: dict[int, EditInfo] = {}
        #: Steps whose outputs edits replace (the sources of the edited edges).
        self.steps: frozenset[int] = frozenset()
        #: Bumped whenever the set of edits changes (`Stepper.edit_seq`).
        self.seq = 0
        #: While a replay applies new edits: edge index -> the value it put on the edge.
        self.capture: dict[int, torch.Tensor | None] | None = None

    def by_edge(self) -> dict[str, EditInfo]:
        """Edge id -> edit, in step order of the edges' sources.

        Example:
            >>> edits, v = Edits(st.plan), torch.tensor(0.5)
            >>> _ = edits.replace({ei: edits.make(ei, "set", None, v, None) for ei in (2, 1)}, [])
            >>> list(edits.by_edge())  # n0:1 leaves step 0, n1:0 step 2
            ['n0:1', 'n1:0']
        """
        plan = self._plan
        order = sorted(self.active, key=lambda ei: (plan.edge_step[ei], ei))
        return {plan.edge_ids[ei]: self.active[ei] for ei in order}

    def check(self, ei: int, pos: int, graph: BackwardGraph, what: str) -> None:
        """Raise ValueError unless edge `ei`'s gradient can be edited at position `pos`.

        Args:
            ei: the edge's index.
            pos: the stepper's position.
            graph: the graph (node names for the message).
            what: the action, for the message ("scale the gradient of").

        Guarantees: the message says whether the edge is in the future or already consumed,
        and which position to move to.

        Example:
            >>> edits = Edits(st.plan)
            >>> edits.check(0, 1, g, "zero the gradient of")  # n0 ran, n1 not yet: editable
            >>> edits.check(0, 0, g, "zero the gradient of")
            Traceback (most recent call last):
            ValueError: cannot zero the gradient of edge n0:0: it is in the future, ...
        """
        plan = self._plan
        eid = plan.edge_ids[ei]
        edge = graph.edge(eid)
        if isinstance(edge, RegionEdge):
            region = edge.src.partition("/")[0]
            raise ValueError(
                f"cannot {what} edge {eid}: it is inside compiled region {region}, whose "
                "gradients leaving it are the compiled node's own (an edit inside would change "
                "only the aten ops' view of them); edit an edge into or out of the region"
            )
        ks, kd = plan.edge_step[ei], plan.step_of[edge.dst]
        src = f"{edge.src} ({graph.node(edge.src).name})"
        dst = f"{edge.dst} ({graph.node(edge.dst).name})"
        if ks >= pos:
            raise ValueError(
                f"cannot {what} edge {eid}: it is in the future, its gradient has not flowed yet "
                f"(its source {src} runs at step {ks}, the stepper is at position {pos}); step "
                f"to position {ks + 1} or later first"
            )
        if kd < pos:
            raise ValueError(
                f"cannot {what} edge {eid}: it is in the past, its gradient was already consumed "
                f"by {dst} at step {kd} (the stepper is at position {pos}); back() to a position "
                f"from {ks + 1} to {kd} first"
            )

    def check_tensor(self, ei: int, graph: BackwardGraph, tensor: Any) -> None:
        """Raise unless `tensor` can replace edge `ei`'s gradient (exact shape, dtype, device).

        Args:
            ei: the edge's index.
            graph: the graph (the destination slot's metadata).
            tensor: the proposed gradient.

        Guarantees: TypeError for a non-tensor, ValueError naming what the slot expects.

        Example:
            >>> Edits(st.plan).check_tensor(0, g, torch.zeros(3))
            Traceback (most recent call last):
            ValueError: edge n0:0 carries a gradient of shape [], dtype torch.float32, ...
        """
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"expected a torch.Tensor, got {type(tensor).__name__}")
        edge = graph.edge(self._plan.edge_ids[ei])
        meta = graph.nodes[edge.dst].inputs[edge.input_nr]
        shape, dtype = torch.Size(meta.shape), dtype_from_name(meta.dtype)
        device = torch.device(meta.device)
        if tensor.shape != shape or tensor.dtype != dtype or tensor.device != device:
            raise ValueError(
                f"edge {edge.id} carries a gradient of shape {list(shape)}, dtype {dtype}, device "
                f"{device} (what {edge.dst} ({graph.nodes[edge.dst].name}) expects in slot "
                f"{edge.input_nr}); got shape {list(tensor.shape)}, dtype {tensor.dtype}, device "
                f"{tensor.device}"
            )

    def make(
        self,
        ei: int,
        kind: EditKind,
        factor: float | complex | None,
        value: torch.Tensor | None,
        current: Summary | None,
    ) -> EditInfo:
        """The `EditInfo` for a new edit on edge `ei`.

        Args:
            ei: the edge's index.
            kind: "set", "scale" or "zero".
            factor: the scale factor ("scale" only).
            value: the new gradient ("set" only).
            current: the summary of what flows on the edge now.

        Guarantees: `before` is what the source computed, unedited (kept from an earlier edit on
        the same edge); scaling or zeroing an edge that got no gradient raises ValueError.

        Example:
            >>> _ = st.step()
            >>> info = Edits(st.plan).make(0, "zero", None, None, st.edge_summary("n0:0"))
            >>> info.edge, info.kind, info.before.mean
            ('n0:0', 'zero', 1.0)
        """
        prev = self.active.get(ei)
        before = prev.before if prev is not None else current
        eid = self._plan.edge_ids[ei]
        if kind != "set" and before is None:
            raise ValueError(
                f"cannot {kind} the gradient of edge {eid}: its source sent no gradient along it "
                "(None); set_edge_grad() puts one there"
            )
        return EditInfo(eid, kind, factor, value, before)

    def replace(self, new: dict[int, EditInfo], drop: list[int]) -> dict[int, EditInfo]:
        """Add `new` edits and remove `drop`; returns the previous edits for `restore`.

        Args:
            new: edge index -> edit to add (replacing any on the same edge).
            drop: edge indices whose edit goes.

        Example:
            >>> edits = Edits(st.plan)
            >>> old = edits.replace({0: edits.make(0, "set", None, torch.tensor(0.5), None)}, [])
            >>> old, list(edits.active)
            ({}, [0])
        """
        old = self.active
        active = {ei: e for ei, e in old.items() if ei not in drop}
        active.update(new)
        self._set(active)
        return old

    def restore(self, old: dict[int, EditInfo]) -> None:
        """Put back the edits `replace` returned (a failed replay).

        Args:
            old: what `replace` returned.

        Example:
            >>> edits = Edits(st.plan)
            >>> old = edits.replace({0: edits.make(0, "set", None, torch.tensor(0.5), None)}, [])
            >>> edits.restore(old); edits.active, edits.steps
            ({}, frozenset())
        """
        self._set(old)

    def drop(self, eis: list[int]) -> None:
        """Forget edits whose state the caller is discarding anyway (back(), reset()).

        Args:
            eis: edge indices (those without an edit are ignored).

        Guarantees: `seq` is bumped when anything was given.

        Example:
            >>> edits = Edits(st.plan)
            >>> _ = edits.replace({0: edits.make(0, "set", None, torch.tensor(0.5), None)}, [])
            >>> edits.drop(list(edits.active)); edits.active, edits.seq
            ({}, 1)
        """
        if not eis:
            return
        active = self.active
        for ei in eis:
            active.pop(ei, None)
        self._set(active)
        self.seq += 1

    def _set(self, active: dict[int, EditInfo]) -> None:
        self.active = active
        self.steps = frozenset(self._plan.edge_step[ei] for ei in active)

    def outputs(self, k: int, out: Any, nograd: set[int] | None) -> tuple:
        """Step k's outputs with the edits on its edges applied; called inside the stepper's loop.

        Args:
            k: the step (in `steps`).
            out: what the node returned (None: it was not called, every slot empty).
            nograd: the stepper's set of no-gradient steps (None in a replay: left alone).

        Guarantees: edits apply after the engine's reduction, so an edited gradient is in the
        destination's shape and dtype; an edit can put a gradient out of a node that was not
        called. Values are recorded in `capture` while it is a dict.

        Example:
            >>> edits = Edits(st.plan)  # below: set edge 0, n0's output 0, to 0.5
            >>> _ = edits.replace({0: edits.make(0, "set", None, torch.tensor(0.5), None)}, [])
            >>> edits.outputs(0, (torch.tensor(1.0), torch.tensor(1.0)), None)
            (tensor(0.5000), tensor(1.))
        """
        plan = self._plan
        rts = plan.routes[k]
        if out is None:  # not called (every slot empty): an edit can still put a gradient out
            if nograd is not None:
                nograd.add(k)
            res: list = [None] * (max(r[0] for r in rts) + 1)
        else:
            res = list(out) if type(out) is tuple else [out]
        cap = self.capture
        active = self.active
        for onr, ei, _s, shape, dtype, dev in rts:
            ed = active.get(ei)
            if ed is None:
                continue
            if ed.kind == "set":
                g = ed.value
            else:
                g = res[onr]
                if g is None:
                    continue
                g = validate(g, shape, dtype, dev, plan.names[k], onr)
                g = g * ed.factor if ed.kind == "scale" else torch.zeros_like(g)
            res[onr] = g
            if cap is not None:
                cap[ei] = g
        return tuple(res)
