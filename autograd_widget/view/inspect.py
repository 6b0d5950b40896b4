"""Inspector data: what the side panel shows about a node, an edge or a box, as JSON-safe dicts.

Every function here is a function of (scene, stepper): the scene says what is drawn (items,
boxes, folds) and the stepper what has flowed so far. `stepper=None` means released: the records
are still there (names, modules, tracebacks) but nothing live is read (no saved values, no
gradients, no hooks). Nothing here changes the scene or the stepper, so the widget and the
standalone export (which records the inspector as of the end of its run) share them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..core.dtensor import communication, communication_op, layout
from ..core.formulas.api import node_formula
from ..core.fsdp import graph_sharding
from ..util.jsonsafe import encode_number
from .compiledframes import region_note
from .labels import display_kind, group_label, short_label
from .visible import search

if TYPE_CHECKING:
    from ..core.graph import BackwardGraph
    from ..core.summary import Summary
    from ..engine.interface import Stepping
    from .scene import Scene

__all__ = [
    "NODE_HOOKS_NOTE",
    "formula_payload",
    "hooks",
    "inspect_edge",
    "inspect_group",
    "inspect_item",
    "inspect_node",
    "leaf_diff_report",
    "memory_report",
    "plain_note",
    "saved_values_reply",
    "search_matches",
    "sensitivity_report",
    "sharding_payload",
    "summary_payload",
]

NODE_HOOKS_NOTE = (
    "Hooks registered on this node (node.register_hook / register_prehook) or on the non-leaf "
    "tensors it produced cannot be listed from the graph; compare_with_engine() reveals any "
    "that change gradients."
)


def summary_payload(s: Summary | None) -> dict[str, Any] | None:
    """A Summary as the front-end reads it (`Summary.as_dict()`: the one JSON encoding), None
    for None.

    Example:
        >>> summary_payload(st.edge_summary("n0:0")) is None  # nothing has flowed yet
        True
    """
    return None if s is None else s.as_dict()


def _hook_names(d: Any) -> list[str]:
    out = []
    for h in (d or {}).values():
        name = getattr(h, "__qualname__", None) or type(h).__name__
        out.append(str(name))
    return out


def hooks(graph: BackwardGraph, node_id: str) -> list[dict[str, Any]]:
    """Listable hooks: tensor hooks of the leaf behind an AccumulateGrad, and of root tensors,
    plus a note on what cannot be listed. Needs the live graph.

    Example:
        >>> _ = x.register_hook(lambda grad: 2 * grad)
        >>> hooks(g, "n3")
        [{'on': 'x', 'kind': 'tensor hook', 'fn': '<lambda>'}]
    """
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


def inspect_edge(scene: Scene, stepper: Stepping | None, edge_id: str) -> dict[str, Any]:
    """An edge's ends and the summary of the gradient it carried (None before it flowed).

    Example:
        >>> from autograd_widget.view.scene import Scene
        >>> scene = Scene(g, st); _ = st.step()  # n0 sends its gradient along n0:0
        >>> e = inspect_edge(scene, st, "n0:0"); e["dst"]["name"], e["summary"]["norm"]
        ('PowBackward0', 1.0)
    """
    graph = scene.graph
    e = graph.edge(edge_id)
    src, dst = graph.nodes[e.src], graph.nodes[e.dst]
    summary = None if stepper is None else stepper.edge_summary(edge_id)
    return {
        "id": edge_id,
        "src": {"id": src.id, "name": src.name, "output_nr": e.output_nr},
        "dst": {"id": dst.id, "name": dst.name, "input_nr": e.input_nr,
                "label": short_label(dst)},
        "summary": summary_payload(summary),
    }


def inspect_group(scene: Scene, item: int) -> dict[str, Any]:
    """A box (collapsed module or folded run): its members' ops, leaves and progress.

    Example:
        >>> from autograd_widget.view.scene import Scene
        >>> gm = aw.capture(model(torch.randn(5, 4)).sum(), model=model)
        >>> scene = Scene(gm, aw.Stepper(gm), collapse="modules")
        >>> box = inspect_group(scene, scene.item_of("n5")); box["group"], box["leaves"]
        ('0', ['0.bias', '0.weight'])
    """
    graph = scene.graph
    path = scene.visible.item_group[item] or ""
    members = scene.box_members(item)
    arrays = scene.state.visible_arrays()
    names: dict[str, int] = {}
    for nid in members:
        nm = graph.nodes[nid].name
        names[nm] = names.get(nm, 0) + 1
    run = scene.box_fold(item)
    fold = None
    if run is not None:
        fold = {"count": run.count, "period": run.period,
                "nodes_per_unit": run.nodes_per_unit, "members": list(run.members)}
    return {
        "group": path,
        "label": group_label(path, graph.model_name) if run is None else run.label,
        "fold": fold,
        "kind": "group",
        "members": len(members),
        "progress": float(arrays["progress"][item]),
        "ops": sorted(names.items(), key=lambda kv: (-kv[1], kv[0]))[:12],
        "leaves": [
            graph.nodes[nid].leaf_name
            for nid in members if graph.nodes[nid].kind == "accumulate_grad"
        ][:50],
    }


def inspect_node(scene: Scene, stepper: Stepping | None, node_id: str) -> dict[str, Any]:
    """A node: traceback, saved values, hooks, edges in and out with their gradients, error;
    for a DTensor communication node also "communication": the layouts it moves between
    (core/dtensor.py `Communication.as_dict`).

    Example:
        >>> from autograd_widget.view.scene import Scene
        >>> node = inspect_node(Scene(g, st), st, "n1")
        >>> node["label"], [s["name"] for s in node["saved"]]
        ('Pow', ['exponent', 'self'])
    """
    graph = scene.graph
    n = graph.nodes[node_id]
    err = None if stepper is None else stepper.last_error
    incoming = [] if stepper is None else stepper.waiting(node_id)
    saved: list[dict[str, Any]] = []
    saved_error = None
    recorded = stepper is not None and not stepper.capabilities.saved_values
    if recorded:
        saved_error = ("a recording keeps no saved values (the engine freed them as it ran): "
                       "explore the live tensors to read them")
    elif stepper is not None:
        try:
            saved = [v.as_dict() for v in graph.saved(node_id)]
        except Exception as e:  # introspection must never break the inspector
            saved_error = f"{type(e).__name__}: {e}"
    out: dict[str, Any] = {
        "traceback": n.traceback,
        "saved": saved,
        "saved_error": saved_error,
        "hooks": [] if stepper is None or recorded else hooks(graph, node_id),
        "run": None if stepper is None else _engine_execution(stepper, node_id),
        "formula": formula_payload(graph, node_id),
        "explanation": _explanation(stepper, node_id),
        "in_edges": [
            {"id": e.id, "src": e.src, "name": graph.nodes[e.src].name, "input_nr": e.input_nr}
            for e in graph.in_edges(node_id)
        ],
        "id": n.id,
        "name": n.name,
        "label": short_label(n),
        "kind": display_kind(n),
        "module": n.module,
        # AccumulateGrad's UINT64_MAX ("run as soon as ready") is not a useful number.
        "sequence_nr": None if n.kind == "accumulate_grad" else n.sequence_nr,
        "leaf_name": n.leaf_name,
        "inputs": [[list(m.shape), m.dtype, m.device] for m in n.inputs],
        "incoming": [summary_payload(s) for s in incoming],
        "outgoing": {
            e.id: summary_payload(None if stepper is None else stepper.edge_summary(e.id))
            for e in graph.out_edges(node_id)
        },
        "error": err[1] if err is not None and err[0] == node_id else None,
    }
    comm = _communication(graph, node_id)
    if comm is not None:  # a DTensor communication node: the layouts it moves between
        out["communication"] = comm
    shard = sharding_payload(graph, node_id)
    if shard is not None:  # an FSDP2 parameter's leaf: how the parameter is sharded
        out["sharding"] = shard
    else:
        tp = _dtensor_leaf(graph, node_id)
        if tp is not None:  # a tensor-parallel (DTensor) leaf: its layout
            out["sharding"] = tp
    return out


def _dtensor_leaf(graph: BackwardGraph, node_id: str) -> dict[str, Any] | None:
    """The layout of a leaf that is itself a DTensor (a tensor-parallel parameter), in
    `sharding_payload`'s form; None for any other node, or once the graph is released."""
    node = graph.nodes[node_id]
    if node.kind != "accumulate_grad" or not graph.is_live:
        return None
    try:
        lay = layout(graph.fn(node_id).variable)
    except Exception:  # introspection must never break the inspector
        return None
    if lay is None:
        return None
    note = ("a DTensor: each rank holds its local shard, and its gradient here is this rank's "
            "local shard of the gradient")
    return {"param": node.leaf_name, "note": note, **lay.as_dict()}


