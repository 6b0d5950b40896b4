"""Crossing reduction of a layered DAG (step 3 of the layered layout), and crossing counts.

Barycenter sweeps down and up, then sweeps each followed by vectorised transposition (adjacent
swaps that remove crossings), keeping the best ordering seen; graphs of bounded size get a second
start from the sinks' side and keep the better, as ``dot`` does. Only layer pairs where both
layers hold at least two nodes can cross, so a chain or a fan costs nothing here. The
transpositions run under a work budget. Every edge must join adjacent layers (insert dummies or
route long edges elsewhere first). Pure numpy; every sort is stable, so the result is
deterministic.
"""

from __future__ import annotations

import collections

import numpy as np
from numpy.typing import NDArray

__all__ = ["SECOND_START_MAX", "crossings_between", "reduce_crossings"]

# Adjacent pairs whose edges make at most this many edge pairs are compared outright in a
# transposition step; busier pairs sort and search instead.
_EXPAND_LIMIT = 64
# The crossing reduction runs a second time from another starting order (dot does the same)
# on graphs of at most this many nodes and dummies.
SECOND_START_MAX = 10_000
# Budget of the transpositions, in pair checks: _BASE_WORK plus _TRANSPOSE_WORK per node of
# the reorderable layers, each vectorised check of a batch of pairs costing _CHECK_COST on top
# (numpy's per-call overhead). ~0.3 us per unit: an unrolled 100-step LSTM (121k nodes and
# dummies) uses ~1.1M of its 1.3M and converges; a dense random DAG stops at the budget.
_BASE_WORK = 100_000
_TRANSPOSE_WORK = 10
_CHECK_COST = 400

