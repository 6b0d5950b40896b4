"""Module paths: THE one place that knows how "layers.3.attn" relates to "layers" and "".

Nodes carry the dotted path of the module that created them (`Node.module`; None outside any
module, "" for the model itself). Folding, repeated-block detection and the widget all ask the
same questions of these paths: is this path inside that one, what are the ancestors of a path,
which paths can fold, which are the model's top-level parts. Pure string work on the records,
no torch; the front-end's js/src/groups.js mirrors `in_group` and `parent` for its frames.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..core.graph import BackwardGraph

__all__ = [
    "child_name",
    "children",
    "in_group",
    "module_paths",
    "module_paths_of",
    "parent",
    "top_level_groups",
]


def in_group(module: str | None, group: str) -> bool:
    """True when `module` is `group` or lies under it ("" is the whole model).

    Args:
        module: a node's module path (None: outside every module, never in a group).
        group: a module path.

    Example:
        >>> in_group("layers.3.attn", "layers.3"), in_group("layers.30", "layers.3")
        (True, False)
    """
    if module is None:
        return False
    return group == "" or module == group or module.startswith(group + ".")


def parent(path: str) -> str:
    """The enclosing module's path ("" for a top-level module, and for "" itself).

    Example:
        >>> parent("layers.3.attn"), parent("layers")
        ('layers.3', '')
    """
    return path.rpartition(".")[0]


def child_name(path: str) -> str:
    """The last part of a path ("3" for "layers.3").

    Example:
        >>> child_name("layers.3")
        '3'
    """
    return path.rpartition(".")[2]


def module_paths_of(modules: Iterable[str | None]) -> list[str]:
    """Every path in `modules` (None skipped) with all its ancestors, sorted; "" (the model)
    included as soon as any path is.

    Args:
        modules: module paths, repeated or not (e.g. one per node).

    Example:
        >>> module_paths_of(["a.b", None, "c"])
        ['', 'a', 'a.b', 'c']
    """
    own = {m for m in modules if m is not None}
    paths = set(own)
    for m in own:
        while m:
            m = parent(m)
            paths.add(m)
    return sorted(paths)


def module_paths(graph: BackwardGraph) -> list[str]:
    """Every module path that holds a node of `graph`, with all its ancestors, sorted.

    Example:
        >>> gm = aw.capture(model(torch.randn(5, 4)).sum(), model=model)
        >>> module_paths(gm)  # the ReLU (module "1") holds no parameter to place it by
        ['', '0', '2']
    """
    return module_paths_of({n.module for n in graph.nodes.values()})


def children(path: str, paths: Iterable[str]) -> list[str]:
    """The paths in `paths` exactly one level under `path` (the model's for ""), in order.

    Example:
        >>> children("layers", ["", "layers", "layers.0", "layers.0.fc", "layers.1"])
        ['layers.0', 'layers.1']
    """
    prefix = f"{path}." if path else ""
    return [c for c in paths
            if c != path and c.startswith(prefix) and "." not in c[len(prefix):]]


def top_level_groups(graph: BackwardGraph) -> list[str]:
    """The modules `collapse="modules"` folds: the model's children, looking through containers.

    A module with no ops of its own that only holds children (a ModuleList, a plain Sequential
    of layers) is replaced by its children, so a TransformerEncoder folds into `layers.0` ...
    `layers.11` rather than one `layers` box holding everything.

    Example:
        >>> gm = aw.capture(model(torch.randn(5, 4)).sum(), model=model)
        >>> top_level_groups(gm)
        ['0', '2']
    """
    paths = module_paths(graph)
    if not paths:
        return []
    own: set[str] = {n.module for n in graph.nodes.values() if n.module is not None}
    kids: dict[str, list[str]] = {p: [] for p in paths}
    for p in paths:
        if p:
            up = parent(p)
            if up in kids:
                kids[up].append(p)
    todo = list(kids.get("", [])) if "" in kids else [p for p in paths if "." not in p]
    out: list[str] = []
    stack = todo[::-1]  # depth first, in order; a stack (no insertion at the front: linear)
    while stack:
        p = stack.pop()
        if p not in own and kids.get(p):
            stack += kids[p][::-1]
        else:
            out.append(p)
    return out