def sharding_payload(graph: BackwardGraph, node_id: str) -> dict[str, Any] | None:
    """For the leaf of an FSDP2 parameter (core/fsdp.py): how that parameter is sharded (the
    mesh, the placements, this rank's local shape: core/dtensor.py `Layout.as_dict`) and its
    name; None for any other node, or once the graph is released.

    Example:
        >>> sharding_payload(g, "n3") is None  # x is no FSDP parameter
        True
    """
    if graph.nodes[node_id].kind != "accumulate_grad" or not graph.is_live:
        return None
    try:
        sharding = graph_sharding(graph)
        p = None if sharding is None else sharding.param(graph.fn(node_id).variable)
        lay = None if p is None else layout(p.sharded)
    except Exception:  # introspection must never break the inspector
        return None
    if p is None or lay is None:
        return None
    note = ("FSDP2: this leaf is the unsharded parameter; between passes each rank holds only "
            "its local shard")
    return {"param": p.name, "note": note, **lay.as_dict()}


def _communication(graph: BackwardGraph, node_id: str) -> dict[str, Any] | None:
    """What a communication node moves (core/dtensor.py), read from the live node; None for
    any other node, or once the graph is released."""
    if communication_op(graph.nodes[node_id].name) is None or not graph.is_live:
        return None
    try:
        comm = communication(graph.fn(node_id))
    except Exception:  # introspection must never break the inspector
        return None
    return None if comm is None else comm.as_dict()