def _inversions(a: NDArray[np.int64]) -> int:
    """Pairs i < j with a[i] > a[j], by a bottom-up merge sort done a whole level at a time.

    Each level is one stable argsort over the full array (blocks are kept apart by adding
    block * span to the values), after which a left-half element is out of order with exactly the
    right-half elements merged before it. That is log m numpy calls instead of m Python steps of a
    Fenwick tree; ~0.7 s for 1.7M values, ~1 ms for a few thousand.
    """
    m = a.shape[0]
    if m < 2:
        return 0
    vals = a - a.min()
    span = np.int64(vals.max() + 1)
    if int(span) * (m // 2 + 1) >= 2**62:  # dense ranks keep block * span + value in int64
        vals = np.unique(vals, return_inverse=True)[1].reshape(-1).astype(np.int64)
        span = np.int64(vals.max() + 1)
    idx = np.arange(m, dtype=np.int64)
    total = 0
    width = 1
    while width < m:
        block = idx // (2 * width)
        keys = block * span + vals
        perm = np.argsort(keys, kind="stable")  # ties: left half first, so they do not count
        from_right = (perm % (2 * width)) >= width
        right_before = np.cumsum(from_right)
        # Blocks before this one are full, each with exactly `width` right-half elements.
        left = ~from_right
        total += int((right_before[left] - block[left] * width).sum())
        vals = keys[perm] - block * span
        width *= 2
    return total


def _crossings(pair: NDArray[np.int64], upos: NDArray[np.int64], lpos: NDArray[np.int64]) -> int:
    """Crossings among segments grouped by layer pair, given both endpoints' positions.

    Two segments of the same pair cross iff their upper and lower positions are in opposite
    strict order; segments sharing an endpoint never cross. Sorting by (pair, upper, lower) turns
    that into counting strict inversions of the lower positions, and offsetting by pair keeps
    groups from inverting against each other, so the whole graph is one inversion count.
    """
    if pair.shape[0] < 2:
        return 0
    wu, wl = int(upos.max()) + 1, int(lpos.max()) + 1
    if (int(pair.max()) + 1) * wu * wl < 2**62:
        perm = np.argsort((pair * wu + upos) * wl + lpos, kind="stable")
    else:
        perm = np.lexsort((lpos, upos, pair))
    v = pair[perm] * wl + lpos[perm]  # ascending groups, so one running max/min covers all
    # A segment whose lower end is >= every earlier one's and <= every later one's (in its
    # group) crosses nothing; in a drawing of long parallel edges that is most of them, and
    # dropping them leaves the merge sort far less to do.
    before = np.empty_like(v)
    before[0] = v[0]
    np.maximum.accumulate(v[:-1], out=before[1:])
    after = np.empty_like(v)
    after[-1] = v[-1]
    after[:-1] = np.minimum.accumulate(v[:0:-1])[::-1]
    tangled = (before > v) | (after < v)
    return _inversions(v[tangled]) if tangled.any() else 0


def crossings_between(
    layer: NDArray[np.int64], order: NDArray[np.int64], s: NDArray[np.int64], d: NDArray[np.int64]
) -> int:
    """Crossings of edges ``s[i] - d[i]`` that each join adjacent layers (either direction;
    duplicates count as separate edges; edges sharing an endpoint never cross).

    Example:
        >>> crossings_between(*(np.array(a) for a in ([0, 0, 1, 1], [0, 1, 0, 1], [0, 1], [3, 2])))
        1
    """
    ls, ld = layer[s].astype(np.int64), layer[d].astype(np.int64)
    if np.any(np.abs(ls - ld) != 1):
        raise ValueError("every edge must join adjacent layers; insert dummy nodes first")
    up = ls < ld
    upper, lower = np.where(up, s, d), np.where(up, d, s)
    pair = np.minimum(ls, ld)
    return _crossings(pair, order[upper].astype(np.int64), order[lower].astype(np.int64))


class _Orderer:
    """Per-layer orderings of the extended graph and the barycenter sweeps over them.

    Layers are kept as a list of id arrays in current order plus a global position array; a
    sweep step touches one layer with a handful of numpy calls. Only layer pairs where both layers
    hold at least two nodes can cross, so only those are swept and counted: a chain or a fan
    costs nothing here however long or wide it is.
    """

    def __init__(
        self,
        ext_layer: NDArray[np.int64],
        key: NDArray[np.float64],
        seg_u: NDArray[np.int64],
        seg_v: NDArray[np.int64],
        n_layers: int,
    ) -> None:
        n_ext = ext_layer.shape[0]
        self.size = np.bincount(ext_layer, minlength=n_layers)
        ranked = np.lexsort((np.arange(n_ext), key, ext_layer))
        bounds = np.concatenate(([0], np.cumsum(self.size)))
        self.pos = np.empty(n_ext, dtype=np.int64)
        self.pos[ranked] = np.arange(n_ext) - bounds[ext_layer[ranked]]
        self.npos = (self.pos + 0.5) / self.size[ext_layer]

        pair = ext_layer[seg_u]
        by_pair = np.argsort(pair, kind="stable")
        self.seg_u, self.seg_v = seg_u[by_pair], seg_v[by_pair]
        self.pair_ptr = np.concatenate(([0], np.cumsum(np.bincount(pair, minlength=n_layers))))
        wide = self.size >= 2
        active = wide[:-1] & wide[1:]  # pair i joins layers i, i + 1
        self.active_pairs = np.flatnonzero(active)
        # Node lists only for the layers a sweep can touch: a 50k chain would otherwise pay
        # 50k slices here for nothing.
        touched = np.union1d(self.active_pairs, self.active_pairs + 1).tolist()
        self.layers = {i: ranked[bounds[i] : bounds[i + 1]] for i in touched}
        seg_active = active[pair[by_pair]] if pair.size else np.zeros(0, dtype=bool)
        self.cu, self.cv = self.seg_u[seg_active], self.seg_v[seg_active]
        self.cpair = ext_layer[self.cu]
        self.ext_layer = ext_layer
        self.touched = np.asarray(touched, dtype=np.int64)
        self.n_active = int(self.size[self.touched].sum())
        # Pair checks the transpositions may spend, in all (a full pass is ~n_active / 2).
        self.budget = _BASE_WORK + _TRANSPOSE_WORK * self.n_active
        self.has_adjacency = False  # built by the first transposition

    def _adjacency(self) -> None:
        """Neighbour lists across the crossing-capable segments (no other can cross anything).

        ``nb[up_ptr[v]:up_ptr[v + 1]]`` are v's neighbours one layer up and
        ``nb[n_up + down_ptr[v]:n_up + down_ptr[v + 1]]`` those one layer down;
        ``adj[adj_ptr[v]:adj_ptr[v + 1]]`` are both together.
        """
        n_ext = self.pos.shape[0]
        self.up_ptr = np.concatenate(([0], np.cumsum(np.bincount(self.cv, minlength=n_ext))))
        self.down_ptr = np.concatenate(([0], np.cumsum(np.bincount(self.cu, minlength=n_ext))))
        up = self.cu[np.argsort(self.cv, kind="stable")]
        down = self.cv[np.argsort(self.cu, kind="stable")]
        self.n_up = up.shape[0]
        self.nb = np.concatenate((up, down))
        ends = np.concatenate((self.cv, self.cu))
        self.adj = np.concatenate((self.cu, self.cv))[np.argsort(ends, kind="stable")]
        self.adj_ptr = np.concatenate(([0], np.cumsum(np.bincount(ends, minlength=n_ext))))
        self.has_adjacency = True

    def crossings(self) -> int:
        return _crossings(self.cpair, self.pos[self.cu], self.pos[self.cv])

    def _reorder(self, i: int, lp: NDArray[np.int64], w: NDArray[np.float64]) -> None:
        cur = self.layers[i]
        sz = cur.shape[0]
        s = np.bincount(lp, weights=w, minlength=sz)
        c = np.bincount(lp, minlength=sz)
        # A node with no neighbour on the swept side keeps its relative place in the layer.
        bary = np.where(c > 0, s / np.maximum(c, 1), self.npos[cur])
        new = cur[np.argsort(bary, kind="stable")]
        self.layers[i] = new
        r = np.arange(sz)
        self.pos[new] = r
        self.npos[new] = (r + 0.5) / sz

    def sweep_down(self) -> None:
        for p in self.active_pairs.tolist():
            a, b = self.pair_ptr[p], self.pair_ptr[p + 1]
            self._reorder(p + 1, self.pos[self.seg_v[a:b]], self.npos[self.seg_u[a:b]])

    def sweep_up(self) -> None:
        for p in self.active_pairs[::-1].tolist():
            a, b = self.pair_ptr[p], self.pair_ptr[p + 1]
            self._reorder(p, self.pos[self.seg_u[a:b]], self.npos[self.seg_v[a:b]])

    def set_pos(self, pos: NDArray[np.int64]) -> None:
        """Go back to an ordering saved from ``pos`` (a copy of it)."""
        self.pos = pos.copy()
        for i in self.touched.tolist():
            cur = self.layers[i]
            new = np.empty_like(cur)
            new[self.pos[cur]] = cur
            self.layers[i] = new
        self.npos = (self.pos + 0.5) / self.size[self.ext_layer]

    def _pair_crossings(
        self, a: NDArray[np.int64], b: NDArray[np.int64]
    ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Crossings between the edges of ``a[j]`` and ``b[j]`` with a left of b, and after
        swapping them: ``(#x > y, #x < y)`` over their neighbours x of a, y of b on the same
        side (layer above, layer below), by position.

        Pairs with few edge pairs (dummies: one each side) are expanded outright; the rest sort
        the y lists of all pairs together (keyed by pair) and look each x up twice, O(d log d)
        in the degrees rather than their product.
        """
        npairs = a.shape[0]
        # Owner o < npairs: pair o's edges up; o >= npairs: pair o - npairs's edges down.
        sa = np.concatenate((self.up_ptr[a], self.down_ptr[a] + self.n_up))
        sb = np.concatenate((self.up_ptr[b], self.down_ptr[b] + self.n_up))
        da = np.concatenate((self.up_ptr[a + 1], self.down_ptr[a + 1] + self.n_up)) - sa
        db = np.concatenate((self.up_ptr[b + 1], self.down_ptr[b + 1] + self.n_up)) - sb
        prod = da * db
        nb, pos = self.nb, self.pos
        if np.all(prod == 1):  # the common case: dummies and chain links, one edge each side
            x, y = pos[nb[sa]], pos[nb[sb]]
            now, swapped = (x > y).astype(np.int64), (x < y).astype(np.int64)
            return now[:npairs] + now[npairs:], swapped[:npairs] + swapped[npairs:]
        now = np.zeros(2 * npairs, dtype=np.int64)
        swapped = np.zeros(2 * npairs, dtype=np.int64)
        small = prod <= _EXPAND_LIMIT
        j = np.flatnonzero(small & (prod > 0))
        if j.size:
            cnt = prod[j]
            owner = np.repeat(np.arange(j.size), cnt)
            t = np.arange(owner.shape[0]) - np.repeat(np.cumsum(cnt) - cnt, cnt)
            dbo = db[j][owner]
            x = pos[nb[sa[j][owner] + t // dbo]]
            y = pos[nb[sb[j][owner] + t % dbo]]
            now[j] = np.bincount(owner, weights=x > y, minlength=j.size)
            swapped[j] = np.bincount(owner, weights=x < y, minlength=j.size)
        j = np.flatnonzero(~small)
        if j.size:
            width = int(self.size.max()) + 1

            def gather(st: NDArray[np.int64], deg: NDArray[np.int64]):
                owner = np.repeat(np.arange(st.shape[0]), deg)
                start = np.repeat(st - np.cumsum(deg) + deg, deg)
                return owner, pos[nb[np.arange(owner.shape[0]) + start]]

            ja, xa = gather(sa[j], da[j])
            jb, yb = gather(sb[j], db[j])
            ykeys = np.sort(jb * width + yb)
            xkeys = ja * width + xa
            below = np.searchsorted(ykeys, xkeys, side="left")
            above = np.searchsorted(ykeys, xkeys, side="right")
            bstart = np.searchsorted(ykeys, ja * width, side="left")
            bend = np.searchsorted(ykeys, (ja + 1) * width, side="left")
            now[j] = np.bincount(ja, weights=below - bstart, minlength=j.size)
            swapped[j] = np.bincount(ja, weights=bend - above, minlength=j.size)
        return now[:npairs] + now[npairs:], swapped[:npairs] + swapped[npairs:]

    def _neighbours(self, v: NDArray[np.int64]) -> NDArray[np.int64]:
        """The nodes ``v`` and every node one layer up or down from them (with repeats)."""
        deg = self.adj_ptr[v + 1] - self.adj_ptr[v]
        start = np.repeat(self.adj_ptr[v] - np.cumsum(deg) + deg, deg)
        return np.concatenate((v, self.adj[np.arange(start.shape[0]) + start]))

    def transpose(self, ties: bool = False, max_rounds: int = 32) -> int:
        """Swap adjacent nodes of a layer wherever that removes crossings; how many it removed.

        Swapping neighbours a, b changes only the crossings between a's and b's own edges, so
        disjoint pairs of one layer can be swapped together, and layers two apart share no
        gap, so all layers of one parity go at once: a round is four numpy steps (layer parity
        x parity of the pair's position). After the first round only pairs next to a change
        are checked again (a node that moved, or a neighbour of one). Rounds stop once one
        removes nothing, or when the orderer's ``budget`` runs out. ``ties`` also swaps pairs
        that cross as much either way (as dot's transpose does every other pass), which lets a
        node drift across a plateau; the count never goes up.
        """
        tl = self.touched
        if tl.size == 0 or self.budget <= 0:
            return 0
        if not self.has_adjacency:
            self._adjacency()
        sizes = self.size[tl]
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        ids = np.concatenate([self.layers[i] for i in tl.tolist()])
        first = np.zeros(self.size.shape[0], dtype=np.int64)
        first[tl] = starts  # ids[first[l] + p] is the node at position p of layer l
        # Slot j is the pair (ids[j], ids[j + 1]) when both are in one layer; four groups by
        # (layer parity, parity of the pair's left position).
        owner = np.repeat(np.arange(tl.shape[0]), sizes)
        k = np.arange(ids.shape[0]) - starts[owner]
        valid = np.zeros(ids.shape[0], dtype=bool)
        valid[:-1] = k[:-1] < sizes[owner[:-1]] - 1
        code = (tl[owner] & 1) * 2 + (k & 1)
        groups = [valid & (code == g) for g in range(4)]

        def mark(nodes: NDArray[np.int64], *masks: NDArray[np.bool_]) -> None:
            f = first[self.ext_layer[nodes]] + self.pos[nodes]  # a node is in slots f - 1, f
            for m in masks:
                m[f] = True
                m[np.maximum(f - 1, 0)] = True

        todo = valid.copy()
        removed = 0
        for _ in range(max_rounds):
            later = np.zeros_like(todo)
            gained = 0
            for g in groups:
                j = np.flatnonzero(todo & g)
                if j.size == 0:
                    continue
                self.budget -= j.size + _CHECK_COST
                a, b = ids[j], ids[j + 1]
                now, swapped = self._pair_crossings(a, b)
                sel = swapped < now
                gained += int((now - swapped)[sel].sum())
                if ties:
                    sel |= (swapped == now) & (now > 0)
                if not sel.any():
                    continue
                j = j[sel]
                a, b = ids[j], ids[j + 1]
                ids[j], ids[j + 1] = b, a
                self.pos[a] += 1
                self.pos[b] -= 1
                # Pairs holding a moved node or a neighbour of one: later groups of this round
                # and the next round look at them again.
                mark(self._neighbours(np.concatenate((a, b))), todo, later)
            removed += gained
            if gained == 0 or not later.any() or self.budget <= 0:
                break
            todo = later
        bounds = np.concatenate((starts, [ids.shape[0]])).tolist()
        for t, i in enumerate(tl.tolist()):
            self.layers[i] = ids[bounds[t] : bounds[t + 1]]
        self.npos[ids] = (self.pos[ids] + 0.5) / self.size[self.ext_layer[ids]]
        return removed


def _upward_bfs_key(
    key: NDArray[np.float64], seg_u: NDArray[np.int64], seg_v: NDArray[np.int64]
) -> NDArray[np.float64]:
    """A second starting order: breadth-first visit order going up from the sinks.

    dot's mincross starts once from the sources and once from the sinks and keeps the better
    result; the default order here is the sources' one (discovery order), this is the other.
    Each sink (in ``key`` order) is searched from in turn, a node's upper neighbours in
    ``key`` order. A plain loop over the extended graph; only run on graphs of bounded size.
    """
    n_ext = key.shape[0]
    o = np.lexsort((seg_u, key[seg_u], seg_v))
    ups = seg_u[o].tolist()
    ptr = np.concatenate(([0], np.cumsum(np.bincount(seg_v, minlength=n_ext)))).tolist()
    has_down = np.zeros(n_ext, dtype=bool)
    has_down[seg_u] = True
    sinks = np.flatnonzero(~has_down)
    sinks = sinks[np.argsort(key[sinks], kind="stable")].tolist()
    seen = [False] * n_ext
    visit = [0] * n_ext
    count = 0
    for s0 in sinks:
        if seen[s0]:
            continue
        seen[s0] = True
        queue = collections.deque([s0])
        while queue:
            v = queue.popleft()
            visit[v] = count
            count += 1
            for u in ups[ptr[v] : ptr[v + 1]]:
                if not seen[u]:
                    seen[u] = True
                    queue.append(u)
    return np.asarray(visit, dtype=np.float64)


def _sweep(orderer: _Orderer, sweeps: int) -> tuple[int, NDArray[np.int64]]:
    """Reduce crossings from the orderer's current order: (best count, its positions).

    First barycenter sweeps down and up while they improve (cheap, vectorised per layer); then,
    from the best order so far, the same sweeps each followed by transposition (adjacent swaps
    that remove crossings, with ties allowed every other time so nodes can drift across a
    plateau), again while they improve. The best order seen wins, so the second phase can only
    improve on the first.
    """
    best = orderer.crossings()
    best_pos = orderer.pos.copy()
    for _ in range(sweeps):
        if best == 0:
            return best, best_pos
        improved = False
        for step in (orderer.sweep_down, orderer.sweep_up):
            step()
            c = orderer.crossings()
            if c < best:
                best, best_pos, improved = c, orderer.pos.copy(), True
        if not improved:
            break
    orderer.set_pos(best_pos)
    ties = True
    for _ in range(sweeps):
        if best == 0 or orderer.budget <= 0:
            break
        improved = False
        for step in (orderer.sweep_down, orderer.sweep_up):
            step()
            c = orderer.crossings()
            if c < best:
                best, best_pos, improved = c, orderer.pos.copy(), True
            c -= orderer.transpose(ties=ties)
            ties = not ties
            if c < best:
                best, best_pos, improved = c, orderer.pos.copy(), True
        if not improved:
            break
    return best, best_pos


def reduce_crossings(
    ext_layer: NDArray[np.int64],
    key: NDArray[np.float64],
    seg_u: NDArray[np.int64],
    seg_v: NDArray[np.int64],
    n_layers: int,
    sweeps: int,
) -> tuple[int, int, NDArray[np.int64]]:
    """Order every layer: (crossings of the ``key`` order, crossings after, positions).

    Example:
        >>> lay, key = np.array([0, 0, 1, 1]), np.arange(4.0)
        >>> reduce_crossings(lay, key, np.array([0, 1]), np.array([3, 2]), 2, 8)[:2]
        (1, 0)
    """
    orderer = _Orderer(ext_layer, key, seg_u, seg_v, n_layers)
    initial = orderer.crossings()
    if sweeps <= 0 or initial == 0:
        return initial, initial, orderer.pos.copy()
    best, best_pos = _sweep(orderer, sweeps)
    if best > 0 and ext_layer.shape[0] <= SECOND_START_MAX:
        other = _Orderer(ext_layer, _upward_bfs_key(key, seg_u, seg_v), seg_u, seg_v, n_layers)
        c, pos = _sweep(other, sweeps)
        if c < best:
            best, best_pos = c, pos
    return initial, best, best_pos
