"""Structure-aware layout: every unfolded module is a cluster laid out inside its own frame.

Why: a flat layered layout of a real model is one long band with the modules' ops interleaved
and no visible boundary, and it re-lays out everything when one module unfolds. Here, as in
Graphviz ``dot``'s clusters or ELK's separate-children hierarchy handling:

- **Clusters.** Every module path holding something visible is a cluster; the root ("") holds
  what no module claims. A cluster's inside (its own items, leaf copies, child clusters as
  sized boxes, and ports) is one layered layout (`layout.arrange` + `layout.place`); its frame
  (the inside's bounding box, a margin, a title band on top) is the size its parent sees.
- **Ports.** An edge between two clusters is split where it crosses a frame: inside the source's
  cluster it runs to an exit port pinned to the bottom layer, in each ancestor it joins the
  child cluster's box, and it enters the target's cluster through an entry port pinned to the
  top layer. One port per inner end, so edges leaving from one node share their way out.
- **Leaf copies.** A leaf (AccumulateGrad) used by several consumers, or by a consumer in
  another cluster, is drawn beside each consumer: the first in its own module (else the first
  consumer's cluster) is the leaf's item, the others are copies (`ClusterLayout.copy_item`
  maps each back to the one item, so selecting any selects the parameter). A shared weight
  used at every step of an unrolled RNN costs no long edge at all.
- **Cached per cluster.** `ClusterLayouter` keeps each cluster's arrangement (layers and order:
  it depends on the cluster's graph only) and placement (it also depends on the sizes of what
  is inside). A collapsed module's box and the same module's unfolded cluster have the same key
  in their parent, so unfolding one module re-arranges that module alone, re-places its
  ancestors (new size, same order), and every other cluster keeps its inner layout: it only
  translates.

Pure: numpy and the layout modules; no torch. Nothing is random.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import networkx as nx
import numpy as np
from numpy.typing import NDArray

from .layout import Arrangement, Layout, arrange, place
from .modules import parent

__all__ = ["FRAME_PAD", "FRAME_TITLE", "ClusterLayout", "ClusterLayouter", "Frame"]

#: Margin between a frame and what it holds, and the height of its title band (layout units:
#: one unit is one character height of a label): one line of title text and a little air.
FRAME_PAD = 0.5
FRAME_TITLE = 1.3
#: A frame's title: width of one character (bold, as the front-end writes it at most) and its
#: margins, layout units. A frame is never narrower than its title: the title is never cut.
TITLE_CHAR_W = 0.62
TITLE_PAD_W = 0.9
# Gaps inside a cluster: between boxes of a layer, between layers, between lanes/dummies.
NODE_GAP = 1.0
LAYER_GAP = 1.4
DUMMY_GAP = 0.6
# Arrangements and placements kept (per layouter): plenty for every cluster of a big model.
_CACHE_SIZE = 2048


@dataclass(frozen=True)
class Frame:
    """The frame drawn around an unfolded module: its path, title, nesting depth (1 for a
    top-level module) and rectangle (``x0 < x1``, ``y0 < y1``, layout units, title band inside
    at the top).

    Example:
        >>> Frame("0", "0 · Linear", 1, 0.0, 4.0, -3.0, 0.0).width
        4.0
    """

    path: str
    title: str
    depth: int
    x0: float
    x1: float
    y0: float
    y1: float

    @property
    def width(self) -> float:
        """``x1 - x0``."""
        return self.x1 - self.x0


@dataclass(frozen=True, eq=False)
class ClusterLayout:
    """The drawing of a visible graph: item centres, edge routes, leaf copies and frames.

    ``x``/``y``: each item's centre (boxes' and nodes' sizes are ``width``/``height``);
    ``edge_x``/``edge_y``/``edge_ptr``: one NaN-terminated polyline per visible edge, from its
    source item's centre to its target's (or to the copy it ends at: ``edge_copy[k]`` is the
    copy index, -1 for none); ``copy_item[c]`` the item copy c shows, at ``copy_x``/``copy_y``;
    ``frames`` outermost first. ``n_dummies``/``n_lanes``: bends and lanes over all clusters
    (dummies only on edges spanning at most `layout.MAX_DUMMY_SPAN` layers). ``crossings``:
    the ordering's crossings over all clusters. ``bounds``: xmin, xmax, ymin, ymax of it all.

    Example:
        >>> lay = ClusterLayouter().layout(2, [0], [1], [""] * 2, np.ones(2), np.ones(2))
        >>> bool(lay.y[0] > lay.y[1]), lay.frames
        (True, [])
    """

    orientation: str
    x: NDArray[np.float32]
    y: NDArray[np.float32]
    width: NDArray[np.float32]
    height: NDArray[np.float32]
    edge_x: NDArray[np.float32]
    edge_y: NDArray[np.float32]
    edge_ptr: NDArray[np.int32]
    edge_copy: NDArray[np.int32]
    copy_item: NDArray[np.int32]
    copy_x: NDArray[np.float32]
    copy_y: NDArray[np.float32]
    frames: list[Frame]
    bounds: tuple[float, float, float, float]
    n_dummies: int = 0
    n_lanes: int = 0
    crossings: int = 0
    n_clusters: int = 1

    @property
    def n_nodes(self) -> int:
        """How many items are placed (copies excluded).

        Example:
            >>> ClusterLayouter().layout(3, [0], [1], [""] * 3, np.ones(3), np.ones(3)).n_nodes
            3
        """
        return int(self.x.shape[0])

    def translated(self, dx: float, dy: float) -> ClusterLayout:
        """The same drawing moved by (dx, dy): how an unfolded module keeps its place.

        Example:
            >>> lay = ClusterLayouter().layout(1, [], [], [""], np.ones(1), np.ones(1))
            >>> lay.x.tolist(), lay.translated(2.0, 0.0).x.tolist()
            ([0.5], [2.5])
        """
        f32 = np.float32
        return ClusterLayout(
            orientation=self.orientation,
            x=(self.x + f32(dx)).astype(f32), y=(self.y + f32(dy)).astype(f32),
            width=self.width, height=self.height,
            edge_x=(self.edge_x + f32(dx)).astype(f32), edge_y=(self.edge_y + f32(dy)).astype(f32),
            edge_ptr=self.edge_ptr, edge_copy=self.edge_copy, copy_item=self.copy_item,
            copy_x=(self.copy_x + f32(dx)).astype(f32), copy_y=(self.copy_y + f32(dy)).astype(f32),
            frames=[Frame(f.path, f.title, f.depth, f.x0 + dx, f.x1 + dx, f.y0 + dy, f.y1 + dy)
                    for f in self.frames],
            bounds=(self.bounds[0] + dx, self.bounds[1] + dx, self.bounds[2] + dy,
                    self.bounds[3] + dy),
            n_dummies=self.n_dummies, n_lanes=self.n_lanes, crossings=self.crossings,
            n_clusters=self.n_clusters,
        )

    def anchor(self, item: int | None = None, path: str | None = None) -> tuple[float, float]:
        """Top-left corner of item ``item``'s box, or of the frame of module ``path``.

        Example:
            >>> lay = ClusterLayouter().layout(1, [], [], [""], np.full(1, 2.0), np.ones(1))
            >>> lay.anchor(item=0)  # a box 2 wide, 1 high
            (0.0, 0.0)
        """
        if path is not None:
            for f in self.frames:
                if f.path == path:
                    return f.x0, f.y1
            raise KeyError(path)
        if item is None:
            raise ValueError("anchor needs an item or a path")
        return (float(self.x[item] - self.width[item] / 2),
                float(self.y[item] + self.height[item] / 2))


class _Cycle(Exception):
    """A cluster's local graph has a cycle through these child modules."""

    def __init__(self, paths: set[str]) -> None:
        super().__init__(", ".join(sorted(paths)))
        self.paths = paths