_TEX_WORDS = {
    r"\alpha": "α", r"\beta": "β", r"\delta": "δ", r"\sigma": "σ", r"\mu": "μ", r"\pi": "π",
    r"\tau": "τ", r"\zeta": "ζ", r"\iota": "ι", r"\psi": "ψ", r"\varphi": "φ", r"\Phi": "Φ",
    r"\ell": "ℓ", r"\infty": "∞", r"\le": "≤", r"\approx": "≈", r"\odot": "⊙", r"\top": "ᵀ",
    r"\sum": "Σ", r"\lVert": "‖", r"\rVert": "‖", r"\,": " ", r"\left": "", r"\right": "",
    r"\sqrt": "√", r"\tfrac": "", r"\ln": "ln", r"\log": "log", r"\max": "max",
    r"\min": "min", r"\tan": "tan", r"\tanh": "tanh", r"\hat": "", r"\bar": "",
    r"\overline": "", r"\mathrm": "", r"\operatorname": "", r"\mathbb": "",
}
_TEX_COMMAND = re.compile(r"\\[A-Za-z]+|\\,")


def plain_note(note: str) -> str:
    r"""A formula's note (prose with bits of LaTeX) as plain text for the inspector: commands
    become their symbols, braces and sub/superscript marks go.

    Example:
        >>> plain_note(r"\mathrm{mat2}^{\top} is mat2 transposed; y = \sqrt{x}")
        'mat2ᵀ is mat2 transposed; y = √x'
    """
    text = _TEX_COMMAND.sub(lambda m: _TEX_WORDS.get(m.group(0), m.group(0)[1:]), note)
    text = text.replace("^{", "").replace("_{", "_").replace("{", "").replace("}", "")
    return re.sub(r"\s{2,}", " ", text).strip()


def formula_payload(graph: BackwardGraph, node_id: str) -> dict[str, Any]:
    """The inspector's Formula tab: what the node type computes (LaTeX for KaTeX), the same
    with this node's shapes, and a sentence (the whole reply never fails: a formula error
    becomes the sentence).

    Example:
        >>> f = formula_payload(g, "n1"); f["known"], f["latex"] != "", f["shapes"] != ""
        (True, True, True)
    """
    about = region_note(graph, node_id)
    if about is not None:  # a compiled region's node or op (view/compiledframes.py)
        return {"known": False, "latex": "", "shapes": "", "note": about}
    comm = _communication(graph, node_id)
    if comm is not None:  # DTensor communication: what it moves, instead of a formula
        return {"known": False, "latex": "", "shapes": "", "note": comm["note"]}
    try:
        nf = node_formula(graph, node_id)
    except Exception as e:  # the inspector must answer whatever the node holds
        return {"known": False, "latex": "", "shapes": "", "note": f"no formula: {e}"}
    if not nf.known:
        return {"known": False, "latex": "", "shapes": "", "note": nf.text}
    notes = [plain_note(n) for n in (nf.note, nf.shape_note) if n]
    shaped = any(line.shapes for line in nf.lines) or nf.name == "AccumulateGrad"
    return {"known": True, "latex": nf.latex or "", "shapes": nf.latex_shapes if shaped else "",
            "note": ". ".join(n.rstrip(".") for n in notes) + ("." if notes else "")}


def _explanation(stepper: Any, node_id: str) -> dict[str, Any] | None:
    """Why `node_id`'s step failed, when it is the failing one (live stepper or recording)."""
    if stepper is None:
        return None
    err = stepper.last_error
    if err is None or err[0] != node_id:
        return None
    try:
        why = stepper.explain_failure()
    except Exception:  # never break the inspector over an explanation
        return None
    if why is None:
        return None
    return {"sentence": why.sentence, "hint": why.hint, "kind": why.kind,
            "culprit": why.culprit, "traceback": why.traceback}


def _engine_execution(stepper: Stepping, node_id: str) -> dict[str, Any] | None:
    """What a recording knows of how the engine ran `node_id` (None: not recorded, or it did
    not run)."""
    run = stepper.execution_of(node_id)
    if run is None:
        return None
    return {"step": run.step, "seq": run.seq, "thread": run.thread, "pass": run.pass_index,
            "ms": run.seconds * 1e3}


def inspect_item(scene: Scene, stepper: Stepping | None, item: int) -> dict[str, Any]:
    """Visible item `item`: `inspect_group` for a box, `inspect_node` for a node.

    Example:
        >>> from autograd_widget.view.scene import Scene
        >>> scene = Scene(g, st)
        >>> inspect_item(scene, st, scene.item_of("n3"))["leaf_name"]
        'x'
    """
    node = scene.node_of_item(item)
    return inspect_group(scene, item) if node is None else inspect_node(scene, stepper, node)


def memory_report(
    scene: Scene, *, exclude_leaves: bool = False, top: int = 10
) -> dict[str, Any]:
    """Saved bytes per visible item (boxes sum their members), the total and the top holders,
    and `notes` (node id -> what the count cannot include: bytes torch hides in a CopySlices
    node; the inputs a checkpoint region holds), from `graph.saved_memory`.

    Args:
        scene: what is drawn (its graph must be live).
        exclude_leaves: leave out tensors that are leaves (parameters, inputs).
        top: how many of the largest holders to list.

    Example:
        >>> from autograd_widget.view.scene import Scene
        >>> memory_report(Scene(g, st))["top"]  # PowBackward0 saved x, one float32
        [{'id': 'n1', 'name': 'PowBackward0', 'module': None, 'bytes': 4, 'item': 1}]
    """
    graph = scene.graph
    per_node = graph.saved_memory(exclude_leaves=exclude_leaves)
    items = [0] * scene.visible.n_items
    for nid, nbytes in per_node.items():
        j = scene.item_of(nid)
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
                "name": graph.nodes[nid].name,
                "module": graph.nodes[nid].module,
                "bytes": nbytes,
                "item": scene.item_of(nid),
            }
            for nid, nbytes in holders
        ],
        "by_module": dict(graph.saved_memory(by="module", exclude_leaves=exclude_leaves)),
        "notes": dict(per_node.notes),
    }