def _cyclic_children(c: _Cluster, src: NDArray[np.int64], dst: NDArray[np.int64]) -> set[str]:
    """Child modules of ``c`` on a cycle of its local graph (strongly connected components of
    more than one node; items alone are acyclic, so every cycle passes through one)."""
    g = nx.DiGraph()
    g.add_edges_from(zip(src.tolist(), dst.tolist(), strict=True))
    out: set[str] = set()
    for comp in nx.strongly_connected_components(g):
        if len(comp) > 1:
            out |= {c.keys[q][2:] for q in comp if c.kind[q] == 1}
    if not out:
        raise ValueError(f"cycle in the cluster {c.path!r} with no module on it")
    return out


@dataclass
class _Cluster:
    """One cluster's local graph, being built."""

    path: str
    depth: int
    keys: list[str] = field(default_factory=list)  # local node keys
    kind: list[int] = field(default_factory=list)  # 0 item/copy, 1 child cluster, 2 in, 3 out
    ref: list[int] = field(default_factory=list)  # layout node id, or child cluster index
    src: list[int] = field(default_factory=list)
    dst: list[int] = field(default_factory=list)
    ports: dict[tuple[int, int], int] = field(default_factory=dict)
    children: list[int] = field(default_factory=list)
    child_local: dict[int, int] = field(default_factory=dict)  # child cluster -> local index

    def add(self, key: str, kind: int, ref: int) -> int:
        self.keys.append(key)
        self.kind.append(kind)
        self.ref.append(ref)
        return len(self.keys) - 1

    def edge(self, a: int, b: int) -> int:
        self.src.append(a)
        self.dst.append(b)
        return len(self.src) - 1