def sensitivity_report(
    scene: Scene, stepper: Stepping, samples: int = 16, seed: int | None = 0
) -> dict[str, Any]:
    """Per visible item: log10 of the squared Frobenius norm of the node's gradient map
    (`Stepper.jacobian_norms`; a box shows the largest of its members), for colouring.

    Example:
        >>> from autograd_widget.view.scene import Scene
        >>> report = sensitivity_report(Scene(g, st), st, samples=4)
        >>> report["nodes"]["n1"]  # d(x**2)/dx = 4, squared
        {'estimate': 16.0, 'stderr': 0.0, 'exact': True, 'log10': 1.20...}
    """
    norms = stepper.jacobian_norms(samples=samples, seed=seed)
    n_items = scene.visible.n_items
    items: list[Any] = [None] * n_items
    stderr: list[Any] = [None] * n_items
    exact: list[Any] = [None] * n_items
    for nid, jn in norms.items():
        j = scene.item_of(nid)
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
        "errors": dict(stepper.probe_errors),
        "samples": samples,
    }


def leaf_diff_report(scene: Scene, stepper: Stepping) -> dict[str, Any]:
    """Each leaf's gradient now against the unedited run (`Stepper.leaf_grad_diff`), with its
    visible item.

    Example:
        >>> from autograd_widget.view.scene import Scene
        >>> scene = Scene(g, st); _ = st.run()
        >>> leaf = leaf_diff_report(scene, st)["leaves"]["n3"]; leaf["name"], leaf["changed"]
        ('x', False)
    """
    data = {}
    for nid, d in stepper.leaf_grad_diff().items():
        data[nid] = {**d.as_dict(), "item": scene.item_of(nid)}
    return {"leaves": data}


def search_matches(scene: Scene, query: str) -> dict[str, Any]:
    """Nodes matching `query` (`visible.search`), each with its visible item.

    Example:
        >>> from autograd_widget.view.scene import Scene
        >>> search_matches(Scene(g, st), "pow")["matches"]
        [{'id': 'n1', 'name': 'PowBackward0', 'label': 'Pow', 'module': None, 'leaf_name': None,
          'item': 1}]
    """
    graph = scene.graph
    matches = []
    for nid in search(graph, query[:200]):
        n = graph.nodes[nid]
        matches.append({
            "id": nid, "name": n.name, "label": short_label(n), "module": n.module,
            "leaf_name": n.leaf_name, "item": scene.item_of(nid),
        })
    return {"matches": matches}


def saved_values_reply(graph: BackwardGraph, node_id: str, name: str, limit: int) -> dict:
    """The values of one saved tensor (at most `limit`, capped at 100,000), JSON-safe, or
    `{"error": ...}` when it cannot be read.

    Example:
        >>> saved_values_reply(g, "n1", "self", 16)
        {'id': 'n1', 'name': 'self', 'shape': [], 'dtype': 'torch.float32', 'numel': 1,
         'values': [2.0], 'truncated': False}
    """
    try:
        t = graph.saved_tensor(node_id, name)
    except (KeyError, TypeError, RuntimeError) as e:
        return {"error": str(e)}
    flat = t.detach().reshape(-1)
    shown = flat[: min(limit, 100_000)]
    if shown.is_complex():
        values = [encode_number(complex(v)) for v in shown.tolist()]
    else:
        values = [encode_number(float(v)) for v in shown.double().tolist()]
    return {
        "id": node_id, "name": name, "shape": list(t.shape), "dtype": str(t.dtype),
        "numel": flat.numel(), "values": values, "truncated": flat.numel() > len(values),
    }