class ClusterLayouter:
    """Lays out visible graphs cluster by cluster and remembers each cluster's layout.

    One per drawing (a Scene): successive layouts of the same graph with other folds reuse
    every cluster whose inside did not change.

    Example:
        >>> lt = ClusterLayouter()
        >>> lay = lt.layout(3, [0, 1], [1, 2], ["", "m", "m"], np.ones(3), np.ones(3),
        ...                 titles={"m": "m · Linear"})
        >>> [f.title for f in lay.frames], lt.arranged
        (['m · Linear'], 2)
    """

    def __init__(self) -> None:
        self._arranged: OrderedDict[tuple, Arrangement] = OrderedDict()
        self._placed: OrderedDict[tuple, Layout] = OrderedDict()
        #: How many cluster arrangements were computed (not found in the cache) so far.
        self.arranged = 0
        #: How many cluster placements were computed so far.
        self.placed = 0

    def _cached(self, cache: OrderedDict, key: tuple, make: Callable[[], object]) -> object:
        hit = cache.get(key)
        if hit is not None:
            cache.move_to_end(key)
            return hit
        value = make()
        cache[key] = value
        if len(cache) > _CACHE_SIZE:
            cache.popitem(last=False)
        return value

    def layout(
        self,
        n_items: int,
        src: Sequence[int] | NDArray[np.integer],
        dst: Sequence[int] | NDArray[np.integer],
        item_cluster: Sequence[str],
        width: NDArray[np.floating],
        height: NDArray[np.floating],
        *,
        item_key: Sequence[str] | None = None,
        leaf: NDArray[np.bool_] | None = None,
        item_module: Sequence[str] | None = None,
        roots: Sequence[int] = (),
        titles: dict[str, str] | None = None,
        orientation: str = "TB",
        item_rank: Sequence[float] | NDArray[np.floating] | None = None,
    ) -> ClusterLayout:
        """Lay out ``n_items`` items with edges ``src[k] -> dst[k]`` (gradient flow).

        Args:
            item_cluster: the module path whose frame holds each item ("" for none).
            width, height: each item's box size (layout units).
            item_key: a stable name per item (node id, box key): what the cache recognises
                across layouts. Defaults to the index.
            leaf: items that may be copied beside each consumer (AccumulateGrad nodes).
            item_module: each leaf's own module path (a leaf stays in its module's frame when
                one of its consumers is there).
            roots: items laid out first in their layer.
            titles: frame title per module path (the path when missing).
            orientation: "TB" or "LR".
            item_rank: the order items take inside their cluster (a module's folded box and
                its unfolded frame must rank alike, e.g. by their first node, so folding it
                leaves its parent's arrangement as it was). Defaults to the index.

        Example:
            >>> lay = ClusterLayouter().layout(  # a root op, a parameter used twice in "m"
            ...     3, [0, 1, 0], [1, 2, 2], ["", "m", "m"], np.ones(3), np.ones(3),
            ...     leaf=np.array([False, False, True]))
            >>> lay.copy_item.tolist(), [f.path for f in lay.frames]
            ([2], ['m'])
        """
        if orientation not in ("TB", "LR"):
            raise ValueError(f"orientation must be 'TB' or 'LR', not {orientation!r}")
        s = np.asarray(src, dtype=np.int64).reshape(-1)
        d = np.asarray(dst, dtype=np.int64).reshape(-1)
        keys = list(item_key) if item_key is not None else [str(i) for i in range(n_items)]
        w_all = np.asarray(width, dtype=np.float64)
        h_all = np.asarray(height, dtype=np.float64)
        node_cluster = list(item_cluster)

        # Leaf copies: each consumer of a leaf gets the leaf beside it.
        node_item = list(range(n_items))
        edge_to = d.copy()
        copy_of_edge = np.full(s.shape[0], -1, dtype=np.int64)
        copy_host: list[int] = []
        if leaf is not None and s.size:
            lf = np.asarray(leaf, dtype=bool)
            into = np.flatnonzero(lf[d])
            consumers: dict[int, list[tuple[int, int]]] = {}
            for k in into.tolist():
                consumers.setdefault(int(d[k]), []).append((int(s[k]), k))
            for j, uses in consumers.items():
                home = item_module[j] if item_module is not None else node_cluster[j]
                hosts = list(dict.fromkeys(u for u, _ in uses))
                host = next((u for u in hosts if node_cluster[u] == home), hosts[0])
                node_cluster[j] = node_cluster[host]
                made: dict[int, int] = {}
                for u, k in uses:
                    if u == host:
                        continue
                    c = made.get(u)
                    if c is None:
                        c = made[u] = len(node_item)
                        node_item.append(j)
                        node_cluster.append(node_cluster[u])
                        copy_host.append(u)
                        keys.append(f"{keys[j]}@{keys[u]}")
                    edge_to[k] = c
                    copy_of_edge[k] = c - n_items
        item_arr = np.asarray(node_item, dtype=np.int64)
        w_n, h_n = w_all[item_arr], h_all[item_arr]
        base = (np.arange(n_items, dtype=np.float64) if item_rank is None
                else np.asarray(item_rank, dtype=np.float64))
        # A copy ranks just after the consumer it sits beside.
        rank = np.concatenate([base, base[[int(u) for u in copy_host]] + 0.5])

        # A module whose ops are not contiguous (one called twice, with its parent's ops in
        # between) would be a box on a cycle in its parent: it is drawn without a frame (its
        # items join the enclosing cluster), and the layout is redone.
        dissolved: set[str] = set()
        while True:
            try:
                return self._clusters(
                    n_items, s, edge_to, node_cluster, node_item, keys, w_all, h_all, w_n,
                    h_n, copy_of_edge, item_arr, roots, titles, orientation, dissolved, rank)
            except _Cycle as cyc:
                dissolved |= cyc.paths

    def _clusters(
        self,
        n_items: int,
        s: NDArray[np.int64],
        edge_to: NDArray[np.int64],
        node_cluster_in: list[str],
        node_item: list[int],
        keys: list[str],
        w_all: NDArray[np.float64],
        h_all: NDArray[np.float64],
        w_n: NDArray[np.float64],
        h_n: NDArray[np.float64],
        copy_of_edge: NDArray[np.int64],
        item_arr: NDArray[np.int64],
        roots: Sequence[int],
        titles: dict[str, str] | None,
        orientation: str,
        dissolved: set[str],
        rank: NDArray[np.float64],
    ) -> ClusterLayout:
        n_nodes = len(node_item)

        def eff(p: str) -> str:
            while p in dissolved:
                p = parent(p)
            return p

        node_cluster = [eff(p) for p in node_cluster_in]
        # The cluster tree: every path in use and its ancestors, outermost first.
        paths = set(node_cluster)
        for p in list(paths):
            while p:
                p = eff(parent(p))
                paths.add(p)
        order = sorted(paths, key=lambda p: (0 if not p else p.count(".") + 1, p))
        cidx = {p: i for i, p in enumerate(order)}
        clusters = [_Cluster(p, 0 if not p else p.count(".") + 1) for p in order]
        cparent = [cidx[eff(parent(p))] if p else -1 for p in order]
        for i, p in enumerate(order):
            if p:
                clusters[cparent[i]].children.append(i)
        ncl = np.asarray([cidx[p] for p in node_cluster], dtype=np.int64)
        # Local nodes in rank order: items, and child clusters ranked by their first item.
        crank = np.full(len(clusters), np.inf)
        if n_nodes:
            np.minimum.at(crank, ncl, rank)
        for i in range(len(clusters) - 1, 0, -1):
            crank[cparent[i]] = min(crank[cparent[i]], crank[i])
        # (Vectorised: a 100k-node graph without modules is one cluster of 100k items.)
        by = np.lexsort((rank, ncl)) if n_nodes else np.zeros(0, dtype=np.int64)
        cut = np.searchsorted(ncl[by], np.arange(len(clusters) + 1))
        local_idx = np.zeros(n_nodes, dtype=np.int64)
        for i, c in enumerate(clusters):
            mine = by[cut[i] : cut[i + 1]]
            kids = sorted(c.children, key=lambda k: (crank[k], k))
            at = np.searchsorted(rank[mine], crank[kids], side="right") + np.arange(len(kids))
            total = len(mine) + len(kids)
            is_kid = np.zeros(total, dtype=bool)
            is_kid[at] = True
            slots = np.flatnonzero(~is_kid)
            local_idx[mine] = slots
            kind = np.zeros(total, dtype=np.int64)
            kind[at] = 1
            ref = np.zeros(total, dtype=np.int64)
            ref[slots] = mine
            ref[at] = kids
            names = [""] * total
            mine_l = mine.tolist()
            for q, v in zip(slots.tolist(), mine_l, strict=True):
                names[q] = keys[v]
            for q, k in zip(at.tolist(), kids, strict=True):
                names[q] = "m:" + order[k]
                c.child_local[k] = q
            c.keys, c.kind, c.ref = names, kind.tolist(), ref.tolist()

        # Edges: local in one cluster, or split at every frame they cross.
        pieces: dict[int, list[tuple[int, int, bool, bool]]] = {}  # edges crossing frames
        cu, cv = ncl[s], ncl[edge_to]
        same = np.flatnonzero(cu == cv)
        piece_c = np.full(s.shape[0], -1, dtype=np.int64)
        piece_e = np.full(s.shape[0], -1, dtype=np.int64)
        if same.size:
            o = same[np.argsort(cu[same], kind="stable")]
            grp = cu[o]
            starts = np.searchsorted(grp, np.arange(len(clusters) + 1))
            for i in np.unique(grp).tolist():
                ks = o[starts[i] : starts[i + 1]]
                c = clusters[i]
                c.src = local_idx[s[ks]].tolist()
                c.dst = local_idx[edge_to[ks]].tolist()
                piece_c[ks] = i
                piece_e[ks] = np.arange(ks.size)
        for k in np.flatnonzero(cu != cv).tolist():
            pieces[k] = self._split(clusters, cparent, local_idx, int(s[k]), int(edge_to[k]),
                                    int(cu[k]), int(cv[k]))

        # Bottom-up: each cluster's layout, and its frame size for its parent.
        is_root = np.zeros(n_nodes, dtype=bool)
        is_root[[int(r) for r in roots if 0 <= int(r) < n_items]] = True
        local: list[Layout | None] = [None] * len(clusters)
        fsize: list[tuple[float, float]] = [(0.0, 0.0)] * len(clusters)
        lo_local: list[tuple[float, float]] = [(0.0, 0.0)] * len(clusters)
        n_dummies = n_lanes = crossings = 0
        for i in range(len(clusters) - 1, -1, -1):
            c = clusters[i]
            m = len(c.keys)
            kind = np.asarray(c.kind, dtype=np.int64)
            ref = np.asarray(c.ref, dtype=np.int64)
            w = np.zeros(m)
            h = np.zeros(m)
            it = kind == 0
            w[it], h[it] = w_n[ref[it]], h_n[ref[it]]
            for q in np.flatnonzero(kind == 1).tolist():
                w[q], h[q] = fsize[ref[q]]
            lroots = np.flatnonzero(it & is_root[np.where(it, ref, 0)]).tolist()
            top = np.flatnonzero(kind == 2)
            bottom = np.flatnonzero(kind == 3)
            lsrc = np.asarray(c.src, dtype=np.int64)
            ldst = np.asarray(c.dst, dtype=np.int64)
            tkey = (tuple(c.keys), lsrc.tobytes(), ldst.tobytes(), tuple(lroots))

            def make_arr(m=m, lsrc=lsrc, ldst=ldst, lroots=lroots, top=top, bottom=bottom,
                         c=c):
                try:
                    out = arrange(m, lsrc, ldst, roots=lroots, top=top, bottom=bottom)
                except ValueError:
                    raise _Cycle(_cyclic_children(c, lsrc, ldst)) from None
                self.arranged += 1
                return out

            arr = self._cached(self._arranged, tkey, make_arr)
            breadth, depth = (w, h) if orientation == "TB" else (h, w)
            pkey = (tkey, orientation, breadth.tobytes(), depth.tobytes())

            def make_place(arr=arr, breadth=breadth, depth=depth):
                self.placed += 1
                return place(arr, orientation, breadth=breadth, depth=depth,  # type: ignore[arg-type]
                             node_gap=NODE_GAP, dummy_gap=DUMMY_GAP, layer_gap=LAYER_GAP)

            lay = self._cached(self._placed, pkey, make_place)
            local[i] = lay
            n_dummies += lay.n_dummies
            n_lanes += lay.n_lanes
            crossings += lay.crossings
            bx0, bx1, by0, by1 = lay.bounds  # boxes, bends and lanes
            if c.path:
                title = (titles or {}).get(c.path, c.path)
                inner = bx1 - bx0 + 2 * FRAME_PAD
                wide = max(inner, len(title) * TITLE_CHAR_W + TITLE_PAD_W)
                fsize[i] = (wide, by1 - by0 + 2 * FRAME_PAD + FRAME_TITLE)
                lo_local[i] = (bx0 - FRAME_PAD - (wide - inner) / 2, by0 - FRAME_PAD)
            else:
                fsize[i] = (bx1 - bx0, by1 - by0)
                lo_local[i] = (bx0, by0)

        # Top-down: each cluster's offset (local -> absolute), frames.
        off = [(0.0, 0.0)] * len(clusters)
        frames: list[Frame] = []
        for i in range(1, len(clusters)):
            p = cparent[i]
            q = clusters[p].child_local[i]
            lay_p = local[p]
            assert lay_p is not None
            cx = float(lay_p.x[q]) + off[p][0]
            cy = float(lay_p.y[q]) + off[p][1]
            fw, fh = fsize[i]
            x0, y0 = cx - fw / 2, cy - fh / 2
            off[i] = (x0 - lo_local[i][0], y0 - lo_local[i][1])
            path = order[i]
            frames.append(Frame(path, (titles or {}).get(path, path), clusters[i].depth,
                                x0, x0 + fw, y0, y0 + fh))

        # Absolute positions of every layout node.
        ax = np.zeros(n_nodes)
        ay = np.zeros(n_nodes)
        for i, c in enumerate(clusters):
            lay = local[i]
            assert lay is not None
            kind = np.asarray(c.kind, dtype=np.int64)
            ref = np.asarray(c.ref, dtype=np.int64)
            it = np.flatnonzero(kind == 0)
            ax[ref[it]] = lay.x[it].astype(np.float64) + off[i][0]
            ay[ref[it]] = lay.y[it].astype(np.float64) + off[i][1]

        edge_x, edge_y, edge_ptr = self._routes(pieces, piece_c, piece_e, local, off)
        f32 = np.float32
        if frames or n_nodes:
            xs = [ax - w_n / 2, ax + w_n / 2] if n_nodes else []
            ys = [ay - h_n / 2, ay + h_n / 2] if n_nodes else []
            allx = np.concatenate([*xs, edge_x[~np.isnan(edge_x)],
                                   [f.x0 for f in frames], [f.x1 for f in frames]])
            ally = np.concatenate([*ys, edge_y[~np.isnan(edge_y)],
                                   [f.y0 for f in frames], [f.y1 for f in frames]])
            bounds = (float(allx.min()), float(allx.max()), float(ally.min()), float(ally.max()))
        else:
            bounds = (0.0, 0.0, 0.0, 0.0)
        return ClusterLayout(
            orientation=orientation,
            x=ax[:n_items].astype(f32), y=ay[:n_items].astype(f32),
            width=w_all.astype(f32), height=h_all.astype(f32),
            edge_x=edge_x, edge_y=edge_y, edge_ptr=edge_ptr,
            edge_copy=copy_of_edge.astype(np.int32),
            copy_item=item_arr[n_items:].astype(np.int32),
            copy_x=ax[n_items:].astype(f32), copy_y=ay[n_items:].astype(f32),
            frames=frames, bounds=bounds, n_dummies=n_dummies, n_lanes=n_lanes,
            crossings=crossings, n_clusters=len(clusters),
        )

    @staticmethod
    def _split(
        clusters: list[_Cluster],
        cparent: list[int],
        local_idx: NDArray[np.int64],
        u: int,
        v: int,
        cu: int,
        cv: int,
    ) -> list[tuple[int, int, bool, bool]]:
        """The pieces of an edge between clusters: up from u's cluster through exit ports,
        across at the lowest common cluster, down through entry ports to v. Each piece is
        (cluster, local edge, drop its first point, drop its last point)."""
        up = [cu]
        while clusters[up[-1]].depth > 0:
            up.append(cparent[up[-1]])
        down = [cv]
        while clusters[down[-1]].depth > 0:
            down.append(cparent[down[-1]])
        common = set(up) & set(down)
        lca = next(c for c in up if c in common)
        out: list[tuple[int, int, bool, bool]] = []
        end = int(local_idx[u])  # (each layout node's index in its own cluster)
        for c in up[: up.index(lca)]:
            cl = clusters[c]
            port = cl.ports.get((3, end))
            if port is None:
                port = cl.ports[(3, end)] = cl.add(f"out:{cl.keys[end]}", 3, -1)
            out.append((c, cl.edge(end, port), c != cu, False))
            end = clusters[cparent[c]].child_local[c]
        chain = down[: down.index(lca)]
        lca_c = clusters[lca]
        target = lca_c.child_local[chain[-1]] if chain else int(local_idx[v])
        out.append((lca, lca_c.edge(end, target), lca != cu, bool(chain)))
        for c in reversed(chain):
            cl = clusters[c]
            inner = int(local_idx[v]) if c == cv else cl.child_local[
                next(x for x in chain if cparent[x] == c)]
            port = cl.ports.get((2, inner))
            if port is None:
                port = cl.ports[(2, inner)] = cl.add(f"in:{cl.keys[inner]}", 2, -1)
            out.append((c, cl.edge(port, inner), False, c != cv))
        return out

    @staticmethod
    def _routes(
        pieces: dict[int, list[tuple[int, int, bool, bool]]],
        pc: NDArray[np.int64],
        pe: NDArray[np.int64],
        local: list[Layout | None],
        off: list[tuple[float, float]],
    ) -> tuple[NDArray[np.float32], NDArray[np.float32], NDArray[np.int32]]:
        """Absolute polylines: each edge's pieces joined, NaN after each edge. Edges inside one
        cluster (one piece) are gathered a cluster at a time; only edges crossing frames loop."""
        n_e = pc.shape[0]
        one = pc >= 0
        counts = np.zeros(n_e, dtype=np.int64)
        multi: dict[int, tuple[NDArray[np.float64], NDArray[np.float64]]] = {}
        for c in np.unique(pc[one]).tolist():
            lay = local[c]
            assert lay is not None
            ks = np.flatnonzero(pc == c)
            lp = lay.edge_ptr.astype(np.int64)
            counts[ks] = lp[pe[ks] + 1] - lp[pe[ks]]
        for k in np.flatnonzero(~one).tolist():
            xs, ys = [], []
            for c, e, drop_first, drop_last in pieces[k]:
                lay = local[c]
                assert lay is not None
                a, b = int(lay.edge_ptr[e]), int(lay.edge_ptr[e + 1]) - 1
                # A child frame's end of a route is its centre (and the edge of its layer,
                # straight below or above): the route continues from the frame's port instead.
                ex, ey = lay.edge_x, lay.edge_y

                def straight(i: int, k: int, ex=ex, ey=ey) -> bool:
                    return bool(ex[i] == ex[k] or ey[i] == ey[k])

                if drop_first:
                    a += 1 + int(b - a > 2 and straight(a, a + 1))
                if drop_last:
                    b -= 1 + int(b - a > 2 and straight(b - 2, b - 1))
                xs.append(lay.edge_x[a:b].astype(np.float64) + off[c][0])
                ys.append(lay.edge_y[a:b].astype(np.float64) + off[c][1])
            xs.append(np.full(1, np.nan))
            ys.append(np.full(1, np.nan))
            multi[k] = (np.concatenate(xs), np.concatenate(ys))
            counts[k] = multi[k][0].shape[0]
        ptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        ex = np.full(int(ptr[-1]), np.nan)
        ey = np.full(int(ptr[-1]), np.nan)
        for c in np.unique(pc[one]).tolist():
            lay = local[c]
            assert lay is not None
            ks = np.flatnonzero(pc == c)
            lp = lay.edge_ptr.astype(np.int64)
            cnt = counts[ks]
            j = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)
            src_at = np.repeat(lp[pe[ks]], cnt) + j
            dst_at = np.repeat(ptr[ks], cnt) + j
            ex[dst_at] = lay.edge_x[src_at].astype(np.float64) + off[c][0]
            ey[dst_at] = lay.edge_y[src_at].astype(np.float64) + off[c][1]
        for k, (xk, yk) in multi.items():
            ex[ptr[k] : ptr[k + 1]] = xk
            ey[ptr[k] : ptr[k + 1]] = yk
        return ex.astype(np.float32), ey.astype(np.float32), ptr.astype(np.int32)
